//! The meaning of `conv2d(params)` and `conv_transpose2d(params)`, written out independently of
//! the backend (the format reference gives the same formulas): output shapes from operand dims
//! and op-param values, with checked arithmetic; `None` when undefined.

use super::sample::Sample;

fn dims4(sample: &Sample, name: &str) -> Option<[i64; 4]> {
    sample.dims(name)?.try_into().ok()
}

/// `floor((size + 2·pad − dil·(k − 1) − 1) / stride) + 1`.
fn conv_size(size: i64, k: i64, stride: i64, pad: i64, dil: i64) -> Option<i64> {
    if stride <= 0 || dil <= 0 {
        return None;
    }
    let reach = dil.checked_mul(k.checked_sub(1)?)?;
    let span = size
        .checked_add(pad.checked_mul(2)?)?
        .checked_sub(reach)?
        .checked_sub(1)?;
    span.checked_div_euclid(stride)?.checked_add(1)
}

/// `[N, Cout, Hout, Wout]` of a direct convolution: `x [N, Cin, H, W]`, `weight [Cout, _, Kh, Kw]`.
pub fn conv2d(sample: &Sample) -> Option<Vec<i64>> {
    let [n, _, h, w] = dims4(sample, "x")?;
    let [cout, _, kh, kw] = dims4(sample, "weight")?;
    let (sh, sw) = sample.pair_or("stride", 1)?;
    let (ph, pw) = sample.pair_or("padding", 0)?;
    let (dh, dw) = sample.pair_or("dilation", 1)?;
    Some(vec![
        n,
        cout,
        conv_size(h, kh, sh, ph, dh)?,
        conv_size(w, kw, sw, pw, dw)?,
    ])
}

/// `(size − 1)·stride − 2·pad + dil·(k − 1) + out_pad + 1`.
fn transposed_size(
    size: i64,
    k: i64,
    stride: i64,
    pad: i64,
    dil: i64,
    out_pad: i64,
) -> Option<i64> {
    size.checked_sub(1)?
        .checked_mul(stride)?
        .checked_sub(pad.checked_mul(2)?)?
        .checked_add(dil.checked_mul(k.checked_sub(1)?)?)?
        .checked_add(out_pad)?
        .checked_add(1)
}

/// `[N, Cout, Hout, Wout]` of a transposed convolution: `weight [Cin, Cout/groups, Kh, Kw]`.
pub fn conv_transpose2d(sample: &Sample) -> Option<Vec<i64>> {
    let [n, _, h, w] = dims4(sample, "x")?;
    let [_, cout_per_group, kh, kw] = dims4(sample, "weight")?;
    let groups = sample.int_or("groups", 1)?;
    let (sh, sw) = sample.pair_or("stride", 1)?;
    let (ph, pw) = sample.pair_or("padding", 0)?;
    let (oh, ow) = sample.pair_or("output_padding", 0)?;
    let (dh, dw) = sample.pair_or("dilation", 1)?;
    Some(vec![
        n,
        cout_per_group.checked_mul(groups)?,
        transposed_size(h, kh, sh, ph, dh, oh)?,
        transposed_size(w, kw, sw, pw, dw, ow)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::super::sample::Param;
    use super::*;

    fn sample(x: [i64; 4], w: [i64; 4], params: &[(&str, Param)]) -> Sample {
        Sample {
            inputs: vec![
                ("x".into(), x.to_vec(), true),
                ("weight".into(), w.to_vec(), true),
            ],
            params: params
                .iter()
                .map(|(n, p)| ((*n).to_owned(), p.clone()))
                .collect(),
        }
    }

    #[test]
    fn conv2d_sizes_match_the_textbook_formula() {
        // H = 5, K = 3, pad 1, stride 2, dilation 1: (5 + 2 - 2 - 1) / 2 + 1 = 3.
        let s = sample(
            [1, 2, 5, 6],
            [4, 2, 3, 3],
            &[
                ("stride", Param::Ints(vec![2, 1])),
                ("padding", Param::Ints(vec![1, 0])),
            ],
        );
        assert_eq!(conv2d(&s), Some(vec![1, 4, 3, 4]));
        // Kernel larger than the input: floor((2 - 3) / 1) + 1 = 0, an undefined output.
        let s = sample([1, 1, 2, 2], [1, 1, 3, 3], &[]);
        assert_eq!(conv2d(&s), Some(vec![1, 1, 0, 0]));
        let s = sample(
            [1, 1, 2, 2],
            [1, 1, 1, 1],
            &[("stride", Param::Ints(vec![0, 1]))],
        );
        assert_eq!(conv2d(&s), None);
    }

    #[test]
    fn transposed_sizes_match_the_seed_formula() {
        // Hout = (3 - 1)·2 - 2·1 + 1·(4 - 1) + 1 + 1 = 7; Cout = 2 · groups 2.
        let s = sample(
            [1, 4, 3, 3],
            [4, 2, 4, 4],
            &[
                ("stride", Param::Ints(vec![2, 2])),
                ("padding", Param::Ints(vec![1, 1])),
                ("output_padding", Param::Ints(vec![1, 0])),
                ("groups", Param::Int(2)),
            ],
        );
        assert_eq!(conv_transpose2d(&s), Some(vec![1, 4, 7, 6]));
    }
}

/// NumPy's broadcast of `shapes`: trailing axes aligned, a missing leading axis counting as 1,
/// and on each axis every extent equal or 1; `None` when two extents differ and neither is 1.
pub fn broadcast(shapes: &[&[i64]]) -> Option<Vec<i64>> {
    let rank = shapes.iter().map(|s| s.len()).max()?;
    let mut out = Vec::with_capacity(rank);
    for axis in 0..rank {
        let mut extent = 1;
        for shape in shapes {
            let pad = rank - shape.len();
            let dim = if axis < pad {
                1
            } else {
                *shape.get(axis - pad)?
            };
            if dim != 1 {
                if extent != 1 && extent != dim {
                    return None;
                }
                extent = dim;
            }
        }
        out.push(extent);
    }
    Some(out)
}

/// A reduction's output shape: `shape` with each of `axes` (negative from the end) removed,
/// or kept as 1 with `keep`; `None` when the axes are not distinct axes of `shape`.
pub fn reduce(shape: &[i64], axes: &[i64], keep: bool) -> Option<Vec<i64>> {
    let rank = i64::try_from(shape.len()).ok()?;
    let reduced = crate::expr::normalized_axes(axes, rank)?;
    let kept = (0i64..)
        .zip(shape)
        .filter_map(|(axis, &dim)| match reduced.contains(&axis) {
            true if keep => Some(1),
            true => None,
            false => Some(dim),
        });
    Some(kept.collect())
}

/// `shape` with its axes permuted (`out[k] = shape[perm[k]]`); `None` unless `perm` holds each
/// axis once.
pub fn permuted(shape: &[i64], perm: &[i64]) -> Option<Vec<i64>> {
    let rank = i64::try_from(shape.len()).ok()?;
    let distinct = crate::expr::normalized_axes(perm, rank)?;
    if perm.len() != shape.len() || perm.iter().any(|axis| *axis < 0) {
        return None;
    }
    let dims = distinct
        .iter()
        .map(|axis| shape.get(usize::try_from(*axis).ok()?).copied());
    dims.collect()
}

#[cfg(test)]
mod broadcast_tests {
    use super::{broadcast, permuted, reduce};

    #[test]
    fn permuted_takes_each_axis_once() {
        assert_eq!(permuted(&[2, 3, 4], &[2, 0, 1]), Some(vec![4, 2, 3]));
        assert_eq!(permuted(&[], &[]), Some(vec![]));
        assert_eq!(permuted(&[2, 3, 4], &[0, 1]), None);
        assert_eq!(permuted(&[2, 3, 4], &[0, 0, 1]), None);
        assert_eq!(permuted(&[2, 3, 4], &[0, 1, -1]), None);
    }

    #[test]
    fn reduce_removes_or_keeps_the_axes() {
        assert_eq!(reduce(&[2, 3, 4], &[1], false), Some(vec![2, 4]));
        assert_eq!(reduce(&[2, 3, 4], &[-1, 0], true), Some(vec![1, 3, 1]));
        assert_eq!(reduce(&[2, 3, 4], &[], false), Some(vec![2, 3, 4]));
        assert_eq!(reduce(&[2, 3, 4], &[0, 1, 2], false), Some(vec![]));
        assert_eq!(reduce(&[2, 3, 4], &[1, -2], false), None);
        assert_eq!(reduce(&[2, 3, 4], &[3], true), None);
        assert_eq!(reduce(&[], &[], false), Some(vec![]));
    }

    #[test]
    fn broadcast_follows_numpy() {
        assert_eq!(broadcast(&[&[4, 1, 3], &[5, 1]]), Some(vec![4, 5, 3]));
        assert_eq!(broadcast(&[&[2, 3], &[3]]), Some(vec![2, 3]));
        assert_eq!(broadcast(&[&[2, 3], &[2]]), None);
        assert_eq!(broadcast(&[&[1], &[]]), Some(vec![1]));
    }
}
