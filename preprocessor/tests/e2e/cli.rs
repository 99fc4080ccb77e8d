//! The command line: `check` in every format, `build -d`/`--open`, `explain`, `--help` on every
//! subcommand, `--color`, and usage errors (exit code 2).

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
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["version"], 2);
    let first = &report["diagnostics"][0];
    assert_eq!(first["code"], "FKC0104");
    assert_eq!(first["file"], "book/seed.md");
    assert_eq!(first["line"], 4);
    assert_eq!(first["column"], 1);
    assert!(first["help"][0].as_str().unwrap().contains("indent"));
    assert!(report["summary"]["errors"].as_u64().unwrap() >= 1);
    // A failing contract is not verified, and the summary counts what the text lists.
    let failing = &report["contracts"][0];
    assert_eq!(failing["failing"], true, "{failing}");
    assert_eq!(failing["verified"], false, "{failing}");
    assert_eq!(
        failing["revision_hash"],
        serde_json::Value::Null,
        "{failing}"
    );
    let text = stdout(&fkc(&["check", "."], &fixture("flattened-seed")));
    let summary = &report["summary"];
    assert!(
        text.contains(&format!(
            "mdbook-fkc check: {} contract(s) verified, {} unverified, {} error(s)",
            summary["verified"], summary["unverified"], summary["errors"]
        )),
        "{text}\n{summary}"
    );
}

#[test]
fn check_json_lists_contracts_with_hashes_and_evidence() {
    let out = fkc(&["check", "--format=json"], &repo_root());
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let contracts = report["contracts"].as_array().unwrap();
    let conv2d = contracts
        .iter()
        .find(|c| c["kernel"] == "conv2d")
        .expect("conv2d is listed");
    assert_eq!(conv2d["file"], "book/seed/reference-conv-pool.md");
    assert!(conv2d["line"].as_u64().unwrap() > 1);
    assert!(
        conv2d["revision_hash"].as_str().unwrap().len() > 8,
        "{conv2d}"
    );
    assert_eq!(conv2d["verified"], true);
    assert_eq!(conv2d["failing"], false);
    assert!(
        !conv2d["evidence"].as_array().unwrap().is_empty(),
        "{conv2d}"
    );
    assert_eq!(report["summary"]["contracts"], contracts.len());
    assert_eq!(report["summary"]["errors"], 0);
}

#[test]
fn claims_the_gate_could_not_check_are_listed_apart_and_deniable() {
    // Every seed contract claims `alignment_bytes: 64`, `access_granularity_bits: 8` and no
    // device or disk memory, which no call across the provider boundary can observe, and
    // conv2d faster paths where its `fast_paths` conditions hold, which the gate only shows
    // reachable: listed apart, and an error under `--deny unchecked`.
    let out = fkc(&["check", "--format=json"], &repo_root());
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let conv2d = report["contracts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kernel"] == "conv2d")
        .unwrap();
    let unchecked = conv2d["unchecked"].as_array().unwrap();
    let claims: Vec<&str> = unchecked
        .iter()
        .map(|u| u["claim"].as_str().unwrap())
        .collect();
    assert_eq!(
        claims,
        [
            "`alignment_bytes: 64`",
            "`access_granularity_bits: 8`",
            "`cost.memory.device_bytes: 0`",
            "`cost.memory.disk_bytes: 0`",
            "`fast_paths`: a faster path where `groups == 1` (dense full-conv path; no per-group channel slicing)",
            "`fast_paths`: a faster path where `depthwise` (groups == Cin: one filter per channel)"
        ]
    );
    let rows = conv2d["evidence"].as_array().unwrap();
    assert!(
        rows.iter()
            .all(|r| !r["result"].as_str().unwrap().contains("not checked")),
        "a row of what ran says it did not run: {rows:?}"
    );
    let text = stdout(&fkc(&["check", "."], &repo_root()));
    assert!(
        text.contains("ok   conv2d (registrable)") && text.contains("(4 claims unchecked)"),
        "{text}"
    );
    let denied = fkc(&["check", ".", "--deny", "unchecked"], &repo_root());
    assert!(!denied.status.success());
    let errors = stderr(&denied);
    assert!(
        errors.contains("error[FKC0007]: `alignment_bytes: 64` was not checked"),
        "{errors}"
    );
    assert!(errors.contains("reference-conv-pool.md:"), "{errors}");
}

#[test]
fn check_sarif_and_github_annotations_locate_the_error() {
    let out = fkc(&["check", "--format", "sarif"], &fixture("flattened-seed"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let log: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(log["version"], "2.1.0");
    let result = &log["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "FKC0104");
    let location = &result["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "book/seed.md");
    assert_eq!(location["region"]["startLine"], 4);

    let out = fkc(&["check", "--format", "github"], &fixture("flattened-seed"));
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with("::error file=book/seed.md,line=4,col=1,")
                && l.contains("title=FKC0104")),
        "{text}"
    );
}

#[test]
fn color_follows_the_flag_and_no_color() {
    let colored = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = std::process::Command::new(fkc_bin());
        command
            .args(args)
            .current_dir(fixture("flattened-seed"))
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE");
        for (key, value) in env {
            command.env(key, value);
        }
        stderr(&run(&mut command)).contains("\u{1b}[")
    };
    assert!(!colored(&["check"], &[]), "not a terminal: plain");
    assert!(colored(&["check", "--color", "always"], &[]));
    assert!(colored(&["check", "--color=always"], &[("NO_COLOR", "1")]));
    assert!(colored(&["check"], &[("CLICOLOR_FORCE", "1")]));
    assert!(!colored(
        &["check"],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]
    ));
    assert!(!colored(
        &["--color", "never", "check"],
        &[("CLICOLOR_FORCE", "1")]
    ));
    // `build` prints the same diagnostics through the preprocessor, under the same choice.
    assert!(colored(
        &["build", "--color", "always", "-d", "/nonexistent/fkc"],
        &[]
    ));
    assert!(!colored(
        &["build", "-d", "/nonexistent/fkc"],
        &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]
    ));
}

#[test]
fn explain_prints_the_rule_a_failing_example_and_its_fix() {
    let out = fkc(&["explain", "FKC0104"], &repo_root());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("unknown field"), "{text}");
    assert!(text.contains("blurbb: \"a misspelt blurb\""), "{text}");
    assert!(text.contains("error[FKC0104]"), "{text}");
    assert!(
        text.contains("How to fix it:\n  - did you mean `blurb`?"),
        "{text}"
    );
    let out = fkc(&["explain", "FKC0206"], &repo_root());
    assert!(stdout(&out).contains("same_as"));
    let out = fkc(&["explain", "FKC9999"], &repo_root());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown code"));
}

#[test]
fn every_subcommand_has_help() {
    for command in ["supports", "build", "check", "explain"] {
        let out = fkc(&[command, "--help"], &repo_root());
        assert!(out.status.success(), "{command}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.contains(&format!("Usage: mdbook-fkc {command}")),
            "{command}: {text}"
        );
    }
    let out = fkc(&["--help"], &repo_root());
    assert!(stdout(&out).contains("--color WHEN"));
}

#[test]
fn unknown_commands_and_options_are_usage_errors() {
    for args in [
        &["frobnicate"][..],
        &["check", "--format", "xml"],
        &["supports"],
        &["build", "--format", "json"],
        &["explain"],
        &["--color", "sometimes", "check"],
    ] {
        let out = fkc(args, &repo_root());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("error: "), "{args:?}");
    }
    let out = fkc(&["supports", "html"], &repo_root());
    assert!(out.status.success());
}

#[test]
fn check_refuses_what_is_not_a_checked_book_and_says_why() {
    // A mistyped command or option names the one meant.
    let out = fkc(&["chek"], &repo_root());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean `check`?"),
        "{}",
        stderr(&out)
    );
    let out = fkc(&["check", "--colour", "never"], &repo_root());
    assert!(
        stderr(&out).contains("did you mean `--color`?"),
        "{}",
        stderr(&out)
    );
    // A directory that does not exist, or holds no book.
    let missing = temp_dir("missing").join("nowhere");
    let out = fkc(&["check", &missing.display().to_string()], &repo_root());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is not a directory"),
        "{}",
        stderr(&out)
    );
    // A book whose book.toml does not run the preprocessor: `mdbook build` would show raw YAML.
    let plain = fixture_book("no-contracts");
    let toml = plain.join("book.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    let without = &text[..text.find("[preprocessor.fkc]").unwrap()];
    std::fs::write(&toml, without).unwrap();
    for args in [&["check"][..], &["check", "--no-cache"]] {
        let out = fkc(args, &plain);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).contains("has no [preprocessor.fkc] table"),
            "{}",
            stderr(&out)
        );
    }
    // A book without contracts: a warning, an error under `--deny empty`.
    let empty = fixture_book("no-contracts");
    let out = fkc(&["check"], &empty);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning: the book in . has no ```fkc contracts"));
    let out = fkc(&["check", "--deny", "empty"], &empty);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("error: the book in . has no ```fkc contracts (`--deny empty`)"));
    // A book whose only contract cannot be read has a contract: its error, not "no contracts".
    let unreadable = fixture_book("no-contracts");
    let chapter = unreadable.join("book/plain.md");
    let text = std::fs::read_to_string(&chapter).unwrap();
    std::fs::write(
        &chapter,
        format!("{text}\n```fkc\nkernel: [unclosed\n```\n"),
    )
    .unwrap();
    let out = fkc(&["check", "--no-cache"], &unreadable);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("error[FKC01"), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("no ```fkc contracts"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn build_writes_to_the_dest_dir_and_opens_the_book() {
    let book = fixture_book("no-contracts");
    let dest = temp_dir("dest");
    let opened = dest.join("opened.txt");
    let opener = dest.join("opener.sh");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\necho \"$1\" > {}\n", opened.display()),
    )
    .unwrap();
    make_executable(&opener);
    let out = run(std::process::Command::new(fkc_bin())
        .args(["build", ".", "-d"])
        .arg(dest.join("site"))
        .arg("--open")
        .env("BROWSER", &opener)
        .current_dir(&book));
    assert!(out.status.success(), "{}", stderr(&out));
    let index = dest.join("site/index.html");
    assert!(index.is_file(), "no {}", index.display());
    assert!(!book.join("build").exists(), "build-dir was used");
    for _ in 0..50 {
        if opened.is_file() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let said = std::fs::read_to_string(&opened).unwrap();
    assert_eq!(said.trim(), index.display().to_string());
}

#[cfg(unix)]
fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[cfg(not(unix))]
fn make_executable(_: &std::path::Path) {}

#[test]
fn a_reader_that_goes_away_ends_the_output_without_a_panic() {
    // `mdbook-fkc explain CODE | head -1`: the pipe closes before the output is written.
    for args in [&["explain", "FKC0407"][..], &["--help"]] {
        let mut child = std::process::Command::new(fkc_bin())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
}

#[test]
fn an_admitted_sample_the_kernel_refuses_points_at_the_missing_constraint() {
    // The diagnostics index's FKC0401 example leaves `kernel_size` unconstrained.
    let out = fkc(&["explain", "FKC0401", "--color", "never"], &repo_root());
    let text = stdout(&out);
    let pointed = text
        .lines()
        .skip_while(|l| !l.starts_with("error[FKC0401]"))
        .nth(3)
        .unwrap_or_default();
    assert!(pointed.contains("kernel_size: { kind: usize }"), "{text}");
    assert!(
        text.contains("the kernel refuses this `kernel_size`, though every constraint here holds"),
        "{text}"
    );
}

#[test]
fn init_writes_a_book_whose_first_contract_verifies_under_real_mdbook() {
    let dir = temp_dir("init").join("contracts");
    let out = fkc(&["init", &dir.display().to_string()], &repo_root());
    assert!(out.status.success(), "{}", stderr(&out));
    let toml = std::fs::read_to_string(dir.join("book.toml")).unwrap();
    assert!(toml.contains("[preprocessor.fkc]"), "{toml}");
    let build = real_mdbook_build(&dir);
    assert!(build.status.success(), "{}", stderr(&build));
    let checked = fkc(&["check"], &dir);
    assert!(checked.status.success(), "{}", stderr(&checked));
    assert!(
        stdout(&checked)
            .contains("mdbook-fkc check: 1 contract(s) verified, 0 unverified, 0 error(s)"),
        "{}",
        stdout(&checked)
    );
    // Each lie the chapter suggests fails with the code it names.
    let chapter = dir.join("src/first-contract.md");
    let text = std::fs::read_to_string(&chapter).unwrap();
    for (from, to, code) in [
        ("\"stride > 0\"", "\"stride > 1\"", "FKC0402"),
        ("\"kernel_size > 0 &&", "\"kernel_size >= 0 &&", "FKC0401"),
        ("nan: ignore #", "nan: propagate #", "FKC0409"),
    ] {
        assert!(text.contains(from), "{from}");
        std::fs::write(&chapter, text.replacen(from, to, 1)).unwrap();
        let lied = fkc(&["check"], &dir);
        assert!(
            stderr(&lied).contains(&format!("error[{code}]")),
            "{to}: {}",
            stderr(&lied)
        );
    }
    // On a book of its own, init adds the table and nothing else.
    let plain = fixture_book("no-contracts");
    let toml = plain.join("book.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, &text[..text.find("[preprocessor.fkc]").unwrap()]).unwrap();
    let out = fkc(&["init"], &plain);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&toml)
            .unwrap()
            .contains("[preprocessor.fkc]")
    );
    assert!(!plain.join("src").exists());
    let again = fkc(&["init"], &plain);
    assert!(
        stdout(&again).contains("nothing to do"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn init_provider_scaffolds_a_crate_whose_contract_verifies_under_real_mdbook() {
    let parent = temp_dir("init-provider");
    let out = fkc(&["init", "--provider", "my-kernels"], &parent);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("wrote the provider crate `my-kernels`"));
    let dir = parent.join("my-kernels");
    for file in [
        "Cargo.toml",
        "src/lib.rs",
        "src/main.rs",
        "book.toml",
        "book/kernels.md",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    // The crate compiles once, into a target directory kept between test runs.
    let target = repo_root().join("target/init-provider");
    let build = run(std::process::Command::new(mdbook_bin())
        .arg("build")
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target));
    assert!(build.status.success(), "{}", stderr(&build));
    let page = std::fs::read_to_string(dir.join("build/kernels.html")).unwrap();
    assert!(page.contains("fkc-badge-ok\">verified"), "{page}");
    let check = |dir: &std::path::Path| {
        run(std::process::Command::new(fkc_bin())
            .args(["check", "--color", "never", "."])
            .current_dir(dir)
            .env("CARGO_TARGET_DIR", &target))
    };
    let checked = check(&dir);
    assert!(
        stdout(&checked)
            .contains("mdbook-fkc check: 1 contract(s) verified, 0 unverified, 0 error(s)"),
        "{}{}",
        stdout(&checked),
        stderr(&checked)
    );
    // Each lie the chapter suggests fails with the code it names.
    let chapter = dir.join("book/kernels.md");
    let text = std::fs::read_to_string(&chapter).unwrap();
    for (from, to, code) in [
        // (The prose names each lie first; these are the contract's own lines.)
        ("      dtypes: [F32, F64]", "      dtypes: [F32]", "FKC0406"),
        ("= x[i, j] * x[i, j]\n", "= x[i, j] + x[i, j]\n", "FKC0409"),
    ] {
        assert!(text.contains(from), "{from}");
        std::fs::write(&chapter, text.replacen(from, to, 1)).unwrap();
        let lied = check(&dir);
        assert!(
            stderr(&lied).contains(&format!("error[{code}]")),
            "{to}: {}{}",
            stdout(&lied),
            stderr(&lied)
        );
    }
    // A second scaffold in the same place overwrites nothing; a bad name is refused.
    let again = fkc(&["init", "--provider", "my-kernels"], &parent);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
    let bad = fkc(&["init", "--provider", "My Kernels"], &parent);
    assert!(
        stderr(&bad).contains("cannot name a provider crate"),
        "{}",
        stderr(&bad)
    );
}

/// The errors `preprocessor/schema/check-report.json` finds in `report` (Python's `jsonschema`).
fn schema_errors(report: &str) -> Vec<String> {
    let schema = repo_root().join("preprocessor/schema/check-report.json");
    let script = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1]))\n\
        jsonschema.Draft202012Validator.check_schema(schema)\n\
        for e in jsonschema.Draft202012Validator(schema).iter_errors(json.load(sys.stdin)):\n    print(e.json_path, e.message)\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&schema)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs the schema check (it needs the `jsonschema` package)");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(report.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().map(str::to_owned).collect()
}

#[test]
fn check_json_validates_against_its_schema_passing_failing_and_spec_first() {
    for dir in [
        repo_root(),
        fixture("flattened-seed"),
        fixture("spec-first"),
    ] {
        let out = fkc(&["check", "--format", "json"], &dir);
        let report = stdout(&out);
        assert_eq!(
            schema_errors(&report),
            Vec::<String>::new(),
            "{}",
            dir.display()
        );
    }
    // The schema holds the report to its word: a failing contract cannot be verified.
    let out = fkc(&["check", "--format", "json"], &fixture("flattened-seed"));
    let mut report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    report["contracts"][0]["verified"] = serde_json::Value::Bool(true);
    assert!(!schema_errors(&report.to_string()).is_empty());
}

#[test]
fn the_getting_started_chapter_quotes_what_init_and_check_really_print() {
    let chapter = std::fs::read_to_string(repo_root().join("book/getting-started.md")).unwrap();
    let dir = temp_dir("getting-started").join("my-kernels");
    assert!(
        fkc(&["init", &dir.display().to_string()], &repo_root())
            .status
            .success()
    );
    let first = dir.join("src/first-contract.md");
    let text = std::fs::read_to_string(&first).unwrap();
    std::fs::write(&first, text.replacen("\"stride > 0\"", "\"stride > 1\"", 1)).unwrap();
    let report = stderr(&fkc(&["check", "--color", "never"], &dir));
    for line in report
        .lines()
        .filter(|l| l.starts_with("error[") || l.contains("help: reproduce:"))
    {
        assert!(
            chapter.contains(line),
            "the chapter does not quote `{line}`"
        );
    }
}
