//! The mdBook side: [`FkcPreprocessor`] implements mdBook 0.5's `Preprocessor` trait (used
//! in-process by `mdbook-fkc build` and over stdin/stdout under a real `mdbook`), and
//! [`process_book`] runs the pipeline over every chapter of a book.

use crate::config::{OnFailure, Options};
use crate::diag::text;
use crate::diag::{Diagnostic, has_errors};
use crate::pipeline::{BookChecker, ChapterInput};
use crate::providers::Providers;
use crate::render::Renderer;
use crate::report::ContractSummary;
use crate::verify::ReproError;
use mdbook_preprocessor::book::{Book, BookItem};
use mdbook_preprocessor::config::Config;
use mdbook_preprocessor::errors::{Error, Result};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};
use std::path::Path;

/// The preprocessor's name in book.toml: `[preprocessor.fkc]`.
pub const NAME: &str = "fkc";

/// The FKC preprocessor.
#[derive(Debug, Default, Clone, Copy)]
pub struct FkcPreprocessor;

/// Everything a run over a book found.
#[derive(Debug, Default)]
pub struct BookOutcome {
    pub diagnostics: Vec<Diagnostic>,
    pub contracts: Vec<ContractSummary>,
    pub on_failure: OnFailure,
}

impl Preprocessor for FkcPreprocessor {
    fn name(&self) -> &str {
        NAME
    }

    fn run(&self, ctx: &PreprocessorContext, mut book: Book) -> Result<Book> {
        log_run(&ctx.renderer);
        let outcome = process_book(&ctx.root, &ctx.config, &mut book)?;
        report(&outcome)?;
        Ok(book)
    }

    fn supports_renderer(&self, _renderer: &str) -> Result<bool> {
        // The output is Markdown with embedded HTML, which every renderer passes through.
        Ok(true)
    }
}

/// The environment variable naming a file to which every run appends one line (used by the
/// tests to prove the preprocessor runs exactly once per renderer).
pub const RUN_LOG_VAR: &str = "MDBOOK_FKC_RUN_LOG";

fn log_run(renderer: &str) {
    let Some(path) = std::env::var_os(RUN_LOG_VAR) else {
        return;
    };
    let line = format!("run renderer={renderer}\n");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| std::io::Write::write_all(&mut file, line.as_bytes()));
    if let Err(error) = written {
        eprintln!("warning: cannot append to {RUN_LOG_VAR} file: {error}");
    }
}

/// Prints the diagnostics to stderr; an error when a contract failed and `on-failure = "bail"`.
/// Prints the errors among `diagnostics` to stderr (coloured as `--color`, `NO_COLOR` and
/// `CLICOLOR_FORCE` say: on a terminal by default); returns how many.
pub fn print_errors(diagnostics: &[Diagnostic]) -> usize {
    let style = text::stderr_style();
    let errors: Vec<Diagnostic> = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .cloned()
        .collect();
    if !errors.is_empty() {
        eprint!("{}", text::render_all(&errors, style));
    }
    errors.len()
}

fn report(outcome: &BookOutcome) -> Result<()> {
    let errors = print_errors(&outcome.diagnostics);
    if errors > 0 {
        if outcome.on_failure == OnFailure::Bail {
            return Err(Error::msg(format!(
                "mdbook-fkc: {errors} contract error(s); the book is not built (set `on-failure = \"continue\"` under [preprocessor.fkc] to render error boxes instead)"
            )));
        }
        eprintln!(
            "warning: mdbook-fkc: contract errors are shown in the pages (on-failure = \"continue\")"
        );
    }
    Ok(())
}

/// Runs the pipeline over every chapter of `book`, replacing chapter contents in place with the
/// rendered contracts and inserting the inventory.
pub fn process_book(root: &Path, config: &Config, book: &mut Book) -> Result<BookOutcome> {
    let options = read_options(root, config)?;
    let template_dir = options.template_dir.as_ref().map(|dir| root.join(dir));
    let renderer = Renderer::new(template_dir.as_deref()).map_err(Error::new)?;
    let providers = Providers::budgeted(options.providers.clone(), Some(options.build_budget()));
    let calibration = crate::calibration::beside(root);
    let mut checker = BookChecker::with_providers(&renderer, options.verify, providers)
        .with_cache(options.cache(root, &config.book.src).map_err(Error::msg)?)
        .with_jobs(options.jobs)
        .with_calibration(calibration.clone())
        .link_codes_to(diagnostics_index(book));
    let outcome = run_chapters(&mut checker, options.on_failure, config, book)?;
    insert_inventory(book, &renderer, &outcome.contracts, calibration.as_ref())
        .map_err(Error::new)?;
    Ok(outcome)
}

/// Checks every contract of `book` without rendering anything (what `mdbook-fkc check` runs),
/// optionally making every unverified contract or unchecked claim an error. The book is left as it was.
pub fn process_book_with(
    root: &Path,
    config: &Config,
    book: &mut Book,
    deny: crate::pipeline::Deny,
) -> Result<BookOutcome> {
    let options = read_options(root, config)?;
    let providers = Providers::budgeted(options.providers.clone(), Some(options.build_budget()));
    let mut checker = BookChecker::without_rendering(options.verify, providers)
        .with_cache(options.cache(root, &config.book.src).map_err(Error::msg)?)
        .with_jobs(options.jobs)
        .deny(deny);
    run_chapters(&mut checker, options.on_failure, config, book)
}

/// What `mdbook-fkc repro` hands the gate and gets back.
pub mod repro {
    pub use crate::verify::sample::Sample;
    pub use crate::verify::{Check, ReproError, Reproduced, Reproduction};
}

/// Runs one sample of the contract at `file:line` (as `check` prints it) again, with the book's
/// providers (`mdbook-fkc repro`); `Err` when there is no such chapter or contract.
pub fn reproduce(
    root: &Path,
    config: &Config,
    book: &Book,
    (file, line): (&str, usize),
    request: &crate::verify::Reproduction,
) -> std::result::Result<crate::verify::Reproduced, ReproError> {
    let options =
        read_options(root, config).map_err(|error| ReproError::Options(format!("{error:#}")))?;
    let providers = Providers::new(options.providers.clone());
    let mut checker = BookChecker::without_rendering(options.verify, providers);
    let source_dir = &config.book.src;
    let chapter = book
        .iter()
        .find_map(|item| match item {
            BookItem::Chapter(chapter) => {
                let path = chapter.source_path.as_ref().or(chapter.path.as_ref())?;
                (source_dir.join(path).display().to_string() == file).then_some(chapter)
            }
            _ => None,
        })
        .ok_or_else(|| ReproError::NoChapter {
            file: file.to_owned(),
        })?;
    checker.reproduce(file, &chapter.content, line, request)
}

/// The page of the book's diagnostics index (`diagnostics/index.md`), if it has one.
fn diagnostics_index(book: &Book) -> Option<String> {
    book.iter().find_map(|item| match item {
        BookItem::Chapter(chapter)
            if chapter
                .path
                .as_ref()
                .is_some_and(|p| p == Path::new("diagnostics/index.md")) =>
        {
            Some("diagnostics/index.html".to_owned())
        }
        _ => None,
    })
}

fn read_options(root: &Path, config: &Config) -> Result<Options> {
    let table: Option<serde_json::Value> = config
        .get(&format!("preprocessor.{NAME}"))
        .map_err(|error| Error::msg(format!("cannot read [preprocessor.{NAME}]: {error}")))?;
    Ok(Options::from_table(table.as_ref())
        .map_err(Error::msg)?
        .with_root(root))
}

/// Every chapter through `checker`, in book order; new content replaces the chapter's.
fn run_chapters(
    checker: &mut BookChecker<'_>,
    on_failure: OnFailure,
    config: &Config,
    book: &mut Book,
) -> Result<BookOutcome> {
    let mut outcome = BookOutcome {
        on_failure,
        ..BookOutcome::default()
    };
    // Every chapter at once, so the gate spreads all the book's contracts over the threads.
    let source_dir = config.book.src.clone();
    // (file, content, way up to the root, page from the root) of each chapter.
    let mut inputs: Vec<(String, String, String, String)> = Vec::new();
    book.for_each_mut(|item| {
        if let BookItem::Chapter(chapter) = item
            && let Some(path) = chapter.source_path.as_ref().or(chapter.path.as_ref())
        {
            let depth = chapter
                .path
                .as_ref()
                .map_or(0, |p| p.components().count().saturating_sub(1));
            let page = chapter.path.as_ref().unwrap_or(path).with_extension("html");
            inputs.push((
                source_dir.join(path).display().to_string(),
                chapter.content.clone(),
                "../".repeat(depth),
                page.display().to_string(),
            ));
        }
    });
    let borrowed: Vec<ChapterInput<'_>> = inputs
        .iter()
        .map(|(path, content, prefix, page)| ChapterInput {
            path,
            content,
            prefix,
            page: Some(page),
        })
        .collect();
    let mut reports = checker.chapters(&borrowed).into_iter();
    let mut failure = None;
    book.for_each_mut(|item| {
        let BookItem::Chapter(chapter) = item else {
            return;
        };
        let Some(path) = chapter.source_path.as_ref().or(chapter.path.as_ref()) else {
            return;
        };
        match reports.next() {
            Some(Ok(report)) => {
                if let Some(content) = report.content {
                    chapter.content = content;
                }
                outcome.diagnostics.extend(report.diagnostics);
                let page = chapter.path.as_ref().unwrap_or(path).with_extension("html");
                outcome
                    .contracts
                    .extend(report.contracts.into_iter().map(|mut c| {
                        c.link = format!("{}#{}", page.display(), c.anchor);
                        c
                    }));
            }
            Some(Err(error)) => {
                failure.get_or_insert(error);
            }
            None => {}
        }
    });
    match failure {
        Some(error) => Err(Error::new(error)),
        None => Ok(outcome),
    }
}

/// Replaces the inventory marker in any chapter with the table of every contract of the book.
fn insert_inventory(
    book: &mut Book,
    renderer: &Renderer,
    contracts: &[ContractSummary],
    calibration: Option<&crate::calibration::Calibration>,
) -> std::result::Result<(), crate::render::RenderError> {
    let mut failure = None;
    book.for_each_mut(|item| {
        let BookItem::Chapter(chapter) = item else {
            return;
        };
        if failure.is_some() || marker_lines(&chapter.content).is_empty() {
            return;
        }
        let depth = chapter
            .path
            .as_ref()
            .map_or(0, |p| p.components().count().saturating_sub(1));
        let prefix = "../".repeat(depth);
        match renderer.inventory(contracts, calibration, &prefix) {
            Ok(html) => chapter.content = replace_markers(&chapter.content, &html),
            Err(error) => failure = Some(error),
        }
    });
    failure.map_or(Ok(()), Err)
}

/// The line a chapter writes where the inventory of all contracts goes.
pub const INVENTORY_MARKER: &str = "<!-- fkc:inventory -->";

/// The byte ranges of the lines that are exactly the marker (up to three spaces of indent and
/// trailing blanks), outside fenced code blocks. A marker quoted in inline code or shown in a
/// code block is text, not a marker.
fn marker_lines(content: &str) -> Vec<std::ops::Range<usize>> {
    let mut found = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    let mut start = 0;
    for line in content.split_inclusive('\n') {
        let range = start..start + line.len();
        start += line.len();
        let text = line.trim_end();
        let indent = text.len() - text.trim_start().len();
        let body = text.trim_start();
        let opener = body.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = opener.map_or(0, |c| body.chars().take_while(|x| *x == c).count());
        match (fence, opener) {
            (None, Some(c)) if indent < 4 && run >= 3 => fence = Some((c, run)),
            (Some((c, n)), Some(d))
                if c == d && run >= n && body.trim_start_matches(c).is_empty() =>
            {
                fence = None;
            }
            (None, _) if indent < 4 && body == INVENTORY_MARKER => found.push(range),
            _ => {}
        }
    }
    found
}

/// `content` with every marker line replaced by `html` (which goes on lines of its own, so
/// mdBook reads it as an HTML block and its typographic pass leaves the style sheet alone).
fn replace_markers(content: &str, html: &str) -> String {
    let mut out = String::with_capacity(content.len() + html.len());
    let mut cursor = 0;
    for range in marker_lines(content) {
        out.push_str(content.get(cursor..range.start).unwrap_or(""));
        out.push_str(html.trim_end());
        out.push('\n');
        cursor = range.end;
    }
    out.push_str(content.get(cursor..).unwrap_or(""));
    out
}

/// Warns when the calling mdbook differs in minor version from the one this was built against.
pub fn version_warning(calling: &str) -> Option<String> {
    let minor = |version: &str| {
        let mut parts = version.split('.');
        Some((parts.next()?.to_owned(), parts.next()?.to_owned()))
    };
    let ours = mdbook_preprocessor::MDBOOK_VERSION;
    (minor(calling) != minor(ours)).then(|| {
        format!(
            "warning: mdbook-fkc was built against mdbook {ours}, but is called by mdbook {calling}"
        )
    })
}

/// True when any diagnostic fails the build.
pub fn failed(outcome: &BookOutcome) -> bool {
    has_errors(&outcome.diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_marker_line_outside_code_is_replaced() {
        let text = "# Inventory\n\n<!-- fkc:inventory -->\n\nWrite `<!-- fkc:inventory -->` on a line.\n\n```md\n<!-- fkc:inventory -->\n```\n\n~~~~\n<!-- fkc:inventory -->\n```\n~~~~\n    <!-- fkc:inventory -->\n";
        let out = replace_markers(text, "<style>a { b: c } -- x</style>\n<table></table>\n");
        assert_eq!(out.matches("<table>").count(), 1, "{out}");
        assert_eq!(out.matches(INVENTORY_MARKER).count(), 4, "{out}");
        assert!(out.starts_with("# Inventory\n\n<style>"), "{out}");
        assert_eq!(replace_markers("no marker", "<x>"), "no marker");
    }

    #[test]
    fn version_warning_only_on_minor_mismatch() {
        let ours = mdbook_preprocessor::MDBOOK_VERSION;
        assert_eq!(version_warning(ours), None);
        assert!(version_warning("0.4.40").is_some());
        assert!(version_warning("garbage").is_some());
    }
}
