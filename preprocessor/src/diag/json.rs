//! Renders a check's outcome as JSON for machines (`mdbook-fkc check --format json`): a
//! versioned object `{"version": 2, "tool", "contracts", "diagnostics", "summary"}`, whose JSON
//! Schema is `preprocessor/schema/check-report.json`. Each
//! diagnostic is one object with its code, severity, message, file, line, column, labels, notes
//! and help; each contract carries its revision hash, whether it was verified or fails, and the
//! evidence the gate produced.

use super::Diagnostic;
use crate::source::LineCol;
use serde::Serialize;

#[derive(Serialize)]
struct JsonLabel<'a> {
    start: LineCol,
    end: LineCol,
    message: &'a str,
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'static str,
    severity: super::Severity,
    message: &'a str,
    file: &'a str,
    line: usize,
    column: usize,
    end: LineCol,
    label: Option<&'a str>,
    labels: Vec<JsonLabel<'a>>,
    notes: &'a [String],
    help: &'a [String],
}

fn to_json(diagnostic: &Diagnostic) -> JsonDiagnostic<'_> {
    let start = diagnostic.location();
    JsonDiagnostic {
        code: diagnostic.code.as_str(),
        severity: diagnostic.severity,
        message: &diagnostic.message,
        file: &diagnostic.source.path,
        line: start.line,
        column: start.column,
        end: diagnostic.source.line_col(diagnostic.span.end),
        label: diagnostic.label.as_deref(),
        labels: diagnostic
            .labels
            .iter()
            .map(|label| JsonLabel {
                start: diagnostic.source.line_col(label.span.start),
                end: diagnostic.source.line_col(label.span.end),
                message: &label.message,
            })
            .collect(),
        notes: &diagnostic.notes,
        help: &diagnostic.help,
    }
}

/// The version of the `check --format json` object; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 2;

/// One contract of the book, as the report lists it.
#[derive(Debug, Clone, Serialize)]
pub struct ContractRecord<'a> {
    pub kernel: &'a str,
    pub file: &'a str,
    pub line: usize,
    pub registrable: bool,
    /// The revision hash (`None` for a contract that failed before one was computed).
    pub revision_hash: Option<&'a str>,
    /// The gate ran it and every check passed (as `check`'s text counts "verified").
    pub verified: bool,
    /// A spec-first (```` ```fkc,unverified ````) contract: nothing was run.
    pub spec_first: bool,
    pub failing: bool,
    pub dtypes: &'a [String],
    /// (check, what ran), as on the page.
    pub evidence: Vec<Evidence<'a>>,
    /// (claim, why it was not checked), as on the page.
    pub unchecked: Vec<Unchecked<'a>>,
}

/// A claim of a contract that no check could decide.
#[derive(Debug, Clone, Serialize)]
pub struct Unchecked<'a> {
    pub claim: &'a str,
    pub why: &'a str,
}

/// One row of a contract's evidence.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence<'a> {
    pub check: &'a str,
    pub result: &'a str,
}

#[derive(Serialize)]
struct Tool {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct Summary {
    contracts: usize,
    verified: usize,
    unverified: usize,
    failing: usize,
    errors: usize,
    notes: usize,
}

#[derive(Serialize)]
struct Report<'a> {
    version: u32,
    tool: Tool,
    contracts: &'a [ContractRecord<'a>],
    diagnostics: Vec<JsonDiagnostic<'a>>,
    summary: Summary,
}

/// Renders the whole outcome of `check` as the versioned JSON object.
pub fn render_report(contracts: &[ContractRecord<'_>], diagnostics: &[Diagnostic]) -> String {
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let report = Report {
        version: FORMAT_VERSION,
        tool: Tool {
            name: "mdbook-fkc",
            version: env!("CARGO_PKG_VERSION"),
        },
        contracts,
        diagnostics: diagnostics.iter().map(to_json).collect(),
        summary: Summary {
            contracts: contracts.len(),
            verified: contracts.iter().filter(|c| c.verified).count(),
            unverified: contracts.iter().filter(|c| c.spec_first).count(),
            failing: contracts.iter().filter(|c| c.failing).count(),
            errors,
            notes: diagnostics.len() - errors,
        },
    };
    serde_json::to_string_pretty(&report).unwrap_or_else(|error| {
        format!("{{\"version\":{FORMAT_VERSION},\"error\":\"cannot encode the report: {error}\"}}")
    })
}

/// Renders all diagnostics as a JSON array (the `diagnostics` member of the report).
pub fn render_all(diagnostics: &[Diagnostic]) -> String {
    let items: Vec<JsonDiagnostic<'_>> = diagnostics.iter().map(to_json).collect();
    serde_json::to_string_pretty(&items).unwrap_or_else(|error| {
        format!("[{{\"code\":\"internal\",\"message\":\"cannot encode diagnostics: {error}\"}}]")
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::diag::Code;
    use crate::source::SourceFile;
    use std::sync::Arc;

    #[test]
    fn json_carries_code_file_line_and_column() {
        let file = Arc::new(SourceFile::new("book/a.md", "x\n  kernl: 1\n"));
        let diagnostic = Diagnostic::error(Code::UnknownField, &file, 4..9, "unknown field")
            .with_help("did you mean `kernel`?");
        let value: serde_json::Value = serde_json::from_str(&render_all(&[diagnostic])).unwrap();
        assert_eq!(value[0]["code"], "FKC0104");
        assert_eq!(value[0]["file"], "book/a.md");
        assert_eq!(value[0]["line"], 2);
        assert_eq!(value[0]["column"], 3);
        assert_eq!(value[0]["help"][0], "did you mean `kernel`?");
    }

    #[test]
    fn report_is_versioned_with_contracts_diagnostics_and_summary() {
        let file = Arc::new(SourceFile::new("book/a.md", "x\n  kernl: 1\n"));
        let diagnostic = Diagnostic::error(Code::UnknownField, &file, 4..9, "unknown field");
        let dtypes = vec!["F32".to_owned()];
        let contracts = [ContractRecord {
            kernel: "conv2d",
            file: "book/a.md",
            line: 7,
            registrable: true,
            revision_hash: Some("fkc1:abc"),
            verified: false,
            spec_first: false,
            failing: true,
            dtypes: &dtypes,
            evidence: vec![Evidence {
                check: "shape_rule",
                result: "24 samples",
            }],
            unchecked: vec![Unchecked {
                claim: "values",
                why: "no semantics",
            }],
        }];
        let value: serde_json::Value =
            serde_json::from_str(&render_report(&contracts, &[diagnostic])).unwrap();
        assert_eq!(value["version"], 2);
        assert_eq!(value["contracts"][0]["kernel"], "conv2d");
        assert_eq!(value["contracts"][0]["verified"], false);
        assert_eq!(value["contracts"][0]["revision_hash"], "fkc1:abc");
        assert_eq!(value["contracts"][0]["evidence"][0]["check"], "shape_rule");
        assert_eq!(value["contracts"][0]["unchecked"][0]["claim"], "values");
        assert_eq!(value["diagnostics"][0]["code"], "FKC0104");
        assert_eq!(value["summary"]["failing"], 1);
        assert_eq!(value["summary"]["verified"], 0);
        assert_eq!(value["summary"]["unverified"], 0);
        assert_eq!(value["summary"]["errors"], 1);
    }
}
