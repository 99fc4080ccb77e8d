//! The kernels, generic over [`Element`](crate::tensor::Element), and their per-dtype entry
//! points.
//!
//! Each op module owns a params struct with its output-size formula (checked arithmetic,
//! validated once at the public entry) and the kernel itself. The functions named like
//! `conv2d_f32` are the link-registry entry points (`fuel_reference_backend::ops::conv2d_f32`):
//! they take operand views and named parameter values, see [`crate::fkc`].

mod common;
pub mod contiguize;
pub mod conv2d;
pub mod conv2d_simple;
pub mod conv_transpose2d;
mod entry;
pub mod max_pool2d;
mod pool_fast;
pub(crate) mod simd;
mod tile;
mod workers;

pub use common::max_step;
pub use contiguize::{contiguize, contiguize_any};
pub use conv_transpose2d::{
    ConvTranspose2dGeometry, ConvTranspose2dParams, conv_transpose2d, conv_transpose2d_threaded,
};
pub use conv2d::{Conv2dGeometry, Conv2dParams, conv2d, conv2d_threaded};
pub use conv2d_simple::{Conv2dSimpleParams, conv2d_simple};
pub use entry::*;
pub use max_pool2d::{MaxPool2dParams, max_pool2d, max_pool2d_threaded};
