//! The half-precision drift plot, found on the semantics without knowing the op: from an
//! admitted sample, moves that shrink the first output to one element; then the variables
//! (dims and parameters, tied dims following) whose doubling doubles the terms that element's
//! trace has — the reduced extent. Along that family the kernel runs on random operands and
//! its error is set against the semantics' bound, which is kept only where it is below the
//! terms' own magnitude `Σ|term|` (beyond, it says nothing). An exact computation (a
//! selection), no family, or no error at any length: no plot.

use super::super::constraints::Domain;
use super::super::fill::Fill;
use super::super::run::{Input, arguments, oracle_inputs};
use super::super::sample::Sample;
use super::super::semantic::{Elements, Mode, Traces, evaluate, zero_inputs};
use super::candidates::{self, Var};
use super::statements;
use super::{Drift, DriftPoint};
use crate::providers::{CallOutcome, Kernel};
use crate::semantics::Approx;
use fkc_provider::DType;
use std::collections::HashSet;

/// The longest reduction measured.
const LIMIT: usize = 4096;
/// Trials per length (seeded random operands in [-1, 1)).
const TRIALS: u64 = 2;
/// Samples of the pool tried as starting points for the family.
const STARTS: usize = 24;
/// At most this many variables grow together.
const GROUP: usize = 3;

/// The drift of `kernel` in `dtype`, when its results drift.
pub fn measure(
    domain: &Domain<'_>,
    kernel: &Kernel<'_>,
    dtype: DType,
    pool: &[Sample],
) -> Option<Drift> {
    let program = domain.contract.semantics.as_ref()?.widest_program(dtype)?;
    if !statements::rounds(program) {
        return None; // every result is exact: nothing drifts
    }
    let on = On {
        domain,
        kernel,
        dtype,
    };
    let (grows, family) = on.family(pool)?;
    let points: Vec<DriftPoint> = family
        .iter()
        .filter_map(|(length, sample)| on.point(sample, *length))
        .collect();
    let drifts = points.iter().any(|p| p.error > 0.0);
    (points.len() >= 2 && drifts).then(|| Drift {
        dtype: dtype.name().to_owned(),
        symbol: kernel.symbol.clone(),
        grows,
        trials: TRIALS as usize,
        points,
    })
}

struct On<'d, 'k> {
    domain: &'d Domain<'d>,
    kernel: &'k Kernel<'k>,
    dtype: DType,
}

impl On<'_, '_> {
    /// What grows (`` `x.dim[1]`, `kernel.dim[1]` ``) and the family, (terms, sample) with
    /// the terms doubling up to [`LIMIT`].
    fn family(&self, pool: &[Sample]) -> Option<(String, Vec<(usize, Sample)>)> {
        let mut tried = HashSet::new();
        pool.iter().take(STARTS).find_map(|start| {
            let start = candidates::without_optionals(self.domain, start, self.dtype);
            let base = candidates::single_output(self.domain, &start, self.dtype)?;
            if !tried.insert(base.describe()) || self.exact(&base)? {
                return None;
            }
            let terms = self.terms(&base).filter(|t| *t >= 1)?;
            groups(&base)
                .into_iter()
                .find_map(|group| self.along(&base, terms, &group))
        })
    }

    /// The family growing `group` from `base`, when doubling it twice doubles the terms twice.
    fn along(
        &self,
        base: &Sample,
        terms: usize,
        group: &[Var],
    ) -> Option<(String, Vec<(usize, Sample)>)> {
        let at = |factor: usize| {
            let sample = self.scaled(base, group, factor)?;
            let found = self.terms(&sample)?;
            (found == terms * factor).then_some((found, sample))
        };
        at(2)?;
        at(4)?;
        let mut family = vec![(terms, base.clone())];
        let mut factor = 2;
        while terms * factor <= LIMIT {
            family.extend(at(factor));
            factor *= 2;
        }
        let last = family.last().map_or(base, |(_, s)| s);
        Some((grows(base, last, group), family))
    }

    /// `base` with every variable of `group` multiplied by `factor` (tied dims following),
    /// when admitted with one output element.
    fn scaled(&self, base: &Sample, group: &[Var], factor: usize) -> Option<Sample> {
        let mut sample = base.clone();
        for var in group {
            let value = var.get(base)?.checked_mul(i64::try_from(factor).ok()?)?;
            var.set(&mut sample, value);
        }
        let sample = candidates::tied(self.domain, &sample, self.dtype);
        (candidates::output_elements(self.domain, &sample, self.dtype)? == 1).then_some(sample)
    }

    /// The steps the first output's one element is made of.
    fn terms(&self, sample: &Sample) -> Option<usize> {
        let (_, traces) = self.oracle(sample, &zero_inputs(self.kernel, sample))?;
        match traces.first()?.as_slice() {
            [steps] => Some(steps.len()),
            _ => None,
        }
    }

    /// Whether the semantics round nothing on `sample` (random operands).
    fn exact(&self, sample: &Sample) -> Option<bool> {
        let bounds = self.domain.value_bounds(sample, self.dtype);
        let (operands, _) =
            arguments(self.kernel, sample, self.dtype, Fill::Random(7), &bounds).ok()?;
        let (want, _) = self.oracle(sample, &oracle_inputs(&operands))?;
        Some(want.iter().all(|a| a.error == 0.0))
    }

    /// The worst of [`TRIALS`] runs of the kernel at one length.
    fn point(&self, sample: &Sample, length: usize) -> Option<DriftPoint> {
        let mut worst: Option<DriftPoint> = None;
        for trial in 0..TRIALS {
            let seed = 0x000d_41f7 ^ (trial << 20) ^ length as u64;
            let Some(point) = self.trial(sample, length, seed) else {
                continue;
            };
            if worst.as_ref().is_none_or(|w| point.error > w.error) {
                worst = Some(point);
            }
        }
        worst
    }

    fn trial(&self, sample: &Sample, length: usize, seed: u64) -> Option<DriftPoint> {
        let bounds = self.domain.value_bounds(sample, self.dtype);
        let (operands, values) =
            arguments(self.kernel, sample, self.dtype, Fill::Random(seed), &bounds).ok()?;
        let CallOutcome::Outputs(outputs) = self.kernel.run(&operands, &values) else {
            return None;
        };
        let got = outputs.first()?.to_f64_vec().first().copied()?;
        let (want, traces) = self.oracle(sample, &oracle_inputs(&operands))?;
        let exact = want.first()?;
        let magnitude: f64 = traces.first()?.first()?.iter().map(|s| s.value.abs()).sum();
        let error = (got - exact.value).abs();
        error.is_finite().then(|| DriftPoint {
            length,
            error,
            bound: (exact.error < magnitude).then_some(exact.error),
        })
    }

    /// The semantics on `inputs`: the first output's elements and each output's trace.
    fn oracle(&self, sample: &Sample, inputs: &[Option<Input>]) -> Option<(Vec<Approx>, Traces)> {
        let predicted = candidates::outputs(self.domain, sample, self.dtype)?;
        let (expected, traces) = evaluate(
            self.domain,
            self.kernel,
            self.dtype,
            sample,
            inputs,
            &predicted,
            Mode::Bounded,
            true,
        )
        .ok()??;
        match expected.outputs.into_iter().next()? {
            Elements::Bounded(want) => Some((want, traces?)),
            Elements::Ordered(_) => None,
        }
    }
}

/// The variables grown, then those the contract ties to them: `` `x.dim[1]`, and
/// `kernel.dim[1]` follows it ``.
fn grows(base: &Sample, last: &Sample, group: &[Var]) -> String {
    let named = |vars: &[Var]| -> Vec<String> {
        vars.iter().map(|v| format!("`{}`", v.name(base))).collect()
    };
    let tied: Vec<Var> = Var::all(base)
        .into_iter()
        .filter(|v| !group.contains(v) && v.get(base) != v.get(last))
        .collect();
    let mut text = named(group).join(", ");
    match tied.len() {
        0 => {}
        1 => text.push_str(&format!(", and {} follows", named(&tied).join(", "))),
        _ => text.push_str(&format!(", and {} follow", named(&tied).join(", "))),
    }
    text
}

/// Groups of at most [`GROUP`] variables of equal value (at least 1), at most one per input
/// or parameter, smallest groups first.
fn groups(sample: &Sample) -> Vec<Vec<Var>> {
    let vars: Vec<(Var, i64)> = Var::all(sample)
        .into_iter()
        .filter_map(|v| Some((v, v.get(sample).filter(|value| *value >= 1)?)))
        .collect();
    let mut groups: Vec<Vec<(Var, i64)>> = vars.iter().map(|v| vec![*v]).collect();
    let mut all = groups.clone();
    for _ in 1..GROUP {
        let mut longer = Vec::new();
        for group in &groups {
            let Some(&(last, value)) = group.last() else {
                continue;
            };
            let after = vars.iter().skip_while(|(v, _)| *v != last).skip(1);
            for &(var, other) in after {
                if other == value && group.iter().all(|(g, _)| g.owner() != var.owner()) {
                    let mut grown = group.clone();
                    grown.push((var, other));
                    longer.push(grown);
                }
            }
        }
        all.extend(longer.iter().cloned());
        groups = longer;
    }
    all.into_iter()
        .map(|g| g.into_iter().map(|(v, _)| v).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::sample::Param;

    #[test]
    fn groups_hold_equal_values_of_distinct_owners_smallest_first() {
        let sample = Sample {
            inputs: vec![
                ("x".into(), vec![1, 2], true),
                ("w".into(), vec![2, 0], true),
            ],
            params: vec![("k".into(), Param::Int(2))],
        };
        let groups = groups(&sample);
        let names: Vec<String> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|v| v.name(&sample))
                    .collect::<Vec<_>>()
                    .join("+")
            })
            .collect();
        // w.dim[1] = 0 cannot grow; x.dim[0] = 1 has no partner of its value.
        assert_eq!(
            names,
            [
                "x.dim[0]",
                "x.dim[1]",
                "w.dim[0]",
                "k",
                "x.dim[1]+w.dim[0]",
                "x.dim[1]+k",
                "w.dim[0]+k",
                "x.dim[1]+w.dim[0]+k",
            ]
        );
    }
}
