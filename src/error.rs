//! Typed errors of the backend: tensor construction, kernel geometry and executor routing.
//!
//! Nothing in this crate panics on bad input; every failure is one of these values. The kernel
//! and tensor errors are the provider crate's ([`KernelError`], [`KernelErrorKind`],
//! [`TensorError`]); an [`ExecError`] adds the executor's own rejections (wrong carrier,
//! unwired dtype, layout) and wraps kernel errors.

use std::fmt;

use crate::dispatch::OpKind;
use crate::dtype::DType;
use crate::view::LayoutFlags;
pub use fkc_provider::error::{KernelError, KernelErrorKind, Rejection, TensorError};

/// Why the executor (or an entry point) refused or failed a call.
#[derive(Clone, Debug, PartialEq)]
pub enum ExecError {
    /// An op name that is not an [`OpKind`].
    UnknownOp {
        /// The name as given.
        name: String,
    },
    /// The `OpParams` variant does not belong to the requested `OpKind`.
    ParamsMismatch {
        /// The requested op.
        op: OpKind,
        /// The variant that was passed.
        variant: &'static str,
    },
    /// The executor does not route this dtype to this op.
    UnsupportedDType {
        /// The op (kernel name).
        op: &'static str,
        /// The offending dtype.
        dtype: DType,
        /// The dtypes that are wired.
        admitted: &'static [DType],
    },
    /// An operand's dtype differs from the call's dtype (mixed dtypes, or the wrong entry point).
    WrongDType {
        /// The op (kernel name).
        op: &'static str,
        /// Which operand.
        operand: &'static str,
        /// The dtype the call runs in.
        expected: DType,
        /// The operand's dtype.
        found: DType,
    },
    /// A non-contiguous operand reached a contiguous-only kernel.
    Layout {
        /// The op (kernel name).
        op: &'static str,
        /// Which operand.
        operand: &'static str,
        /// The operand's layout flags.
        layout: LayoutFlags,
    },
    /// The kernel (or the executor's geometry validation) failed.
    Kernel(KernelError),
}

impl ExecError {
    /// The error's class, comparable across executor and kernel failures.
    pub fn kind(&self) -> KernelErrorKind {
        match self {
            ExecError::UnknownOp { .. } => KernelErrorKind::UnknownOp,
            ExecError::ParamsMismatch { .. } => KernelErrorKind::BadParams,
            ExecError::UnsupportedDType { .. } | ExecError::WrongDType { .. } => {
                KernelErrorKind::DType
            }
            ExecError::Layout { .. } => KernelErrorKind::Layout,
            ExecError::Kernel(e) => e.kind,
        }
    }

    /// The op the error is about (`"conv2d"`, ...; `"exec"` for an unknown op).
    pub fn op(&self) -> &'static str {
        match self {
            ExecError::UnknownOp { .. } => "exec",
            ExecError::ParamsMismatch { op, .. } => op.kernel_name(),
            ExecError::UnsupportedDType { op, .. }
            | ExecError::WrongDType { op, .. }
            | ExecError::Layout { op, .. } => op,
            ExecError::Kernel(e) => e.op,
        }
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::UnknownOp { name } => write!(f, "exec: unknown op `{name}`"),
            ExecError::ParamsMismatch { op, variant } => write!(
                f,
                "{}: OpKind::{} cannot run with OpParams::{variant}",
                op.kernel_name(),
                op.name()
            ),
            ExecError::UnsupportedDType {
                op,
                dtype,
                admitted,
            } => {
                let names: Vec<&str> = admitted.iter().map(|d| d.name()).collect();
                write!(
                    f,
                    "{op}: dtype {dtype} is not wired (admitted: {})",
                    names.join(", ")
                )
            }
            ExecError::WrongDType {
                op,
                operand,
                expected,
                found,
            } => write!(
                f,
                "{op}: operand `{operand}` is {found}, expected {expected}"
            ),
            ExecError::Layout {
                op,
                operand,
                layout,
            } => write!(
                f,
                "{op}: operand `{operand}` is not contiguous ({layout}); the kernel is contiguous-only, contiguize it first"
            ),
            ExecError::Kernel(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ExecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExecError::Kernel(e) => Some(e),
            _ => None,
        }
    }
}

impl From<KernelError> for ExecError {
    fn from(e: KernelError) -> Self {
        ExecError::Kernel(e)
    }
}

impl From<TensorError> for ExecError {
    fn from(e: TensorError) -> Self {
        ExecError::Kernel(e.into())
    }
}

impl From<ExecError> for Rejection {
    fn from(e: ExecError) -> Self {
        Rejection::new(e.kind(), e.to_string())
    }
}
