//! Reaching every code path: the drawn samples are small (dims 1 to 6), so a kernel's
//! vectorised, tiled and unrolled code is rarely reached by them. Grown samples are added,
//! each an admitted one with a dim raised: the first input's innermost extent swept until the
//! first output's innermost extent has taken [`SWEEP`] consecutive values past several vector
//! widths (so its last vector has every residue), and each other dim raised past the register
//! tiles ([`RAISED`]), the dims that constraints tie to it following. A raised sample is kept
//! when it reaches a set of code paths no kept sample reached; while a path the contract
//! names is still unreached, parameters are set far out in pairs ([`super::far`]), then
//! random growth goes on for at most [`TRIES`] candidates. One
//! sample with every dim raised together ([`TOGETHER`]) follows, kept whatever its paths:
//! its reductions are long where the drawn samples' may all be single terms; then the samples
//! stretched ([`super::stretch`]): wide in their last two dims, long along one variable.
//! Every other grown sample then gets its optional inputs present.

use std::collections::BTreeSet;

use super::constraints::Verdict;
use super::run::{Outcome, call};
use super::sample::{Rng, Sample};
use super::shrink::{Check, Keep, Replay};
use super::{Admitted, Gate};
use crate::providers::{Crash, Kernel};
use fkc_provider::DType;

/// Consecutive innermost output extents the sweep reaches, from [`SWEEP_FROM`]: every residue
/// of a 16-lane vector (AVX-512 f32) and so of every narrower one.
const SWEEP: i64 = 16;
/// The first output extent of the sweep: past three vectors of 16 lanes, so that four are
/// needed.
const SWEEP_FROM: i64 = 49;
/// The largest innermost input extent the sweep tries.
const MAX_SWEPT_EXTENT: i64 = 512;
/// The values a raised dim takes: past 4-wide register tiles, and past twice that.
const RAISED: [i64; 4] = [4, 5, 8, 9];
/// The values a raised parameter takes.
const RAISED_PARAM: [i64; 2] = [2, 4];
/// The value two dims raised together take.
const PAIRED: i64 = 9;
/// The values every dim raised together tries, in turn.
const TOGETHER: [i64; 3] = [4, 3, 2];
/// The smallest samples the sweep starts from, in turn, until every extent is reached.
pub(super) const SWEEP_BASES: usize = 4;
/// The elements (operands and outputs) a grown sample may have.
const GROWN_ELEMENTS: i64 = 1 << 15;
/// The elements past which a grown sample is kept only for a path no kept sample took.
pub(super) const COMBINED_ELEMENTS: i64 = 1 << 13;
/// Grown samples given the parameters of drawn ones.
const MIXED: usize = 4;
/// The elements a grown sample given a drawn one's parameters is brought down to, where its
/// outer dims allow.
const MIXED_ELEMENTS: i64 = 1 << 11;
/// Random growth attempts while a named path is unreached.
const TRIES: usize = 160;

impl Gate<'_> {
    /// Grown admitted samples for `dtype` (see the module documentation), in the order found.
    pub(super) fn grown(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        admitted: &Admitted,
    ) -> Admitted {
        let mut smallest: Vec<&Sample> = admitted.iter().map(|(s, _)| s).collect();
        smallest.sort_by_key(|s| s.elements());
        // Each of the smallest samples with every parameter 1 (unit strides and dilations, so
        // that one output row is one run of columns) first, where that is still a sample.
        // The very first is the smallest with every dim lowered as far as it goes, so that dims
        // raised on it (in pairs too) keep grown samples small.
        let mut bases: Vec<Sample> = Vec::new();
        if let Some(first) = smallest.first() {
            let lowered = self.lowered(first, dtype);
            let plain = self.plain(&lowered, dtype).unwrap_or(lowered);
            bases.push(self.lowered(&plain, dtype));
        }
        for sample in smallest.iter().take(SWEEP_BASES) {
            if let Some(plain) = self.plain(sample, dtype)
                && !bases.contains(&plain)
            {
                bases.push(plain);
            }
        }
        bases.extend(smallest.iter().map(|s| (*s).clone()));
        let mut grown: Admitted = Vec::new();
        let mut seen: BTreeSet<Vec<String>> = BTreeSet::new();
        // The sweep: the first output's innermost extent through every value of the target
        // range (from the smallest samples on, as strides let each reach some of them), every
        // such sample kept (its residue is what it is for).
        let mut wanted: BTreeSet<i64> = (SWEEP_FROM..SWEEP_FROM + SWEEP).collect();
        for base in bases.iter().take(SWEEP_BASES) {
            for extent in 1..=MAX_SWEPT_EXTENT {
                if wanted.is_empty() {
                    break;
                }
                let Some(candidate) = self.innermost(base, extent, dtype) else {
                    break;
                };
                let Verdict::Admitted { outputs } = self.domain.verdict(&candidate, dtype) else {
                    continue;
                };
                let innermost = outputs.first().and_then(|o| o.last()).copied();
                if !innermost.is_some_and(|o| wanted.remove(&o)) {
                    continue;
                }
                if let Some((outputs, paths)) = self.try_grown(kernel, dtype, &candidate, admitted)
                {
                    seen.insert(paths);
                    grown.push((candidate, outputs));
                }
            }
        }
        // Dims raised on the smallest sample and on the first sample of the sweep from each
        // base, one at a time and in pairs: kept for a new set of paths.
        let mut wides: Vec<Sample> = Vec::new();
        for (sample, _) in &grown {
            if !wides.iter().any(|w| same_but_innermost(w, sample)) {
                wides.push(sample.clone());
            }
        }
        for wide in bases.first().into_iter().chain(&wides) {
            let dims = dim_count(wide);
            for variable in 0..dims {
                for value in RAISED {
                    let candidate = self.domain.tied(&raise(wide, variable, value), dtype);
                    self.keep_if_new(kernel, dtype, candidate, admitted, &mut grown, &mut seen);
                }
                for other in variable + 1..dims {
                    let pair = raise(&raise(wide, variable, PAIRED), other, PAIRED);
                    let candidate = self.domain.tied(&pair, dtype);
                    self.keep_if_new(kernel, dtype, candidate, admitted, &mut grown, &mut seen);
                }
            }
        }
        // Each parameter value raised on the first bases and on the first wide sample (a
        // stride, a thread count): kept for a new set of paths.
        for wide in bases.iter().take(SWEEP_BASES).chain(wides.first()) {
            for at in 0..param_count(wide) {
                for value in RAISED_PARAM {
                    let candidate = self.domain.tied(&with_param(wide, at, value), dtype);
                    self.keep_if_new(kernel, dtype, candidate, admitted, &mut grown, &mut seen);
                }
            }
        }
        self.far_params(kernel, dtype, (&bases, admitted), &mut grown, &mut seen);
        // Random growth while a named path is unreached: from a wide plain sample half of the
        // time (else any sample), one to three dims raised, a parameter set to 2..8 a third of
        // the time, and half of the time the innermost extent widened and a parameter brought
        // to 1 (a unit stride or dilation).
        let mut rng = Rng::new(self.seed ^ 0x00c0_ffee);
        for _ in 0..TRIES {
            if self.unreached(dtype).is_empty() {
                break;
            }
            let from = if !wides.is_empty() && rng.range(0, 1) == 1 {
                wides.get(pick(&mut rng, wides.len())).cloned()
            } else {
                let at = pick(&mut rng, admitted.len() + grown.len());
                admitted
                    .get(at)
                    .or_else(|| grown.get(at - admitted.len()))
                    .map(|(s, _)| s.clone())
            };
            let Some(mut candidate) = from else {
                break;
            };
            for _ in 0..rng.range(1, 3) {
                let variable = pick(&mut rng, dim_count(&candidate));
                candidate = raise(&candidate, variable, rng.range(2, 12));
            }
            if rng.range(0, 2) == 0 {
                let value = rng.range(2, 8);
                set_param(&mut candidate, &mut rng, value);
            }
            if rng.range(0, 1) == 1 {
                set_param(&mut candidate, &mut rng, 1);
                let extent = rng.range(17, 200);
                if let Some(wider) = self.innermost(&candidate, extent, dtype) {
                    candidate = wider;
                }
            }
            let candidate = self.domain.tied(&candidate, dtype);
            self.keep_if_new(kernel, dtype, candidate, admitted, &mut grown, &mut seen);
        }
        // Last, one sample with every dim raised together, whatever its paths: its reductions
        // are long (every channel, every tap of a window) where the drawn samples' may all be
        // single terms, so the values are compared on real sums.
        if let Some(base) = bases.first()
            && let Some(together) = self.raised_together(base, dtype)
            && !grown.iter().any(|(s, _)| *s == together)
            && let Some((outputs, _)) = self.try_grown(kernel, dtype, &together, admitted)
        {
            grown.push((together, outputs));
        }
        self.stretched(kernel, dtype, (&bases, admitted), &mut grown);
        self.optional_inputs_present(&mut grown, dtype);
        let mixed = self.with_drawn_params(&grown, admitted, dtype);
        grown.splice(0..0, mixed);
        grown
    }

    /// The first grown samples with the parameters (and at least the dims) of drawn samples,
    /// where that is still a sample: grown samples mostly have unit parameters (a window of one, no stride), under
    /// which ties and cancellations cannot happen; these come first, so the checks that take
    /// a few grown samples (order, special values, designed operands) run wide paths under
    /// real parameters.
    fn with_drawn_params(&self, grown: &Admitted, drawn: &Admitted, dtype: DType) -> Admitted {
        let mut mixed: Admitted = Vec::new();
        for ((sample, _), (drawn, _)) in grown.iter().zip(drawn.iter().rev()) {
            if mixed.len() >= MIXED {
                break;
            }
            // The drawn sample's parameters, and each dim at least the drawn one (a window
            // fits where the grown sample had a unit dim).
            let mut candidate = sample.clone();
            candidate.params.clone_from(&drawn.params);
            for ((_, dims, _), (_, theirs, _)) in candidate.inputs.iter_mut().zip(&drawn.inputs) {
                for (dim, their) in dims.iter_mut().zip(theirs) {
                    *dim = (*dim).max(*their);
                }
            }
            let candidate = self.domain.tied(&candidate, dtype);
            if let Some((candidate, outputs)) = self.lightened(candidate, sample, dtype)
                && !grown.iter().chain(&mixed).any(|(s, _)| *s == candidate)
            {
                mixed.push((candidate, outputs));
            }
        }
        mixed
    }

    /// `candidate`, when admitted, with its outer dims brought back to `floor`'s (every
    /// input's first axis, then every second, …; each where that is still a sample) until it
    /// has at most [`MIXED_ELEMENTS`] elements: a drawn sample's batch and channel counts
    /// multiply the work of every check that runs it without reaching another path.
    fn lightened(
        &self,
        candidate: Sample,
        floor: &Sample,
        dtype: DType,
    ) -> Option<(Sample, Vec<Vec<i64>>)> {
        let mut outputs = self.small_enough(&candidate, dtype)?;
        let mut light = candidate;
        let axes = light.inputs.iter().map(|(_, dims, _)| dims.len()).max();
        for axis in 0..axes.unwrap_or(0) {
            for input in 0..light.inputs.len() {
                if weight(&light, &outputs) <= MIXED_ELEMENTS {
                    return Some((light, outputs));
                }
                let lowest = floor.inputs.get(input).and_then(|(_, d, _)| d.get(axis));
                let mut lower = light.clone();
                match (lower.inputs.get_mut(input), lowest) {
                    (Some((_, dims, true)), Some(&lowest)) => match dims.get_mut(axis) {
                        Some(dim) if *dim > lowest => *dim = lowest,
                        _ => continue,
                    },
                    _ => continue,
                }
                let lower = self.domain.tied(&lower, dtype);
                if let Some(now) = self.small_enough(&lower, dtype) {
                    (light, outputs) = (lower, now);
                }
            }
        }
        Some((light, outputs))
    }

    /// Every other grown sample with its optional inputs present (where that is still a
    /// sample): the wide code paths run with them too (a bias added in a register tile).
    fn optional_inputs_present(&self, grown: &mut Admitted, dtype: DType) {
        for (sample, outputs) in grown.iter_mut().skip(1).step_by(2) {
            if let (present, Some(now)) = self.optionals_present(sample.clone(), dtype) {
                (*sample, *outputs) = (present, now);
            }
        }
    }

    /// `sample` with each optional input made present in turn where that is still a sample,
    /// with the outputs of the last such step (`None`: no step was).
    pub(super) fn optionals_present(
        &self,
        mut sample: Sample,
        dtype: DType,
    ) -> (Sample, Option<Vec<Vec<i64>>>) {
        let mut outputs = None;
        for name in self.optional_inputs() {
            let candidate = self.domain.with_present(&sample, name, dtype);
            if let Verdict::Admitted { outputs: now } = self.domain.verdict(&candidate, dtype) {
                (sample, outputs) = (candidate, Some(now));
            }
        }
        (sample, outputs)
    }

    /// `sample` with every parameter value 1 — or, where that is not a sample, with one
    /// parameter 0 besides (an `output_padding` below a unit stride), else two (a padding too,
    /// which a unit kernel leaves no room for) — if some such is one.
    fn plain(&self, sample: &Sample, dtype: DType) -> Option<Sample> {
        let ones = plain(sample);
        let admits = |s: &Sample| matches!(self.domain.verdict(s, dtype), Verdict::Admitted { .. });
        let count = ones.params.len();
        let singles = (0..count).map(|at| (at, at));
        let pairs = (0..count).flat_map(|a| (a + 1..count).map(move |b| (a, b)));
        std::iter::once(None)
            .chain(singles.chain(pairs).map(Some))
            .find_map(|zeroed_at| {
                let mut zeroed = ones.clone();
                for at in zeroed_at.into_iter().flat_map(|(a, b)| [a, b]) {
                    if let Some((_, param)) = zeroed.params.get_mut(at) {
                        set_all(param, 0);
                    }
                }
                let tied = self.domain.tied(&zeroed, dtype);
                admits(&tied).then_some(tied)
            })
    }

    /// `sample` with each dim in turn lowered to 1 (the dims tied to it following) where that
    /// is still a sample.
    pub(super) fn lowered(&self, sample: &Sample, dtype: DType) -> Sample {
        let mut lowest = sample.clone();
        for variable in 0..dim_count(sample) {
            let candidate = self.domain.tied(&raise(&lowest, variable, 1), dtype);
            if matches!(
                self.domain.verdict(&candidate, dtype),
                Verdict::Admitted { .. }
            ) {
                lowest = candidate;
            }
        }
        lowest
    }

    /// `sample` with every present dim at least [`TOGETHER`]'s first value that gives a sample
    /// small enough (the dims tied to them following).
    fn raised_together(&self, sample: &Sample, dtype: DType) -> Option<Sample> {
        TOGETHER.iter().find_map(|&value| {
            let candidate = self.domain.tied(&every_dim_at_least(sample, value), dtype);
            self.small_enough(&candidate, dtype).map(|_| candidate)
        })
    }

    /// The outputs of `candidate` when it is admitted with at most [`GROWN_ELEMENTS`] elements.
    pub(super) fn small_enough(&self, candidate: &Sample, dtype: DType) -> Option<Vec<Vec<i64>>> {
        match self.domain.verdict(candidate, dtype) {
            Verdict::Admitted { outputs } if weight(candidate, &outputs) <= GROWN_ELEMENTS => {
                Some(outputs)
            }
            _ => None,
        }
    }

    /// `sample` with the first input's innermost extent set to `extent` (and the dims tied to
    /// it following), if that is still a sample.
    fn innermost(&self, sample: &Sample, extent: i64, dtype: DType) -> Option<Sample> {
        let mut candidate = sample.clone();
        let (_, dims, present) = candidate.inputs.first_mut()?;
        if !*present {
            return None;
        }
        *dims.last_mut()? = extent;
        Some(self.domain.tied(&candidate, dtype))
    }

    /// Keeps `candidate` when it is admitted, new, small enough and reaches a set of paths no
    /// kept sample reached — past [`COMBINED_ELEMENTS`], only when one of its paths is new:
    /// a heavy sample whose paths lighter ones already took, each, adds a combination of them
    /// at the price of many light ones.
    pub(super) fn keep_if_new(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        candidate: Sample,
        admitted: &Admitted,
        grown: &mut Admitted,
        seen: &mut BTreeSet<Vec<String>>,
    ) {
        if grown.iter().any(|(s, _)| *s == candidate) {
            return;
        }
        let Some((outputs, paths)) = self.try_grown(kernel, dtype, &candidate, admitted) else {
            return;
        };
        if new_path_set(&candidate, &outputs, paths, seen) {
            grown.push((candidate, outputs));
        }
    }

    /// Runs an admitted, new, small enough `candidate` once: its predicted outputs and the
    /// paths it took (`None` when it is not such a sample or the kernel did not accept it; the
    /// admitted check then finds nothing new in it).
    pub(super) fn try_grown(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        candidate: &Sample,
        admitted: &Admitted,
    ) -> Option<(Vec<Vec<i64>>, Vec<String>)> {
        if self.growth_stopped || admitted.iter().any(|(s, _)| s == candidate) {
            return None;
        }
        let outputs = self.small_enough(candidate, dtype)?;
        let runs = self.levels.main_only();
        match call(kernel, &self.domain, candidate, dtype, self.seed, runs) {
            Outcome::Accepted(accepted) => {
                self.paths_reached(dtype, &accepted.paths);
                Some((outputs, accepted.paths))
            }
            // A hang is reported here (its entry point is not called again): growth stops.
            Outcome::Crashed(crash @ (Crash::TimedOut(_) | Crash::Hung(_))) => {
                let before = self.diagnostics.len();
                self.crashed(kernel, dtype, candidate, &crash);
                let replay = Replay {
                    kernel,
                    dtype,
                    seed: self.seed,
                    check: Check::Domain,
                    keep: Keep::Admitted,
                };
                self.shrink_report(before, &replay, candidate);
                self.growth_stopped = true;
                None
            }
            // A refusal or another crash of an admitted sample: the admitted check reports it.
            Outcome::Rejected(_) | Outcome::Crashed(_) => Some((outputs, Vec::new())),
            Outcome::Skipped(_) => None,
        }
    }
}

/// A random index below `n` (0 when `n` is 0).
fn pick(rng: &mut Rng, n: usize) -> usize {
    let high = i64::try_from(n)
        .unwrap_or(i64::MAX)
        .saturating_sub(1)
        .max(0);
    usize::try_from(rng.range(0, high)).unwrap_or(0)
}

/// The elements of a sample's present operands and of its outputs.
/// Records a grown sample's `paths` and says whether they are a set not seen before — for a
/// heavy sample, only when one of them is new on its own.
pub(super) fn new_path_set(
    sample: &Sample,
    outputs: &[Vec<i64>],
    paths: Vec<String>,
    seen: &mut BTreeSet<Vec<String>>,
) -> bool {
    let heavy = weight(sample, outputs) > COMBINED_ELEMENTS;
    if heavy && paths.iter().all(|p| seen.iter().any(|set| set.contains(p))) {
        return false;
    }
    seen.insert(paths)
}

pub(super) fn weight(sample: &Sample, outputs: &[Vec<i64>]) -> i64 {
    let out: i64 = outputs
        .iter()
        .map(|dims| dims.iter().product::<i64>())
        .sum();
    sample.elements().saturating_add(out)
}

/// `sample` with every present dim at least `value`.
fn every_dim_at_least(sample: &Sample, value: i64) -> Sample {
    let mut raised = sample.clone();
    for (_, dims, present) in &mut raised.inputs {
        if *present {
            dims.iter_mut().for_each(|d| *d = (*d).max(value));
        }
    }
    raised
}

/// The dims of a sample's present inputs, in all.
pub(super) fn dim_count(sample: &Sample) -> usize {
    sample
        .inputs
        .iter()
        .filter(|(_, _, present)| *present)
        .map(|(_, dims, _)| dims.len())
        .sum()
}

/// Whether two samples differ at most in the first input's innermost extent.
fn same_but_innermost(a: &Sample, b: &Sample) -> bool {
    let mut b = b.clone();
    if let (Some((_, mine, _)), Some((_, theirs, _))) = (a.inputs.first(), b.inputs.first_mut())
        && let (Some(m), Some(t)) = (mine.last(), theirs.last_mut())
    {
        *t = *m;
    }
    *a == b
}

/// `sample` with every parameter value 1.
fn plain(sample: &Sample) -> Sample {
    let mut plain = sample.clone();
    for (_, param) in &mut plain.params {
        set_all(param, 1);
    }
    plain
}

/// Sets every value of `param` to `value`.
fn set_all(param: &mut super::sample::Param, value: i64) {
    param.ints_mut().iter_mut().for_each(|v| *v = value);
}

/// Every parameter value of `sample` (each element of a tuple), in order.
fn param_values(sample: &mut Sample) -> Vec<&mut i64> {
    sample
        .params
        .iter_mut()
        .flat_map(|(_, param)| param.ints_mut())
        .collect()
}

/// The parameter values of `sample`, in all.
pub(super) fn param_count(sample: &Sample) -> usize {
    param_values(&mut sample.clone()).len()
}

/// `sample` with its `at`-th parameter value set to `value`.
pub(super) fn with_param(sample: &Sample, at: usize, value: i64) -> Sample {
    let mut changed = sample.clone();
    if let Some(slot) = param_values(&mut changed).get_mut(at) {
        **slot = value;
    }
    changed
}

/// Sets one random parameter value of `sample` to `value`.
fn set_param(sample: &mut Sample, rng: &mut Rng, value: i64) {
    let at = pick(rng, param_count(sample));
    *sample = with_param(sample, at, value);
}

/// `sample` with its `variable`-th present dim set to `value`.
pub(super) fn raise(sample: &Sample, variable: usize, value: i64) -> Sample {
    let mut raised = sample.clone();
    if let Some(slot) = raised
        .inputs
        .iter_mut()
        .filter(|(_, _, present)| *present)
        .flat_map(|(_, dims, _)| dims.iter_mut())
        .nth(variable)
    {
        *slot = value;
    }
    raised
}

#[cfg(test)]
#[path = "reach_tests.rs"]
mod tests;
