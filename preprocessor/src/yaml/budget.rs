//! The budgets a YAML block must stay within (nodes, nesting, aliases, anchors, scalar bytes,
//! documents, events) and what has been used of them. An alias's copy is charged node by node as
//! if it had been written out, so an alias bomb fails at its `*alias`.

use super::scalar;
use super::shadow::{Shadow, Shape};
use super::{MAX_YAML_BYTES, Node, Value};
use std::fmt;
use std::ops::Range;

pub(super) const MAX_DEPTH: usize = 32;
const MAX_NODES: usize = 20_000;
const MAX_EVENTS: usize = 100_000;
pub(super) const MAX_ALIASES: usize = 64;
pub(super) const MAX_ANCHORS: usize = 64;
pub(super) const MAX_DOCUMENTS: usize = 1;

/// Which budget a block exceeds (shown as `Nodes { nodes: 20001 }`, as it always was).
#[derive(Debug)]
pub(super) enum Breach {
    Events { events: usize },
    Aliases { aliases: usize },
    Anchors { anchors: usize },
    Depth { depth: usize },
    Documents { documents: usize },
    Nodes { nodes: usize },
    ScalarBytes { total_scalar_bytes: usize },
}

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, field, count) = match *self {
            Breach::Events { events } => ("Events", "events", events),
            Breach::Aliases { aliases } => ("Aliases", "aliases", aliases),
            Breach::Anchors { anchors } => ("Anchors", "anchors", anchors),
            Breach::Depth { depth } => ("Depth", "depth", depth),
            Breach::Documents { documents } => ("Documents", "documents", documents),
            Breach::Nodes { nodes } => ("Nodes", "nodes", nodes),
            Breach::ScalarBytes { total_scalar_bytes } => {
                ("ScalarBytes", "total_scalar_bytes", total_scalar_bytes)
            }
        };
        write!(f, "{name} {{ {field}: {count} }}")
    }
}

/// What the block has used of its budgets; an alias's copy is charged like what it copies.
#[derive(Debug, Default)]
pub(super) struct Counts {
    events: usize,
    nodes: usize,
    pub(super) aliases: usize,
    scalar_bytes: usize,
    pub(super) documents: usize,
}

impl Counts {
    pub(super) fn event(&mut self) -> Result<(), Breach> {
        self.events += 1;
        if self.events > MAX_EVENTS {
            return Err(Breach::Events {
                events: self.events,
            });
        }
        Ok(())
    }

    pub(super) fn node(&mut self) -> Result<(), Breach> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(Breach::Nodes { nodes: self.nodes });
        }
        Ok(())
    }

    pub(super) fn scalar_bytes(&mut self, bytes: usize) -> Result<(), Breach> {
        self.scalar_bytes = self.scalar_bytes.saturating_add(bytes);
        if self.scalar_bytes > MAX_YAML_BYTES {
            return Err(Breach::ScalarBytes {
                total_scalar_bytes: self.scalar_bytes,
            });
        }
        Ok(())
    }

    /// An alias's copy of `shadow` at nesting `depth`, located at `span`, charged node by node
    /// in the order its events were written.
    pub(super) fn copy(
        &mut self,
        shadow: &Shadow<'_>,
        depth: usize,
        span: &Range<usize>,
    ) -> Result<Node, Breach> {
        let value = match &shadow.shape {
            Shape::Shared(shared) => return self.copy(shared, depth, span),
            Shape::Scalar(written) => {
                self.event()?;
                self.node()?;
                self.scalar_bytes(written.copied_bytes())?;
                // It resolved when it was written (or it could not have been anchored).
                scalar::resolve(written.text.clone(), written.plain, written.tag)
                    .unwrap_or(Value::Null)
            }
            Shape::Seq { items, .. } => {
                self.open(depth)?;
                let mut copied = Vec::with_capacity(items.len());
                for item in items {
                    copied.push(self.copy(item, depth + 1, span)?);
                }
                self.event()?;
                Value::Seq(copied)
            }
            Shape::Map { entries, .. } => {
                self.open(depth)?;
                let mut copied = Vec::with_capacity(entries.len());
                for (key, value) in entries {
                    copied.push((
                        self.copy(key, depth + 1, span)?,
                        self.copy(value, depth + 1, span)?,
                    ));
                }
                self.event()?;
                Value::Map(copied)
            }
        };
        Ok(Node {
            value,
            span: span.clone(),
        })
    }

    /// Charges a copy of `shadow` without making it: the walk that finds which budget an
    /// oversized copy breaks first.
    pub(super) fn replay(&mut self, shadow: &Shadow<'_>, depth: usize) -> Result<(), Breach> {
        match &shadow.shape {
            Shape::Shared(shared) => self.replay(shared, depth),
            Shape::Scalar(written) => {
                self.event()?;
                self.node()?;
                self.scalar_bytes(written.copied_bytes())
            }
            Shape::Seq { items, .. } => {
                self.open(depth)?;
                for item in items {
                    self.replay(item, depth + 1)?;
                }
                self.event()
            }
            Shape::Map { entries, .. } => {
                self.open(depth)?;
                for (key, value) in entries {
                    self.replay(key, depth + 1)?;
                    self.replay(value, depth + 1)?;
                }
                self.event()
            }
        }
    }

    /// Whether a copy of what `size` measures, nested in `depth` nodes, stays within budgets.
    pub(super) fn fits(&self, size: &Size, depth: usize) -> bool {
        self.events + size.events <= MAX_EVENTS
            && self.nodes + size.nodes <= MAX_NODES
            && self.scalar_bytes.saturating_add(size.scalar_bytes) <= MAX_YAML_BYTES
            && depth + size.depth <= MAX_DEPTH
    }

    /// Charges the start of a copied collection nested in `depth` others.
    fn open(&mut self, depth: usize) -> Result<(), Breach> {
        self.event()?;
        self.node()?;
        if depth + 1 > MAX_DEPTH {
            return Err(Breach::Depth { depth: depth + 1 });
        }
        Ok(())
    }
}

/// What a copy of an anchored node costs.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Size {
    events: usize,
    nodes: usize,
    scalar_bytes: usize,
    /// Nesting of collections, the node's own included.
    depth: usize,
}

impl Size {
    pub(super) fn of(shadow: &Shadow<'_>) -> Size {
        match &shadow.shape {
            Shape::Shared(shared) => Size::of(shared),
            Shape::Scalar(written) => Size {
                events: 1,
                nodes: 1,
                scalar_bytes: written.copied_bytes(),
                depth: 0,
            },
            Shape::Seq { items, .. } => Size::collection(items.iter()),
            Shape::Map { entries, .. } => {
                Size::collection(entries.iter().flat_map(|(key, value)| [key, value]))
            }
        }
    }

    fn collection<'s, 'a: 's>(children: impl Iterator<Item = &'s Shadow<'a>>) -> Size {
        let mut size = Size {
            events: 2,
            nodes: 1,
            scalar_bytes: 0,
            depth: 0,
        };
        for child in children.map(Size::of) {
            size.events += child.events;
            size.nodes += child.nodes;
            size.scalar_bytes = size.scalar_bytes.saturating_add(child.scalar_bytes);
            size.depth = size.depth.max(child.depth);
        }
        size.depth += 1;
        size
    }
}
