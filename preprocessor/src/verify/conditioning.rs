//! Precision claims attacked with ill-conditioned operands. A stated precision (`max_ulp: N`,
//! `max_absolute`, `max_relative`) is checked on the random operands of the admitted check, where
//! sums rarely cancel; here the first admitted samples run again on operands whose exponents
//! spread wide with mixed signs, so that sums cancel to far below their terms and a kernel's
//! rounding error shows against the exact result.

use super::Gate;
use super::run::{Fill, Outcome, Runs, call_filled};
use super::sample::Sample;
use super::shrink::{Check, Keep, Replay};
use crate::providers::Kernel;
use fkc_provider::DType;

/// Samples the precision runs on with ill-conditioned operands.
const CONDITIONED_SAMPLES: usize = 8;

impl Gate<'_> {
    /// Whether the contract states a precision of its own (other than exactness).
    fn states_precision(&self) -> bool {
        let stated = self.stated_precision();
        stated.max_ulp.is_some_and(|n| n > 0)
            || stated.max_absolute.is_some()
            || stated.max_relative.is_some()
    }

    /// Checks the stated precision on ill-conditioned operands (nothing to do without one).
    pub(super) fn ill_conditioned(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        samples: &[&Sample],
    ) {
        if !self.states_precision() || !self.has_semantics() {
            return;
        }
        let mut checked = 0;
        for (index, sample) in samples.iter().take(CONDITIONED_SAMPLES).enumerate() {
            let seed = self.seed ^ ((index as u64) << 24);
            let before = self.diagnostics.len();
            match self.conditioned_one(kernel, dtype, sample, seed) {
                None => continue,
                Some(true) => checked += 1,
                Some(false) => {
                    let replay = Replay {
                        kernel,
                        dtype,
                        seed,
                        check: Check::Conditioning,
                        keep: Keep::Admitted,
                    };
                    self.shrink_report(before, &replay, sample);
                    return;
                }
            }
        }
        self.evidence.rows.push((
            format!("{dtype} precision, ill-conditioned"),
            format!(
                "{checked} samples on operands whose exponents spread wide with mixed signs (sums that cancel): every value within the stated precision of the exact result"
            ),
        ));
    }

    /// One sample on ill-conditioned operands chosen by `seed`: `Some(false)` after reporting
    /// a value outside the stated precision, `None` when nothing could be compared.
    pub(super) fn conditioned_one(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
    ) -> Option<bool> {
        let runs = Runs {
            level: self.levels.main.as_deref(),
            ..Runs::default()
        };
        let outcome = call_filled(
            kernel,
            &self.domain,
            sample,
            dtype,
            Fill::WideExponents(seed),
            runs,
        );
        // The admitted-domain check reports refusals and crashes.
        let Outcome::Accepted(accepted) = outcome else {
            return None;
        };
        let predicted: Vec<Vec<i64>> = accepted
            .outputs
            .iter()
            .map(|(shape, _, _)| shape.iter().map(|d| *d as i64).collect())
            .collect();
        let before = self.diagnostics.len();
        let held = self.values_hold(
            kernel,
            dtype,
            sample,
            &accepted.inputs,
            &accepted.values,
            &predicted,
        );
        if held.is_none() {
            for diagnostic in &mut self.diagnostics[before..] {
                diagnostic.notes.push(
                    "operands: exponents spread wide with mixed signs, so the sums cancel"
                        .to_owned(),
                );
            }
        }
        Some(held.is_some())
    }
}
