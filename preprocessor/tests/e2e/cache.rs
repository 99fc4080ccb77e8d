//! The verification cache and parallel verification: a warm check reuses what the gate found
//! (proved by planting a marker in the stored evidence and diagnostics), an edited contract is
//! verified again, `--no-cache`
//! and `cache = false` verify everything afresh, the cache never lives among the sources, and
//! the results do not depend on the thread count.

use crate::support::*;
use mdbook_fkc::Checker as BookChecker;
use mdbook_fkc::{Renderer, VerifyOptions};
use std::path::Path;

const MARKER: &str = "PLANTED-IN-THE-CACHE";

/// The stored verifications (`*.json`; the directory also remembers the binary's hash).
fn entries(book: &Path) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(book.join("target/fkc-cache")) {
        Ok(dir) => dir
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Rewrites every stored entry so its first evidence row (a passing contract's) or its first
/// diagnostic's message (a failing one's) says [`MARKER`].
fn plant_marker(book: &Path) {
    for entry in entries(book) {
        let text = std::fs::read_to_string(&entry).unwrap();
        let mut stored: serde_json::Value = serde_json::from_str(&text).unwrap();
        let marker = serde_json::Value::String(MARKER.to_owned());
        if let Some(diagnostic) = stored["diagnostics"].get_mut(0) {
            diagnostic["message"] = marker;
        } else if let Some(row) = stored["evidence"]["rows"].get_mut(0) {
            row[1] = marker;
        }
        std::fs::write(&entry, stored.to_string()).unwrap();
    }
}

fn check_json(book: &Path, extra: &[&str]) -> String {
    let mut args = vec!["check", "--format", "json"];
    args.extend_from_slice(extra);
    let out = fkc(&args, book);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn a_warm_check_reuses_what_the_gate_found_and_an_edited_contract_is_verified_again() {
    let book = project_book();
    let cold = check_json(&book, &[]);
    assert!(!cold.contains(MARKER));
    let stored = entries(&book).len();
    // Every contract the gate ran on is stored: the 22 that pass and the diagnostics index's
    // examples that fail in the gate (their diagnostics, relative to their fence).
    assert!(stored > 22, "{:?}", entries(&book));
    plant_marker(&book);
    let warm = check_json(&book, &[]);
    assert_eq!(
        warm.matches(MARKER).count(),
        22,
        "the warm check did not read the cache"
    );
    assert!(!check_json(&book, &["--no-cache"]).contains(MARKER));

    // A failing contract's diagnostics come from the cache too: the diagnostics index's
    // should_fail examples show the planted message in their boxes.
    let out = fkc(&["build", "-d", "out"], &book);
    assert!(out.status.success(), "{}", stderr(&out));
    let index = std::fs::read_to_string(book.join("out/diagnostics/index.html")).unwrap();
    assert!(
        index.contains(MARKER),
        "no cached diagnostic on the index page"
    );

    // Editing one contract (a comment is enough) verifies that one again, and only it.
    let chapter = book.join("book/contracts/contiguize.md");
    let text = std::fs::read_to_string(&chapter).unwrap();
    let edited = text.replacen("```fkc\n", "```fkc\n# edited\n", 1);
    assert_ne!(text, edited);
    std::fs::write(&chapter, edited).unwrap();
    let after_edit = check_json(&book, &[]);
    assert_eq!(after_edit.matches(MARKER).count(), 21);
    assert_eq!(entries(&book).len(), stored + 1);
}

#[test]
fn cache_false_turns_the_cache_off_and_a_cache_among_the_sources_is_refused() {
    let book = project_book();
    let toml = book.join("book.toml");
    let original = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        original.replace(
            "[preprocessor.fkc]\n",
            "[preprocessor.fkc]\ncache = false\n",
        ),
    )
    .unwrap();
    check_json(&book, &[]);
    assert!(
        entries(&book).is_empty(),
        "cache = false still wrote entries"
    );

    std::fs::write(
        &toml,
        original.replace(
            "[preprocessor.fkc]\n",
            "[preprocessor.fkc]\ncache-dir = \"book/.fkc-cache\"\n",
        ),
    )
    .unwrap();
    let out = fkc(&["check"], &book);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("inside the book's sources"),
        "{}",
        stderr(&out)
    );
    assert!(!book.join("book/.fkc-cache").exists());
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let path = "book/seed/reference-conv-pool.md";
    let content = std::fs::read_to_string(repo_root().join(path)).unwrap();
    let renderer = Renderer::new(None).unwrap();
    let run = |jobs: usize| {
        let mut checker =
            BookChecker::with_options(&renderer, VerifyOptions::default()).with_jobs(Some(jobs));
        let report = checker.chapter_at(path, &content, "../").unwrap();
        let diagnostics: Vec<String> = report
            .diagnostics
            .iter()
            .map(|d| format!("{} {:?} {}", d.code, d.span, d.message))
            .collect();
        (report.content.unwrap(), diagnostics)
    };
    let one = run(1);
    assert!(one.0.contains("fkc-contract"), "nothing was rendered");
    assert_eq!(one, run(2));
    assert_eq!(one, run(5));
}

#[test]
fn pages_built_from_the_cache_equal_pages_built_afresh() {
    let book = project_book();
    let build = |dest: &str, extra: &[&str]| {
        let mut args = vec!["build", "-d", dest];
        args.extend_from_slice(extra);
        let out = fkc(&args, &book);
        assert!(out.status.success(), "{}", stderr(&out));
        ["seed/reference-conv-pool.html", "diagnostics/index.html"]
            .map(|page| std::fs::read_to_string(book.join(dest).join(page)).unwrap())
    };
    let fresh = build("fresh", &["--no-cache"]);
    let cold = build("cold", &[]);
    let warm = build("warm", &[]);
    assert!(!entries(&book).is_empty());
    assert!(
        fresh == cold,
        "a build filling the cache differs from one without it"
    );
    assert!(
        fresh == warm,
        "a build from the cache differs from one without it"
    );
    // `check` stores its findings without the worked examples (it renders nothing); a build
    // from those entries draws each example alone, the same as a full run draws it.
    std::fs::remove_dir_all(book.join("target/fkc-cache")).unwrap();
    let out = fkc(&["check"], &book);
    assert!(out.status.success(), "{}", stderr(&out));
    let figureless = || {
        let figureless = |e: &std::path::PathBuf| {
            std::fs::read_to_string(e)
                .unwrap()
                .contains("\"figure_skipped\":true")
        };
        entries(&book).iter().filter(|e| figureless(e)).count()
    };
    assert!(
        figureless() >= 22,
        "{} entries without a figure",
        figureless()
    );
    let after_check = build("after-check", &[]);
    assert!(
        fresh == after_check,
        "a build from a check's cache differs from one without it"
    );
    assert_eq!(
        figureless(),
        0,
        "the build did not store the examples it drew"
    );
}

/// The (kernel, failing) of each contract of `check --format json` in `dir` (with the cache).
fn verdicts(dir: &Path, env: &[(&str, &str)]) -> Vec<(String, bool)> {
    let output = std::process::Command::new(fkc_bin())
        .args(["check", "--format", "json"])
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    json["contracts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kernel"].as_str().unwrap().to_owned(),
                c["failing"] == true,
            )
        })
        .collect()
}

#[test]
fn a_changed_provider_command_or_environment_is_never_served_from_the_cache() {
    let honest = vec![("victim".to_owned(), false), ("culprit".to_owned(), false)];
    let lying = vec![("victim".to_owned(), false), ("culprit".to_owned(), true)];
    // The same provider script, only its command line changed so that its kernel lies.
    let dir = crate::faults::faulty_book("honest", &[]);
    assert_eq!(verdicts(&dir, &[]), honest);
    assert!(!entries(&dir).is_empty(), "nothing was cached");
    let toml = dir.join("book.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, text.replace(" honest\"", " lie\"")).unwrap();
    assert_eq!(verdicts(&dir, &[]), lying);
    std::fs::write(&toml, &text).unwrap();
    assert_eq!(verdicts(&dir, &[]), honest);
    // An environment variable the provider's table names.
    let dir = crate::faults::faulty_book("lie-env", &["env = [\"FKC_FAULTY_LIE\"]"]);
    assert_eq!(verdicts(&dir, &[("FKC_FAULTY_LIE", "0")]), honest);
    assert_eq!(verdicts(&dir, &[("FKC_FAULTY_LIE", "1")]), lying);
    assert_eq!(verdicts(&dir, &[("FKC_FAULTY_LIE", "0")]), honest);
}
