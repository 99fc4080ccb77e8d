//! Special values: admitted samples run again with NaN, ±Inf, -0.0, the smallest subnormal and
//! values near the dtype's largest finite in their operands, in every declared dtype. A crash
//! or a refusal is a failure; results are compared with the contract's semantics under its NaN
//! policy (`precision.nan`, `propagate` by default): bit for bit in the written order where the
//! contract claims an order, and otherwise any result some order of each element's sums gives —
//! a finite value within the bound, or the NaN and ±Inf that an overflow on the way, or Inf −
//! Inf, makes in some order.

use super::Gate;
use super::constraints::Verdict;
use super::fill::{Fill, TAIL, UNIFORM_SPECIALS};
use super::run::{AT_LEVEL, Outcome, call_filled};
use super::sample::Sample;
use super::semantic::{Elements, Mode};
use super::shrink::{Check, Keep, Replay, sample_note};
use crate::diag::Code;
use crate::providers::Kernel;
use crate::semantics::float::NanPolicy;
use crate::semantics::{Approx, Kinds};
use fkc_provider::DType;

/// What one run with special values showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SpecialRun {
    /// The sample cannot be expressed as a call.
    Skipped,
    /// No semantics: only crashes and refusals were checked.
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
/// The smallest samples run with every element one special value, each in turn.
const UNIFORM_SAMPLES: usize = 2;
/// Samples besides the widest a selection runs with NaNs at the end of its operands.
const TAIL_SAMPLES: usize = 4;
/// The most one-variable moves tried while no window has held a NaN among numbers.
const MOVED_SAMPLES: usize = 48;
/// The most samples, smallest first, a selection's NaN-tail series runs besides its first
/// ones while a code path the contract names has not been taken in it.
const TAIL_PATH_SAMPLES: usize = 8;

/// How a series of special-value runs ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Every run held (or enough of them did).
    Went,
    /// There is no oracle to compare with: nothing more to run.
    NoOracle,
    /// A run failed and was reported.
    Failed,
}

impl Gate<'_> {
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
        // For a selection (a max or min), the largest samples first: it shows what it does with
        // a NaN only where the NaN meets other values (in a window of one it is NaN under every
        // policy). Sums show it anywhere, so they keep the drawn order (small samples first).
        let mut largest: Vec<&Sample> = admitted.to_vec();
        if self.selects() {
            largest.sort_by_key(|sample| std::cmp::Reverse(sample.elements()));
        }
        // Then, for a selection (a max) whose NaN policy no window has shown yet, more runs until
        // one window holds a NaN among numbers: the samples again with other NaN places, then
        // admitted moves of them (a window of one widened).
        let extra = largest
            .iter()
            .copied()
            .cycle()
            .take(largest.len().max(1) * 3);
        // A selection's largest samples may all miss a path only real windows take (a row's
        // last positions, lane by lane): its first samples as given run too — the grown ones
        // under drawn parameters, on the wide paths. (Any other kernel's largest samples are
        // its samples as given.)
        let widest = &largest[..SPECIAL_SAMPLES.min(largest.len())];
        let (given, limit) = if self.selects() {
            (SPECIAL_SAMPLES, widest.len() + SPECIAL_SAMPLES)
        } else {
            (0, SPECIAL_SAMPLES)
        };
        let given = (admitted.iter().copied())
            .filter(|s| !widest.iter().any(|w| std::ptr::eq(*w, *s)))
            .take(given);
        let first = widest.iter().copied().chain(given).chain(extra);
        let mut index = 0;
        let mut flow = self.special_runs(kernel, dtype, first, limit, &mut index, &mut ran);
        if flow == Flow::Went && self.selects() && self.nan_mixed == Some(0) {
            let moved = self.admitted_moves(&largest, dtype);
            flow = self.special_runs(kernel, dtype, moved.iter(), limit, &mut index, &mut ran);
        }
        let mut tails = 0;
        if flow == Flow::Went && self.selects() && dtype.is_float() {
            flow = self.nan_tail_series(kernel, dtype, (admitted, widest.first()), &mut tails);
        }
        let mut uniform = 0;
        if flow == Flow::Went {
            flow = self.uniform_special_runs(kernel, dtype, admitted, &mut uniform);
        }
        match flow {
            Flow::Went => {}
            Flow::NoOracle => {
                // The crash and refusal checks are what ran.
                self.not_checked(
                    "special values",
                    "no semantics to say what NaN, ±Inf, -0.0 and subnormals give",
                );
                return true;
            }
            Flow::Failed => return false,
        }
        let compared = if !dtype.is_float() {
            let overflow = match super::semantic::overflow_policy(self.raw) {
                crate::semantics::float::Overflow::Wrap => "wrap",
                crate::semantics::float::Overflow::Saturate => "saturate",
            };
            format!(
                "bit for bit as the semantics computed exactly in {dtype} under `overflow: {overflow}` (integer arithmetic is exact)"
            )
        } else if self.claims_order() {
            format!(
                "bit for bit as the semantics computed in {dtype} in the written order (the claimed order), NaN as NaN"
            )
        } else {
            let policy = match policy {
                NanPolicy::Propagate => "propagate",
                NanPolicy::Ignore => "ignore",
            };
            match self.nan_mixed {
                Some(0) => {
                    self.not_checked(
                        format!("`nan: {policy}`"),
                        "no window held a NaN among numbers, so the NaN policy was not exercised",
                    );
                    format!(
                        "as the semantics give them under `nan: {policy}` (no window held a NaN among numbers)"
                    )
                }
                Some(mixed) => format!(
                    "as the semantics give them under `nan: {policy}`, {mixed} windows holding a NaN among numbers"
                ),
                None => format!(
                    "as the semantics give them under `nan: {policy}`; {} of {} elements depended on the summation order (an overflow to ±Inf on the way, or Inf − Inf), where any result some order of the same terms gives was accepted",
                    self.order_dependent, self.special_elements
                ),
            }
        };
        // Every uniform series takes a signalling NaN; the mixed runs, every other one.
        let specials = if dtype.is_float() && uniform > 0 {
            "NaN (quiet and signalling), ±Inf, -0.0, subnormals and ±3/4 of the largest finite"
        } else if dtype.is_float() {
            "NaN, ±Inf, -0.0, subnormals and ±3/4 of the largest finite"
        } else {
            "the dtype's smallest and largest values, their neighbours, 0 and ±1"
        };
        let uniform = match uniform {
            0 => String::new(),
            n => format!(
                ", then the {n} smallest with every element one of them in turn ({} runs)",
                n * UNIFORM_SPECIALS as usize
            ),
        };
        let named = match self.unreached_by_special(dtype).as_slice() {
            _ if self.named_paths(dtype).is_empty() => String::new(),
            [] => ", taking every named code path on samples without a parameter of 1".to_owned(),
            untaken => format!(
                ", not taking `{}` on a sample without a parameter of 1",
                untaken.join("`, `")
            ),
        };
        let tails = match tails {
            0 => String::new(),
            n => format!(
                ", {n} runs on a rising ramp whose last {TAIL} elements alternate NaN and number (a window's largest numbers among NaNs where a kernel scans the end of a buffer apart){named}"
            ),
        };
        self.evidence.rows.push((
            format!("{dtype} special values"),
            format!(
                "{ran} admitted samples with {specials} in their operands{tails}{uniform} through `{}`: no crash, no refusal, values {compared}",
                kernel.symbol,
            ),
        ));
        true
    }

    /// Special values through `kernel` on each of `samples` in turn (numbered from `index`
    /// on), until one fails or, past `limit` runs, a window has held a NaN among numbers (or
    /// the kernel selects nothing).
    fn special_runs<'s>(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        samples: impl Iterator<Item = &'s Sample>,
        limit: usize,
        index: &mut usize,
        ran: &mut usize,
    ) -> Flow {
        for sample in samples {
            if *index >= limit && self.nan_mixed != Some(0) {
                break;
            }
            let seed = self.seed ^ ((*index as u64) << 16);
            *index += 1;
            match self.special_step(kernel, dtype, sample, Fill::Special(seed), Check::Special) {
                Ok(held) => *ran += usize::from(held),
                Err(flow) => return flow,
            }
        }
        Flow::Went
    }

    /// One run of `fill` on `sample` (`check` replays it): whether it held, or how the series
    /// ends (no oracle, or a failure reported).
    fn special_step(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        fill: Fill,
        check: Check,
    ) -> Result<bool, Flow> {
        let before = self.diagnostics.len();
        match self.special_filled(kernel, dtype, sample, fill) {
            SpecialRun::Skipped => Ok(false),
            SpecialRun::NoOracle => Err(Flow::NoOracle),
            SpecialRun::Held => Ok(true),
            SpecialRun::Failed => {
                let replay = Replay {
                    kernel,
                    dtype,
                    seed: fill.seed(),
                    check,
                    keep: Keep::Admitted,
                };
                self.shrink_report(before, &replay, sample);
                Err(Flow::Failed)
            }
        }
    }

    /// A selection's largest numbers among NaNs at the end of its operands, on the `widest`
    /// sample and the first as given of each other set of parameters (a window and a stride of
    /// their own; drawn rows are short enough to lie wholly in a buffer's last vector); then on
    /// the smallest others, those without a parameter of 1 first, up to [`TAIL_PATH_SAMPLES`],
    /// while a code path the contract names has not been taken in this series on a sample
    /// without a parameter of 1 (a lane-by-lane tail is taken only where a row ends near the
    /// end of its buffer, and shows nothing in a window of one). Counts the runs that held in
    /// `tails`.
    fn nan_tail_series(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        (admitted, widest): (&[&Sample], Option<&&Sample>),
        tails: &mut usize,
    ) -> Flow {
        let mut ends: Vec<&Sample> = widest.copied().into_iter().collect();
        for sample in admitted {
            if ends.len() > TAIL_SAMPLES {
                break;
            }
            if !ends.iter().any(|end| end.params == sample.params) {
                ends.push(sample);
            }
        }
        self.special_paths.clear();
        let mut flow = self.tail_special_runs(kernel, dtype, (&ends, 0), tails);
        let mut smallest: Vec<&Sample> = (admitted.iter().copied())
            .filter(|sample| !ends.contains(sample))
            .collect();
        smallest.sort_by_key(|sample| (!without_unit_parameters(sample), sample.elements()));
        for sample in smallest.into_iter().take(TAIL_PATH_SAMPLES) {
            if flow != Flow::Went || self.unreached_by_special(dtype).is_empty() {
                break;
            }
            ends.push(sample);
            let skip = 2 * (ends.len() - 1);
            flow = self.tail_special_runs(kernel, dtype, (&ends, skip), tails);
        }
        flow
    }

    /// Each of `samples` but the first `skip` runs (run already) with [`Fill::TailNaN`], NaN first
    /// and NaN second, counting the runs that held in `tails`.
    fn tail_special_runs(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        (samples, skip): (&[&Sample], usize),
        tails: &mut usize,
    ) -> Flow {
        // NaN first, then second (bit 16 of the seed): windows that all start at one parity (a
        // stride of 2) meet both.
        let runs = samples.iter().flat_map(|s| [(*s, 0u64), (*s, 1)]);
        for (at, (sample, parity)) in runs.enumerate().skip(skip) {
            let seed = self.seed ^ (parity << 16) ^ ((at as u64) << 17);
            let fill = Fill::TailNaN(seed);
            match self.special_step(kernel, dtype, sample, fill, Check::TailSpecial) {
                Ok(held) => *tails += usize::from(held),
                Err(flow) => return flow,
            }
        }
        Flow::Went
    }

    /// The [`UNIFORM_SAMPLES`] smallest non-empty samples with every operand element the same
    /// special value, each value in turn: a row of one element (a softmax over one), or a
    /// window of nothing but ±Inf or NaN, is where a shortcut forgets them. Counts the samples
    /// run in `uniform`.
    fn uniform_special_runs(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        samples: &[&Sample],
        uniform: &mut usize,
    ) -> Flow {
        let mut smallest: Vec<&Sample> = samples
            .iter()
            .copied()
            .filter(|s| s.elements() > 0)
            .collect();
        smallest.sort_by_key(|s| s.elements());
        smallest.dedup();
        for sample in smallest.into_iter().take(UNIFORM_SAMPLES) {
            let mut held = false;
            for index in 0..UNIFORM_SPECIALS {
                let fill = Fill::UniformSpecial(index);
                match self.special_step(kernel, dtype, sample, fill, Check::UniformSpecial) {
                    Ok(ran) => held |= ran,
                    Err(flow) => return flow,
                }
            }
            *uniform += usize::from(held);
        }
        Flow::Went
    }

    /// Up to [`MOVED_SAMPLES`] admitted moves of `samples`: a parameter moved (a window size),
    /// then a dim and a parameter together where the parameter move alone is not admitted (a
    /// window wider than a unit dim), then a dim.
    fn admitted_moves(&self, samples: &[&Sample], dtype: DType) -> Vec<Sample> {
        let admits = |s: &Sample| matches!(self.domain.verdict(s, dtype), Verdict::Admitted { .. });
        let mut moves = Vec::new();
        let mut dim_moves = Vec::new();
        for sample in samples {
            let (params, dims): (Vec<Sample>, Vec<Sample>) =
                sample.neighbours().partition(|m| m.inputs == sample.inputs);
            let (admitted, refused): (Vec<Sample>, Vec<Sample>) =
                params.into_iter().partition(|m| admits(m));
            moves.extend(admitted);
            for dim in &dims {
                moves.extend(refused.iter().map(|param| Sample {
                    inputs: dim.inputs.clone(),
                    params: param.params.clone(),
                }));
            }
            dim_moves.extend(dims);
        }
        moves
            .into_iter()
            .chain(dim_moves)
            .filter(|moved| admits(moved))
            .take(MOVED_SAMPLES)
            .collect()
    }

    pub(super) fn special_one(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
    ) -> SpecialRun {
        self.special_filled(kernel, dtype, sample, Fill::Special(seed))
    }

    /// Runs one admitted sample with the special values of `fill` (reporting a failure).
    pub(super) fn special_filled(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        fill: Fill,
    ) -> SpecialRun {
        let policy = self.nan_policy();
        let runs = self.levels.runs(false);
        let outcome = call_filled(kernel, &self.domain, sample, dtype, fill, runs);
        let accepted = match outcome {
            Outcome::Accepted(accepted) => accepted,
            Outcome::Skipped(_) => return SpecialRun::Skipped,
            Outcome::Crashed(crash) => {
                self.crashed(kernel, dtype, sample, &crash);
                return SpecialRun::Failed;
            }
            Outcome::Rejected(error) => {
                self.refuses_special_values(kernel, dtype, sample, &error);
                return SpecialRun::Failed;
            }
        };
        self.paths_reached(dtype, &accepted.paths);
        if without_unit_parameters(sample) {
            let taken = accepted.paths.iter().filter(|p| !p.contains(AT_LEVEL));
            self.special_paths.extend(taken.cloned());
        }
        let inputs = &accepted.inputs;
        let predicted = accepted.shapes();
        let mode = if self.claims_order() || !dtype.is_float() {
            Mode::Ordered
        } else {
            Mode::Bounded
        };
        let expected = match self.expected(kernel, dtype, sample, inputs, &predicted, mode) {
            Ok(Some(expected)) => expected,
            Ok(None) => return SpecialRun::NoOracle,
            Err(()) => return SpecialRun::Failed,
        };
        if expected.counts.compares > 0 {
            *self.nan_mixed.get_or_insert(0) += expected.counts.nan_meets as usize;
        }
        let mut bad = None;
        for (actual, want) in accepted.values.iter().zip(&expected.outputs) {
            bad = match want {
                Elements::Ordered(want) => first_difference(actual, want),
                Elements::Bounded(want) => {
                    self.special_elements += actual.len();
                    self.order_dependent += want.iter().filter(|w| w.kinds.ambiguous()).count();
                    outside(actual, want)
                }
            };
            if bad.is_some() {
                break;
            }
        }
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
                    "with special values, `{}` computes {got:e} at output element {at}; the semantics under `{policy_text}` give {want}",
                    kernel.symbol
                ),
            );
            let values = match fill {
                Fill::TailNaN(_) => "a rising ramp, NaN every other one of its last elements",
                _ => "with NaN, ±Inf, -0.0, subnormals and huge values",
            };
            diagnostic
                .notes
                .push(sample_note(&format!("{dtype}, {values}"), sample));
            diagnostic.help.push("state what the kernel does with a NaN operand (`precision.nan: propagate` or `ignore`), or fix the kernel".to_owned());
            return SpecialRun::Failed;
        }
        let agree = self
            .bits_hold(kernel, dtype, sample, &accepted)
            .and_then(|()| self.levels_agree(kernel, dtype, sample, &accepted, &predicted));
        match agree {
            Some(()) => SpecialRun::Held,
            None => SpecialRun::Failed,
        }
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

/// Whether no parameter of `sample` is 1 (a window of one, a unit stride: where a code path
/// runs but a bug in it may have nothing to show).
fn without_unit_parameters(sample: &Sample) -> bool {
    !(sample.params.iter()).any(|(_, param)| param.ints().contains(&1))
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
                format!("{want:e} (the semantics in the dtype, in the claimed order)"),
            )
        })
}

/// The first element outside what the semantics allow: any result some order of its sums
/// gives.
fn outside(actual: &[f64], want: &[Approx]) -> Option<(usize, f64, String)> {
    if actual.len() != want.len() {
        return Some((0, f64::NAN, format!("{} elements", want.len())));
    }
    let at = actual.iter().zip(want).position(|(g, w)| !w.admits(*g))?;
    Some((at, actual[at], describe(&want[at])))
}

/// The results an element allows, in words.
fn describe(want: &Approx) -> String {
    let mut allowed = Vec::new();
    if want.kinds.contains(Kinds::FINITE) {
        allowed.push(format!(
            "{:e} within its error bound ({:e})",
            want.value, want.error
        ));
    }
    for (kind, text) in [
        (Kinds::PLUS_INFINITY, "inf"),
        (Kinds::MINUS_INFINITY, "-inf"),
        (Kinds::NAN, "NaN"),
    ] {
        if want.kinds.contains(kind) {
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
