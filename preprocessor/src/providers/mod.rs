//! The host side of providers: how the gate reaches kernels. The built-in
//! `fuel-reference-backend` runs in this process (no compile, no child); any other provider is a
//! command from book.toml, started once per build and spoken to over the provider protocol
//! ([`child`]). Either way a call gives a [`CallOutcome`]: outputs, a rejection, or a crash — a
//! panic, an abort, a stack overflow, an exit or a hang — which never takes the build down.

mod child;

use fkc_provider::protocol::Hello;
use fkc_provider::{AnyTensor, Description, EntryPointInfo, Operand, ParamValues, Registry};
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use child::StartError;

/// How to start one provider (`[preprocessor.fkc.provider.NAME]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The command, run through the shell in `dir`.
    pub command: String,
    /// Where the command runs: the book's root (set by the caller; `.` until then).
    pub dir: PathBuf,
    /// The time limit of one call (`call-timeout-ms`, default 10 s).
    pub call_timeout: Duration,
    /// The time limit of the start and handshake (`start-timeout-ms`, default 10 min, enough
    /// for a `cargo run` that compiles the provider first).
    pub start_timeout: Duration,
}

/// The default time limit of one call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The default time limit of a provider's start.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(600);

/// What a kernel did with a call.
#[derive(Debug)]
pub enum CallOutcome {
    /// It returned outputs.
    Outputs(Vec<AnyTensor>),
    /// It refused the call with an error (the message).
    Rejected(String),
    /// It did not return normally.
    Crashed(Crash),
}

/// A call that did not return normally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Crash {
    /// The kernel panicked (the provider caught it and kept serving).
    Panicked(String),
    /// The provider process died (abort, stack overflow, exit) or broke the protocol; it is
    /// restarted for the next call.
    Died(String),
    /// No answer within the time limit; the provider was killed and is restarted.
    TimedOut(std::time::Duration),
}

impl std::fmt::Display for Crash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Crash::Panicked(message) => write!(f, "the kernel panicked: {message}"),
            Crash::Died(message) => write!(f, "the provider process died: {message}"),
            Crash::TimedOut(limit) => write!(
                f,
                "the kernel did not return within the time limit ({} ms)",
                limit.as_millis()
            ),
        }
    }
}

/// A started provider: who it is, what it declares, and how to call it.
#[derive(Debug)]
pub struct Provider {
    hello: Hello,
    description: Description,
    backend: Backend,
}

#[derive(Debug)]
enum Backend {
    InProcess(&'static Registry),
    Child(Mutex<child::Child>),
}

impl Provider {
    /// A provider running in this process.
    pub fn in_process(registry: &'static Registry) -> Provider {
        Provider {
            hello: Hello::of(registry),
            description: Description::from(registry),
            backend: Backend::InProcess(registry),
        }
    }

    /// The built-in reference backend.
    pub fn builtin() -> Provider {
        Provider::in_process(&fuel_reference_backend::fkc::REGISTRY)
    }

    /// Starts a provider's command, greets it and reads its description.
    pub fn start(config: &ProviderConfig) -> Result<Provider, StartError> {
        let (child, hello, description) = child::Child::start(config)?;
        Ok(Provider {
            hello,
            description,
            backend: Backend::Child(Mutex::new(child)),
        })
    }

    /// The provider's greeting: its name, registry, crate and revision.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// Everything the provider declares.
    pub fn description(&self) -> &Description {
        &self.description
    }

    /// What identifies this build of the provider's kernels: the host program's own content
    /// hash for a provider linked into it, the hash a child announces in its greeting, each
    /// with the registry's path; `None`
    /// (nothing may be cached) when a child does not announce one.
    pub fn identity(&self) -> Option<String> {
        let build = match self.backend {
            Backend::InProcess(_) => fkc_provider::identity::own_binary(),
            Backend::Child(_) => self.hello.build.as_deref(),
        }?;
        // One binary may link several registries: the registry is part of the identity.
        Some(format!("{build} {}", self.hello.registry))
    }

    /// Whether the provider runs in this process.
    pub fn is_in_process(&self) -> bool {
        matches!(self.backend, Backend::InProcess(_))
    }

    /// Calls the entry point `symbol`.
    pub fn call(
        &self,
        symbol: &str,
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> CallOutcome {
        match &self.backend {
            Backend::InProcess(registry) => match registry.entry_point(symbol) {
                Some(kernel) => in_process(|| (kernel.call)(operands, params)),
                None => CallOutcome::Rejected(format!("no entry point `{symbol}`")),
            },
            Backend::Child(child) => with_child(child, |c| c.call(symbol, operands, params)),
        }
    }

    /// Runs `op_kind` through the provider's executor (a rejection when it has none).
    pub fn execute(
        &self,
        op_kind: &str,
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> CallOutcome {
        match &self.backend {
            Backend::InProcess(registry) => match registry.executor {
                Some(execute) => in_process(|| execute(op_kind, params, operands)),
                None => CallOutcome::Rejected("the provider has no executor".to_owned()),
            },
            Backend::Child(child) => with_child(child, |c| c.execute(op_kind, operands, params)),
        }
    }
}

fn in_process(
    call: impl FnOnce() -> Result<Vec<AnyTensor>, fkc_provider::Rejection>,
) -> CallOutcome {
    match panic::catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(outputs)) => CallOutcome::Outputs(outputs),
        Ok(Err(rejection)) => CallOutcome::Rejected(rejection.message),
        Err(_) => CallOutcome::Crashed(Crash::Panicked("a built-in kernel panicked".to_owned())),
    }
}

fn with_child(
    child: &Mutex<child::Child>,
    call: impl FnOnce(&mut child::Child) -> CallOutcome,
) -> CallOutcome {
    match child.lock() {
        Ok(mut child) => call(&mut child),
        Err(_) => CallOutcome::Crashed(Crash::Died("the provider's lock is poisoned".to_owned())),
    }
}

/// A kernel to call: an entry point and the provider that serves it.
#[derive(Debug, Clone, Copy)]
pub struct Kernel<'a> {
    pub info: &'a EntryPointInfo,
    pub provider: &'a Provider,
}

impl<'a> Kernel<'a> {
    /// Calls the kernel.
    pub fn run(&self, operands: &[Option<Operand>], params: &ParamValues) -> CallOutcome {
        self.provider.call(&self.info.symbol, operands, params)
    }
}

impl std::ops::Deref for Kernel<'_> {
    type Target = EntryPointInfo;

    fn deref(&self) -> &EntryPointInfo {
        self.info
    }
}

/// The providers of one book: the built-in one, and those book.toml configures, each started at
/// most once (when a chapter first names it) and kept for the whole build.
#[derive(Debug)]
pub struct Providers {
    builtin: Arc<Provider>,
    /// Other registries linked into the host program, found by registry path like the built-in.
    linked: Vec<Arc<Provider>>,
    configured: BTreeMap<String, ProviderConfig>,
    started: BTreeMap<String, Result<Arc<Provider>, StartError>>,
}

impl Default for Providers {
    fn default() -> Self {
        Providers::new(BTreeMap::new())
    }
}

impl Providers {
    /// The built-in provider plus the configured ones (not started yet).
    pub fn new(configured: BTreeMap<String, ProviderConfig>) -> Self {
        Providers {
            builtin: Arc::new(Provider::builtin()),
            linked: Vec::new(),
            configured,
            started: BTreeMap::new(),
        }
    }

    /// Adds a registry linked into the host program: it runs in process and is found by its
    /// registry path, as the built-in one is (for tools that embed mdbook-fkc, and tests).
    pub fn link(&mut self, registry: &'static Registry) {
        self.linked.push(Arc::new(Provider::in_process(registry)));
    }

    /// The built-in reference backend (also every book's reference oracle).
    pub fn builtin(&self) -> &Arc<Provider> {
        &self.builtin
    }

    /// The names book.toml configures.
    pub fn configured_names(&self) -> impl Iterator<Item = &str> {
        self.configured.keys().map(String::as_str)
    }

    /// The provider a chapter's front matter names: a configured one by `provider.name`
    /// (started on first use), else the built-in one when the registry is its own. `None` when
    /// neither matches.
    pub fn find(
        &mut self,
        name: Option<&str>,
        registry: &str,
    ) -> Option<Result<Arc<Provider>, StartError>> {
        if let Some(name) = name
            && let Some(config) = self.configured.get(name)
        {
            let started = self
                .started
                .entry(name.to_owned())
                .or_insert_with(|| Provider::start(config).map(Arc::new));
            return Some(started.clone());
        }
        std::iter::once(&self.builtin)
            .chain(&self.linked)
            .find(|p| p.hello.registry == registry)
            .map(|p| Ok(p.clone()))
    }
}
