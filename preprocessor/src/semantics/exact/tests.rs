//! The oracle's bounds: sums against Higham's, the special values some order of a sum gives,
//! overflow, `max` under the NaN policies, and the functions' allowances.

#![allow(clippy::unwrap_used)]
use super::*;

fn sum(terms: &[f64], dtype: DType) -> Approx {
    let exact = Exact::default();
    let mut acc = exact.store(Approx::exact(0.0));
    for t in terms {
        exact.update(&mut acc, AssignOp::Add, Approx::exact(*t), dtype);
    }
    exact.load(&acc, dtype)
}

#[test]
fn a_sum_is_bounded_by_gamma_times_its_magnitude() {
    let s = sum(&[1.0, 2f64.powi(-24), 2f64.powi(-24)], DType::F32);
    assert_eq!(s.kinds, Kinds::FINITE);
    assert!(s.admits(1.0) && s.admits(1.0 + 2f64.powi(-23)));
    assert!(!s.admits(1.001));
}

#[test]
fn special_terms_give_the_outcomes_some_order_gives() {
    assert_eq!(sum(&[1.0, f64::NAN], DType::F64).kinds, Kinds::NAN);
    assert_eq!(
        sum(&[f64::INFINITY, f64::NEG_INFINITY], DType::F64).kinds,
        Kinds::NAN
    );
    let big = 0.75 * f64::MAX;
    let s = sum(&[big, big, f64::NEG_INFINITY], DType::F64);
    assert!(s.admits(f64::NEG_INFINITY) && s.admits(f64::NAN));
    assert!(!s.admits(f64::INFINITY) && !s.admits(0.0));
    let s = sum(&[big, big, -big], DType::F64);
    assert!(s.admits(f64::INFINITY) && s.admits(big) && !s.admits(f64::NAN));
}

#[test]
fn products_overflow_in_their_own_dtype() {
    let exact = Exact::default();
    let big = Approx::exact(0.75 * f64::from(f32::MAX));
    let p = exact.binary(ValOp::Mul, big, big, DType::F32);
    assert_eq!(p.kinds, Kinds::PLUS_INFINITY);
    let zero_times_inf = exact.binary(
        ValOp::Mul,
        Approx::exact(0.0),
        Approx::exact(f64::INFINITY),
        DType::F32,
    );
    assert_eq!(zero_times_inf.kinds, Kinds::NAN);
}

#[test]
fn max_follows_the_nan_policy_and_keeps_the_first_of_a_tie() {
    let propagate = Exact::default();
    let ignore = Exact {
        nan: NanPolicy::Ignore,
    };
    let (nan, three) = (Approx::exact(f64::NAN), Approx::exact(3.0));
    assert_eq!(
        propagate.func(Func::Max, &[nan, three], DType::F32).kinds,
        Kinds::NAN
    );
    assert_eq!(ignore.func(Func::Max, &[nan, three], DType::F32), three);
    let m = propagate.func(
        Func::Max,
        &[Approx::exact(-0.0), Approx::exact(0.0)],
        DType::F32,
    );
    assert!(m.value.is_sign_negative());
}

#[test]
fn functions_carry_their_allowance_and_special_values() {
    let exact = Exact::default();
    let e = exact.func(Func::Exp, &[Approx::exact(1.0)], DType::F32);
    assert!(e.admits(std::f64::consts::E as f32 as f64));
    assert_eq!(
        exact
            .func(Func::Log, &[Approx::exact(-1.0)], DType::F32)
            .kinds,
        Kinds::NAN
    );
    assert_eq!(
        exact
            .func(Func::Exp, &[Approx::exact(1000.0)], DType::F32)
            .kinds,
        Kinds::PLUS_INFINITY
    );
    assert!((erf(0.5) - 0.520_499_877_813_046_5).abs() < 1e-15);
    assert!((erf(3.0) - 0.999_977_909_503_001_4).abs() < 1e-15);
    assert!((erf(-1.0) + 0.842_700_792_949_714_9).abs() < 1e-15);
    // within one unit in the last place of the correctly rounded value (mpmath, 50 digits),
    // where the alternating series cancels most (it was 14 units off at 2.2627…)
    for (x, want) in [
        (2.262_784_343_617_149_8, 0.998_626_011_653_073_1),
        (1.5, 0.966_105_146_475_310_8),
        (2.499_023_437_5, 0.999_590_915_550_642_5),
        (0.3, 0.328_626_759_459_127_45),
        (1.0, 0.842_700_792_949_714_9),
        (3.0, 0.999_977_909_503_001_4),
        (5.5, 0.999_999_999_999_992_7),
        (0.001, 0.001_128_378_790_969_236_5),
    ] {
        let got = erf(x);
        let ulp = f64::EPSILON * want;
        assert!((got - want).abs() <= ulp, "erf({x}) = {got:e}, want {want:e}");
        assert_eq!(erf(-x), -got);
    }
}
