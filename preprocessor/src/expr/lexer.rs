//! The lexer: expression source → tokens that borrow their text and carry byte spans.
//!
//! Only ASCII is valid outside of errors. Characters that authors plausibly meant as operators
//! (`·`, `−`, `≤`, `^`, a lone `&`, ...) get a located error whose `help` names the operator
//! to write instead. Integer literals are decimal with optional `_` separators and must fit
//! `i64`. The token count is bounded by [`MAX_TOKENS`].

use super::error::{ExprError, ExprErrorKind};
use super::span::Span;

/// At most this many tokens (not counting the final end-of-input token).
pub const MAX_TOKENS: usize = 1024;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A decimal integer literal that fits `i64` (never negative).
    Int(i64),
    /// A decimal floating-point literal (`0.5`, `1e-5`, `2.5e3`; never negative): its text is
    /// the literal.
    Float,
    /// A string literal in double quotes (an enumeration's value): its text has the quotes.
    Str,
    /// `[A-Za-z_][A-Za-z0-9_]*`, other than `true` / `false`.
    Ident,
    /// `true`
    True,
    /// `false`
    False,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `,`
    Comma,
    /// `.`
    Dot,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    EqEq,
    /// `!=`
    Ne,
    /// `&&`
    AndAnd,
    /// `||`
    OrOr,
    /// `!`
    Bang,
    /// `=` (only valid between a keyword argument's name and its value)
    Assign,
    /// End of input (an empty span at the source length).
    Eof,
    /// Where tokenizing stopped with an error (see [`tokenize_partial`]); always last.
    Error,
}

/// A token: its kind, its text and where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    /// What it is.
    pub kind: TokenKind,
    /// The source text it covers (empty for [`TokenKind::Eof`]).
    pub text: &'a str,
    /// Where it is.
    pub span: Span,
}

impl Token<'_> {
    /// How the token is named in an error message: "`)`", "identifier `x`", "end of input".
    pub fn describe(&self) -> String {
        match self.kind {
            TokenKind::Eof => "end of input".to_owned(),
            TokenKind::Error => "an invalid token".to_owned(),
            TokenKind::Ident => format!("identifier `{}`", self.text),
            TokenKind::Int(_) => format!("integer `{}`", self.text),
            TokenKind::Float => format!("number `{}`", self.text),
            TokenKind::Str => format!("string {}", self.text),
            _ => format!("`{}`", self.text),
        }
    }
}

/// Splits `src` into tokens, ending with one [`TokenKind::Eof`].
#[cfg(test)]
pub fn tokenize(src: &str) -> Result<Vec<Token<'_>>, ExprError> {
    match tokenize_partial(src) {
        (tokens, None) => Ok(tokens),
        (_, Some(err)) => Err(err),
    }
}

/// Splits `src` into tokens up to the first error. The tokens end with [`TokenKind::Eof`],
/// or with a [`TokenKind::Error`] at the error's span when there is one, so that a parser can
/// report an earlier syntax error first (errors come out in source order).
pub fn tokenize_partial(src: &str) -> (Vec<Token<'_>>, Option<ExprError>) {
    let mut lexer = Lexer { src, pos: 0 };
    let mut tokens = Vec::new();
    loop {
        let token = match lexer.next_token() {
            Ok(token) if token.kind == TokenKind::Eof => {
                tokens.push(token);
                return (tokens, None);
            }
            Ok(token) if tokens.len() == MAX_TOKENS => Err(ExprError::new(
                ExprErrorKind::Budget,
                token.span,
                format!("expression has more than {MAX_TOKENS} tokens"),
            )
            .with_help("split the formula or simplify it")),
            other => other,
        };
        match token {
            Ok(token) => tokens.push(token),
            Err(err) => {
                tokens.push(Token {
                    kind: TokenKind::Error,
                    text: err.span.slice(src),
                    span: err.span,
                });
                return (tokens, Some(err));
            }
        }
    }
}

/// A cursor over the source.
struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn peek_byte(&self, ahead: usize) -> Option<u8> {
        self.src.as_bytes().get(self.pos + ahead).copied()
    }

    fn token(&mut self, kind: TokenKind, len: usize) -> Token<'a> {
        let start = self.pos;
        self.pos += len;
        Token {
            kind,
            text: self.src.get(start..self.pos).unwrap_or(""),
            span: Span::new(start, self.pos),
        }
    }

    fn next_token(&mut self) -> Result<Token<'a>, ExprError> {
        while matches!(self.peek_byte(0), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
        let Some(byte) = self.peek_byte(0) else {
            return Ok(Token {
                kind: TokenKind::Eof,
                text: "",
                span: Span::at(self.pos),
            });
        };
        match byte {
            b'0'..=b'9' => self.number(),
            b'"' => self.string(),
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => Ok(self.ident()),
            _ if byte.is_ascii() => self.punct(byte),
            _ => Err(self.non_ascii()),
        }
    }

    fn ident(&mut self) -> Token<'a> {
        let len = self.run_len(|b| b.is_ascii_alphanumeric() || b == b'_');
        let kind = match self.src.get(self.pos..self.pos + len) {
            Some("true") => TokenKind::True,
            Some("false") => TokenKind::False,
            _ => TokenKind::Ident,
        };
        self.token(kind, len)
    }

    /// Length of the run of bytes from `pos` satisfying `pred`.
    fn run_len(&self, pred: impl Fn(u8) -> bool) -> usize {
        self.src
            .as_bytes()
            .get(self.pos..)
            .unwrap_or(&[])
            .iter()
            .take_while(|b| pred(**b))
            .count()
    }

    fn number(&mut self) -> Result<Token<'a>, ExprError> {
        let len = self.run_len(|b| b.is_ascii_digit() || b == b'_');
        let after = self.peek_byte(len);
        if let Some(float_len) = self.float_len(len) {
            let next = self.peek_byte(float_len);
            if next.is_some_and(|b| b.is_ascii_alphabetic() || b == b'_') {
                return Err(self.bad_suffix(float_len));
            }
            return Ok(self.token(TokenKind::Float, float_len));
        }
        if after.is_some_and(|b| b.is_ascii_alphabetic() || b == b'_') {
            return Err(self.bad_suffix(len));
        }
        let token = self.token(TokenKind::Int(0), len);
        let value = parse_decimal(token.text).ok_or_else(|| {
            ExprError::syntax(
                token.span,
                format!("integer literal `{}` does not fit in i64", token.text),
            )
            .with_help(format!("the largest integer is {}", i64::MAX))
        })?;
        Ok(Token {
            kind: TokenKind::Int(value),
            ..token
        })
    }

    /// The length of a floating-point literal whose integer digits are `digits` long: a
    /// fraction (`.5`) or an exponent (`e-5`), or both; `None` for an integer.
    fn float_len(&self, digits: usize) -> Option<usize> {
        let digit_run = |from: usize| {
            (from..)
                .take_while(|i| self.peek_byte(*i).is_some_and(|b| b.is_ascii_digit()))
                .count()
        };
        let mut len = digits;
        if self.peek_byte(len) == Some(b'.') && digit_run(len + 1) > 0 {
            len += 1 + digit_run(len + 1);
        }
        if matches!(self.peek_byte(len), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(self.peek_byte(len + 1), Some(b'+' | b'-')));
            let exponent = digit_run(len + 1 + sign);
            if exponent > 0 {
                len += 1 + sign + exponent;
            }
        }
        (len > digits).then_some(len)
    }

    /// A string literal: `"` up to the next `"` on the same line (no escapes).
    fn string(&mut self) -> Result<Token<'a>, ExprError> {
        let body = (1..)
            .take_while(|i| self.peek_byte(*i).is_some_and(|b| b != b'"' && b != b'\n'))
            .count();
        if self.peek_byte(body + 1) != Some(b'"') {
            let span = Span::new(self.pos, self.pos + body + 1);
            return Err(ExprError::syntax(span, "unterminated string")
                .with_help("close it with `\"`: an enumeration's value, e.g. `mode == \"valid\"`"));
        }
        Ok(self.token(TokenKind::Str, body + 2))
    }

    fn bad_suffix(&self, digits: usize) -> ExprError {
        let start = self.pos;
        let suffix_start = start + digits;
        let suffix_len = self
            .src
            .as_bytes()
            .get(suffix_start..)
            .unwrap_or(&[])
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
        let span = Span::new(start, suffix_start + suffix_len);
        let literal = span.slice(self.src);
        let digits_text = self.src.get(start..suffix_start).unwrap_or("");
        let suffix = self.src.get(suffix_start..span.end).unwrap_or("");
        let err = ExprError::syntax(span, format!("invalid number literal `{literal}`"));
        if digits_text == "0" && matches!(suffix.as_bytes().first(), Some(b'x' | b'o' | b'b')) {
            err.with_help("only decimal integer literals are supported")
        } else {
            err.with_help(format!("to multiply, write `{digits_text} * {suffix}`"))
        }
    }

    fn punct(&mut self, byte: u8) -> Result<Token<'a>, ExprError> {
        let next = self.peek_byte(1);
        let (kind, len) = match (byte, next) {
            (b'<', Some(b'=')) => (TokenKind::Le, 2),
            (b'>', Some(b'=')) => (TokenKind::Ge, 2),
            (b'=', Some(b'=')) => (TokenKind::EqEq, 2),
            (b'!', Some(b'=')) => (TokenKind::Ne, 2),
            (b'&', Some(b'&')) => (TokenKind::AndAnd, 2),
            (b'|', Some(b'|')) => (TokenKind::OrOr, 2),
            (b'(', _) => (TokenKind::LParen, 1),
            (b')', _) => (TokenKind::RParen, 1),
            (b'[', _) => (TokenKind::LBracket, 1),
            (b']', _) => (TokenKind::RBracket, 1),
            (b',', _) => (TokenKind::Comma, 1),
            (b'.', _) => (TokenKind::Dot, 1),
            (b'+', _) => (TokenKind::Plus, 1),
            (b'-', _) => (TokenKind::Minus, 1),
            (b'*', Some(b'*')) => {
                return Err(self.misplaced(2, "there is no power operator; write `a * a`"));
            }
            (b'*', _) => (TokenKind::Star, 1),
            (b'/', _) => (TokenKind::Slash, 1),
            (b'%', _) => (TokenKind::Percent, 1),
            (b'<', Some(b'>')) => return Err(self.misplaced(2, "use `!=` for \"not equal\"")),
            (b'<', _) => (TokenKind::Lt, 1),
            (b'>', _) => (TokenKind::Gt, 1),
            (b'=', Some(b'>')) => {
                return Err(self.misplaced(2, "use `>=` for \"greater or equal\""));
            }
            (b'=', Some(b'<')) => return Err(self.misplaced(2, "use `<=` for \"less or equal\"")),
            (b'=', _) => (TokenKind::Assign, 1),
            (b'!', _) => (TokenKind::Bang, 1),
            _ => return Err(self.misplaced(1, ascii_help(byte))),
        };
        Ok(self.token(kind, len))
    }

    /// An error for `len` bytes of unsupported ASCII punctuation at the cursor.
    fn misplaced(&self, len: usize, help: &str) -> ExprError {
        let span = Span::new(self.pos, self.pos + len);
        let text = span.slice(self.src);
        let shown = if text.chars().all(|c| c.is_ascii_graphic()) {
            format!("`{text}`")
        } else {
            format!("{:?}", text)
        };
        ExprError::syntax(span, format!("unexpected {shown} in expression")).with_help(help)
    }

    fn non_ascii(&self) -> ExprError {
        let c = self
            .src
            .get(self.pos..)
            .and_then(|rest| rest.chars().next())
            .unwrap_or('\u{fffd}');
        let span = Span::new(self.pos, self.pos + c.len_utf8());
        let what = if c.is_whitespace() {
            "non-ASCII whitespace"
        } else {
            "non-ASCII character"
        };
        ExprError::syntax(
            span,
            format!("{what} `{c}` (U+{:04X}) in expression", u32::from(c)),
        )
        .with_help(unicode_help(c))
    }
}

/// Decimal digits with `_` separators → `i64`, or `None` on overflow.
fn parse_decimal(text: &str) -> Option<i64> {
    text.bytes()
        .filter(|b| *b != b'_')
        .try_fold(0i64, |acc, b| {
            acc.checked_mul(10)?
                .checked_add(i64::from(b.checked_sub(b'0')?))
        })
}

fn ascii_help(byte: u8) -> &'static str {
    match byte {
        b'&' => "use `&&` for logical and (there are no bitwise operators)",
        b'|' => "use `||` for logical or (there are no bitwise operators)",
        b'^' => "there is no power operator; write `a * a`",
        b'~' => "there are no bitwise operators",
        b'"' | b'\'' | b'`' => {
            "string literals are not supported; names are written bare: `groups`"
        }
        b'{' | b'}' => "use `(` and `)` for grouping",
        b'?' | b':' => {
            "there is no conditional operator; `min(a, b)` and `max(a, b)` are available"
        }
        b';' => "an expression is a single formula; combine conditions with `&&`",
        b'#' => "comments belong in YAML, after the quoted expression",
        _ if byte.is_ascii_control() => "remove the control character",
        _ => "expressions use integers, names, `+ - * / %`, comparisons, `&& || !`, calls and `[]`",
    }
}

fn unicode_help(c: char) -> String {
    let ascii = match c {
        '·' | '×' | '⋅' | '∙' | '∗' => "*",
        '−' | '–' | '—' | '‐' | '‑' => "-",
        '÷' | '∕' => "/",
        '≤' => "<=",
        '≥' => ">=",
        '≠' => "!=",
        '∧' => "&&",
        '∨' => "||",
        '¬' => "!",
        '（' => "(",
        '）' => ")",
        _ if c.is_whitespace() => return "use a plain ASCII space".to_owned(),
        _ => return "expressions are ASCII only; names are `[A-Za-z_][A-Za-z0-9_]*`".to_owned(),
    };
    format!("use the ASCII operator `{ascii}`")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind> {
        tokenize(src).unwrap().into_iter().map(|t| t.kind).collect()
    }

    fn err(src: &str) -> ExprError {
        tokenize(src).unwrap_err()
    }

    #[test]
    fn operators_and_spans() {
        use TokenKind::*;
        assert_eq!(
            kinds("a<=b>=c==d!=e&&f||!g<h>i=j"),
            [
                Ident, Le, Ident, Ge, Ident, EqEq, Ident, Ne, Ident, AndAnd, Ident, OrOr, Bang,
                Ident, Lt, Ident, Gt, Ident, Assign, Ident, Eof
            ]
        );
        assert_eq!(
            kinds("( ) [ ] , . + - * / %"),
            [
                LParen, RParen, LBracket, RBracket, Comma, Dot, Plus, Minus, Star, Slash, Percent,
                Eof
            ]
        );
        let tokens = tokenize("\tx.dim[1] ").unwrap();
        let spans: Vec<(usize, usize)> =
            tokens.iter().map(|t| (t.span.start, t.span.end)).collect();
        assert_eq!(
            spans,
            [(1, 2), (2, 3), (3, 6), (6, 7), (7, 8), (8, 9), (10, 10)]
        );
        assert_eq!(tokens[2].text, "dim");
    }

    #[test]
    fn keywords_and_identifiers() {
        use TokenKind::*;
        assert_eq!(
            kinds("true false truex _1 conv_transpose2d"),
            [True, False, Ident, Ident, Ident, Eof]
        );
        assert_eq!(kinds(""), [Eof]);
        assert_eq!(tokenize("  ").unwrap()[0].span, Span::at(2));
    }

    #[test]
    fn integers() {
        assert_eq!(
            kinds("0.5 1e-5 2.5E3 \"valid\""),
            vec![
                TokenKind::Float,
                TokenKind::Float,
                TokenKind::Float,
                TokenKind::Str,
                TokenKind::Eof
            ]
        );
        assert_eq!(
            kinds("0 42 1_000_000"),
            [
                TokenKind::Int(0),
                TokenKind::Int(42),
                TokenKind::Int(1_000_000),
                TokenKind::Eof
            ]
        );
        assert_eq!(kinds("9223372036854775807")[0], TokenKind::Int(i64::MAX));
        let e = err("1 + 9223372036854775808");
        assert_eq!((e.span.start, e.span.end), (4, 23));
        assert!(e.message.contains("does not fit in i64"), "{}", e.message);
        let e = err("99999999999999999999999999999999");
        assert_eq!((e.span.start, e.span.end), (0, 32));
    }

    #[test]
    fn bad_literals() {
        let e = err("2x");
        assert_eq!(
            (e.span.start, e.span.end, e.help.as_deref()),
            (0, 2, Some("to multiply, write `2 * x`"))
        );
        let e = err("a + 0x1F");
        assert_eq!((e.span.start, e.span.end), (4, 8));
        assert_eq!(
            e.help.as_deref(),
            Some("only decimal integer literals are supported")
        );
        let e = err("1.5e * a");
        assert_eq!((e.span.start, e.span.end), (0, 4));
        assert!(e.message.contains("invalid number"), "{}", e.message);
        let e = err("mode == \"valid");
        assert_eq!((e.span.start, e.span.end), (8, 14));
        assert!(e.message.contains("unterminated"), "{}", e.message);
    }

    #[test]
    fn ascii_mistakes_are_located_with_help() {
        for (src, start, end, help) in [
            ("a ^ 2", 2, 3, "power"),
            ("a ** 2", 2, 4, "power"),
            ("a & b", 2, 3, "`&&`"),
            ("a | b", 2, 3, "`||`"),
            ("a <> b", 2, 4, "`!=`"),
            ("a => b", 2, 4, "`>=`"),
            ("a =< b", 2, 4, "`<=`"),
            ("a # b", 2, 3, "comments"),
            ("a $ b", 2, 3, "integers"),
            ("a\u{1}", 1, 2, "control"),
        ] {
            let e = err(src);
            assert_eq!((e.span.start, e.span.end), (start, end), "{src}");
            assert_eq!(e.kind, ExprErrorKind::Syntax);
            assert!(
                e.help.as_deref().unwrap().contains(help),
                "{src}: {:?}",
                e.help
            );
        }
    }

    #[test]
    fn unicode_is_rejected_with_char_columns() {
        let src = "2 · x";
        let e = err(src);
        assert_eq!((e.span.start, e.span.end), (2, 4));
        assert_eq!(e.span.char_columns(src), (2, 3));
        assert_eq!(e.message, "non-ASCII character `·` (U+00B7) in expression");
        assert_eq!(e.help.as_deref(), Some("use the ASCII operator `*`"));
        let e = err("H − K");
        assert_eq!((e.span.start, e.span.end), (2, 5));
        assert_eq!(e.help.as_deref(), Some("use the ASCII operator `-`"));
        let e = err("a\u{a0}b");
        assert!(e.message.starts_with("non-ASCII whitespace"));
        let e = err("gröups");
        assert_eq!((e.span.start, e.span.end), (2, 4));
    }

    #[test]
    fn token_budget() {
        let ok = "1 ".repeat(MAX_TOKENS);
        assert_eq!(tokenize(&ok).unwrap().len(), MAX_TOKENS + 1);
        let e = err(&"1 ".repeat(MAX_TOKENS + 1));
        assert_eq!(e.kind, ExprErrorKind::Budget);
        assert_eq!(
            (e.span.start, e.span.end),
            (2 * MAX_TOKENS, 2 * MAX_TOKENS + 1)
        );
    }

    #[test]
    fn describe_tokens() {
        let tokens = tokenize("x 1 )").unwrap();
        let shown: Vec<String> = tokens.iter().map(Token::describe).collect();
        assert_eq!(
            shown,
            ["identifier `x`", "integer `1`", "`)`", "end of input"]
        );
    }
}
