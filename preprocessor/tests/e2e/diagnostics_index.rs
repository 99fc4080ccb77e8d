//! The diagnostics index is the gate's own proof: every code has an example marked
//! `should_fail=CODE`; each example, with the mark removed, fails with exactly that code; and a
//! `should_fail` mark on a passing contract is itself an error.

use crate::support::*;
use mdbook_fkc::Checker as BookChecker;
use mdbook_fkc::Renderer;
use mdbook_fkc::diag::Code;
use std::collections::BTreeSet;
use std::path::Path;

/// Codes proven elsewhere: FKC0004 by the `should-fail-mismatch` fixture (a fence cannot
/// expect its own expectation to fail); FKC0310 is a note shown beside describe-only contracts;
/// FKC0404 and FKC0405 by synthetic kernels in `verify`'s unit tests (no reference kernel
/// changes dtype or is nondeterministic, so no contract in the book can fail them).
const PROVEN_ELSEWHERE: [Code; 21] = [
    Code::ExpectationNotMet,
    // An erratum's placeholder with nothing to quote: the `placeholder-unfilled` fixture.
    Code::PlaceholderUnfilled,
    Code::DescribeOnly,
    // A note beside a contract whose values go unchecked (an error only under
    // `check --deny unchecked`, which the `cli` tests prove).
    Code::NoSemantics,
    Code::DtypeRuleViolated,
    Code::Nondeterministic,
    // These need a provider process or a command-line flag; this book spawns no process. The
    // `providers` tests prove each one on fixture books, and the index page names them.
    Code::UnverifiedDenied,
    Code::UncheckedDenied,
    Code::ProviderStart,
    Code::ProviderProtocol,
    Code::ProviderRegistryMismatch,
    Code::KernelCrashed,
    Code::KernelTimedOut,
    // Needs a kernel whose instruction-set levels disagree: the mutation suite's AVX2-only
    // mutant proves it.
    Code::LevelsDiffer,
    Code::ProviderDescription,
    Code::ProviderProtocolFault,
    Code::FrameLimit,
    Code::EntryPointHung,
    Code::ProviderUnverified,
    Code::ProviderBudget,
    Code::BuildBudget,
];

fn markdown_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

fn book_chapters() -> Vec<(String, String)> {
    let mut files = Vec::new();
    markdown_files(&repo_root().join("book"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            (path.display().to_string(), text)
        })
        .collect()
}

#[test]
fn every_code_has_an_example_that_must_fail_with_it() {
    let mut shown = BTreeSet::new();
    for (_, text) in book_chapters() {
        for piece in text.split("should_fail=").skip(1) {
            let codes: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '+')
                .collect();
            shown.extend(codes.split('+').map(str::to_owned));
        }
    }
    let index = std::fs::read_to_string(repo_root().join("book/diagnostics/index.md")).unwrap();
    for code in Code::ALL {
        if PROVEN_ELSEWHERE.contains(code) {
            assert!(
                index.contains(code.as_str()),
                "the index does not name {code}"
            );
            continue;
        }
        assert!(
            shown.contains(code.as_str()),
            "{code} has no should_fail example in the book"
        );
    }
}

/// Each example with its `should_fail` mark removed must fail with exactly its code.
#[test]
fn each_example_without_its_mark_fails_with_exactly_its_code() {
    let renderer = Renderer::new(None).unwrap();
    let mut checked = 0;
    let mut located = 0;
    for (path, text) in book_chapters() {
        let marked: Vec<(usize, String)> = text
            .match_indices("\n```fkc,should_fail=")
            .map(|(at, mark)| (at + 1, &mark[1..]))
            .map(|(at, mark)| {
                let codes: String = text[at + mark.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '+')
                    .collect();
                (at, codes)
            })
            .collect();
        for (at, code) in &marked {
            // Keep this fence's mark off and every earlier fence's mark on, so front-matter
            // problems (claimed by a chapter's first fence) still land on the right fence.
            let line_end = at + text[*at..].find('\n').unwrap();
            let attrs = &text[at + "```fkc".len()..line_end];
            let unmarked = format!("{}```fkc{}", &text[..*at], &text[line_end..]);
            let extra_attrs: Vec<&str> = attrs
                .split(',')
                .filter(|a| !a.is_empty() && !a.starts_with("should_fail"))
                .collect();
            let expected: BTreeSet<String> = if extra_attrs.is_empty() {
                code.split('+').map(str::to_owned).collect()
            } else {
                // The FKC0003 example's unknown attribute stays in the info string.
                let fixed = format!(
                    "{}```fkc,{}{}",
                    &text[..*at],
                    extra_attrs.join(","),
                    &text[line_end..]
                );
                let codes: BTreeSet<String> = errors_of(&renderer, &path, &fixed, *at, code)
                    .into_iter()
                    .map(|(c, _)| c)
                    .collect();
                assert_eq!(codes, BTreeSet::from([code.clone()]));
                checked += 1;
                continue;
            };
            let errors = errors_of(&renderer, &path, &unmarked, *at, code);
            let codes: BTreeSet<String> = errors.iter().map(|(c, _)| c.clone()).collect();
            assert_eq!(codes, expected, "example {code} in {path}");
            if let Some(line) = marked_line(&text, *at, code) {
                let lines: Vec<usize> = errors
                    .iter()
                    .filter(|(c, _)| code.split('+').any(|one| one == c))
                    .map(|(_, l)| *l)
                    .collect();
                assert!(
                    lines.contains(&line),
                    "{code} in {path}: expected at line {line}, found at {lines:?}"
                );
                located += 1;
            }
            checked += 1;
        }
    }
    assert!(checked >= 25, "only {checked} examples were checked");
    assert!(
        located >= 19,
        "only {located} examples were checked for their line"
    );
}

/// The (code, line) of the errors located in a chapter's `index`-th fence or its front matter (other
/// fences stay marked; an unmarked failing example still takes its kernel name, which later
/// examples of the same name would report, so those are not counted here).
fn errors_of(
    renderer: &Renderer,
    path: &str,
    text: &str,
    at: usize,
    code: &str,
) -> Vec<(String, usize)> {
    let fence_lines: Vec<(usize, usize)> = fence_line_ranges(text);
    let line = text[..at].matches('\n').count() + 1;
    let &(start, end) = fence_lines
        .iter()
        .find(|(start, _)| *start == line)
        .unwrap();
    let first = fence_lines[0].0;
    let mut checker = BookChecker::new(renderer);
    // The seed's kernels come first in the book (the FKC0307 example reuses `conv2d`).
    if code == "FKC0307" {
        let seed =
            std::fs::read_to_string(repo_root().join("book/seed/reference-conv-pool.md")).unwrap();
        checker
            .chapter("book/seed/reference-conv-pool.md", &seed)
            .unwrap();
    }
    let report = checker.chapter(path, text).unwrap();
    report
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .filter(|d| {
            let line = d.location().line;
            (start..=end).contains(&line) || line < first
        })
        .map(|d| (d.code.as_str().to_owned(), d.location().line))
        .collect()
}

/// The 1-based line in the fence starting at byte `at` that carries a `# ← CODE` marker.
fn marked_line(text: &str, at: usize, code: &str) -> Option<usize> {
    let first = text[..at].matches('\n').count() + 1;
    let marker = format!("# ← {code}");
    text[at..]
        .lines()
        .take_while(|line| *line != "```")
        .position(|line| line.contains(&marker))
        .map(|offset| first + offset)
}

/// (first line, last line) of every ```` ```fkc ```` fence, 1-based.
fn fence_line_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut open = None;
    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        match open {
            None if line.starts_with("```fkc") => open = Some(number),
            Some(start) if line == "```" => {
                ranges.push((start, number));
                open = None;
            }
            _ => {}
        }
    }
    ranges
}

#[test]
fn a_should_fail_mark_on_a_passing_contract_is_an_error() {
    let dir = fixture_book("should-fail-mismatch");
    let out = fkc(&["build", "."], &dir);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("error[FKC0004]: this fence must fail with FKC0104, but it passed"),
        "{err}"
    );
    assert!(err.contains("book/mismatch.md:"), "{err}");
}

#[test]
fn an_erratum_placeholder_with_nothing_to_quote_is_an_error_at_its_place() {
    let dir = fixture_book("placeholder-unfilled");
    let out = fkc(&["build", "."], &dir);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("error[FKC0006]: this counterexample placeholder has nothing to quote"),
        "{err}"
    );
    assert!(err.contains("book/erratum.md:38:46"), "{err}");
    assert!(
        err.contains("names no sample") || err.contains("without a sample"),
        "{err}"
    );
}
