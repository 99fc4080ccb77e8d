//! A node as written, kept beside the tree where its written form matters: a mapping key
//! (duplicates are found by the keys as written: `true` and `True` differ), an anchored node (an
//! alias copies it) and a merge value (its entries join a mapping, located at the merge value).

use super::Node;
use super::Value;
use super::scalar::{self, KeyId, KeyTag, TagKind};
use std::borrow::Cow;
use std::ops::Range;
use std::rc::Rc;

/// What a copied `!!merge` tag adds to the scalar bytes (`tag:yaml.org,2002:merge`).
const MERGE_TAG_BYTES: usize = 23;

/// A node as written, kept beside the tree where its written form matters.
#[derive(Debug, Clone)]
pub(super) struct Shadow<'a> {
    /// Where the node is written (an alias's copy has its definition's offset).
    pub(super) start: usize,
    /// The node is an alias's copy (located at its `*alias`, even when merged).
    pub(super) alias: bool,
    pub(super) shape: Shape<'a>,
}

#[derive(Debug, Clone)]
pub(super) enum Shape<'a> {
    Scalar(Written<'a>),
    Seq {
        tag: KeyTag,
        items: Vec<Shadow<'a>>,
    },
    /// Entries in the order of the node's entries.
    Map {
        tag: KeyTag,
        entries: Vec<(Shadow<'a>, Shadow<'a>)>,
    },
    /// An anchored node's shadow, shared with the anchor.
    Shared(Rc<Shadow<'a>>),
}

/// A scalar as written.
#[derive(Debug, Clone)]
pub(super) struct Written<'a> {
    pub(super) text: Cow<'a, str>,
    pub(super) plain: bool,
    pub(super) tag: TagKind,
    /// The resolved spelling of an unrecognised tag.
    pub(super) custom: Option<String>,
}

impl Written<'_> {
    /// The scalar bytes an alias's copy of this scalar is charged.
    pub(super) fn copied_bytes(&self) -> usize {
        let tag_bytes = match self.tag {
            TagKind::Merge => MERGE_TAG_BYTES,
            _ => 0,
        };
        self.text.len() + tag_bytes
    }
}

impl<'a> Shadow<'a> {
    /// The shadow itself, or the anchored one it shares.
    pub(super) fn written(&self) -> &Shadow<'a> {
        let mut shadow = self;
        while let Shape::Shared(shared) = &shadow.shape {
            shadow = shared;
        }
        shadow
    }

    pub(super) fn key(&self) -> KeyId<'a> {
        match &self.shape {
            Shape::Shared(shared) => shared.key(),
            Shape::Scalar(written) => scalar::scalar_key(
                &written.text,
                written.plain,
                written.tag,
                written.custom.as_deref(),
            ),
            Shape::Seq { tag, items } => KeyId::Seq {
                tag: tag.clone(),
                items: items.iter().map(Shadow::key).collect(),
            },
            Shape::Map { tag, entries } => {
                let mut entries: Vec<_> = entries.iter().map(|(k, v)| (k.key(), v.key())).collect();
                entries.sort();
                KeyId::Map {
                    tag: tag.clone(),
                    entries,
                }
            }
        }
    }

    /// The scalar written, if it is one.
    pub(super) fn scalar(&self) -> Option<&Written<'a>> {
        match &self.written().shape {
            Shape::Scalar(written) => Some(written),
            _ => None,
        }
    }

    /// `<<`, plain and untagged or tagged `!!merge`.
    pub(super) fn is_merge_key(&self) -> bool {
        self.scalar().is_some_and(|written| {
            written.text == "<<"
                && (written.tag == TagKind::Merge
                    || (written.tag == TagKind::None && written.plain))
        })
    }

    /// The first place in a merge value that is neither a mapping nor null.
    pub(super) fn merge_error(&self) -> Option<usize> {
        match &self.shape {
            Shape::Scalar(written) => {
                (!scalar::is_null(&written.text, written.plain, written.tag)).then_some(self.start)
            }
            Shape::Seq { items, .. } => items.iter().find_map(Shadow::merge_error),
            Shape::Shared(shared) => shared.merge_error(),
            Shape::Map { .. } => None,
        }
    }
}

/// An entry a merge value brings to a mapping.
pub(super) struct Merged<'a> {
    pub(super) id: KeyId<'a>,
    pub(super) entry: (Node, Node),
    pub(super) shadows: (Shadow<'a>, Shadow<'a>),
}

/// The entries a merge value brings: a mapping's, or those of each mapping of a sequence (nested
/// sequences flattened, nulls skipped), located at the merge value (or at each element of a
/// sequence) except for aliases' copies, which stay at their `*alias`. Err is the offset of a
/// value that is neither.
pub(super) fn merge_entries<'a>(
    node: Node,
    shadow: &Shadow<'a>,
    at: Option<&Range<usize>>,
    merged: &mut Vec<Merged<'a>>,
) -> Result<(), usize> {
    match (node.value, &shadow.written().shape) {
        (
            Value::Map(entries),
            Shape::Map {
                entries: shadows, ..
            },
        ) => {
            let at = at.unwrap_or(&node.span);
            for ((mut key, mut value), (key_shadow, value_shadow)) in
                entries.into_iter().zip(shadows)
            {
                relocate(&mut key, key_shadow, at);
                relocate(&mut value, value_shadow, at);
                merged.push(Merged {
                    id: key_shadow.key(),
                    entry: (key, value),
                    shadows: (key_shadow.clone(), value_shadow.clone()),
                });
            }
            Ok(())
        }
        (Value::Seq(items), Shape::Seq { items: shadows, .. }) => {
            for (item, item_shadow) in items.into_iter().zip(shadows) {
                let item_at = at.cloned().unwrap_or_else(|| item.span.clone());
                merge_entries(item, item_shadow, Some(&item_at), merged)?;
            }
            Ok(())
        }
        _ => shadow.merge_error().map_or(Ok(()), Err),
    }
}

/// Locates a merged node (and everything in it) at `span`, except aliases' copies.
fn relocate(node: &mut Node, shadow: &Shadow<'_>, span: &Range<usize>) {
    if shadow.alias {
        return;
    }
    node.span = span.clone();
    match (&mut node.value, &shadow.written().shape) {
        (Value::Seq(items), Shape::Seq { items: shadows, .. }) => {
            for (item, item_shadow) in items.iter_mut().zip(shadows) {
                relocate(item, item_shadow, span);
            }
        }
        (
            Value::Map(entries),
            Shape::Map {
                entries: shadows, ..
            },
        ) => {
            for ((key, value), (key_shadow, value_shadow)) in entries.iter_mut().zip(shadows) {
                relocate(key, key_shadow, span);
                relocate(value, value_shadow, span);
            }
        }
        _ => {}
    }
}
