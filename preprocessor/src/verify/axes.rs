//! Samples moved along their axis parameters: a long or wide sample reaches a kernel's blocked
//! or tiled code only along the axis its parameters name (a prefix sum of 33 rows of 33
//! columns, a sum of 4100 terms), and a sample drawn small may name an axis of one element
//! or none at all (`axes: []`). So the grown samples that make dims long are also tried with
//! each axis parameter naming each axis in turn: a single axis (an integer parameter whose
//! admitted values on the sample are every axis of the first input and nothing past it) and a
//! list of integers (one axis alone, where that is a sample: axes to reduce, not a
//! permutation).

use super::Gate;
use super::constraints::Verdict;
use super::sample::{Param, Sample};
use fkc_provider::{DType, ParamKind};

impl Gate<'_> {
    /// `sample` with each axis parameter naming each axis of the first input in turn (a list
    /// of axes: that axis alone), where that is a sample other than `sample`.
    pub(super) fn axis_variants(&self, sample: &Sample, dtype: DType) -> Vec<Sample> {
        let admits = |s: &Sample| matches!(self.domain.verdict(s, dtype), Verdict::Admitted { .. });
        let Some(rank) = first_rank(sample) else {
            return Vec::new();
        };
        let mut variants: Vec<Sample> = Vec::new();
        for at in 0..sample.params.len() {
            let Some((name, param)) = sample.params.get(at) else {
                continue;
            };
            let single = matches!(param, Param::Int(_));
            let listed = self.domain.drawn_params().any(|(drawn, kind)| {
                drawn == name && matches!(kind, ParamKind::I64List | ParamKind::UsizeList)
            });
            if !single && !listed {
                continue;
            }
            let naming = |axis: i64| {
                let mut moved = sample.clone();
                if let Some((_, param)) = moved.params.get_mut(at) {
                    *param = if single {
                        Param::Int(axis)
                    } else {
                        Param::Ints(vec![axis])
                    };
                }
                moved
            };
            let moved: Vec<Sample> = (0..rank).map(naming).collect();
            // a single integer is an axis only where it may name every axis and not one past
            if single && (admits(&naming(rank)) || !moved.iter().all(admits)) {
                continue;
            }
            for moved in moved {
                if moved != *sample && !variants.contains(&moved) && (single || admits(&moved)) {
                    variants.push(moved);
                }
            }
        }
        variants
    }
}

/// The rank of `sample`'s first present input.
fn first_rank(sample: &Sample) -> Option<i64> {
    let (_, dims, _) = sample.inputs.iter().find(|(_, _, present)| *present)?;
    i64::try_from(dims.len()).ok()
}
