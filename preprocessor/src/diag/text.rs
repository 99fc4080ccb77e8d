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
    // Only the lines the spans touch go to the snippet renderer, so rendering costs what the
    // diagnostic shows, not the chapter's length (a chapter of many failures stays linear).
    let window = Window::of(diagnostic);
    let mut primary = AnnotationKind::Primary.span(window.relative(diagnostic.span.clone()));
    if let Some(label) = &diagnostic.label {
        primary = primary.label(label.as_str());
    }
    let snippet = Snippet::source(window.text)
        .line_start(window.first_line)
        .path(diagnostic.source.path.as_str())
        .annotation(primary)
        .annotations(diagnostic.labels.iter().map(|label| {
            AnnotationKind::Context
                .span(window.relative(label.span.clone()))
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
    let mut out = render_each(diagnostics, style);
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    if errors > 0 {
        out.push_str(&format!(
            "error: {errors} contract error{} found; run `mdbook-fkc explain CODE` for details\n",
            if errors == 1 { "" } else { "s" }
        ));
    }
    out
}

/// Every diagnostic, without the terminal's closing summary line (for a page's boxes).
pub fn render_each(diagnostics: &[Diagnostic], style: Style) -> String {
    let mut out = String::new();
    for diagnostic in diagnostics {
        out.push_str(&render(diagnostic, style));
        out.push_str("\n\n");
    }
    out
}

/// When to colour diagnostics: `--color auto|always|never`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    /// Colour on a terminal, unless `NO_COLOR` is set (non-empty); `CLICOLOR_FORCE` (not `0`)
    /// colours even when not on a terminal. `NO_COLOR` wins over `CLICOLOR_FORCE`.
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Parses the value of `--color`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(ColorChoice::Auto),
            "always" => Some(ColorChoice::Always),
            "never" => Some(ColorChoice::Never),
            _ => None,
        }
    }

    /// The style for a stream, given whether it is a terminal and a way to read the
    /// environment (so the rule is testable without touching the process's variables).
    pub fn resolve(
        self,
        is_terminal: bool,
        var: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Style {
        let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
        let colored = match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto if set("NO_COLOR") => false,
            ColorChoice::Auto if set("CLICOLOR_FORCE") => {
                var("CLICOLOR_FORCE").is_some_and(|v| v != "0")
            }
            ColorChoice::Auto => is_terminal,
        };
        if colored {
            Style::Colored
        } else {
            Style::Plain
        }
    }
}

static COLOR_CHOICE: std::sync::OnceLock<ColorChoice> = std::sync::OnceLock::new();

/// Sets the process's colour choice (once, from the command line); later calls are ignored.
pub fn set_color_choice(choice: ColorChoice) {
    let _ = COLOR_CHOICE.set(choice);
}

/// The style for diagnostics written to stderr: the process's colour choice (`auto` unless set)
/// resolved against stderr and the environment.
pub fn stderr_style() -> Style {
    use std::io::IsTerminal;
    COLOR_CHOICE
        .get()
        .copied()
        .unwrap_or(ColorChoice::Auto)
        .resolve(std::io::stderr().is_terminal(), |name| {
            std::env::var_os(name)
        })
}

/// Keeps a span inside the file and on character boundaries, so rendering never panics.
/// The whole lines of a diagnostic's file that its spans touch.
struct Window<'a> {
    text: &'a str,
    /// Where `text` starts in the file.
    offset: usize,
    /// The 1-based line number of its first line.
    first_line: usize,
}

impl<'a> Window<'a> {
    fn of(diagnostic: &'a Diagnostic) -> Window<'a> {
        let source = &diagnostic.source;
        let text = source.text.as_str();
        let spans =
            std::iter::once(&diagnostic.span).chain(diagnostic.labels.iter().map(|l| &l.span));
        let (low, high) = spans.fold((usize::MAX, 0), |(low, high), span| {
            (low.min(span.start), high.max(span.end.max(span.start)))
        });
        let low = crate::source::floor_char_boundary(text, low.min(text.len()));
        let high = crate::source::floor_char_boundary(text, high.max(low));
        let first_line = source.line_col(low).line;
        let start = source.line_start(first_line).unwrap_or(0).min(low);
        let end = text
            .get(high..)
            .and_then(|rest| rest.find('\n'))
            .map_or(text.len(), |newline| high + newline + 1);
        Window {
            text: text.get(start..end).unwrap_or(""),
            offset: start,
            first_line,
        }
    }

    /// A span of the file as a span of the window (clamped to it and to character boundaries).
    fn relative(&self, span: std::ops::Range<usize>) -> std::ops::Range<usize> {
        let local = |at: usize| {
            let at = at.saturating_sub(self.offset).min(self.text.len());
            crate::source::floor_char_boundary(self.text, at)
        };
        let start = local(span.start);
        start..local(span.end).max(start)
    }
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
    fn color_choice_honours_no_color_and_clicolor_force() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| std::ffi::OsString::from(value))
            }
        };
        let auto = ColorChoice::Auto;
        assert_eq!(auto.resolve(true, env(&[])), Style::Colored);
        assert_eq!(auto.resolve(false, env(&[])), Style::Plain);
        assert_eq!(auto.resolve(true, env(&[("NO_COLOR", "1")])), Style::Plain);
        assert_eq!(auto.resolve(true, env(&[("NO_COLOR", "")])), Style::Colored);
        assert_eq!(
            auto.resolve(false, env(&[("CLICOLOR_FORCE", "1")])),
            Style::Colored
        );
        assert_eq!(
            auto.resolve(false, env(&[("CLICOLOR_FORCE", "0")])),
            Style::Plain
        );
        assert_eq!(
            auto.resolve(true, env(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")])),
            Style::Plain
        );
        let no_color = env(&[("NO_COLOR", "1")]);
        assert_eq!(ColorChoice::Always.resolve(false, no_color), Style::Colored);
        assert_eq!(ColorChoice::Never.resolve(true, env(&[])), Style::Plain);
        assert_eq!(ColorChoice::parse("sometimes"), None);
    }

    #[test]
    fn out_of_range_spans_do_not_panic() {
        let file = Arc::new(SourceFile::new("a.md", "é"));
        let diagnostic = Diagnostic::error(Code::YamlSyntax, &file, 1..99, "bad");
        assert!(render(&diagnostic, Style::Plain).contains("FKC0101"));
    }
}
