//! Every combination of ranks a contract's inputs and outputs can have: each input's declared
//! ranks, and for each, the ranks each output's shape rule gives — the semantics are checked
//! at each.

use super::ResolvedOutput;
use crate::contract::raw::RawContract;
use crate::contract::semantic::MAX_RANK_COMBINATIONS;

/// Every combination of ranks the signature's tensors can have (inputs, then outputs): each
/// input's declared ranks (0 without `rank`), and for each, the ranks each output's shape rule
/// gives (0 without one). At most [`MAX_RANK_COMBINATIONS`]; `None` beyond.
pub(super) fn rank_combinations(
    raw: &RawContract,
    outputs: &[ResolvedOutput],
) -> Option<Vec<Vec<usize>>> {
    let mut inputs: Vec<Vec<usize>> = vec![Vec::new()];
    for input in &raw.inputs {
        let ranks = input.rank.as_ref().map_or(0..=0, |r| r.value.ranks());
        inputs = extend(inputs, |_| ranks.clone())?;
    }
    let mut combinations = Vec::new();
    for input_ranks in inputs {
        let rank_of = |name: &str| {
            let at = raw.inputs.iter().position(|i| i.name.value == name);
            at.and_then(|k| input_ranks.get(k)).copied().unwrap_or(0)
        };
        let mut all = vec![input_ranks.clone()];
        for output in outputs {
            let ranks = output.shape.as_ref().map_or(0..=0, |s| s.ranks(rank_of));
            all = extend(all, |_| ranks.clone())?;
        }
        combinations.extend(all);
        if combinations.len() > MAX_RANK_COMBINATIONS {
            return None;
        }
    }
    Some(combinations)
}

/// Each of `prefixes` extended by each rank `next` gives for it; `None` past the budget.
fn extend(
    prefixes: Vec<Vec<usize>>,
    next: impl Fn(&[usize]) -> std::ops::RangeInclusive<usize>,
) -> Option<Vec<Vec<usize>>> {
    let mut extended = Vec::new();
    for prefix in prefixes {
        for rank in next(&prefix) {
            let mut longer = prefix.clone();
            longer.push(rank);
            extended.push(longer);
            if extended.len() > MAX_RANK_COMBINATIONS {
                return None;
            }
        }
    }
    Some(extended)
}
