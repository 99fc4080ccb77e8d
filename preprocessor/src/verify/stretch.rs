//! Grown samples stretched, kept whatever paths they reach: one with every input's last two
//! dims past 32 (or 16) and a batch of two ([`WIDE_TRAILING`]: a path a kernel takes for large
//! matrices only is run on more than one of them); the smallest sample with each dim alone
//! made long ([`LONG`]), so that a reduction over any one dim runs past the lengths a kernel
//! may unroll or block by; the first drawn samples of each
//! combination of input ranks with the last two dims of every input at least [`ALL_LONG`]
//! where that stays small (tiles past 16 in two dims at once); where a dim is reduced, past the
//! cache-sized blocks a long sum may be split into ([`BLOCKED`]; the order claim is checked on
//! these too); and each parameter value alone made large ([`LARGE_PARAM`]: a wide window, an
//! odd thread count), its dims raised only as far as that needs. The wide, long and blocked
//! samples are also tried with their axis parameters naming each axis ([`super::axes`]).

use super::reach::{
    COMBINED_ELEMENTS, SWEEP_BASES, dim_count, param_count, raise, weight, with_param,
};
use super::sample::Sample;
use super::{Admitted, Gate};
use crate::providers::Kernel;
use fkc_provider::DType;
use std::cmp::Reverse;

/// The values one dim takes alone to make a long reduction: past 16 and 32 with a remainder.
pub(super) const LONG: [i64; 2] = [24, 129];
/// The value the last two dims of every input take together, where the sample stays small
/// enough: past 16-wide tiles in two dims at once, with a remainder (a blocked transpose's
/// corner, a matrix product's last tile).
pub(super) const ALL_LONG: i64 = 20;
/// The drawn samples of each combination of input ranks given long trailing dims.
pub(super) const TRAILING_PER_RANKS: usize = 2;
/// The most samples given long trailing dims.
pub(super) const TRAILING_SAMPLES: usize = 24;
/// The most elements (operands and outputs) a sample given long trailing dims may have.
pub(super) const TRAILING_ELEMENTS: i64 = 4096;
/// The value one dim takes alone to make a very long reduction: past the cache-sized blocks
/// (1024 to 4096 terms) a long sum may be split into, with a remainder.
pub(super) const BLOCKED: i64 = 4100;
/// The most output elements a [`BLOCKED`] sample may have: it is kept only where the long dim
/// is reduced (a few sums of many terms), not where it makes many outputs.
pub(super) const BLOCKED_OUTPUTS: i64 = 256;
/// The most [`BLOCKED`] samples per dtype.
pub(super) const BLOCKED_SAMPLES: usize = 4;
/// The values the last two dims of every input take in the wide sample, in turn: past 32 (a
/// blocked fast path's threshold), else past 16.
const WIDE_TRAILING: [i64; 2] = [33, 17];
/// The least value of every other dim of the wide sample: a batch of two.
const WIDE_LEADING: i64 = 2;
/// Bases and values the wide sample tries, at most.
const WIDE_TRIES: usize = 16;
/// The values one parameter takes alone: past the window sizes (3, 4) and the thread counts
/// (2, 4) a kernel may keep special code for, odd.
pub(super) const LARGE_PARAM: [i64; 2] = [5, 9];

impl Gate<'_> {
    /// Adds the stretched samples (see the module documentation) to `grown`, from the first of
    /// `bases` (the smallest sample, every dim lowered) and, for [`BLOCKED`], the next ones.
    pub(super) fn stretched(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        (bases, admitted): (&[Sample], &Admitted),
        grown: &mut Admitted,
    ) {
        let wide = self.wide(bases, dtype);
        self.keep_all(kernel, dtype, wide, admitted, grown);
        let Some(base) = bases.first() else {
            return;
        };
        let mut candidates = Vec::new();
        for variable in 0..dim_count(base) {
            for long in LONG
                .iter()
                .filter_map(|&v| self.long(base, variable, v, dtype))
            {
                let moved = self.axis_variants(&long, dtype);
                candidates.push(long);
                candidates.extend(moved);
            }
        }
        candidates.extend(self.trailing_long(admitted, dtype));
        self.keep_all(kernel, dtype, candidates, admitted, grown);
        self.blocked_reductions(kernel, dtype, (bases, admitted), grown);
        let mut candidates = Vec::new();
        for at in 0..param_count(base) {
            candidates.extend(
                LARGE_PARAM
                    .iter()
                    .filter_map(|&v| self.large_param(base, at, v, dtype)),
            );
        }
        self.keep_all(kernel, dtype, candidates, admitted, grown);
    }

    /// The first [`TRAILING_PER_RANKS`] drawn samples of each combination of input ranks (at
    /// most [`TRAILING_SAMPLES`] in all), with the last two dims of every present input at
    /// least [`ALL_LONG`] (the dims tied to them following), where that is a sample of at most
    /// [`TRAILING_ELEMENTS`] elements: a rank-2 fast path and a rank-4 one each meet two long
    /// dims, under the parameters drawn for them and each structured permutation (a transpose
    /// that swaps them, or not).
    fn trailing_long(&self, admitted: &Admitted, dtype: DType) -> Vec<Sample> {
        let mut seen: Vec<Vec<usize>> = Vec::new();
        let mut out = Vec::new();
        for (sample, _) in admitted {
            let ranks = ranks(sample);
            if out.len() >= TRAILING_SAMPLES
                || seen.iter().filter(|r| **r == ranks).count() >= TRAILING_PER_RANKS
            {
                continue;
            }
            seen.push(ranks);
            let mut raised = sample.clone();
            for (_, dims, present) in &mut raised.inputs {
                if *present {
                    let from = dims.len().saturating_sub(2);
                    dims.iter_mut()
                        .skip(from)
                        .for_each(|d| *d = (*d).max(ALL_LONG));
                }
            }
            let candidate = self.domain.tied(&raised, dtype);
            let light = self.small_enough(&candidate, dtype).is_some_and(|outputs| {
                let out: i64 = outputs.iter().map(|d| d.iter().product::<i64>()).sum();
                candidate.elements().saturating_add(out) <= TRAILING_ELEMENTS
            });
            if !light {
                continue;
            }
            // and, for a permutation, each structured one (a fast path's swap of the two)
            for variant in
                std::iter::once(candidate.clone()).chain(self.structured_variants(&candidate))
            {
                if !out.contains(&variant) && self.small_enough(&variant, dtype).is_some() {
                    out.push(variant);
                }
            }
        }
        out
    }

    /// The wide sample ([`Gate::raised_wide`]) and, where it has axis parameters, the same
    /// with each naming each axis ([`Gate::axis_variants`]): a path for two long dims is met
    /// along every axis, not only along the one the base named.
    fn wide(&self, bases: &[Sample], dtype: DType) -> Vec<Sample> {
        let Some(wide) = self.raised_wide(bases, dtype) else {
            return Vec::new();
        };
        let moved = self.axis_variants(&wide, dtype).into_iter();
        let moved = moved.filter(|s| self.small_enough(s, dtype).is_some());
        std::iter::once(wide.clone()).chain(moved).collect()
    }

    /// One of `bases` (one of each combination of input ranks in turn, the most dims first)
    /// with the last two dims of every present input at least [`WIDE_TRAILING`]'s first value
    /// that gives a sample of at most [`COMBINED_ELEMENTS`] elements, and every dim before
    /// them at least [`WIDE_LEADING`] (the dims tied to them following).
    fn raised_wide(&self, bases: &[Sample], dtype: DType) -> Option<Sample> {
        // the first base of each combination of input ranks (the most dims first), then the
        // second of each, …: bases too large at the highest rank do not use up the tries
        let nth = |at: usize| {
            let mine = bases.get(at).map(ranks);
            (bases.iter().take(at))
                .filter(|b| Some(ranks(b)) == mine)
                .count()
        };
        let mut by_rank: Vec<(usize, &Sample)> = bases.iter().enumerate().collect();
        by_rank.sort_by_cached_key(|(at, s)| (nth(*at), Reverse(dim_count(s))));
        let by_rank: Vec<&Sample> = by_rank.into_iter().map(|(_, s)| s).collect();
        let tries = WIDE_TRAILING
            .iter()
            .flat_map(|&v| by_rank.iter().map(move |s| (v, *s)));
        tries.take(WIDE_TRIES).find_map(|(value, sample)| {
            let mut raised = sample.clone();
            for (_, dims, present) in &mut raised.inputs {
                let rank = dims.len();
                if *present {
                    for (axis, dim) in dims.iter_mut().enumerate() {
                        let least = if axis + 2 >= rank {
                            value
                        } else {
                            WIDE_LEADING
                        };
                        *dim = (*dim).max(least);
                    }
                }
            }
            let candidate = self.domain.tied(&raised, dtype);
            let outputs = self.small_enough(&candidate, dtype)?;
            (weight(&candidate, &outputs) <= COMBINED_ELEMENTS).then_some(candidate)
        })
    }

    /// Keeps each new `candidate` the kernel runs, whatever its paths.
    fn keep_all(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        candidates: Vec<Sample>,
        admitted: &Admitted,
        grown: &mut Admitted,
    ) {
        for candidate in candidates {
            if !grown.iter().any(|(s, _)| *s == candidate)
                && let Some((outputs, _)) = self.try_grown(kernel, dtype, &candidate, admitted)
            {
                grown.push((candidate, outputs));
            }
        }
    }

    /// `sample` with its `variable`-th dim set to `value`, and, where that alone is no sample
    /// (a constraint no `==` ties, such as a `select` of two dims), one other dim too.
    fn long(&self, sample: &Sample, variable: usize, value: i64, dtype: DType) -> Option<Sample> {
        let alone = self.domain.tied(&raise(sample, variable, value), dtype);
        if self.small_enough(&alone, dtype).is_some() {
            return Some(alone);
        }
        (0..dim_count(sample))
            .filter(|other| *other != variable)
            .map(|other| self.domain.tied(&raise(&alone, other, value), dtype))
            .find(|pair| self.small_enough(pair, dtype).is_some())
    }

    /// Up to [`BLOCKED_SAMPLES`] samples with one dim alone [`BLOCKED`] long where it is
    /// reduced, from the first bases on (the smallest sample's parameters may reduce nothing:
    /// a sum over no axes).
    fn blocked_reductions(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        (bases, admitted): (&[Sample], &Admitted),
        grown: &mut Admitted,
    ) {
        let mut kept = 0;
        for base in bases.iter().take(SWEEP_BASES + 1) {
            for variable in 0..dim_count(base) {
                if kept >= BLOCKED_SAMPLES {
                    return;
                }
                let Some(long) = self.long(base, variable, BLOCKED, dtype) else {
                    continue;
                };
                // (its axis parameters moved where the base's reduce another dim, or none)
                let moved = self.axis_variants(&long, dtype);
                let Some(candidate) = std::iter::once(long)
                    .chain(moved)
                    .find(|c| self.reduces(c, dtype))
                else {
                    continue;
                };
                if !grown.iter().any(|(s, _)| *s == candidate)
                    && let Some((outputs, _)) = self.try_grown(kernel, dtype, &candidate, admitted)
                {
                    grown.push((candidate, outputs));
                    kept += 1;
                }
            }
        }
    }

    /// `sample` with its `at`-th parameter value set to `value`, where that alone is no sample
    /// (a window wider than the input) with every dim raised to `value`, each lowered to 1
    /// where that is still a sample, and those it could not lower made `value` longer (several
    /// windows of that size, not one).
    fn large_param(&self, sample: &Sample, at: usize, value: i64, dtype: DType) -> Option<Sample> {
        let alone = self.domain.tied(&with_param(sample, at, value), dtype);
        if self.small_enough(&alone, dtype).is_some() {
            return Some(alone);
        }
        let mut raised = alone;
        for (_, dims, present) in &mut raised.inputs {
            if *present {
                dims.iter_mut().for_each(|d| *d = (*d).max(value));
            }
        }
        let raised = self.domain.tied(&raised, dtype);
        self.small_enough(&raised, dtype)?;
        let lowered = self.lowered(&raised, dtype);
        self.small_enough(&lowered, dtype)?;
        // then each dim the parameter needed made `value` longer: several windows, not one
        let mut wide = lowered.clone();
        for (_, dims, present) in &mut wide.inputs {
            if *present {
                dims.iter_mut()
                    .filter(|d| **d > 1)
                    .for_each(|d| *d += value);
            }
        }
        let wide = self.domain.tied(&wide, dtype);
        Some(if self.small_enough(&wide, dtype).is_some() {
            wide
        } else {
            lowered
        })
    }

    /// Whether `candidate` has at most [`BLOCKED_OUTPUTS`] output elements (its long dim is
    /// reduced).
    fn reduces(&self, candidate: &Sample, dtype: DType) -> bool {
        self.small_enough(candidate, dtype).is_some_and(|outputs| {
            outputs
                .iter()
                .map(|d| d.iter().product::<i64>())
                .sum::<i64>()
                <= BLOCKED_OUTPUTS
        })
    }
}

/// Whether `sample` has a dim [`BLOCKED`] long: a very long reduction, which the order claim
/// is checked on too.
pub(super) fn blocked_length(sample: &Sample) -> bool {
    sample
        .inputs
        .iter()
        .any(|(_, dims, present)| *present && dims.iter().any(|d| *d >= BLOCKED))
}

/// The rank of each input of `sample`.
fn ranks(sample: &Sample) -> Vec<usize> {
    sample
        .inputs
        .iter()
        .map(|(_, dims, _)| dims.len())
        .collect()
}
