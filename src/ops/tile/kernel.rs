//! The vector kernels of the tiled convolution: the storage types with a fast path and their
//! accumulators, the padding of input rows and, per instruction set, the register tiles that
//! hold `CT` output channels × `NR` output rows × `NV` vectors of sums through the reduction.

use half::{bf16, f16};
use pulp::{Simd, WithSimd};

use super::plan::{ColPhase, Gather, MAX_ROWS, PlanRow, row_tiles};
use crate::mutants::{Mutant, active};
use crate::ops::simd::{Exact32, Exact64, Lane, RoundBf16, RoundF16, Rounding};
use crate::tensor::Element;

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

pub(super) type Acc<E> = <<E as Fast>::R as Rounding>::A;
type Vector<E, S> = <Acc<E> as Lane>::V<S>;

/// Pads and phase-splits consecutive input rows `src` (each `width` long) into `dst`, whose
/// rows of `phases` phase rows are `pitch` apart (see [`Gather::pitch`]), in accumulator
/// precision. Padding positions are left as they are: every tap that would read one is
/// masked out.
pub(super) fn pad_rows<E: Fast>(g: &Gather, src: &[E], dst: &mut [Acc<E>], pitch: usize) {
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

/// One unit of work: output channels `co0..co0 + count` of image `image`, whose planes are
/// `out`.
pub(super) struct Item<'a, A> {
    pub(super) image: usize,
    pub(super) co0: usize,
    pub(super) count: usize,
    pub(super) out: &'a mut [A],
}

/// Output channels per register tile: 4 for f32/f64; 1 for the half types, whose rounding
/// sequences need the registers.
pub(super) fn max_channel_tile<R: Rounding>() -> usize {
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

pub(super) struct Job<'a, E: Fast> {
    pub(super) g: &'a Gather,
    pub(super) x: &'a [E],
    /// [`Gather::pitch`].
    pub(super) pitch: usize,
    /// The whole input padded up front (`[N, Cin, H, phases]` rows `pitch` apart), or `None`
    /// when each thread pads one group of channels at a time into its scratch.
    pub(super) whole: Option<&'a [Acc<E>]>,
    pub(super) weights: &'a [Acc<E>],
    pub(super) bias: Option<&'a [Acc<E>]>,
}

pub(super) struct Work<'a, 'b, 'c, E: Fast> {
    pub(super) job: &'a Job<'a, E>,
    pub(super) items: &'b mut [Item<'c, Acc<E>>],
    /// The padded input of one group of channels: `[Cin/groups, H, phases]` rows `pitch`
    /// apart.
    pub(super) scratch: &'b mut [Acc<E>],
}

impl<E: Fast> WithSimd for Work<'_, '_, '_, E> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let job = self.job;
        let g = job.g;
        let lanes = <Acc<E>>::lanes::<S>();
        let max_nv = widest_tile::<S>();
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
    /// [`row_plan`](super::plan::row_plan)).
    plan: &'a [PlanRow],
    lanes: usize,
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
                Some(_) if NV == widest_tile::<S>() && active(Mutant::WideTileDropsBias) => a,
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

/// The most vectors of sums a tile holds at level `S`: four where it has 32 vector registers
/// (AVX-512), two otherwise.
const fn widest_tile<S: Simd>() -> usize {
    if S::REGISTER_COUNT >= 32 { 4 } else { 2 }
}
