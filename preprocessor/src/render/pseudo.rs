//! A contract's semantics as the page shows them: the pseudo-code, highlighted (keywords,
//! numbers, functions, comments), escaped, its line breaks as entities for mdBook's Markdown pass.

use super::markup::escape;
use crate::contract::semantic::{Origin, Semantics};
use crate::semantics::{Highlight, highlight};

/// The semantics card of a contract.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SemanticsView {
    /// Where they come from, in words (`` the contract's own ``, `` the standard semantics of `Conv2D` ``).
    pub origin: String,
    /// The pseudo-code as HTML.
    pub html: String,
}

/// The view of `semantics`.
pub fn semantics_view(semantics: &Semantics) -> SemanticsView {
    SemanticsView {
        origin: match &semantics.origin {
            Origin::Own => "the contract's own `semantics`".to_owned(),
            Origin::Standard(kind) => format!("the standard semantics of `{kind}`"),
        },
        html: highlighted(&semantics.text),
    }
}

/// `text` as HTML, each highlighted token in a `<span class="fkc-sem-…">`.
pub fn highlighted(text: &str) -> String {
    let mut html = String::new();
    let mut at = 0;
    for (range, class) in highlight(text) {
        let (Some(before), Some(token)) = (text.get(at..range.start), text.get(range.clone()))
        else {
            continue;
        };
        html.push_str(&escape(before));
        match class_name(class) {
            Some(name) => html.push_str(&format!(
                "<span class=\"fkc-sem-{name}\">{}</span>",
                escape(token)
            )),
            None => html.push_str(&escape(token)),
        }
        at = range.end;
    }
    html.push_str(&escape(text.get(at..).unwrap_or_default()));
    html.trim_end().replace('\n', "&#10;")
}

/// The CSS class of a token's kind (`None`: shown plain).
fn class_name(class: Highlight) -> Option<&'static str> {
    match class {
        Highlight::Keyword => Some("kw"),
        Highlight::Number => Some("num"),
        Highlight::Function => Some("fn"),
        Highlight::Comment => Some("cm"),
        Highlight::Name | Highlight::Operator => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_numbers_functions_and_comments_are_marked_and_text_is_escaped() {
        let html = highlighted("for i in 0..n:  # each i\n  out[i] = max(x[i], 0) && a < b\n");
        assert!(
            html.starts_with("<span class=\"fkc-sem-kw\">for</span> i "),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"fkc-sem-num\">0</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"fkc-sem-fn\">max</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"fkc-sem-cm\"># each i</span>"),
            "{html}"
        );
        assert!(html.contains("&amp;&amp; a &lt; b"), "{html}");
        assert!(!html.contains('\n') && html.contains("&#10;"), "{html}");
    }
}
