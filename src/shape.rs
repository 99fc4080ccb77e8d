//! Checked shape arithmetic: the provider crate's helpers, re-exported.

pub use fkc_provider::shape::*;
