//! Intervals: what every index expression of the run may be, so that lowering can drop the
//! checks of accesses proven inside their tensors and prove that no index arithmetic overflows.

use super::super::ir::IntOp;
use super::{Bail, Go};

/// Every index quantity of a run (of the reference's, and of the executor's) stays within this;
/// far inside `i64`, so that no sum of a few of them overflows either.
pub(super) const LIMIT: i128 = 1 << 62;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Iv {
    pub(super) lo: i128,
    pub(super) hi: i128,
}

impl Iv {
    pub(super) fn point(v: i128) -> Iv {
        Iv { lo: v, hi: v }
    }

    pub(super) fn safe(self) -> Go<Iv> {
        if self.lo >= -LIMIT && self.hi <= LIMIT {
            Ok(self)
        } else {
            Err(Bail)
        }
    }

    pub(super) fn magnitude(self) -> i128 {
        self.lo.abs().max(self.hi.abs())
    }

    pub(super) fn union(self, other: Iv) -> Iv {
        Iv {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    pub(super) fn within(self, lo: i128, hi: i128) -> bool {
        self.lo >= lo && self.hi <= hi
    }
}

fn floor_div128(a: i128, b: i128) -> i128 {
    let (q, r) = (a / b, a % b);
    if r != 0 && ((r < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// The interval of `a op b` (operands within [`LIMIT`]; a division's by zero excluded: it never
/// gives a value).
pub(super) fn iv_bin(op: IntOp, a: Iv, b: Iv) -> Iv {
    let corners = |f: &dyn Fn(i128, i128) -> i128, bs: &[i128]| {
        let mut out: Option<Iv> = None;
        for x in [a.lo, a.hi] {
            for y in bs {
                let v = Iv::point(f(x, *y));
                out = Some(out.map_or(v, |o| o.union(v)));
            }
        }
        out.unwrap_or(Iv::point(0))
    };
    // the divisor's extremes on each side of zero
    let divisors = || {
        let mut bs = Vec::new();
        if b.hi >= 1 {
            bs.extend([b.lo.max(1), b.hi]);
        }
        if b.lo <= -1 {
            bs.extend([b.lo, b.hi.min(-1)]);
        }
        bs
    };
    match op {
        IntOp::Add => Iv {
            lo: a.lo + b.lo,
            hi: a.hi + b.hi,
        },
        IntOp::Sub => Iv {
            lo: a.lo - b.hi,
            hi: a.hi - b.lo,
        },
        IntOp::Mul => corners(&|x, y| x * y, &[b.lo, b.hi]),
        IntOp::Div => corners(&floor_div128, &divisors()),
        IntOp::Rem => {
            let mut out: Option<Iv> = None;
            if b.hi >= 1 {
                out = Some(Iv {
                    lo: 0,
                    hi: b.hi - 1,
                });
            }
            if b.lo <= -1 {
                let negative = Iv {
                    lo: b.lo + 1,
                    hi: 0,
                };
                out = Some(out.map_or(negative, |o| o.union(negative)));
            }
            out.unwrap_or(Iv::point(0))
        }
    }
}
