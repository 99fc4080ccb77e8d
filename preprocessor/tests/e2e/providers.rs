//! Providers brought by kernel authors: the demo provider's book verified through the protocol
//! under the real `mdbook`; a lying provider failing with the built-in backend's codes; kernels
//! that panic, abort, overflow their stack, exit or hang reported as located failures within
//! the time limit; provider commands that cannot serve reported at the front matter.

use super::support::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod books;
mod traffic;

use books::{demo_book, mutated_demo_book, provider_bins, provider_book, python_book};
use traffic::{record_traffic, valid_traffic};

/// The (code, file:line) of every error of `mdbook-fkc check --format json` in `dir`.
fn errors(dir: &Path) -> Vec<(String, String)> {
    let output = fkc(&["check", "--format", "json"], dir);
    assert!(!output.status.success(), "{}", stdout(&output));
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(json["version"], 2, "{json}");
    json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            let at = format!("{}:{}", d["file"].as_str().unwrap(), d["line"]);
            (d["code"].as_str().unwrap().to_owned(), at)
        })
        .collect()
}

/// (code, file:line) pairs as `errors` returns them.
fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(code, at)| ((*code).to_owned(), (*at).to_owned()))
        .collect()
}

#[test]
fn the_demo_book_verifies_through_the_protocol_under_real_mdbook() {
    let dir = demo_book();
    let output = real_mdbook_build(&dir);
    assert!(output.status.success(), "{}", stderr(&output));
    let html = page(&dir, "kernels.html");
    for kernel in ["relu", "conv2d_im2col", "matmul"] {
        assert!(
            html.contains(&format!("<h3><code>{kernel}</code></h3>")),
            "{kernel}"
        );
    }
    assert!(html.contains("demo_provider::conv2d_im2col_f32"));
    assert!(
        html.contains(
            "within the stated tolerance <code>1e-6 + 1e-6 × |exact|</code> of the oracle <code>fuel_reference_backend::ops::conv2d_f64</code>"
        ),
        "conv2d_im2col's values were not checked against the reference backend"
    );
    // An op kind mdbook-fkc has no definition of, checked through its contract's semantics.
    assert!(
        html.contains("values within the error bound of the contract’s semantics")
            || html.contains("values within the error bound of the contract's semantics"),
        "matmul's values were not checked through its semantics"
    );
    assert!(html.contains("equals 2 × the multiply-adds performed"));
    assert!(
        html.contains("values exactly the standard semantics of <code>Relu</code>"),
        "relu's values were not checked"
    );
}

#[test]
fn a_named_oracle_holds_the_kernel_to_its_stated_tolerance() {
    let dir = mutated_demo_book("max_relative: 1e-6 #", "max_relative: 0 #");
    let dir_text = std::fs::read_to_string(dir.join("book/kernels.md")).unwrap();
    std::fs::write(
        dir.join("book/kernels.md"),
        dir_text.replacen("max_absolute: 1e-6", "max_absolute: 0", 1),
    )
    .unwrap();
    let output = fkc(&["check"], &dir);
    let text = stderr(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("error[FKC0409]"), "{text}");
    assert!(
        text.contains("`fuel_reference_backend::ops::conv2d_f64`'s value is"),
        "{text}"
    );
    assert!(
        text.contains("(max_absolute + max_relative × |exact|)"),
        "{text}"
    );
    let chapter = std::fs::read_to_string(dir.join("book/kernels.md")).unwrap();
    let line = chapter
        .lines()
        .position(|l| l.starts_with("  max_relative: 0 #"))
        .unwrap()
        + 1;
    assert!(text.contains(&format!("book/kernels.md:{line}:")), "{text}");
}

/// The first error of `check` on `dir`: its text (with the location of its first line).
fn check_fails(dir: &Path) -> String {
    let output = fkc(&["check"], dir);
    let text = stderr(&output);
    assert!(!output.status.success(), "{text}");
    text
}

#[test]
fn a_contracts_own_semantics_are_the_oracle_and_their_lies_are_located() {
    // A tolerance tighter than the kernel's four-way f32 sums: the value check fails there.
    let tight = mutated_demo_book(
        "max_absolute: ~ # (a first",
        "max_absolute: 1e-12 # (a first",
    );
    let chapter = std::fs::read_to_string(tight.join("book/kernels.md")).unwrap();
    std::fs::write(
        tight.join("book/kernels.md"),
        chapter.replacen("max_relative: ~ # none", "max_relative: 1e-12 # none", 1),
    )
    .unwrap();
    let text = check_fails(&tight);
    assert!(
        text.contains("error[FKC0409]: `demo_provider::matmul_f32` computes"),
        "{text}"
    );
    assert!(text.contains("is what these semantics give"), "{text}");
    // Lies in the pseudo-code itself, each failing where it is written.
    let lies = [
        // an index transposed: reads outside `b` (a guard missing, in effect)
        (
            "acc += a[i, k] * b[k, j]",
            "acc += a[i, k] * b[j, k]",
            "FKC0504",
            "b[j, k]",
        ),
        // a loop off by one: a term dropped, so the kernel's values are not the semantics'
        (
            "for k in 0..a.dim[1]:",
            "for k in 1..a.dim[1]:",
            "FKC0409",
            "for i, j in out:",
        ),
        // a name the contract does not have
        (
            "acc += a[i, k] * b[k, j]",
            "acc += a[i, k] * w[k, j]",
            "FKC0502",
            "w[k, j]",
        ),
    ];
    for (from, to, code, at) in lies {
        let dir = mutated_demo_book(from, to);
        let text = check_fails(&dir);
        assert!(text.contains(&format!("error[{code}]")), "{to}: {text}");
        let chapter = std::fs::read_to_string(dir.join("book/kernels.md")).unwrap();
        let line = chapter.lines().position(|l| l.contains(at)).unwrap() + 1;
        assert!(
            text.contains(&format!("\n{line} |")) && text.contains(at),
            "{to}: not located at line {line}: {text}"
        );
    }
}

#[test]
fn a_named_oracle_must_resolve() {
    let dir = mutated_demo_book(
        "ops::conv2d_f64\" # differential",
        "ops::conv2d_f46\" # differential",
    );
    let text = stderr(&fkc(&["check"], &dir));
    assert!(
        text.contains(
            "error[FKC0304]: oracle entry point `fuel_reference_backend::ops::conv2d_f46`"
        ),
        "{text}"
    );
    assert!(
        text.contains("did you mean `fuel_reference_backend::ops::conv2d_f64`?"),
        "{text}"
    );
    let dir = mutated_demo_book("groups: 1 }", "groups: 1, grups: 2 }");
    let text = stderr(&fkc(&["check"], &dir));
    assert!(
        text.contains("error[FKC0303]: `grups` is not a parameter of the oracle"),
        "{text}"
    );
}

#[test]
fn a_lying_provider_fails_with_the_built_in_codes() {
    let dir = provider_book("providers-lying");
    let found = errors(&dir);
    let expected = owned(&[
        ("FKC0406", "book/lies.md:26"),
        ("FKC0403", "book/lies.md:80"),
        ("FKC0409", "book/lies.md:145"),
    ]);
    assert_eq!(found, expected);
}

#[test]
fn crashing_and_hanging_kernels_are_located_failures_within_the_time_limit() {
    let dir = provider_book("providers-crashing");
    let started = Instant::now();
    let output = fkc(&["check"], &dir);
    let took = started.elapsed();
    let text = stderr(&output);
    assert!(!output.status.success(), "{text}");
    // five kernels; the hang costs one 1.5 s time limit, and restarts are quick
    assert!(took < Duration::from_secs(60), "took {took:?}");
    for (kernel, code, line, says) in [
        (
            "panics",
            "FKC0413",
            19,
            "the kernel panicked: index 7 out of bounds",
        ),
        ("aborts", "FKC0413", 64, "aborts: giving up"),
        ("overflows", "FKC0413", 109, "has overflowed its stack"),
        ("exits", "FKC0413", 154, "exit status: 3"),
        ("hangs", "FKC0414", 199, "within the time limit (1500 ms)"),
    ] {
        let report = text
            .split("error[")
            .find(|e| e.contains(&format!("crashing::{kernel}_f32")))
            .unwrap_or_else(|| panic!("no report for {kernel}:\n{text}"));
        assert!(report.starts_with(code), "{kernel}: {report}");
        assert!(
            report.contains(&format!("book/crashes.md:{line}:")),
            "{kernel}: {report}"
        );
        assert!(report.contains(says), "{kernel}: {report}");
        assert!(
            report.contains("sample (F32)") || report.contains("counterexample (shrunk, F32)"),
            "{kernel}: {report}"
        );
        assert!(
            report.contains("reproduce: mdbook-fkc repro book/crashes.md:"),
            "{kernel}: {report}"
        );
    }
}

#[test]
fn provider_commands_that_cannot_serve_are_located_at_the_front_matter() {
    let dir = provider_book("providers-broken");
    let found = errors(&dir);
    // Each failure at its front matter, and each chapter's contract not verified (FKC0320).
    let expected = owned(&[
        ("FKC0312", "book/missing.md:4"),
        ("FKC0320", "book/missing.md:19"),
        ("FKC0313", "book/future.md:4"),
        ("FKC0320", "book/future.md:19"),
        ("FKC0314", "book/wrong-registry.md:7"),
        ("FKC0320", "book/wrong-registry.md:19"),
    ]);
    assert_eq!(found, expected);
}

#[test]
fn spec_first_contracts_are_shown_counted_and_deniable() {
    let dir = fixture_book("spec-first");
    let output = fkc(&["check"], &dir);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("spec gelu (describe-only) book/gelu.md:14"));
    assert!(stdout(&output).contains("0 contract(s) verified, 1 unverified, 0 error(s)"));

    let denied = fkc(&["check", "--deny", "unverified"], &dir);
    assert!(!denied.status.success());
    assert!(
        stderr(&denied).contains("error[FKC0005]"),
        "{}",
        stderr(&denied)
    );
    assert!(
        stderr(&denied).contains("book/gelu.md:14:4"),
        "{}",
        stderr(&denied)
    );

    let built = fkc(&["build"], &dir);
    assert!(built.status.success(), "{}", stderr(&built));
    assert!(page(&dir, "gelu.html").contains("not verified (spec-first)"));
    let inventory = page(&dir, "inventory.html");
    assert!(inventory.contains("not verified</span>"), "{inventory}");
    assert!(inventory.contains("1 contracts: 0 verified when this page was built, 1 not verified"));
}

#[test]
fn this_repository_s_book_runs_its_provider_in_process() {
    let mut providers = mdbook_fkc::providers::Providers::default();
    let found = providers
        .find(
            Some("fuel-reference-backend"),
            fuel_reference_backend::fkc::REGISTRY_PATH,
        )
        .unwrap()
        .unwrap();
    assert!(found.is_in_process());
    let toml = std::fs::read_to_string(repo_root().join("book.toml")).unwrap();
    assert!(
        !toml.contains("[preprocessor.fkc.provider"),
        "the book spawns a provider"
    );
}

#[test]
fn a_python_provider_written_from_the_format_reference_verifies_under_real_mdbook() {
    let dir = python_book();
    let output = real_mdbook_build(&dir);
    assert!(output.status.success(), "{}", stderr(&output));
    let html = page(&dir, "kernels.html");
    for kernel in ["relu", "max_pool2d"] {
        assert!(
            html.contains(&format!("<h3><code>{kernel}</code></h3>")),
            "{kernel}"
        );
    }
    // The 30 drawn samples, and the grown ones that reach its paths.
    let ran: usize = html
        .split(" samples through <code>py_kernels::max_pool2d_f32</code>")
        .next()
        .and_then(|before| before.rsplit(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        ran > 30,
        "max_pool2d's admitted samples did not run ({ran})"
    );
    assert!(html.contains("values exactly the standard semantics of <code>"));
    // Op kinds mdbook-fkc has no definition of: checked through the contracts' semantics.
    for kernel in ["add", "cumsum"] {
        assert!(
            html.contains(&format!("<h3><code>{kernel}</code></h3>")),
            "{kernel}"
        );
        assert!(
            html.contains(&format!(
                "through <code>py_kernels::{kernel}_f32</code>: accepted, shapes and dtypes as the rules say, values bit for bit the contract"
            )),
            "{kernel}'s values were not checked through its semantics"
        );
    }
    // And it fails when its kernel lies: the gate really runs the Python code.
    let provider = dir.join("provider.py");
    let source = std::fs::read_to_string(repo_root().join("examples/python-provider/provider.py"))
        .unwrap()
        .replace("if x.value(i) < 0 else p", "if x.value(i) < 0.25 else p")
        // cumsum with a wider accumulator: not the written order it claims
        .replace(
            "acc = through(dtype, acc + x.value(r * cols + c))",
            "acc = acc + x.value(r * cols + c)",
        );
    std::fs::write(&provider, source).unwrap();
    std::fs::copy(
        repo_root().join("examples/python-provider/fkc_provider.py"),
        dir.join("fkc_provider.py"),
    )
    .unwrap();
    let toml = dir.join("book.toml");
    let text = std::fs::read_to_string(&toml).unwrap().replace(
        &repo_root()
            .join("examples/python-provider/provider.py")
            .display()
            .to_string(),
        &provider.display().to_string(),
    );
    std::fs::write(&toml, text).unwrap();
    let lied = fkc(&["check"], &dir);
    assert!(!lied.status.success());
    assert!(stderr(&lied).contains("error[FKC0409]: `py_kernels::relu_f32` computes"));
    assert!(
        stderr(&lied).contains("error[FKC0409]: `py_kernels::cumsum_f32` computes"),
        "{}",
        stderr(&lied)
    );
}

#[test]
fn two_providers_may_each_document_a_kernel_of_the_same_name() {
    // The demo provider's `relu` and the Python provider's `relu`, in one book.
    let dir = demo_book();
    let python = python_book();
    std::fs::copy(
        python.join("book/kernels.md"),
        dir.join("book/python-kernels.md"),
    )
    .unwrap();
    let summary = dir.join("book/SUMMARY.md");
    let text = std::fs::read_to_string(&summary).unwrap();
    std::fs::write(&summary, format!("{text}- [Python](python-kernels.md)\n")).unwrap();
    let python_toml = std::fs::read_to_string(python.join("book.toml")).unwrap();
    let table = &python_toml[python_toml
        .find("[preprocessor.fkc.provider.py-kernels]")
        .unwrap()..];
    let toml = dir.join("book.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("{text}\n{table}")).unwrap();
    let output = fkc(&["check"], &dir);
    let listed = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        listed.matches("ok   relu (describe-only)").count(),
        2,
        "{listed}"
    );
    assert!(listed.contains("7 contract(s) verified"), "{listed}");
    // Within one provider, a name is still taken once.
    let chapter = dir.join("book/python-kernels.md");
    let text = std::fs::read_to_string(&chapter).unwrap();
    std::fs::write(&chapter, text.replace("kernel: max_pool2d", "kernel: relu")).unwrap();
    let twice = stderr(&fkc(&["check"], &dir));
    assert!(
        twice.contains(
            "error[FKC0307]: kernel `relu` is already defined for the provider `py-kernels`"
        ),
        "{twice}"
    );
}

#[test]
fn both_providers_traffic_matches_the_protocol_s_json_schemas() {
    let rust = demo_book();
    let command = provider_bins().join("fkc-provider").display().to_string();
    let traffic = record_traffic(&rust, &command);
    let output = fkc(&["check", "--no-cache"], &rust);
    assert!(output.status.success(), "{}", stderr(&output));
    let (valid, said) = valid_traffic(&traffic);
    assert!(valid, "the Rust provider's traffic: {said}");

    let python = python_book();
    let command = format!(
        "python3 {}",
        repo_root()
            .join("examples/python-provider/provider.py")
            .display()
    );
    let traffic = record_traffic(&python, &command);
    let output = fkc(&["check", "--no-cache"], &python);
    assert!(output.status.success(), "{}", stderr(&output));
    let (valid, said) = valid_traffic(&traffic);
    assert!(valid, "the Python provider's traffic: {said}");

    // The schemas do reject a wrong message: a `describe` answer whose variants are names.
    let wrong = crate::faults::faulty_book("describe", &[]);
    let text = std::fs::read_to_string(wrong.join("book.toml")).unwrap();
    let start = text.find("python3 faulty.py").unwrap();
    let command = &text[start..start + text[start..].find('"').unwrap()];
    let traffic = record_traffic(&wrong, command);
    assert!(!fkc(&["check", "--no-cache"], &wrong).status.success());
    // The host ends the session of a provider whose description it refuses by closing its
    // stdin, so the `tee` recording its answers has written them all once the check returns.
    let (valid, said) = valid_traffic(&traffic);
    assert!(!valid, "a wrong description passed: {said}");
    assert!(said.contains("responses.jsonl:2: answer"), "{said}");
}

#[test]
fn a_provider_that_served_well_is_ended_by_its_closed_stdin_not_killed() {
    // What the provider's shell runs after the provider exits shows how the session ended: a
    // killed group runs nothing more. (A `tee` recording the traffic lost its last request so.)
    let dir = demo_book();
    let command = provider_bins().join("fkc-provider").display().to_string();
    let toml = dir.join("book.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    let then = format!("\"{command}; echo ended >> ended.txt\"");
    let text = text.replace(&format!("\"{command}\""), &then);
    assert!(text.contains(&then), "{text}");
    std::fs::write(&toml, text).unwrap();
    let output = fkc(&["check", "--no-cache"], &dir);
    assert!(output.status.success(), "{}", stderr(&output));
    let ended = std::fs::read_to_string(dir.join("ended.txt")).unwrap_or_default();
    assert_eq!(
        ended, "ended\n",
        "the provider's session did not end by its stdin"
    );
}

/// The ```` ```LANG ```` blocks of a Markdown text, in order.
fn code_blocks<'t>(text: &'t str, lang: &str) -> Vec<&'t str> {
    let open = format!("```{lang}\n");
    text.match_indices(&open)
        .map(|(at, _)| {
            let body = &text[at + open.len()..];
            &body[..body.find("\n```").unwrap() + 1]
        })
        .collect()
}

#[test]
fn an_outside_crate_written_from_the_readme_builds_and_verifies() {
    // fkc-provider copied out of this workspace, and a crate of its own made of the README's
    // code alone (its registry dependency pointed at the copy).
    let dir = temp_dir("outside-crate");
    copy_dir(&repo_root().join("provider"), &dir.join("fkc-provider"));
    let readme = std::fs::read_to_string(repo_root().join("provider/README.md")).unwrap();
    let rust = code_blocks(&readme, "rust");
    let toml = code_blocks(&readme, "toml");
    let backend = dir.join("my-backend");
    std::fs::create_dir_all(backend.join("src/bin")).unwrap();
    std::fs::write(backend.join("src/lib.rs"), rust[0]).unwrap();
    std::fs::write(backend.join("src/bin/fkc-provider.rs"), rust[1]).unwrap();
    // The README names the version this workspace's fkc-provider has.
    let version = std::fs::read_to_string(repo_root().join("provider/Cargo.toml")).unwrap();
    let minor = version
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.rsplit_once('.'))
        .map(|(minor, _)| minor.to_owned())
        .unwrap();
    let line = format!("fkc-provider = \"{minor}\"");
    assert!(
        toml[0].contains(&line),
        "provider/README.md does not say {line}"
    );
    let dependencies = toml[0].replace(&line, "fkc-provider = { path = \"../fkc-provider\" }");
    std::fs::write(
        backend.join("Cargo.toml"),
        format!(
            "[package]\nname = \"my-backend\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n{dependencies}\n[workspace]\n"
        ),
    )
    .unwrap();
    // The workspace's lock file: the same dependency versions, already downloaded.
    std::fs::copy(repo_root().join("Cargo.lock"), backend.join("Cargo.lock")).unwrap();
    let target = repo_root().join("target/fkc-outside");
    let built = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--offline",
            "--release",
            "--bin",
            "fkc-provider",
        ])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&backend)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", stderr(&built));
    // A book naming it, as the README says, with the demo's relu contract for its kernel.
    let binary = target.join("release/fkc-provider");
    let table = toml[1].replace(
        "cargo run -q --release -p my-backend --bin fkc-provider",
        &binary.display().to_string(),
    );
    std::fs::write(
        dir.join("book.toml"),
        format!("[book]\ntitle = \"outside\"\nsrc = \"book\"\n\n[preprocessor.fkc]\n\n{table}"),
    )
    .unwrap();
    let demo = std::fs::read_to_string(repo_root().join("examples/demo-provider/book/kernels.md"))
        .unwrap();
    let relu = &demo[demo.find("```fkc\nkernel: relu").unwrap()..];
    let relu = &relu[..relu.find("\n```\n").unwrap() + 5];
    let chapter = format!(
        "---\nfkc_version: 1\nprovider:\n  name: my-backend\n  backend: Cpu\n  kernel_source: \"my-backend\"\n  link_registry: my_backend::REGISTRY\n  revision_base: \"my:0.1.0\"\n---\n# relu\n\n{}",
        relu.replace("demo-provider", "my-backend")
            .replace(
                "\"demo_provider::relu_f32\" # and demo_provider::relu_f64",
                "\"my_backend::relu_f32\""
            )
            .replace("dtypes: [F32, F64]", "dtypes: [F32]")
    );
    std::fs::create_dir_all(dir.join("book")).unwrap();
    std::fs::write(
        dir.join("book/SUMMARY.md"),
        "# Summary\n\n- [relu](relu.md)\n",
    )
    .unwrap();
    std::fs::write(dir.join("book/relu.md"), chapter).unwrap();
    let output = fkc(&["check", "--no-cache"], &dir);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("ok   relu (describe-only) book/relu.md:"),
        "{}",
        stdout(&output)
    );
}
