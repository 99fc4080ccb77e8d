//! Located errors of the semantics language: a byte span into the pseudo-code, a kind that maps
//! to a stable diagnostic code, a message and a help line. Rendering with the author's file and
//! line belongs to the contract reader, which knows where the pseudo-code sits in the file.

use crate::expr::Span;

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SemanticsErrorKind {
    /// Not well-formed pseudo-code.
    Syntax,
    /// Too long, too many tokens, nested too deeply, or too much work on one sample.
    Budget,
    /// A name that is not bound (a tensor, a parameter, a loop variable, a local).
    UnknownName,
    /// An operation on the wrong kind of value (an index where a number is needed, a value
    /// where an index is needed, a wrong number of indices or arguments).
    Type,
    /// On a sample: an index outside its tensor, an element read before it is written, an
    /// output element never written, an empty or reversed range, arithmetic on indices that
    /// overflows or divides by zero.
    Run,
}

/// An error in a `semantics` program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemanticsError {
    pub kind: SemanticsErrorKind,
    pub span: Span,
    pub message: String,
    pub help: Option<String>,
}

impl SemanticsError {
    pub fn new(
        kind: SemanticsErrorKind,
        span: Span,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> SemanticsError {
        SemanticsError {
            kind,
            span,
            message: message.into(),
            help: Some(help.into()),
        }
    }

    pub fn syntax(span: Span, message: impl Into<String>, help: impl Into<String>) -> Self {
        SemanticsError::new(SemanticsErrorKind::Syntax, span, message, help)
    }

    pub fn budget(span: Span, message: impl Into<String>) -> Self {
        SemanticsError::new(
            SemanticsErrorKind::Budget,
            span,
            message,
            "the pseudo-code states the naive loop nest in a few lines; shorten it",
        )
    }

    pub fn type_error(span: Span, message: impl Into<String>, help: impl Into<String>) -> Self {
        SemanticsError::new(SemanticsErrorKind::Type, span, message, help)
    }

    pub fn run(span: Span, message: impl Into<String>, help: impl Into<String>) -> Self {
        SemanticsError::new(SemanticsErrorKind::Run, span, message, help)
    }
}
