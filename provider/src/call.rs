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

/// The call this thread serves, and the paths this thread already recorded for it (by address:
/// a kernel reports the same literal in its inner loops, and the shared set is locked only the
/// first time).
struct Entered {
    context: Option<Context>,
    recorded: Vec<*const u8>,
}

thread_local! {
    static CURRENT: RefCell<Entered> = const {
        RefCell::new(Entered { context: None, recorded: Vec::new() })
    };
}

/// Records that the current call took `path` (nothing outside a call).
pub fn took(path: &'static str) {
    CURRENT.with(|current| {
        // Inside `with_level`'s closure the context is borrowed: record without remembering.
        let Ok(mut current) = current.try_borrow_mut() else {
            if let Some(context) = current.borrow().context.as_ref() {
                context.record(path);
            }
            return;
        };
        let Entered { context, recorded } = &mut *current;
        if let Some(context) = context.as_ref()
            && !recorded.contains(&path.as_ptr())
            && context.record(path)
        {
            recorded.push(path.as_ptr());
        }
    });
}

/// The instruction-set level the host asked the current call to run at (`None`: outside a
/// call, or no level asked).
pub fn level() -> Option<String> {
    CURRENT.with(|current| {
        current
            .borrow()
            .context
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
            .context
            .as_ref()
            .and_then(|context| context.inner.level.as_deref()))
    })
}

/// The current call's context, to hand to the threads the kernel spawns.
pub fn current() -> Option<Context> {
    CURRENT.with(|current| current.borrow().context.clone())
}

impl Context {
    /// Runs `f` on this thread as part of the call.
    pub fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        let entered = Entered {
            context: Some(self.clone()),
            recorded: Vec::new(),
        };
        let previous = CURRENT.with(|current| current.replace(entered));
        let result = f();
        CURRENT.with(|current| *current.borrow_mut() = previous);
        result
    }

    /// Adds `path` to the call's paths (`false` if the set is poisoned).
    fn record(&self, path: &'static str) -> bool {
        let recorded = self.inner.paths.lock().map(|mut paths| paths.insert(path));
        recorded.is_ok()
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
    fn a_path_is_recorded_once_however_often_taken_even_inside_with_level() {
        let ((), paths) = record(None, || {
            for _ in 0..3 {
                took("loop");
            }
            with_level(|_| took("nested"));
        });
        assert_eq!(paths, vec!["loop".to_owned(), "nested".to_owned()]);
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
