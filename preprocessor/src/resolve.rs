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

/// What spans the chapters of one book: which kernel names are taken, and where.
#[derive(Debug, Default)]
pub struct BookRegistry {
    kernels: HashMap<String, String>,
    /// Backend kernel → (contract name, where) for the kernels documented so far.
    implementations: HashMap<String, (String, String)>,
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
    diagnostics.extend(claim_name(raw, source, registry, register));
    diagnostics.extend(claim_implementation(
        raw, &import, source, registry, register,
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
    source: &Arc<SourceFile>,
    registry: &mut BookRegistry,
    register: bool,
) -> Option<Diagnostic> {
    let kernel = &raw.kernel;
    let here = format!(
        "{}:{}",
        source.path,
        source.line_col(kernel.span.start).line
    );
    if let Some(first) = registry.kernels.get(&kernel.value) {
        return Some(
            Diagnostic::error(
                Code::DuplicateKernel,
                source,
                kernel.span.clone(),
                format!("kernel `{}` is already defined", kernel.value),
            )
            .with_note(format!("first defined at {first}"))
            .with_help("rename one of the kernels, or remove the duplicate contract"),
        );
    }
    if register {
        registry.kernels.insert(kernel.value.clone(), here);
    }
    None
}

/// One implementation is documented by one contract: two contracts resolving to the same kernel
/// (under different names) would contradict each other unnoticed.
fn claim_implementation(
    raw: &RawContract,
    import: &Import,
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
    if let Some((contract, at)) = registry.implementations.get(implementation) {
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
        .insert(implementation.to_owned(), (raw.kernel.value.clone(), at));
    None
}
