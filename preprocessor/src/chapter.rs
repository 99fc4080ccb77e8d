//! Finds what a chapter holds for FKC: its YAML front matter and its ```` ```fkc ```` fences,
//! found with mdBook's own Markdown parser so that a fence counts exactly when mdBook would
//! render it as a code block. Every piece keeps its byte range in the chapter file.

use mdbook_markdown::pulldown_cmark::{CodeBlockKind, Event, Tag, TagEnd};
use mdbook_markdown::{MarkdownOptions, new_cmark_parser};
use std::ops::Range;

/// The language tag that marks a contract fence.
pub const FENCE_LANGUAGE: &str = "fkc";

/// A `---` delimited YAML block at the very top of a chapter.
#[derive(Debug, Clone)]
pub struct FrontMatterBlock {
    /// The whole block including both `---` lines and the final newline.
    pub block: Range<usize>,
    /// The YAML text between the delimiters.
    pub yaml: Range<usize>,
}

/// One ```` ```fkc ```` fence.
#[derive(Debug, Clone)]
pub struct Fence {
    /// The whole fence, from the opening backticks to the end of the closing line.
    pub block: Range<usize>,
    /// The info string's attributes after the language tag.
    pub attributes: FenceAttributes,
    /// The body as mdBook sees it (container prefixes such as `> ` removed).
    pub body: String,
    /// Where each piece of `body` comes from: (offset in body, offset in the file).
    pub segments: Vec<(usize, usize)>,
    /// Byte offset of the info string in the file (for diagnostics about attributes).
    pub info_offset: usize,
}

/// Attributes written after the language tag: ```` ```fkc,should_fail=FKC0203 ````.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FenceAttributes {
    /// Diagnostic codes this fence must fail with, exactly (for the diagnostics index and errata).
    pub should_fail: Option<Vec<String>>,
    /// ```` ```fkc,unverified ````: a spec-first contract, parsed and resolved but not run.
    pub unverified: bool,
    /// Attributes this version does not know (reported as an error).
    pub unknown: Vec<String>,
}

impl Fence {
    /// Maps a byte offset in the fence body back to a byte offset in the chapter file.
    pub fn file_offset(&self, body_offset: usize) -> usize {
        let index = self
            .segments
            .partition_point(|&(body_start, _)| body_start <= body_offset)
            .saturating_sub(1);
        match self.segments.get(index) {
            Some(&(body_start, file_start)) => file_start + (body_offset - body_start),
            None => self.block.start,
        }
    }
}

/// Finds the front matter: the chapter starts with a `---` line and a later line is `---`.
pub fn front_matter(text: &str) -> Option<FrontMatterBlock> {
    let first_line_end = text.find('\n')?;
    if text.get(..first_line_end)?.trim_end_matches('\r') != "---" {
        return None;
    }
    let yaml_start = first_line_end + 1;
    let mut line_start = yaml_start;
    while line_start < text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i);
        if text[line_start..line_end].trim_end_matches('\r') == "---" {
            let block_end = (line_end + 1).min(text.len());
            return Some(FrontMatterBlock {
                block: 0..block_end,
                yaml: yaml_start..line_start,
            });
        }
        line_start = line_end + 1;
    }
    None
}

/// Finds every ```` ```fkc ```` fence in `text[from..]`, with ranges relative to `text`.
pub fn fences(text: &str, from: usize) -> Vec<Fence> {
    let markdown = text.get(from..).unwrap_or("");
    let mut found = Vec::new();
    let mut current: Option<Fence> = None;
    for (event, range) in new_cmark_parser(markdown, &MarkdownOptions::default()).into_offset_iter()
    {
        let range = (range.start + from)..(range.end + from);
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                current = fence_start(text, &info, range);
            }
            Event::Text(body) => {
                if let Some(fence) = current.as_mut() {
                    fence.segments.push((fence.body.len(), range.start));
                    fence.body.push_str(&body);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(mut fence) = current.take() {
                    fence.block.end = range.end;
                    found.push(fence);
                }
            }
            _ => {}
        }
    }
    found
}

fn fence_start(text: &str, info: &str, range: Range<usize>) -> Option<Fence> {
    let mut parts = info.split([',', ' ', '\t']).filter(|part| !part.is_empty());
    if parts.next()? != FENCE_LANGUAGE {
        return None;
    }
    let attributes = parse_attributes(parts);
    let opening = text.get(range.clone()).unwrap_or("");
    let info_offset = range.start + opening.find(FENCE_LANGUAGE).unwrap_or(0);
    Some(Fence {
        block: range,
        attributes,
        body: String::new(),
        segments: Vec::new(),
        info_offset,
    })
}

fn parse_attributes<'a>(parts: impl Iterator<Item = &'a str>) -> FenceAttributes {
    let mut attributes = FenceAttributes::default();
    for part in parts {
        match part.split_once('=') {
            Some(("should_fail", codes)) => {
                attributes.should_fail = Some(
                    codes
                        .split('+')
                        .filter(|code| !code.is_empty())
                        .map(str::to_owned)
                        .collect(),
                );
            }
            None if part == "unverified" => attributes.unverified = true,
            _ => attributes.unknown.push(part.to_owned()),
        }
    }
    attributes
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn front_matter_is_found_only_at_the_top() {
        let text = "---\nfkc_version: 1\n---\n# Title\n";
        let fm = front_matter(text).unwrap();
        assert_eq!(&text[fm.yaml.clone()], "fkc_version: 1\n");
        assert_eq!(&text[fm.block.end..], "# Title\n");
        assert!(front_matter("# Title\n---\na: 1\n---\n").is_none());
        assert!(front_matter("---\nno closing line\n").is_none());
    }

    #[test]
    fn fences_are_found_as_mdbook_parses_them() {
        let text = "intro ` ```fkc ` inline\n\n```fkc\nkernel: a\n```\n\n```rust\nfn x() {}\n```\n\n    ```fkc\n    indented code, not a fence\n";
        let found = fences(text, 0);
        assert_eq!(found.len(), 1);
        let fence = &found[0];
        assert_eq!(fence.body, "kernel: a\n");
        assert_eq!(&text[fence.file_offset(0)..fence.file_offset(6)], "kernel");
        assert_eq!(fence.attributes, FenceAttributes::default());
    }

    #[test]
    fn fences_inside_block_quotes_map_back_to_the_file() {
        let text = "> ```fkc\n> kernel: a\n> op: b\n> ```\n";
        let fence = &fences(text, 0)[0];
        assert_eq!(fence.body, "kernel: a\nop: b\n");
        let op = fence.body.find("op").unwrap();
        assert_eq!(
            &text[fence.file_offset(op)..fence.file_offset(op) + 2],
            "op"
        );
    }

    #[test]
    fn should_fail_attribute_lists_codes() {
        let text = "```fkc,should_fail=FKC0101+FKC0102,frobnicate\nx: 1\n```\n";
        let fence = &fences(text, 0)[0];
        assert_eq!(
            fence.attributes.should_fail,
            Some(vec!["FKC0101".to_owned(), "FKC0102".to_owned()])
        );
        assert_eq!(fence.attributes.unknown, vec!["frobnicate".to_owned()]);
    }
}
