//! mdbook-fkc: literate, executable kernel contracts for mdBook.
//!
//! A chapter's ```` ```fkc ```` fences are read ([`chapter`], [`yaml`], [`contract`]), resolved
//! against the provider's link registry ([`import`], [`resolve`]), rendered as tables
//! ([`render`]) and every problem is reported as a located [`diag::Diagnostic`]. The
//! [`preprocessor`] module speaks mdBook's protocol; [`pipeline`] is the per-chapter flow.

pub mod chapter;
pub mod config;
pub mod contract;
pub mod diag;
pub mod expr;
pub mod import;
pub mod pipeline;
pub mod preprocessor;
pub mod providers;
pub mod render;
pub mod report;
pub mod resolve;
pub mod revision;
pub mod source;
pub mod verify;
pub mod yaml;
