//! The Pratt parser: tokens → [`Expr`], with a byte span on every node.
//!
//! Structured after matklad's minipratt: one loop over binding powers ([`BinOp::binding_power`]),
//! with `.field`, `[index]` and `(args)` as postfix operators that bind tighter than anything.
//! Comparisons do not chain (`a < b < c` is an error with a help). Every recursion into a
//! nested construct (`(`, `[`, call arguments, prefix operator) first checks [`MAX_DEPTH`], so
//! hostile nesting fails fast with a located error instead of overflowing the stack; the tree
//! is then bounded by [`MAX_HEIGHT`] so that recursive passes over it stay shallow too.

use super::ast::{Arg, BinOp, Expr, ExprKind, PREFIX_LEVEL, UnOp};
use super::error::{ExprError, ExprErrorKind};
use super::lexer::{Token, TokenKind, tokenize_partial};
use super::span::{Span, floor_char_boundary};

/// Longest accepted source, in bytes.
pub const MAX_SOURCE_LEN: usize = 16 * 1024;
/// Deepest accepted nesting of parentheses, brackets, calls and prefix operators.
pub const MAX_DEPTH: usize = 64;
/// Deepest accepted syntax tree (long operator chains nest too: `a + b + c` is two levels).
pub const MAX_HEIGHT: usize = 256;

/// Binding power of `.`, `[` and `(` used as postfix operators: tighter than everything.
const POSTFIX_BP: u8 = 2 * PREFIX_LEVEL + 2;
/// Binding power a prefix operator parses its operand with.
const PREFIX_BP: u8 = 2 * PREFIX_LEVEL;

/// Parses one expression; the whole of `src` must be consumed.
pub fn parse(src: &str) -> Result<Expr, ExprError> {
    if src.len() > MAX_SOURCE_LEN {
        let start = floor_char_boundary(src, MAX_SOURCE_LEN);
        return Err(ExprError::new(
            ExprErrorKind::Budget,
            Span::new(start, src.len()),
            format!(
                "expression is {} bytes long; the limit is {MAX_SOURCE_LEN}",
                src.len()
            ),
        )
        .with_help("split the formula or simplify it"));
    }
    let (tokens, lex_error) = tokenize_partial(src);
    let eof = tokens.last().copied().unwrap_or(Token {
        kind: TokenKind::Eof,
        text: "",
        span: Span::at(src.len()),
    });
    let mut parser = Parser {
        tokens,
        eof,
        lex_error,
        last_end: 0,
        pos: 0,
        depth: 0,
    };
    let expr = parser.expr_bp(0)?;
    let next = parser.peek();
    if next.kind != TokenKind::Eof {
        return Err(parser.unexpected(
            next,
            "an operator or the end of the expression",
            Some(&expr),
        ));
    }
    if let Some(span) = expr.too_deep(MAX_HEIGHT) {
        return Err(ExprError::new(
            ExprErrorKind::Budget,
            span,
            format!("expression nests more than {MAX_HEIGHT} operations deep"),
        )
        .with_help("split the formula or simplify it"));
    }
    Ok(expr)
}

struct Parser<'a> {
    tokens: Vec<Token<'a>>,
    /// The last token: end of input, or where the lexer stopped.
    eof: Token<'a>,
    /// The lexer's error, reported when the parser reaches the [`TokenKind::Error`] token.
    lex_error: Option<ExprError>,
    pos: usize,
    /// End of the last consumed token: the end of any node being finished.
    last_end: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Token<'a> {
        self.tokens.get(self.pos).copied().unwrap_or(self.eof)
    }

    fn peek_at(&self, ahead: usize) -> Token<'a> {
        self.tokens
            .get(self.pos + ahead)
            .copied()
            .unwrap_or(self.eof)
    }

    fn bump(&mut self) -> Token<'a> {
        let token = self.peek();
        self.pos = (self.pos + 1).min(self.tokens.len());
        self.last_end = token.span.end;
        token
    }

    /// Runs `inner` one nesting level deeper, failing at `opener` past [`MAX_DEPTH`].
    fn nested<T>(
        &mut self,
        opener: Span,
        inner: impl FnOnce(&mut Self) -> Result<T, ExprError>,
    ) -> Result<T, ExprError> {
        if self.depth >= MAX_DEPTH {
            return Err(ExprError::new(
                ExprErrorKind::Budget,
                opener,
                format!("expression is nested more than {MAX_DEPTH} levels deep"),
            )
            .with_help("remove redundant parentheses or simplify the formula"));
        }
        self.depth += 1;
        let result = inner(self);
        self.depth -= 1;
        result
    }

    /// The node from `start` (which includes any grouping parentheses) to the last token.
    fn node(&self, kind: ExprKind, start: usize) -> Expr {
        Expr::new(kind, Span::new(start, self.last_end))
    }

    fn expr_bp(&mut self, min_bp: u8) -> Result<Expr, ExprError> {
        let start = self.peek().span.start;
        let mut lhs = self.prefix()?;
        let mut last_comparison: Option<BinOp> = None;
        loop {
            let token = self.peek();
            if POSTFIX_BP >= min_bp
                && matches!(
                    token.kind,
                    TokenKind::Dot | TokenKind::LBracket | TokenKind::LParen
                )
            {
                lhs = self.postfix(lhs, start)?;
                continue;
            }
            let Some(op) = infix_op(token.kind) else {
                break;
            };
            let (l_bp, r_bp) = op.binding_power();
            if l_bp < min_bp {
                break;
            }
            if let Some(prev) = last_comparison.filter(|prev| prev.level() == op.level()) {
                return Err(chained_comparison(prev, op, token.span));
            }
            self.bump();
            let rhs = self.expr_bp(r_bp)?;
            let kind = ExprKind::Binary {
                op,
                op_span: token.span,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
            lhs = self.node(kind, start);
            last_comparison = op.is_comparison().then_some(op);
        }
        Ok(lhs)
    }

    fn prefix(&mut self) -> Result<Expr, ExprError> {
        let token = self.peek();
        let kind = match token.kind {
            TokenKind::Int(v) => ExprKind::Int(v),
            TokenKind::Float => ExprKind::Float(parse_float(token)?.to_bits()),
            TokenKind::Str => ExprKind::Text(token.text.trim_matches('"').to_owned()),
            TokenKind::True => ExprKind::Bool(true),
            TokenKind::False => ExprKind::Bool(false),
            TokenKind::Ident => return self.name(token),
            TokenKind::LParen => return self.nested(token.span, Self::group_or_tuple),
            TokenKind::Minus => return self.nested(token.span, |p| p.unary(UnOp::Neg)),
            TokenKind::Bang => return self.nested(token.span, |p| p.unary(UnOp::Not)),
            _ => return Err(self.expected_expression(token)),
        };
        self.bump();
        Ok(Expr::new(kind, token.span))
    }

    fn name(&mut self, token: Token<'a>) -> Result<Expr, ExprError> {
        let next = self.peek_at(1);
        if token.text == "not" && starts_expression(next.kind) {
            return Err(ExprError::syntax(token.span, "`not` is not an operator")
                .with_help("use `!` for logical not"));
        }
        self.bump();
        Ok(Expr::new(ExprKind::Name(token.text.to_owned()), token.span))
    }

    fn unary(&mut self, op: UnOp) -> Result<Expr, ExprError> {
        let op_token = self.bump();
        let operand = Box::new(self.expr_bp(PREFIX_BP)?);
        Ok(self.node(ExprKind::Unary { op, operand }, op_token.span.start))
    }

    /// `()`, `(e)` (grouping), `(e,)`, `(e, f, ...)`; the `(` is the current token.
    fn group_or_tuple(&mut self) -> Result<Expr, ExprError> {
        let open = self.bump();
        if self.peek().kind == TokenKind::RParen {
            let close = self.bump();
            return Ok(Expr::new(
                ExprKind::Tuple(Vec::new()),
                open.span.to(close.span),
            ));
        }
        let first = self.expr_bp(0)?;
        if self.peek().kind == TokenKind::RParen {
            self.bump();
            return Ok(first);
        }
        let mut items = vec![first];
        loop {
            self.expect_comma_or_close(open, items.last())?;
            match self.peek().kind {
                TokenKind::RParen => {
                    let close = self.bump();
                    return Ok(Expr::new(ExprKind::Tuple(items), open.span.to(close.span)));
                }
                TokenKind::Eof => return Err(unclosed(open)),
                _ => items.push(self.expr_bp(0)?),
            }
        }
    }

    /// After a list item: consumes a `,`, or leaves a `)` in place; anything else is an error.
    fn expect_comma_or_close(
        &mut self,
        open: Token<'a>,
        last: Option<&Expr>,
    ) -> Result<(), ExprError> {
        let token = self.peek();
        match token.kind {
            TokenKind::Comma => {
                self.bump();
                Ok(())
            }
            TokenKind::RParen => Ok(()),
            TokenKind::Eof => Err(unclosed(open)),
            _ => Err(self.unexpected(token, "`,` or `)`", last)),
        }
    }

    /// `.field`, `[index]` or `(args)` after `base`, which started at byte `start`.
    fn postfix(&mut self, base: Expr, start: usize) -> Result<Expr, ExprError> {
        let token = self.peek();
        match token.kind {
            TokenKind::Dot => self.member(base, start),
            TokenKind::LBracket => self.nested(token.span, |p| p.index(base, start)),
            _ => self.nested(token.span, |p| p.call(base, start)),
        }
    }

    fn member(&mut self, base: Expr, start: usize) -> Result<Expr, ExprError> {
        self.bump();
        let field = self.peek();
        if field.kind != TokenKind::Ident {
            if let Some(err) = self.lexer_error(field) {
                return Err(err);
            }
            let err = ExprError::syntax(
                field.span,
                format!(
                    "expected a field name after `.`, found {}",
                    field.describe()
                ),
            );
            let help = matches!(field.kind, TokenKind::Int(_))
                .then(|| format!("index tuples with brackets: `[{}]`", field.text));
            return Err(err.with_help_opt(help));
        }
        self.bump();
        let kind = ExprKind::Member {
            base: Box::new(base),
            field: field.text.to_owned(),
            field_span: field.span,
        };
        Ok(self.node(kind, start))
    }

    fn index(&mut self, base: Expr, start: usize) -> Result<Expr, ExprError> {
        let open = self.bump();
        let index = self.expr_bp(0)?;
        let close = self.peek();
        match close.kind {
            TokenKind::RBracket => {
                self.bump();
            }
            TokenKind::Eof => return Err(unclosed(open)),
            _ => return Err(self.unexpected(close, "`]`", Some(&index))),
        }
        let kind = ExprKind::Index {
            base: Box::new(base),
            index: Box::new(index),
        };
        Ok(self.node(kind, start))
    }

    fn call(&mut self, callee: Expr, start: usize) -> Result<Expr, ExprError> {
        let open = self.peek();
        let ExprKind::Name(name) = callee.kind else {
            return Err(ExprError::syntax(
                open.span,
                format!("`{callee}` is not a function and cannot be called"),
            )
            .with_help("only named functions can be called, e.g. `min(a, b)`"));
        };
        self.bump();
        let mut args: Vec<Arg> = Vec::new();
        while self.peek().kind != TokenKind::RParen {
            if self.peek().kind == TokenKind::Eof {
                return Err(unclosed(open));
            }
            let arg = self.argument(&args)?;
            args.push(arg);
            self.expect_comma_or_close(open, args.last().map(|a| &a.value))?;
        }
        self.bump();
        let kind = ExprKind::Call {
            name,
            name_span: callee.span,
            args,
        };
        Ok(self.node(kind, start))
    }

    /// One argument: `name = expr` (keyword) or `expr` (positional, only before keywords).
    fn argument(&mut self, previous: &[Arg]) -> Result<Arg, ExprError> {
        let token = self.peek();
        if token.kind == TokenKind::Ident && self.peek_at(1).kind == TokenKind::Assign {
            if let Some((_, first)) = previous
                .iter()
                .filter_map(|a| a.name.as_ref())
                .find(|(n, _)| n == token.text)
            {
                return Err(ExprError::syntax(
                    token.span,
                    format!("keyword argument `{}` is given twice", token.text),
                )
                .with_help(format!("the first `{}` is at bytes {first}", token.text)));
            }
            self.bump();
            self.bump();
            let value = self.expr_bp(0)?;
            return Ok(Arg {
                name: Some((token.text.to_owned(), token.span)),
                value,
            });
        }
        let value = self.expr_bp(0)?;
        if previous.iter().any(|a| a.name.is_some()) {
            return Err(ExprError::syntax(
                value.span,
                "positional argument after keyword arguments",
            )
            .with_help("put positional arguments first"));
        }
        Ok(Arg { name: None, value })
    }

    /// The lexer's error, if `token` is where the lexer stopped.
    fn lexer_error(&self, token: Token<'a>) -> Option<ExprError> {
        if token.kind == TokenKind::Error {
            self.lex_error.clone()
        } else {
            None
        }
    }

    fn expected_expression(&self, token: Token<'a>) -> ExprError {
        if let Some(err) = self.lexer_error(token) {
            return err;
        }
        let err = match token.kind {
            TokenKind::Eof => return ExprError::syntax(token.span, "expected an expression"),
            _ => ExprError::syntax(
                token.span,
                format!("expected an expression, found {}", token.describe()),
            ),
        };
        let help = match token.kind {
            TokenKind::Plus => "unary `+` is not supported; remove it",
            TokenKind::Assign => "use `==` to compare",
            TokenKind::RParen | TokenKind::RBracket | TokenKind::Comma => {
                "an operand is missing here"
            }
            _ => return err,
        };
        err.with_help(help)
    }

    /// An error for `token` where `expected` should be, after the expression `after`.
    fn unexpected(&self, token: Token<'a>, expected: &str, after: Option<&Expr>) -> ExprError {
        if let Some(err) = self.lexer_error(token) {
            return err;
        }
        let err = ExprError::syntax(
            token.span,
            format!("expected {expected}, found {}", token.describe()),
        );
        let help = match token.kind {
            TokenKind::Assign => Some(assign_help(after)),
            TokenKind::Ident if token.text == "and" => Some("use `&&` for logical and".to_owned()),
            TokenKind::Ident if token.text == "or" => Some("use `||` for logical or".to_owned()),
            TokenKind::RParen => Some("this `)` has no matching `(`".to_owned()),
            TokenKind::RBracket => Some("this `]` has no matching `[`".to_owned()),
            _ if starts_expression(token.kind) => {
                Some("an operator is missing before this".to_owned())
            }
            _ => None,
        };
        err.with_help_opt(help)
    }
}

fn assign_help(after: Option<&Expr>) -> String {
    match after.map(|e| &e.kind) {
        Some(ExprKind::Name(n)) if n == "same_as" => {
            "`same_as=EXPR` is a shape_constraint shorthand, not an expression".to_owned()
        }
        _ => "use `==` to compare".to_owned(),
    }
}

fn unclosed(open: Token<'_>) -> ExprError {
    let close = if open.kind == TokenKind::LBracket {
        "]"
    } else {
        ")"
    };
    ExprError::syntax(open.span, format!("unclosed `{}`", open.text))
        .with_help(format!("add a matching `{close}`"))
}

fn chained_comparison(prev: BinOp, op: BinOp, span: Span) -> ExprError {
    ExprError::syntax(
        span,
        format!("comparison operators cannot be chained: `a {prev} b {op} c`"),
    )
    .with_help(format!(
        "write `a {prev} b && b {op} c`, or add parentheses"
    ))
}

/// A floating-point literal's value (finite: an overflowing one is an error).
fn parse_float(token: Token<'_>) -> Result<f64, ExprError> {
    match token.text.replace('_', "").parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        _ => Err(ExprError::syntax(
            token.span,
            format!("number `{}` is not a finite f64", token.text),
        )
        .with_help("write `inf` for infinity")),
    }
}

fn starts_expression(kind: TokenKind) -> bool {
    matches!(
        kind,
        TokenKind::Int(_)
            | TokenKind::Float
            | TokenKind::Str
            | TokenKind::Ident
            | TokenKind::True
            | TokenKind::False
            | TokenKind::LParen
            | TokenKind::Bang
    )
}

fn infix_op(kind: TokenKind) -> Option<BinOp> {
    Some(match kind {
        TokenKind::Plus => BinOp::Add,
        TokenKind::Minus => BinOp::Sub,
        TokenKind::Star => BinOp::Mul,
        TokenKind::Slash => BinOp::Div,
        TokenKind::Percent => BinOp::Rem,
        TokenKind::Lt => BinOp::Lt,
        TokenKind::Le => BinOp::Le,
        TokenKind::Gt => BinOp::Gt,
        TokenKind::Ge => BinOp::Ge,
        TokenKind::EqEq => BinOp::Eq,
        TokenKind::Ne => BinOp::Ne,
        TokenKind::AndAnd => BinOp::And,
        TokenKind::OrOr => BinOp::Or,
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
