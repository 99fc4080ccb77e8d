//! Timing the ladder. Every rung's operands are made once; then the rungs are timed in rounds —
//! one call of each rung per round, in a fresh seeded order each round — so that a burst of work from another
//! process lands on a few calls of every rung rather than on every call of one rung, and each
//! rung's median stays clean. A small rung gets an untimed call right before its timed one, so
//! it is measured with its operands in cache, as on consecutive calls. The rounds stop at
//! [`MAX_REPETITIONS`] or at the budget (after at least [`MIN_REPETITIONS`]); a rung whose
//! predicted share would overrun the budget is not taken.

use super::ladder::Rung;
use crate::calibration::fit::{self, Point};
use crate::calibration::{self, LadderPoint, POOR_WORST};
use crate::providers::{CallOutcome, Kernel};
use crate::verify::fill::Fill;
use crate::verify::run;
use crate::verify::sample::Rng;
use fkc_provider::{DType, Operand, ParamValues};
use std::time::{Duration, Instant};

/// The time one contract's ladder may take, at most (re-timing disturbed rungs may add
/// [`RETIME_BUDGET`]).
pub const BUDGET: Duration = Duration::from_millis(1500);
/// The time re-timing disturbed rungs may take, at most.
pub const RETIME_BUDGET: Duration = Duration::from_millis(500);
/// Timed calls per rung: at least, at most.
pub const MIN_REPETITIONS: usize = 5;
pub const MAX_REPETITIONS: usize = 31;
/// A rung faster than this gets an untimed call right before each timed one.
const WARM_BELOW_NS: f64 = 200_000.0;

/// One rung ready to run.
struct Prepared<'r> {
    rung: &'r Rung,
    operands: Vec<Option<Operand>>,
    params: ParamValues,
    times: Vec<f64>,
}

/// Makes a rung's operands and runs it once untimed; `None` when the kernel does not run it.
fn prepare<'r>(
    kernel: &Kernel<'_>,
    rung: &'r Rung,
    dtype: DType,
    seed: u64,
) -> Option<Prepared<'r>> {
    let operands = run::operands(
        kernel,
        &rung.sample,
        dtype,
        Fill::Random(seed),
        &rung.bounds,
        &[],
    )
    .ok()?;
    let params = run::params(kernel, &rung.sample).ok()?;
    let CallOutcome::Outputs(_) = kernel.run(&operands, &params) else {
        return None;
    };
    Some(Prepared {
        rung,
        operands,
        params,
        times: Vec::new(),
    })
}

/// One timed call (after an untimed one when the rung is small); `None` when it fails.
fn timed_call(kernel: &Kernel<'_>, prepared: &Prepared<'_>) -> Option<f64> {
    let small = prepared.times.last().is_none_or(|ns| *ns < WARM_BELOW_NS);
    if small {
        let CallOutcome::Outputs(_) = kernel.run(&prepared.operands, &prepared.params) else {
            return None;
        };
    }
    let start = Instant::now();
    let outcome = kernel.run(&prepared.operands, &prepared.params);
    let elapsed = start.elapsed();
    let CallOutcome::Outputs(outputs) = outcome else {
        return None;
    };
    drop(outputs);
    Some(elapsed.as_secs_f64() * 1e9)
}

fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    let middle = times.len() / 2;
    match times.len() {
        0 => 0.0,
        n if n % 2 == 1 => times[middle],
        _ => (times[middle - 1] + times[middle]) / 2.0,
    }
}

/// Times the ladder in rounds within [`BUDGET`]. Returns the points and their rungs.
pub fn time_ladder<'r>(
    kernel: &Kernel<'_>,
    rungs: &'r [Rung],
    dtype: DType,
    by_bytes: bool,
    seed: u64,
) -> (Vec<LadderPoint>, Vec<&'r Rung>) {
    let started = Instant::now();
    let mut prepared: Vec<Prepared<'r>> = Vec::new();
    // The first round, smallest first, decides which rungs fit: every rung taken must leave
    // time for MIN_REPETITIONS rounds of all of them.
    let mut round_ns = 0.0;
    let mut last: Option<(f64, f64)> = None; // (cost, ns)
    for rung in rungs {
        if let Some((cost, ns)) = last {
            let predicted = ns * (rung.cost(by_bytes) / cost).max(1.0);
            let needed = (round_ns + predicted) * (MIN_REPETITIONS + 1) as f64 / 1e9;
            if started.elapsed() + Duration::from_secs_f64(needed) > BUDGET {
                break;
            }
        }
        let Some(mut ready) = prepare(kernel, rung, dtype, seed) else {
            continue;
        };
        let Some(ns) = timed_call(kernel, &ready) else {
            continue;
        };
        ready.times.push(ns);
        round_ns += ns;
        last = Some((rung.cost(by_bytes), ns));
        prepared.push(ready);
    }
    for round in 1..MAX_REPETITIONS {
        if round >= MIN_REPETITIONS && started.elapsed() > BUDGET {
            break;
        }
        // A fresh order each round: a preemption that recurs with a period close to the
        // round's length must not land on the same rung every time.
        let mut order: Vec<usize> = (0..prepared.len()).collect();
        let mut rng = Rng::new(seed ^ (round as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for last in (1..order.len()).rev() {
            let pick = usize::try_from(rng.range(0, last as i64)).unwrap_or(0);
            order.swap(last, pick);
        }
        let mut failed = Vec::new();
        for index in order {
            let Some(ready) = prepared.get_mut(index) else {
                continue;
            };
            match timed_call(kernel, ready) {
                Some(ns) => ready.times.push(ns),
                None => failed.push(index),
            }
        }
        failed.sort_unstable();
        for index in failed.into_iter().rev() {
            prepared.remove(index);
        }
    }
    prepared
        .into_iter()
        .map(|mut ready| {
            let repetitions = ready.times.len();
            let point = LadderPoint {
                sample: ready.rung.sample.describe(),
                flops: ready.rung.flops,
                bytes_moved: ready.rung.bytes,
                ns: calibration::round(median(&mut ready.times), 4),
                repetitions,
            };
            (point, ready.rung)
        })
        .unzip()
}

/// Other processes only ever add time to a call: a rung the first fit misses by more than
/// [`POOR_WORST`] is timed once more (within [`RETIME_BUDGET`]) and keeps the lower of its two
/// medians, so that one disturbed rung does not decide the verdict. A formula of the wrong
/// shape misses the same rungs again.
pub fn retime_outliers(
    kernel: &Kernel<'_>,
    ladder: &mut [LadderPoint],
    rungs: &[&Rung],
    dtype: DType,
    seed: u64,
) {
    let points: Vec<Point> = ladder.iter().map(LadderPoint::point).collect();
    let Some(model) = fit::fit(&points) else {
        return;
    };
    let deadline = Instant::now() + RETIME_BUDGET;
    for (index, residual) in model.residuals(&points).into_iter().enumerate() {
        if residual.abs() <= POOR_WORST || Instant::now() > deadline {
            continue;
        }
        let (Some(point), Some(rung)) = (ladder.get_mut(index), rungs.get(index)) else {
            continue;
        };
        if let Some((ns, repetitions)) = time_rung(kernel, rung, dtype, seed, deadline)
            && ns < point.ns
        {
            point.ns = calibration::round(ns, 4);
            point.repetitions = repetitions;
        }
    }
}

/// One rung's median time in nanoseconds and its number of timed calls (at least
/// [`MIN_REPETITIONS`], more until `deadline`); `None` when the kernel does not run it.
fn time_rung(
    kernel: &Kernel<'_>,
    rung: &Rung,
    dtype: DType,
    seed: u64,
    deadline: Instant,
) -> Option<(f64, usize)> {
    let mut ready = prepare(kernel, rung, dtype, seed)?;
    while ready.times.len() < MAX_REPETITIONS
        && (ready.times.len() < MIN_REPETITIONS || Instant::now() < deadline)
    {
        let ns = timed_call(kernel, &ready)?;
        ready.times.push(ns);
    }
    let repetitions = ready.times.len();
    Some((median(&mut ready.times), repetitions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }
}
