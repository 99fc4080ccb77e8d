//! The checker: a parsed program against the contract's signature (its inputs, outputs and
//! parameters) → an [`ir::Program`]. Every name must bind (a did-you-mean otherwise), every
//! expression is typed — an index, a condition or an element value with its dtype — and every
//! statement is one the interpreter can run. All errors are collected, each located.

use super::ast::{self, AssignOp, BinOp, CmpOp, Domain, Expr, ExprKind, Stmt, StmtKind, UnOp};
use super::error::{SemanticsError, SemanticsErrorKind};
use super::ir::{self, Bool, Func, Int, IntKind, IntOp, Op, Origin, Update, Val, ValKind, ValOp};
use crate::expr::Span;
use fkc_provider::DType;
use std::collections::HashMap;

/// What the contract declares, as the pseudo-code sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Signature {
    pub inputs: Vec<SigTensor>,
    pub outputs: Vec<SigTensor>,
    pub params: Vec<ir::Param>,
    /// An input the signature does not declare is never present: `present(name)` is false and
    /// the block it guards is not checked (an op kind's standard semantics name every optional
    /// input of the op kind; a contract may declare fewer).
    pub undeclared_absent: bool,
}

/// An input or output of the contract.
#[derive(Debug, Clone, PartialEq)]
pub struct SigTensor {
    pub name: String,
    pub rank: usize,
    pub optional: bool,
}

/// Checks `program` against `signature`, with `T` the element dtype `t`.
pub fn check(
    program: &ast::Program,
    signature: &Signature,
    t: DType,
) -> Result<ir::Program, Vec<SemanticsError>> {
    let mut checker = Checker::new(signature, t);
    let mut body = checker.block(&program.body);
    let mut forms = 0;
    super::fast::plan_all(&mut body, &mut forms);
    if checker.errors.is_empty() {
        Ok(ir::Program {
            body,
            forms,
            tensors: checker.tensors,
            params: signature.params.clone(),
            selects: checker.selects,
            ints: checker.ints,
            vals: checker.vals,
            val_names: checker.val_names,
            lowered: Default::default(),
        })
    } else {
        Err(checker.errors)
    }
}

/// What a name means in a scope.
#[derive(Debug, Clone, Copy)]
enum Bound {
    Int(usize),
    Val(usize),
    Tensor(usize),
    /// A whole index of a tensor (`for i in out:` over a tensor of rank other than 1): one
    /// integer slot per axis, starting at this one.
    Index(usize, usize),
}

/// A typed expression.
#[derive(Debug, Clone)]
enum Typed {
    Int(Int),
    Bool(Bool),
    /// A value, with the dtype it holds (`None`: a literal, which takes its partner's).
    Val(Val, Option<DType>),
    /// A tuple parameter (only indexed).
    Tuple(usize, usize),
    /// A tensor (only indexed, or asked `.dim` / `.rank` / `present`).
    Tensor(usize),
    /// `t.dim` (only indexed).
    Dims(usize),
    /// A whole index (`i` of `for i in out:`): `rank` integer slots from `first`.
    Index {
        first: usize,
        rank: usize,
    },
}

struct Checker<'s> {
    signature: &'s Signature,
    t: DType,
    tensors: Vec<ir::Tensor>,
    scopes: Vec<HashMap<String, Bound>>,
    ints: usize,
    vals: Vec<DType>,
    val_names: Vec<String>,
    /// For each value slot, how many loops enclose its declaration.
    val_depths: Vec<usize>,
    /// How many loops enclose the statement being checked.
    loop_depth: usize,
    /// A `max` or `min` of values was seen.
    selects: bool,
    errors: Vec<SemanticsError>,
}

const CONSTANTS: &[&str] = &["true", "false", "inf", "nan"];
const FUNCTIONS: &[&str] = &[
    "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "abs", "max", "min", "select", "cast", "present",
    "isnan",
];

impl<'s> Checker<'s> {
    fn new(signature: &'s Signature, t: DType) -> Self {
        let tensor = |sig: &SigTensor, origin| ir::Tensor {
            name: sig.name.clone(),
            origin,
            rank: sig.rank,
            optional: sig.optional,
            dtype: t,
        };
        let tensors = signature
            .inputs
            .iter()
            .enumerate()
            .map(|(i, s)| tensor(s, Origin::Input(i)))
            .chain(
                signature
                    .outputs
                    .iter()
                    .enumerate()
                    .map(|(i, s)| tensor(s, Origin::Output(i))),
            )
            .collect();
        Checker {
            signature,
            t,
            tensors,
            scopes: vec![HashMap::new()],
            ints: 0,
            vals: Vec::new(),
            val_names: Vec::new(),
            val_depths: Vec::new(),
            loop_depth: 0,
            selects: false,
            errors: Vec::new(),
        }
    }

    fn error(&mut self, kind: SemanticsErrorKind, span: Span, message: String, help: &str) {
        self.errors
            .push(SemanticsError::new(kind, span, message, help.to_owned()));
    }

    fn type_error(&mut self, span: Span, message: String, help: &str) {
        self.error(SemanticsErrorKind::Type, span, message, help);
    }

    fn lookup(&self, name: &str) -> Option<Bound> {
        for scope in self.scopes.iter().rev() {
            if let Some(bound) = scope.get(name) {
                return Some(*bound);
            }
        }
        self.tensors
            .iter()
            .position(|t| t.name == name && t.origin != Origin::Local)
            .map(Bound::Tensor)
    }

    fn bind(&mut self, name: &str, bound: Bound) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_owned(), bound);
        }
    }

    fn new_int(&mut self) -> usize {
        self.ints += 1;
        self.ints - 1
    }

    fn new_val(&mut self, name: &str, dtype: DType) -> usize {
        self.vals.push(dtype);
        self.val_names.push(name.to_owned());
        self.val_depths.push(self.loop_depth);
        self.vals.len() - 1
    }

    /// Every name in scope, for a did-you-mean.
    fn names_in_scope(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .scopes
            .iter()
            .flat_map(|s| s.keys().cloned())
            .chain(self.tensors.iter().map(|t| t.name.clone()))
            .chain(self.signature.params.iter().map(|p| p.name.clone()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn unknown_name(&mut self, name: &str, span: Span) {
        let names = self.names_in_scope();
        let candidates: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .chain(CONSTANTS.iter().copied())
            .collect();
        let close = crate::diag::did_you_mean(name, candidates.iter().copied())
            .filter(|_| name.chars().count() > 1); // a one-letter name is close to every other
        let help = match close {
            Some(close) => format!("did you mean `{close}`?"),
            None => format!(
                "names in scope: {}",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        self.error(
            SemanticsErrorKind::UnknownName,
            span,
            format!("`{name}` is not bound here"),
            &help,
        );
    }

    fn block(&mut self, statements: &[Stmt]) -> Vec<Op> {
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

    /// The indices of an element of `tensor`: one index expression per axis.
    fn indices(&mut self, tensor: usize, index: &[Expr], span: Span) -> Option<Vec<Int>> {
        let rank = self.tensors[tensor].rank;
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

    /// An expression that must be an index.
    fn index(&mut self, expr: &Expr) -> Option<Int> {
        match self.expression(expr)? {
            Typed::Int(int) => Some(int),
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
    fn condition(&mut self, expr: &Expr) -> Option<Bool> {
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
    fn value_of(&mut self, typed: Typed, span: Span, dtype: DType) -> Option<Val> {
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

    fn expression(&mut self, expr: &Expr) -> Option<Typed> {
        let span = expr.span;
        match &expr.kind {
            ExprKind::Int(v) => Some(Typed::Int(Int {
                kind: IntKind::Const(*v),
                span,
            })),
            ExprKind::Float(v) => Some(constant(*v, span)),
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
            return Some(match self.signature.params[param].width {
                None => Typed::Int(Int {
                    kind: IntKind::Param {
                        param,
                        element: None,
                    },
                    span,
                }),
                Some(width) => Typed::Tuple(param, width),
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
                let axis = self.constant_index(indices, rank, span)?;
                Some(Typed::Int(Int {
                    kind: IntKind::Dim { tensor, axis },
                    span,
                }))
            }
            Typed::Index { first, rank } => {
                let axis = self.constant_index(indices, rank, span)?;
                Some(Typed::Int(Int {
                    kind: IntKind::Slot(first + axis),
                    span,
                }))
            }
            Typed::Tuple(param, width) => {
                let element = self.constant_index(indices, width, span)?;
                Some(Typed::Int(Int {
                    kind: IntKind::Param {
                        param,
                        element: Some(element),
                    },
                    span,
                }))
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

    fn call(&mut self, name: &str, name_span: Span, args: &[Expr], span: Span) -> Option<Typed> {
        match name {
            "present" => {
                if let [arg] = args
                    && let Some(name) = arg.as_name()
                    && self.signature.undeclared_absent
                    && self.lookup(name).is_none()
                {
                    return Some(Typed::Bool(Bool::Const(false)));
                }
                let tensor = match args {
                    [arg] => match self.expression(arg)? {
                        Typed::Tensor(tensor) => Some(tensor),
                        _ => None,
                    },
                    _ => None,
                };
                let Some(tensor) = tensor else {
                    self.type_error(
                        span,
                        "`present` takes one input".to_owned(),
                        "write `present(bias)`",
                    );
                    return None;
                };
                Some(Typed::Bool(Bool::Present(tensor)))
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

    fn unary(&mut self, op: UnOp, operand: &Expr, span: Span) -> Option<Typed> {
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

    fn binary(&mut self, op: BinOp, lhs: &Expr, rhs: &Expr, span: Span) -> Option<Typed> {
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

    fn compare(&mut self, first: &Expr, rest: &[(CmpOp, Span, Expr)]) -> Option<Typed> {
        let mut operands = vec![self.expression(first)?];
        for (_, _, e) in rest {
            operands.push(self.expression(e)?);
        }
        let ops: Vec<CmpOp> = rest.iter().map(|(op, _, _)| *op).collect();
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

/// Whether a condition compares element values.
fn compares_values(cond: &Bool) -> bool {
    match cond {
        Bool::CompareVal(..) | Bool::IsNan(_) => true,
        Bool::Not(c) => compares_values(c),
        Bool::And(a, b) | Bool::Or(a, b) => compares_values(a) || compares_values(b),
        Bool::Const(_) | Bool::CompareInt(..) | Bool::Present(_) => false,
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
