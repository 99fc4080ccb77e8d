//! What a fence turns into once the gate has run on it: its card, error box or expected
//! failure, with its diagnostics.

use super::*;

impl BookChecker<'_> {
    /// What a prepared fence turns into once the gate has run on it: its HTML and findings,
    /// on its page.
    pub(super) fn finish(
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
