//! The `mdbook-fkc` command: the mdBook preprocessor protocol (no arguments, or `supports R`),
//! plus `build [DIR]`, `check [DIR] [--format json]` and `explain CODE`.

use mdbook_driver::MDBook;
use mdbook_fkc::diag::{Code, json};
use mdbook_fkc::preprocessor::{self, FkcPreprocessor};
use mdbook_preprocessor::Preprocessor;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
mdbook-fkc — literate, executable kernel contracts for mdBook

USAGE:
    mdbook-fkc                      run as an mdBook preprocessor (book JSON on stdin/stdout)
    mdbook-fkc supports RENDERER    tell mdBook whether RENDERER is supported (always yes)
    mdbook-fkc build [DIR]          build the book in DIR (default .) in-process, checking every contract
    mdbook-fkc check [DIR] [--format text|json] [--deny unverified]
                                    check every contract without rendering; non-zero exit on any error
                                    (--deny unverified: every ```fkc,unverified contract is an error)
    mdbook-fkc explain CODE         explain a diagnostic code (e.g. FKC0104)
    mdbook-fkc --version | --help";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        None => protocol(),
        Some("supports") => Ok(ExitCode::SUCCESS),
        Some("build") => build(&args[1..]),
        Some("check") => check(&args[1..]),
        Some("explain") => explain(&args[1..]),
        Some("--version" | "-V") => {
            println!("mdbook-fkc {}", env!("CARGO_PKG_VERSION"));
            Ok(ExitCode::SUCCESS)
        }
        Some("--help" | "-h" | "help") => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    result.unwrap_or_else(|message| {
        eprintln!("error: {message}");
        ExitCode::from(2)
    })
}

/// The preprocessor protocol: a `[context, book]` JSON pair in, the book JSON out.
fn protocol() -> Result<ExitCode, String> {
    let (ctx, book) = mdbook_preprocessor::parse_input(std::io::stdin())
        .map_err(|error| format!("cannot read the book from stdin: {error:#}"))?;
    if let Some(warning) = preprocessor::version_warning(&ctx.mdbook_version) {
        eprintln!("{warning}");
    }
    match FkcPreprocessor.run(&ctx, book) {
        Ok(book) => {
            serde_json::to_writer(std::io::stdout(), &book)
                .map_err(|error| format!("cannot write the book to stdout: {error}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("{error:#}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `[DIR] [--format F] [--deny unverified]`, as given.
struct Args {
    dir: PathBuf,
    format: String,
    deny_unverified: bool,
}

/// Splits `[DIR] [--format F] [--deny unverified]`.
fn dir_and_format(args: &[String]) -> Result<(PathBuf, String), String> {
    let parsed = parse_args(args)?;
    if parsed.deny_unverified {
        return Err("`--deny unverified` belongs to `check`".to_owned());
    }
    Ok((parsed.dir, parsed.format))
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut dir = None;
    let mut format = "text".to_owned();
    let mut deny_unverified = false;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--deny" => match iter.next().map(String::as_str) {
                Some("unverified") => deny_unverified = true,
                other => {
                    return Err(format!(
                        "`--deny` takes `unverified`, not `{}`",
                        other.unwrap_or("")
                    ));
                }
            },
            "--format" => {
                format = iter
                    .next()
                    .ok_or("`--format` needs `text` or `json`")?
                    .clone();
            }
            flag if flag.starts_with("--format=") => format = flag["--format=".len()..].to_owned(),
            flag if flag.starts_with('-') => {
                return Err(format!("unknown option `{flag}`\n\n{USAGE}"));
            }
            path if dir.is_none() => dir = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument `{extra}`\n\n{USAGE}")),
        }
    }
    if format != "text" && format != "json" {
        return Err(format!(
            "`--format` must be `text` or `json`, not `{format}`"
        ));
    }
    Ok(Args {
        dir: dir.unwrap_or_else(|| PathBuf::from(".")),
        format,
        deny_unverified,
    })
}

/// Builds the HTML book in-process: the `fkc` preprocessor from book.toml is replaced by this
/// binary's own (same position in the order), so it runs exactly once per renderer.
fn build(args: &[String]) -> Result<ExitCode, String> {
    let (dir, format) = dir_and_format(args)?;
    if format != "text" {
        return Err("`build` prints text diagnostics only; use `check --format json`".to_owned());
    }
    let mut book = MDBook::load(&dir)
        .map_err(|error| format!("cannot load the book in {}: {error:#}", dir.display()))?;
    book.with_preprocessor(FkcPreprocessor);
    match book.build() {
        Ok(()) => {
            let out = book.build_dir_for("html");
            eprintln!("mdbook-fkc: built {}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Checks every contract without rendering.
fn check(args: &[String]) -> Result<ExitCode, String> {
    let Args {
        dir,
        format,
        deny_unverified,
    } = parse_args(args)?;
    let mut book = MDBook::load(&dir)
        .map_err(|error| format!("cannot load the book in {}: {error:#}", dir.display()))?;
    let root = book.root.clone();
    let config = book.config.clone();
    let outcome = preprocessor::process_book_with(&root, &config, &mut book.book, deny_unverified)
        .map_err(|error| format!("{error:#}"))?;
    if format == "json" {
        println!("{}", json::render_all(&outcome.diagnostics));
    } else {
        let errors = preprocessor::print_errors(&outcome.diagnostics);
        for contract in &outcome.contracts {
            let kind = if contract.registrable {
                "registrable"
            } else {
                "describe-only"
            };
            let status = if contract.verified { "ok  " } else { "spec" };
            println!(
                "{status} {} ({kind}) {}:{} {}",
                contract.kernel, contract.file, contract.line, contract.revision_hash
            );
        }
        let unverified = outcome.contracts.iter().filter(|c| !c.verified).count();
        println!(
            "mdbook-fkc check: {} contract(s) verified, {unverified} unverified, {} error(s)",
            outcome.contracts.len() - unverified,
            errors
        );
    }
    Ok(if preprocessor::failed(&outcome) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Explains a diagnostic code.
fn explain(args: &[String]) -> Result<ExitCode, String> {
    let [code] = args else {
        return Err("usage: mdbook-fkc explain CODE (for example FKC0104)".to_owned());
    };
    let Some(code) = Code::parse(code) else {
        let known: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        return Err(format!(
            "unknown code `{code}`; the codes are: {}",
            known.join(", ")
        ));
    };
    println!(
        "{}: {}\n\n{}",
        code.as_str(),
        code.title(),
        code.explanation()
    );
    Ok(ExitCode::SUCCESS)
}
