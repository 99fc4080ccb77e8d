//! Parameter kinds and values: what a field of a parameter carrier holds (`usize`, a pair, a
//! 4-array, `i64`, `f32`, `f64`, `bool`, an enumeration's named value, or a list) and the value
//! one call passes.
//!
//! On the wire a value is plain JSON: a number, a boolean, a string (an enumeration's value, or
//! `"nan"`, `"inf"`, `"-inf"` for a float that JSON cannot spell) or an array of integers. A
//! number does not say whether it is a `usize`, an `i64` or an `f64`, so a value decodes to its
//! narrowest form and the accessors ([`ParamValue::as_i64`], [`ParamValue::as_f64`],
//! [`ParamValue::as_i64_list`], …) read any form that holds the field's kind: a kernel reads a
//! field by its declared kind and never matches on the decoded form.

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The kind of a parameter field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ParamKind {
    /// `usize`
    Usize,
    /// `(usize, usize)`
    UsizePair,
    /// `[usize; 4]`
    UsizeArray4,
    /// `i64` (an axis counted from the end when negative, an offset, …)
    I64,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `bool`
    Bool,
    /// One of the field's named values ([`crate::FieldDesc::values`]).
    Enum,
    /// `Vec<usize>`: a list of any length, empty included.
    UsizeList,
    /// `Vec<i64>`
    I64List,
}

impl ParamKind {
    /// Every kind, in declaration order.
    pub const ALL: [ParamKind; 10] = [
        ParamKind::Usize,
        ParamKind::UsizePair,
        ParamKind::UsizeArray4,
        ParamKind::I64,
        ParamKind::F32,
        ParamKind::F64,
        ParamKind::Bool,
        ParamKind::Enum,
        ParamKind::UsizeList,
        ParamKind::I64List,
    ];

    /// The Rust spelling: `"usize"`, `"(usize, usize)"`, `"[usize; 4]"`, `"i64"`, `"f32"`,
    /// `"f64"`, `"bool"`, `"enum"`, `"Vec<usize>"`, `"Vec<i64>"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ParamKind::Usize => "usize",
            ParamKind::UsizePair => "(usize, usize)",
            ParamKind::UsizeArray4 => "[usize; 4]",
            ParamKind::I64 => "i64",
            ParamKind::F32 => "f32",
            ParamKind::F64 => "f64",
            ParamKind::Bool => "bool",
            ParamKind::Enum => "enum",
            ParamKind::UsizeList => "Vec<usize>",
            ParamKind::I64List => "Vec<i64>",
        }
    }

    /// Parses a Rust spelling, ignoring whitespace (`"(usize,usize)"` is a pair).
    pub fn parse(s: &str) -> Option<ParamKind> {
        let squashed: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        ParamKind::ALL
            .into_iter()
            .find(|k| k.as_str().replace(' ', "") == squashed)
    }

    /// Whether a value of this kind is a list of integers of fixed or free length.
    pub fn is_list(self) -> bool {
        matches!(
            self,
            ParamKind::UsizePair
                | ParamKind::UsizeArray4
                | ParamKind::UsizeList
                | ParamKind::I64List
        )
    }

    /// Whether a value of this kind is a floating-point number.
    pub fn is_float(self) -> bool {
        matches!(self, ParamKind::F32 | ParamKind::F64)
    }
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One parameter value.
///
/// Two floats are equal when their bits are (so a NaN equals itself and `-0.0` is not `0.0`).
#[derive(Clone, Debug)]
pub enum ParamValue {
    /// A `usize` (on the wire: any non-negative integer).
    Usize(usize),
    /// A `(usize, usize)`.
    Pair(usize, usize),
    /// A `[usize; 4]`.
    Array4([usize; 4]),
    /// An `i64` (on the wire: a negative integer).
    I64(i64),
    /// An `f32`.
    F32(f32),
    /// An `f64` (on the wire: a number with a fraction or an exponent, or `"nan"`, `"inf"`,
    /// `"-inf"`).
    F64(f64),
    /// A `bool`.
    Bool(bool),
    /// An enumeration's named value (on the wire: any other string).
    Enum(String),
    /// A `Vec<usize>` (on the wire: an array of non-negative integers not of length 2 or 4).
    UsizeList(Vec<usize>),
    /// A `Vec<i64>` (on the wire: an array with a negative integer).
    I64List(Vec<i64>),
}

impl ParamValue {
    /// The kind of the form the value has (a decoded `3` is a `usize` even for an `i64` field:
    /// read values with the accessors).
    pub fn kind(&self) -> ParamKind {
        match self {
            ParamValue::Usize(_) => ParamKind::Usize,
            ParamValue::Pair(..) => ParamKind::UsizePair,
            ParamValue::Array4(_) => ParamKind::UsizeArray4,
            ParamValue::I64(_) => ParamKind::I64,
            ParamValue::F32(_) => ParamKind::F32,
            ParamValue::F64(_) => ParamKind::F64,
            ParamValue::Bool(_) => ParamKind::Bool,
            ParamValue::Enum(_) => ParamKind::Enum,
            ParamValue::UsizeList(_) => ParamKind::UsizeList,
            ParamValue::I64List(_) => ParamKind::I64List,
        }
    }

    /// The value as a `usize`, when it is a non-negative integer.
    pub fn as_usize(&self) -> Option<usize> {
        match self {
            ParamValue::Usize(v) => Some(*v),
            ParamValue::I64(v) => usize::try_from(*v).ok(),
            _ => None,
        }
    }

    /// The value as an `i64`, when it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ParamValue::Usize(v) => i64::try_from(*v).ok(),
            ParamValue::I64(v) => Some(*v),
            _ => None,
        }
    }

    /// The value as an `f64`: a float, an integer (exactly, below 2^53), or `"nan"`, `"inf"`,
    /// `"-inf"`.
    pub fn as_f64(&self) -> Option<f64> {
        const EXACT: u64 = 1 << 53;
        match self {
            ParamValue::F64(v) => Some(*v),
            ParamValue::F32(v) => Some(f64::from(*v)),
            ParamValue::Usize(v) => u64::try_from(*v)
                .ok()
                .filter(|v| *v <= EXACT)
                .map(|v| v as f64),
            ParamValue::I64(v) => (v.unsigned_abs() <= EXACT).then_some(*v as f64),
            ParamValue::Enum(name) => special_float(name),
            _ => None,
        }
    }

    /// The value as an `f32`, when it is a float or an integer an `f32` holds exactly (an `f64`
    /// is rounded to nearest).
    pub fn as_f32(&self) -> Option<f32> {
        match self {
            ParamValue::F32(v) => Some(*v),
            ParamValue::Usize(_) | ParamValue::I64(_) => {
                let wide = self.as_f64()?;
                let narrow = wide as f32;
                (f64::from(narrow) == wide).then_some(narrow)
            }
            _ => self.as_f64().map(|v| v as f32),
        }
    }

    /// The value as a `bool`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ParamValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// An enumeration's value name.
    pub fn as_enum(&self) -> Option<&str> {
        match self {
            ParamValue::Enum(name) => Some(name),
            _ => None,
        }
    }

    /// The value as a list of `usize`, whatever its length.
    pub fn as_usize_list(&self) -> Option<Vec<usize>> {
        match self {
            ParamValue::Pair(a, b) => Some(vec![*a, *b]),
            ParamValue::Array4(a) => Some(a.to_vec()),
            ParamValue::UsizeList(v) => Some(v.clone()),
            ParamValue::I64List(v) => v.iter().map(|x| usize::try_from(*x).ok()).collect(),
            _ => None,
        }
    }

    /// The value as a list of `i64`, whatever its length.
    pub fn as_i64_list(&self) -> Option<Vec<i64>> {
        match self {
            ParamValue::I64List(v) => Some(v.clone()),
            _ => self
                .as_usize_list()?
                .into_iter()
                .map(|x| i64::try_from(x).ok())
                .collect(),
        }
    }

    /// The value in the form of `kind`, when it holds one (`None` for an enumeration: its
    /// names are the field's).
    pub fn to_kind(&self, kind: ParamKind) -> Option<ParamValue> {
        Some(match kind {
            ParamKind::Usize => ParamValue::Usize(self.as_usize()?),
            ParamKind::UsizePair => match self.as_usize_list()?.as_slice() {
                [a, b] => ParamValue::Pair(*a, *b),
                _ => return None,
            },
            ParamKind::UsizeArray4 => ParamValue::Array4(self.as_usize_list()?.try_into().ok()?),
            ParamKind::I64 => ParamValue::I64(self.as_i64()?),
            ParamKind::F32 => ParamValue::F32(self.as_f32()?),
            ParamKind::F64 => ParamValue::F64(self.as_f64()?),
            ParamKind::Bool => ParamValue::Bool(self.as_bool()?),
            ParamKind::Enum => ParamValue::Enum(self.as_enum()?.to_owned()),
            ParamKind::UsizeList => ParamValue::UsizeList(self.as_usize_list()?),
            ParamKind::I64List => ParamValue::I64List(self.as_i64_list()?),
        })
    }
}

/// `"nan"`, `"inf"`, `"+inf"`, `"-inf"` (any case) as floats.
fn special_float(name: &str) -> Option<f64> {
    match name.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "inf" | "+inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// A float's comparison key: its bits (every NaN with its payload, the sign of zero).
fn float_bits(value: &ParamValue) -> Option<u64> {
    match value {
        ParamValue::F32(v) => Some(u64::from(v.to_bits())),
        ParamValue::F64(v) => Some(v.to_bits()),
        _ => None,
    }
}

impl PartialEq for ParamValue {
    fn eq(&self, other: &Self) -> bool {
        use ParamValue as V;
        match (self, other) {
            (V::Usize(a), V::Usize(b)) => a == b,
            (V::Pair(a, b), V::Pair(c, d)) => a == c && b == d,
            (V::Array4(a), V::Array4(b)) => a == b,
            (V::I64(a), V::I64(b)) => a == b,
            (V::F32(_), V::F32(_)) | (V::F64(_), V::F64(_)) => {
                float_bits(self) == float_bits(other)
            }
            (V::Bool(a), V::Bool(b)) => a == b,
            (V::Enum(a), V::Enum(b)) => a == b,
            (V::UsizeList(a), V::UsizeList(b)) => a == b,
            (V::I64List(a), V::I64List(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for ParamValue {}

impl Hash for ParamValue {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            ParamValue::Usize(v) => v.hash(state),
            ParamValue::Pair(a, b) => (a, b).hash(state),
            ParamValue::Array4(a) => a.hash(state),
            ParamValue::I64(v) => v.hash(state),
            ParamValue::F32(_) | ParamValue::F64(_) => float_bits(self).hash(state),
            ParamValue::Bool(b) => b.hash(state),
            ParamValue::Enum(name) => name.hash(state),
            ParamValue::UsizeList(v) => v.hash(state),
            ParamValue::I64List(v) => v.hash(state),
        }
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Usize(v) => write!(f, "{v}"),
            ParamValue::Pair(a, b) => write!(f, "({a}, {b})"),
            ParamValue::Array4(a) => write!(f, "{a:?}"),
            ParamValue::I64(v) => write!(f, "{v}"),
            ParamValue::F32(v) => write!(f, "{v:?}"),
            ParamValue::F64(v) => write!(f, "{v:?}"),
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Enum(name) => write!(f, "{name}"),
            ParamValue::UsizeList(v) => write!(f, "{v:?}"),
            ParamValue::I64List(v) => write!(f, "{v:?}"),
        }
    }
}

impl Serialize for ParamValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ParamValue::Usize(v) => serializer.serialize_u64(*v as u64),
            ParamValue::Pair(a, b) => [*a, *b].serialize(serializer),
            ParamValue::Array4(a) => a.serialize(serializer),
            ParamValue::I64(v) => serializer.serialize_i64(*v),
            ParamValue::F32(v) => serialize_float(f64::from(*v), serializer),
            ParamValue::F64(v) => serialize_float(*v, serializer),
            ParamValue::Bool(b) => serializer.serialize_bool(*b),
            ParamValue::Enum(name) => serializer.serialize_str(name),
            ParamValue::UsizeList(v) => v.serialize(serializer),
            ParamValue::I64List(v) => v.serialize(serializer),
        }
    }
}

/// A finite float as a JSON number, the others as `"nan"`, `"inf"`, `"-inf"`.
fn serialize_float<S: Serializer>(value: f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_nan() {
        serializer.serialize_str("nan")
    } else if value.is_infinite() {
        serializer.serialize_str(if value > 0.0 { "inf" } else { "-inf" })
    } else {
        serializer.serialize_f64(value)
    }
}

impl<'de> Deserialize<'de> for ParamValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

/// Decodes any JSON form a parameter value takes, to its narrowest [`ParamValue`].
struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = ParamValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, a boolean, a string or an array of integers")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ParamValue, E> {
        usize::try_from(v)
            .map(ParamValue::Usize)
            .map_err(|_| E::custom(format!("{v} does not fit a usize")))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ParamValue, E> {
        match usize::try_from(v) {
            Ok(unsigned) => Ok(ParamValue::Usize(unsigned)),
            Err(_) => Ok(ParamValue::I64(v)),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ParamValue, E> {
        Ok(ParamValue::F64(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ParamValue, E> {
        Ok(ParamValue::Bool(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ParamValue, E> {
        Ok(match special_float(v) {
            Some(float) => ParamValue::F64(float),
            None => ParamValue::Enum(v.to_owned()),
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ParamValue, A::Error> {
        let mut items: Vec<i64> = Vec::new();
        while let Some(item) = seq.next_element::<i64>()? {
            items.push(item);
        }
        let unsigned: Option<Vec<usize>> = items.iter().map(|v| usize::try_from(*v).ok()).collect();
        Ok(match unsigned {
            Some(list) => match list.as_slice() {
                [a, b] => ParamValue::Pair(*a, *b),
                [a, b, c, d] => ParamValue::Array4([*a, *b, *c, *d]),
                _ => ParamValue::UsizeList(list),
            },
            None => ParamValue::I64List(items),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn round_trip(value: &ParamValue) -> ParamValue {
        serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
    }

    #[test]
    fn every_kind_has_a_spelling_that_parses_back() {
        for kind in ParamKind::ALL {
            assert_eq!(ParamKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(ParamKind::parse("Vec< i64 >"), Some(ParamKind::I64List));
        assert_eq!(ParamKind::parse("u8"), None);
    }

    #[test]
    fn values_travel_and_read_back_as_their_field_kind() {
        let cases = [
            (ParamValue::I64(-1), ParamKind::I64),
            (ParamValue::I64(3), ParamKind::I64),
            (ParamValue::F32(1e-5), ParamKind::F32),
            (ParamValue::F64(f64::NAN), ParamKind::F64),
            (ParamValue::F64(f64::NEG_INFINITY), ParamKind::F64),
            (ParamValue::F64(2.0), ParamKind::F64),
            (ParamValue::Bool(true), ParamKind::Bool),
            (ParamValue::Enum("exclude".into()), ParamKind::Enum),
            (ParamValue::UsizeList(vec![]), ParamKind::UsizeList),
            (ParamValue::UsizeList(vec![2, 0, 1]), ParamKind::UsizeList),
            (ParamValue::I64List(vec![-1, 0]), ParamKind::I64List),
            (ParamValue::I64List(vec![1, 0]), ParamKind::I64List),
            (ParamValue::Pair(1, 2), ParamKind::UsizePair),
        ];
        for (value, kind) in cases {
            let back = round_trip(&value).to_kind(kind);
            assert_eq!(back.as_ref(), Some(&value), "{value} as {kind}");
        }
    }

    #[test]
    fn a_reader_refuses_what_its_kind_does_not_hold() {
        assert_eq!(ParamValue::I64(-1).as_usize(), None);
        assert_eq!(ParamValue::Bool(true).as_i64(), None);
        assert_eq!(ParamValue::Usize(1 << 60).as_f64(), None);
        assert_eq!(ParamValue::Usize(16_777_217).as_f32(), None);
        assert_eq!(ParamValue::I64List(vec![-1]).as_usize_list(), None);
        assert_eq!(ParamValue::Enum("mean".into()).as_f64(), None);
        assert_ne!(ParamValue::F64(0.0), ParamValue::F64(-0.0));
        assert_eq!(ParamValue::F64(f64::NAN), ParamValue::F64(f64::NAN));
    }
}
