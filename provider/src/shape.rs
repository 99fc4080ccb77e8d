//! Checked shape arithmetic shared by tensors, views and kernels.
//!
//! Every size computation in the crate goes through these helpers so that an absurd shape
//! becomes a typed `Overflow` error instead of a wrapped `usize` or a panic, and so that
//! messages print shapes the same way everywhere (`[1, 3, 5, 5]`).

use crate::error::{KernelErrorKind, TensorError};

/// Product of the dimensions, or an `Overflow` error.
pub fn numel(shape: &[usize]) -> Result<usize, TensorError> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            TensorError::new(
                KernelErrorKind::Overflow,
                format!("element count of shape {shape:?} overflows usize"),
            )
        })
}

/// Row-major (C-order) element strides of a shape whose element count is known to fit.
pub fn row_major_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc: isize = 1;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(isize::try_from(d).unwrap_or(isize::MAX));
    }
    strides
}

/// A zero-filled buffer of `len` elements; allocation failure is an `Overflow` error.
pub fn zeroed_vec<T: Copy + num_traits::Zero>(len: usize) -> Result<Vec<T>, TensorError> {
    filled_vec(len, T::zero())
}

/// A buffer of `len` copies of `value`; allocation failure is an `Overflow` error.
pub fn filled_vec<T: Copy>(len: usize, value: T) -> Result<Vec<T>, TensorError> {
    let mut data = Vec::new();
    data.try_reserve_exact(len).map_err(|_| {
        TensorError::new(
            KernelErrorKind::Overflow,
            format!("cannot allocate {len} elements"),
        )
    })?;
    data.resize(len, value);
    Ok(data)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn numel_checks_overflow() {
        assert_eq!(numel(&[2, 3, 4]), Ok(24));
        assert_eq!(numel(&[]), Ok(1));
        assert_eq!(numel(&[0, usize::MAX]), Ok(0));
        let err = numel(&[usize::MAX, 2]).unwrap_err();
        assert_eq!(err.kind, KernelErrorKind::Overflow);
    }

    #[test]
    fn strides_are_row_major() {
        assert_eq!(row_major_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(row_major_strides(&[]), Vec::<isize>::new());
    }
}
