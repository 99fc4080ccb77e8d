//! A whole-output snapshot of the rendered seed chapter (the Markdown the preprocessor hands
//! back to mdBook). Refresh with `FKC_BLESS=1 cargo test -p mdbook-fkc --test e2e snapshot`.

use crate::support::*;
use mdbook_fkc::Checker as BookChecker;
use mdbook_fkc::{BookContracts, Renderer};

#[test]
fn seed_chapter_snapshot() {
    let content =
        std::fs::read_to_string(repo_root().join("book/seed/reference-conv-pool.md")).unwrap();
    let renderer = Renderer::new(None).unwrap();
    // The book's other contracts are read first, as a build does: the worked examples price
    // the planner's Contiguize step from contiguize's own contract.
    let contiguize = "book/contracts/contiguize.md";
    let mut contracts = BookContracts::default();
    contracts.add_chapter(
        contiguize,
        "contracts/contiguize.html",
        &std::fs::read_to_string(repo_root().join(contiguize)).unwrap(),
    );
    let mut checker = BookChecker::new(&renderer).price_with(std::sync::Arc::new(contracts));
    let report = checker
        .chapter_at("book/seed/reference-conv-pool.md", &content, "../")
        .unwrap();
    assert!(
        report.diagnostics.iter().all(|d| !d.is_error()),
        "the seed chapter has errors: {:?}",
        report
            .diagnostics
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
    );
    let rendered = without_machine(&report.content.unwrap());
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/seed-chapter.md");
    if std::env::var_os("FKC_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &rendered).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("no snapshot at {}; run with FKC_BLESS=1", path.display()));
    assert!(
        expected == rendered,
        "the seed chapter renders differently from {}; inspect and re-bless with FKC_BLESS=1",
        path.display()
    );
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
