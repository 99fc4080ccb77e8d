//! Axis and index helpers shared by the shape-generic kernels: normalising a signed axis,
//! packed strides, splitting a shape around one axis and stepping a row-major multi-index.

use crate::error::{KernelError, KernelErrorKind};
use crate::shape::numel;

/// `axis` as an index into a rank-`rank` shape: negative counts from the end; anything outside
/// `[-rank, rank)` (every axis of a rank-0 input) is `BadParams`.
pub(crate) fn normalize_axis(
    op: &'static str,
    axis: i64,
    rank: usize,
) -> Result<usize, KernelError> {
    let bad = || {
        KernelError::new(
            op,
            KernelErrorKind::BadParams,
            format!("axis {axis} is outside [-{rank}, {rank}) for a rank-{rank} input"),
        )
    };
    let signed_rank = i64::try_from(rank).map_err(|_| bad())?;
    if axis < -signed_rank || axis >= signed_rank {
        return Err(bad());
    }
    let axis = if axis < 0 { axis + signed_rank } else { axis };
    usize::try_from(axis).map_err(|_| bad())
}

/// Packed row-major strides, in elements, of a tensor's shape (its element count fits `usize`,
/// so no stride overflows).
pub(crate) fn packed_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut acc = 1usize;
    for (stride, &dim) in strides.iter_mut().zip(shape).rev() {
        *stride = acc;
        acc = acc.saturating_mul(dim);
    }
    strides
}

/// `(outer, extent, inner)`: the products of the dimensions before `axis`, the axis itself and
/// the products of those after it (`Overflow` if a product does not fit).
pub(crate) fn split_at_axis(
    shape: &[usize],
    axis: usize,
) -> Result<(usize, usize, usize), KernelError> {
    let outer = numel(shape.get(..axis).unwrap_or_default())?;
    let extent = shape.get(axis).copied().unwrap_or(1);
    let inner = numel(shape.get(axis + 1..).unwrap_or_default())?;
    Ok((outer, extent, inner))
}

/// Steps `index` to the next row-major position inside `shape` (last axis fastest); wraps to
/// all zeros after the last position.
pub(crate) fn step_index(index: &mut [usize], shape: &[usize]) {
    for (i, &dim) in index.iter_mut().zip(shape).rev() {
        *i += 1;
        if *i < dim {
            return;
        }
        *i = 0;
    }
}

/// `Σ index[i] · strides[i]`.
pub(crate) fn offset(index: &[usize], strides: &[usize]) -> usize {
    index.iter().zip(strides).map(|(i, s)| i * s).sum()
}

/// A test tensor of `f64` values (the kernels' unit tests share it).
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn test_tensor(data: &[f64], shape: &[usize]) -> crate::tensor::RefTensor<f64> {
    crate::tensor::RefTensor::from_vec(data.to_vec(), shape).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_normalise_and_reject() {
        assert_eq!(normalize_axis("t", -1, 3), Ok(2));
        assert_eq!(normalize_axis("t", -3, 3), Ok(0));
        assert_eq!(normalize_axis("t", 2, 3), Ok(2));
        for bad in [3, -4, i64::MIN, i64::MAX] {
            let e = normalize_axis("t", bad, 3).err().map(|e| e.kind);
            assert_eq!(e, Some(KernelErrorKind::BadParams));
        }
        assert!(normalize_axis("t", 0, 0).is_err());
    }

    #[test]
    fn shapes_split_and_step() {
        assert_eq!(packed_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(split_at_axis(&[2, 3, 4], 1), Ok((2, 3, 4)));
        assert_eq!(split_at_axis(&[5], 0), Ok((1, 5, 1)));
        let shape = [2, 3];
        let mut index = [0, 0];
        let mut seen = Vec::new();
        for _ in 0..6 {
            seen.push(offset(&index, &packed_strides(&shape)));
            step_index(&mut index, &shape);
        }
        assert_eq!(seen, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(index, [0, 0]);
    }
}
