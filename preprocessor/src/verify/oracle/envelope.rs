//! What summing one element's terms can give in a dtype when the order of the additions is not
//! fixed: the [`Envelope`] of a sum and the [`Outcomes`] it allows.

use crate::semantics::float::{largest, unit_roundoff};
use fkc_provider::DType;

/// What summing one element's terms can give when the order of the additions is not fixed:
/// in the dtype (each term a value of the dtype, an overflowing product already ±Inf), a NaN
/// term, or a +Inf and a −Inf term, make NaN in every order; otherwise a partial sum may
/// overflow to ±Inf in some orders (when the positive or the negative terms alone reach the
/// dtype's largest finite value), and an infinite term met by the opposite overflow makes NaN.
/// A kernel may also accumulate in a wider type than it stores (the contract does not say
/// otherwise): then the terms are exact, and the sum overflows only when rounded at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Envelope {
    /// The terms as the dtype holds them.
    narrow: Parts,
    /// The terms exactly (as a wider accumulator holds them).
    wide: Parts,
    /// Σ of the exact terms.
    exact: f64,
}

/// The terms of a sum, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Parts {
    /// Σ of the positive finite terms.
    positive: f64,
    /// Σ of |the negative finite terms|.
    negative: f64,
    nan: bool,
    plus_infinity: bool,
    minus_infinity: bool,
}

/// The results an [`Envelope`] allows (a finite one within the error bound).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcomes {
    pub finite: bool,
    pub nan: bool,
    pub plus_infinity: bool,
    pub minus_infinity: bool,
}

impl Outcomes {
    /// Whether more than one kind of result is possible (the element's value depends on the
    /// summation order).
    pub fn order_dependent(&self) -> bool {
        [
            self.finite,
            self.nan,
            self.plus_infinity,
            self.minus_infinity,
        ]
        .iter()
        .filter(|b| **b)
        .count()
            > 1
    }

    /// Whether `got` (a finite value already held to the bound by the caller, or a special
    /// value) is one of these outcomes.
    pub fn admits_special(&self, got: f64) -> bool {
        if got.is_nan() {
            self.nan
        } else if got == f64::INFINITY {
            self.plus_infinity
        } else if got == f64::NEG_INFINITY {
            self.minus_infinity
        } else {
            self.finite
        }
    }

    fn union(self, other: Outcomes) -> Outcomes {
        Outcomes {
            finite: self.finite || other.finite,
            nan: self.nan || other.nan,
            plus_infinity: self.plus_infinity || other.plus_infinity,
            minus_infinity: self.minus_infinity || other.minus_infinity,
        }
    }
}

impl Parts {
    #[inline]
    fn add(&mut self, term: f64) {
        if term.is_nan() {
            self.nan = true;
        } else if term == f64::INFINITY {
            self.plus_infinity = true;
        } else if term == f64::NEG_INFINITY {
            self.minus_infinity = true;
        } else if term > 0.0 {
            self.positive += term;
        } else {
            self.negative -= term;
        }
    }

    /// The results some order of the additions gives with partial sums in `dtype`, whose
    /// roundings may grow a partial sum by `gamma`.
    fn outcomes(&self, dtype: DType, gamma: f64) -> Outcomes {
        let reach = largest(dtype) / (1.0 + gamma);
        let up = self.positive >= reach; // some order overflows to +Inf
        let down = self.negative >= reach; // some order overflows to −Inf
        let only = |nan, plus_infinity, minus_infinity| Outcomes {
            finite: false,
            nan,
            plus_infinity,
            minus_infinity,
        };
        if self.nan || (self.plus_infinity && self.minus_infinity) {
            only(true, false, false)
        } else if self.plus_infinity {
            only(down, true, false)
        } else if self.minus_infinity {
            only(up, false, true)
        } else {
            Outcomes {
                finite: true,
                nan: false,
                plus_infinity: up,
                minus_infinity: down,
            }
        }
    }
}

impl Envelope {
    /// Adds one term, computed exactly (in f64).
    #[inline]
    fn add(&mut self, exact: f64, dtype: DType) {
        self.narrow.add(in_range(exact, dtype));
        self.wide.add(exact);
        self.exact += exact;
    }

    /// The results some order of the additions gives in `dtype` (roundings growing a partial
    /// sum by at most `gamma`), or a wider accumulator rounded once to `dtype`.
    pub fn outcomes(&self, dtype: DType, gamma: f64) -> Outcomes {
        let narrow = self.narrow.outcomes(dtype, gamma);
        let mut wide = self.wide.outcomes(DType::F64, gamma);
        if wide.finite {
            // One rounding of the wide sum to the dtype may overflow.
            let edge = largest(dtype) * (1.0 - gamma);
            wide.plus_infinity |= self.exact >= edge;
            wide.minus_infinity |= self.exact <= -edge;
            wide.finite = self.exact.abs() <= largest(dtype) * (1.0 + gamma);
        }
        narrow.union(wide)
    }
}

/// The envelope of a sum of `terms` (computed exactly) in `dtype`.
pub(super) fn envelope(terms: impl Iterator<Item = f64>, dtype: DType) -> Envelope {
    let mut envelope = Envelope::default();
    for term in terms {
        envelope.add(term, dtype);
    }
    envelope
}

/// `value` as the dtype holds it after a rounding: beyond the largest finite value (by more
/// than half a unit in the last place, approximately) it is ±Inf.
fn in_range(value: f64, dtype: DType) -> f64 {
    let limit = largest(dtype) * (1.0 + unit_roundoff(dtype));
    if value.is_finite() && value.abs() >= limit {
        value.signum() * f64::INFINITY
    } else {
        value
    }
}
