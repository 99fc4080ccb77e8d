//! Index expressions as affine forms while planning: a [`Linear`] form over the nest's
//! variables, and the folding arithmetic on index expressions its coefficients and offsets are
//! built with (sums, products, negation, a split into slot terms, equality spans aside).

use super::super::ir::{Int, IntKind, IntOp};
use crate::expr::Span;

/// A form while planning: coefficients per nest variable so far, and the offset.
#[derive(Debug, Clone)]
pub(super) struct Linear {
    pub(super) coeffs: Vec<Int>,
    pub(super) offset: Int,
}

pub(super) fn int(kind: IntKind, span: Span) -> Int {
    Int { kind, span }
}

pub(super) fn constant(value: i64) -> Int {
    int(IntKind::Const(value), Span::default())
}

pub(super) fn is_zero(e: &Int) -> bool {
    matches!(e.kind, IntKind::Const(0))
}

/// `a op b`, folded where one side is a neutral constant or both are constants.
pub(super) fn combine(op: IntOp, a: Int, b: Int) -> Int {
    use IntKind::Const;
    match (op, &a.kind, &b.kind) {
        (IntOp::Add, Const(0), _) | (IntOp::Mul, Const(1), _) => b,
        (IntOp::Add | IntOp::Sub, _, Const(0)) | (IntOp::Mul, _, Const(1)) => a,
        (IntOp::Mul, Const(0), _) | (IntOp::Mul, _, Const(0)) => constant(0),
        (IntOp::Add, Const(x), Const(y)) if x.checked_add(*y).is_some() => constant(x + y),
        (IntOp::Sub, Const(x), Const(y)) if x.checked_sub(*y).is_some() => constant(x - y),
        (IntOp::Mul, Const(x), Const(y)) if x.checked_mul(*y).is_some() => constant(x * y),
        _ => {
            let span = a.span.to(b.span);
            int(IntKind::Bin(op, Box::new(a), Box::new(b)), span)
        }
    }
}

/// `-e`, folded: `-(0 - x)` is `x`, `-(a - b)` is `b - a`, `-c` a constant.
pub(super) fn neg(e: Int) -> Int {
    match e.kind {
        IntKind::Const(c) if c.checked_neg().is_some() => constant(-c),
        IntKind::Bin(IntOp::Sub, a, b) => {
            if is_zero(&a) {
                *b
            } else {
                let span = a.span.to(b.span);
                int(IntKind::Bin(IntOp::Sub, b, a), span)
            }
        }
        kind => combine(IntOp::Sub, constant(0), Int { kind, span: e.span }),
    }
}

/// `e` as `Σ kₛ·slotₛ + rest` with every `kₛ` and `rest` reading no slot, when it is linear
/// in the slots.
pub(super) fn split_slots(e: &Int) -> Option<(Vec<(usize, Int)>, Int)> {
    let merge = |op: IntOp, mut a: Vec<(usize, Int)>, b: Vec<(usize, Int)>| {
        for (slot, k) in b {
            match a.iter_mut().find(|(s, _)| *s == slot) {
                Some((_, existing)) => *existing = combine(op, existing.clone(), k),
                None => a.push((slot, if op == IntOp::Sub { neg(k) } else { k })),
            }
        }
        a
    };
    Some(match &e.kind {
        IntKind::Slot(slot) => (vec![(*slot, constant(1))], constant(0)),
        IntKind::Neg(a) => {
            let (terms, rest) = split_slots(a)?;
            (
                terms.into_iter().map(|(s, k)| (s, neg(k))).collect(),
                neg(rest),
            )
        }
        IntKind::Bin(op @ (IntOp::Add | IntOp::Sub), a, b) => {
            let ((ta, ra), (tb, rb)) = (split_slots(a)?, split_slots(b)?);
            (merge(*op, ta, tb), combine(*op, ra, rb))
        }
        IntKind::Bin(IntOp::Mul, a, b) => {
            let ((ta, ra), (tb, rb)) = (split_slots(a)?, split_slots(b)?);
            match (ta.is_empty(), tb.is_empty()) {
                (true, _) => (
                    tb.into_iter()
                        .map(|(s, k)| (s, combine(IntOp::Mul, k, ra.clone())))
                        .collect(),
                    combine(IntOp::Mul, rb, ra),
                ),
                (_, true) => (
                    ta.into_iter()
                        .map(|(s, k)| (s, combine(IntOp::Mul, k, rb.clone())))
                        .collect(),
                    combine(IntOp::Mul, ra, rb),
                ),
                _ => return None,
            }
        }
        _ if fixed(e) => (Vec::new(), e.clone()),
        _ => return None,
    })
}

/// Whether `e` reads no integer slot (so it is fixed for a whole run).
pub(super) fn fixed(e: &Int) -> bool {
    match &e.kind {
        IntKind::Slot(_) => false,
        IntKind::Const(_) | IntKind::Dim { .. } | IntKind::Rank(_) | IntKind::Param { .. } => true,
        IntKind::Neg(a) => fixed(a),
        IntKind::Bin(_, a, b) => fixed(a) && fixed(b),
        IntKind::Min(items) | IntKind::Max(items) => items.iter().all(fixed),
        IntKind::Pick { index, options } => fixed(index) && options.iter().all(fixed),
        IntKind::Numel(_) => true,
        IntKind::Element { .. }
        | IntKind::Reduced { .. }
        | IntKind::Broadcast { .. }
        | IntKind::Along { .. } => false,
    }
}

/// Whether two index expressions are the same, spans aside.
pub(super) fn same(a: &Int, b: &Int) -> bool {
    match (&a.kind, &b.kind) {
        (IntKind::Const(x), IntKind::Const(y)) => x == y,
        (IntKind::Slot(x), IntKind::Slot(y)) => x == y,
        (IntKind::Rank(x), IntKind::Rank(y)) => x == y,
        (IntKind::Dim { tensor: t, axis: x }, IntKind::Dim { tensor: u, axis: y }) => {
            t == u && x == y
        }
        (
            IntKind::Param {
                param: p,
                element: e,
            },
            IntKind::Param {
                param: q,
                element: f,
            },
        ) => p == q && e == f,
        (IntKind::Neg(x), IntKind::Neg(y)) => same(x, y),
        (IntKind::Bin(o, x1, x2), IntKind::Bin(p, y1, y2)) => {
            o == p && same(x1, y1) && same(x2, y2)
        }
        (IntKind::Min(xs), IntKind::Min(ys)) | (IntKind::Max(xs), IntKind::Max(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same(x, y))
        }
        _ => false,
    }
}

/// Coefficient lists equal, a missing trailing one counting as zero.
pub(super) fn same_coeffs(a: &[Int], b: &[Int]) -> bool {
    let zero = constant(0);
    (0..a.len().max(b.len())).all(|i| same(a.get(i).unwrap_or(&zero), b.get(i).unwrap_or(&zero)))
}

/// `l · k` for a `k` free of the nest's variables.
pub(super) fn scale(l: Linear, k: &Int) -> Linear {
    Linear {
        coeffs: l
            .coeffs
            .into_iter()
            .map(|c| combine(IntOp::Mul, c, k.clone()))
            .collect(),
        offset: combine(IntOp::Mul, l.offset, k.clone()),
    }
}
