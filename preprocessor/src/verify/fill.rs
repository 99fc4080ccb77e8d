//! How operand values are chosen: seeded values of a dtype, in [-1, 1) for the gate's samples,
//! or designed to attack a claim — exponents spread wide (any change of order changes bits),
//! special values, signed zeros, values near underflow or overflow, magnitudes up to 256.

use super::constraints::ValueBound;
use super::sample::Rng;
use crate::semantics::float::pow2;
use fkc_provider::DType;

/// How operand values are chosen.
#[derive(Debug, Clone, Copy)]
pub enum Fill {
    /// Seeded values in [-1, 1) (the gate's samples).
    Random(u64),
    /// Seeded values whose exponents spread as widely as the dtype allows without overflow in
    /// a product (±2^k·(1 + f) with |k| up to 5 in half precision, 20 in single and double),
    /// so that any change of summation order changes bits.
    WideExponents(u64),
    /// Seeded values of which about one in three is special: NaN (canonical in every other run,
    /// signalling in the others; with a payload, or negative), ±Inf, -0.0, the smallest
    /// subnormal, or ±3/4 of the largest finite value of the dtype.
    Special(u64),
    /// A rising ramp (an operand's last elements are its largest) whose last [`TAIL`]
    /// elements alternate NaN and number, NaN first or second by the run index in bit 16:
    /// where a kernel takes the end of a buffer apart (a vector's lanes one by one), its
    /// windows' largest numbers sit among NaNs, both first and after the first element.
    /// An integer dtype gets its seeded integers.
    TailNaN(u64),
    /// Every element the `index`-th of [`UNIFORM_SPECIALS`] special values (NaN, ±Inf, -0.0,
    /// the smallest subnormal, ±3/4 of the largest finite, a NaN with a payload, a signalling
    /// NaN).
    UniformSpecial(u64),
    /// Seeded `+0.0`, `-0.0` and `-1.0`: windows and sums whose result is a zero of either
    /// sign, so that a bitwise claim's zero signs are put to the test.
    SignedZeros(u64),
    /// Seeded values near the square root of the dtype's smallest normal value (and one in
    /// four below the smallest normal itself), so that products, sums and some operands are
    /// subnormal: a kernel that flushes subnormals to zero is told apart.
    NearUnderflow(u64),
    /// Values near the dtype's largest finite value, so that sums and products land around the
    /// overflow threshold, in four kinds of run by the run index in bits 24 and 25
    /// ([`OverflowRun`]): a kernel that clamps, rounds the last binade wrongly or sends values
    /// short of the tie to ±Inf is told apart.
    NearOverflow(u64),
    /// Seeded `±(1 + f)·2^k` with `k` from −4 to 7 (magnitudes from 1/16 to 256, either
    /// sign): every range an elementwise function's argument may be cut at (a GELU or tanh
    /// taken as its limit past some threshold, an exp approximated on an interval), which
    /// values in [-1, 1) never leave; every other pair of runs a ramp from −16 to 16
    /// over the operand, evenly spaced, so that a threshold anywhere in it is met by the
    /// operands closest to it. An integer dtype gets its seeded integers.
    Magnitudes(u64),
}

impl Fill {
    /// The seed the values are drawn by.
    pub fn seed(self) -> u64 {
        match self {
            Fill::Random(seed)
            | Fill::WideExponents(seed)
            | Fill::Special(seed)
            | Fill::UniformSpecial(seed)
            | Fill::TailNaN(seed)
            | Fill::SignedZeros(seed)
            | Fill::NearUnderflow(seed)
            | Fill::NearOverflow(seed)
            | Fill::Magnitudes(seed) => seed,
        }
    }

    /// `count` values of `dtype` (with `small`, a call's integers within ±4).
    pub(super) fn values(self, rng: &mut Rng, dtype: DType, count: usize, small: bool) -> Vec<f64> {
        match self {
            Fill::Random(_) => (0..count)
                .map(|_| random_value(rng, dtype, small))
                .collect(),
            Fill::UniformSpecial(index) => vec![uniform_special(index, dtype); count],
            Fill::Special(seed) => {
                // Every other run (by the run index in bits 16 and up) without it.
                let canonical = (seed >> 16) & 1 == 0;
                (0..count)
                    .map(|_| special_value(rng, dtype, canonical))
                    .collect()
            }
            Fill::TailNaN(seed) if dtype.is_float() => tail_nan(count, fraction(rng), seed),
            Fill::TailNaN(_) => (0..count)
                .map(|_| random_value(rng, dtype, small))
                .collect(),
            Fill::WideExponents(_) => (0..count).map(|_| wide_exponent(rng, dtype)).collect(),
            Fill::SignedZeros(_) => (0..count).map(|_| signed_zero(rng, dtype)).collect(),
            Fill::NearUnderflow(_) => (0..count).map(|_| near_underflow(rng, dtype)).collect(),
            Fill::NearOverflow(seed) => {
                let run = OverflowRun::of(seed, dtype);
                (0..count).map(|_| run.value(rng, dtype)).collect()
            }
            // Runs 2, 3, 6, 7, … (the run index in bits 24 and up) a ramp: the attacks take a
            // grown sample and a drawn one in turn, so grown ones get both kinds.
            Fill::Magnitudes(seed) if ramps(seed) && dtype.is_float() => ramp(count, fraction(rng)),
            Fill::Magnitudes(_) => (0..count).map(|_| magnitude(rng, dtype)).collect(),
        }
    }

    /// Values within `bound` (its ends included): uniform, and under [`Fill::Special`] one in
    /// three an end.
    pub(super) fn bounded(self, rng: &mut Rng, bound: &ValueBound, count: usize) -> Vec<f64> {
        let (min, max) = (bound.min, bound.max.max(bound.min));
        (0..count)
            .map(|_| match (self, rng.range(0, 5)) {
                (Fill::Special(_) | Fill::UniformSpecial(_), 0) => min as f64,
                (Fill::Special(_) | Fill::UniformSpecial(_), 1) => max as f64,
                _ => rng.range(min, max) as f64,
            })
            .collect()
    }
}

/// How many special values [`Fill::UniformSpecial`] fills a whole operand with, in turn.
pub(crate) const UNIFORM_SPECIALS: u64 = 9;

/// The `index`-th special value a whole operand is filled with: NaN, ±Inf, -0.0, the smallest
/// subnormal, ±3/4 of the largest finite, a NaN with a payload and a signalling NaN (an integer
/// dtype: its ends, 0, ±1, 2 and their neighbours).
fn uniform_special(index: u64, dtype: DType) -> f64 {
    if let Some((low, high)) = dtype.int_range() {
        let (low, high) = (low as f64, high as f64);
        let values = [
            low,
            high,
            0.0,
            1.0_f64.min(high),
            (-1.0_f64).max(low),
            low + 1.0,
            high - 1.0,
            0.0,
            2.0_f64.min(high),
        ];
        return values.get(index as usize).copied().unwrap_or(0.0);
    }
    let largest = crate::semantics::float::largest(dtype);
    let values = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        crate::semantics::float::smallest_subnormal(dtype),
        0.75 * largest,
        -0.75 * largest,
        f64::from_bits(0x7ffc_0000_0000_0000),
        f64::from_bits(SIGNALLING_NAN),
    ];
    values.get(index as usize).copied().unwrap_or(f64::NAN)
}

/// The signalling NaN the special values take: quiet bit clear, the payload bit below it set,
/// so that it stays a signalling NaN in every float format (`0x7fa00000` in F32, `0x7d00` in
/// F16, `0x7fa0` in BF16, `0x7d` in F8E5M2).
const SIGNALLING_NAN: u64 = 0x7ff4_0000_0000_0000;

/// One value for [`Fill::Special`]; without `canonical`, the canonical NaN's place is taken by
/// a signalling NaN (so that a kernel which makes every NaN canonical is told apart from one
/// that passes an operand's NaN on, and one that quiets it from one that keeps it). An
/// integer dtype's special values are its ends and their neighbours, 0 and ±1.
fn special_value(rng: &mut Rng, dtype: DType, canonical: bool) -> f64 {
    if let Some((low, high)) = dtype.int_range() {
        let (low, high) = (low as f64, high as f64);
        return match rng.range(0, 8) {
            0 => low,
            1 => high,
            2 => low + 1.0,
            3 => high - 1.0,
            4 => 0.0,
            5 => 1.0_f64.min(high),
            6 => (-1.0_f64).max(low),
            _ => integer_value(rng, dtype),
        };
    }
    let (largest, smallest) = (
        crate::semantics::float::largest(dtype),
        crate::semantics::float::smallest_subnormal(dtype),
    );
    match rng.range(0, 26) {
        0 if canonical => f64::NAN,
        // A signalling NaN (its quiet bit clear, a payload bit every float format keeps): a
        // kernel that moves or selects elements returns it as it is, one that computes quiets it.
        0 => f64::from_bits(SIGNALLING_NAN),
        // NaNs that are not the canonical one: a payload, and a sign (x86's default NaN).
        7 => f64::from_bits(0x7ffc_0000_0000_0000),
        8 => f64::from_bits(0xfff8_0000_0000_0000),
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => -0.0,
        4 => smallest,
        5 => 0.75 * largest,
        6 => -0.75 * largest,
        _ => rng.unit(),
    }
}

/// A seeded integer of an integer `dtype`: anywhere in its range for the 8-bit ones and
/// `Bool`, within ±2^31 for the wider ones (so that 64-bit values stay exact in f64).
fn integer_value(rng: &mut Rng, dtype: DType) -> f64 {
    let (low, high) = dtype.int_range().unwrap_or((0, 0));
    let (low, high) = (low.max(-(1 << 31)) as i64, high.min((1 << 31) - 1) as i64);
    rng.range(low, high) as f64
}

/// One wide-exponent value for `dtype`.
fn wide_exponent(rng: &mut Rng, dtype: DType) -> f64 {
    if !dtype.is_float() {
        return integer_value(rng, dtype);
    }
    let reach = match dtype {
        DType::F8E5M2 => 3,
        DType::BF16 | DType::F16 => 5,
        _ => 20,
    };
    signed_power(rng, -reach, reach)
}

/// −1 or 1, evenly.
fn random_sign(rng: &mut Rng) -> f64 {
    if rng.range(0, 1) == 0 { -1.0 } else { 1.0 }
}

/// A value in [0, 1).
fn fraction(rng: &mut Rng) -> f64 {
    (rng.unit() + 1.0) / 2.0
}

/// `±(1 + f)·2^k` with `k` drawn from `low..=high`, then `f` in [0, 1), then the sign.
fn signed_power(rng: &mut Rng, low: i64, high: i64) -> f64 {
    let exponent = i32::try_from(rng.range(low, high)).unwrap_or(0);
    let mantissa = 1.0 + fraction(rng);
    let sign = random_sign(rng);
    sign * mantissa * pow2(exponent)
}

/// One value for [`Fill::NearUnderflow`]: `±(1 + f)·2^k` with `k` from four below to two
/// above half the smallest normal exponent (a product of two lies around the smallest normal),
/// and one in four with `k` up to six below the smallest normal exponent (a subnormal operand,
/// above the smallest subnormal); `f` is random, so that products carry more bits than a
/// subnormal keeps and their rounding shows. An integer dtype gets [`integer_value`]s.
fn near_underflow(rng: &mut Rng, dtype: DType) -> f64 {
    let Some(lowest) = smallest_normal_exponent(dtype) else {
        return integer_value(rng, dtype);
    };
    let (low, high) = match rng.range(0, 3) {
        0 => (lowest - 6, lowest - 1),
        _ => (lowest / 2 - 4, lowest / 2 + 2),
    };
    signed_power(rng, low, high)
}

/// The bit of a [`Fill::NearOverflow`] run's seed that makes it a led run
/// ([`super::threshold`]): its operands zeros, the elements the run designs set over them.
pub(super) const LED_RUN: u64 = 1 << 62;

/// The kind of a [`Fill::NearOverflow`] run, by the run index in bits 24 and 25 of its seed
/// (the overflow attack puts it there, not mixed with the gate's seed, so that its first four
/// runs are one of each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OverflowRun {
    /// About half the largest value, one in four near the largest itself ([`near_overflow`]).
    Halves,
    /// About its square root ([`overflow_root`]): products there, sums of two on the tie.
    Roots,
    /// The largest value, 1 and a quarter of its ulp, sparse or dense ([`overflow_straddle`]):
    /// sums past the largest, short of the tie; and half its ulp, so that a sum of it and the
    /// largest lands exactly on the tie. Formats of 16 bits or fewer only; wider ones take
    /// halves and roots in these runs.
    Straddle { dense: bool },
    /// A led run ([`super::threshold`]): zeros, the elements it designs set over them.
    Led,
}

impl OverflowRun {
    fn of(seed: u64, dtype: DType) -> OverflowRun {
        if seed & LED_RUN != 0 {
            return OverflowRun::Led;
        }
        let narrow = dtype.size_bytes() <= 2;
        match ((seed >> 24) & 3, narrow) {
            (0, _) | (3, false) => OverflowRun::Halves,
            (1, _) | (2, false) => OverflowRun::Roots,
            (run, _) => OverflowRun::Straddle { dense: run == 3 },
        }
    }

    /// One value of this run (an integer dtype: [`integer_value`]s).
    fn value(self, rng: &mut Rng, dtype: DType) -> f64 {
        if !dtype.is_float() {
            return integer_value(rng, dtype);
        }
        match self {
            OverflowRun::Halves => near_overflow(rng, dtype),
            OverflowRun::Roots => overflow_root(rng, dtype),
            OverflowRun::Straddle { dense } => overflow_straddle(rng, dtype, dense),
            OverflowRun::Led => 0.0,
        }
    }
}

/// One value for a halves run of [`Fill::NearOverflow`]: `±m·largest` with `m` in [0.45, 0.6)
/// (a sum of two between 0.9 and 1.2 of the largest, across the overflow threshold), one in
/// four in [0.9, 1.0).
fn near_overflow(rng: &mut Rng, dtype: DType) -> f64 {
    let fraction = fraction(rng);
    let m = match rng.range(0, 3) {
        0 => 0.9 + 0.1 * fraction,
        _ => 0.45 + 0.15 * fraction,
    };
    let sign = random_sign(rng);
    sign * m * crate::semantics::float::largest(dtype)
}

/// `±2^k`, `±1.5·2^k`, `±2^(k+1)` or `±(2 − 2^−m)·2^k` (the largest value below `2^(k+1)`,
/// `m` the mantissa bits), where `2k + 1` is the largest finite value's exponent: products of
/// two are `2^emax`, the largest finite value and values just below them, and two of those
/// products sum exactly to the tie between the largest finite value and the next power of
/// two (`2^k·2^(k+1) + 2^k·(2 − 2^−m)·2^k`), which must round to ±Inf. A convolution's or a
/// matmul's sums of products then meet the overflow threshold exactly.
fn overflow_root(rng: &mut Rng, dtype: DType) -> f64 {
    let fkc_provider::dtype::Format::Float { exponent, mantissa } = dtype.format() else {
        return 0.0;
    };
    let largest_exponent = (1_i32 << (exponent - 1)) - 1;
    let k = (largest_exponent - 1) / 2;
    let below_two = 2.0 - crate::semantics::float::pow2(-(mantissa as i32));
    let m = match rng.range(0, 3) {
        0 => 1.0,
        1 => 1.5,
        2 => 2.0,
        _ => below_two,
    };
    let sign = random_sign(rng);
    sign * m * crate::semantics::float::pow2(k)
}

/// One value for the straddling runs of [`Fill::NearOverflow`]: `1`, the largest finite value,
/// a quarter or half of its ulp, all positive, and in sparse runs eleven in twenty `0`. A sum
/// — or a sum of products — of one largest value and a few small ones lies past the largest
/// finite value but short of the tie with the next power of two, where it must round to the
/// largest, not to +Inf: dense runs land an elementwise sum there, sparse ones a sum of a few
/// to a few tens of products. The largest plus half its ulp is exactly the
/// tie, which must round to +Inf (a kernel that clamps there, or keeps the tie finite, shows
/// only on it). With no sign to cancel, each such sum is the same in `f32` whatever its order.
fn overflow_straddle(rng: &mut Rng, dtype: DType, dense: bool) -> f64 {
    let fkc_provider::dtype::Format::Float { mantissa, .. } = dtype.format() else {
        return 0.0;
    };
    let largest = crate::semantics::float::largest(dtype);
    // the largest value is (2 − 2^−m)·2^e: its ulp is 2^(e−m), a quarter of it 2^(e−m−2)
    let quarter_ulp = largest / (2.0 - crate::semantics::float::pow2(-(mantissa as i32)))
        * crate::semantics::float::pow2(-(mantissa as i32) - 2);
    // of twenty: dense, eight 1, eight the largest, two a quarter ulp, two half an ulp;
    // sparse, five 1, two the largest, one a quarter ulp, one half an ulp, eleven 0
    let (ones, largests, quarters, halves) = if dense { (8, 8, 2, 2) } else { (5, 2, 1, 1) };
    match rng.range(0, 19) {
        n if n < ones => 1.0,
        n if n < ones + largests => largest,
        n if n < ones + largests + quarters => quarter_ulp,
        n if n < ones + largests + quarters + halves => 2.0 * quarter_ulp,
        _ => 0.0,
    }
}

/// Whether a [`Fill::NearOverflow`] run of `seed` straddles the largest value of `dtype`
/// ([`overflow_straddle`]: formats of 16 bits or fewer).
pub(super) fn straddles(seed: u64, dtype: DType) -> bool {
    dtype.is_float() && matches!(OverflowRun::of(seed, dtype), OverflowRun::Straddle { .. })
}

/// One value for [`Fill::Magnitudes`].
fn magnitude(rng: &mut Rng, dtype: DType) -> f64 {
    if !dtype.is_float() {
        return integer_value(rng, dtype);
    }
    signed_power(rng, -4, 7)
}

/// Whether [`Fill::Magnitudes`] with `seed` lays a ramp (runs 2, 3, 6, 7, … by the run index
/// in bits 24 and up, with the gate's seed mixed in).
pub(super) fn ramps(seed: u64) -> bool {
    (seed >> 25) & 1 == 1
}

/// `count` values evenly spaced from −[`RAMP`] to [`RAMP`], each `offset` (in [0, 1)) of the
/// way into its step: the runs shift the grid by a random offset each, so that between them
/// they reach into ranges narrower than one step (a function cut off on a short range).
fn ramp(count: usize, offset: f64) -> Vec<f64> {
    let step = 2.0 * RAMP / count.max(1) as f64;
    (0..count)
        .map(|i| -RAMP + step * (i as f64 + offset))
        .collect()
}

/// The elements at the end of an operand that [`Fill::TailNaN`] makes NaN every other one of:
/// past a vector of 32 lanes and a window of 9.
pub(super) const TAIL: usize = 96;

/// [`ramp`] with every other one of its last [`TAIL`] values NaN (the first of them when
/// bit 16 of `seed` is clear, the second otherwise).
fn tail_nan(count: usize, offset: f64, seed: u64) -> Vec<f64> {
    let parity = usize::from((seed >> 16) & 1 == 1);
    let mut values = ramp(count, offset);
    let from = count.saturating_sub(TAIL);
    for (at, value) in values.iter_mut().enumerate().skip(from) {
        if (at - from + parity).is_multiple_of(2) {
            *value = f64::NAN;
        }
    }
    values
}

/// The half-width of [`ramp`]: past the thresholds elementwise functions are cut at (GELU, tanh
/// and the logistic function are within an ulp of their limits past about 9 in `f32`).
const RAMP: f64 = 16.0;

/// The exponent of a float dtype's smallest normal value (`None` for an integer dtype).
fn smallest_normal_exponent(dtype: DType) -> Option<i64> {
    match dtype {
        DType::F64 => Some(-1022),
        DType::F32 | DType::BF16 => Some(-126),
        DType::F16 | DType::F8E5M2 => Some(-14),
        DType::I8 | DType::U8 | DType::I32 | DType::I64 | DType::Bool => None,
    }
}

/// One value for [`Fill::SignedZeros`]: `+0.0` or `-0.0` three times in eight each, else
/// `-1.0` (for an unsigned dtype, 1).
fn signed_zero(rng: &mut Rng, dtype: DType) -> f64 {
    match rng.range(0, 7) {
        0..=2 => 0.0,
        3..=5 => -0.0,
        _ if dtype.int_range().is_some_and(|(low, _)| low == 0) => 1.0,
        _ => -1.0,
    }
}

/// One value for [`Fill::Random`]: in [-1, 1) for a float dtype; for an integer one, any of
/// its values ([`integer_value`]) or, in calls whose seed says `small`, one within ±4 (so that
/// sums and products stay within the dtype's range and what follows them — a rounding, a
/// requantize — is seen, not only its saturation).
fn random_value(rng: &mut Rng, dtype: DType, small: bool) -> f64 {
    if dtype.is_float() {
        rng.unit()
    } else if small {
        let (low, high) = dtype.int_range().unwrap_or((0, 0));
        rng.range(low.max(-4) as i64, high.min(4) as i64) as f64
    } else {
        integer_value(rng, dtype)
    }
}
