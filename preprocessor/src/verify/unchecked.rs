//! Claims the gate could not check, kept apart from what ran: the page shows "verified, N
//! claims unchecked" and lists them, the inventory counts them apart, and `mdbook-fkc check
//! --deny unchecked` makes each an error (FKC0007). A check that did not run is never a row
//! of what was verified.

use super::Gate;

impl Gate<'_> {
    /// Records that `claim` was not checked, and why (once per claim).
    pub(super) fn not_checked(&mut self, claim: impl Into<String>, why: impl Into<String>) {
        let claim = claim.into();
        if !self.evidence.unchecked.iter().any(|(c, _)| *c == claim) {
            self.evidence.unchecked.push((claim, why.into()));
        }
    }

    /// The cost formulas the contract writes that no check compared with the work done.
    pub(super) fn unchecked_costs(&mut self) {
        let Some(cost) = self.raw.cost.as_ref() else {
            return;
        };
        let why = if self.has_semantics() {
            "no accepted sample was counted"
        } else {
            "no semantics to count the work and the traffic"
        };
        let ran = |prefix: &str, rows: &[(String, String)]| {
            rows.iter().any(|(c, _)| c.starts_with(prefix))
        };
        let written = |formula: &crate::contract::schema::Nullable<String>| {
            formula.as_ref().is_some_and(|f| f.value.is_some())
        };
        if written(&cost.flops) && !ran("`flops`", &self.evidence.rows) {
            self.not_checked("`cost.flops`", why);
        }
        if written(&cost.bytes_moved) && !ran("`bytes_moved`", &self.evidence.rows) {
            self.not_checked("`cost.bytes_moved`", why);
        }
    }
}
