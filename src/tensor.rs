//! `RefTensor<T>`, `Scalar`, `Element` and `AnyTensor`: the provider crate's boundary tensor,
//! re-exported, with the 8-bit float `F8E5M2` its E5M2 tensors hold.

pub use fkc_provider::f8::F8E5M2;
pub use fkc_provider::tensor::*;
