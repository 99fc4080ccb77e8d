//! Reading located YAML nodes against a schema, by hand: each reader checks one shape (a mapping
//! with known keys, a string, an integer, one of a set of words) and, when the author wrote
//! something else, records a diagnostic at the exact value and carries on, so that one build
//! reports every problem in a contract at once.

use super::comments::Comments;
use crate::diag::{Code, Diagnostic, did_you_mean};
use crate::source::SourceFile;
use crate::yaml::{Node, Value};
use std::ops::Range;
use std::sync::Arc;

/// A value with the span of its text in the author's file and the YAML comment on its line.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    pub value: T,
    pub span: Range<usize>,
    pub comment: Option<String>,
}

impl<T> Located<T> {
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Located<U> {
        Located {
            value: f(self.value),
            span: self.span,
            comment: self.comment,
        }
    }
}

/// A field whose `~` is meaningful ("not authored"): `None` inside means `~`.
pub type Nullable<T> = Option<Located<Option<T>>>;

/// Where a YAML block sits: its file and how its offsets map into that file.
pub struct Origin<'a> {
    pub source: &'a Arc<SourceFile>,
    pub yaml: &'a str,
    pub to_file: &'a dyn Fn(usize) -> usize,
}

impl std::fmt::Debug for Origin<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Origin")
            .field("source", &self.source.path)
            .finish()
    }
}

/// Reads nodes, collecting diagnostics.
#[derive(Debug)]
pub struct Reader<'a> {
    origin: Origin<'a>,
    comments: Comments,
    /// Byte offsets where each line of the YAML block starts.
    line_starts: Vec<usize>,
    /// Sections whose fields were found flattened to the parent level (reported once).
    flattened: Vec<String>,
    pub errors: Vec<Diagnostic>,
}

/// The entries of a mapping whose keys were checked against the allowed set.
#[derive(Debug)]
pub struct Fields<'n> {
    pub node: &'n Node,
    entries: Vec<(&'n str, &'n Node, &'n Node)>,
}

impl<'n> Fields<'n> {
    /// The value of a key, if present.
    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(name, _, _)| *name == key)
            .map(|(_, _, value)| *value)
    }

    /// The node of a key itself (to point at a key rather than its value).
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn key(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(name, _, _)| *name == key)
            .map(|(_, key, _)| *key)
    }

    /// All (key, key node, value) entries in order.
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn entries(&self) -> impl Iterator<Item = (&'n str, &'n Node, &'n Node)> + '_ {
        self.entries.iter().copied()
    }
}

impl<'a> Reader<'a> {
    pub fn new(origin: Origin<'a>) -> Self {
        let comments = Comments::scan(origin.yaml);
        let line_starts = std::iter::once(0)
            .chain(origin.yaml.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Reader {
            origin,
            comments,
            line_starts,
            flattened: Vec::new(),
            errors: Vec::new(),
        }
    }

    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn source(&self) -> &Arc<SourceFile> {
        self.origin.source
    }

    /// Maps a span of the YAML block to the author's file.
    pub fn file_span(&self, span: &Range<usize>) -> Range<usize> {
        let start = (self.origin.to_file)(span.start);
        let end = (self.origin.to_file)(span.end.max(span.start));
        start..end.max(start)
    }

    /// Maps an offset of the YAML block to the author's file.
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn file_offset(&self, offset: usize) -> usize {
        (self.origin.to_file)(offset)
    }

    fn comment_at(&self, offset: usize) -> Option<String> {
        let line = self
            .line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1);
        self.comments.on_line(line).map(str::to_owned)
    }

    /// Wraps a value read from `node` with its file span and comment.
    pub fn located<T>(&self, node: &Node, value: T) -> Located<T> {
        Located {
            value,
            span: self.file_span(&node.span),
            comment: self.comment_at(node.span.start),
        }
    }

    /// Records an error at a node.
    pub fn error_at(
        &mut self,
        code: Code,
        node: &Node,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        let span = self.file_span(&node.span);
        let source = Arc::clone(self.origin.source);
        self.push(Diagnostic::error(code, &source, span, message))
    }

    /// Records a diagnostic and returns it for decoration.
    pub fn push(&mut self, diagnostic: Diagnostic) -> &mut Diagnostic {
        self.errors.push(diagnostic);
        let last = self.errors.len() - 1;
        &mut self.errors[last]
    }

    /// Reports a field of the wrong type: `what` must be `expected`.
    pub fn wrong_type(&mut self, node: &Node, what: &str, expected: &str) {
        let found = node.value.type_name();
        let diagnostic = self.error_at(
            Code::WrongType,
            node,
            format!("`{what}` must be {expected}, found {found}"),
        );
        diagnostic.label = Some(format!("expected {expected}"));
        diagnostic.help.push(format!(
            "write {expected} here (the format reference lists every field's type)"
        ));
    }

    /// Reads a mapping, reporting keys outside `allowed` (with a did-you-mean).
    pub fn mapping<'n>(
        &mut self,
        node: &'n Node,
        what: &str,
        allowed: &[&str],
    ) -> Option<Fields<'n>> {
        self.mapping_with_sections(node, what, allowed, &[])
    }

    /// Like [`Reader::mapping`], but recognises fields of a child section written at this level
    /// (the section's indentation was lost, as in a pasted document) and says so once per
    /// section instead of once per field.
    pub fn mapping_with_sections<'n>(
        &mut self,
        node: &'n Node,
        what: &str,
        allowed: &[&str],
        sections: &[(&str, &[&str])],
    ) -> Option<Fields<'n>> {
        let Value::Map(entries) = &node.value else {
            self.wrong_type(node, what, "a mapping");
            return None;
        };
        let empty_section = |name: &str| {
            entries
                .iter()
                .any(|(key, value)| key_text(key) == name && value.value == Value::Null)
        };
        let mut fields = Fields {
            node,
            entries: Vec::new(),
        };
        let mut strays: Vec<(&str, Vec<&'n Node>)> = Vec::new();
        for (key, value) in entries {
            let Value::Str(name) = &key.value else {
                self.wrong_type(key, &format!("a key of {what}"), "a string");
                continue;
            };
            if allowed.contains(&name.as_str()) {
                fields.entries.push((name.as_str(), key, value));
                continue;
            }
            let section = sections
                .iter()
                .find(|(section, children)| {
                    children.contains(&name.as_str()) && empty_section(section)
                })
                .map(|(section, _)| *section);
            match section {
                Some(section) => match strays.iter_mut().find(|(s, _)| *s == section) {
                    Some((_, keys)) => keys.push(key),
                    None => strays.push((section, vec![key])),
                },
                None => self.unknown_field(key, name, what, allowed),
            }
        }
        for (section, keys) in &strays {
            self.flattened_section(section, keys);
        }
        Some(fields)
    }

    fn flattened_section(&mut self, section: &str, keys: &[&Node]) {
        let Some(first) = keys.first() else { return };
        let names: Vec<String> = keys.iter().map(|k| format!("`{}`", key_text(k))).collect();
        let mut diagnostic = Diagnostic::error(
            Code::UnknownField,
            self.origin.source,
            self.file_span(&first.span),
            format!("the fields of `{section}` lost their indentation"),
        )
        .with_label(format!("this belongs under `{section}:`"))
        .with_help(format!(
            "indent {} by two spaces under `{section}:` (YAML nesting is written with indentation)",
            names.join(", ")
        ));
        for key in keys.iter().skip(1).take(4) {
            diagnostic = diagnostic.with_secondary(
                self.file_span(&key.span),
                format!("also under `{section}:`"),
            );
        }
        self.errors.push(diagnostic);
        self.flattened.push(section.to_owned());
    }

    fn unknown_field(&mut self, key: &Node, name: &str, what: &str, allowed: &[&str]) {
        let suggestion = did_you_mean(name, allowed.iter().copied());
        let diagnostic = self.error_at(
            Code::UnknownField,
            key,
            format!("unknown field `{name}` in {what}"),
        );
        diagnostic.label = Some("not a field of the FKC format here".to_owned());
        diagnostic.help.push(match suggestion {
            Some(known) => format!("did you mean `{known}`?"),
            None => format!("the fields of {what} are: {}", allowed.join(", ")),
        });
    }

    /// A required field: reports its absence at the mapping.
    pub fn required<'n>(&mut self, fields: &Fields<'n>, key: &str, what: &str) -> Option<&'n Node> {
        let found = fields.get(key).filter(|node| node.value != Value::Null);
        if found.is_none() && !self.flattened.iter().any(|section| section == key) {
            let diagnostic = self.error_at(
                Code::MissingField,
                fields.node,
                format!("{what} has no `{key}`"),
            );
            diagnostic.help.push(format!("add `{key}:` to {what}"));
        }
        found
    }

    /// A string scalar (numbers and booleans are not silently turned into strings).
    pub fn string(&mut self, node: &Node, what: &str) -> Option<Located<String>> {
        match &node.value {
            Value::Str(text) => Some(self.located(node, text.clone())),
            _ => {
                self.wrong_type(node, what, "a string");
                None
            }
        }
    }

    /// An expression: a string, or an integer literal (written as its decimal text).
    pub fn expression(&mut self, node: &Node, what: &str) -> Option<Located<String>> {
        match &node.value {
            Value::Int(number) => Some(self.located(node, number.to_string())),
            Value::Str(text) => Some(self.located(node, text.clone())),
            _ => {
                self.wrong_type(node, what, "an expression (a string or an integer)");
                None
            }
        }
    }

    pub fn boolean(&mut self, node: &Node, what: &str) -> Option<Located<bool>> {
        match node.value {
            Value::Bool(flag) => Some(self.located(node, flag)),
            _ => {
                self.wrong_type(node, what, "`true` or `false`");
                None
            }
        }
    }

    /// A non-negative integer that fits in u64.
    pub fn unsigned(&mut self, node: &Node, what: &str) -> Option<Located<u64>> {
        match node.value {
            Value::Int(number) => match u64::try_from(number) {
                Ok(number) => Some(self.located(node, number)),
                Err(_) => {
                    self.error_at(
                        Code::InvalidValue,
                        node,
                        format!("`{what}` must be between 0 and {}", u64::MAX),
                    )
                    .help
                    .push(format!("write a non-negative `{what}`"));
                    None
                }
            },
            _ => {
                self.wrong_type(node, what, "a non-negative integer");
                None
            }
        }
    }

    /// A finite non-negative number.
    pub fn number(&mut self, node: &Node, what: &str) -> Option<Located<f64>> {
        let value = match node.value {
            Value::Int(number) => number as f64,
            Value::Float(number) => number,
            _ => {
                self.wrong_type(node, what, "a number");
                return None;
            }
        };
        if value.is_finite() && value >= 0.0 {
            Some(self.located(node, value))
        } else {
            self.error_at(
                Code::InvalidValue,
                node,
                format!("`{what}` must be a finite, non-negative number"),
            )
            .help
            .push(format!(
                "write `{what}` as a number such as 0.5 or 1e-6, or `~`"
            ));
            None
        }
    }

    /// A sequence.
    pub fn sequence<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [Node]> {
        match &node.value {
            Value::Seq(items) => Some(items),
            _ => {
                self.wrong_type(node, what, "a sequence");
                None
            }
        }
    }

    /// One word of a fixed set (`required`, `accepted`, `rejected`, …).
    pub fn word<T: Copy>(
        &mut self,
        node: &Node,
        what: &str,
        words: &[(&str, T)],
    ) -> Option<Located<T>> {
        let text = self.string(node, what)?;
        if let Some((_, value)) = words.iter().find(|(word, _)| *word == text.value) {
            return Some(text.map(|_| *value));
        }
        let names: Vec<&str> = words.iter().map(|(word, _)| *word).collect();
        let suggestion = did_you_mean(&text.value, names.iter().copied());
        let diagnostic = self.error_at(
            Code::InvalidValue,
            node,
            format!("`{}` is not a valid {what}", text.value),
        );
        diagnostic.label = Some(format!("expected one of: {}", names.join(", ")));
        if let Some(known) = suggestion {
            diagnostic.help.push(format!("did you mean `{known}`?"));
        } else {
            diagnostic
                .help
                .push(format!("write one of: {}", names.join(", ")));
        }
        None
    }

    /// One word of a fixed set, kept as text.
    pub fn one_of(&mut self, node: &Node, what: &str, words: &[&str]) -> Option<Located<String>> {
        let pairs: Vec<(&str, usize)> = words.iter().copied().zip(0..).collect();
        let index = self.word(node, what, &pairs)?;
        Some(index.map(|index| words.get(index).copied().unwrap_or_default().to_owned()))
    }

    /// An optional field read with `read`; `~` counts as absent.
    pub fn optional<T>(
        &mut self,
        fields: &Fields<'_>,
        key: &str,
        read: impl FnOnce(&mut Self, &Node) -> Option<T>,
    ) -> Option<T> {
        let node = fields.get(key).filter(|node| node.value != Value::Null)?;
        read(self, node)
    }

    /// A field where `~` means "not authored" and is kept as such.
    pub fn nullable<T>(
        &mut self,
        fields: &Fields<'_>,
        key: &str,
        read: impl FnOnce(&mut Self, &Node) -> Option<Located<T>>,
    ) -> Nullable<T> {
        let node = fields.get(key)?;
        if node.value == Value::Null {
            return Some(self.located(node, None));
        }
        read(self, node).map(|located| located.map(Some))
    }
}

fn key_text(key: &Node) -> &str {
    match &key.value {
        Value::Str(text) => text,
        _ => "",
    }
}
