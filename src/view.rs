//! Operand views at the executor boundary: the provider crate's views, re-exported.

pub use fkc_provider::view::*;
