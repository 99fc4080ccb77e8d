//! Builds the located tree from granit-parser's events in one pass with an explicit stack (so
//! nesting never recurses), within fixed budgets. It expands aliases (each copy located at its
//! `*alias`), applies merge keys (`<<`: explicit keys first, then each merged mapping in turn;
//! merged entries are located at their merge value) and refuses duplicate keys.
//!
//! Beside a node whose written form matters later, the builder keeps its [`Shadow`]: for a
//! mapping key (duplicate detection compares keys as written: `true` and `True` differ), an
//! anchored node (an alias copies it from its shadow, charging the budgets as it goes) and a
//! merge value.

use super::budget::{Breach, Counts, MAX_ALIASES, MAX_ANCHORS, MAX_DEPTH, MAX_DOCUMENTS, Size};
use super::scalar::{self, KeyId, KeyTag, NodeKind, TagKind};
use super::shadow::{Merged, Shadow, Shape, Written, merge_entries};
use super::{Node, Value, YamlError, YamlErrorKind};
use granit_parser::{ErrorKind, Event, Parser, ScalarStyle, ScanError, Span, Tag};
use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;
use std::rc::Rc;

/// A mapping with more keys than this finds repeated keys with a hash set.
const HASHED_KEYS: usize = 32;

const MERGE_VALUE: &str = "YAML merge value must be mapping or sequence of mappings";

/// Parses `text` (one document) into its tree.
pub(super) fn build(text: &str) -> Result<Node, YamlError> {
    let mut options = granit_parser::Options::default();
    options.set_emit_comments(false);
    let mut builder = Builder {
        text,
        frames: Vec::new(),
        keys: Vec::new(),
        root: None,
        anchors: Vec::new(),
        counts: Counts::default(),
        stream_end: 0..0,
    };
    for item in Parser::new_from_str_with_options(text, options) {
        let (event, span) = item.map_err(|error| scan_error(text, &error))?;
        builder.event(event, &span)?;
    }
    let mut root = builder.root.unwrap_or(Node {
        value: Value::Null,
        span: builder.stream_end,
    });
    root.span.end = root.span.end.min(text.len());
    Ok(root)
}

/// A completed node on its way to its parent.
struct Done<'a> {
    node: Node,
    /// Present when the parent needs it.
    shadow: Option<Shadow<'a>>,
    /// For a scalar key: already checked, and whether it is `<<`.
    merge_key: Option<bool>,
}

/// An open sequence or mapping.
struct Frame<'a> {
    span: Range<usize>,
    anchor: usize,
    /// Children keep their shadows (this node's own shadow is needed).
    shadowed: bool,
    /// Its key type, for its shadow (unused unless shadowed).
    key_tag: KeyTag,
    /// A sequence given as a merge value (or inside one): its scalars must be null.
    merge_source: bool,
    body: Body<'a>,
}

enum Body<'a> {
    Seq {
        items: Vec<Node>,
        shadows: Vec<Shadow<'a>>,
    },
    Map(Box<MapBody<'a>>),
}

struct MapBody<'a> {
    entries: Vec<(Node, Node)>,
    shadows: Vec<(Shadow<'a>, Shadow<'a>)>,
    /// Where this mapping's keys start in [`Builder::keys`] (until they are hashed).
    keys_from: usize,
    hashed: Option<HashSet<KeyId<'a>>>,
    /// The key waiting for its value.
    key: Option<PendingKey<'a>>,
    /// Entries of merge values, in order; applied at the end where no key is already present.
    merged: Vec<Merged<'a>>,
}

struct PendingKey<'a> {
    node: Node,
    shadow: Option<Shadow<'a>>,
    merge: bool,
}

/// An anchor by granit's id: `None` while its node is still open.
struct Anchor<'a> {
    id: usize,
    defined: Option<(Rc<Shadow<'a>>, Size)>,
}

struct Builder<'t, 'a> {
    text: &'t str,
    frames: Vec<Frame<'a>>,
    /// The keys of the open mappings, innermost last.
    keys: Vec<KeyId<'a>>,
    root: Option<Node>,
    anchors: Vec<Anchor<'a>>,
    counts: Counts,
    stream_end: Range<usize>,
}

impl<'a> Builder<'_, 'a> {
    fn event(&mut self, event: Event<'a>, span: &Span) -> Result<(), YamlError> {
        let span = byte_range(span);
        let at = span.start;
        self.counted(Counts::event, at)?;
        match event {
            Event::Scalar(text, style, anchor, tag) => self.scalar(text, style, anchor, tag, span),
            Event::SequenceStart(_, anchor, tag) => {
                self.start(NodeKind::Sequence, anchor, tag, span)
            }
            Event::MappingStart(_, anchor, tag) => self.start(NodeKind::Mapping, anchor, tag, span),
            Event::SequenceEnd | Event::MappingEnd => self.end(),
            Event::Alias(id) => self.alias(id, span),
            Event::DocumentStart(..) => {
                self.counts.documents += 1;
                let documents = self.counts.documents;
                if documents > MAX_DOCUMENTS {
                    return Err(self.breach(Breach::Documents { documents }, at));
                }
                Ok(())
            }
            Event::StreamEnd => {
                self.stream_end = span;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A node's properties: its text (`text_bytes`) and tag counted against the scalar budget,
    /// its anchor defined, its tag checked against the kind of node; the tag's kind.
    fn properties(
        &mut self,
        node: NodeKind,
        text_bytes: usize,
        anchor: usize,
        tag: Option<&Tag>,
        at: usize,
    ) -> Result<TagKind, YamlError> {
        let tag_bytes = tag.map_or(0, tag_len);
        self.counted(|counts| counts.scalar_bytes(text_bytes + tag_bytes), at)?;
        self.define_anchor(anchor, at)?;
        let kind = tag.map_or(TagKind::None, TagKind::of);
        if let Some(tag) = tag {
            kind.check_node(node, tag)
                .map_err(|error| self.syntax(error.to_string(), at))?;
        }
        Ok(kind)
    }

    fn scalar(
        &mut self,
        text: Cow<'a, str>,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<Cow<'_, Tag>>,
        span: Range<usize>,
    ) -> Result<(), YamlError> {
        let at = span.start;
        self.counted(Counts::node, at)?;
        let kind = self.properties(NodeKind::Scalar, text.len(), anchor, tag.as_deref(), at)?;
        let plain = style == ScalarStyle::Plain;
        let shadow = (anchor != 0 || self.needs_shadow()).then(|| Shadow {
            start: at,
            alias: false,
            shape: Shape::Scalar(Written {
                text: text.clone(),
                plain,
                tag: kind,
                custom: tag
                    .as_deref()
                    .filter(|_| kind == TagKind::Other)
                    .map(Tag::to_string),
            }),
        });
        let merge_key = match (self.expects_key(), &shadow) {
            (true, Some(shadow)) => Some(self.accept_key(shadow)?),
            _ => None,
        };
        let value = if self.in_merge_value() {
            if !scalar::is_null(&text, plain, kind) {
                return Err(self.syntax(MERGE_VALUE.to_owned(), at));
            }
            Value::Null
        } else {
            scalar::resolve(text, plain, kind)
                .map_err(|error| self.syntax(error.to_string(), at))?
        };
        let shadow = self.anchored(anchor, shadow);
        self.deliver(Done {
            node: Node { value, span },
            shadow,
            merge_key,
        })
    }

    fn start(
        &mut self,
        node: NodeKind,
        anchor: usize,
        tag: Option<Cow<'_, Tag>>,
        span: Range<usize>,
    ) -> Result<(), YamlError> {
        let at = span.start;
        self.counted(Counts::node, at)?;
        let depth = self.frames.len() + 1;
        if depth > MAX_DEPTH {
            return Err(self.breach(Breach::Depth { depth }, at));
        }
        let kind = self.properties(node, 0, anchor, tag.as_deref(), at)?;
        let shadowed = anchor != 0 || self.needs_shadow();
        let key_tag = if shadowed {
            let custom = tag
                .as_deref()
                .filter(|_| matches!(kind, TagKind::Other | TagKind::Map))
                .map(Tag::to_string);
            KeyTag::of_collection(node, kind, custom.as_deref())
        } else {
            KeyTag::Str
        };
        let merge_source = node == NodeKind::Sequence && self.in_merge_value();
        let body = match node {
            NodeKind::Mapping => Body::Map(Box::new(MapBody {
                entries: Vec::new(),
                shadows: Vec::new(),
                keys_from: self.keys.len(),
                hashed: None,
                key: None,
                merged: Vec::new(),
            })),
            _ => Body::Seq {
                items: Vec::new(),
                shadows: Vec::new(),
            },
        };
        self.frames.push(Frame {
            span,
            anchor,
            shadowed,
            key_tag,
            merge_source,
            body,
        });
        Ok(())
    }

    fn end(&mut self) -> Result<(), YamlError> {
        let Some(frame) = self.frames.pop() else {
            return Ok(());
        };
        let (value, shape) = match frame.body {
            Body::Seq { items, shadows } => (
                Value::Seq(items),
                Shape::Seq {
                    tag: frame.key_tag,
                    items: shadows,
                },
            ),
            Body::Map(map) => {
                let MapBody {
                    mut entries,
                    mut shadows,
                    keys_from,
                    mut hashed,
                    merged,
                    ..
                } = *map;
                for Merged {
                    id,
                    entry,
                    shadows: entry_shadows,
                } in merged
                {
                    if insert_key(&mut self.keys, keys_from, &mut hashed, id) {
                        entries.push(entry);
                        if frame.shadowed {
                            shadows.push(entry_shadows);
                        }
                    }
                }
                self.keys.truncate(keys_from);
                (
                    Value::Map(entries),
                    Shape::Map {
                        tag: frame.key_tag,
                        entries: shadows,
                    },
                )
            }
        };
        let shadow = frame.shadowed.then_some(Shadow {
            start: frame.span.start,
            alias: false,
            shape,
        });
        let shadow = self.anchored(frame.anchor, shadow);
        self.deliver(Done {
            node: Node {
                value,
                span: frame.span,
            },
            shadow,
            merge_key: None,
        })
    }

    fn alias(&mut self, id: usize, span: Range<usize>) -> Result<(), YamlError> {
        let at = span.start;
        self.counts.aliases += 1;
        if self.counts.aliases > MAX_ALIASES {
            let aliases = self.counts.aliases;
            return Err(self.breach(Breach::Aliases { aliases }, at));
        }
        let (defined, size) = match self.anchors.iter().rev().find(|anchor| anchor.id == id) {
            Some(Anchor {
                defined: Some((defined, size)),
                ..
            }) => (Rc::clone(defined), *size),
            Some(_) => {
                return Err(self.syntax(
                    "recursive references require weak recursion types".to_owned(),
                    at,
                ));
            }
            None => return Err(self.syntax("alias references unknown anchor".to_owned(), at)),
        };
        let depth = self.frames.len();
        let copied = if self.counts.fits(&size, depth) {
            self.counts.copy(&defined, depth, &span)
        } else {
            // Too big: find the first budget it breaks without building it.
            self.counts
                .replay(&defined, depth)
                .and_then(|()| self.counts.copy(&defined, depth, &span))
        };
        let node = copied.map_err(|breach| self.breach(breach, at))?;
        if self.in_merge_value()
            && let Some(offset) = defined.merge_error()
        {
            return Err(self.syntax(MERGE_VALUE.to_owned(), offset));
        }
        let shadow = self.needs_shadow().then(|| Shadow {
            start: defined.start,
            alias: true,
            shape: Shape::Shared(defined),
        });
        self.deliver(Done {
            node,
            shadow,
            merge_key: None,
        })
    }

    /// Hands a completed node to its parent (or makes it the root).
    fn deliver(&mut self, done: Done<'a>) -> Result<(), YamlError> {
        let merge_key = match (self.expects_key(), done.merge_key, &done.shadow) {
            (true, None, Some(shadow)) => Some(self.accept_key(shadow)?),
            _ => done.merge_key,
        };
        let Some(frame) = self.frames.last_mut() else {
            self.root.get_or_insert(done.node);
            return Ok(());
        };
        let shadowed = frame.shadowed;
        match &mut frame.body {
            Body::Seq { items, shadows } => {
                items.push(done.node);
                if let (true, Some(shadow)) = (shadowed, done.shadow) {
                    shadows.push(shadow);
                }
            }
            Body::Map(map) => match map.key.take() {
                None => {
                    map.key = Some(PendingKey {
                        node: done.node,
                        shadow: done.shadow.filter(|_| shadowed),
                        merge: merge_key.unwrap_or(false),
                    });
                }
                Some(PendingKey { merge: true, .. }) => {
                    let Some(shadow) = done.shadow else {
                        return Ok(());
                    };
                    merge_entries(done.node, &shadow, None, &mut map.merged)
                        .map_err(|offset| syntax(self.text, MERGE_VALUE.to_owned(), offset))?;
                }
                Some(key) => {
                    if let (true, Some(key_shadow), Some(value_shadow)) =
                        (shadowed, key.shadow, done.shadow)
                    {
                        map.shadows.push((key_shadow, value_shadow));
                    }
                    map.entries.push((key.node, done.node));
                }
            },
        }
        Ok(())
    }

    /// Checks a new key of the innermost mapping; returns whether it is a merge key `<<`.
    fn accept_key(&mut self, shadow: &Shadow<'a>) -> Result<bool, YamlError> {
        if shadow.is_merge_key() {
            return Ok(true);
        }
        let Some(Frame {
            body: Body::Map(map),
            ..
        }) = self.frames.last_mut()
        else {
            return Ok(false);
        };
        if insert_key(&mut self.keys, map.keys_from, &mut map.hashed, shadow.key()) {
            return Ok(false);
        }
        let name = shadow
            .scalar()
            .filter(|written| written.tag.allows_string())
            .map(|written| written.text.trim())
            .filter(|name| !name.is_empty());
        let message = match name {
            Some(name) => format!("`{name}` is written twice in the same mapping"),
            None => "a key is written twice in the same mapping".to_owned(),
        };
        Err(syntax(self.text, message, shadow.start))
    }

    /// The innermost mapping waits for a key.
    fn expects_key(&self) -> bool {
        matches!(self.frames.last(), Some(Frame { body: Body::Map(map), .. }) if map.key.is_none())
    }

    /// The next node is a merge value or lies in a sequence given as one.
    fn in_merge_value(&self) -> bool {
        match self.frames.last() {
            Some(Frame {
                body: Body::Map(map),
                ..
            }) => map.key.as_ref().is_some_and(|key| key.merge),
            Some(frame) => frame.merge_source,
            None => false,
        }
    }

    /// The next node's parent needs its shadow.
    fn needs_shadow(&self) -> bool {
        match self.frames.last() {
            Some(frame) => {
                frame.shadowed
                    || matches!(&frame.body, Body::Map(map)
                        if map.key.as_ref().is_none_or(|key| key.merge))
            }
            None => false,
        }
    }

    /// Counts an anchor definition (`&name`) and marks it open.
    fn define_anchor(&mut self, id: usize, at: usize) -> Result<(), YamlError> {
        if id == 0 || self.anchors.iter().any(|anchor| anchor.id == id) {
            return Ok(());
        }
        self.anchors.push(Anchor { id, defined: None });
        if self.anchors.len() > MAX_ANCHORS {
            let anchors = self.anchors.len();
            return Err(self.breach(Breach::Anchors { anchors }, at));
        }
        Ok(())
    }

    /// Records a completed anchored node's shadow; the parent shares it if it needs it.
    fn anchored(&mut self, id: usize, shadow: Option<Shadow<'a>>) -> Option<Shadow<'a>> {
        if id == 0 {
            return shadow;
        }
        let needed = self.needs_shadow();
        let anchor = self
            .anchors
            .iter_mut()
            .rev()
            .find(|anchor| anchor.id == id)?;
        let shared = Rc::new(shadow?);
        anchor.defined = Some((Rc::clone(&shared), Size::of(&shared)));
        needed.then(|| Shadow {
            start: shared.start,
            alias: false,
            shape: Shape::Shared(shared),
        })
    }

    fn counted(
        &mut self,
        count: impl FnOnce(&mut Counts) -> Result<(), Breach>,
        at: usize,
    ) -> Result<(), YamlError> {
        count(&mut self.counts).map_err(|breach| self.breach(breach, at))
    }

    fn breach(&self, breach: Breach, at: usize) -> YamlError {
        YamlError {
            kind: YamlErrorKind::Budget,
            message: format!("the YAML block exceeds a resource budget ({breach})"),
            offset: at.min(self.text.len()),
        }
    }

    fn syntax(&self, message: String, at: usize) -> YamlError {
        syntax(self.text, message, at)
    }
}

/// Adds a key to a mapping's keys (`keys[from..]`, or `hashed` once it grows); false if the
/// mapping already has it.
fn insert_key<'a>(
    keys: &mut Vec<KeyId<'a>>,
    from: usize,
    hashed: &mut Option<HashSet<KeyId<'a>>>,
    id: KeyId<'a>,
) -> bool {
    if let Some(set) = hashed.as_mut() {
        return set.insert(id);
    }
    if keys.get(from..).is_some_and(|mine| mine.contains(&id)) {
        return false;
    }
    keys.push(id);
    if keys.len().saturating_sub(from) > HASHED_KEYS {
        *hashed = Some(keys.drain(from.min(keys.len())..).collect());
    }
    true
}

fn syntax(text: &str, message: String, at: usize) -> YamlError {
    YamlError {
        kind: YamlErrorKind::Syntax,
        message,
        offset: at.min(text.len()),
    }
}

fn tag_len(tag: &Tag) -> usize {
    let (handle, suffix) = tag.parts();
    handle.len() + suffix.len()
}

fn byte_range(span: &Span) -> Range<usize> {
    match (span.start.byte_offset(), span.end.byte_offset()) {
        (Some(start), Some(end)) => start..end.max(start),
        _ => 0..0,
    }
}

/// A parser error, located by its line and character column as before.
fn scan_error(text: &str, error: &ScanError) -> YamlError {
    let message = match error.kind() {
        ErrorKind::UnknownAnchor => "alias references unknown anchor".to_owned(),
        _ => error.info(),
    };
    let marker = error.marker();
    syntax(
        text,
        message,
        line_column_offset(text, marker.line(), marker.col() + 1),
    )
}

/// Byte offset of a 1-based line and 1-based character column.
fn line_column_offset(text: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (index, line_text) in text.split_inclusive('\n').enumerate() {
        if index + 1 == line {
            return offset
                + line_text
                    .char_indices()
                    .nth(column.saturating_sub(1))
                    .map_or(line_text.trim_end_matches('\n').len(), |(i, _)| i);
        }
        offset += line_text.len();
    }
    text.len()
}
