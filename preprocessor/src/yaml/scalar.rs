//! What a scalar's text means: explicit tags, the implicit resolution of plain scalars (null,
//! YAML 1.1 booleans, integers, floats, else strings) and the identity of a scalar used as a
//! mapping key. The rules are those serde-saphyr 2.2 applied for an untyped value, which this
//! module replaced, so that every block keeps the meaning it had.

use super::Value;
use granit_parser::Tag;
use std::borrow::Cow;

/// The YAML tag namespace (`!!` is its usual shorthand).
const YAML_NAMESPACE: &str = "tag:yaml.org,2002:";

/// What an explicit tag asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TagKind {
    /// No tag.
    None,
    /// `!`: the node is what it is written as (a string, for a scalar).
    NonSpecific,
    Str,
    Int,
    Float,
    Bool,
    Null,
    Seq,
    Map,
    Timestamp,
    Binary,
    /// `!time`, `!degrees`, `!radians`: conversions this reader does not do.
    Angle,
    /// `!!merge` (the `<<` key) and `!!value` (the `=` key).
    Merge,
    Value,
    Include,
    /// Any other tag: ignored, the node resolves as if untagged.
    Other,
}

/// The kind of node a tag was written on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeKind {
    Scalar,
    Sequence,
    Mapping,
}

impl TagKind {
    /// Classifies a tag as serde-saphyr did (core names by resolved URI, local `!name` spellings,
    /// `!!merge`, `!include`).
    pub(super) fn of(tag: &Tag) -> TagKind {
        if is_include(tag) {
            return TagKind::Include;
        }
        if let Some(core) = tag.core_suffix() {
            return core_name(core).unwrap_or(TagKind::Other);
        }
        if let Some(name) = tag.suffix_in_namespace(YAML_NAMESPACE) {
            return match name.as_ref() {
                "merge" => TagKind::Merge,
                "value" => TagKind::Value,
                other => named(other.strip_prefix('!').unwrap_or(other)),
            };
        }
        let Some(local) = tag.suffix_in_namespace("!") else {
            return TagKind::Other;
        };
        match local.as_ref() {
            "" | "!" => TagKind::NonSpecific,
            "!timestamp" => TagKind::Timestamp,
            "!binary" => TagKind::Binary,
            name => match name.strip_prefix('!') {
                Some(core) => core_name(core).unwrap_or(TagKind::Other),
                None => named(name),
            },
        }
    }

    /// Checks that the tag may stand on this kind of node.
    pub(super) fn check_node(self, node: NodeKind, tag: &Tag) -> Result<(), ScalarError> {
        let required = match self {
            TagKind::Seq => NodeKind::Sequence,
            TagKind::Map => NodeKind::Mapping,
            TagKind::None | TagKind::NonSpecific | TagKind::Other => return Ok(()),
            _ => NodeKind::Scalar,
        };
        if required == node {
            Ok(())
        } else if self == TagKind::Include {
            Err(ScalarError::IncludeForm)
        } else {
            Err(ScalarError::UnsupportedTag(tag.original().to_string()))
        }
    }

    /// Whether a scalar with this tag may be read as a string.
    pub(super) fn allows_string(self) -> bool {
        matches!(
            self,
            TagKind::None
                | TagKind::NonSpecific
                | TagKind::Str
                | TagKind::Merge
                | TagKind::Value
                | TagKind::Include
                | TagKind::Other
        )
    }
}

fn core_name(name: &str) -> Option<TagKind> {
    Some(match name {
        "null" => TagKind::Null,
        "bool" => TagKind::Bool,
        "int" => TagKind::Int,
        "float" => TagKind::Float,
        "map" => TagKind::Map,
        "seq" => TagKind::Seq,
        "str" => TagKind::Str,
        _ => return None,
    })
}

fn named(name: &str) -> TagKind {
    match name {
        "timestamp" => TagKind::Timestamp,
        "time" | "degrees" | "radians" => TagKind::Angle,
        "binary" => TagKind::Binary,
        "include" => TagKind::Include,
        other => core_name(other).unwrap_or(TagKind::Other),
    }
}

fn is_include(tag: &Tag) -> bool {
    [
        "!include",
        "tag:yaml.org,2002:include",
        "tag:yaml.org,2002:!include",
    ]
    .into_iter()
    .any(|prefix| {
        tag.suffix_in_namespace(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('#'))
    })
}

/// Whether a scalar reads as null: a `!!null` tag, or a plain `~`, `null`, `Null`, `NULL` or
/// empty scalar whose tag does not ask for another type.
pub(super) fn is_null(text: &str, plain: bool, tag: TagKind) -> bool {
    match tag {
        TagKind::Null => true,
        TagKind::None | TagKind::Merge | TagKind::Value | TagKind::Include | TagKind::Other => {
            plain && matches!(text, "" | "~" | "null" | "Null" | "NULL")
        }
        _ => false,
    }
}

/// Why a scalar or its tag cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ScalarError {
    /// `!include` on a sequence or mapping.
    IncludeForm,
    /// A tag this reader does not support, as written.
    UnsupportedTag(String),
    InvalidBool,
    InvalidFloat,
    /// A timestamp or binary scalar.
    TaggedString,
    InvalidI64,
    InvalidU64,
    /// An infinite or NaN float, as written.
    NonFinite(String),
}

impl std::fmt::Display for ScalarError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScalarError::IncludeForm => write!(
                f,
                "!include currently only supports the scalar form: !include <path>"
            ),
            ScalarError::UnsupportedTag(tag) => write!(f, "unsupported tag `{tag}`"),
            ScalarError::InvalidBool => write!(f, "invalid boolean"),
            ScalarError::InvalidFloat => write!(f, "invalid floating point"),
            ScalarError::TaggedString => {
                write!(f, "cannot deserialize tagged scalar into string")
            }
            ScalarError::InvalidI64 => write!(f, "invalid i64"),
            ScalarError::InvalidU64 => write!(f, "invalid u64"),
            ScalarError::NonFinite(text) => write!(
                f,
                "non-finite float `{text}` rejected by the configured policy"
            ),
        }
    }
}

/// The value of a scalar, or why it has none.
pub(super) fn resolve(text: Cow<'_, str>, plain: bool, tag: TagKind) -> Result<Value, ScalarError> {
    match tag {
        TagKind::Null => Ok(Value::Null),
        TagKind::Bool => yaml11_bool(&text)
            .map(Value::Bool)
            .ok_or(ScalarError::InvalidBool),
        TagKind::Int => tagged_int(&text),
        TagKind::Float => match float(&text) {
            Some(number) => finite(number, &text),
            None => Err(ScalarError::InvalidFloat),
        },
        TagKind::Angle => Err(ScalarError::InvalidFloat),
        TagKind::NonSpecific | TagKind::Str => Ok(Value::Str(text.into_owned())),
        TagKind::Timestamp | TagKind::Binary => Err(ScalarError::TaggedString),
        TagKind::Seq => Err(ScalarError::UnsupportedTag("!!seq".to_owned())),
        TagKind::Map => Err(ScalarError::UnsupportedTag("!!map".to_owned())),
        TagKind::None | TagKind::Merge | TagKind::Value | TagKind::Include | TagKind::Other => {
            if plain {
                implicit(text)
            } else {
                Ok(Value::Str(text.into_owned()))
            }
        }
    }
}

/// A plain, untagged scalar: null, boolean, integer (64 bits), float, else the text itself.
fn implicit(text: Cow<'_, str>) -> Result<Value, ScalarError> {
    if is_null(&text, true, TagKind::None) {
        return Ok(Value::Null);
    }
    if let Some(flag) = yaml11_bool(&text) {
        return Ok(Value::Bool(flag));
    }
    let trimmed = yaml_trim(&text);
    // Every integer and finite float starts with a digit, a sign or a dot.
    if !trimmed.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.')) {
        return Ok(Value::Str(text.into_owned()));
    }
    let unsigned = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    // `0X1F` and `+.nan` stay strings, as they did.
    if matches!(unsigned.as_bytes(), [b'0', b'X' | b'O' | b'B', ..])
        || (unsigned.len() < trimmed.len() && matches!(unsigned, ".nan" | ".NaN" | ".NAN"))
    {
        return Ok(Value::Str(text.into_owned()));
    }
    let integer = if trimmed.starts_with('-') {
        signed(trimmed).and_then(|number| i64::try_from(number).ok().map(i128::from))
    } else {
        unsigned_int(trimmed).and_then(|number| u64::try_from(number).ok().map(i128::from))
    };
    if let Some(number) = integer {
        return Ok(Value::Int(number));
    }
    match float(&text) {
        Some(number) => finite(number, &text),
        None => Ok(Value::Str(text.into_owned())),
    }
}

/// `!!int`: a 64-bit integer, signed when written with a minus sign.
fn tagged_int(text: &str) -> Result<Value, ScalarError> {
    if yaml_trim(text).starts_with('-') {
        signed(text)
            .and_then(|number| i64::try_from(number).ok())
            .map(|number| Value::Int(i128::from(number)))
            .ok_or(ScalarError::InvalidI64)
    } else {
        unsigned_int(text)
            .and_then(|number| u64::try_from(number).ok())
            .map(|number| Value::Int(i128::from(number)))
            .ok_or(ScalarError::InvalidU64)
    }
}

/// Infinities and NaN (written, or from an overflowing literal such as `1e999`) are refused.
fn finite(number: f64, text: &str) -> Result<Value, ScalarError> {
    if number.is_finite() {
        Ok(Value::Float(number))
    } else {
        Err(ScalarError::NonFinite(text.to_owned()))
    }
}

/// The text without surrounding spaces, tabs and line breaks.
fn yaml_trim(text: &str) -> &str {
    let blank = |byte: &u8| matches!(byte, b' ' | b'\t' | b'\r' | b'\n');
    let bytes = text.as_bytes();
    let start = bytes.iter().position(|b| !blank(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !blank(b))
        .map_or(start, |last| last + 1);
    // Both ends are next to ASCII bytes, so on character boundaries.
    text.get(start..end).unwrap_or_default()
}

/// YAML 1.1 booleans, in any letter case: true/yes/y/on and false/no/n/off.
fn yaml11_bool(text: &str) -> Option<bool> {
    let word = yaml_trim(text);
    let is = |candidates: [&str; 4]| candidates.iter().any(|c| word.eq_ignore_ascii_case(c));
    if is(["true", "yes", "y", "on"]) {
        Some(true)
    } else if is(["false", "no", "n", "off"]) {
        Some(false)
    } else {
        None
    }
}

/// A YAML 1.2 float: `.inf`/`.nan` spellings, else Rust's decimal syntax; a decimal literal too
/// large for `f64` gives an infinity.
fn float(text: &str) -> Option<f64> {
    let trimmed = yaml_trim(text);
    let (negative, unsigned) = match trimmed.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, trimmed.strip_prefix('+').unwrap_or(trimmed)),
    };
    match unsigned {
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        ".inf" | ".Inf" | ".INF" if negative => return Some(f64::NEG_INFINITY),
        ".inf" | ".Inf" | ".INF" => return Some(f64::INFINITY),
        _ => {}
    }
    let parsed = trimmed.parse::<f64>().ok()?;
    let starts_with_digit = trimmed
        .strip_prefix(['+', '-'])
        .unwrap_or(trimmed)
        .starts_with(|c: char| c.is_ascii_digit());
    (parsed.is_finite() || (parsed.is_infinite() && starts_with_digit)).then_some(parsed)
}

/// An integer in decimal (no leading zeros), `0x`, `0o` or `0b`, with an optional sign and
/// single underscores between digits.
pub(super) fn signed(text: &str) -> Option<i128> {
    let trimmed = yaml_trim(text);
    let (negative, rest) = match trimmed.strip_prefix('+') {
        Some(rest) => (false, rest),
        None => match trimmed.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, trimmed),
        },
    };
    let magnitude = magnitude(rest)?;
    if negative {
        if magnitude == i128::MIN.unsigned_abs() {
            Some(i128::MIN)
        } else {
            i128::try_from(magnitude).ok()?.checked_neg()
        }
    } else {
        i128::try_from(magnitude).ok()
    }
}

/// A non-negative integer (an optional `+`), as [`signed`].
pub(super) fn unsigned_int(text: &str) -> Option<u128> {
    let trimmed = yaml_trim(text);
    if trimmed.starts_with('-') {
        return None;
    }
    magnitude(trimmed.strip_prefix('+').unwrap_or(trimmed))
}

fn magnitude(unsigned: &str) -> Option<u128> {
    let prefixed = [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ]
    .into_iter()
    .find_map(|(prefix, radix)| unsigned.strip_prefix(prefix).map(|digits| (digits, radix)));
    let (digits, radix) = match prefixed {
        Some(found) => found,
        None if unsigned.starts_with('0') && unsigned != "0" => return None,
        None => (unsigned, 10),
    };
    let bytes = digits.as_bytes();
    let mut value: u128 = 0;
    let mut any_digit = false;
    for (index, &byte) in bytes.iter().enumerate() {
        if byte == b'_' {
            let before = index
                .checked_sub(1)
                .and_then(|i| bytes.get(i))
                .is_some_and(|&b| b != b'_');
            let after = bytes.get(index + 1).is_some_and(|&b| b != b'_');
            if !(before && after) {
                return None;
            }
            continue;
        }
        let digit = char::from(byte).to_digit(16).filter(|&d| d < radix)?;
        value = value
            .checked_mul(u128::from(radix))?
            .checked_add(u128::from(digit))?;
        any_digit = true;
    }
    any_digit.then_some(value)
}

/// The identity of a key for duplicate detection: integers by value, other scalars by their
/// text and the type their tag names (so `1`/`0x1` collide, `1`/`"1"` and `true`/`True` do not).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum KeyId<'a> {
    Integer {
        negative: bool,
        magnitude: u128,
    },
    Scalar {
        text: Cow<'a, str>,
        tag: KeyTag,
    },
    Seq {
        tag: KeyTag,
        items: Vec<KeyId<'a>>,
    },
    /// Entries sorted: the order of a mapping's keys does not matter.
    Map {
        tag: KeyTag,
        entries: Vec<(KeyId<'a>, KeyId<'a>)>,
    },
}

/// The type part of a [`KeyId`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum KeyTag {
    Str,
    Null,
    Int,
    Float,
    Bool,
    Seq,
    Map,
    Timestamp,
    Binary,
    Angle,
    /// Any other tag, as resolved (`!thing`, `tag:example.com,2000:thing`).
    Custom(String),
}

impl KeyTag {
    /// The key type of a scalar.
    pub(super) fn of_scalar(text: &str, plain: bool, tag: TagKind, custom: Option<&str>) -> KeyTag {
        match tag {
            TagKind::None if is_null(text, plain, tag) => KeyTag::Null,
            TagKind::Other => KeyTag::Custom(custom.unwrap_or_default().to_owned()),
            kind if kind.allows_string() => KeyTag::Str,
            kind => KeyTag::of_kind(kind),
        }
    }

    /// The key type of a collection (`Seq` or `Map` unless a custom tag names it).
    pub(super) fn of_collection(node: NodeKind, tag: TagKind, custom: Option<&str>) -> KeyTag {
        match (tag, custom) {
            (TagKind::Other, Some(name)) => KeyTag::Custom(name.to_owned()),
            (TagKind::Map, Some("!map")) => KeyTag::Custom("!map".to_owned()),
            (TagKind::None | TagKind::NonSpecific | TagKind::Other, _) => match node {
                NodeKind::Sequence => KeyTag::Seq,
                _ => KeyTag::Map,
            },
            (kind, _) => KeyTag::of_kind(kind),
        }
    }

    fn of_kind(kind: TagKind) -> KeyTag {
        match kind {
            TagKind::Int => KeyTag::Int,
            TagKind::Float => KeyTag::Float,
            TagKind::Bool => KeyTag::Bool,
            TagKind::Null => KeyTag::Null,
            TagKind::Seq => KeyTag::Seq,
            TagKind::Map => KeyTag::Map,
            TagKind::Timestamp => KeyTag::Timestamp,
            TagKind::Binary => KeyTag::Binary,
            TagKind::Angle => KeyTag::Angle,
            _ => KeyTag::Str,
        }
    }
}

/// The key identity of a scalar.
pub(super) fn scalar_key<'a>(
    text: &Cow<'a, str>,
    plain: bool,
    tag: TagKind,
    custom: Option<&str>,
) -> KeyId<'a> {
    if tag == TagKind::Int || (tag == TagKind::None && plain) {
        let integer = if yaml_trim(text).starts_with('-') {
            signed(text).map(|number| (number < 0, number.unsigned_abs()))
        } else {
            unsigned_int(text).map(|number| (false, number))
        };
        if let Some((negative, magnitude)) = integer {
            return KeyId::Integer {
                negative,
                magnitude,
            };
        }
    }
    KeyId::Scalar {
        text: text.clone(),
        tag: KeyTag::of_scalar(text, plain, tag, custom),
    }
}
