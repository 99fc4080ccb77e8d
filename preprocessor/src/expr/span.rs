//! Byte spans into an expression's source text.
//!
//! Every token, AST node and error carries a [`Span`]: a half-open range of **byte** offsets
//! into the expression source (the string handed to [`parse`](super::parse)), always on
//! `char` boundaries. Users read columns in characters, so [`Span::char_columns`] converts.

use std::fmt;

/// A half-open byte range `start..end` into an expression's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `start..end`.
    pub const fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The empty span at `offset` (used for "end of input").
    pub const fn at(offset: usize) -> Span {
        Span {
            start: offset,
            end: offset,
        }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// Length in bytes.
    pub const fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// Whether the span covers no bytes.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The covered text, or `""` when the span does not fit `src` (never panics).
    pub fn slice<'a>(&self, src: &'a str) -> &'a str {
        src.get(self.start..self.end).unwrap_or("")
    }

    /// The span as 0-based, half-open **character** offsets `(start, end)` into `src`.
    ///
    /// Add these to the (character) column where the expression starts in its file to get the
    /// columns to show a user. Offsets past the end of `src` are clamped to its char count.
    pub fn char_columns(&self, src: &str) -> (usize, usize) {
        (char_offset(src, self.start), char_offset(src, self.end))
    }
}

/// Number of chars that start strictly before byte `offset`.
fn char_offset(src: &str, offset: usize) -> usize {
    src.char_indices().take_while(|(i, _)| *i < offset).count()
}

/// The largest char boundary of `src` at or below `offset`.
pub(crate) fn floor_char_boundary(src: &str, offset: usize) -> usize {
    let mut at = offset.min(src.len());
    while at > 0 && !src.is_char_boundary(at) {
        at -= 1;
    }
    at
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

impl From<std::ops::Range<usize>> for Span {
    fn from(range: std::ops::Range<usize>) -> Span {
        Span::new(range.start, range.end)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn join_and_len() {
        let a = Span::new(2, 4);
        let b = Span::new(7, 9);
        assert_eq!(a.to(b), Span::new(2, 9));
        assert_eq!(b.to(a), Span::new(2, 9));
        assert_eq!(a.len(), 2);
        assert!(Span::at(3).is_empty());
        assert_eq!(Span::from(1..5), Span::new(1, 5));
        assert_eq!(Span::new(1, 5).to_string(), "1..5");
    }

    #[test]
    fn slice_is_total() {
        let src = "a · b";
        assert_eq!(Span::new(2, 4).slice(src), "·");
        assert_eq!(Span::new(2, 3).slice(src), "", "not a char boundary");
        assert_eq!(Span::new(4, 99).slice(src), "");
    }

    #[test]
    fn char_columns_count_chars_not_bytes() {
        let src = "a · b";
        // `·` is two bytes (2..4) but one char (2..3); `b` is byte 5, char 4.
        assert_eq!(Span::new(2, 4).char_columns(src), (2, 3));
        assert_eq!(Span::new(5, 6).char_columns(src), (4, 5));
        assert_eq!(Span::new(0, 0).char_columns(""), (0, 0));
        assert_eq!(Span::new(50, 60).char_columns(src), (5, 5));
    }

    #[test]
    fn floor_boundary() {
        let src = "a·b";
        assert_eq!(floor_char_boundary(src, 2), 1);
        assert_eq!(floor_char_boundary(src, 3), 3);
        assert_eq!(floor_char_boundary(src, 100), src.len());
    }
}
