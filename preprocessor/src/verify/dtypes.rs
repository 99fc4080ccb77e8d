//! Undeclared dtypes must be refused, by every entry point and by the executor. A dtype that
//! runs is shrunk to the smallest sample it still runs on and reported with a reproduction
//! (`repro --check undeclared`).

use super::Gate;
use super::run::{Outcome, Runs, call};
use super::sample::Sample;
use super::shrink::{Check, Keep, Replay, sample_note};
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
        // only the dtypes the provider's protocol knows (a protocol 2 provider: the floats)
        let known = fkc_provider::protocol::dtypes_of(first.provider.hello().protocol);
        for dtype in known.iter().copied().filter(|d| !declared.contains(d)) {
            let before = self.diagnostics.len();
            if self.undeclared_one(first, dtype, sample, self.seed) {
                refused.push(dtype.name());
                continue;
            }
            let replay = Replay {
                kernel: first,
                dtype,
                seed: self.seed,
                check: Check::Undeclared,
                keep: Keep::Admitted,
            };
            self.shrink_report(before, &replay, sample);
        }
        if !refused.is_empty() {
            self.evidence.rows.push((
                "undeclared dtypes are refused".to_owned(),
                format!(
                    "{}: no entry point runs them and {}",
                    refused.join(", "),
                    if first.provider.description().executor {
                        "the executor rejects them"
                    } else {
                        "the provider has no executor"
                    }
                ),
            ));
        }
    }

    /// Runs `sample` in the undeclared `dtype`, through the entry point named like `first` for
    /// that dtype and through the executor; false after reporting that one of them ran it.
    pub(super) fn undeclared_one(
        &mut self,
        first: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
    ) -> bool {
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
                call(&k, &self.domain, sample, dtype, seed, Runs::default()),
                Outcome::Accepted { .. }
            )
        });
        let via_executor =
            !via_symbol && super::run::executor_accepts(first, &self.domain, sample, dtype);
        if !via_symbol && !via_executor {
            return true;
        }
        let route = match symbol {
            Some(symbol) if via_symbol => format!("`{symbol}`"),
            _ => "the executor".to_owned(),
        };
        self.undeclared_runs(dtype, sample, &route);
        false
    }

    /// Reports that `route` runs the undeclared `dtype` on `sample`.
    fn undeclared_runs(&mut self, dtype: DType, sample: &Sample, route: &str) {
        let span = self
            .raw
            .inputs
            .first()
            .map_or(self.raw.kernel.span.clone(), |i| i.dtypes_span.clone());
        let diagnostic = self.error(
            Code::DtypeMismatch,
            span,
            format!("{} is not declared, but {route} runs it", dtype.name()),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(format!(
            "declare {} in every input's dtypes, or make the backend refuse it",
            dtype.name()
        ));
    }
}
