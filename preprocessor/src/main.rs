//! The `mdbook-fkc` command: the mdBook preprocessor protocol (no arguments, or `supports R`),
//! plus `build`, `check` and `explain`. The argument parser is hand-written (see `args`): five
//! subcommands with a handful of flags each, usage errors with exit code 2, and `--help` on
//! every subcommand, without a dependency. The command line's modules live in `src/cli/`, apart
//! from the library.

/// `print!` to stdout that stops quietly when the reader has gone (`mdbook-fkc explain X | head`)
/// instead of panicking on the closed pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

/// `println!` to stdout, as [`out!`] (quiet when the reader has gone).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

#[path = "cli/args.rs"]
mod args;
#[path = "cli/error.rs"]
mod error;
#[path = "cli/explain.rs"]
mod explain;
#[path = "cli/init.rs"]
mod init;

/// mimalloc instead of the system allocator: a cold build of this repository's book allocates
/// and frees many small buffers (samples, operands, HTML), and spent about a sixth of its CPU
/// time in glibc's malloc and the page faults of its trimmed heap. Built `no_thp`: where the
/// kernel backs every anonymous mapping with transparent huge pages, each thread's first
/// allocations zeroed whole 2 MiB pages (up to a tenth of a cold check's time, varying from run
/// to run).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use args::{Command, Format};
use error::CliError;
use mdbook_driver::MDBook;
use mdbook_fkc::diag::text;
use mdbook_fkc::diag::{Diagnostic, json, sarif};
use mdbook_fkc::preprocessor::repro::{Reproduced, Reproduction};
use mdbook_fkc::preprocessor::{self, FkcPreprocessor};
use mdbook_preprocessor::Preprocessor;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args::parse(&argv) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    text::set_color_choice(parsed.color);
    let result = match parsed.command {
        Command::Help(text) => {
            outln!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Version => {
            outln!("mdbook-fkc {}", env!("CARGO_PKG_VERSION"));
            Ok(ExitCode::SUCCESS)
        }
        Command::Protocol => protocol(),
        Command::Supports(_) => Ok(ExitCode::SUCCESS),
        Command::Build {
            dir,
            dest,
            open,
            no_cache,
        } => build(&dir, dest.as_deref(), open, no_cache),
        Command::Check {
            dir,
            format,
            deny,
            no_cache,
        } => check(&dir, format, deny, no_cache),
        Command::Explain(code) => explain::run(&code, parsed.color),
        Command::Init { dir, provider } => init::init(&dir, provider.as_deref()),
        Command::Judge { dir } => judge(&dir),
        Command::Repro(request) => repro(&request),
    };
    result.unwrap_or_else(|message| {
        eprintln!("error: {message}");
        ExitCode::from(2)
    })
}

/// The preprocessor protocol: a `[context, book]` JSON pair in, the book JSON out.
fn protocol() -> Result<ExitCode, CliError> {
    let (ctx, book) =
        mdbook_preprocessor::parse_input(std::io::stdin()).map_err(|error| CliError::Book {
            doing: "read the book from stdin".to_owned(),
            error: format!("{error:#}"),
        })?;
    if let Some(warning) = preprocessor::version_warning(&ctx.mdbook_version) {
        eprintln!("{warning}");
    }
    match FkcPreprocessor.run(&ctx, book) {
        Ok(book) => {
            serde_json::to_writer(std::io::stdout(), &book).map_err(|error| CliError::Book {
                doing: "write the book to stdout".to_owned(),
                error: error.to_string(),
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("{error:#}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Builds the HTML book in-process: the `fkc` preprocessor from book.toml is replaced by this
/// binary's own (same position in the order), so it runs exactly once per renderer. `dest`
/// replaces book.toml's `build.build-dir` (relative to the current directory, as `mdbook -d`).
fn build(
    dir: &Path,
    dest: Option<&Path>,
    open: bool,
    no_cache: bool,
) -> Result<ExitCode, CliError> {
    let mut book = load(dir, no_cache)?;
    if let Some(dest) = dest {
        let cwd = std::env::current_dir().map_err(|error| CliError::Io {
            doing: "read",
            what: "the current directory".to_owned(),
            error,
        })?;
        book.config.build.build_dir = cwd.join(dest);
    }
    book.with_preprocessor(FkcPreprocessor);
    if let Err(error) = book.build() {
        eprintln!("error: {error:#}");
        return Ok(ExitCode::FAILURE);
    }
    let out = book.build_dir_for("html");
    eprintln!("mdbook-fkc: built {}", out.display());
    if open {
        open_in_browser(&out.join("index.html"))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Loads the book in `dir` (a directory holding book.toml or src/SUMMARY.md); `no_cache` turns
/// the verification cache off as `cache = false` under `[preprocessor.fkc]` would.
fn load(dir: &Path, no_cache: bool) -> Result<MDBook, CliError> {
    if !dir.is_dir() {
        return Err(CliError::NotADirectory(dir.to_path_buf()));
    }
    if !dir.join("book.toml").is_file() && !dir.join("src/SUMMARY.md").is_file() {
        return Err(CliError::NoBook(dir.to_path_buf()));
    }
    let mut book = MDBook::load(dir).map_err(|error| CliError::Book {
        doing: format!("load the book in {}", dir.display()),
        error: format!("{error:#}"),
    })?;
    if no_cache {
        without_cache(&mut book)?;
    }
    Ok(book)
}

/// Turns the verification cache off, as `cache = false` under `[preprocessor.fkc]` would.
fn without_cache(book: &mut MDBook) -> Result<(), CliError> {
    book.config
        .set("preprocessor.fkc.cache", false)
        .map_err(|error| CliError::Book {
            doing: "turn the cache off".to_owned(),
            error: format!("{error:#}"),
        })
}

/// Opens a page with `$BROWSER` when set, otherwise the platform's opener.
fn open_in_browser(page: &Path) -> Result<(), CliError> {
    let opener: Vec<String> = match std::env::var("BROWSER") {
        Ok(browser) if !browser.trim().is_empty() => {
            browser.split_whitespace().map(str::to_owned).collect()
        }
        _ if cfg!(target_os = "macos") => vec!["open".to_owned()],
        _ if cfg!(windows) => vec!["cmd".to_owned(), "/C".to_owned(), "start".to_owned()],
        _ => vec!["xdg-open".to_owned()],
    };
    let Some((program, leading)) = opener.split_first() else {
        return Err(CliError::NoOpener);
    };
    std::process::Command::new(program)
        .args(leading)
        .arg(page)
        .spawn()
        .map(drop)
        .map_err(|error| CliError::Io {
            doing: "open",
            what: format!("{} with `{program}`", page.display()),
            error,
        })
}

/// `mdbook-fkc repro`: 1 when the sample fails (its report on stderr), 0 when it passes.
fn repro(request: &args::Repro) -> Result<ExitCode, CliError> {
    let book = load(&request.book, true)?;
    let reproduction = Reproduction {
        dtype: request.dtype,
        seed: request.seed,
        check: request.check,
        sample: request.sample.clone(),
    };
    let located = (request.file.as_str(), request.line);
    let outcome =
        preprocessor::reproduce(&book.root, &book.config, &book.book, located, &reproduction)
            .map_err(CliError::Repro)?;
    let at = format!("{}:{}", request.file, request.line);
    match outcome {
        Reproduced::Passed(verdict) => {
            outln!(
                "mdbook-fkc repro: {at}: the sample ({}) passes: {verdict}, and the kernel does what the contract says",
                request.dtype.name()
            );
            Ok(ExitCode::SUCCESS)
        }
        Reproduced::Failed(diagnostics) => {
            eprint!("{}", text::render_all(&diagnostics, text::stderr_style()));
            let codes: Vec<String> = diagnostics.iter().map(|d| d.code.to_string()).collect();
            outln!(
                "mdbook-fkc repro: {at}: reproduced {} ({})",
                codes.join(", "),
                request.dtype.name()
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Times every contract's kernels and writes the calibration file beside the book.
fn judge(dir: &Path) -> Result<ExitCode, CliError> {
    let book = load(dir, false)?;
    match mdbook_fkc::judge_book(&book.root, &book.config, &book.book) {
        Ok((path, summary)) => {
            out!("{summary}");
            eprintln!("mdbook-fkc judge: wrote {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(message) => {
            eprintln!("error: {message}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Checks every contract without rendering.
fn check(
    dir: &Path,
    format: Format,
    deny: mdbook_fkc::Deny,
    no_cache: bool,
) -> Result<ExitCode, CliError> {
    let mut book = load(dir, false)?;
    let table: Option<serde_json::Value> = book.config.get("preprocessor.fkc").unwrap_or(None);
    if table.is_none() {
        return Err(CliError::NoTable(dir.to_path_buf()));
    }
    if no_cache {
        without_cache(&mut book)?;
    }
    let root = book.root.clone();
    let config = book.config.clone();
    let outcome = preprocessor::process_book_with(&root, &config, &mut book.book, deny)
        .map_err(|error| CliError::Unchecked(format!("{error:#}")))?;
    // A book whose every contract failed to read has contracts: its errors say so below.
    let unread = outcome.diagnostics.iter().any(|d| d.is_error());
    if outcome.contracts.is_empty() && !unread {
        let (level, why) = if deny.empty {
            ("error", " (`--deny empty`)")
        } else {
            ("warning", "")
        };
        eprintln!(
            "{level}: the book in {} has no ```fkc contracts{why}: nothing was checked",
            dir.display()
        );
        if deny.empty {
            return Ok(ExitCode::FAILURE);
        }
    }
    match format {
        Format::Json => {
            let evidence: Vec<Vec<json::Evidence<'_>>> = outcome
                .contracts
                .iter()
                .map(|c| {
                    c.evidence
                        .iter()
                        .map(|(check, result)| json::Evidence { check, result })
                        .collect()
                })
                .collect();
            let records: Vec<json::ContractRecord<'_>> = outcome
                .contracts
                .iter()
                .zip(evidence)
                .map(|(c, evidence)| json::ContractRecord {
                    kernel: &c.kernel,
                    file: &c.file,
                    line: c.line,
                    registrable: c.registrable,
                    revision_hash: Some(c.revision_hash.as_str()).filter(|h| !h.is_empty()),
                    verified: c.verified && !c.failing,
                    spec_first: !c.verified,
                    failing: c.failing,
                    dtypes: &c.dtypes,
                    evidence,
                    unchecked: c
                        .unchecked
                        .iter()
                        .map(|(claim, why)| json::Unchecked { claim, why })
                        .collect(),
                })
                .collect();
            outln!("{}", json::render_report(&records, &outcome.diagnostics));
        }
        Format::Sarif => outln!("{}", sarif::render(&outcome.diagnostics)),
        Format::Github => out!("{}", sarif::github(&outcome.diagnostics)),
        Format::Text => {
            let errors: Vec<Diagnostic> = outcome
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .cloned()
                .collect();
            if !errors.is_empty() {
                eprint!("{}", text::render_all(&errors, text::stderr_style()));
            }
            for contract in &outcome.contracts {
                let kind = if contract.registrable {
                    "registrable"
                } else {
                    "describe-only"
                };
                let status = if !contract.verified {
                    "spec"
                } else if contract.failing {
                    "FAIL"
                } else {
                    "ok  "
                };
                let unchecked = match contract.unchecked.len() {
                    0 => String::new(),
                    1 => " (1 claim unchecked)".to_owned(),
                    n => format!(" ({n} claims unchecked)"),
                };
                outln!(
                    "{status} {} ({kind}) {}:{} {}{unchecked}",
                    contract.kernel,
                    contract.file,
                    contract.line,
                    contract.revision_hash
                );
            }
            let unverified = outcome.contracts.iter().filter(|c| !c.verified).count();
            let failing = outcome.contracts.iter().filter(|c| c.failing).count();
            outln!(
                "mdbook-fkc check: {} contract(s) verified, {unverified} unverified, {} error(s)",
                outcome.contracts.len() - unverified - failing,
                errors.len()
            );
        }
    }
    Ok(if preprocessor::failed(&outcome) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
