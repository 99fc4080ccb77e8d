//! The behavioural gate on every prepared fence of the book, from the cache or afresh, on
//! the gate's threads.

use super::*;

impl BookChecker<'_> {
    /// Runs the behavioural gate on every prepared fence of `works` that imported cleanly —
    /// from the cache when nothing it depends on changed since it last ran, otherwise afresh —
    /// and renders every fence with what was found, on up to `jobs` threads across all the
    /// chapters (each contract's result depends only on the contract, never on the thread
    /// count). One outcome per fence, in the chapters' order.
    pub(super) fn gate(
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
                // An entry `check` stored has no worked example: a page draws it (and the entry
                // is stored again with it).
                (Some(found), Some(provider))
                    if found.0.figure_skipped && self.renderer.is_some() =>
                {
                    Some(self.figure_fence(work, prepared, provider, found))
                }
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
    pub(super) fn late_faults(
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

    /// `found` (a `check`'s findings, without the worked example) with the worked example
    /// drawn as [`BookChecker::verify_fence`] would draw it.
    fn figure_fence(
        &self,
        work: &ChapterWork,
        prepared: &Prepared,
        provider: &Provider,
        found: &Findings,
    ) -> Findings {
        let (mut evidence, diagnostics) = found.clone();
        if let (Some(raw), Some(resolved)) = (&prepared.raw, &prepared.resolved) {
            let on = verify::On {
                raw,
                contract: &resolved.contract,
                import: &resolved.import,
                provider,
                source: &work.source,
            };
            evidence.worked = verify::figure(&on, self.verify);
            evidence.figure_skipped = false;
        }
        (evidence, diagnostics)
    }

    /// The gate's findings on one fence that imported cleanly, run afresh.
    pub(super) fn verify_fence(
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
                VerifyOptions {
                    figures: self.renderer.is_some(),
                    ..self.verify
                },
            ),
            _ => Findings::default(),
        }
    }
}
