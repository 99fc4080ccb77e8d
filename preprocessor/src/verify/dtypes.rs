//! Undeclared dtypes must be refused, by every entry point and by the executor.

use super::Gate;
use super::run::{Outcome, call};
use super::sample::Sample;
use crate::diag::Code;
use crate::import::{Import, symbol_for};
use crate::providers::Kernel;
use fkc_provider::DType;

impl Gate<'_> {
    /// A dtype the contract does not declare must not run (the PyTorch `test_dtypes` idea).
    pub(super) fn undeclared_dtypes(
        &mut self,
        import: &Import,
        first: &Kernel<'_>,
        admitted: &[(Sample, Vec<Vec<i64>>)],
    ) {
        let Some((sample, _)) = admitted.first() else {
            return;
        };
        let declared: Vec<DType> = import.entry_points.iter().map(|e| e.dtype).collect();
        let mut refused = Vec::new();
        for dtype in DType::ALL.into_iter().filter(|d| !declared.contains(d)) {
            let symbol = symbol_for(&first.symbol, dtype);
            let other = symbol
                .as_deref()
                .and_then(|s| first.provider.description().entry_point(s))
                .map(|info| Kernel {
                    info,
                    provider: first.provider,
                });
            let via_symbol = other.is_some_and(|k| {
                matches!(
                    call(&k, &self.domain, sample, dtype, self.seed, false),
                    Outcome::Accepted { .. }
                )
            });
            let via_executor = super::run::executor_accepts(first, &self.domain, sample, dtype);
            if via_symbol || via_executor {
                let span = self
                    .raw
                    .inputs
                    .first()
                    .map_or(self.raw.kernel.span.clone(), |i| i.dtypes_span.clone());
                let route = if via_symbol {
                    format!("`{}`", symbol.unwrap_or_default())
                } else {
                    "the executor".to_owned()
                };
                let diagnostic = self.error(
                    Code::DtypeMismatch,
                    span,
                    format!("{} is not declared, but {route} runs it", dtype.name()),
                );
                diagnostic
                    .notes
                    .push(format!("sample: {}", sample.describe()));
                diagnostic.help.push(format!(
                    "declare {} in every input's dtypes, or make the backend refuse it",
                    dtype.name()
                ));
            } else {
                refused.push(dtype.name());
            }
        }
        if !refused.is_empty() {
            self.evidence.rows.push((
                "undeclared dtypes are refused".to_owned(),
                format!(
                    "{}: no entry point runs them and the executor rejects them",
                    refused.join(", ")
                ),
            ));
        }
    }
}
