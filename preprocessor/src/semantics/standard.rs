//! The standard semantics of the built-in op kinds, read from the book chapter that documents
//! them (`book/semantics.md`, carried inside the binary): each ```` ```fkc-semantics ````
//! block gives an `op_kind` and its `semantics`. A contract without a `semantics` field uses
//! its op kind's.

use std::sync::OnceLock;

/// The chapter, as the book shows it.
pub const CHAPTER: &str = include_str!("../../../book/semantics.md");
/// The chapter's path in the book (where its blocks are located for diagnostics).
pub const CHAPTER_PATH: &str = "book/semantics.md";

/// One op kind's standard semantics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standard {
    pub op_kind: String,
    /// The pseudo-code.
    pub text: String,
    /// Where the pseudo-code starts in [`CHAPTER`] (its lines follow, indented by `indent`).
    pub offset: usize,
    pub indent: usize,
}

/// The standard semantics of `op_kind`, if the chapter defines it.
pub fn of(op_kind: &str) -> Option<&'static Standard> {
    all().iter().find(|s| s.op_kind == op_kind)
}

/// Every op kind the chapter defines.
pub fn all() -> &'static [Standard] {
    static ALL: OnceLock<Vec<Standard>> = OnceLock::new();
    ALL.get_or_init(|| read(CHAPTER))
}

/// Reads every block of a chapter: the lines of a ```` ```fkc-semantics ```` fence, `op_kind:`
/// then `semantics: |` and its indented lines.
pub fn read(chapter: &str) -> Vec<Standard> {
    let mut out = Vec::new();
    let mut lines = chapter.split_inclusive('\n').scan(0, |at, line| {
        let start = *at;
        *at += line.len();
        Some((start, line))
    });
    while let Some((_, line)) = lines.next() {
        if line.trim_end() != "```fkc-semantics" {
            continue;
        }
        let mut op_kind = None;
        let mut text = String::new();
        let (mut offset, mut indent) = (0, 0);
        let mut in_text = false;
        for (start, line) in lines.by_ref() {
            let trimmed = line.trim_end();
            if trimmed == "```" {
                break;
            }
            if in_text {
                let spaces = line.len() - line.trim_start_matches(' ').len();
                if trimmed.is_empty() {
                    text.push('\n');
                    continue;
                }
                if indent == 0 {
                    (indent, offset) = (spaces, start + spaces);
                }
                text.push_str(line.get(indent.min(spaces)..).unwrap_or(""));
            } else if let Some(kind) = trimmed.strip_prefix("op_kind: ") {
                op_kind = Some(kind.trim().to_owned());
            } else if trimmed == "semantics: |" {
                in_text = true;
            }
        }
        if let Some(op_kind) = op_kind {
            out.push(Standard {
                op_kind,
                text,
                offset,
                indent,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_chapter_defines_every_built_in_op_kind_and_each_parses() {
        let kinds: Vec<&str> = all().iter().map(|s| s.op_kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "Conv2D",
                "Conv2dSimple",
                "ConvTranspose2D",
                "MaxPool2D",
                "Contiguize",
                "Relu"
            ]
        );
        for standard in all() {
            super::super::parse(&standard.text).unwrap();
            let first = standard.text.lines().next().unwrap();
            assert!(CHAPTER[standard.offset..].starts_with(first));
        }
    }
}
