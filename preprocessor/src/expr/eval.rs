//! The evaluator: [`Expr`] + [`Bindings`] → [`Value`], with checked `i64` arithmetic.
//!
//! `+ - *` and unary `-` fail with [`ExprErrorKind::Overflow`] instead of wrapping; `/` and
//! `%` are **floor** division and modulo (Python's: `-7 / 2 == -4`, `-7 % 2 == 1`), and a zero
//! divisor is [`ExprErrorKind::DivisionByZero`]. `&&` and `||` short-circuit. Type errors use
//! the checker's rules and messages, so evaluating unchecked input reports what `check`
//! would have. Recursion is bounded by [`MAX_HEIGHT`](super::MAX_HEIGHT).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::ast::{Arg, BinOp, Expr, ExprKind, UnOp};
use super::error::{ExprError, ExprErrorKind};
use super::parser::MAX_HEIGHT;
use super::rules::{
    Builtin, arity, bad_index_type, binary_type, division_by_zero, index_out_of_range, member_type,
    no_keywords, not_indexable, too_deep, unary_type, unknown_function, unknown_name,
};
use super::slots::Slots;
use super::span::Span;
#[cfg(any(test, feature = "internals"))] // `typed_names`, for the tests and fuzzers
use super::value::Type;
use super::value::{Real, Value};

/// A caller-defined pure function: arguments in, value or message out.
pub type NativeFn = dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync;

/// The values (and caller-defined functions) an expression is evaluated against.
#[derive(Default)]
pub struct Bindings {
    /// The values of a [`Slots`] table's names, by slot ([`Bindings::framed`]).
    frame: Option<(Arc<Slots>, Vec<Option<Value>>)>,
    /// The values of every other name.
    values: BTreeMap<String, Value>,
    functions: BTreeMap<String, Box<NativeFn>>,
}

impl fmt::Debug for Bindings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bindings")
            .field("frame", &self.frame)
            .field("values", &self.values)
            .field("functions", &self.functions.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Bindings {
    /// No bindings (the built-in functions are always available).
    pub fn new() -> Bindings {
        Bindings::default()
    }

    /// Bindings that keep the values of `slots`' names in a frame, by slot: an expression
    /// resolved against the same table ([`Slots::resolve`]) reads them without a search.
    pub fn framed(slots: &Arc<Slots>) -> Bindings {
        Bindings {
            frame: Some((Arc::clone(slots), vec![None; slots.len()])),
            ..Bindings::default()
        }
    }

    /// Binds (or rebinds) a root name.
    pub fn insert(&mut self, name: impl AsRef<str> + Into<String>, value: Value) -> &mut Bindings {
        match self.frame_cell(name.as_ref()) {
            Some(cell) => *cell = Some(value),
            None => {
                self.values.insert(name.into(), value);
            }
        }
        self
    }

    /// Binds `name` in `slot` of the frame (found once with [`Slots::slot`] on the frame's
    /// table), without searching the table: when the frame has no such slot or another name
    /// holds it, this is [`Bindings::insert`].
    pub fn insert_at(&mut self, slot: Option<usize>, name: &str, value: Value) -> &mut Bindings {
        let cell = slot.and_then(|slot| {
            let (slots, frame) = self.frame.as_mut()?;
            (slots.name(slot)? == name).then(|| frame.get_mut(slot))?
        });
        match cell {
            Some(cell) => *cell = Some(value),
            None => {
                self.insert(name, value);
            }
        }
        self
    }

    fn frame_cell(&mut self, name: &str) -> Option<&mut Option<Value>> {
        let (slots, frame) = self.frame.as_mut()?;
        frame.get_mut(slots.slot(name)?)
    }

    /// Registers a caller-defined function; it shadows a built-in of the same name.
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn insert_function(
        &mut self,
        name: impl Into<String>,
        function: impl Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) -> &mut Bindings {
        self.functions.insert(name.into(), Box::new(function));
        self
    }

    /// The value bound to a root name.
    pub fn get(&self, name: &str) -> Option<&Value> {
        let framed = self
            .frame
            .as_ref()
            .and_then(|(slots, frame)| frame.get(slots.slot(name)?)?.as_ref());
        framed.or_else(|| self.values.get(name))
    }

    /// The value bound to a name that a tree resolved to `slot`: read from the frame when the
    /// slot holds that very name (the tree may have been resolved against another table),
    /// otherwise looked up.
    fn get_resolved(&self, name: &str, slot: Option<u32>) -> Option<&Value> {
        self.in_frame(name, slot).or_else(|| self.get(name))
    }

    fn in_frame(&self, name: &str, slot: Option<u32>) -> Option<&Value> {
        let (slots, frame) = self.frame.as_ref()?;
        let slot = usize::try_from(slot?).ok()?;
        if slots.name(slot)? != name {
            return None;
        }
        frame.get(slot)?.as_ref()
    }

    /// Every bound (name, value), sorted by name.
    fn bound(&self) -> Vec<(&str, &Value)> {
        let mut all: Vec<(&str, &Value)> = self
            .values
            .iter()
            .map(|(name, value)| (name.as_str(), value))
            .collect();
        if let Some((slots, frame)) = &self.frame {
            let framed = frame
                .iter()
                .enumerate()
                .filter_map(|(slot, value)| Some((slots.name(slot)?, value.as_ref()?)));
            all.extend(framed);
        }
        all.sort_by_key(|(name, _)| *name);
        all
    }

    /// The bound root names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.bound().into_iter().map(|(name, _)| name).collect()
    }

    /// Each bound root name with the type of its value, sorted (what a type-checking scope
    /// needs of them).
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn typed_names(&self) -> Vec<(&str, Type)> {
        self.bound()
            .into_iter()
            .map(|(name, value)| (name, value.type_of()))
            .collect()
    }

    fn function_names(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self
            .functions
            .keys()
            .map(String::as_str)
            .chain(Builtin::NAMES)
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// Evaluates `expr` against `bindings`; the first error stops evaluation.
pub fn eval(expr: &Expr, bindings: &Bindings) -> Result<Value, ExprError> {
    let evaluator = Evaluator { bindings };
    match evaluator.scalar(expr, 0) {
        Some(scalar) => Ok(scalar.into()),
        None => evaluator.value(expr, 0),
    }
}

/// What the allocation-free fast path computes: an integer or a boolean.
#[derive(Debug, Clone, Copy)]
enum Scalar {
    Int(i64),
    Bool(bool),
}

impl From<Scalar> for Value {
    fn from(scalar: Scalar) -> Value {
        match scalar {
            Scalar::Int(v) => Value::Int(v),
            Scalar::Bool(b) => Value::Bool(b),
        }
    }
}

struct Evaluator<'b> {
    bindings: &'b Bindings,
}

impl Evaluator<'_> {
    /// The value of `e` when integers and booleans alone make it and nothing fails, computed
    /// without building a [`Value`] or an error; `None` otherwise, and [`Evaluator::value`]
    /// decides (the two agree wherever this gives a value: the same checked arithmetic, floor
    /// division, short-circuits and built-ins).
    fn scalar(&self, e: &Expr, depth: usize) -> Option<Scalar> {
        if depth > MAX_HEIGHT {
            return None;
        }
        match &e.kind {
            ExprKind::Int(v) => Some(Scalar::Int(*v)),
            ExprKind::Float(_) | ExprKind::Text(_) => None,
            ExprKind::Bool(b) => Some(Scalar::Bool(*b)),
            ExprKind::Name(_) | ExprKind::Member { .. } | ExprKind::Index { .. } => {
                match self.borrowed(e, depth)? {
                    Value::Int(v) => Some(Scalar::Int(*v)),
                    Value::Bool(b) => Some(Scalar::Bool(*b)),
                    _ => None,
                }
            }
            ExprKind::Unary { op, operand } => match (op, self.scalar(operand, depth + 1)?) {
                (UnOp::Neg, Scalar::Int(v)) => v.checked_neg().map(Scalar::Int),
                (UnOp::Not, Scalar::Bool(b)) => Some(Scalar::Bool(!b)),
                _ => None,
            },
            ExprKind::Binary { op, lhs, rhs, .. } => {
                let l = self.scalar(lhs, depth + 1)?;
                if let (true, Scalar::Bool(b)) = (op.is_logical(), l)
                    && b == (*op == BinOp::Or)
                {
                    return Some(l);
                }
                scalar_binary(*op, l, self.scalar(rhs, depth + 1)?)
            }
            ExprKind::Call { name, args, .. } => self.scalar_call(name, args, depth),
            ExprKind::Tuple(_) => None,
        }
    }

    /// A built-in called with integers only (never one a caller's function shadows).
    fn scalar_call(&self, name: &str, args: &[Arg], depth: usize) -> Option<Scalar> {
        if self.bindings.functions.contains_key(name) || args.iter().any(|a| a.name.is_some()) {
            return None;
        }
        let builtin = Builtin::lookup(name)?;
        let int = |arg: &Arg| match self.scalar(&arg.value, depth + 1)? {
            Scalar::Int(v) => Some(v),
            Scalar::Bool(_) => None,
        };
        match (builtin, args) {
            (Builtin::Divisible, [a, b]) => Some(Scalar::Bool(divisible(int(a)?, int(b)?))),
            (Builtin::Min | Builtin::Max, [first, rest @ ..]) if !rest.is_empty() => {
                let mut folded = int(first)?;
                for arg in rest {
                    let v = int(arg)?;
                    folded = if builtin == Builtin::Min {
                        folded.min(v)
                    } else {
                        folded.max(v)
                    };
                }
                Some(Scalar::Int(folded))
            }
            _ => None,
        }
    }

    fn value(&self, e: &Expr, depth: usize) -> Result<Value, ExprError> {
        if depth > MAX_HEIGHT {
            return Err(too_deep(e.span));
        }
        // `x.dim[1]`, `stride[0]`: read the bound value in place instead of cloning the record.
        if matches!(e.kind, ExprKind::Member { .. } | ExprKind::Index { .. })
            && let Some(found) = self.borrowed(e, depth)
        {
            return Ok(found.clone());
        }
        match &e.kind {
            ExprKind::Int(v) => Ok(Value::Int(*v)),
            ExprKind::Float(bits) => Ok(Value::Float(Real(f64::from_bits(*bits)))),
            ExprKind::Text(text) => Ok(Value::Text(text.clone())),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::Name(name) => self.name(name, e.slot, e.span),
            ExprKind::Tuple(items) => items
                .iter()
                .map(|i| self.value(i, depth + 1))
                .collect::<Result<_, _>>()
                .map(Value::Tuple),
            ExprKind::Unary { op, operand } => {
                unary(*op, self.value(operand, depth + 1)?, e.span, operand.span)
            }
            ExprKind::Binary { op, lhs, rhs, .. } if op.is_logical() => {
                self.logical(*op, lhs, rhs, e.span, depth)
            }
            ExprKind::Binary { op, lhs, rhs, .. } => {
                let l = self.value(lhs, depth + 1)?;
                let r = self.value(rhs, depth + 1)?;
                binary(*op, (l, lhs.span), (r, rhs), e.span)
            }
            ExprKind::Member {
                base,
                field,
                field_span,
            } => {
                let record = self.value(base, depth + 1)?;
                match record.field(field) {
                    Some(v) => Ok(v.clone()),
                    None => Err(member_type(&record.type_of(), base, field, *field_span)
                        .err()
                        .unwrap_or_else(|| {
                            ExprError::new(ExprErrorKind::Type, *field_span, "no such field")
                        })),
                }
            }
            ExprKind::Index { base, index } => self.index(base, index, depth),
            ExprKind::Call {
                name,
                name_span,
                args,
            } => self.call(name, *name_span, args, e.span, depth),
        }
    }

    /// The bound value a path of names, fields and literal-free indices denotes, borrowed;
    /// `None` whenever the slow path must decide (including every error case).
    fn borrowed(&self, e: &Expr, depth: usize) -> Option<&Value> {
        if depth > MAX_HEIGHT {
            return None;
        }
        match &e.kind {
            ExprKind::Name(name) => self.bindings.get_resolved(name, e.slot),
            ExprKind::Member { base, field, .. } => self.borrowed(base, depth + 1)?.field(field),
            ExprKind::Index { base, index } => {
                let Value::Tuple(items) = self.borrowed(base, depth + 1)? else {
                    return None;
                };
                let Ok(Value::Int(i)) = self.value(index, depth + 1) else {
                    return None;
                };
                items.get(usize::try_from(i).ok()?)
            }
            _ => None,
        }
    }

    fn name(&self, name: &str, slot: Option<u32>, span: Span) -> Result<Value, ExprError> {
        self.bindings
            .get_resolved(name, slot)
            .cloned()
            .ok_or_else(|| {
                unknown_name(
                    name,
                    span,
                    self.bindings.names(),
                    &self.bindings.function_names(),
                )
            })
    }

    /// `&&` / `||`: the right operand is evaluated only when it decides the result.
    fn logical(
        &self,
        op: BinOp,
        lhs: &Expr,
        rhs: &Expr,
        span: Span,
        depth: usize,
    ) -> Result<Value, ExprError> {
        let l = self.value(lhs, depth + 1)?;
        if let Value::Bool(b) = l
            && b == (op == BinOp::Or)
        {
            return Ok(Value::Bool(b));
        }
        let r = self.value(rhs, depth + 1)?;
        if let (Value::Bool(_), Value::Bool(b)) = (&l, &r) {
            return Ok(Value::Bool(*b)); // well typed: no need to build the types
        }
        binary_type(op, (&l.type_of(), lhs.span), (&r.type_of(), rhs.span), span)?;
        match r {
            Value::Bool(b) => Ok(Value::Bool(b)),
            _ => Err(ExprError::new(
                ExprErrorKind::Type,
                rhs.span,
                "expected bool",
            )),
        }
    }

    fn index(&self, base: &Expr, index: &Expr, depth: usize) -> Result<Value, ExprError> {
        let tuple = self.value(base, depth + 1)?;
        let i = match self.value(index, depth + 1)? {
            Value::Int(i) => i,
            other => return Err(bad_index_type(&other.type_of(), index.span)),
        };
        let Value::Tuple(items) = tuple else {
            return Err(not_indexable(&tuple.type_of(), base, index.span));
        };
        let element = usize::try_from(i).ok().and_then(|i| items.get(i));
        element
            .cloned()
            .ok_or_else(|| index_out_of_range(i, items.len(), base, index.span))
    }

    fn call(
        &self,
        name: &str,
        name_span: Span,
        args: &[Arg],
        span: Span,
        depth: usize,
    ) -> Result<Value, ExprError> {
        let function = self.bindings.functions.get(name);
        let builtin = Builtin::lookup(name);
        if function.is_none() && builtin.is_none() {
            let is_name = self.bindings.get(name).is_some();
            return Err(unknown_function(
                name,
                name_span,
                &self.bindings.function_names(),
                is_name,
            ));
        }
        no_keywords(name, args)?;
        let values = args
            .iter()
            .map(|a| self.value(&a.value, depth + 1))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(function) = function {
            return function(&values).map_err(|message| {
                ExprError::new(
                    ExprErrorKind::Function,
                    span,
                    format!("`{name}` failed: {message}"),
                )
            });
        }
        match builtin {
            Some(builtin) => call_builtin(builtin, args, &values, span),
            None => Err(arity(name, "0", values.len(), span)),
        }
    }
}

/// `l op r` on scalars, `None` where [`binary`] or [`Evaluator::logical`] would fail.
fn scalar_binary(op: BinOp, l: Scalar, r: Scalar) -> Option<Scalar> {
    let (a, b) = match (l, r) {
        (Scalar::Bool(a), Scalar::Bool(b)) => {
            return match op {
                BinOp::And | BinOp::Or => Some(r),
                BinOp::Eq => Some(Scalar::Bool(a == b)),
                BinOp::Ne => Some(Scalar::Bool(a != b)),
                _ => None,
            };
        }
        (Scalar::Int(a), Scalar::Int(b)) => (a, b),
        _ => return None,
    };
    let int = |v: Option<i64>| v.map(Scalar::Int);
    match op {
        BinOp::Add => int(a.checked_add(b)),
        BinOp::Sub => int(a.checked_sub(b)),
        BinOp::Mul => int(a.checked_mul(b)),
        BinOp::Div => int(floor_div(a, b)),
        BinOp::Rem => int(floor_mod(a, b)),
        BinOp::Lt => Some(Scalar::Bool(a < b)),
        BinOp::Le => Some(Scalar::Bool(a <= b)),
        BinOp::Gt => Some(Scalar::Bool(a > b)),
        BinOp::Ge => Some(Scalar::Bool(a >= b)),
        BinOp::Eq => Some(Scalar::Bool(a == b)),
        BinOp::Ne => Some(Scalar::Bool(a != b)),
        BinOp::And | BinOp::Or => None,
    }
}

/// A comparison or arithmetic with a float operand, by IEEE 754's rules (a NaN compares
/// false, except `!=`).
fn float_binary(op: BinOp, l: &Value, r: &Value, span: Span) -> Result<Value, ExprError> {
    let (Some(a), Some(b)) = (l.as_number(), r.as_number()) else {
        return Err(ExprError::new(
            ExprErrorKind::Type,
            span,
            format!("`{op}` needs numbers"),
        ));
    };
    let truth = |b: bool| Ok(Value::Bool(b));
    let number = |v: f64| Ok(Value::Float(Real(v)));
    match op {
        BinOp::Lt => truth(a < b),
        BinOp::Le => truth(a <= b),
        BinOp::Gt => truth(a > b),
        BinOp::Ge => truth(a >= b),
        BinOp::Eq => truth(a == b),
        BinOp::Ne => truth(a != b),
        BinOp::Add => number(a + b),
        BinOp::Sub => number(a - b),
        BinOp::Mul => number(a * b),
        BinOp::Div => number(a / b),
        BinOp::Rem | BinOp::And | BinOp::Or => Err(ExprError::new(
            ExprErrorKind::Type,
            span,
            format!("`{op}` needs int operands"),
        )),
    }
}

fn unary(op: UnOp, v: Value, span: Span, operand_span: Span) -> Result<Value, ExprError> {
    match (op, &v) {
        (UnOp::Neg, Value::Float(x)) => Ok(Value::Float(Real(-x.value()))),
        (UnOp::Neg, Value::Int(i)) => i.checked_neg().map(Value::Int).ok_or_else(|| {
            ExprError::new(
                ExprErrorKind::Overflow,
                span,
                format!("overflow: -({i}) does not fit in i64"),
            )
        }),
        (UnOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
        _ => Err(unary_type(op, &v.type_of(), operand_span)
            .err()
            .unwrap_or_else(|| ExprError::new(ExprErrorKind::Type, operand_span, "bad operand"))),
    }
}

/// A non-logical binary operator on evaluated operands.
fn binary(
    op: BinOp,
    lhs: (Value, Span),
    rhs: (Value, &Expr),
    span: Span,
) -> Result<Value, ExprError> {
    let (l, r) = (&lhs.0, &rhs.0);
    // Two integers suit every non-logical operator: type the operands only otherwise.
    if !matches!((l, r), (Value::Int(_), Value::Int(_))) {
        binary_type(op, (&l.type_of(), lhs.1), (&r.type_of(), rhs.1.span), span)?;
    }
    if matches!(l, Value::Float(_)) || matches!(r, Value::Float(_)) {
        return float_binary(op, l, r, span);
    }
    if matches!(op, BinOp::Eq | BinOp::Ne) {
        return Ok(Value::Bool((l == r) == (op == BinOp::Eq)));
    }
    let (Value::Int(a), Value::Int(b)) = (l, r) else {
        return Err(ExprError::new(
            ExprErrorKind::Type,
            span,
            format!("`{op}` needs int operands"),
        ));
    };
    let (a, b) = (*a, *b);
    if matches!(op, BinOp::Div | BinOp::Rem) && b == 0 {
        return Err(division_by_zero(op, rhs.1));
    }
    if op.is_logical() {
        return Err(ExprError::new(
            ExprErrorKind::Type,
            span,
            format!("`{op}` is not arithmetic"),
        ));
    }
    // The arithmetic is the fast path's: what it cannot compute here is an overflow.
    let result = scalar_binary(op, Scalar::Int(a), Scalar::Int(b));
    result.map(Value::from).ok_or_else(|| {
        ExprError::new(
            ExprErrorKind::Overflow,
            span,
            format!("overflow: {a} {op} {b} does not fit in i64"),
        )
        .with_help("the formula's value exceeds the 64-bit integer range")
    })
}

mod builtins;

pub use builtins::{divisible, floor_div, floor_mod, normalized_axes};
use builtins::call_builtin;

#[cfg(test)]
mod tests;
