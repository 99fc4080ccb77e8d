//! The reader's page, as `mdbook-fkc build` writes it: the planner's priced plan on each worked
//! example of a contract that requires contiguous operands (Contiguize priced from its own
//! contract in another chapter, summed with the kernel's cost on the example; said plainly
//! when the book has no Contiguize contract), and identical per-dtype evidence rows merged.

use crate::support::*;
use std::path::Path;
use std::process::Command;

/// Builds a copy of the project's book (with `edit` applied to its files) and returns the seed
/// chapter's HTML.
fn seed_page(name: &str, edit: impl FnOnce(&Path)) -> String {
    let book = project_book();
    edit(&book);
    let site = book.join(name);
    let out = run(Command::new(fkc_bin())
        .args(["build", ".", "-d"])
        .arg(&site)
        .current_dir(&book));
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::read_to_string(site.join("seed/reference-conv-pool.html")).unwrap()
}

/// The text of `html` between `start` and the next `end`, after `from`.
fn between<'a>(html: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = html.find(start)? + start.len();
    let len = html[from..].find(end)?;
    Some(&html[from..from + len])
}

/// The text of an HTML fragment, tags removed.
fn text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Each row of a table body: the text of each cell.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| text(&format!("<td{cell}")).trim().to_owned())
                .collect()
        })
        .collect()
}

fn int(cell: &str) -> i64 {
    cell.parse()
        .unwrap_or_else(|_| panic!("not a number: {cell:?}"))
}

/// One contract card's section of the page per contract.
fn cards(html: &str) -> Vec<&str> {
    html.split("<div class=\"fkc-card fkc-contract\"")
        .skip(1)
        .collect()
}

#[test]
fn every_contiguous_only_example_shows_contiguize_priced_from_its_own_contract_and_the_sum() {
    let html = seed_page("site", |_| {});
    let mut plans = 0;
    for card in cards(&html) {
        let Some(plan) = between(
            card,
            "<h5>Priced plan for a strided producer</h5>",
            "</table>",
        ) else {
            continue;
        };
        plans += 1;
        // The input's shape in the sentence; F32 (4 bytes) is the example's dtype.
        let shape = between(plan, "(F32, shape [", "]").expect("the example is in F32");
        let elements: i64 = shape.split(", ").map(int).product();
        let body = between(plan, "<tbody>", "</tbody>").unwrap();
        let rows = rows(body);
        let values = |row: &[String]| -> Vec<i64> { row[1..].iter().map(|c| int(c)).collect() };
        assert_eq!(rows.len(), 3, "{plan}");
        assert!(rows[0][0].starts_with("Contiguize(x)"), "{:?}", rows[0]);
        assert!(
            body.contains("href=\"../contracts/contiguize.html#fkc-contiguize\""),
            "{body}"
        );
        // contiguize.md: flops 0, bytes_moved 2·numel·dtype_bytes, host_bytes numel·dtype_bytes.
        assert_eq!(
            values(&rows[0]),
            [0, 2 * elements * 4, elements * 4],
            "{body}"
        );
        // The kernel's row is its cost on the example, as its own table shows it.
        let cost = between(card, "<h5>Cost on this example</h5>", "</table>").unwrap();
        let cost_rows = rows_of(cost);
        let kernel = values(&rows[1]);
        for (column, formula) in [(0, "flops"), (1, "bytes_moved"), (2, "memory.host_bytes")] {
            let shown = cost_rows
                .iter()
                .find(|r| r[0] == formula)
                .map(|r| int(&r[2]));
            assert_eq!(Some(kernel[column]), shown, "{formula} in {cost}");
        }
        let total: Vec<i64> = (0..3).map(|i| values(&rows[0])[i] + kernel[i]).collect();
        assert_eq!(rows[2][0], "total");
        assert_eq!(values(&rows[2]), total, "{body}");
    }
    // conv2d, conv_transpose2d, conv2d_simple and max_pool2d: each requires contiguous operands.
    assert_eq!(plans, 4, "plans on the seed page");
}

fn rows_of(table: &str) -> Vec<Vec<String>> {
    rows(between(table, "<tbody>", "</tbody>").unwrap_or(table))
}

#[test]
fn without_a_contiguize_contract_the_plan_says_so_and_invents_no_number() {
    let html = seed_page("site", |book| {
        let summary = book.join("book/SUMMARY.md");
        let text = std::fs::read_to_string(&summary).unwrap();
        let without: String = text
            .lines()
            .filter(|line| !line.contains("contracts/contiguize.md"))
            .map(|line| format!("{line}\n"))
            .collect();
        assert_ne!(text, without);
        std::fs::write(summary, without).unwrap();
    });
    let plans = html
        .matches("<h5>Priced plan for a strided producer</h5>")
        .count();
    assert_eq!(plans, 4);
    let said = "not priced: this book has no Contiguize contract for F32";
    assert_eq!(html.matches(said).count(), 4, "{said}");
    assert!(
        !html.contains("fkc-plan"),
        "a priced table without a Contiguize contract"
    );
}

#[test]
fn identical_per_dtype_evidence_rows_are_shown_once() {
    let html = seed_page("site", |_| {});
    let pool = cards(&html)
        .into_iter()
        .find(|card| card.contains("<code>max_pool2d</code>"))
        .unwrap();
    let evidence =
        rows_of(between(pool, "<h4>Verified when this page was built", "</table>").unwrap());
    let checks: Vec<&str> = evidence.iter().map(|r| r[0].as_str()).collect();
    // The same sentence for every dtype: one row.
    assert!(
        checks.contains(&"F32, F64, BF16, F16 special values"),
        "{checks:?}"
    );
    assert!(!checks.contains(&"F64 special values"), "{checks:?}");
    // F32 ran every drawn sample, the others a few plus their own grown ones (grown for the
    // paths each dtype's vectors take): rows that say the same are merged, the others apart.
    let accepts: Vec<&Vec<String>> = evidence
        .iter()
        .filter(|r| r[0].ends_with("accepts the admitted domain"))
        .collect();
    assert!(accepts.len() >= 2, "{accepts:?}");
    assert_eq!(accepts[0][0], "F32 accepts the admitted domain");
    // (every admitted sample: the 24 drawn plus those chosen at the box's edge)
    assert!(
        !accepts[0][1].starts_with("6 samples") && accepts[0][1].contains(" samples through"),
        "{:?}",
        accepts[0]
    );
    let merged = accepts
        .iter()
        .find(|r| r[0].contains(", "))
        .unwrap_or_else(|| panic!("no merged row: {accepts:?}"));
    assert!(merged[1].contains("max_pool2d_{"), "{merged:?}");
    let sentences: std::collections::BTreeSet<&str> =
        accepts.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(
        sentences.len(),
        accepts.len(),
        "a row repeated: {accepts:?}"
    );
}

#[test]
fn errata_quote_the_sample_their_box_prints_whatever_the_seed() {
    let html = seed_page("site-seed-5", |book| {
        let path = book.join("book.toml");
        let toml = std::fs::read_to_string(&path).unwrap();
        let seeded = toml.replacen("[preprocessor.fkc]\n", "[preprocessor.fkc]\nseed = 5\n", 1);
        std::fs::write(&path, seeded).unwrap();
    });
    let mut quoted = 0;
    for (i, erratum) in html.split("<strong>Erratum").enumerate().skip(1) {
        let before = html.split("<strong>Erratum").take(i).collect::<String>();
        let boxed = before
            .rsplit("<pre class=\"fkc-diagnostic")
            .next()
            .map(text)
            .unwrap_or_default();
        let paragraph = erratum.split("</p>").next().unwrap_or("");
        for quote in paragraph.split("<code>").skip(1) {
            let sample = quote.split("</code>").next().unwrap_or("");
            if sample.contains(": [") {
                assert!(
                    boxed.contains(&format!("): {sample}")),
                    "the erratum quotes {sample:?}, which its box does not print:\n{boxed}"
                );
                quoted += 1;
            }
        }
    }
    assert_eq!(quoted, 4, "four errata quote the gate's samples");
    assert!(
        !html.contains("fkc-counterexample"),
        "a placeholder was left"
    );
}
