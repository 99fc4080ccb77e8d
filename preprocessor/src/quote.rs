//! Errata that quote the gate: `{{#fkc-counterexample}}` in a chapter's prose becomes the
//! counterexample the gate printed for the nearest `should_fail` fence above it, so an erratum
//! never quotes a sample the build did not find (the samples change with `seed`).
//! `{{#fkc-counterexample FKC0407}}` quotes that code's sample; `\{{#fkc-counterexample}}` is
//! left for mdBook, which prints it without the backslash.

use crate::diag::{Code, Diagnostic};
use crate::source::SourceFile;
use mdbook_markdown::pulldown_cmark::Event;
use mdbook_markdown::{MarkdownOptions, new_cmark_parser};
use std::ops::Range;
use std::sync::Arc;

/// What the author writes in prose.
pub const PLACEHOLDER: &str = "{{#fkc-counterexample";

/// A `should_fail` fence as the gate left it: where it ends, and the samples its expected
/// errors name (`None`: it did not fail as marked, and FKC0004 already says so).
pub struct FailedFence {
    pub end: usize,
    pub samples: Option<Vec<(Code, String)>>,
}

/// One placeholder filled: the range it covers and the inline Markdown that replaces it.
pub type Filled = (Range<usize>, String);

/// The sample each error names, in order: the shrunk counterexample of a behavioural failure or
/// the sample a cost formula was checked on.
pub fn samples_of(errors: &[Diagnostic]) -> Vec<(Code, String)> {
    errors
        .iter()
        .filter_map(|error| {
            let sample = error.notes.iter().find_map(|note| sample_in(note))?;
            Some((error.code, sample.to_owned()))
        })
        .collect()
}

/// The sample a note names (`counterexample (shrunk, F32): x: [1, 1]` → `x: [1, 1]`).
fn sample_in(note: &str) -> Option<&str> {
    let detail = note
        .strip_prefix("counterexample (")
        .or_else(|| note.strip_prefix("sample ("))?;
    let (_, sample) = detail.split_once("): ")?;
    Some(sample)
}

/// Fills every placeholder in the prose of `text[from..]` from the `should_fail` fences above
/// it; a placeholder with nothing to quote is FKC0006.
pub fn fill(
    source: &Arc<SourceFile>,
    from: usize,
    fences: &[FailedFence],
) -> (Vec<Filled>, Vec<Diagnostic>) {
    let mut filled = Vec::new();
    let mut diagnostics = Vec::new();
    for (range, code) in placeholders(&source.text, from) {
        let above = fences.iter().rev().find(|fence| fence.end <= range.start);
        match quote(above, code.as_deref()) {
            Ok(text) => filled.push((range, text)),
            Err(why) => {
                diagnostics.push(unfilled(source, range.clone(), &why));
                filled.push((range, "`(no counterexample)`".to_owned()));
            }
        }
    }
    (filled, diagnostics)
}

/// Why a placeholder has nothing to quote.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unquotable {
    /// No `should_fail` fence comes before it.
    Orphan,
    /// The fence above does not fail with this code on a sample.
    CodeNotOnASample(String),
    /// The fence above fails, but not on a sample.
    NotOnASample,
}

impl std::fmt::Display for Unquotable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unquotable::Orphan => write!(
                f,
                "no fence marked `should_fail` comes before it in this chapter"
            ),
            Unquotable::CodeNotOnASample(code) => {
                write!(f, "the fence above does not fail with {code} on a sample")
            }
            Unquotable::NotOnASample => write!(
                f,
                "the fence above fails without a sample (its error is about the contract as written, not about a run)"
            ),
        }
    }
}

/// The inline Markdown for one placeholder, or why there is none.
fn quote(above: Option<&FailedFence>, code: Option<&str>) -> Result<String, Unquotable> {
    let Some(fence) = above else {
        return Err(Unquotable::Orphan);
    };
    let Some(samples) = &fence.samples else {
        // FKC0004 already reports the fence; quote nothing rather than say it twice.
        return Ok("`(no counterexample: the fence above did not fail as marked)`".to_owned());
    };
    let found = samples
        .iter()
        .find(|(c, _)| code.is_none_or(|code| c.as_str() == code));
    match found {
        Some((_, sample)) => Ok(format!("`{sample}`")),
        None => Err(match code {
            Some(code) => Unquotable::CodeNotOnASample(code.to_owned()),
            None => Unquotable::NotOnASample,
        }),
    }
}

fn unfilled(source: &Arc<SourceFile>, range: Range<usize>, why: &Unquotable) -> Diagnostic {
    Diagnostic::error(
        Code::PlaceholderUnfilled,
        source,
        range,
        "this counterexample placeholder has nothing to quote",
    )
    .with_label(why.to_string())
    .with_help(
        "put it after a ```fkc,should_fail=CODE fence whose error names a sample, or write \
         `\\{{#fkc-counterexample}}` to show the placeholder itself",
    )
}

/// Each placeholder in prose (not in code) with the code it names, if any.
fn placeholders(text: &str, from: usize) -> Vec<(Range<usize>, Option<String>)> {
    let markdown = text.get(from..).unwrap_or("");
    if !markdown.contains(PLACEHOLDER) {
        return Vec::new();
    }
    let mut found = Vec::new();
    let parser = new_cmark_parser(markdown, &MarkdownOptions::default()).into_offset_iter();
    let mut in_code_block = false;
    for (event, range) in parser {
        match event {
            Event::Start(mdbook_markdown::pulldown_cmark::Tag::CodeBlock(_)) => {
                in_code_block = true;
            }
            Event::End(mdbook_markdown::pulldown_cmark::TagEnd::CodeBlock) => {
                in_code_block = false;
            }
            Event::Text(_) if !in_code_block => {
                found.extend(in_text(
                    markdown,
                    range.start + from..range.end + from,
                    from,
                ));
            }
            _ => {}
        }
    }
    found.dedup_by_key(|(range, _)| range.start);
    found
}

/// The placeholders in one run of prose, `range` in the chapter (`text` starts at `from`).
fn in_text(
    text: &str,
    range: Range<usize>,
    from: usize,
) -> impl Iterator<Item = (Range<usize>, Option<String>)> + '_ {
    let local = range.start - from..range.end - from;
    let run = text.get(local.clone()).unwrap_or("");
    run.match_indices(PLACEHOLDER).filter_map(move |(at, _)| {
        let start = local.start + at;
        let escaped = text.get(..start).is_some_and(|b| b.ends_with('\\'));
        let rest = text.get(start + PLACEHOLDER.len()..)?;
        let close = rest.find("}}")?;
        let argument = rest.get(..close)?.trim();
        let fits = argument.is_empty() || rest.starts_with(char::is_whitespace);
        let code = (!argument.is_empty()).then(|| argument.to_owned());
        let end = start + PLACEHOLDER.len() + close + 2;
        (!escaped && fits).then_some((start + from..end + from, code))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> Arc<SourceFile> {
        Arc::new(SourceFile::new("ch.md", text.to_owned()))
    }

    fn failed(end: usize, samples: &[(Code, &str)]) -> FailedFence {
        let samples = samples.iter().map(|(c, s)| (*c, (*s).to_owned())).collect();
        FailedFence {
            end,
            samples: Some(samples),
        }
    }

    #[test]
    fn a_placeholder_quotes_the_fence_above_it_and_its_code_picks_the_sample() {
        let text = "```fkc\nk\n```\n\nFor example {{#fkc-counterexample}} or \
                    {{#fkc-counterexample FKC0407}}.\n";
        let fence = failed(
            12,
            &[
                (Code::UnderConstrained, "x: [1, 2]"),
                (Code::CostFormula, "x: [3]"),
            ],
        );
        let (filled, diagnostics) = fill(&source(text), 0, &[fence]);
        assert!(diagnostics.is_empty());
        let quotes: Vec<&str> = filled.iter().map(|(_, q)| q.as_str()).collect();
        assert_eq!(quotes, ["`x: [1, 2]`", "`x: [3]`"]);
        let (range, _) = &filled[0];
        assert_eq!(&text[range.clone()], "{{#fkc-counterexample}}");
    }

    #[test]
    fn placeholders_in_code_or_escaped_are_left_alone() {
        let text = "`{{#fkc-counterexample}}` \\{{#fkc-counterexample}}\n\n```text\n\
                    {{#fkc-counterexample}}\n```\n";
        let (filled, diagnostics) = fill(&source(text), 0, &[]);
        assert!(filled.is_empty() && diagnostics.is_empty(), "{filled:?}");
    }

    #[test]
    fn a_placeholder_with_nothing_to_quote_is_fkc0006_at_its_own_place() {
        let text = "Before any fence: {{#fkc-counterexample}}.\n";
        let (_, diagnostics) = fill(&source(text), 0, &[]);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, Code::PlaceholderUnfilled);
        assert_eq!(diagnostics[0].span.start, text.find('{').unwrap_or(0));
        let later = "```fkc\nk\n```\n\n{{#fkc-counterexample FKC0409}}\n";
        let (_, diagnostics) = fill(&source(later), 0, &[failed(12, &[])]);
        assert_eq!(diagnostics[0].code, Code::PlaceholderUnfilled);
    }

    #[test]
    fn notes_name_their_sample_after_the_detail() {
        let note = "counterexample (shrunk, F32, with NaN, ±Inf): x: [1, 1, 2, 2], k = 2";
        assert_eq!(sample_in(note), Some("x: [1, 1, 2, 2], k = 2"));
        assert_eq!(sample_in("sample (F64): y: [2]"), Some("y: [2]"));
        assert_eq!(sample_in("the kernel says: no"), None);
    }
}
