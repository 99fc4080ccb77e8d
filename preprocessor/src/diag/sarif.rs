//! Renders diagnostics for CI systems: SARIF 2.1.0 (`check --format sarif`, read by GitHub code
//! scanning, GitLab and most static-analysis dashboards) and GitHub Actions workflow commands
//! (`check --format github`, one `::error file=…,line=…::message` line per diagnostic, shown as
//! annotations on the pull request).

use super::{Code, Diagnostic, Severity};
use serde_json::{Value, json};

/// The SARIF schema the output follows.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// Renders every diagnostic as one SARIF 2.1.0 log with a single run; the rules are the codes
/// that occur, with their titles and long explanations.
pub fn render(diagnostics: &[Diagnostic]) -> String {
    let mut codes: Vec<Code> = diagnostics.iter().map(|d| d.code).collect();
    codes.sort();
    codes.dedup();
    let rules: Vec<Value> = codes
        .iter()
        .map(|code| {
            json!({
                "id": code.as_str(),
                "shortDescription": { "text": code.title() },
                "fullDescription": { "text": code.explanation() },
                "help": { "text": format!("mdbook-fkc explain {}", code.as_str()) },
            })
        })
        .collect();
    let results: Vec<Value> = diagnostics
        .iter()
        .map(|diagnostic| {
            let start = diagnostic.location();
            let end = diagnostic.source.line_col(diagnostic.span.end);
            let text = full_message(diagnostic);
            json!({
                "ruleId": diagnostic.code.as_str(),
                "ruleIndex": codes.iter().position(|c| *c == diagnostic.code).unwrap_or(0),
                "level": level(diagnostic.severity),
                "message": { "text": text },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": diagnostic.source.path.as_str() },
                        "region": {
                            "startLine": start.line,
                            "startColumn": start.column,
                            "endLine": end.line,
                            "endColumn": end.column.max(start.column + usize::from(end.line == start.line)),
                        }
                    }
                }],
            })
        })
        .collect();
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "mdbook-fkc",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }
            },
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&log).unwrap_or_else(|error| {
        format!("{{\"version\":\"2.1.0\",\"runs\":[],\"error\":\"{error}\"}}")
    })
}

/// The message with every note and help line under it, as the text report shows them.
fn full_message(diagnostic: &Diagnostic) -> String {
    let mut text = diagnostic.message.clone();
    let notes = diagnostic.notes.iter().map(|n| format!("note: {n}"));
    for line in notes.chain(diagnostic.help.iter().map(|h| format!("help: {h}"))) {
        text.push('\n');
        text.push_str(&line);
    }
    text
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Note => "note",
    }
}

/// Renders every diagnostic as a GitHub Actions workflow command (`::error …` / `::notice …`).
pub fn github(diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for diagnostic in diagnostics {
        let start = diagnostic.location();
        let end = diagnostic.source.line_col(diagnostic.span.end);
        let command = match diagnostic.severity {
            Severity::Error => "error",
            Severity::Note => "notice",
        };
        let message = full_message(diagnostic);
        out.push_str(&format!(
            "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}\n",
            property(&diagnostic.source.path),
            start.line,
            start.column,
            end.line,
            end.column,
            property(&format!(
                "{}: {}",
                diagnostic.code.as_str(),
                diagnostic.code.title()
            )),
            data(&message)
        ));
    }
    out
}

/// Escapes a workflow command's message.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow command's property value.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::source::SourceFile;
    use std::sync::Arc;

    fn sample() -> Diagnostic {
        let file = Arc::new(SourceFile::new("book/a,b.md", "x\n  kernl: 1\n"));
        Diagnostic::error(Code::UnknownField, &file, 4..9, "unknown field `kernl`")
            .with_note("the contract's fields")
            .with_help("did you mean `kernel`?\n100% sure")
    }

    #[test]
    fn sarif_has_a_run_with_rules_and_located_results() {
        let value: Value = serde_json::from_str(&render(&[sample()])).unwrap();
        assert_eq!(value["version"], "2.1.0");
        let run = &value["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "mdbook-fkc");
        assert_eq!(run["tool"]["driver"]["rules"][0]["id"], "FKC0104");
        let result = &run["results"][0];
        assert_eq!(result["ruleId"], "FKC0104");
        assert_eq!(result["level"], "error");
        let region = &result["locations"][0]["physicalLocation"]["region"];
        assert_eq!(region["startLine"], 2);
        assert_eq!(region["startColumn"], 3);
        assert_eq!(region["endColumn"], 8);
        assert!(
            result["message"]["text"]
                .as_str()
                .unwrap()
                .contains("help: did you mean")
        );
    }

    #[test]
    fn github_annotations_are_escaped_one_per_line() {
        let text = github(&[sample()]);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.starts_with("::error file=book/a%2Cb.md,line=2,col=3,endLine=2,endColumn=8,title=FKC0104%3A unknown field::unknown field `kernl`%0Anote: the contract's fields%0Ahelp: did you mean `kernel`?%0A100%25 sure"),
            "{text}"
        );
    }
}
