//! Located errors of the expression language, and "did you mean" suggestions.
//!
//! An [`ExprError`] is plain data: a byte [`Span`] into the expression source, a small
//! [`ExprErrorKind`] that callers map to stable diagnostic codes, a one-line message and an
//! optional `help`. Rendering with file/line context belongs to the caller's diagnostics layer;
//! [`ExprError::render`] is a minimal plain-text fallback for tests and tools.

use std::fmt;

use super::span::Span;

/// What went wrong, coarse enough to map to a stable diagnostic code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExprErrorKind {
    /// Not a well-formed expression (bad character, missing operand, unclosed bracket, ...).
    Syntax,
    /// A resource budget was exceeded: source too long, too many tokens, nested too deeply.
    Budget,
    /// A name (or a record field) that is not in scope.
    UnknownName,
    /// A call to a function that is neither built in nor supplied by the caller.
    UnknownFunction,
    /// An operation applied to values of the wrong type (`groups + true`).
    Type,
    /// A tuple index outside `0..len` (or an index that cannot be proven in range).
    IndexOutOfRange,
    /// Checked integer arithmetic overflowed `i64`.
    Overflow,
    /// Division or remainder by zero.
    DivisionByZero,
    /// A call with the wrong number or kind (keyword/positional) of arguments.
    Arity,
    /// A caller-supplied function returned an error.
    Function,
}

impl ExprErrorKind {
    /// A short stable name, e.g. for JSON output: `"syntax"`, `"unknown-name"`, ...
    pub const fn name(self) -> &'static str {
        match self {
            ExprErrorKind::Syntax => "syntax",
            ExprErrorKind::Budget => "budget",
            ExprErrorKind::UnknownName => "unknown-name",
            ExprErrorKind::UnknownFunction => "unknown-function",
            ExprErrorKind::Type => "type",
            ExprErrorKind::IndexOutOfRange => "index-out-of-range",
            ExprErrorKind::Overflow => "overflow",
            ExprErrorKind::DivisionByZero => "division-by-zero",
            ExprErrorKind::Arity => "arity",
            ExprErrorKind::Function => "function",
        }
    }
}

impl fmt::Display for ExprErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A located error in an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    /// Byte span into the expression source.
    pub span: Span,
    /// Coarse category.
    pub kind: ExprErrorKind,
    /// One line, lower-case, no trailing period.
    pub message: String,
    /// How to fix it, when we can tell.
    pub help: Option<String>,
}

impl ExprError {
    /// A new error without help.
    pub fn new(kind: ExprErrorKind, span: Span, message: impl Into<String>) -> ExprError {
        ExprError {
            span,
            kind,
            message: message.into(),
            help: None,
        }
    }

    /// Shorthand for a [`ExprErrorKind::Syntax`] error.
    pub fn syntax(span: Span, message: impl Into<String>) -> ExprError {
        ExprError::new(ExprErrorKind::Syntax, span, message)
    }

    /// The same error with `help` attached (replacing any previous help).
    pub fn with_help(mut self, help: impl Into<String>) -> ExprError {
        self.help = Some(help.into());
        self
    }

    /// The same error with `help` attached when there is some.
    pub fn with_help_opt(mut self, help: Option<String>) -> ExprError {
        if help.is_some() {
            self.help = help;
        }
        self
    }

    /// A plain-text rendering with the source line and a caret underline:
    ///
    /// ```text
    /// error: unknown name `grups`
    ///   | groups + grups
    ///   |          ^^^^^
    ///   = help: did you mean `groups`?
    /// ```
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn render(&self, src: &str) -> String {
        let (start, end) = self.span.char_columns(src);
        let shown: String = src
            .chars()
            .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
            .collect();
        let carets = "^".repeat(end.saturating_sub(start).max(1));
        let mut out = format!(
            "error: {}\n  | {shown}\n  | {}{carets}",
            self.message,
            " ".repeat(start)
        );
        if let Some(help) = &self.help {
            out.push_str("\n  = help: ");
            out.push_str(help);
        }
        out
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at bytes {})", self.message, self.span)
    }
}

impl std::error::Error for ExprError {}

/// At most this many candidate names are listed in a help message.
const MAX_LISTED: usize = 12;

/// A help line for an unknown `name`: a close match if any, and the candidates when few.
///
/// `what` names the namespace ("names in scope", "fields of `x`", "functions").
pub(crate) fn unknown_help<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    what: &str,
) -> Option<String> {
    let mut all: Vec<&str> = candidates.into_iter().collect();
    all.sort_unstable();
    all.dedup();
    let suggestion = did_you_mean(name, &all).map(|s| format!("did you mean `{s}`?"));
    let listing = (!all.is_empty() && all.len() <= MAX_LISTED).then(|| {
        let quoted: Vec<String> = all.iter().map(|c| format!("`{c}`")).collect();
        format!("{what}: {}", quoted.join(", "))
    });
    match (suggestion, listing) {
        (Some(s), Some(l)) => Some(format!("{s} ({l})")),
        (s, l) => s.or(l),
    }
}

/// Names longer than this get no suggestion (a typo of a real name is short; this bounds the
/// quadratic distance computation on hostile input).
const MAX_SUGGESTED_LEN: usize = 64;

/// The candidate closest to `name`, if it is close enough to be a plausible typo.
pub(crate) fn did_you_mean<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let length = name.chars().count();
    if length > MAX_SUGGESTED_LEN {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    if let Some(same) = candidates.iter().find(|c| c.to_ascii_lowercase() == lower) {
        return Some(same);
    }
    let limit = (length.max(3) / 3).max(1);
    candidates
        .iter()
        .filter(|c| c.chars().count().abs_diff(length) <= limit)
        .map(|c| (osa_distance(name, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// Optimal-string-alignment (restricted Damerau-Levenshtein) distance over chars.
pub(crate) fn osa_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    // Three rolling rows: two back (for transpositions), previous, current.
    let mut two_back = vec![0usize; width];
    let mut prev: Vec<usize> = (0..width).collect();
    let mut cur = vec![0usize; width];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let mut best = (prev[j + 1] + 1).min(cur[j] + 1).min(prev[j] + cost);
            let transposed = i > 0 && j > 0 && a.get(i - 1) == Some(cb) && b.get(j - 1) == Some(ca);
            if transposed {
                best = best.min(two_back[j - 1] + 1);
            }
            cur[j + 1] = best;
        }
        std::mem::swap(&mut two_back, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(osa_distance("", ""), 0);
        assert_eq!(osa_distance("abc", ""), 3);
        assert_eq!(osa_distance("", "abc"), 3);
        assert_eq!(osa_distance("groups", "grups"), 1);
        assert_eq!(
            osa_distance("groups", "gruops"),
            1,
            "a transposition costs one"
        );
        assert_eq!(osa_distance("stride", "strides"), 1);
        assert_eq!(osa_distance("kitten", "sitting"), 3);
        assert_eq!(osa_distance("ça", "ca"), 1, "counted in chars");
    }

    #[test]
    fn suggestions() {
        let names = ["groups", "stride", "padding", "x", "weight"];
        assert_eq!(did_you_mean("grups", &names), Some("groups"));
        assert_eq!(did_you_mean("Groups", &names), Some("groups"));
        assert_eq!(did_you_mean("wieght", &names), Some("weight"));
        assert_eq!(did_you_mean("y", &names), Some("x"));
        assert_eq!(did_you_mean("bias", &names), None);
        assert_eq!(did_you_mean("anything", &[]), None);
    }

    #[test]
    fn help_lists_short_scopes() {
        let help = unknown_help("grups", ["x", "groups"], "names in scope").unwrap();
        assert_eq!(
            help,
            "did you mean `groups`? (names in scope: `groups`, `x`)"
        );
        let help = unknown_help("zzz", ["x", "groups"], "names in scope").unwrap();
        assert_eq!(help, "names in scope: `groups`, `x`");
        let many: Vec<String> = (0..20).map(|i| format!("n{i}")).collect();
        assert_eq!(
            unknown_help("zzzz", many.iter().map(String::as_str), "names"),
            None
        );
        assert_eq!(unknown_help("zzz", [], "names"), None);
    }

    #[test]
    fn render_underlines_in_chars() {
        let err = ExprError::new(
            ExprErrorKind::UnknownName,
            Span::new(5, 6),
            "unknown name `b`",
        )
        .with_help("did you mean `a`?");
        let text = err.render("a · b");
        assert_eq!(
            text,
            "error: unknown name `b`\n  | a · b\n  |     ^\n  = help: did you mean `a`?"
        );
        assert_eq!(err.to_string(), "unknown name `b` (at bytes 5..6)");
        assert_eq!(
            ExprErrorKind::IndexOutOfRange.to_string(),
            "index-out-of-range"
        );
    }
}
