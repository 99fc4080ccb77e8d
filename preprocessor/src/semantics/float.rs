//! Facts about the floating-point dtypes the error bounds need: unit roundoff, smallest
//! subnormal, largest finite value, Higham's `γ_K`, what a `max` does with a NaN, the error function, and
//! the bit patterns of NaNs.

use fkc_provider::DType;

/// The unit roundoff of a dtype.
pub fn unit_roundoff(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::EPSILON / 2.0,
        DType::F32 => f64::from(f32::EPSILON) / 2.0,
        DType::BF16 => 2f64.powi(-8),
        DType::F16 => 2f64.powi(-11),
    }
}

/// The smallest positive subnormal of a dtype (absolute slack for underflow in products).
pub fn smallest_subnormal(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => 5e-324,
        DType::F32 => 2f64.powi(-149),
        DType::BF16 => 2f64.powi(-133),
        DType::F16 => 2f64.powi(-24),
    }
}

/// The largest finite value of a dtype.
pub fn largest(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::MAX,
        DType::F32 => f64::from(f32::MAX),
        DType::BF16 => f64::from(half::bf16::MAX),
        DType::F16 => f64::from(half::f16::MAX),
    }
}

/// `γ_K = (1 + u)^K − 1`: the largest relative growth of a term through K roundings of
/// relative error at most `u` (the standard model's product `Π(1 + δ_i)`, each `|δ_i| ≤ u`).
/// It is what Higham's `K·u / (1 − K·u)` bounds from above when `K·u < 1`, so it is never
/// looser, and it stays finite for every K (bf16 sums of hundreds of terms included).
pub fn gamma(terms: usize, u: f64) -> f64 {
    (terms as f64 * u.ln_1p()).exp_m1()
}

/// What a max does with a NaN operand (`precision.nan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NanPolicy {
    /// Any NaN operand makes the result NaN (IEEE arithmetic; the default).
    #[default]
    Propagate,
    /// A NaN operand is dropped (as Rust's `f32::max` does): the result is NaN only when every
    /// operand is.
    Ignore,
}

/// The error function (Abramowitz and Stegun 7.1.26 refined by a Taylor series near zero and an
/// asymptotic tail; accurate to about 1e-15 relative, far below any dtype's allowance).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return -erf(-x);
    }
    if x < 2.5 {
        // Maclaurin series: erf(x) = 2/√π Σ (−1)^n x^(2n+1) / (n! (2n+1))
        let mut sum = 0.0;
        let mut term = x;
        let x2 = x * x;
        for n in 0..200 {
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
            term *= -x2 / (n + 1) as f64;
        }
        return sum * std::f64::consts::FRAC_2_SQRT_PI;
    }
    if x > 6.0 {
        return 1.0;
    }
    // erfc by its continued fraction (Lentz), for 2.5 <= x <= 6.
    let tiny = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for n in 1..300 {
        let a = n as f64 / 2.0;
        d = x + a * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = x + a / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    let erfc = (-x * x).exp() / (f * std::f64::consts::PI.sqrt());
    1.0 - erfc
}

/// (sign bit, exponent mask, quiet bit) of `dtype`'s bit patterns.
pub fn layout(dtype: DType) -> (u64, u64, u64) {
    match dtype {
        DType::F64 => (1 << 63, 0x7ff0_0000_0000_0000, 1 << 51),
        DType::F32 => (1 << 31, 0x7f80_0000, 1 << 22),
        DType::BF16 => (1 << 15, 0x7f80, 1 << 6),
        DType::F16 => (1 << 15, 0x7c00, 1 << 9),
    }
}

/// Whether `bits` is a NaN of `dtype`.
pub fn is_nan(bits: u64, dtype: DType) -> bool {
    let (sign, exponent, _) = layout(dtype);
    let magnitude = bits & !sign;
    magnitude & exponent == exponent && magnitude != exponent
}

/// The canonical quiet NaN of `dtype`: positive, the quiet bit its only payload.
pub fn canonical_nan(dtype: DType) -> u64 {
    let (_, exponent, quiet) = layout(dtype);
    exponent | quiet
}

/// Hex digits of a bit pattern of `dtype`, with the `0x`.
pub fn hex_width(dtype: DType) -> usize {
    2 + match dtype {
        DType::F64 => 16,
        DType::F32 => 8,
        DType::BF16 | DType::F16 => 4,
    }
}
