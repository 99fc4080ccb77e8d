//! Work spread over threads: the one helper every stage that runs in parallel shares.

/// `work` on every item, on up to `threads` scoped threads, results in the items' order.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.min(items.len());
    if threads <= 1 {
        return items.iter().map(work).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let take = || {
        let mut mine = Vec::new();
        loop {
            let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(index) else {
                return mine;
            };
            mine.push((index, work(item)));
        }
    };
    // The calling thread works too: one thread fewer to start, and its allocator's memory,
    // already touched, is used again instead of a new thread's.
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (1..threads).map(|_| scope.spawn(take)).collect();
        let mut done = take();
        // A worker that panicked passes its panic on, exactly as one thread would have.
        for worker in workers {
            done.extend(
                worker
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p)),
            );
        }
        done
    });
    done.sort_by_key(|(index, _)| *index);
    done.into_iter().map(|(_, result)| result).collect()
}
