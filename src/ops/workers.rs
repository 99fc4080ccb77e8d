//! The backend's persistent worker threads: a threaded kernel hands its parts to them instead
//! of spawning threads on every call (a fresh thread costs a stack and an allocator heap).

use std::sync::OnceLock;

use crate::ops::simd::Caller;

/// The workers, started on first use: one per hardware thread, and at least two, so that a
/// split call really runs concurrently. `None` when the system refused to start them.
fn pool() -> Option<&'static rayon_core::ThreadPool> {
    static POOL: OnceLock<Option<rayon_core::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        rayon_core::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("fkc-reference-worker-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Runs `work` on every part, the parts concurrently on the workers, each as part of the call
/// running on this thread ([`Caller`]); returns when all are done. Without workers the parts
/// run one after another here, which computes the same bits.
pub(crate) fn split<P: Send>(parts: Vec<P>, work: impl Fn(P) + Sync) {
    let caller = Caller::here();
    let Some(pool) = pool() else {
        return parts.into_iter().for_each(|part| caller.run(|| work(part)));
    };
    let (caller, work) = (&caller, &work);
    pool.scope(move |scope| {
        for part in parts {
            scope.spawn(move |_| caller.run(|| work(part)));
        }
    });
}
