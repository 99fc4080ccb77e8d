//! Runtime values and static types of the expression language.
//!
//! A [`Value`] is an `i64`, an `f64` ([`Real`]), a bool, a string (an enumeration's value), a
//! tuple (a list parameter is one of any length), or a record with named fields. Operands are
//! records `{ dim: (d0, d1, ...), rank: n }` built by [`Value::operand`]; op-param tuples such
//! as `stride` are plain tuples. [`Type`] mirrors [`Value`] for the static checker, plus
//! [`Type::Any`] for values the caller cannot describe (checked only at evaluation).

use std::fmt;

/// A float that is equal to another when its bits are (so values can be keys); the
/// language's comparisons use IEEE 754's rules instead ([`Real::value`]).
#[derive(Debug, Clone, Copy)]
pub struct Real(pub f64);

impl Real {
    /// The number.
    pub fn value(self) -> f64 {
        self.0
    }
}

impl PartialEq for Real {
    fn eq(&self, other: &Real) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Real {}

impl std::hash::Hash for Real {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

/// A value an expression computes or a caller binds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// A 64-bit signed integer.
    Int(i64),
    /// A 64-bit float (an `f32` or `f64` parameter).
    Float(Real),
    /// A string (an enumeration parameter's value).
    Text(String),
    /// A boolean.
    Bool(bool),
    /// A fixed-length tuple.
    Tuple(Vec<Value>),
    /// Named fields, in declaration order (the language's records are operands: `dim`, `rank`).
    Record(Vec<(&'static str, Value)>),
}

/// The static type of an expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    /// `i64`
    Int,
    /// `f64`
    Float,
    /// `str` (an enumeration's value)
    Text,
    /// A list of any length, each element of this type (a `Vec<usize>` parameter).
    List(Box<Type>),
    /// `bool`
    Bool,
    /// A tuple of exactly these element types.
    Tuple(Vec<Type>),
    /// A record with exactly these fields.
    Record(Vec<(String, Type)>),
    /// Unknown to the checker: any operation on it is accepted statically.
    Any,
}

impl Value {
    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The number, if this is an integer or a float (an integer as `f64`).
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(*v as f64),
            Value::Float(v) => Some(v.value()),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The elements, if this is a tuple.
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn as_tuple(&self) -> Option<&[Value]> {
        match self {
            Value::Tuple(items) => Some(items),
            _ => None,
        }
    }

    /// The integers, if this is a tuple of integers.
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn as_ints(&self) -> Option<Vec<i64>> {
        self.as_tuple()?.iter().map(Value::as_int).collect()
    }

    /// A record field, if this is a record that has it.
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Record(fields) => fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A tuple of integers: `(a, b, ...)`.
    pub fn ints(values: &[i64]) -> Value {
        Value::Tuple(values.iter().map(|v| Value::Int(*v)).collect())
    }

    /// An operand with the given dims: the record `{ dim: (d0, d1, ...), rank: dims.len() }`.
    pub fn operand(dims: &[i64]) -> Value {
        let rank = i64::try_from(dims.len()).unwrap_or(i64::MAX);
        Value::Record(vec![("dim", Value::ints(dims)), ("rank", Value::Int(rank))])
    }

    /// The most precise type of this value.
    pub fn type_of(&self) -> Type {
        match self {
            Value::Int(_) => Type::Int,
            Value::Float(_) => Type::Float,
            Value::Text(_) => Type::Text,
            Value::Bool(_) => Type::Bool,
            Value::Tuple(items) => Type::Tuple(items.iter().map(Value::type_of).collect()),
            Value::Record(fields) => Type::Record(
                fields
                    .iter()
                    .map(|(n, v)| ((*n).to_owned(), v.type_of()))
                    .collect(),
            ),
        }
    }

    /// A short name of the value's kind for messages: `int`, `bool`, `tuple`, `record`.
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Text(_) => "str",
            Value::Bool(_) => "bool",
            Value::Tuple(_) => "tuple",
            Value::Record(_) => "record",
        }
    }
}

impl Type {
    /// The type of an operand of the given rank: `{ dim: (int, ...), rank: int }`.
    pub fn operand(rank: usize) -> Type {
        Type::Record(vec![
            ("dim".to_owned(), Type::ints(rank)),
            ("rank".to_owned(), Type::Int),
        ])
    }

    /// The type of an operand whose rank is known only on a sample: `{ dim: [int], rank: int }`.
    pub fn operand_of_any_rank() -> Type {
        Type::Record(vec![
            ("dim".to_owned(), Type::List(Box::new(Type::Int))),
            ("rank".to_owned(), Type::Int),
        ])
    }

    /// A tuple of `len` integers.
    pub fn ints(len: usize) -> Type {
        Type::Tuple(vec![Type::Int; len])
    }

    /// A record field's type, if this is a record that has it.
    pub fn field(&self, name: &str) -> Option<&Type> {
        match self {
            Type::Record(fields) => fields.iter().find(|(n, _)| n == name).map(|(_, t)| t),
            _ => None,
        }
    }

    /// Whether `value` is of this type (records must have at least the type's fields).
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn admits(&self, value: &Value) -> bool {
        match (self, value) {
            (Type::Any, _)
            | (Type::Int, Value::Int(_))
            | (Type::Float, Value::Float(_))
            | (Type::Text, Value::Text(_))
            | (Type::Bool, Value::Bool(_)) => true,
            (Type::List(item), Value::Tuple(items)) => items.iter().all(|v| item.admits(v)),
            (Type::Tuple(types), Value::Tuple(items)) => {
                types.len() == items.len() && types.iter().zip(items).all(|(t, v)| t.admits(v))
            }
            (Type::Record(types), Value::Record(_)) => types
                .iter()
                .all(|(name, t)| value.field(name).is_some_and(|v| t.admits(v))),
            _ => false,
        }
    }

    /// Whether a value of type `self` may stand where `other` is expected (or vice versa):
    /// equal types, with [`Type::Any`] matching anything at any depth.
    pub fn compatible(&self, other: &Type) -> bool {
        match (self, other) {
            (Type::Any, _) | (_, Type::Any) => true,
            (Type::List(a), Type::List(b)) => a.compatible(b),
            (Type::List(item), Type::Tuple(items)) | (Type::Tuple(items), Type::List(item)) => {
                items.iter().all(|t| t.compatible(item))
            }
            (Type::Tuple(a), Type::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.compatible(y))
            }
            (Type::Record(a), Type::Record(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((n, x), (m, y))| n == m && x.compatible(y))
            }
            _ => self == other,
        }
    }

    /// Whether this is `int`, `float` or [`Type::Any`]: a number comparisons take.
    pub fn is_numeric(&self) -> bool {
        matches!(self, Type::Int | Type::Float | Type::Any)
    }

    /// Whether `==` can compare values of this type (not records).
    pub fn is_equatable(&self) -> bool {
        match self {
            Type::Int | Type::Float | Type::Text | Type::Bool | Type::Any => true,
            Type::Tuple(items) => items.iter().all(Type::is_equatable),
            Type::List(item) => item.is_equatable(),
            Type::Record(_) => false,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{:?}", v.value()),
            Value::Text(text) => write!(f, "\"{text}\""),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Tuple(items) => write_tuple(f, items),
            Value::Record(fields) => write_record(f, fields),
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Int => f.write_str("int"),
            Type::Float => f.write_str("float"),
            Type::Text => f.write_str("str"),
            Type::List(item) => write!(f, "[{item}]"),
            Type::Bool => f.write_str("bool"),
            Type::Any => f.write_str("any"),
            Type::Tuple(items) => write_tuple(f, items),
            Type::Record(fields) => write_record(f, fields),
        }
    }
}

fn write_tuple<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    f.write_str("(")?;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    f.write_str(if items.len() == 1 { ",)" } else { ")" })
}

fn write_record<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    fields: &[(impl fmt::Display, T)],
) -> fmt::Result {
    f.write_str("{")?;
    for (i, (name, item)) in fields.iter().enumerate() {
        let sep = if i > 0 { ", " } else { " " };
        write!(f, "{sep}{name}: {item}")?;
    }
    f.write_str(if fields.is_empty() { "}" } else { " }" })
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn operand_record() {
        let x = Value::operand(&[2, 4, 9, 9]);
        assert_eq!(x.field("rank"), Some(&Value::Int(4)));
        assert_eq!(
            x.field("dim").and_then(Value::as_ints),
            Some(vec![2, 4, 9, 9])
        );
        assert_eq!(x.type_of(), Type::operand(4));
        assert!(Type::operand(4).admits(&x));
        assert!(!Type::operand(3).admits(&x));
        assert_eq!(x.to_string(), "{ dim: (2, 4, 9, 9), rank: 4 }");
        assert_eq!(Type::operand(1).to_string(), "{ dim: (int,), rank: int }");
    }

    #[test]
    fn accessors() {
        assert_eq!(Value::Int(3).as_int(), Some(3));
        assert_eq!(Value::Bool(true).as_int(), None);
        assert_eq!(Value::Bool(true).as_bool(), Some(true));
        assert_eq!(Value::from(5).as_bool(), None);
        assert_eq!(Value::ints(&[1, 2]).as_tuple().map(<[Value]>::len), Some(2));
        assert_eq!(Value::Tuple(vec![Value::Bool(true)]).as_ints(), None);
        assert_eq!(Value::Int(1).field("dim"), None);
        assert_eq!(Value::from(false).kind_name(), "bool");
        assert_eq!(Value::Tuple(vec![]).to_string(), "()");
        assert_eq!(Value::Record(vec![]).to_string(), "{}");
    }

    #[test]
    fn type_relations() {
        assert!(Type::Any.admits(&Value::Int(1)));
        assert!(Type::Int.compatible(&Type::Any));
        assert!(Type::Tuple(vec![Type::Int, Type::Any]).compatible(&Type::ints(2)));
        assert!(!Type::ints(2).compatible(&Type::ints(3)));
        assert!(!Type::Int.compatible(&Type::Bool));
        assert!(Type::ints(2).is_equatable());
        assert!(!Type::operand(2).is_equatable());
        assert_eq!(Type::operand(2).field("rank"), Some(&Type::Int));
        assert_eq!(
            Type::Tuple(vec![Type::Bool, Type::Any]).to_string(),
            "(bool, any)"
        );
    }
}
