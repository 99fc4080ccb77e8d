//! A contract's page view completed with what the later stages found: the resolved entry
//! points and revision hash, the importer's notes, and the gate's evidence (identical per-dtype
//! rows merged) and worked example.

use super::view::{ContractView, EntryPointView, ImportNote, Row};
use crate::diag::Diagnostic;
use crate::resolve::Resolved;
use crate::verify::Evidence;

/// Adds what was resolved to a contract's view: entry points, hash, importer notes.
pub fn decorate(
    view: &mut ContractView,
    resolved: &Resolved,
    evidence: &Evidence,
    diagnostics: &[Diagnostic],
) {
    view.entry_points = resolved
        .import
        .entry_points
        .iter()
        .map(|entry| EntryPointView {
            dtype: entry.dtype.name().to_owned(),
            symbol: entry.symbol.clone(),
            resolved: entry.kernel.is_some(),
        })
        .collect();
    if let Some(row) = view
        .identity
        .iter_mut()
        .find(|row| row.field == "kernel_revision_hash")
    {
        row.value = format!("{} (computed: {})", row.value, resolved.revision_hash);
    } else {
        view.identity.push(Row {
            field: "kernel_revision_hash".to_owned(),
            value: format!("computed: {}", resolved.revision_hash),
            code: true,
            note: None,
        });
    }
    view.evidence = super::evidence::merged(&evidence.rows);
    view.unchecked = evidence
        .unchecked
        .iter()
        .map(|(claim, why)| super::view::Row {
            field: claim.clone(),
            value: why.clone(),
            code: false,
            note: None,
        })
        .collect();
    view.badges.insert(
        0,
        match evidence.unchecked.len() {
            0 => super::view::Badge {
                label: "verified".to_owned(),
                kind: "ok",
            },
            n => super::view::Badge {
                label: format!(
                    "verified, {n} claim{} unchecked",
                    if n == 1 { "" } else { "s" }
                ),
                kind: "warn",
            },
        },
    );
    view.semantics = resolved
        .contract
        .semantics
        .as_deref()
        .map(super::pseudo::semantics_view);
    if let Some(worked) = &evidence.worked {
        view.figure = Some(super::svg::worked_example(worked));
        view.figure_caption = Some(super::svg::caption(worked));
        view.worked = Some(super::svg::figure(worked));
    }
    view.import_notes = diagnostics
        .iter()
        .filter(|d| !d.is_error())
        .map(|d| ImportNote {
            code: d.code.as_str().to_owned(),
            message: d.message.clone(),
        })
        .collect();
}
