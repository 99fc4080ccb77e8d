//! YAML as a tree of located nodes. serde-saphyr parses the text (with budgets against alias
//! bombs, deep nesting and oversized scalars); every node keeps its byte span so that the schema
//! layer can point at the exact value an author wrote. The schema itself is checked by hand in
//! [`crate::contract::raw`], which gives far better messages (did-you-mean, expected types) than
//! derived deserialisation would.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Budget, Options, Spanned};
use std::fmt;
use std::ops::Range;

/// Upper bound on the size of one YAML block (a contract or a front matter).
pub const MAX_YAML_BYTES: usize = 256 * 1024;

/// A YAML value with the byte span of its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    /// Byte span in the YAML text (for collections: the start of the collection).
    pub span: Range<usize>,
}

/// The value of a node.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Value {
    /// The YAML type name used in messages: "a string", "a mapping", …
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null (~)",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a sequence",
            Value::Map(_) => "a mapping",
        }
    }
}

impl Node {
    /// A canonical text of the value: independent of layout, quoting, comments and the order of
    /// a mapping's keys (sequences keep their order), so that
    /// hashing it identifies what a block says rather than how it is formatted. Mapping entries
    /// whose key is in `skip` are left out (at the top level only).
    pub fn canonical(&self, skip: &[&str]) -> String {
        let mut out = String::new();
        self.write_canonical(&mut out, skip);
        out
    }

    fn write_canonical(&self, out: &mut String, skip: &[&str]) {
        match &self.value {
            Value::Null => out.push('~'),
            Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
            Value::Int(number) => out.push_str(&number.to_string()),
            Value::Float(number) => out.push_str(&format!("{number:?}")),
            Value::Str(text) => out.push_str(&format!("{text:?}")),
            Value::Seq(items) => {
                out.push('[');
                for item in items {
                    item.write_canonical(out, &[]);
                    out.push(',');
                }
                out.push(']');
            }
            Value::Map(entries) => {
                // Keys in sorted order: reordering a mapping's keys does not change its text.
                let mut written: Vec<(String, String)> = entries
                    .iter()
                    .filter(|(key, _)| {
                        !matches!(&key.value, Value::Str(name) if skip.contains(&name.as_str()))
                    })
                    .map(|(key, value)| (key.canonical(&[]), value.canonical(&[])))
                    .collect();
                written.sort();
                out.push('{');
                for (key, value) in written {
                    out.push_str(&key);
                    out.push(':');
                    out.push_str(&value);
                    out.push(',');
                }
                out.push('}');
            }
        }
    }
}

/// Why a YAML block could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum YamlErrorKind {
    Syntax,
    Budget,
}

/// A YAML error located at a byte offset of the YAML text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub kind: YamlErrorKind,
    pub message: String,
    pub offset: usize,
}

/// Parses one YAML document into located nodes, within fixed budgets.
pub fn parse(text: &str) -> Result<Node, YamlError> {
    if text.len() > MAX_YAML_BYTES {
        return Err(YamlError {
            kind: YamlErrorKind::Budget,
            message: format!(
                "the YAML block is {} bytes; the limit is {MAX_YAML_BYTES} bytes",
                text.len()
            ),
            offset: 0,
        });
    }
    if let Some(offset) = indentation_tab(text) {
        return Err(YamlError {
            kind: YamlErrorKind::Syntax,
            message: "a tab is used for indentation; YAML indents with spaces only".to_owned(),
            offset,
        });
    }
    let spanned: Spanned<Raw> = serde_saphyr::from_str_with_options(text, options())
        .map_err(|e| convert_error(text, &e))?;
    let mut node = to_node(spanned);
    node.span.end = node.span.end.min(text.len());
    Ok(node)
}

fn options() -> Options {
    let mut budget = Budget::default();
    budget.max_depth = 32;
    budget.max_nodes = 20_000;
    budget.max_events = 100_000;
    budget.max_aliases = 64;
    budget.max_anchors = 64;
    budget.max_total_scalar_bytes = MAX_YAML_BYTES;
    budget.max_documents = 1;
    let mut options = Options::default();
    options.budget = Some(budget);
    options.with_snippet = false;
    options
}

/// A tab among the leading whitespace of a line (YAML forbids it; we say so plainly).
fn indentation_tab(text: &str) -> Option<usize> {
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        if let Some(tab) = line.get(..indent).and_then(|lead| lead.find('\t')) {
            return Some(line_start + tab);
        }
        line_start += line.len();
    }
    None
}

fn convert_error(text: &str, error: &serde_saphyr::Error) -> YamlError {
    let inner = error.without_snippet();
    let raw = inner.to_string();
    let message = reword(&strip_location_suffix(&raw));
    // A breach can come wrapped (with the alias that led to it); its message names it.
    let breached =
        matches!(inner, serde_saphyr::Error::Budget { .. }) || raw.contains("budget breached");
    let kind = if breached {
        YamlErrorKind::Budget
    } else {
        YamlErrorKind::Syntax
    };
    let offset = inner
        .location()
        .map_or(0, |location| location_offset(text, location));
    YamlError {
        kind,
        message,
        offset,
    }
}

/// Rewords the parser's messages that speak to its API rather than to an author.
fn reword(message: &str) -> String {
    if let Some(breach) = message.strip_prefix("budget breached: ") {
        return format!("the YAML block exceeds a resource budget ({breach})");
    }
    match message.strip_prefix("duplicate mapping key") {
        Some(rest) => {
            let key = rest
                .trim_start_matches(':')
                .split(", set DuplicateKeyPolicy")
                .next()
                .unwrap_or("")
                .trim();
            if key.is_empty() {
                "a key is written twice in the same mapping".to_owned()
            } else {
                format!("`{key}` is written twice in the same mapping")
            }
        }
        None => message.to_owned(),
    }
}

/// Drops a trailing " at line L, column C" that serde-saphyr appends: we show our own.
fn strip_location_suffix(message: &str) -> String {
    match message.find(" at line ") {
        Some(index) => message[..index].to_owned(),
        None => message.to_owned(),
    }
}

fn location_offset(text: &str, location: serde_saphyr::Location) -> usize {
    if let Some(byte) = location.span().byte_offset() {
        return usize::try_from(byte).unwrap_or(text.len()).min(text.len());
    }
    line_column_offset(text, location.line(), location.column())
}

/// Byte offset of a 1-based line and 1-based character column.
fn line_column_offset(text: &str, line: u64, column: u64) -> usize {
    let mut offset = 0;
    for (index, line_text) in text.split_inclusive('\n').enumerate() {
        if index as u64 + 1 == line {
            let skip = usize::try_from(column.saturating_sub(1)).unwrap_or(usize::MAX);
            return offset
                + line_text
                    .char_indices()
                    .nth(skip)
                    .map_or(line_text.trim_end_matches('\n').len(), |(i, _)| i);
        }
        offset += line_text.len();
    }
    text.len()
}

/// Deserialisation goes through `Raw` so that each child keeps its own `Spanned` location.
#[derive(Debug)]
enum Raw {
    Leaf(Value),
    Seq(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<Raw>, Spanned<Raw>)>),
}

/// Converts a located raw value (from a string source, so byte offsets are known) to a node.
fn to_node(spanned: Spanned<Raw>) -> Node {
    let span = spanned.referenced.span();
    let start = span
        .byte_offset()
        .and_then(|byte| usize::try_from(byte).ok())
        .unwrap_or(0);
    let len = span
        .byte_len()
        .and_then(|len| usize::try_from(len).ok())
        .unwrap_or(0);
    let value = match spanned.value {
        Raw::Leaf(value) => value,
        Raw::Seq(items) => Value::Seq(items.into_iter().map(to_node).collect()),
        Raw::Map(entries) => Value::Map(
            entries
                .into_iter()
                .map(|(key, value)| (to_node(key), to_node(value)))
                .collect(),
        ),
    };
    Node {
        value,
        span: start..start.saturating_add(len),
    }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Leaf(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Leaf(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Raw, D::Error> {
        Raw::deserialize(deserializer)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Leaf(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Leaf(Value::Int(i128::from(v))))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw::Leaf(Value::Int(i128::from(v))))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Raw, E> {
        Ok(Raw::Leaf(Value::Int(v)))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Raw, E> {
        Ok(Raw::Leaf(
            i128::try_from(v).map_or(Value::Float(v as f64), Value::Int),
        ))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Leaf(Value::Float(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Leaf(Value::Str(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Leaf(Value::Str(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Raw>>()? {
            items.push(item);
        }
        Ok(Raw::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<Raw>>()? {
            let value = map.next_value::<Spanned<Raw>>()?;
            entries.push((key, value));
        }
        Ok(Raw::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn map_entry<'a>(node: &'a Node, key: &str) -> &'a Node {
        let Value::Map(entries) = &node.value else {
            panic!("not a map: {node:?}")
        };
        &entries
            .iter()
            .find(|(k, _)| k.value == Value::Str(key.to_owned()))
            .unwrap()
            .1
    }

    #[test]
    fn every_value_keeps_its_byte_span() {
        let text =
            "kernel: conv2d\naccept:\n  inputs:\n    - name: x\n      rank: 4 # [N, C, H, W]\n";
        let root = parse(text).unwrap();
        let kernel = map_entry(&root, "kernel");
        assert_eq!(&text[kernel.span.clone()], "conv2d");
        let inputs = map_entry(map_entry(&root, "accept"), "inputs");
        let Value::Seq(items) = &inputs.value else {
            panic!()
        };
        let rank = map_entry(&items[0], "rank");
        assert_eq!(rank.value, Value::Int(4));
        assert_eq!(&text[rank.span.clone()], "4");
    }

    #[test]
    fn null_quoted_and_flow_values() {
        let text = "a: ~\nb: \"4\"\nc: { kind: \"[usize; 4]\" }\nd: [F32, F64]\n";
        let root = parse(text).unwrap();
        assert_eq!(map_entry(&root, "a").value, Value::Null);
        assert_eq!(map_entry(&root, "b").value, Value::Str("4".into()));
        let kind = map_entry(map_entry(&root, "c"), "kind");
        assert_eq!(&text[kind.span.clone()], "\"[usize; 4]\"");
    }

    #[test]
    fn canonical_text_ignores_layout_and_comments() {
        let a = parse("a: 1 # one\nb: { c: \"x\" }\nh: auto\n").unwrap();
        let b = parse("a: 1\nb:\n  c: x\nh: 12ab\n").unwrap();
        assert_eq!(a.canonical(&["h"]), b.canonical(&["h"]));
        assert_ne!(a.canonical(&[]), b.canonical(&[]));
    }

    #[test]
    fn canonical_text_ignores_key_order_but_not_sequence_order() {
        let a = parse("a: 1\nb: { c: x, d: [1, 2] }\n").unwrap();
        let b = parse("b: { d: [1, 2], c: x }\na: 1\n").unwrap();
        let c = parse("b: { d: [2, 1], c: x }\na: 1\n").unwrap();
        assert_eq!(a.canonical(&[]), b.canonical(&[]));
        assert_ne!(a.canonical(&[]), c.canonical(&[]));
    }

    #[test]
    fn tabs_are_reported_at_their_offset() {
        let error = parse("a:\n\tb: 1\n").unwrap_err();
        assert_eq!(error.kind, YamlErrorKind::Syntax);
        assert_eq!(error.offset, 3);
    }

    #[test]
    fn syntax_errors_are_located() {
        let text = "a: 1\nb: [1, 2\nc: 3\n";
        let error = parse(text).unwrap_err();
        assert_eq!(error.kind, YamlErrorKind::Syntax);
        assert!(error.offset >= 5, "{error:?}");
    }

    #[test]
    fn alias_bombs_hit_the_budget() {
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 0..9 {
            let prev = if level == 0 {
                'a'
            } else {
                (b'a' + level) as char
            };
            let next = (b'b' + level) as char;
            text.push_str(&format!(
                "{next}: &{next} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
        }
        let error = parse(&text).unwrap_err();
        assert_eq!(error.kind, YamlErrorKind::Budget, "{error:?}");
    }

    #[test]
    fn deep_nesting_is_refused_without_overflow() {
        let text = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
        assert!(parse(&text).is_err());
        let mut block = String::new();
        for depth in 0..20_000 {
            block.push_str(&" ".repeat(depth));
            block.push_str("a:\n");
        }
        assert!(parse(&block).is_err());
    }

    #[test]
    fn oversized_input_is_refused() {
        let text = format!("a: \"{}\"\n", "x".repeat(MAX_YAML_BYTES));
        assert_eq!(parse(&text).unwrap_err().kind, YamlErrorKind::Budget);
    }

    #[test]
    fn huge_numbers_do_not_panic() {
        let root = parse("a: 123456789012345678901234567890123456789012345\n").unwrap();
        assert!(matches!(
            map_entry(&root, "a").value,
            Value::Float(_) | Value::Str(_) | Value::Int(_)
        ));
    }
}
