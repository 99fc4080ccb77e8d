//! A chapter's Markdown rebuilt around its rendered fences: the banner and provider card
//! under the title, each fence replaced by its HTML, errata's quotes filled in.

use super::*;

impl BookChecker<'_> {
    /// Renders a chapter once the gate has run on its contracts.
    pub(super) fn end(
        &self,
        work: ChapterWork,
        outcomes: Vec<Result<FenceOutcome, RenderError>>,
    ) -> Result<ChapterReport, RenderError> {
        let ChapterWork {
            source,
            front_block,
            front,
            mut report,
            prepared,
            ..
        } = work;
        let content = source.text.as_str();
        let first_fence = prepared.first().map(|p| p.fence.block.start);
        let mut fence_html = Vec::new();
        let mut failed_fences = Vec::new();
        for (prepared, outcome) in prepared.iter().zip(outcomes) {
            let outcome = outcome?;
            report.diagnostics.extend(outcome.diagnostics);
            report.contracts.extend(outcome.summary);
            let block = prepared.fence.block.clone();
            if prepared.fence.attributes.should_fail.is_some() {
                failed_fences.push(quote::FailedFence {
                    end: block.end,
                    samples: outcome.samples,
                });
            }
            fence_html.push((block, Piece::Block(outcome.html)));
        }
        let mut prelude = self.html(Renderer::style)?;
        let failing: Vec<&ContractSummary> =
            report.contracts.iter().filter(|c| c.failing).collect();
        if !failing.is_empty() {
            prelude.push_str(&self.html(|r| r.banner(&failing))?);
        }
        if let Some(front) = &front {
            prelude.push_str(&self.html(|r| r.provider(&provider_view(front)))?);
        }
        // The banner and the provider card go under the chapter's title when it comes first.
        let mut replacements: Vec<(Range<usize>, Piece)> = Vec::new();
        let body_start = front_block.as_ref().map_or(0, |block| block.block.end);
        if let Some(block) = &front_block {
            replacements.push((block.block.clone(), Piece::Block(String::new())));
        }
        let after_title = title_end(content, body_start)
            .filter(|end| first_fence.is_none_or(|start| *end <= start));
        let at = after_title.unwrap_or(body_start);
        replacements.push((at..at, Piece::Block(prelude)));
        replacements.extend(fence_html);
        let (quotes, unfilled) = quote::fill(&source, body_start, &failed_fences);
        report.diagnostics.extend(unfilled);
        replacements.extend(quotes.into_iter().map(|(at, q)| (at, Piece::Inline(q))));
        replacements.sort_by_key(|(range, _)| range.start);
        report.content = self
            .renderer
            .is_some()
            .then(|| splice(content, &replacements));
        Ok(report)
    }
}

/// The end of an ATX `# Title` line that starts the chapter body, if it has one.
fn title_end(content: &str, body_start: usize) -> Option<usize> {
    let body = content.get(body_start..)?;
    let trimmed = body.trim_start_matches(['\n', '\r']);
    let start = body_start + (body.len() - trimmed.len());
    if !trimmed.starts_with("# ") {
        return None;
    }
    Some(
        trimmed
            .find('\n')
            .map_or(content.len(), |end| start + end + 1),
    )
}

/// Rebuilds `content` with each range replaced (ranges are in order and do not overlap).
/// What replaces a range of the chapter: a block of HTML on lines of its own, or inline
/// Markdown within a line of prose.
enum Piece {
    Block(String),
    Inline(String),
}

fn splice(content: &str, replacements: &[(Range<usize>, Piece)]) -> String {
    let mut out = String::with_capacity(content.len() * 2);
    let mut cursor = 0;
    for (range, piece) in replacements {
        out.push_str(content.get(cursor..range.start).unwrap_or(""));
        cursor = range.end.max(cursor);
        let html = match piece {
            Piece::Inline(markdown) => {
                out.push_str(markdown);
                continue;
            }
            Piece::Block(html) if html.is_empty() => continue,
            Piece::Block(html) => html,
        };
        // A fence inside a block quote or a list item starts after its container's prefix
        // (`> `, indentation): every line of the HTML carries the same prefix, so the HTML
        // stays inside the container.
        let line_start = content
            .get(..range.start)
            .and_then(|before| before.rfind('\n'))
            .map_or(0, |i| i + 1);
        let prefix = content.get(line_start..range.start).unwrap_or("");
        let contained =
            !prefix.is_empty() && prefix.chars().all(|c| c == '>' || c == ' ' || c == '\t');
        if contained {
            for (index, line) in html.lines().enumerate() {
                if index > 0 {
                    out.push_str(prefix);
                }
                out.push_str(line);
                out.push('\n');
            }
            out.push_str(prefix.trim_end());
            out.push('\n');
            continue;
        }
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(html);
        out.push('\n');
    }
    out.push_str(content.get(cursor..).unwrap_or(""));
    out
}
