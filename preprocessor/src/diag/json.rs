//! Renders diagnostics as JSON for machines (`mdbook-fkc check --format json`): one object per
//! diagnostic with its code, severity, message, file, line, column, labels, notes and help.

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

/// Renders all diagnostics as a JSON array.
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
}
