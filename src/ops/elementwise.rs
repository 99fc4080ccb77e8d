//! Element-wise kernels: `add` and `mul` with NumPy broadcasting (floats; `add` also on
//! wrapping integers and E5M2), `leaky_relu`, and `gelu` in its exact erf form.

use num_traits::{SaturatingAdd, WrappingAdd};

use crate::error::{KernelError, KernelErrorKind};
use crate::mutants::{Mutant, active};
use crate::ops::axes::{offset, packed_strides, step_index};
use crate::shape::numel;
use crate::tensor::{Element, F8E5M2, RefTensor, Scalar};

/// `shape` padded with 1s to `rank` dimensions: in front (NumPy: trailing dimensions align),
/// or behind when `leading` (the `AddBroadcastAlignsLeading` mutant).
fn padded(shape: &[usize], rank: usize, leading: bool) -> Vec<usize> {
    let ones = std::iter::repeat_n(1, rank.saturating_sub(shape.len()));
    if leading {
        shape.iter().copied().chain(ones).collect()
    } else {
        ones.chain(shape.iter().copied()).collect()
    }
}

/// The NumPy broadcast shape of `a` and `b`: trailing dimensions aligned, missing leading ones
/// taken as 1, each pair equal or one of them 1 (`ShapeMismatch` otherwise).
pub fn broadcast_shape(
    op: &'static str,
    a: &[usize],
    b: &[usize],
) -> Result<Vec<usize>, KernelError> {
    broadcast_padded(op, a, b, false).map(|(out, _, _)| out)
}

/// The broadcast shape and both operands' shapes padded to its rank.
#[allow(clippy::type_complexity)]
fn broadcast_padded(
    op: &'static str,
    a: &[usize],
    b: &[usize],
    leading: bool,
) -> Result<(Vec<usize>, Vec<usize>, Vec<usize>), KernelError> {
    let rank = a.len().max(b.len());
    let (pa, pb) = (padded(a, rank, leading), padded(b, rank, leading));
    let out = pa
        .iter()
        .zip(&pb)
        .map(|(&da, &db)| match (da, db) {
            _ if da == db => Ok(da),
            (1, _) => Ok(db),
            (_, 1) => Ok(da),
            _ => Err(KernelError::new(
                op,
                KernelErrorKind::ShapeMismatch,
                format!("shapes {a:?} and {b:?} do not broadcast: dimension {da} against {db}"),
            )),
        })
        .collect::<Result<Vec<usize>, KernelError>>()?;
    Ok((out, pa, pb))
}

/// Packed strides of a padded operand shape, 0 along its size-1 (broadcast) dimensions.
fn broadcast_strides(padded: &[usize]) -> Vec<usize> {
    packed_strides(padded)
        .into_iter()
        .zip(padded)
        .map(|(s, &d)| if d == 1 { 0 } else { s })
        .collect()
}

/// `f(a[ia], b[ib])` for every output position of the broadcast, in row-major order: the one
/// broadcasting loop every binary element-wise kernel shares, whatever the element type.
fn broadcast_binary<T: Scalar>(
    op: &'static str,
    a: &RefTensor<T>,
    b: &RefTensor<T>,
    f: impl Fn(T, T) -> T,
) -> Result<RefTensor<T>, KernelError> {
    if op == "add" && b.data().len() == 1 && active(Mutant::AddScalarKeepsShape) {
        let y = b.data()[0];
        let out: Vec<T> = a.data().iter().map(|&x| f(x, y)).collect();
        return Ok(RefTensor::from_vec(out, a.shape())?);
    }
    let same_count = a.data().len() == b.data().len() && a.shape().len() >= b.shape().len();
    if same_count && active(Mutant::SameCountZips) {
        let out: Vec<T> = (a.data().iter().zip(b.data()))
            .map(|(&x, &y)| f(x, y))
            .collect();
        return Ok(RefTensor::from_vec(out, a.shape())?);
    }
    let row = a.shape().last().copied().unwrap_or(1);
    if op == "mul"
        && row > 1
        && b.data().len() == row
        && active(Mutant::MulRowByCount)
        && broadcast_padded(op, a.shape(), b.shape(), false).is_ok_and(|(s, _, _)| s == a.shape())
    {
        let out: Vec<T> = (a.data().iter().enumerate())
            .map(|(i, &x)| f(x, b.data()[i % row]))
            .collect();
        return Ok(RefTensor::from_vec(out, a.shape())?);
    }
    let leading = op == "add" && active(Mutant::AddBroadcastAlignsLeading);
    let modulo_b = op == "mul" && active(Mutant::MulBroadcastByModulo);
    let (out_shape, pa, pb) = broadcast_padded(op, a.shape(), b.shape(), leading)?;
    let (sa, sb) = (broadcast_strides(&pa), broadcast_strides(&pb));
    let count = numel(&out_shape)?;
    let mut out = Vec::with_capacity(count);
    let mut index = vec![0; out_shape.len()];
    let (a_data, b_data) = (a.data(), b.data());
    for flat in 0..count {
        let ib = if modulo_b {
            flat % b_data.len().max(1)
        } else {
            offset(&index, &sb)
        };
        out.push(f(a_data[offset(&index, &sa)], b_data[ib]));
        step_index(&mut index, &out_shape);
    }
    Ok(RefTensor::from_vec(out, &out_shape)?)
}

/// `a + b` with NumPy broadcasting: the output has the broadcast shape (see
/// [`broadcast_shape`]; `ShapeMismatch` for incompatible shapes), and each element is one
/// `T` addition — a single rounding. For `bf16`/`f16`, `half` adds in `f32` and rounds once to
/// `T`; the `f32` sum of two half-precision values rounded to `T` is the correctly rounded
/// sum. No accumulator (one operation per element).
pub fn add<T: Element>(a: &RefTensor<T>, b: &RefTensor<T>) -> Result<RefTensor<T>, KernelError> {
    broadcast_binary("add", a, b, |x, y| x + y)
}

/// `a + b` on integers with NumPy broadcasting like [`add`]: each element is one
/// two's-complement addition that wraps on overflow (`i8`: `127 + 1 = -128`). Exact otherwise;
/// no accumulator.
pub fn add_wrapping<T: Scalar + WrappingAdd + SaturatingAdd>(
    a: &RefTensor<T>,
    b: &RefTensor<T>,
) -> Result<RefTensor<T>, KernelError> {
    if active(Mutant::AddIntSaturates) {
        return broadcast_binary("add", a, b, |x, y| x.saturating_add(&y));
    }
    broadcast_binary("add", a, b, |x, y| x.wrapping_add(&y))
}

/// `a + b` in E5M2 with NumPy broadcasting like [`add`]: both values widened to `f64`, where
/// their sum is exact (E5M2 has 3 significand bits and exponents -16..=15), then rounded once
/// to E5M2 (nearest, ties to even; beyond 57344 by half a step or more: ±Inf; NaN in, NaN
/// out).
pub fn add_e5m2(
    a: &RefTensor<F8E5M2>,
    b: &RefTensor<F8E5M2>,
) -> Result<RefTensor<F8E5M2>, KernelError> {
    let clamps = active(Mutant::E5m2ClampsNearMax);
    broadcast_binary("add", a, b, |x, y| {
        let s = x.to_f64() + y.to_f64();
        if clamps && s.abs() < 65536.0 {
            return F8E5M2::from_f64(s.clamp(-57344.0, 57344.0));
        }
        if s.abs() > 57344.0 && active(Mutant::E5m2OverflowPastLargest) {
            return F8E5M2::from_f64(s.signum() * f64::INFINITY);
        }
        F8E5M2::from_f64(s)
    })
}

/// `a · b` with NumPy broadcasting, exactly like [`add`]: one `T` multiplication per element,
/// a single rounding (through `f32` for `bf16`/`f16`, correctly rounded). No accumulator.
pub fn mul<T: Element>(a: &RefTensor<T>, b: &RefTensor<T>) -> Result<RefTensor<T>, KernelError> {
    broadcast_binary("mul", a, b, |x, y| x * y)
}

/// `x` where `x > 0`, otherwise `negative_slope · x` (one `T` multiplication, rounded once;
/// NaN stays NaN), any rank; the output has `x`'s shape. `negative_slope` is rounded to `T`
/// first.
pub fn leaky_relu<T: Element>(
    x: &RefTensor<T>,
    negative_slope: f64,
) -> Result<RefTensor<T>, KernelError> {
    let slope = T::from_f64(negative_slope);
    let keeps_zero = active(Mutant::LeakyReluScalesZero);
    let out = x
        .data()
        .iter()
        .map(|&v| {
            let positive = v > T::zero() || (keeps_zero && v == T::zero());
            if positive { v } else { v * slope }
        })
        .collect();
    Ok(RefTensor::from_vec(out, x.shape())?)
}

/// `0.5 · x · (1 + erf(x / √2))` in `f64` (`libm::erf`), operations in that order.
fn gelu_f64(x: f64) -> f64 {
    if x == 0.0 && active(Mutant::GeluZeroShortcut) {
        return 0.0;
    }
    if active(Mutant::GeluTanhApprox) {
        let c = (2.0 / std::f64::consts::PI).sqrt();
        return 0.5 * x * (1.0 + (c * (x + 0.044_715 * x * x * x)).tanh());
    }
    0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
}

/// The exact (erf) GELU of every element: `out = 0.5 · x · (1 + erf(x / √2))`, any rank, the
/// output has `x`'s shape.
///
/// Computed in `f64` for every dtype (`x` widened exactly, `libm::erf`, each operation
/// rounded to `f64` in the order written) and rounded once to `T`. For `x` below about `-8.3`,
/// `1 + erf(x/√2)` is `0` in `f64`, so the result is `-0.0`; NaN gives NaN, `+Inf` gives
/// `+Inf` and `-Inf` gives NaN (`-Inf · 0`).
pub fn gelu<T: Element>(x: &RefTensor<T>) -> Result<RefTensor<T>, KernelError> {
    let out = x
        .data()
        .iter()
        .map(|&v| T::from_f64(gelu_f64(Scalar::to_f64(v))))
        .collect();
    Ok(RefTensor::from_vec(out, x.shape())?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use half::{bf16, f16};

    use super::*;

    use crate::ops::axes::test_tensor as t;

    #[test]
    fn broadcast_shapes_follow_numpy() {
        assert_eq!(broadcast_shape("t", &[3], &[2, 1, 3]), Ok(vec![2, 1, 3]));
        assert_eq!(broadcast_shape("t", &[2, 1, 3], &[4, 1]), Ok(vec![2, 4, 3]));
        assert_eq!(broadcast_shape("t", &[], &[2, 2]), Ok(vec![2, 2]));
        assert_eq!(broadcast_shape("t", &[0], &[1]), Ok(vec![0]));
        let e = broadcast_shape("t", &[2, 3], &[3, 2]).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::ShapeMismatch);
        assert!(broadcast_shape("t", &[0], &[2]).is_err());
    }

    #[test]
    fn add_broadcasts_rank_1_against_rank_3() {
        let a = t(&[10.0, 20.0, 30.0], &[3]);
        let b = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 1, 3]);
        let out = add(&a, &b).unwrap();
        assert_eq!(out.shape(), &[2, 1, 3]);
        assert_eq!(out.data(), &[11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
        let swapped = add(&b, &a).unwrap();
        assert_eq!(swapped.data(), out.data());
    }

    #[test]
    fn mul_broadcasts_size_1_dimensions_on_both_sides() {
        // [2, 1] · [1, 3] -> [2, 3]: an outer product.
        let a = t(&[2.0, 3.0], &[2, 1]);
        let b = t(&[1.0, 10.0, 100.0], &[1, 3]);
        let out = mul(&a, &b).unwrap();
        assert_eq!(out.shape(), &[2, 3]);
        assert_eq!(out.data(), &[2.0, 20.0, 200.0, 3.0, 30.0, 300.0]);
        let scalar = mul(&t(&[5.0], &[]), &t(&[1.0, 2.0], &[2])).unwrap();
        assert_eq!(scalar.data(), &[5.0, 10.0]);
        assert_eq!(scalar.shape(), &[2]);
        let e = mul(&t(&[0.0; 3], &[3]), &t(&[0.0; 4], &[4])).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::ShapeMismatch);
    }

    #[test]
    fn half_precision_rounds_once() {
        // 1 + 2^-11 is a tie in f16 (rounds to even: 1); 1 + 3·2^-12 rounds up.
        let one = RefTensor::from_vec(vec![f16::ONE, f16::ONE], &[2]).unwrap();
        let tiny = RefTensor::from_vec(
            vec![
                f16::from_f64(2f64.powi(-11)),
                f16::from_f64(3.0 * 2f64.powi(-12)),
            ],
            &[2],
        )
        .unwrap();
        let out = add(&one, &tiny).unwrap();
        let want = [1.0, 1.0 + 2f64.powi(-10)];
        assert_eq!(
            out.data().iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
            want
        );
        let a = RefTensor::from_vec(vec![bf16::from_f64(3.0)], &[1]).unwrap();
        let b = RefTensor::from_vec(vec![bf16::from_f64(1.0 / 3.0)], &[1]).unwrap();
        let product = mul(&a, &b).unwrap().data()[0];
        let exact = 3.0 * bf16::from_f64(1.0 / 3.0).to_f64();
        assert_eq!(product, bf16::from_f64(exact));
    }

    fn ints<T: Scalar>(values: &[i64], shape: &[usize]) -> RefTensor<T> {
        let data = values.iter().map(|&v| T::from_f64(v as f64)).collect();
        RefTensor::from_vec(data, shape).unwrap()
    }

    #[test]
    fn integer_add_wraps_and_broadcasts() {
        let a = ints::<i8>(&[127, -128, 100, 5], &[2, 2]);
        let b = ints::<i8>(&[1, -1], &[2]);
        let out = add_wrapping(&a, &b).unwrap();
        assert_eq!(out.shape(), &[2, 2]);
        assert_eq!(out.data(), &[-128, 127, 101, 4]);
        let a = ints::<i32>(&[i64::from(i32::MAX), i64::from(i32::MIN), 7], &[3, 1]);
        let b = ints::<i32>(&[1, -1], &[1, 2]);
        let out = add_wrapping(&a, &b).unwrap();
        assert_eq!(out.shape(), &[3, 2]);
        let want = [i32::MIN, i32::MAX - 1, i32::MIN + 1, i32::MAX, 8, 6];
        assert_eq!(out.data(), &want);
        let e = add_wrapping(&ints::<i8>(&[0; 2], &[2]), &ints::<i8>(&[0; 3], &[3])).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::ShapeMismatch);
    }

    #[test]
    fn e5m2_add_rounds_the_exact_sum_once() {
        let e = |v: f64| F8E5M2::from_f64(v);
        let a = RefTensor::from_vec(vec![e(1.0), e(1.0), e(57344.0), e(-0.0)], &[4]).unwrap();
        // 1 + 0.125 is a tie between 1 and 1.25 (even: 1); 1 + 0.1875 rounds up to 1.25;
        // 57344 + 4096 is halfway to the next step: Inf; -0 + -0 stays -0.
        let b = RefTensor::from_vec(vec![e(0.125), e(0.1875), e(4096.0), e(-0.0)], &[4]).unwrap();
        let out = add_e5m2(&a, &b).unwrap();
        let got: Vec<f64> = out.data().iter().map(|v| v.to_f64()).collect();
        assert_eq!(got[..2], [1.0, 1.25]);
        assert_eq!(got[2], f64::INFINITY);
        assert_eq!(out.data()[3].to_bits(), 0x80);
        let nan = RefTensor::from_vec(vec![e(f64::INFINITY)], &[]).unwrap();
        let minus = RefTensor::from_vec(vec![e(f64::NEG_INFINITY)], &[1]).unwrap();
        assert!(add_e5m2(&nan, &minus).unwrap().data()[0].to_f64().is_nan());
    }

    #[cfg(feature = "mutants")]
    #[test]
    fn add_int_saturates_mutant_changes_an_overflowing_sum() {
        use crate::mutants::with;
        let a = ints::<i8>(&[120, -120], &[2]);
        let b = ints::<i8>(&[10, -10], &[2]);
        assert_eq!(add_wrapping(&a, &b).unwrap().data(), &[-126, 126]);
        let bad = with(Some(Mutant::AddIntSaturates), || add_wrapping(&a, &b));
        assert_eq!(bad.unwrap().data(), &[127, -128]);
    }

    #[test]
    fn gelu_matches_hand_values() {
        let x = t(&[0.0, 1.0, -1.0, f64::INFINITY], &[2, 2]);
        let out = gelu(&x).unwrap();
        let want = [0.0, 0.841_344_746_068_542_9, -0.158_655_253_931_457_05];
        for (got, want) in out.data().iter().zip(want) {
            assert!((got - want).abs() < 1e-15, "{got} vs {want}");
        }
        assert_eq!(out.data()[3], f64::INFINITY);
        assert_eq!(out.shape(), &[2, 2]);
        let x32 = RefTensor::from_vec(vec![1.0f32], &[1]).unwrap();
        assert_eq!(
            gelu(&x32).unwrap().data()[0],
            0.841_344_746_068_542_9_f64 as f32
        );
    }
}
