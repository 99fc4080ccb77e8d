//! Far parameters: while a code path the contract names is unreached, each pair of parameter
//! values is set far out together. A padding and a stride (or a dilation and a padding) of one
//! huge size keep the output a few elements wide, where a kernel that sizes a buffer from them
//! gives up its fast path: the fallback is then reached on a sample of a few elements.

use std::collections::{BTreeMap, BTreeSet};

use super::reach::{SWEEP_BASES, new_path_set, param_count, with_param};
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

/// Far samples kept per path the far search was needed for, each from another pair of
/// parameters: the first to reach a fallback sets one axis far and may leave the other one
/// element wide, where a step taken along the wrong axis never shows.
const FAR_WITNESSES: usize = 2;

impl Gate<'_> {
    /// While a named path is unreached: each pair of parameter values of the first bases (and
    /// of each with every dim [`FAR_DIMS`]) set far out together ([`FAR`], in the ratios
    /// [`FAR_RATIOS`]), with every optional input present where that is still a sample (a path
    /// found only there is then run with them), kept for a new set of paths. A fallback a
    /// kernel takes only past some buffer size (an absurd padding) is reached on a sample of a
    /// few elements; the rest of the pairs of the base that reached it are tried for a second
    /// witness of each such path ([`FAR_WITNESSES`]). The bases have every parameter 1, so one
    /// more witness comes from the admitted sample with the most parameters past 1, its unit
    /// axes made 2 (a fallback that mixes up groups or dilations shows only there, and only
    /// with two channels to a group).
    pub(super) fn far_params(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        (bases, admitted): (&[Sample], &Admitted),
        grown: &mut Admitted,
        seen: &mut BTreeSet<Vec<String>>,
    ) {
        let needed = self.unreached(dtype);
        if needed.is_empty() {
            return;
        }
        let starts: Vec<Sample> = (bases.iter().take(SWEEP_BASES))
            .flat_map(|base| [base.clone(), every_dim_set(base, FAR_DIMS)])
            .collect();
        let mut witnesses = Witnesses::wanting(FAR_WITNESSES);
        for base in &starts {
            if self.unreached(dtype).is_empty() {
                break;
            }
            let store = (admitted, &mut *grown, &mut *seen);
            self.far_pairs(kernel, dtype, base, store, &needed, &mut witnesses);
        }
        let rich = richest(admitted).map(|rich| self.unit_axes_doubled(rich, dtype));
        if let Some(rich) = rich.filter(|rich| !starts.contains(rich)) {
            let store = (admitted, &mut *grown, &mut *seen);
            let mut rich_witness = Witnesses::wanting(1);
            self.far_pairs(kernel, dtype, &rich, store, &needed, &mut rich_witness);
        }
    }

    /// Each pair of `base`'s parameter values set far out together, until `witnesses` are
    /// complete.
    fn far_pairs(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        base: &Sample,
        (admitted, grown, seen): (&Admitted, &mut Admitted, &mut BTreeSet<Vec<String>>),
        needed: &[String],
        witnesses: &mut Witnesses,
    ) {
        let count = param_count(base);
        for (a, b) in (0..count).flat_map(|a| (0..count).map(move |b| (a, b))) {
            for (value, (num, den)) in FAR.iter().flat_map(|v| FAR_RATIOS.map(|r| (*v, r))) {
                if witnesses.complete(needed) {
                    return;
                }
                if a == b {
                    continue;
                }
                let far = with_param(&with_param(base, a, value), b, value * num / den);
                let (candidate, _) = self.optionals_present(self.domain.tied(&far, dtype), dtype);
                let pair = (a.min(b), a.max(b));
                let store = (admitted, &mut *grown, &mut *seen);
                self.keep_far(kernel, dtype, candidate, store, (needed, pair), witnesses);
            }
        }
    }

    /// Keeps `candidate` when it reaches a new set of paths, or a needed path no sample from
    /// its pair of parameters has witnessed yet.
    fn keep_far(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        candidate: Sample,
        (admitted, grown, seen): (&Admitted, &mut Admitted, &mut BTreeSet<Vec<String>>),
        (needed, pair): (&[String], (usize, usize)),
        witnesses: &mut Witnesses,
    ) {
        if grown.iter().any(|(s, _)| *s == candidate) {
            return;
        }
        let Some((outputs, paths)) = self.try_grown(kernel, dtype, &candidate, admitted) else {
            return;
        };
        let witnessed = witnesses.add(needed, &paths, pair);
        if new_path_set(&candidate, &outputs, paths, seen) || witnessed {
            grown.push((candidate, outputs));
        }
    }
}

/// The pairs of parameters whose far samples were kept for each needed path, and how many
/// each path wants.
#[derive(Debug)]
struct Witnesses {
    pairs: BTreeMap<String, BTreeSet<(usize, usize)>>,
    wanted: usize,
}

impl Witnesses {
    fn wanting(wanted: usize) -> Witnesses {
        Witnesses {
            pairs: BTreeMap::new(),
            wanted,
        }
    }

    /// Every needed path has the witnesses it wants.
    fn complete(&self, needed: &[String]) -> bool {
        let count = |p: &String| self.pairs.get(p).map_or(0, BTreeSet::len);
        needed.iter().all(|p| count(p) >= self.wanted)
    }

    /// Records `pair` for each needed path in `paths` short of its witnesses; true if any.
    fn add(&mut self, needed: &[String], paths: &[String], pair: (usize, usize)) -> bool {
        let mut added = false;
        for path in needed.iter().filter(|p| paths.contains(p)) {
            let pairs = self.pairs.entry(path.clone()).or_default();
            if pairs.len() < self.wanted {
                added |= pairs.insert(pair);
            }
        }
        added
    }
}

/// The admitted sample with the most parameters past 1 (a field with a value past 1: groups,
/// a dilation, a stride), then the most such values, then the most elements, if any has one:
/// a drawn sample with many strides past 1 but one group ranks below one with a group more.
fn richest(admitted: &Admitted) -> Option<Sample> {
    let past_one = |s: &Sample| {
        let fields = s
            .params
            .iter()
            .filter(|(_, p)| p.ints().iter().any(|v| *v > 1));
        let values = s.params.iter().flat_map(|(_, p)| p.ints());
        (fields.count(), values.filter(|v| **v > 1).count())
    };
    let (sample, _) = admitted
        .iter()
        .filter(|(s, _)| past_one(s).0 > 0)
        .max_by_key(|(s, _)| (past_one(s), s.elements()))?;
    Some(sample.clone())
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
