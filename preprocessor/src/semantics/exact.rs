//! The oracle's arithmetic: every value is computed in `f64` and carries a forward error bound —
//! how far any computation of it in the dtypes the pseudo-code names may lie from it — and the
//! kinds of result it may have (a finite value within the bound, NaN, +Inf, −Inf). A sum
//! (`acc += t`) is order-free: it may be computed in any order, so its bound is Higham's
//! `γ_{n}·Σ|t|` for its `n` additions, and it may overflow on the way when its positive or its
//! negative terms alone reach the dtype's largest finite value. Each rounding adds the dtype's
//! unit roundoff (and its smallest subnormal, for underflow); each scalar function its ulp
//! allowance ([`Func::ulp_allowance`]). The oracle's own `f64` roundings are bounded too, so the
//! bound holds for `f64` kernels as well.

use super::ast::{AssignOp, CmpOp};
use super::float::{NanPolicy, erf, gamma, largest, smallest_subnormal, unit_roundoff};
use super::ir::{Func, ValOp};
use super::machine::Arith;
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

    fn each(self) -> impl Iterator<Item = Kinds> {
        Kinds::ALL.into_iter().filter(move |k| self.contains(*k))
    }

    /// The kind of one number.
    fn of(value: f64) -> Kinds {
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

    fn special(kinds: Kinds) -> Approx {
        Approx {
            value: 0.0,
            error: 0.0,
            kinds,
        }
    }

    pub fn finite(&self) -> bool {
        self.kinds.contains(Kinds::FINITE)
    }

    fn low(&self) -> f64 {
        self.value - self.error
    }

    fn high(&self) -> f64 {
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

    fn negated(self) -> Approx {
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
fn rounded(value: f64, error: f64, dtype: DType) -> Approx {
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
    if error == 0.0 && super::rounded::round(value, dtype) == value {
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

/// The sign of a finite interval: +1 above zero, −1 below, 0 when it holds zero.
fn sign(a: &Approx) -> i8 {
    if a.low() > 0.0 {
        1
    } else if a.high() < 0.0 {
        -1
    } else {
        0
    }
}

/// The kinds of `a op b` for one pair of kinds, at least one of them not finite.
fn special_pair(op: ValOp, ka: Kinds, a: &Approx, kb: Kinds, b: &Approx) -> Kinds {
    let (nan, plus, minus) = (Kinds::NAN, Kinds::PLUS_INFINITY, Kinds::MINUS_INFINITY);
    if ka == nan || kb == nan {
        return nan;
    }
    let infinity = |positive: bool| if positive { plus } else { minus };
    let signed = |s: i8| match s {
        1 => plus,
        -1 => minus,
        _ => plus.union(minus),
    };
    let inf_sign = |k: Kinds| if k == plus { 1 } else { -1 };
    match op {
        ValOp::Add | ValOp::Sub => {
            let kb = if op == ValOp::Sub && kb != Kinds::FINITE {
                infinity(kb == minus)
            } else {
                kb
            };
            match (ka == Kinds::FINITE, kb == Kinds::FINITE) {
                (true, _) => kb,
                (_, true) => ka,
                _ if ka == kb => ka,
                _ => nan,
            }
        }
        ValOp::Mul => match (ka == Kinds::FINITE, kb == Kinds::FINITE) {
            (true, _) | (_, true) => {
                let (finite, inf) = if ka == Kinds::FINITE {
                    (a, kb)
                } else {
                    (b, ka)
                };
                let s = sign(finite);
                if finite.value == 0.0 && finite.error == 0.0 {
                    nan
                } else if s == 0 {
                    signed(0).union(nan)
                } else {
                    infinity(s * inf_sign(inf) > 0)
                }
            }
            _ => infinity(inf_sign(ka) * inf_sign(kb) > 0),
        },
        ValOp::Div => match (ka == Kinds::FINITE, kb == Kinds::FINITE) {
            // finite / ±Inf is a (signed) zero
            (true, _) => Kinds::FINITE,
            (_, true) => {
                let s = sign(b);
                if s == 0 {
                    signed(0)
                } else {
                    infinity(s * inf_sign(ka) > 0)
                }
            }
            _ => nan,
        },
    }
}

/// The finite outcome of `a op b` for finite `a` and `b`, rounded into `dtype`.
fn finite_pair(op: ValOp, a: &Approx, b: &Approx, dtype: DType) -> Approx {
    let (x, y, ex, ey) = (a.value, b.value, a.error, b.error);
    match op {
        ValOp::Add => rounded(x + y, ex + ey, dtype),
        ValOp::Sub => rounded(x - y, ex + ey, dtype),
        ValOp::Mul => rounded(x * y, x.abs() * ey + y.abs() * ex + ex * ey, dtype),
        ValOp::Div => {
            if y.abs() > ey {
                let error = (x.abs() * ey + y.abs() * ex) / (y.abs() * (y.abs() - ey));
                rounded(x / y, error, dtype)
            } else {
                // The divisor may be zero: any finite value, ±Inf, and NaN when 0/0 may occur.
                let mut kinds = Kinds::FINITE
                    .union(Kinds::PLUS_INFINITY)
                    .union(Kinds::MINUS_INFINITY);
                if sign(a) == 0 {
                    kinds = kinds.union(Kinds::NAN);
                }
                Approx {
                    value: 0.0,
                    error: f64::INFINITY,
                    kinds,
                }
            }
        }
    }
}

/// [`gamma`] of `n` additions in `dtype`: for the sums of up to a few hundred terms the gate
/// closes, computed once per process (the same numbers).
fn gamma_of(n: usize, dtype: DType) -> f64 {
    const KNOWN: usize = 512;
    static TABLES: [std::sync::OnceLock<Box<[f64]>>; 4] = [const { std::sync::OnceLock::new() }; 4];
    let which = match dtype {
        DType::F64 => 0,
        DType::F32 => 1,
        DType::BF16 => 2,
        DType::F16 => 3,
    };
    if n >= KNOWN {
        return gamma(n, unit_roundoff(dtype));
    }
    let table =
        TABLES[which].get_or_init(|| (0..KNOWN).map(|k| gamma(k, unit_roundoff(dtype))).collect());
    table[n]
}

/// 2^-512: huge terms scaled into range.
const SCALE_DOWN: f64 = 7.458_340_731_200_207e-155;

/// The oracle's arithmetic under a NaN policy (for `max` and `min`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Exact {
    pub nan: NanPolicy,
}

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
    fn new(first: Approx) -> Acc {
        let mut acc = Acc {
            first,
            terms: 0,
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
        };
        acc.add(first);
        acc
    }

    /// Adds a finite term `value ± error` (the fast case of [`Acc::add`]).
    #[inline]
    fn add_finite(&mut self, value: f64, error: f64) {
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

    fn add(&mut self, term: Approx) {
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
    fn close(&self, dtype: DType) -> Approx {
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

impl Exact {
    fn binary_in(&self, op: ValOp, a: Approx, b: Approx, dtype: DType) -> Approx {
        if a.kinds == Kinds::FINITE && b.kinds == Kinds::FINITE {
            return finite_pair(op, &a, &b, dtype);
        }
        let mut out = Approx::special(Kinds::default());
        if a.finite() && b.finite() {
            out = finite_pair(op, &a, &b, dtype);
        }
        for ka in a.kinds.each() {
            for kb in b.kinds.each() {
                if ka == Kinds::FINITE && kb == Kinds::FINITE {
                    continue;
                }
                let kinds = special_pair(op, ka, &a, kb, &b);
                if kinds.contains(Kinds::FINITE) {
                    // finite / ±Inf: a zero
                    out = out.either(Approx::exact(0.0));
                }
                out.kinds = out.kinds.union(kinds);
            }
        }
        out
    }

    fn function(&self, func: Func, x: Approx, dtype: DType) -> Approx {
        let f = |v: f64| match func {
            Func::Exp => v.exp(),
            Func::Log => v.ln(),
            Func::Sqrt => v.sqrt(),
            Func::Rsqrt => 1.0 / v.sqrt(),
            Func::Tanh => v.tanh(),
            Func::Erf => erf(v),
            Func::Abs | Func::Max | Func::Min => v.abs(),
        };
        let mut out = Approx::special(Kinds::default());
        for kind in x.kinds.each() {
            if kind != Kinds::FINITE {
                let at = match kind {
                    Kinds::NAN => f64::NAN,
                    Kinds::PLUS_INFINITY => f64::INFINITY,
                    _ => f64::NEG_INFINITY,
                };
                out = out.either(Approx::exact(f(at)));
                continue;
            }
            // Monotone on each side of the interval (abs is 1-Lipschitz): the ends bound it.
            let (low, high, mid) = (f(x.low()), f(x.high()), f(x.value));
            let ends = [low, high, mid];
            for end in ends.iter().filter(|e| !e.is_finite()) {
                out.kinds = out.kinds.union(Kinds::of(*end));
            }
            if mid.is_finite() {
                let spread = if func == Func::Abs {
                    x.error
                } else if low.is_finite() && high.is_finite() {
                    (low - mid).abs().max((high - mid).abs())
                } else {
                    f64::INFINITY
                };
                let allowance = func.ulp_allowance() * 2.0 * unit_roundoff(dtype);
                let value = rounded(mid, spread + allowance * (mid.abs() + spread), dtype);
                out = out.either(value);
            }
        }
        out
    }

    /// `max` (or `min`) under the NaN policy; a tie keeps the first operand.
    fn extreme(&self, max: bool, a: Approx, b: Approx) -> Approx {
        if a.kinds == Kinds::FINITE && b.kinds == Kinds::FINITE {
            // the one pair of kinds below, and the `either` of it with nothing
            return extreme_of(max, a, b);
        }
        let mut out = Approx::special(Kinds::default());
        let as_value = |k: Kinds, v: &Approx| -> Approx {
            if k == Kinds::FINITE {
                Approx { kinds: k, ..*v }
            } else {
                Approx::special(k)
            }
        };
        for ka in a.kinds.each() {
            for kb in b.kinds.each() {
                let (x, y) = (as_value(ka, &a), as_value(kb, &b));
                let result = match (ka == Kinds::NAN, kb == Kinds::NAN) {
                    (true, true) => x,
                    (true, false) | (false, true) => match self.nan {
                        NanPolicy::Propagate => Approx::special(Kinds::NAN),
                        NanPolicy::Ignore if ka == Kinds::NAN => y,
                        NanPolicy::Ignore => x,
                    },
                    _ => extreme_of(max, x, y),
                };
                out = out.either(result);
            }
        }
        out
    }
}

/// `max` or `min` of two non-NaN values.
fn extreme_of(max: bool, x: Approx, y: Approx) -> Approx {
    let order = |k: Kinds| match k {
        Kinds::MINUS_INFINITY => 0,
        Kinds::FINITE => 1,
        _ => 2,
    };
    let (kx, ky) = (order(x.kinds), order(y.kinds));
    if kx != ky || kx != 1 {
        let pick_x = if max { kx >= ky } else { kx <= ky };
        return if pick_x { x } else { y };
    }
    let value = if max {
        x.value.max(y.value)
    } else {
        x.value.min(y.value)
    };
    if x.error == 0.0 && y.error == 0.0 {
        // Exactly the scan's choice: the second only when strictly beyond the first (so a
        // tie, -0.0 against +0.0 included, keeps the first).
        let second = if max {
            y.value > x.value
        } else {
            y.value < x.value
        };
        return if second { y } else { x };
    }
    Approx {
        value,
        error: x.error.max(y.error),
        kinds: Kinds::FINITE,
    }
}

impl Arith for Exact {
    type V = Approx;
    type Cell = Acc;

    fn input(&self, value: f64) -> Approx {
        Approx::exact(value)
    }

    fn constant(&self, value: f64) -> Approx {
        Approx::exact(value)
    }

    fn index(&self, value: i64, dtype: DType) -> Approx {
        rounded(value as f64, 0.0, dtype)
    }

    fn load(&self, cell: &Acc, dtype: DType) -> Approx {
        cell.close(dtype)
    }

    fn store(&self, value: Approx) -> Acc {
        Acc::new(value)
    }

    fn update(&self, cell: &mut Acc, op: AssignOp, value: Approx, dtype: DType) {
        match op {
            AssignOp::Add => cell.add(value),
            AssignOp::Sub => cell.add(value.negated()),
            AssignOp::Set => *cell = Acc::new(value),
            AssignOp::Mul => {
                let product = self.binary_in(ValOp::Mul, cell.close(dtype), value, dtype);
                *cell = Acc::new(product);
            }
        }
    }

    fn mac(&self, cell: &mut Acc, a: Approx, b: Approx, dtype: DType) {
        let plain = a.kinds == Kinds::FINITE
            && b.kinds == Kinds::FINITE
            && a.error == 0.0
            && b.error == 0.0;
        let product = a.value * b.value;
        if plain && product.abs() < largest(dtype) / 2.0 {
            // Two exact values: their product rounded once into the dtype.
            let error =
                (unit_roundoff(dtype) + f64::EPSILON) * product.abs() + smallest_subnormal(dtype);
            cell.add_finite(product, error);
            return;
        }
        let product = self.binary_in(ValOp::Mul, a, b, dtype);
        cell.add(product);
    }

    #[inline(always)]
    fn dot(
        &self,
        cell: &mut Acc,
        xs: &[f64],
        (i, di): (i64, i64),
        ws: &[f64],
        (j, dj): (i64, i64),
        n: usize,
        dtype: DType,
    ) {
        let (u, tiny, limit) = (
            unit_roundoff(dtype) + f64::EPSILON,
            smallest_subnormal(dtype),
            largest(dtype) / 2.0,
        );
        for k in 0..n as i64 {
            let (x, w) = (xs[(i + di * k) as usize], ws[(j + dj * k) as usize]);
            let product = x * w;
            if product.is_finite() && product.abs() < limit {
                cell.add_finite(product, u * product.abs() + tiny);
            } else {
                self.mac(cell, Approx::exact(x), Approx::exact(w), dtype);
            }
        }
    }

    fn neg(&self, value: Approx) -> Approx {
        value.negated()
    }

    fn binary(&self, op: ValOp, a: Approx, b: Approx, dtype: DType) -> Approx {
        self.binary_in(op, a, b, dtype)
    }

    fn func(&self, func: Func, args: &[Approx], dtype: DType) -> Approx {
        match (func, args) {
            (Func::Max, [a, b]) => self.extreme(true, *a, *b),
            (Func::Min, [a, b]) => self.extreme(false, *a, *b),
            (_, [x, ..]) => self.function(func, *x, dtype),
            _ => Approx::special(Kinds::NAN),
        }
    }

    fn cast(&self, value: Approx, dtype: DType) -> Approx {
        if value.kinds == Kinds::FINITE {
            return rounded(value.value, value.error, dtype);
        }
        let mut out = Approx::special(value.kinds.without(Kinds::FINITE));
        if value.finite() {
            out = out.either(rounded(value.value, value.error, dtype));
        }
        out
    }

    fn compare(&self, op: CmpOp, a: Approx, b: Approx) -> Option<bool> {
        if a.kinds.ambiguous() || b.kinds.ambiguous() {
            return None;
        }
        let point = |x: &Approx| match x.kinds {
            Kinds::FINITE => x.value,
            Kinds::NAN => f64::NAN,
            Kinds::PLUS_INFINITY => f64::INFINITY,
            _ => f64::NEG_INFINITY,
        };
        let apart = a.high() < b.low() || b.high() < a.low();
        let exact = a.error == 0.0 && b.error == 0.0;
        let finite = a.kinds == Kinds::FINITE && b.kinds == Kinds::FINITE;
        (!finite || exact || apart).then(|| op.holds(point(&a), point(&b)))
    }

    fn is_nan(&self, value: Approx) -> Option<bool> {
        match (value.kinds.contains(Kinds::NAN), value.kinds.ambiguous()) {
            (_, true) => None,
            (nan, false) => Some(nan),
        }
    }

    fn either(&self, a: Approx, b: Approx) -> Approx {
        a.either(b)
    }

    fn number(&self, value: Approx) -> f64 {
        match value.kinds {
            Kinds::NAN => f64::NAN,
            Kinds::PLUS_INFINITY => f64::INFINITY,
            Kinds::MINUS_INFINITY => f64::NEG_INFINITY,
            _ => value.value,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sum(terms: &[f64], dtype: DType) -> Approx {
        let exact = Exact::default();
        let mut acc = exact.store(Approx::exact(0.0));
        for t in terms {
            exact.update(&mut acc, AssignOp::Add, Approx::exact(*t), dtype);
        }
        exact.load(&acc, dtype)
    }

    #[test]
    fn a_sum_is_bounded_by_gamma_times_its_magnitude() {
        let s = sum(&[1.0, 2f64.powi(-24), 2f64.powi(-24)], DType::F32);
        assert_eq!(s.kinds, Kinds::FINITE);
        assert!(s.admits(1.0) && s.admits(1.0 + 2f64.powi(-23)));
        assert!(!s.admits(1.001));
    }

    #[test]
    fn special_terms_give_the_outcomes_some_order_gives() {
        assert_eq!(sum(&[1.0, f64::NAN], DType::F64).kinds, Kinds::NAN);
        assert_eq!(
            sum(&[f64::INFINITY, f64::NEG_INFINITY], DType::F64).kinds,
            Kinds::NAN
        );
        let big = 0.75 * f64::MAX;
        let s = sum(&[big, big, f64::NEG_INFINITY], DType::F64);
        assert!(s.admits(f64::NEG_INFINITY) && s.admits(f64::NAN));
        assert!(!s.admits(f64::INFINITY) && !s.admits(0.0));
        let s = sum(&[big, big, -big], DType::F64);
        assert!(s.admits(f64::INFINITY) && s.admits(big) && !s.admits(f64::NAN));
    }

    #[test]
    fn products_overflow_in_their_own_dtype() {
        let exact = Exact::default();
        let big = Approx::exact(0.75 * f64::from(f32::MAX));
        let p = exact.binary(ValOp::Mul, big, big, DType::F32);
        assert_eq!(p.kinds, Kinds::PLUS_INFINITY);
        let zero_times_inf = exact.binary(
            ValOp::Mul,
            Approx::exact(0.0),
            Approx::exact(f64::INFINITY),
            DType::F32,
        );
        assert_eq!(zero_times_inf.kinds, Kinds::NAN);
    }

    #[test]
    fn max_follows_the_nan_policy_and_keeps_the_first_of_a_tie() {
        let propagate = Exact::default();
        let ignore = Exact {
            nan: NanPolicy::Ignore,
        };
        let (nan, three) = (Approx::exact(f64::NAN), Approx::exact(3.0));
        assert_eq!(
            propagate.func(Func::Max, &[nan, three], DType::F32).kinds,
            Kinds::NAN
        );
        assert_eq!(ignore.func(Func::Max, &[nan, three], DType::F32), three);
        let m = propagate.func(
            Func::Max,
            &[Approx::exact(-0.0), Approx::exact(0.0)],
            DType::F32,
        );
        assert!(m.value.is_sign_negative());
    }

    #[test]
    fn functions_carry_their_allowance_and_special_values() {
        let exact = Exact::default();
        let e = exact.func(Func::Exp, &[Approx::exact(1.0)], DType::F32);
        assert!(e.admits(std::f64::consts::E as f32 as f64));
        assert_eq!(
            exact
                .func(Func::Log, &[Approx::exact(-1.0)], DType::F32)
                .kinds,
            Kinds::NAN
        );
        assert_eq!(
            exact
                .func(Func::Exp, &[Approx::exact(1000.0)], DType::F32)
                .kinds,
            Kinds::PLUS_INFINITY
        );
        assert!((erf(0.5) - 0.520_499_877_813_046_5).abs() < 1e-15);
        assert!((erf(3.0) - 0.999_977_909_503_001_4).abs() < 1e-15);
        assert!((erf(-1.0) + 0.842_700_792_949_714_9).abs() < 1e-15);
    }
}
