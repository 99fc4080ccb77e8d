//! The oracle's order-free sums: an accumulator of terms whose bound is Higham's `γ_{n}·Σ|t|`,
//! and that may overflow on the way when its positive or its negative terms alone reach the
//! dtype's largest finite value.

use super::super::float::{gamma, largest, smallest_subnormal, unit_roundoff};
use super::approx::{Approx, Kinds};
use fkc_provider::DType;

/// [`gamma`] of `n` additions in `dtype`: for the sums of up to a few hundred terms the gate
/// closes, computed once per process (the same numbers).
fn gamma_of(n: usize, dtype: DType) -> f64 {
    const KNOWN: usize = 512;
    static TABLES: [std::sync::OnceLock<Box<[f64]>>; DType::ALL.len()] =
        [const { std::sync::OnceLock::new() }; DType::ALL.len()];
    let which = DType::ALL.iter().position(|d| *d == dtype).unwrap_or(0);
    if n >= KNOWN {
        return gamma(n, unit_roundoff(dtype));
    }
    let table =
        TABLES[which].get_or_init(|| (0..KNOWN).map(|k| gamma(k, unit_roundoff(dtype))).collect());
    table[n]
}

/// 2^-512: huge terms scaled into range.
const SCALE_DOWN: f64 = 7.458_340_731_200_207e-155;

/// A stored value: a closed value, or a sum still open (an accumulator).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Acc {
    /// The first term as it was (a single-term "sum" is that term exactly).
    first: Approx,
    terms: u32,
    /// Σ of the finite terms' values, errors and magnitudes.
    value: f64,
    /// Σ of the finite terms' values and magnitudes × 2^-512: the sums where `value` or
    /// `magnitude` overflow f64 on the way.
    scaled: f64,
    scaled_magnitude: f64,
    error: f64,
    magnitude: f64,
    /// Σ of the finite terms' positive and negative extents (how far a partial sum can go).
    positive: f64,
    negative: f64,
    /// Kinds some term may have.
    seen: Kinds,
    /// Kinds some term certainly has (its only kind).
    certain: Kinds,
    /// Some term cannot be finite.
    never_finite: bool,
}

impl Acc {
    /// A sum of one term. Its sums take the term in only when a second one comes (most stored
    /// values are never added to: a copy, a selection, a register written back).
    pub(super) fn new(first: Approx) -> Acc {
        Acc {
            first,
            terms: 1,
            value: 0.0,
            scaled: 0.0,
            scaled_magnitude: 0.0,
            error: 0.0,
            magnitude: 0.0,
            positive: 0.0,
            negative: 0.0,
            seen: Kinds::default(),
            certain: Kinds::default(),
            never_finite: false,
        }
    }

    /// Before a second term: the first one taken into the sums.
    #[inline]
    fn open(&mut self) {
        if self.terms == 1 {
            self.terms = 0;
            self.take(self.first);
        }
    }

    /// Adds a finite term `value ± error` (the fast case of [`Acc::add`]).
    #[inline]
    pub(super) fn add_finite(&mut self, value: f64, error: f64) {
        self.open();
        self.terms = self.terms.saturating_add(1);
        self.seen = self.seen.union(Kinds::FINITE);
        self.certain = self.certain.union(Kinds::FINITE);
        self.value += value;
        self.scaled += value * SCALE_DOWN;
        self.scaled_magnitude += value.abs() * SCALE_DOWN;
        self.error += error;
        self.magnitude += value.abs();
        self.positive += (value + error).max(0.0);
        self.negative += (error - value).max(0.0);
    }

    pub(super) fn add(&mut self, term: Approx) {
        self.open();
        self.take(term);
    }

    /// Takes `term` into the sums.
    fn take(&mut self, term: Approx) {
        self.terms = self.terms.saturating_add(1);
        self.seen = self.seen.union(term.kinds);
        if !term.kinds.ambiguous() {
            self.certain = self.certain.union(term.kinds);
        }
        self.never_finite |= !term.finite();
        if term.finite() {
            self.value += term.value;
            self.scaled += term.value * SCALE_DOWN;
            self.scaled_magnitude += term.value.abs() * SCALE_DOWN;
            self.error += term.error;
            self.magnitude += term.value.abs();
            self.positive += term.high().max(0.0);
            self.negative += (-term.low()).max(0.0);
        }
    }

    /// The sum's value in `dtype`, in any order of its additions.
    pub(super) fn close(&self, dtype: DType) -> Approx {
        if self.terms <= 1 {
            return self.first;
        }
        let additions = (self.terms - 1) as usize;
        let g = gamma_of(additions, dtype);
        let own = gamma_of(additions, DType::F64); // f64's unit roundoff: ε/2
        // Σ|t| may overflow f64 where the bound it gives does not.
        let spread = |g: f64| {
            let direct = g * self.magnitude;
            if direct.is_finite() {
                direct
            } else {
                g * self.scaled_magnitude / SCALE_DOWN
            }
        };
        let error = self.error
            + spread(g)
            + g * self.error
            + spread(own)
            + self.terms as f64 * smallest_subnormal(dtype);
        let reach = largest(dtype) / (1.0 + g);
        let (up, down) = (self.positive >= reach, self.negative >= reach);
        let (plus, minus) = (Kinds::PLUS_INFINITY, Kinds::MINUS_INFINITY);
        let certain_nan = self.certain.contains(Kinds::NAN)
            || (self.certain.contains(plus) && self.certain.contains(minus));
        if certain_nan {
            return Approx::special(Kinds::NAN);
        }
        let may_plus = self.seen.contains(plus) || up;
        let may_minus = self.seen.contains(minus) || down;
        let mut kinds = Kinds::default();
        if self.seen.contains(Kinds::NAN) || (may_plus && may_minus) {
            kinds = kinds.union(Kinds::NAN);
        }
        if may_plus && !self.certain.contains(minus) {
            kinds = kinds.union(plus);
        }
        if may_minus && !self.certain.contains(plus) {
            kinds = kinds.union(minus);
        }
        // A partial sum in f64 may overflow where the whole sum does not.
        let value = if self.value.is_finite() {
            self.value
        } else {
            self.scaled / SCALE_DOWN
        };
        let can_be_finite = !self.never_finite
            && value.is_finite()
            && error.is_finite()
            && value.abs() - error <= largest(dtype);
        if can_be_finite {
            return Approx {
                value,
                error,
                kinds: kinds.union(Kinds::FINITE),
            };
        }
        Approx::special(kinds)
    }
}
