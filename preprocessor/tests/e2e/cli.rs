//! The `check` and `explain` commands.

use crate::support::*;

#[test]
fn check_passes_on_the_project_book_and_lists_the_contracts() {
    let out = fkc(&["check", "."], &repo_root());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("ok   conv2d (registrable)"), "{text}");
    assert!(text.contains("ok   max_pool2d (describe-only)"), "{text}");
}

#[test]
fn check_json_reports_codes_and_locations() {
    let out = fkc(
        &["check", ".", "--format", "json"],
        &fixture("flattened-seed"),
    );
    assert!(!out.status.success());
    let diagnostics: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let first = &diagnostics[0];
    assert_eq!(first["code"], "FKC0104");
    assert_eq!(first["file"], "book/seed.md");
    assert_eq!(first["line"], 4);
    assert_eq!(first["column"], 1);
    assert!(first["help"][0].as_str().unwrap().contains("indent"));
}

#[test]
fn explain_prints_the_long_explanation() {
    let out = fkc(&["explain", "FKC0206"], &repo_root());
    assert!(out.status.success());
    assert!(stdout(&out).contains("same_as"));
    let out = fkc(&["explain", "FKC9999"], &repo_root());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown code"));
}

#[test]
fn unknown_commands_and_options_are_usage_errors() {
    assert_eq!(fkc(&["frobnicate"], &repo_root()).status.code(), Some(2));
    assert_eq!(
        fkc(&["check", "--format", "xml"], &repo_root())
            .status
            .code(),
        Some(2)
    );
}
