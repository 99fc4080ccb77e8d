//! Bounds of a contract's expressions over the whole box the sampler draws from (every dim in
//! [`DIMS`], every op-param in [`PARAMS`]): when a dimension of a `from_params` shape rule stays
//! below 1, or a constraint that always applies stays false, on every point of the box, no
//! candidate can be admitted, and the gate says so at once instead of drawing its budget.
//! Interval arithmetic here is conservative: an expression it cannot bound is never used as
//! proof.

use super::sample::{DIMS, PARAMS, SIGNED};

use super::constraints::Domain;
use crate::contract::resolved::ShapeRule;
use crate::expr::{BinOp, Expr, ExprKind, UnOp, floor_div};
use fkc_provider::{DType, ParamKind};

/// What an expression can be on the box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// An integer in `lo..=hi`.
    Int(i64, i64),
    /// A boolean: `Some` when it is the same on the whole box.
    Bool(Option<bool>),
    /// Nothing known.
    Unknown,
}

/// What a root name is on the box.
#[derive(Debug, Clone, Copy)]
enum Var {
    /// An operand of this rank, each dim in [`DIMS`].
    Operand(usize),
    /// An integer in `lo..=hi`.
    Int(i64, i64),
    /// A tuple whose elements are each in `lo..=hi`.
    Tuple(usize, i64, i64),
}

/// Why no sample of the box is admitted, when that can be shown without drawing: the first
/// output dimension or constraint that rules out every point.
pub(super) fn empty_box(domain: &Domain<'_>, dtype: DType) -> Option<String> {
    let vars = variables(domain, dtype);
    let bound = |e: &Expr| bound(e, &vars, 0);
    for output in &domain.contract.outputs {
        let Some(ShapeRule::FromParams(dims)) = &output.shape else {
            continue;
        };
        for (name, e) in dims {
            if let Bound::Int(_, hi) = bound(e)
                && hi < 1
            {
                return Some(format!(
                    "`{name} = {}` of `{}` is at most {hi}",
                    e.to_source(),
                    output.name
                ));
            }
        }
    }
    let always = domain
        .contract
        .input_constraints
        .iter()
        .filter(|(input, _)| {
            domain
                .raw
                .inputs
                .iter()
                .any(|i| i.name.value == *input && !i.is_optional())
        });
    let always = always.chain(domain.contract.param_constraints.iter());
    for (_, constraint) in always {
        if bound(&constraint.expr) == Bound::Bool(Some(false)) {
            return Some(format!("`{}` is false", constraint.source.value));
        }
    }
    None
}

/// Every root name the sampler binds, with what it can be.
fn variables(domain: &Domain<'_>, dtype: DType) -> Vec<(String, Var)> {
    let (lo, hi) = (*PARAMS.start(), *PARAMS.end());
    let bytes = i64::try_from(dtype.size_bytes()).unwrap_or(0);
    let mut vars = vec![("dtype_bytes".to_owned(), Var::Int(bytes, bytes))];
    let rank_of = |name: &str| {
        let input = domain.raw.inputs.iter().find(|i| i.name.value == name)?;
        Some(input.rank.as_ref().map_or(1, |r| r.value.max))
    };
    for input in &domain.raw.inputs {
        if let Some(rank) = rank_of(&input.name.value) {
            vars.push((input.name.value.clone(), Var::Operand(rank)));
        }
    }
    for (name, kind) in domain.drawn_params() {
        let var = match kind {
            ParamKind::Usize => Var::Int(lo, hi),
            ParamKind::UsizePair => Var::Tuple(2, lo, hi),
            ParamKind::UsizeArray4 => Var::Tuple(4, lo, hi),
            ParamKind::I64 => Var::Int(-SIGNED, SIGNED),
            // Not bounded here: constraints on them are decided by drawing.
            ParamKind::F32
            | ParamKind::F64
            | ParamKind::Bool
            | ParamKind::Enum
            | ParamKind::UsizeList
            | ParamKind::I64List => continue,
        };
        vars.push((name.to_owned(), var));
    }
    for (field, of) in domain.shaped_fields() {
        if let Some(rank) = rank_of(of) {
            vars.push((
                field.to_owned(),
                Var::Tuple(rank, *DIMS.start(), *DIMS.end()),
            ));
        }
    }
    vars
}

fn var<'v>(vars: &'v [(String, Var)], name: &str) -> Option<&'v Var> {
    vars.iter().find(|(n, _)| n == name).map(|(_, v)| v)
}

/// The bound of `e` on the box; `Unknown` for anything not shown here (deeper than the
/// evaluator allows, too, so a hostile tree costs no more than evaluating it).
fn bound(e: &Expr, vars: &[(String, Var)], depth: usize) -> Bound {
    if depth > crate::expr::MAX_HEIGHT {
        return Bound::Unknown;
    }
    let sub = |e: &Expr| bound(e, vars, depth + 1);
    match &e.kind {
        ExprKind::Int(v) => Bound::Int(*v, *v),
        ExprKind::Float(_) | ExprKind::Text(_) => Bound::Unknown,
        ExprKind::Bool(b) => Bound::Bool(Some(*b)),
        ExprKind::Name(name) => match var(vars, name) {
            Some(Var::Int(lo, hi)) => Bound::Int(*lo, *hi),
            _ => Bound::Unknown,
        },
        ExprKind::Member { base, field, .. } => match (&base.kind, field.as_str()) {
            (ExprKind::Name(name), "rank") => match var(vars, name) {
                Some(Var::Operand(rank)) => i64::try_from(*rank)
                    .map(|r| Bound::Int(r, r))
                    .unwrap_or(Bound::Unknown),
                _ => Bound::Unknown,
            },
            _ => Bound::Unknown,
        },
        ExprKind::Index { base, index } => element(base, index, vars),
        ExprKind::Unary { op, operand } => match (op, sub(operand)) {
            (UnOp::Neg, Bound::Int(lo, hi)) => match (hi.checked_neg(), lo.checked_neg()) {
                (Some(lo), Some(hi)) => Bound::Int(lo, hi),
                _ => Bound::Unknown,
            },
            (UnOp::Not, Bound::Bool(b)) => Bound::Bool(b.map(|b| !b)),
            _ => Bound::Unknown,
        },
        ExprKind::Binary { op, lhs, rhs, .. } => binary(*op, sub(lhs), sub(rhs)),
        ExprKind::Call { name, args, .. } => {
            let all: Option<Vec<(i64, i64)>> = args
                .iter()
                .map(|a| match sub(&a.value) {
                    Bound::Int(lo, hi) if a.name.is_none() => Some((lo, hi)),
                    _ => None,
                })
                .collect();
            match (name.as_str(), all) {
                ("min", Some(all)) if all.len() >= 2 => fold(&all, i64::min),
                ("max", Some(all)) if all.len() >= 2 => fold(&all, i64::max),
                _ => Bound::Unknown,
            }
        }
        ExprKind::Tuple(_) => Bound::Unknown,
    }
}

/// `x.dim[i]` or `field[i]` with a literal `i` inside the rank.
fn element(base: &Expr, index: &Expr, vars: &[(String, Var)]) -> Bound {
    let ExprKind::Int(i) = index.kind else {
        return Bound::Unknown;
    };
    let Ok(i) = usize::try_from(i) else {
        return Bound::Unknown;
    };
    let found = match &base.kind {
        ExprKind::Member { base, field, .. } if field == "dim" => match &base.kind {
            ExprKind::Name(name) => match var(vars, name) {
                Some(Var::Operand(rank)) => Some((*rank, *DIMS.start(), *DIMS.end())),
                _ => None,
            },
            _ => None,
        },
        ExprKind::Name(name) => match var(vars, name) {
            Some(Var::Tuple(len, lo, hi)) => Some((*len, *lo, *hi)),
            _ => None,
        },
        _ => None,
    };
    match found {
        Some((len, lo, hi)) if i < len => Bound::Int(lo, hi),
        _ => Bound::Unknown,
    }
}

/// `f` folded over every argument's bounds (both ends: `min` and `max` are monotone).
fn fold(all: &[(i64, i64)], f: fn(i64, i64) -> i64) -> Bound {
    let lo = all.iter().map(|b| b.0).reduce(f);
    let hi = all.iter().map(|b| b.1).reduce(f);
    match (lo, hi) {
        (Some(lo), Some(hi)) => Bound::Int(lo, hi),
        _ => Bound::Unknown,
    }
}

fn binary(op: BinOp, l: Bound, r: Bound) -> Bound {
    match (l, r) {
        (Bound::Int(a, b), Bound::Int(c, d)) => integers(op, (a, b), (c, d)),
        (Bound::Bool(l), Bound::Bool(r)) => match op {
            BinOp::And => match (l, r) {
                (Some(false), _) | (_, Some(false)) => Bound::Bool(Some(false)),
                (Some(true), Some(true)) => Bound::Bool(Some(true)),
                _ => Bound::Bool(None),
            },
            BinOp::Or => match (l, r) {
                (Some(true), _) | (_, Some(true)) => Bound::Bool(Some(true)),
                (Some(false), Some(false)) => Bound::Bool(Some(false)),
                _ => Bound::Bool(None),
            },
            _ => Bound::Unknown,
        },
        _ => Bound::Unknown,
    }
}

/// `op` on integers in `a..=b` and `c..=d`: the extremes are at the corners for `+ - * /`
/// (floor division by a divisor of one sign is monotone in each argument).
fn integers(op: BinOp, (a, b): (i64, i64), (c, d): (i64, i64)) -> Bound {
    let corners = |f: fn(i64, i64) -> Option<i64>| {
        let all = [f(a, c), f(a, d), f(b, c), f(b, d)];
        let all: Option<Vec<i64>> = all.into_iter().collect();
        match all {
            Some(all) => match (all.iter().min(), all.iter().max()) {
                (Some(lo), Some(hi)) => Bound::Int(*lo, *hi),
                _ => Bound::Unknown,
            },
            None => Bound::Unknown,
        }
    };
    let decided = |always: bool, never: bool| {
        Bound::Bool(if always {
            Some(true)
        } else if never {
            Some(false)
        } else {
            None
        })
    };
    match op {
        BinOp::Add => corners(i64::checked_add),
        BinOp::Sub => corners(i64::checked_sub),
        BinOp::Mul => corners(i64::checked_mul),
        BinOp::Div if c > 0 || d < 0 => corners(floor_div),
        BinOp::Lt => decided(b < c, a >= d),
        BinOp::Le => decided(b <= c, a > d),
        BinOp::Gt => decided(a > d, b <= c),
        BinOp::Ge => decided(a >= d, b < c),
        BinOp::Eq => decided(a == b && c == d && a == c, b < c || d < a),
        BinOp::Ne => decided(b < c || d < a, a == b && c == d && a == c),
        _ => Bound::Unknown,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::expr::parse;

    fn vars() -> Vec<(String, Var)> {
        vec![
            ("x".to_owned(), Var::Operand(4)),
            ("k".to_owned(), Var::Int(0, 4)),
            ("stride".to_owned(), Var::Tuple(2, 0, 4)),
        ]
    }

    fn of(src: &str) -> Bound {
        bound(&parse(src).unwrap(), &vars(), 0)
    }

    #[test]
    fn bounds_hold_every_point_of_the_box() {
        assert_eq!(of("x.dim[0] - 100"), Bound::Int(-99, -94));
        assert_eq!(of("(x.dim[2] - k) / 2 + 1"), Bound::Int(-1, 4));
        assert_eq!(of("x.dim[1] * stride[1]"), Bound::Int(0, 24));
        assert_eq!(of("-x.rank"), Bound::Int(-4, -4));
        assert_eq!(of("min(x.dim[0], 3) + max(k, 2)"), Bound::Int(3, 7));
        assert_eq!(of("k > 4"), Bound::Bool(Some(false)));
        assert_eq!(of("k > 3"), Bound::Bool(None));
        assert_eq!(of("x.dim[0] >= 1 && k <= 4"), Bound::Bool(Some(true)));
        assert_eq!(of("k > 9 || x.dim[3] > 6"), Bound::Bool(Some(false)));
        assert_eq!(of("x.dim[0] == 7 || k == k"), Bound::Bool(None));
    }

    #[test]
    fn what_cannot_be_bounded_is_unknown() {
        for src in [
            "x.dim[4]",
            "x.dim[k]",
            "stride[2]",
            "x.dim[0] / k",
            "x.dim[0] % 2",
            "divisible(x.dim[1], 2)",
            "nope + 1",
            "9223372036854775807 + x.dim[0]",
            "min(a=1, b=2)",
        ] {
            let found = of(src);
            assert!(
                matches!(found, Bound::Unknown | Bound::Bool(None)),
                "{src}: {found:?}"
            );
        }
    }

    /// A pooling contract whose batch is `x.dim[0] - minus` and whose window exceeds `least`.
    fn pool(minus: i64, least: i64) -> String {
        format!(
            "kernel: k\nregistrable: false\nbackend: Cpu\nkernel_source: s\nentry_point: \"e\"\naccept:\n  inputs:\n    - {{ name: x, dtypes: [F32], rank: 4 }}\nop_params:\n  fields:\n    kernel_size: {{ kind: usize, constraint: \"kernel_size > {least}\" }}\n    stride: {{ kind: usize, constraint: \"stride > 0\" }}\nreturn:\n  outputs:\n    - {{ name: out, dtype_rule: passthrough(x), shape_rule: \"from_params(N=x.dim[0] - {minus}, C=x.dim[1], H=(x.dim[2]-kernel_size)/stride+1, W=(x.dim[3]-kernel_size)/stride+1)\" }}\n"
        )
    }

    #[test]
    fn only_a_box_with_no_admitted_point_is_called_empty() {
        let empty = |text: &str| {
            let (_, raw, contract) = crate::verify::tests::read_resolved(text);
            empty_box(&Domain::new(&raw, &contract, &[]), DType::F32)
        };
        // x.dim[0] = 6 still admits a batch of 1, and a window of 4 is drawn: a narrow domain
        // is not an empty one.
        assert_eq!(empty(&pool(5, 0)), None);
        assert_eq!(
            empty(&pool(6, 0)).as_deref(),
            Some("`N = x.dim[0] - 6` of `out` is at most 0")
        );
        assert_eq!(empty(&pool(0, 3)), None);
        assert_eq!(
            empty(&pool(0, 4)).as_deref(),
            Some("`kernel_size > 4` is false")
        );
    }

    /// Every point of a small box against the bound: the bound contains each value.
    #[test]
    fn bounds_agree_with_evaluation_on_every_point() {
        use crate::expr::{Bindings, Value, eval};
        for src in [
            "(x.dim[2] - k) / stride[0] + 1",
            "x.dim[0] * x.dim[1] - 3 * k",
            "-(x.dim[3] - 7) / 2",
            "max(x.dim[0] - k, stride[1]) * min(k, 2)",
        ] {
            let expr = parse(src).unwrap();
            let found = bound(&expr, &vars(), 0);
            for d in 1..=6 {
                for k in 0..=4 {
                    for s in 0..=4 {
                        let mut b = Bindings::new();
                        b.insert("x", Value::operand(&[d, 7 - d, d, 6]))
                            .insert("k", Value::Int(k))
                            .insert("stride", Value::ints(&[s, 4 - s]));
                        let Ok(Value::Int(v)) = eval(&expr, &b) else {
                            continue;
                        };
                        match found {
                            Bound::Int(lo, hi) => assert!((lo..=hi).contains(&v), "{src}: {v}"),
                            other => assert_eq!(other, Bound::Unknown, "{src}"),
                        }
                    }
                }
            }
        }
    }
}
