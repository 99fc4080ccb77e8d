//! Hostile and careless input: every case ends in a located diagnostic with a stable code —
//! never a panic, a hang or unbounded memory — and author text is always escaped on output.

use mdbook_fkc::Checker as BookChecker;
use mdbook_fkc::Renderer;
use mdbook_fkc::diag::Diagnostic;
use mdbook_fkc::report::ChapterReport;

const FRONT: &str = "---\nfkc_version: 1\nprovider:\n  name: p\n  backend: Cpu\n  kernel_source: \"reference-oracle\"\n  link_registry: fuel_reference_backend::fkc::ENTRY_POINTS\n  revision_base: r\n---\n";

/// A valid describe-only contract to mutate.
const POOL: &str = "kernel: k\nregistrable: false\nblurb: \"BLURB\"\nbackend: Cpu\nkernel_source: \"reference-oracle\"\nentry_point: \"fuel_reference_backend::ops::max_pool2d_f32\"\naccept:\n  inputs:\n    - { name: x, dtypes: [F32, F64, BF16, F16], rank: 4 }\nop_params:\n  fields:\n    kernel_size: { kind: usize, constraint: \"CONSTRAINT\" }\n    stride: { kind: usize, constraint: \"stride > 0\" }\nreturn:\n  outputs:\n    - { name: out, dtype_rule: passthrough(x), shape_rule: \"from_params(N=x.dim[0], C=x.dim[1], H=(x.dim[2]-kernel_size)/stride+1, W=(x.dim[3]-kernel_size)/stride+1)\" }\n";

fn chapter(body: &str) -> (String, ChapterReport) {
    let text = format!("{FRONT}# Hostile\n\n```fkc\n{body}```\n");
    let renderer = Renderer::new(None).unwrap();
    let mut checker = BookChecker::new(&renderer);
    let report = checker.chapter("book/hostile.md", &text).unwrap();
    (text, report)
}

fn pool(blurb: &str, constraint: &str) -> String {
    POOL.replace("BLURB", blurb)
        .replace("CONSTRAINT", constraint)
}

/// The single error of a chapter: its code and its 1-based line and column.
fn only_error(report: &ChapterReport) -> (&'static str, usize, usize) {
    let errors: Vec<&Diagnostic> = report.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert_eq!(
        errors.len(),
        1,
        "{:?}",
        errors
            .iter()
            .map(|d| (d.code, &d.message))
            .collect::<Vec<_>>()
    );
    let at = errors[0].location();
    assert!(
        !errors[0].help.is_empty(),
        "every diagnostic has a help line: {}",
        errors[0].message
    );
    (errors[0].code.as_str(), at.line, at.column)
}

const FENCE_LINE: usize = 13; // the first line inside the fence

#[test]
fn the_valid_base_passes() {
    let (_, report) = chapter(&pool("ok", "kernel_size > 0"));
    assert!(report.diagnostics.iter().all(|d| !d.is_error()));
}

#[test]
fn empty_and_non_mapping_blocks() {
    let (_, report) = chapter("");
    assert_eq!(only_error(&report).0, "FKC0103");
    let (_, report) = chapter("just a scalar\n");
    assert_eq!(only_error(&report), ("FKC0103", FENCE_LINE, 1));
    let (_, report) = chapter("- a\n- b\n");
    assert_eq!(only_error(&report), ("FKC0103", FENCE_LINE, 1));
}

#[test]
fn tabs_are_located() {
    let (_, report) = chapter("kernel: k\n\tbackend: Cpu\n");
    assert_eq!(only_error(&report), ("FKC0101", FENCE_LINE + 1, 1));
}

#[test]
fn alias_bomb_is_a_budget_error() {
    let mut body = String::from("kernel: k\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..10 {
        let prev = format!("*a{}", level - 1);
        let items = [prev.as_str(); 10].join(", ");
        body.push_str(&format!("a{level}: &a{level} [{items}]\n"));
    }
    let (_, report) = chapter(&body);
    assert_eq!(only_error(&report).0, "FKC0102");
}

#[test]
fn deep_nesting_is_refused() {
    let body = format!(
        "kernel: k\nx: {}{}\n",
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    let (_, report) = chapter(&body);
    let code = only_error(&report).0;
    assert!(code == "FKC0102" || code == "FKC0101", "{code}");
}

#[test]
fn megabyte_scalar_is_refused() {
    let body = format!("kernel: k\nblurb: \"{}\"\n", "x".repeat(1 << 20));
    let (_, report) = chapter(&body);
    assert_eq!(only_error(&report).0, "FKC0102");
}

#[test]
fn numbers_past_u64_are_located_type_errors() {
    let body =
        pool("ok", "kernel_size > 0").replace("rank: 4", "rank: 123456789012345678901234567890");
    let (_, report) = chapter(&body);
    let (code, line, _) = only_error(&report);
    assert!(code == "FKC0106" || code == "FKC0107", "{code}");
    assert_eq!(line, FENCE_LINE + 8);
}

/// Every malformed `rank` is one located error with its code: a word other than `any`, an empty
/// range, a bound above the format's limit, a range without `max`; a range on an operand the
/// kernel takes at one rank only is the provider's mismatch.
#[test]
fn malformed_ranks_are_located_errors() {
    for (rank, want) in [
        ("four", "FKC0106"),
        ("{ min: 3, max: 1 }", "FKC0107"),
        ("{ min: 1, max: 9 }", "FKC0107"),
        ("{ min: 1 }", "FKC0105"),
        ("{ min: 1, max: 4, step: 2 }", "FKC0104"),
        ("any", "FKC0408"),
    ] {
        let (_, report) =
            chapter(&pool("ok", "kernel_size > 0").replace("rank: 4", &format!("rank: {rank}")));
        let (code, line, _) = only_error(&report);
        assert_eq!(code, want, "rank: {rank}");
        assert_eq!(line, FENCE_LINE + 8, "rank: {rank}");
    }
}

/// Ranks that combine in more ways than the semantics are checked at (four inputs of any rank:
/// 6561) are a budget error at the semantics, not an unbounded check.
#[test]
fn too_many_rank_combinations_are_a_budget_error() {
    let body = any_rank_inputs(&["a", "b", "c", "d"]);
    let (text, report) = chapter(&body);
    let budget: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|d| d.code.as_str() == "FKC0505")
        .collect();
    assert_eq!(budget.len(), 1, "{:?}", report.diagnostics);
    let line = text
        .lines()
        .position(|l| l.starts_with("semantics:"))
        .unwrap()
        + 2; // located at the semantics' text, the line after `semantics: |`
    assert_eq!(budget[0].location().line, line);
    assert!(!budget[0].help.is_empty());
}

/// Three inputs of any rank (729 combinations up to rank 8) are within the budget.
#[test]
fn three_inputs_of_any_rank_are_within_the_rank_budget() {
    let (_, report) = chapter(&any_rank_inputs(&["a", "b", "c"]));
    let budget = report
        .diagnostics
        .iter()
        .filter(|d| d.code.as_str() == "FKC0505");
    assert_eq!(budget.count(), 0, "{:?}", report.diagnostics);
}

/// A contract whose inputs `names` are each of any rank.
fn any_rank_inputs(names: &[&str]) -> String {
    let inputs: String = names
        .iter()
        .map(|n| format!("    - {{ name: {n}, dtypes: [F32], rank: any }}\n"))
        .collect();
    format!(
        "kernel: k\nregistrable: false\nbackend: Cpu\nkernel_source: \"reference-oracle\"\nentry_point: \"fuel_reference_backend::ops::add_f32\"\naccept:\n  inputs:\n{inputs}return:\n  outputs:\n    - {{ name: out, dtype_rule: passthrough(a), shape_rule: \"broadcast(a, b)\" }}\nsemantics: |\n  for o in out:\n    out[o] = a[broadcast(o)]\n"
    )
}

#[test]
fn a_5000_deep_expression_is_a_budget_error_at_its_column() {
    let deep = format!("{}kernel_size{} > 0", "(".repeat(5000), ")".repeat(5000));
    let (text, report) = chapter(&pool("ok", &deep));
    let (code, line, column) = only_error(&report);
    assert_eq!(code, "FKC0205");
    assert_eq!(line, FENCE_LINE + 11);
    let line_text = text.lines().nth(line - 1).unwrap();
    let prefix: String = line_text.chars().take(column - 1).collect();
    assert!(
        prefix.ends_with(&"(".repeat(64)) || prefix.ends_with('"'),
        "column {column} in {line_text:.80}"
    );
}

#[test]
fn expression_errors_point_inside_the_expression() {
    let (text, report) = chapter(&pool("ok", "kernel_size > 0 && kernel_sise < 9"));
    let (code, line, column) = only_error(&report);
    assert_eq!(code, "FKC0202");
    let line_text = text.lines().nth(line - 1).unwrap();
    let at: String = line_text.chars().skip(column - 1).take(11).collect();
    assert_eq!(at, "kernel_sise");
}

#[test]
fn html_and_script_are_escaped_in_every_output() {
    let (_, report) = chapter(&pool("<script>alert('blurb')</script>", "kernel_size > 0"));
    assert!(report.diagnostics.iter().all(|d| !d.is_error()));
    let html = report.content.unwrap();
    assert!(!html.contains("<script>"), "unescaped blurb");
    assert!(html.contains("&lt;script&gt;"));

    let (_, report) = chapter("kernel: k\n\"<img src=x onerror=alert(1)>\": 1\n");
    let html = report.content.unwrap();
    assert!(
        !html.contains("<img"),
        "unescaped field name in an error box"
    );
}

#[test]
fn missing_front_matter_is_located_at_the_fence() {
    let text = format!(
        "# No front matter\n\n```fkc\n{}```\n",
        pool("ok", "kernel_size > 0")
    );
    let renderer = Renderer::new(None).unwrap();
    let report = BookChecker::new(&renderer)
        .chapter("book/x.md", &text)
        .unwrap();
    assert_eq!(only_error(&report), ("FKC0001", 3, 4));
}

#[test]
fn links_directives_in_author_text_are_neutralised() {
    let (_, report) = chapter(&pool("{{#include /etc/passwd}}", "kernel_size > 0"));
    let html = report.content.unwrap();
    assert!(
        !html.contains("{{#include"),
        "the links preprocessor would expand this"
    );
}

#[test]
fn one_kernel_is_documented_by_one_contract() {
    let text = format!(
        "{FRONT}# Twice\n\n```fkc\n{}```\n\n```fkc\n{}```\n",
        pool("ok", "kernel_size > 0"),
        pool("ok", "kernel_size > 0").replace("kernel: k\n", "kernel: k_again\n")
    );
    let renderer = Renderer::new(None).unwrap();
    let report = BookChecker::new(&renderer)
        .chapter("book/twice.md", &text)
        .unwrap();
    let (code, line, _) = only_error(&report);
    assert_eq!(code, "FKC0307");
    assert_eq!(
        line,
        text.lines().position(|l| l == "kernel: k_again").unwrap() + 1
    );
}

#[test]
fn an_entry_point_of_another_dtype_is_refused() {
    let body = pool("ok", "kernel_size > 0").replace(
        "entry_point: \"fuel_reference_backend::ops::max_pool2d_f32\"",
        "entry_point: { F32: fuel_reference_backend::ops::max_pool2d_f64, F64: fuel_reference_backend::ops::max_pool2d_f64, BF16: fuel_reference_backend::ops::max_pool2d_bf16, F16: fuel_reference_backend::ops::max_pool2d_f16 }",
    );
    let (_, report) = chapter(&body);
    assert_eq!(only_error(&report).0, "FKC0304");
}

#[test]
fn duplicate_keys_are_named_without_parser_jargon() {
    let (_, report) = chapter("kernel: a\nblurb: x\nkernel: b\n");
    let error = report.diagnostics.iter().find(|d| d.is_error()).unwrap();
    assert_eq!(error.code.as_str(), "FKC0101");
    assert!(
        error.message.contains("`kernel` is written twice"),
        "{}",
        error.message
    );
    assert!(!error.message.contains("DuplicateKeyPolicy"));
}

#[test]
fn a_contract_in_a_block_quote_stays_inside_it() {
    let body = pool("ok", "kernel_size > 0");
    let quoted: String = format!("```fkc\n{body}```")
        .lines()
        .map(|line| format!("> {line}\n"))
        .collect();
    let text = format!("{FRONT}# Quoted\n\n{quoted}\nAfter.\n");
    let renderer = Renderer::new(None).unwrap();
    let report = BookChecker::new(&renderer)
        .chapter("book/q.md", &text)
        .unwrap();
    assert!(report.diagnostics.iter().all(|d| !d.is_error()));
    let html = report.content.unwrap();
    // The contract's rows (the provider card above the quote is not quoted).
    let rows: Vec<&str> = html
        .lines()
        .skip_while(|l| !l.contains("fkc-contract"))
        .filter(|l| l.contains("<tr>"))
        .collect();
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|l| l.starts_with("> ")),
        "an HTML line left the quote"
    );
}
