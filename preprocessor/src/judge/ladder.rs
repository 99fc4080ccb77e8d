//! The ladder: sizes from the contract's admitted domain, from small to large. An admitted
//! sample is scaled — the first input's spatial dims (every dim after the first two), the
//! channels (the first input's dim 1 and the leading two dims of every other input, so the
//! relations between operands such as `weight.dim[1] * groups == x.dim[1]` survive) and the
//! batch — and every scaled candidate is classified again by the contract's own expressions:
//! only candidates the contract admits become rungs. Rungs are picked on a geometric scale of
//! the cost formula, alternating between more compute-heavy and more memory-heavy candidates so that
//! flops and bytes vary independently and both can be fitted.

use crate::verify::sample::Sample;

use crate::verify::constraints::{Domain, ValueBound, Verdict};
use fkc_provider::DType;

/// Spatial, channel and batch factors tried on the base sample.
const SPATIAL: [i64; 10] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32];
const CHANNELS: [i64; 6] = [1, 2, 3, 4, 6, 8];
const BATCH: [i64; 2] = [1, 2];
/// Elements of every operand of a rung together, at most: memory stays small, and every rung
/// stays within the caches (4 MiB of f32), because the model has one bandwidth and would
/// misread the step down to main memory as a formula of the wrong shape.
pub const MAX_ELEMENTS: i64 = 1 << 20;
/// The cost formula's value on the largest rung, at most (the time stays bounded).
pub const MAX_COST: f64 = 8e7;
/// How far the ladder spans, at most (largest / smallest cost).
pub const SPAN: f64 = 500.0;
/// Rungs wanted.
pub const RUNGS: usize = 10;

/// One candidate size: a sample the contract admits, with its costs.
#[derive(Debug, Clone)]
pub struct Rung {
    pub sample: Sample,
    pub flops: f64,
    pub bytes: f64,
    /// The element values its inputs with `values` take.
    pub bounds: Vec<ValueBound>,
}

impl Rung {
    /// The value on the ladder's axis: `flops`, or `bytes_moved` when flops are zero.
    pub fn cost(&self, by_bytes: bool) -> f64 {
        if by_bytes { self.bytes } else { self.flops }
    }
}

/// `flops` and `bytes_moved` on an admitted sample (0 for one the contract does not state;
/// `None` when a stated one fails).
pub fn costs(domain: &Domain<'_>, sample: &Sample, dtype: DType) -> Option<(f64, f64)> {
    let Verdict::Admitted { outputs } = domain.verdict(sample, dtype) else {
        return None;
    };
    let mut bindings = domain.bindings(sample, dtype);
    domain.bind_outputs(&mut bindings, &outputs);
    let formula = |name: &str| {
        let Some((_, expr)) = domain.contract.formulas.iter().find(|(n, _)| n == name) else {
            return Some(0.0);
        };
        let value = crate::expr::eval(&expr.expr, &bindings).ok()?.as_int()?;
        (value >= 0).then_some(value as f64)
    };
    let elements: i64 = sample
        .inputs
        .iter()
        .filter(|(_, _, present)| *present)
        .map(|(_, dims, _)| dims.iter().product::<i64>())
        .chain(outputs.iter().map(|dims| dims.iter().product::<i64>()))
        .sum();
    if elements > MAX_ELEMENTS {
        return None;
    }
    Some((formula("flops")?, formula("bytes_moved")?))
}

/// `base` scaled by (spatial, channels, batch).
fn scaled(base: &Sample, spatial: i64, channels: i64, batch: i64) -> Sample {
    let mut sample = base.clone();
    for (index, (_, dims, _)) in sample.inputs.iter_mut().enumerate() {
        let rank = dims.len();
        for (axis, dim) in dims.iter_mut().enumerate() {
            let factor = match (index, rank, axis) {
                (0, 1, _) => spatial,
                (0, 2, 0) => batch,
                (0, 2, _) => spatial,
                (0, _, 0) => batch,
                (0, _, 1) => channels,
                (0, _, _) => spatial,
                (_, _, 0 | 1) => channels,
                _ => 1,
            };
            *dim = dim.saturating_mul(factor);
        }
    }
    sample
}

/// Every admitted scaling of `base` within the size limits, by increasing cost.
pub fn candidates(domain: &Domain<'_>, base: &Sample, dtype: DType) -> Vec<Rung> {
    let mut found: Vec<Rung> = Vec::new();
    for spatial in SPATIAL {
        for channels in CHANNELS {
            for batch in BATCH {
                let sample = scaled(base, spatial, channels, batch);
                if found.iter().any(|r| r.sample == sample) {
                    continue;
                }
                if let Some((flops, bytes)) = costs(domain, &sample, dtype) {
                    found.push(Rung {
                        bounds: domain.value_bounds(&sample, dtype),
                        sample,
                        flops,
                        bytes,
                    });
                }
            }
        }
    }
    found
}

/// Picks the ladder from `candidates`: up to [`RUNGS`] sizes on a geometric scale of the cost
/// (flops, or bytes when `by_bytes`), spanning at most [`SPAN`] below the largest allowed,
/// alternating between more and fewer bytes per flop near each target.
pub fn pick(mut candidates: Vec<Rung>, by_bytes: bool) -> Vec<Rung> {
    candidates.retain(|r| r.cost(by_bytes) > 0.0 && r.cost(by_bytes) <= MAX_COST);
    candidates.sort_by(|a, b| a.cost(by_bytes).total_cmp(&b.cost(by_bytes)));
    let (Some(first), Some(last)) = (candidates.first(), candidates.last()) else {
        return Vec::new();
    };
    let high = last.cost(by_bytes);
    let low = first.cost(by_bytes).max(high / SPAN);
    let mut ladder: Vec<Rung> = Vec::new();
    for step in 0..RUNGS {
        let target = low * (high / low).powf(step as f64 / (RUNGS - 1) as f64);
        let near = |r: &&Rung| {
            let distance = (r.cost(by_bytes) / target).ln().abs();
            distance <= 0.35 && !ladder.iter().any(|l| l.sample == r.sample)
        };
        // Alternate between the lower and the upper quartile of bytes per flop near the target:
        // flops and bytes vary apart, without the extreme shapes (a single output column,
        // one channel) whose speed says more about tiling than about the formulas.
        let mut near: Vec<&Rung> = candidates.iter().filter(near).collect();
        near.sort_by(|a, b| (a.bytes / a.flops.max(1.0)).total_cmp(&(b.bytes / b.flops.max(1.0))));
        let quartile = if step % 2 == 0 { 3 } else { 1 };
        let chosen = near
            .get((near.len().saturating_sub(1) * quartile).div_ceil(4))
            .copied();
        let chosen = chosen.or_else(|| {
            candidates
                .iter()
                .filter(|r| !ladder.iter().any(|l| l.sample == r.sample))
                .min_by(|a, b| {
                    let da = (a.cost(by_bytes) / target).ln().abs();
                    let db = (b.cost(by_bytes) / target).ln().abs();
                    da.total_cmp(&db)
                })
        });
        if let Some(rung) = chosen {
            ladder.push(rung.clone());
        }
    }
    ladder.sort_by(|a, b| a.cost(by_bytes).total_cmp(&b.cost(by_bytes)));
    ladder
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::verify::sample::Param;

    fn rung(flops: f64, bytes: f64, tag: i64) -> Rung {
        Rung {
            sample: Sample {
                inputs: vec![("x".to_owned(), vec![tag], true)],
                params: vec![("p".to_owned(), Param::Int(tag))],
            },
            flops,
            bytes,
            bounds: Vec::new(),
        }
    }

    #[test]
    fn scaling_keeps_the_relations_between_operands() {
        let base = Sample {
            inputs: vec![
                ("x".to_owned(), vec![1, 4, 5, 6], true),
                ("weight".to_owned(), vec![3, 2, 3, 3], true),
                ("bias".to_owned(), vec![3], true),
            ],
            params: Vec::new(),
        };
        let big = scaled(&base, 2, 3, 2);
        assert_eq!(big.dims("x"), Some(&[2, 12, 10, 12][..]));
        assert_eq!(big.dims("weight"), Some(&[9, 6, 3, 3][..]));
        assert_eq!(big.dims("bias"), Some(&[9][..]));
    }

    #[test]
    fn the_ladder_spans_the_scale_and_varies_the_ratio() {
        let candidates: Vec<Rung> = (0..60)
            .map(|i| {
                rung(
                    1e3 * 1.2f64.powi(i),
                    1e3 * (1.0 + f64::from(i % 3)),
                    i.into(),
                )
            })
            .collect();
        let ladder = pick(candidates, false);
        assert!(ladder.len() >= 6, "{}", ladder.len());
        let span = ladder[ladder.len() - 1].flops / ladder[0].flops;
        assert!((100.0..=SPAN * 1.5).contains(&span), "{span}");
        assert!(ladder.windows(2).all(|w| w[0].flops <= w[1].flops));
    }
}
