//! `matmul`: batched matrix product of two rank-3 operands, either of them read transposed.

use crate::error::{KernelError, KernelErrorKind};
use crate::mutants::{Mutant, active};
use crate::ops::common::dims;
use crate::shape::numel;
use crate::tensor::{Element, RefTensor};

const OP: &str = "matmul";

/// Parameters of [`matmul`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MatmulParams {
    /// `a` is `[B, K, M]` (read as its transpose) instead of `[B, M, K]`.
    pub transpose_a: bool,
    /// `b` is `[B, N, K]` (read as its transpose) instead of `[B, K, N]`.
    pub transpose_b: bool,
}

/// Batched matrix product: `out[b, i, j] = Σ_k A[b, i, k] · B[b, k, j]` with `A = a` (or its
/// last two axes swapped when `transpose_a`) and `B = b` (likewise with `transpose_b`).
///
/// `a` is `[B, M, K]` (`[B, K, M]` with `transpose_a`), `b` is `[B, K, N]` (`[B, N, K]` with
/// `transpose_b`), `out` is `[B, M, N]`. A batch or inner-dimension mismatch is
/// `ShapeMismatch`, an operand of another rank `Rank`. Zero-sized dimensions are allowed (an
/// empty sum is `+0.0`).
///
/// Accumulator: `acc: T = 0`, then `acc = acc + a·b` (a separate multiply and add, each
/// rounded to `T`) for `k` ascending; the output is `acc`.
pub fn matmul<T: Element>(
    a: &RefTensor<T>,
    b: &RefTensor<T>,
    params: &MatmulParams,
) -> Result<RefTensor<T>, KernelError> {
    let ctx = format!(
        "a {:?}, b {:?}, transpose_a {}, transpose_b {}",
        a.shape(),
        b.shape(),
        params.transpose_a,
        params.transpose_b
    );
    let ta = params.transpose_a;
    let tb = params.transpose_b && !active(Mutant::MatmulIgnoresTransposeB);
    let [batch_a, a1, a2] = dims(OP, "a", if ta { "B, K, M" } else { "B, M, K" }, a.shape())?;
    let [batch_b, b1, b2] = dims(OP, "b", if tb { "B, N, K" } else { "B, K, N" }, b.shape())?;
    let (m, k_a) = if ta { (a2, a1) } else { (a1, a2) };
    let (k_b, n) = if tb { (b2, b1) } else { (b1, b2) };
    let mismatch = |what: String| {
        KernelError::new(OP, KernelErrorKind::ShapeMismatch, format!("{what}; {ctx}"))
    };
    if batch_a != batch_b {
        return Err(mismatch(format!(
            "batch {batch_a} of a != batch {batch_b} of b"
        )));
    }
    if k_a != k_b {
        return Err(mismatch(format!(
            "inner dimension {k_a} of a != {k_b} of b"
        )));
    }
    let out_shape = [batch_a, m, n];
    let mut out = Vec::with_capacity(numel(&out_shape)?);
    let (a_data, b_data) = (a.data(), b.data());
    let (a_plane, b_plane) = (a1 * a2, b1 * b2);
    let packs_b_once = n >= 32 && k_a >= 32 && active(Mutant::MatmulLargePacksFirstB);
    for batch in 0..batch_a {
        let a_base = batch * a_plane;
        let b_base = if packs_b_once { 0 } else { batch * b_plane };
        for i in 0..m {
            for j in 0..n {
                let mut acc = T::zero();
                // (the planted bug: a second accumulator for odd `k` of long sums)
                let split = k_a >= 16 && active(Mutant::MatmulSplitsLongK);
                let mut odd = T::zero();
                for k in 0..k_a {
                    let av = if ta {
                        a_data[a_base + k * a2 + i]
                    } else {
                        a_data[a_base + i * a2 + k]
                    };
                    let bv = if tb {
                        b_data[b_base + j * b2 + k]
                    } else {
                        b_data[b_base + k * b2 + j]
                    };
                    if split && k % 2 == 1 {
                        odd = odd + av * bv;
                    } else {
                        acc = acc + av * bv;
                    }
                }
                out.push(if split { acc + odd } else { acc });
            }
        }
    }
    Ok(RefTensor::from_vec(out, &out_shape)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    use crate::ops::axes::test_tensor as t;

    /// The transpose of the last two axes of a rank-3 tensor.
    fn swap(x: &RefTensor<f64>) -> RefTensor<f64> {
        let [b, r, c] = <[usize; 3]>::try_from(x.shape()).unwrap();
        let mut out = Vec::new();
        for bi in 0..b {
            for j in 0..c {
                for i in 0..r {
                    out.push(x.data()[bi * r * c + i * c + j]);
                }
            }
        }
        t(&out, &[b, c, r])
    }

    #[test]
    fn hand_computed_product_in_every_transposition() {
        // A = [[1, 2, 3], [4, 5, 6]], B = [[7, 8], [9, 10], [11, 12]].
        let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1, 2, 3]);
        let b = t(&[7.0, 8.0, 9.0, 10.0, 11.0, 12.0], &[1, 3, 2]);
        let want = [58.0, 64.0, 139.0, 154.0];
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let a_in = if ta { swap(&a) } else { a.clone() };
            let b_in = if tb { swap(&b) } else { b.clone() };
            let params = MatmulParams {
                transpose_a: ta,
                transpose_b: tb,
            };
            let out = matmul(&a_in, &b_in, &params).unwrap();
            assert_eq!(out.shape(), &[1, 2, 2]);
            assert_eq!(out.data(), &want, "{params:?}");
        }
    }

    #[test]
    fn batches_are_independent_and_empty_sums_are_zero() {
        let a = t(&[1.0, 2.0], &[2, 1, 1]);
        let b = t(&[3.0, 4.0], &[2, 1, 1]);
        let out = matmul(&a, &b, &MatmulParams::default()).unwrap();
        assert_eq!(out.data(), &[3.0, 8.0]);
        let empty = matmul(
            &t(&[], &[1, 2, 0]),
            &t(&[], &[1, 0, 3]),
            &MatmulParams::default(),
        );
        assert_eq!(empty.unwrap().data(), &[0.0; 6]);
    }

    #[test]
    fn mismatches_and_ranks_are_rejected() {
        let p = MatmulParams::default();
        let kind = |r: Result<RefTensor<f64>, KernelError>| r.unwrap_err().kind;
        let a = t(&[0.0; 6], &[1, 2, 3]);
        assert_eq!(
            kind(matmul(&a, &t(&[0.0; 4], &[1, 2, 2]), &p)),
            KernelErrorKind::ShapeMismatch
        );
        assert_eq!(
            kind(matmul(&a, &t(&[0.0; 6], &[2, 3, 1]), &p)),
            KernelErrorKind::ShapeMismatch
        );
        assert_eq!(
            kind(matmul(&t(&[0.0; 6], &[2, 3]), &a, &p)),
            KernelErrorKind::Rank
        );
    }
}
