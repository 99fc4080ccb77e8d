//! Facts about the floating-point dtypes the error bounds need: unit roundoff, smallest
//! subnormal, largest finite value, Higham's `γ_K`, what a `max` does with a NaN, the error function, and
//! the bit patterns of NaNs.

use fkc_provider::DType;
use fkc_provider::dtype::Format;

/// The exponent and stored significand bits of a float dtype (`None` for an integer one).
fn float_bits(dtype: DType) -> Option<(i32, i32)> {
    match dtype.format() {
        Format::Float { exponent, mantissa } => Some((exponent as i32, mantissa as i32)),
        Format::Int { .. } | Format::Bool => None,
    }
}

/// The unit roundoff of a dtype (0 for an integer dtype: its arithmetic is exact).
pub fn unit_roundoff(dtype: DType) -> f64 {
    float_bits(dtype).map_or(0.0, |(_, mantissa)| pow2(-mantissa - 1))
}

/// `2^e` exactly, built from its bits (the bounds ask for these per element: `powi` is a
/// loop of multiplications): subnormal below `2^-1022`, 0 below `2^-1074`, ∞ above `2^1023`.
pub fn pow2(e: i32) -> f64 {
    if e > 1023 {
        f64::INFINITY
    } else if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else if e >= -1074 {
        f64::from_bits(1u64 << (e + 1074))
    } else {
        0.0
    }
}

/// The smallest positive subnormal of a dtype (absolute slack for underflow in products; 0 for
/// an integer dtype).
pub fn smallest_subnormal(dtype: DType) -> f64 {
    float_bits(dtype).map_or(0.0, |(exponent, mantissa)| {
        let bias = (1 << (exponent - 1)) - 1;
        pow2(1 - bias - mantissa)
    })
}

/// The largest finite value of a dtype.
pub fn largest(dtype: DType) -> f64 {
    match (float_bits(dtype), dtype.int_range()) {
        (Some((exponent, mantissa)), _) => {
            let bias = (1 << (exponent - 1)) - 1;
            (2.0 - pow2(-mantissa)) * pow2(bias)
        }
        (None, Some((_, high))) => high as f64,
        (None, None) => f64::MAX,
    }
}

/// `value` rounded to nearest, ties to even, in `dtype`'s binary format (IEEE 754 rules:
/// gradual underflow, ±Inf from the tie above the largest finite value on), computed here
/// and not by the provider's encoder, so that the oracle shares no rounding code with the
/// kernels it judges. `None` for an integer dtype.
pub fn round_to_format(value: f64, dtype: DType) -> Option<f64> {
    let (exponent, mantissa) = float_bits(dtype)?;
    if !value.is_finite() || value == 0.0 {
        return Some(value);
    }
    let bias = (1 << (exponent - 1)) - 1;
    // The binade of |value| (f64 subnormals lie far below every narrower format's range).
    let binade = ((value.abs().to_bits() >> 52) as i32 - 1023).max(1 - bias);
    let quantum = pow2(binade - mantissa);
    let rounded = (value / quantum).round_ties_even() * quantum;
    Some(if rounded.abs() > largest(dtype) {
        f64::INFINITY.copysign(value)
    } else {
        rounded
    })
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

/// What integer arithmetic does when a result leaves its dtype (`precision.overflow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// Taken modulo 2^bits, two's complement (Rust's `wrapping_add`; the default).
    #[default]
    Wrap,
    /// Clamped to the dtype's smallest or largest value (`saturating_add`).
    Saturate,
}

/// The error function, within one unit in the last place (`libm`'s port of the FreeBSD/musl
/// rational approximations; checked against correctly rounded values in the tests). It once was
/// an alternating Maclaurin series summed in double-double: as exact, but some twenty times
/// slower, and the magnitudes attack evaluates it on every element of every GELU operand.
pub fn erf(x: f64) -> f64 {
    libm::erf(x)
}

/// (sign bit, exponent mask, quiet bit) of a float `dtype`'s bit patterns (all zero for an
/// integer dtype, which has neither NaNs nor a sign bit of its own).
pub fn layout(dtype: DType) -> (u64, u64, u64) {
    match float_bits(dtype) {
        Some((exponent, mantissa)) => {
            let (exponent, mantissa) = (exponent as u32, mantissa as u32);
            (
                1 << (exponent + mantissa),
                ((1 << exponent) - 1) << mantissa,
                1 << (mantissa - 1),
            )
        }
        None => (0, 0, 0),
    }
}

/// Whether `bits` is a NaN of `dtype` (never, for an integer dtype).
pub fn is_nan(bits: u64, dtype: DType) -> bool {
    let (sign, exponent, _) = layout(dtype);
    let magnitude = bits & !sign;
    exponent != 0 && magnitude & exponent == exponent && magnitude != exponent
}

/// The canonical quiet NaN of a float `dtype`: positive, the quiet bit its only payload.
pub fn canonical_nan(dtype: DType) -> u64 {
    let (_, exponent, quiet) = layout(dtype);
    exponent | quiet
}

/// The bits in `dtype` of `value` when it is a signalling NaN (its quiet bit clear): its sign
/// and the top of its payload, still signalling (the lowest payload bit set where the top
/// bits are all clear). `None` for any other value and for an integer dtype. A conversion
/// through the hardware would quiet it; the special values need it to reach a kernel as it is.
pub fn signalling_nan(value: f64, dtype: DType) -> Option<u64> {
    let bits = value.to_bits();
    let f64_quiet = 1u64 << 51;
    if !value.is_nan() || bits & f64_quiet != 0 {
        return None;
    }
    let (_, mantissa) = float_bits(dtype)?;
    let (sign, exponent, quiet) = layout(dtype);
    let payload = (bits & (f64_quiet - 1)) >> (52 - mantissa) & (quiet - 1);
    let negative = if value.is_sign_negative() { sign } else { 0 };
    Some(negative | exponent | payload.max(1))
}

/// Hex digits of a bit pattern of `dtype`, with the `0x`.
pub fn hex_width(dtype: DType) -> usize {
    2 + 2 * dtype.size_bytes()
}

#[cfg(test)]
mod facts_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A narrow format, its width in bits and a trusted rounding to compare ours with.
    type ReferenceRounding<'a> = (DType, u32, &'a dyn Fn(f64) -> f64);

    /// The oracle's own rounding agrees with the `half` crate and the provider's encoder on
    /// every value of the narrow formats, every midpoint between neighbours (ties to even)
    /// and values just off them, subnormals and the overflow tie included.
    #[test]
    fn round_to_format_is_round_to_nearest_even() {
        let f16 = |v: f64| half::f16::from_f64(v).to_f64();
        let e5m2 = |v: f64| fkc_provider::F8E5M2::from_f64(v).to_f64();
        let cases: [ReferenceRounding; 2] =
            [(DType::F16, 16, &f16), (DType::F8E5M2, 8, &e5m2)];
        for (dtype, bits, reference) in cases {
            let (exponent, mantissa) = float_bits(dtype).unwrap();
            let decode = |b| fkc_provider::f8::decode(b, exponent as u32, mantissa as u32);
            let values: Vec<f64> = (0..1u64 << (bits - 1))
                .map(decode)
                .filter(|v| v.is_finite())
                .collect();
            for pair in values.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                let mid = (a + b) / 2.0;
                for v in [a, mid, mid - (b - a) / 8.0, mid + (b - a) / 8.0] {
                    for v in [v, -v] {
                        let ours = round_to_format(v, dtype).unwrap();
                        assert_eq!(ours.to_bits(), reference(v).to_bits(), "{dtype:?} {v}");
                    }
                }
            }
            let top = largest(dtype);
            let ulp = top - values[values.len() - 2];
            for (v, want) in [(top + ulp / 4.0, top), (top + ulp / 2.0, f64::INFINITY)] {
                assert_eq!(round_to_format(v, dtype), Some(want), "{dtype:?} {v}");
            }
        }
        assert_eq!(round_to_format(1.0 + 0.125, DType::F8E5M2), Some(1.0));
        assert_eq!(round_to_format(1.5 + 0.125, DType::F8E5M2), Some(1.5));
        assert_eq!(round_to_format(1.0, DType::I32), None);
    }

    #[test]
    fn the_facts_of_every_dtype() {
        assert_eq!(unit_roundoff(DType::F64), f64::EPSILON / 2.0);
        assert_eq!(unit_roundoff(DType::F32), f64::from(f32::EPSILON) / 2.0);
        assert_eq!(unit_roundoff(DType::BF16), 2f64.powi(-8));
        assert_eq!(unit_roundoff(DType::F16), 2f64.powi(-11));
        assert_eq!(unit_roundoff(DType::F8E5M2), 2f64.powi(-3));
        assert_eq!(unit_roundoff(DType::I32), 0.0);
        assert_eq!(smallest_subnormal(DType::F64), 5e-324);
        for e in -1080..1030 {
            let by_powi = if e < -1000 { 2f64.powi(e + 100) * 2f64.powi(-100) } else { 2f64.powi(e) };
            assert_eq!(pow2(e).to_bits(), by_powi.to_bits(), "2^{e}");
        }
        assert_eq!(smallest_subnormal(DType::F32), 2f64.powi(-149));
        assert_eq!(smallest_subnormal(DType::BF16), 2f64.powi(-133));
        assert_eq!(smallest_subnormal(DType::F16), 2f64.powi(-24));
        assert_eq!(smallest_subnormal(DType::F8E5M2), 2f64.powi(-16));
        assert_eq!(largest(DType::F64), f64::MAX);
        assert_eq!(largest(DType::F32), f64::from(f32::MAX));
        assert_eq!(largest(DType::BF16), f64::from(half::bf16::MAX));
        assert_eq!(largest(DType::F16), f64::from(half::f16::MAX));
        assert_eq!(largest(DType::F8E5M2), 57344.0);
        assert_eq!(largest(DType::I8), 127.0);
        assert_eq!(layout(DType::F32), (1 << 31, 0x7f80_0000, 1 << 22));
        assert_eq!(layout(DType::BF16), (1 << 15, 0x7f80, 1 << 6));
        assert_eq!(layout(DType::F16), (1 << 15, 0x7c00, 1 << 9));
        assert_eq!(layout(DType::F64), (1 << 63, 0x7ff0_0000_0000_0000, 1 << 51));
        assert_eq!(canonical_nan(DType::F8E5M2), 0x7e);
        assert!(is_nan(0x7d, DType::F8E5M2) && !is_nan(0x7c, DType::F8E5M2));
        assert!(!is_nan(0x7f, DType::I8) && !is_nan(0xff, DType::U8));
        assert_eq!(hex_width(DType::F16), 6);
        let signalling = f64::from_bits(0x7ff4_0000_0000_0000);
        assert_eq!(signalling_nan(signalling, DType::F32), Some(0x7fa0_0000));
        assert_eq!(signalling_nan(signalling, DType::F16), Some(0x7d00));
        assert_eq!(signalling_nan(signalling, DType::BF16), Some(0x7fa0));
        assert_eq!(signalling_nan(signalling, DType::F8E5M2), Some(0x7d));
        assert_eq!(signalling_nan(-signalling, DType::F16), Some(0xfd00));
        assert_eq!(signalling_nan(f64::from_bits(0x7ff0_0000_0000_0001), DType::F16), Some(0x7c01));
        assert_eq!(signalling_nan(f64::NAN, DType::F16), None);
        assert_eq!(signalling_nan(1.0, DType::F16), None);
        assert_eq!(signalling_nan(signalling, DType::I8), None);
        assert_eq!(hex_width(DType::I64), 18);
    }
}
