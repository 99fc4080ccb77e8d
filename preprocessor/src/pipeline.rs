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

    /// Asks a chapter's provider and prepares its fences, read by [`read::chapters`].
    fn begin(&mut self, prefix: &str, read: ChapterRead) -> Option<ChapterWork> {
        let ChapterRead {
            source,
            front_block,
            front,
            front_found: mut front_diagnostics,
            fences,
        } = read;
        let mut report = ChapterReport::default();
        // Where the chapter's provider failed, when it did (it could not start, greet or
        // describe itself, or serves another registry): its contracts are not verified.
        let mut provider_failed = None;
        let provider = match &front {
            Some(front) => {
                let (provider, found) =
                    crate::import::check_provider(&source, front, &mut self.providers);
                let failed = |d: &&Diagnostic| {
                    matches!(
                        d.code,
                        Code::ProviderStart
                            | Code::ProviderProtocol
                            | Code::ProviderRegistryMismatch
                            | Code::ProviderDescription
                    )
                };
                provider_failed = found.iter().find(failed).map(|d| {
                    let at = source.line_col(d.span.start);
                    format!("{}:{}:{} ({})", source.path, at.line, at.column, d.code)
                });
                front_diagnostics.extend(found);
                front_diagnostics
                    .iter_mut()
                    .for_each(Diagnostic::ensure_help);
                provider
            }
            None => None,
        };
        // Problems of the front matter are the chapter's, except in a diagnostics example whose
        // first fence must fail: that fence claims them, so the index can show these codes too.
        let first_claims = fences
            .first()
            .is_some_and(|f| f.fence.attributes.should_fail.is_some());
        let mut inherited = Vec::new();
        if first_claims {
            inherited = front_diagnostics;
        } else {
            report.diagnostics.extend(front_diagnostics);
        }
        let mut prepared = Vec::new();
        for read in fences {
            let mut context = std::mem::take(&mut inherited);
            if front_block.is_none() {
                context.push(missing_front_matter(&source, &read.fence));
            }
            if let Some(at) = &provider_failed {
                context.extend(not_verified(&source, &read, at));
            }
            prepared.push(self.prepare(
                &source,
                read,
                front.as_ref(),
                provider.as_deref(),
                context,
            ));
        }
        Some(ChapterWork {
            source,
            front_block,
            front,
            provider,
            report,
            prepared,
            prefix: prefix.to_owned(),
        })
    }

    /// Renders a chapter once the gate has run on its contracts.
    fn end(
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

    /// Reads and resolves one fence: everything before the behavioural gate.
    fn prepare(
        &mut self,
        source: &Arc<SourceFile>,
        read: FenceRead,
        front: Option<&FrontMatter>,
        provider: Option<&Provider>,
        inherited: Vec<Diagnostic>,
    ) -> Prepared {
        let FenceRead {
            fence,
            raw,
            found,
            expressions,
        } = read;
        let mut diagnostics = inherited;
        diagnostics.extend(attribute_errors(source, &fence));
        diagnostics.extend(found);
        let expected = fence.attributes.should_fail.as_deref();
        let unverified = fence.attributes.unverified;
        if unverified && self.deny.unverified {
            diagnostics.push(
                Diagnostic::error(
                    Code::UnverifiedDenied,
                    source,
                    fence.info_offset..fence.info_offset + chapter::FENCE_LANGUAGE.len(),
                    "this contract is marked unverified, and `--deny unverified` is set",
                )
                .with_label("spec-first contract")
                .with_help(
                    "implement the kernel and remove `,unverified` so the gate proves the contract",
                ),
            );
        }
        // A spec-first contract is resolved without its provider: its kernel may not exist yet.
        let provider = provider.filter(|_| !unverified);
        let resolved = raw.as_ref().zip(expressions).map(|(raw, expressions)| {
            let (resolved, found) = resolve::resolve(
                raw,
                expressions,
                front,
                provider,
                source,
                &mut self.registry,
                expected.is_none(),
            );
            diagnostics.extend(found);
            resolved
        });
        // The behavioural gate runs only on a contract that imported cleanly.
        let gated = raw.is_some()
            && resolved.is_some()
            && provider.is_some()
            && !has_errors(&diagnostics)
            && !unverified;
        Prepared {
            fence,
            raw,
            resolved,
            diagnostics,
            gated,
        }
    }

    /// Runs the behavioural gate on every prepared fence of `works` that imported cleanly —
    /// from the cache when nothing it depends on changed since it last ran, otherwise afresh —
    /// and renders every fence with what was found, on up to `jobs` threads across all the
    /// chapters (each contract's result depends only on the contract, never on the thread
    /// count). One outcome per fence, in the chapters' order.
    fn gate(
        &self,
        works: &[&ChapterWork],
        book: Option<&BookContracts>,
    ) -> Vec<Result<FenceOutcome, RenderError>> {
        let builtin = self.providers.builtin();
        let key = |work: &ChapterWork, prepared: &Prepared| {
            let provider = gated_by(work, prepared)?;
            let cache = self.cache.as_ref()?;
            let parts = KeyParts {
                provider: &provider.identity()?,
                builtin: &builtin.identity()?,
                options: self.verify,
                path: &work.source.path,
                front_matter: work.front_yaml(),
                contract: work.source.slice(prepared.fence.block.clone()),
            };
            Some((cache, Cache::key(&parts)))
        };
        // (chapter, fence, cache key, findings in the cache) for every fence.
        let fences: Vec<_> = works
            .iter()
            .flat_map(|work| work.prepared.iter().map(move |p| (*work, p)))
            .map(|(work, prepared)| {
                let key = key(work, prepared);
                let cached = key.as_ref().and_then(|(cache, key)| {
                    cache.load(key, &work.source, prepared.fence.block.start)
                });
                (work, prepared, key, cached)
            })
            .collect();
        let none = Findings::default();
        let done = parallel_map(&fences, self.jobs, |(work, prepared, _, cached)| {
            let fresh = match (cached, gated_by(work, prepared)) {
                (None, Some(provider)) => Some(self.verify_fence(work, prepared, provider)),
                _ => None,
            };
            let page = Page {
                prefix: &work.prefix,
                source: &work.source,
                fence: &prepared.fence,
                book,
            };
            let findings = fresh.as_ref().or(cached.as_ref()).unwrap_or(&none);
            let outcome = self.finish(&page, prepared, findings);
            (fresh, outcome)
        });
        // A second answer to a call may still be on its way when the call's contract is done.
        self.providers.settle();
        fences
            .iter()
            .zip(done)
            .map(|((work, prepared, key, _), (mut fresh, mut outcome))| {
                if let Some(findings) = fresh.as_mut()
                    && self.late_faults(work, prepared, &mut findings.1)
                {
                    let page = Page {
                        prefix: &work.prefix,
                        source: &work.source,
                        fence: &prepared.fence,
                        book,
                    };
                    outcome = self.finish(&page, prepared, findings);
                }
                if let (Some((cache, key)), Some((evidence, found))) = (key, fresh) {
                    cache.store(key, &evidence, &found, &prepared.fence.block);
                }
                outcome
            })
            .collect()
    }

    /// Adds to `found` the protocol faults its provider committed on calls of the fence's
    /// entry points after those calls returned (a second answer); true when there were any.
    fn late_faults(
        &self,
        work: &ChapterWork,
        prepared: &Prepared,
        found: &mut Vec<Diagnostic>,
    ) -> bool {
        let (Some(provider), Some(raw), Some(resolved)) =
            (gated_by(work, prepared), &prepared.raw, &prepared.resolved)
        else {
            return false;
        };
        let symbols: Vec<&str> = resolved
            .import
            .entry_points
            .iter()
            .map(|e| e.symbol.as_str())
            .collect();
        let faults = provider.faults_of(&symbols);
        let span = raw
            .entry_point
            .as_ref()
            .map_or(raw.kernel.span.clone(), |e| e.span.clone());
        for fault in &faults {
            let crash = crate::providers::Crash::Protocol(fault.message.clone());
            found.push(
                Diagnostic::error(
                    crash.code(),
                    &work.source,
                    span.clone(),
                    format!("`{}`: {crash}", fault.symbol),
                )
                .with_label("this entry point")
                .with_help(crash.help()),
            );
        }
        !faults.is_empty()
    }

    /// The gate's findings on one fence that imported cleanly, run afresh.
    fn verify_fence(
        &self,
        work: &ChapterWork,
        prepared: &Prepared,
        provider: &Provider,
    ) -> Findings {
        match (&prepared.raw, &prepared.resolved) {
            (Some(raw), Some(resolved)) => verify::verify(
                raw,
                &resolved.contract,
                &resolved.import,
                provider,
                self.providers.builtin(),
                &work.source,
                self.verify,
            ),
            _ => Findings::default(),
        }
    }

    /// What a prepared fence turns into once the gate has run on it: its HTML and findings,
    /// on its page.
    fn finish(
        &self,
        page: &Page<'_>,
        prepared: &Prepared,
        (evidence, found): &Findings,
    ) -> Result<FenceOutcome, RenderError> {
        let Prepared {
            fence,
            raw,
            resolved,
            diagnostics,
            ..
        } = prepared;
        let mut diagnostics: Vec<Diagnostic> = diagnostics.iter().chain(found).cloned().collect();
        if self.deny.unchecked
            && fence.attributes.should_fail.is_none()
            && !has_errors(&diagnostics)
            && let Some(raw) = raw
        {
            diagnostics.extend(unchecked_denied(page.source, raw, evidence));
        }
        diagnostics.iter_mut().for_each(Diagnostic::ensure_help);
        match fence.attributes.should_fail.as_deref() {
            Some(codes) => self.expected_failure(page, codes, diagnostics),
            None if has_errors(&diagnostics) => self.failure(page, raw.as_ref(), diagnostics),
            None => match (raw, resolved) {
                (Some(raw), Some(resolved)) => {
                    self.success(page, raw, resolved, evidence, diagnostics)
                }
                (raw, _) => self.failure(page, raw.as_ref(), diagnostics),
            },
        }
    }

    fn success(
        &self,
        page: &Page<'_>,
        raw: &RawContract,
        resolved: &resolve::Resolved,
        evidence: &Evidence,
        diagnostics: Vec<Diagnostic>,
    ) -> Result<FenceOutcome, RenderError> {
        let (source, fence) = (page.source, page.fence);
        let at = source.line_col(fence.block.start);
        let mut view = contract_view(raw, &fence.body, format!("{}:{}", source.path, at.line));
        decorate(&mut view, resolved, evidence, &diagnostics);
        let (worked, book) = (evidence.worked.as_ref(), page.book);
        crate::render::plan::attach(&mut view, raw, worked, book, page.prefix);
        view.verified_with = format!(
            "mdbook-fkc {}, seed {:#x}, samples = {}: drawn per contract, then edge, coverage and grown samples on top, as the domain row counts them",
            env!("CARGO_PKG_VERSION"),
            self.verify.seed,
            self.verify.samples
        );
        let verified = !fence.attributes.unverified;
        if !verified {
            view.unchecked.clear();
            view.badges.retain(|b| !b.label.starts_with("verified"));
            view.badges.insert(
                0,
                crate::render::view::Badge {
                    label: "not verified (spec-first)".to_owned(),
                    kind: "warn",
                },
            );
            view.evidence = vec![crate::render::view::Row {
                field: "not verified".to_owned(),
                value: "marked ```fkc,unverified```: parsed and resolved, but no kernel was run and no claim was checked".replace("```", "`"),
                code: false,
                note: None,
            }];
        }
        let summary = ContractSummary {
            kernel: raw.kernel.value.clone(),
            file: source.path.clone(),
            line: at.line,
            registrable: resolved.registrable,
            revision_hash: resolved.revision_hash.clone(),
            blurb: raw.blurb.as_ref().map(|b| b.value.clone()),
            dtypes: crate::import::declared_dtypes(raw)
                .iter()
                .map(|d| d.name().to_owned())
                .collect(),
            anchor: view.anchor.clone(),
            checks: evidence.rows.len(),
            verified,
            failing: false,
            evidence: evidence.rows.clone(),
            unchecked: if verified {
                evidence.unchecked.clone()
            } else {
                Vec::new()
            },
            link: String::new(),
        };
        view.judge = self.calibration.as_ref().and_then(|calibration| {
            crate::render::judge::view(calibration, &raw.kernel.value, &resolved.revision_hash)
        });
        Ok(FenceOutcome {
            samples: None,
            html: self.html(|r| r.contract(&view))?,
            diagnostics,
            summary: Some(summary),
        })
    }

    /// The card of a contract that failed: what it claims, marked failing, with nothing
    /// claimed as verified (its own anchor suffixed, the error box above holds the contract's).
    fn failing_card(&self, page: &Page<'_>, raw: &RawContract) -> Result<String, RenderError> {
        let at = page.source.line_col(page.fence.block.start);
        let location = format!("{}:{}", page.source.path, at.line);
        let mut view = contract_view(raw, &page.fence.body, location);
        view.anchor = format!("{}-card", view.anchor);
        view.badges.insert(
            0,
            crate::render::view::Badge {
                label: "failing: see the error above".to_owned(),
                kind: "error",
            },
        );
        self.html(|r| r.contract(&view))
    }

    /// A contract that fails: an error box (with an id, so the page's banner and the inventory
    /// can link to it), and — when its kernel name could be read — a failing summary.
    fn failure(
        &self,
        page: &Page<'_>,
        raw: Option<&RawContract>,
        diagnostics: Vec<Diagnostic>,
    ) -> Result<FenceOutcome, RenderError> {
        let (source, fence) = (page.source, page.fence);
        let shown: Vec<Diagnostic> = diagnostics
            .iter()
            .filter(|d| d.is_error())
            .cloned()
            .collect();
        let text = text::render_each(&shown, Style::Plain);
        let at = source.line_col(fence.block.start);
        let summary = raw.map(|raw| ContractSummary {
            kernel: raw.kernel.value.clone(),
            file: source.path.clone(),
            line: at.line,
            registrable: raw.registrable.as_ref().is_none_or(|r| r.value),
            revision_hash: String::new(),
            blurb: raw.blurb.as_ref().map(|b| b.value.clone()),
            dtypes: crate::import::declared_dtypes(raw)
                .iter()
                .map(|d| d.name().to_owned())
                .collect(),
            anchor: crate::render::view::anchor(&raw.kernel.value),
            checks: 0,
            verified: true,
            failing: true,
            evidence: Vec::new(),
            unchecked: Vec::new(),
            link: String::new(),
        });
        let href = self.index_href(page.prefix);
        // A contract that was read keeps its card under the error box (which then needs no
        // copy of the source: the card has it).
        let card = raw.map(|raw| self.failing_card(page, raw)).transpose()?;
        let source = card.is_none().then_some(fence.body.as_str());
        let mut html = self.html(|r| r.diagnostics_linked(&text, None, source, &href))?;
        html.push_str(card.as_deref().unwrap_or_default());
        if let Some(summary) = &summary
            && !html.is_empty()
        {
            // The anchor is a slug of letters, digits and dashes (render::view::anchor).
            html = format!("<div id=\"{}\">\n{html}</div>", summary.anchor);
        }
        Ok(FenceOutcome {
            samples: None,
            html,
            diagnostics,
            summary,
        })
    }

    /// A `should_fail` fence passes when its error codes are exactly the expected ones.
    fn expected_failure(
        &self,
        page: &Page<'_>,
        expected: &[String],
        diagnostics: Vec<Diagnostic>,
    ) -> Result<FenceOutcome, RenderError> {
        let (source, fence) = (page.source, page.fence);
        let href = self.index_href(page.prefix);
        let errors: Vec<Diagnostic> = diagnostics.into_iter().filter(|d| d.is_error()).collect();
        let actual: BTreeSet<&str> = errors.iter().map(|d| d.code.as_str()).collect();
        let wanted: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
        if actual == wanted {
            let text = text::render_each(&errors, Style::Plain);
            return Ok(FenceOutcome {
                samples: Some(quote::samples_of(&errors)),
                html: self.html(|r| {
                    r.diagnostics_linked(&text, Some(expected), Some(&fence.body), &href)
                })?,
                diagnostics: Vec::new(),
                summary: None,
            });
        }
        let found = if actual.is_empty() {
            "it passed".to_owned()
        } else {
            format!(
                "it failed with {}",
                actual.iter().copied().collect::<Vec<_>>().join(" + ")
            )
        };
        let mut mismatch = Diagnostic::error(
            Code::ExpectationNotMet,
            source,
            fence.info_offset..fence.info_offset + chapter::FENCE_LANGUAGE.len(),
            format!(
                "this fence must fail with {}, but {found}",
                expected.join(" + ")
            ),
        )
        .with_label("marked should_fail here")
        .with_help(
            "fix the example so it fails with exactly the listed codes, or correct the list",
        );
        for error in &errors {
            mismatch = mismatch.with_note(format!(
                "{} at {}: {}",
                error.code,
                error.position(),
                error.message
            ));
        }
        let text = text::render_each(std::slice::from_ref(&mismatch), Style::Plain);
        Ok(FenceOutcome {
            samples: None,
            html: self.html(|r| r.diagnostics_linked(&text, None, Some(&fence.body), &href))?,
            diagnostics: vec![mismatch],
            summary: None,
        })
    }
}

impl BookChecker<'_> {
    /// Runs one sample of the contract whose fence opens on `line` of chapter `path` again
    /// (`mdbook-fkc repro`); `Err` when there is no such contract, it does not import cleanly,
    /// or the request does not fit it.
    pub fn reproduce(
        &mut self,
        path: &str,
        content: &str,
        line: usize,
        request: &verify::Reproduction,
    ) -> Result<verify::Reproduced, String> {
        let missing = || format!("no ```fkc fence opens on {path}:{line}");
        let read = read::chapter(path, content).ok_or_else(missing)?;
        let source = Arc::clone(&read.source);
        let work = self.begin("", read).ok_or_else(missing)?;
        let prepared = work
            .prepared
            .iter()
            .find(|p| source.line_col(p.fence.block.start).line == line)
            .ok_or_else(missing)?;
        let front_clean = !has_errors(&work.report.diagnostics);
        let (Some(raw), Some(resolved), Some(provider), true) = (
            &prepared.raw,
            &prepared.resolved,
            work.provider.as_deref(),
            prepared.gated && front_clean,
        ) else {
            return Err(format!(
                "the contract at {path}:{line} is not verified (it does not import cleanly, or is unverified): run `mdbook-fkc check`"
            ));
        };
        verify::reproduce(
            raw,
            &resolved.contract,
            &resolved.import,
            provider,
            self.providers.builtin(),
            &source,
            request,
        )
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

/// The error of a contract whose provider failed (at `at`): it was not run at all, so it
/// fails too (an example that must fail is judged by its own codes).
fn not_verified(source: &Arc<SourceFile>, read: &FenceRead, at: &str) -> Option<Diagnostic> {
    let fence = &read.fence;
    if !read.runs() {
        return None;
    }
    let raw = read.raw.as_ref();
    let span = raw.map_or(
        fence.info_offset..fence.info_offset + chapter::FENCE_LANGUAGE.len(),
        |raw| {
            raw.entry_point
                .as_ref()
                .map_or(raw.kernel.span.clone(), |e| e.span.clone())
        },
    );
    let kernel = raw.map_or("this contract".to_owned(), |r| {
        format!("`{}`", r.kernel.value)
    });
    Some(
        Diagnostic::error(
            Code::ProviderUnverified,
            source,
            span,
            format!("{kernel} is not verified: its provider failed at {at}"),
        )
        .with_label("no kernel of this contract was run")
        .with_help("make the chapter's provider serve (see the error at the front matter); the contract is verified once it does"),
    )
}

fn missing_front_matter(source: &Arc<SourceFile>, fence: &Fence) -> Diagnostic {
    let at = fence.info_offset;
    Diagnostic::error(
        Code::MissingFrontMatter,
        source,
        at..at + chapter::FENCE_LANGUAGE.len(),
        "this contract's chapter has no FKC front matter",
    )
    .with_label("contract found here")
    .with_help("start the chapter with `---`, `fkc_version: 1`, a `provider:` table and `---` (see `mdbook-fkc explain FKC0001`)")
}

fn attribute_errors(source: &Arc<SourceFile>, fence: &Fence) -> Vec<Diagnostic> {
    fence
        .attributes
        .unknown
        .iter()
        .map(|attribute| {
            Diagnostic::error(
                Code::UnknownFenceAttribute,
                source,
                fence.info_offset..fence.info_offset + chapter::FENCE_LANGUAGE.len(),
                format!("unknown fence attribute `{attribute}`"),
            )
            .with_help(
                "the attributes are `should_fail=CODE` (codes joined by `+`) and `unverified`",
            )
        })
        .collect()
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

/// FKC0007 for each claim of `evidence` no check could decide (`check --deny unchecked`).
fn unchecked_denied(
    source: &Arc<SourceFile>,
    raw: &RawContract,
    evidence: &Evidence,
) -> Vec<Diagnostic> {
    evidence
        .unchecked
        .iter()
        .map(|(claim, why)| {
            Diagnostic::error(
                Code::UncheckedDenied,
                source,
                raw.kernel.span.clone(),
                format!("{claim} was not checked: {why}"),
            )
            .with_label("this contract")
            .with_help("make the claim checkable (semantics, a sample that exercises it) or remove it; without `--deny unchecked` the page shows it as unchecked")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const CHAPTER: &str = include_str!("../../book/contracts/contiguize.md");

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
