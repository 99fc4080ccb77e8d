//! The evaluator: [`Expr`] + [`Bindings`] → [`Value`], with checked `i64` arithmetic.
//!
//! `+ - *` and unary `-` fail with [`ExprErrorKind::Overflow`] instead of wrapping; `/` and
//! `%` are **floor** division and modulo (Python's: `-7 / 2 == -4`, `-7 % 2 == 1`), and a zero
//! divisor is [`ExprErrorKind::DivisionByZero`]. `&&` and `||` short-circuit. Type errors use
//! the checker's rules and messages, so evaluating unchecked input reports what `check`
//! would have. Recursion is bounded by [`MAX_HEIGHT`](super::MAX_HEIGHT).

use std::collections::BTreeMap;
use std::fmt;

use super::ast::{Arg, BinOp, Expr, ExprKind, UnOp};
use super::check::{
    Builtin, Scope, arity, bad_index_type, binary_type, division_by_zero, index_out_of_range,
    member_type, no_keywords, not_indexable, too_deep, unary_type, unknown_function, unknown_name,
};
use super::error::{ExprError, ExprErrorKind};
use super::parser::MAX_HEIGHT;
use super::span::Span;
use super::value::{Type, Value};

/// A caller-defined pure function: arguments in, value or message out.
pub type NativeFn = dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync;

/// The values (and caller-defined functions) an expression is evaluated against.
#[derive(Default)]
pub struct Bindings {
    values: BTreeMap<String, Value>,
    functions: BTreeMap<String, Box<NativeFn>>,
}

impl fmt::Debug for Bindings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bindings")
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

    /// Binds (or rebinds) a root name.
    pub fn insert(&mut self, name: impl Into<String>, value: Value) -> &mut Bindings {
        self.values.insert(name.into(), value);
        self
    }

    /// Registers a caller-defined function; it shadows a built-in of the same name.
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
        self.values.get(name)
    }

    /// The bound root names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.values.keys().map(String::as_str).collect()
    }

    /// A [`Scope`] giving each bound name the type of its value (functions not included:
    /// their signatures are unknown here).
    pub fn scope(&self) -> Scope {
        let mut scope = Scope::new();
        for (name, value) in &self.values {
            scope.insert(name.clone(), value.type_of());
        }
        scope
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
    Evaluator { bindings }.value(expr, 0)
}

struct Evaluator<'b> {
    bindings: &'b Bindings,
}

impl Evaluator<'_> {
    fn value(&self, e: &Expr, depth: usize) -> Result<Value, ExprError> {
        if depth > MAX_HEIGHT {
            return Err(too_deep(e.span));
        }
        match &e.kind {
            ExprKind::Int(v) => Ok(Value::Int(*v)),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::Name(name) => self.name(name, e.span),
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

    fn name(&self, name: &str, span: Span) -> Result<Value, ExprError> {
        self.bindings.get(name).cloned().ok_or_else(|| {
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
        if let Value::Bool(b) = l {
            if b == (op == BinOp::Or) {
                return Ok(Value::Bool(b));
            }
        }
        let r = self.value(rhs, depth + 1)?;
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

fn call_builtin(
    builtin: Builtin,
    args: &[Arg],
    values: &[Value],
    span: Span,
) -> Result<Value, ExprError> {
    let typed: Vec<(Type, Span)> = values
        .iter()
        .zip(args)
        .map(|(v, a)| (v.type_of(), a.value.span))
        .collect();
    builtin.check(&typed, span)?;
    let ints: Vec<i64> = values.iter().filter_map(Value::as_int).collect();
    Ok(match (builtin, ints.as_slice()) {
        (Builtin::Divisible, [a, b]) => Value::Bool(divisible(*a, *b)),
        (Builtin::Min, _) => Value::Int(ints.iter().copied().min().unwrap_or(0)),
        (Builtin::Max, _) => Value::Int(ints.iter().copied().max().unwrap_or(0)),
        (Builtin::Divisible, _) => return Err(arity("divisible", "2", ints.len(), span)),
    })
}

/// `b != 0 && a % b == 0`: a zero divisor divides nothing (false, not an error).
pub fn divisible(a: i64, b: i64) -> bool {
    b != 0 && a.wrapping_rem(b) == 0
}

/// Floor division (rounds toward negative infinity); `None` when `b == 0` or on overflow.
pub fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

/// Floor modulo (the result has the sign of `b`); `None` when `b == 0`.
pub fn floor_mod(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let r = a.wrapping_rem(b);
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

fn unary(op: UnOp, v: Value, span: Span, operand_span: Span) -> Result<Value, ExprError> {
    match (op, &v) {
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
    binary_type(op, (&l.type_of(), lhs.1), (&r.type_of(), rhs.1.span), span)?;
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
    let result = match op {
        BinOp::Add => a.checked_add(b),
        BinOp::Sub => a.checked_sub(b),
        BinOp::Mul => a.checked_mul(b),
        BinOp::Div => floor_div(a, b),
        BinOp::Rem => floor_mod(a, b),
        BinOp::Lt => return Ok(Value::Bool(a < b)),
        BinOp::Le => return Ok(Value::Bool(a <= b)),
        BinOp::Gt => return Ok(Value::Bool(a > b)),
        BinOp::Ge => return Ok(Value::Bool(a >= b)),
        BinOp::Eq | BinOp::Ne | BinOp::And | BinOp::Or => None,
    };
    result.map(Value::Int).ok_or_else(|| {
        ExprError::new(
            ExprErrorKind::Overflow,
            span,
            format!("overflow: {a} {op} {b} does not fit in i64"),
        )
        .with_help("the formula's value exceeds the 64-bit integer range")
    })
}
