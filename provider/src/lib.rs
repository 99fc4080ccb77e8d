//! fkc-provider: what a kernel provider exports so that mdbook-fkc can verify its contracts.
//!
//! A provider is any crate with a link registry — a `static REGISTRY: Registry` listing one
//! [`KernelRef`] per kernel and dtype — and a few-line `fkc-provider` binary whose `main` is
//! [`serve(&REGISTRY)`](serve). mdbook-fkc starts that binary (the command named in book.toml),
//! greets it, asks it to describe itself and calls its entry points with operand views whose
//! elements travel bit for bit ([`protocol`]). The gate itself stays in mdbook-fkc; a provider
//! only describes and calls.
//!
//! - [`dtype`]: `DType`; [`tensor`]: the dtype-erased owned tensor `AnyTensor` (and the typed
//!   `RefTensor<T>` over [`Element`]); [`view`]: `Operand`, a strided / offset / stride-0 /
//!   reversed view of one; [`shape`]: checked shape arithmetic.
//! - [`registry`]: `Registry`, `KernelRef`, `OperandDesc`, `FieldDesc`, `ParamKind`,
//!   `VariantDesc`, `ParamValues`; [`describe`]: their owned form, as the protocol sends it.
//! - [`error`]: `KernelError`, `TensorError` and the boundary's `Rejection`.
//! - [`protocol`]: the versioned messages and [`serve`]; [`identity`]: the running binary's
//!   content hash, which the provider announces so verification can be cached per build.

#![forbid(unsafe_code)]

pub mod describe;
pub mod dtype;
pub mod error;
pub mod identity;
pub mod protocol;
pub mod registry;
pub mod shape;
pub mod tensor;
pub mod view;

pub use describe::{Description, EntryPointInfo, FieldInfo, OperandInfo, VariantInfo};
pub use dtype::DType;
pub use error::{KernelError, KernelErrorKind, Rejection, TensorError};
pub use protocol::{PROTOCOL_VERSION, serve};
pub use registry::{
    EntryFn, ExecuteFn, FieldDesc, KernelRef, OperandDesc, ParamKind, ParamValue, ParamValues,
    Registry, VariantDesc,
};
pub use tensor::{AnyTensor, Element, RefTensor};
pub use view::{LayoutFlags, Operand};
