//! Normalisations: `softmax` along one axis and `layer_norm` over the last axis of a matrix.

use crate::error::{KernelError, KernelErrorKind};
use crate::mutants::{Mutant, active};
use crate::ops::axes::{normalize_axis, split_at_axis};
use crate::shape::zeroed_vec;
use crate::tensor::{Element, RefTensor, Scalar};

/// The axis `softmax` runs along (the `SoftmaxNegativeAxisFromFront` mutant counts a negative
/// axis from the front).
fn softmax_axis(axis: i64, rank: usize) -> Result<usize, KernelError> {
    let normal = normalize_axis("softmax", axis, rank)?;
    if axis < 0 && active(Mutant::SoftmaxNegativeAxisFromFront) {
        return Ok(usize::try_from(axis.unsigned_abs() - 1).unwrap_or(normal));
    }
    Ok(normal)
}

/// Softmax along `axis` (negative counts from the end; outside `[-rank, rank)` is
/// `BadParams`); the output has `x`'s shape.
///
/// For each line along the axis, in `T`:
/// 1. `m` = the running maximum, starting from the first element, `m = v` whenever
///    `v > m` or `v` is NaN, and kept once it is NaN (a NaN anywhere makes the line NaN);
/// 2. `e_t = exp(x_t − m)`;
/// 3. `s` = the sum of the `e_t` for `t` ascending (accumulator `acc: T = 0`, `acc = acc + e_t`);
/// 4. `out_t = e_t / s`.
///
/// A `+Inf` maximum gives NaN (`Inf − Inf`); a line of `-Inf` gives NaN.
pub fn softmax<T: Element>(x: &RefTensor<T>, axis: i64) -> Result<RefTensor<T>, KernelError> {
    let axis = softmax_axis(axis, x.shape().len())?;
    let (outer, extent, inner) = split_at_axis(x.shape(), axis)?;
    let data = x.data();
    if extent == 1 && active(Mutant::SoftmaxSingleElementIsOne) {
        return Ok(RefTensor::from_vec(vec![T::one(); data.len()], x.shape())?);
    }
    let mut out: Vec<T> = zeroed_vec(data.len())?;
    let mut e = Vec::with_capacity(extent);
    for o in 0..outer {
        for i in 0..inner {
            let base = o * extent * inner + i;
            let at = |t: usize| base + t * inner;
            let Some(&first) = data.get(base).filter(|_| extent > 0) else {
                continue;
            };
            let mut m = first;
            for t in 1..extent {
                let v = data[at(t)];
                if !m.is_nan() && (v.is_nan() || v > m) {
                    m = v;
                }
            }
            e.clear();
            let mut acc = T::zero();
            for t in 0..extent {
                let et = (data[at(t)] - m).exp();
                acc = acc + et;
                e.push(et);
            }
            for (t, &et) in e.iter().enumerate() {
                out[at(t)] = et / acc;
            }
        }
    }
    Ok(RefTensor::from_vec(out, x.shape())?)
}

/// Parameters of [`layer_norm`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerNormParams {
    /// Added to the variance before the square root; `>= 0` (`-0.0` included, `+Inf`
    /// allowed), not NaN.
    pub eps: f32,
}

/// Layer normalisation of each row of `x [N, D]`, with optional `weight [D]` and `bias [D]`.
///
/// Per row, in `f64` for every dtype (each `x` widened exactly, accumulators `f64` starting at
/// `0`, elements in ascending order): `mean = (Σ x) / D`, `var = (Σ (x − mean)²) / D`
/// (biased), `y = (x − mean) / sqrt(var + eps)`, then `y = y · weight[d]` if `weight` is
/// given, then `y = y + bias[d]` if `bias` is given; `y` is rounded once to `T`.
///
/// `Rank` unless `x` is rank 2 and `weight`/`bias` rank 1; `ShapeMismatch` unless their
/// length is `D`; `BadParams` for a negative or NaN `eps`.
pub fn layer_norm<T: Element>(
    x: &RefTensor<T>,
    weight: Option<&RefTensor<T>>,
    bias: Option<&RefTensor<T>>,
    params: &LayerNormParams,
) -> Result<RefTensor<T>, KernelError> {
    const OP: &str = "layer_norm";
    let &[_, d] = x.shape() else {
        return Err(KernelError::new(
            OP,
            KernelErrorKind::Rank,
            format!("x must be rank 2 [N, D], got shape {:?}", x.shape()),
        ));
    };
    for (name, operand) in [("weight", weight), ("bias", bias)] {
        let Some(t) = operand else { continue };
        match t.shape() {
            [len] if *len == d => {}
            [len] => {
                return Err(KernelError::new(
                    OP,
                    KernelErrorKind::ShapeMismatch,
                    format!("{name} has length {len}, x {:?} needs D = {d}", x.shape()),
                ));
            }
            shape => {
                return Err(KernelError::new(
                    OP,
                    KernelErrorKind::Rank,
                    format!("{name} must be rank 1 [D], got shape {shape:?}"),
                ));
            }
        }
    }
    if params.eps.is_nan() || params.eps < 0.0 {
        return Err(KernelError::new(
            OP,
            KernelErrorKind::BadParams,
            format!("eps must be >= 0 and not NaN, got {:?}", params.eps),
        ));
    }
    let eps = if active(Mutant::LayerNormIgnoresEps) {
        0.0
    } else {
        f64::from(params.eps)
    };
    let count = d as f64;
    let mut out = Vec::with_capacity(x.data().len());
    for row in x.data().chunks_exact(d.max(1)).take(x.shape()[0]) {
        let mut sum = 0.0f64;
        for v in row {
            sum += Scalar::to_f64(*v);
        }
        let mean = sum / count;
        let mut squares = 0.0f64;
        for v in row {
            let centred = Scalar::to_f64(*v) - mean;
            squares += centred * centred;
        }
        let denom = (squares / count + eps).sqrt();
        for (i, v) in row.iter().enumerate() {
            let mut y = (Scalar::to_f64(*v) - mean) / denom;
            if let Some(w) = weight {
                y *= Scalar::to_f64(w.data()[i]);
            }
            if let Some(b) = bias {
                y += Scalar::to_f64(b.data()[i]);
            }
            out.push(T::from_f64(y));
        }
    }
    Ok(RefTensor::from_vec(out, x.shape())?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    use crate::ops::axes::test_tensor as t;

    fn close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
        }
    }

    #[test]
    fn softmax_along_either_axis() {
        let x = t(&[0.0, 1.0, 2.0, 0.0, 0.0, 0.0], &[2, 3]);
        let out = softmax(&x, -1).unwrap();
        let s = 1.0 + 1f64.exp() + 2f64.exp();
        let want = [
            1.0 / s,
            1f64.exp() / s,
            2f64.exp() / s,
            1.0 / 3.0,
            1.0 / 3.0,
            1.0 / 3.0,
        ];
        close(out.data(), &want);
        assert_eq!(softmax(&x, 1).unwrap(), out);
        let cols = softmax(&x, -2).unwrap();
        let (e1, e2) = (1.0 / (1.0 + 1f64.exp()), 1.0 / (1.0 + 2f64.exp()));
        close(cols.data(), &[0.5, 1.0 - e1, 1.0 - e2, 0.5, e1, e2]);
        assert_eq!(softmax(&x, 0).unwrap(), cols);
    }

    #[test]
    fn softmax_propagates_nan_and_rejects_bad_axes() {
        let x = t(&[1.0, f64::NAN, 3.0], &[3]);
        assert!(softmax(&x, 0).unwrap().data().iter().all(|v| v.is_nan()));
        let big = t(&[1000.0, 1000.0], &[2]);
        assert_eq!(softmax(&big, 0).unwrap().data(), &[0.5, 0.5]);
        for axis in [1, -2, i64::MAX] {
            let e = softmax(&x, axis).unwrap_err();
            assert_eq!(e.kind, KernelErrorKind::BadParams);
        }
    }

    #[test]
    fn layer_norm_by_hand() {
        // Row [1, 2, 3]: mean 2, var 2/3.
        let x = t(&[1.0, 2.0, 3.0, 5.0, 5.0, 5.0], &[2, 3]);
        let p = LayerNormParams { eps: 0.0 };
        let out = layer_norm(&x, None, None, &p).unwrap();
        let r = (1.5f64).sqrt();
        close(&out.data()[..3], &[-r, 0.0, r]);
        assert!(out.data()[3].is_nan(), "a constant row with eps 0 is 0/0");
        let p = LayerNormParams { eps: 0.5 };
        let w = t(&[1.0, 2.0, 3.0], &[3]);
        let b = t(&[10.0, 20.0, 30.0], &[3]);
        let out = layer_norm(&x, Some(&w), Some(&b), &p).unwrap();
        let s = (2.0 / 3.0 + f64::from(0.5f32)).sqrt();
        close(
            out.data(),
            &[10.0 - 1.0 / s, 20.0, 30.0 + 3.0 / s, 10.0, 20.0, 30.0],
        );
        let only_bias = layer_norm(&x, None, Some(&b), &p).unwrap();
        close(&only_bias.data()[3..], &[10.0, 20.0, 30.0]);
    }

    #[test]
    fn layer_norm_rejects_bad_input() {
        let x = t(&[0.0; 6], &[2, 3]);
        let kind = |r: Result<RefTensor<f64>, KernelError>| r.unwrap_err().kind;
        for eps in [-1e-5, f32::NAN, f32::NEG_INFINITY] {
            let r = layer_norm(&x, None, None, &LayerNormParams { eps });
            assert_eq!(kind(r), KernelErrorKind::BadParams);
        }
        let p = LayerNormParams { eps: 1e-5 };
        let w = t(&[1.0; 2], &[2]);
        assert_eq!(
            kind(layer_norm(&x, Some(&w), None, &p)),
            KernelErrorKind::ShapeMismatch
        );
        let w = t(&[1.0; 3], &[1, 3]);
        assert_eq!(
            kind(layer_norm(&x, None, Some(&w), &p)),
            KernelErrorKind::Rank
        );
        let x3 = t(&[0.0; 6], &[1, 2, 3]);
        assert_eq!(kind(layer_norm(&x3, None, None, &p)), KernelErrorKind::Rank);
        assert!(layer_norm(&x, None, None, &LayerNormParams { eps: -0.0 }).is_ok());
    }
}
