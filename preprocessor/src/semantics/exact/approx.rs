//! A value of the oracle: its `f64` value, its forward error bound, and the kinds of result it
//! may have (finite, NaN, ±Inf); rounding one into a dtype.

use super::super::float::{largest, smallest_subnormal, unit_roundoff};
use fkc_provider::DType;

/// The kinds of result a value may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kinds(u8);

impl Kinds {
    pub const FINITE: Kinds = Kinds(1);
    pub const NAN: Kinds = Kinds(2);
    pub const PLUS_INFINITY: Kinds = Kinds(4);
    pub const MINUS_INFINITY: Kinds = Kinds(8);
    const ALL: [Kinds; 4] = [
        Kinds::FINITE,
        Kinds::NAN,
        Kinds::PLUS_INFINITY,
        Kinds::MINUS_INFINITY,
    ];

    pub fn contains(self, other: Kinds) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    pub fn union(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }

    pub fn without(self, other: Kinds) -> Kinds {
        Kinds(self.0 & !other.0)
    }

    /// More than one kind: the value depends on the order of a sum (or on a rounding).
    pub fn ambiguous(self) -> bool {
        self.0.count_ones() > 1
    }

    pub(super) fn each(self) -> impl Iterator<Item = Kinds> {
        Kinds::ALL.into_iter().filter(move |k| self.contains(*k))
    }

    /// The kind of one number.
    pub(super) fn of(value: f64) -> Kinds {
        if value.is_nan() {
            Kinds::NAN
        } else if value == f64::INFINITY {
            Kinds::PLUS_INFINITY
        } else if value == f64::NEG_INFINITY {
            Kinds::MINUS_INFINITY
        } else {
            Kinds::FINITE
        }
    }
}

/// A value as the oracle knows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Approx {
    /// The exact value (of the finite outcome), in f64.
    pub value: f64,
    /// A bound on how far a finite outcome may lie from `value`.
    pub error: f64,
    pub kinds: Kinds,
}

impl Approx {
    /// One number, exactly.
    pub fn exact(value: f64) -> Approx {
        let kinds = Kinds::of(value);
        Approx {
            value: if kinds == Kinds::FINITE { value } else { 0.0 },
            error: 0.0,
            kinds,
        }
    }

    pub(super) fn special(kinds: Kinds) -> Approx {
        Approx {
            value: 0.0,
            error: 0.0,
            kinds,
        }
    }

    pub fn finite(&self) -> bool {
        self.kinds.contains(Kinds::FINITE)
    }

    pub(super) fn low(&self) -> f64 {
        self.value - self.error
    }

    pub(super) fn high(&self) -> f64 {
        self.value + self.error
    }

    /// Whether `got` (a kernel's result) is one of this value's outcomes.
    pub fn admits(&self, got: f64) -> bool {
        match Kinds::of(got) {
            Kinds::FINITE => self.finite() && (got - self.value).abs() <= self.error,
            kind => self.kinds.contains(kind),
        }
    }

    /// Both values' outcomes.
    pub fn either(self, other: Approx) -> Approx {
        let kinds = self.kinds.union(other.kinds);
        match (self.finite(), other.finite()) {
            (true, true) => {
                let (low, high) = (self.low().min(other.low()), self.high().max(other.high()));
                Approx {
                    value: (low + high) / 2.0,
                    error: (high - low) / 2.0,
                    kinds,
                }
            }
            (true, false) => Approx { kinds, ..self },
            (false, true) => Approx { kinds, ..other },
            (false, false) => Approx::special(kinds),
        }
    }

    pub(super) fn negated(self) -> Approx {
        let mut kinds = self
            .kinds
            .without(Kinds::PLUS_INFINITY)
            .without(Kinds::MINUS_INFINITY);
        if self.kinds.contains(Kinds::PLUS_INFINITY) {
            kinds = kinds.union(Kinds::MINUS_INFINITY);
        }
        if self.kinds.contains(Kinds::MINUS_INFINITY) {
            kinds = kinds.union(Kinds::PLUS_INFINITY);
        }
        Approx {
            value: -self.value,
            error: self.error,
            kinds,
        }
    }
}

/// The finite result `value ± error` rounded once into `dtype`: the rounding's error, the
/// oracle's own f64 rounding, and the overflow it may cause.
/// `value ± error` converted to an integer `dtype`: the nearest integer (saturated; the order
/// reference applies the contract's overflow policy), one further apart per unit of doubt.
fn integral(value: f64, error: f64, dtype: DType) -> Approx {
    let nearest = super::super::rounded::round(value, dtype);
    let doubt = if error == 0.0 { 0.0 } else { error + 1.0 };
    Approx {
        value: nearest,
        error: doubt,
        kinds: Kinds::FINITE,
    }
}

pub(super) fn rounded(value: f64, error: f64, dtype: DType) -> Approx {
    if !dtype.is_float() {
        return integral(value, error, dtype);
    }
    if !value.is_finite() || error.is_nan() {
        // The exact value left f64's range: the dtype's result overflows (every dtype's range
        // is within f64's).
        return Approx::special(if value.is_nan() {
            Kinds::NAN
        } else if value > 0.0 {
            Kinds::PLUS_INFINITY
        } else {
            Kinds::MINUS_INFINITY
        });
    }
    if error == 0.0 && super::super::rounded::round(value, dtype) == value {
        return Approx::exact(value); // exactly a value of the dtype: no rounding
    }
    let u = unit_roundoff(dtype);
    let error =
        error + u * (value.abs() + error) + smallest_subnormal(dtype) + f64::EPSILON * value.abs();
    let limit = largest(dtype) * (1.0 + u);
    let mut kinds = Kinds::FINITE;
    if value + error >= limit {
        kinds = kinds.union(Kinds::PLUS_INFINITY);
    }
    if value - error <= -limit {
        kinds = kinds.union(Kinds::MINUS_INFINITY);
    }
    if value.abs() - error > limit {
        kinds = kinds.without(Kinds::FINITE);
    }
    Approx {
        value,
        error,
        kinds,
    }
}
