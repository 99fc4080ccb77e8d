//! The fast executor: one checked program lowered for one sample, then run. Lowering knows the
//! sample's dims and parameters, so every index expression that reads no loop variable or local
//! is folded to a number, every affine one becomes `Σ cₛ·slotₛ + k` over the integer slots, and
//! every element access one such sum giving its flat position directly. Interval arithmetic over
//! the sample's loop ranges proves most accesses inside their tensors (their checks are dropped)
//! and proves that no index arithmetic of the run can overflow. Planned loop nests
//! ([`super::fast`]) keep their plans: on each entry the nest's tracked rows (each access's flat
//! position, each bound, each check) are sums over the enclosing slots, a level whose bounds do
//! not depend on the nest's outer levels has its range solved once per entry, and the innermost
//! level runs one of a few kernels: a dot product into a local, a scatter of products into an
//! output, a fold of a local held in a register (`m = max(m, x[…])`), or the general updates.
//!
//! The executor gives the reference interpreter ([`super::run`]) the last word: it computes
//! exactly what the reference computes — the same values, in the same order, the same counts,
//! the same step budget — and wherever the reference would fail (an index outside its tensor, a
//! read before a write, an absent input, a division by zero, an overflow, a budget exceeded, an
//! output element never written), or the program uses what the executor does not lower (local
//! tensors, compound updates of index locals), it gives up ([`Bail`]) before returning anything,
//! and the reference runs the sample from the start and reports. So a run's outcome and error are
//! the reference's by construction; only its speed differs.

mod code;
mod executor;
mod interval;
mod lower;
mod lower_nest;
mod nest_walk;
mod run_nest;

use super::ir::{Lowered, LoweredKey as Key, Program};
use super::machine::{Arith, Inputs, Outcome};
use code::Code;
use executor::Exec;
use lower::lower;
use std::any::Any;
use std::sync::Arc;

/// The executor gave up on this run: the reference interpreter runs it instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bail;

type Go<T> = Result<T, Bail>;

/// Runs `program` on `inputs` in `arith` (without tracing): `None` when the reference must run it.
#[cfg(test)]
pub fn run<A: Arith>(
    program: &Program,
    inputs: &Inputs<'_>,
    arith: &A,
) -> Option<Outcome<A::Cell>> {
    run_within(program, inputs, arith, super::machine::MAX_STEPS).map(|(outcome, _)| outcome)
}

/// [`run`] within `allowed` steps, with the steps it took.
pub fn run_within<A: Arith>(
    program: &Program,
    inputs: &Inputs<'_>,
    arith: &A,
    allowed: u64,
) -> Option<(Outcome<A::Cell>, u64)> {
    let mut exec = Exec::new(program, inputs, arith)?;
    exec.steps_left = allowed;
    let code = program
        .lowered
        .get::<A, _>(inputs, || lower(program, inputs, arith, &exec))?;
    exec.block(&code).ok()?;
    let used = allowed - exec.steps_left;
    Some((exec.finish()?, used))
}

/// How many samples' forms a program keeps.
const LOWERED: usize = 128;

impl Lowered {
    /// The forms for `inputs` in `A`, lowered by `lower` the first time (`None`: not run by the
    /// executor, remembered too).
    fn get<A: Arith, F: FnOnce() -> Option<Vec<Code<A::V>>>>(
        &self,
        inputs: &Inputs<'_>,
        lower: F,
    ) -> Option<Arc<[Code<A::V>]>> {
        let key = Key {
            arith: std::any::type_name::<A>(),
            dtype: inputs.dtype,
            inputs: inputs
                .inputs
                .iter()
                .map(|i| i.as_ref().map(|(dims, _)| dims.clone()))
                .collect(),
            outputs: inputs.outputs.to_vec(),
            params: inputs.params.to_vec(),
        };
        let found = self.0.lock().ok()?.get(&key).map(Arc::clone);
        let code = match found {
            Some(code) => code,
            None => {
                let lowered: Option<Arc<[Code<A::V>]>> = lower().map(Into::into);
                let code: Arc<dyn Any + Send + Sync> = Arc::new(lowered);
                let mut cache = self.0.lock().ok()?;
                // Bounded: past that many samples, the forms start afresh.
                if cache.len() >= LOWERED {
                    cache.clear();
                }
                cache.insert(key, Arc::clone(&code));
                code
            }
        };
        code.downcast_ref::<Option<Arc<[Code<A::V>]>>>()?.clone()
    }
}

impl Clone for Lowered {
    /// A copy of a program starts without lowered forms.
    fn clone(&self) -> Self {
        Lowered::default()
    }
}

impl PartialEq for Lowered {
    /// Lowered forms are a cache: they never make two programs differ.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Lowered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.0.lock().map_or(0, |c| c.len());
        write!(f, "Lowered({len} samples)")
    }
}

#[cfg(test)]
pub fn show<A: Arith>(program: &Program, inputs: &Inputs<'_>, arith: &A) {
    if let Some(exec) = Exec::new(program, inputs, arith) {
        println!("{:#?}", lower(program, inputs, arith, &exec));
    }
}
