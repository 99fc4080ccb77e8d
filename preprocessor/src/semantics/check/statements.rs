//! Checking statements: blocks and their scopes, loops (ranges and whole indices), assignments
//! to locals and to tensor elements, declarations with a dtype, and how each update counts.

use super::super::ast::{self, AssignOp, Domain, Expr, Stmt, StmtKind};
use super::super::ir::{self, Bool, Func, Int, IntKind, Op, Origin, Update, Val, ValKind, ValOp};
use super::{Bound, CONSTANTS, Checker, Typed};
use crate::expr::Span;
use std::collections::HashMap;

impl Checker<'_> {
    pub(super) fn block(&mut self, statements: &[Stmt]) -> Vec<Op> {
        self.scopes.push(HashMap::new());
        let ops = statements
            .iter()
            .filter_map(|s| self.statement(s))
            .collect();
        self.scopes.pop();
        ops
    }

    fn statement(&mut self, statement: &Stmt) -> Option<Op> {
        match &statement.kind {
            StmtKind::For { bindings, body } => self.for_loop(bindings, body, statement.span),
            StmtKind::If { arms, otherwise } => {
                let checked: Vec<(Option<Bool>, Vec<Op>)> = arms
                    .iter()
                    .map(|(cond, body)| match self.condition(cond) {
                        Some(Bool::Const(false)) => (Some(Bool::Const(false)), Vec::new()),
                        cond => (cond, self.block(body)),
                    })
                    .collect();
                let mut tail = self.block(otherwise);
                for (cond, then) in checked.into_iter().rev() {
                    tail = vec![Op::If {
                        cond: cond?,
                        then,
                        otherwise: tail,
                    }];
                }
                tail.pop()
            }
            StmtKind::Assign {
                target,
                declared,
                op,
                value,
            } => self.assignment(target, declared.as_ref(), *op, value, statement.span),
        }
    }

    fn for_loop(&mut self, bindings: &[ast::Binding], body: &[Stmt], span: Span) -> Option<Op> {
        self.scopes.push(HashMap::new());
        // (var, lo, hi) for every loop, outermost first
        let mut loops: Vec<(usize, Int, Int)> = Vec::new();
        for binding in bindings {
            match &binding.domain {
                Domain::Range(lo, hi) => {
                    let (lo, hi) = (self.index(lo)?, self.index(hi)?);
                    let [(name, _)] = binding.names.as_slice() else {
                        self.type_error(
                            binding.span,
                            "several loop variables over a range".to_owned(),
                            "only a tensor's indices bind several variables: `for n, c in out:`",
                        );
                        return None;
                    };
                    let var = self.new_int();
                    self.bind(name, Bound::Int(var));
                    loops.push((var, lo, hi));
                }
                Domain::Tensor(name, tensor_span) => {
                    let Some(Bound::Tensor(tensor)) = self.lookup(name) else {
                        self.unknown_tensor(name, *tensor_span);
                        return None;
                    };
                    let rank = self.tensors[tensor].rank;
                    if let [(name, var_span)] = binding.names.as_slice()
                        && rank != 1
                    {
                        let first = self.ints;
                        for axis in 0..rank {
                            let var = self.new_int();
                            loops.push((
                                var,
                                zero_at(*var_span),
                                dim_of(tensor, axis, *tensor_span),
                            ));
                        }
                        self.bind(name, Bound::Index(first, rank));
                        continue;
                    }
                    if binding.names.len() != rank {
                        self.type_error(
                            binding.span,
                            format!(
                                "`{name}` has rank {rank}, so its indices bind {rank} variables, not {}",
                                binding.names.len()
                            ),
                            "name one loop variable per axis",
                        );
                        return None;
                    }
                    for (axis, (var_name, var_span)) in binding.names.iter().enumerate() {
                        let var = self.new_int();
                        self.bind(var_name, Bound::Int(var));
                        loops.push((var, zero_at(*var_span), dim_of(tensor, axis, *tensor_span)));
                    }
                }
            }
        }
        let depth = loops.len();
        self.loop_depth += depth;
        let mut inner = self.block(body);
        // Iterations of the innermost loop are taps when its body updates a reduction that
        // outlives one iteration (a local declared outside it, or a tensor element).
        let taps = inner
            .iter()
            .any(|op| updates_across(op, &self.val_depths, self.loop_depth));
        self.loop_depth -= depth;
        self.scopes.pop();
        if loops.is_empty() {
            // the whole index of a rank-0 tensor: no loop, the body runs once
            return Some(Op::If {
                cond: Bool::Const(true),
                then: inner,
                otherwise: Vec::new(),
            });
        }
        for (level, (var, lo, hi)) in loops.into_iter().enumerate().rev() {
            let innermost = inner;
            inner = vec![Op::For {
                var,
                lo,
                hi,
                taps: taps && level + 1 == depth,
                body: innermost,
                span,
                plan: None,
            }];
        }
        inner.pop()
    }

    fn unknown_tensor(&mut self, name: &str, span: Span) {
        if self.lookup(name).is_some() {
            self.type_error(
                span,
                format!("`{name}` is not a tensor"),
                "loop over a range `lo..hi`, or over a tensor's indices",
            );
        } else {
            self.unknown_name(name, span);
        }
    }

    fn assignment(
        &mut self,
        target: &ast::Target,
        declared: Option<&ast::Declared>,
        op: AssignOp,
        value: &Expr,
        span: Span,
    ) -> Option<Op> {
        if let Some(index) = &target.index {
            return self.store(target, index, declared, op, value, span);
        }
        if let Some(declared) = declared {
            return self.declaration(target, declared, op, value, span);
        }
        let typed = self.expression(value)?;
        match (self.lookup(&target.name), typed) {
            (Some(Bound::Int(slot)), Typed::Int(value)) => Some(Op::SetInt {
                slot,
                op,
                value,
                span,
            }),
            (Some(Bound::Val(slot)), typed) => {
                let dtype = self.vals[slot];
                let value = self.value_of(typed, value.span, dtype)?;
                let update = update_of(
                    op,
                    &value,
                    |v| matches!(v.kind, ValKind::Slot(s) if s == slot),
                );
                Some(Op::SetVal {
                    slot,
                    op,
                    value,
                    update,
                    span,
                })
            }
            (Some(Bound::Int(_)), _) => {
                self.type_error(
                    value.span,
                    format!("`{}` holds an index; this is not one", target.name),
                    "an index local takes integer arithmetic on indices, dims and parameters",
                );
                None
            }
            (Some(Bound::Tensor(_) | Bound::Index(..)), _) => {
                self.type_error(
                    target.name_span,
                    format!("`{}` is a tensor: assign its elements", target.name),
                    "write `name[i, j] = value`",
                );
                None
            }
            (None, typed) if op == AssignOp::Set => self.new_local(target, typed, value.span, span),
            (None, _) => {
                self.unknown_name(&target.name, target.name_span);
                None
            }
        }
    }

    /// `name = value` for a new local: an index local for an index, a value local otherwise.
    fn new_local(
        &mut self,
        target: &ast::Target,
        typed: Typed,
        value_span: Span,
        span: Span,
    ) -> Option<Op> {
        if self.is_reserved(&target.name, target.name_span) {
            return None;
        }
        match typed {
            Typed::Int(value) => {
                let slot = self.new_int();
                self.bind(&target.name, Bound::Int(slot));
                Some(Op::SetInt {
                    slot,
                    op: AssignOp::Set,
                    value,
                    span,
                })
            }
            typed => {
                let dtype = match &typed {
                    Typed::Val(_, Some(dtype)) => *dtype,
                    _ => self.t,
                };
                let value = self.value_of(typed, value_span, dtype)?;
                let slot = self.new_val(&target.name, dtype);
                self.bind(&target.name, Bound::Val(slot));
                Some(Op::SetVal {
                    slot,
                    op: AssignOp::Set,
                    value,
                    update: Update::default(),
                    span,
                })
            }
        }
    }

    fn is_reserved(&mut self, name: &str, span: Span) -> bool {
        let taken = CONSTANTS.contains(&name)
            || self.signature.params.iter().any(|p| p.name == name)
            || self.tensors.iter().any(|t| t.name == name);
        if taken {
            self.type_error(
                span,
                format!("`{name}` is already a tensor, a parameter or a constant"),
                "give the local another name",
            );
        }
        taken
    }

    /// `name: dtype = value` or `name: dtype[shape] = value`.
    fn declaration(
        &mut self,
        target: &ast::Target,
        declared: &ast::Declared,
        op: AssignOp,
        value: &Expr,
        span: Span,
    ) -> Option<Op> {
        let Some(dtype) = ir::parse_dtype(&declared.dtype, self.t) else {
            self.type_error(
                declared.dtype_span,
                format!("`{}` is not a dtype", declared.dtype),
                "write `T` (the kernel's element dtype), `f64`, `f32`, `bf16` or `f16`",
            );
            return None;
        };
        if op != AssignOp::Set {
            self.type_error(
                span,
                format!(
                    "a declaration gives the first value with `=`, not `{}`",
                    op.symbol()
                ),
                "write `name: dtype = value`",
            );
            return None;
        }
        if self.is_reserved(&target.name, target.name_span) {
            return None;
        }
        if self
            .scopes
            .last()
            .is_some_and(|s| s.contains_key(&target.name))
        {
            self.type_error(
                target.name_span,
                format!("`{}` is declared twice in this block", target.name),
                "assign it again without `: dtype`, or use another name",
            );
            return None;
        }
        let typed = self.expression(value)?;
        let init = self.value_of(typed, value.span, dtype)?;
        match &declared.shape {
            None => {
                let slot = self.new_val(&target.name, dtype);
                self.bind(&target.name, Bound::Val(slot));
                Some(Op::SetVal {
                    slot,
                    op,
                    value: init,
                    update: Update::default(),
                    span,
                })
            }
            Some(shape) => {
                let shape = shape
                    .iter()
                    .map(|d| self.index(d))
                    .collect::<Option<Vec<Int>>>()?;
                self.tensors.push(ir::Tensor {
                    name: target.name.clone(),
                    origin: Origin::Local,
                    rank: shape.len(),
                    optional: false,
                    dtype,
                });
                let tensor = self.tensors.len() - 1;
                self.bind(&target.name, Bound::Tensor(tensor));
                Some(Op::Alloc {
                    tensor,
                    shape,
                    init,
                    span,
                })
            }
        }
    }

    fn store(
        &mut self,
        target: &ast::Target,
        index: &[Expr],
        declared: Option<&ast::Declared>,
        op: AssignOp,
        value: &Expr,
        span: Span,
    ) -> Option<Op> {
        if let Some(declared) = declared {
            self.type_error(
                declared.dtype_span,
                "an element is not declared".to_owned(),
                "declare the tensor first: `name: T[d0, d1] = 0`",
            );
            return None;
        }
        let Some(Bound::Tensor(tensor)) = self.lookup(&target.name) else {
            self.unknown_tensor(&target.name, target.name_span);
            return None;
        };
        if let Origin::Input(_) = self.tensors[tensor].origin {
            self.type_error(
                target.name_span,
                format!("`{}` is an input: the semantics only read it", target.name),
                "write the outputs, or a local tensor declared with `name: T[shape] = value`",
            );
            return None;
        }
        let index = self.indices(tensor, index, target.name_span)?;
        let dtype = self.tensors[tensor].dtype;
        let typed = self.expression(value)?;
        let value = self.value_of(typed, value.span, dtype)?;
        let update = update_of(
            op,
            &value,
            |v| matches!(&v.kind, ValKind::Read { tensor: t, index: i } if *t == tensor && *i == index),
        );
        Some(Op::Store {
            tensor,
            index,
            op,
            value,
            update,
            span,
        })
    }
}

/// The integer `0`, located.
fn zero_at(span: Span) -> Int {
    Int {
        kind: IntKind::Const(0),
        span,
    }
}

/// `tensor.dim[axis]`, located.
fn dim_of(tensor: usize, axis: usize, span: Span) -> Int {
    Int {
        kind: IntKind::Dim { tensor, axis },
        span,
    }
}

/// Whether an op updates, directly (through `if`s, not through nested loops), a reduction
/// declared outside `depth` loops (a value slot declared less deep, or any tensor element).
fn updates_across(op: &Op, val_depths: &[usize], depth: usize) -> bool {
    match op {
        Op::SetVal { slot, update, .. } => {
            update.reduction && val_depths.get(*slot).is_some_and(|d| *d < depth)
        }
        Op::Store { update, .. } => update.reduction,
        Op::If {
            then, otherwise, ..
        } => then
            .iter()
            .chain(otherwise)
            .any(|op| updates_across(op, val_depths, depth)),
        Op::For { .. } | Op::SetInt { .. } | Op::Alloc { .. } => false,
    }
}

/// How an assignment of `value` with `op` counts: `is_target` recognises a read of the
/// assigned slot or element (for `m = max(m, v)`).
fn update_of(op: AssignOp, value: &Val, is_target: impl Fn(&Val) -> bool) -> Update {
    let strip = |v: &Val| -> Val {
        let mut v = v.clone();
        while let ValKind::Cast(inner, _) = v.kind {
            v = *inner;
        }
        v
    };
    match op {
        AssignOp::Add | AssignOp::Sub => Update {
            mac: matches!(strip(value).kind, ValKind::Bin(ValOp::Mul, ..)),
            compare: false,
            reduction: true,
        },
        AssignOp::Mul => Update {
            mac: false,
            compare: false,
            reduction: true,
        },
        AssignOp::Set => match &strip(value).kind {
            ValKind::Func(Func::Max | Func::Min, args, _)
                if args.first().is_some_and(|a| is_target(&strip(a))) =>
            {
                Update {
                    mac: false,
                    compare: true,
                    reduction: true,
                }
            }
            _ => Update::default(),
        },
    }
}
