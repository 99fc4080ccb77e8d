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

impl Gate<'_> {
    /// Whether the contract claims a summation order the oracle can replay.
    fn claims_order(&self) -> bool {
        let claimed = self
            .raw
            .precision
            .as_ref()
            .is_some_and(|p| p.order.is_some());
        claimed && oracle::has_order(&self.op_kind)
    }

    /// The naive nested sum in `dtype`, when the contract claims that order.
    fn ordered_reference(
        &self,
        dtype: DType,
        inputs: &[Option<oracle::Input>],
        sample: &Sample,
    ) -> Option<Vec<f64>> {
        self.claims_order()
            .then(|| oracle::ordered(&self.op_kind, dtype, inputs, sample))
            .flatten()
    }

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
        (self.order_dependent, self.special_elements) = (0, 0);
        self.nan_mixed = None;
        // The largest samples first: a special value shows what a reduction does with it only
        // where it meets other values (a NaN in a window of one is NaN under every policy).
        let mut largest: Vec<&Sample> = admitted.to_vec();
        largest.sort_by_key(|sample| std::cmp::Reverse(sample.elements()));
        // Then, for a selection (a max) whose NaN policy no window has shown yet, more runs until
        // one window holds a NaN among numbers.
        let extra = largest.iter().cycle().take(largest.len().max(1) * 3);
        let runs = largest.iter().take(SPECIAL_SAMPLES).chain(extra);
        for (index, sample) in runs.enumerate() {
            if index >= SPECIAL_SAMPLES && self.nan_mixed != Some(0) {
                break;
            }
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
        let compared = if self.claims_order() {
            format!(
                "bit for bit as the naive nested sum in {dtype} (the claimed order), NaN as NaN"
            )
        } else {
            let policy = match policy {
                NanPolicy::Propagate => "propagate",
                NanPolicy::Ignore => "ignore",
            };
            match self.nan_mixed {
                Some(0) => format!(
                    "as the oracle's under `nan: {policy}`, but no window held a NaN among numbers, so the NaN policy itself was not exercised"
                ),
                Some(mixed) => format!(
                    "as the oracle's under `nan: {policy}`, {mixed} windows holding a NaN among numbers"
                ),
                None => format!(
                    "as the oracle's under `nan: {policy}`; {} of {} elements depended on the summation order (an overflow to ±Inf on the way, or Inf − Inf), where any result some order of the same terms gives was accepted",
                    self.order_dependent, self.special_elements
                ),
            }
        };
        self.evidence.rows.push((
            format!("{dtype} special values"),
            format!(
                "{ran} admitted samples with NaN, ±Inf, -0.0, subnormals and ±3/4 of the largest finite in their operands through `{}`: no crash, no refusal, values {compared}",
                kernel.symbol,
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
        let Some(actual) = outputs.first().map(|o| o.to_f64_vec()) else {
            return SpecialRun::NoOracle;
        };
        let bad = if let Some(ordered) = self.ordered_reference(dtype, &inputs, sample) {
            // An order is claimed: the naive nested sum in the dtype, special values included.
            first_difference(&actual, &ordered)
        } else {
            let Some(reference) =
                oracle::reference_envelopes(&self.op_kind, &inputs, sample, policy, Some(dtype))
            else {
                return SpecialRun::NoOracle;
            };
            let (bad, dependent) = outside_envelopes(&actual, &reference, dtype);
            if let Some(mixed) = reference.nan_mixed {
                *self.nan_mixed.get_or_insert(0) += mixed;
            }
            self.order_dependent += dependent;
            self.special_elements += actual.len();
            bad
        };
        if let Some((at, got, want)) = bad {
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
                    "with special values, `{}` computes {got:e} at output element {at}; the oracle under `{policy_text}` gives {want}",
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

/// The first element whose bits differ from the ordered reference (any NaN matches any NaN).
fn first_difference(actual: &[f64], expected: &[f64]) -> Option<(usize, f64, String)> {
    if actual.len() != expected.len() {
        return Some((
            actual.len().min(expected.len()),
            f64::NAN,
            format!("{} elements", expected.len()),
        ));
    }
    actual
        .iter()
        .zip(expected)
        .position(|(a, e)| a.to_bits() != e.to_bits() && !(a.is_nan() && e.is_nan()))
        .map(|at| {
            let (got, want) = (actual[at], expected[at]);
            (
                at,
                got,
                format!("{want:e} (the naive nested sum in the dtype, in the claimed order)"),
            )
        })
}

/// The first element outside what the oracle allows (see [`oracle::Envelope`]): for a sum
/// whose order is not claimed, any result some order of its terms gives; otherwise the oracle's
/// value (NaN as NaN, ±Inf exactly) or a finite value within the error bound. Also counts the
/// elements whose value depends on the order.
fn outside_envelopes(
    actual: &[f64],
    reference: &oracle::Reference,
    dtype: DType,
) -> (Option<(usize, f64, String)>, usize) {
    let gamma = oracle::gamma(reference.terms + 1, oracle::unit_roundoff(dtype));
    let slack = (reference.terms as f64 + 2.0) * oracle::smallest_subnormal(dtype);
    if actual.len() != reference.values.len() {
        let want = format!("{} elements", reference.values.len());
        return (Some((0, f64::NAN, want)), 0);
    }
    let mut dependent = 0;
    for (at, (&got, &want)) in actual.iter().zip(&reference.values).enumerate() {
        let magnitude = reference.magnitude.get(at).copied().unwrap_or(0.0);
        let within =
            |got: f64| !want.is_finite() || (got - want).abs() <= gamma * magnitude + slack;
        let held = match reference.envelopes.get(at) {
            Some(envelope) => {
                let outcomes = envelope.outcomes(dtype, gamma);
                dependent += usize::from(outcomes.order_dependent());
                outcomes.admits_special(got) && (!got.is_finite() || within(got))
            }
            None if want.is_nan() => got.is_nan(),
            None if want.is_infinite() || got.is_nan() || got.is_infinite() => got == want,
            None => within(got),
        };
        if !held {
            let allowed = match reference.envelopes.get(at) {
                Some(envelope) => describe(envelope.outcomes(dtype, gamma), want),
                None => format!("{want:e}"),
            };
            return (Some((at, got, allowed)), dependent);
        }
    }
    (None, dependent)
}

/// The results an element's envelope allows, in words.
fn describe(outcomes: oracle::Outcomes, want: f64) -> String {
    let mut allowed = Vec::new();
    if outcomes.finite {
        allowed.push(format!("{want:e} within its error bound"));
    }
    for (holds, text) in [
        (outcomes.plus_infinity, "inf"),
        (outcomes.minus_infinity, "-inf"),
        (outcomes.nan, "NaN"),
    ] {
        if holds {
            allowed.push(text.to_owned());
        }
    }
    if allowed.len() > 1 {
        format!(
            "{} (some order of the same terms gives each)",
            allowed.join(" or ")
        )
    } else {
        allowed.join("")
    }
}
