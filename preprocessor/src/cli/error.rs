//! What the command line fails with: a command line that does not parse ([`UsageError`]) or
//! a command that fails ([`CliError`]); the message the user reads after `error:` (exit code
//! 2), one variant per kind of failure.

use mdbook_fkc::preprocessor::repro::ReproError;
use std::path::PathBuf;

#[derive(Debug)]
pub enum CliError {
    /// A file, directory or stream could not be read or written: what was being done, on
    /// what, and why.
    Io {
        doing: &'static str,
        what: String,
        error: std::io::Error,
    },
    /// DIR is not a directory.
    NotADirectory(PathBuf),
    /// DIR holds no mdBook book.
    NoBook(PathBuf),
    /// mdBook could not load the book, or read or write its protocol's JSON: what it was
    /// doing and its error.
    Book { doing: String, error: String },
    /// The book's book.toml has no `[preprocessor.fkc]` table.
    NoTable(PathBuf),
    /// The book could not be checked (its `[preprocessor.fkc]` does not read, a template or
    /// the cache failed): why.
    Unchecked(String),
    /// `repro` could not run the sample.
    Repro(ReproError),
    /// `explain` was given a code that does not exist.
    UnknownCode { code: String, known: Vec<String> },
    /// `init` refuses to write: what it would have overwritten or could not name.
    Refused(String),
    /// No program to open the built book with.
    NoOpener,
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Io { doing, what, error } => write!(f, "cannot {doing} {what}: {error}"),
            CliError::NotADirectory(dir) => write!(
                f,
                "{} is not a directory: name the book's directory (the one holding book.toml)",
                dir.display()
            ),
            CliError::NoBook(dir) => write!(
                f,
                "{} holds no mdBook book (no book.toml, no src/SUMMARY.md): run `mdbook init` there, or name the book's directory",
                dir.display()
            ),
            CliError::Book { doing, error } => write!(f, "cannot {doing}: {error}"),
            CliError::NoTable(dir) => write!(
                f,
                "{}/book.toml has no [preprocessor.fkc] table, so `mdbook build` would not run mdbook-fkc and would show every contract as raw YAML\n  help: add it:\n\n[preprocessor.fkc]\nbefore = [\"links\", \"index\"]",
                dir.display()
            ),
            CliError::Unchecked(why) => write!(f, "{why}"),
            CliError::Repro(error) => write!(f, "{error}"),
            CliError::UnknownCode { code, known } => write!(
                f,
                "unknown code `{code}`; the codes are: {}",
                known.join(", ")
            ),
            CliError::Refused(why) => write!(f, "{why}"),
            CliError::NoOpener => write!(f, "no program to open the book with"),
        }
    }
}

impl std::error::Error for CliError {}

impl CliError {
    /// An I/O error while `doing` something to `path`.
    pub fn io(doing: &'static str, path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self {
        let what = path.display().to_string();
        move |error| CliError::Io { doing, what, error }
    }
}

/// A command line that does not parse: what is wrong, and where to read the usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageError {
    /// A subcommand used wrongly: its name (its `--help` shows the usage) and what is wrong.
    Misused { command: String, message: String },
    /// Neither a command nor a top-level option; `close` is a did-you-mean, or empty.
    Unknown {
        option: bool,
        name: String,
        close: String,
        /// The main help, shown after the error.
        help: &'static str,
    },
    /// `help NAME` for a NAME that is not a command.
    NoHelp { name: String, close: String },
    /// `--color` without a value or with a wrong one.
    Color(String),
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UsageError::Misused { command, message } => write!(
                f,
                "{message}\n\nrun `mdbook-fkc {command} --help` for usage"
            ),
            UsageError::Unknown {
                option,
                name,
                close,
                help,
            } => {
                let what = if *option { "option" } else { "command" };
                write!(f, "unknown {what} `{name}`{close}\n\n{help}")
            }
            UsageError::NoHelp { name, close } => {
                write!(f, "no help for `{name}`: it is not a command{close}")
            }
            UsageError::Color(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for UsageError {}
