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

use half::{bf16, f16};

use crate::mutants::{Mutant, active};
use crate::ops::simd::{Rounding, arch};
use crate::tensor::{Element, RefTensor};

mod kernel;
mod plan;

use kernel::{Acc, Fast, Item, Job, Work, max_channel_tile, pad_rows};
pub(crate) use plan::{ColPhase, ColTap, Gather, GatherPlan, WeightLayout};

/// Largest padded-buffer size, relative to the input, that the fast path accepts; beyond it
/// (absurd padding) the plain loops run instead.
const MAX_BUFFER_GROWTH: usize = 16;

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
