//! The vectorised `max_pool2d` scan, for every element type, optionally over several threads.
//!
//! A window's row-major scan (seed with its first element, then `max_step` over the window)
//! returns the first element, in scan order, that holds the largest non-NaN value, or the
//! last element if all are NaN. That rule gives the same element when the scan is cut into
//! consecutive pieces and the pieces' results are scanned in order, so each window is reduced
//! row by row: first every input row is reduced across the `k` columns of every window
//! position (contiguous vector loads at full input resolution), then each output row reduces
//! its `k` reduced rows in order (contiguous again) and picks every `stride`-th position.
//! Every lane runs exactly `max_step`, so the output is bitwise the scalar scan's, NaN
//! payloads and zero signs included. `bf16` and `f16` are first mapped into `f32` by an exact,
//! order-preserving map that keeps every bit (see [`PoolKey`]) and mapped back afterwards.

use std::any::Any;

use half::{bf16, f16};
use pulp::{Simd, WithSimd};

use crate::mutants::{Mutant, active};
use crate::ops::common::max_step;
use crate::ops::simd::{Lane, arch};
use crate::tensor::{Element, RefTensor};

/// A validated pooling geometry (one plane).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoolGeometry {
    pub height: usize,
    pub width: usize,
    pub out_height: usize,
    pub out_width: usize,
    pub kernel: usize,
    pub stride: usize,
}

/// Reduced rows are padded to a multiple of this many elements (every vector width divides
/// it), so that whole-vector loads and stores stay inside them.
const ROW_QUANTUM: usize = 64;

impl PoolGeometry {
    fn plane(&self) -> usize {
        self.height * self.width
    }
    fn out_plane(&self) -> usize {
        self.out_height * self.out_width
    }
    /// Window positions of one reduced row that some output reads: `0..=(Wout − 1)·stride`.
    fn positions(&self) -> usize {
        (self.out_width - 1) * self.stride + 1
    }
    /// Length of one reduced row (at least `Wout · stride`, so that it splits into one chunk
    /// of `stride` positions per output), or `None` on overflow.
    fn reduced_len(&self) -> Option<usize> {
        self.out_width
            .checked_mul(self.stride)?
            .checked_next_multiple_of(ROW_QUANTUM)
    }
}

/// The vectorised scan over `threads` threads (`0` and `1` mean the calling thread), or
/// `None` if `T` has no fast path or a scratch buffer cannot be allocated.
pub(crate) fn run<T: Element>(
    g: &PoolGeometry,
    x: &RefTensor<T>,
    threads: usize,
) -> Option<Vec<T>> {
    let any = x as &dyn Any;
    if any.is::<RefTensor<f32>>() {
        direct::<T, f32>(g, x, threads)
    } else if any.is::<RefTensor<f64>>() {
        direct::<T, f64>(g, x, threads)
    } else if any.is::<RefTensor<bf16>>() {
        keyed::<T, bf16>(g, x, threads)
    } else if any.is::<RefTensor<f16>>() {
        keyed::<T, f16>(g, x, threads)
    } else {
        None
    }
}

/// `T` is the lane type `A` itself.
fn direct<T: Element, A: Lane + Element>(
    g: &PoolGeometry,
    x: &RefTensor<T>,
    threads: usize,
) -> Option<Vec<T>> {
    let x = (x as &dyn Any).downcast_ref::<RefTensor<A>>()?;
    let out = pool::<A>(g, x.data(), threads)?;
    (Box::new(out) as Box<dyn Any>)
        .downcast::<Vec<T>>()
        .ok()
        .map(|b| *b)
}

/// `T` is the half type `H`, pooled as `f32` keys.
fn keyed<T: Element, H: PoolKey>(
    g: &PoolGeometry,
    x: &RefTensor<T>,
    threads: usize,
) -> Option<Vec<T>> {
    let x = (x as &dyn Any).downcast_ref::<RefTensor<H>>()?;
    let keys: Vec<f32> = x.data().iter().map(|&v| v.to_key()).collect();
    let out: Vec<H> = pool::<f32>(g, &keys, threads)?
        .into_iter()
        .map(H::from_key)
        .collect();
    (Box::new(out) as Box<dyn Any>)
        .downcast::<Vec<T>>()
        .ok()
        .map(|b| *b)
}

/// A half type's exact image in `f32`: `to_key` is injective, NaN exactly on NaN, and keeps
/// the order and equalities of `max_step` (`>` and `==`, `-0.0 == +0.0`); `from_key` inverts
/// it bit for bit. Pooling only compares and selects keys, so every output key is an input
/// key and maps back to the input's exact bits (NaN payloads and zero signs included).
trait PoolKey: Element {
    fn to_key(self) -> f32;
    fn from_key(key: f32) -> Self;
}

impl PoolKey for bf16 {
    /// bf16 is the upper half of an f32: the widening is a shift, NaNs included.
    fn to_key(self) -> f32 {
        f32::from_bits(u32::from(self.to_bits()) << 16)
    }
    fn from_key(key: f32) -> bf16 {
        bf16::from_bits((key.to_bits() >> 16) as u16)
    }
}

/// The quiet f32 NaN that carries an f16 NaN's 16 bits in its low mantissa bits.
const F16_NAN_KEY: u32 = 0x7fc0_0000;

impl PoolKey for f16 {
    /// Numbers widen exactly; a NaN becomes a quiet f32 NaN that carries its bits (widening
    /// it arithmetically would move them and could quiet it on the way back).
    fn to_key(self) -> f32 {
        if self.is_nan() && !active(Mutant::PoolF16NanWidened) {
            f32::from_bits(F16_NAN_KEY | u32::from(self.to_bits()))
        } else {
            self.to_f32()
        }
    }
    fn from_key(key: f32) -> f16 {
        if key.is_nan() && !active(Mutant::PoolF16NanWidened) {
            f16::from_bits(key.to_bits() as u16)
        } else {
            // Exact: the key is a widened f16.
            f16::from_f32(key)
        }
    }
}

/// Pools every plane of `x`, the planes split into contiguous runs over `threads` threads.
fn pool<A: Lane + Element>(g: &PoolGeometry, x: &[A], threads: usize) -> Option<Vec<A>> {
    let plane = g.plane();
    let planes = x.len() / plane;
    let out_plane = g.out_plane();
    let mut out = crate::shape::zeroed_vec::<A>(planes.checked_mul(out_plane)?).ok()?;
    let reduced_len = g.reduced_len()?;
    let scratch_len = g
        .height
        .checked_mul(reduced_len)?
        .checked_add(reduced_len)?;
    let threads = threads.clamp(1, planes.max(1));
    let per = planes.div_ceil(threads).max(1);
    let mut scratches = Vec::with_capacity(threads);
    for _ in 0..threads {
        scratches.push(crate::shape::zeroed_vec::<A>(scratch_len).ok()?);
    }
    let runs = x
        .chunks(per * plane)
        .zip(out.chunks_mut(per * out_plane))
        .zip(&mut scratches);
    if threads == 1 {
        for ((x, out), scratch) in runs {
            arch().dispatch(Pool {
                g,
                reduced_len,
                x,
                out,
                scratch,
            });
        }
    } else {
        fkc_provider::call::took("pool.threads");
        crate::ops::workers::split(runs.collect(), |((x, out), scratch)| {
            arch().dispatch(Pool {
                g,
                reduced_len,
                x,
                out,
                scratch,
            })
        });
    }
    Some(out)
}

/// Whole planes `x` pooled into `out`, with `scratch` for `height + 1` reduced rows.
struct Pool<'a, A> {
    g: &'a PoolGeometry,
    /// [`PoolGeometry::reduced_len`].
    reduced_len: usize,
    x: &'a [A],
    out: &'a mut [A],
    scratch: &'a mut [A],
}

impl<A: Lane + Element> WithSimd for Pool<'_, A> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let g = self.g;
        let reduced_len = self.reduced_len;
        let (reduced, picked) = self.scratch.split_at_mut(g.height * reduced_len);
        let picked = &mut picked[..reduced_len];
        for (p, out_plane) in self.out.chunks_exact_mut(g.out_plane()).enumerate() {
            let mut ready = 0;
            for (oh, out_row) in out_plane.chunks_exact_mut(g.out_width).enumerate() {
                let top = oh * g.stride;
                while ready < top + g.kernel {
                    let row = &mut reduced[ready * reduced_len..][..reduced_len];
                    reduce_columns(s, g, self.x, p * g.plane() + ready * g.width, row);
                    ready += 1;
                }
                let rows = &reduced[top * reduced_len..][..g.kernel * reduced_len];
                reduce_rows(s, g, rows, reduced_len, out_row, picked);
            }
        }
    }
}

/// Vectors reduced side by side in one step, so that their independent `max_step` chains
/// overlap.
const UNROLL: usize = 4;

/// Reduces the input row starting at `x[start]` across the `k` columns of every window
/// position: `row[j]` = the scan of `x[start + j .. start + j + k]`, for every position an
/// output reads. Vectors whose loads would run past the end of `x` are done lane by lane.
#[inline(always)]
fn reduce_columns<S: Simd, A: Lane + Element>(
    s: S,
    g: &PoolGeometry,
    x: &[A],
    start: usize,
    row: &mut [A],
) {
    let lanes = A::lanes::<S>();
    let positions = g.positions();
    let fits = |j0: usize, n: usize| start + j0 + g.kernel - 1 + n * lanes <= x.len();
    let mut j0 = 0;
    while j0 + UNROLL * lanes <= positions.next_multiple_of(lanes) && fits(j0, UNROLL) {
        let at = |v: usize, c: usize| A::load::<S>(&x[start + j0 + v * lanes + c..]);
        let mut m: [A::V<S>; UNROLL] = std::array::from_fn(|v| at(v, 0));
        let later = active(Mutant::PoolTieTakesLater);
        for c in 1..g.kernel {
            for (v, m) in m.iter_mut().enumerate() {
                *m = if later {
                    A::max_step(s, at(v, c), *m)
                } else {
                    A::max_step(s, *m, at(v, c))
                };
            }
        }
        for (v, &m) in m.iter().enumerate() {
            A::store(s, &mut row[j0 + v * lanes..], m);
        }
        j0 += UNROLL * lanes;
    }
    if j0 > 0 {
        fkc_provider::call::took("pool.unrolled");
    }
    let (mut single, mut by_lane) = (false, false);
    while j0 < positions {
        if fits(j0, 1) {
            single = true;
            let at = |c: usize| A::load::<S>(&x[start + j0 + c..]);
            let mut m = at(0);
            for c in 1..g.kernel {
                m = A::max_step(s, m, at(c));
            }
            A::store(s, &mut row[j0..], m);
        } else {
            by_lane = true;
            let naive = active(Mutant::PoolLaneTailNaiveMax);
            for j in j0..positions.min(j0 + lanes) {
                let window = &x[start + j..][..g.kernel];
                row[j] = if naive {
                    let max = |m: A, v: A| if v > m { v } else { m };
                    window[1..].iter().fold(window[0], |m, &v| max(m, v))
                } else {
                    window[1..].iter().fold(window[0], |m, &v| max_step(m, v))
                };
            }
        }
        j0 += lanes;
    }
    if single {
        fkc_provider::call::took("pool.one-vector");
    }
    if by_lane {
        fkc_provider::call::took("pool.lane-tail"); // the row's last loads would run past `x`
    }
}

/// Reduces the `k` reduced rows of one output row, in order, and writes every `stride`-th
/// position to `out_row` (through `picked` when the stride is above 1).
#[inline(always)]
fn reduce_rows<S: Simd, A: Lane>(
    s: S,
    g: &PoolGeometry,
    rows: &[A],
    reduced_len: usize,
    out_row: &mut [A],
    picked: &mut [A],
) {
    let lanes = A::lanes::<S>();
    let positions = g.positions();
    let at = |r: usize, j: usize| A::load::<S>(&rows[r * reduced_len + j..]);
    let mut j0 = 0;
    while j0 + UNROLL * lanes <= positions.next_multiple_of(lanes) {
        let mut m: [A::V<S>; UNROLL] = std::array::from_fn(|v| at(0, j0 + v * lanes));
        for r in 1..g.kernel {
            for (v, m) in m.iter_mut().enumerate() {
                *m = A::max_step(s, *m, at(r, j0 + v * lanes));
            }
        }
        for (v, &m) in m.iter().enumerate() {
            put(s, g, j0 + v * lanes, m, out_row, picked);
        }
        j0 += UNROLL * lanes;
    }
    while j0 < positions {
        let mut m = at(0, j0);
        for r in 1..g.kernel {
            m = A::max_step(s, m, at(r, j0));
        }
        put(s, g, j0, m, out_row, picked);
        j0 += lanes;
    }
    if g.stride > 1 {
        fkc_provider::call::took("pool.strided-pick");
        for (o, positions) in out_row.iter_mut().zip(picked.chunks_exact(g.stride)) {
            *o = positions[0];
        }
    }
}

/// Stores the reduced vector of positions `j0..`: straight into the output row when every
/// position is an output (stride 1), else into `picked`.
#[inline(always)]
fn put<S: Simd, A: Lane>(
    s: S,
    g: &PoolGeometry,
    j0: usize,
    m: A::V<S>,
    out_row: &mut [A],
    picked: &mut [A],
) {
    if g.stride == 1 {
        A::store(s, &mut out_row[j0..], m);
    } else {
        A::store(s, &mut picked[j0..], m);
    }
}
