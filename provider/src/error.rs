//! Typed errors a kernel reports at the provider boundary.
//!
//! A [`KernelError`] names the op, a machine-readable [`KernelErrorKind`] and a message that
//! spells out the shapes and parameters involved; a [`TensorError`] is a failure building a
//! tensor or a view. A [`Rejection`] is what crosses the boundary: an entry point that refuses
//! a call returns one (kind and message), in process or over the provider protocol.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What class of problem a [`KernelError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// Builds an error of `kind`.
    pub fn new(kind: KernelErrorKind, message: impl Into<String>) -> Self {
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

/// An entry point's refusal of a call: the class of failure and the whole message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    /// The class of failure.
    pub kind: KernelErrorKind,
    /// Human-readable details, as the kernel said them.
    pub message: String,
}

impl Rejection {
    /// A rejection of `kind` with `message`.
    pub fn new(kind: KernelErrorKind, message: impl Into<String>) -> Self {
        Rejection {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rejection {}

impl From<KernelError> for Rejection {
    fn from(e: KernelError) -> Self {
        Rejection::new(e.kind, e.to_string())
    }
}

impl From<TensorError> for Rejection {
    fn from(e: TensorError) -> Self {
        Rejection::new(e.kind, e.to_string())
    }
}
