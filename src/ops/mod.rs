//! The kernels, generic over [`Element`](crate::tensor::Element) (the integer and 8-bit-float
//! ones over [`Scalar`](crate::tensor::Scalar) or a fixed type), and their per-dtype entry
//! points.
//!
//! Convolutions and pooling: `conv2d`, `conv_transpose2d`, `conv2d_simple`, `max_pool2d`,
//! `avg_pool2d`; layout: `contiguize`, `transpose`; the common ops `matmul`, `add` (floats,
//! E5M2, wrapping `i8`/`i32`), `mul`, `leaky_relu`, `gelu`, `softmax`, `layer_norm`,
//! `reduce_sum`, `reduce_mean`, `cumsum`; gathering: `embedding` ([`gather`], `I64` ids);
//! quantised: `qmatmul` ([`quantized`], `i8` with an `i32` accumulator).
//!
//! Each op module owns a params struct with its output-size formula (checked arithmetic,
//! validated once at the public entry) and the kernel itself. The functions named like
//! `conv2d_f32` are the link-registry entry points (`fuel_reference_backend::ops::conv2d_f32`):
//! they take operand views and named parameter values, see [`crate::fkc`].

/// Defines (for `entry` and `common_entry`) `pub fn NAME(operands, params)` entry points, each calling a generic body in `T`.
macro_rules! entry_points {
    ($($name:ident = $body:expr;)*) => {$(
        #[doc = concat!("Entry point `fuel_reference_backend::ops::", stringify!($name), "`.")]
        pub fn $name(operands: &[Option<Operand>], params: &ParamValues) -> Result<Vec<AnyTensor>, ExecError> {
            ($body)(operands, params)
        }
    )*};
}

pub mod avg_pool2d;
mod axes;
mod common;
mod common_entry;
pub mod contiguize;
pub mod conv2d;
pub mod conv2d_simple;
pub mod conv_transpose2d;
pub mod elementwise;
mod entry;
pub mod gather;
pub mod linalg;
pub mod max_pool2d;
pub mod normalize;
mod pool_fast;
pub mod quantized;
pub mod reduce;
pub(crate) mod simd;
mod tile;
pub mod transpose;
mod workers;

pub use avg_pool2d::{AvgDivisor, AvgPool2dParams, avg_pool2d};
pub use common::max_step;
pub use common_entry::*;
pub use contiguize::{contiguize, contiguize_any};
pub use conv_transpose2d::{
    ConvTranspose2dGeometry, ConvTranspose2dParams, conv_transpose2d, conv_transpose2d_threaded,
};
pub use conv2d::{Conv2dGeometry, Conv2dParams, conv2d, conv2d_threaded};
pub use conv2d_simple::{Conv2dSimpleParams, conv2d_simple};
pub use elementwise::{add, add_e5m2, add_wrapping, broadcast_shape, gelu, leaky_relu, mul};
pub use entry::*;
pub use gather::embedding;
pub use linalg::{MatmulParams, matmul};
pub use max_pool2d::{MaxPool2dParams, max_pool2d, max_pool2d_threaded};
pub use normalize::{LayerNormParams, layer_norm, softmax};
pub use quantized::{QmatmulParams, qmatmul};
pub use reduce::{ReduceParams, cumsum, reduce_mean, reduce_sum};
pub use transpose::transpose;
