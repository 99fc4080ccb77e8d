//! Typing expressions: indices of elements, conditions, values in a dtype, names, members
//! (`.dim`, `.rank`) and indexing; a literal value takes the dtype of what it meets.

use super::super::ast::{CmpOp, Expr, ExprKind};
use super::super::ir::{Bool, Int, IntKind, MAX_LIST, ParamForm, Val, ValKind};
use super::{Bound, Checker, Typed};
use crate::expr::Span;
use fkc_provider::DType;

impl Checker<'_> {
    pub(super) fn indices(
        &mut self,
        tensor: usize,
        index: &[Expr],
        span: Span,
    ) -> Option<Vec<Int>> {
        let rank = self.tensors[tensor].rank;
        if let [single] = index
            && let ExprKind::Call { name, args, .. } = &single.kind
        {
            match name.as_str() {
                "reduced" => return self.reduced(args, rank, single.span),
                "broadcast" => return self.broadcast(args, tensor, single.span),
                "permuted" => return self.permuted(args, rank, single.span),
                "along" => return self.along(args, rank, single.span),
                _ => {}
            }
        }
        if let [single] = index
            && let Some(Bound::Index(first, width)) = single.as_name().and_then(|n| self.lookup(n))
        {
            if width == rank {
                return Some(
                    (first..first + width)
                        .map(|slot| Int {
                            kind: IntKind::Slot(slot),
                            span: single.span,
                        })
                        .collect(),
                );
            }
            let name = self.tensors[tensor].name.clone();
            self.type_error(
                single.span,
                format!("this index has {width} axes; `{name}` has rank {rank}"),
                "index a tensor of the same rank as the one looped over",
            );
            return None;
        }
        if index.len() != rank {
            let name = self.tensors[tensor].name.clone();
            self.type_error(
                span,
                format!(
                    "`{name}` has rank {rank}: an element takes {rank} indices, not {}",
                    index.len()
                ),
                "write one index per axis",
            );
            return None;
        }
        index.iter().map(|i| self.index(i)).collect()
    }

    /// The components of a whole index (`i` of `for i in x:`, or one loop variable).
    fn whole_index(&mut self, i: &Expr, usage: &str) -> Option<Vec<Int>> {
        match self.expression(i)? {
            Typed::Index { first, rank } => Some(
                (first..first + rank)
                    .map(|slot| Int {
                        kind: IntKind::Slot(slot),
                        span: i.span,
                    })
                    .collect(),
            ),
            Typed::Int(int) => Some(vec![int]),
            _ => {
                self.type_error(i.span, "expected a whole index".to_owned(), usage);
                None
            }
        }
    }

    /// `broadcast(o)` as the whole index of `tensor`: the output's whole index `o` broadcast to
    /// it (NumPy: trailing axes aligned, 0 where its extent is 1).
    fn broadcast(&mut self, args: &[Expr], tensor: usize, span: Span) -> Option<Vec<Int>> {
        let usage = "write `a[broadcast(o)]`: the whole index `o` of `for o in out:`, broadcast to `a`";
        let [o] = args else {
            self.type_error(span, "`broadcast` takes one whole index".to_owned(), usage);
            return None;
        };
        let index = self.whole_index(o, usage)?;
        let width = self.tensors[tensor].rank;
        let component = |component| Int {
            kind: IntKind::Broadcast {
                index: index.clone(),
                tensor,
                component,
                width,
            },
            span,
        };
        Some((0..width).map(component).collect())
    }

    /// `permuted(i, perm)` as the whole index of a tensor of rank `width`: component `k` is
    /// `i[perm[k]]`.
    fn permuted(&mut self, args: &[Expr], width: usize, span: Span) -> Option<Vec<Int>> {
        let usage = "write `out[permuted(i, perm)]`: a whole index and a list parameter";
        let [i, perm] = args else {
            self.type_error(span, "`permuted` takes two arguments".to_owned(), usage);
            return None;
        };
        let index = self.whole_index(i, usage)?;
        let Some(list) = self.list_param(perm) else {
            self.type_error(perm.span, "expected a list parameter".to_owned(), usage);
            return None;
        };
        let component = |k| Int {
            kind: IntKind::Pick {
                index: Box::new(Int {
                    kind: IntKind::Param {
                        param: list,
                        element: Some(k),
                    },
                    span: perm.span,
                }),
                options: index.clone(),
            },
            span,
        };
        Some((0..width).map(component).collect())
    }

    /// `along(i, axis, t)` as the whole index of a tensor of rank `width`: `i` (of that rank)
    /// with its component `axis` replaced by `t`.
    fn along(&mut self, args: &[Expr], width: usize, span: Span) -> Option<Vec<Int>> {
        let usage = "write `x[along(i, axis, t)]`: a whole index of `x`'s rank, an axis and a position on it";
        let [i, axis, t] = args else {
            self.type_error(span, "`along` takes three arguments".to_owned(), usage);
            return None;
        };
        let index = self.whole_index(i, usage)?;
        if index.len() != width {
            self.type_error(
                i.span,
                format!("this index has {} axes; the tensor has rank {width}", index.len()),
                usage,
            );
            return None;
        }
        let (axis, value) = (self.index(axis)?, self.index(t)?);
        let component = |component| Int {
            kind: IntKind::Along {
                index: index.clone(),
                axis: Box::new(axis.clone()),
                value: Box::new(value.clone()),
                component,
            },
            span,
        };
        Some((0..width).map(component).collect())
    }

    /// The parameter `e` names, when it is a list.
    fn list_param(&mut self, e: &Expr) -> Option<usize> {
        match self.expression(e)? {
            Typed::Tuple(param, _)
                if matches!(self.signature.params[param].form, ParamForm::List) =>
            {
                Some(param)
            }
            _ => None,
        }
    }

    /// `reduced(i, axes, keepdim)` as the whole index of a tensor of rank `width`: `i` a whole
    /// index (or one loop variable), `axes` a list parameter, `keepdim` a boolean parameter or
    /// `true` / `false`.
    fn reduced(&mut self, args: &[Expr], width: usize, span: Span) -> Option<Vec<Int>> {
        let usage = "write `reduced(i, axes, keepdim)`: a whole index, a list parameter, and a boolean parameter or `true` / `false`";
        let [i, axes, keepdim] = args else {
            self.type_error(span, "`reduced` takes three arguments".to_owned(), usage);
            return None;
        };
        let index = self.whole_index(i, usage)?;
        let Some(list) = self.list_param(axes) else {
            self.type_error(axes.span, "expected a list parameter".to_owned(), usage);
            return None;
        };
        let keep = match self.expression(keepdim)? {
            Typed::Bool(Bool::Const(fixed)) => Some(Int {
                kind: IntKind::Const(i64::from(fixed)),
                span: keepdim.span,
            }),
            Typed::Bool(Bool::CompareInt(mut sides, ops))
                if ops == [CmpOp::Ne] && matches!(sides.first(), Some(Int { kind: IntKind::Param { .. }, .. })) =>
            {
                Some(sides.swap_remove(0))
            }
            _ => None,
        };
        let Some(keep) = keep else {
            self.type_error(
                keepdim.span,
                "expected a boolean parameter, `true` or `false`".to_owned(),
                usage,
            );
            return None;
        };
        let component = |component| Int {
            kind: IntKind::Reduced {
                index: index.clone(),
                axes: list,
                keepdim: Box::new(keep.clone()),
                component,
                width,
            },
            span,
        };
        Some((0..width).map(component).collect())
    }

    /// An expression that must be an index.
    pub(super) fn index(&mut self, expr: &Expr) -> Option<Int> {
        match self.expression(expr)? {
            Typed::Int(int) => Some(int),
            // an element of an integer input: an index known on a run (`weight[ids[n, l], d]`)
            Typed::Val(
                Val {
                    kind: ValKind::Read { tensor, index },
                    span,
                },
                Some(dtype),
            ) if !dtype.is_float()
                && matches!(self.tensors[tensor].origin, super::super::ir::Origin::Input(_)) =>
            {
                Some(Int {
                    kind: IntKind::Element { tensor, index },
                    span,
                })
            }
            _ => {
                self.type_error(
                    expr.span,
                    "expected an index (an integer)".to_owned(),
                    "indices are integers: loop variables, dims (`x.dim[1]`), parameters and their arithmetic",
                );
                None
            }
        }
    }

    /// An expression that must be a condition on indices.
    pub(super) fn condition(&mut self, expr: &Expr) -> Option<Bool> {
        match self.expression(expr)? {
            Typed::Bool(cond) if !compares_values(&cond) => Some(cond),
            Typed::Bool(_) => {
                self.type_error(
                    expr.span,
                    "an `if` tests indices, not element values".to_owned(),
                    "choose between values with `select(condition, a, b)`, `max` or `min`",
                );
                None
            }
            _ => {
                self.type_error(
                    expr.span,
                    "expected a condition".to_owned(),
                    "compare indices (`0 <= ih < x.dim[2]`) or ask `present(bias)`",
                );
                None
            }
        }
    }

    /// `typed` as a value of `dtype` (an index converted, a literal or another dtype rounded).
    pub(super) fn value_of(&mut self, typed: Typed, span: Span, dtype: DType) -> Option<Val> {
        match typed {
            Typed::Val(val, Some(d)) if d == dtype => Some(val),
            Typed::Val(val, _) => Some(Val {
                kind: ValKind::Cast(Box::new(val), dtype),
                span,
            }),
            Typed::Int(int) => Some(Val {
                kind: ValKind::FromInt(int, dtype),
                span,
            }),
            _ => {
                self.type_error(
                    span,
                    "expected an element value".to_owned(),
                    "values are tensor elements, numbers, locals and their arithmetic",
                );
                None
            }
        }
    }

    pub(super) fn expression(&mut self, expr: &Expr) -> Option<Typed> {
        let span = expr.span;
        match &expr.kind {
            ExprKind::Int(v) => Some(Typed::Int(Int {
                kind: IntKind::Const(*v),
                span,
            })),
            ExprKind::Float(v) => Some(constant(*v, span)),
            ExprKind::Text(text) => Some(Typed::Text(text.clone())),
            ExprKind::Name(name) => self.name(name, span),
            ExprKind::Member {
                base,
                field,
                field_span,
            } => self.member(base, field, *field_span, span),
            ExprKind::Index { base, indices } => self.indexed(base, indices, span),
            ExprKind::Call {
                name,
                name_span,
                args,
            } => self.call(name, *name_span, args, span),
            ExprKind::Unary { op, operand } => self.unary(*op, operand, span),
            ExprKind::Binary { op, lhs, rhs, .. } => self.binary(*op, lhs, rhs, span),
            ExprKind::Compare { first, rest } => self.compare(first, rest),
        }
    }

    fn name(&mut self, name: &str, span: Span) -> Option<Typed> {
        match name {
            "true" | "false" => return Some(Typed::Bool(Bool::Const(name == "true"))),
            "inf" => return Some(constant(f64::INFINITY, span)),
            "nan" => return Some(constant(f64::NAN, span)),
            _ => {}
        }
        if let Some(bound) = self.lookup(name) {
            return Some(match bound {
                Bound::Int(slot) => Typed::Int(Int {
                    kind: IntKind::Slot(slot),
                    span,
                }),
                Bound::Val(slot) => Typed::Val(
                    Val {
                        kind: ValKind::Slot(slot),
                        span,
                    },
                    Some(self.vals[slot]),
                ),
                Bound::Tensor(tensor) => Typed::Tensor(tensor),
                Bound::Index(first, rank) => Typed::Index { first, rank },
            });
        }
        if let Some(param) = self.signature.params.iter().position(|p| p.name == name) {
            let whole = Int {
                kind: IntKind::Param {
                    param,
                    element: None,
                },
                span,
            };
            return Some(match &self.signature.params[param].form {
                ParamForm::Int => Typed::Int(whole),
                ParamForm::Tuple(width) => Typed::Tuple(param, *width),
                ParamForm::List => Typed::Tuple(param, MAX_LIST),
                ParamForm::Float => Typed::Val(
                    Val {
                        kind: ValKind::Param(param),
                        span,
                    },
                    None,
                ),
                ParamForm::Bool => Typed::Bool(Bool::CompareInt(
                    vec![whole, Int { kind: IntKind::Const(0), span }],
                    vec![CmpOp::Ne],
                )),
                ParamForm::Enum(_) => Typed::Enum(param),
            });
        }
        if let Some(tensor) = self.tensors.iter().position(|t| t.name == name) {
            return Some(Typed::Tensor(tensor));
        }
        self.unknown_name(name, span);
        None
    }

    fn member(&mut self, base: &Expr, field: &str, field_span: Span, span: Span) -> Option<Typed> {
        let Typed::Tensor(tensor) = self.expression(base)? else {
            self.type_error(
                base.span,
                format!("only a tensor has `.{field}`"),
                "ask a tensor: `x.dim[1]`, `x.rank`",
            );
            return None;
        };
        match field {
            "dim" => Some(Typed::Dims(tensor)),
            "rank" => Some(Typed::Int(Int {
                kind: IntKind::Rank(tensor),
                span,
            })),
            _ => {
                self.type_error(
                    field_span,
                    format!("a tensor has no field `{field}`"),
                    "a tensor has `.dim[i]` and `.rank`",
                );
                None
            }
        }
    }

    fn indexed(&mut self, base: &Expr, indices: &[Expr], span: Span) -> Option<Typed> {
        match self.expression(base)? {
            Typed::Tensor(tensor) => {
                let index = self.indices(tensor, indices, base.span)?;
                Some(Typed::Val(
                    Val {
                        kind: ValKind::Read { tensor, index },
                        span,
                    },
                    Some(self.tensors[tensor].dtype),
                ))
            }
            Typed::Dims(tensor) => {
                let rank = self.tensors[tensor].rank;
                let options = (0..rank).map(|axis| IntKind::Dim { tensor, axis });
                self.element(indices, options.collect(), span)
            }
            Typed::Index { first, rank } => {
                let options = (first..first + rank).map(IntKind::Slot);
                self.element(indices, options.collect(), span)
            }
            // the whole index of a rank-1 tensor is its one variable: `i[0]` is `i`
            Typed::Int(int) if base.as_name().is_some() => self.element(indices, vec![int.kind], span),
            Typed::Tuple(param, width) => {
                let options = (0..width).map(|element| IntKind::Param {
                    param,
                    element: Some(element),
                });
                self.element(indices, options.collect(), span)
            }
            _ => {
                self.type_error(
                    base.span,
                    "this cannot be indexed".to_owned(),
                    "index a tensor (`x[n, c, h, w]`), its dims (`x.dim[1]`) or a tuple parameter (`stride[0]`)",
                );
                None
            }
        }
    }

    /// One of `options`, by one index: the option itself for a constant one (below their
    /// count), otherwise chosen at run time ([`IntKind::Pick`]).
    fn element(&mut self, indices: &[Expr], options: Vec<IntKind>, span: Span) -> Option<Typed> {
        let pick = |kind| Int { kind, span };
        if let [Expr { kind: ExprKind::Int(_), .. }] = indices {
            let element = self.constant_index(indices, options.len(), span)?;
            return options.into_iter().nth(element).map(|kind| Typed::Int(pick(kind)));
        }
        let [index] = indices else {
            self.type_error(
                span,
                "expected one index".to_owned(),
                "dims, whole indices and tuple parameters take one index: `x.dim[1]`, `i[perm[k]]`",
            );
            return None;
        };
        let index = self.index(index)?;
        Some(Typed::Int(pick(IntKind::Pick {
            index: Box::new(index),
            options: options.into_iter().map(pick).collect(),
        })))
    }

    /// One constant index below `len`.
    fn constant_index(&mut self, indices: &[Expr], len: usize, span: Span) -> Option<usize> {
        match indices {
            [
                Expr {
                    kind: ExprKind::Int(i),
                    ..
                },
            ] if usize::try_from(*i).is_ok_and(|i| i < len) => usize::try_from(*i).ok(),
            _ => {
                self.type_error(
                    span,
                    format!(
                        "expected one constant index from 0 to {}",
                        len.saturating_sub(1)
                    ),
                    "dims and tuple parameters are indexed by a constant: `x.dim[1]`, `stride[0]`",
                );
                None
            }
        }
    }
}

/// A literal value (it takes the dtype of what it meets).
fn constant(v: f64, span: Span) -> Typed {
    Typed::Val(
        Val {
            kind: ValKind::Const(v),
            span,
        },
        None,
    )
}

/// Whether a condition compares element values.
fn compares_values(cond: &Bool) -> bool {
    match cond {
        Bool::CompareVal(..) | Bool::IsNan(_) => true,
        Bool::Not(c) => compares_values(c),
        Bool::And(a, b) | Bool::Or(a, b) => compares_values(a) || compares_values(b),
        Bool::Const(_) | Bool::CompareInt(..) | Bool::Present(_) => false,
    }
}
