//! The verification cache: what the gate found for a contract — its evidence and its
//! diagnostics — kept under a key made of everything the result depends on: the tool's build,
//! the provider's build (its binary's own hash), the sampling options, the chapter's front
//! matter and the contract's fence as written, so that `mdbook serve` re-runs only the contracts
//! that changed. Diagnostics are stored with their spans relative to the fence (one pointing
//! outside it is not stored), so prose edited above a contract does not invalidate it. Entries
//! live in the target directory (`target/fkc-cache` by default), never beside the book's
//! sources; a damaged or unreadable entry is a miss, and a cache that cannot be written is
//! simply not used.

use crate::diag::{Code, Diagnostic, Label, Severity};
use crate::source::SourceFile;
use crate::verify::{Evidence, VerifyOptions};
use fkc_provider::identity::content_hash;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bumped whenever the stored form or what a key covers changes.
const FORMAT: &str = "fkc-cache-5";

/// One stored verification.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Entry {
    evidence: Evidence,
    diagnostics: Vec<StoredDiagnostic>,
}

/// A diagnostic with its spans relative to the start of the contract's fence.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct StoredDiagnostic {
    code: String,
    error: bool,
    message: String,
    span: (usize, usize),
    label: Option<String>,
    labels: Vec<(usize, usize, String)>,
    notes: Vec<String>,
    help: Vec<String>,
}

impl StoredDiagnostic {
    /// `None` when a span lies outside `fence` (it could move independently of the key).
    fn from(diagnostic: &Diagnostic, fence: &Range<usize>) -> Option<StoredDiagnostic> {
        let relative = |span: &Range<usize>| {
            (fence.start <= span.start && span.end <= fence.end)
                .then(|| (span.start - fence.start, span.end - fence.start))
        };
        Some(StoredDiagnostic {
            code: diagnostic.code.as_str().to_owned(),
            error: diagnostic.is_error(),
            message: diagnostic.message.clone(),
            span: relative(&diagnostic.span)?,
            label: diagnostic.label.clone(),
            labels: diagnostic
                .labels
                .iter()
                .map(|l| relative(&l.span).map(|(a, b)| (a, b, l.message.clone())))
                .collect::<Option<_>>()?,
            notes: diagnostic.notes.clone(),
            help: diagnostic
                .help
                .iter()
                .map(|h| h.replace(&reproduce_at(&diagnostic.source, fence.start), FENCE_LINE))
                .collect(),
        })
    }

    /// The diagnostic again, in `source` at the fence starting at `start`.
    fn restore(self, source: &Arc<SourceFile>, start: usize) -> Option<Diagnostic> {
        let absolute = |(a, b): (usize, usize)| {
            let span = start.checked_add(a)?..start.checked_add(b)?;
            (span.end <= source.text.len()).then_some(span)
        };
        Some(Diagnostic {
            code: Code::parse(&self.code)?,
            severity: if self.error {
                Severity::Error
            } else {
                Severity::Note
            },
            message: self.message,
            source: Arc::clone(source),
            span: absolute(self.span)?,
            label: self.label,
            labels: self
                .labels
                .into_iter()
                .map(|(a, b, message)| {
                    Some(Label {
                        span: absolute((a, b))?,
                        message,
                    })
                })
                .collect::<Option<_>>()?,
            notes: self.notes,
            help: self
                .help
                .iter()
                .map(|h| h.replace(FENCE_LINE, &reproduce_at(source, start)))
                .collect(),
        })
    }
}

/// Where a `reproduce:` line names the contract (`repro FILE:LINE `, the fence's line), stored
/// as [`FENCE_LINE`] so that it follows the fence when prose above it moves it.
fn reproduce_at(source: &SourceFile, fence_start: usize) -> String {
    format!(
        " repro {}:{} ",
        source.path,
        source.line_col(fence_start).line
    )
}

/// The stored stand-in for [`reproduce_at`].
const FENCE_LINE: &str = " repro {fence} ";

/// Where cached verifications are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    dir: PathBuf,
}

/// What one verification depends on, besides the tool's own build.
#[derive(Debug, Clone, Copy)]
pub struct KeyParts<'a> {
    /// The provider's build ([`crate::providers::Provider::identity`]).
    pub provider: &'a str,
    /// The built-in provider's build (named oracles may come from it).
    pub builtin: &'a str,
    pub options: VerifyOptions,
    /// The chapter as the author knows it (`book/ch1.md`).
    pub path: &'a str,
    /// The chapter's front matter, as written.
    pub front_matter: &'a str,
    /// The contract's whole fence, as written.
    pub contract: &'a str,
}

impl Cache {
    /// A cache in `dir` (created on first store).
    pub fn in_dir(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    /// The directory entries are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of one verification: 32 hex digits over every part, length-prefixed.
    pub fn key(parts: &KeyParts<'_>) -> String {
        let options = format!("{}/{}", parts.options.seed, parts.options.samples);
        let fields = [
            FORMAT,
            env!("CARGO_PKG_VERSION"),
            parts.provider,
            parts.builtin,
            &options,
            parts.path,
            parts.front_matter,
            parts.contract,
        ];
        let mut encoded = Vec::new();
        for field in fields {
            encoded.extend_from_slice(&(field.len() as u64).to_le_bytes());
            encoded.extend_from_slice(field.as_bytes());
        }
        let low = content_hash(&encoded);
        encoded.push(0x5a);
        let high = content_hash(&encoded);
        format!("{high:016x}{low:016x}")
    }

    fn entry(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// What the gate found for the contract whose fence starts at `fence_start` in `source`,
    /// if it is stored under `key` (a damaged entry is a miss).
    pub fn load(
        &self,
        key: &str,
        source: &Arc<SourceFile>,
        fence_start: usize,
    ) -> Option<(Evidence, Vec<Diagnostic>)> {
        let text = std::fs::read_to_string(self.entry(key)).ok()?;
        let entry: Entry = serde_json::from_str(&text).ok()?;
        let diagnostics = entry
            .diagnostics
            .into_iter()
            .map(|d| d.restore(source, fence_start))
            .collect::<Option<_>>()?;
        Some((entry.evidence, diagnostics))
    }

    /// Stores what the gate found for the contract whose fence spans `fence` — unless a
    /// diagnostic points outside the fence or the evidence does not read back (JSON has no
    /// infinities or NaNs). Written to a temporary file and renamed, so a reader never sees
    /// half an entry; failures to write leave the cache as it was.
    pub fn store(
        &self,
        key: &str,
        evidence: &Evidence,
        diagnostics: &[Diagnostic],
        fence: &Range<usize>,
    ) {
        let Some(diagnostics) = diagnostics
            .iter()
            .map(|d| StoredDiagnostic::from(d, fence))
            .collect::<Option<Vec<_>>>()
        else {
            return;
        };
        let entry = Entry {
            evidence: evidence.clone(),
            diagnostics,
        };
        let Ok(text) = serde_json::to_string(&entry) else {
            return;
        };
        if serde_json::from_str::<Entry>(&text).is_err()
            || std::fs::create_dir_all(&self.dir).is_err()
        {
            return;
        }
        let temporary = self.dir.join(format!("{key}.{}.tmp", std::process::id()));
        if std::fs::write(&temporary, text).is_ok()
            && std::fs::rename(&temporary, self.entry(key)).is_err()
        {
            let _ = std::fs::remove_file(&temporary);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parts<'a>(contract: &'a str, provider: &'a str) -> KeyParts<'a> {
        KeyParts {
            provider,
            builtin: "exe:1",
            options: VerifyOptions::default(),
            path: "book/a.md",
            front_matter: "fkc_version: 1",
            contract,
        }
    }

    #[test]
    fn every_part_changes_the_key() {
        let base = Cache::key(&parts("kernel: a", "exe:2"));
        assert_eq!(base, Cache::key(&parts("kernel: a", "exe:2")));
        assert_ne!(base, Cache::key(&parts("kernel: b", "exe:2")));
        assert_ne!(base, Cache::key(&parts("kernel: a", "exe:3")));
        let mut other = parts("kernel: a", "exe:2");
        other.options.seed += 1;
        assert_ne!(base, Cache::key(&other));
        let mut other = parts("kernel: a", "exe:2");
        other.front_matter = "fkc_version: 2";
        assert_ne!(base, Cache::key(&other));
        // Length prefixes keep the parts apart.
        let mut shifted = parts("kernel: a", "exe:2");
        shifted.path = "book/a.mdf";
        shifted.front_matter = "kc_version: 1";
        assert_ne!(base, Cache::key(&shifted));
    }

    #[test]
    fn stored_results_come_back_relative_to_the_fence_and_damage_is_a_miss() {
        let dir = std::env::temp_dir().join(format!("fkc-cache-test-{}", std::process::id()));
        let cache = Cache::in_dir(&dir);
        let evidence = Evidence {
            rows: vec![("domain".to_owned(), "24 admitted samples".to_owned())],
            unchecked: vec![("values".to_owned(), "no semantics".to_owned())],
            worked: None,
            figure_skipped: true,
        };
        let before = Arc::new(SourceFile::new("a.md", "# A\n```fkc\nkernel: k\n```\n"));
        let fence = 4..25;
        let found = Diagnostic::error(Code::OverPromise, &before, 11..20, "accepts")
            .with_help("relax it")
            .with_help("reproduce: mdbook-fkc repro a.md:2 --dtype F32 --sample 'k = 1'");
        let source = || Arc::clone(&before);
        assert!(cache.load("k1", &source(), 4).is_none());
        cache.store("k1", &evidence, std::slice::from_ref(&found), &fence);
        // Prose added above the fence moves it; the diagnostic moves with it.
        let after = Arc::new(SourceFile::new(
            "a.md",
            "# A\n\nmore\n```fkc\nkernel: k\n```\n",
        ));
        let (loaded, diagnostics) = cache.load("k1", &after, 10).unwrap();
        assert_eq!(loaded, evidence);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, Code::OverPromise);
        assert_eq!(after.slice(diagnostics[0].span.clone()), "kernel: k");
        assert_eq!(
            diagnostics[0].help,
            [
                "relax it",
                "reproduce: mdbook-fkc repro a.md:4 --dtype F32 --sample 'k = 1'"
            ]
        );
        // A diagnostic outside the fence is not stored.
        let outside = Diagnostic::error(Code::OverPromise, &before, 0..3, "title");
        cache.store("k2", &evidence, &[outside], &fence);
        assert!(cache.load("k2", &source(), 4).is_none());
        std::fs::write(dir.join("k1.json"), "{not json").unwrap();
        assert!(cache.load("k1", &source(), 4).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
