//! What a run produces, as data: a report per chapter (new content, diagnostics, contracts)
//! and a summary per contract. Renderers, the inventory and `check` read these; nothing here
//! knows how they are shown.

use crate::diag::Diagnostic;

/// What processing one chapter produced.
#[derive(Debug, Default)]
pub struct ChapterReport {
    /// The new Markdown, or `None` when the chapter holds no FKC content (left byte-identical).
    pub content: Option<String>,
    /// Every diagnostic that counts (errors fail the build; notes are informational).
    pub diagnostics: Vec<Diagnostic>,
    /// The contracts that were read and passed, in order.
    pub contracts: Vec<ContractSummary>,
}

/// A one-line summary of a checked contract, for inventories and `check` output.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ContractSummary {
    pub kernel: String,
    pub file: String,
    pub line: usize,
    pub registrable: bool,
    pub revision_hash: String,
    pub blurb: Option<String>,
    /// The declared dtypes (F32, …).
    pub dtypes: Vec<String>,
    /// The HTML id of the contract's section.
    pub anchor: String,
    /// How many behavioural checks ran on it.
    pub checks: usize,
    /// False for a spec-first (```` ```fkc,unverified ````) contract: nothing ran.
    pub verified: bool,
    /// The contract fails the gate (only listed with `on-failure = "continue"`, where the book
    /// still builds).
    pub failing: bool,
    /// What the gate ran on it: (check, result), as on the page.
    pub evidence: Vec<(String, String)>,
    /// The claims no check could decide: (claim, why), listed apart on the page.
    pub unchecked: Vec<(String, String)>,
    /// A link to the contract from the book's root (`seed/x.html#fkc-conv2d`), set by the caller
    /// that knows where the chapter is rendered.
    pub link: String,
}
