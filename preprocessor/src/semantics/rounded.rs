//! The order reference's arithmetic: every operation in the dtype it names, in exactly the
//! written order, as the kernels' generic `T` arithmetic does — `f32` and `f64` natively, `bf16`
//! and `f16` by computing in `f32` and rounding (as the `half` crate's operators do), `F8E5M2`
//! by computing exactly and rounding once (with [`super::float::round_to_format`], not the
//! provider's encoder the kernels use), the integer dtypes exactly with the contract's
//! overflow policy (wrap or saturate; a float converted to an integer rounds to nearest, ties
//! to even, NaN giving 0). Scalar functions are Rust's `f32`/`f64` ones. A `max`/`min` keeps
//! its first operand on a tie and follows the contract's NaN policy.

use super::ast::{AssignOp, CmpOp};
use super::float::{NanPolicy, Overflow};
use super::ir::{Func, ValOp};
use super::machine::Arith;
use fkc_provider::DType;
use fkc_provider::dtype::Format;

/// Arithmetic in the dtypes, in the written order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rounded {
    pub nan: NanPolicy,
    pub overflow: Overflow,
}

/// `value` rounded to `dtype` (an integer dtype saturates).
pub fn round(value: f64, dtype: DType) -> f64 {
    round_with(value, dtype, Overflow::Saturate)
}

/// `value` rounded to `dtype`, an integer dtype's overflow handled as `overflow` says.
pub fn round_with(value: f64, dtype: DType, overflow: Overflow) -> f64 {
    match dtype {
        DType::F64 => value,
        DType::F32 => f64::from(value as f32),
        DType::BF16 => half::bf16::from_f64(value).to_f64(),
        DType::F16 => half::f16::from_f64(value).to_f64(),
        DType::F8E5M2 => super::float::round_to_format(value, dtype).unwrap_or(value),
        DType::I8 | DType::U8 | DType::I32 | DType::I64 | DType::Bool => {
            integer(value, dtype, overflow)
        }
    }
}

/// The integer of `dtype` nearest `value` (ties to even; NaN gives 0), beyond the dtype's
/// range wrapped modulo 2^bits or saturated at its ends (±Inf always saturates). A `Bool` is 1
/// for any non-zero value.
fn integer(value: f64, dtype: DType, overflow: Overflow) -> f64 {
    if value.is_nan() {
        return 0.0;
    }
    let Some((low, high)) = dtype.int_range() else {
        return value;
    };
    if dtype.format() == Format::Bool {
        return if value == 0.0 { 0.0 } else { 1.0 };
    }
    let whole = value.round_ties_even();
    if whole.is_finite() && whole.abs() < 2f64.powi(100) {
        fit_integer(whole as i128, dtype, overflow)
    } else {
        whole.clamp(low as f64, high as f64)
    }
}

/// `op` on two values of `dtype`, as the dtype's arithmetic computes it.
fn apply(op: ValOp, a: f64, b: f64, dtype: DType, overflow: Overflow) -> f64 {
    let in_f32 = |round: fn(f32) -> f64| round(float_op(op, a as f32, b as f32));
    match dtype {
        DType::F64 => float_op(op, a, b),
        DType::F32 => in_f32(f64::from),
        DType::BF16 => in_f32(|v| half::bf16::from_f32(v).to_f64()),
        DType::F16 => in_f32(|v| half::f16::from_f32(v).to_f64()),
        // two E5M2 values' sum, difference and product are exact in f64: one rounding
        DType::F8E5M2 => round(float_op(op, a, b), dtype),
        DType::I8 | DType::U8 | DType::I32 | DType::I64 | DType::Bool => {
            integer_op(op, a, b, dtype, overflow)
        }
    }
}

/// `a op b` in a float type's own arithmetic.
fn float_op<F: std::ops::Add<Output = F> + std::ops::Sub<Output = F> + std::ops::Mul<Output = F> + std::ops::Div<Output = F>>(
    op: ValOp,
    a: F,
    b: F,
) -> F {
    match op {
        ValOp::Add => a + b,
        ValOp::Sub => a - b,
        ValOp::Mul => a * b,
        ValOp::Div => a / b,
    }
}

/// `a op b` on two integers of `dtype`, exactly (in `i128`), then wrapped or saturated; a
/// division truncates toward zero and a division by zero gives 0.
fn integer_op(op: ValOp, a: f64, b: f64, dtype: DType, overflow: Overflow) -> f64 {
    let whole = |v: f64| v.is_finite() && v.fract() == 0.0 && v.abs() <= 2f64.powi(64);
    if !(whole(a) && whole(b)) {
        return round_with(float_op(op, a, b), dtype, overflow);
    }
    let (x, y) = (a as i128, b as i128);
    let exact = match op {
        ValOp::Add => x + y,
        ValOp::Sub => x - y,
        ValOp::Mul => x * y,
        ValOp::Div => x.checked_div(y).unwrap_or(0),
    };
    fit_integer(exact, dtype, overflow)
}

/// An exact integer result in `dtype`: itself when in range, else wrapped or saturated.
fn fit_integer(v: i128, dtype: DType, overflow: Overflow) -> f64 {
    let Some((low, high)) = dtype.int_range() else {
        return v as f64;
    };
    if dtype.format() == Format::Bool {
        return if v == 0 { 0.0 } else { 1.0 };
    }
    let fitted = if (low..=high).contains(&v) {
        v
    } else {
        match overflow {
            Overflow::Wrap => (v - low).rem_euclid(high - low + 1) + low,
            Overflow::Saturate => v.clamp(low, high),
        }
    };
    fitted as f64
}

impl Rounded {
    fn extreme(&self, max: bool, a: f64, b: f64) -> f64 {
        match (a.is_nan(), b.is_nan()) {
            // both NaN: the later one, as a scan `b if b > a or a is NaN` keeps
            (true, true) => b,
            (true, false) | (false, true) => match self.nan {
                NanPolicy::Propagate => {
                    if a.is_nan() {
                        a
                    } else {
                        b
                    }
                }
                NanPolicy::Ignore => {
                    if a.is_nan() {
                        b
                    } else {
                        a
                    }
                }
            },
            _ => {
                let second = if max { b > a } else { b < a };
                if second { b } else { a }
            }
        }
    }
}

impl Arith for Rounded {
    type V = f64;
    type Cell = f64;

    fn input(&self, value: f64) -> f64 {
        value
    }

    fn constant(&self, value: f64) -> f64 {
        value
    }

    fn index(&self, value: i64, dtype: DType) -> f64 {
        round(value as f64, dtype)
    }

    fn load(&self, cell: &f64, _: DType) -> f64 {
        *cell
    }

    fn store(&self, value: f64) -> f64 {
        value
    }

    fn update(&self, cell: &mut f64, op: AssignOp, value: f64, dtype: DType) {
        *cell = match op {
            AssignOp::Set => value,
            AssignOp::Add => self.binary(ValOp::Add, *cell, value, dtype),
            AssignOp::Sub => self.binary(ValOp::Sub, *cell, value, dtype),
            AssignOp::Mul => self.binary(ValOp::Mul, *cell, value, dtype),
        };
    }

    #[inline]
    fn mac(&self, cell: &mut f64, a: f64, b: f64, dtype: DType) {
        match dtype {
            // the product rounded, then the sum (never fused)
            DType::F64 => *cell += a * b,
            DType::F32 => *cell = f64::from(*cell as f32 + a as f32 * b as f32),
            // in f32, each result rounded (exactly `binary`'s, without the round trips)
            DType::BF16 => {
                let product = half::bf16::from_f32(a as f32 * b as f32).to_f32();
                *cell = f64::from(half::bf16::from_f32(*cell as f32 + product).to_f32());
            }
            DType::F16 => {
                let product = half::f16::from_f32(a as f32 * b as f32).to_f32();
                *cell = f64::from(half::f16::from_f32(*cell as f32 + product).to_f32());
            }
            _ => {
                let product = self.binary(ValOp::Mul, a, b, dtype);
                *cell = self.binary(ValOp::Add, *cell, product, dtype);
            }
        }
    }

    #[inline(always)]
    fn dot(
        &self,
        cell: &mut f64,
        xs: &[f64],
        (i, di): (i64, i64),
        ws: &[f64],
        (j, dj): (i64, i64),
        n: usize,
        dtype: DType,
    ) {
        let mut acc = *cell;
        let at = |k: usize| ((i + di * k as i64) as usize, (j + dj * k as i64) as usize);
        match dtype {
            DType::F64 => {
                for k in 0..n {
                    let (a, b) = at(k);
                    acc += xs[a] * ws[b];
                }
            }
            DType::F32 => {
                let mut acc32 = acc as f32;
                for k in 0..n {
                    let (a, b) = at(k);
                    acc32 += xs[a] as f32 * ws[b] as f32;
                }
                acc = f64::from(acc32);
            }
            DType::BF16 => {
                let mut acc16 = acc as f32;
                for k in 0..n {
                    let (a, b) = at(k);
                    let product = half::bf16::from_f32(xs[a] as f32 * ws[b] as f32).to_f32();
                    acc16 = half::bf16::from_f32(acc16 + product).to_f32();
                }
                acc = f64::from(acc16);
            }
            DType::F16 => {
                let mut acc16 = acc as f32;
                for k in 0..n {
                    let (a, b) = at(k);
                    let product = half::f16::from_f32(xs[a] as f32 * ws[b] as f32).to_f32();
                    acc16 = half::f16::from_f32(acc16 + product).to_f32();
                }
                acc = f64::from(acc16);
            }
            _ => {
                for k in 0..n {
                    let (a, b) = at(k);
                    self.mac(&mut acc, xs[a], ws[b], dtype);
                }
            }
        }
        *cell = acc;
    }

    fn neg(&self, value: f64) -> f64 {
        -value
    }

    fn binary(&self, op: ValOp, a: f64, b: f64, dtype: DType) -> f64 {
        apply(op, a, b, dtype, self.overflow)
    }

    fn func(&self, func: Func, args: &[f64], dtype: DType) -> f64 {
        let x = args.first().copied().unwrap_or(f64::NAN);
        let y = args.get(1).copied().unwrap_or(f64::NAN);
        let in_f32 = |f: fn(f32) -> f32| round(f64::from(f(x as f32)), dtype);
        match (func, dtype) {
            (Func::Max, _) => self.extreme(true, x, y),
            (Func::Min, _) => self.extreme(false, x, y),
            (Func::Abs, _) => round_with(x.abs(), dtype, self.overflow),
            (Func::Exp, DType::F64) => x.exp(),
            (Func::Log, DType::F64) => x.ln(),
            (Func::Sqrt, DType::F64) => x.sqrt(),
            (Func::Rsqrt, DType::F64) => 1.0 / x.sqrt(),
            (Func::Tanh, DType::F64) => x.tanh(),
            (Func::Erf, DType::F64) => super::float::erf(x),
            (Func::Exp, _) => in_f32(f32::exp),
            (Func::Log, _) => in_f32(f32::ln),
            (Func::Sqrt, _) => in_f32(f32::sqrt),
            (Func::Rsqrt, _) => in_f32(|v| 1.0 / v.sqrt()),
            (Func::Tanh, _) => in_f32(f32::tanh),
            (Func::Erf, _) => round(super::float::erf(x), dtype),
        }
    }

    fn cast(&self, value: f64, dtype: DType) -> f64 {
        round_with(value, dtype, self.overflow)
    }

    fn compare(&self, op: CmpOp, a: f64, b: f64) -> Option<bool> {
        Some(op.holds(a, b))
    }

    fn is_nan(&self, value: f64) -> Option<bool> {
        Some(value.is_nan())
    }

    fn either(&self, a: f64, _: f64) -> f64 {
        a
    }

    fn number(&self, value: f64) -> f64 {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_rounds_after_every_operation() {
        let r = Rounded::default();
        // 1 + 2^-9 is not a bf16 (8 bits of mantissa): the sum rounds back to 1.
        assert_eq!(r.binary(ValOp::Add, 1.0, 2f64.powi(-9), DType::BF16), 1.0);
        assert_eq!(
            r.binary(ValOp::Add, 1.0, 2f64.powi(-9), DType::F32),
            1.0 + 2f64.powi(-9)
        );
        assert_eq!(round(1.0 / 3.0, DType::F32), f64::from(1.0f32 / 3.0));
    }

    #[test]
    fn multiply_adds_and_dot_products_round_as_their_operations_do() {
        let r = Rounded::default();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let specials = [
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-45,
            6e-8,
            65504.0,
            3.0e38,
        ];
        for dtype in [DType::F64, DType::F32, DType::BF16, DType::F16] {
            let mut value = || {
                let bits = next();
                let v = if bits % 7 == 0 {
                    specials[(bits >> 8) as usize % specials.len()]
                } else {
                    ((bits >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
                        * 2f64.powi((bits % 40) as i32 - 20)
                };
                round(v, dtype)
            };
            for _ in 0..4000 {
                let (a, b, c) = (value(), value(), value());
                let mut cell = c;
                r.mac(&mut cell, a, b, dtype);
                let product = r.binary(ValOp::Mul, a, b, dtype);
                let expected = r.binary(ValOp::Add, c, product, dtype);
                assert!(
                    cell.to_bits() == expected.to_bits() || (cell.is_nan() && expected.is_nan()),
                    "{dtype:?}: {c} + {a}·{b} gave {cell}, not {expected}"
                );
            }
            for _ in 0..500 {
                let xs: Vec<f64> = (0..16).map(|_| value()).collect();
                let ws: Vec<f64> = (0..16).map(|_| value()).collect();
                let mut dot = value();
                let mut macs = dot;
                r.dot(&mut dot, &xs, (1, 2), &ws, (15, -1), 7, dtype);
                for k in 0..7 {
                    r.mac(&mut macs, xs[1 + 2 * k], ws[15 - k], dtype);
                }
                assert!(dot.to_bits() == macs.to_bits() || (dot.is_nan() && macs.is_nan()));
            }
        }
    }

    #[test]
    fn max_keeps_the_first_of_a_tie_and_follows_the_policy() {
        let propagate = Rounded::default();
        let m = propagate.func(Func::Max, &[-0.0, 0.0], DType::F32);
        assert!(m.is_sign_negative());
        assert!(
            propagate
                .func(Func::Max, &[1.0, f64::NAN], DType::F32)
                .is_nan()
        );
        let ignore = Rounded {
            nan: NanPolicy::Ignore,
            ..Rounded::default()
        };
        assert_eq!(ignore.func(Func::Max, &[1.0, f64::NAN], DType::F32), 1.0);
    }

    #[test]
    fn integers_wrap_or_saturate_as_the_contract_says() {
        let wrap = Rounded::default();
        let saturate = Rounded {
            overflow: Overflow::Saturate,
            ..Rounded::default()
        };
        assert_eq!(wrap.binary(ValOp::Add, 127.0, 1.0, DType::I8), -128.0);
        assert_eq!(saturate.binary(ValOp::Add, 127.0, 1.0, DType::I8), 127.0);
        assert_eq!(wrap.binary(ValOp::Sub, 0.0, 1.0, DType::U8), 255.0);
        let big = f64::from(i32::MAX);
        // the exact product of two 32-bit values needs 62 bits: wrapped exactly
        let wrapped = (i64::from(i32::MAX) * i64::from(i32::MAX)) as i32;
        assert_eq!(wrap.binary(ValOp::Mul, big, big, DType::I32), f64::from(wrapped));
        assert_eq!(saturate.binary(ValOp::Mul, big, -big, DType::I32), f64::from(i32::MIN));
        assert_eq!(wrap.binary(ValOp::Div, -7.0, 2.0, DType::I32), -3.0);
        // a float converted: to nearest, ties to even, then the policy; NaN is 0
        assert_eq!(saturate.cast(2.5, DType::I8), 2.0);
        assert_eq!(saturate.cast(-300.7, DType::I8), -128.0);
        assert_eq!(wrap.cast(200.0, DType::I8), -56.0);
        assert_eq!(wrap.cast(f64::NAN, DType::I32), 0.0);
        assert_eq!(wrap.cast(f64::INFINITY, DType::I8), 127.0);
        let mut acc = 0.0;
        wrap.mac(&mut acc, 100.0, 100.0, DType::I8);
        assert_eq!(acc, f64::from(10_000_i32 as i8));
    }

    #[test]
    fn e5m2_rounds_once_after_an_exact_operation() {
        let r = Rounded::default();
        // 1 + 0.125 lies halfway between 1 and 1.25: ties to even
        assert_eq!(r.binary(ValOp::Add, 1.0, 0.125, DType::F8E5M2), 1.0);
        assert_eq!(r.binary(ValOp::Add, 1.25, 0.125, DType::F8E5M2), 1.5);
        assert!(r.binary(ValOp::Mul, 57344.0, 2.0, DType::F8E5M2).is_infinite());
    }
}
