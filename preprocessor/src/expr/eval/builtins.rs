//! The built-in functions' values ([`Builtin`]), and the integer arithmetic the language and
//! the gate share: `divisible`, floor division and floor modulo.

use super::super::ast::Arg;
use super::super::error::ExprError;
use super::super::rules::{Builtin, arity};
use super::super::span::Span;
use super::super::value::{Type, Value};

/// A built-in called with `values` (checked against its signature first).
pub(super) fn call_builtin(
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
    let list = || -> Vec<i64> {
        match values.first() {
            Some(Value::Tuple(items)) => items.iter().filter_map(Value::as_int).collect(),
            _ => Vec::new(),
        }
    };
    let number = values.first().and_then(Value::as_number).unwrap_or(0.0);
    Ok(match (builtin, ints.as_slice()) {
        (Builtin::Divisible, [a, b]) => Value::Bool(divisible(*a, *b)),
        (Builtin::Min, _) => Value::Int(ints.iter().copied().min().unwrap_or(0)),
        (Builtin::Max, _) => Value::Int(ints.iter().copied().max().unwrap_or(0)),
        (Builtin::Divisible, _) => return Err(arity("divisible", "2", ints.len(), span)),
        (Builtin::Len, _) => Value::Int(i64::try_from(list().len()).unwrap_or(i64::MAX)),
        (Builtin::Distinct, _) => Value::Bool(distinct(&list())),
        (Builtin::Within, [lo, hi]) => Value::Bool(list().iter().all(|v| lo <= v && v < hi)),
        (Builtin::Permutation, [n]) => {
            let items = list();
            let len_ok = i64::try_from(items.len()).is_ok_and(|len| len == *n);
            Value::Bool(len_ok && distinct(&items) && items.iter().all(|v| (0..*n).contains(v)))
        }
        (Builtin::Axes, [n]) => Value::Bool(normalized_axes(&list(), *n).is_some()),
        (Builtin::Broadcastable, _) => {
            let second = match values.get(1) {
                Some(Value::Tuple(items)) => items.iter().filter_map(Value::as_int).collect(),
                _ => Vec::new(),
            };
            Value::Bool(broadcastable(&list(), &second))
        }
        (Builtin::Prod, _) => {
            let product = list().iter().try_fold(1i64, |p, v| p.checked_mul(*v));
            Value::Int(product.ok_or_else(|| {
                ExprError::new(
                    super::super::error::ExprErrorKind::Overflow,
                    span,
                    "`prod` overflows a 64-bit integer".to_owned(),
                )
            })?)
        }
        (Builtin::Within | Builtin::Permutation | Builtin::Axes, _) => {
            return Err(arity(builtin_name(builtin), "2 or 3", values.len(), span));
        }
        (Builtin::Select, [a, b]) => {
            let chosen = values.first().and_then(Value::as_bool).unwrap_or(false);
            Value::Int(if chosen { *a } else { *b })
        }
        (Builtin::Select, _) => return Err(arity("select", "3", values.len(), span)),
        (Builtin::Contains, [v]) => Value::Bool(list().contains(v)),
        (Builtin::Contains, _) => return Err(arity("contains", "2", values.len(), span)),
        (Builtin::IsNan, _) => Value::Bool(number.is_nan()),
        (Builtin::IsFinite, _) => Value::Bool(number.is_finite()),
    })
}

fn builtin_name(builtin: Builtin) -> &'static str {
    match builtin {
        Builtin::Within => "within",
        Builtin::Axes => "axes",
        _ => "permutation",
    }
}

/// `axes` as axes of a rank-`rank` tensor (negative ones counted from the end), each in
/// `[-rank, rank)` and none twice; `None` otherwise.
pub fn normalized_axes(axes: &[i64], rank: i64) -> Option<Vec<i64>> {
    let mut seen = Vec::with_capacity(axes.len());
    for &axis in axes {
        let normal = if axis < 0 { axis.checked_add(rank)? } else { axis };
        if !(0..rank).contains(&normal) || seen.contains(&normal) {
            return None;
        }
        seen.push(normal);
    }
    Some(seen)
}

/// NumPy broadcasts shapes `a` and `b`: trailing axes aligned, each pair equal or one of them 1.
fn broadcastable(a: &[i64], b: &[i64]) -> bool {
    (a.iter().rev().zip(b.iter().rev())).all(|(x, y)| x == y || *x == 1 || *y == 1)
}

/// No element twice.
fn distinct(items: &[i64]) -> bool {
    let mut seen = std::collections::HashSet::new();
    items.iter().all(|v| seen.insert(*v))
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

