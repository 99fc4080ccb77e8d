//! fuel-reference-backend: the pure-Rust, correctness-first reference oracle for conv/pool kernels.
//!
//! - [`tensor`]: `RefTensor<T>` (contiguous, zero-offset, row-major) over any [`Scalar`] and
//!   the dtype-erased `AnyTensor`; [`dtype`]: `DType` (four floats, E5M2, integers, `Bool`).
//! - [`view`]: `Operand`, a strided/offset/broadcast/reversed view over shared storage — the
//!   only place a non-contiguous layout can exist, at the executor boundary.
//! - [`ops`]: the kernels `conv2d`, `conv_transpose2d`, `conv2d_simple`, `max_pool2d`,
//!   `contiguize`, and the common ops `matmul`, `add`, `mul`, `gelu`, `leaky_relu`, `softmax`,
//!   `layer_norm`, `reduce_sum`, `reduce_mean`, `avg_pool2d`, `transpose`, `cumsum`, generic
//!   over [`Element`] (`f32`, `f64`, `bf16`, `f16`), each with its documented accumulator and
//!   order; `add` also on E5M2 (rounded once) and wrapping `i8`/`i32`; `embedding` (rows
//!   gathered by `I64` ids) and `qmatmul` (`i8` product, wrapping `i32` accumulator,
//!   requantised with ties to even and saturation); plus the per-dtype entry points
//!   (`ops::conv2d_f32`, `ops::qmatmul_i8`, ...).
//! - [`dispatch`]: the carriers `OpKind` and `OpParams` and their machine-readable description.
//! - [`exec`]: `execute`, routing an op to a kernel and admitting only what is wired.
//! - [`fkc`]: the link registry `ENTRY_POINTS`; [`fkc_common`]: the common ops' operands and
//!   fields.
//!
//! Every failure is a typed error ([`error`]); nothing panics on user input.

#![forbid(unsafe_code)]

pub mod dispatch;
pub mod dtype;
pub mod error;
pub mod exec;
pub mod fkc;
pub mod fkc_common;
pub mod mutants;
pub mod ops;
pub mod shape;
pub mod tensor;
pub mod view;

pub use dispatch::{
    FieldDesc, OP_PARAMS_VARIANTS, OpKind, OpParams, ParamKind, ParamValue, ParamValues,
    VariantDesc,
};
pub use dtype::DType;
pub use error::{ExecError, KernelError, KernelErrorKind, TensorError};
pub use exec::execute;
pub use fkc::{
    ENTRY_POINTS, KernelRef, OperandDesc, REGISTRY, REGISTRY_PATH, Registry, entry_point,
};
pub use tensor::{AnyTensor, Element, RefTensor, Scalar};
pub use view::{LayoutFlags, Operand};
