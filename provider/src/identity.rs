//! The identity of the running program: a hash of its own executable's bytes, so that a
//! verification cached for one build of a kernel is never reused for another build. The hash
//! may be remembered between runs under the binary's path, length and modification time.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where the running binary's hash may be remembered between runs ([`remember_in`]).
static MEMO: OnceLock<PathBuf> = OnceLock::new();

/// Remembers the running binary's hash in `dir`, under the binary's path, length and
/// modification time, so later runs of the same build skip reading the whole binary. Takes
/// effect only when called before the first [`own_binary`]; the first directory given wins.
pub fn remember_in(dir: &Path) {
    let _ = MEMO.set(dir.to_path_buf());
}

/// `exe:` and 16 hex digits over the running executable's content, computed once per process;
/// `None` when the executable cannot be read (then nothing may be cached against it).
pub fn own_binary() -> Option<&'static str> {
    static IDENTITY: OnceLock<Option<String>> = OnceLock::new();
    IDENTITY.get_or_init(identify).as_deref()
}

fn identify() -> Option<String> {
    let path = std::env::current_exe().ok()?;
    identify_at(&path, MEMO.get().map(PathBuf::as_path))
}

/// The identity of the binary at `path`, remembered in `memo_dir` when given.
fn identify_at(path: &Path, memo_dir: Option<&Path>) -> Option<String> {
    let metadata = std::fs::metadata(path).ok()?;
    let stamp = format!(
        "{}\n{}\n{:?}\n",
        path.display(),
        metadata.len(),
        metadata.modified().ok()?
    );
    let memo = memo_dir.map(|dir| {
        let name = content_hash(path.to_string_lossy().as_bytes());
        dir.join(format!("exe-{name:016x}.txt"))
    });
    let remembered = memo
        .as_ref()
        .and_then(|memo| std::fs::read_to_string(memo).ok())
        .and_then(|text| Some(text.strip_prefix(&stamp)?.trim().to_owned()))
        .filter(|id| id.starts_with("exe:") && id.len() == 20);
    if remembered.is_some() {
        return remembered;
    }
    let identity = format!("exe:{:016x}", content_hash(&std::fs::read(path).ok()?));
    if let Some(memo) = memo {
        remember(&memo, &format!("{stamp}{identity}\n"));
    }
    Some(identity)
}

/// Writes the memo through a temporary file and a rename (concurrent runs never see half of
/// it); a memo that cannot be written is simply not kept.
fn remember(memo: &Path, text: &str) {
    let Some(dir) = memo.parent() else {
        return;
    };
    let temporary = memo.with_extension(format!("{}.tmp", std::process::id()));
    if std::fs::create_dir_all(dir).is_ok()
        && std::fs::write(&temporary, text).is_ok()
        && std::fs::rename(&temporary, memo).is_err()
    {
        let _ = std::fs::remove_file(&temporary);
    }
}

/// A 64-bit hash of `bytes`: FNV-1a's multiply-xor over 8-byte words (fast on large files),
/// the tail and the length folded in so that no two lengths collide trivially.
pub fn content_hash(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for word in words.by_ref() {
        let mut le = [0u8; 8];
        le.copy_from_slice(word);
        hash = (hash ^ u64::from_le_bytes(le)).wrapping_mul(PRIME);
        hash ^= hash >> 29;
    }
    for byte in words.remainder() {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(PRIME);
    }
    hash
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_hash_sees_every_byte_and_the_length() {
        let base = content_hash(b"0123456789abcdef!");
        assert_ne!(base, content_hash(b"0123456789abcdeg!"));
        assert_ne!(base, content_hash(b"1123456789abcdef!"));
        assert_ne!(base, content_hash(b"0123456789abcdef?"));
        assert_ne!(content_hash(b""), content_hash(b"\0"));
        assert_eq!(base, content_hash(b"0123456789abcdef!"));
    }

    #[test]
    fn a_remembered_identity_is_reused_until_the_binary_changes() {
        let dir = std::env::temp_dir().join(format!("fkc-identity-{}", std::process::id()));
        let (binary, memo) = (dir.join("binary"), dir.join("memo"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&binary, b"first build").unwrap();
        let first = identify_at(&binary, Some(&memo)).unwrap();
        assert_eq!(first, format!("exe:{:016x}", content_hash(b"first build")));
        // The memo is what a second run reads: plant another hash under the same stamp.
        let entry = std::fs::read_dir(&memo)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let text = std::fs::read_to_string(&entry).unwrap();
        std::fs::write(&entry, text.replace(&first, "exe:00000000000000aa")).unwrap();
        assert_eq!(
            identify_at(&binary, Some(&memo)).unwrap(),
            "exe:00000000000000aa"
        );
        // A rebuilt binary (another length) is hashed again.
        std::fs::write(&binary, b"second, longer build").unwrap();
        let second = identify_at(&binary, Some(&memo)).unwrap();
        assert_eq!(
            second,
            format!("exe:{:016x}", content_hash(b"second, longer build"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_running_test_binary_has_an_identity() {
        let identity = own_binary();
        assert!(identity.is_some_and(|id| id.starts_with("exe:") && id.len() == 20));
        assert_eq!(identity, own_binary());
    }
}
