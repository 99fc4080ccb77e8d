//! mdbook-fkc

pub mod expr;
pub mod chapter;
pub mod diag;
pub mod source;
pub mod yaml;
