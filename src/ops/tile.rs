//! The register-tiled gather convolution behind `conv2d`, `conv2d_simple` and
//! `conv_transpose2d` for `f32`, `f64`, `bf16` and `f16`.
//!
//! A [`Gather`] describes one convolution as a gather: for each output row, the kernel rows
//! that reach it (`(kh, ih)`, in summation order); for each column phase, the kernel columns
//! that reach it (in summation order), each reading a contiguous run of a padded,
//! phase-split copy of the input row, with the range of outputs for which the tap is a real
//! (not padding) tap; what a padding position holds never matters, as no lane reads it into a
//! sum. Each output's terms are added in the documented order — input channel,
//! then kernel row, then kernel column — with padding taps skipped by lane masks (never added
//! as zeros, which would turn `-0.0` into `+0.0` and `0 · ∞` into NaN).
//!
//! The speed comes from the tile: `CT` output channels × `NV` vectors of output columns stay
//! in registers through the whole reduction; each input vector is loaded once per tap and used
//! for all `CT` channels. Work is split over (image, channel tile) pairs, optionally across
//! threads; every output is computed by the same instructions whatever the split, so the
//! result does not depend on the thread count.
//!
//! NaN outputs are stored as the canonical quiet NaN (`T::nan()`). When two NaNs meet in an
//! add or a multiply, x86 returns the first source operand's NaN, and LLVM, for which `fadd`
//! and `fmul` commute, picks the operand order per compiled copy of the code (Rust leaves the
//! payload and sign of such a NaN unspecified). The one-thread call and the thread closure
//! may be compiled as separate copies of the same kernel (debug builds use many codegen
//! units), so the sign of the NaN that survives could differ between thread layouts; a
//! NaN-sign difference of that kind was reported from a debug build, though a dense NaN/±∞
//! debug-build test of 1 against 2 and 3 threads (117 280 NaN outputs) did not reproduce it
//! on commit 07844f4, before this rule. Which NaN it is was never part of the result (the
//! naive loop has the same freedom); storing one NaN makes every output bit independent of
//! code layout and thread count by construction.

use std::any::Any;
use std::ops::Range;

use half::{bf16, f16};
use pulp::{Simd, WithSimd};

use crate::mutants::{Mutant, active};
use crate::ops::simd::{Exact32, Exact64, Lane, RoundBf16, RoundF16, Rounding, arch};
use crate::tensor::{Element, RefTensor};

/// One kernel column tap of a column phase: output `j` of the phase reads
/// `buffer[.., phase][start + j]`, and the tap is real (not padding) for `j` in `valid`.
#[derive(Clone, Debug)]
pub(crate) struct ColTap {
    pub kw: usize,
    pub phase: usize,
    pub start: usize,
    pub valid: Range<usize>,
}

/// Output columns `ow = j · out_step + out_base` for `j` in `0..count`, and their taps.
#[derive(Clone, Debug)]
pub(crate) struct ColPhase {
    pub taps: Vec<ColTap>,
    pub count: usize,
    pub out_base: usize,
}

/// Where weight `(co, ci, kh, kw)` (`ci` local to the group) lives in the weight operand.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WeightLayout {
    /// `[Cout, Cin/groups, Kh, Kw]` (conv2d).
    Conv,
    /// `[Cin, Cout/groups, Kh, Kw]` (conv_transpose2d).
    Transposed,
}

/// A convolution in gather form, for every image of the batch.
#[derive(Clone, Debug)]
pub(crate) struct Gather {
    pub batch: usize,
    pub in_channels: usize,
    pub height: usize,
    pub width: usize,
    pub out_channels: usize,
    pub out_height: usize,
    pub out_width: usize,
    pub groups: usize,
    pub kernel_height: usize,
    pub kernel_width: usize,
    /// How the input is read: everything but the sizes.
    pub plan: GatherPlan,
}

/// How a convolution reads its input in gather form: everything of a [`Gather`] but the
/// sizes.
#[derive(Clone, Debug)]
pub(crate) struct GatherPlan {
    pub weights: WeightLayout,
    /// Input column `iw` sits at padded position `iw + left`, stored in buffer phase
    /// `(iw + left) % phases` at index `(iw + left) / phases`.
    pub phases: usize,
    pub left: usize,
    /// Per output row: the `(kh, ih)` pairs that reach it, in summation order.
    pub rows: Vec<Vec<(usize, usize)>>,
    pub cols: Vec<ColPhase>,
    pub out_step: usize,
}

impl Gather {
    /// The gather of a convolution with input `[N, Cin, H, W]`, output `[N, Cout, Hout, Wout]`,
    /// kernel `[Kh, Kw]` and `groups`, read as `plan` says.
    pub(crate) fn new(
        input: [usize; 4],
        output: [usize; 4],
        kernel: [usize; 2],
        groups: usize,
        plan: GatherPlan,
    ) -> Gather {
        let [batch, in_channels, height, width] = input;
        let [_, out_channels, out_height, out_width] = output;
        let [kernel_height, kernel_width] = kernel;
        Gather {
            batch,
            in_channels,
            height,
            width,
            out_channels,
            out_height,
            out_width,
            groups,
            kernel_height,
            kernel_width,
            plan,
        }
    }
}

/// Largest padded-buffer size, relative to the input, that the fast path accepts; beyond it
/// (absurd padding) the plain loops run instead.
const MAX_BUFFER_GROWTH: usize = 16;
/// Output columns per phase are covered in spans of at most this many (`NV · lanes` divides
/// it for every instruction set), so phase rows are padded up to a multiple of it.
const SPAN_QUANTUM: usize = 64;

impl Gather {
    fn group_in(&self) -> usize {
        self.in_channels / self.groups
    }
    fn group_out(&self) -> usize {
        self.out_channels / self.groups
    }
    /// How far the reads of one phase row reach from its start (largest tap offset plus the
    /// padded column span), or `None` on overflow.
    fn row_len(&self) -> Option<usize> {
        let mut len = 0usize;
        for phase in &self.plan.cols {
            let cover = phase.count.checked_next_multiple_of(SPAN_QUANTUM)?;
            for tap in &phase.taps {
                len = len.max(tap.start.checked_add(cover)?);
            }
        }
        // At least one element, so that buffer rows are never empty.
        Some(len.max(1))
    }
    /// Distance between consecutive phase rows of the padded buffer. One phase: the input
    /// width, so that the buffer is the input itself shifted by `left` (one copy per group
    /// of channels; a read past the end of a row lands in the next one, on lanes that are
    /// masked out). Several phases: `row_len`, each phase row holding its own columns.
    fn pitch(&self, row_len: usize) -> usize {
        if self.plan.phases == 1 {
            self.width
        } else {
            row_len
        }
    }
    /// Elements of a padded buffer of `rows` input rows, with room after the last row for
    /// the reads that run past it; `None` on overflow.
    fn buffer_len(&self, rows: usize, row_len: usize) -> Option<usize> {
        rows.checked_mul(self.plan.phases)?
            .checked_mul(self.pitch(row_len))?
            .checked_add(row_len)?
            .checked_add(self.plan.left)
    }
}

/// A storage type with a fast path: the accumulator it computes in and the conversions.
pub(crate) trait Fast: Element {
    type R: Rounding;
    /// Exact widening to the accumulator lane.
    fn widen(self) -> <Self::R as Rounding>::A;
    /// Back to storage; exact, because accumulators only hold values of `Self`.
    fn narrow(a: <Self::R as Rounding>::A) -> Self;
}

impl Fast for f32 {
    type R = Exact32;
    fn widen(self) -> f32 {
        self
    }
    fn narrow(a: f32) -> f32 {
        a
    }
}

impl Fast for f64 {
    type R = Exact64;
    fn widen(self) -> f64 {
        self
    }
    fn narrow(a: f64) -> f64 {
        a
    }
}

impl Fast for bf16 {
    type R = RoundBf16;
    fn widen(self) -> f32 {
        self.to_f32()
    }
    fn narrow(a: f32) -> bf16 {
        bf16::from_f32(a)
    }
}

impl Fast for f16 {
    type R = RoundF16;
    fn widen(self) -> f32 {
        self.to_f32()
    }
    fn narrow(a: f32) -> f16 {
        f16::from_f32(a)
    }
}

type Acc<E> = <<E as Fast>::R as Rounding>::A;
type Vector<E, S> = <Acc<E> as Lane>::V<S>;

/// Runs the gather convolution if `T` is one of the four fast types, else `None` (the caller
/// then runs its plain loops). Also `None` when the padded buffer would be unreasonably large.
pub(crate) fn run<T: Element>(
    g: &Gather,
    x: &RefTensor<T>,
    weight: &RefTensor<T>,
    bias: Option<&RefTensor<T>>,
    threads: usize,
) -> Option<Vec<T>> {
    fn typed<T: Element, E: Fast>(
        g: &Gather,
        x: &RefTensor<T>,
        weight: &RefTensor<T>,
        bias: Option<&RefTensor<T>>,
        threads: usize,
    ) -> Option<Vec<T>> {
        let x = (x as &dyn Any).downcast_ref::<RefTensor<E>>()?;
        let weight = (weight as &dyn Any).downcast_ref::<RefTensor<E>>()?;
        let bias = match bias {
            Some(b) => Some((b as &dyn Any).downcast_ref::<RefTensor<E>>()?.data()),
            None => None,
        };
        let out = run_typed::<E>(g, x.data(), weight.data(), bias, threads)?;
        (Box::new(out) as Box<dyn Any>)
            .downcast::<Vec<T>>()
            .ok()
            .map(|b| *b)
    }
    let any = x as &dyn Any;
    if any.is::<RefTensor<f32>>() {
        typed::<T, f32>(g, x, weight, bias, threads)
    } else if any.is::<RefTensor<f64>>() {
        typed::<T, f64>(g, x, weight, bias, threads)
    } else if any.is::<RefTensor<bf16>>() {
        typed::<T, bf16>(g, x, weight, bias, threads)
    } else if any.is::<RefTensor<f16>>() {
        typed::<T, f16>(g, x, weight, bias, threads)
    } else {
        None
    }
}

/// Pads and phase-splits consecutive input rows `src` (each `width` long) into `dst`, whose
/// rows of `phases` phase rows are `pitch` apart (see [`Gather::pitch`]), in accumulator
/// precision. Padding positions are left as they are: every tap that would read one is
/// masked out.
fn pad_rows<E: Fast>(g: &Gather, src: &[E], dst: &mut [Acc<E>], pitch: usize) {
    if g.plan.phases == 1 {
        // The rows are `width` apart in both: one straight (vectorisable) copy at `left`.
        if let Some(dst) = dst.get_mut(g.plan.left..) {
            for (d, &v) in dst.iter_mut().zip(src) {
                *d = v.widen();
            }
        }
        return;
    }
    let in_rows = src.chunks_exact(g.width);
    let out_rows = dst.chunks_exact_mut(g.plan.phases * pitch);
    for (src, dst) in in_rows.zip(out_rows) {
        // Input column iw lands in phase (iw + left) % phases at index (iw + left) / phases:
        // walk each phase's columns with a step instead of dividing per element.
        for p in 0..g.plan.phases {
            // First input column of phase p: the smallest iw ≥ 0 with (iw + left) % phases = p.
            let first = (p + g.plan.phases - g.plan.left % g.plan.phases) % g.plan.phases;
            let q0 = (first + g.plan.left) / g.plan.phases;
            let Some(room) = pitch.checked_sub(q0) else {
                continue;
            };
            let dst_row = &mut dst[p * pitch + q0..(p + 1) * pitch];
            let cols = src.iter().skip(first).step_by(g.plan.phases).take(room);
            for (d, &v) in dst_row.iter_mut().zip(cols) {
                *d = v.widen();
            }
        }
    }
}

/// The weights as `[Cout, Cin/groups, Kh, Kw]` in accumulator precision.
fn packed_weights<E: Fast>(g: &Gather, w: &[E]) -> Vec<Acc<E>> {
    let taps = g.kernel_height * g.kernel_width;
    let (group_in, group_out) = (g.group_in(), g.group_out());
    match g.plan.weights {
        WeightLayout::Conv => w.iter().map(|&v| v.widen()).collect(),
        WeightLayout::Transposed => {
            let mut out = Vec::with_capacity(w.len());
            for co in 0..g.out_channels {
                let (group, local) = (co / group_out, co % group_out);
                for ci in 0..group_in {
                    let channel = group * group_in + ci;
                    let src = &w[(channel * group_out + local) * taps..][..taps];
                    out.extend(src.iter().map(|&v| v.widen()));
                }
            }
            out
        }
    }
}

/// One unit of work: output channels `co0..co0 + count` of image `image`, whose planes are
/// `out`.
struct Item<'a, A> {
    image: usize,
    co0: usize,
    count: usize,
    out: &'a mut [A],
}

fn run_typed<E: Fast>(
    g: &Gather,
    x: &[E],
    w: &[E],
    bias: Option<&[E]>,
    threads: usize,
) -> Option<Vec<E>> {
    let row_len = g.row_len()?;
    let pitch = g.pitch(row_len);
    // Each thread pads one group of input channels of one image at a time into its scratch.
    let group_plane = g.group_in().checked_mul(g.height)?;
    let scratch_len = g.buffer_len(group_plane, row_len)?;
    let limit = group_plane
        .checked_mul(g.width)?
        .checked_mul(MAX_BUFFER_GROWTH)?
        .checked_add(1 << 20)?;
    if scratch_len > limit {
        return None;
    }
    // The half types pad the whole input once, up front, and share it between threads.
    let whole = if E::R::HEAVY {
        let rows = g.batch.checked_mul(g.in_channels)?.checked_mul(g.height)?;
        let len = g.buffer_len(rows, row_len)?;
        let mut buf = crate::shape::zeroed_vec::<Acc<E>>(len).ok()?;
        pad_rows(g, x, &mut buf, pitch);
        Some(buf)
    } else {
        None
    };
    let scratch_len = if whole.is_some() { 0 } else { scratch_len };
    let weights = packed_weights(g, w);
    let bias: Option<Vec<Acc<E>>> = bias.map(|b| b.iter().map(|&v| v.widen()).collect());
    if bias.is_some() {
        fkc_provider::call::took("tile.bias");
    }
    if whole.is_some() {
        fkc_provider::call::took("tile.half-padded-once");
    }
    let plane = g.out_height * g.out_width;
    let mut out = crate::shape::zeroed_vec::<Acc<E>>(g.batch * g.out_channels * plane).ok()?;
    let tile = max_channel_tile::<E::R>();
    let mut items = Vec::new();
    let mut rest = out.as_mut_slice();
    for image in 0..g.batch {
        for group in 0..g.groups {
            let mut co = group * g.group_out();
            let end = co + g.group_out();
            while co < end {
                let count = if end - co >= tile { tile } else { 1 };
                let (head, tail) = rest.split_at_mut(count * plane);
                items.push(Item {
                    image,
                    co0: co,
                    count,
                    out: head,
                });
                rest = tail;
                co += count;
            }
        }
    }
    let job = Job {
        g,
        x,
        pitch,
        whole: whole.as_deref(),
        weights: &weights,
        bias: bias.as_deref(),
    };
    let threads = threads.clamp(1, items.len().max(1));
    let per = items.len().div_ceil(threads);
    let mut scratches = Vec::with_capacity(threads);
    for _ in items.chunks(per) {
        scratches.push(crate::shape::zeroed_vec::<Acc<E>>(scratch_len).ok()?);
    }
    if let [scratch] = scratches.as_mut_slice() {
        arch().dispatch(Work::<E> {
            job: &job,
            items: &mut items,
            scratch,
        });
    } else {
        fkc_provider::call::took("tile.threads");
        let idle = usize::from(active(Mutant::LastThreadIdle));
        let mut shares: Vec<_> = items.chunks_mut(per).zip(&mut scratches).collect();
        shares.truncate(shares.len().saturating_sub(idle));
        let job = &job;
        crate::ops::workers::split(shares, |(chunk, scratch)| {
            arch().dispatch(Work::<E> {
                job,
                items: chunk,
                scratch,
            })
        });
    }
    drop(items);
    // f32 and f64 accumulate in their own type: hand the buffer over without a copy.
    match (Box::new(out) as Box<dyn Any>).downcast::<Vec<E>>() {
        Ok(same) => Some(*same),
        Err(other) => Some(
            other
                .downcast::<Vec<Acc<E>>>()
                .ok()?
                .into_iter()
                .map(E::narrow)
                .collect(),
        ),
    }
}

/// Output channels per register tile: 4 for f32/f64; 1 for the half types, whose rounding
/// sequences need the registers.
fn max_channel_tile<R: Rounding>() -> usize {
    if R::HEAVY { 1 } else { 4 }
}

/// Output rows per register tile when the tile has one channel (depthwise layers, odd
/// channel counts): [`MAX_ROWS`] for f32/f64, so that the tile still holds enough
/// independent sums and each input vector loaded serves every output row it reaches.
fn row_tile<R: Rounding>(channels: usize) -> usize {
    if channels == 1 && !R::HEAVY {
        MAX_ROWS
    } else {
        1
    }
}

struct Job<'a, E: Fast> {
    g: &'a Gather,
    x: &'a [E],
    /// [`Gather::pitch`].
    pitch: usize,
    /// The whole input padded up front (`[N, Cin, H, phases]` rows `pitch` apart), or `None`
    /// when each thread pads one group of channels at a time into its scratch.
    whole: Option<&'a [Acc<E>]>,
    weights: &'a [Acc<E>],
    bias: Option<&'a [Acc<E>]>,
}

struct Work<'a, 'b, 'c, E: Fast> {
    job: &'a Job<'a, E>,
    items: &'b mut [Item<'c, Acc<E>>],
    /// The padded input of one group of channels: `[Cin/groups, H, phases]` rows `pitch`
    /// apart.
    scratch: &'b mut [Acc<E>],
}

impl<E: Fast> WithSimd for Work<'_, '_, '_, E> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let job = self.job;
        let g = job.g;
        let lanes = <Acc<E>>::lanes::<S>();
        let max_nv = if S::REGISTER_COUNT >= 32 { 4 } else { 2 };
        // Per phase: the vectors per tile and, per tile, per tap, per vector, the lane mask.
        let mut shapes = Vec::with_capacity(g.plan.cols.len());
        let mut masks = Vec::new();
        if g.plan.out_step != 1 {
            fkc_provider::call::took("tile.strided-store"); // output columns a phase apart
        }
        for phase in &g.plan.cols {
            if phase.count % lanes != 0 {
                fkc_provider::call::took("tile.tail"); // a last vector with masked lanes
            }
            let blocks = phase.count.div_ceil(lanes);
            let nv = if blocks >= 4 && max_nv >= 4 {
                4
            } else if blocks >= 2 {
                2
            } else {
                1
            };
            let offset = masks.len();
            let span = nv * lanes;
            for j0 in (0..phase.count).step_by(span) {
                for tap in &phase.taps {
                    for v in 0..nv {
                        let jb = j0 + v * lanes;
                        let start = tap.valid.start.saturating_sub(jb);
                        let end = tap.valid.end.saturating_sub(jb);
                        if start > 0 || (end < lanes && jb + lanes <= phase.count) {
                            fkc_provider::call::took("tile.padding-masked");
                        }
                        masks.push(<Acc<E>>::mask_between(s, start, end));
                    }
                }
            }
            shapes.push((nv, offset));
        }
        let in_plane = g.height * g.width;
        let group_in = g.group_in();
        let mut padded: Option<(usize, usize)> = None;
        // The row tiles of one-row and of several-row items, planned once for every item.
        let one_row_tiles = row_tiles(g, 1);
        let several_row_tiles = row_tiles(g, MAX_ROWS);
        for item in self.items.iter_mut() {
            // The item's group of input channels, padded once per (image, group).
            let cin0 = (item.co0 / g.group_out()) * group_in;
            if job.whole.is_none() && padded != Some((item.image, cin0)) {
                let first = (item.image * g.in_channels + cin0) * in_plane;
                let src = &job.x[first..][..group_in * in_plane];
                pad_rows(g, src, self.scratch, job.pitch);
                padded = Some((item.image, cin0));
            }
            let tiles = if row_tile::<E::R>(item.count) == 1 {
                &one_row_tiles
            } else {
                &several_row_tiles
            };
            for tile in tiles {
                for (phase, &(nv, offset)) in g.plan.cols.iter().zip(&shapes) {
                    let ctx = RowCtx {
                        s,
                        job,
                        xbuf: job.whole.unwrap_or(self.scratch),
                        channel0: if job.whole.is_some() {
                            item.image * g.in_channels + cin0
                        } else {
                            0
                        },
                        phase,
                        masks: &masks[offset..],
                        oh: tile.oh,
                        plan: &tile.plan,
                        lanes,
                    };
                    let took = fkc_provider::call::took;
                    match (item.count, tile.rows, nv) {
                        (4, _, 4) => (took("tile.4ch.4v"), ctx.tiles::<E::R, 4, 1, 4>(item)),
                        (4, _, 2) => (took("tile.4ch.2v"), ctx.tiles::<E::R, 4, 1, 2>(item)),
                        (4, _, _) => (took("tile.4ch.1v"), ctx.tiles::<E::R, 4, 1, 1>(item)),
                        (_, 4, 4) => (took("tile.4rows.4v"), ctx.tiles::<E::R, 1, 4, 4>(item)),
                        (_, 4, 2) => (took("tile.4rows.2v"), ctx.tiles::<E::R, 1, 4, 2>(item)),
                        (_, 4, _) => (took("tile.4rows.1v"), ctx.tiles::<E::R, 1, 4, 1>(item)),
                        (_, _, 4) => (took("tile.row.4v"), ctx.one_row::<E::R, 4>(item)),
                        (_, _, 2) => (took("tile.row.2v"), ctx.one_row::<E::R, 2>(item)),
                        _ => (took("tile.row.1v"), ctx.one_row::<E::R, 1>(item)),
                    };
                }
            }
        }
    }
}

struct RowCtx<'a, S: Simd, E: Fast> {
    s: S,
    job: &'a Job<'a, E>,
    /// The padded input of the item's group of channels.
    xbuf: &'a [Acc<E>],
    /// The channel of `xbuf` that holds the item's first input channel.
    channel0: usize,
    phase: &'a ColPhase,
    masks: &'a [<Acc<E> as Lane>::M<S>],
    oh: usize,
    /// The kernel rows of output rows `oh..oh + NR` and the input rows they read (see
    /// [`row_plan`]).
    plan: &'a [PlanRow],
    lanes: usize,
}

/// Most output rows per register tile.
const MAX_ROWS: usize = 4;

/// A kernel row `kh` and, per output row of the tile, the input row `ih` it reads there.
type PlanRow = (usize, [usize; MAX_ROWS]);

/// Output rows `oh..oh + rows` and their [`row_plan`].
struct RowTile {
    oh: usize,
    rows: usize,
    plan: Vec<PlanRow>,
}

/// Every output row in tiles of `rows_per_tile` rows where [`row_plan`] allows, else of one.
fn row_tiles(g: &Gather, rows_per_tile: usize) -> Vec<RowTile> {
    let mut tiles = Vec::new();
    let mut oh = 0;
    while oh < g.out_height {
        let full = rows_per_tile <= g.out_height - oh;
        let (rows, plan) = match row_plan(g, oh, rows_per_tile).filter(|_| full) {
            Some(plan) => (rows_per_tile, plan),
            None => (1, row_plan(g, oh, 1).unwrap_or_default()),
        };
        tiles.push(RowTile { oh, rows, plan });
        oh += rows;
    }
    tiles
}

/// The kernel rows of output rows `oh..oh + nr`, each output row's in its own summation
/// order. A tile of several rows needs every row to take the same kernel rows in the same
/// order (true away from the top and bottom padding); `None` when they do not (never for
/// one row), and a one-row tile is used instead.
fn row_plan(g: &Gather, oh: usize, nr: usize) -> Option<Vec<PlanRow>> {
    let rows = g.plan.rows.get(oh..oh + nr)?;
    let first = rows.first()?;
    let same = |row: &Vec<(usize, usize)>| {
        row.len() == first.len() && row.iter().zip(first).all(|(a, b)| a.0 == b.0)
    };
    if !rows.iter().all(same) {
        return None;
    }
    let plan = first
        .iter()
        .enumerate()
        .map(|(j, &(kh, _))| {
            let mut ihs = [0; MAX_ROWS];
            for (ih, row) in ihs.iter_mut().zip(rows) {
                *ih = row[j].1;
            }
            (kh, ihs)
        })
        .collect();
    Some(plan)
}

impl<S: Simd, E: Fast> RowCtx<'_, S, E> {
    /// One tap's terms for one output row of the tile (`CT × NV` sums): input vectors from
    /// `xbuf[base..]`, lane masks `m`, weight index `k` within each channel's taps.
    #[inline(always)]
    fn add_row<R: Rounding<A = Acc<E>>, const CT: usize, const NV: usize>(
        &self,
        acc_r: &mut [[Vector<E, S>; NV]; CT],
        base: usize,
        m: &[<Acc<E> as Lane>::M<S>],
        w_ci: &[Acc<E>],
        k: usize,
    ) {
        let (s, lanes) = (self.s, self.lanes);
        let g = self.job.g;
        let src = &self.xbuf[base..][..NV * lanes];
        let zero = <Acc<E>>::splat(s, Default::default());
        let mut xs = [zero; NV];
        for (v, xv) in xs.iter_mut().enumerate() {
            *xv = <Acc<E>>::load::<S>(&src[v * lanes..]);
        }
        let stride = g.group_in() * g.kernel_height * g.kernel_width;
        for (c, acc_c) in acc_r.iter_mut().enumerate() {
            let w = <Acc<E>>::splat(s, w_ci[c * stride + k]);
            for v in 0..NV {
                let old = acc_c[v];
                let new = R::term(s, old, xs[v], w);
                acc_c[v] = <Acc<E>>::select(s, m[v], new, old);
            }
        }
    }

    /// Every tile of output row `oh` of one column phase for a one-channel item (the half
    /// types, and the rows a several-row tile leaves over): `NV` vectors of sums.
    #[inline(always)]
    fn one_row<R: Rounding<A = Acc<E>>, const NV: usize>(&self, item: &mut Item<'_, Acc<E>>) {
        let (s, job, phase, lanes) = (self.s, self.job, self.phase, self.lanes);
        let g = job.g;
        let taps = g.kernel_height * g.kernel_width;
        let group_in = g.group_in();
        let span = NV * lanes;
        let ntaps = phase.taps.len();
        let row_taps = &g.plan.rows[self.oh];
        let zero = <Acc<E>>::splat(s, Default::default());
        for (t, j0) in (0..phase.count).step_by(span).enumerate() {
            let tile_masks = &self.masks[t * ntaps * NV..][..ntaps * NV];
            let mut acc = [zero; NV];
            for ci in 0..group_in {
                let w_ci = &job.weights[(item.co0 * group_in + ci) * taps..];
                for &(kh, ih) in row_taps {
                    let row0 = ((self.channel0 + ci) * g.height + ih) * g.plan.phases;
                    for (tap, m) in phase.taps.iter().zip(tile_masks.chunks_exact(NV)) {
                        let base = (row0 + tap.phase) * job.pitch + tap.start + j0;
                        let src = &self.xbuf[base..][..span];
                        let mut xs = [zero; NV];
                        for (v, xv) in xs.iter_mut().enumerate() {
                            *xv = <Acc<E>>::load::<S>(&src[v * lanes..]);
                        }
                        let k = kh * g.kernel_width + tap.kw;
                        let w = <Acc<E>>::splat(s, w_ci[k]);
                        for v in 0..NV {
                            let a = acc[v];
                            acc[v] = <Acc<E>>::select(s, m[v], R::term(s, a, xs[v], w), a);
                        }
                    }
                }
            }
            let out_row = &mut item.out[self.oh * g.out_width..][..g.out_width];
            self.put::<R, NV>(&acc, item.co0, j0, out_row);
        }
    }

    /// Stores the sums `acc` of output channel `co`, tile columns from `j0` of the phase, into
    /// its output row: plus the bias (one more rounded add), every NaN made the canonical
    /// quiet NaN (see the module documentation), tail lanes past the phase dropped.
    #[inline(always)]
    fn put<R: Rounding<A = Acc<E>>, const NV: usize>(
        &self,
        acc: &[Vector<E, S>; NV],
        co: usize,
        j0: usize,
        out_row: &mut [Acc<E>],
    ) {
        let (s, job, phase, lanes) = (self.s, self.job, self.phase, self.lanes);
        let step = job.g.plan.out_step;
        for (v, &a) in acc.iter().enumerate() {
            let jb = j0 + v * lanes;
            if jb >= phase.count {
                break;
            }
            let sum = match job.bias {
                Some(_) if NV == 4 && active(Mutant::WideTileDropsBias) => a,
                Some(b) if active(Mutant::ChannelTileBiasIndex) => {
                    R::plus(s, a, <Acc<E>>::splat(s, b[co - co % 4]))
                }
                Some(b) => R::plus(s, a, <Acc<E>>::splat(s, b[co])),
                None => a,
            };
            let val = if active(Mutant::NanPayloadKept) {
                sum
            } else {
                <Acc<E>>::canonical_nan(s, sum)
            };
            let n = (phase.count - jb).min(lanes);
            let wide = lanes * std::mem::size_of::<Acc<E>>();
            let lost = n < lanes
                && (active(Mutant::TailLaneLost)
                    || (wide == 32 && active(Mutant::Avx2TailLaneLost)));
            let n = n - usize::from(lost);
            if step == 1 {
                <Acc<E>>::store(s, &mut out_row[phase.out_base + jb..][..n], val);
            } else {
                let mut tmp = [<Acc<E>>::default(); 64];
                <Acc<E>>::store(s, &mut tmp[..lanes], val);
                for (i, &t) in tmp[..n].iter().enumerate() {
                    out_row[phase.out_base + (jb + i) * step] = t;
                }
            }
        }
    }

    /// Every tile of output rows `oh..oh + NR` of one column phase, for the item's `CT`
    /// channels: `CT × NR × NV` vectors of sums held through the whole reduction. Each sum
    /// still takes its terms in the documented order (input channel, kernel row, kernel
    /// column); the tile only interleaves independent sums.
    #[inline(always)]
    fn tiles<R: Rounding<A = Acc<E>>, const CT: usize, const NR: usize, const NV: usize>(
        &self,
        item: &mut Item<'_, Acc<E>>,
    ) {
        let (s, job, phase, lanes) = (self.s, self.job, self.phase, self.lanes);
        let g = job.g;
        let taps = g.kernel_height * g.kernel_width;
        let group_in = g.group_in();
        let plane = g.out_height * g.out_width;
        let span = NV * lanes;
        let ntaps = phase.taps.len();
        let phase_row = g.plan.phases * job.pitch;
        let zero = <Acc<E>>::splat(s, Default::default());
        for (t, j0) in (0..phase.count).step_by(span).enumerate() {
            let tile_masks = &self.masks[t * ntaps * NV..][..ntaps * NV];
            let mut acc = [[[zero; NV]; CT]; NR];
            for ci in 0..group_in {
                let w_ci = &job.weights[(item.co0 * group_in + ci) * taps..];
                let channel_row = (self.channel0 + ci) * g.height;
                for &(kh, ihs) in self.plan {
                    let row_starts = ihs.map(|ih| (channel_row + ih) * phase_row + j0);
                    for (tap, m) in phase.taps.iter().zip(tile_masks.chunks_exact(NV)) {
                        let k = kh * g.kernel_width + tap.kw;
                        let tap_offset = tap.phase * job.pitch + tap.start;
                        // One call per output row with a constant index, so that every sum
                        // of the tile stays in a register (a loop over the rows would leave
                        // them in memory); rows beyond NR are no-ops.
                        let [i0, i1, i2, i3] = row_starts.map(|start| start + tap_offset);
                        if let Some(acc_r) = acc.get_mut(0) {
                            self.add_row::<R, CT, NV>(acc_r, i0, m, w_ci, k);
                        }
                        if let Some(acc_r) = acc.get_mut(1) {
                            self.add_row::<R, CT, NV>(acc_r, i1, m, w_ci, k);
                        }
                        if let Some(acc_r) = acc.get_mut(2) {
                            self.add_row::<R, CT, NV>(acc_r, i2, m, w_ci, k);
                        }
                        if let Some(acc_r) = acc.get_mut(3) {
                            self.add_row::<R, CT, NV>(acc_r, i3, m, w_ci, k);
                        }
                    }
                }
            }
            for (r, acc_r) in acc.iter().enumerate() {
                for (c, acc_c) in acc_r.iter().enumerate() {
                    let oh = self.oh + r;
                    let out_row = &mut item.out[c * plane + oh * g.out_width..][..g.out_width];
                    self.put::<R, NV>(acc_c, item.co0 + c, j0, out_row);
                }
            }
        }
    }
}
