//! Helpers shared by the kernels: geometry checks with uniform messages, valid tap ranges and
//! the row update every convolution inner loop is built from.
//!
//! The row updates are where the time goes. They update a run of outputs for one fixed tap,
//! `acc[i] = acc[i] + x[i·step] · w`, with a separate multiply and add (never a fused
//! multiply-add), so vectorising across outputs leaves each output's summation order intact.

use std::ops::Range;

use crate::error::{KernelError, KernelErrorKind};
use crate::shape::numel;
use crate::tensor::Element;

/// Fails with `Rank` unless `shape` has `rank` dimensions.
pub(crate) fn require_rank(
    op: &'static str,
    operand: &str,
    layout: &str,
    shape: &[usize],
    context: &str,
) -> Result<(), KernelError> {
    if shape.len() == layout.split(',').count() {
        return Ok(());
    }
    Err(KernelError::new(
        op,
        KernelErrorKind::Rank,
        format!(
            "{operand} must be rank {} [{layout}], got shape {shape:?}; {context}",
            layout.split(',').count()
        ),
    ))
}

/// The `R` dimensions of a rank-`R` operand of `op`, or `Rank` naming its layout.
pub(crate) fn dims<const R: usize>(
    op: &'static str,
    name: &str,
    layout: &str,
    shape: &[usize],
) -> Result<[usize; R], KernelError> {
    <[usize; R]>::try_from(shape).map_err(|_| {
        KernelError::new(
            op,
            KernelErrorKind::Rank,
            format!("{name} must be rank {R} [{layout}], got shape {shape:?}"),
        )
    })
}

/// Fails with `ZeroSize` if `shape` has a zero dimension.
pub(crate) fn require_nonempty(
    op: &'static str,
    operand: &str,
    shape: &[usize],
    context: &str,
) -> Result<(), KernelError> {
    if shape.contains(&0) {
        return Err(KernelError::new(
            op,
            KernelErrorKind::ZeroSize,
            format!("{operand} shape {shape:?} has a zero dimension; {context}"),
        ));
    }
    Ok(())
}

/// Fails with `kind` and `message` (plus the context) unless `ok`.
pub(crate) fn ensure(
    ok: bool,
    op: &'static str,
    kind: KernelErrorKind,
    message: impl FnOnce() -> String,
    context: &str,
) -> Result<(), KernelError> {
    if ok {
        return Ok(());
    }
    Err(KernelError::new(
        op,
        kind,
        format!("{}; {context}", message()),
    ))
}

/// `a * b` or an `Overflow` error naming what was computed.
pub(crate) fn mul(op: &'static str, a: usize, b: usize, what: &str) -> Result<usize, KernelError> {
    a.checked_mul(b).ok_or_else(|| overflow(op, what))
}

/// `a + b` or an `Overflow` error naming what was computed.
pub(crate) fn add(op: &'static str, a: usize, b: usize, what: &str) -> Result<usize, KernelError> {
    a.checked_add(b).ok_or_else(|| overflow(op, what))
}

/// Appends the op's shape/parameter context to an error message.
pub(crate) fn in_context(mut e: KernelError, context: &str) -> KernelError {
    e.message = format!("{}; {context}", e.message);
    e
}

fn overflow(op: &'static str, what: &str) -> KernelError {
    KernelError::new(
        op,
        KernelErrorKind::Overflow,
        format!("{what} overflows usize"),
    )
}

/// Checks that a `[N, C, H, W]` output's element count fits in `usize`.
pub(crate) fn check_out_numel(
    op: &'static str,
    out: &[usize; 4],
    context: &str,
) -> Result<(), KernelError> {
    numel(out).map(|_| ()).map_err(|_| {
        in_context(
            overflow(op, &format!("element count of output shape {out:?}")),
            context,
        )
    })
}

/// One spatial axis of a gather-form convolution or pooling: the output length
/// `(input + 2·pad − (dilation·(kernel − 1) + 1)) / stride + 1`, with checked arithmetic and a
/// `KernelTooLarge` error when the dilated kernel does not fit in the padded input.
pub(crate) struct GatherAxis {
    pub name: &'static str,
    pub input: usize,
    pub kernel: usize,
    pub stride: usize,
    pub pad: usize,
    pub dilation: usize,
}

impl GatherAxis {
    pub(crate) fn out_len(&self, op: &'static str, context: &str) -> Result<usize, KernelError> {
        let name = self.name;
        let padded = mul(op, 2, self.pad, "2 * padding")
            .and_then(|p| add(op, self.input, p, &format!("padded {name}")))
            .map_err(|e| in_context(e, context))?;
        let span = mul(
            op,
            self.dilation,
            self.kernel.saturating_sub(1),
            "dilated kernel extent",
        )
        .and_then(|s| add(op, s, 1, "dilated kernel extent"))
        .map_err(|e| in_context(e, context))?;
        ensure(
            span <= padded,
            op,
            KernelErrorKind::KernelTooLarge,
            || format!("{name}: dilated kernel extent {span} exceeds padded input {padded}"),
            context,
        )?;
        Ok((padded - span) / self.stride + 1)
    }
}

/// The indices `i` in `0..count` for which `i·stride + tap − pad` lies in `0..limit`; all
/// others address padding and are skipped. `stride` must be ≥ 1.
pub(crate) fn valid_range(
    count: usize,
    limit: usize,
    stride: usize,
    tap: usize,
    pad: usize,
) -> Range<usize> {
    let start = pad.saturating_sub(tap).div_ceil(stride);
    // i·stride + tap − pad ≤ limit − 1  ⇔  i·stride ≤ limit − 1 + pad − tap.
    let end = match limit.saturating_add(pad).checked_sub(tap.saturating_add(1)) {
        Some(room) => (room / stride + 1).min(count),
        None => 0,
    };
    start..end.max(start)
}

/// `acc[i] = acc[i] + x[i] · w` for every `i` (separate multiply and add).
#[inline]
pub(crate) fn axpy<T: Element>(acc: &mut [T], x: &[T], w: T) {
    for (a, &v) in acc.iter_mut().zip(x) {
        *a = *a + v * w;
    }
}

/// `acc[i] = acc[i] + x[i·step] · w` for every `i` (gather with a stride on the input side).
#[inline]
pub(crate) fn axpy_gather<T: Element>(acc: &mut [T], x: &[T], step: usize, w: T) {
    if step == 1 {
        return axpy(acc, x, w);
    }
    for (a, &v) in acc.iter_mut().zip(x.iter().step_by(step)) {
        *a = *a + v * w;
    }
}

/// `acc[i·step] = acc[i·step] + x[i] · w` for every `i` (scatter with a stride on the output).
#[inline]
pub(crate) fn axpy_scatter<T: Element>(acc: &mut [T], step: usize, x: &[T], w: T) {
    if step == 1 {
        return axpy(acc, x, w);
    }
    for (a, &v) in acc.iter_mut().step_by(step).zip(x) {
        *a = *a + v * w;
    }
}

/// Makes every NaN of `values` the canonical quiet NaN `T::nan()`: which NaN a sum of two
/// NaNs yields depends on how the compiler ordered the operands, so the convolutions store
/// one NaN only (their vector path does the same in its stores).
pub(crate) fn canonical_nans<T: Element>(values: &mut [T]) {
    for v in values.iter_mut().filter(|v| v.is_nan()) {
        *v = T::nan();
    }
}

/// One step of the window reduction: `T::max` semantics — a NaN operand is ignored in favour
/// of the other — with ties (including `-0.0` against `+0.0`) keeping the running value.
#[inline]
pub fn max_step<T: Element>(running: T, v: T) -> T {
    if v > running || running.is_nan() {
        v
    } else {
        running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force of `valid_range`'s definition.
    fn brute(count: usize, limit: usize, stride: usize, tap: usize, pad: usize) -> Vec<usize> {
        (0..count)
            .filter(|&i| {
                let pos = (i * stride + tap) as isize - pad as isize;
                pos >= 0 && (pos as usize) < limit
            })
            .collect()
    }

    #[test]
    fn valid_range_matches_brute_force() {
        for count in 0..7 {
            for limit in 1..7 {
                for stride in 1..4 {
                    for tap in 0..6 {
                        for pad in 0..5 {
                            let r: Vec<usize> =
                                valid_range(count, limit, stride, tap, pad).collect();
                            assert_eq!(r, brute(count, limit, stride, tap, pad));
                        }
                    }
                }
            }
        }
    }
}
