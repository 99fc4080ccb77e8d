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
        let rendered = without_machine(&report.content.unwrap());
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

/// `rendered` with the instruction-set levels row's cell (which names this machine and the
/// levels it has) replaced by a placeholder: the snapshot is the same on every machine.
fn without_machine(rendered: &str) -> String {
    const ROW: &str = "instruction-set levels</td><td data-label=\"what ran\">";
    rendered
        .lines()
        .map(|line| match line.split_once(ROW) {
            Some((before, _)) => format!("{before}{ROW}(this machine's levels)</td></tr>"),
            None => line.to_owned(),
        })
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
