//! Fuzz target for the contract reader: arbitrary text as the body of a ```` ```fkc ```` fence
//! (or, when the first byte is odd, as a whole chapter with its own front matter) goes through
//! the whole per-chapter pipeline — front matter, fences, YAML with budgets, schema, expressions,
//! importer, rendering. It must never panic, hang or exhaust memory; every diagnostic must point
//! inside the file on character boundaries and carry a `help:` line; rendering diagnostics as text
//! and JSON must succeed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdbook_fkc::diag::{json, text};
use mdbook_fkc::Checker as BookChecker;
use mdbook_fkc::Renderer;
use std::sync::OnceLock;

const FRONT: &str = "---\nfkc_version: 1\nprovider:\n  name: fuel-reference-backend\n  backend: Cpu\n  kernel_source: \"reference-oracle\"\n  link_registry: fuel_reference_backend::fkc::ENTRY_POINTS\n  revision_base: \"git:f41137b4\"\n---\n# Fuzz\n\n";

fn renderer() -> &'static Renderer {
    static RENDERER: OnceLock<Renderer> = OnceLock::new();
    RENDERER.get_or_init(|| Renderer::new(None).expect("built-in templates compile"))
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let input = String::from_utf8_lossy(rest);
    let chapter = if mode % 2 == 1 {
        input.into_owned()
    } else {
        format!("{FRONT}```fkc\n{input}\n```\n")
    };
    let mut checker = BookChecker::new(renderer());
    let report = checker.chapter("book/fuzz.md", &chapter).expect("built-in templates render");
    for diagnostic in &report.diagnostics {
        let text_len = diagnostic.source.text.len();
        assert!(diagnostic.span.start <= diagnostic.span.end, "{diagnostic:?}");
        assert!(diagnostic.span.end <= text_len, "{diagnostic:?}");
        assert!(diagnostic.source.text.is_char_boundary(diagnostic.span.start));
        assert!(diagnostic.source.text.is_char_boundary(diagnostic.span.end));
        assert!(!diagnostic.help.is_empty(), "no help line: {}", diagnostic.message);
    }
    let _ = text::render_all(&report.diagnostics, text::Style::Plain);
    let _ = json::render_all(&report.diagnostics);
});
