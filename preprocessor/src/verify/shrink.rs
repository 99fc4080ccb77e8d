//! Shrinking a counterexample: greedily make each dimension and parameter smaller while the
//! sample stays admitted and still fails, so the report shows a minimal case.

use super::sample::{Domain, Param, Sample, Verdict};
use fkc_provider::DType;

/// Bounded number of accepted steps (each makes one coordinate one smaller).
const STEPS: usize = 256;

/// The smallest admitted sample reachable from `sample` for which `fails` still holds.
pub fn shrink(
    domain: &Domain<'_>,
    sample: &Sample,
    dtype: DType,
    fails: impl Fn(&Sample) -> bool,
) -> Sample {
    let mut best = sample.clone();
    for _ in 0..STEPS {
        let next = smaller(&best).into_iter().find(|candidate| {
            matches!(domain.verdict(candidate, dtype), Verdict::Admitted { .. }) && fails(candidate)
        });
        match next {
            Some(candidate) => best = candidate,
            None => break,
        }
    }
    best
}

/// Every sample one step smaller in one coordinate.
fn smaller(sample: &Sample) -> Vec<Sample> {
    let mut out = Vec::new();
    for (i, (_, dims, _)) in sample.inputs.iter().enumerate() {
        for (j, dim) in dims.iter().enumerate() {
            if *dim > 1 {
                let mut next = sample.clone();
                if let Some(slot) = next.inputs.get_mut(i).and_then(|(_, d, _)| d.get_mut(j)) {
                    *slot = dim - 1;
                }
                out.push(next);
            }
        }
    }
    for (i, (_, param)) in sample.params.iter().enumerate() {
        let values = match param {
            Param::Int(v) => vec![*v],
            Param::Ints(vs) => vs.clone(),
        };
        for (j, value) in values.iter().enumerate() {
            if *value > 0 {
                let mut next = sample.clone();
                if let Some((_, slot)) = next.params.get_mut(i) {
                    match slot {
                        Param::Int(v) => *v -= 1,
                        Param::Ints(vs) => {
                            if let Some(v) = vs.get_mut(j) {
                                *v -= 1;
                            }
                        }
                    }
                }
                out.push(next);
            }
        }
    }
    out
}
