//! The verification cache: the evidence of a contract that passed the gate, kept under a key
//! made of everything the result depends on — the tool's build, the provider's build (its
//! binary's own hash), the sampling options, the chapter's front matter and the contract's
//! text — so that `mdbook serve` re-runs only the contracts that changed. Failures are never
//! cached (their diagnostics point into the source and are re-derived every time). Entries
//! live in the target directory (`target/fkc-cache` by default), never beside the book's
//! sources; a damaged or unreadable entry is a miss, and a cache that cannot be written is
//! simply not used.

use crate::verify::{Evidence, VerifyOptions};
use fkc_provider::identity::content_hash;
use std::path::{Path, PathBuf};

/// Bumped whenever the stored form or what a key covers changes.
const FORMAT: &str = "fkc-cache-1";

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
    /// The contract's fence body, as written.
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

    /// The evidence stored under `key`, if any (a damaged entry is a miss).
    pub fn load(&self, key: &str) -> Option<Evidence> {
        let text = std::fs::read_to_string(self.entry(key)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Stores `evidence` under `key`: written to a temporary file and renamed, so a reader
    /// never sees half an entry. Failures to write leave the cache as it was.
    pub fn store(&self, key: &str, evidence: &Evidence) {
        // Only what reads back (JSON has no infinities or NaNs: such evidence is not kept).
        let Ok(text) = serde_json::to_string(evidence) else {
            return;
        };
        if serde_json::from_str::<Evidence>(&text).is_err() {
            return;
        }
        if std::fs::create_dir_all(&self.dir).is_err() {
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
    fn stored_evidence_comes_back_and_damage_is_a_miss() {
        let dir = std::env::temp_dir().join(format!("fkc-cache-test-{}", std::process::id()));
        let cache = Cache::in_dir(&dir);
        let evidence = Evidence {
            rows: vec![("domain".to_owned(), "24 admitted samples".to_owned())],
            worked: None,
        };
        assert_eq!(cache.load("k1"), None);
        cache.store("k1", &evidence);
        assert_eq!(cache.load("k1"), Some(evidence));
        std::fs::write(dir.join("k1.json"), "{not json").unwrap();
        assert_eq!(cache.load("k1"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
