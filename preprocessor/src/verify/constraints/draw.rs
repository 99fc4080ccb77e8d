//! How one op-param value is drawn: small integers, floats with their edges, either boolean,
//! an enumeration's value, and lists of axes (permutations, structured ones among them).

use super::super::sample::{Param, Rng, SIGNED, small};
use crate::expr::Real;
use fkc_provider::ParamKind;

/// The structured permutations [`structured`] makes.
pub(in crate::verify) const STRUCTURED: i64 = 4;

/// The identity permutation `axes` made structured permutation `which`: kept (0), its last two
/// axes swapped (1), reversed (2) or rotated left by one (3).
pub(in crate::verify) fn structured(axes: &mut [i64], which: i64) {
    let len = axes.len();
    match which {
        1 if len >= 2 => axes.swap(len - 2, len - 1),
        2 => axes.reverse(),
        3 => axes.rotate_left(1.min(len)),
        _ => {}
    }
}

/// One value of a parameter of `kind`: small integers (signed ones from −[`SIGNED`], so axes
/// count from the end too), floats with their edges (zeros of both signs, NaN, ±Inf, tiny and
/// large ones) where a constraint admits them, either boolean, any of an enumeration's `choices`,
/// and lists of any length up to the inputs' ranks, empty included — half of them a
/// permutation, or distinct axes, of one input's rank.
pub(super) fn draw_param(rng: &mut Rng, kind: ParamKind, choices: &[&str], ranks: &[i64]) -> Param {
    match kind {
        ParamKind::Usize => Param::Int(small(rng)),
        ParamKind::UsizePair => Param::Ints(vec![small(rng), small(rng)]),
        ParamKind::UsizeArray4 => Param::Ints((0..4).map(|_| small(rng)).collect()),
        ParamKind::I64 => Param::Int(rng.range(-SIGNED, SIGNED)),
        ParamKind::F64 => Param::Float(Real(draw_float(rng))),
        ParamKind::F32 => Param::Float(Real(f64::from(draw_float(rng) as f32))),
        ParamKind::Bool => Param::Bool(rng.range(0, 1) == 1),
        ParamKind::Enum => {
            let pick = usize::try_from(rng.range(0, choices.len() as i64 - 1)).unwrap_or(0);
            Param::Text(
                choices
                    .get(pick)
                    .map_or_else(String::new, |c| (*c).to_owned()),
            )
        }
        ParamKind::UsizeList => Param::Ints(draw_list(rng, ranks, false)),
        ParamKind::I64List => Param::Ints(draw_list(rng, ranks, true)),
    }
}

/// A float: an edge value half the time, otherwise ±(0.001 to 1000) spread over the decades.
fn draw_float(rng: &mut Rng) -> f64 {
    // (halves and quarters: a product with an integer lands on a tie, so rounding is put to
    // the test)
    const EDGES: [f64; 15] = [
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e-12,
        1e-5,
        1.0,
        -1.0,
        1e30,
        0.5,
        -0.5,
        1.5,
        0.25,
        -2.5,
    ];
    if rng.range(0, 1) == 0 {
        let pick = usize::try_from(rng.range(0, EDGES.len() as i64 - 1)).unwrap_or(0);
        return EDGES.get(pick).copied().unwrap_or(0.0);
    }
    // half of the rest a multiple of 1/4 up to 8 (ties again), half anywhere in 1e-3..1e3
    let magnitude = if rng.range(0, 1) == 0 {
        rng.range(1, 32) as f64 / 4.0
    } else {
        10f64.powf(rng.unit() * 3.0)
    };
    if rng.range(0, 3) == 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// A list: half the time the axes of one input's rank (a permutation of them — one in three a
/// structured one, where kernels keep their fast paths: the identity, the last two axes
/// swapped, all reversed, or rotated by one — or, `signed`, a random subset of them, each
/// possibly counted from the end); otherwise any length up to the largest rank with small
/// values.
fn draw_list(rng: &mut Rng, ranks: &[i64], signed: bool) -> Vec<i64> {
    let top = ranks.iter().copied().max().unwrap_or(1).max(1);
    if rng.range(0, 1) == 0 {
        let pick = usize::try_from(rng.range(0, ranks.len() as i64 - 1)).unwrap_or(0);
        let rank = ranks.get(pick).copied().unwrap_or(top);
        let mut axes: Vec<i64> = (0..rank).collect();
        if !signed && rng.range(0, 2) == 0 {
            structured(&mut axes, rng.range(0, STRUCTURED - 1));
            return axes;
        }
        for i in (1..axes.len()).rev() {
            let j = usize::try_from(rng.range(0, i as i64)).unwrap_or(0);
            axes.swap(i, j);
        }
        if signed {
            axes.truncate(usize::try_from(rng.range(0, rank)).unwrap_or(0));
            for axis in &mut axes {
                if rng.range(0, 1) == 1 {
                    *axis -= rank;
                }
            }
        }
        return axes;
    }
    let len = rng.range(0, top);
    let low = if signed { -SIGNED } else { 0 };
    (0..len).map(|_| rng.range(low, top)).collect()
}
