//! The oracle's arithmetic: every value is computed in `f64` and carries a forward error bound —
//! how far any computation of it in the dtypes the pseudo-code names may lie from it — and the
//! kinds of result it may have (a finite value within the bound, NaN, +Inf, −Inf). A sum
//! (`acc += t`) is order-free: it may be computed in any order, so its bound is Higham's
//! `γ_{n}·Σ|t|` for its `n` additions, and it may overflow on the way when its positive or its
//! negative terms alone reach the dtype's largest finite value. Each rounding adds the dtype's
//! unit roundoff (and its smallest subnormal, for underflow); each scalar function its ulp
//! allowance ([`Func::ulp_allowance`]). The oracle's own `f64` roundings are bounded too, so the
//! bound holds for `f64` kernels as well.

mod acc;
mod approx;

use super::ast::{AssignOp, CmpOp};
use super::float::{NanPolicy, erf, largest, smallest_subnormal, unit_roundoff};
use super::ir::{Func, ValOp};
use super::machine::Arith;
use fkc_provider::DType;

pub use acc::Acc;
use approx::rounded;
pub use approx::{Approx, Kinds};

/// The sign of a finite interval: +1 above zero, −1 below, 0 when it holds zero.
fn sign(a: &Approx) -> i8 {
    if a.low() > 0.0 {
        1
    } else if a.high() < 0.0 {
        -1
    } else {
        0
    }
}

/// The kinds of `a op b` for one pair of kinds, at least one of them not finite.
fn special_pair(op: ValOp, ka: Kinds, a: &Approx, kb: Kinds, b: &Approx) -> Kinds {
    let (nan, plus, minus) = (Kinds::NAN, Kinds::PLUS_INFINITY, Kinds::MINUS_INFINITY);
    if ka == nan || kb == nan {
        return nan;
    }
    let infinity = |positive: bool| if positive { plus } else { minus };
    let signed = |s: i8| match s {
        1 => plus,
        -1 => minus,
        _ => plus.union(minus),
    };
    let inf_sign = |k: Kinds| if k == plus { 1 } else { -1 };
    match op {
        ValOp::Add | ValOp::Sub => {
            let kb = if op == ValOp::Sub && kb != Kinds::FINITE {
                infinity(kb == minus)
            } else {
                kb
            };
            match (ka == Kinds::FINITE, kb == Kinds::FINITE) {
                (true, _) => kb,
                (_, true) => ka,
                _ if ka == kb => ka,
                _ => nan,
            }
        }
        ValOp::Mul => match (ka == Kinds::FINITE, kb == Kinds::FINITE) {
            (true, _) | (_, true) => {
                let (finite, inf) = if ka == Kinds::FINITE {
                    (a, kb)
                } else {
                    (b, ka)
                };
                let s = sign(finite);
                if finite.value == 0.0 && finite.error == 0.0 {
                    nan
                } else if s == 0 {
                    signed(0).union(nan)
                } else {
                    infinity(s * inf_sign(inf) > 0)
                }
            }
            _ => infinity(inf_sign(ka) * inf_sign(kb) > 0),
        },
        ValOp::Div => match (ka == Kinds::FINITE, kb == Kinds::FINITE) {
            // finite / ±Inf is a (signed) zero
            (true, _) => Kinds::FINITE,
            (_, true) => {
                let s = sign(b);
                if s == 0 {
                    signed(0)
                } else {
                    infinity(s * inf_sign(ka) > 0)
                }
            }
            _ => nan,
        },
    }
}

/// The finite outcome of `a op b` for finite `a` and `b`, rounded into `dtype`.
fn finite_pair(op: ValOp, a: &Approx, b: &Approx, dtype: DType) -> Approx {
    let (x, y, ex, ey) = (a.value, b.value, a.error, b.error);
    match op {
        ValOp::Add => rounded(x + y, ex + ey, dtype),
        ValOp::Sub => rounded(x - y, ex + ey, dtype),
        ValOp::Mul => rounded(x * y, x.abs() * ey + y.abs() * ex + ex * ey, dtype),
        ValOp::Div => {
            if y.abs() > ey {
                let error = (x.abs() * ey + y.abs() * ex) / (y.abs() * (y.abs() - ey));
                rounded(x / y, error, dtype)
            } else {
                // The divisor may be zero: any finite value, ±Inf, and NaN when 0/0 may occur.
                let mut kinds = Kinds::FINITE
                    .union(Kinds::PLUS_INFINITY)
                    .union(Kinds::MINUS_INFINITY);
                if sign(a) == 0 {
                    kinds = kinds.union(Kinds::NAN);
                }
                Approx {
                    value: 0.0,
                    error: f64::INFINITY,
                    kinds,
                }
            }
        }
    }
}

/// The oracle's arithmetic under a NaN policy (for `max` and `min`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Exact {
    pub nan: NanPolicy,
}

impl Exact {
    fn binary_in(&self, op: ValOp, a: Approx, b: Approx, dtype: DType) -> Approx {
        if a.kinds == Kinds::FINITE && b.kinds == Kinds::FINITE {
            return finite_pair(op, &a, &b, dtype);
        }
        let mut out = Approx::special(Kinds::default());
        if a.finite() && b.finite() {
            out = finite_pair(op, &a, &b, dtype);
        }
        for ka in a.kinds.each() {
            for kb in b.kinds.each() {
                if ka == Kinds::FINITE && kb == Kinds::FINITE {
                    continue;
                }
                let kinds = special_pair(op, ka, &a, kb, &b);
                if kinds.contains(Kinds::FINITE) {
                    // finite / ±Inf: a zero
                    out = out.either(Approx::exact(0.0));
                }
                out.kinds = out.kinds.union(kinds);
            }
        }
        out
    }

    fn function(&self, func: Func, x: Approx, dtype: DType) -> Approx {
        let f = |v: f64| match func {
            Func::Exp => v.exp(),
            Func::Log => v.ln(),
            Func::Sqrt => v.sqrt(),
            Func::Rsqrt => 1.0 / v.sqrt(),
            Func::Tanh => v.tanh(),
            Func::Erf => erf(v),
            Func::Abs | Func::Max | Func::Min => v.abs(),
        };
        let mut out = Approx::special(Kinds::default());
        for kind in x.kinds.each() {
            if kind != Kinds::FINITE {
                let at = match kind {
                    Kinds::NAN => f64::NAN,
                    Kinds::PLUS_INFINITY => f64::INFINITY,
                    _ => f64::NEG_INFINITY,
                };
                out = out.either(Approx::exact(f(at)));
                continue;
            }
            // Monotone on each side of the interval (abs is 1-Lipschitz): the ends bound it.
            let (low, high, mid) = (f(x.low()), f(x.high()), f(x.value));
            let ends = [low, high, mid];
            for end in ends.iter().filter(|e| !e.is_finite()) {
                out.kinds = out.kinds.union(Kinds::of(*end));
            }
            if mid.is_finite() {
                let spread = if func == Func::Abs {
                    x.error
                } else if low.is_finite() && high.is_finite() {
                    (low - mid).abs().max((high - mid).abs())
                } else {
                    f64::INFINITY
                };
                let allowance = func.ulp_allowance() * 2.0 * unit_roundoff(dtype);
                let value = rounded(mid, spread + allowance * (mid.abs() + spread), dtype);
                out = out.either(value);
            }
        }
        out
    }

    /// `max` (or `min`) under the NaN policy; a tie keeps the first operand.
    fn extreme(&self, max: bool, a: Approx, b: Approx) -> Approx {
        if a.kinds == Kinds::FINITE && b.kinds == Kinds::FINITE {
            // the one pair of kinds below, and the `either` of it with nothing
            return extreme_of(max, a, b);
        }
        let mut out = Approx::special(Kinds::default());
        let as_value = |k: Kinds, v: &Approx| -> Approx {
            if k == Kinds::FINITE {
                Approx { kinds: k, ..*v }
            } else {
                Approx::special(k)
            }
        };
        for ka in a.kinds.each() {
            for kb in b.kinds.each() {
                let (x, y) = (as_value(ka, &a), as_value(kb, &b));
                let result = match (ka == Kinds::NAN, kb == Kinds::NAN) {
                    (true, true) => x,
                    (true, false) | (false, true) => match self.nan {
                        NanPolicy::Propagate => Approx::special(Kinds::NAN),
                        NanPolicy::Ignore if ka == Kinds::NAN => y,
                        NanPolicy::Ignore => x,
                    },
                    _ => extreme_of(max, x, y),
                };
                out = out.either(result);
            }
        }
        out
    }
}

/// `max` or `min` of two non-NaN values.
fn extreme_of(max: bool, x: Approx, y: Approx) -> Approx {
    let order = |k: Kinds| match k {
        Kinds::MINUS_INFINITY => 0,
        Kinds::FINITE => 1,
        _ => 2,
    };
    let (kx, ky) = (order(x.kinds), order(y.kinds));
    if kx != ky || kx != 1 {
        let pick_x = if max { kx >= ky } else { kx <= ky };
        return if pick_x { x } else { y };
    }
    let value = if max {
        x.value.max(y.value)
    } else {
        x.value.min(y.value)
    };
    if x.error == 0.0 && y.error == 0.0 {
        // Exactly the scan's choice: the second only when strictly beyond the first (so a
        // tie, -0.0 against +0.0 included, keeps the first).
        let second = if max {
            y.value > x.value
        } else {
            y.value < x.value
        };
        return if second { y } else { x };
    }
    Approx {
        value,
        error: x.error.max(y.error),
        kinds: Kinds::FINITE,
    }
}

impl Arith for Exact {
    type V = Approx;
    type Cell = Acc;

    fn input(&self, value: f64) -> Approx {
        Approx::exact(value)
    }

    fn constant(&self, value: f64) -> Approx {
        Approx::exact(value)
    }

    fn index(&self, value: i64, dtype: DType) -> Approx {
        rounded(value as f64, 0.0, dtype)
    }

    fn load(&self, cell: &Acc, dtype: DType) -> Approx {
        cell.close(dtype)
    }

    fn store(&self, value: Approx) -> Acc {
        Acc::new(value)
    }

    fn update(&self, cell: &mut Acc, op: AssignOp, value: Approx, dtype: DType) {
        match op {
            AssignOp::Add => cell.add(value),
            AssignOp::Sub => cell.add(value.negated()),
            AssignOp::Set => *cell = Acc::new(value),
            AssignOp::Mul => {
                let product = self.binary_in(ValOp::Mul, cell.close(dtype), value, dtype);
                *cell = Acc::new(product);
            }
        }
    }

    fn mac(&self, cell: &mut Acc, a: Approx, b: Approx, dtype: DType) {
        let plain = a.kinds == Kinds::FINITE
            && b.kinds == Kinds::FINITE
            && a.error == 0.0
            && b.error == 0.0;
        let product = a.value * b.value;
        if plain && product.abs() < largest(dtype) / 2.0 {
            // Two exact values: their product rounded once into the dtype.
            let error =
                (unit_roundoff(dtype) + f64::EPSILON) * product.abs() + smallest_subnormal(dtype);
            cell.add_finite(product, error);
            return;
        }
        let product = self.binary_in(ValOp::Mul, a, b, dtype);
        cell.add(product);
    }

    #[inline(always)]
    fn dot(
        &self,
        cell: &mut Acc,
        xs: &[f64],
        (i, di): (i64, i64),
        ws: &[f64],
        (j, dj): (i64, i64),
        n: usize,
        dtype: DType,
    ) {
        let (u, tiny, limit) = (
            unit_roundoff(dtype) + f64::EPSILON,
            smallest_subnormal(dtype),
            largest(dtype) / 2.0,
        );
        for k in 0..n as i64 {
            let (x, w) = (xs[(i + di * k) as usize], ws[(j + dj * k) as usize]);
            let product = x * w;
            if product.is_finite() && product.abs() < limit {
                cell.add_finite(product, u * product.abs() + tiny);
            } else {
                self.mac(cell, Approx::exact(x), Approx::exact(w), dtype);
            }
        }
    }

    fn neg(&self, value: Approx) -> Approx {
        value.negated()
    }

    fn binary(&self, op: ValOp, a: Approx, b: Approx, dtype: DType) -> Approx {
        self.binary_in(op, a, b, dtype)
    }

    fn func(&self, func: Func, args: &[Approx], dtype: DType) -> Approx {
        match (func, args) {
            (Func::Max, [a, b]) => self.extreme(true, *a, *b),
            (Func::Min, [a, b]) => self.extreme(false, *a, *b),
            (_, [x, ..]) => self.function(func, *x, dtype),
            _ => Approx::special(Kinds::NAN),
        }
    }

    fn cast(&self, value: Approx, dtype: DType) -> Approx {
        if value.kinds == Kinds::FINITE {
            return rounded(value.value, value.error, dtype);
        }
        let mut out = Approx::special(value.kinds.without(Kinds::FINITE));
        if value.finite() {
            out = out.either(rounded(value.value, value.error, dtype));
        }
        out
    }

    fn compare(&self, op: CmpOp, a: Approx, b: Approx) -> Option<bool> {
        if a.kinds.ambiguous() || b.kinds.ambiguous() {
            return None;
        }
        let point = |x: &Approx| match x.kinds {
            Kinds::FINITE => x.value,
            Kinds::NAN => f64::NAN,
            Kinds::PLUS_INFINITY => f64::INFINITY,
            _ => f64::NEG_INFINITY,
        };
        let apart = a.high() < b.low() || b.high() < a.low();
        let exact = a.error == 0.0 && b.error == 0.0;
        let finite = a.kinds == Kinds::FINITE && b.kinds == Kinds::FINITE;
        (!finite || exact || apart).then(|| op.holds(point(&a), point(&b)))
    }

    fn is_nan(&self, value: Approx) -> Option<bool> {
        match (value.kinds.contains(Kinds::NAN), value.kinds.ambiguous()) {
            (_, true) => None,
            (nan, false) => Some(nan),
        }
    }

    fn either(&self, a: Approx, b: Approx) -> Approx {
        a.either(b)
    }

    fn number(&self, value: Approx) -> f64 {
        match value.kinds {
            Kinds::NAN => f64::NAN,
            Kinds::PLUS_INFINITY => f64::INFINITY,
            Kinds::MINUS_INFINITY => f64::NEG_INFINITY,
            _ => value.value,
        }
    }
}

#[cfg(test)]
mod tests;
