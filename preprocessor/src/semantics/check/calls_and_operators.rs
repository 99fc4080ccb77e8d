//! Typing calls and operators: the functions (`present`, `select`, `cast`, `isnan` and the
//! value functions) with their arity, unary and binary operators on indices, conditions and
//! values, and chained comparisons.

use super::super::ast::{BinOp, CmpOp, Expr, UnOp};
use super::super::error::SemanticsErrorKind;
use super::super::ir::{self, Bool, Func, Int, IntKind, IntOp, ParamForm, Val, ValKind, ValOp};
use super::{Checker, FUNCTIONS, Typed};
use crate::expr::Span;
use fkc_provider::DType;

impl Checker<'_> {
    pub(super) fn call(
        &mut self,
        name: &str,
        name_span: Span,
        args: &[Expr],
        span: Span,
    ) -> Option<Typed> {
        match name {
            "present" => {
                if let [arg] = args
                    && let Some(name) = arg.as_name()
                    && self.signature.undeclared_absent
                    && self.lookup(name).is_none()
                {
                    return Some(Typed::Bool(Bool::Const(false)));
                }
                let tensor = self.one_tensor(args, span, "`present` takes one input", "write `present(bias)`")?;
                Some(Typed::Bool(Bool::Present(tensor)))
            }
            "numel" => {
                let message = "`numel` takes one tensor";
                let help = "write `numel(x)`: the product of `x`'s dims";
                let tensor = self.one_tensor(args, span, message, help)?;
                Some(Typed::Int(Int {
                    kind: IntKind::Numel(tensor),
                    span,
                }))
            }
            "reduced" | "broadcast" | "permuted" | "along" => {
                self.type_error(
                    span,
                    format!("`{name}(…)` is a whole index"),
                    "use it as a tensor's only index: `out[reduced(i, axes, keepdim)] += x[i]`, `a[broadcast(o)]`, `out[permuted(i, perm)]`, `x[along(i, axis, t)]`",
                );
                None
            }
            "select" => self.select(args, span),
            "cast" => self.cast(args, span),
            "isnan" => {
                let [arg] = args else {
                    self.arity(name, 1, span);
                    return None;
                };
                let typed = self.expression(arg)?;
                let value = self.value_of(typed, arg.span, self.t)?;
                Some(Typed::Bool(Bool::IsNan(Box::new(value))))
            }
            _ => self.function(name, name_span, args, span),
        }
    }

    /// The one tensor a call takes (`present(bias)`, `numel(x)`), or the error.
    fn one_tensor(&mut self, args: &[Expr], span: Span, message: &str, help: &str) -> Option<usize> {
        let tensor = match args {
            [arg] => match self.expression(arg)? {
                Typed::Tensor(tensor) => Some(tensor),
                _ => None,
            },
            _ => None,
        };
        if tensor.is_none() {
            self.type_error(span, message.to_owned(), help);
        }
        tensor
    }

    fn arity(&mut self, name: &str, count: usize, span: Span) {
        self.type_error(
            span,
            format!(
                "`{name}` takes {count} argument{}",
                if count == 1 { "" } else { "s" }
            ),
            "see the format reference's list of functions",
        );
    }

    fn function(
        &mut self,
        name: &str,
        name_span: Span,
        args: &[Expr],
        span: Span,
    ) -> Option<Typed> {
        let Some(func) = Func::parse(name) else {
            let help = crate::diag::did_you_mean(name, FUNCTIONS.iter().copied()).map_or_else(
                || format!("the functions are: {}", FUNCTIONS.join(", ")),
                |close| format!("did you mean `{close}`?"),
            );
            self.error(
                SemanticsErrorKind::UnknownName,
                name_span,
                format!("there is no function `{name}`"),
                &help,
            );
            return None;
        };
        if args.len() != func.arity() {
            self.arity(name, func.arity(), span);
            return None;
        }
        let typed = args
            .iter()
            .map(|a| self.expression(a))
            .collect::<Option<Vec<Typed>>>()?;
        if matches!(func, Func::Max | Func::Min) && typed.iter().all(|t| matches!(t, Typed::Int(_)))
        {
            let ints = typed
                .into_iter()
                .filter_map(|t| match t {
                    Typed::Int(i) => Some(i),
                    _ => None,
                })
                .collect();
            let kind = if func == Func::Max {
                IntKind::Max(ints)
            } else {
                IntKind::Min(ints)
            };
            return Some(Typed::Int(Int { kind, span }));
        }
        let dtype = self.common_dtype(&typed);
        self.selects |= matches!(func, Func::Max | Func::Min);
        let values = typed
            .into_iter()
            .zip(args)
            .map(|(t, a)| self.value_of(t, a.span, dtype))
            .collect::<Option<Vec<Val>>>()?;
        Some(Typed::Val(
            Val {
                kind: ValKind::Func(func, values, dtype),
                span,
            },
            Some(dtype),
        ))
    }

    /// The dtype of an operation on `typed`: the widest of its values, `T` for literals.
    fn common_dtype(&self, typed: &[Typed]) -> DType {
        typed
            .iter()
            .filter_map(|t| match t {
                Typed::Val(_, dtype) => *dtype,
                _ => None,
            })
            .reduce(ir::wider)
            .unwrap_or(self.t)
    }

    fn select(&mut self, args: &[Expr], span: Span) -> Option<Typed> {
        let [cond, a, b] = args else {
            self.arity("select", 3, span);
            return None;
        };
        let Typed::Bool(cond) = self.expression(cond)? else {
            self.type_error(
                cond.span,
                "`select` takes a condition first".to_owned(),
                "write `select(x[i] > 0, x[i], 0)`",
            );
            return None;
        };
        let (ta, tb) = (self.expression(a)?, self.expression(b)?);
        let dtype = self.common_dtype(&[ta.clone(), tb.clone()]);
        let (va, vb) = (
            self.value_of(ta, a.span, dtype)?,
            self.value_of(tb, b.span, dtype)?,
        );
        Some(Typed::Val(
            Val {
                kind: ValKind::Select(Box::new(cond), Box::new(va), Box::new(vb)),
                span,
            },
            Some(dtype),
        ))
    }

    fn cast(&mut self, args: &[Expr], span: Span) -> Option<Typed> {
        let [value, dtype] = args else {
            self.arity("cast", 2, span);
            return None;
        };
        let Some(to) = dtype.as_name().and_then(|n| ir::parse_dtype(n, self.t)) else {
            self.type_error(
                dtype.span,
                "`cast` takes a dtype second".to_owned(),
                "write `cast(x[i], f32)`",
            );
            return None;
        };
        let typed = self.expression(value)?;
        let val = match typed {
            Typed::Val(val, _) => val,
            other => self.value_of(other, value.span, to)?,
        };
        Some(Typed::Val(
            Val {
                kind: ValKind::Cast(Box::new(val), to),
                span,
            },
            Some(to),
        ))
    }

    pub(super) fn unary(&mut self, op: UnOp, operand: &Expr, span: Span) -> Option<Typed> {
        match (op, self.expression(operand)?) {
            (UnOp::Neg, Typed::Int(int)) => Some(Typed::Int(Int {
                kind: IntKind::Neg(Box::new(int)),
                span,
            })),
            (UnOp::Neg, Typed::Val(val, dtype)) => Some(Typed::Val(
                Val {
                    kind: ValKind::Neg(Box::new(val)),
                    span,
                },
                dtype,
            )),
            (UnOp::Not, Typed::Bool(cond)) => Some(Typed::Bool(Bool::Not(Box::new(cond)))),
            (UnOp::Neg, _) => {
                self.type_error(
                    span,
                    "`-` negates a number".to_owned(),
                    "negate an index or a value",
                );
                None
            }
            (UnOp::Not, _) => {
                self.type_error(
                    span,
                    "`!` negates a condition".to_owned(),
                    "negate a comparison or `present(…)`",
                );
                None
            }
        }
    }

    pub(super) fn binary(
        &mut self,
        op: BinOp,
        lhs: &Expr,
        rhs: &Expr,
        span: Span,
    ) -> Option<Typed> {
        let (a, b) = (self.expression(lhs)?, self.expression(rhs)?);
        if matches!(op, BinOp::And | BinOp::Or) {
            let (Typed::Bool(a), Typed::Bool(b)) = (a, b) else {
                self.type_error(
                    span,
                    format!(
                        "`{}` joins conditions",
                        if op == BinOp::And { "&&" } else { "||" }
                    ),
                    "compare indices on both sides",
                );
                return None;
            };
            let (a, b) = (Box::new(a), Box::new(b));
            return Some(Typed::Bool(if op == BinOp::And {
                Bool::And(a, b)
            } else {
                Bool::Or(a, b)
            }));
        }
        if let (Typed::Int(a), Typed::Int(b)) = (&a, &b) {
            let int_op = match op {
                BinOp::Add => IntOp::Add,
                BinOp::Sub => IntOp::Sub,
                BinOp::Mul => IntOp::Mul,
                BinOp::Div => IntOp::Div,
                BinOp::Rem => IntOp::Rem,
                BinOp::And | BinOp::Or => return None,
            };
            return Some(Typed::Int(Int {
                kind: IntKind::Bin(int_op, Box::new(a.clone()), Box::new(b.clone())),
                span,
            }));
        }
        let val_op = match op {
            BinOp::Add => ValOp::Add,
            BinOp::Sub => ValOp::Sub,
            BinOp::Mul => ValOp::Mul,
            BinOp::Div => ValOp::Div,
            _ => {
                self.type_error(
                    span,
                    "`%` takes indices, not element values".to_owned(),
                    "take remainders of indices only",
                );
                return None;
            }
        };
        let weak = matches!(
            (&a, &b),
            (
                Typed::Val(_, None) | Typed::Int(_),
                Typed::Val(_, None) | Typed::Int(_)
            )
        );
        let dtype = self.common_dtype(&[a.clone(), b.clone()]);
        let (va, vb) = (
            self.value_of(a, lhs.span, dtype)?,
            self.value_of(b, rhs.span, dtype)?,
        );
        Some(Typed::Val(
            Val {
                kind: ValKind::Bin(val_op, Box::new(va), Box::new(vb), dtype),
                span,
            },
            (!weak).then_some(dtype),
        ))
    }

    pub(super) fn compare(&mut self, first: &Expr, rest: &[(CmpOp, Span, Expr)]) -> Option<Typed> {
        let mut operands = vec![self.expression(first)?];
        for (_, _, e) in rest {
            operands.push(self.expression(e)?);
        }
        let ops: Vec<CmpOp> = rest.iter().map(|(op, _, _)| *op).collect();
        if operands
            .iter()
            .any(|t| matches!(t, Typed::Enum(_) | Typed::Text(_)))
        {
            let span = rest.last().map_or(first.span, |(_, _, e)| first.span.to(e.span));
            return self.enum_compare(operands, &ops, span);
        }
        if operands.iter().all(|t| matches!(t, Typed::Int(_))) {
            let ints = operands
                .into_iter()
                .filter_map(|t| match t {
                    Typed::Int(i) => Some(i),
                    _ => None,
                })
                .collect();
            return Some(Typed::Bool(Bool::CompareInt(ints, ops)));
        }
        let dtype = self.common_dtype(&operands);
        let spans = std::iter::once(first.span).chain(rest.iter().map(|(_, _, e)| e.span));
        let values = operands
            .into_iter()
            .zip(spans)
            .map(|(t, s)| self.value_of(t, s, dtype))
            .collect::<Option<Vec<Val>>>()?;
        Some(Typed::Bool(Bool::CompareVal(values, ops)))
    }

    /// `mode == "valid"` (or `!=`, either way round): the parameter's value position compared.
    fn enum_compare(&mut self, operands: Vec<Typed>, ops: &[CmpOp], span: Span) -> Option<Typed> {
        let (param, text) = match (operands.as_slice(), ops) {
            (
                [Typed::Enum(param), Typed::Text(text)] | [Typed::Text(text), Typed::Enum(param)],
                [CmpOp::Eq | CmpOp::Ne],
            ) => (*param, text.clone()),
            _ => {
                self.type_error(
                    span,
                    "an enumeration is only compared with one of its values".to_owned(),
                    "write `mode == \"valid\"` or `mode != \"valid\"`",
                );
                return None;
            }
        };
        let declared = self.signature.params.get(param).map(|p| (&p.name, &p.form));
        let Some((name, ParamForm::Enum(values))) = declared else {
            return None;
        };
        let Some(position) = values.iter().position(|v| *v == text) else {
            let message = format!("`{name}` has no value \"{text}\"");
            let help = format!("its values are: {}", values.join(", "));
            self.type_error(span, message, &help);
            return None;
        };
        let at = |kind| Int { kind, span };
        let ints = vec![
            at(IntKind::Param {
                param,
                element: None,
            }),
            at(IntKind::Const(i64::try_from(position).ok()?)),
        ];
        Some(Typed::Bool(Bool::CompareInt(ints, ops.to_vec())))
    }
}
