//! Every admitted sample is accepted in every declared dtype, with the rules, values, costs and
//! determinism holding on the result; a rejection is a shrunk counterexample (under-constrained),
//! a crash or a hang is always a failure.

use super::cost::{FlopsCount, kind_name};
use super::run::{Outcome, call};
use super::sample::Sample;
use super::shrink::{Check, Keep, Replay, sample_note};
use super::{Agreement, Gate, oracle};
use crate::diag::Code;
use crate::providers::{Crash, Kernel};
use fkc_provider::DType;

impl Gate<'_> {
    /// Every admitted sample runs, with the rules holding on the result; false on a failure.
    pub(super) fn admitted(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        samples: &[(Sample, Vec<Vec<i64>>)],
    ) -> bool {
        let bitwise = self.promises_bitwise();
        let mut ran = 0;
        let mut worst: f64 = 0.0;
        let mut all_exact = true;
        let mut flops_checked = 0;
        let mut flops_kind = FlopsCount::MACS | FlopsCount::TAPS;
        for (index, (sample, predicted)) in samples.iter().enumerate() {
            let seed = self.seed ^ index as u64;
            let before = self.diagnostics.len();
            let Some(agreement) =
                self.admitted_one(kernel, dtype, sample, predicted, seed, bitwise)
            else {
                let replay = Replay {
                    kernel,
                    dtype,
                    seed,
                    check: Check::Domain,
                    keep: Keep::Admitted,
                };
                self.shrink_report(before, &replay, sample);
                return false;
            };
            ran += 1;
            worst = worst.max(agreement.worst);
            all_exact &= agreement.exact;
            if let Some(count) = agreement.flops {
                if flops_kind & count.equals == 0 {
                    self.flops_inconsistent(kernel, dtype, sample, flops_kind, &count);
                    return false;
                }
                flops_kind &= count.equals;
                flops_checked += 1;
            }
        }
        let oracle = match &self.named_oracle {
            Some(named) => Some(format!("the oracle `{}`", named.kernel.symbol)),
            None => {
                oracle::has_reference(&self.op_kind).then(|| "an independent oracle".to_owned())
            }
        };
        let values = match (oracle, all_exact) {
            (None, _) => format!(
                "; values: not checked — no oracle for op kind `{}`",
                if self.op_kind.is_empty() {
                    "(none)"
                } else {
                    &self.op_kind
                }
            ),
            (Some(oracle), true) => format!(", values exactly equal to {oracle}'s"),
            (Some(oracle), false) => format!(
                ", values within the error bound of {oracle} (worst {:.0}% of it)",
                worst * 100.0
            ),
        };
        let already = self
            .evidence
            .rows
            .iter()
            .any(|(check, _)| check.starts_with("`flops`"));
        if flops_checked > 0 && !already {
            self.evidence.rows.push((
                "`flops` against the work done".to_owned(),
                format!(
                    "on every one of {flops_checked} {} samples `flops` equals {}, counted by the oracle",
                    dtype.name(),
                    kind_name(flops_kind)
                ),
            ));
        }
        self.evidence.rows.push((
            format!("{} accepts the admitted domain", dtype.name()),
            format!(
                "{ran} samples through `{}`: accepted, shapes and dtypes as the rules say{values}{}",
                kernel.symbol,
                if bitwise {
                    ", repeated runs bit-identical"
                } else {
                    ""
                }
            ),
        ));
        true
    }

    /// Runs one admitted sample: accepted, the rules, the values and (with `bitwise`) the
    /// determinism holding. `None` after reporting a failure.
    pub(super) fn admitted_one(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        predicted: &[Vec<i64>],
        seed: u64,
        bitwise: bool,
    ) -> Option<Agreement> {
        match call(kernel, &self.domain, sample, dtype, seed, bitwise) {
            Outcome::Rejected(error) => {
                self.under_constrained(kernel, dtype, sample, &error);
                None
            }
            Outcome::Crashed(crash) => {
                self.crashed(kernel, dtype, sample, &crash);
                None
            }
            Outcome::Skipped(reason) => {
                self.cannot_call(kernel, &reason);
                None
            }
            Outcome::Accepted {
                outputs,
                values,
                inputs,
                repeat_identical,
            } => {
                if !self.rules_hold(kernel, dtype, sample, predicted, &outputs) {
                    return None;
                }
                let agreement =
                    self.values_hold(kernel, dtype, sample, &inputs, &values, predicted)?;
                if repeat_identical == Some(false) {
                    self.nondeterministic(kernel, dtype, sample);
                    return None;
                }
                Some(agreement)
            }
        }
    }

    fn cannot_call(&mut self, kernel: &Kernel<'_>, reason: &str) {
        let span = self.raw.kernel.span.clone();
        let diagnostic = self.error(
            Code::OperandsMismatch,
            span,
            format!(
                "the gate cannot call `{}` with this contract's parameters: {reason}",
                kernel.symbol
            ),
        );
        diagnostic
            .help
            .push("declare exactly the entry point's operands and parameters".to_owned());
    }

    fn under_constrained(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        error: &str,
    ) {
        let span = self
            .raw
            .inputs
            .first()
            .map_or(self.raw.kernel.span.clone(), |i| i.span.clone());
        let diagnostic = self.error(
            Code::UnderConstrained,
            span,
            format!(
                "the contract admits a sample that `{}` rejects",
                kernel.symbol
            ),
        );
        diagnostic.label = Some("every constraint holds for the counterexample".to_owned());
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.notes.push(format!("the kernel says: {error}"));
        diagnostic.help.push("add the constraint the kernel enforces, so the contract admits only what the kernel accepts".to_owned());
    }

    /// The kernel crashed or hung on a sample: never a rejection, always a failure.
    pub(super) fn crashed(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        crash: &Crash,
    ) {
        let span = self
            .raw
            .entry_point
            .as_ref()
            .map_or(self.raw.kernel.span.clone(), |e| e.span.clone());
        let diagnostic = self.error(crash.code(), span, format!("`{}`: {crash}", kernel.symbol));
        diagnostic.label = Some("this entry point".to_owned());
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        if let Crash::TimedOut(_) = crash {
            diagnostic.notes.push("the entry point is now marked hung: the contract's remaining checks, and every other call of it in this build, do not call it again (FKC0319)".to_owned());
        }
        diagnostic.help.push(crash.help().to_owned());
    }

    pub(super) fn nondeterministic(&mut self, kernel: &Kernel<'_>, dtype: DType, sample: &Sample) {
        let span = self
            .raw
            .determinism
            .as_ref()
            .map_or(self.raw.kernel.span.clone(), |d| d.span.clone());
        let diagnostic = self.error(
            Code::Nondeterministic,
            span,
            format!("two runs of `{}` on the same input differ", kernel.symbol),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(
            "declare `determinism: nondeterministic`, or make the kernel's order fixed".to_owned(),
        );
    }
}
