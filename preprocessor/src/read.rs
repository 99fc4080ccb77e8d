//! The reading stage: a chapter's front matter and ```` ```fkc ```` fences found, and each read
//! (YAML, fields, expressions resolved to slots) before any provider is asked. The build,
//! `repro`, the Judge and the planner's pricing all read chapters here and nowhere else.

use crate::chapter::{self, Fence, FrontMatterBlock};
use crate::contract::front_matter::{FrontMatter, read_front_matter};
use crate::contract::raw::{RawContract, read_contract};
use crate::contract::read_block;
use crate::contract::resolved::{Contract, resolve_expressions};
use crate::diag::{Diagnostic, has_errors};
use crate::parallel::parallel_map;
use crate::source::SourceFile;
use std::sync::Arc;

/// A chapter's FKC content, read.
#[derive(Debug)]
pub struct ChapterRead {
    pub source: Arc<SourceFile>,
    pub front_block: Option<FrontMatterBlock>,
    /// The front matter, when there is one and it reads.
    pub front: Option<FrontMatter>,
    /// What reading the front matter found (every diagnostic with its `help:`).
    pub front_found: Vec<Diagnostic>,
    pub fences: Vec<FenceRead>,
}

/// One fence, read.
#[derive(Debug)]
pub struct FenceRead {
    pub fence: Fence,
    pub raw: Option<RawContract>,
    /// What reading the YAML and its fields found.
    pub found: Vec<Diagnostic>,
    /// The contract with its expressions resolved, and what resolving them found; present
    /// whenever `raw` is.
    pub expressions: Option<(Contract, Vec<Diagnostic>)>,
}

impl ChapterRead {
    /// The front matter, when it read without an error.
    pub fn clean_front(&self) -> Option<&FrontMatter> {
        self.front
            .as_ref()
            .filter(|_| !has_errors(&self.front_found))
    }
}

impl FenceRead {
    /// Whether the contract is meant to run: neither an example that must fail nor
    /// spec-first (`unverified`).
    pub fn runs(&self) -> bool {
        let attributes = &self.fence.attributes;
        attributes.should_fail.is_none() && !attributes.unverified
    }

    /// The contract, when it is meant to run and read without an error.
    pub fn clean(&self) -> Option<(&RawContract, &Contract)> {
        let raw = self.raw.as_ref()?;
        let (contract, found) = self.expressions.as_ref()?;
        let errors = has_errors(&self.found) || has_errors(found);
        (self.runs() && !errors).then_some((raw, contract))
    }
}

/// Reads one chapter (`path`: how the author knows its file); `None` when it holds no FKC
/// content.
pub fn chapter(path: &str, content: &str) -> Option<ChapterRead> {
    chapters(&[(path, content)], 1).pop().flatten()
}

/// Reads every chapter, given as (path, content), on up to `threads` threads: each chapter is
/// searched for its front matter and fences, then every fence of the book is read (the unit of
/// work is a fence, so a chapter of many contracts does not hold the others up). `None` for a
/// chapter without FKC content (it is then left byte-identical).
pub fn chapters(chapters: &[(&str, &str)], threads: usize) -> Vec<Option<ChapterRead>> {
    let found = parallel_map(chapters, threads, |(path, content)| find(path, content));
    let fences: Vec<(&Arc<SourceFile>, &Fence)> = found
        .iter()
        .flatten()
        .flat_map(|found| found.fences.iter().map(move |fence| (&found.source, fence)))
        .collect();
    let mut reads = parallel_map(&fences, threads, |(source, fence)| {
        read_fence(source, fence)
    })
    .into_iter();
    found
        .into_iter()
        .map(|found| {
            let found = found?;
            let fences = reads.by_ref().take(found.fences.len()).collect();
            let (front, front_found) = match &found.front_block {
                Some(block) => read_front(&found.source, block),
                None => (None, Vec::new()),
            };
            Some(ChapterRead {
                source: found.source,
                front_block: found.front_block,
                front,
                front_found,
                fences,
            })
        })
        .collect()
}

/// A chapter's FKC content found, its fences not read yet.
struct Found {
    source: Arc<SourceFile>,
    front_block: Option<FrontMatterBlock>,
    fences: Vec<Fence>,
}

/// A chapter's front matter and fences; `None` when it holds no FKC content.
fn find(path: &str, content: &str) -> Option<Found> {
    let front_block = chapter::front_matter(content);
    let fences = chapter::fences(content, front_block.as_ref().map_or(0, |fm| fm.block.end));
    let front_block = front_block.filter(|fm| !fences.is_empty() || looks_like_fkc(content, fm));
    if fences.is_empty() && front_block.is_none() {
        return None;
    }
    Some(Found {
        source: Arc::new(SourceFile::new(path, content)),
        front_block,
        fences,
    })
}

/// Front matter without fences is FKC's only when it says so.
fn looks_like_fkc(content: &str, block: &FrontMatterBlock) -> bool {
    content.get(block.yaml.clone()).is_some_and(|yaml| {
        yaml.lines()
            .any(|line| line.starts_with("fkc_version") || line.starts_with("provider"))
    })
}

fn read_front(
    source: &Arc<SourceFile>,
    block: &FrontMatterBlock,
) -> (Option<FrontMatter>, Vec<Diagnostic>) {
    let yaml = source.slice(block.yaml.clone()).to_owned();
    let start = block.yaml.start;
    let (front, mut found) = read_block(source, &yaml, &|offset| start + offset, read_front_matter);
    found.iter_mut().for_each(Diagnostic::ensure_help);
    (front, found)
}

fn read_fence(source: &Arc<SourceFile>, fence: &Fence) -> FenceRead {
    let (raw, found) = read_block(
        source,
        &fence.body,
        &|offset| fence.file_offset(offset),
        read_contract,
    );
    let expressions = raw.as_ref().map(|raw| resolve_expressions(raw, source));
    FenceRead {
        fence: fence.clone(),
        raw,
        found,
        expressions,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A chapter with one clean contract: its front matter, and its contract's YAML.
    const CHAPTER: &str = include_str!("../../book/contracts/contiguize.md");

    fn front() -> &'static str {
        let end = CHAPTER[4..].find("\n---\n").unwrap() + 4 + 5;
        &CHAPTER[..end]
    }

    fn contract() -> &'static str {
        let start = CHAPTER.find("```fkc\n").unwrap() + 7;
        let end = start + CHAPTER[start..].find("```").unwrap();
        &CHAPTER[start..end]
    }

    fn fence(info: &str, body: &str) -> String {
        format!("```{info}\n{body}```\n\n")
    }

    #[test]
    fn a_chapter_without_fkc_content_is_not_read() {
        assert!(chapter("c.md", "# Plain\n\nNo contract here.\n").is_none());
        let foreign = "---\ntitle: other\n---\n# Plain\n";
        assert!(chapter("c.md", foreign).is_none());
        let bare = chapter("c.md", front()).unwrap();
        assert!(bare.fences.is_empty() && bare.clean_front().is_some());
    }

    #[test]
    fn only_clean_contracts_meant_to_run_are_clean() {
        let text = [
            front().to_owned(),
            fence("fkc", contract()),
            fence("fkc,should_fail=FKC0203", contract()),
            fence("fkc,unverified", contract()),
            fence("fkc", "kernel: [unclosed\n"),
        ]
        .concat();
        let read = chapter("c.md", &text).unwrap();
        let clean: Vec<bool> = read.fences.iter().map(|f| f.clean().is_some()).collect();
        assert_eq!(clean, [true, false, false, false]);
        let runs: Vec<bool> = read.fences.iter().map(FenceRead::runs).collect();
        assert_eq!(runs, [true, false, false, true]);
        assert!(has_errors(&read.fences[3].found));
    }

    #[test]
    fn chapters_read_on_threads_come_back_in_order() {
        let one = [front().to_owned(), fence("fkc", contract())].concat();
        let two = one.replace("kernel: contiguize", "kernel: other");
        let inputs = [
            ("1.md", one.as_str()),
            ("plain.md", "# x\n"),
            ("2.md", two.as_str()),
        ];
        let read = chapters(&inputs, 2);
        let kernels: Vec<Option<String>> = read
            .iter()
            .map(|r| {
                let fence = r.as_ref()?.fences.first()?;
                Some(fence.raw.as_ref()?.kernel.value.clone())
            })
            .collect();
        let expected = [
            Some("contiguize".to_owned()),
            None,
            Some("other".to_owned()),
        ];
        assert_eq!(kernels, expected);
    }

    #[test]
    fn a_front_matter_that_does_not_read_is_not_clean() {
        let text = [
            "---\nfkc_version: [\n---\n".to_owned(),
            fence("fkc", contract()),
        ]
        .concat();
        let read = chapter("c.md", &text).unwrap();
        assert!(read.clean_front().is_none());
        assert!(has_errors(&read.front_found));
    }
}
