//! The samples a worked example and a drift plot are chosen from: the contract's domain
//! drawn with a seed of their own (so the page does not change with the gate's seed), each
//! optional input also tried present, plus the gate's admitted samples, then their
//! neighbours (one variable moved) twice over while the pool is short — a tightly
//! constrained domain has few admitted draws; only admitted, small ones, smallest first. And
//! the moves both make on a sample: one variable changed, with the dims that the contract
//! ties to others (`b.dim[0] == w.dim[0]`) following.

use super::super::sample::{Param, Rng, Sample};

use super::super::constraints::{Domain, Verdict};
use crate::fast_hash::FastSet;
use fkc_provider::DType;

/// Samples drawn for the pool.
const DRAWS: usize = 1500;
const SEED: u64 = 0x00f1_6e2e_0e4a_3b1d;
/// A readable example has at most this many input elements in all, and at most this many
/// output elements.
const MAX_ELEMENTS: i64 = 160;
/// Rounds of neighbour moves, each from at most [`FRONTIER`] of the samples the last found.
const ROUNDS: usize = 2;
const FRONTIER: usize = 48;
/// A pool this large takes no more moves: the example ranks a fraction of it (evenly spaced
/// in size), so more samples would only cost time.
const ENOUGH: usize = 4 * RANKED;
/// Candidates the example ranks on their trace (evenly spaced in size).
pub const RANKED: usize = 80;

/// Admitted samples of at most [`MAX_ELEMENTS`] input elements, smallest first.
pub fn pool(domain: &Domain<'_>, dtype: DType, admitted: &[&Sample]) -> Vec<Sample> {
    let mut rng = Rng::new(SEED);
    let drawn: Vec<Sample> = (0..DRAWS).map(|_| domain.draw(&mut rng)).collect();
    let mut found = Found {
        domain,
        dtype,
        seen: FastSet::default(),
        moved: FastSet::default(),
        pool: Vec::new(),
    };
    // A sample drawn again gives nothing new: its optional inputs were tried the first time.
    let mut drawn_before = FastSet::default();
    let all = drawn.iter().chain(admitted.iter().copied());
    // Making an optional input present only adds elements: a sample too large without it
    // stays too large.
    let mut frontier: Vec<Sample> = all
        .filter(|s| s.elements() <= MAX_ELEMENTS && drawn_before.insert(key(s)))
        .flat_map(|s| with_optionals(domain, s, dtype))
        .filter_map(|s| found.add(s))
        .collect();
    for _ in 0..ROUNDS {
        if found.pool.len() >= ENOUGH {
            break;
        }
        let next: Vec<Sample> = spread(&frontier, FRONTIER)
            .iter()
            .flat_map(|s| found.moves(s))
            .collect();
        frontier = next;
    }
    let mut pool = found.pool;
    pool.sort_by_cached_key(|s| (s.elements(), s.describe()));
    pool
}

/// The pool as it grows.
struct Found<'d, 'a> {
    domain: &'d Domain<'a>,
    dtype: DType,
    /// Every sample met so far (admitted and small or not): each is judged once.
    seen: FastSet<Key>,
    /// Every neighbour met before its tied dims were recomputed: the same one ties the same.
    moved: FastSet<Key>,
    pool: Vec<Sample>,
}

/// What tells samples of one domain apart: what [`Sample::describe`] writes, without the
/// names (the same in every sample of a domain) and without formatting a string.
pub type Key = (Vec<Option<Vec<i64>>>, Vec<Param>);

pub fn key(sample: &Sample) -> Key {
    let inputs = sample.inputs.iter();
    let dims = inputs.map(|(_, dims, present)| present.then(|| dims.clone()));
    let params = sample.params.iter().map(|(_, param)| param.clone());
    (dims.collect(), params.collect())
}

impl Found<'_, '_> {
    /// Adds a sample that is admitted, small and new; returns it then.
    fn add(&mut self, sample: Sample) -> Option<Sample> {
        let fits = self.seen.insert(key(&sample)) && small(self.domain, &sample, self.dtype);
        fits.then(|| {
            self.pool.push(sample.clone());
            sample
        })
    }

    /// [`moves`] of a sample that are admitted, small and new.
    fn moves(&mut self, sample: &Sample) -> Vec<Sample> {
        let (domain, dtype) = (self.domain, self.dtype);
        let moved: Vec<Sample> = sample
            .neighbours()
            .filter(|s| self.moved.insert(key(s)))
            .map(|s| tied(domain, &s, dtype))
            .chain(with_optionals(domain, sample, dtype).into_iter().skip(1))
            .collect();
        moved.into_iter().filter_map(|s| self.add(s)).collect()
    }
}

/// Whether a sample is admitted with at most [`MAX_ELEMENTS`] input and output elements, and
/// no empty input.
pub fn small(domain: &Domain<'_>, sample: &Sample, dtype: DType) -> bool {
    let empty = sample
        .inputs
        .iter()
        .any(|(_, dims, present)| *present && dims.contains(&0));
    !empty
        && sample.elements() <= MAX_ELEMENTS
        && outputs(domain, sample, dtype).is_some_and(|outputs| {
            let elements: i64 = outputs.iter().map(|d| d.iter().product::<i64>()).sum();
            elements <= MAX_ELEMENTS
        })
}

/// At most `count` of `items`, evenly spaced.
pub fn spread<T>(items: &[T], count: usize) -> Vec<&T> {
    if items.len() <= count {
        return items.iter().collect();
    }
    (0..count)
        .filter_map(|i| items.get(i * items.len() / count))
        .collect()
}

/// The sample, and the sample with each optional input present.
fn with_optionals(domain: &Domain<'_>, sample: &Sample, dtype: DType) -> Vec<Sample> {
    let mut out = vec![sample.clone()];
    for (name, _, present) in &sample.inputs {
        if !present {
            out.push(domain.with_present(sample, name, dtype));
        }
    }
    out
}

/// The sample's output dims, when it is admitted.
pub fn outputs(domain: &Domain<'_>, sample: &Sample, dtype: DType) -> Option<Vec<Vec<i64>>> {
    match domain.verdict(sample, dtype) {
        Verdict::Admitted { outputs } => Some(outputs),
        _ => None,
    }
}

/// Elements of the first output, when the sample is admitted.
pub fn output_elements(domain: &Domain<'_>, sample: &Sample, dtype: DType) -> Option<i64> {
    outputs(domain, sample, dtype)?
        .first()
        .map(|dims| dims.iter().product())
}

/// Every sample one move away: one variable moved (tied dims following), or an optional
/// input made present.
pub fn moves(domain: &Domain<'_>, sample: &Sample, dtype: DType) -> Vec<Sample> {
    let moved = sample.neighbours().map(|s| tied(domain, &s, dtype));
    let mut all: Vec<Sample> = moved.collect();
    all.extend(with_optionals(domain, sample, dtype).into_iter().skip(1));
    all
}

/// The sample with every dim the contract ties to others (`name.dim[k] == EXPR`) recomputed.
pub fn tied(domain: &Domain<'_>, sample: &Sample, dtype: DType) -> Sample {
    let present: Vec<String> = sample
        .inputs
        .iter()
        .filter(|(_, _, present)| *present)
        .map(|(name, _, _)| name.clone())
        .collect();
    present.iter().fold(sample.clone(), |s, name| {
        domain.with_present(&s, name, dtype)
    })
}

/// The sample with every optional input absent, when that is admitted.
pub fn without_optionals(domain: &Domain<'_>, sample: &Sample, dtype: DType) -> Sample {
    let mut bare = sample.clone();
    for (input, (_, _, present)) in domain.raw.inputs.iter().zip(bare.inputs.iter_mut()) {
        if input.is_optional() {
            *present = false;
        }
    }
    if outputs(domain, &bare, dtype).is_some() {
        bare
    } else {
        sample.clone()
    }
}

/// One variable of a sample: a dim of a present input, or one element of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    Dim { input: usize, axis: usize },
    Param { index: usize, element: usize },
}

impl Var {
    /// Every variable of a sample, inputs first.
    pub fn all(sample: &Sample) -> Vec<Var> {
        let dims = sample
            .inputs
            .iter()
            .enumerate()
            .flat_map(|(input, (_, d, p))| {
                (0..if *p { d.len() } else { 0 }).map(move |axis| Var::Dim { input, axis })
            });
        let params = sample
            .params
            .iter()
            .enumerate()
            .flat_map(|(index, (_, p))| {
                let width = p.ints().len();
                (0..width).map(move |element| Var::Param { index, element })
            });
        dims.chain(params).collect()
    }

    /// The input or parameter it belongs to.
    pub fn owner(self) -> (bool, usize) {
        match self {
            Var::Dim { input, .. } => (true, input),
            Var::Param { index, .. } => (false, index),
        }
    }

    pub fn get(self, sample: &Sample) -> Option<i64> {
        match self {
            Var::Dim { input, axis } => sample.inputs.get(input)?.1.get(axis).copied(),
            Var::Param { index, element } => {
                sample.params.get(index)?.1.ints().get(element).copied()
            }
        }
    }

    pub fn set(self, sample: &mut Sample, value: i64) {
        let slot = match self {
            Var::Dim { input, axis } => sample
                .inputs
                .get_mut(input)
                .and_then(|(_, dims, _)| dims.get_mut(axis)),
            Var::Param { index, element } => sample
                .params
                .get_mut(index)
                .and_then(|(_, param)| param.ints_mut().get_mut(element)),
        };
        if let Some(slot) = slot {
            *slot = value;
        }
    }

    /// `x.dim[1]`, `stride[0]`, `kernel_size`.
    pub fn name(self, sample: &Sample) -> String {
        match self {
            Var::Dim { input, axis } => {
                let name = sample.inputs.get(input).map_or("", |(n, _, _)| n.as_str());
                format!("{name}.dim[{axis}]")
            }
            Var::Param { index, element } => match sample.params.get(index) {
                Some((name, Param::Ints(_))) => format!("{name}[{element}]"),
                Some((name, _)) => name.clone(),
                None => String::new(),
            },
        }
    }
}

/// A sample whose first output has one element, reached from `start` by moves that each
/// leave fewer output elements (the fewest input elements among equals); `None` when no
/// admitted move gets there.
pub fn single_output(domain: &Domain<'_>, start: &Sample, dtype: DType) -> Option<Sample> {
    let mut current = start.clone();
    let mut size = output_elements(domain, &current, dtype)?;
    while size > 1 {
        let (next_size, _, next) = current
            .neighbours()
            .map(|s| tied(domain, &s, dtype))
            .filter_map(|s| Some((output_elements(domain, &s, dtype)?, s.elements(), s)))
            .min_by_key(|(size, elements, _)| (*size, *elements))?;
        if next_size >= size {
            return None;
        }
        (current, size) = (next, next_size);
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample() -> Sample {
        Sample {
            inputs: vec![
                ("x".into(), vec![1, 2, 5, 5], true),
                ("bias".into(), vec![3], false),
            ],
            params: vec![
                ("stride".into(), Param::Ints(vec![2, 1])),
                ("groups".into(), Param::Int(1)),
            ],
        }
    }

    #[test]
    fn variables_are_present_dims_then_parameter_elements() {
        let s = sample();
        let vars = Var::all(&s);
        assert_eq!(vars.len(), 4 + 2 + 1, "the absent bias has none");
        let names: Vec<String> = vars.iter().map(|v| v.name(&s)).collect();
        assert_eq!(names[1], "x.dim[1]");
        assert_eq!(names[5], "stride[1]");
        assert_eq!(names[6], "groups");
        let mut moved = s.clone();
        vars[5].set(&mut moved, 4);
        assert_eq!(moved.param("stride"), Some(&Param::Ints(vec![2, 4])));
        assert_eq!(vars[1].get(&moved), Some(2));
        assert_eq!(vars[0].owner(), vars[3].owner());
        assert_ne!(vars[4].owner(), vars[6].owner());
    }
}
