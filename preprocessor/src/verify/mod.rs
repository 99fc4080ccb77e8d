//! The behavioural gate: the kernels really run. From deterministic samples of the contract's
//! domain ([`sample`]), every admitted sample must be accepted by every declared dtype's entry
//! point, every sample breaking exactly one constraint must be rejected, the shape and dtype
//! rules must hold on every result, repeated runs must be bit-identical where determinism is
//! promised, every dtype the contract does not declare must be refused, and the cost formulas
//! must evaluate (with `memory.host_bytes` equal to the bytes really allocated). A failure is
//! shrunk to a small counterexample and reported with a one-line reproduction.
//!
//! [`verify`] runs the checks in order on one [`Gate`]; each check is one file: `operands`,
//! `domain` (drawing, constraints needed), `edges` (samples at the edges of the box),
//! `admitted`, `rules`, `values`, `cost`, `layout`,
//! `coverage` and `dtypes`. Samples come from [`sample`], calls go through [`run`] to the
//! contract's provider, values are compared with [`oracle`].

mod abi;
mod admitted;
mod axes;
pub(crate) mod bits;
mod bounds;
mod conditioning;
pub mod constraints;
mod cost;
mod coverage;
mod domain;
mod dtypes;
mod edges;
mod far;
pub mod fill;
pub mod geometry;
mod invariant;
pub mod layout;
mod named;
mod operands;
#[cfg(test)]
pub mod oracle;
mod order;
mod paths;
mod reach;
mod repro;
mod rules;
pub mod run;
pub mod sample;
mod semantic;
mod shrink;
mod special;
mod stretch;
mod threshold;
mod unchecked;
mod unshaped;
mod value_range;
mod values;
pub mod worked;

pub use repro::{ReproError, Reproduced, Reproduction, reproduce};
pub use shrink::Check;

use crate::contract::raw::RawContract;
use crate::contract::resolved::Contract;
use crate::diag::{Code, Diagnostic};
use crate::import::Import;
use crate::providers::{Kernel, Provider};
use crate::semantics::fuel;
use crate::source::SourceFile;
use constraints::Domain;
use fkc_provider::DType;
use sample::Sample;
use std::ops::Range;
use std::sync::Arc;

/// How much sampling to do (book.toml `[preprocessor.fkc] samples` and `seed`), and whether
/// to search for the worked example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Admitted samples per contract (and breaking samples per constraint).
    pub samples: usize,
    pub seed: u64,
    /// Whether the gate searches for each contract's worked example: only a page shows it, so
    /// a checker that renders nothing (`check`) skips it. It decides no verdict.
    pub figures: bool,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            samples: 24,
            seed: 0x5eed_f4c0,
            figures: true,
        }
    }
}

/// Admitted samples also run in the other declared dtypes (half precision is slow in software).
const SAMPLES_PER_EXTRA_DTYPE: usize = 6;

/// Admitted samples with their predicted output shapes.
type Admitted = Vec<(Sample, Vec<Vec<i64>>)>;
/// Samples breaking exactly one constraint, with that constraint's index.
type Breaking = Vec<(Sample, usize)>;

/// What was verified, for the page: (check, what was run).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    pub rows: Vec<(String, String)>,
    /// The claims no check could decide: (claim, why). Never counted among the rows.
    #[serde(default)]
    pub unchecked: Vec<(String, String)>,
    /// The worked example shown on the page (when the gate passed).
    pub worked: Option<worked::Worked>,
    /// The worked example was not searched for (`figures` off): a page draws it alone
    /// ([`figure`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub figure_skipped: bool,
}

/// Runs the gate on one imported contract.
pub fn verify(
    raw: &RawContract,
    contract: &Contract,
    import: &Import,
    provider: &Provider,
    builtin: &Provider,
    source: &Arc<SourceFile>,
    options: VerifyOptions,
) -> (Evidence, Vec<Diagnostic>) {
    let _budget = contract_budget(options);
    let kernels = entry_kernels(import, provider);
    let Some(&(first_dtype, first_kernel)) = kernels.first() else {
        return (Evidence::default(), Vec::new());
    };
    let mut gate = Gate::new(raw, contract, source, &first_kernel, options.seed);
    gate.named_oracle = match named::resolve(&mut gate, [provider, builtin]) {
        Ok(named) => named,
        Err(()) => return (gate.evidence, gate.diagnostics),
    };
    if !gate.operands_match(&first_kernel) {
        return (gate.evidence, gate.diagnostics);
    }
    // A shape rule or constraint that rules out the whole box needs no drawing to show it.
    if let Some(proof) = bounds::empty_box(&gate.domain, first_dtype) {
        gate.empty_domain(options, Some(&proof));
        return (gate.evidence, gate.diagnostics);
    }
    if !gate.shape_rules_defined(first_dtype, options)
        || !gate.unshaped_refused(&first_kernel, first_dtype)
    {
        return (gate.evidence, gate.diagnostics);
    }
    let (admitted, breaking) = gate.draw(first_dtype, options);
    if admitted.is_empty() {
        gate.empty_domain(options, None);
        return (gate.evidence, gate.diagnostics);
    }
    gate.evidence.rows.push((
        "domain".to_owned(),
        format!(
            "{} admitted samples, {} samples breaking one constraint (seed {:#x}){}",
            admitted.len(),
            breaking.len(),
            options.seed,
            domain::ranks_admitted(raw, &admitted)
        ),
    ));
    let mut ran = Vec::new();
    let mut grown_of = Vec::new();
    for (index, &(dtype, kernel)) in kernels.iter().enumerate() {
        let take = if index == 0 {
            admitted.len()
        } else {
            SAMPLES_PER_EXTRA_DTYPE
        };
        let grown = gate.grown(&kernel, dtype, &admitted);
        let mut samples = admitted[..take.min(admitted.len())].to_vec();
        samples.extend(grown.iter().cloned());
        if !gate.admitted(&kernel, dtype, &samples) {
            break; // one counterexample is enough; the other dtypes would repeat it
        }
        ran.push((dtype, kernel.symbol.clone()));
        grown_of.push((dtype, grown));
    }
    let empties = gate.empty_dim_samples(first_dtype, &admitted);
    gate.per_input_dtypes(&ran);
    gate.abi_claims();
    if let Some((sample, _)) = admitted.first() {
        gate.required_inputs(&first_kernel, first_dtype, sample);
        let refusing = refusal_samples(&admitted, &empties, &grown_of);
        gate.values_refused(&first_kernel, first_dtype, &refusing);
        gate.other_dtype_operands_refused(&kernels, sample);
    }
    for &(dtype, kernel) in &kernels {
        let Some((_, grown)) = grown_of.iter().find(|(d, _)| *d == dtype) else {
            continue;
        };
        // Grown samples first, one in two: the order and the special values reach the wide
        // code paths too.
        let samples = interleaved(grown, &admitted);
        gate.order_claim(&kernel, dtype, &samples);
        gate.designed_attacks(&kernel, dtype, &samples);
        if !gate.special_values(&kernel, dtype, &samples) {
            break;
        }
    }
    let ran_kernels: Vec<(DType, Kernel<'_>)> = (kernels.iter())
        .filter(|(dtype, _)| ran.iter().any(|(d, _)| d == dtype))
        .copied()
        .collect();
    gate.empty_operands(&ran_kernels, &empties);
    if gate.diagnostics.is_empty() {
        let dtypes: Vec<DType> = ran.iter().map(|(d, _)| *d).collect();
        gate.path_coverage(&dtypes);
        gate.independence_evidence();
    }
    gate.breaking(&first_kernel, first_dtype, &breaking);
    gate.layouts(&first_kernel, first_dtype, &admitted);
    gate.coverage(first_dtype, &admitted);
    if gate.diagnostics.is_empty() && !options.figures {
        gate.evidence.figure_skipped = true;
    } else if gate.diagnostics.is_empty() {
        let drawn = admitted.len().saturating_sub(gate.designed_edges);
        let samples: Vec<&Sample> = admitted.iter().take(drawn).map(|(s, _)| s).collect();
        gate.evidence.worked = worked::example_in(&gate.domain, &kernels, &samples);
    }
    gate.undeclared_dtypes(import, &first_kernel, &admitted);
    if gate.diagnostics.is_empty() {
        gate.unchecked_costs();
    }
    gate.once_per_hang();
    (gate.evidence, gate.diagnostics)
}

/// The step budget every semantics run of one contract shares (hostile pseudo-code is bounded
/// over the whole contract, not only per sample). The grown samples, the attacks and the worked
/// example are run whatever `samples` says, so it never falls below the default's.
fn contract_budget(options: VerifyOptions) -> fuel::Budget {
    let counted = options.samples.max(VerifyOptions::default().samples);
    let samples = u64::try_from(counted).unwrap_or(u64::MAX);
    fuel::Budget::start(fuel::STEPS_PER_SAMPLE.saturating_mul(samples))
}

/// One contract and what runs it, for [`figure`].
#[derive(Debug, Clone, Copy)]
pub struct On<'a> {
    pub raw: &'a RawContract,
    pub contract: &'a Contract,
    pub import: &'a Import,
    pub provider: &'a Provider,
    pub source: &'a Arc<SourceFile>,
}

/// The worked example [`verify`] draws for a contract that passed, drawn alone (for a page
/// whose findings a `check` stored without it): the same admitted samples, the same search.
pub fn figure(on: &On<'_>, options: VerifyOptions) -> Option<worked::Worked> {
    let _budget = contract_budget(options);
    let kernels = entry_kernels(on.import, on.provider);
    let &(dtype, kernel) = kernels.first()?;
    let mut gate = Gate::new(on.raw, on.contract, on.source, &kernel, options.seed);
    let (admitted, _) = gate.draw(dtype, options);
    let drawn = admitted.len().saturating_sub(gate.designed_edges);
    let samples: Vec<&Sample> = admitted.iter().take(drawn).map(|(s, _)| s).collect();
    worked::example_in(&gate.domain, &kernels, &samples)
}

/// `(outcome, what)` pairs written as `what, what: outcome; what: outcome`, each outcome once,
/// in the order first met.
fn grouped_by_outcome<'o>(pairs: impl IntoIterator<Item = (&'o str, String)>) -> String {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for (outcome, what) in pairs {
        match groups.iter_mut().find(|(o, _)| *o == outcome) {
            Some((_, list)) => list.push(what),
            None => groups.push((outcome, vec![what])),
        }
    }
    let summary: Vec<String> = groups
        .iter()
        .map(|(outcome, whats)| format!("{}: {outcome}", whats.join(", ")))
        .collect();
    summary.join("; ")
}

/// The samples an input's `values` refusal runs on: the first admitted one, each whose output
/// is empty (a kernel may skip its check where it writes nothing) and the first grown one of
/// the first dtype (its vectorised body).
fn refusal_samples<'s>(
    admitted: &'s Admitted,
    empties: &'s Admitted,
    grown_of: &'s [(DType, Admitted)],
) -> Vec<&'s Sample> {
    let empty_outputs = (admitted.iter().chain(empties))
        .filter(|(_, outputs)| outputs.iter().any(|dims| dims.contains(&0)));
    let grown = grown_of.first().and_then(|(_, grown)| grown.first());
    let mut samples: Vec<&Sample> = Vec::new();
    for (sample, _) in admitted
        .first()
        .into_iter()
        .chain(empty_outputs)
        .chain(grown)
    {
        if !samples.contains(&sample) {
            samples.push(sample);
        }
    }
    samples
}

/// `grown` and `drawn` samples taken in turn, a grown one first.
fn interleaved<'s>(grown: &'s Admitted, drawn: &'s Admitted) -> Vec<&'s Sample> {
    let (mut grown, mut drawn) = (grown.iter(), drawn.iter());
    let mut all = Vec::new();
    loop {
        let (g, d) = (grown.next(), drawn.next());
        if g.is_none() && d.is_none() {
            return all;
        }
        all.extend(g.into_iter().chain(d).map(|(s, _)| s));
    }
}

/// The contract's entry points the provider serves, with their dtypes, in declared order.
fn entry_kernels<'a>(import: &'a Import, provider: &'a Provider) -> Vec<(DType, Kernel<'a>)> {
    import
        .entry_points
        .iter()
        .filter_map(|e| {
            let info = e.kernel.as_ref()?;
            Some((e.dtype, Kernel { info, provider }))
        })
        .collect()
}

/// How a result compared with the semantics (or a named oracle).
#[derive(Debug, Clone)]
struct Agreement {
    /// Values were compared at all.
    checked: bool,
    /// Held to exact equality.
    exact: bool,
    /// The largest error as a fraction of its bound.
    worst: f64,
    /// The work the semantics counted on this sample, for the cost formulas.
    counts: Option<crate::semantics::Counts>,
}

struct Gate<'a> {
    raw: &'a RawContract,
    source: &'a Arc<SourceFile>,
    domain: Domain<'a>,
    diagnostics: Vec<Diagnostic>,
    evidence: Evidence,
    seed: u64,
    /// The op kind the contract declares (or the kernel's): it picks the value oracle.
    op_kind: String,
    /// The entry point the contract names as its oracle (`oracle:`), if any.
    named_oracle: Option<named::NamedOracle<'a>>,
    /// Of the elements the special-values check compared in the current dtype, those whose
    /// value depends on the summation order, and all of them.
    order_dependent: usize,
    special_elements: usize,
    /// For a selection (a max), the windows the special-values check saw holding a NaN among
    /// numbers (where the NaN policy decides the result).
    nan_mixed: Option<usize>,
    /// The code paths a selection's NaN-tail runs took for the current dtype (base names,
    /// levels apart).
    special_paths: std::collections::BTreeSet<String>,
    /// Samples whose `bytes_moved` was held to the traffic the semantics counted.
    bytes_checked: usize,
    /// The instruction-set levels every call runs at.
    levels: paths::Levels,
    /// Per dtype, the code paths the kernel reported, and the samples run at every level.
    reached: std::collections::BTreeMap<DType, std::collections::BTreeSet<String>>,
    level_samples: std::collections::BTreeMap<DType, usize>,
    /// A kernel hung while samples were grown (reported there): no more growth.
    growth_stopped: bool,
    /// Per `independent_of` parameter, the samples run again with it 1.
    independence_checked: std::collections::BTreeMap<String, usize>,
    /// The admitted samples designed at the edges of the box, last among them
    /// ([`Gate::add_designed_edges`]).
    designed_edges: usize,
}

impl<'a> Gate<'a> {
    /// A gate on `raw`, sampling with the parameter descriptions of its first entry point.
    fn new(
        raw: &'a RawContract,
        contract: &'a Contract,
        source: &'a Arc<SourceFile>,
        first_kernel: &Kernel<'a>,
        seed: u64,
    ) -> Self {
        Gate {
            raw,
            source,
            domain: Domain::new(raw, contract, &first_kernel.info.params),
            diagnostics: Vec::new(),
            evidence: Evidence::default(),
            seed,
            op_kind: raw
                .op_kind
                .as_ref()
                .map(|k| k.value.clone())
                .or_else(|| first_kernel.op_kind.clone())
                .unwrap_or_default(),
            named_oracle: None,
            order_dependent: 0,
            special_elements: 0,
            nan_mixed: None,
            special_paths: std::collections::BTreeSet::new(),
            bytes_checked: 0,
            levels: paths::Levels::of(first_kernel.provider.description()),
            reached: std::collections::BTreeMap::new(),
            level_samples: std::collections::BTreeMap::new(),
            growth_stopped: false,
            independence_checked: std::collections::BTreeMap::new(),
            designed_edges: 0,
        }
    }
}

impl Gate<'_> {
    /// Drops the "not called again" errors (FKC0319) of an entry point whose time-out this
    /// gate reported (FKC0414): one hang, one error.
    fn once_per_hang(&mut self) {
        let timed_out: Vec<String> = self
            .diagnostics
            .iter()
            .filter(|d| d.code == Code::KernelTimedOut)
            .map(|d| d.message.clone())
            .collect();
        let symbol = |message: &str| message.split('`').nth(1).map(str::to_owned);
        let hung: Vec<String> = timed_out.iter().filter_map(|m| symbol(m)).collect();
        self.diagnostics.retain(|d| {
            d.code != Code::EntryPointHung || !symbol(&d.message).is_some_and(|s| hung.contains(&s))
        });
    }

    /// Runs `check`; when it fails (`None`), every diagnostic it added gets `note`.
    fn noted<T>(&mut self, note: &str, check: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let before = self.diagnostics.len();
        let outcome = check(self);
        if outcome.is_none() {
            for diagnostic in &mut self.diagnostics[before..] {
                diagnostic.notes.push(note.to_owned());
            }
        }
        outcome
    }

    /// The names of the contract's optional inputs.
    fn optional_inputs(&self) -> Vec<&str> {
        self.raw
            .inputs
            .iter()
            .filter(|i| i.is_optional())
            .map(|i| i.name.value.as_str())
            .collect()
    }

    fn error(&mut self, code: Code, span: Range<usize>, message: String) -> &mut Diagnostic {
        self.diagnostics
            .push(Diagnostic::error(code, self.source, span, message));
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }
}

#[cfg(test)]
mod tests;
