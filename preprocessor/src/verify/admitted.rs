//! Every admitted sample is accepted in every declared dtype, with the rules, values, costs and
//! determinism holding on the result; a rejection is a shrunk counterexample (under-constrained),
//! a crash or a hang is always a failure.

use super::cost::{FlopsCount, kind_name};
use super::run::{CallError, Outcome, call};
use super::sample::Sample;
use super::shrink::{Check, Keep, Replay, sample_note};
use super::{Agreement, Gate};
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
        self.admitted_as(kernel, dtype, samples, "accepts the admitted domain")
    }

    /// Every admitted sample with an empty operand (see [`Gate::empty_dim_samples`]) runs as
    /// the drawn ones do, after them: a kernel that refuses empty operands its contract admits
    /// is under-constrained, and its other claims were checked on the rest all the same.
    pub(super) fn empty_operands(
        &mut self,
        kernels: &[(DType, Kernel<'_>)],
        empties: &[(Sample, Vec<Vec<i64>>)],
    ) {
        if empties.is_empty() {
            return;
        }
        for (dtype, kernel) in kernels {
            if !self.admitted_as(kernel, *dtype, empties, "accepts empty operands") {
                return; // one counterexample is enough
            }
        }
    }

    /// [`Gate::admitted`], its evidence row titled `what` after the dtype.
    fn admitted_as(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        samples: &[(Sample, Vec<Vec<i64>>)],
        what: &str,
    ) -> bool {
        let bitwise = self.promises_bitwise();
        let mut ran = 0;
        let mut worst: f64 = 0.0;
        let mut all_exact = true;
        let mut compared = 0;
        let mut failed = false;
        // The work each accepted sample did, for the cost formulas (checked apart, so that a
        // wrong formula is found whether or not the domain check fails).
        let mut counted = Vec::new();
        for (index, (sample, predicted)) in samples.iter().enumerate() {
            let seed = self.seed ^ index as u64;
            let before = self.diagnostics.len();
            let Some(agreement) =
                self.admitted_one(kernel, dtype, sample, predicted, seed, bitwise)
            else {
                if failed {
                    self.diagnostics.truncate(before); // one counterexample is enough
                    if let Some(counts) = self.count_work(kernel, dtype, sample, predicted) {
                        counted.push((sample, predicted, counts));
                    }
                    continue;
                }
                let replay = Replay {
                    kernel,
                    dtype,
                    seed,
                    check: Check::Domain,
                    keep: Keep::Admitted,
                };
                // A rejection is cheap to run past (the remaining samples still count the work
                // for the cost formulas); a crash or a hang is not.
                let rejected = self
                    .diagnostics
                    .get(before)
                    .is_some_and(|d| d.code == Code::UnderConstrained);
                self.shrink_report(before, &replay, sample);
                if !rejected {
                    return false;
                }
                failed = true;
                if let Some(counts) = self.count_work(kernel, dtype, sample, predicted) {
                    counted.push((sample, predicted, counts));
                }
                continue;
            };
            if let Some(counts) = agreement.counts {
                counted.push((sample, predicted, counts));
            }
            ran += 1;
            compared += usize::from(agreement.checked);
            worst = worst.max(agreement.worst);
            all_exact &= agreement.exact;
        }
        if !self.costs_hold(kernel, dtype, &counted) || failed {
            return false;
        }
        let values = self.values_evidence(dtype, compared, all_exact, worst);
        if compared == 0 {
            let why = match &self.domain.contract.semantics {
                None => format!(
                    "no semantics: the contract has no `semantics` and op kind `{}` has no standard ones",
                    if self.op_kind.is_empty() {
                        "(none)"
                    } else {
                        &self.op_kind
                    }
                ),
                Some(_) => "the semantics could not run on any sample".to_owned(),
            };
            self.not_checked("values", why);
        }
        self.evidence.rows.push((
            format!("{} {what}", dtype.name()),
            format!(
                "{ran} sample{} through `{}`: accepted, shapes and dtypes as the rules say{values}{}",
                if ran == 1 { "" } else { "s" },
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

    /// The cost formulas against the work each accepted sample did: `flops` the same count on
    /// every sample, `bytes_moved` within the traffic. False after reporting a failure.
    fn costs_hold(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        counted: &[(&Sample, &Vec<Vec<i64>>, crate::semantics::Counts)],
    ) -> bool {
        let mut flops_kind = FlopsCount::ALL;
        let mut flops_checked = 0;
        self.bytes_checked = 0;
        for (sample, predicted, counts) in counted {
            let Some(flops) = self.flops_within_work(kernel, dtype, sample, predicted, counts)
            else {
                return false;
            };
            if let Some(count) = flops {
                if flops_kind & count.equals == 0 {
                    self.flops_inconsistent(kernel, dtype, sample, flops_kind, &count);
                    return false;
                }
                flops_kind &= count.equals;
                flops_checked += 1;
            }
            if self
                .bytes_within_traffic(kernel, dtype, sample, predicted, counts)
                .is_none()
            {
                return false;
            }
        }
        let row = |rows: &[(String, String)], prefix: &str| {
            rows.iter().any(|(c, _)| c.starts_with(prefix))
        };
        if flops_checked > 0 && !row(&self.evidence.rows, "`flops`") {
            self.evidence.rows.push((
                "`flops` against the work done".to_owned(),
                format!(
                    "on every one of {flops_checked} {} samples `flops` equals {}, counted by running the semantics",
                    dtype.name(),
                    kind_name(flops_kind)
                ),
            ));
        }
        if self.bytes_checked > 0 && !row(&self.evidence.rows, "`bytes_moved`") {
            self.evidence.rows.push((
                "`bytes_moved` against the traffic".to_owned(),
                format!(
                    "on every one of {} {} samples `bytes_moved` lies between the distinct input elements the semantics read plus the outputs written, and every element of the operands and outputs (in bytes)",
                    self.bytes_checked,
                    dtype.name()
                ),
            ));
        }
        true
    }

    /// What the values check compared, for the evidence.
    fn values_evidence(&self, dtype: DType, compared: usize, exact: bool, worst: f64) -> String {
        if compared == 0 {
            return " (values not compared: see the claims not checked)".to_owned();
        }
        let against = match (&self.named_oracle, &self.domain.contract.semantics) {
            (Some(named), _) => format!("the oracle `{}`", named.kernel.symbol),
            (None, Some(s)) => match &s.origin {
                crate::contract::semantic::Origin::Own => "the contract's semantics".to_owned(),
                crate::contract::semantic::Origin::Standard(kind) => {
                    format!("the standard semantics of `{kind}`")
                }
            },
            (None, None) => "the oracle".to_owned(),
        };
        if self.claims_order() {
            format!(
                ", values bit for bit {against} computed in {} in the written order",
                dtype.name()
            )
        } else if exact {
            format!(", values exactly {against}")
        } else {
            format!(
                ", values within {} of {against} (worst {:.0}% of it)",
                self.allowance(),
                worst * 100.0
            )
        }
    }

    /// What a value may differ by: the authored tolerance, else the semantics' error bound.
    fn allowance(&self) -> String {
        let stated = self.stated_precision();
        match (stated.max_ulp, stated.max_absolute, stated.max_relative) {
            (Some(ulps), ..) if ulps > 0 => format!("the stated `max_ulp: {ulps}`"),
            (_, None, None) => "the error bound".to_owned(),
            (_, absolute, relative) => format!(
                "the stated tolerance `{:e} + {:e} × |exact|`",
                absolute.unwrap_or(0.0),
                relative.unwrap_or(0.0)
            ),
        }
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
        let outcome = call(
            kernel,
            &self.domain,
            sample,
            dtype,
            seed,
            self.levels.runs(bitwise),
        );
        match outcome {
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
            Outcome::Accepted(accepted) => {
                self.paths_reached(dtype, &accepted.paths);
                if !self.rules_hold(kernel, dtype, sample, predicted, &accepted.outputs) {
                    return None;
                }
                let agreement = self.values_hold(
                    kernel,
                    dtype,
                    sample,
                    &accepted.inputs,
                    &accepted.values,
                    predicted,
                )?;
                self.bits_hold(kernel, dtype, sample, &accepted)?;
                if accepted.repeat_identical == Some(false) {
                    self.nondeterministic(kernel, dtype, sample);
                    return None;
                }
                self.levels_agree(kernel, dtype, sample, &accepted, predicted)?;
                self.independent_of_params(kernel, dtype, sample, seed, &accepted)?;
                Some(agreement)
            }
        }
    }

    fn cannot_call(&mut self, kernel: &Kernel<'_>, reason: &CallError) {
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
        let empty = self.empty_input_of(sample);
        let (span, label) = match &empty {
            Some((span, name)) => (
                span.clone(),
                format!(
                    "the kernel refuses `{name}` empty (a dim of 0), though every constraint here holds"
                ),
            ),
            None => self.missing_constraint_at(error),
        };
        let diagnostic = self.error(
            Code::UnderConstrained,
            span,
            format!(
                "the contract admits a sample that `{}` rejects",
                kernel.symbol
            ),
        );
        diagnostic.label = Some(label);
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.notes.push(format!("the kernel says: {error}"));
        diagnostic.help.push("add the constraint the kernel enforces, so the contract admits only what the kernel accepts".to_owned());
        if let Some((_, name)) = empty {
            diagnostic.help.push(format!(
                "if the kernel refuses empty operands, `prod({name}.dim) > 0` in `{name}`'s `shape_constraint` says so; or make it accept them"
            ));
        }
    }

    /// The first present input of `sample` with a dim of 0, with where its constraint goes
    /// (its `shape_constraint`, or its declaration).
    fn empty_input_of(&self, sample: &Sample) -> Option<(std::ops::Range<usize>, String)> {
        let (name, _, _) =
            (sample.inputs.iter()).find(|(_, dims, present)| *present && dims.contains(&0))?;
        let input = self.raw.inputs.iter().find(|i| i.name.value == *name)?;
        let at = (input.shape_constraint.as_ref()).map_or(&input.name.span, |c| &c.span);
        Some((at.clone(), name.clone()))
    }

    /// Where the constraint the kernel enforces is missing, and what to say there: the
    /// parameter or input the kernel's message names first (its constraint, or its declaration
    /// when it has none), else the first output's shape rule, which admitted the sample.
    pub(super) fn missing_constraint_at(&self, error: &str) -> (std::ops::Range<usize>, String) {
        let refused = |name: &str| {
            format!("the kernel refuses this `{name}`, though every constraint here holds")
        };
        let params = self.raw.op_params.iter().flat_map(|p| &p.fields);
        if let Some(field) = named_first(error, params, |f| &f.name.value) {
            let at = field
                .constraint
                .as_ref()
                .map_or(&field.name.span, |c| &c.span);
            return (at.clone(), refused(&field.name.value));
        }
        if let Some(input) = named_first(error, self.raw.inputs.iter(), |i| &i.name.value) {
            let at = input
                .shape_constraint
                .as_ref()
                .map_or(&input.span, |c| &c.span);
            return (at.clone(), refused(&input.name.value));
        }
        match self.raw.outputs.iter().find_map(|o| o.shape_rule.as_ref()) {
            Some(rule) => (
                rule.span.clone(),
                "this shape rule, and every constraint, admit the counterexample".to_owned(),
            ),
            None => (
                self.raw.kernel.span.clone(),
                "every constraint holds for the counterexample".to_owned(),
            ),
        }
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
        let (span, help) = self.bitwise_promise().unwrap_or((
            self.raw.kernel.span.clone(),
            super::shrink::DETERMINISM_HELP,
        ));
        let diagnostic = self.error(
            Code::Nondeterministic,
            span,
            format!("two runs of `{}` on the same input differ", kernel.symbol),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(help.to_owned());
    }
}

/// The item whose name `error` mentions first as a whole word (the first in `items` among
/// equals).
fn named_first<'a, T>(
    error: &str,
    items: impl Iterator<Item = &'a T>,
    name: impl Fn(&T) -> &str,
) -> Option<&'a T> {
    let named_at = |name: &str| {
        error.match_indices(name).map(|(at, _)| at).find(|&at| {
            let before = error[..at].chars().next_back();
            let after = error[at + name.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !word(before) && !word(after)
        })
    };
    items
        .filter_map(|item| Some((named_at(name(item))?, item)))
        .min_by_key(|(at, _)| *at)
        .map(|(_, item)| item)
}
