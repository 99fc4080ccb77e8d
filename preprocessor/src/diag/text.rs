//! Renders diagnostics as rustc-style text with annotate-snippets: `error[FKC0104]: …`, an arrow
//! to `file:line:col`, the offending source underlined, then `note:` and `help:` lines.

use super::{Diagnostic, Severity};
use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

/// Whether to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    Colored,
}

/// Renders one diagnostic.
pub fn render(diagnostic: &Diagnostic, style: Style) -> String {
    let level = match diagnostic.severity {
        Severity::Error => Level::ERROR,
        Severity::Note => Level::NOTE,
    };
    let span = clamp(diagnostic, diagnostic.span.clone());
    let mut primary = AnnotationKind::Primary.span(span);
    if let Some(label) = &diagnostic.label {
        primary = primary.label(label.as_str());
    }
    let snippet = Snippet::source(diagnostic.source.text.as_str())
        .line_start(1)
        .path(diagnostic.source.path.as_str())
        .annotation(primary)
        .annotations(diagnostic.labels.iter().map(|label| {
            AnnotationKind::Context
                .span(clamp(diagnostic, label.span.clone()))
                .label(label.message.as_str())
        }));
    let group = level
        .primary_title(diagnostic.message.as_str())
        .id(diagnostic.code.as_str())
        .element(snippet)
        .elements(
            diagnostic
                .notes
                .iter()
                .map(|note| Level::NOTE.message(note.as_str())),
        )
        .elements(
            diagnostic
                .help
                .iter()
                .map(|help| Level::HELP.message(help.as_str())),
        );
    let report: [Group<'_>; 1] = [group];
    let renderer = match style {
        Style::Plain => Renderer::plain(),
        Style::Colored => Renderer::styled(),
    };
    renderer.render(&report)
}

/// Renders many diagnostics, separated by blank lines, with a closing summary line.
pub fn render_all(diagnostics: &[Diagnostic], style: Style) -> String {
    let mut out = String::new();
    for diagnostic in diagnostics {
        out.push_str(&render(diagnostic, style));
        out.push_str("\n\n");
    }
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    if errors > 0 {
        out.push_str(&format!(
            "error: {errors} contract error{} found; run `mdbook-fkc explain CODE` for details\n",
            if errors == 1 { "" } else { "s" }
        ));
    }
    out
}

/// Keeps a span inside the file and on character boundaries, so rendering never panics.
fn clamp(diagnostic: &Diagnostic, span: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let text = &diagnostic.source.text;
    let start = crate::source::floor_char_boundary(text, span.start);
    let end = crate::source::floor_char_boundary(text, span.end.max(start));
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Code;
    use crate::source::SourceFile;
    use std::sync::Arc;

    #[test]
    fn renders_code_location_underline_and_help() {
        let file = Arc::new(SourceFile::new(
            "book/a.md",
            "# A\n```fkc\nkernl: conv2d\n```\n",
        ));
        let diagnostic =
            Diagnostic::error(Code::UnknownField, &file, 11..16, "unknown field `kernl`")
                .with_label("not a contract field")
                .with_help("did you mean `kernel`?");
        let text = render(&diagnostic, Style::Plain);
        assert!(
            text.contains("error[FKC0104]: unknown field `kernl`"),
            "{text}"
        );
        assert!(text.contains("book/a.md:3:1"), "{text}");
        assert!(text.contains("^^^^^ not a contract field"), "{text}");
        assert!(text.contains("help: did you mean `kernel`?"), "{text}");
    }

    #[test]
    fn out_of_range_spans_do_not_panic() {
        let file = Arc::new(SourceFile::new("a.md", "é"));
        let diagnostic = Diagnostic::error(Code::YamlSyntax, &file, 1..99, "bad");
        assert!(render(&diagnostic, Style::Plain).contains("FKC0101"));
    }
}
