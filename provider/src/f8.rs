//! `F8E5M2`, the 8-bit float with 5 exponent and 2 significand bits (OCP FP8 E5M2), and the
//! exact conversions of any small IEEE-style binary float to and from `f64`.
//!
//! E5M2 keeps every IEEE 754 rule: bias 15, subnormals, ±Inf, NaNs (exponent all ones with a
//! non-zero significand) and round-to-nearest, ties to even; a value beyond the largest finite
//! one (57344) by half a step or more becomes ±Inf.

/// An 8-bit E5M2 float, held as its bit pattern.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F8E5M2(pub u8);

const EXPONENT: u32 = 5;
const MANTISSA: u32 = 2;

impl F8E5M2 {
    /// The nearest E5M2 value to `v` (ties to even); NaN stays NaN (the quiet pattern `0x7e`,
    /// signed like `v`).
    pub fn from_f64(v: f64) -> F8E5M2 {
        F8E5M2(encode(v, EXPONENT, MANTISSA) as u8)
    }

    /// The value, exactly.
    pub fn to_f64(self) -> f64 {
        decode(u64::from(self.0), EXPONENT, MANTISSA)
    }

    /// The bit pattern.
    pub fn to_bits(self) -> u8 {
        self.0
    }

    /// The value with this bit pattern.
    pub fn from_bits(bits: u8) -> F8E5M2 {
        F8E5M2(bits)
    }
}

/// The value of the bit pattern `bits` of a binary float with `exponent` exponent bits and
/// `mantissa` stored significand bits (IEEE 754 rules), exactly.
pub fn decode(bits: u64, exponent: u32, mantissa: u32) -> f64 {
    let sign = if (bits >> (exponent + mantissa)) & 1 == 1 {
        -1.0
    } else {
        1.0
    };
    let biased = (bits >> mantissa) & ((1 << exponent) - 1);
    let fraction = bits & ((1 << mantissa) - 1);
    let bias = (1i32 << (exponent - 1)) - 1;
    let all_ones = (1 << exponent) - 1;
    let magnitude = if biased == all_ones {
        if fraction == 0 {
            f64::INFINITY
        } else {
            f64::NAN
        }
    } else if biased == 0 {
        fraction as f64 * 2f64.powi(1 - bias - mantissa as i32)
    } else {
        (fraction as f64 / (1u64 << mantissa) as f64 + 1.0) * 2f64.powi(biased as i32 - bias)
    };
    sign * magnitude
}

/// The bit pattern of the value nearest `v` (ties to even) in a binary float with `exponent`
/// exponent bits and `mantissa` stored significand bits (IEEE 754 rules, overflow to ±Inf).
pub fn encode(v: f64, exponent: u32, mantissa: u32) -> u64 {
    let sign = u64::from(v.is_sign_negative()) << (exponent + mantissa);
    let all_ones = (1u64 << exponent) - 1;
    if v.is_nan() {
        return sign | (all_ones << mantissa) | (1 << (mantissa - 1));
    }
    let bias = (1i32 << (exponent - 1)) - 1;
    let a = v.abs();
    if a == 0.0 {
        return sign;
    }
    // The exponent of a's leading bit, no lower than the smallest normal one.
    let lead = if a.is_infinite() {
        bias + 1
    } else {
        (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(1 - bias)
    };
    let step = 2f64.powi(lead - mantissa as i32);
    let mut units = (a / step).round_ties_even();
    let mut lead = lead;
    if units >= (1u64 << (mantissa + 1)) as f64 {
        units /= 2.0;
        lead += 1;
    }
    if lead > bias || a.is_infinite() {
        return sign | (all_ones << mantissa);
    }
    let units = units as u64;
    if units < (1 << mantissa) {
        // subnormal (or rounded to zero)
        return sign | units;
    }
    let biased = (lead + bias) as u64;
    sign | (biased << mantissa) | (units - (1 << mantissa))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_round_trips() {
        for bits in 0..=255u8 {
            let v = F8E5M2(bits).to_f64();
            let back = F8E5M2::from_f64(v);
            if v.is_nan() {
                assert!(back.to_f64().is_nan());
            } else {
                assert_eq!(back, F8E5M2(bits), "{bits:#x} = {v}");
            }
        }
    }

    #[test]
    fn rounds_to_nearest_even_and_overflows() {
        assert_eq!(F8E5M2::from_f64(1.0).0, 0x3c);
        assert_eq!(F8E5M2::from_f64(57344.0).to_f64(), 57344.0);
        // halfway between 57344 and the next step (65536) rounds to even: Inf
        assert!(F8E5M2::from_f64(61440.0).to_f64().is_infinite());
        assert_eq!(F8E5M2::from_f64(61439.0).to_f64(), 57344.0);
        // 1.125 lies halfway between 1.0 and 1.25: even is 1.0
        assert_eq!(F8E5M2::from_f64(1.125).to_f64(), 1.0);
        assert_eq!(F8E5M2::from_f64(1.375).to_f64(), 1.5);
        // the smallest subnormal, 2^-16, and half of it (ties to even: zero)
        assert_eq!(F8E5M2::from_f64(2f64.powi(-16)).0, 0x01);
        assert_eq!(F8E5M2::from_f64(2f64.powi(-17)).0, 0x00);
        assert_eq!(F8E5M2::from_f64(-0.0).0, 0x80);
        assert!(F8E5M2::from_f64(f64::NAN).to_f64().is_nan());
        assert_eq!(F8E5M2::from_f64(f64::NEG_INFINITY).0, 0xfc);
    }

    #[test]
    fn agrees_with_half_precision_where_it_can() {
        // f16 has the same exponent range: every E5M2 value is an f16 value.
        for bits in 0..=255u8 {
            let v = F8E5M2(bits).to_f64();
            if !v.is_nan() {
                assert_eq!(decode(encode(v, 5, 10), 5, 10).to_bits(), v.to_bits());
            }
        }
        assert_eq!(
            decode(encode(1.0 / 3.0, 5, 10), 5, 10),
            half::f16::from_f64(1.0 / 3.0).to_f64()
        );
    }
}
