//! The mdBook 0.5 preprocessor protocol spoken over stdin/stdout.

use crate::support::*;
use std::io::Write;
use std::process::{Command, Stdio};

fn context_and_book(content: &str) -> String {
    let context = serde_json::json!({
        "root": "/tmp/book",
        "config": { "book": { "src": "src" }, "preprocessor": { "fkc": {} } },
        "renderer": "html",
        "mdbook_version": "0.5.4"
    });
    let book = serde_json::json!({
        "items": [{ "Chapter": {
            "name": "Chapter", "content": content, "number": null, "sub_items": [],
            "path": "chapter.md", "source_path": "chapter.md", "parent_names": []
        }}]
    });
    serde_json::to_string(&serde_json::json!([context, book])).unwrap()
}

fn run_protocol(input: &str) -> std::process::Output {
    let mut child = Command::new(fkc_bin())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn chapter_content(stdout: &str) -> String {
    let book: serde_json::Value = serde_json::from_str(stdout).unwrap();
    book["items"][0]["Chapter"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn supports_every_renderer() {
    let out = fkc(&["supports", "html"], &repo_root());
    assert!(out.status.success());
}

#[test]
fn chapter_without_contracts_passes_through_byte_identical() {
    let content = "# Title\n\n```rust\nfn x() {}\n```\n\n---\nsmart \"quotes\" -- and\ttabs\n";
    let out = run_protocol(&context_and_book(content));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(chapter_content(&stdout(&out)), content);
}

#[test]
fn contract_fence_is_replaced_by_tables() {
    let content =
        std::fs::read_to_string(repo_root().join("book/seed/reference-conv-pool.md")).unwrap();
    let out = run_protocol(&context_and_book(&content));
    assert!(out.status.success(), "{}", stderr(&out));
    let rendered = chapter_content(&stdout(&out));
    assert!(
        !rendered.contains("\n```fkc\n"),
        "a fence was left in place"
    );
    assert!(rendered.contains("<h3><code>max_pool2d</code></h3>"));
    assert!(
        !rendered.contains("\n\n<td"),
        "a blank line inside an HTML block"
    );
}

#[test]
fn malformed_contract_fails_with_code_file_and_line() {
    let content = "---\nfkc_version: 1\nprovider:\n  name: p\n  backend: Cpu\n  kernel_source: s\n  link_registry: fuel_reference_backend::fkc::ENTRY_POINTS\n  revision_base: r\n---\n# K\n\n```fkc\nkernel: k\nkernl: 1\n```\n";
    let out = run_protocol(&context_and_book(content));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("error[FKC0104]: unknown field `kernl`"),
        "{err}"
    );
    assert!(err.contains("src/chapter.md:14:1"), "{err}");
    assert!(err.contains("did you mean `kernel`?"), "{err}");
}

#[test]
fn continue_mode_renders_an_error_box_and_succeeds() {
    let content = "---\nfkc_version: 1\nprovider:\n  name: p\n  backend: Cpu\n  kernel_source: s\n  link_registry: fuel_reference_backend::fkc::ENTRY_POINTS\n  revision_base: r\n---\n```fkc\nkernel: k\nkernl: <script>\n```\n";
    let input =
        context_and_book(content).replace(r#""fkc":{}"#, r#""fkc":{"on-failure":"continue"}"#);
    let out = run_protocol(&input);
    assert!(out.status.success(), "{}", stderr(&out));
    let rendered = chapter_content(&stdout(&out));
    assert!(rendered.contains("fkc-error"), "{rendered}");
    assert!(rendered.contains("FKC0104"));
    assert!(!rendered.contains("<script>"), "unescaped author text");
    assert!(stderr(&out).contains("warning: mdbook-fkc"));
}
