//! `RefTensor<T>`: the backend's only storage type — contiguous, zero-offset, row-major.
//!
//! A `RefTensor` is a shape plus a `Vec<T>` whose length is exactly the product of the shape;
//! it has no strides and no offset, which is why every kernel here is contiguous-only.
//! [`Scalar`] is every element type a tensor can hold (one per [`DType`]), [`Element`] the
//! floating-point ones the float kernels are generic over (`f32`, `f64`, `bf16`, `f16`), and
//! [`AnyTensor`] is the dtype-erased form the executor and the link registry pass around.

use std::fmt::Debug;

use half::{bf16, f16};

use crate::dtype::DType;
use crate::error::{KernelErrorKind, TensorError};
use crate::f8::F8E5M2;
use crate::shape::{filled_vec, numel};

/// A type a tensor can hold: one per [`DType`], floats, integers, booleans and E5M2 alike.
///
/// Conversions from `f64` round to nearest, ties to even; an integer type saturates at its
/// ends and takes NaN as 0, a `bool` is `v != 0`.
pub trait Scalar: Copy + Debug + PartialEq + Send + Sync + 'static {
    /// The runtime tag of this type.
    const DTYPE: DType;
    /// Exact widening to `f64` (an `i64` beyond ±2^53 rounds).
    fn to_f64(self) -> f64;
    /// The nearest `Self` to an `f64`.
    fn from_f64(v: f64) -> Self;
    /// The raw bit pattern, zero-extended.
    fn to_bits_u64(self) -> u64;
    /// The value with this bit pattern; `None` when the pattern is wider than `Self`.
    fn from_bits_u64(bits: u64) -> Option<Self>;
    /// Wraps a typed tensor into the dtype-erased form.
    fn wrap(t: RefTensor<Self>) -> AnyTensor;
    /// Borrows the typed tensor if `t` holds this dtype.
    fn peel(t: &AnyTensor) -> Option<&RefTensor<Self>>;
}

/// A floating-point element type the float kernels are instantiated for (`f32`, `f64`,
/// `bf16`, `f16`).
///
/// Arithmetic is `num_traits::Float` arithmetic in `Self`: for `bf16`/`f16`, `half` computes
/// each single operation through `f32` and rounds the result back, so every intermediate is
/// rounded to `Self` (no widened accumulator).
pub trait Element: Scalar + num_traits::Float {}

impl Element for f32 {}
impl Element for f64 {}
impl Element for bf16 {}
impl Element for f16 {}

macro_rules! impl_scalar {
    ($t:ty, $variant:ident, $to:expr, $from:expr, $bits:expr, $from_bits:expr) => {
        impl Scalar for $t {
            const DTYPE: DType = DType::$variant;
            fn to_f64(self) -> f64 {
                $to(self)
            }
            fn from_f64(v: f64) -> Self {
                $from(v)
            }
            fn to_bits_u64(self) -> u64 {
                $bits(self)
            }
            fn from_bits_u64(bits: u64) -> Option<Self> {
                $from_bits(bits)
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

/// An integer's nearest value to `v`: ties to even, saturated at the ends, NaN as 0.
macro_rules! int_from_f64 {
    ($t:ty) => {
        |v: f64| v.round_ties_even() as $t
    };
}

impl_scalar!(
    f32,
    F32,
    f64::from,
    |v: f64| v as f32,
    |v: f32| u64::from(v.to_bits()),
    |b: u64| u32::try_from(b).ok().map(f32::from_bits)
);
impl_scalar!(f64, F64, |v: f64| v, |v: f64| v, f64::to_bits, |b: u64| {
    Some(f64::from_bits(b))
});
impl_scalar!(
    bf16,
    BF16,
    bf16::to_f64,
    bf16::from_f64,
    |v: bf16| u64::from(v.to_bits()),
    |b: u64| u16::try_from(b).ok().map(bf16::from_bits)
);
impl_scalar!(
    f16,
    F16,
    f16::to_f64,
    f16::from_f64,
    |v: f16| u64::from(v.to_bits()),
    |b: u64| u16::try_from(b).ok().map(f16::from_bits)
);
impl_scalar!(
    F8E5M2,
    F8E5M2,
    F8E5M2::to_f64,
    F8E5M2::from_f64,
    |v: F8E5M2| u64::from(v.to_bits()),
    |b: u64| u8::try_from(b).ok().map(F8E5M2::from_bits)
);
impl_scalar!(
    i8,
    I8,
    f64::from,
    int_from_f64!(i8),
    |v: i8| u64::from(v as u8),
    |b: u64| u8::try_from(b).ok().map(|b| b as i8)
);
impl_scalar!(u8, U8, f64::from, int_from_f64!(u8), u64::from, |b: u64| {
    u8::try_from(b).ok()
});
impl_scalar!(
    i32,
    I32,
    f64::from,
    int_from_f64!(i32),
    |v: i32| u64::from(v as u32),
    |b: u64| u32::try_from(b).ok().map(|b| b as i32)
);
impl_scalar!(
    i64,
    I64,
    |v: i64| v as f64,
    int_from_f64!(i64),
    |v: i64| v as u64,
    |b: u64| Some(b as i64)
);
impl_scalar!(
    bool,
    Bool,
    |v: bool| if v { 1.0 } else { 0.0 },
    |v: f64| v != 0.0,
    u64::from,
    |b: u64| match b {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
);

/// A contiguous, zero-offset, row-major tensor: `data.len() == shape.iter().product()`.
#[derive(Clone, Debug, PartialEq)]
pub struct RefTensor<T> {
    shape: Vec<usize>,
    data: Vec<T>,
}

impl<T: Scalar> RefTensor<T> {
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
        let data = filled_vec(numel(shape)?, T::from_f64(0.0))?;
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
    /// E5M2 elements.
    F8E5M2(RefTensor<F8E5M2>),
    /// `i8` elements.
    I8(RefTensor<i8>),
    /// `u8` elements.
    U8(RefTensor<u8>),
    /// `i32` elements.
    I32(RefTensor<i32>),
    /// `i64` elements.
    I64(RefTensor<i64>),
    /// `bool` elements.
    Bool(RefTensor<bool>),
}

/// Evaluates `$body` with `$t` bound to the inner `RefTensor<T>` whatever the dtype.
macro_rules! with_tensor {
    ($any:expr, $t:ident => $body:expr) => {
        match $any {
            AnyTensor::F32($t) => $body,
            AnyTensor::F64($t) => $body,
            AnyTensor::BF16($t) => $body,
            AnyTensor::F16($t) => $body,
            AnyTensor::F8E5M2($t) => $body,
            AnyTensor::I8($t) => $body,
            AnyTensor::U8($t) => $body,
            AnyTensor::I32($t) => $body,
            AnyTensor::I64($t) => $body,
            AnyTensor::Bool($t) => $body,
        }
    };
}

/// Evaluates `$body` with the type `$t` bound to `dtype`'s element type.
macro_rules! for_dtype {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $t = f32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                $body
            }
            DType::BF16 => {
                type $t = bf16;
                $body
            }
            DType::F16 => {
                type $t = f16;
                $body
            }
            DType::F8E5M2 => {
                type $t = F8E5M2;
                $body
            }
            DType::I8 => {
                type $t = i8;
                $body
            }
            DType::U8 => {
                type $t = u8;
                $body
            }
            DType::I32 => {
                type $t = i32;
                $body
            }
            DType::I64 => {
                type $t = i64;
                $body
            }
            DType::Bool => {
                type $t = bool;
                $body
            }
        }
    };
}

impl AnyTensor {
    /// The element type.
    pub fn dtype(&self) -> DType {
        fn of<T: Scalar>(_: &RefTensor<T>) -> DType {
            T::DTYPE
        }
        with_tensor!(self, t => of(t))
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

    /// Builds a tensor of `dtype`, rounding each value to it (ties to even; an integer dtype
    /// saturates and takes NaN as 0).
    pub fn from_f64(dtype: DType, shape: &[usize], values: &[f64]) -> Result<Self, TensorError> {
        fn build<T: Scalar>(shape: &[usize], values: &[f64]) -> Result<AnyTensor, TensorError> {
            let data = values.iter().map(|&v| T::from_f64(v)).collect();
            RefTensor::<T>::from_vec(data, shape).map(T::wrap)
        }
        for_dtype!(dtype, T => build::<T>(shape, values))
    }

    /// Builds a tensor of `dtype` from element bit patterns (as [`AnyTensor::to_bits`] gives
    /// them); fails with `Length` when a pattern does not fit the dtype or the count is wrong.
    pub fn from_bits(dtype: DType, shape: &[usize], bits: &[u64]) -> Result<Self, TensorError> {
        fn build<T: Scalar>(shape: &[usize], bits: &[u64]) -> Result<AnyTensor, TensorError> {
            let data: Result<Vec<T>, TensorError> = bits
                .iter()
                .map(|b| {
                    T::from_bits_u64(*b).ok_or_else(|| {
                        TensorError::new(
                            KernelErrorKind::Length,
                            format!("bit pattern {b:#x} does not fit {}", T::DTYPE),
                        )
                    })
                })
                .collect();
            RefTensor::from_vec(data?, shape).map(T::wrap)
        }
        for_dtype!(dtype, T => build::<T>(shape, bits))
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

impl<T: Scalar> From<RefTensor<T>> for AnyTensor {
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
        let e = AnyTensor::from_bits(DType::Bool, &[1], &[2]).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Length);
        let e = AnyTensor::from_bits(DType::I8, &[1], &[0x100]).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Length);
        assert!(AnyTensor::from_bits(DType::F32, &[2], &[0]).is_err());
    }

    #[test]
    fn integers_round_to_even_and_saturate() {
        let values = [2.5, -2.5, 3.5, 1e9, -1e9, f64::NAN, f64::INFINITY, -0.0];
        let t = AnyTensor::from_f64(DType::I8, &[8], &values).unwrap();
        assert_eq!(
            t.to_f64_vec(),
            [2.0, -2.0, 4.0, 127.0, -128.0, 0.0, 127.0, 0.0]
        );
        assert_eq!(t.to_bits()[4], 0x80);
        let t = AnyTensor::from_f64(DType::U8, &[3], &[-5.0, 255.4, 300.0]).unwrap();
        assert_eq!(t.to_f64_vec(), [0.0, 255.0, 255.0]);
        let t = AnyTensor::from_f64(DType::I32, &[2], &[-3e10, 7.0]).unwrap();
        assert_eq!(t.to_f64_vec(), [f64::from(i32::MIN), 7.0]);
        assert_eq!(t.to_bits(), [0x8000_0000, 7]);
        let t = AnyTensor::from_f64(DType::I64, &[1], &[-1.0]).unwrap();
        assert_eq!(t.to_bits(), [u64::MAX]);
        let t = AnyTensor::from_f64(DType::Bool, &[3], &[0.0, -0.5, f64::NAN]).unwrap();
        assert_eq!(t.to_bits(), [0, 1, 1]);
        let t = AnyTensor::from_f64(DType::F8E5M2, &[2], &[1.0, 0.3]).unwrap();
        assert_eq!(t.to_f64_vec(), [1.0, 0.3125]);
        assert_eq!(t.size_bytes(), 2);
    }
}
