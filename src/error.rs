//! Typed errors of the backend: tensor construction, kernel geometry and executor routing.
//!
//! Nothing in this crate panics on bad input; every failure is one of these values. A
//! [`KernelError`] names the op, a machine-readable [`KernelErrorKind`] and a message that
//! spells out the shapes and parameters involved. An [`ExecError`] adds the executor's own
//! rejections (wrong carrier, unwired dtype, layout) and wraps kernel errors.

use std::fmt;

use crate::dispatch::OpKind;
use crate::dtype::DType;
use crate::view::LayoutFlags;

/// What class of problem a [`KernelError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelErrorKind {
    /// An operand has the wrong number of dimensions.
    Rank,
    /// Two shapes that must agree do not (bias length, declared vs actual shape, ...).
    ShapeMismatch,
    /// Channel counts are inconsistent with each other or with `groups`.
    ChannelMismatch,
    /// A stride is zero.
    ZeroStride,
    /// A dimension (or window size) that must be at least 1 is zero.
    ZeroSize,
    /// The (dilated) kernel or window does not fit in the (padded) input.
    KernelTooLarge,
    /// The padding removes the whole produced output (transposed convolution).
    PaddingTooLarge,
    /// A parameter value the kernel does not implement.
    Unsupported,
    /// An operand has a dtype the kernel or entry point does not take.
    DType,
    /// An operand's memory layout is not one the kernel accepts.
    Layout,
    /// Shape arithmetic overflowed `usize`, or the output cannot be allocated.
    Overflow,
    /// A parameter is missing, has the wrong kind, is unknown, or has an invalid value.
    BadParams,
    /// A required operand is absent, or too many operands were given.
    MissingOperand,
    /// A data buffer's length does not match its shape, or a view addresses outside storage.
    Length,
    /// An op name that the backend does not know.
    UnknownOp,
}

/// A kernel (or tensor) failure: which op, what kind, and a message naming shapes and params.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    /// The op that failed, e.g. `"conv2d"`.
    pub op: &'static str,
    /// The class of failure.
    pub kind: KernelErrorKind,
    /// Human-readable details (shapes, parameters, the violated rule).
    pub message: String,
}

impl KernelError {
    /// Builds an error for `op`.
    pub fn new(op: &'static str, kind: KernelErrorKind, message: impl Into<String>) -> Self {
        KernelError {
            op,
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, self.message)
    }
}

impl std::error::Error for KernelError {}

/// A failure building a tensor or a view (length, overflow, out-of-bounds view).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorError {
    /// The class of failure (`Length`, `Overflow`, `Rank`, `ZeroStride`...).
    pub kind: KernelErrorKind,
    /// Human-readable details.
    pub message: String,
}

impl TensorError {
    pub(crate) fn new(kind: KernelErrorKind, message: impl Into<String>) -> Self {
        TensorError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for TensorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tensor: {}", self.message)
    }
}

impl std::error::Error for TensorError {}

impl From<TensorError> for KernelError {
    fn from(e: TensorError) -> Self {
        KernelError::new("tensor", e.kind, e.message)
    }
}

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
