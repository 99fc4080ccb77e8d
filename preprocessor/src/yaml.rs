//! YAML as a tree of located nodes. granit-parser reads the text into events; [`tree`] builds
//! the nodes from them in one pass, within [`budget`]s against alias bombs, deep nesting and
//! oversized input, keeping the written form of the nodes that need it ([`shadow`]: keys,
//! anchored nodes, merge values), and [`scalar`] gives each scalar its value. Every node keeps
//! its byte span so that the schema layer can point at the exact value an author wrote. The
//! schema itself is checked by hand in [`crate::contract::raw`], which gives far better messages
//! (did-you-mean, expected types) than derived deserialisation would.

mod budget;
mod scalar;
mod shadow;
mod tree;

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
    tree::build(text)
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

    /// The value of `a` in `a: <text>`.
    fn value_of(text: &str) -> Result<Value, YamlError> {
        parse(&format!("a: {text}\n")).map(|root| map_entry(&root, "a").value.clone())
    }

    #[test]
    fn plain_scalars_resolve_as_before() {
        let cases = [
            ("~", Value::Null),
            ("", Value::Null),
            ("Null", Value::Null),
            ("nULL", Value::Str("nULL".into())),
            ("yes", Value::Bool(true)),
            ("Off", Value::Bool(false)),
            ("n", Value::Bool(false)),
            ("12", Value::Int(12)),
            ("-0x1F", Value::Int(-31)),
            ("0o17", Value::Int(15)),
            ("0b101", Value::Int(5)),
            ("1_000", Value::Int(1000)),
            ("0X1F", Value::Str("0X1F".into())),
            ("007", Value::Float(7.0)),
            (
                "18446744073709551615",
                Value::Int(18_446_744_073_709_551_615),
            ),
            (
                "18446744073709551616",
                Value::Float(18_446_744_073_709_551_616.0),
            ),
            (
                "-9223372036854775809",
                Value::Float(-9_223_372_036_854_775_809.0),
            ),
            ("1e3", Value::Float(1000.0)),
            (".5", Value::Float(0.5)),
            ("+.nan", Value::Str("+.nan".into())),
            ("inf", Value::Str("inf".into())),
            ("12ab", Value::Str("12ab".into())),
            ("\"4\"", Value::Str("4".into())),
            ("'~'", Value::Str("~".into())),
            ("!!str 1", Value::Str("1".into())),
            ("! ~", Value::Str("~".into())),
            ("!!int \"7\"", Value::Int(7)),
            ("!!float 1", Value::Float(1.0)),
            ("!!null x", Value::Null),
            ("!custom 5", Value::Int(5)),
        ];
        for (text, expected) in cases {
            assert_eq!(value_of(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn impossible_values_are_syntax_errors_at_the_scalar() {
        for (text, message) in [
            (".inf", "non-finite float `.inf`"),
            ("-.Inf", "non-finite float `-.Inf`"),
            ("1e999", "non-finite float `1e999`"),
            ("!!int x", "invalid u64"),
            ("!!int -99999999999999999999", "invalid i64"),
            ("!!bool maybe", "invalid boolean"),
            ("!!float x", "invalid floating point"),
            ("!!timestamp 2001-12-14", "cannot deserialize tagged scalar"),
            ("!!seq x", "unsupported tag `!!seq`"),
            ("!!str [1]", "unsupported tag `!!str`"),
        ] {
            let error = value_of(text).unwrap_err();
            assert_eq!(error.kind, YamlErrorKind::Syntax, "{text}");
            assert!(error.message.starts_with(message), "{text}: {error:?}");
            // At the scalar (after its tag, if any).
            let tag = if text.starts_with('!') {
                text.find(' ').unwrap() + 1
            } else {
                0
            };
            assert_eq!(error.offset, 3 + tag, "{text}");
        }
    }

    #[test]
    fn aliases_are_copied_and_located_at_the_alias() {
        let text = "x: &a [1, {k: v}]\ncopy: *a\n";
        let root = parse(text).unwrap();
        let copy = map_entry(&root, "copy");
        assert_eq!(copy.canonical(&[]), map_entry(&root, "x").canonical(&[]));
        let mut spans = vec![copy.span.clone()];
        if let Value::Seq(items) = &copy.value {
            spans.extend(items.iter().map(|item| item.span.clone()));
        }
        assert!(
            spans.iter().all(|span| &text[span.clone()] == "*a"),
            "{spans:?}"
        );
        let error = parse("x: &a [1, *a]\n").unwrap_err();
        assert_eq!((error.kind, error.offset), (YamlErrorKind::Syntax, 10));
        let error = parse("x: *nothing\n").unwrap_err();
        assert_eq!((error.kind, error.offset), (YamlErrorKind::Syntax, 3));
    }

    #[test]
    fn merge_keys_add_the_entries_not_written() {
        let text = "base: &b {x: 1, z: 2}\nd:\n  z: 3\n  <<: *b\n";
        let root = parse(text).unwrap();
        let Value::Map(entries) = &map_entry(&root, "d").value else {
            panic!()
        };
        let written: Vec<(Value, Value, &str)> = entries
            .iter()
            .map(|(k, v)| (k.value.clone(), v.value.clone(), &text[k.span.clone()]))
            .collect();
        assert_eq!(
            written,
            [
                (Value::Str("z".into()), Value::Int(3), "z"),
                (Value::Str("x".into()), Value::Int(1), "*b"),
            ]
        );
        let root = parse("d: {<<: [{a: 1}, {a: 2, b: 3}], c: 4}\n").unwrap();
        assert_eq!(
            map_entry(&root, "d").canonical(&[]),
            "{\"a\":1,\"b\":3,\"c\":4,}"
        );
        let error = parse("d: {<<: [{a: 1}, 5]}\n").unwrap_err();
        assert_eq!((error.kind, error.offset), (YamlErrorKind::Syntax, 17));
    }

    #[test]
    fn a_repeated_key_is_reported_at_its_second_writing() {
        for (text, name, offset) in [
            ("a: 1\nb: 2\na: 3\n", "`a`", 10),
            ("'a': 1\n\"a\": 2\n", "`a`", 7),
            ("1: a\n0x1: b\n", "`0x1`", 5),
            ("[1]: a\n[1]: b\n", "a key", 7),
        ] {
            let error = parse(text).unwrap_err();
            assert_eq!(error.kind, YamlErrorKind::Syntax, "{text}");
            assert_eq!(error.offset, offset, "{text}");
            assert!(error.message.starts_with(name), "{text}: {}", error.message);
            assert!(error.message.ends_with("written twice in the same mapping"));
        }
        // Same value, different writing: not the same key.
        assert!(parse("true: a\nTrue: b\n1: c\n\"1\": d\n").is_ok());
    }

    #[test]
    fn each_budget_is_enforced() {
        let budget = |text: String, message: &str| {
            let error = parse(&text).unwrap_err();
            assert_eq!(error.kind, YamlErrorKind::Budget, "{error:?}");
            assert!(error.message.contains(message), "{error:?}");
        };
        budget(
            format!("[{}]\n", vec!["x"; 20_000].join(", ")),
            "Nodes { nodes: 20001 }",
        );
        budget(
            format!("a: {}{}\n", "[".repeat(32), "]".repeat(32)),
            "Depth { depth: 33 }",
        );
        budget(
            format!("a: &a x\nb: [{}]\n", vec!["*a"; 65].join(", ")),
            "Aliases { aliases: 65 }",
        );
        budget(
            format!(
                "[{}]\n",
                (0..65)
                    .map(|i| format!("&a{i} x"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "Anchors { anchors: 65 }",
        );
        budget("a: 1\n---\nb: 2\n".to_owned(), "Documents { documents: 2 }");
        let big = "x".repeat(100_000);
        budget(format!("a: &a {big}\nb: [*a, *a]\n"), "ScalarBytes");
        assert!(parse(&format!("[{}]\n", vec!["x"; 19_999].join(", "))).is_ok());
        assert!(parse(&format!("a: {}{}\n", "[".repeat(31), "]".repeat(31))).is_ok());
    }

    #[test]
    fn an_empty_block_is_null() {
        for text in ["", "\n", "# only a comment\n", "---\n"] {
            assert_eq!(parse(text).unwrap().value, Value::Null, "{text:?}");
        }
    }
}
