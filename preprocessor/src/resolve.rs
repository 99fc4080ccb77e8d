//! From the contract as written to the resolved contract: the importer's verdict, the computed
//! revision hash, kernel-name uniqueness across the book and (in [`crate::contract::resolved`])
//! every expression parsed and bound.

use crate::contract::front_matter::FrontMatter;
use crate::contract::raw::{RawContract, RevisionHash};
use crate::contract::resolved::Contract;
use crate::diag::{Code, Diagnostic};
use crate::import::{self, Import};
use crate::providers::Provider;
use crate::revision::revision_hash;
use crate::source::SourceFile;
use std::collections::HashMap;
use std::sync::Arc;

/// What spans the chapters of one book: which kernel names are taken, and where. Names are
/// namespaced by provider: two providers may each document a kernel called `relu`.
#[derive(Debug, Default)]
pub struct BookRegistry {
    /// (provider, kernel name) → where.
    kernels: HashMap<(String, String), String>,
    /// (registry, backend kernel) → (contract name, where) for the kernels documented so far.
    implementations: HashMap<(String, String), (String, String)>,
}

/// A contract's expressions parsed and bound, with the problems found: a function of the
/// contract alone ([`crate::contract::resolved::resolve_expressions`]), so it may run apart
/// from, and before, the rest of resolving.
pub type Expressions = (Contract, Vec<Diagnostic>);

/// A resolved contract's facts that the page and the summary need.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub registrable: bool,
    pub revision_hash: String,
    pub import: Import,
    /// Every expression parsed and bound.
    pub contract: Contract,
}

/// Resolves one contract, whose `expressions` are already resolved. `register` is false for
/// fences that must fail: they are examples, not kernels of the book, so they do not take their
/// kernel name.
pub fn resolve(
    raw: &RawContract,
    (contract, found): Expressions,
    front: Option<&FrontMatter>,
    kernels: Option<&Provider>,
    source: &Arc<SourceFile>,
    registry: &mut BookRegistry,
    register: bool,
) -> (Resolved, Vec<Diagnostic>) {
    let provider = front.and_then(|f| f.provider.as_ref());
    let (import, mut diagnostics) = import::import(raw, provider, kernels, source);
    let revision_base = provider
        .and_then(|p| p.revision_base.as_ref())
        .map_or("", |base| base.value.as_str());
    let computed = revision_hash(revision_base, &raw.kernel.value, &raw.canonical);
    diagnostics.extend(check_authored_hash(raw, &computed, source));
    // The chapter's provider, as the front matter names it (or by its registry).
    let namespace = provider
        .and_then(|p| p.name.as_ref().or(p.link_registry.as_ref()))
        .map_or("", |name| name.value.as_str());
    diagnostics.extend(claim_name(raw, namespace, source, registry, register));
    diagnostics.extend(claim_implementation(
        raw, &import, kernels, source, registry, register,
    ));
    diagnostics.extend(found);
    let resolved = Resolved {
        registrable: import.registrable,
        revision_hash: computed,
        import,
        contract,
    };
    (resolved, diagnostics)
}

fn check_authored_hash(
    raw: &RawContract,
    computed: &str,
    source: &Arc<SourceFile>,
) -> Option<Diagnostic> {
    let hash = raw.kernel_revision_hash.as_ref()?;
    match &hash.value {
        RevisionHash::Authored(text) if text != computed => Some(
            Diagnostic::error(
                Code::RevisionHashMismatch,
                source,
                hash.span.clone(),
                format!("kernel_revision_hash `{text}` differs from the computed `{computed}`"),
            )
            .with_label("stale or hand-written hash")
            .with_help(format!(
                "write `kernel_revision_hash: auto` (or `{computed}`)"
            )),
        ),
        _ => None,
    }
}

/// Checks the kernel name is free; takes it when `register` (examples that must fail only check).
fn claim_name(
    raw: &RawContract,
    namespace: &str,
    source: &Arc<SourceFile>,
    registry: &mut BookRegistry,
    register: bool,
) -> Option<Diagnostic> {
    let kernel = &raw.kernel;
    let key = (namespace.to_owned(), kernel.value.clone());
    let here = format!(
        "{}:{}",
        source.path,
        source.line_col(kernel.span.start).line
    );
    if let Some(first) = registry.kernels.get(&key) {
        return Some(
            Diagnostic::error(
                Code::DuplicateKernel,
                source,
                kernel.span.clone(),
                format!(
                    "kernel `{}` is already defined for the provider `{namespace}`",
                    kernel.value
                ),
            )
            .with_note(format!("first defined at {first}"))
            .with_help("rename one of the kernels, or remove the duplicate contract"),
        );
    }
    if register {
        registry.kernels.insert(key, here);
    }
    None
}

/// One implementation is documented by one contract: two contracts resolving to the same kernel
/// (under different names) would contradict each other unnoticed.
fn claim_implementation(
    raw: &RawContract,
    import: &Import,
    provider: Option<&Provider>,
    source: &Arc<SourceFile>,
    registry: &mut BookRegistry,
    register: bool,
) -> Option<Diagnostic> {
    if !register {
        return None; // examples that must fail may reuse a kernel
    }
    let implementation = import
        .entry_points
        .iter()
        .find_map(|e| e.kernel.as_ref())?
        .kernel
        .as_str();
    let served_by = provider.map_or("", |p| p.hello().registry.as_str());
    let key = (served_by.to_owned(), implementation.to_owned());
    if let Some((contract, at)) = registry.implementations.get(&key) {
        return Some(
            Diagnostic::error(
                Code::DuplicateKernel,
                source,
                raw.kernel.span.clone(),
                format!("the kernel `{implementation}` is already documented by the contract `{contract}`"),
            )
            .with_note(format!("that contract is at {at}"))
            .with_help("document each kernel in one contract"),
        );
    }
    let at = format!(
        "{}:{}",
        source.path,
        source.line_col(raw.kernel.span.start).line
    );
    registry
        .implementations
        .insert(key, (raw.kernel.value.clone(), at));
    None
}
