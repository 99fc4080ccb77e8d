//! Deterministic samples of a contract's domain: operand shapes and op-param values drawn from a
//! small box with a fixed-seed generator, their neighbours, and their written form (which
//! parses back). The contract's own expressions classify them ([`super::constraints`]):
//! admitted (every constraint true, every output dimension defined and ≥ 1) or breaking exactly
//! one constraint.

use crate::expr::{Real, Value};
use fkc_provider::{ParamKind, ParamValue};

/// A small, seeded xorshift generator (deterministic across platforms).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `low..=high` (`low` when the range is empty); any two `i64` ends, without
    /// overflow.
    pub fn range(&mut self, low: i64, high: i64) -> i64 {
        let span = (i128::from(high) - i128::from(low) + 1).clamp(1, i128::from(u64::MAX));
        // Both fit in a u64: its remainder is the i128 one, without a 128-bit division.
        let offset = i128::from(self.next_u64() % u64::try_from(span).unwrap_or(u64::MAX));
        i64::try_from(i128::from(low) + offset).unwrap_or(low)
    }

    /// A float in [-1, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// One op-param value: an integer (`usize`, `i64`), integers (a pair, a 4-array, a list), a
/// float (`f32` — already rounded to it — or `f64`), a boolean, or an enumeration's value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Param {
    Int(i64),
    Ints(Vec<i64>),
    Float(Real),
    Bool(bool),
    Text(String),
}

impl Param {
    pub(super) fn value(&self) -> Value {
        match self {
            Param::Int(v) => Value::Int(*v),
            Param::Ints(vs) => Value::ints(vs),
            Param::Float(v) => Value::Float(*v),
            Param::Bool(b) => Value::Bool(*b),
            Param::Text(text) => Value::Text(text.clone()),
        }
    }

    /// The integers a move may change (none for a float, a boolean or an enumeration).
    pub fn ints(&self) -> &[i64] {
        match self {
            Param::Int(v) => std::slice::from_ref(v),
            Param::Ints(values) => values,
            Param::Float(_) | Param::Bool(_) | Param::Text(_) => &[],
        }
    }

    pub fn ints_mut(&mut self) -> &mut [i64] {
        match self {
            Param::Int(v) => std::slice::from_mut(v),
            Param::Ints(values) => values,
            Param::Float(_) | Param::Bool(_) | Param::Text(_) => &mut [],
        }
    }

    /// The value as [`Sample::describe`] writes it (and [`Sample::parse`] reads it).
    pub(super) fn written(&self) -> String {
        let list = |vs: &[i64]| {
            vs.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Param::Int(v) => v.to_string(),
            Param::Ints(vs) => format!("({})", list(vs)),
            Param::Float(v) if v.value().is_nan() => "nan".to_owned(),
            Param::Float(v) if v.value().is_infinite() => {
                if v.value() > 0.0 { "inf" } else { "-inf" }.to_owned()
            }
            Param::Float(v) => format!("{:?}", v.value()),
            Param::Bool(b) => b.to_string(),
            Param::Text(text) => format!("\"{text}\""),
        }
    }

    /// The value the kernel takes, when non-negative and of the right kind.
    pub fn to_kernel(&self, kind: ParamKind) -> Option<ParamValue> {
        let unsigned = |v: i64| usize::try_from(v).ok();
        match (self, kind) {
            (Param::Int(v), ParamKind::Usize) => Some(ParamValue::Usize(unsigned(*v)?)),
            (Param::Ints(vs), ParamKind::UsizePair) => match vs.as_slice() {
                [a, b] => Some(ParamValue::Pair(unsigned(*a)?, unsigned(*b)?)),
                _ => None,
            },
            (Param::Ints(vs), ParamKind::UsizeArray4) => match vs.as_slice() {
                [a, b, c, d] => Some(ParamValue::Array4([
                    unsigned(*a)?,
                    unsigned(*b)?,
                    unsigned(*c)?,
                    unsigned(*d)?,
                ])),
                _ => None,
            },
            (Param::Int(v), ParamKind::I64) => Some(ParamValue::I64(*v)),
            (Param::Float(v), ParamKind::F32) => Some(ParamValue::F32(v.value() as f32)),
            (Param::Float(v), ParamKind::F64) => Some(ParamValue::F64(v.value())),
            (Param::Bool(b), ParamKind::Bool) => Some(ParamValue::Bool(*b)),
            (Param::Text(text), ParamKind::Enum) => Some(ParamValue::Enum(text.clone())),
            (Param::Ints(vs), ParamKind::UsizeList) => Some(ParamValue::UsizeList(
                vs.iter().map(|v| unsigned(*v)).collect::<Option<_>>()?,
            )),
            (Param::Ints(vs), ParamKind::I64List) => Some(ParamValue::I64List(vs.clone())),
            _ => None,
        }
    }
}

/// One point of the domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// (input name, dims, present) in contract order.
    pub inputs: Vec<(String, Vec<i64>, bool)>,
    /// (op-param name, value) for every sampled (not shape-carrying) field.
    pub params: Vec<(String, Param)>,
}

/// The values a drawn dimension takes.
pub const DIMS: std::ops::RangeInclusive<i64> = 1..=6;
/// A drawn signed (`i64`) op-param is in `-SIGNED..=SIGNED`.
pub const SIGNED: i64 = 5;
/// The values a drawn op-param takes ([`small`]).
pub const PARAMS: std::ops::RangeInclusive<i64> = 0..=4;
/// The values a moved variable takes (the box the gate samples from, plus 0).
const MOVES: std::ops::RangeInclusive<i64> = 0..=6;

impl Sample {
    /// Every sample that differs from this one in exactly one variable — one dimension of a
    /// present input, or one parameter value (one element of a tuple) — moved within `0..=6`.
    pub fn neighbours(&self) -> impl Iterator<Item = Sample> + '_ {
        let dims = self
            .inputs
            .iter()
            .enumerate()
            .flat_map(move |(i, (_, dims, present))| {
                let axes = if *present { dims.len() } else { 0 };
                (0..axes).flat_map(move |axis| {
                    MOVES.filter_map(move |value| {
                        let mut moved = self.clone();
                        let slot = moved.inputs.get_mut(i)?.1.get_mut(axis)?;
                        (*slot != value).then(|| *slot = value)?;
                        Some(moved)
                    })
                })
            });
        let params = self
            .params
            .iter()
            .enumerate()
            .flat_map(move |(p, (_, param))| {
                let width = param.ints().len();
                (0..width).flat_map(move |element| {
                    MOVES.filter_map(move |value| {
                        let mut moved = self.clone();
                        let slot = moved.params.get_mut(p)?.1.ints_mut().get_mut(element)?;
                        (*slot != value).then(|| *slot = value)?;
                        Some(moved)
                    })
                })
            });
        dims.chain(params)
    }

    /// This sample with one variable (a dimension of a present input, or one parameter value)
    /// moved to a random value of the sampled box — a step of a walk through the domain.
    pub fn moved(&self, rng: &mut Rng) -> Sample {
        let mut moved = self.clone();
        let dims: Vec<&mut i64> = moved
            .inputs
            .iter_mut()
            .filter(|(_, _, present)| *present)
            .flat_map(|(_, dims, _)| dims.iter_mut())
            .collect();
        let dim_count = dims.len();
        let params: Vec<&mut i64> = moved
            .params
            .iter_mut()
            .flat_map(|(_, param)| param.ints_mut())
            .collect();
        let total = dim_count + params.len();
        let pick = usize::try_from(rng.range(0, total as i64 - 1)).unwrap_or(0);
        let (slot, value) = if pick < dim_count {
            (
                dims.into_iter().nth(pick),
                rng.range(*DIMS.start(), *DIMS.end()),
            )
        } else {
            (params.into_iter().nth(pick - dim_count), small(rng))
        };
        if let Some(slot) = slot {
            *slot = value;
        }
        moved
    }

    /// Every variable's (value, smallest value of the sampled box) in a fixed order: present
    /// inputs' dims (from 1), then parameter values (from 0).
    fn variables(&self) -> Vec<(i64, i64)> {
        let dims = self
            .inputs
            .iter()
            .filter(|(_, _, present)| *present)
            .flat_map(|(_, dims, _)| dims.iter().map(|d| (*d, 1)));
        let params = self
            .params
            .iter()
            .flat_map(|(_, param)| param.ints())
            .map(|v| (*v, 0));
        dims.chain(params).collect()
    }

    /// Whether this sample is `base` with one variable moved to the edge of the sampled box:
    /// a dimension to 1, a parameter to 0 or 1.
    pub fn moved_to_edge(&self, base: &Sample) -> bool {
        let (mine, theirs) = (self.variables(), base.variables());
        mine.len() == theirs.len()
            && mine
                .iter()
                .zip(&theirs)
                .filter(|(a, b)| a != b)
                .all(|((value, low), _)| *value == *low || (*low == 0 && *value == 1))
    }

    /// The elements of the present inputs, in all.
    pub fn elements(&self) -> i64 {
        self.inputs
            .iter()
            .filter(|(_, _, present)| *present)
            .map(|(_, dims, _)| dims.iter().product::<i64>())
            .sum()
    }

    pub fn dims(&self, input: &str) -> Option<&[i64]> {
        self.inputs
            .iter()
            .find(|(name, _, _)| name == input)
            .map(|(_, dims, _)| dims.as_slice())
    }

    /// A pair-valued parameter (a scalar stands for both axes); `default` for both when absent,
    /// `None` when the value has another shape.
    pub fn pair_or(&self, name: &str, default: i64) -> Option<(i64, i64)> {
        match self.param(name) {
            None => Some((default, default)),
            Some(Param::Int(v)) => Some((*v, *v)),
            Some(Param::Ints(v)) => match v.as_slice() {
                [a, b] => Some((*a, *b)),
                _ => None,
            },
            Some(_) => None,
        }
    }

    /// An integer parameter; `default` when absent, `None` when it is not an integer.
    pub fn int_or(&self, name: &str, default: i64) -> Option<i64> {
        match self.param(name) {
            None => Some(default),
            Some(Param::Int(v)) => Some(*v),
            Some(_) => None,
        }
    }

    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }

    /// This sample with op-param `name` set to `value`.
    pub fn with_param(&self, name: &str, value: Param) -> Sample {
        let mut sample = self.clone();
        if let Some((_, param)) = sample.params.iter_mut().find(|(n, _)| n == name) {
            *param = value;
        }
        sample
    }

    /// A one-line reproduction: `x: [1, 2, 3, 3], weight: [..], stride = (1, 1), …`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .inputs
            .iter()
            .map(|(name, dims, present)| {
                if *present {
                    format!("{name}: {dims:?}")
                } else {
                    format!("{name}: absent")
                }
            })
            .collect();
        parts.extend(
            self.params
                .iter()
                .map(|(name, param)| format!("{name} = {}", param.written())),
        );
        parts.join(", ")
    }
}

mod parse;

pub use parse::MAX_VALUE;

/// A small parameter value (in [`PARAMS`]): mostly 1..=3, sometimes 0 or 4.
pub(super) fn small(rng: &mut Rng) -> i64 {
    match rng.range(0, 9) {
        0 => 0,
        9 => 4,
        n => (n % 3) + 1,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::constraints::{Domain, Verdict};
    use super::*;
    use fkc_provider::DType;

    #[test]
    fn a_range_takes_any_two_ends() {
        let mut rng = Rng::new(7);
        for _ in 0..100 {
            let v = rng.range(-3, 4);
            assert!((-3..=4).contains(&v));
        }
        let _ = rng.range(i64::MIN, i64::MAX);
        assert_eq!(rng.range(5, 2), 5);
        assert!(rng.range(i64::MAX - 1, i64::MAX) >= i64::MAX - 1);
    }

    #[test]
    fn a_described_sample_parses_back_to_itself() {
        let sample = Sample {
            inputs: vec![
                ("x".to_owned(), vec![1, 4, 3, 3], true),
                ("bias".to_owned(), Vec::new(), false),
            ],
            params: vec![
                ("groups".to_owned(), Param::Int(2)),
                ("stride".to_owned(), Param::Ints(vec![1, 0])),
                ("pads".to_owned(), Param::Ints(vec![0, 1, 2, 3])),
            ],
        };
        let text = sample.describe();
        assert_eq!(
            text,
            "x: [1, 4, 3, 3], bias: absent, groups = 2, stride = (1, 0), pads = (0, 1, 2, 3)"
        );
        assert_eq!(Sample::parse(&text), Ok(sample));
    }

    #[test]
    fn malformed_or_huge_samples_are_refused() {
        for text in [
            "x: [1, 2",
            "x [1]",
            "x: [1, -2]",
            "x: [1], ",
            "k = 99999999999999999999",
            "x: [65536, 65536, 2]",
            "x: [1, 1, 1, 1, 1, 1, 1, 1, 1]",
            "k = 1 s = 2",
        ] {
            assert!(Sample::parse(text).is_err(), "{text}");
        }
        assert!(Sample::parse(&"x: [1], ".repeat(1000)).is_err());
    }

    #[test]
    fn a_sample_written_in_another_order_is_bound_by_name() {
        let text = "kernel: k\nregistrable: false\nbackend: Cpu\nkernel_source: s\nentry_point: \"e\"\naccept:\n  inputs:\n    - { name: a, dtypes: [F32], rank: 1 }\n    - { name: b, dtypes: [F32], rank: 1, shape_constraint: \"b.dim[0] == 2 * a.dim[0]\" }\nop_params:\n  fields:\n    k: { kind: usize, constraint: \"k > 0\" }\n    s: { kind: usize, constraint: \"s < k\" }\nreturn:\n  outputs:\n    - { name: out, dtype_rule: passthrough(a), shape_rule: \"from_params(N=b.dim[0] - a.dim[0] + k - s)\" }\n";
        let (_, raw, contract) = crate::verify::tests::read_resolved(text);
        let domain = Domain::new(&raw, &contract, &[]);
        let ordered = Sample::parse("a: [3], b: [6], k = 2, s = 1").unwrap();
        let swapped = Sample::parse("b: [6], a: [3], s = 1, k = 2").unwrap();
        let admitted = Verdict::Admitted {
            outputs: vec![vec![4]],
        };
        assert_eq!(domain.verdict(&ordered, DType::F32), admitted);
        assert_eq!(domain.verdict(&swapped, DType::F32), admitted);
        // `s < k` alone broken, in either order.
        let breaking = Sample::parse("b: [6], a: [3], s = 2, k = 2").unwrap();
        assert!(matches!(
            domain.verdict(&breaking, DType::F32),
            Verdict::Breaks { .. }
        ));
    }

    #[test]
    fn neighbours_move_exactly_one_variable() {
        let sample = Sample {
            inputs: vec![
                ("x".to_owned(), vec![2, 3], true),
                ("b".to_owned(), vec![4], false),
            ],
            params: vec![
                ("k".to_owned(), Param::Int(1)),
                ("s".to_owned(), Param::Ints(vec![1, 2])),
            ],
        };
        let all: Vec<Sample> = sample.neighbours().collect();
        // 2 present dims + 1 int + 2 tuple elements, each moved to the 6 other values of 0..=6
        assert_eq!(all.len(), 5 * 6);
        for moved in &all {
            let dims_changed: usize = moved
                .inputs
                .iter()
                .zip(&sample.inputs)
                .map(|(a, b)| a.1.iter().zip(&b.1).filter(|(x, y)| x != y).count())
                .sum();
            let params_changed = moved
                .params
                .iter()
                .zip(&sample.params)
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(dims_changed + params_changed, 1);
        }
    }
}
