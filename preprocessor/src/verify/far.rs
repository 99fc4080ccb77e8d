//! Far parameters: while a code path the contract names is unreached, each pair of parameter
//! values is set far out together. A padding and a stride (or a dilation and a padding) of one
//! huge size keep the output a few elements wide, where a kernel that sizes a buffer from them
//! gives up its fast path: the fallback is then reached on a sample of a few elements.

use std::collections::BTreeSet;

use super::reach::{SWEEP_BASES, param_count, with_param};
use super::sample::Sample;
use super::{Admitted, Gate};
use crate::providers::Kernel;
use fkc_provider::DType;

/// The values two parameter values take together in the far search, and the ratios of the
/// second to the first: a padding and a stride (or a dilation) of one huge size keep the
/// output a few elements wide, where a kernel that sizes a buffer from them gives up its fast
/// path.
const FAR: [i64; 2] = [1 << 12, 1 << 22];
const FAR_RATIOS: [(i64, i64); 2] = [(1, 1), (1, 2)];
/// The dims of the far search's second start from each base: a window of three taps, whose
/// span a dilation as huge as the padding (twice over) leaves the output's size.
const FAR_DIMS: i64 = 3;

impl Gate<'_> {
    /// While a named path is unreached: each pair of parameter values of the first bases (and
    /// of each with every dim [`FAR_DIMS`]) set far out together ([`FAR`], in the ratios
    /// [`FAR_RATIOS`]), with every optional input present where that is still a sample (a path
    /// found only there is then run with them), kept for a new set of paths. A fallback a kernel takes only past some buffer size (an
    /// absurd padding) is reached on a sample of a few elements.
    pub(super) fn far_params(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        (bases, admitted): (&[Sample], &Admitted),
        grown: &mut Admitted,
        seen: &mut BTreeSet<Vec<String>>,
    ) {
        let starts = (bases.iter().take(SWEEP_BASES))
            .flat_map(|base| [base.clone(), every_dim_set(base, FAR_DIMS)]);
        for base in &starts.collect::<Vec<_>>() {
            let count = param_count(base);
            for (a, b) in (0..count).flat_map(|a| (0..count).map(move |b| (a, b))) {
                for (value, (num, den)) in FAR.iter().flat_map(|v| FAR_RATIOS.map(|r| (*v, r))) {
                    if self.unreached(dtype).is_empty() {
                        return;
                    }
                    if a == b {
                        continue;
                    }
                    let far = with_param(&with_param(base, a, value), b, value * num / den);
                    let (candidate, _) =
                        self.optionals_present(self.domain.tied(&far, dtype), dtype);
                    self.keep_if_new(kernel, dtype, candidate, admitted, grown, seen);
                }
            }
        }
    }
}

/// `sample` with every present dim `value`.
fn every_dim_set(sample: &Sample, value: i64) -> Sample {
    let mut set = sample.clone();
    for (_, dims, present) in &mut set.inputs {
        if *present {
            dims.iter_mut().for_each(|d| *d = value);
        }
    }
    set
}
