//! Typing rules, built-in functions and error messages shared by the checker and the evaluator.
//!
//! Both passes decide "is this operation well-typed?" with the same functions, applied to static
//! [`Type`]s by [`check`](super::check) and to the types of runtime [`Value`](super::Value)s by
//! [`eval`](super::eval), so an error reads the same (message, span, help) whichever finds it.

use super::ast::{Arg, BinOp, Expr, ExprKind, UnOp};
use super::error::{ExprError, ExprErrorKind, unknown_help};
use super::parser::MAX_HEIGHT;
use super::span::Span;
use super::value::Type;

/// The built-in functions: `divisible(a, b)`, `min(a, b, ...)`, `max(a, b, ...)`, and for
/// parameters `len(list)`, `distinct(list)`, `within(list, lo, hi)`, `permutation(list, n)`,
/// `isnan(x)`, `isfinite(x)`, `contains(list, v)`, `axes(list, n)`, `prod(list)` and
/// `broadcastable(a, b)` (of operands' dims too: `prod(x.dim)`), and `select(cond, a, b)` on
/// integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    /// `divisible(a, b)`: `b != 0 && a % b == 0` (false, not an error, when `b == 0`).
    Divisible,
    /// `min(a, b, ...)`: the smallest of two or more integers.
    Min,
    /// `max(a, b, ...)`: the largest of two or more integers.
    Max,
    /// `len(list)`: a list's (or tuple's) length.
    Len,
    /// `distinct(list)`: no element twice.
    Distinct,
    /// `within(list, lo, hi)`: every element `lo <= v < hi`.
    Within,
    /// `permutation(list, n)`: the list holds each of `0..n` once.
    Permutation,
    /// `isnan(x)`: a float is NaN.
    IsNan,
    /// `isfinite(x)`: a float is neither NaN nor infinite (an integer always is).
    IsFinite,
    /// `select(cond, a, b)`: `a` when `cond` holds, else `b` (integers).
    Select,
    /// `contains(list, v)`: `v` is an element of the list.
    Contains,
    /// `axes(list, n)`: distinct axes of a rank-`n` tensor, each in `[-n, n)` (negative counts
    /// from the end, so `-1` and `n - 1` are the same axis).
    Axes,
    /// `prod(list)`: the product of the elements (1 for none); `prod(x.dim)` is `x`'s element
    /// count.
    Prod,
    /// `broadcastable(a, b)`: two shapes NumPy broadcasts (trailing axes aligned, each pair
    /// equal or one of them 1): `broadcastable(a.dim, b.dim)`.
    Broadcastable,
}

impl Builtin {
    pub(crate) const NAMES: [&'static str; 14] = [
        "axes",
        "broadcastable",
        "contains",
        "distinct",
        "divisible",
        "isfinite",
        "isnan",
        "len",
        "max",
        "min",
        "permutation",
        "prod",
        "select",
        "within",
    ];

    pub(crate) fn lookup(name: &str) -> Option<Builtin> {
        Some(match name {
            "divisible" => Builtin::Divisible,
            "min" => Builtin::Min,
            "max" => Builtin::Max,
            "len" => Builtin::Len,
            "distinct" => Builtin::Distinct,
            "within" => Builtin::Within,
            "permutation" => Builtin::Permutation,
            "isnan" => Builtin::IsNan,
            "isfinite" => Builtin::IsFinite,
            "select" => Builtin::Select,
            "contains" => Builtin::Contains,
            "axes" => Builtin::Axes,
            "prod" => Builtin::Prod,
            "broadcastable" => Builtin::Broadcastable,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Builtin::Divisible => "divisible",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::Len => "len",
            Builtin::Distinct => "distinct",
            Builtin::Within => "within",
            Builtin::Permutation => "permutation",
            Builtin::IsNan => "isnan",
            Builtin::IsFinite => "isfinite",
            Builtin::Select => "select",
            Builtin::Contains => "contains",
            Builtin::Axes => "axes",
            Builtin::Prod => "prod",
            Builtin::Broadcastable => "broadcastable",
        }
    }

    /// The argument types (`None`: two or more integers) and the result type.
    fn signature(self) -> (Option<Vec<Type>>, Type) {
        let list = || Type::List(Box::new(Type::Int));
        match self {
            Builtin::Divisible => (Some(vec![Type::Int, Type::Int]), Type::Bool),
            Builtin::Min | Builtin::Max => (None, Type::Int),
            Builtin::Len => (Some(vec![list()]), Type::Int),
            Builtin::Distinct => (Some(vec![list()]), Type::Bool),
            Builtin::Within => (Some(vec![list(), Type::Int, Type::Int]), Type::Bool),
            Builtin::Permutation => (Some(vec![list(), Type::Int]), Type::Bool),
            Builtin::IsNan | Builtin::IsFinite => (Some(vec![Type::Float]), Type::Bool),
            Builtin::Select => (Some(vec![Type::Bool, Type::Int, Type::Int]), Type::Int),
            Builtin::Contains => (Some(vec![list(), Type::Int]), Type::Bool),
            Builtin::Axes => (Some(vec![list(), Type::Int]), Type::Bool),
            Builtin::Prod => (Some(vec![list()]), Type::Int),
            Builtin::Broadcastable => (Some(vec![list(), list()]), Type::Bool),
        }
    }

    /// Checks argument count and types; the result type.
    pub(crate) fn check(self, args: &[(Type, Span)], span: Span) -> Result<Type, ExprError> {
        let (params, returns) = self.signature();
        let wanted: Vec<Type> = match params {
            Some(params) if params.len() == args.len() => params,
            Some(params) => {
                let count = params.len().to_string();
                return Err(arity(self.name(), &count, args.len(), span));
            }
            None if args.len() >= 2 => vec![Type::Int; args.len()],
            None => return Err(arity(self.name(), "at least 2", args.len(), span)),
        };
        for (i, ((t, arg_span), want)) in args.iter().zip(&wanted).enumerate() {
            let fits = t.compatible(want) || (*want == Type::Float && t.is_numeric());
            if !fits {
                return Err(ExprError::new(
                    ExprErrorKind::Type,
                    *arg_span,
                    format!(
                        "argument {} of `{}` must be {want}, found {t}",
                        i + 1,
                        self.name()
                    ),
                ));
            }
        }
        Ok(returns)
    }
}

/// The result type of `op` on operands of types `lhs` and `rhs`, or the error (located at the
/// first offending operand, or at the whole expression when `==` compares unlike types).
pub(crate) fn binary_type(
    op: BinOp,
    lhs: (&Type, Span),
    rhs: (&Type, Span),
    whole: Span,
) -> Result<Type, ExprError> {
    let (lt, rt) = (lhs.0, rhs.0);
    let mismatch = |span| {
        ExprError::new(
            ExprErrorKind::Type,
            span,
            format!("cannot {} {lt} and {rt}", op.verb()),
        )
    };
    let numbers = lt.is_numeric() && rt.is_numeric();
    if matches!(op, BinOp::Eq | BinOp::Ne) {
        if !lt.compatible(rt) && !numbers {
            return Err(
                mismatch(whole).with_help("both sides of `==` / `!=` must have the same type")
            );
        }
        if !lt.is_equatable() || !rt.is_equatable() {
            return Err(
                mismatch(whole).with_help("records cannot be compared; compare their fields")
            );
        }
        return Ok(Type::Bool);
    }
    if !op.is_logical() && (*lt == Type::Float || *rt == Type::Float) {
        return float_binary_type(op, lhs, rhs, mismatch);
    }
    let (want, result) = if op.is_logical() {
        (Type::Bool, Type::Bool)
    } else if op.is_comparison() {
        (Type::Int, Type::Bool)
    } else {
        (Type::Int, Type::Int)
    };
    for (t, span) in [lhs, rhs] {
        if !t.compatible(&want) {
            return Err(
                mismatch(span).with_help(format!("`{op}` needs {want} operands; this one is {t}"))
            );
        }
    }
    Ok(result)
}

/// A comparison or arithmetic with a float operand: both numbers; `%` is integers only.
fn float_binary_type(
    op: BinOp,
    lhs: (&Type, Span),
    rhs: (&Type, Span),
    mismatch: impl Fn(Span) -> ExprError,
) -> Result<Type, ExprError> {
    if op == BinOp::Rem {
        return Err(mismatch(lhs.1).with_help("`%` needs int operands"));
    }
    for (t, span) in [lhs, rhs] {
        if !t.is_numeric() {
            return Err(mismatch(span).with_help(format!("`{op}` needs numbers; this one is {t}")));
        }
    }
    Ok(if op.is_comparison() {
        Type::Bool
    } else {
        Type::Float
    })
}

/// The result type of a prefix operator on `t`, or the error at the operand.
pub(crate) fn unary_type(op: UnOp, t: &Type, span: Span) -> Result<Type, ExprError> {
    let (want, message, help) = match op {
        UnOp::Neg => (Type::Int, format!("cannot negate {t}"), None),
        UnOp::Not => (
            Type::Bool,
            format!("cannot apply `!` to {t}"),
            Some("to test an int, compare it: `n == 0`"),
        ),
    };
    if op == UnOp::Neg && *t == Type::Float {
        return Ok(Type::Float);
    }
    if t.compatible(&want) {
        return Ok(want);
    }
    let help = help.filter(|_| *t == Type::Int).map(str::to_owned);
    Err(ExprError::new(ExprErrorKind::Type, span, message).with_help_opt(help))
}

/// The type of `base.field` where `base` has type `t`.
pub(crate) fn member_type(
    t: &Type,
    base: &Expr,
    field: &str,
    span: Span,
) -> Result<Type, ExprError> {
    match t {
        Type::Any => Ok(Type::Any),
        Type::Record(fields) => t.field(field).cloned().ok_or_else(|| {
            let names = fields.iter().map(|(n, _)| n.as_str());
            ExprError::new(
                ExprErrorKind::UnknownName,
                span,
                format!("`{base}` has no field `{field}`"),
            )
            .with_help_opt(unknown_help(field, names, &format!("fields of `{base}`")))
        }),
        _ => Err(ExprError::new(
            ExprErrorKind::Type,
            span,
            format!("`{base}` is {t}; it has no field `{field}`"),
        )),
    }
}

pub(crate) fn index_out_of_range(i: i64, len: usize, base: &Expr, span: Span) -> ExprError {
    let help = match len {
        0 => "the tuple is empty".to_owned(),
        _ => format!("valid indices are 0 to {}", len - 1),
    };
    ExprError::new(
        ExprErrorKind::IndexOutOfRange,
        span,
        format!("index {i} is out of range for `{base}` of length {len}"),
    )
    .with_help(help)
}

pub(crate) fn bad_index_type(t: &Type, span: Span) -> ExprError {
    ExprError::new(
        ExprErrorKind::Type,
        span,
        format!("a tuple index must be int, found {t}"),
    )
}

pub(crate) fn not_indexable(t: &Type, base: &Expr, span: Span) -> ExprError {
    let err = ExprError::new(
        ExprErrorKind::Type,
        span,
        format!("cannot index `{base}` of type {t}"),
    );
    match t.field("dim") {
        Some(_) => err.with_help(format!("operand dims are indexed as `{base}.dim[i]`")),
        None => err,
    }
}

pub(crate) fn division_by_zero(op: BinOp, divisor: &Expr) -> ExprError {
    let what = if op == BinOp::Div {
        "division"
    } else {
        "remainder"
    };
    let message = match divisor.kind {
        ExprKind::Int(_) => format!("{what} by zero"),
        _ => format!("{what} by zero: `{divisor}` is 0"),
    };
    ExprError::new(ExprErrorKind::DivisionByZero, divisor.span, message)
}

pub(crate) fn unknown_name(
    name: &str,
    span: Span,
    names: Vec<&str>,
    functions: &[&str],
) -> ExprError {
    let err = ExprError::new(
        ExprErrorKind::UnknownName,
        span,
        format!("unknown name `{name}`"),
    );
    if functions.contains(&name) {
        return err.with_help(format!("`{name}` is a function; call it: `{name}(...)`"));
    }
    err.with_help_opt(unknown_help(name, names, "names in scope"))
}

pub(crate) fn unknown_function(
    name: &str,
    span: Span,
    functions: &[&str],
    is_name: bool,
) -> ExprError {
    let err = ExprError::new(
        ExprErrorKind::UnknownFunction,
        span,
        format!("unknown function `{name}`"),
    );
    if is_name {
        return err.with_help(format!("`{name}` is a value, not a function"));
    }
    err.with_help_opt(unknown_help(name, functions.iter().copied(), "functions"))
}

pub(crate) fn no_keywords(name: &str, args: &[Arg]) -> Result<(), ExprError> {
    match args.iter().find_map(|a| a.name.as_ref()) {
        Some((keyword, span)) => Err(ExprError::new(
            ExprErrorKind::Arity,
            *span,
            format!("`{name}` takes no keyword arguments (found `{keyword}=`)"),
        )),
        None => Ok(()),
    }
}

pub(crate) fn arity(name: &str, expected: &str, found: usize, span: Span) -> ExprError {
    let plural = if expected == "1" { "" } else { "s" };
    ExprError::new(
        ExprErrorKind::Arity,
        span,
        format!("`{name}` takes {expected} argument{plural}, but {found} given"),
    )
}

pub(crate) fn too_deep(span: Span) -> ExprError {
    ExprError::new(
        ExprErrorKind::Budget,
        span,
        format!("expression nests more than {MAX_HEIGHT} operations deep"),
    )
}
