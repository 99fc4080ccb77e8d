//! Sums led onto the overflow threshold, step by step. The random overflow runs land a running
//! sum exactly on the tie between the largest finite value and the next power of two only by
//! chance, and a kernel that keeps that tie finite shows only where a later term brings the sum
//! back below the largest. Here the semantics, traced on the sample, say which operand elements
//! each output element reads at each step; a few output elements get the operands of their
//! first three steps designed (every other element zero): the largest finite value, then a
//! quarter of its ulp (the sum just past the largest, which must round back to it) or half of
//! it (the sum on the tie, which must round to +Inf), then minus four ulps. A kernel that sends
//! the first sum to +Inf, or keeps the second finite, ends far from the semantics. Narrow float
//! dtypes only (16 bits or fewer), where kernels round their sums themselves.

use super::constraints::Domain;
use super::fill::{Fill, LED_RUN};
use super::run::{Placed, operands, oracle_inputs};
use super::sample::Sample;
use super::semantic::{Mode, Traces, evaluate, input_slot};
use super::worked::rounds;
use crate::providers::Kernel;
use crate::semantics::Step;
use crate::semantics::float::{largest, pow2};
use fkc_provider::DType;

/// Output elements (spread over the first output) whose first steps a led run tries to design.
const ELEMENTS: usize = 8;
/// The steps designed in each.
const STEPS: usize = 3;
/// The bit of an overflow run's seed that makes it a led run, and the one that leads it onto
/// the tie (clear: just past the largest).
const LED: u64 = LED_RUN;
const TIE: u64 = 1 << 61;

/// Where a led run's second step takes the running sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Led {
    /// Just past the largest finite value, short of the tie: it rounds back to the largest.
    Past,
    /// Onto the tie: it rounds to +Inf.
    Tie,
}

impl Led {
    pub(super) const BOTH: [Led; 2] = [Led::Past, Led::Tie];
    /// The bits of a seed that mark a led run (clear in every other overflow run's).
    pub(super) const BITS: u64 = LED | TIE;

    /// The led run an overflow run's `seed` asks for, if any.
    pub(super) fn of(seed: u64) -> Option<Led> {
        match (seed & LED != 0, seed & TIE != 0) {
            (false, _) => None,
            (true, false) => Some(Led::Past),
            (true, true) => Some(Led::Tie),
        }
    }

    /// The seed a run of `seed` fills its operands by: a led run's without the bit that
    /// tells its two runs apart (they fill alike, so one trace serves both), any other's
    /// `seed` itself.
    pub(super) fn fill_seed(seed: u64) -> u64 {
        match Led::of(seed) {
            Some(_) => seed & !TIE,
            None => seed,
        }
    }

    /// `seed` marked as this led run.
    pub(super) fn seed(self, seed: u64) -> u64 {
        match self {
            Led::Past => (seed | LED) & !TIE,
            Led::Tie => seed | LED | TIE,
        }
    }

    /// What the operands were, for a diagnostic's note.
    pub(super) fn operands(self) -> &'static str {
        match self {
            Led::Past => {
                "operands: zeros, but where a few output elements read their first three steps: the largest finite value, then a quarter of its ulp, then minus four ulps, so that each running sum goes just past the largest (where it must round back to it) and then below it"
            }
            Led::Tie => {
                "operands: zeros, but where a few output elements read their first three steps: the largest finite value, then half of its ulp, then minus four ulps, so that each running sum lands on the tie (where it must round to +Inf) and then back below the largest"
            }
        }
    }

    /// The designed steps' values in `dtype`: the largest, a quarter or half of its ulp, minus
    /// four ulps (`None` for a dtype other than a narrow float).
    fn steps(self, dtype: DType) -> Option<[f64; STEPS]> {
        let fkc_provider::dtype::Format::Float { mantissa, .. } = dtype.format() else {
            return None;
        };
        if dtype.size_bytes() > 2 {
            return None;
        }
        let largest = largest(dtype);
        // the largest value is (2 − 2^−m)·2^e, its ulp 2^(e−m)
        let ulp = largest / (2.0 - pow2(-(mantissa as i32))) * pow2(-(mantissa as i32));
        let second = match self {
            Led::Past => ulp / 4.0,
            Led::Tie => ulp / 2.0,
        };
        Some([largest, second, -4.0 * ulp])
    }
}

/// The reading steps of a few output elements of a sample, spread over its first output:
/// per element, per step that reads an operand of the call's dtype, the elements it reads
/// (operand slot, row-major index).
#[derive(Debug)]
pub(super) struct Traced {
    elements: Vec<Vec<Reads>>,
}

/// The operand elements one step reads (slot, row-major index), each once.
type Reads = Vec<(usize, usize)>;

impl Traced {
    /// The semantics traced on `sample` with the operands of a led run of `seed` before any is
    /// designed (zeros; an index its seeded value): `None` when `seed` is no led run, `dtype`
    /// no narrow float, the semantics never round (a selection, a copy: no sum to lead) or
    /// cannot be traced there.
    pub(super) fn of(
        domain: &Domain<'_>,
        kernel: &Kernel<'_>,
        sample: &Sample,
        dtype: DType,
        seed: u64,
    ) -> Option<Traced> {
        Led::of(seed)?.steps(dtype)?;
        // a selection or a copy never rounds: nothing to lead
        let program = domain.contract.semantics.as_ref()?.widest_program(dtype)?;
        if !rounds(program) {
            return None;
        }
        let bounds = domain.value_bounds(sample, dtype);
        let fill = Fill::NearOverflow(Led::fill_seed(seed));
        let zeros = operands(kernel, sample, dtype, fill, &bounds, &[]).ok()?;
        let predicted = domain.outputs(sample, &domain.bindings(sample, dtype))?;
        let inputs = oracle_inputs(&zeros);
        let (mode, trace) = (Mode::Bounded, true);
        let evaluated = evaluate(
            domain, kernel, dtype, sample, &inputs, &predicted, mode, trace,
        );
        let traces: Traces = evaluated.ok()??.1?;
        let first = traces.into_iter().next()?;
        // only operands of the call's dtype are designed (an index keeps its value)
        let slot = |tensor: usize| {
            let slot = input_slot(domain, kernel, dtype, tensor)?;
            kernel.inputs.get(slot)?.dtype.is_none().then_some(slot)
        };
        let reads = |step: &Step| -> Reads {
            let mut reads = Vec::new();
            for &(tensor, flat) in &step.reads {
                match slot(tensor) {
                    Some(slot) if !reads.contains(&(slot, flat)) => reads.push((slot, flat)),
                    _ => {}
                }
            }
            reads
        };
        let spread = (0..ELEMENTS).filter_map(|i| first.get(i * first.len() / ELEMENTS));
        let elements = spread
            .map(|steps| steps.iter().map(reads).filter(|r| !r.is_empty()).collect())
            .collect();
        Some(Traced { elements })
    }

    /// The elements the `led` run sets in `dtype`: `None` when no traced output element has
    /// [`STEPS`] reading steps that can be designed.
    pub(super) fn placements(&self, led: Led, dtype: DType) -> Option<Vec<Placed>> {
        let steps = led.steps(dtype)?;
        let mut design = Design::default();
        for element in &self.elements {
            design.try_element(element, &steps);
        }
        (!design.placed.is_empty()).then_some(design.placed)
    }
}

/// The elements set so far, those that must stay zero included.
#[derive(Debug, Default)]
struct Design {
    placed: Vec<Placed>,
}

impl Design {
    /// The value set at `(slot, flat)` by `wanted` or before, if any.
    fn at(&self, wanted: &[Placed], slot: usize, flat: usize) -> Option<f64> {
        let mut set = wanted.iter().chain(&self.placed);
        set.find(|p| p.slot == slot && p.flat == flat)
            .map(|p| p.value)
    }

    /// Designs the element made by `steps` (each the elements it reads) when that agrees
    /// with every element set before: in each of its first [`STEPS`] steps one element
    /// carries the step's value and the others read 1; every later read stays zero.
    fn try_element(&mut self, steps: &[Reads], values: &[f64; STEPS]) {
        let mut wanted: Vec<Placed> = Vec::new();
        if steps.len() < STEPS {
            return;
        }
        for (step, value) in steps.iter().zip(values) {
            let Some(placed) = self.designed_step(step, *value, &wanted) else {
                return;
            };
            wanted.extend(placed);
        }
        for &(slot, flat) in steps.iter().skip(STEPS).flatten() {
            match self.at(&wanted, slot, flat) {
                None => wanted.push(Placed {
                    slot,
                    flat,
                    value: 0.0,
                }),
                Some(0.0) => {}
                Some(_) => return,
            }
        }
        self.placed.extend(wanted);
    }

    /// One designed step over `reads`: the read already set to `value`, or else the first one
    /// not yet set, carries it, and the others read 1 (`None` when that disagrees with what is
    /// set).
    fn designed_step(
        &self,
        reads: &[(usize, usize)],
        value: f64,
        wanted: &[Placed],
    ) -> Option<Vec<Placed>> {
        let set = |&(slot, flat): &(usize, usize)| self.at(wanted, slot, flat);
        let carrier = (reads.iter().position(|r| set(r) == Some(value)))
            .or_else(|| reads.iter().position(|r| set(r).is_none()))?;
        let mut placed = Vec::new();
        for (i, &(slot, flat)) in reads.iter().enumerate() {
            let value = if i == carrier { value } else { 1.0 };
            match set(&(slot, flat)) {
                None => placed.push(Placed { slot, flat, value }),
                Some(set) if set == value => {}
                Some(_) => return None,
            }
        }
        Some(placed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(reads: &[(usize, usize)]) -> Reads {
        reads.to_vec()
    }

    fn value_at(design: &Design, slot: usize, flat: usize) -> Option<f64> {
        design.at(&[], slot, flat)
    }

    #[test]
    fn a_led_run_is_marked_in_its_seed_and_its_steps_lead_f16_past_the_largest_or_onto_the_tie() {
        assert_eq!(Led::of(0x1234), None);
        for led in Led::BOTH {
            assert_eq!(Led::of(led.seed(0x1234)), Some(led));
            assert_eq!(led.seed(0x1234) & 0xffff, 0x1234);
        }
        assert_eq!(Led::Past.steps(DType::F16), Some([65504.0, 8.0, -128.0]));
        assert_eq!(Led::Tie.steps(DType::F16), Some([65504.0, 16.0, -128.0]));
        let [largest, half_ulp, _] = Led::Tie.steps(DType::BF16).unwrap_or_default();
        assert_eq!(
            half::bf16::from_f64(largest + half_ulp),
            half::bf16::INFINITY
        );
        assert_eq!(Led::Tie.steps(DType::F32), None);
        assert_eq!(Led::Tie.steps(DType::I32), None);
    }

    /// Two outputs of a convolution sharing their weights (slot 1): each reads `x` (slot 0)
    /// at its own elements and the same weights in the same order.
    #[test]
    fn outputs_sharing_weights_are_designed_alike_and_every_later_read_stays_zero() {
        let values = [65504.0, 16.0, -128.0];
        let first: Vec<Reads> = (0..4).map(|t| step(&[(0, t), (1, t)])).collect();
        let second: Vec<Reads> = (0..4).map(|t| step(&[(0, 10 + t), (1, t)])).collect();
        let mut design = Design::default();
        design.try_element(&first, &values);
        design.try_element(&second, &values);
        for (x, value) in [(0, 65504.0), (1, 16.0), (2, -128.0), (3, 0.0)] {
            assert_eq!(value_at(&design, 0, x), Some(value), "x[{x}]");
            assert_eq!(value_at(&design, 0, 10 + x), Some(value), "x[{}]", 10 + x);
        }
        for (w, value) in [(0, 1.0), (1, 1.0), (2, 1.0), (3, 0.0)] {
            assert_eq!(value_at(&design, 1, w), Some(value), "w[{w}]");
        }
    }

    /// An output whose later steps read an element another one designed is left as it is.
    #[test]
    fn an_output_that_would_read_a_designed_element_later_is_not_designed() {
        let values = [65504.0, 16.0, -128.0];
        let first: Vec<Reads> = (0..3).map(|t| step(&[(0, t)])).collect();
        let overlapping: Vec<Reads> = (5..9).chain([0]).map(|t| step(&[(0, t)])).collect();
        let short: Vec<Reads> = (20..22).map(|t| step(&[(0, t)])).collect();
        let mut design = Design::default();
        design.try_element(&first, &values);
        let before = design.placed.len();
        design.try_element(&overlapping, &values);
        design.try_element(&short, &values);
        assert_eq!(design.placed.len(), before);
        assert_eq!(value_at(&design, 0, 5), None);
    }
}
