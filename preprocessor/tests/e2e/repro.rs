//! `mdbook-fkc repro`: the `reproduce:` line a failing check prints, run as written (its quoted
//! arguments split here, without a shell), reproduces the failure with the same code and exits
//! 1; the same line on the honest contract passes and exits 0; usage errors exit 2. Each failure
//! kind is covered: the contract's verdict, an undeclared dtype that runs, a named oracle's
//! disagreement and a required input the kernel does without.

use super::support::{fkc, repo_root, stderr, stdout, temp_dir};
use std::path::Path;

const SHAPE_RULE: &str = "Hout=(x.dim[2]-kernel_size)/stride+1";

/// A book whose only chapter is the seed's front matter and its `max_pool2d` contract, with
/// `from` replaced by `to`.
fn pool_book(dir: &Path, from: &str, to: &str) {
    seed_book(dir, "max_pool2d", from, to);
}

/// A book whose only chapter (`book/pool.md`) is the seed's front matter and its first verified
/// contract for `kernel`, with `from` replaced by `to`.
fn seed_book(dir: &Path, kernel: &str, from: &str, to: &str) {
    let seed =
        std::fs::read_to_string(repo_root().join("book/seed/reference-conv-pool.md")).unwrap();
    let front_end = seed[3..].find("---\n").unwrap() + 3 + 4;
    let start = seed.find(&format!("```fkc\nkernel: {kernel}\n")).unwrap();
    let end = start + seed[start + 3..].find("```\n").unwrap() + 3 + 4;
    assert!(
        seed[start..end].contains(from),
        "no `{from}` in the contract"
    );
    let fence = seed[start..end].replacen(from, to, 1);
    std::fs::create_dir_all(dir.join("book")).unwrap();
    std::fs::write(
        dir.join("book.toml"),
        "[book]\ntitle = \"repro\"\nsrc = \"book\"\n\n[preprocessor.fkc]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("book/SUMMARY.md"),
        "# Summary\n\n- [Pool](pool.md)\n",
    )
    .unwrap();
    let chapter = format!("{}# {kernel}\n\n{fence}", &seed[..front_end]);
    std::fs::write(dir.join("book/pool.md"), chapter).unwrap();
}

/// The line of the chapter's fence.
fn fence_line(dir: &Path) -> usize {
    let text = std::fs::read_to_string(dir.join("book/pool.md")).unwrap();
    text.lines().position(|l| l == "```fkc").unwrap() + 1
}

/// Splits a command line as a POSIX shell would, for words and single-quoted strings.
fn split(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted, mut started) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => (quoted, started) = (!quoted, true),
            ' ' if !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            _ => (word, started) = (word + &c.to_string(), true),
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// The arguments of the first `reproduce:` line of `check`'s report on the `max_pool2d`
/// contract, and the report.
fn reproduce_line(dir: &Path) -> (Vec<String>, String) {
    kernel_reproduce_line(dir, "max_pool2d (describe-only)")
}

/// The arguments of the first `reproduce:` line of `check`'s report on the contract `check`
/// lists as `listed`, and the report.
fn kernel_reproduce_line(dir: &Path, listed: &str) -> (Vec<String>, String) {
    let out = fkc(&["check", "--no-cache", "--color", "never"], dir);
    let report = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    let line = report
        .lines()
        .find_map(|l| l.split_once("help: reproduce: ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no reproduce line:\n{report}"));
    let words = split(line);
    assert_eq!(words[..2], ["mdbook-fkc", "repro"], "{line}");
    assert!(
        stdout(&out).contains(&format!("FAIL {listed} {} ", words[2])),
        "the repro line names the contract as `check` does: {line}\n{}",
        stdout(&out)
    );
    (words[2..].to_vec(), report)
}

/// (what to replace, replacement, the code the lie fails with).
const LIES: &[(&str, &str, &str)] = &[
    (
        SHAPE_RULE,
        "Hout=(x.dim[2]-kernel_size)/stride+2",
        "FKC0403",
    ),
    ("\"kernel_size > 0 && ", "\"kernel_size > 1 && ", "FKC0402"),
    ("\"kernel_size > 0 && ", "\"", "FKC0401"),
];

#[test]
fn the_reproduce_line_of_a_lie_reproduces_it_and_passes_on_the_truth() {
    for &(from, to, code) in LIES {
        let dir = temp_dir("repro");
        pool_book(&dir, from, to);
        let (args, report) = reproduce_line(&dir);
        assert!(report.contains(&format!("error[{code}]")), "{report}");
        assert!(report.contains("counterexample (shrunk, F32)"), "{report}");
        let mut repro = vec!["repro"];
        repro.extend(args.iter().map(String::as_str));
        let out = fkc(&repro, &dir);
        assert_eq!(out.status.code(), Some(1), "{code}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("error[{code}]")),
            "{}",
            stderr(&out)
        );
        assert!(
            stdout(&out).contains(&format!("reproduced {code}")),
            "{}",
            stdout(&out)
        );

        pool_book(&dir, from, from);
        let out = fkc(&repro, &dir);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{code}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(stdout(&out).contains("passes"), "{}", stdout(&out));
    }
}

/// Runs `repro` with `args` in `dir`: its exit code, stdout and stderr.
fn run_repro(args: &[String], dir: &Path) -> (Option<i32>, String, String) {
    let mut repro = vec!["repro"];
    repro.extend(args.iter().map(String::as_str));
    let out = fkc(&repro, dir);
    (out.status.code(), stdout(&out), stderr(&out))
}

/// A seed `kernel` contract (`check` lists it as `listed`) with one lie (`from` → `to`) fails
/// `check` with `code`, shrunk in `dtype`, with a reproduce line naming `--check` as `named`
/// and a sample containing each text of `sample`; run as written, the line exits 1 with
/// `code`; on the honest contract it exits 0.
fn reproduces(
    kernel: &str,
    listed: &str,
    (from, to): (&str, &str),
    code: &str,
    dtype: &str,
    named: Option<&str>,
    sample: &[&str],
) {
    let dir = temp_dir("repro-kind");
    seed_book(&dir, kernel, from, to);
    let (args, report) = kernel_reproduce_line(&dir, listed);
    assert!(report.contains(&format!("error[{code}]")), "{report}");
    assert!(
        report.contains(&format!("counterexample (shrunk, {dtype})")),
        "{report}"
    );
    let value = |flag: &str| {
        let at = args.iter().position(|a| a == flag)?;
        args.get(at + 1).map(String::as_str)
    };
    assert_eq!(
        (value("--dtype"), value("--check")),
        (Some(dtype), named),
        "{args:?}"
    );
    let written = value("--sample").unwrap_or_default();
    for part in sample {
        assert!(written.contains(part), "{code}: `{part}` not in {written}");
    }
    let (status, out, err) = run_repro(&args, &dir);
    assert_eq!(status, Some(1), "{code}: {out}{err}");
    assert!(err.contains(&format!("error[{code}]")), "{err}");
    assert!(
        out.contains(&format!("reproduced {code} ({dtype})")),
        "{out}"
    );

    seed_book(&dir, kernel, from, from);
    let (status, out, err) = run_repro(&args, &dir);
    assert_eq!(status, Some(0), "{code}: {out}{err}");
    assert!(out.contains("passes"), "{out}");
}

#[test]
fn an_undeclared_dtype_that_runs_is_reproduced() {
    reproduces(
        "max_pool2d",
        "max_pool2d (describe-only)",
        ("dtypes: [F32, F64, BF16, F16]", "dtypes: [F32, F64, BF16]"),
        "FKC0406",
        "F16",
        Some("undeclared"),
        &["x: [1, 1, 1, 1], kernel_size = 1, stride = 1"],
    );
}

#[test]
fn a_named_oracles_disagreement_is_reproduced() {
    let oracle =
        "oracle: { entry_point: \"fuel_reference_backend::ops::max_pool2d_bf16\" }\ndeterminism:";
    reproduces(
        "max_pool2d",
        "max_pool2d (describe-only)",
        ("determinism:", oracle),
        "FKC0409",
        "F32",
        None,
        &["x: [1, 1, 1, 1], kernel_size = 1, stride = 1"],
    );
}

#[test]
fn a_required_input_the_kernel_does_without_is_reproduced() {
    reproduces(
        "conv2d",
        "conv2d (registrable)",
        ("      optional: true\n", ""),
        "FKC0408",
        "F32",
        Some("required"),
        &["x: [", ", bias: absent, "],
    );
}

#[test]
fn repro_usage_errors_exit_2() {
    let dir = temp_dir("repro-usage");
    pool_book(&dir, SHAPE_RULE, SHAPE_RULE);
    let sample = "x: [1, 1, 1, 1], kernel_size = 1, stride = 1";
    for args in [
        vec![
            "repro",
            "book/pool.md:1",
            "--dtype",
            "F32",
            "--sample",
            sample,
        ],
        vec![
            "repro",
            "book/other.md:1",
            "--dtype",
            "F32",
            "--sample",
            sample,
        ],
        vec![
            "repro",
            "book/pool.md",
            "--dtype",
            "F32",
            "--sample",
            sample,
        ],
        vec![
            "repro",
            "book/pool.md:1",
            "--dtype",
            "F32",
            "--sample",
            "x: [1, 1",
        ],
        vec!["repro", "book/pool.md:1", "--dtype", "F32"],
        vec![
            "repro",
            "book/pool.md:0",
            "--dtype",
            "F32",
            "--sample",
            sample,
        ],
    ] {
        let out = fkc(&args, &dir);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("error: "),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let line = format!("book/pool.md:{}", fence_line(&dir));
    let twice_broken = "x: [1, 1, 1, 1], kernel_size = 0, stride = 0";
    for args in [
        vec!["repro", &line, "--dtype", "F32", "--sample", twice_broken],
        vec![
            "repro",
            &line,
            "--dtype",
            "F32",
            "--sample",
            "x: [1, 1], kernel_size = 1, stride = 1",
        ],
        vec![
            "repro",
            &line,
            "--dtype",
            "F32",
            "--sample",
            "x: [1, 1, 1, 1], stride = 1",
        ],
    ] {
        let out = fkc(&args, &dir);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    let out = fkc(
        &["repro", &line, "--dtype", "F64", "--sample", sample],
        &dir,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let help = fkc(&["repro", "--help"], &dir);
    assert_eq!(help.status.code(), Some(0));
    assert!(stdout(&help).contains("Usage: mdbook-fkc repro FILE:LINE"));
}

/// A contract of `rank: any` reproduces a sample at any rank its semantics are checked at (0 to
/// 8, the most the format takes), with a list of any length; a rank beyond them, or a parameter
/// of the wrong form, is a usage error.
#[test]
fn any_rank_and_lists_of_any_length_are_reproduced() {
    let common = std::fs::read_to_string(repo_root().join("book/contracts/common.md")).unwrap();
    let line = common
        .lines()
        .position(|l| l == "kernel: reduce_sum")
        .unwrap();
    let at = format!("book/contracts/common.md:{line}");
    let run = |sample: &str| {
        let out = fkc(
            &["repro", &at, "--dtype", "F32", "--sample", sample],
            &repo_root(),
        );
        (out.status.code(), stdout(&out), stderr(&out))
    };
    for sample in [
        "x: [2, 3], axes = (0), keepdim = false",
        "x: [2, 3, 1, 1], axes = (0, -1, 3), keepdim = true",
        "x: [], axes = (), keepdim = false",
        "x: [2, 3, 1, 1, 1, 1], axes = (0, 5), keepdim = false",
        "x: [2, 1, 1, 1, 1, 1, 1, 3], axes = (0, 7), keepdim = false",
    ] {
        let (code, out, err) = run(sample);
        assert_eq!(code, Some(0), "{sample}: {out}{err}");
        assert!(out.contains("passes"), "{sample}: {out}");
    }
    let (code, _, err) = run("x: [2, 3, 1, 1, 1, 1, 1, 1, 1], axes = (0), keepdim = false");
    assert_eq!(code, Some(2), "{err}");
    // (past rank 8, the most the format takes, the sample cannot even be written)
    assert!(err.contains("at most 8 values"), "{err}");
    let (code, _, err) = run("x: [2, 3], axes = 1, keepdim = false");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("the parameters are written like"), "{err}");
}
