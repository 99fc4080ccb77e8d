//! The per-chapter pipeline (design §2): front matter and fences are found, each contract is
//! read, resolved and imported, and the chapter's Markdown is rebuilt with the rendered HTML in
//! place of each block. Each stage is a plain function of its input; diagnostics are collected
//! as data and formatted by the caller.

use crate::cache::{Cache, KeyParts};
use crate::chapter::{self, Fence, FrontMatterBlock};
use crate::contract::front_matter::FrontMatter;
use crate::contract::raw::RawContract;
use crate::diag::text::{self, Style};
use crate::diag::{Code, Diagnostic, has_errors};
use crate::parallel::parallel_map;
use crate::providers::{Provider, Providers};
use crate::quote;
use crate::read::{self, ChapterRead, FenceRead};
use crate::render::decorate::decorate;
use crate::render::plan::BookContracts;
use crate::render::view::{contract_view, provider_view};
use crate::render::{RenderError, Renderer};
use crate::report::{ChapterReport, ContractSummary};
use crate::resolve::{self, BookRegistry};
use crate::source::SourceFile;
use crate::verify::{self, Evidence, VerifyOptions};
use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

mod gate;
mod outcome;
mod page;
mod prepare;
mod repro;

/// What `mdbook-fkc check --deny` turns into errors: spec-first contracts (`unverified`) and
/// claims the gate could not check (`unchecked`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deny {
    /// Every ```` ```fkc,unverified ```` contract is an error (FKC0005).
    pub unverified: bool,
    /// Every claim of a verified contract that no check could decide is an error (FKC0007).
    pub unchecked: bool,
    /// A book without contracts is an error (`check` only; it warns otherwise).
    pub empty: bool,
}

/// Checks the chapters of one book, remembering what spans chapters (kernel names).
#[derive(Debug)]
pub struct BookChecker<'r> {
    /// `None` checks without rendering (`mdbook-fkc check`): no HTML is made.
    renderer: Option<&'r Renderer>,
    registry: BookRegistry,
    verify: VerifyOptions,
    providers: Providers,
    /// What `check --deny` makes an error.
    deny: Deny,
    /// The Judge's measurements, shown on each measured contract's page.
    calibration: Option<crate::calibration::Calibration>,
    /// The book's diagnostics index, from the book's root (`diagnostics/index.html`), if any:
    /// codes in error boxes link to it.
    diagnostics_index: Option<String>,
    /// The contracts worked examples price the planner's Contiguize step with, whatever
    /// chapter holds it ([`BookChecker::price_with`]); `None`: those of the chapters checked
    /// together that name their page (none: no priced plan is shown).
    book_contracts: Option<Arc<BookContracts>>,
    /// Where the gate's findings are kept (`None`: every contract is verified afresh).
    cache: Option<Cache>,
    /// Contracts verified at once (threads).
    jobs: usize,
}

/// A fence read and resolved, waiting for the gate.
struct Prepared {
    fence: Fence,
    raw: Option<RawContract>,
    resolved: Option<resolve::Resolved>,
    diagnostics: Vec<Diagnostic>,
    /// The gate runs on it: it imported cleanly, has a provider and is not spec-first.
    gated: bool,
}

/// A chapter read, its fences prepared: what the gate and then the rendering need.
struct ChapterWork {
    source: Arc<SourceFile>,
    front_block: Option<FrontMatterBlock>,
    front: Option<FrontMatter>,
    provider: Option<Arc<Provider>>,
    /// The chapter's own diagnostics so far (its front matter's).
    report: ChapterReport,
    prepared: Vec<Prepared>,
    /// The way up from the chapter's page to the book's root (`../`).
    prefix: String,
}

impl ChapterWork {
    /// The front matter's YAML as written ("" without one).
    fn front_yaml(&self) -> &str {
        self.front_block
            .as_ref()
            .map_or("", |block| self.source.slice(block.yaml.clone()))
    }
}

/// What the gate found on one fence: the evidence of what ran, and its diagnostics.
type Findings = (Evidence, Vec<Diagnostic>);

/// One chapter to check: how the author knows its file (`book/ch1.md`), its Markdown, the way
/// up from its page to the book's root (`../` per directory), and its page from the root
/// (`seed/ch1.html`) when its contracts may price other chapters' worked examples.
#[derive(Debug, Clone, Copy)]
pub struct ChapterInput<'a> {
    pub path: &'a str,
    pub content: &'a str,
    pub prefix: &'a str,
    pub page: Option<&'a str>,
}

/// Where a fence is rendered: its chapter's file, the fence, and the way up from the page to
/// the book's root (`../`).
struct Page<'a> {
    prefix: &'a str,
    source: &'a Arc<SourceFile>,
    fence: &'a Fence,
    /// The contracts that price its worked example's plan (`None`: no priced plan).
    book: Option<&'a BookContracts>,
}

struct FenceOutcome {
    html: String,
    diagnostics: Vec<Diagnostic>,
    summary: Option<ContractSummary>,
    /// A `should_fail` fence that failed as marked: the samples its errors name, for errata
    /// that quote them.
    samples: Option<Vec<(Code, String)>>,
}

impl<'r> BookChecker<'r> {
    /// A checker with the default sampling options.
    pub fn new(renderer: &'r Renderer) -> Self {
        Self::with_options(renderer, VerifyOptions::default())
    }

    /// A checker with explicit sampling options (and only the built-in provider).
    pub fn with_options(renderer: &'r Renderer, verify: VerifyOptions) -> Self {
        Self::with_providers(renderer, verify, Providers::default())
    }

    /// A checker with explicit sampling options and the book's providers.
    pub fn with_providers(
        renderer: &'r Renderer,
        verify: VerifyOptions,
        providers: Providers,
    ) -> Self {
        Self::built(Some(renderer), verify, providers)
    }

    fn built(renderer: Option<&'r Renderer>, verify: VerifyOptions, providers: Providers) -> Self {
        BookChecker {
            renderer,
            registry: BookRegistry::default(),
            verify,
            providers,
            deny: Deny::default(),
            calibration: None,
            diagnostics_index: None,
            book_contracts: None,
            cache: None,
            jobs: default_jobs(),
        }
    }

    /// Keeps what the gate found for each contract in `cache` and reuses it while nothing it
    /// depends on changes (`None`: no cache).
    pub fn with_cache(mut self, cache: Option<Cache>) -> Self {
        if let Some(cache) = &cache {
            fkc_provider::identity::remember_in(cache.dir());
        }
        self.cache = cache;
        self
    }

    /// Verifies up to `jobs` contracts of a chapter at once (at least 1; `None`: as many as
    /// the machine has threads). The results do not depend on it.
    pub fn with_jobs(mut self, jobs: Option<usize>) -> Self {
        self.jobs = jobs.map_or_else(default_jobs, |jobs| jobs.max(1));
        self
    }

    /// Links diagnostic codes in error boxes to the book's diagnostics index at `page` (from
    /// the book's root, e.g. `diagnostics/index.html`).
    pub fn link_codes_to(mut self, page: Option<String>) -> Self {
        self.diagnostics_index = page;
        self
    }

    /// Where codes link from a page `prefix` below the book's root ("" for no links).
    fn index_href(&self, prefix: &str) -> String {
        self.diagnostics_index
            .as_ref()
            .map_or_else(String::new, |page| format!("{prefix}{page}"))
    }

    /// A checker that renders nothing: reports carry diagnostics and contracts, no content.
    pub fn without_rendering(verify: VerifyOptions, providers: Providers) -> BookChecker<'static> {
        BookChecker::built(None, verify, providers)
    }

    /// Renders with `render`, or gives nothing when this checker does not render.
    fn html(
        &self,
        render: impl FnOnce(&Renderer) -> Result<String, RenderError>,
    ) -> Result<String, RenderError> {
        self.renderer.map_or(Ok(String::new()), render)
    }

    /// Shows the Judge's measurements (the calibration file beside the book) on contract pages.
    pub(crate) fn with_calibration(
        mut self,
        calibration: Option<crate::calibration::Calibration>,
    ) -> Self {
        self.calibration = calibration;
        self
    }

    /// Prices the planner's steps on worked examples with `contracts`, the whole book's,
    /// instead of the contracts of the chapters checked together.
    pub fn price_with(mut self, contracts: Arc<BookContracts>) -> Self {
        self.book_contracts = Some(contracts);
        self
    }

    /// Makes every unverified contract (FKC0005) or unchecked claim (FKC0007) an error.
    pub fn deny(mut self, deny: Deny) -> Self {
        self.deny = deny;
        self
    }

    /// Processes one chapter. `path` is how the author knows the file (e.g. `book/ch1.md`).
    pub fn chapter(&mut self, path: &str, content: &str) -> Result<ChapterReport, RenderError> {
        self.chapter_at(path, content, "")
    }

    /// [`BookChecker::chapter`] for a chapter whose page is `prefix` below the book's root
    /// (`../` per directory), so links to other pages resolve.
    pub fn chapter_at(
        &mut self,
        path: &str,
        content: &str,
        prefix: &str,
    ) -> Result<ChapterReport, RenderError> {
        let chapter = ChapterInput {
            path,
            content,
            prefix,
            page: None,
        };
        self.chapters(&[chapter])
            .pop()
            .unwrap_or_else(|| Ok(ChapterReport::default()))
    }

    /// Processes chapters in order: every chapter is read (on up to `jobs` threads) and
    /// resolved first, then the gate runs on all their contracts at once (up to `jobs` at a
    /// time, whichever chapter they are in) and renders each fence as soon as its findings are
    /// in, then each chapter is rebuilt around its fences. The reports are those
    /// [`BookChecker::chapter_at`] gives one by one. Worked examples are priced with the
    /// contracts of the chapters that name their page, unless [`BookChecker::price_with`]
    /// gave others.
    pub fn chapters(
        &mut self,
        chapters: &[ChapterInput<'_>],
    ) -> Vec<Result<ChapterReport, RenderError>> {
        let paths: Vec<(&str, &str)> = chapters.iter().map(|c| (c.path, c.content)).collect();
        let read = read::chapters(&paths, self.jobs);
        let works: Vec<Option<ChapterWork>> = chapters
            .iter()
            .zip(read)
            .map(|(input, read)| self.begin(input.prefix, read?))
            .collect();
        let own = chapters.iter().any(|c| c.page.is_some());
        let book = match &self.book_contracts {
            Some(given) => Some(Arc::clone(given)),
            None => own.then(|| Arc::new(priced_with(chapters, &works))),
        };
        let present: Vec<&ChapterWork> = works.iter().flatten().collect();
        let mut outcomes = self.gate(&present, book.as_deref()).into_iter();
        works
            .into_iter()
            .map(|work| match work {
                Some(work) => {
                    let outcomes = outcomes.by_ref().take(work.prepared.len()).collect();
                    self.end(work, outcomes)
                }
                None => Ok(ChapterReport::default()),
            })
            .collect()
    }
}

/// The threads the machine offers.
fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The provider of a fence the gate runs on (`None`: the gate does not run on it).
fn gated_by<'w>(work: &'w ChapterWork, prepared: &Prepared) -> Option<&'w Provider> {
    work.provider.as_deref().filter(|_| prepared.gated)
}

/// The contracts of `works` that price worked examples: those of chapters that name their
/// page, read and resolved without an error, neither examples that must fail nor spec-first.
fn priced_with(inputs: &[ChapterInput<'_>], works: &[Option<ChapterWork>]) -> BookContracts {
    let mut contracts = BookContracts::default();
    for (input, work) in inputs.iter().zip(works) {
        let (Some(page), Some(work)) = (input.page, work) else {
            continue;
        };
        for prepared in &work.prepared {
            let attributes = &prepared.fence.attributes;
            if attributes.should_fail.is_some()
                || attributes.unverified
                || has_errors(&prepared.diagnostics)
            {
                continue;
            }
            if let (Some(raw), Some(resolved)) = (&prepared.raw, &prepared.resolved) {
                contracts.add(page, raw, &resolved.contract);
            }
        }
    }
    contracts
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const CHAPTER: &str = include_str!("../../../book/contracts/contiguize.md");

    #[test]
    fn checking_without_rendering_makes_no_html_but_the_same_report() {
        let mut checking =
            BookChecker::without_rendering(VerifyOptions::default(), Providers::default());
        let checked = checking.chapter("c.md", CHAPTER).unwrap();
        let renderer = Renderer::new(None).unwrap();
        let mut rendering = BookChecker::new(&renderer);
        let rendered = rendering.chapter("c.md", CHAPTER).unwrap();
        assert!(checked.content.is_none());
        let html = rendered.content.unwrap_or_default();
        assert!(html.contains("<table"));
        assert!(
            !html.contains("<tbody>\n</tbody>"),
            "an empty table: {html}"
        );
        assert_eq!(checked.contracts.len(), 1);
        assert_eq!(
            checked.contracts[0].evidence,
            rendered.contracts[0].evidence
        );
        assert!(!checked.contracts[0].evidence.is_empty());
        assert!(checked.diagnostics.iter().all(|d| !d.is_error()));
    }

    #[test]
    fn codes_in_error_boxes_link_to_the_diagnostics_index_when_the_book_has_one() {
        let broken = CHAPTER.replace("dtypes: [F32, F64, BF16, F16]", "dtypes: [F32, F8]");
        let renderer = Renderer::new(None).unwrap();
        let mut linked =
            BookChecker::new(&renderer).link_codes_to(Some("diagnostics/index.html".to_owned()));
        let html = linked
            .chapter_at("c.md", &broken, "../")
            .unwrap()
            .content
            .unwrap();
        assert!(
            html.contains("<a href=\"../diagnostics/index.html#fkc0107\">FKC0107</a>"),
            "{html}"
        );
        let mut plain = BookChecker::new(&renderer);
        let html = plain.chapter("c.md", &broken).unwrap().content.unwrap();
        assert!(html.contains("FKC0107") && !html.contains("#fkc0107"));
    }
}
