//! Unit tests of the command-line parser.

#![allow(clippy::unwrap_used, clippy::panic)]
use super::*;

fn parse_line(line: &str) -> Result<Parsed, UsageError> {
    let args: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    parse(&args)
}

#[test]
fn subcommands_and_flags() {
    assert_eq!(parse_line("").unwrap().command, Command::Protocol);
    assert_eq!(
        parse_line("check book --format=json --deny unverified --color never --no-cache").unwrap(),
        Parsed {
            command: Command::Check {
                dir: PathBuf::from("book"),
                format: Format::Json,
                deny: mdbook_fkc::Deny {
                    unverified: true,
                    unchecked: false,
                    empty: false,
                },
                no_cache: true
            },
            color: ColorChoice::Never
        }
    );
    assert_eq!(
        parse_line("build -d out --open").unwrap().command,
        Command::Build {
            dir: PathBuf::from("."),
            dest: Some(PathBuf::from("out")),
            open: true,
            no_cache: false
        }
    );
    assert_eq!(
        parse_line("build . --dest-dir=x --no-cache")
            .unwrap()
            .command,
        Command::Build {
            dir: PathBuf::from("."),
            dest: Some(PathBuf::from("x")),
            open: false,
            no_cache: true
        }
    );
}

#[test]
fn repro_reads_a_reproduce_line() {
    let args: Vec<String> = [
        "repro",
        "book/ch.md:12",
        "--dtype",
        "F16",
        "--seed",
        "0x1f",
        "--check",
        "special",
        "--sample",
        "x: [1, 2], k = 3",
        "--book",
        "b",
    ]
    .map(str::to_owned)
    .to_vec();
    let Command::Repro(repro) = parse(&args).unwrap().command else {
        panic!("not repro");
    };
    assert_eq!(
        (repro.file.as_str(), repro.line, repro.dtype, repro.seed),
        ("book/ch.md", 12, DType::F16, 31)
    );
    assert_eq!(
        (repro.check, repro.book),
        (Check::Special, PathBuf::from("b"))
    );
    assert_eq!(repro.sample.describe(), "x: [1, 2], k = 3");
}

#[test]
fn repro_takes_every_check_by_the_name_reports_print() {
    for (name, check) in [
        ("order", Check::Order),
        ("special", Check::Special),
        ("conditioning", Check::Conditioning),
        ("signed-zeros", Check::SignedZeros),
        ("underflow", Check::Underflow),
        ("layout", Check::Layout),
        ("undeclared", Check::Undeclared),
        ("required", Check::Required),
    ] {
        let args: Vec<String> = [
            "repro",
            "b.md:3",
            "--dtype",
            "F16",
            "--check",
            name,
            "--sample",
            "x: absent",
        ]
        .map(str::to_owned)
        .to_vec();
        let Command::Repro(repro) = parse(&args).unwrap().command else {
            panic!("not repro");
        };
        assert_eq!((repro.check, check.name()), (check, Some(name)));
    }
    let args: Vec<String> = ["repro", "b.md:3", "--dtype", "F32", "--check", "domain"]
        .map(str::to_owned)
        .to_vec();
    let error = parse(&args).unwrap_err().to_string();
    assert!(
        error.contains("undeclared or required, not `domain`"),
        "{error}"
    );
}

#[test]
fn every_subcommand_has_help() {
    for name in ["supports", "build", "check", "explain", "repro"] {
        let Command::Help(text) = parse_line(&format!("{name} --help")).unwrap().command else {
            panic!("{name} --help is not help");
        };
        assert!(text.contains(&format!("mdbook-fkc {name}")), "{text}");
        assert_eq!(
            parse_line(&format!("help {name}")).unwrap().command,
            Command::Help(text)
        );
    }
}

#[test]
fn mistyped_commands_and_options_get_a_did_you_mean() {
    let error = |line: &str| parse_line(line).unwrap_err().to_string();
    assert!(error("chek").starts_with("unknown command `chek`; did you mean `check`?"));
    assert!(
        error("check --colour never")
            .contains("unknown option `--colour`; did you mean `--color`?")
    );
    assert!(error("check --no-cach").contains("did you mean `--no-cache`?"));
    assert!(error("build --opn").contains("did you mean `--open`?"));
    assert!(error("help chekc").contains("did you mean `check`?"));
    assert!(!error("frobnicate").contains("did you mean"));
    assert_eq!(
        parse_line("help --help").unwrap().command,
        Command::Help(MAIN_HELP)
    );
    assert_eq!(
        parse_line("init book").unwrap().command,
        Command::Init {
            dir: PathBuf::from("book"),
            provider: None,
        }
    );
    let scaffold = |line: &str| parse_line(line).unwrap().command;
    assert_eq!(
        scaffold("init --provider my-kernels"),
        Command::Init {
            dir: PathBuf::from("my-kernels"),
            provider: Some("my-kernels".to_owned()),
        }
    );
    assert_eq!(
        scaffold("init there --provider=k"),
        Command::Init {
            dir: PathBuf::from("there"),
            provider: Some("k".to_owned()),
        }
    );
    assert!(error("init --provider").contains("`--provider` needs a NAME"));
    assert!(error("init --provdier x").contains("did you mean `--provider`?"));
    assert!(error("int").contains("did you mean `init`?"));
    assert!(
        error("check --format jsn").contains(
            "`--format` takes text, json, sarif or github, not `jsn`; did you mean `json`?"
        )
    );
    assert!(error("check --format").contains("`--format` needs a FORMAT: text, json"));
    for (name, format, what) in FORMATS {
        let parsed = parse_line(&format!("check --format {name}"))
            .unwrap()
            .command;
        assert!(matches!(parsed, Command::Check { format: f, .. } if f == format));
        assert!(CHECK_HELP.contains(&format!("{name}: {what}")));
    }
    let deny = parse_line("check --deny empty").unwrap().command;
    assert!(matches!(deny, Command::Check { deny, .. } if deny.empty));
}

#[test]
fn usage_errors() {
    for line in [
        "supports",
        "supports a b",
        "explain",
        "check --format xml",
        "check --deny everything",
        "check a b",
        "build --format json",
        "build -d",
        "frobnicate",
        "--color sometimes check",
        "repro",
        "repro ch.md --dtype F32 --sample k=1",
        "repro ch.md:0 --dtype F32 --sample x:",
        "repro ch.md:3 --dtype F8",
        "repro ch.md:3 --dtype F32",
        "repro ch.md:3 --dtype F32 --sample [1]",
        "repro ch.md:3 --dtype F32 --seed zz",
        "repro ch.md:3 --dtype F32 --check values",
    ] {
        assert!(parse_line(line).is_err(), "{line} parsed");
    }
}
