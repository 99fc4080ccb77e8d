//! `transpose`: a permutation of the axes of a tensor of any rank, as a packed copy.

use crate::error::{KernelError, KernelErrorKind};
use crate::mutants::{Mutant, active};
use crate::ops::axes::{offset, packed_strides, step_index};
use crate::shape::numel;
use crate::tensor::{Element, RefTensor};

/// Checks that `perm` is a permutation of `0..rank` (`BadParams` otherwise).
fn check_perm(perm: &[usize], rank: usize) -> Result<(), KernelError> {
    let mut seen = vec![false; rank];
    let ok = perm.len() == rank
        && perm
            .iter()
            .all(|&p| p < rank && !std::mem::replace(&mut seen[p], true));
    if ok {
        return Ok(());
    }
    Err(KernelError::new(
        "transpose",
        KernelErrorKind::BadParams,
        format!("perm {perm:?} is not a permutation of 0..{rank}"),
    ))
}

/// Permutes the axes of `x`: `out.shape[i] = x.shape[perm[i]]` and
/// `out[i_0, …, i_{r−1}] = x[j]` with `j[perm[k]] = i_k`. `perm` must be a permutation of
/// `0..rank` (`BadParams` otherwise; `[]` for a rank-0 input).
///
/// A pure copy: every element is moved bit for bit (NaN payloads and zero signs kept), no
/// arithmetic, no accumulator.
pub fn transpose<T: Element>(
    x: &RefTensor<T>,
    perm: &[usize],
) -> Result<RefTensor<T>, KernelError> {
    let shape = x.shape();
    check_perm(perm, shape.len())?;
    let high_rank_inverse = perm.len() > 4 && active(Mutant::TransposeHighRankInversePerm);
    let perm: Vec<usize> = if active(Mutant::TransposeInversePerm) || high_rank_inverse {
        let mut inverse = vec![0; perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p] = i;
        }
        inverse
    } else {
        perm.to_vec()
    };
    let r = perm.len();
    let swaps_last_two =
        r >= 3 && perm[r - 1] == r - 2 && perm[r - 2] == r - 1 && (0..r - 2).all(|i| perm[i] == i);
    if swaps_last_two && active(Mutant::TransposeSwapFastPathFirstAxis) {
        return swap_planes_of_first_axis(x);
    }
    if r == 2
        && perm == [1, 0]
        && shape[0] >= 16
        && shape[1] >= 16
        && active(Mutant::TransposeBlockedCorner)
    {
        return blocked_without_corner(x);
    }
    let x_strides = packed_strides(shape);
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let strides: Vec<usize> = perm.iter().map(|&p| x_strides[p]).collect();
    let count = numel(&out_shape)?;
    let data = x.data();
    let mut out = Vec::with_capacity(count);
    let mut index = vec![0; out_shape.len()];
    for _ in 0..count {
        out.push(data[offset(&index, &strides)]);
        step_index(&mut index, &out_shape);
    }
    Ok(RefTensor::from_vec(out, &out_shape)?)
}

/// The planted [`Mutant::TransposeBlockedCorner`]: 16×16 tiles, then the right and bottom
/// edges, but not the corner past both.
fn blocked_without_corner<T: Element>(x: &RefTensor<T>) -> Result<RefTensor<T>, KernelError> {
    const B: usize = 16;
    let (rows, cols) = (x.shape()[0], x.shape()[1]);
    let data = x.data();
    let mut out = vec![T::zero(); rows * cols];
    let (full_r, full_c) = (rows / B * B, cols / B * B);
    for i in 0..rows {
        for j in 0..cols {
            if i < full_r || j < full_c {
                out[j * rows + i] = data[i * cols + j];
            }
        }
    }
    Ok(RefTensor::from_vec(out, &[cols, rows])?)
}

/// The planted [`Mutant::TransposeSwapFastPathFirstAxis`]: the last two axes swapped plane by
/// plane for the first axis's planes only, the rest copied as they are.
fn swap_planes_of_first_axis<T: Element>(x: &RefTensor<T>) -> Result<RefTensor<T>, KernelError> {
    let shape = x.shape();
    let r = shape.len();
    let (rows, cols) = (shape[r - 2], shape[r - 1]);
    let plane = rows * cols;
    let data = x.data();
    let mut out = data.to_vec();
    for b in 0..shape[0] {
        for i in 0..rows {
            for j in 0..cols {
                out[b * plane + j * rows + i] = data[b * plane + i * cols + j];
            }
        }
    }
    let mut out_shape = shape.to_vec();
    out_shape.swap(r - 2, r - 1);
    Ok(RefTensor::from_vec(out, &out_shape)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use half::bf16;

    use super::*;

    #[test]
    fn permutes_axes_by_hand() {
        let data: Vec<f64> = (0..6).map(f64::from).collect();
        let x = RefTensor::from_vec(data, &[2, 3]).unwrap();
        let out = transpose(&x, &[1, 0]).unwrap();
        assert_eq!(out.shape(), &[3, 2]);
        assert_eq!(out.data(), &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(transpose(&x, &[0, 1]).unwrap(), x);
    }

    #[test]
    fn a_three_cycle_is_not_its_inverse() {
        let data: Vec<f64> = (0..24).map(f64::from).collect();
        let x = RefTensor::from_vec(data, &[2, 3, 4]).unwrap();
        let out = transpose(&x, &[1, 2, 0]).unwrap();
        assert_eq!(out.shape(), &[3, 4, 2]);
        // out[i, j, k] = x[k, i, j].
        for i in 0..3 {
            for j in 0..4 {
                for k in 0..2 {
                    assert_eq!(out.data()[i * 8 + j * 2 + k], x.data()[k * 12 + i * 4 + j]);
                }
            }
        }
        let back = transpose(&out, &[2, 0, 1]).unwrap();
        assert_eq!(back, x);
    }

    #[test]
    fn copies_bits_and_rejects_non_permutations() {
        let nan = bf16::from_bits(0x7fc1);
        let x = RefTensor::from_vec(vec![nan, bf16::NEG_ZERO], &[1, 2]).unwrap();
        let out = transpose(&x, &[1, 0]).unwrap();
        assert_eq!(out.data()[0].to_bits(), 0x7fc1);
        assert_eq!(out.data()[1].to_bits(), 0x8000);
        for perm in [&[0][..], &[0, 0], &[1, 2], &[0, 1, 2]] {
            let e = transpose(&x, perm).unwrap_err();
            assert_eq!(e.kind, KernelErrorKind::BadParams, "{perm:?}");
        }
        let scalar = RefTensor::from_vec(vec![1.5f32], &[]).unwrap();
        assert_eq!(transpose(&scalar, &[]).unwrap(), scalar);
    }
}
