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

    /// A value in `low..=high`.
    pub fn range(&mut self, low: i64, high: i64) -> i64 {
        let span = u64::try_from(high - low + 1).unwrap_or(1).max(1);
        low + i64::try_from(self.next_u64() % span).unwrap_or(0)
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
    fn written(&self) -> String {
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

    /// The sample [`Sample::describe`] wrote (`x: [1, 2], b: absent, k = 2, s = (1, 1)`); an
    /// absent input's dims are left empty. Bounded: at most [`MAX_DESCRIBED`] bytes, ranks up
    /// to 8, values up to [`MAX_VALUE`] and at most [`MAX_ELEMENTS`] elements per input.
    pub fn parse(text: &str) -> Result<Sample, SampleSyntaxError> {
        if text.len() > MAX_DESCRIBED {
            return Err(SampleSyntaxError::TooLong);
        }
        let mut sample = Sample {
            inputs: Vec::new(),
            params: Vec::new(),
        };
        let mut rest = text.trim();
        while !rest.is_empty() {
            let (name, after) = parse_name(rest)?;
            rest = if let Some(after) = after.strip_prefix(": ") {
                let (dims, after) = parse_operand(name, after)?;
                sample.inputs.push((
                    name.to_owned(),
                    dims.clone().unwrap_or_default(),
                    dims.is_some(),
                ));
                after
            } else if let Some(after) = after.strip_prefix(" = ") {
                let (param, after) = parse_param(after)?;
                sample.params.push((name.to_owned(), param));
                after
            } else {
                let name = name.to_owned();
                return Err(SampleSyntaxError::NoSeparator { name });
            };
            rest = match rest.strip_prefix(", ") {
                Some(next) if !next.is_empty() => next,
                Some(_) => return Err(SampleSyntaxError::TrailingComma),
                None if rest.is_empty() => rest,
                None => return Err(SampleSyntaxError::NoComma { at: clip(rest) }),
            };
        }
        Ok(sample)
    }
}

/// Why a sample's text does not read ([`Sample::parse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SampleSyntaxError {
    TooLong,
    /// Neither `: ` (an input) nor ` = ` (a parameter) after a name.
    NoSeparator {
        name: String,
    },
    TrailingComma,
    /// Something other than `, ` between two entries; the start of what was found.
    NoComma {
        at: String,
    },
    NoName {
        at: String,
    },
    TooManyElements {
        name: String,
    },
    /// `open` was expected at `at`.
    NoOpen {
        open: char,
        at: String,
    },
    Unclosed {
        open: char,
        close: char,
    },
    TooManyValues {
        open: char,
        close: char,
    },
    /// Not an integer from −[`MAX_VALUE`] to [`MAX_VALUE`], a float, a boolean or a name.
    BadValue {
        found: String,
    },
}

impl std::fmt::Display for SampleSyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLong => write!(f, "a sample is at most {MAX_DESCRIBED} bytes"),
            Self::NoSeparator { name } => write!(f, "expected `: ` or ` = ` after `{name}`"),
            Self::TrailingComma => write!(f, "a trailing `, `"),
            Self::NoComma { at } => write!(f, "expected `, ` before `{at}`"),
            Self::NoName { at } => write!(f, "expected a name at `{at}`"),
            Self::TooManyElements { name } => {
                write!(f, "`{name}` has more than {MAX_ELEMENTS} elements")
            }
            Self::NoOpen { open, at } => write!(f, "expected `{open}` at `{at}`"),
            Self::Unclosed { open, close } => write!(f, "no `{close}` after `{open}`"),
            Self::TooManyValues { open, close } => write!(
                f,
                "at most {MAX_LIST} values between `{open}` and `{close}`"
            ),
            Self::BadValue { found } => write!(
                f,
                "expected an integer from -{MAX_VALUE} to {MAX_VALUE}, a float, a boolean or a quoted name, found `{found}`"
            ),
        }
    }
}

impl std::error::Error for SampleSyntaxError {}

/// The longest sample text [`Sample::parse`] reads.
pub const MAX_DESCRIBED: usize = 4096;
/// The largest dimension or parameter value [`Sample::parse`] reads.
pub const MAX_VALUE: i64 = 1 << 16;
/// The most elements one input of a parsed sample may have.
pub const MAX_ELEMENTS: i64 = 1 << 24;
/// The largest rank (and tuple length) [`Sample::parse`] reads.
const MAX_LIST: usize = 8;

/// A few characters of `text`, for an error message.
fn clip(text: &str) -> String {
    text.chars().take(20).collect()
}

/// An identifier at the start of `text`, and what follows it.
fn parse_name(text: &str) -> Result<(&str, &str), SampleSyntaxError> {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    match text.split_at(end) {
        ("", _) => Err(SampleSyntaxError::NoName { at: clip(text) }),
        (name, rest) => Ok((name, rest)),
    }
}

/// `[d, …]` (dims, at most [`MAX_ELEMENTS`] in all) or `absent` (`None`).
fn parse_operand<'t>(
    name: &str,
    text: &'t str,
) -> Result<(Option<Vec<i64>>, &'t str), SampleSyntaxError> {
    if let Some(rest) = text.strip_prefix("absent") {
        return Ok((None, rest));
    }
    let (dims, rest) = parse_list(text, '[', ']')?;
    if let Some(negative) = dims.iter().find(|d| **d < 0) {
        let found = negative.to_string();
        return Err(SampleSyntaxError::BadValue { found });
    }
    let elements = dims
        .iter()
        .try_fold(1i64, |total, d| total.checked_mul(*d))
        .filter(|total| *total <= MAX_ELEMENTS);
    if elements.is_none() {
        let name = name.to_owned();
        return Err(SampleSyntaxError::TooManyElements { name });
    }
    Ok((Some(dims), rest))
}

/// `v` or `(v, …)`.
fn parse_param(text: &str) -> Result<(Param, &str), SampleSyntaxError> {
    if text.starts_with('(') {
        let (values, rest) = parse_list(text, '(', ')')?;
        return Ok((Param::Ints(values), rest));
    }
    if let Some(quoted) = text.strip_prefix('"') {
        let end = quoted.find('"').ok_or(SampleSyntaxError::Unclosed {
            open: '"',
            close: '"',
        })?;
        let (name, rest) = quoted.split_at(end);
        return Ok((Param::Text(name.to_owned()), rest.get(1..).unwrap_or("")));
    }
    let end = text.find(", ").unwrap_or(text.len());
    let (word, rest) = text.split_at(end);
    let param = match word {
        "true" => Param::Bool(true),
        "false" => Param::Bool(false),
        "nan" => Param::Float(Real(f64::NAN)),
        "inf" => Param::Float(Real(f64::INFINITY)),
        "-inf" => Param::Float(Real(f64::NEG_INFINITY)),
        _ if word.contains(['.', 'e', 'E']) => match word.parse::<f64>() {
            Ok(value) => Param::Float(Real(value)),
            Err(_) => return Err(SampleSyntaxError::BadValue { found: clip(word) }),
        },
        _ => Param::Int(parse_value(word)?),
    };
    Ok((param, rest))
}

/// `open v, v, … close` with at most [`MAX_LIST`] values.
fn parse_list(text: &str, open: char, close: char) -> Result<(Vec<i64>, &str), SampleSyntaxError> {
    let inner = text
        .strip_prefix(open)
        .ok_or_else(|| SampleSyntaxError::NoOpen {
            open,
            at: clip(text),
        })?;
    let end = inner
        .find(close)
        .ok_or(SampleSyntaxError::Unclosed { open, close })?;
    let (list, rest) = inner.split_at(end);
    let values = if list.is_empty() {
        Vec::new()
    } else {
        list.split(", ")
            .map(parse_value)
            .collect::<Result<Vec<i64>, SampleSyntaxError>>()?
    };
    if values.len() > MAX_LIST {
        return Err(SampleSyntaxError::TooManyValues { open, close });
    }
    Ok((values, rest.get(1..).unwrap_or("")))
}

/// An integer from −[`MAX_VALUE`] to [`MAX_VALUE`].
fn parse_value(text: &str) -> Result<i64, SampleSyntaxError> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    text.parse::<i64>()
        .ok()
        .filter(|v| {
            (-MAX_VALUE..=MAX_VALUE).contains(v)
                && !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
        })
        .ok_or_else(|| SampleSyntaxError::BadValue { found: clip(text) })
}

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
