//! Diagnostics as data. Every problem the preprocessor finds becomes a [`Diagnostic`]: a stable
//! code, a message, the author's file with the byte span it is about, further labels, notes and
//! `help:` lines. Nothing here knows about output formats; [`text`] and [`json`] render them.

pub mod codes;
pub mod json;
pub mod sarif;
pub mod text;

pub use codes::Code;

use crate::source::{LineCol, SourceFile};
use std::ops::Range;
use std::sync::Arc;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Information shown beside a contract (for example the importer's refusal to register a
    /// describe-only contract). Never fails the build.
    Note,
    /// Fails the build.
    Error,
}

/// A secondary span with its own message.
#[derive(Debug, Clone)]
pub struct Label {
    pub span: Range<usize>,
    pub message: String,
}

/// One problem (or note) about one place in an author's file.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub source: Arc<SourceFile>,
    /// The byte span the diagnostic is about, in `source.text`.
    pub span: Range<usize>,
    /// What to say under the primary underline.
    pub label: Option<String>,
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Vec<String>,
}

impl Diagnostic {
    /// An error with the given code at a span of an author's file.
    pub fn error(
        code: Code,
        source: &Arc<SourceFile>,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            source: Arc::clone(source),
            span,
            label: None,
            labels: Vec::new(),
            notes: Vec::new(),
            help: Vec::new(),
        }
    }

    /// A note (never fails the build).
    pub fn note(
        code: Code,
        source: &Arc<SourceFile>,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity: Severity::Note,
            ..Diagnostic::error(code, source, span, message)
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    pub fn with_secondary(mut self, span: Range<usize>, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help.push(help.into());
        self
    }

    /// Makes sure the diagnostic says how to go on: a diagnostic without a specific `help:` gets
    /// one pointing at its long explanation.
    pub fn ensure_help(&mut self) {
        if self.help.is_empty() {
            self.help.push(format!(
                "run `mdbook-fkc explain {}` for the rule and how to fix it",
                self.code
            ));
        }
    }

    /// Where the diagnostic starts, as a 1-based line and column.
    pub fn location(&self) -> LineCol {
        self.source.line_col(self.span.start)
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// `file:line:col`, the form editors and terminals turn into links.
    pub fn position(&self) -> String {
        let at = self.location();
        format!("{}:{}:{}", self.source.path, at.line, at.column)
    }
}

/// True when any diagnostic fails the build.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(Diagnostic::is_error)
}

/// "Did you mean …?" for a misspelt name: the closest candidate within a small edit distance
/// (the expression language's suggestion rule, so every diagnostic suggests alike).
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let candidates: Vec<&'a str> = candidates.into_iter().collect();
    // Swapped characters first (`F46` is `F64`, not the closer-looking `F16`): a candidate with
    // the very same characters is the one meant.
    let letters = |word: &str| {
        let mut chars: Vec<char> = word.to_lowercase().chars().collect();
        chars.sort_unstable();
        chars
    };
    let wanted = letters(name);
    if let Some(anagram) = candidates.iter().find(|c| letters(c) == wanted) {
        return Some(anagram);
    }
    crate::expr::suggest(name, &candidates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn did_you_mean_finds_close_names_only() {
        let fields = ["kernel", "op_kind", "registrable", "blurb"];
        assert_eq!(did_you_mean("kernl", fields), Some("kernel"));
        assert_eq!(did_you_mean("registerable", fields), Some("registrable"));
        assert_eq!(did_you_mean("zzz", fields), None);
        let dtypes = ["F32", "F64", "BF16", "F16"];
        assert_eq!(did_you_mean("F46", dtypes), Some("F64"));
        assert_eq!(did_you_mean("BF61", dtypes), Some("BF16"));
        assert_eq!(did_you_mean("F23", dtypes), Some("F32"));
    }
}
