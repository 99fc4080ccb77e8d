//! One call's context between the host and a kernel: the instruction-set level the host asks
//! the kernel to run at, and the code paths the kernel says it took.
//!
//! A kernel reports a path with [`took`] (`fkc_provider::call::took("tile.4x1x4")`) where its
//! code branches — a vectorised tile, a masked tail, a scalar fallback, a threaded split — and
//! asks [`level`] which instruction-set level to run at (one of the registry's
//! [`Level`]s; `None`: its own choice). Both are no-ops outside a call, so a kernel costs
//! nothing extra when called directly. A kernel that spreads a call over threads hands the
//! context to each with [`current`] and [`Context::enter`], so their paths are counted too.
//!
//! ```
//! use fkc_provider::call;
//!
//! fn kernel(xs: &[f32]) -> f32 {
//!     if xs.len() >= 8 {
//!         call::took("wide");
//!     } else {
//!         call::took("narrow");
//!     }
//!     xs.iter().sum()
//! }
//!
//! let (sum, paths) = call::record(None, || kernel(&[1.0; 9]));
//! assert_eq!((sum, paths), (9.0, vec!["wide".to_owned()]));
//! assert_eq!(kernel(&[1.0; 2]), 2.0); // outside a call: nothing recorded, nothing spent
//! ```

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// An instruction-set level a provider dispatches to, and whether this host runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// Its name, e.g. `"x86-v4"` (AVX-512), `"x86-v3"` (AVX2), `"scalar"`.
    pub name: &'static str,
    /// Whether this machine can run it.
    pub runs_here: bool,
}

/// The levels a provider dispatches to, asked at run time (whether each runs is a fact of the
/// machine).
pub type LevelsFn = fn() -> Vec<Level>;

/// The context of the call being served, shared with the threads it spreads to.
#[derive(Clone, Debug, Default)]
pub struct Context {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    level: Option<String>,
    paths: Mutex<BTreeSet<&'static str>>,
}

thread_local! {
    static CURRENT: RefCell<Option<Context>> = const { RefCell::new(None) };
}

/// Records that the current call took `path` (nothing outside a call).
pub fn took(path: &'static str) {
    CURRENT.with(|current| {
        if let Some(context) = current.borrow().as_ref()
            && let Ok(mut paths) = context.inner.paths.lock()
        {
            paths.insert(path);
        }
    });
}

/// The instruction-set level the host asked the current call to run at (`None`: outside a
/// call, or no level asked).
pub fn level() -> Option<String> {
    CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .and_then(|context| context.inner.level.clone())
    })
}

/// `f` on the level the host asked the current call to run at, without copying it: what a
/// kernel's worker threads should use (a thread's first allocation can cost it a fresh heap).
pub fn with_level<R>(f: impl FnOnce(Option<&str>) -> R) -> R {
    CURRENT.with(|current| {
        let current = current.borrow();
        f(current
            .as_ref()
            .and_then(|context| context.inner.level.as_deref()))
    })
}

/// The current call's context, to hand to the threads the kernel spawns.
pub fn current() -> Option<Context> {
    CURRENT.with(|current| current.borrow().clone())
}

impl Context {
    /// Runs `f` on this thread as part of the call.
    pub fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        let previous = CURRENT.with(|current| current.replace(Some(self.clone())));
        let result = f();
        CURRENT.with(|current| *current.borrow_mut() = previous);
        result
    }

    /// The paths taken so far, sorted.
    fn paths(&self) -> Vec<String> {
        self.inner
            .paths
            .lock()
            .map(|paths| paths.iter().map(|p| (*p).to_owned()).collect())
            .unwrap_or_default()
    }
}

/// Runs `f` as one call at `level` (the host's side): what it returned, and the paths it took.
pub fn record<R>(level: Option<&str>, f: impl FnOnce() -> R) -> (R, Vec<String>) {
    let context = Context {
        inner: Arc::new(Inner {
            level: level.map(str::to_owned),
            paths: Mutex::new(BTreeSet::new()),
        }),
    };
    let result = context.enter(f);
    let paths = context.paths();
    (result, paths)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn threads_entered_into_the_call_report_their_paths_and_see_its_level() {
        let ((), paths) = record(Some("scalar"), || {
            took("main");
            let context = current().unwrap();
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    context.enter(|| {
                        assert_eq!(level().as_deref(), Some("scalar"));
                        assert_eq!(with_level(|l| l.map(str::len)), Some(6));
                        took("worker");
                    })
                });
            });
        });
        assert_eq!(paths, vec!["main".to_owned(), "worker".to_owned()]);
        assert_eq!(level(), None);
    }

    #[test]
    fn calls_do_not_leak_into_each_other() {
        let ((), first) = record(None, || took("a"));
        let ((), second) = record(None, || took("b"));
        assert_eq!(
            (first, second),
            (vec!["a".to_owned()], vec!["b".to_owned()])
        );
    }
}
