//! `contiguize`: the packed row-major copy of any operand view — the kernel the planner inserts
//! in front of a contiguous-only kernel when its producer is strided, offset, broadcast or
//! reversed. It reads every logical element once, in row-major order, and copies it bit for bit.

use crate::error::{ExecError, KernelError, KernelErrorKind};
use crate::shape::numel;
use crate::tensor::{RefTensor, Scalar};
use crate::view::Operand;

/// Copies the view `x` into a fresh contiguous tensor with the same shape and logical values.
/// Fails with `DType` if the storage is not `T`.
pub fn contiguize<T: Scalar>(x: &Operand) -> Result<RefTensor<T>, KernelError> {
    let storage = T::peel(x.storage()).ok_or_else(|| {
        KernelError::new(
            "contiguize",
            KernelErrorKind::DType,
            format!("operand is {}, expected {}", x.dtype(), T::DTYPE),
        )
    })?;
    let src = storage.data();
    let mut data = Vec::with_capacity(numel(x.shape())?);
    x.for_each_storage_index(|i| data.push(src[i]));
    Ok(RefTensor::from_vec(data, x.shape())?)
}

/// A contiguous copy of `x` whatever its dtype.
pub fn contiguize_any(x: &Operand) -> Result<crate::tensor::AnyTensor, ExecError> {
    use crate::dtype::DType;
    use half::{bf16, f16};
    Ok(match x.dtype() {
        DType::F32 => contiguize::<f32>(x)?.into(),
        DType::F64 => contiguize::<f64>(x)?.into(),
        DType::BF16 => contiguize::<bf16>(x)?.into(),
        DType::F16 => contiguize::<f16>(x)?.into(),
        dtype => {
            return Err(ExecError::UnsupportedDType {
                op: "contiguize",
                dtype,
                admitted: &DType::PROTOCOL_2,
            });
        }
    })
}
