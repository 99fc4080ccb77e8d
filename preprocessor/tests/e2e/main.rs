//! End-to-end tests: fixture books built by the real `mdbook` 0.5 binary and by
//! `mdbook-fkc build`, the preprocessor protocol, the CLI, and a snapshot of the seed chapter.
//! One integration binary, one module per feature (as mdBook's own testsuite).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod browser;
mod build;
mod cache;
mod cli;
mod diagnostics_index;
mod faults;
mod hostile;
mod judge;
mod layers;
mod mutations;
mod page;
mod protocol;
mod providers;
mod repro;
mod seeds;
mod serve;
mod snapshot;
mod support;
