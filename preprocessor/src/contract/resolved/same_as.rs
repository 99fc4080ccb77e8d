//! `same_as=EXPR`, the shorthand for `OPERAND.dim[0] == EXPR`: desugared on a rank-1 operand,
//! and on any other a diagnostic that names the dimensions it could mean.

use super::{ResolvedExpr, Resolver};
use crate::contract::raw::{Rank, RawInput};
use crate::contract::schema::Located;
use crate::diag::{Code, Diagnostic};
use crate::expr::{self, Expr, ExprKind, Span, Type};

impl Resolver<'_> {
    pub(super) fn input_constraint(
        &mut self,
        input: &RawInput,
        constraint: &Located<String>,
    ) -> Option<ResolvedExpr> {
        const SAME_AS: &str = "same_as=";
        let Some(rest) = constraint.value.strip_prefix(SAME_AS) else {
            return self.typed(constraint, Type::Bool, "a shape constraint");
        };
        let rhs = self.parse_at(constraint, SAME_AS.len())?;
        let Some(rank) = input.rank.as_ref().map(|r| r.value) else {
            let span = self.value_span(constraint, 0, "same_as".len());
            let diagnostic = Diagnostic::error(
                Code::AmbiguousSameAs,
                self.source,
                span,
                format!(
                    "`same_as=` on `{}` needs the operand's rank",
                    input.name.value
                ),
            )
            .with_label("this input declares no rank")
            .with_help(format!(
                "declare `rank: 1` for `{}` (`same_as=` is defined on rank-1 operands)",
                input.name.value
            ));
            self.diagnostics.push(diagnostic);
            return None;
        };
        if rank.single() != Some(1) {
            self.ambiguous_same_as(input, constraint, rest, rank);
            return None;
        }
        self.check(constraint, SAME_AS.len(), &rhs, Type::Int, "`same_as=`")?;
        let here = Span {
            start: 0,
            end: SAME_AS.len() - 1,
        };
        let lhs = dim_expr(&input.name.value, 0, here);
        let expr = Expr::new(
            ExprKind::Binary {
                op: expr::BinOp::Eq,
                op_span: here,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
            here,
        );
        Some(ResolvedExpr {
            source: constraint.clone(),
            expr,
        })
    }

    fn ambiguous_same_as(
        &mut self,
        input: &RawInput,
        constraint: &Located<String>,
        rest: &str,
        rank: Rank,
    ) {
        let name = &input.name.value;
        let meant = constraint
            .comment
            .as_deref()
            .and_then(|comment| dimension_in(comment, name));
        let examples: Vec<String> = match meant {
            Some(dim) => vec![format!(
                "`{name}.dim[{dim}] == {rest}` (the dimension this line's comment names)"
            )],
            None => (0..rank.max.clamp(1, 4))
                .map(|d| format!("`{name}.dim[{d}] == {rest}`"))
                .collect(),
        };
        let span = self.value_span(constraint, 0, "same_as".len());
        let diagnostic = Diagnostic::error(
            Code::AmbiguousSameAs,
            self.source,
            span,
            format!(
                "`same_as=` on `{name}` (rank {}) does not say which dimension",
                rank
            ),
        )
        .with_label(if rank.min > 1 {
            "ambiguous on an operand of rank greater than 1"
        } else {
            "ambiguous on an operand whose rank is not 1"
        })
        .with_note(
            "`same_as=EXPR` means `OPERAND.dim[0] == EXPR` and is only defined on rank-1 operands",
        )
        .with_help(format!(
            "name the dimension, for example {}",
            examples.join(" or ")
        ));
        self.diagnostics.push(diagnostic);
    }
}

/// `NAME.dim[index]` as a tree (for desugared `same_as=`).
fn dim_expr(name: &str, index: i64, span: Span) -> Expr {
    let base = Expr::new(ExprKind::Name(name.to_owned()), span);
    let dim = Expr::new(
        ExprKind::Member {
            base: Box::new(base),
            field: "dim".to_owned(),
            field_span: span,
        },
        span,
    );
    Expr::new(
        ExprKind::Index {
            base: Box::new(dim),
            index: Box::new(Expr::new(ExprKind::Int(index), span)),
        },
        span,
    )
}

/// The `k` of the first `NAME.dim[k]` in a comment.
fn dimension_in(comment: &str, name: &str) -> Option<u32> {
    let needle = format!("{name}.dim[");
    let start = comment.find(&needle)? + needle.len();
    let digits: String = comment
        .get(start..)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}
