//! Root names resolved to slots once. A contract's root names get fixed positions in a
//! [`Slots`] table; [`Slots::resolve`] writes each `Name` node's position into the tree when
//! the contract is resolved, and [`Bindings::framed`](super::Bindings::framed) keeps a sample's
//! values in that order, so evaluating reads a vector instead of searching a map per name.

use super::ast::{Expr, ExprKind};
use std::sync::Arc;

/// A fixed, sorted table of root names; a name's slot is its index.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Slots {
    names: Vec<String>,
}

impl Slots {
    /// The table of `names` (sorted, each once).
    pub fn new<'n>(names: impl IntoIterator<Item = &'n str>) -> Arc<Slots> {
        let mut names: Vec<String> = names.into_iter().map(str::to_owned).collect();
        names.sort_unstable();
        names.dedup();
        Arc::new(Slots { names })
    }

    /// The slot of `name`, if the table has it.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.names
            .binary_search_by(|known| known.as_str().cmp(name))
            .ok()
    }

    /// The name in `slot`.
    pub fn name(&self, slot: usize) -> Option<&str> {
        self.names.get(slot).map(String::as_str)
    }

    /// How many names the table has.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the table has no names.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Gives every `Name` node of `expr` its slot (a name outside the table keeps none), without
    /// recursion.
    pub fn resolve(&self, expr: &mut Expr) {
        let mut stack = vec![expr];
        while let Some(node) = stack.pop() {
            if let ExprKind::Name(name) = &node.kind {
                node.slot = self.slot(name).and_then(|slot| u32::try_from(slot).ok());
            }
            stack.extend(node.children_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::expr::{Bindings, Value, eval, parse};

    #[test]
    fn names_get_sorted_slots_and_the_tree_records_them() {
        let slots = Slots::new(["x", "groups", "dtype_bytes", "groups"]);
        assert_eq!(slots.len(), 3);
        assert_eq!(slots.slot("groups"), Some(1));
        assert_eq!(slots.slot("nope"), None);
        let mut expr = parse("divisible(x.dim[1], groups) && nope > 0").unwrap();
        slots.resolve(&mut expr);
        let mut resolved = Vec::new();
        expr.walk(|e| {
            if let ExprKind::Name(name) = &e.kind {
                resolved.push((name.clone(), e.slot));
            }
        });
        assert_eq!(
            resolved,
            vec![
                ("x".to_owned(), Some(2)),
                ("groups".to_owned(), Some(1)),
                ("nope".to_owned(), None)
            ]
        );
    }

    #[test]
    fn a_resolved_tree_evaluates_the_same_against_a_frame_a_map_or_another_table() {
        let slots = Slots::new(["x", "groups"]);
        let mut expr = parse("x.dim[1] / groups + extra").unwrap();
        slots.resolve(&mut expr);
        let fill = |bindings: &mut Bindings| {
            bindings
                .insert("x", Value::operand(&[2, 6]))
                .insert("groups", Value::Int(3))
                .insert("extra", Value::Int(10));
        };
        let mut framed = Bindings::framed(&slots);
        fill(&mut framed);
        let mut plain = Bindings::new();
        fill(&mut plain);
        // A frame of another table: the slots written in the tree do not belong to it.
        let mut other = Bindings::framed(&Slots::new(["a", "groups", "x"]));
        fill(&mut other);
        for bindings in [&framed, &plain, &other] {
            assert_eq!(eval(&expr, bindings).unwrap(), Value::Int(12));
        }
        assert_eq!(framed.names(), vec!["extra", "groups", "x"]);
    }

    #[test]
    fn a_value_bound_at_a_slot_lands_in_the_frame_only_when_the_slot_holds_its_name() {
        let slots = Slots::new(["groups", "x"]);
        let mut expr = parse("x + groups").unwrap();
        slots.resolve(&mut expr);
        let mut bindings = Bindings::framed(&slots);
        bindings
            .insert_at(slots.slot("x"), "x", Value::Int(2))
            // A slot that holds another name, and no slot at all: bound by name instead.
            .insert_at(slots.slot("x"), "groups", Value::Int(3))
            .insert_at(None, "extra", Value::Int(4));
        assert_eq!(bindings.get("x"), Some(&Value::Int(2)));
        assert_eq!(eval(&expr, &bindings).unwrap(), Value::Int(5));
        assert_eq!(bindings.names(), vec!["extra", "groups", "x"]);
        let mut unframed = Bindings::new();
        unframed.insert_at(Some(0), "groups", Value::Int(7));
        assert_eq!(unframed.get("groups"), Some(&Value::Int(7)));
    }
}
