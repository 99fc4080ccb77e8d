//! mdbook-fkc: literate, executable kernel contracts for mdBook.
//!
//! The public API is small. A [`Checker`] is built with the book's [`Providers`] (the built-in
//! reference backend, plus any provider command from book.toml) and run on one chapter at a
//! time; each chapter gives a [`ChapterReport`] — its diagnostics ([`diag::Diagnostic`], with
//! stable [`diag::Code`]s, file, line and column) and a [`ContractSummary`] per contract with
//! the [`Evidence`] the gate gathered — and, when the checker renders (a [`Renderer`]), the
//! chapter's new Markdown. [`preprocessor`] runs a whole book (mdBook's protocol:
//! [`preprocessor::FkcPreprocessor`], or [`preprocessor::process_book_with`] to check without
//! rendering, as `mdbook-fkc check` does), and [`judge_book`] times every contract's kernel and
//! writes the calibration file the build then shows (`mdbook-fkc judge`). Nothing else is
//! public: the format's reader, the expression and semantics languages, the cache and the
//! providers' internals are hidden modules that only the `internals` feature exposes, for
//! this crate's tests and bench and the fuzzers; they are not part of the API.
//!
//! ```no_run
//! use mdbook_fkc::{Checker, Providers, VerifyOptions};
//!
//! let text = std::fs::read_to_string("book/contracts/contiguize.md").unwrap();
//! let mut checker = Checker::without_rendering(VerifyOptions::default(), Providers::default());
//! let report = checker.chapter("book/contracts/contiguize.md", &text).unwrap();
//! for contract in &report.contracts {
//!     println!("{}: {} checks", contract.kernel, contract.evidence.len());
//! }
//! assert!(report.diagnostics.iter().all(|d| !d.is_error()));
//! ```
//!
//! Inside, the modules are layers that only point down, in the data's direction: the ground
//! (`source`, `parallel`, [`expr`], [`diag`], `revision`, `yaml`, `chapter`, [`report`], `quote`,
//! [`providers`], [`semantics`]) → [`contract`] (raw, then expressions resolved) → `read` (the
//! one reading stage: a chapter's front matter and fences read, which the build, `repro`, the
//! Judge and the planner's pricing all use) → `import`,
//! `resolve` (against the provider's description) → `verify` (the kernels run) → [`cache`],
//! [`config`] → `calibration` (the Judge's data) → `render` (views, figures, templates) →
//! `pipeline` (one chapter, in order) → [`preprocessor`] (a book) → `judge` (the Judge's
//! command). No stage reaches back up and no files import each other in a circle: the e2e
//! test `layers` reads every `crate::` and `super::` path and fails on either.

pub mod diag;
pub mod preprocessor;
pub mod report;

pub use judge::{JudgeError, judge_book};
pub use pipeline::{BookChecker as Checker, Deny};
pub use providers::{Provider, Providers};
pub use render::{RenderError, Renderer};
pub use report::{ChapterReport, ContractSummary};
pub use verify::{Evidence, VerifyOptions};

/// Declares modules that are private, or public but hidden with the `internals` feature (for
/// this crate's tests and bench, and the fuzzers): not part of the API.
macro_rules! internal {
    ($($module:ident)*) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $module;
        #[cfg(not(feature = "internals"))]
        mod $module;
    )*};
}

internal!(cache config contract expr providers semantics source);

#[cfg(feature = "internals")]
#[doc(hidden)]
pub use {pipeline::ChapterInput, render::plan::BookContracts, verify::worked::Worked};

mod calibration;
mod chapter;
mod fast_hash;
mod import;
mod judge;
mod parallel;
mod pipeline;
mod quote;
mod read;
mod render;
mod resolve;
mod revision;
#[cfg(test)]
mod seed_fields_tests;
mod verify;
mod yaml;
