//! Reductions: `reduce_sum` and `reduce_mean` over a set of axes, and `cumsum` along one axis.

use crate::error::{KernelError, KernelErrorKind};
use crate::mutants::{Mutant, active};
use crate::ops::axes::{normalize_axis, offset, packed_strides, split_at_axis, step_index};
use crate::shape::{numel, zeroed_vec};
use crate::tensor::{Element, RefTensor};

/// Parameters of [`reduce_sum`] and [`reduce_mean`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReduceParams {
    /// The reduced axes, each in `[-rank, rank)` (negative from the end), no axis twice after
    /// normalisation; empty reduces no axis (NumPy's `axis=()`).
    pub axes: Vec<i64>,
    /// Keep each reduced axis as a size-1 dimension (else it is removed).
    pub keepdim: bool,
}

/// Which axes are reduced, the output shape, and the kept and reduced axes' extents and packed
/// input strides.
struct Plan {
    out_shape: Vec<usize>,
    kept: Vec<usize>,
    kept_strides: Vec<usize>,
    reduced: Vec<usize>,
    reduced_strides: Vec<usize>,
}

impl Plan {
    fn new(op: &'static str, shape: &[usize], params: &ReduceParams) -> Result<Plan, KernelError> {
        let rank = shape.len();
        let mut is_reduced = vec![false; rank];
        for &axis in &params.axes {
            let a = normalize_axis(op, axis, rank)?;
            if is_reduced[a] {
                return Err(KernelError::new(
                    op,
                    KernelErrorKind::BadParams,
                    format!("axes {:?} name axis {a} twice (rank {rank})", params.axes),
                ));
            }
            is_reduced[a] = true;
        }
        let strides = packed_strides(shape);
        let mut plan = Plan {
            out_shape: Vec::new(),
            kept: Vec::new(),
            kept_strides: Vec::new(),
            reduced: Vec::new(),
            reduced_strides: Vec::new(),
        };
        for ((&dim, &stride), &reduced) in shape.iter().zip(&strides).zip(&is_reduced) {
            if reduced {
                plan.reduced.push(dim);
                plan.reduced_strides.push(stride);
                if params.keepdim {
                    plan.out_shape.push(1);
                }
            } else {
                plan.kept.push(dim);
                plan.kept_strides.push(stride);
                plan.out_shape.push(dim);
            }
        }
        Ok(plan)
    }
}

/// Sums over the plan's reduced axes for every kept position; `drop_last` is the
/// `ReduceSumDropsLast` mutant.
fn sums<T: Element>(x: &RefTensor<T>, plan: &Plan, drop_last: bool) -> Result<Vec<T>, KernelError> {
    let outputs = numel(&plan.kept)?;
    let count = numel(&plan.reduced)?;
    let taken = if drop_last {
        count.saturating_sub(1)
    } else {
        count
    };
    let data = x.data();
    let mut out = Vec::with_capacity(outputs);
    let mut kept_index = vec![0; plan.kept.len()];
    let mut reduced_index = vec![0; plan.reduced.len()];
    let blocked = active(Mutant::ReduceSumBlocked1024);
    for _ in 0..outputs {
        let base = offset(&kept_index, &plan.kept_strides);
        let mut acc: Option<T> = None;
        let mut partial: Option<T> = None;
        for t in 0..taken {
            let v = data[base + offset(&reduced_index, &plan.reduced_strides)];
            partial = Some(partial.map_or(v, |a| a + v));
            if (t + 1 == taken || (blocked && (t + 1) % 1024 == 0))
                && let Some(p) = partial.take()
            {
                acc = Some(acc.map_or(p, |a| a + p));
            }
            step_index(&mut reduced_index, &plan.reduced);
        }
        reduced_index.fill(0);
        out.push(acc.unwrap_or_else(T::zero));
        step_index(&mut kept_index, &plan.kept);
    }
    Ok(out)
}

/// Sum over `axes` (see [`ReduceParams`]; a bad or repeated axis is `BadParams`): the output
/// is `x`'s shape with each reduced axis removed, or kept as 1 with `keepdim` (all axes
/// reduced without `keepdim`: shape `[]`, one element).
///
/// Each output sums its reduced elements in row-major order of the reduced axes (taken in
/// `x`'s axis order, whatever the order of `axes`). Accumulator in `T`: `acc` starts at the
/// first element (so a single element, `-0.0` or a NaN payload included, is returned as is),
/// then `acc = acc + v` for each following one; an empty reduction (a reduced extent of 0) is
/// `+0.0`.
pub fn reduce_sum<T: Element>(
    x: &RefTensor<T>,
    params: &ReduceParams,
) -> Result<RefTensor<T>, KernelError> {
    let plan = Plan::new("reduce_sum", x.shape(), params)?;
    let out = sums(x, &plan, active(Mutant::ReduceSumDropsLast))?;
    Ok(RefTensor::from_vec(out, &plan.out_shape)?)
}

/// Mean over `axes`: [`reduce_sum`]'s sum (same shape rules, same order, accumulator in `T`)
/// divided once, in `T`, by the count — the product of the reduced extents, converted to `T`
/// (exact below 2^24 in `f32`). An empty reduction is `0 / 0`, NaN.
pub fn reduce_mean<T: Element>(
    x: &RefTensor<T>,
    params: &ReduceParams,
) -> Result<RefTensor<T>, KernelError> {
    let plan = Plan::new("reduce_mean", x.shape(), params)?;
    let count = if params.keepdim && active(Mutant::MeanKeepdimCountsOne) {
        // The planted bug: the count taken from the output's (size-1) reduced extents.
        1
    } else {
        numel(&plan.reduced)?
    };
    let divisor = T::from_f64(count as f64);
    let out = sums(x, &plan, false)?
        .into_iter()
        .map(|s| s / divisor)
        .collect();
    Ok(RefTensor::from_vec(out, &plan.out_shape)?)
}

/// Inclusive prefix sums along `axis` (negative counts from the end; outside `[-rank, rank)`
/// is `BadParams`); the output has `x`'s shape.
///
/// Along each line, a running accumulator in `T`: `out_0 = x_0` (the accumulator starts at the
/// first element), then `acc = acc + x_t` and `out_t = acc` for `t` ascending.
pub fn cumsum<T: Element>(x: &RefTensor<T>, axis: i64) -> Result<RefTensor<T>, KernelError> {
    let axis = normalize_axis("cumsum", axis, x.shape().len())?;
    let (outer, extent, inner) = split_at_axis(x.shape(), axis)?;
    let reverse = active(Mutant::CumsumReverseOrder);
    let data = x.data();
    let mut out: Vec<T> = zeroed_vec(data.len())?;
    let panels = extent >= 32 && inner >= 32 && active(Mutant::CumsumPanelsDropRemainder);
    let columns = if panels { inner / 16 * 16 } else { inner };
    for o in 0..outer {
        for i in 0..columns {
            let at = |t: usize| o * extent * inner + i + t * inner;
            let mut acc = T::zero();
            let blocked = active(Mutant::CumsumBlockedScan64);
            let mut carry = None;
            for t in 0..extent {
                if blocked && t % 64 == 0 && t > 0 {
                    carry = Some(out[at(t - 1)]);
                }
                acc = if t == 0 || (blocked && t % 64 == 0) {
                    data[at(t)]
                } else {
                    acc + data[at(t)]
                };
                if let Some(c) = carry {
                    out[at(t)] = c + acc;
                    continue;
                }
                if reverse {
                    acc = data[at(t)];
                    for s in (0..t).rev() {
                        acc = acc + data[at(s)];
                    }
                }
                out[at(t)] = acc;
            }
        }
    }
    Ok(RefTensor::from_vec(out, x.shape())?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    use crate::ops::axes::test_tensor as t;

    fn p(axes: &[i64], keepdim: bool) -> ReduceParams {
        ReduceParams {
            axes: axes.to_vec(),
            keepdim,
        }
    }

    /// `x [2, 3, 2]` holding `0, 1, …, 11`.
    fn iota() -> RefTensor<f64> {
        let data: Vec<f64> = (0..12).map(f64::from).collect();
        t(&data, &[2, 3, 2])
    }

    #[test]
    fn sums_over_axes_keepdim_both_ways() {
        let x = iota();
        let out = reduce_sum(&x, &p(&[1], false)).unwrap();
        assert_eq!(out.shape(), &[2, 2]);
        assert_eq!(out.data(), &[6.0, 9.0, 24.0, 27.0]);
        let kept = reduce_sum(&x, &p(&[-2], true)).unwrap();
        assert_eq!(kept.shape(), &[2, 1, 2]);
        assert_eq!(kept.data(), out.data());
        let two = reduce_sum(&x, &p(&[2, 0], false)).unwrap();
        assert_eq!(two.shape(), &[3]);
        assert_eq!(two.data(), &[14.0, 22.0, 30.0]);
        let all = reduce_sum(&x, &p(&[0, 1, 2], false)).unwrap();
        assert_eq!(all.shape(), &[] as &[usize]);
        assert_eq!(all.data(), &[66.0]);
        let all_kept = reduce_sum(&x, &p(&[-1, -2, -3], true)).unwrap();
        assert_eq!(all_kept.shape(), &[1, 1, 1]);
    }

    #[test]
    fn an_empty_axes_list_reduces_nothing() {
        let x = t(&[-0.0, f64::from_bits(0x7ff8_0000_0000_0123), 2.5], &[3]);
        for keepdim in [false, true] {
            let out = reduce_sum(&x, &p(&[], keepdim)).unwrap();
            assert_eq!(out.shape(), &[3]);
            let bits: Vec<u64> = out.data().iter().map(|v| v.to_bits()).collect();
            let want: Vec<u64> = x.data().iter().map(|v| v.to_bits()).collect();
            assert_eq!(bits, want);
            assert_eq!(reduce_mean(&x, &p(&[], keepdim)).unwrap().data()[2], 2.5);
        }
    }

    #[test]
    fn means_divide_by_the_reduced_count() {
        let x = iota();
        let out = reduce_mean(&x, &p(&[1], true)).unwrap();
        assert_eq!(out.shape(), &[2, 1, 2]);
        assert_eq!(out.data(), &[2.0, 3.0, 8.0, 9.0]);
        let all = reduce_mean(&x, &p(&[0, 1, 2], false)).unwrap();
        assert_eq!(all.data(), &[5.5]);
        let empty = t(&[], &[2, 0]);
        assert_eq!(
            reduce_sum(&empty, &p(&[1], false)).unwrap().data(),
            &[0.0, 0.0]
        );
        assert!(reduce_mean(&empty, &p(&[1], false)).unwrap().data()[0].is_nan());
        assert_eq!(reduce_sum(&empty, &p(&[0], false)).unwrap().shape(), &[0]);
    }

    #[test]
    fn bad_axes_are_rejected() {
        let x = iota();
        for axes in [&[3][..], &[-4], &[0, 0], &[1, -2]] {
            let e = reduce_sum(&x, &p(axes, false)).unwrap_err();
            assert_eq!(e.kind, KernelErrorKind::BadParams, "{axes:?}");
            assert!(reduce_mean(&x, &p(axes, true)).is_err());
        }
    }

    #[test]
    fn cumsum_runs_along_any_axis() {
        let x = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let rows = cumsum(&x, -1).unwrap();
        assert_eq!(rows.data(), &[1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
        assert_eq!(cumsum(&x, 1).unwrap(), rows);
        let cols = cumsum(&x, -2).unwrap();
        assert_eq!(cols.data(), &[1.0, 2.0, 3.0, 5.0, 7.0, 9.0]);
        for axis in [2, -3] {
            let e = cumsum(&x, axis).unwrap_err();
            assert_eq!(e.kind, KernelErrorKind::BadParams);
        }
        // The running order is visible: 1e16 + 1 + 1 is 1e16 in f64 both steps.
        let order = t(&[1e16, 1.0, 1.0], &[3]);
        assert_eq!(cumsum(&order, 0).unwrap().data(), &[1e16, 1e16, 1e16]);
        assert_eq!(
            cumsum(&t(&[-0.0], &[1]), 0).unwrap().data()[0].to_bits(),
            (-0.0f64).to_bits()
        );
    }
}
