//! A contract's step budget over all its semantics runs: each run may take at most what is left
//! of it (and at most [`MAX_STEPS`] on one sample), so hostile pseudo-code costs bounded time
//! over a whole contract — hundreds of samples — not only per sample.

use super::machine::MAX_STEPS;
use std::cell::Cell;

/// Steps the gate allows a contract's semantics per sample drawn (`samples`, counted as at
/// least the default): the heaviest contract of this repository's book takes about a twentieth
/// of the default's budget, and nearly as much at `samples = 1` (most of its runs are the grown
/// samples, the attacks and the worked example, which do not shrink with `samples`).
pub const STEPS_PER_SAMPLE: u64 = 16_000_000;

thread_local! {
    /// (steps left, steps given) of the contract being verified on this thread.
    static BUDGET: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// A budget of `steps` for every semantics run on this thread while it lives (the one it
/// replaced comes back when it is dropped).
#[derive(Debug)]
#[must_use = "the budget ends when this is dropped"]
pub struct Budget(Option<(u64, u64)>);

impl Budget {
    pub fn start(steps: u64) -> Budget {
        Budget(BUDGET.replace(Some((steps, steps))))
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        BUDGET.set(self.0);
    }
}

/// Runs `f` within a [`Budget`] of `steps`.
#[cfg(test)]
pub fn within<T>(steps: u64, f: impl FnOnce() -> T) -> T {
    let _budget = Budget::start(steps);
    f()
}

/// The steps one run may take now.
pub(super) fn allowed() -> u64 {
    BUDGET.get().map_or(MAX_STEPS, |(left, _)| left.min(MAX_STEPS))
}

/// Charges the steps a run took.
pub(super) fn spend(steps: u64) {
    if let Some((left, given)) = BUDGET.get() {
        BUDGET.set(Some((left.saturating_sub(steps), given)));
    }
}

/// What running out of `allowed` steps means, for the diagnostic.
pub(super) fn exceeded(allowed: u64) -> String {
    match BUDGET.get() {
        Some((_, given)) if allowed < MAX_STEPS => format!(
            "the pseudo-code ran more than {given} steps over this contract's samples ({STEPS_PER_SAMPLE} per sample drawn, counting at least the default `samples`)"
        ),
        _ => format!("the pseudo-code ran more than {MAX_STEPS} steps on one sample"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_bounds_every_run_and_is_restored() {
        assert_eq!(allowed(), MAX_STEPS);
        within(1000, || {
            assert_eq!(allowed(), 1000);
            spend(600);
            assert_eq!(allowed(), 400);
            assert!(exceeded(400).contains("1000 steps over this contract's samples"));
            spend(600);
            assert_eq!(allowed(), 0);
        });
        assert_eq!(allowed(), MAX_STEPS);
        assert!(exceeded(MAX_STEPS).contains("on one sample"));
    }
}
