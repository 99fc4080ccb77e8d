//! Every admitted sample is accepted in every declared dtype, with the rules, values, costs and
//! determinism holding on the result; a rejection is a shrunk counterexample (under-constrained),
//! a crash or a hang is always a failure.

use super::run::{Outcome, call};
use super::sample::Sample;
use super::{Gate, oracle, shrink};
use crate::contract::raw::Determinism;
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
        let bitwise = self
            .raw
            .determinism
            .as_ref()
            .is_some_and(|d| d.value != Determinism::Nondeterministic);
        let mut ran = 0;
        let mut worst: f64 = 0.0;
        let mut all_exact = true;
        let mut flops_checked = 0;
        let mut largest_gap: f64 = 0.0;
        for (index, (sample, predicted)) in samples.iter().enumerate() {
            let outcome = call(
                kernel,
                &self.domain,
                sample,
                dtype,
                self.seed ^ index as u64,
                bitwise,
            );
            match outcome {
                Outcome::Rejected(_) => {
                    self.under_constrained(kernel, dtype, sample);
                    return false;
                }
                Outcome::Crashed(crash) => {
                    self.crashed(kernel, dtype, sample, &crash);
                    return false;
                }
                Outcome::Skipped(reason) => {
                    let span = self.raw.kernel.span.clone();
                    let diagnostic = self.error(
                        Code::OperandsMismatch,
                        span,
                        format!(
                            "the gate cannot call `{}` with this contract's parameters: {reason}",
                            kernel.symbol
                        ),
                    );
                    diagnostic.help.push(
                        "declare exactly the entry point's operands and parameters".to_owned(),
                    );
                    return false;
                }
                Outcome::Accepted {
                    outputs,
                    values,
                    inputs,
                    repeat_identical,
                } => {
                    ran += 1;
                    if !self.rules_hold(kernel, dtype, sample, predicted, &outputs) {
                        return false;
                    }
                    match self.values_hold(kernel, dtype, sample, &inputs, &values, predicted) {
                        Some(agreement) => {
                            worst = worst.max(agreement.worst);
                            all_exact &= agreement.exact;
                            if let Some((_, low, high)) = agreement.flops {
                                flops_checked += 1;
                                if high > 0 {
                                    largest_gap = largest_gap.max(1.0 - low as f64 / high as f64);
                                }
                            }
                        }
                        None => return false,
                    }
                    if repeat_identical == Some(false) {
                        self.nondeterministic(kernel, dtype, sample);
                        return false;
                    }
                }
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
                    "on {flops_checked} {} samples `flops` lies between 2 × the multiply-adds performed and 2 × the taps the loop nest visits, both counted by the oracle (padding taps are visited but skipped: up to {:.0}% of the taps on these samples)",
                    dtype.name(),
                    largest_gap * 100.0
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

    pub(super) fn under_constrained(&mut self, kernel: &Kernel<'_>, dtype: DType, sample: &Sample) {
        let small = shrink::shrink(&self.domain, sample, dtype, |candidate| {
            matches!(
                call(kernel, &self.domain, candidate, dtype, self.seed, false),
                Outcome::Rejected(_)
            )
        });
        let error = match call(kernel, &self.domain, &small, dtype, self.seed, false) {
            Outcome::Rejected(error) => error,
            _ => String::new(),
        };
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
        diagnostic.notes.push(format!(
            "counterexample ({}): {}",
            dtype.name(),
            small.describe()
        ));
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
        let code = match crash {
            Crash::TimedOut(_) => Code::KernelTimedOut,
            Crash::Panicked(_) | Crash::Died(_) => Code::KernelCrashed,
        };
        let diagnostic = self.error(code, span, format!("`{}`: {crash}", kernel.symbol));
        diagnostic.label = Some("this entry point".to_owned());
        diagnostic
            .notes
            .push(format!("sample ({}): {}", dtype.name(), sample.describe()));
        diagnostic.help.push(match crash {
            Crash::TimedOut(_) => "make the kernel return on this input (or raise `call-timeout-ms` in the provider's table of book.toml if it is only slow)".to_owned(),
            _ => "a kernel must refuse bad input with an error, never crash: fix the kernel, then rebuild the provider".to_owned(),
        });
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
        diagnostic
            .notes
            .push(format!("sample ({}): {}", dtype.name(), sample.describe()));
        diagnostic.help.push(
            "declare `determinism: nondeterministic`, or make the kernel's order fixed".to_owned(),
        );
    }
}
