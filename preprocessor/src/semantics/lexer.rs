//! The lexer of the semantics language: source → tokens with byte spans, with Python's layout
//! rule — a statement ends at the end of its line, a deeper indentation opens a block
//! ([`Tok::Indent`]) and a shallower one closes blocks ([`Tok::Dedent`]); inside brackets lines
//! join. `#` starts a comment. Tabs in indentation are refused (the width of a tab is a matter
//! of taste); the token count is bounded.

use super::error::SemanticsError;
use crate::expr::Span;

/// At most this many tokens.
pub const MAX_TOKENS: usize = 8192;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tok {
    Int(i64),
    Float(f64),
    /// `"name"`: an enumeration parameter's value (its text is between the quotes).
    Str,
    Ident,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Dot,
    DotDot,
    Colon,
    Assign,
    PlusAssign,
    MinusAssign,
    StarAssign,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Lt,
    Le,
    Gt,
    Ge,
    EqEq,
    Ne,
    AndAnd,
    OrOr,
    Bang,
    Newline,
    Indent,
    Dedent,
    Eof,
}

/// A token and where it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

impl Token {
    /// The token's text in `src`.
    pub fn text<'s>(&self, src: &'s str) -> &'s str {
        src.get(self.span.start..self.span.end).unwrap_or("")
    }
}

/// Tokenizes `src`, ending with [`Tok::Eof`] (after a final newline and the closing dedents).
pub fn tokenize(src: &str) -> Result<Vec<Token>, SemanticsError> {
    Lexer {
        src,
        bytes: src.as_bytes(),
        at: 0,
        tokens: Vec::new(),
        indents: vec![0],
        depth: 0,
    }
    .run()
}

struct Lexer<'s> {
    src: &'s str,
    bytes: &'s [u8],
    at: usize,
    tokens: Vec<Token>,
    /// The open blocks' indentations, innermost last.
    indents: Vec<usize>,
    /// Open brackets (lines join inside them).
    depth: usize,
}

impl Lexer<'_> {
    fn run(mut self) -> Result<Vec<Token>, SemanticsError> {
        let mut line_start = true;
        while self.at < self.bytes.len() {
            if line_start && self.depth == 0 {
                if !self.layout()? {
                    // a blank or comment-only line: skip it whole, no newline token
                    self.skip_comment();
                    self.at += 1;
                    continue;
                }
                line_start = false;
            }
            let c = self.bytes[self.at];
            match c {
                b' ' | b'\r' => self.at += 1,
                b'\t' if self.depth > 0 => self.at += 1,
                b'\t' => {
                    return Err(SemanticsError::syntax(
                        Span::new(self.at, self.at + 1),
                        "a tab inside a line of pseudo-code",
                        "use spaces",
                    ));
                }
                b'#' => self.skip_comment(),
                b'\n' => {
                    if self.depth == 0 {
                        self.push(Tok::Newline, self.at, self.at + 1)?;
                        line_start = true;
                    }
                    self.at += 1;
                }
                b'0'..=b'9' => self.number()?,
                b'"' => self.string()?,
                b'a'..=b'z' | b'A'..=b'Z' | b'_' => self.ident()?,
                _ => self.punct()?,
            }
        }
        self.finish()
    }

    /// At the start of a line: measures its indentation, skipping blank and comment lines
    /// (false when the line was skipped), and pushes the indents and dedents it means.
    fn layout(&mut self) -> Result<bool, SemanticsError> {
        let start = self.at;
        while self.at < self.bytes.len() && self.bytes[self.at] == b' ' {
            self.at += 1;
        }
        let width = self.at - start;
        match self.bytes.get(self.at) {
            None | Some(b'\n') | Some(b'\r') | Some(b'#') => return Ok(false),
            Some(b'\t') => {
                return Err(SemanticsError::syntax(
                    Span::new(self.at, self.at + 1),
                    "a tab in the indentation",
                    "indent with spaces",
                ));
            }
            Some(_) => {}
        }
        let current = self.indents.last().copied().unwrap_or(0);
        if width > current {
            self.indents.push(width);
            self.push(Tok::Indent, self.at, self.at)?;
        } else {
            while width < self.indents.last().copied().unwrap_or(0) {
                self.indents.pop();
                self.push(Tok::Dedent, self.at, self.at)?;
            }
            if width != self.indents.last().copied().unwrap_or(0) {
                return Err(SemanticsError::syntax(
                    Span::new(start, self.at),
                    "this line's indentation matches no enclosing block",
                    "indent it as deep as the block it belongs to",
                ));
            }
        }
        Ok(true)
    }

    fn skip_comment(&mut self) {
        while self.at < self.bytes.len() && self.bytes[self.at] != b'\n' {
            self.at += 1;
        }
    }

    fn finish(mut self) -> Result<Vec<Token>, SemanticsError> {
        let end = self.bytes.len();
        if self.depth > 0 {
            return Err(SemanticsError::syntax(
                Span::at(end),
                "a bracket is still open at the end of the pseudo-code",
                "close every `(` and `[`",
            ));
        }
        if !matches!(self.tokens.last().map(|t| t.tok), Some(Tok::Newline) | None) {
            self.push(Tok::Newline, end, end)?;
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.push(Tok::Dedent, end, end)?;
        }
        self.push(Tok::Eof, end, end)?;
        Ok(self.tokens)
    }

    fn push(&mut self, tok: Tok, start: usize, end: usize) -> Result<(), SemanticsError> {
        if self.tokens.len() >= MAX_TOKENS {
            return Err(SemanticsError::budget(
                Span::new(start, end),
                format!("the pseudo-code has more than {MAX_TOKENS} tokens"),
            ));
        }
        self.tokens.push(Token {
            tok,
            span: Span::new(start, end),
        });
        Ok(())
    }

    fn ident(&mut self) -> Result<(), SemanticsError> {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            self.at += 1;
        }
        self.push(Tok::Ident, start, self.at)
    }

    /// An integer (`12`, `1_000`) or a float (`0.5`, `1e-5`, `2.5e3`); `0..n` is an integer
    /// followed by `..`.
    /// `"…"` on one line, no escapes.
    fn string(&mut self) -> Result<(), SemanticsError> {
        let start = self.at;
        let body = self.bytes[start + 1..]
            .iter()
            .take_while(|b| **b != b'"' && **b != b'\n')
            .count();
        let end = start + 1 + body;
        if self.bytes.get(end) != Some(&b'"') {
            return Err(SemanticsError::syntax(
                Span::new(start, end),
                "this string is not closed",
                "an enumeration's value is written in double quotes: `mode == \"valid\"`",
            ));
        }
        self.at = end + 1;
        self.push(Tok::Str, start, self.at)
    }

    fn number(&mut self) -> Result<(), SemanticsError> {
        let start = self.at;
        let digits = |lexer: &mut Self| {
            while lexer
                .bytes
                .get(lexer.at)
                .is_some_and(|b| b.is_ascii_digit() || *b == b'_')
            {
                lexer.at += 1;
            }
        };
        digits(self);
        let mut float = false;
        if self.bytes.get(self.at) == Some(&b'.')
            && self.bytes.get(self.at + 1).is_some_and(u8::is_ascii_digit)
        {
            float = true;
            self.at += 1;
            digits(self);
        }
        if matches!(self.bytes.get(self.at), Some(b'e') | Some(b'E')) {
            let sign = usize::from(matches!(self.bytes.get(self.at + 1), Some(b'+' | b'-')));
            if self
                .bytes
                .get(self.at + 1 + sign)
                .is_some_and(u8::is_ascii_digit)
            {
                float = true;
                self.at += 1 + sign;
                digits(self);
            }
        }
        let text: String = self.src[start..self.at]
            .chars()
            .filter(|c| *c != '_')
            .collect();
        let span = Span::new(start, self.at);
        let tok = if float {
            match text.parse::<f64>() {
                Ok(v) if v.is_finite() => Tok::Float(v),
                _ => {
                    return Err(SemanticsError::syntax(
                        span,
                        "this number is too large for f64",
                        "write `inf` for infinity",
                    ));
                }
            }
        } else {
            match text.parse::<i64>() {
                Ok(v) => Tok::Int(v),
                Err(_) => {
                    return Err(SemanticsError::syntax(
                        span,
                        "this integer does not fit in 64 bits",
                        "integers range up to 9223372036854775807",
                    ));
                }
            }
        };
        self.push(tok, start, self.at)
    }

    fn punct(&mut self) -> Result<(), SemanticsError> {
        let start = self.at;
        let two = self.src.get(start..start + 2).unwrap_or("");
        let (tok, len) = match two {
            ".." => (Tok::DotDot, 2),
            "+=" => (Tok::PlusAssign, 2),
            "-=" => (Tok::MinusAssign, 2),
            "*=" => (Tok::StarAssign, 2),
            "<=" => (Tok::Le, 2),
            ">=" => (Tok::Ge, 2),
            "==" => (Tok::EqEq, 2),
            "!=" => (Tok::Ne, 2),
            "&&" => (Tok::AndAnd, 2),
            "||" => (Tok::OrOr, 2),
            _ => match self.bytes[start] {
                b'(' => (Tok::LParen, 1),
                b')' => (Tok::RParen, 1),
                b'[' => (Tok::LBracket, 1),
                b']' => (Tok::RBracket, 1),
                b',' => (Tok::Comma, 1),
                b'.' => (Tok::Dot, 1),
                b':' => (Tok::Colon, 1),
                b'=' => (Tok::Assign, 1),
                b'+' => (Tok::Plus, 1),
                b'-' => (Tok::Minus, 1),
                b'*' => (Tok::Star, 1),
                b'/' => (Tok::Slash, 1),
                b'%' => (Tok::Percent, 1),
                b'<' => (Tok::Lt, 1),
                b'>' => (Tok::Gt, 1),
                b'!' => (Tok::Bang, 1),
                _ => return Err(self.bad_character(start)),
            },
        };
        match tok {
            Tok::LParen | Tok::LBracket => self.depth += 1,
            Tok::RParen | Tok::RBracket => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        self.at += len;
        self.push(tok, start, self.at)
    }

    fn bad_character(&self, at: usize) -> SemanticsError {
        let c = self.src[at..].chars().next().unwrap_or('?');
        let end = at + c.len_utf8();
        let help = match c {
            '·' | '×' => "write `*` for a product",
            '−' => "write `-` for a minus (this is a Unicode minus sign)",
            '≤' => "write `<=`",
            '≥' => "write `>=`",
            '≠' => "write `!=`",
            '^' => "write `*` repeatedly or a function; there is no power operator",
            '&' => "write `&&` for \"and\"",
            '|' => "write `||` for \"or\"",
            _ => "the pseudo-code is ASCII: names, numbers, operators and brackets",
        };
        SemanticsError::syntax(
            Span::new(at, end),
            format!("unexpected character `{c}`"),
            help,
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        tokenize(src).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn blocks_open_and_close_with_indentation() {
        use Tok::*;
        assert_eq!(
            kinds("for i in 0..n:\n  a += 1\nb = 2.5e1\n"),
            vec![
                Ident,
                Ident,
                Ident,
                Int(0),
                DotDot,
                Ident,
                Colon,
                Newline,
                Indent,
                Ident,
                PlusAssign,
                Int(1),
                Newline,
                Dedent,
                Ident,
                Assign,
                Float(25.0),
                Newline,
                Eof
            ]
        );
    }

    #[test]
    fn comments_blank_lines_and_brackets_do_not_break_blocks() {
        use Tok::*;
        let src = "if a:\n\n  # a comment\n  f(1,\n 2)  # trailing\n";
        assert_eq!(
            kinds(src),
            vec![
                Ident,
                Ident,
                Colon,
                Newline,
                Indent,
                Ident,
                LParen,
                Int(1),
                Comma,
                Int(2),
                RParen,
                Newline,
                Dedent,
                Eof
            ]
        );
    }

    #[test]
    fn bad_layout_and_characters_are_located() {
        let e = tokenize("if a:\n    b = 1\n  c = 2\n").unwrap_err();
        assert_eq!((e.span.start, e.span.end), (16, 18));
        let e = tokenize("a = b · c\n").unwrap_err();
        assert!(e.help.unwrap().contains("`*`"));
        assert!(tokenize("\ta = 1\n").is_err());
        assert!(tokenize("a = (1\n").is_err());
        assert!(tokenize("a = 99999999999999999999\n").is_err());
        assert!(tokenize(&"a ".repeat(MAX_TOKENS + 1)).is_err());
    }
}
