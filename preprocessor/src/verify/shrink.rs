//! Shrinking a counterexample: greedily make each dimension and parameter smaller while the
//! sample stays what it was (admitted, or breaking exactly the same constraint) and the same
//! check still fails with the same code, within a bounded number of re-runs; the report then
//! names the smallest sample with a one-line reproduction command.

use super::Gate;
use super::constraints::{Domain, Verdict};
use super::sample::Sample;
use crate::diag::Code;
use crate::providers::Kernel;
use fkc_provider::DType;
use std::ops::Range;

/// How to take back a bitwise `determinism` that does not hold.
pub(super) const DETERMINISM_HELP: &str =
    "declare `determinism: nondeterministic`, or make the kernel's order fixed";

/// Re-runs of an ordinary failing check while shrinking.
const TRIES: usize = 120;
/// Re-runs of a crashing kernel (each restarts a child provider).
const CRASH_TRIES: usize = 30;
/// Re-runs of a hanging kernel (each costs the call timeout).
const TIMEOUT_TRIES: usize = 2;

/// What a smaller sample must stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Every constraint holds.
    Admitted,
    /// Exactly this constraint is false.
    Breaks(usize),
}

impl Keep {
    fn holds(self, domain: &Domain<'_>, sample: &Sample, dtype: DType) -> bool {
        match (self, domain.verdict(sample, dtype)) {
            (Keep::Admitted, Verdict::Admitted { .. }) => true,
            (Keep::Breaks(wanted), Verdict::Breaks { constraint }) => wanted == constraint,
            _ => false,
        }
    }
}

/// Which per-sample check found a failure (and which one a reproduction replays).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The contract's verdict on the sample: admitted samples run (accepted, rules, values,
    /// determinism), breaking ones must be rejected. Operand values: seeded in [-1, 1).
    Domain,
    /// `precision.order`, on operands with exponents spread wide.
    Order,
    /// Special values (NaN, ±Inf, -0.0, subnormals, huge values) in the operands.
    Special,
    /// Every operand element one special value, the seed's index among them (NaN, +Inf, -Inf,
    /// -0.0, the smallest subnormal, ±3/4 of the largest finite, a NaN with a payload, a
    /// signalling NaN).
    UniformSpecial,
    /// NaN every other element at the end of each operand, among its largest values
    /// ([`super::fill::Fill::TailNaN`]).
    TailSpecial,
    /// A stated precision, on operands whose sums cancel (exponents spread wide).
    Conditioning,
    /// A bitwise claim, on operands of signed zeros (and `-1.0`).
    SignedZeros,
    /// A bitwise claim, on operands near the dtype's smallest normal value (products and sums
    /// in its subnormal range).
    Underflow,
    /// A bitwise claim, on operands of about half the dtype's largest finite value (sums
    /// across the overflow threshold).
    Overflow,
    /// Any value claim, on operands of magnitudes from 1/16 to 256, either sign.
    Magnitudes,
    /// Layout claims, on real views of the operands.
    Layout,
    /// A dtype the contract does not declare (`--dtype`), which every entry point and the
    /// executor must refuse. Runs on any sample.
    Undeclared,
    /// A call with the absent inputs of the sample, which must be refused when the contract does
    /// not mark one of them optional. Runs on any sample.
    Required,
}

impl Check {
    /// The name `repro --check` takes (`None` for the default, [`Check::Domain`]).
    pub fn name(self) -> Option<&'static str> {
        match self {
            Check::Domain => None,
            Check::Order => Some("order"),
            Check::Special => Some("special"),
            Check::UniformSpecial => Some("special-uniform"),
            Check::TailSpecial => Some("special-tail"),
            Check::Conditioning => Some("conditioning"),
            Check::SignedZeros => Some("signed-zeros"),
            Check::Underflow => Some("underflow"),
            Check::Overflow => Some("overflow"),
            Check::Magnitudes => Some("magnitudes"),
            Check::Layout => Some("layout"),
            Check::Undeclared => Some("undeclared"),
            Check::Required => Some("required"),
        }
    }

    /// The names `repro --check` takes, for a usage message.
    pub const NAMES: &'static str = "order, special, special-uniform, special-tail, conditioning, signed-zeros, underflow, overflow, magnitudes, layout, undeclared or required";

    /// The check named `name` (`repro --check`).
    pub fn parse(name: &str) -> Option<Check> {
        [
            Check::Order,
            Check::Special,
            Check::UniformSpecial,
            Check::TailSpecial,
            Check::Conditioning,
            Check::SignedZeros,
            Check::Underflow,
            Check::Overflow,
            Check::Magnitudes,
            Check::Layout,
            Check::Undeclared,
            Check::Required,
        ]
        .into_iter()
        .find(|c| c.name() == Some(name))
    }

    /// Whether the check runs only on samples the contract classifies (admitted, or breaking
    /// one constraint); [`Check::Undeclared`] and [`Check::Required`] run on any sample.
    pub fn classifies(self) -> bool {
        !matches!(self, Check::Undeclared | Check::Required)
    }
}

/// One failing run: the kernel, dtype, operand seed and check to replay on smaller samples.
#[derive(Clone, Copy)]
pub(super) struct Replay<'k> {
    pub kernel: &'k Kernel<'k>,
    pub dtype: DType,
    pub seed: u64,
    pub check: Check,
    pub keep: Keep,
}

/// The smallest sample reachable from `sample` that stays what `keep` says and for which
/// `fails` still holds, calling `fails` at most `tries` times.
pub fn shrink(
    domain: &Domain<'_>,
    sample: &Sample,
    dtype: DType,
    keep: Keep,
    tries: usize,
    mut fails: impl FnMut(&Sample) -> bool,
) -> Sample {
    let mut best = sample.clone();
    let mut left = tries;
    'steps: while left > 0 {
        for candidate in smaller(&best) {
            if !keep.holds(domain, &candidate, dtype) {
                continue;
            }
            if left == 0 {
                break 'steps;
            }
            left -= 1;
            if fails(&candidate) {
                best = candidate;
                continue 'steps;
            }
        }
        break;
    }
    best
}

/// Every sample one step smaller in one coordinate.
fn smaller(sample: &Sample) -> Vec<Sample> {
    let mut out = Vec::new();
    for (i, (_, dims, _)) in sample.inputs.iter().enumerate() {
        for (j, dim) in dims.iter().enumerate() {
            if *dim > 1 {
                let mut next = sample.clone();
                if let Some(slot) = next.inputs.get_mut(i).and_then(|(_, d, _)| d.get_mut(j)) {
                    *slot = dim - 1;
                }
                out.push(next);
            }
        }
    }
    for (i, (_, param)) in sample.params.iter().enumerate() {
        let values = param.ints().to_vec();
        for (j, value) in values.iter().enumerate() {
            if *value > 0 {
                let mut next = sample.clone();
                let slot = next.params.get_mut(i).map(|(_, p)| p.ints_mut());
                if let Some(v) = slot.and_then(|values| values.get_mut(j)) {
                    *v -= 1;
                }
                out.push(next);
            }
        }
    }
    out
}

/// How many re-runs a failure with `code` may cost while shrinking.
fn tries_for(code: Code) -> usize {
    match code {
        // Each re-run of an answer too large reads up to the line limit and restarts the provider.
        Code::KernelTimedOut | Code::FrameLimit => TIMEOUT_TRIES,
        Code::KernelCrashed => CRASH_TRIES,
        _ => TRIES,
    }
}

/// Whether a failure is about the sample (so a smaller one and a reproduction make sense):
/// every behavioural report names its sample with [`sample_note`]; an operands mismatch that
/// does not (the contract's operands or parameters cannot make a call at all) is about the
/// contract, and a kernel not called at all (it hung before, or a time budget is spent) says
/// nothing about the sample.
fn about_the_sample(report: &crate::diag::Diagnostic) -> bool {
    let not_called = matches!(
        report.code,
        Code::EntryPointHung | Code::ProviderBudget | Code::BuildBudget
    );
    !not_called
        && (report.code != Code::OperandsMismatch
            || report.notes.iter().any(|n| n.starts_with("sample (")))
}

/// The note naming the sample a report was made on, as every check writes it.
pub(super) fn sample_note(detail: &str, sample: &Sample) -> String {
    format!("sample ({detail}): {}", sample.describe())
}

/// `note` (from [`sample_note`]) said of a shrunk sample.
fn shrunk_note(note: &str) -> String {
    match note.strip_prefix("sample (") {
        Some(rest) => format!("counterexample (shrunk, {rest}"),
        None => note.to_owned(),
    }
}

/// `text` quoted for a POSIX shell.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl<'a> Gate<'a> {
    /// Runs one check on one sample; false after reporting a failure.
    pub(super) fn replay(&mut self, replay: &Replay<'_>, sample: &Sample) -> bool {
        let (kernel, dtype, seed) = (replay.kernel, replay.dtype, replay.seed);
        let verdict = self.domain.verdict(sample, dtype);
        match (replay.check, verdict) {
            (Check::Domain, Verdict::Admitted { outputs }) => {
                let bitwise = self.promises_bitwise();
                self.admitted_one(kernel, dtype, sample, &outputs, seed, bitwise)
                    .is_some()
            }
            (Check::Domain, Verdict::Breaks { constraint }) => {
                self.breaking_one(kernel, dtype, sample, constraint, seed)
            }
            (Check::Order, Verdict::Admitted { .. }) => {
                self.order_one(kernel, dtype, sample, seed) != Some(false)
            }
            (Check::Special, Verdict::Admitted { .. }) => {
                self.special_one(kernel, dtype, sample, seed).passed()
            }
            (Check::UniformSpecial, Verdict::Admitted { .. }) => {
                let fill = super::fill::Fill::UniformSpecial(seed);
                self.special_filled(kernel, dtype, sample, fill).passed()
            }
            (Check::TailSpecial, Verdict::Admitted { .. }) => {
                let fill = super::fill::Fill::TailNaN(seed);
                self.special_filled(kernel, dtype, sample, fill).passed()
            }
            (
                check @ (Check::Conditioning
                | Check::SignedZeros
                | Check::Underflow
                | Check::Overflow
                | Check::Magnitudes),
                Verdict::Admitted { .. },
            ) => self.designed_replay(check, kernel, dtype, sample, seed) != Some(false),
            (Check::Layout, Verdict::Admitted { .. }) => {
                self.layout_one(kernel, dtype, sample, seed).is_some()
            }
            (Check::Undeclared, _) => self.undeclared_one(kernel, dtype, sample, seed),
            (Check::Required, _) => self.required_one(kernel, dtype, sample, seed) != Some(false),
            _ => true,
        }
    }

    /// After `replay` failed on `sample` (reported since diagnostic `before`): the report of
    /// the smallest sample that still fails with the same code (the report of its own run, so
    /// no run is repeated), and a one-line reproduction.
    pub(super) fn shrink_report(&mut self, before: usize, replay: &Replay<'_>, sample: &Sample) {
        let Some(first) = self.diagnostics.get(before) else {
            return;
        };
        if !about_the_sample(first) {
            return;
        }
        let code = first.code;
        let mut report = self.diagnostics.split_off(before);
        let domain = self.domain.clone();
        let small = shrink(
            &domain,
            sample,
            replay.dtype,
            replay.keep,
            tries_for(code),
            |candidate| match self.failure_report(code, replay, candidate) {
                Some(smaller) => {
                    report = smaller;
                    true
                }
                None => false,
            },
        );
        let shrunk = small != *sample;
        let line = self.reproduction(replay, &small);
        for mut diagnostic in report {
            if shrunk {
                diagnostic.notes = diagnostic.notes.iter().map(|n| shrunk_note(n)).collect();
            }
            diagnostic.help.push(line.clone());
            self.diagnostics.push(diagnostic);
        }
    }

    /// The report of `replay` on `candidate` when it fails with `code` (nothing of the run is
    /// kept in the gate).
    fn failure_report(
        &mut self,
        code: Code,
        replay: &Replay<'_>,
        candidate: &Sample,
    ) -> Option<Vec<crate::diag::Diagnostic>> {
        let (before, rows) = (self.diagnostics.len(), self.evidence.rows.len());
        let failed = !self.replay(replay, candidate);
        self.evidence.rows.truncate(rows);
        let report = self.diagnostics.split_off(before);
        (failed && report.first().is_some_and(|d| d.code == code)).then_some(report)
    }

    /// `reproduce: mdbook-fkc repro FILE:LINE --dtype D --seed S [--check C] --sample '…'`.
    fn reproduction(&self, replay: &Replay<'_>, sample: &Sample) -> String {
        let check = replay
            .check
            .name()
            .map_or(String::new(), |name| format!(" --check {name}"));
        format!(
            "reproduce: mdbook-fkc repro {}:{} --dtype {} --seed {:#x}{check} --sample {}",
            self.source.path,
            self.fence_line(),
            replay.dtype.name(),
            replay.seed,
            shell_quote(&sample.describe())
        )
    }

    /// The line of the contract's opening fence (where `check` locates the contract).
    fn fence_line(&self) -> usize {
        let text = &self.source.text;
        let body_line = self.source.line_col(self.raw.kernel.span.start).line;
        (1..body_line)
            .rev()
            .find(|&line| {
                let start = self.source.line_start(line).unwrap_or(0);
                let rest = text.get(start..).unwrap_or("").trim_start();
                rest.starts_with("```") || rest.starts_with("~~~")
            })
            .unwrap_or(body_line)
    }

    /// Whether the contract promises bit-identical repeated runs.
    pub(super) fn promises_bitwise(&self) -> bool {
        self.bitwise_promise().is_some()
    }

    /// Where the contract promises bit-identical repeated runs, and the help that takes the
    /// promise back: a bitwise `determinism`, else `precision.bit_stable_on_same_hardware:
    /// true`.
    pub(super) fn bitwise_promise(&self) -> Option<(Range<usize>, &'static str)> {
        let determinism = self
            .raw
            .determinism
            .as_ref()
            .filter(|d| d.value != crate::contract::raw::Determinism::Nondeterministic);
        let stable = self
            .raw
            .precision
            .as_ref()
            .and_then(|p| p.bit_stable_on_same_hardware.as_ref().filter(|b| b.value));
        match (determinism, stable) {
            (Some(d), _) => Some((d.span.clone(), DETERMINISM_HELP)),
            (None, Some(b)) => Some((
                b.span.clone(),
                "write `bit_stable_on_same_hardware: false`, or make the kernel's order fixed",
            )),
            (None, None) => None,
        }
    }
}
