//! The parser: tokens → [`Program`], recursive descent for statements and precedence climbing
//! for expressions (C's precedence; comparisons chain as in Python, `0 <= ih < H`). Nesting is
//! bounded by [`MAX_DEPTH`] before recursing, so no input can exhaust the stack.

use super::ast::*;
use super::error::SemanticsError;
use super::lexer::{Tok, Token, tokenize};
use crate::expr::Span;

/// The longest pseudo-code accepted, in bytes.
pub const MAX_SOURCE_LEN: usize = 16 * 1024;
/// The deepest nesting of blocks and brackets.
pub const MAX_DEPTH: usize = 48;

/// Parses a `semantics` program.
pub fn parse(src: &str) -> Result<Program, SemanticsError> {
    if src.len() > MAX_SOURCE_LEN {
        return Err(SemanticsError::budget(
            Span::new(0, src.len().min(1)),
            format!("the pseudo-code is longer than {MAX_SOURCE_LEN} bytes"),
        ));
    }
    let tokens = tokenize(src)?;
    let mut parser = Parser {
        src,
        tokens,
        at: 0,
        depth: 0,
    };
    let mut body = Vec::new();
    while parser.peek().tok != Tok::Eof {
        if parser.eat(Tok::Newline) {
            continue;
        }
        body.push(parser.statement()?);
    }
    if body.is_empty() {
        return Err(SemanticsError::syntax(
            Span::at(0),
            "the semantics are empty",
            "write the naive loop nest that computes every output element",
        ));
    }
    Ok(Program { body })
}

struct Parser<'s> {
    src: &'s str,
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
}

/// Binding powers of the binary operators, loosest first.
fn binary_op(tok: Tok) -> Option<(BinOp, u8)> {
    Some(match tok {
        Tok::OrOr => (BinOp::Or, 1),
        Tok::AndAnd => (BinOp::And, 2),
        Tok::Plus => (BinOp::Add, 4),
        Tok::Minus => (BinOp::Sub, 4),
        Tok::Star => (BinOp::Mul, 5),
        Tok::Slash => (BinOp::Div, 5),
        Tok::Percent => (BinOp::Rem, 5),
        _ => return None,
    })
}

/// Comparisons bind between `&&` and `+`.
const COMPARE_POWER: u8 = 3;

fn compare_op(tok: Tok) -> Option<CmpOp> {
    Some(match tok {
        Tok::Lt => CmpOp::Lt,
        Tok::Le => CmpOp::Le,
        Tok::Gt => CmpOp::Gt,
        Tok::Ge => CmpOp::Ge,
        Tok::EqEq => CmpOp::Eq,
        Tok::Ne => CmpOp::Ne,
        _ => return None,
    })
}

impl Parser<'_> {
    fn peek(&self) -> Token {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> Token {
        let last = self.tokens.len().saturating_sub(1);
        self.tokens[(self.at + ahead).min(last)]
    }

    fn bump(&mut self) -> Token {
        let token = self.peek();
        if self.at < self.tokens.len() {
            self.at += 1;
        }
        token
    }

    fn eat(&mut self, tok: Tok) -> bool {
        if self.peek().tok == tok {
            self.bump();
            true
        } else {
            false
        }
    }

    fn text(&self, token: Token) -> &str {
        token.text(self.src)
    }

    fn is_keyword(&self, token: Token, word: &str) -> bool {
        token.tok == Tok::Ident && self.text(token) == word
    }

    fn expect(&mut self, tok: Tok, what: &str) -> Result<Token, SemanticsError> {
        let token = self.peek();
        if token.tok == tok {
            return Ok(self.bump());
        }
        Err(self.unexpected(token, what))
    }

    fn unexpected(&self, token: Token, what: &str) -> SemanticsError {
        let found = match token.tok {
            Tok::Newline => "the end of the line".to_owned(),
            Tok::Eof => "the end of the pseudo-code".to_owned(),
            Tok::Indent => "an indented line".to_owned(),
            Tok::Dedent => "the end of the block".to_owned(),
            _ => format!("`{}`", self.text(token)),
        };
        SemanticsError::syntax(
            token.span,
            format!("expected {what}, found {found}"),
            "statements are `for … in …:`, `if …:`, `elif …:`, `else:` and assignments (`=`, `+=`, `-=`, `*=`), one per line",
        )
    }

    /// Runs `f` one level deeper, refusing to go past [`MAX_DEPTH`].
    fn nested<T>(
        &mut self,
        span: Span,
        f: impl FnOnce(&mut Self) -> Result<T, SemanticsError>,
    ) -> Result<T, SemanticsError> {
        if self.depth >= MAX_DEPTH {
            return Err(SemanticsError::budget(
                span,
                format!("the pseudo-code nests more than {MAX_DEPTH} levels deep"),
            ));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn statement(&mut self) -> Result<Stmt, SemanticsError> {
        let first = self.peek();
        if self.is_keyword(first, "for") {
            return self.nested(first.span, Self::for_statement);
        }
        if self.is_keyword(first, "if") {
            return self.nested(first.span, Self::if_statement);
        }
        if ["elif", "else"]
            .iter()
            .any(|word| self.is_keyword(first, word))
        {
            return Err(SemanticsError::syntax(
                first.span,
                format!("`{}` without an `if` before it", self.text(first)),
                "`elif` and `else` follow an `if` block at the same indentation",
            ));
        }
        let statement = self.assignment()?;
        self.end_of_statement()?;
        Ok(statement)
    }

    fn end_of_statement(&mut self) -> Result<(), SemanticsError> {
        match self.peek().tok {
            Tok::Newline => {
                self.bump();
                Ok(())
            }
            Tok::Eof | Tok::Dedent => Ok(()),
            _ => Err(self.unexpected(self.peek(), "the end of the statement")),
        }
    }

    /// `: NEWLINE INDENT stmt+ DEDENT`, or `: stmt` on the same line.
    fn suite(&mut self) -> Result<Vec<Stmt>, SemanticsError> {
        self.expect(Tok::Colon, "`:`")?;
        if !self.eat(Tok::Newline) {
            return Ok(vec![self.statement()?]);
        }
        let open = self.peek();
        if open.tok != Tok::Indent {
            return Err(SemanticsError::syntax(
                open.span,
                "expected an indented block",
                "indent the statements of the block deeper than the line that opens it",
            ));
        }
        self.bump();
        let mut body = Vec::new();
        while !matches!(self.peek().tok, Tok::Dedent | Tok::Eof) {
            if self.eat(Tok::Newline) {
                continue;
            }
            body.push(self.statement()?);
        }
        self.eat(Tok::Dedent);
        Ok(body)
    }

    fn for_statement(&mut self) -> Result<Stmt, SemanticsError> {
        let start = self.bump().span;
        let mut bindings = vec![self.binding()?];
        while self.eat(Tok::Comma) {
            bindings.push(self.binding()?);
        }
        let head_end = self.peek().span;
        let body = self.suite()?;
        Ok(Stmt {
            kind: StmtKind::For { bindings, body },
            span: start.to(Span::at(head_end.start)),
        })
    }

    /// `i in lo..hi`, or `a, b, … in tensor`.
    fn binding(&mut self) -> Result<Binding, SemanticsError> {
        let mut names = Vec::new();
        loop {
            let name = self.expect(Tok::Ident, "a loop variable")?;
            names.push((self.text(name).to_owned(), name.span));
            if !self.eat(Tok::Comma) {
                break;
            }
        }
        let keyword = self.peek();
        if !self.is_keyword(keyword, "in") {
            return Err(self.unexpected(keyword, "`in`"));
        }
        self.bump();
        let low = self.expression()?;
        let domain = if self.eat(Tok::DotDot) {
            Domain::Range(low, self.expression()?)
        } else if let Some(tensor) = low.as_name() {
            Domain::Tensor(tensor.to_owned(), low.span)
        } else {
            return Err(SemanticsError::syntax(
                low.span,
                "a loop runs over a range `lo..hi` or over a tensor's indices",
                "write `for i in 0..n:` or `for n, c, h, w in out:`",
            ));
        };
        let end = match &domain {
            Domain::Range(_, high) => high.span,
            Domain::Tensor(_, span) => *span,
        };
        let start = names.first().map_or(end, |(_, span)| *span);
        Ok(Binding {
            names,
            domain,
            span: start.to(end),
        })
    }

    fn if_statement(&mut self) -> Result<Stmt, SemanticsError> {
        let start = self.bump().span;
        let mut arms = vec![(self.expression()?, self.suite()?)];
        let mut otherwise = Vec::new();
        loop {
            let next = self.peek();
            if self.is_keyword(next, "elif") {
                self.bump();
                arms.push((self.expression()?, self.suite()?));
            } else if self.is_keyword(next, "else") {
                self.bump();
                otherwise = self.suite()?;
                break;
            } else {
                break;
            }
        }
        let head_end = arms.first().map_or(start, |(cond, _)| cond.span);
        Ok(Stmt {
            kind: StmtKind::If { arms, otherwise },
            span: start.to(head_end),
        })
    }

    fn assignment(&mut self) -> Result<Stmt, SemanticsError> {
        let name = self.peek();
        if name.tok != Tok::Ident {
            return Err(self.unexpected(name, "a statement"));
        }
        self.bump();
        let mut target = Target {
            name: self.text(name).to_owned(),
            name_span: name.span,
            index: None,
        };
        if self.eat(Tok::LBracket) {
            target.index = Some(self.nested(name.span, |p| p.list(Tok::RBracket))?);
        }
        let declared = if self.eat(Tok::Colon) {
            let dtype = self.expect(Tok::Ident, "a dtype (`T`, `f32`, `f64`, `bf16`, `f16`)")?;
            let shape = if self.eat(Tok::LBracket) {
                Some(self.nested(dtype.span, |p| p.list(Tok::RBracket))?)
            } else {
                None
            };
            Some(Declared {
                dtype: self.text(dtype).to_owned(),
                dtype_span: dtype.span,
                shape,
            })
        } else {
            None
        };
        let op = match self.peek().tok {
            Tok::Assign => AssignOp::Set,
            Tok::PlusAssign => AssignOp::Add,
            Tok::MinusAssign => AssignOp::Sub,
            Tok::StarAssign => AssignOp::Mul,
            Tok::EqEq => {
                return Err(SemanticsError::syntax(
                    self.peek().span,
                    "`==` compares; a statement assigns with `=`",
                    "write `name = value`",
                ));
            }
            _ => return Err(self.unexpected(self.peek(), "`=`, `+=`, `-=` or `*=`")),
        };
        self.bump();
        let value = self.expression()?;
        let span = name.span.to(value.span);
        Ok(Stmt {
            kind: StmtKind::Assign {
                target,
                declared,
                op,
                value,
            },
            span,
        })
    }

    /// Expressions separated by commas up to `close` (consumed); at least one.
    fn list(&mut self, close: Tok) -> Result<Vec<Expr>, SemanticsError> {
        let mut items = vec![self.expression()?];
        while self.eat(Tok::Comma) {
            if self.peek().tok == close {
                break;
            }
            items.push(self.expression()?);
        }
        let closing = if close == Tok::RBracket { "`]`" } else { "`)`" };
        self.expect(close, &format!("`,` or {closing}"))?;
        Ok(items)
    }

    fn expression(&mut self) -> Result<Expr, SemanticsError> {
        let span = self.peek().span;
        self.nested(span, |p| p.binary(0))
    }

    /// Precedence climbing: operators binding tighter than `min`.
    fn binary(&mut self, min: u8) -> Result<Expr, SemanticsError> {
        let mut lhs = self.unary()?;
        loop {
            let token = self.peek();
            if let Some(first_op) = compare_op(token.tok) {
                if COMPARE_POWER <= min {
                    break;
                }
                let mut rest = Vec::new();
                let mut op = Some((first_op, token.span));
                while let Some((cmp, op_span)) = op {
                    self.bump();
                    rest.push((cmp, op_span, self.binary(COMPARE_POWER)?));
                    let next = self.peek();
                    op = compare_op(next.tok).map(|c| (c, next.span));
                }
                let span = lhs
                    .span
                    .to(rest.last().map_or(lhs.span, |(_, _, e)| e.span));
                lhs = Expr {
                    kind: ExprKind::Compare {
                        first: Box::new(lhs),
                        rest,
                    },
                    span,
                };
                continue;
            }
            let Some((op, power)) = binary_op(token.tok) else {
                break;
            };
            if power <= min {
                break;
            }
            self.bump();
            let rhs = self.nested(token.span, |p| p.binary(power))?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary {
                    op,
                    op_span: token.span,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, SemanticsError> {
        let token = self.peek();
        let op = match token.tok {
            Tok::Minus => UnOp::Neg,
            Tok::Bang => UnOp::Not,
            _ => return self.postfix(),
        };
        self.bump();
        let operand = self.nested(token.span, Self::unary)?;
        let span = token.span.to(operand.span);
        Ok(Expr {
            kind: ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span,
        })
    }

    fn postfix(&mut self) -> Result<Expr, SemanticsError> {
        let mut expr = self.primary()?;
        loop {
            match self.peek().tok {
                Tok::Dot => {
                    self.bump();
                    let field = self.expect(Tok::Ident, "a field name (`dim`, `rank`)")?;
                    let span = expr.span.to(field.span);
                    expr = Expr {
                        kind: ExprKind::Member {
                            base: Box::new(expr),
                            field: self.text(field).to_owned(),
                            field_span: field.span,
                        },
                        span,
                    };
                }
                Tok::LBracket => {
                    let open = self.bump();
                    let indices = self.nested(open.span, |p| p.list(Tok::RBracket))?;
                    let end = self.tokens[self.at.saturating_sub(1)].span;
                    let span = expr.span.to(end);
                    expr = Expr {
                        kind: ExprKind::Index {
                            base: Box::new(expr),
                            indices,
                        },
                        span,
                    };
                }
                _ => return Ok(expr),
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, SemanticsError> {
        let token = self.peek();
        let kind = match token.tok {
            Tok::Int(v) => ExprKind::Int(v),
            Tok::Float(v) => ExprKind::Float(v),
            Tok::Str => ExprKind::Text(self.text(token).trim_matches('"').to_owned()),
            Tok::Ident if self.peek_at(1).tok == Tok::LParen => return self.call(),
            Tok::Ident => ExprKind::Name(self.text(token).to_owned()),
            Tok::LParen => {
                self.bump();
                let inner = self.nested(token.span, Self::expression)?;
                let close = self.expect(Tok::RParen, "`)`")?;
                return Ok(Expr {
                    span: token.span.to(close.span),
                    ..inner
                });
            }
            _ => return Err(self.unexpected(token, "a value")),
        };
        self.bump();
        Ok(Expr {
            kind,
            span: token.span,
        })
    }

    fn call(&mut self) -> Result<Expr, SemanticsError> {
        let name = self.bump();
        let open = self.bump();
        let args = if self.peek().tok == Tok::RParen {
            self.bump();
            Vec::new()
        } else {
            self.nested(open.span, |p| p.list(Tok::RParen))?
        };
        let end = self.tokens[self.at.saturating_sub(1)].span;
        Ok(Expr {
            kind: ExprKind::Call {
                name: self.text(name).to_owned(),
                name_span: name.span,
                args,
            },
            span: name.span.to(end),
        })
    }
}

#[cfg(test)]
mod tests;
