//! The identity of the running program: a hash of its own executable's bytes, so that a
//! verification cached for one build of a kernel is never reused for another build.

use std::sync::OnceLock;

/// `exe:` and 16 hex digits over the running executable's content, computed once per process;
/// `None` when the executable cannot be read (then nothing may be cached against it).
pub fn own_binary() -> Option<&'static str> {
    static IDENTITY: OnceLock<Option<String>> = OnceLock::new();
    IDENTITY
        .get_or_init(|| {
            let path = std::env::current_exe().ok()?;
            let bytes = std::fs::read(path).ok()?;
            Some(format!("exe:{:016x}", content_hash(&bytes)))
        })
        .as_deref()
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
    fn the_running_test_binary_has_an_identity() {
        let identity = own_binary();
        assert!(identity.is_some_and(|id| id.starts_with("exe:") && id.len() == 20));
        assert_eq!(identity, own_binary());
    }
}
