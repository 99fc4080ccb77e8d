//! The resolved contract: every expression parsed and its names bound (issue in progress).

use super::raw::RawContract;
use crate::diag::Diagnostic;
use crate::source::SourceFile;
use std::sync::Arc;

/// Parses and binds every expression of a contract.
pub fn check_expressions(_raw: &RawContract, _source: &Arc<SourceFile>) -> Vec<Diagnostic> {
    Vec::new()
}
