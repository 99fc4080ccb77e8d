//! Reviewable snapshots of the rendered contract chapters (the Markdown the preprocessor hands
//! back to mdBook): per chapter, one snapshot of the page with each card replaced by its name,
//! and one per card (a contract, an expected failure, the provider), each pretty-printed one
//! element per line, so a change shows as a diff of the lines it touched. Refresh with
//! `INSTA_UPDATE=always cargo test -p mdbook-fkc --test e2e snapshot` (or `cargo insta review`)
//! and read the diff before committing it.

use crate::support::*;
use mdbook_fkc::Checker as BookChecker;
use mdbook_fkc::{BookContracts, Renderer};

/// The chapters snapshotted: (file, page from the book's root).
const CHAPTERS: [(&str, &str); 3] = [
    (
        "book/seed/reference-conv-pool.md",
        "seed/reference-conv-pool.html",
    ),
    ("book/contracts/contiguize.md", "contracts/contiguize.html"),
    ("book/contracts/threaded.md", "contracts/threaded.html"),
];

/// Where a card's HTML starts: always at the start of a line of the rendered chapter.
const CARD: &str = "<div class=\"fkc-card";

#[test]
fn contract_chapters_snapshot_page_by_page_and_card_by_card() {
    let renderer = Renderer::new(None).unwrap();
    // The book's contracts are read first, as a build does: the worked examples price the
    // planner's Contiguize step from contiguize's own contract.
    let mut contracts = BookContracts::default();
    for (path, page) in CHAPTERS {
        let text = std::fs::read_to_string(repo_root().join(path)).unwrap();
        contracts.add_chapter(path, page, &text);
    }
    let contracts = std::sync::Arc::new(contracts);
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    for (path, page) in CHAPTERS {
        let content = std::fs::read_to_string(repo_root().join(path)).unwrap();
        let mut checker = BookChecker::new(&renderer).price_with(contracts.clone());
        let prefix = "../".repeat(page.matches('/').count());
        let report = checker.chapter_at(path, &content, &prefix).unwrap();
        let errors: Vec<&str> = report
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.message.as_str())
            .collect();
        assert!(errors.is_empty(), "{path} has errors: {errors:?}");
        let html = report.content.unwrap();
        every_path_reached(path, &content, &html);
        let rendered = without_machine(&html);
        let chapter = page.trim_end_matches(".html").replace('/', "-");
        let (skeleton, cards) = split_cards(&rendered);
        settings.set_snapshot_path(
            repo_root()
                .join("preprocessor/tests/snapshots")
                .join(&chapter),
        );
        settings.bind(|| {
            insta::assert_snapshot!("page", skeleton);
            for (name, card) in &cards {
                insta::assert_snapshot!(name.as_str(), pretty(card));
            }
        });
    }
}

/// The chapter with each card replaced by a line naming its snapshot (and the shared style
/// sheet by a line), and each card: (snapshot name, HTML).
fn split_cards(rendered: &str) -> (String, Vec<(String, String)>) {
    let mut skeleton = String::new();
    let mut cards = Vec::new();
    let mut rest = rendered;
    while let Some(at) = find_at_line_start(rest, CARD) {
        skeleton.push_str(&rest[..at]);
        let end = at + closing_div(&rest[at..]);
        let card = &rest[at..end];
        let name = format!("{:02}-{}", cards.len() + 1, card_name(card));
        skeleton.push_str(&format!("[card: snapshot {name}]"));
        cards.push((name, card.to_owned()));
        rest = &rest[end..];
    }
    skeleton.push_str(rest);
    (without_style(&skeleton), cards)
}

/// The first `needle` at the start of a line of `text`.
fn find_at_line_start(text: &str, needle: &str) -> Option<usize> {
    text.match_indices(needle)
        .map(|(at, _)| at)
        .find(|&at| at == 0 || text[..at].ends_with('\n'))
}

/// The length of the `<div …>…</div>` that `html` starts with (all of it when unbalanced).
fn closing_div(html: &str) -> usize {
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(next) = html[at..].find("<div").map(|i| i + at) {
        let close = html[at..].find("</div>").map(|i| i + at);
        match close {
            Some(close) if close < next => {
                depth -= 1;
                at = close + "</div>".len();
                if depth == 0 {
                    return at;
                }
            }
            _ => {
                depth += 1;
                at = next + "<div".len();
            }
        }
    }
    while let Some(close) = html[at..].find("</div>").map(|i| i + at) {
        depth = depth.saturating_sub(1);
        at = close + "</div>".len();
        if depth == 0 {
            return at;
        }
    }
    html.len()
}

/// A card's name: its contract's id, else its kind (`expected`, `provider`).
fn card_name(card: &str) -> String {
    let head = card.split('>').next().unwrap_or("");
    if let Some(id) = head.split("id=\"").nth(1).and_then(|s| s.split('"').next()) {
        return id.trim_start_matches("fkc-").to_owned();
    }
    let classes = head.split("class=\"").nth(1).unwrap_or("");
    let kind = classes.split_whitespace().nth(1).unwrap_or("card");
    kind.trim_end_matches('"')
        .trim_start_matches("fkc-")
        .to_owned()
}

/// The style sheet every chapter carries, as one line (the template is its source).
fn without_style(page: &str) -> String {
    match (page.find("<style>"), page.find("</style>")) {
        (Some(start), Some(end)) if start < end => format!(
            "{}<style>(preprocessor/templates/style.html.tera)</style>{}",
            &page[..start],
            &page[end + "</style>".len()..]
        ),
        _ => page.to_owned(),
    }
}

/// `html` one element per line: a line break before each tag that opens or closes a block
/// (rows, cells of a figure, diagnostic lines, SVG shapes), so a diff names the part that
/// changed. For review only: the page itself is not re-read from it.
fn pretty(html: &str) -> String {
    const BREAK_BEFORE: [&str; 22] = [
        "<div",
        "</div>",
        "<table",
        "</table>",
        "<thead",
        "<tbody",
        "<tr",
        "<p>",
        "<p ",
        "<h3",
        "<h4",
        "<details",
        "<summary",
        "<pre",
        "<figure",
        "<figcaption",
        "<svg",
        "<path",
        "<rect",
        "<text",
        "<span class=\"fkc-dline",
        "<li",
    ];
    let mut out = String::with_capacity(html.len() * 11 / 10);
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        let tail = &rest[lt..];
        if BREAK_BEFORE.iter().any(|tag| tail.starts_with(tag))
            && !out.ends_with('\n')
            && !out.is_empty()
        {
            out.push('\n');
        }
        out.push('<');
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

/// The code paths rows of a rendered chapter, which the snapshots leave out: every path
/// required here reached in every dtype, and the AVX-512-only paths (`levels: [x86-v4]`)
/// named as not required exactly where this machine cannot run that level.
fn every_path_reached(path: &str, source: &str, rendered: &str) {
    const ROW: &str = "code paths reached</td><td data-label=\"what ran\">";
    let rows: Vec<String> = rendered
        .lines()
        .filter_map(|line| line.split_once(ROW)?.1.split("</td>").next())
        .map(|cell| cell.replace("&#x2F;", "/"))
        .collect();
    let names_paths = source.contains("\n  paths:");
    assert!(
        !names_paths || !rows.is_empty(),
        "{path} shows no code paths row"
    );
    for row in &rows {
        assert!(!row.contains("not reached"), "{path}: {row}");
        let counts = row.split("reached per dtype: ").nth(1).unwrap_or_default();
        for count in counts.split(';').next().unwrap_or_default().split(", ") {
            let (_, fraction) = count.split_once(' ').unwrap();
            let (hit, named) = fraction.split_once('/').unwrap();
            assert_eq!(hit, named, "{path}: {row}");
        }
    }
    let level_bound = source
        .split("```fkc")
        .filter(|block| {
            block
                .split("```")
                .next()
                .unwrap_or_default()
                .contains("levels: [x86-v4]")
        })
        .count();
    let not_required = rows
        .iter()
        .filter(|r| r.contains("not required on this machine"))
        .count();
    let expected = if runs_x86_v4() { 0 } else { level_bound };
    assert_eq!(not_required, expected, "{path}: {rows:?}");
}

/// Whether this machine runs pulp's `x86-v4` level (the AVX-512 subsets it needs).
fn runs_x86_v4() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512cd")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `rendered` with what depends on this machine's instruction-set levels left out, so that the
/// snapshot is the same on every machine: the cells of the levels row (which names the machine
/// and its levels) and of the code paths row (a path of a level this machine cannot run is not
/// required here) become placeholders, the sample counts of the rows that count grown
/// samples (grown until every path this machine's levels take is reached) become `N`, and
/// the rows of dtypes merged because their counts agree are split again.
fn without_machine(rendered: &str) -> String {
    const ROWS: [(&str, &str); 2] = [
        ("instruction-set levels", "(this machine's levels)"),
        (
            "code paths reached",
            "(the paths this machine's levels take)",
        ),
    ];
    const GROWN: [&str; 4] = [
        "accepts the admitted domain</td>",
        "against the work done</td>",
        "against the traffic</td>",
        "independent of</td>",
    ];
    let cell = |line: &str| {
        ROWS.iter().find_map(|(row, placeholder)| {
            let row = format!("{row}</td><td data-label=\"what ran\">");
            let (before, _) = line.split_once(&row)?;
            Some(format!("{before}{row}{placeholder}</td></tr>"))
        })
    };
    let counts = |line: &str| {
        GROWN
            .iter()
            .any(|row| line.contains(row))
            .then(|| sample_counts_redacted(line))
    };
    rendered
        .lines()
        .flat_map(one_row_per_dtype)
        .map(|line| cell(&line).or_else(|| counts(&line)).unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
        + if rendered.ends_with('\n') { "\n" } else { "" }
}

#[test]
fn cards_split_at_their_own_closing_div() {
    let page = "# T\n<div class=\"fkc-card fkc-contract\" id=\"fkc-k\"><div>a</div></div>\ntext\n\
                <div class=\"fkc-card fkc-expected\"><p>e</p></div>\n";
    let (skeleton, cards) = split_cards(page);
    assert_eq!(
        skeleton,
        "# T\n[card: snapshot 01-k]\ntext\n[card: snapshot 02-expected]\n"
    );
    assert_eq!(
        cards[0].1,
        "<div class=\"fkc-card fkc-contract\" id=\"fkc-k\"><div>a</div></div>"
    );
    assert_eq!(
        pretty(&cards[1].1),
        "<div class=\"fkc-card fkc-expected\">\n<p>e</p>\n</div>"
    );
}

/// A row of several dtypes' admitted domains ("F64, BF16, F16 accepts …" through
/// `…_{f64,bf16,f16}`, the dtype itself written `T` after "T = BF16, F16: ") as the row of
/// each dtype: identical rows merge, and whether they are identical depends on their sample
/// counts, which depend on the machine's levels.
fn one_row_per_dtype(line: &str) -> Vec<String> {
    const CHECK: &str = "<td data-label=\"check\">";
    const ROW: &str = " accepts the admitted domain";
    let split = || {
        let (before, rest) = line.split_once(CHECK)?;
        let (dtypes, after) = rest.split_once(ROW)?;
        let names: Vec<&str> = dtypes.split(", ").collect();
        let open = after.find("_{")?;
        let close = open + after[open..].find('}')?;
        let suffixes: Vec<&str> = after[open + 2..close].split(',').collect();
        let defined = format!("T = {dtypes}: ");
        let row = |name: &str, suffix: &str| {
            let (head, tail) = (&after[..=open], &after[close + 1..]);
            let text = format!("{head}{suffix}{tail}");
            let text = match text.split_once(&defined) {
                Some((cell, text)) => {
                    let word = |w: &str| match w.strip_prefix('T') {
                        Some(rest) if rest.chars().all(|c| ",.:;".contains(c)) => {
                            format!("{name}{rest}")
                        }
                        _ => w.to_owned(),
                    };
                    let words: Vec<String> = text.split(' ').map(word).collect();
                    format!("{cell}{}", words.join(" "))
                }
                None => text,
            };
            format!("{before}{CHECK}{name}{ROW}{text}")
        };
        (names.len() > 1 && names.len() == suffixes.len()).then(|| {
            (names.iter().zip(&suffixes))
                .map(|(n, s)| row(n, s))
                .collect()
        })
    };
    split().unwrap_or_else(|| vec![line.to_owned()])
}

#[test]
fn merged_dtype_rows_are_split_for_the_snapshot() {
    let row = "<tr><td data-label=\"check\">F64, F16 accepts the admitted domain</td><td>9 samples through <code>m::k_{f64,f16}</code>: ok</td></tr>";
    assert_eq!(
        one_row_per_dtype(row),
        [
            "<tr><td data-label=\"check\">F64 accepts the admitted domain</td><td>9 samples through <code>m::k_f64</code>: ok</td></tr>",
            "<tr><td data-label=\"check\">F16 accepts the admitted domain</td><td>9 samples through <code>m::k_f16</code>: ok</td></tr>",
        ]
    );
    let typed = "<td data-label=\"check\">BF16, F16 accepts the admitted domain</td><td>T = BF16, F16: 9 samples through <code>k_{bf16,f16}</code>: in T, ok";
    assert_eq!(
        one_row_per_dtype(typed)[1],
        "<td data-label=\"check\">F16 accepts the admitted domain</td><td>9 samples through <code>k_f16</code>: in F16, ok"
    );
    let single = "<tr><td data-label=\"check\">F32 accepts the admitted domain</td><td>x</td></tr>";
    assert_eq!(one_row_per_dtype(single), [single]);
}

/// `line` with every count of samples ("68 samples", "68 F32 samples") written `N`.
fn sample_counts_redacted(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let counted = |at: usize| {
        let next = |k: usize| words.get(at + k).copied().unwrap_or_default();
        let dtype = ["F32", "F64", "BF16", "F16"].contains(&next(1));
        next(1).starts_with("samples") || dtype && next(2).starts_with("samples")
    };
    let redacted: Vec<String> = (words.iter().enumerate())
        .map(|(at, word)| {
            // a count may follow the cell's opening tag: `ran">68`
            let (tag, number) = word.rsplit_once('>').map_or(("", *word), |(t, n)| (t, n));
            let digits = !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit());
            match digits && counted(at) {
                true if tag.is_empty() => "N".to_owned(),
                true => format!("{tag}>N"),
                false => (*word).to_owned(),
            }
        })
        .collect();
    redacted.join(" ")
}

#[test]
fn sample_counts_are_redacted_but_not_other_numbers() {
    assert_eq!(
        sample_counts_redacted("<td>on every one of 68 F32 samples, 3 taps; <td>45 samples run"),
        "<td>on every one of N F32 samples, 3 taps; <td>N samples run"
    );
}
