//! The worked example's operands: small distinct integers, and a transposed view that keeps
//! the logical values.

#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn operands_are_small_non_zero_integers_that_differ_between_neighbours() {
    let row: Vec<f64> = (0..12).map(|i| small(0, i)).collect();
    assert!(row.iter().all(|v| *v != 0.0 && v.abs() <= 3.0));
    assert!(row.windows(2).all(|w| w[0] != w[1]));
    assert_ne!(small(0, 0), small(1, 0));
    let mut chosen: Vec<i64> = (0..9).map(|i| distinct(i, 9) as i64).collect();
    chosen.sort_unstable();
    assert_eq!(chosen, (-4..=4).collect::<Vec<_>>());
}

#[test]
fn a_transposed_view_keeps_the_logical_values() {
    let values: Vec<f64> = (0..6).map(f64::from).collect();
    let tensor = AnyTensor::from_f64(DType::F32, &[2, 3], &values).unwrap();
    let view = transposed(&tensor).unwrap();
    assert_eq!(view.strides(), [1, 2]);
    assert_eq!(view.packed().unwrap().to_f64_vec(), values);
    assert_eq!(view.storage().to_f64_vec(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
}
