//! The command line as written → what to do. Hand-written rather than clap: the grammar is six
//! subcommands with at most five flags each, the protocol mode (no arguments) must start fast,
//! and usage errors must exit with 2 and say which subcommand's `--help` to read.

use crate::error::UsageError;
use fkc_provider::DType;
use mdbook_fkc::diag::text::ColorChoice;
use mdbook_fkc::preprocessor::repro::{Check, Sample};
use std::path::PathBuf;

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// No arguments: the mdBook preprocessor protocol on stdin/stdout.
    Protocol,
    Supports(String),
    Build {
        dir: PathBuf,
        dest: Option<PathBuf>,
        open: bool,
        no_cache: bool,
    },
    Check {
        dir: PathBuf,
        format: Format,
        deny: mdbook_fkc::Deny,
        no_cache: bool,
    },
    Explain(String),
    /// Set a book up for mdbook-fkc (or write a new one with a first contract).
    Init {
        dir: PathBuf,
        /// `--provider NAME`: scaffold a provider crate of that name with one kernel and its
        /// verified contract.
        provider: Option<String>,
    },
    /// Time every contract's kernels and write the calibration file beside the book.
    Judge {
        dir: PathBuf,
    },
    /// Run one sample of one contract again, as a `reproduce:` line of a report says.
    Repro(Repro),
    /// Print this text (a help page) and succeed.
    Help(&'static str),
    Version,
}

/// `mdbook-fkc repro FILE:LINE --dtype D --seed S [--check C] --sample '…' [--book DIR]`.
#[derive(Debug, PartialEq, Eq)]
pub struct Repro {
    pub book: PathBuf,
    /// The chapter, as `check` prints it (`book/ch.md`).
    pub file: String,
    /// The line of the contract's opening fence.
    pub line: usize,
    pub dtype: DType,
    pub seed: u64,
    pub check: Check,
    pub sample: Sample,
}

/// The output format of `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Sarif,
    Github,
}

/// A parsed command line.
#[derive(Debug, PartialEq, Eq)]
pub struct Parsed {
    pub command: Command,
    pub color: ColorChoice,
}

pub const MAIN_HELP: &str = "\
mdbook-fkc — literate, executable kernel contracts for mdBook

Usage: mdbook-fkc [COMMAND] [OPTIONS]

Commands:
  (none)              run as an mdBook preprocessor (book JSON on stdin/stdout)
  supports RENDERER   tell mdBook whether RENDERER is supported (always yes)
  init [DIR]          add [preprocessor.fkc] to DIR's book.toml, or write a new book there
                      (--provider NAME: a provider crate with one kernel and its book)
  build [DIR]         build the book in DIR in-process, checking every contract
  check [DIR]         check every contract without rendering (the CI gate)
  explain CODE        explain a diagnostic code, with a failing example and its fix
  judge [DIR]         time every contract's kernels; write DIR/fkc-calibration.json
  repro FILE:LINE     run one sample of a contract again (the `reproduce:` line of a report)
  help [COMMAND]      print this help, or a command's

Options:
  --color WHEN        colour diagnostics: auto (default; honours NO_COLOR and CLICOLOR_FORCE),
                      always or never
  -h, --help          print help (also `mdbook-fkc COMMAND --help`)
  -V, --version       print the version";

pub const SUPPORTS_HELP: &str = "\
Tell mdBook whether a renderer is supported: always yes (exit 0), because the output is
Markdown with embedded HTML.

Usage: mdbook-fkc supports RENDERER";

pub const BUILD_HELP: &str = "\
Build the book in DIR (default .) in-process with mdBook 0.5, checking every contract. The fkc
preprocessor named in book.toml is replaced in place by this binary's own, so it runs once.
Exits 1 when a contract fails (with on-failure = \"bail\").

Usage: mdbook-fkc build [DIR] [OPTIONS]

Options:
  -d, --dest-dir DIR  write the book to DIR (relative to the current directory) instead of
                      book.toml's build-dir
  -o, --open          open the built book in a browser ($BROWSER, or the system's opener)
  --no-cache          verify every contract afresh (as `cache = false` under [preprocessor.fkc])
  --color WHEN        auto, always or never
  -h, --help          print this help";

const CHECK_HELP_HEAD: &str = "\
Check every contract of the book in DIR (default .) without rendering (nor drawing the worked
examples only pages show). Lists each contract (ok: verified, FAIL: failing, spec: unverified);
exits 1 on any error.

Usage: mdbook-fkc check [DIR] [OPTIONS]

Options:
";

const CHECK_HELP_OPTIONS: &str =
    "  --deny unverified   make every ```fkc,unverified contract an error (FKC0005)
  --deny unchecked    make every claim the gate could not check an error (FKC0007)
  --deny empty        make a book without contracts an error (it is a warning otherwise)
  --no-cache          verify every contract afresh (as `cache = false` under [preprocessor.fkc])
  --color WHEN        auto, always or never
  -h, --help          print this help";

/// `check`'s help: its lead, one line per output format of [`FORMATS`], its other options.
static CHECK_HELP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let formats: String = FORMATS
        .iter()
        .enumerate()
        .map(|(i, (name, _, what))| {
            let option = if i == 0 { "--format FORMAT" } else { "" };
            format!("  {option:<18}  {name}: {what}\n")
        })
        .collect();
    format!("{CHECK_HELP_HEAD}{formats}{CHECK_HELP_OPTIONS}")
});

/// Every output format of `check`: (the `--format` value, the format, what it prints), the
/// default first. The parser, its error message and the help all read this table.
pub const FORMATS: [(&str, Format, &str); 4] = [
    (
        "text",
        Format::Text,
        "diagnostics and a line per contract (default)",
    ),
    (
        "json",
        Format::Json,
        "a versioned object (preprocessor/schema/check-report.json)",
    ),
    (
        "sarif",
        Format::Sarif,
        "SARIF 2.1.0, for code-scanning tools",
    ),
    ("github", Format::Github, "GitHub Actions annotations"),
];

pub const EXPLAIN_HELP: &str = "\
Explain a diagnostic code: the rule, a contract that fails with it (from the book's
diagnostics index), what mdbook-fkc says about it, and how to fix it.

Usage: mdbook-fkc explain CODE

Example: mdbook-fkc explain FKC0104";

pub const INIT_HELP: &str = "\
Set the book in DIR (default .) up for mdbook-fkc: add the [preprocessor.fkc] table to its
book.toml. Where DIR holds no book yet, write one: book.toml, src/SUMMARY.md and a chapter with a
first contract (the built-in reference backend's max_pool2d), which `mdbook build` verifies.
When mdbook-fkc is not on PATH, the table names this binary as its `command`.

With --provider NAME, write a kernel provider crate instead, in DIR (default ./NAME): a Rust
crate NAME with one kernel (`square`, F32 and F64) in its link registry, the `fkc-provider`
binary that serves it, and a book whose contract of `square` `mdbook build` verifies through
that binary (the first build compiles the crate). Replace the kernel with your own and keep
the contract true.

Usage: mdbook-fkc init [DIR] [--provider NAME]";

pub const JUDGE_HELP: &str = "\
Time every verified contract's kernel of the book in DIR (default .) on a ladder of sizes from
its admitted domain (about 2 s each at most), fit overhead_ns + flops / throughput + bytes_moved /
bandwidth, and write DIR/fkc-calibration.json; the build then shows it on each contract's page.

Usage: mdbook-fkc judge [DIR]";

pub const REPRO_HELP: &str = "\
Run one sample of one contract again through the gate's check that reported it, with the same
operand values, and say which diagnostic it reproduces. Every behavioural failure prints the
line to run (`reproduce: mdbook-fkc repro …`). Exits 1 when the sample fails, 0 when it passes,
2 on a usage error (no contract at FILE:LINE, a sample it does not classify).

Usage: mdbook-fkc repro FILE:LINE --dtype DTYPE --sample SAMPLE [OPTIONS]

Arguments:
  FILE:LINE           the contract's opening fence, as `check` prints it (book/ch.md:12)

Options:
  --dtype DTYPE       F32, F64, BF16, F16, F8E5M2, I8, U8, I32, I64 or Bool (an entry point
                      the contract declares; with `--check undeclared`, one it does not)
  --sample SAMPLE     the sample as reports print it: 'x: [1, 4, 3, 3], bias: absent, k = 2'
  --seed SEED         the operand values' seed, decimal or 0x-hex (default 0)
  --check CHECK       order, special, special-uniform (SEED: which special value fills
                      every element), special-tail, conditioning, signed-zeros, underflow,
                      overflow, magnitudes or layout: the
                      check with its own operand values;
                      undeclared: DTYPE must be refused; required: a call without the sample's
                      absent inputs must be refused unless the contract marks them optional
                      (default: the contract's verdict — accepted with its rules, values and
                      determinism, or rejected when it breaks one constraint)
  --book DIR          the book's directory (default .)
  -h, --help          print this help";

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Parsed, UsageError> {
    let mut color = ColorChoice::Auto;
    let mut rest: Vec<&str> = Vec::new();
    let mut iter = args.iter().map(String::as_str);
    while let Some(arg) = iter.next() {
        if arg == "--color" {
            let value = iter.next().ok_or_else(|| {
                UsageError::Color("`--color` needs a value: auto, always or never".to_owned())
            })?;
            color = color_choice(value)?;
        } else if let Some(value) = arg.strip_prefix("--color=") {
            color = color_choice(value)?;
        } else {
            rest.push(arg);
        }
    }
    let command = match rest.split_first() {
        None => Command::Protocol,
        Some((&("-h" | "--help"), _)) => Command::Help(MAIN_HELP),
        Some((&("-V" | "--version"), _)) => Command::Version,
        Some((&"help", topic)) => Command::Help(match topic.first() {
            None | Some(&("-h" | "--help")) => MAIN_HELP,
            Some(&name) => help_of(name).ok_or_else(|| UsageError::NoHelp {
                name: name.to_owned(),
                close: suggestion(name, COMMANDS),
            })?,
        }),
        Some((&name, tail)) => {
            if tail.iter().any(|a| *a == "-h" || *a == "--help") {
                Command::Help(help_of(name).ok_or_else(|| unknown_command(name))?)
            } else {
                subcommand(name, tail)?
            }
        }
    };
    Ok(Parsed { command, color })
}

fn color_choice(value: &str) -> Result<ColorChoice, UsageError> {
    ColorChoice::parse(value).ok_or_else(|| {
        UsageError::Color(format!(
            "`--color` takes auto, always or never, not `{value}`"
        ))
    })
}

fn help_of(command: &str) -> Option<&'static str> {
    Some(match command {
        "supports" => SUPPORTS_HELP,
        "build" => BUILD_HELP,
        "check" => CHECK_HELP.as_str(),
        "explain" => EXPLAIN_HELP,
        "judge" => JUDGE_HELP,
        "init" => INIT_HELP,
        "repro" => REPRO_HELP,
        "help" => MAIN_HELP,
        _ => return None,
    })
}

/// The subcommands, for did-you-mean.
const COMMANDS: &[&str] = &[
    "supports", "init", "build", "check", "explain", "judge", "repro", "help",
];

/// Each subcommand's options (with the global `--color`), for did-you-mean.
fn options_of(command: &str) -> &'static [&'static str] {
    match command {
        "build" => &["--dest-dir", "--open", "--no-cache", "--color", "--help"],
        "check" => &["--format", "--deny", "--no-cache", "--color", "--help"],
        "repro" => &[
            "--dtype", "--seed", "--check", "--sample", "--book", "--color", "--help",
        ],
        "init" => &["--provider", "--color", "--help"],
        _ => &["--color", "--help", "--version"],
    }
}

/// `; did you mean `X`?` when a known name is close to `name` (else nothing).
fn suggestion(name: &str, known: &[&str]) -> String {
    mdbook_fkc::diag::did_you_mean(name, known.iter().copied())
        .map(|close| format!("; did you mean `{close}`?"))
        .unwrap_or_default()
}

fn unknown_command(name: &str) -> UsageError {
    let option = name.starts_with('-');
    let known = if option { options_of("") } else { COMMANDS };
    UsageError::Unknown {
        option,
        name: name.to_owned(),
        close: suggestion(name, known),
        help: MAIN_HELP,
    }
}

fn usage(command: &str, message: &str) -> UsageError {
    UsageError::Misused {
        command: command.to_owned(),
        message: message.to_owned(),
    }
}

fn subcommand(name: &str, tail: &[&str]) -> Result<Command, UsageError> {
    match name {
        "supports" => match tail {
            [renderer] if !renderer.starts_with('-') => {
                Ok(Command::Supports((*renderer).to_owned()))
            }
            [] => Err(usage("supports", "`supports` needs the RENDERER's name")),
            _ => Err(usage("supports", "`supports` takes exactly one RENDERER")),
        },
        "explain" => match tail {
            [code] if !code.starts_with('-') => Ok(Command::Explain((*code).to_owned())),
            [] => Err(usage(
                "explain",
                "`explain` needs a CODE (for example FKC0104)",
            )),
            _ => Err(usage("explain", "`explain` takes exactly one CODE")),
        },
        "build" => build(tail),
        "check" => check(tail),
        "init" => init(tail),
        "judge" => Ok(Command::Judge {
            dir: walk("judge", tail, |_, _| Ok(None))?,
        }),
        "repro" => repro(tail).map(Command::Repro),
        _ => Err(unknown_command(name)),
    }
}

/// Splits `tail` into the DIR (default `.`) and flags, each flag handled by `flag`, which
/// returns whether it consumed the next argument.
fn walk<'a>(
    command: &str,
    tail: &[&'a str],
    flag: impl FnMut(&'a str, Option<&'a str>) -> Result<Option<bool>, UsageError>,
) -> Result<PathBuf, UsageError> {
    Ok(walk_for_dir(command, tail, flag)?.unwrap_or_else(|| PathBuf::from(".")))
}

/// [`walk`], with `None` when no DIR is given.
fn walk_for_dir<'a>(
    command: &str,
    tail: &[&'a str],
    mut flag: impl FnMut(&'a str, Option<&'a str>) -> Result<Option<bool>, UsageError>,
) -> Result<Option<PathBuf>, UsageError> {
    let mut dir = None;
    let mut index = 0;
    while let Some(&arg) = tail.get(index) {
        index += 1;
        if arg.starts_with('-') && arg != "-" {
            let (name, inline) = match arg.split_once('=') {
                Some((name, value)) if name.starts_with("--") => (name, Some(value)),
                _ => (arg, None),
            };
            let next = inline.or_else(|| tail.get(index).copied());
            match flag(name, next)? {
                Some(true) if inline.is_none() => index += 1,
                Some(_) => {}
                None => {
                    let close = suggestion(name, options_of(command));
                    return Err(usage(command, &format!("unknown option `{name}`{close}")));
                }
            }
        } else if dir.is_none() {
            dir = Some(PathBuf::from(arg));
        } else {
            return Err(usage(command, &format!("unexpected argument `{arg}`")));
        }
    }
    Ok(dir)
}

fn init(tail: &[&str]) -> Result<Command, UsageError> {
    let mut provider = None;
    let dir = walk_for_dir("init", tail, |name, next| match name {
        "--provider" => {
            let value = next.ok_or_else(|| usage("init", "`--provider` needs a NAME"))?;
            provider = Some(value.to_owned());
            Ok(Some(true))
        }
        _ => Ok(None),
    })?;
    // A provider crate goes in a directory of its name unless DIR says otherwise.
    let dir = dir.unwrap_or_else(|| PathBuf::from(provider.as_deref().unwrap_or(".")));
    Ok(Command::Init { dir, provider })
}

fn build(tail: &[&str]) -> Result<Command, UsageError> {
    let mut dest = None;
    let mut open = false;
    let mut no_cache = false;
    let dir = walk("build", tail, |name, next| match name {
        "-d" | "--dest-dir" => {
            let value = next.ok_or_else(|| usage("build", "`--dest-dir` needs a DIR"))?;
            dest = Some(PathBuf::from(value));
            Ok(Some(true))
        }
        "-o" | "--open" => {
            open = true;
            Ok(Some(false))
        }
        "--no-cache" => {
            no_cache = true;
            Ok(Some(false))
        }
        "--format" | "--deny" => Err(usage(
            "build",
            &format!("`{name}` belongs to `check`, not `build`"),
        )),
        _ => Ok(None),
    })?;
    Ok(Command::Build {
        dir,
        dest,
        open,
        no_cache,
    })
}

fn check(tail: &[&str]) -> Result<Command, UsageError> {
    let mut format = Format::Text;
    let mut deny = mdbook_fkc::Deny::default();
    let mut no_cache = false;
    let dir = walk("check", tail, |name, next| match name {
        "--format" => {
            let chosen = FORMATS.iter().find(|(name, ..)| Some(*name) == next);
            let Some((_, chosen, _)) = chosen else {
                let names: Vec<&str> = FORMATS.iter().map(|(name, ..)| *name).collect();
                let choices = match names.split_last() {
                    Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                    None => String::new(),
                };
                let said = match next {
                    Some(value) => format!(
                        "`--format` takes {choices}, not `{value}`{}",
                        suggestion(value, &names)
                    ),
                    None => format!("`--format` needs a FORMAT: {choices}"),
                };
                return Err(usage("check", &said));
            };
            format = *chosen;
            Ok(Some(true))
        }
        "--deny" => match next {
            Some("unverified") => {
                deny.unverified = true;
                Ok(Some(true))
            }
            Some("unchecked") => {
                deny.unchecked = true;
                Ok(Some(true))
            }
            Some("empty") => {
                deny.empty = true;
                Ok(Some(true))
            }
            other => Err(usage(
                "check",
                &format!(
                    "`--deny` takes `unverified`, `unchecked` or `empty`, not `{}`",
                    other.unwrap_or("")
                ),
            )),
        },
        "--no-cache" => {
            no_cache = true;
            Ok(Some(false))
        }
        _ => Ok(None),
    })?;
    Ok(Command::Check {
        dir,
        format,
        deny,
        no_cache,
    })
}

fn repro(tail: &[&str]) -> Result<Repro, UsageError> {
    let (mut book, mut dtype, mut seed, mut check, mut sample) =
        (None, None, 0, Check::Domain, None);
    let located = walk("repro", tail, |name, next| {
        let value = || next.ok_or_else(|| usage("repro", &format!("`{name}` needs a value")));
        match name {
            "--book" => book = Some(PathBuf::from(value()?)),
            "--dtype" => {
                let text = value()?;
                dtype = Some(DType::from_name(text).ok_or_else(|| {
                    usage(
                        "repro",
                        &format!("`--dtype` takes F32, F64, BF16, F16, F8E5M2, I8, U8, I32, I64 or Bool, not `{text}`"),
                    )
                })?);
            }
            "--seed" => seed = parse_seed(value()?)?,
            "--check" => {
                let text = value()?;
                check = Check::parse(text).ok_or_else(|| {
                    usage(
                        "repro",
                        &format!("`--check` takes {}, not `{text}`", Check::NAMES),
                    )
                })?;
            }
            "--sample" => {
                let parsed = Sample::parse(value()?)
                    .map_err(|e| usage("repro", &format!("cannot read the sample: {e}")))?;
                sample = Some(parsed);
            }
            _ => return Ok(None),
        }
        Ok(Some(true))
    })?;
    let (file, line) = file_line(&located.to_string_lossy())?;
    Ok(Repro {
        book: book.unwrap_or_else(|| PathBuf::from(".")),
        file,
        line,
        dtype: dtype.ok_or_else(|| usage("repro", "`repro` needs `--dtype`"))?,
        seed,
        check,
        sample: sample.ok_or_else(|| usage("repro", "`repro` needs `--sample`"))?,
    })
}

/// `FILE:LINE`, the line a positive number.
fn file_line(text: &str) -> Result<(String, usize), UsageError> {
    text.rsplit_once(':')
        .and_then(|(file, line)| Some((file, line.parse::<usize>().ok()?)))
        .filter(|(file, line)| !file.is_empty() && *line > 0)
        .map(|(file, line)| (file.to_owned(), line))
        .ok_or_else(|| {
            usage(
                "repro",
                &format!("expected FILE:LINE (book/ch.md:12), not `{text}`"),
            )
        })
}

/// A seed in decimal or `0x` hexadecimal.
fn parse_seed(text: &str) -> Result<u64, UsageError> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
    .ok_or_else(|| {
        usage(
            "repro",
            &format!("`--seed` takes a number (decimal or 0x-hex), not `{text}`"),
        )
    })
}

#[cfg(test)]
#[path = "args/tests.rs"]
mod tests;
