//! Turns contracts and diagnostics into the HTML that replaces each fence: tera templates
//! embedded in the binary (overridable from a directory named in book.toml), every string
//! escaped, and the result shaped for mdBook's Markdown pass (no blank lines, so the HTML block
//! is never cut; no `{{`, so the `links` preprocessor that runs afterwards never sees a directive).

mod chart;
pub mod decorate;
pub mod evidence;
pub mod judge;
mod markup;
pub mod plan;
pub mod pseudo;
pub mod svg;
pub mod view;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;
use tera::{Context, Tera};
use view::{ContractView, ProviderView};

/// The built-in templates: (name, text).
const TEMPLATES: &[(&str, &str)] = &[
    (
        "style.html",
        include_str!("../../templates/style.html.tera"),
    ),
    ("rows.html", include_str!("../../templates/rows.html.tera")),
    (
        "figure.html",
        include_str!("../../templates/figure.html.tera"),
    ),
    (
        "provider.html",
        include_str!("../../templates/provider.html.tera"),
    ),
    (
        "contract.html",
        include_str!("../../templates/contract.html.tera"),
    ),
    (
        "diagnostics.html",
        include_str!("../../templates/diagnostics.html.tera"),
    ),
    (
        "banner.html",
        include_str!("../../templates/banner.html.tera"),
    ),
    (
        "inventory.html",
        include_str!("../../templates/inventory.html.tera"),
    ),
    (
        "judge.html",
        include_str!("../../templates/judge.html.tera"),
    ),
];

/// A template problem (only possible with user-supplied templates).
#[derive(Debug, Clone)]
pub struct RenderError(pub String);

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RenderError {}

/// The page renderer.
#[derive(Debug)]
pub struct Renderer {
    /// The compiled templates. The built-in ones are compiled on another thread from
    /// [`Renderer::new`] on (a few milliseconds that overlap reading and checking the book) and
    /// waited for at the first render; a book's own templates are compiled in `new`, so their
    /// errors show before anything is checked.
    tera: OnceLock<Result<Tera, RenderError>>,
    compiling: Mutex<Option<JoinHandle<Result<Tera, RenderError>>>>,
}

/// The templates, compiled with the filters they use.
fn compile(templates: Vec<(String, String)>) -> Result<Tera, RenderError> {
    let mut tera = Tera::default();
    tera.autoescape_on(vec![".html"]);
    tera.register_filter("linebreaks_as_entities", linebreaks_as_entities);
    tera.register_filter("code_spans", code_spans);
    tera.register_filter("code_links", code_links);
    tera.register_filter("hanging_lines", hanging_lines);
    tera.add_raw_templates(templates)
        .map_err(|error| RenderError(describe_tera_error(&error)))?;
    Ok(tera)
}

impl Renderer {
    /// The built-in templates, overridden by any `NAME.html.tera` file in `override_dir`.
    pub fn new(override_dir: Option<&Path>) -> Result<Self, RenderError> {
        let mut templates: Vec<(String, String)> = TEMPLATES
            .iter()
            .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
            .collect();
        let Some(dir) = override_dir else {
            return Ok(Renderer {
                tera: OnceLock::new(),
                compiling: Mutex::new(Some(std::thread::spawn(|| compile(templates)))),
            });
        };
        for (name, text) in &mut templates {
            let path = dir.join(format!("{name}.tera"));
            if path.is_file() {
                *text = std::fs::read_to_string(&path).map_err(|error| {
                    RenderError(format!("cannot read template {}: {error}", path.display()))
                })?;
            }
        }
        Ok(Renderer {
            tera: OnceLock::from(Ok(compile(templates)?)),
            compiling: Mutex::new(None),
        })
    }

    /// The compiled templates, waiting for their compilation if it is still running.
    fn tera(&self) -> Result<&Tera, RenderError> {
        let compiled = self.tera.get_or_init(|| {
            let compiling = self.compiling.lock().ok().and_then(|mut slot| slot.take());
            match compiling {
                Some(thread) => thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => Err(RenderError("the templates were not compiled".to_owned())),
            }
        });
        compiled.as_ref().map_err(Clone::clone)
    }

    fn render(&self, template: &str, context: &Context) -> Result<String, RenderError> {
        let html = self
            .tera()?
            .render(template, context)
            .map_err(|error| RenderError(describe_tera_error(&error)))?;
        Ok(shape_for_markdown(&html))
    }

    /// The stylesheet, once per chapter.
    pub fn style(&self) -> Result<String, RenderError> {
        self.render("style.html", &Context::new())
    }

    /// The provider card.
    pub fn provider(&self, provider: &ProviderView) -> Result<String, RenderError> {
        let mut context = Context::new();
        context.insert("provider", provider);
        self.render("provider.html", &context)
    }

    /// One contract.
    pub fn contract(&self, contract: &ContractView) -> Result<String, RenderError> {
        let mut context = Context::new();
        context.insert("c", contract);
        self.render("contract.html", &context)
    }

    /// The banner at the top of a page whose contracts fail (seen in `on-failure = "continue"`).
    pub fn banner(
        &self,
        failing: &[&crate::report::ContractSummary],
    ) -> Result<String, RenderError> {
        let mut context = Context::new();
        context.insert("failing", failing);
        self.render("banner.html", &context)
    }

    /// The table of every contract of the book; links are prefixed with `prefix` (the way up
    /// from the inventory's chapter to the book's root).
    pub fn inventory(
        &self,
        contracts: &[crate::report::ContractSummary],
        calibration: Option<&crate::calibration::Calibration>,
        prefix: &str,
    ) -> Result<String, RenderError> {
        let judges: Vec<_> = contracts
            .iter()
            .map(|c| {
                crate::render::judge::inventory_judge(calibration, &c.kernel, &c.revision_hash)
            })
            .collect();
        let mut context = Context::new();
        context.insert("contracts", contracts);
        context.insert("judges", &judges);
        context.insert("judge_command", &calibration.map(|c| c.command.as_str()));
        context.insert("prefix", prefix);
        let mut html = self.style()?;
        html.push_str(&self.render("inventory.html", &context)?);
        Ok(html)
    }

    /// A box of diagnostics: failures, or an example that fails as expected.
    pub fn diagnostics(
        &self,
        text: &str,
        expected: Option<&[String]>,
        source: Option<&str>,
    ) -> Result<String, RenderError> {
        self.diagnostics_linked(text, expected, source, "")
    }

    /// [`Renderer::diagnostics`] with every `FKCnnnn` linked to its section of the book's
    /// diagnostics index at `index_href` (no links when it is empty).
    pub fn diagnostics_linked(
        &self,
        text: &str,
        expected: Option<&[String]>,
        source: Option<&str>,
        index_href: &str,
    ) -> Result<String, RenderError> {
        let mut context = Context::new();
        context.insert("text", text);
        context.insert("expected", &expected);
        context.insert("source", &source);
        context.insert("index_href", index_href);
        self.render("diagnostics.html", &context)
    }
}

/// Links every `FKCnnnn` of already-escaped text to `href#fkcnnnn` (argument `href`; nothing
/// changes when it is empty). Use after `escape`, with `| safe`.
fn code_links(
    value: &tera::Value,
    args: &HashMap<String, tera::Value>,
) -> tera::Result<tera::Value> {
    let text = tera::try_get_value!("code_links", "value", String, value);
    let href = args.get("href").and_then(|h| h.as_str()).unwrap_or("");
    if href.is_empty() {
        return Ok(tera::Value::String(text));
    }
    let href = href.replace('"', "&quot;");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("FKC") {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let digits = from
            .get(3..7)
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()));
        match digits {
            Some(digits) => {
                out.push_str(&format!("<a href=\"{href}#fkc{digits}\">FKC{digits}</a>"));
                rest = from.get(7..).unwrap_or("");
            }
            None => {
                out.push_str("FKC");
                rest = from.get(3..).unwrap_or("");
            }
        }
    }
    out.push_str(rest);
    Ok(tera::Value::String(out))
}

fn linebreaks_as_entities(
    value: &tera::Value,
    _: &HashMap<String, tera::Value>,
) -> tera::Result<tera::Value> {
    let text = tera::try_get_value!("linebreaks_as_entities", "value", String, value);
    Ok(tera::Value::String(text.replace('\n', "&#10;")))
}

/// A diagnostic's (escaped) lines, each a block that wraps with a hanging indent: a wrapped
/// line goes on under its own text, right of the `782 | ` gutter or the `= note: ` label, so
/// the report reads at any width without scrolling. Use with `| safe`.
fn hanging_lines(
    value: &tera::Value,
    _: &HashMap<String, tera::Value>,
) -> tera::Result<tera::Value> {
    let text = tera::try_get_value!("hanging_lines", "value", String, value);
    let lines = text.trim_end_matches('\n').split('\n').map(|line| {
        let shown = if line.is_empty() { " " } else { line };
        format!(
            "<span class=\"fkc-dline\" style=\"--i:{}\">{shown}</span>",
            hanging_indent(&visible(line))
        )
    });
    Ok(tera::Value::String(lines.collect()))
}

/// The characters of an HTML line a reader sees at its start (tags dropped).
fn visible(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Where a report line's wrapped continuation starts: after the snippet gutter (`782 | `), the
/// `= note: `/`= help: ` label or the `--> ` arrow; two columns in otherwise.
fn hanging_indent(line: &str) -> usize {
    let body = line.trim_start();
    let lead = line.chars().count() - body.chars().count();
    if let Some(rest) = body.strip_prefix("= ")
        && let Some(colon) = rest.find(": ").filter(|at| *at <= 8)
    {
        return lead + 2 + rest[..colon].chars().count() + 2;
    }
    if body.starts_with("-->") {
        return lead + 4;
    }
    let after_number = body
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    if after_number.starts_with('|') {
        return line.chars().count() - after_number.chars().count() + 2;
    }
    2
}

/// Escapes text for HTML, then turns each `backticked` span into `<code>` (for generated
/// sentences such as the gate's evidence). Use with `| safe`.
fn code_spans(value: &tera::Value, _: &HashMap<String, tera::Value>) -> tera::Result<tera::Value> {
    let text = tera::try_get_value!("code_spans", "value", String, value);
    let escaped = tera::escape_html(&text);
    let mut out = String::with_capacity(escaped.len());
    for (index, piece) in escaped.split('`').enumerate() {
        if index % 2 == 1 {
            out.push_str("<code>");
            out.push_str(piece);
            out.push_str("</code>");
        } else {
            out.push_str(piece);
        }
    }
    if escaped.matches('`').count() % 2 == 1 {
        // An unmatched backtick: fall back to the plain escaped text.
        return Ok(tera::Value::String(escaped));
    }
    Ok(tera::Value::String(out))
}

fn describe_tera_error(error: &tera::Error) -> String {
    let mut message = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        cause = inner.source();
    }
    message
}

/// Makes rendered HTML safe to splice into Markdown: blank lines removed (a blank line would end
/// the HTML block and turn the rest into Markdown), lines unindented (four spaces would start a
/// code block), and `{{` escaped so the `links` preprocessor leaves it alone.
pub fn shape_for_markdown(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    for line in html.lines() {
        let line = line.trim_start();
        if line.is_empty() {
            continue;
        }
        out.push_str(&line.replace("{{", "&#123;&#123;"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn report_lines_wrap_under_their_own_text() {
        assert_eq!(hanging_indent("782 |     - { name: x }"), 6);
        assert_eq!(hanging_indent("    |       ^ every constraint"), 6);
        assert_eq!(
            hanging_indent("    = note: counterexample (shrunk, F32): x"),
            12
        );
        assert_eq!(
            hanging_indent("    = help: reproduce: mdbook-fkc repro"),
            12
        );
        assert_eq!(hanging_indent("   --> book/a.md:3:4"), 7);
        assert_eq!(hanging_indent("error[FKC0401]: the contract admits"), 2);
        let value = tera::Value::String(
            "error[<a href=\"i#fkc0401\">FKC0401</a>]: x\n\n  = note: a &lt; b\n".to_owned(),
        );
        let html = hanging_lines(&value, &HashMap::new()).unwrap();
        let html = html.as_str().unwrap();
        assert!(!html.contains('\n'), "{html}");
        assert_eq!(html.matches("class=\"fkc-dline\"").count(), 3, "{html}");
        assert!(
            html.contains("style=\"--i:10\">  = note: a &lt; b</span>"),
            "{html}"
        );
    }

    #[test]
    fn shaped_html_has_no_blank_lines_or_directives() {
        let shaped = shape_for_markdown("<div>\n\n    <p>{{#include x}}</p>\n</div>\n");
        assert_eq!(shaped, "<div>\n<p>&#123;&#123;#include x}}</p>\n</div>\n");
    }

    #[test]
    fn codes_link_to_the_index() {
        let mut args = HashMap::new();
        args.insert(
            "href".to_owned(),
            tera::Value::String("../diagnostics/index.html".to_owned()),
        );
        let text = tera::Value::String("error[FKC0402]: x FKC and FKC12".to_owned());
        let out = code_links(&text, &args).unwrap();
        assert_eq!(
            out,
            tera::Value::String(
                "error[<a href=\"../diagnostics/index.html#fkc0402\">FKC0402</a>]: x FKC and FKC12"
                    .to_owned()
            )
        );
        assert_eq!(code_links(&text, &HashMap::new()).unwrap(), text);
    }

    #[test]
    fn code_spans_escape_first() {
        let value = tera::Value::String("run `a<b>` & `c`".to_owned());
        let out = code_spans(&value, &HashMap::new()).unwrap();
        assert_eq!(
            out,
            tera::Value::String("run <code>a&lt;b&gt;</code> &amp; <code>c</code>".to_owned())
        );
        let odd = code_spans(&tera::Value::String("`<i>".to_owned()), &HashMap::new()).unwrap();
        assert_eq!(odd, tera::Value::String("`&lt;i&gt;".to_owned()));
    }

    #[test]
    fn diagnostics_are_escaped() {
        let renderer = Renderer::new(None).unwrap();
        let html = renderer
            .diagnostics(
                "error: <script>alert(1)</script>\nline two",
                None,
                Some("a: 1\n\nb: 2"),
            )
            .unwrap();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(html.contains("&#10;"), "{html}");
        assert!(!html.contains("\n\n"));
    }
}
