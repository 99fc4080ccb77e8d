//! The vector vocabulary of the fast kernels, over `pulp`'s safe runtime-dispatched SIMD
//! (AVX-512, AVX2, or one scalar lane elsewhere): a [`Lane`] is an accumulator element (`f32`
//! or `f64`) with its vector operations, and a [`Rounding`] says what happens after every
//! multiply and every add.
//!
//! `f32` and `f64` accumulate in their own type ([`Exact32`], [`Exact64`]: rounding is the
//! identity). `bf16` and `f16` accumulate in `f32` registers that only ever hold values of the
//! half type: after each multiply and each add the `f32` result is rounded to the half type
//! ([`RoundBf16`], [`RoundF16`]) — exactly what `half`'s scalar `Mul` and `Add` do (they
//! widen both operands to `f32`, operate, and round back with `from_f32`). The vector
//! roundings here are integer re-implementations of `half`'s `from_f32` (round to nearest even,
//! NaN quieted with its payload truncated), checked against it on every special value and, in
//! an ignored test, on all 2³² inputs.

use pulp::{Arch, Simd};

/// The instruction-set levels the fast kernels dispatch to, best first, and whether this
/// machine runs each (the registry's [`fkc_provider::Registry::levels`]).
pub fn levels() -> Vec<fkc_provider::call::Level> {
    use fkc_provider::call::Level;
    #[cfg(target_arch = "x86_64")]
    {
        vec![
            Level {
                name: "x86-v4",
                runs_here: pulp::x86::V4::try_new().is_some(),
            },
            Level {
                name: "x86-v3",
                runs_here: pulp::x86::V3::try_new().is_some(),
            },
            Level {
                name: "scalar",
                runs_here: true,
            },
        ]
    }
    // Elsewhere the x86 levels are listed too, as levels this machine cannot run: a contract
    // may name a path for one of them (`levels: [x86-v4]`) on any machine.
    #[cfg(not(target_arch = "x86_64"))]
    {
        vec![
            Level {
                name: "x86-v4",
                runs_here: false,
            },
            Level {
                name: "x86-v3",
                runs_here: false,
            },
            Level {
                name: "scalar",
                runs_here: true,
            },
        ]
    }
}

/// The instruction set to run at: the level the current call asks for (when this machine has
/// it), else the best one available. The level that runs is reported as a path.
pub(crate) fn arch() -> Arch {
    let arch = fkc_provider::call::with_level(|level| match level {
        Some("scalar") => Arch::Scalar,
        #[cfg(target_arch = "x86_64")]
        Some("x86-v3") => pulp::x86::V3::try_new().map_or_else(Arch::new, Arch::V3),
        #[cfg(target_arch = "x86_64")]
        Some("x86-v4") => pulp::x86::V4::try_new().map_or_else(Arch::new, Arch::V4),
        _ => Arch::new(),
    });
    fkc_provider::call::took(match arch {
        Arch::Scalar => "level.scalar",
        #[cfg(target_arch = "x86_64")]
        Arch::V3(_) => "level.x86-v3",
        #[cfg(target_arch = "x86_64")]
        Arch::V4(_) => "level.x86-v4",
        #[allow(unreachable_patterns)]
        _ => "level.other",
    });
    arch
}

/// What a worker thread takes over from the call that starts it: the provider's call context
/// (so its paths are reported and it runs at the call's level) and the active mutant.
#[derive(Debug)]
pub(crate) struct Caller {
    context: Option<fkc_provider::call::Context>,
    mutant: Option<crate::mutants::Mutant>,
}

impl Caller {
    /// The call running on this thread.
    pub(crate) fn here() -> Self {
        Caller {
            context: fkc_provider::call::current(),
            mutant: crate::mutants::current(),
        }
    }

    /// Runs `f` (on a worker thread) as part of the call.
    pub(crate) fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        crate::mutants::with(self.mutant, || match &self.context {
            Some(context) => context.enter(f),
            None => f(),
        })
    }
}

/// An accumulator element type and its vector operations under a `pulp` token.
pub(crate) trait Lane: Copy + Default + num_traits::Float + Send + Sync + 'static {
    /// The vector of this element under `S`.
    type V<S: Simd>: Copy;
    /// A lane mask under `S`.
    type M<S: Simd>: Copy;
    /// Lanes per vector under `S`.
    fn lanes<S: Simd>() -> usize;
    fn splat<S: Simd>(s: S, v: Self) -> Self::V<S>;
    /// The first `lanes` elements of `src` (which must have at least that many).
    fn load<S: Simd>(src: &[Self]) -> Self::V<S>;
    /// Stores the first `min(dst.len(), lanes)` lanes.
    fn store<S: Simd>(s: S, dst: &mut [Self], v: Self::V<S>);
    fn add<S: Simd>(s: S, a: Self::V<S>, b: Self::V<S>) -> Self::V<S>;
    fn mul<S: Simd>(s: S, a: Self::V<S>, b: Self::V<S>) -> Self::V<S>;
    /// `if_true` where `m` is set, else `if_false`.
    fn select<S: Simd>(
        s: S,
        m: Self::M<S>,
        if_true: Self::V<S>,
        if_false: Self::V<S>,
    ) -> Self::V<S>;
    /// Lanes `i` with `start <= i < end` set.
    fn mask_between<S: Simd>(s: S, start: usize, end: usize) -> Self::M<S>;
    /// Lane maximum `v > running || running is NaN ? v : running` (the pooling step).
    fn max_step<S: Simd>(s: S, running: Self::V<S>, v: Self::V<S>) -> Self::V<S>;
    /// `v` with every NaN lane replaced by the canonical quiet NaN (`Self::nan()`).
    fn canonical_nan<S: Simd>(s: S, v: Self::V<S>) -> Self::V<S>;
}

/// Lane indices, for building masks (pulp's own `mask_between` indexes a table out of bounds
/// for some `f64` ranges on AVX-512).
static IOTA32: [u32; 64] = {
    let mut a = [0u32; 64];
    let mut i = 0;
    while i < 64 {
        a[i] = i as u32;
        i += 1;
    }
    a
};
static IOTA64: [u64; 64] = {
    let mut a = [0u64; 64];
    let mut i = 0;
    while i < 64 {
        a[i] = i as u64;
        i += 1;
    }
    a
};

/// Clamps a lane bound to `0..=lanes` and narrows it for the mask constructors.
#[inline(always)]
fn bound(v: usize, lanes: usize) -> usize {
    v.min(lanes)
}

/// The [`Lane`] implementation of one element type, written once for `f32` and `f64`: the
/// `pulp` vector and mask types, the lane count, and the lane-index table for masks.
macro_rules! impl_lane {
    ($t:ty, $uint:ty, $iota:ident, $lanes:ident,
     v = $v:ident, m = $m:ident, u = $u:ident,
     splat = $splat:ident, as_simd = $as_simd:ident, as_mut_simd = $as_mut_simd:ident,
     partial_store = $partial_store:ident, add = $add:ident, mul = $mul:ident,
     select = $select:ident, as_simd_u = $as_simd_u:ident, splat_u = $splat_u:ident,
     ge_u = $ge_u:ident, lt_u = $lt_u:ident, and_m = $and_m:ident, or_m = $or_m:ident,
     not_m = $not_m:ident, gt = $gt:ident, eq = $eq:ident) => {
        impl Lane for $t {
            type V<S: Simd> = S::$v;
            type M<S: Simd> = S::$m;
            #[inline(always)]
            fn lanes<S: Simd>() -> usize {
                S::$lanes
            }
            #[inline(always)]
            fn splat<S: Simd>(s: S, v: $t) -> S::$v {
                s.$splat(v)
            }
            #[inline(always)]
            fn load<S: Simd>(src: &[$t]) -> S::$v {
                S::$as_simd(&src[..S::$lanes]).0[0]
            }
            #[inline(always)]
            fn store<S: Simd>(s: S, dst: &mut [$t], v: S::$v) {
                if dst.len() >= S::$lanes {
                    S::$as_mut_simd(&mut dst[..S::$lanes]).0[0] = v;
                } else {
                    s.$partial_store(dst, v);
                }
            }
            #[inline(always)]
            fn add<S: Simd>(s: S, a: S::$v, b: S::$v) -> S::$v {
                s.$add(a, b)
            }
            #[inline(always)]
            fn mul<S: Simd>(s: S, a: S::$v, b: S::$v) -> S::$v {
                s.$mul(a, b)
            }
            #[inline(always)]
            fn select<S: Simd>(s: S, m: S::$m, t: S::$v, f: S::$v) -> S::$v {
                s.$select(m, t, f)
            }
            #[inline(always)]
            fn mask_between<S: Simd>(s: S, start: usize, end: usize) -> S::$m {
                let lanes = S::$lanes;
                // Both bounds are at most `lanes` (≤ 64), so they fit in the lane integer.
                let (a, b) = (bound(start, lanes) as $uint, bound(end, lanes) as $uint);
                let iota = S::$as_simd_u(&$iota[..lanes]).0[0];
                s.$and_m(s.$ge_u(iota, s.$splat_u(a)), s.$lt_u(iota, s.$splat_u(b)))
            }
            #[inline(always)]
            fn max_step<S: Simd>(s: S, running: S::$v, v: S::$v) -> S::$v {
                let take = s.$or_m(s.$gt(v, running), s.$not_m(s.$eq(running, running)));
                s.$select(take, v, running)
            }
            #[inline(always)]
            fn canonical_nan<S: Simd>(s: S, v: S::$v) -> S::$v {
                s.$select(s.$eq(v, v), v, s.$splat(<$t>::NAN))
            }
        }
    };
}

impl_lane!(
    f32,
    u32,
    IOTA32,
    F32_LANES,
    v = f32s,
    m = m32s,
    u = u32s,
    splat = splat_f32s,
    as_simd = as_simd_f32s,
    as_mut_simd = as_mut_simd_f32s,
    partial_store = partial_store_f32s,
    add = add_f32s,
    mul = mul_f32s,
    select = select_f32s,
    as_simd_u = as_simd_u32s,
    splat_u = splat_u32s,
    ge_u = greater_than_or_equal_u32s,
    lt_u = less_than_u32s,
    and_m = and_m32s,
    or_m = or_m32s,
    not_m = not_m32s,
    gt = greater_than_f32s,
    eq = equal_f32s
);

impl_lane!(
    f64,
    u64,
    IOTA64,
    F64_LANES,
    v = f64s,
    m = m64s,
    u = u64s,
    splat = splat_f64s,
    as_simd = as_simd_f64s,
    as_mut_simd = as_mut_simd_f64s,
    partial_store = partial_store_f64s,
    add = add_f64s,
    mul = mul_f64s,
    select = select_f64s,
    as_simd_u = as_simd_u64s,
    splat_u = splat_u64s,
    ge_u = greater_than_or_equal_u64s,
    lt_u = less_than_u64s,
    and_m = and_m64s,
    or_m = or_m64s,
    not_m = not_m64s,
    gt = greater_than_f64s,
    eq = equal_f64s
);

/// What happens after every multiply and every add: the result is rounded to the element type
/// the contract accumulates in, held in an accumulator [`Lane`].
pub(crate) trait Rounding: Copy + Send + Sync + 'static {
    /// The accumulator lane type.
    type A: Lane + std::ops::Add<Output = Self::A> + std::ops::Mul<Output = Self::A>;
    /// Whether the rounding is a long integer sequence (the half types): tiles are then kept
    /// narrower so that its temporaries fit in registers too.
    const HEAVY: bool;
    /// Rounds every lane to the contract's type (identity for f32/f64).
    fn round<S: Simd>(s: S, v: <Self::A as Lane>::V<S>) -> <Self::A as Lane>::V<S>;
    /// The scalar rounding, as `half` does it (the reference the vector rounding is tested
    /// against).
    #[cfg_attr(not(test), allow(dead_code))]
    fn round_scalar(v: Self::A) -> Self::A;

    /// `round(acc + round(x · w))`: one term of the documented sum.
    #[inline(always)]
    fn term<S: Simd>(
        s: S,
        acc: <Self::A as Lane>::V<S>,
        x: <Self::A as Lane>::V<S>,
        w: <Self::A as Lane>::V<S>,
    ) -> <Self::A as Lane>::V<S> {
        let p = Self::round(s, Self::A::mul(s, x, w));
        Self::round(s, Self::A::add(s, acc, p))
    }

    /// `round(acc + b)`: the bias step.
    #[inline(always)]
    fn plus<S: Simd>(
        s: S,
        acc: <Self::A as Lane>::V<S>,
        b: <Self::A as Lane>::V<S>,
    ) -> <Self::A as Lane>::V<S> {
        Self::round(s, Self::A::add(s, acc, b))
    }
}

/// f32 arithmetic: no extra rounding.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Exact32;
/// f64 arithmetic: no extra rounding.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Exact64;
/// bf16 arithmetic carried in f32 lanes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RoundBf16;
/// f16 arithmetic carried in f32 lanes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RoundF16;

impl Rounding for Exact32 {
    const HEAVY: bool = false;
    type A = f32;
    #[inline(always)]
    fn round<S: Simd>(_: S, v: S::f32s) -> S::f32s {
        v
    }
    #[inline(always)]
    fn round_scalar(v: f32) -> f32 {
        v
    }
}

impl Rounding for Exact64 {
    const HEAVY: bool = false;
    type A = f64;
    #[inline(always)]
    fn round<S: Simd>(_: S, v: S::f64s) -> S::f64s {
        v
    }
    #[inline(always)]
    fn round_scalar(v: f64) -> f64 {
        v
    }
}

impl Rounding for RoundBf16 {
    const HEAVY: bool = true;
    type A = f32;
    /// `half::bf16::from_f32(v).to_f32()` per lane: NaN → `(bits & 0xffff_0000) | 0x0040_0000`;
    /// otherwise round the magnitude to nearest even at bit 16.
    #[inline(always)]
    fn round<S: Simd>(s: S, v: S::f32s) -> S::f32s {
        let u = s.transmute_u32s_f32s(v);
        let sign = s.and_u32s(u, s.splat_u32s(0x8000_0000));
        let mag = s.and_u32s(u, s.splat_u32s(0x7fff_ffff));
        let lsb = s.and_u32s(
            s.wrapping_dyn_shr_u32s(mag, s.splat_u32s(16)),
            s.splat_u32s(1),
        );
        // mag ≤ 0x7fff_ffff, so adding at most 0x8000 cannot wrap.
        let up = if crate::mutants::active(crate::mutants::Mutant::Bf16Truncates) {
            mag
        } else {
            s.add_u32s(mag, s.add_u32s(s.splat_u32s(0x7fff), lsb))
        };
        let up = if crate::mutants::active(crate::mutants::Mutant::Bf16FlushesSubnormals) {
            let subnormal = s.less_than_u32s(mag, s.splat_u32s(0x0080_0000));
            s.select_u32s(subnormal, s.splat_u32s(0), up)
        } else {
            up
        };
        let rounded = s.or_u32s(s.and_u32s(up, s.splat_u32s(0xffff_0000)), sign);
        let nan = s.greater_than_u32s(mag, s.splat_u32s(0x7f80_0000));
        let quiet = s.or_u32s(
            s.and_u32s(u, s.splat_u32s(0xffff_0000)),
            s.splat_u32s(0x0040_0000),
        );
        s.transmute_f32s_u32s(s.select_u32s(nan, quiet, rounded))
    }
    #[inline(always)]
    fn round_scalar(v: f32) -> f32 {
        half::bf16::from_f32(v).to_f32()
    }
}

impl Rounding for RoundF16 {
    const HEAVY: bool = true;
    /// `half::f16::from_f32(v).to_f32()` per lane: NaN → `(bits & 0xffff_e000) | 0x0040_0000`;
    /// `|v| ≥ 65520` → ±∞; `|v| < 2⁻¹⁴` (f16 subnormals) rounded to a multiple of 2⁻²⁴ by
    /// `(|v| + 0.5) − 0.5`; otherwise the magnitude rounded to nearest even at bit 13.
    type A = f32;
    #[inline(always)]
    fn round<S: Simd>(s: S, v: S::f32s) -> S::f32s {
        let u = s.transmute_u32s_f32s(v);
        let sign = s.and_u32s(u, s.splat_u32s(0x8000_0000));
        let mag = s.and_u32s(u, s.splat_u32s(0x7fff_ffff));
        let lsb = s.and_u32s(
            s.wrapping_dyn_shr_u32s(mag, s.splat_u32s(13)),
            s.splat_u32s(1),
        );
        let up = s.add_u32s(mag, s.add_u32s(s.splat_u32s(0x0fff), lsb));
        let normal = s.and_u32s(up, s.splat_u32s(0xffff_e000));
        let half = s.splat_f32s(0.5);
        let tiny =
            s.transmute_u32s_f32s(s.sub_f32s(s.add_f32s(s.transmute_f32s_u32s(mag), half), half));
        let smallest_normal =
            if crate::mutants::active(crate::mutants::Mutant::F16SubnormalThresholdLow) {
                0x3800_0000
            } else {
                0x3880_0000
            };
        let is_tiny = s.less_than_u32s(mag, s.splat_u32s(smallest_normal));
        let tiny = if crate::mutants::active(crate::mutants::Mutant::F16FlushesSubnormals) {
            s.splat_u32s(0)
        } else {
            tiny
        };
        let r = s.select_u32s(is_tiny, tiny, normal);
        // ±Inf from the tie above the largest finite value (65520) on, or where a bug is planted
        let last_finite = match crate::mutants::current() {
            Some(crate::mutants::Mutant::F16OverflowTieKept) => 0x477f_f000,
            Some(crate::mutants::Mutant::F16OverflowPastLargest) => 0x477f_e000,
            _ => 0x477f_efff,
        };
        let huge = s.greater_than_u32s(mag, s.splat_u32s(last_finite));
        let r = s.select_u32s(huge, s.splat_u32s(0x7f80_0000), r);
        let r = s.or_u32s(r, sign);
        let nan = s.greater_than_u32s(mag, s.splat_u32s(0x7f80_0000));
        let quiet = s.or_u32s(
            s.and_u32s(u, s.splat_u32s(0xffff_e000)),
            s.splat_u32s(0x0040_0000),
        );
        s.transmute_f32s_u32s(s.select_u32s(nan, quiet, r))
    }
    #[inline(always)]
    fn round_scalar(v: f32) -> f32 {
        half::f16::from_f32(v).to_f32()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulp::{Arch, WithSimd};

    /// Rounds `values` in place with `R`'s vector rounding (tail lanes padded and dropped).
    struct RoundAll<'a, R>(&'a mut [f32], std::marker::PhantomData<R>);

    impl<R: Rounding<A = f32>> WithSimd for RoundAll<'_, R> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) {
            let lanes = S::F32_LANES;
            for chunk in self.0.chunks_mut(lanes) {
                let mut buf = [0f32; 64];
                buf[..chunk.len()].copy_from_slice(chunk);
                let v = R::round(s, f32::load::<S>(&buf));
                f32::store(s, chunk, v);
            }
        }
    }

    fn round_vec<R: Rounding<A = f32>>(arch: Arch, values: &mut [f32]) {
        arch.dispatch(RoundAll::<R>(values, std::marker::PhantomData));
    }

    fn check<R: Rounding<A = f32>>(arch: Arch, bits: &[u32]) {
        let mut v: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
        round_vec::<R>(arch, &mut v);
        for (&b, got) in bits.iter().zip(&v) {
            let want = R::round_scalar(f32::from_bits(b)).to_bits();
            assert_eq!(got.to_bits(), want, "input {b:#010x}");
        }
    }

    /// Every sign/exponent with mantissas around each rounding position (ties, ±1, all ones),
    /// every NaN class, both zeros, both infinities and every f32 subnormal pattern class.
    fn special_bits() -> Vec<u32> {
        let mut bits = Vec::new();
        let mantissas = [
            0u32, 1, 2, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001,
            0xffff, 0x1_0000, 0x1_8000, 0x1_7fff, 0x3f_ffff, 0x40_0000, 0x40_0001, 0x7f_e000,
            0x7f_efff, 0x7f_f000, 0x7f_ffff, 0x7f_8000,
        ];
        for sign in [0u32, 0x8000_0000] {
            for exp in 0..=0xffu32 {
                for &m in &mantissas {
                    bits.push(sign | (exp << 23) | m);
                }
            }
        }
        bits
    }

    #[test]
    fn vector_roundings_match_half_on_special_values() {
        let mut arches = vec![Arch::new()];
        // The one-lane path too, wherever the host has wider vectors.
        arches.push(Arch::Scalar);
        for arch in arches {
            let bits = special_bits();
            check::<RoundBf16>(arch, &bits);
            check::<RoundF16>(arch, &bits);
        }
    }

    #[test]
    fn vector_roundings_match_half_on_every_half_value_and_neighbours() {
        // Every bf16 and f16 value widened to f32, and the f32 values just beside it.
        let mut bits = Vec::new();
        for h in 0..=u16::MAX {
            for base in [
                half::bf16::from_bits(h).to_f32().to_bits(),
                half::f16::from_bits(h).to_f32().to_bits(),
            ] {
                bits.extend([base, base.wrapping_add(1), base.wrapping_sub(1)]);
                bits.extend([base ^ 0x1000, base ^ 0x8000, base | 0x0fff, base | 0x7fff]);
            }
        }
        check::<RoundBf16>(Arch::new(), &bits);
        check::<RoundF16>(Arch::new(), &bits);
    }

    /// All 2³² inputs (about a minute): `cargo test -- --ignored exhaustive`.
    #[test]
    #[ignore]
    fn vector_roundings_match_half_exhaustive() {
        let arch = Arch::new();
        let mut bits = vec![0u32; 1 << 20];
        for block in 0..(1u32 << 12) {
            for (i, b) in bits.iter_mut().enumerate() {
                *b = (block << 20) | i as u32;
            }
            check::<RoundBf16>(arch, &bits);
            check::<RoundF16>(arch, &bits);
        }
    }

    #[test]
    fn max_step_lanes_match_scalar() {
        struct Max<'a>(&'a [f32], &'a [f32], &'a mut Vec<f32>);
        impl WithSimd for Max<'_> {
            type Output = ();
            #[inline(always)]
            fn with_simd<S: Simd>(self, s: S) {
                let l = S::F32_LANES;
                for (a, b) in self.0.chunks_exact(l).zip(self.1.chunks_exact(l)) {
                    let v = f32::max_step(s, f32::load::<S>(a), f32::load::<S>(b));
                    let mut out = [0f32; 64];
                    f32::store(s, &mut out[..l], v);
                    self.2.extend_from_slice(&out[..l]);
                }
            }
        }
        let specials = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7fa0_0001),
            f32::MIN_POSITIVE / 2.0,
        ];
        let mut a = Vec::new();
        let mut b = Vec::new();
        for &x in &specials {
            for &y in &specials {
                a.push(x);
                b.push(y);
            }
        }
        while a.len() % 64 != 0 {
            a.push(0.0);
            b.push(0.0);
        }
        let mut got = Vec::new();
        Arch::new().dispatch(Max(&a, &b, &mut got));
        for ((x, y), g) in a.iter().zip(&b).zip(&got) {
            let want = crate::ops::common::max_step(*x, *y);
            assert_eq!(g.to_bits(), want.to_bits(), "max_step({x}, {y})");
        }
    }
}
