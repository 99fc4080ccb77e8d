//! Compiled loop nests: most of a program's time is its innermost loop nests — the `ci, kh, kw`
//! taps of a convolution, the window of a pooling, the `k` of a matrix product — so each
//! perfect nest of loops (each level's body: index definitions, then the next loop; the
//! innermost's: index definitions, at most one chain of `if`s, the updates) whose indices are
//! affine in its variables is planned once per program. Every index becomes a [`Form`]
//! `Σ cᵢ·vᵢ + offset` (coefficients and offset free of the nest's variables), every condition a
//! bound `form >= 0` on the deepest variable it involves, and every element access one form per
//! axis. On each entry the plan evaluates the forms' offsets once (their coefficients once per
//! run when they use no loop variable), then walks the nest with each level's range cut to
//! where its bounds pass, checks every access at both ends of each innermost range (an affine
//! index is monotone there), and runs only the updates, with a base and a step per access.
//! Anything it cannot plan — or an access out of bounds, which the generic walk then reports
//! precisely — falls back to the generic walk.

mod affine;
mod planner;

use super::ir::Op;
use planner::plan_nest;

pub use super::ir::{Access, FastUpdate, FastVal, Form, Level, NestPlan, Target};

/// Plans every loop nest of `body` that can be planned, numbering their forms from `*forms`
/// (the program's count of forms, updated).
pub fn plan_all(body: &mut [Op], forms: &mut usize) {
    for op in body {
        match op {
            Op::For { .. } => {
                if let Some(plan) = plan_nest(op, forms) {
                    if let Op::For { plan: slot, .. } = op {
                        *slot = Some(Box::new(plan));
                    }
                } else if let Op::For { body, .. } = op {
                    plan_all(body, forms);
                }
            }
            Op::If {
                then, otherwise, ..
            } => {
                plan_all(then, forms);
                plan_all(otherwise, forms);
            }
            _ => {}
        }
    }
}

/// The range of `v` within `lo..hi` where every bound `a·v + b >= 0` holds (given each bound's
/// evaluated `(a, b)`); `None` on overflow.
pub fn solve(lo: i64, hi: i64, bounds: impl Iterator<Item = (i64, i64)>) -> Option<(i64, i64)> {
    let (mut lo, mut hi) = (lo, hi);
    for (a, b) in bounds {
        match a {
            0 if b < 0 => return Some((lo, lo)),
            0 => {}
            1 => lo = lo.max(b.checked_neg()?),
            -1 => hi = hi.min(b.checked_add(1)?),
            _ if a > 0 => {
                // v >= ceil(-b / a)
                let least = div_ceil(b.checked_neg()?, a)?;
                lo = lo.max(least);
            }
            _ => {
                // -|a|·v + b >= 0  →  v <= floor(b / |a|)
                let most = crate::expr::floor_div(b, a.checked_neg()?)?;
                hi = hi.min(most.checked_add(1)?);
            }
        }
    }
    Some((lo, hi.max(lo)))
}

fn div_ceil(n: i64, d: i64) -> Option<i64> {
    let q = crate::expr::floor_div(n, d)?;
    Some(if q.checked_mul(d)? == n { q } else { q + 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_solve_into_the_range_that_passes_them() {
        // 0 <= 2v - 3 < 7  →  v in 2..=4
        let bounds = [(2, -3), (-2, 3 + 7 - 1)];
        assert_eq!(solve(0, 10, bounds.into_iter()), Some((2, 5)));
        assert_eq!(solve(0, 3, bounds.into_iter()), Some((2, 3)));
        assert_eq!(solve(0, 10, [(0, -1)].into_iter()), Some((0, 0)));
        assert_eq!(solve(5, 10, [(-1, 2)].into_iter()), Some((5, 5)));
        // every v from -5 to 5 against brute force
        for a in -3..=3 {
            for b in -7..=7 {
                let (lo, hi) = solve(-5, 6, [(a, b)].into_iter()).unwrap_or((0, 0));
                for v in -5..6 {
                    assert_eq!(a * v + b >= 0, (lo..hi).contains(&v), "{a}v + {b} at {v}");
                }
            }
        }
    }
}
