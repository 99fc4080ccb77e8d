//! `RefTensor<T>`, `Element` and `AnyTensor`: the provider crate's boundary tensor, re-exported.

pub use fkc_provider::tensor::*;
