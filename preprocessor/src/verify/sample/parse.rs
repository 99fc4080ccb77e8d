//! A sample's written form read back ([`Sample::parse`]): what [`Sample::describe`] writes,
//! bounded in length, rank and values, every mistake a [`SampleSyntaxError`].

use super::{Param, Sample};
use crate::expr::Real;

impl Sample {
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
