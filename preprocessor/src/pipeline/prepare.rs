//! A chapter's provider asked and each of its fences prepared: resolved against the
//! provider, with the diagnostics of everything before the behavioural gate.

use super::*;

impl BookChecker<'_> {
    /// Asks a chapter's provider and prepares its fences, read by [`read::chapters`].
    pub(super) fn begin(&mut self, prefix: &str, read: ChapterRead) -> Option<ChapterWork> {
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

    /// Reads and resolves one fence: everything before the behavioural gate.
    pub(super) fn prepare(
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
