//! Special values: admitted samples run again with NaN, ±Inf, -0.0, the smallest subnormal and
//! values near the dtype's largest finite in their operands, in every declared dtype. A crash
//! or a refusal is a failure; results are compared with the oracle under the contract's NaN
//! policy (`precision.nan`, `propagate` by default): a NaN where the oracle has one, and
//! otherwise the usual bound — except where the terms' magnitude reaches the dtype's range, where
//! overflow to ±Inf (or NaN from Inf − Inf) is the dtype's arithmetic, not an error.

use super::Gate;
use super::oracle::{self, NanPolicy};
use super::run::{Fill, arguments, oracle_inputs};
use super::sample::Sample;
use super::shrink::{Check, Keep, Replay, sample_note};
use crate::diag::Code;
use crate::providers::{CallOutcome, Kernel};
use fkc_provider::DType;

/// What one run with special values showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SpecialRun {
    /// The sample cannot be expressed as a call.
    Skipped,
    /// No oracle for the op kind: only crashes and refusals were checked.
    NoOracle,
    Held,
    /// Reported.
    Failed,
}

impl SpecialRun {
    pub(super) fn passed(self) -> bool {
        self != SpecialRun::Failed
    }
}

/// Admitted samples each dtype runs with special values.
const SPECIAL_SAMPLES: usize = 6;

fn largest(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::MAX,
        DType::F32 => f64::from(f32::MAX),
        DType::BF16 => f64::from(half::bf16::MAX),
        DType::F16 => f64::from(half::f16::MAX),
    }
}

impl Gate<'_> {
    /// The NaN policy the contract declares.
    fn nan_policy(&self) -> NanPolicy {
        match self.raw.precision.as_ref().and_then(|p| p.nan.as_ref()) {
            Some(nan) if nan.value == "ignore" => NanPolicy::Ignore,
            _ => NanPolicy::Propagate,
        }
    }

    /// Runs special values through `kernel`; false after reporting a failure.
    pub(super) fn special_values(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        admitted: &[&Sample],
    ) -> bool {
        let policy = self.nan_policy();
        let mut ran = 0;
        for (index, sample) in admitted.iter().take(SPECIAL_SAMPLES).enumerate() {
            let seed = self.seed ^ ((index as u64) << 16);
            let before = self.diagnostics.len();
            match self.special_one(kernel, dtype, sample, seed) {
                SpecialRun::Skipped => continue,
                SpecialRun::NoOracle => return true, // the crash and refusal checks are what ran
                SpecialRun::Held => ran += 1,
                SpecialRun::Failed => {
                    let replay = Replay {
                        kernel,
                        dtype,
                        seed,
                        check: Check::Special,
                        keep: Keep::Admitted,
                    };
                    self.shrink_report(before, &replay, sample);
                    return false;
                }
            }
        }
        self.evidence.rows.push((
            format!("{dtype} special values"),
            format!(
                "{ran} admitted samples with NaN, ±Inf, -0.0, subnormals and ±3/4 of the largest finite in their operands through `{}`: no crash, no refusal, values as the oracle's under `nan: {}` (where the terms reach the dtype's range, overflow is accepted)",
                kernel.symbol,
                match policy {
                    NanPolicy::Propagate => "propagate",
                    NanPolicy::Ignore => "ignore",
                }
            ),
        ));
        true
    }

    /// Runs one admitted sample with special values chosen by `seed` (reporting a failure).
    pub(super) fn special_one(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
    ) -> SpecialRun {
        let policy = self.nan_policy();
        let Ok((ops, values)) = arguments(kernel, sample, dtype, Fill::Special(seed)) else {
            return SpecialRun::Skipped;
        };
        let outputs = match kernel.run(&ops, &values) {
            CallOutcome::Outputs(outputs) => outputs,
            CallOutcome::Crashed(crash) => {
                self.crashed(kernel, dtype, sample, &crash);
                return SpecialRun::Failed;
            }
            CallOutcome::Rejected(error) => {
                self.refuses_special_values(kernel, dtype, sample, &error);
                return SpecialRun::Failed;
            }
        };
        let inputs = oracle_inputs(&ops);
        let (Some(reference), Some(actual)) = (
            oracle::reference_with(&self.op_kind, &inputs, sample, policy),
            outputs.first().map(|o| o.to_f64_vec()),
        ) else {
            return SpecialRun::NoOracle;
        };
        let gamma = oracle::gamma(reference.terms + 1, oracle::unit_roundoff(dtype));
        let slack = (reference.terms as f64 + 2.0) * oracle::smallest_subnormal(dtype);
        let bad = actual
            .iter()
            .zip(&reference.values)
            .enumerate()
            .find(|(i, (got, want))| {
                let magnitude = reference.magnitude.get(*i).copied().unwrap_or(0.0);
                let overflows = magnitude.is_nan() || magnitude >= largest(dtype) / 2.0;
                if want.is_nan() {
                    return !got.is_nan();
                }
                if overflows {
                    return false; // ±Inf, or NaN from Inf − Inf, is the dtype's own arithmetic
                }
                if want.is_infinite() || got.is_nan() || got.is_infinite() {
                    return **got != **want;
                }
                (*got - *want).abs() > gamma * magnitude + slack
            });
        if let Some((at, (got, want))) = bad {
            let span = self
                .raw
                .precision
                .as_ref()
                .and_then(|p| p.nan.as_ref().map(|n| n.span.clone()))
                .unwrap_or_else(|| self.raw.kernel.span.clone());
            let policy_text = match policy {
                NanPolicy::Propagate => "nan: propagate (the default)",
                NanPolicy::Ignore => "nan: ignore",
            };
            let diagnostic = self.error(
                Code::WrongValue,
                span,
                format!(
                    "with special values, `{}` computes {got:e} at output element {at}; the oracle under `{policy_text}` gives {want:e}",
                    kernel.symbol
                ),
            );
            diagnostic.notes.push(sample_note(
                &format!("{dtype}, with NaN, ±Inf, -0.0, subnormals and huge values"),
                sample,
            ));
            diagnostic.help.push("state what the kernel does with a NaN operand (`precision.nan: propagate` or `ignore`), or fix the kernel".to_owned());
            return SpecialRun::Failed;
        }
        SpecialRun::Held
    }

    fn refuses_special_values(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        error: &str,
    ) {
        let span = self.raw.kernel.span.clone();
        let diagnostic = self.error(
            Code::UnderConstrained,
            span,
            format!(
                "`{}` refuses an admitted sample because of its values (NaN, ±Inf, -0.0, subnormals or huge values): {error}",
                kernel.symbol
            ),
        );
        diagnostic
            .notes
            .push(sample_note(&dtype.to_string(), sample));
        diagnostic.help.push("a kernel takes any value of its dtype: compute with it (IEEE arithmetic) instead of refusing".to_owned());
    }
}
