//! Unit tests of the definitional oracles and of the summation envelopes.

#![allow(clippy::unwrap_used)]
use super::*;

fn input(dims: &[usize], values: Vec<f64>) -> Input {
    Input {
        dims: dims.to_vec(),
        values,
    }
}

#[test]
fn conv2d_on_an_arange_input() {
    // x = 0..9 as [1,1,3,3], w = all ones [1,1,2,2], no padding: each output sums a 2x2 window:
    // [0+1+3+4, 1+2+4+5, 3+4+6+7, 4+5+7+8] = [8, 12, 20, 24].
    let x = input(&[1, 1, 3, 3], (0..9).map(f64::from).collect());
    let w = input(&[1, 1, 2, 2], vec![1.0; 4]);
    let g = Geometry {
        stride: (1, 1),
        padding: (0, 0),
        dilation: (1, 1),
        groups: 1,
    };
    let r = conv2d(&x, &w, None, g, Arith::Exact, None).unwrap();
    assert_eq!(r.values, vec![8.0, 12.0, 20.0, 24.0]);
    assert_eq!(r.terms, 5);
}

#[test]
fn transposed_conv_scatters_each_input_through_the_kernel() {
    // x = [1, 2] as [1,1,1,2], w = [1, 10] as [1,1,1,2], stride 1: out = [1, 12, 20].
    let x = input(&[1, 1, 1, 2], vec![1.0, 2.0]);
    let w = input(&[1, 1, 1, 2], vec![1.0, 10.0]);
    let sample = Sample {
        inputs: Vec::new(),
        params: Vec::new(),
    };
    let r = conv_transpose2d(&x, &w, &sample, None).unwrap();
    assert_eq!(r.values, vec![1.0, 12.0, 20.0]);
}

#[test]
fn max_pool_takes_window_maxima() {
    let x = input(&[1, 1, 2, 3], vec![1.0, 5.0, 2.0, -1.0, 0.0, 7.0]);
    assert_eq!(
        max_pool2d(&x, 2, 1, NanPolicy::Propagate).unwrap().values,
        vec![5.0, 7.0]
    );
}

#[test]
fn max_pool_nan_policies() {
    let x = input(&[1, 1, 1, 4], vec![f64::NAN, 3.0, f64::NAN, f64::NAN]);
    let propagate = max_pool2d(&x, 1, 1, NanPolicy::Propagate).unwrap().values;
    assert!(propagate[0].is_nan() && propagate[1] == 3.0);
    let x = input(&[1, 1, 2, 2], vec![f64::NAN, 3.0, -1.0, f64::NAN]);
    assert!(max_pool2d(&x, 2, 1, NanPolicy::Propagate).unwrap().values[0].is_nan());
    assert_eq!(
        max_pool2d(&x, 2, 1, NanPolicy::Ignore).unwrap().values,
        vec![3.0]
    );
    let all_nan = input(&[1, 1, 1, 1], vec![f64::NAN]);
    assert!(
        max_pool2d(&all_nan, 1, 1, NanPolicy::Ignore)
            .unwrap()
            .values[0]
            .is_nan()
    );
}

#[test]
fn ordered_sums_round_in_the_dtype() {
    // 1 + 2^-24 + 2^-24 in f32, left to right: each small term is lost; exactly, it is not.
    let tiny = 2f64.powi(-24);
    let x = input(&[1, 3, 1, 1], vec![1.0, tiny, tiny]);
    let w = input(&[1, 3, 1, 1], vec![1.0, 1.0, 1.0]);
    let sample = Sample {
        inputs: Vec::new(),
        params: Vec::new(),
    };
    let inputs = [Some(x), Some(w)];
    let in_f32 = ordered("Conv2dSimple", DType::F32, &inputs, &sample).unwrap();
    assert_eq!(in_f32, vec![1.0]);
    let exact = reference("Conv2dSimple", &inputs, &sample).unwrap().values;
    assert_eq!(exact, vec![1.0 + 2.0 * tiny]);
    assert!(ordered("MaxPool2D", DType::F32, &inputs, &sample).is_none());
}

fn outcomes(terms: &[f64], dtype: DType) -> Outcomes {
    envelope(terms.iter().copied(), dtype).outcomes(dtype, gamma(terms.len(), unit_roundoff(dtype)))
}

#[test]
fn a_nan_term_or_opposite_infinities_make_nan_in_every_order() {
    let only_nan = Outcomes {
        nan: true,
        ..Outcomes::default()
    };
    assert_eq!(outcomes(&[1.0, f64::NAN, 2.0], DType::F64), only_nan);
    assert_eq!(
        outcomes(&[f64::INFINITY, 1.0, f64::NEG_INFINITY], DType::F64),
        only_nan
    );
    assert!(!only_nan.order_dependent());
}

#[test]
fn partial_sums_that_may_overflow_allow_infinity_as_well_as_the_finite_sum() {
    // 0.75·max + 0.75·max − 0.75·max: left to right overflows to +Inf, in another order it
    // is 0.75·max.
    let big = 0.75 * f64::MAX;
    let got = outcomes(&[big, big, -big], DType::F64);
    assert!(got.finite && got.plus_infinity && !got.minus_infinity && !got.nan);
    assert!(got.order_dependent());
    // The case: positive terms that may overflow, and a −Inf term: −Inf in some
    // orders, NaN (+Inf − Inf) in others; never +Inf, never finite.
    let got = outcomes(&[big, big, f64::NEG_INFINITY], DType::F64);
    assert_eq!(
        got,
        Outcomes {
            nan: true,
            minus_infinity: true,
            ..Outcomes::default()
        }
    );
    assert!(got.admits_special(f64::NEG_INFINITY) && got.admits_special(f64::NAN));
    assert!(!got.admits_special(f64::INFINITY) && !got.admits_special(1.0));
}

#[test]
fn small_terms_allow_only_the_finite_sum() {
    let got = outcomes(&[1.0, -2.0, 3.5], DType::F32);
    assert_eq!(
        got,
        Outcomes {
            finite: true,
            ..Outcomes::default()
        }
    );
    assert!(!got.admits_special(f64::INFINITY) && !got.admits_special(f64::NAN));
}

#[test]
fn products_that_overflow_the_dtype_but_not_a_wider_accumulator_allow_both_results() {
    // In f32 each product overflows (+Inf and −Inf terms: NaN); summed exactly, as an f64
    // accumulator does, they cancel to a finite value, or leave +Inf when rounded to f32.
    let big = 0.75 * f64::from(f32::MAX);
    let square = big * big;
    let cancel = outcomes(&[square, -square, 1.0], DType::F32);
    assert!(cancel.nan && cancel.finite && !cancel.plus_infinity);
    let up = outcomes(&[square, square, -square], DType::F32);
    assert!(up.nan && up.plus_infinity && !up.minus_infinity);
}

#[test]
fn gamma_grows_with_terms_stays_finite_and_is_never_looser_than_highams() {
    assert!(gamma(10, unit_roundoff(DType::F32)) > gamma(1, unit_roundoff(DType::F32)));
    // Never looser than Higham's K·u / (1 − K·u), and equal to first order.
    for dtype in [DType::F64, DType::F32, DType::BF16, DType::F16] {
        let u = unit_roundoff(dtype);
        for k in [1usize, 2, 10, 100, 200] {
            let ku = k as f64 * u;
            if ku < 1.0 {
                let higham = ku / (1.0 - ku);
                assert!(gamma(k, u) <= higham, "{dtype:?} K={k}");
                assert!(gamma(k, u) >= ku, "{dtype:?} K={k}");
            }
        }
    }
    // Finite where Higham's form is not: 300 bf16 roundings (K·u > 1).
    let bf16 = gamma(300, unit_roundoff(DType::BF16));
    assert!(bf16.is_finite() && (2.2..2.3).contains(&bf16), "{bf16}");
    // (1 + u)^2 − 1 = 2u + u², computed without cancellation.
    let u = unit_roundoff(DType::F32);
    assert!((gamma(2, u) - (2.0 * u + u * u)).abs() <= 1e-30);
}
