//! Facts about the floating-point dtypes the error bounds need: unit roundoff, smallest
//! subnormal, largest finite value, Higham's `γ_K`, and what a `max` does with a NaN.

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
