//! Samples at the edges of the box, where random draws rarely go: one variable of an admitted
//! sample moved to its smallest value, one dim made 0 (an empty operand), each input made a
//! tensor of one element, two inputs of one rank crossed (`[1, n]` and `[n, 1]`), each
//! permutation parameter made one of the structured permutations
//! kernels keep fast paths for, every parameter raised at once with every optional input
//! present (a stride, a dilation, groups and an output padding together, where a kernel's
//! handling of one may forget another), and each `rank: any` input at the ranks past the
//! random draws' (code a kernel keeps for high ranks), and each float parameter at 1/6 in its
//! own type (integer sums times it land on halves only after that type's rounding); and each
//! unsigned integer field at 0 where an admitted sample can have it.

use super::constraints::{self, Verdict};
use super::reach::with_param;
use super::sample::{Param, Rng, Sample};
use super::{Admitted, Gate};
use crate::expr::Real;
use fkc_provider::{DType, ParamKind};

/// The value each float parameter is also tried at: an integer times 1/6 lands on a half (3 ·
/// 1/6 = 0.5) only after rounding to the parameter's type — 3 · f32(1/6) is 0.5 in `f32` and
/// just above it in `f64` — so a kernel computing in a wider type than the contract says
/// rounds about one output in twelve the other way.
const TIE_MAKER: f64 = 1.0 / 6.0;

/// Mixed into the gate's seed for the draws of samples with an integer field at 0.
const ZERO_FIELD_SEED: u64 = 0x0a11_2a4c_5e4d_0007;

/// Mixed into the gate's seed for the high-rank samples' own draws.
const HIGH_RANK_SEED: u64 = 0x0a11_2a4c_5e4d_0006;

impl Gate<'_> {
    /// Adds admitted samples at the edge of the box: one variable of an admitted sample moved
    /// to its smallest value (a unit dimension, a parameter of 0 or 1), where a loosened
    /// constraint lets through what the kernel refuses. Random draws reach these rarely. Every
    /// edge of the first sample is added whatever the budget (so a small `samples` still
    /// tries each variable at its edge); up to `most` more come from the second.
    pub(super) fn add_edge_samples(&self, dtype: DType, admitted: &mut Admitted, most: usize) {
        const BASES: usize = 2;
        let bases: Vec<Sample> = admitted
            .iter()
            .take(BASES)
            .map(|(s, _)| s.clone())
            .collect();
        let mut added = 0;
        for (index, base) in bases.iter().enumerate() {
            for candidate in base.neighbours().filter(|n| n.moved_to_edge(base)) {
                if index > 0 && added >= most {
                    return;
                }
                if let Verdict::Admitted { outputs } = self.domain.verdict(&candidate, dtype)
                    && !admitted.iter().any(|(s, _)| *s == candidate)
                {
                    admitted.push((candidate, outputs));
                    added += 1;
                }
            }
        }
    }

    /// Adds, for each unsigned integer field (each element of a tuple) that no admitted sample
    /// has at 0, the first admitted sample with it moved to 0 — from the admitted samples, then
    /// from fresh draws with it forced there. Moving one variable of the first samples (see
    /// [`Gate::add_edge_samples`]) often breaks another constraint on the way (a padding bounded
    /// by the window), so a constraint that forgets to rule 0 out (`kernel_size > 0` dropped)
    /// would be met only at some seeds.
    pub(super) fn cover_zero_fields(&self, dtype: DType, admitted: &mut Admitted) {
        const FRESH: usize = 32;
        let mut rng = Rng::new(self.seed ^ ZERO_FIELD_SEED);
        let fields: Vec<(&str, usize)> = (self.domain.drawn_params())
            .filter_map(|(name, kind)| match kind {
                ParamKind::Usize => Some((name, 1)),
                ParamKind::UsizePair => Some((name, 2)),
                ParamKind::UsizeArray4 => Some((name, 4)),
                _ => None,
            })
            .collect();
        for (name, width) in fields {
            for element in 0..width {
                let zeroed = |mut sample: Sample| {
                    let (_, param) = sample.params.iter_mut().find(|(n, _)| n == name)?;
                    *param.ints_mut().get_mut(element)? = 0;
                    Some(sample)
                };
                let at_zero = |s: &Sample| {
                    s.param(name)
                        .is_some_and(|p| p.ints().get(element) == Some(&0))
                };
                if admitted.iter().any(|(s, _)| at_zero(s)) {
                    continue;
                }
                let mut moved = admitted.iter().map(|(s, _)| zeroed(s.clone()));
                let found = self
                    .first_admitted(dtype, admitted.len(), || moved.next().flatten())
                    .or_else(|| {
                        self.first_admitted(dtype, FRESH, || zeroed(self.domain.draw(&mut rng)))
                    });
                admitted.extend(found);
            }
        }
    }

    /// Adds the samples no random draw is likely to give, whatever the budget, last (the worked
    /// example is chosen among the others: these are not what a reader should see first):
    /// [`Gate::add_unit_inputs`] and [`Gate::add_structured_permutations`]. Returns how many.
    pub(super) fn add_designed_edges(&self, dtype: DType, admitted: &mut Admitted) -> usize {
        let before = admitted.len();
        self.add_unit_inputs(dtype, admitted);
        self.add_crossed_inputs(dtype, admitted);
        self.add_structured_permutations(dtype, admitted);
        self.add_everything_on(dtype, admitted);
        self.add_high_ranks(dtype, admitted);
        self.add_tie_making_floats(dtype, admitted);
        admitted.len() - before
    }

    /// Adds, for each input of `rank: any`, an admitted sample at each rank past the random
    /// draws' (5 to 8), its dims small, found among fresh draws at that rank (with a generator
    /// of its own: the other samples stay as they were), and the same under each structured
    /// permutation where it has a permutation parameter.
    pub(super) fn add_high_ranks(&self, dtype: DType, admitted: &mut Admitted) {
        const SEARCH: usize = 400;
        let mut rng = Rng::new(self.seed ^ HIGH_RANK_SEED);
        for input in &self.raw.inputs {
            let Some(rank) = input.rank.as_ref().map(|r| r.value) else {
                continue;
            };
            let name = input.name.value.as_str();
            for rank in rank.designed() {
                let Some((found, outputs)) = self.first_admitted(dtype, SEARCH, || {
                    Some(self.domain.draw_at_rank(&mut rng, name, rank))
                }) else {
                    continue;
                };
                let variants = self.structured_variants(&found);
                admitted.push((found, outputs));
                // and under each structured permutation: the drawn one may be an involution
                // (its own inverse), which a generic high-rank path reading it inverted meets
                for variant in variants {
                    if let Verdict::Admitted { outputs } = self.domain.verdict(&variant, dtype)
                        && !admitted.iter().any(|(s, _)| *s == variant)
                    {
                        admitted.push((variant, outputs));
                    }
                }
            }
        }
    }

    /// Adds, for each float parameter, the two admitted samples of the most output elements
    /// with that parameter at ±[`TIE_MAKER`] in its own type, where that is still a sample:
    /// four consecutive samples, so that whatever the seed two of them are called with small
    /// integers (sums that a scale brings into range rather than past it; see
    /// [`super::run::operands`]).
    fn add_tie_making_floats(&self, dtype: DType, admitted: &mut Admitted) {
        let elements = |outputs: &Vec<Vec<i64>>| -> i64 {
            (outputs.iter().flatten()).fold(1i64, |n, d| n.saturating_mul(*d))
        };
        let mut largest: Vec<&(Sample, Vec<Vec<i64>>)> = admitted.iter().collect();
        largest.sort_by_key(|(_, outputs)| std::cmp::Reverse(elements(outputs)));
        let bases: Vec<Sample> = largest.iter().take(2).map(|(s, _)| s.clone()).collect();
        for (name, kind) in self.domain.drawn_params() {
            let value = match kind {
                ParamKind::F32 => f64::from(TIE_MAKER as f32),
                ParamKind::F64 => TIE_MAKER,
                _ => continue,
            };
            for base in &bases {
                for value in [value, -value] {
                    let mut tied = base.clone();
                    match tied.params.iter_mut().find(|(n, _)| n == name) {
                        Some((_, param)) => *param = Param::Float(Real(value)),
                        None => continue,
                    }
                    if let Verdict::Admitted { outputs } = self.domain.verdict(&tied, dtype)
                        && !admitted.iter().any(|(s, _)| *s == tied)
                    {
                        admitted.push((tied, outputs));
                    }
                }
            }
        }
    }

    /// Adds the first sample with every optional input present, every flag set and, one after
    /// another, each integer parameter value raised to 2 where that is still a sample — if
    /// need be with the first input's dims raised to [`EVERYTHING_ON_DIMS`] (room for a window,
    /// a dilation and a stride together); a list of axes is kept.
    pub(super) fn add_everything_on(&self, dtype: DType, admitted: &mut Admitted) {
        let Some((first, _)) = admitted.first() else {
            return;
        };
        let admits = |s: &Sample| matches!(self.domain.verdict(s, dtype), Verdict::Admitted { .. });
        let mut on = first.clone();
        for name in self.optional_inputs() {
            let present = self.domain.with_present(&on, name, dtype);
            if admits(&present) {
                on = present;
            }
        }
        for at in 0..on.params.len() {
            let mut flagged = on.clone();
            if let Some((_, Param::Bool(flag))) = flagged.params.get_mut(at) {
                *flag = true;
                if admits(&flagged) {
                    on = flagged;
                }
            }
        }
        let mut at = 0;
        for (name, param) in &first.params {
            let values = param.ints().len();
            if self.domain.lists_axes(name) {
                at += values;
                continue;
            }
            for _ in 0..values {
                let raised = with_param(&on, at, 2);
                let roomier = with_first_input_at_least(&raised, EVERYTHING_ON_DIMS);
                if let Some(next) = [raised, roomier]
                    .into_iter()
                    .map(|s| self.domain.tied(&s, dtype))
                    .find(admits)
                {
                    on = next;
                }
                at += 1;
            }
        }
        if let Verdict::Admitted { outputs } = self.domain.verdict(&on, dtype)
            && !admitted.iter().any(|(s, _)| *s == on)
        {
            admitted.push((on, outputs));
        }
    }

    /// The first sample with one dim of one input made 0, for each dim where that is still a
    /// sample (dims the contract ties to it following): an empty input, and an empty output or
    /// one made of padding alone, where a kernel may skip what it checks or divide by zero.
    /// Checked apart from the drawn samples ([`Gate::empty_operands`]).
    pub(super) fn empty_dim_samples(&self, dtype: DType, admitted: &Admitted) -> Admitted {
        let mut empties: Admitted = Vec::new();
        let Some((first, _)) = admitted.first() else {
            return empties;
        };
        for (input, (_, dims, present)) in first.inputs.iter().enumerate() {
            for axis in (0..dims.len()).filter(|_| *present) {
                let mut empty = first.clone();
                match empty
                    .inputs
                    .get_mut(input)
                    .and_then(|(_, d, _)| d.get_mut(axis))
                {
                    Some(dim) if *dim != 0 => *dim = 0,
                    _ => continue,
                }
                // dims tied to others may bring it back (a bias made 0 follows its weight again)
                let empty = self.domain.tied(&empty, dtype);
                let still_empty =
                    (empty.inputs.iter()).any(|(_, d, present)| *present && d.contains(&0));
                if still_empty
                    && let Verdict::Admitted { outputs } = self.domain.verdict(&empty, dtype)
                    && !empties.iter().any(|(s, _)| *s == empty)
                {
                    empties.push((empty, outputs));
                }
            }
        }
        empties
    }

    /// Adds, for each input, an admitted sample with every dim of that input 1 (a tensor of one
    /// element, broadcast or gathered from), taken from the first sample where that input's
    /// rank is the highest of all inputs' (so that a unit input of more axes than the others,
    /// which broadcasting must keep in the output's shape, is tried), else from the first one.
    fn add_unit_inputs(&self, dtype: DType, admitted: &mut Admitted) {
        let Some((first, _)) = admitted.first() else {
            return;
        };
        let first = first.clone();
        for input in 0..first.inputs.len() {
            let highest = |s: &Sample| {
                let rank = |i: usize| {
                    s.inputs
                        .get(i)
                        .filter(|(_, _, p)| *p)
                        .map(|(_, d, _)| d.len())
                };
                let mine = rank(input).unwrap_or(0);
                mine > 0
                    && (0..s.inputs.len()).all(|i| i == input || rank(i).is_none_or(|r| r < mine))
            };
            let base = admitted
                .iter()
                .map(|(s, _)| s)
                .find(|s| highest(s))
                .unwrap_or(&first)
                .clone();
            let mut unit = base;
            match unit.inputs.get_mut(input) {
                Some((_, dims, true)) if dims.iter().any(|d| *d != 1) => dims.fill(1),
                _ => continue,
            }
            let unit = self.domain.tied(&unit, dtype);
            if let Verdict::Admitted { outputs } = self.domain.verdict(&unit, dtype)
                && !admitted.iter().any(|(s, _)| *s == unit)
            {
                admitted.push((unit, outputs));
            }
        }
    }

    /// `base` with every unit axis of every input made 2 in turn where that is still a sample
    /// (the dims tied to it following): a permutation of unit axes moves no element, and a
    /// group of one channel cannot be read out of order.
    pub(super) fn unit_axes_doubled(&self, mut base: Sample, dtype: DType) -> Sample {
        for input in 0..base.inputs.len() {
            let rank = base.inputs.get(input).map_or(0, |(_, d, _)| d.len());
            for axis in 0..rank {
                let mut longer = base.clone();
                match longer
                    .inputs
                    .get_mut(input)
                    .and_then(|(_, d, _)| d.get_mut(axis))
                {
                    Some(dim) if *dim == 1 => *dim = 2,
                    _ => continue,
                }
                let longer = self.domain.tied(&longer, dtype);
                if matches!(
                    self.domain.verdict(&longer, dtype),
                    Verdict::Admitted { .. }
                ) {
                    base = longer;
                }
            }
        }
        base
    }

    /// Adds the first sample with two present inputs made `[1, …, 1, n]` and `[n, 1, …, 1]` (of
    /// the first one's rank where that is 2 or more, else of rank 2; `n` at least 2), where that
    /// is still a sample: operands of as many elements whose shapes differ, which broadcast to
    /// `[n, …, n]` (a kernel that compares element counts where it should compare shapes is
    /// caught); and the same with either one made `[n, …, n]` instead: a full operand and one
    /// of as many elements as its last axis, along its first (a fast path for a row that takes
    /// any operand of a row's elements for one is caught).
    fn add_crossed_inputs(&self, dtype: DType, admitted: &mut Admitted) {
        let present = |s: &Sample| -> Vec<usize> {
            (s.inputs.iter().enumerate())
                .filter(|(_, (_, _, present))| *present)
                .map(|(at, _)| at)
                .collect()
        };
        let Some((base, first, second)) = admitted.iter().find_map(|(s, _)| {
            let inputs = present(s);
            Some((s.clone(), *inputs.first()?, *inputs.get(1)?))
        }) else {
            return;
        };
        let dims_of = |at: usize| base.inputs.get(at).map(|(_, dims, _)| dims.clone());
        let first_dims = dims_of(first).unwrap_or_default();
        let n = first_dims.last().copied().unwrap_or(2).max(2);
        // Ranks are the box the samples are drawn in, not constraints: each must be declared.
        let declares = |at: usize, rank: usize| {
            let name = base.inputs.get(at).map(|(name, _, _)| name.as_str());
            (self
                .raw
                .inputs
                .iter()
                .find(|i| Some(i.name.value.as_str()) == name))
            .is_some_and(|input| {
                (input.rank.as_ref()).is_some_and(|r| r.value.ranks().contains(&rank))
            })
        };
        let ranks = [first_dims.len(), 2]
            .into_iter()
            .filter(|&r| r >= 2 && declares(first, r) && declares(second, r));
        for rank in ranks {
            let along = |axis: usize| {
                let mut dims = vec![1; rank];
                dims[axis] = n;
                dims
            };
            let (row, column, full) = (along(rank - 1), along(0), vec![n; rank]);
            let pairs = [
                (row, column.clone()),
                (full.clone(), column.clone()),
                (column, full),
            ];
            let mut added = false;
            for (first_dims, second_dims) in pairs {
                let mut crossed = base.clone();
                if let Some((_, dims, _)) = crossed.inputs.get_mut(first) {
                    *dims = first_dims;
                }
                if let Some((_, dims, _)) = crossed.inputs.get_mut(second) {
                    *dims = second_dims;
                }
                if let Verdict::Admitted { outputs } = self.domain.verdict(&crossed, dtype) {
                    added = true;
                    if !admitted.iter().any(|(s, _)| *s == crossed) {
                        admitted.push((crossed, outputs));
                    }
                }
            }
            if added {
                return;
            }
        }
    }

    /// Adds, for each parameter that holds a permutation of its axes on the admitted sample of
    /// the most axes (and of those the most longer than one; its unit axes made 2 where it stays
    /// a sample), that sample with each structured permutation instead (the identity, the
    /// last two axes swapped, all reversed, rotated by one): kernels keep fast paths for
    /// these, which random permutations at a high rank almost never meet.
    fn add_structured_permutations(&self, dtype: DType, admitted: &mut Admitted) {
        // the most axes, then the most of them longer than one (a permutation of unit axes
        // moves no element), then the most elements
        let axes = |s: &Sample| {
            let dims = s.inputs.iter().flat_map(|(_, d, _)| d);
            let long = dims.clone().filter(|d| **d > 1).count();
            (dims.count(), long, s.elements())
        };
        let Some(base) = admitted
            .iter()
            .map(|(s, _)| s)
            .max_by_key(|s| axes(s))
            .cloned()
        else {
            return;
        };
        // and every unit axis made 2 where that is still a sample
        let base = self.unit_axes_doubled(base, dtype);
        for candidate in self.structured_variants(&base) {
            if let Verdict::Admitted { outputs } = self.domain.verdict(&candidate, dtype)
                && !admitted.iter().any(|(s, _)| *s == candidate)
            {
                admitted.push((candidate, outputs));
            }
        }
    }

    /// `sample` with each parameter that holds a permutation of its axes made each structured
    /// permutation in turn (the identity, the last two axes swapped, all reversed, rotated by
    /// one), whether or not each is a sample.
    pub(super) fn structured_variants(&self, sample: &Sample) -> Vec<Sample> {
        let mut variants = Vec::new();
        for at in 0..sample.params.len() {
            let Some((name, Param::Ints(values))) = sample.params.get(at) else {
                continue;
            };
            if !self.domain.lists_axes(name) {
                continue;
            }
            let mut sorted = values.clone();
            sorted.sort_unstable();
            if values.len() < 2 || !sorted.iter().copied().eq(0..values.len() as i64) {
                continue;
            }
            for which in 0..constraints::STRUCTURED {
                let mut candidate = sample.clone();
                if let Some((_, param)) = candidate.params.get_mut(at) {
                    let perm = param.ints_mut();
                    perm.iter_mut().zip(0..).for_each(|(p, axis)| *p = axis);
                    constraints::structured(perm, which);
                }
                if !variants.contains(&candidate) {
                    variants.push(candidate);
                }
            }
        }
        variants
    }
}

/// The dims [`Gate::add_everything_on`] gives the first input where a raised parameter needs
/// room: a window, a dilation and a stride of 2 together.
const EVERYTHING_ON_DIMS: i64 = 6;

/// `sample` with every dim of its first input at least `least`.
fn with_first_input_at_least(sample: &Sample, least: i64) -> Sample {
    let mut roomier = sample.clone();
    if let Some((_, dims, true)) = roomier.inputs.first_mut() {
        dims.iter_mut().for_each(|d| *d = (*d).max(least));
    }
    roomier
}
