//! fkc-provider: what a kernel provider exports so that mdbook-fkc can verify its contracts.
//!
//! A provider is any crate with a link registry — a `static REGISTRY: Registry` listing one
//! [`KernelRef`] per kernel and dtype — and a few-line `fkc-provider` binary whose `main` is
//! [`serve(&REGISTRY)`](serve). mdbook-fkc starts that binary (the command named in book.toml),
//! greets it, asks it to describe itself and calls its entry points with operand views whose
//! elements travel bit for bit ([`protocol`], version [`PROTOCOL_VERSION`]). The gate itself
//! stays in mdbook-fkc; a provider only describes and calls.
//!
//! - [`dtype`]: `DType`; [`tensor`]: the dtype-erased owned tensor `AnyTensor` (and the typed
//!   `RefTensor<T>` over [`Scalar`]); [`f8`]: the 8-bit float `F8E5M2`; [`view`]: `Operand`, a strided / offset / stride-0 /
//!   reversed view of one; [`shape`]: checked shape arithmetic.
//! - [`registry`]: `Registry`, `KernelRef`, `OperandDesc`, `FieldDesc`, `ParamKind`,
//!   `VariantDesc`, `ParamValues`; [`describe`]: their owned form, as the protocol sends it.
//! - [`error`]: `KernelError`, `TensorError` and the boundary's `Rejection`.
//! - [`protocol`]: the versioned messages and [`serve`]; [`identity`]: the running binary's
//!   content hash, which the provider announces so verification can be cached per build.
//!
//! # A whole provider
//!
//! A kernel is a function of the operands (one per declared input, `None` for an absent
//! optional one) and the parameter values; it refuses what it does not take with a
//! [`Rejection`], never a panic:
//!
//! ```
//! use fkc_provider::{
//!     AnyTensor, DType, KernelErrorKind, KernelRef, Operand, OperandDesc, ParamValues,
//!     Registry, Rejection,
//! };
//!
//! fn relu(operands: &[Option<Operand>], _: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
//!     let Some(Some(x)) = operands.first() else {
//!         return Err(Rejection::new(KernelErrorKind::MissingOperand, "relu takes x"));
//!     };
//!     if !x.is_contiguous() {
//!         return Err(Rejection::new(KernelErrorKind::Layout, "relu: x is not contiguous"));
//!     }
//!     let values: Vec<f64> = x.packed()?.to_f64_vec().iter().map(|v| v.max(0.0)).collect();
//!     Ok(vec![AnyTensor::from_f64(x.dtype(), x.shape(), &values)?])
//! }
//!
//! const X: &[OperandDesc] = &[OperandDesc::required("x", 2)];
//!
//! /// The link registry a book's front matter names (`link_registry: my_backend::REGISTRY`).
//! pub static REGISTRY: Registry = Registry {
//!     name: "my-backend",
//!     path: "my_backend::REGISTRY",
//!     crate_name: "my_backend",
//!     revision: "0.1.0",
//!     op_kinds: &[],
//!     variants: &[],
//!     entry_points: &[KernelRef {
//!         symbol: "my_backend::relu_f32",
//!         kernel: "relu",
//!         dtype: DType::F32,
//!         op_kind: Some("Relu"),
//!         inputs: X,
//!         outputs: &["out"],
//!         params: &[],
//!         call: relu,
//!     }],
//!     executor: None,
//!     levels: None,
//! };
//!
//! // What mdbook-fkc does over the protocol, here in process:
//! use fkc_provider::protocol::{encode_operands, respond, Answer, Method, Request};
//! let x = AnyTensor::from_f64(DType::F32, &[1, 3], &[-1.0, 0.5, 2.0])?;
//! let call = Method::Call {
//!     symbol: "my_backend::relu_f32".into(),
//!     operands: encode_operands(&[Some(Operand::contiguous(x))]),
//!     params: ParamValues::new(),
//!     level: None,
//! };
//! let response = respond(&REGISTRY, Request { id: 1, method: call });
//! let Answer::Outputs(outputs) = response.answer else { panic!("{response:?}") };
//! assert_eq!(outputs[0].decode()?.to_f64_vec(), [0.0, 0.5, 2.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The provider's binary (`src/bin/fkc-provider.rs`) is then one line,
//! `fn main() -> std::process::ExitCode { fkc_provider::serve(&my_backend::REGISTRY) }`, and
//! book.toml names it:
//!
//! ```toml
//! [preprocessor.fkc.provider.my-backend]
//! command = "cargo run -q --release -p my-backend --bin fkc-provider"
//! ```

#![forbid(unsafe_code)]

pub mod call;
pub mod describe;
pub mod dtype;
pub mod error;
pub mod f8;
pub mod identity;
pub mod param;
pub mod protocol;
pub mod registry;
pub mod shape;
pub mod tensor;
pub mod view;

pub use describe::{Description, EntryPointInfo, FieldInfo, LevelInfo, OperandInfo, VariantInfo};
pub use dtype::DType;
pub use error::{KernelError, KernelErrorKind, Rejection, TensorError};
pub use f8::F8E5M2;
pub use protocol::{PROTOCOL_VERSION, serve};
pub use registry::{
    EntryFn, ExecuteFn, FieldDesc, KernelRef, OperandDesc, ParamKind, ParamValue, ParamValues,
    Registry, VariantDesc,
};
pub use tensor::{AnyTensor, Element, RefTensor, Scalar};
pub use view::{LayoutFlags, Operand};
