//! The host side of providers: how the gate reaches kernels. The built-in
//! `fuel-reference-backend` runs in this process (no compile, no child); any other provider is a
//! command from book.toml, started once per build and spoken to over the provider protocol
//! ([`child`]), on up to `jobs` processes at once ([`pool`]). Either way a call gives a
//! [`CallOutcome`]: outputs, a rejection, or a [`Crash`] — a panic, an abort, a stack overflow,
//! an exit, a hang, a protocol fault or an answer too large — which never takes the build
//! down. An entry point that hung is not called again; a provider's time budget and the
//! build's ([`ledger`]) end a build that would otherwise crawl.

mod child;
mod crash;
mod frames;
mod ledger;
mod pool;

use fkc_provider::identity::content_hash;
use fkc_provider::protocol::{Hello, Method, encode_operands};
use fkc_provider::{AnyTensor, Description, EntryPointInfo, KernelRef, Operand, ParamValues, Registry};
use std::collections::{BTreeMap, HashMap};
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use child::{Fault, StartError};
pub use crash::Crash;
pub use ledger::Ledger;
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // the tests' API
pub use pool::DECODED_ALWAYS;

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
    /// The longest answer line read (`max-line-bytes`, default 4 MiB).
    pub max_line_bytes: usize,
    /// Processes serving calls at once (`jobs`, default 1).
    pub jobs: usize,
    /// The time all calls to the provider may take in one build (`budget-ms`, default 2 min).
    pub budget: Option<Duration>,
    /// Environment variables whose values the provider's kernels depend on (`env`): they are
    /// part of what identifies the provider, so a change verifies its contracts again.
    pub env: Vec<String>,
}

/// The default time limit of one call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The default time limit of a provider's start.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(600);
/// The default longest answer line: 4 MiB, a hundred times the largest answer to the gate's
/// samples (whose dimensions are at most 6); the Judge reads longer ones.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 << 20;
/// The default time budget of one provider's calls in one build: the gate's samples are small
/// (dimensions up to 6), so even slow kernels answer them in milliseconds.
pub const DEFAULT_PROVIDER_BUDGET: Duration = Duration::from_secs(120);
/// The default time budget of one build's calls.
pub const DEFAULT_BUILD_BUDGET: Duration = Duration::from_secs(600);

impl ProviderConfig {
    /// A provider running `command` in the current directory, with every default.
    pub fn new(command: impl Into<String>) -> ProviderConfig {
        ProviderConfig {
            command: command.into(),
            dir: PathBuf::from("."),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            start_timeout: DEFAULT_START_TIMEOUT,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            jobs: 1,
            budget: Some(DEFAULT_PROVIDER_BUDGET),
            env: Vec::new(),
        }
    }

    /// What of the configuration the provider's answers may depend on: the command line and
    /// the named environment variables with their values.
    fn fingerprint(&self) -> String {
        let mut text = format!("command {:?}", self.command);
        for name in &self.env {
            let value = std::env::var_os(name);
            text.push_str(&format!("\nenv {name:?}={value:?}"));
        }
        text
    }
}

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

/// A started provider: who it is, what it declares, and how to call it.
#[derive(Debug)]
pub struct Provider {
    hello: Hello,
    description: Description,
    backend: Backend,
    /// Its name in the ledger (book.toml's, or the registry's).
    name: String,
    /// What identifies its build and configuration (`None`: nothing may be cached).
    identity: Option<String>,
    ledger: Arc<Ledger>,
    budget: Option<Duration>,
    /// Entry points that ran out of their time limit in this build, with that limit.
    hung: Mutex<HashMap<String, Duration>>,
    /// Second answers to calls, found after the call returned.
    faults: Mutex<Vec<Fault>>,
}

#[derive(Debug)]
enum Backend {
    InProcess(Linked),
    Child(pool::Pool),
}

/// A registry linked into this process, its entry points found by symbol in one lookup (a
/// registry may hold thousands, and the gate calls them tens of thousands of times).
#[derive(Debug)]
struct Linked {
    registry: &'static Registry,
    by_symbol: HashMap<&'static str, &'static KernelRef>,
}

impl Linked {
    fn new(registry: &'static Registry) -> Linked {
        let mut by_symbol = HashMap::with_capacity(registry.entry_points.len());
        // The first of two entry points with one symbol wins, as `Registry::entry_point` finds it.
        for kernel in registry.entry_points {
            by_symbol.entry(kernel.symbol).or_insert(kernel);
        }
        Linked {
            registry,
            by_symbol,
        }
    }
}

impl Provider {
    /// A provider running in this process.
    pub fn in_process(registry: &'static Registry) -> Provider {
        Provider::linked(registry, Arc::new(Ledger::new(None)))
    }

    fn linked(registry: &'static Registry, ledger: Arc<Ledger>) -> Provider {
        Provider {
            hello: Hello::of(registry),
            description: Description::from(registry),
            backend: Backend::InProcess(Linked::new(registry)),
            name: registry.name.to_owned(),
            identity: None,
            ledger,
            budget: None,
            hung: Mutex::default(),
            faults: Mutex::default(),
        }
    }

    /// The built-in reference backend.
    pub fn builtin() -> Provider {
        Provider::in_process(&fuel_reference_backend::fkc::REGISTRY)
    }

    /// Starts a provider's command, greets it and reads its description.
    pub fn start(config: &ProviderConfig) -> Result<Provider, StartError> {
        Provider::start_named(&config.command, config, Arc::new(Ledger::new(None)))
    }

    fn start_named(
        name: &str,
        config: &ProviderConfig,
        ledger: Arc<Ledger>,
    ) -> Result<Provider, StartError> {
        let (session, hello, description) = child::Session::start(config)?;
        // The build the provider announces, its registry, its configuration and everything it
        // declares: a change to any of them verifies its contracts again.
        let identity = hello.build.as_ref().map(|build| {
            let declared = serde_json::to_string(&description).unwrap_or_default();
            let configured = config.fingerprint();
            let hash = content_hash(format!("{configured}\n{declared}").as_bytes());
            format!("{build} {} cfg:{hash:016x}", hello.registry)
        });
        Ok(Provider {
            hello,
            description,
            backend: Backend::Child(pool::Pool::new(config.clone(), session)),
            name: name.to_owned(),
            identity,
            ledger,
            budget: config.budget,
            hung: Mutex::default(),
            faults: Mutex::default(),
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
    /// hash for a provider linked into it; for a child, the hash it announces in its greeting
    /// with a hash of its command line, the environment variables its table names and its
    /// description. Each with the registry's path; `None` (nothing may be cached) when a child
    /// announces no build.
    pub fn identity(&self) -> Option<String> {
        match self.backend {
            // One binary may link several registries: the registry is part of the identity.
            Backend::InProcess(ref linked) => fkc_provider::identity::own_binary()
                .map(|build| format!("{build} {}", linked.registry.path)),
            Backend::Child(_) => self.identity.clone(),
        }
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
        self.call_expecting(symbol, operands, params, None)
    }

    /// Calls the entry point `symbol`; `expected` gives, per output, the elements the
    /// contract's shape rule computes for the call: a child's larger outputs (beyond
    /// [`DECODED_ALWAYS`]) are not decoded.
    pub fn call_expecting(
        &self,
        symbol: &str,
        operands: &[Option<Operand>],
        params: &ParamValues,
        expected: Option<&[usize]>,
    ) -> CallOutcome {
        let how = How {
            expected,
            level: None,
        };
        self.call_traced(symbol, operands, params, how).outcome
    }

    /// Calls the entry point `symbol` as `how` says: what it returned, and the code paths it
    /// said it took.
    pub fn call_traced(
        &self,
        symbol: &str,
        operands: &[Option<Operand>],
        params: &ParamValues,
        how: How<'_>,
    ) -> Traced {
        self.guarded(symbol, || match &self.backend {
            Backend::InProcess(linked) => match linked.by_symbol.get(symbol) {
                Some(kernel) => {
                    let (outcome, paths) = fkc_provider::call::record(how.level, || {
                        in_process(|| (kernel.call)(operands, params))
                    });
                    Traced {
                        outcome,
                        paths,
                        waited: Duration::ZERO,
                    }
                }
                None => {
                    Traced::untraced(CallOutcome::Rejected(format!("no entry point `{symbol}`")))
                }
            },
            Backend::Child(pool) => {
                let method = Method::Call {
                    symbol: symbol.to_owned(),
                    operands: encode_operands(operands),
                    params: params.clone(),
                    level: how.level.map(str::to_owned),
                };
                self.remote(pool, method, symbol, how.expected)
            }
        })
    }

    /// Runs `op_kind` through the provider's executor (a rejection when it has none).
    pub fn execute(
        &self,
        op_kind: &str,
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> CallOutcome {
        let key = format!("execute:{op_kind}");
        self.guarded(&key, || match &self.backend {
            Backend::InProcess(linked) => Traced::untraced(match linked.registry.executor {
                Some(execute) => in_process(|| execute(op_kind, params, operands)),
                None => CallOutcome::Rejected("the provider has no executor".to_owned()),
            }),
            Backend::Child(pool) => {
                let method = Method::Execute {
                    op_kind: op_kind.to_owned(),
                    operands: encode_operands(operands),
                    params: params.clone(),
                };
                self.remote(pool, method, &key, None)
            }
        })
        .outcome
    }

    /// A call of `key` (an entry point, or `execute:OP`) made by `run`, unless `key` hung
    /// earlier or a time budget is spent; its time goes to the ledger, and a time-out marks
    /// `key` hung.
    fn guarded(&self, key: &str, run: impl FnOnce() -> Traced) -> Traced {
        let hung = self
            .hung
            .lock()
            .ok()
            .and_then(|hung| hung.get(key).copied());
        if let Some(limit) = hung {
            return Traced::untraced(CallOutcome::Crashed(Crash::Hung(limit)));
        }
        if let Err(crash) = self.ledger.admit(&self.name, self.budget) {
            return Traced::untraced(CallOutcome::Crashed(crash));
        }
        let started = Instant::now();
        let traced = run();
        // A call that waited for another call's session spent that time on the other call.
        let took = started.elapsed().saturating_sub(traced.waited);
        self.ledger.record(&self.name, key, took);
        if let CallOutcome::Crashed(Crash::TimedOut(limit)) = &traced.outcome
            && let Ok(mut hung) = self.hung.lock()
        {
            hung.insert(key.to_owned(), *limit);
        }
        traced
    }

    fn remote(
        &self,
        pool: &pool::Pool,
        method: Method,
        key: &str,
        expected: Option<&[usize]>,
    ) -> Traced {
        let exchange = pool.exchange(method, Some(key));
        self.note_faults(exchange.faults);
        Traced {
            outcome: pool::outcome_of(exchange.answer, expected),
            paths: exchange.paths,
            waited: exchange.waited,
        }
    }

    fn note_faults(&self, found: Vec<Fault>) {
        if !found.is_empty()
            && let Ok(mut faults) = self.faults.lock()
        {
            faults.extend(found);
        }
    }

    /// Reads what is still on its way from a child provider (a second answer to an earlier
    /// call), so that [`Provider::faults_of`] holds every fault of the build.
    pub fn settle(&self) {
        if let Backend::Child(pool) = &self.backend {
            self.note_faults(pool.settle());
        }
    }

    /// The faults found on calls of these entry points (after the call returned).
    pub fn faults_of(&self, symbols: &[&str]) -> Vec<Fault> {
        self.faults
            .lock()
            .map(|faults| {
                faults
                    .iter()
                    .filter(|f| symbols.contains(&f.symbol.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
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

/// How to make one call.
#[derive(Debug, Clone, Copy, Default)]
pub struct How<'a> {
    /// Per output, the elements the contract's shape rule computes (see
    /// [`Provider::call_expecting`]).
    pub expected: Option<&'a [usize]>,
    /// The instruction-set level to run at (one the provider lists); `None`: its own choice.
    pub level: Option<&'a str>,
}

/// What one call returned, and the code paths its kernel said it took (sorted).
#[derive(Debug)]
pub struct Traced {
    pub outcome: CallOutcome,
    pub paths: Vec<String>,
    /// Time the call waited for a free session of its provider (not counted as its own).
    pub waited: Duration,
}

impl Traced {
    fn untraced(outcome: CallOutcome) -> Traced {
        Traced {
            outcome,
            paths: Vec::new(),
            waited: Duration::ZERO,
        }
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

    /// Calls the kernel, expecting outputs of these many elements (see
    /// [`Provider::call_expecting`]).
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn run_expecting(
        &self,
        operands: &[Option<Operand>],
        params: &ParamValues,
        expected: &[usize],
    ) -> CallOutcome {
        self.provider
            .call_expecting(&self.info.symbol, operands, params, Some(expected))
    }

    /// Calls the kernel as `how` says: what it returned and the paths it took.
    pub fn run_traced(
        &self,
        operands: &[Option<Operand>],
        params: &ParamValues,
        how: How<'_>,
    ) -> Traced {
        self.provider
            .call_traced(&self.info.symbol, operands, params, how)
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
    /// Every call of the build, for the time budgets.
    ledger: Arc<Ledger>,
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
        Providers::budgeted(configured, None)
    }

    /// The built-in provider plus the configured ones, every call of the build stopping once
    /// `build_budget` (from now) is spent.
    pub fn budgeted(
        configured: BTreeMap<String, ProviderConfig>,
        build_budget: Option<Duration>,
    ) -> Self {
        let ledger = Arc::new(Ledger::new(build_budget));
        Providers {
            builtin: Arc::new(Provider::linked(
                &fuel_reference_backend::fkc::REGISTRY,
                ledger.clone(),
            )),
            ledger,
            linked: Vec::new(),
            configured,
            started: BTreeMap::new(),
        }
    }

    /// Adds a registry linked into the host program: it runs in process and is found by its
    /// registry path, as the built-in one is (for tools that embed mdbook-fkc, and tests).
    pub fn link(&mut self, registry: &'static Registry) {
        self.linked
            .push(Arc::new(Provider::linked(registry, self.ledger.clone())));
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
            let ledger = &self.ledger;
            let started = self.started.entry(name.to_owned()).or_insert_with(|| {
                Provider::start_named(name, config, ledger.clone()).map(Arc::new)
            });
            return Some(started.clone());
        }
        std::iter::once(&self.builtin)
            .chain(&self.linked)
            .find(|p| p.hello.registry == registry)
            .map(|p| Ok(p.clone()))
    }

    /// Settles every started child provider ([`Provider::settle`]).
    pub fn settle(&self) {
        for provider in self.started.values().flatten() {
            provider.settle();
        }
    }
}
