//! `qmatmul`: `i8` matrix product with a wrapping `i32` accumulator, requantised to `i8` by
//! an `f32` scale.

use crate::error::{KernelError, KernelErrorKind};
use crate::mutants::{Mutant, active};
use crate::ops::common::dims;
use crate::shape::numel;
use crate::tensor::RefTensor;

const OP: &str = "qmatmul";

/// Parameters of [`qmatmul`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QmatmulParams {
    /// What each `i32` sum is multiplied by (in `f32`) before rounding to `i8`; any value,
    /// NaN and infinities included.
    pub scale: f32,
}

/// `Σ x·y` over the pairs in order, each product and sum a wrapping `i32` operation.
fn dot(pairs: impl Iterator<Item = (i8, i8)>) -> i32 {
    if active(Mutant::QmatmulNarrowAccumulator) {
        let narrow = pairs.fold(0i16, |acc, (x, y)| {
            acc.wrapping_add(i16::from(x).wrapping_mul(i16::from(y)))
        });
        return i32::from(narrow);
    }
    pairs.fold(0i32, |acc, (x, y)| {
        acc.wrapping_add(i32::from(x).wrapping_mul(i32::from(y)))
    })
}

/// `acc · scale` in `f32` (`acc` rounded to `f32` first), rounded to nearest with ties to
/// even, saturated to `[-128, 127]`; NaN is 0.
fn requantize(acc: i32, scale: f32) -> i8 {
    if active(Mutant::QmatmulRequantizeF64) {
        return (f64::from(acc) * f64::from(scale)).round_ties_even() as i8;
    }
    let product = acc as f32 * scale;
    let rounded = if active(Mutant::QmatmulRoundHalfAway) {
        product.round()
    } else {
        product.round_ties_even()
    };
    if active(Mutant::QmatmulWrappingRequantize) {
        return rounded as i32 as i8;
    }
    rounded as i8
}

/// Quantised matrix product: `out[m, n] = requantize(Σ_k a[m, k] · b[k, n], scale)`.
///
/// `a` is `[M, K]`, `b` is `[K, N]`, `out` is `[M, N]`, all `i8`. Accumulator: `acc: i32 = 0`,
/// then `acc = acc.wrapping_add((a as i32).wrapping_mul(b as i32))` for `k` ascending — a sum
/// beyond the `i32` range wraps (two's complement). Requantisation: `(acc as f32) * scale`
/// (the `i32` rounded to nearest `f32`, then one `f32` multiplication), rounded to nearest with
/// ties to even (`round_ties_even`) and saturated to `[-128, 127]` (Rust's float-to-int `as`;
/// NaN gives 0). An inner-dimension mismatch is `ShapeMismatch`, an operand of another rank
/// `Rank`. Zero-sized dimensions are allowed (an empty sum is 0).
pub fn qmatmul(
    a: &RefTensor<i8>,
    b: &RefTensor<i8>,
    params: &QmatmulParams,
) -> Result<RefTensor<i8>, KernelError> {
    let [m, k] = dims(OP, "a", "M, K", a.shape())?;
    let [k_b, n] = dims(OP, "b", "K, N", b.shape())?;
    if k != k_b {
        return Err(KernelError::new(
            OP,
            KernelErrorKind::ShapeMismatch,
            format!(
                "inner dimension {k} of a != {k_b} of b; a {:?}, b {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let out_shape = [m, n];
    let mut out = Vec::with_capacity(numel(&out_shape)?);
    let (a_data, b_data) = (a.data(), b.data());
    for i in 0..m {
        for j in 0..n {
            let pairs = (0..k).map(|kk| (a_data[i * k + kk], b_data[kk * n + j]));
            out.push(requantize(dot(pairs), params.scale));
        }
    }
    Ok(RefTensor::from_vec(out, &out_shape)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn q(values: &[i8], shape: &[usize]) -> RefTensor<i8> {
        RefTensor::from_vec(values.to_vec(), shape).unwrap()
    }

    fn run(a: &RefTensor<i8>, b: &RefTensor<i8>, scale: f32) -> Vec<i8> {
        qmatmul(a, b, &QmatmulParams { scale }).unwrap().into_vec()
    }

    #[test]
    fn hand_computed_product() {
        // [[1, 2], [3, 4]] · [[5, 6], [7, 8]] = [[19, 22], [43, 50]].
        let a = q(&[1, 2, 3, 4], &[2, 2]);
        let b = q(&[5, 6, 7, 8], &[2, 2]);
        assert_eq!(run(&a, &b, 1.0), [19, 22, 43, 50]);
        // [1, 2, 3] · [[1, -1], [1, 0], [1, 2]] = [6, 5]; scaled by 2: [12, 10].
        let out = qmatmul(
            &q(&[1, 2, 3], &[1, 3]),
            &q(&[1, -1, 1, 0, 1, 2], &[3, 2]),
            &QmatmulParams { scale: 2.0 },
        );
        let out = out.unwrap();
        assert_eq!(out.shape(), &[1, 2]);
        assert_eq!(out.data(), &[12, 10]);
    }

    #[test]
    fn requantisation_rounds_ties_to_even() {
        // acc = 5, 3, -5, -3, 19 scaled by 0.5: 2.5, 1.5, -2.5, -1.5, 9.5.
        let a = q(&[5, 3, -5, -3, 19], &[5, 1]);
        let b = q(&[1], &[1, 1]);
        assert_eq!(run(&a, &b, 0.5), [2, 2, -2, -2, 10]);
        // acc is rounded to f32 first: 2^30 - 2^23 - 1 becomes 2^30 - 2^23, so the product is
        // the tie 63.5 (even: 64), where the exact 63.5 - 2^-24 would give 63.
        let acc = (1 << 30) - (1 << 23) - 1;
        assert_eq!(requantize(acc, 2f32.powi(-24)), 64);
        assert_eq!(requantize(-acc, 2f32.powi(-24)), -64);
    }

    #[test]
    fn requantisation_saturates_at_both_ends_and_nan_is_zero() {
        let a = q(&[127, 127, -128, -128], &[2, 2]);
        let b = q(&[127, 127], &[2, 1]);
        assert_eq!(run(&a, &b, 1.0), [127, -128]);
        assert_eq!(run(&a, &b, f32::NAN), [0, 0]);
        assert_eq!(run(&a, &b, f32::INFINITY), [127, -128]);
        assert_eq!(run(&a, &b, f32::NEG_INFINITY), [-128, 127]);
        // 0 · Inf is NaN: 0.
        assert_eq!(
            run(&q(&[0], &[1, 1]), &q(&[9], &[1, 1]), f32::INFINITY),
            [0]
        );
        assert_eq!(requantize(128, 1.0), 127);
        assert_eq!(requantize(-129, 1.0), -128);
    }

    #[test]
    fn the_accumulator_wraps_in_i32() {
        // 2^17 products of (-128)·(-128) = 2^14 sum to 2^31, which wraps to -2^31; scaled by
        // 2^-24 that is -128 (the true sum would saturate to 127).
        let k = 1 << 17;
        let a = q(&vec![-128; k], &[1, k]);
        let b = q(&vec![-128; k], &[k, 1]);
        assert_eq!(run(&a, &b, 2f32.powi(-24)), [-128]);
        let pairs = [(-128, -128); 1 << 17];
        assert_eq!(dot(pairs.into_iter()), i32::MIN);
    }

    #[test]
    fn empty_dimensions_mismatches_and_ranks() {
        assert_eq!(run(&q(&[], &[2, 0]), &q(&[], &[0, 3]), 1.0), [0; 6]);
        assert!(run(&q(&[], &[0, 2]), &q(&[0; 2], &[2, 1]), 1.0).is_empty());
        let p = QmatmulParams { scale: 1.0 };
        let kind = |r: Result<RefTensor<i8>, KernelError>| r.unwrap_err().kind;
        let a = q(&[0; 6], &[2, 3]);
        assert_eq!(
            kind(qmatmul(&a, &q(&[0; 6], &[2, 3]), &p)),
            KernelErrorKind::ShapeMismatch
        );
        assert_eq!(
            kind(qmatmul(&a, &q(&[0; 3], &[3]), &p)),
            KernelErrorKind::Rank
        );
        assert_eq!(
            kind(qmatmul(&q(&[0; 6], &[1, 2, 3]), &a, &p)),
            KernelErrorKind::Rank
        );
    }

    #[cfg(feature = "mutants")]
    fn planted(mutant: Mutant, a: &RefTensor<i8>, b: &RefTensor<i8>, scale: f32) -> Vec<i8> {
        crate::mutants::with(Some(mutant), || run(a, b, scale))
    }

    #[cfg(feature = "mutants")]
    #[test]
    fn narrow_accumulator_mutant_wraps_at_16_bits() {
        // 4 · 100 · 100 = 40000 > 2^15: in i16 it wraps to -25536.
        let (a, b) = (q(&[100; 4], &[1, 4]), q(&[100; 4], &[4, 1]));
        assert_eq!(run(&a, &b, 1e-3), [40]);
        assert_eq!(
            planted(Mutant::QmatmulNarrowAccumulator, &a, &b, 1e-3),
            [-26]
        );
    }

    #[cfg(feature = "mutants")]
    #[test]
    fn wrapping_requantize_mutant_wraps_instead_of_saturating() {
        let (a, b) = (q(&[100, 100], &[1, 2]), q(&[1, 1], &[2, 1]));
        assert_eq!(run(&a, &b, 1.0), [127]);
        assert_eq!(
            planted(Mutant::QmatmulWrappingRequantize, &a, &b, 1.0),
            [-56]
        );
    }

    #[cfg(feature = "mutants")]
    #[test]
    fn round_half_away_mutant_breaks_ties_away_from_zero() {
        let (a, b) = (q(&[5, -3], &[2, 1]), q(&[1], &[1, 1]));
        assert_eq!(run(&a, &b, 0.5), [2, -2]);
        assert_eq!(planted(Mutant::QmatmulRoundHalfAway, &a, &b, 0.5), [3, -2]);
    }
}
