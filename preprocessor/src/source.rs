//! Source files and positions: every diagnostic names the author's file, and a byte offset into
//! that file becomes a 1-based line and a 1-based column counted in characters.

use std::ops::Range;

/// A file the author wrote, as the preprocessor received it.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path shown to the author (relative to the book root when known).
    pub path: String,
    /// The whole text of the file.
    pub text: String,
    line_starts: Vec<usize>,
}

/// A 1-based line and column (the column counts characters, as editors do).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct LineCol {
    pub line: usize,
    pub column: usize,
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        SourceFile {
            path: path.into(),
            text,
            line_starts,
        }
    }

    /// The line and column of a byte offset (clamped to the end of the file and to a character
    /// boundary, so a stale offset can never panic).
    pub fn line_col(&self, offset: usize) -> LineCol {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let line_index = self
            .line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1);
        let line_start = self.line_starts.get(line_index).copied().unwrap_or(0);
        let column = self
            .text
            .get(line_start..offset)
            .map_or(0, |prefix| prefix.chars().count());
        LineCol {
            line: line_index + 1,
            column: column + 1,
        }
    }

    /// The byte offset at which a 1-based line starts, if the file has that line.
    pub fn line_start(&self, line: usize) -> Option<usize> {
        self.line_starts.get(line.checked_sub(1)?).copied()
    }

    /// The text of a byte range, or "" when the range is out of bounds.
    pub fn slice(&self, range: Range<usize>) -> &str {
        self.text.get(range).unwrap_or("")
    }
}

/// The largest character boundary at or below `offset`.
pub fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let file = SourceFile::new("a.md", "ab\n·x\n");
        assert_eq!(file.line_col(0), LineCol { line: 1, column: 1 });
        assert_eq!(file.line_col(3), LineCol { line: 2, column: 1 });
        // '·' is two bytes; 'x' is the second character of line 2.
        assert_eq!(file.line_col(5), LineCol { line: 2, column: 2 });
        // Offsets inside a character or past the end are clamped, never a panic.
        assert_eq!(file.line_col(4), LineCol { line: 2, column: 1 });
        assert_eq!(file.line_col(999), LineCol { line: 3, column: 1 });
    }
}
