//! Element data types: the provider crate's [`DType`], re-exported.

pub use fkc_provider::dtype::*;
