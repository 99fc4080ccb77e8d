//! `RefTensor<T>`: the backend's only storage type — contiguous, zero-offset, row-major.
//!
//! A `RefTensor` is a shape plus a `Vec<T>` whose length is exactly the product of the shape;
//! it has no strides and no offset, which is why every kernel here is contiguous-only.
//! [`Element`] is the trait the kernels are generic over (`f32`, `f64`, `bf16`, `f16`), and
//! [`AnyTensor`] is the dtype-erased form the executor and the link registry pass around.

use std::fmt::Debug;

use half::{bf16, f16};

use crate::dtype::DType;
use crate::error::{KernelErrorKind, TensorError};
use crate::shape::{numel, zeroed_vec};

/// A floating-point element type the kernels are instantiated for.
///
/// Arithmetic is `num_traits::Float` arithmetic in `Self`: for `bf16`/`f16`, `half` computes
/// each single operation through `f32` and rounds the result back, so every intermediate is
/// rounded to `Self` (no widened accumulator).
pub trait Element: num_traits::Float + Copy + Debug + Send + Sync + 'static {
    /// The runtime tag of this type.
    const DTYPE: DType;
    /// Exact widening to `f64`.
    fn to_f64(self) -> f64;
    /// Rounds an `f64` to the nearest `Self` (ties to even).
    fn from_f64(v: f64) -> Self;
    /// The raw bit pattern, zero-extended.
    fn to_bits_u64(self) -> u64;
    /// Wraps a typed tensor into the dtype-erased form.
    fn wrap(t: RefTensor<Self>) -> AnyTensor;
    /// Borrows the typed tensor if `t` holds this dtype.
    fn peel(t: &AnyTensor) -> Option<&RefTensor<Self>>;
}

macro_rules! impl_element {
    ($t:ty, $variant:ident, $to:expr, $from:expr, $bits:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            fn to_f64(self) -> f64 {
                $to(self)
            }
            fn from_f64(v: f64) -> Self {
                $from(v)
            }
            fn to_bits_u64(self) -> u64 {
                u64::from($bits(self))
            }
            fn wrap(t: RefTensor<Self>) -> AnyTensor {
                AnyTensor::$variant(t)
            }
            fn peel(t: &AnyTensor) -> Option<&RefTensor<Self>> {
                match t {
                    AnyTensor::$variant(inner) => Some(inner),
                    _ => None,
                }
            }
        }
    };
}

impl_element!(f32, F32, f64::from, |v: f64| v as f32, f32::to_bits);
impl_element!(f64, F64, |v: f64| v, |v: f64| v, f64::to_bits);
impl_element!(bf16, BF16, bf16::to_f64, bf16::from_f64, bf16::to_bits);
impl_element!(f16, F16, f16::to_f64, f16::from_f64, f16::to_bits);

/// A contiguous, zero-offset, row-major tensor: `data.len() == shape.iter().product()`.
#[derive(Clone, Debug, PartialEq)]
pub struct RefTensor<T> {
    shape: Vec<usize>,
    data: Vec<T>,
}

impl<T: Element> RefTensor<T> {
    /// Wraps `data` with `shape`; fails with `Length` unless the length equals the shape's
    /// element count (or `Overflow` if that count overflows).
    pub fn from_vec(data: Vec<T>, shape: &[usize]) -> Result<Self, TensorError> {
        let expected = numel(shape)?;
        if data.len() != expected {
            return Err(TensorError::new(
                KernelErrorKind::Length,
                format!(
                    "data has {} elements but shape {shape:?} needs {expected}",
                    data.len()
                ),
            ));
        }
        Ok(RefTensor {
            shape: shape.to_vec(),
            data,
        })
    }

    /// A zero-filled tensor of `shape`.
    pub fn zeros(shape: &[usize]) -> Result<Self, TensorError> {
        let data = zeroed_vec(numel(shape)?)?;
        Ok(RefTensor {
            shape: shape.to_vec(),
            data,
        })
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The elements in row-major order.
    pub fn data(&self) -> &[T] {
        &self.data
    }

    /// Consumes the tensor, returning its elements.
    pub fn into_vec(self) -> Vec<T> {
        self.data
    }
}

/// A `RefTensor` of any supported dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyTensor {
    /// `f32` elements.
    F32(RefTensor<f32>),
    /// `f64` elements.
    F64(RefTensor<f64>),
    /// `bf16` elements.
    BF16(RefTensor<bf16>),
    /// `f16` elements.
    F16(RefTensor<f16>),
}

/// Evaluates `$body` with `$t` bound to the inner `RefTensor<T>` whatever the dtype.
macro_rules! with_tensor {
    ($any:expr, $t:ident => $body:expr) => {
        match $any {
            AnyTensor::F32($t) => $body,
            AnyTensor::F64($t) => $body,
            AnyTensor::BF16($t) => $body,
            AnyTensor::F16($t) => $body,
        }
    };
}

impl AnyTensor {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            AnyTensor::F32(_) => DType::F32,
            AnyTensor::F64(_) => DType::F64,
            AnyTensor::BF16(_) => DType::BF16,
            AnyTensor::F16(_) => DType::F16,
        }
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        with_tensor!(self, t => t.shape())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_tensor!(self, t => t.data().len())
    }

    /// True when the tensor holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Builds a tensor of `dtype`, rounding each value to it (ties to even).
    pub fn from_f64(dtype: DType, shape: &[usize], values: &[f64]) -> Result<Self, TensorError> {
        fn build<T: Element>(shape: &[usize], values: &[f64]) -> Result<AnyTensor, TensorError> {
            let data = values.iter().map(|&v| T::from_f64(v)).collect();
            RefTensor::<T>::from_vec(data, shape).map(T::wrap)
        }
        match dtype {
            DType::F32 => build::<f32>(shape, values),
            DType::F64 => build::<f64>(shape, values),
            DType::BF16 => build::<bf16>(shape, values),
            DType::F16 => build::<f16>(shape, values),
        }
    }

    /// Builds a tensor of `dtype` from element bit patterns (as [`AnyTensor::to_bits`] gives
    /// them); fails with `Length` when a pattern does not fit the dtype or the count is wrong.
    pub fn from_bits(dtype: DType, shape: &[usize], bits: &[u64]) -> Result<Self, TensorError> {
        let too_wide = |b: &u64| {
            TensorError::new(
                KernelErrorKind::Length,
                format!("bit pattern {b:#x} does not fit {dtype}"),
            )
        };
        match dtype {
            DType::F32 => {
                let data: Result<Vec<f32>, _> = bits
                    .iter()
                    .map(|b| {
                        u32::try_from(*b)
                            .map(f32::from_bits)
                            .map_err(|_| too_wide(b))
                    })
                    .collect();
                RefTensor::from_vec(data?, shape).map(AnyTensor::F32)
            }
            DType::F64 => {
                let data = bits.iter().map(|b| f64::from_bits(*b)).collect();
                RefTensor::from_vec(data, shape).map(AnyTensor::F64)
            }
            DType::BF16 => {
                let data: Result<Vec<bf16>, _> = bits
                    .iter()
                    .map(|b| {
                        u16::try_from(*b)
                            .map(bf16::from_bits)
                            .map_err(|_| too_wide(b))
                    })
                    .collect();
                RefTensor::from_vec(data?, shape).map(AnyTensor::BF16)
            }
            DType::F16 => {
                let data: Result<Vec<f16>, _> = bits
                    .iter()
                    .map(|b| {
                        u16::try_from(*b)
                            .map(f16::from_bits)
                            .map_err(|_| too_wide(b))
                    })
                    .collect();
                RefTensor::from_vec(data?, shape).map(AnyTensor::F16)
            }
        }
    }

    /// The elements widened exactly to `f64`.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        with_tensor!(self, t => t.data().iter().map(|v| v.to_f64()).collect())
    }

    /// The elements' bit patterns (zero-extended), for bitwise comparison.
    pub fn to_bits(&self) -> Vec<u64> {
        with_tensor!(self, t => t.data().iter().map(|v| v.to_bits_u64()).collect())
    }

    /// Bytes held by the elements: `len * dtype.size_bytes()`.
    pub fn size_bytes(&self) -> usize {
        self.len().saturating_mul(self.dtype().size_bytes())
    }
}

impl<T: Element> From<RefTensor<T>> for AnyTensor {
    fn from(t: RefTensor<T>) -> Self {
        T::wrap(t)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn from_vec_checks_length() {
        let t = RefTensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
        assert_eq!(t.shape(), &[2, 3]);
        let err = RefTensor::from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err();
        assert_eq!(err.kind, KernelErrorKind::Length);
        let err = RefTensor::<f64>::zeros(&[usize::MAX, 2]).unwrap_err();
        assert_eq!(err.kind, KernelErrorKind::Overflow);
    }

    #[test]
    fn any_tensor_rounds_and_reports() {
        let t = AnyTensor::from_f64(DType::BF16, &[3], &[1.0, 1.0 + 1.0 / 512.0, -0.0]).unwrap();
        assert_eq!(t.dtype(), DType::BF16);
        assert_eq!(t.to_f64_vec(), vec![1.0, 1.0, -0.0]);
        assert_eq!(t.to_bits(), vec![0x3f80, 0x3f80, 0x8000]);
        assert_eq!(t.size_bytes(), 6);
        assert!(AnyTensor::from_f64(DType::F16, &[2], &[1.0]).is_err());
    }

    #[test]
    fn bits_round_trip_in_every_dtype() {
        let values = [1.5, -0.0, f64::INFINITY, f64::NAN, 1e-40, -3.25];
        for dtype in DType::ALL {
            let t = AnyTensor::from_f64(dtype, &[2, 3], &values).unwrap();
            let back = AnyTensor::from_bits(dtype, &[2, 3], &t.to_bits()).unwrap();
            assert_eq!(back.to_bits(), t.to_bits());
            assert_eq!(back.dtype(), dtype);
        }
        let e = AnyTensor::from_bits(DType::BF16, &[1], &[0x1_0000]).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Length);
        assert!(AnyTensor::from_bits(DType::F32, &[2], &[0]).is_err());
    }
}
