//! A fast hasher for the gate's own sets and maps of small integer keys (a sample's dims, an
//! element's index, a trace's bits): the multiply-rotate hash of rustc's `FxHasher`. It is not
//! resistant to chosen collisions, which these keys need not be: the gate makes every one.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A hash set keyed by [`FxHasher`].
pub type FastSet<T> = HashSet<T, BuildHasherDefault<FxHasher>>;
/// A hash map keyed by [`FxHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// The state: each word folded in by a rotate, an xor and a multiply.
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(26) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let (words, rest) = bytes.as_chunks::<8>();
        for word in words {
            self.add(u64::from_le_bytes(*word));
        }
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 56));
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The multiply leaves the low bits weakest; the table indexes by them.
        self.hash.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_differ_hash_apart_and_sets_behave_as_sets() {
        let keys: Vec<Vec<i64>> = (0..64)
            .flat_map(|a| (0..64).map(move |b| vec![a, b]))
            .collect();
        let set: FastSet<Vec<i64>> = keys.iter().cloned().collect();
        assert_eq!(set.len(), keys.len());
        assert!(keys.iter().all(|k| set.contains(k)));
        assert!(!set.contains(&vec![64, 0]));
        let hash = |k: &Vec<i64>| {
            let mut h = FxHasher::default();
            std::hash::Hash::hash(k, &mut h);
            h.finish()
        };
        let distinct: FastSet<u64> = keys.iter().map(hash).collect();
        assert_eq!(distinct.len(), keys.len(), "no two of these keys collide");
        let mut bytes = FxHasher::default();
        bytes.write(&[1, 2, 3]);
        let mut longer = FxHasher::default();
        longer.write(&[1, 2, 3, 0]);
        assert_ne!(
            bytes.finish(),
            longer.finish(),
            "a trailing zero byte counts"
        );
    }
}
