//! Claims attacked with designed operands. A stated precision (`max_ulp: N`, `max_absolute`,
//! `max_relative`) is checked on the random operands of the admitted check, where sums rarely
//! cancel; here the first samples run again on operands whose exponents spread wide with mixed
//! signs, so that sums cancel to far below their terms and a kernel's rounding error shows
//! against the exact result. A bitwise claim (an `order`, `max_ulp: 0`, bitwise determinism)
//! is checked again on operands of signed zeros, where random values almost never give a zero
//! result: a zero of the wrong sign (a tie taken from the wrong side, `+0.0` added where the
//! order gives `-0.0`) breaks it; on operands near the dtype's smallest normal value, whose
//! products and sums are subnormal: a kernel that flushes subnormals to zero breaks it; and on
//! operands of about half the largest finite value, whose sums cross the overflow threshold: a
//! kernel that clamps to the largest finite, or rounds the last binade wrongly, breaks it. And
//! every value claim is checked on operands of magnitudes from 1/16 to 256, either sign, where
//! random values in [-1, 1) never go: a function cut to its limit past a threshold (GELU taken
//! as 0 below −8) or approximated on an interval breaks it.

use super::Gate;
use super::fill::{Fill, ramps, straddles};
use super::run::{Outcome, Placed, call_placed};
use super::sample::Sample;
use super::shrink::{Check, Keep, Replay};
use super::threshold::{Led, Traced};
use crate::providers::Kernel;
use fkc_provider::DType;
use std::cmp::Reverse;

/// Samples each attack runs on.
const DESIGNED_SAMPLES: usize = 8;
/// Samples the underflow attack runs on: its operands are what find a flush to zero (every
/// product and partial sum near the smallest normal), not the variety of the samples.
const UNDERFLOW_SAMPLES: usize = 4;
/// At most this many input elements in a sample led runs take (the semantics are traced).
const LED_ELEMENTS: i64 = 2048;

/// Operands designed to break one kind of claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Designed {
    /// Exponents spread wide with mixed signs: sums that cancel (a stated precision).
    IllConditioned,
    /// `+0.0`, `-0.0` and `-1.0`: results that are zeros of either sign (a bitwise claim).
    SignedZeros,
    /// Near the smallest normal value: subnormal products, sums and operands (a bitwise claim).
    Underflow,
    /// About half the largest finite value: sums across the overflow threshold (a bitwise
    /// claim).
    Overflow,
    /// Magnitudes from 1/16 to 256, either sign: every range of a function's argument (any
    /// value claim).
    Magnitudes,
}

impl Designed {
    fn fill(self, seed: u64) -> Fill {
        match self {
            Designed::IllConditioned => Fill::WideExponents(seed),
            Designed::SignedZeros => Fill::SignedZeros(seed),
            Designed::Underflow => Fill::NearUnderflow(seed),
            Designed::Overflow => Fill::NearOverflow(seed),
            Designed::Magnitudes => Fill::Magnitudes(seed),
        }
    }

    /// The samples this attack runs on.
    fn samples(self) -> usize {
        match self {
            Designed::Underflow => UNDERFLOW_SAMPLES,
            Designed::IllConditioned
            | Designed::SignedZeros
            | Designed::Magnitudes
            | Designed::Overflow => DESIGNED_SAMPLES,
        }
    }

    fn check(self) -> Check {
        match self {
            Designed::IllConditioned => Check::Conditioning,
            Designed::SignedZeros => Check::SignedZeros,
            Designed::Underflow => Check::Underflow,
            Designed::Overflow => Check::Overflow,
            Designed::Magnitudes => Check::Magnitudes,
        }
    }

    /// What the operands were, for a diagnostic's note.
    fn operands(self) -> &'static str {
        match self {
            Designed::IllConditioned => {
                "operands: exponents spread wide with mixed signs, so the sums cancel"
            }
            Designed::SignedZeros => "operands: +0.0, -0.0 and -1.0, so results are signed zeros",
            Designed::Underflow => {
                "operands: near the smallest normal value, so products and sums are subnormal"
            }
            Designed::Overflow => {
                "operands: about half the largest finite value or its square root, so sums or products cross the overflow threshold, or (16 bits or fewer) the largest with 1 and a quarter or half of its ulp, so sums land just past it or on the tie"
            }
            Designed::Magnitudes => {
                "operands: magnitudes from 1/16 to 256, either sign, or a ramp from -16 to 16, so a function meets every range of its argument"
            }
        }
    }

    /// The evidence row for `checked` samples of `dtype`.
    /// `straddled`: whether an overflow run straddled the largest value ([`straddles`]).
    /// `led`: led runs checked ([`super::threshold`]).
    fn row(self, dtype: DType, checked: usize, straddled: bool, led: usize) -> (String, String) {
        let straddle = match straddled {
            true => {
                ", or of the largest with 1 and a quarter of its ulp (sums just past it, short of the tie) or half of it (sums on the tie)"
            }
            false => "",
        };
        let led = match led {
            0 => String::new(),
            runs => format!(
                "; {runs} runs leading ordered sums in steps (the largest, then a quarter or half of its ulp, then minus four ulps) just past the largest or onto the tie and back below it"
            ),
        };
        match self {
            Designed::IllConditioned => (
                format!("{dtype} precision, ill-conditioned"),
                format!(
                    "{checked} samples on operands whose exponents spread wide with mixed signs (sums that cancel): every value within the stated precision of the exact result"
                ),
            ),
            Designed::SignedZeros => (
                format!("{dtype} signed zeros"),
                format!(
                    "{checked} samples on operands of +0.0, -0.0 and -1.0: every zero with the sign the semantics give"
                ),
            ),
            Designed::Underflow => (
                format!("{dtype} near underflow"),
                format!(
                    "{checked} samples on operands near the smallest normal value (subnormal products, sums and operands): every value bit for bit the semantics'"
                ),
            ),
            Designed::Magnitudes => (
                format!("{dtype} magnitudes"),
                format!(
                    "{checked} samples on operands of magnitudes from 1/16 to 256, either sign, or evenly spaced from -16 to 16 (every range a function's argument may be cut at): every value as the contract allows"
                ),
            ),
            Designed::Overflow => (
                format!("{dtype} near overflow"),
                format!(
                    "{checked} samples on operands of about half the largest finite value or its square root (sums, or sums of products, across the overflow threshold){straddle}{led}: every value as the semantics give it, ±Inf included"
                ),
            ),
        }
    }
}

impl Gate<'_> {
    /// Whether the contract states a precision of its own (other than exactness).
    fn states_precision(&self) -> bool {
        let stated = self.stated_precision();
        stated.max_ulp.is_some_and(|n| n > 0)
            || stated.max_absolute.is_some()
            || stated.max_relative.is_some()
    }

    /// Checks the stated precision on ill-conditioned operands and a bitwise claim on signed
    /// zeros (nothing to do for a claim the contract does not make).
    pub(super) fn designed_attacks(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        samples: &[&Sample],
    ) {
        // an integer dtype has neither rounding to attack nor signed zeros
        if !self.has_semantics() || !dtype.is_float() {
            return;
        }
        if !self.attack(Designed::Magnitudes, kernel, dtype, samples) {
            return;
        }
        if self.states_precision() && !self.attack(Designed::IllConditioned, kernel, dtype, samples)
        {
            return;
        }
        if self.claims_bits()
            && self.attack(Designed::SignedZeros, kernel, dtype, samples)
            && self.attack(Designed::Underflow, kernel, dtype, samples)
        {
            self.attack(Designed::Overflow, kernel, dtype, samples);
        }
    }

    /// Runs the first samples on `designed` operands, those with parameter values not seen
    /// before first (a zero's sign may hang on one value, a slope's sign); false after reporting
    /// a failure.
    fn attack(
        &mut self,
        designed: Designed,
        kernel: &Kernel<'_>,
        dtype: DType,
        samples: &[&Sample],
    ) -> bool {
        let (mut checked, mut straddled) = (0, false);
        let mut ordered: Vec<&Sample> = varied(samples).collect();
        let gate_seed = self.seed;
        let seed_of = |index: usize| match designed {
            // the run index alone in bits 24 and 25 (the first four runs take one kind each),
            // and no led run's bits (a seed's own would make every run one)
            Designed::Overflow => (gate_seed & !(0b11 << 24) & !Led::BITS) ^ ((index as u64) << 24),
            _ => gate_seed ^ ((index as u64) << 24),
        };
        let first_ramp = (0..designed.samples()).find(|&i| ramps(seed_of(i)));
        if let (Designed::Magnitudes, Some(index)) = (designed, first_ramp) {
            largest_at(&mut ordered, index);
        }
        let taken: Vec<&Sample> = ordered.into_iter().take(designed.samples()).collect();
        for (index, sample) in taken.iter().enumerate() {
            let seed = seed_of(index);
            match self.designed_run(kernel, dtype, sample, (designed, seed, &[])) {
                None => continue,
                Some(true) => {
                    checked += 1;
                    straddled |= designed == Designed::Overflow && straddles(seed, dtype);
                }
                Some(false) => return false,
            }
        }
        let led = match designed {
            Designed::Overflow => match self.led_runs(kernel, dtype, &taken, seed_of(0)) {
                Some(runs) => runs,
                None => return false,
            },
            _ => 0,
        };
        self.evidence
            .rows
            .push(designed.row(dtype, checked, straddled, led));
        true
    }

    /// Both led runs ([`super::threshold`]) on each of [`led_samples`], the semantics traced
    /// once per sample: how many ran, or `None` after reporting a failure.
    fn led_runs(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        taken: &[&Sample],
        seed: u64,
    ) -> Option<usize> {
        let mut ran = 0;
        let seed = Led::Past.seed(seed);
        for sample in led_samples(taken) {
            let Some(traced) = Traced::of(&self.domain, kernel, sample, dtype, seed) else {
                continue;
            };
            for led in Led::BOTH {
                let Some(placed) = traced.placements(led, dtype) else {
                    continue;
                };
                let designed = (Designed::Overflow, led.seed(seed), placed.as_slice());
                match self.designed_run(kernel, dtype, sample, designed) {
                    None => {}
                    Some(true) => ran += 1,
                    Some(false) => return None,
                }
            }
        }
        Some(ran)
    }

    /// [`Gate::designed_call`], a failure reported with its smallest sample.
    fn designed_run(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        (designed, seed, placed): (Designed, u64, &[Placed]),
    ) -> Option<bool> {
        let before = self.diagnostics.len();
        let held = self.designed_call(designed, kernel, dtype, sample, (seed, placed))?;
        if !held {
            let replay = Replay {
                kernel,
                dtype,
                seed,
                check: designed.check(),
                keep: Keep::Admitted,
            };
            self.shrink_report(before, &replay, sample);
        }
        Some(held)
    }
}

/// The samples led runs take ([`super::threshold`]): the first, and the one with the most
/// input elements (within [`LED_ELEMENTS`]: the semantics are traced on it), whose wider rows
/// reach a kernel's vector code.
fn led_samples<'s>(taken: &[&'s Sample]) -> impl Iterator<Item = &'s Sample> {
    let first = taken.first().copied();
    let fits = taken
        .iter()
        .copied()
        .filter(|s| s.elements() <= LED_ELEMENTS);
    let largest = fits.max_by_key(|s| s.elements());
    let largest = largest.filter(|l| first.is_none_or(|f| !std::ptr::eq(*l, f)));
    first.into_iter().chain(largest)
}

/// Moves the sample with the most input elements to `index`: the first ramp runs on it, so
/// its grid is as fine as the samples allow (a function cut off on a range narrower than a
/// small sample's step is met there).
fn largest_at(samples: &mut Vec<&Sample>, index: usize) {
    let largest = (samples.iter().enumerate()).max_by_key(|(i, s)| (s.elements(), Reverse(*i)));
    if let Some((from, _)) = largest
        && from > index
    {
        let sample = samples.remove(from);
        samples.insert(index, sample);
    }
}

/// `samples` with those whose parameter values no earlier one has first, the rest after.
fn varied<'s>(samples: &[&'s Sample]) -> impl Iterator<Item = &'s Sample> {
    let mut seen = Vec::new();
    let (fresh, repeated): (Vec<&Sample>, Vec<&Sample>) = samples.iter().partition(|s| {
        let new = !seen.contains(&&s.params);
        if new {
            seen.push(&s.params);
        }
        new
    });
    fresh.into_iter().chain(repeated)
}

impl Gate<'_> {
    /// [`Gate::designed_one`] on the operands `check` designs (a shrink's replay); `None` for
    /// a check that designs none.
    pub(super) fn designed_replay(
        &mut self,
        check: Check,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
    ) -> Option<bool> {
        let designed = match check {
            Check::Conditioning => Designed::IllConditioned,
            Check::SignedZeros => Designed::SignedZeros,
            Check::Underflow => Designed::Underflow,
            Check::Overflow => Designed::Overflow,
            Check::Magnitudes => Designed::Magnitudes,
            _ => return None,
        };
        self.designed_one(designed, kernel, dtype, sample, seed)
    }

    /// One sample on `designed` operands chosen by `seed`: `Some(false)` after reporting a
    /// value the contract does not allow, `None` when nothing could be compared.
    fn designed_one(
        &mut self,
        designed: Designed,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
    ) -> Option<bool> {
        let placed = match (designed, Led::of(seed)) {
            (Designed::Overflow, Some(led)) => {
                let traced = Traced::of(&self.domain, kernel, sample, dtype, seed)?;
                traced.placements(led, dtype)?
            }
            _ => Vec::new(),
        };
        self.designed_call(designed, kernel, dtype, sample, (seed, &placed))
    }

    /// [`Gate::designed_one`] with the `placed` elements set over the operands `seed` fills.
    fn designed_call(
        &mut self,
        designed: Designed,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        (seed, placed): (u64, &[Placed]),
    ) -> Option<bool> {
        let runs = self.levels.main_only();
        let fill = designed.fill(Led::fill_seed(seed));
        let outcome = call_placed(kernel, &self.domain, sample, dtype, (fill, placed), runs);
        // The admitted-domain check reports refusals and crashes.
        let Outcome::Accepted(accepted) = outcome else {
            return None;
        };
        self.paths_reached(dtype, &accepted.paths);
        let predicted = accepted.shapes();
        let operands = Led::of(seed).map_or(designed.operands(), Led::operands);
        let held = self.noted(operands, |gate| {
            gate.values_hold(
                kernel,
                dtype,
                sample,
                &accepted.inputs,
                &accepted.values,
                &predicted,
            )
        });
        Some(held.is_some())
    }
}
