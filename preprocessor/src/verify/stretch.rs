//! Grown samples stretched along one variable, kept whatever paths they reach: the smallest
//! sample with each dim alone made long ([`LONG`]), so that a reduction over any one dim runs
//! past the lengths a kernel may unroll or block by; where a dim is reduced, past the
//! cache-sized blocks a long sum may be split into ([`BLOCKED`]; the order claim is checked on
//! these too); and each parameter value alone made large ([`LARGE_PARAM`]: a wide window, an
//! odd thread count), its dims raised only as far as that needs.

use super::reach::{SWEEP_BASES, dim_count, param_count, raise, with_param};
use super::sample::Sample;
use super::{Admitted, Gate};
use crate::providers::Kernel;
use fkc_provider::DType;

/// The values one dim takes alone to make a long reduction: past 16 and 32 with a remainder.
pub(super) const LONG: [i64; 2] = [24, 33];
/// The value one dim takes alone to make a very long reduction: past the cache-sized blocks
/// (1024 to 4096 terms) a long sum may be split into, with a remainder.
pub(super) const BLOCKED: i64 = 4100;
/// The most output elements a [`BLOCKED`] sample may have: it is kept only where the long dim
/// is reduced (a few sums of many terms), not where it makes many outputs.
pub(super) const BLOCKED_OUTPUTS: i64 = 256;
/// The most [`BLOCKED`] samples per dtype.
pub(super) const BLOCKED_SAMPLES: usize = 4;
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
        let Some(base) = bases.first() else {
            return;
        };
        let mut candidates = Vec::new();
        for variable in 0..dim_count(base) {
            candidates.extend(
                LONG.iter()
                    .filter_map(|&v| self.long(base, variable, v, dtype)),
            );
        }
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
                let Some(candidate) = self.long(base, variable, BLOCKED, dtype) else {
                    continue;
                };
                if !grown.iter().any(|(s, _)| *s == candidate)
                    && self.reduces(&candidate, dtype)
                    && let Some((outputs, _)) = self.try_grown(kernel, dtype, &candidate, admitted)
                {
                    grown.push((candidate, outputs));
                    kept += 1;
                }
            }
        }
    }

    /// `sample` with its `at`-th parameter value set to `value`, where that alone is no sample
    /// (a window wider than the input) with every dim raised to `value` and then each lowered
    /// back as far as it goes.
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
        self.small_enough(&lowered, dtype).map(|_| lowered)
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
