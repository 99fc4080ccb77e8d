//! The behavioural gate: the kernels really run. From deterministic samples of the contract's
//! domain ([`sample`]), every admitted sample must be accepted by every declared dtype's entry
//! point, every sample breaking exactly one constraint must be rejected, the shape and dtype
//! rules must hold on every result, repeated runs must be bit-identical where determinism is
//! promised, every dtype the contract does not declare must be refused, and the cost formulas
//! must evaluate (with `memory.host_bytes` equal to the bytes really allocated). A failure is
//! shrunk to a small counterexample and reported with a one-line reproduction.
//!
//! [`verify`] runs the checks in order on one [`Gate`]; each check is one file: `operands`,
//! `domain` (drawing, constraints needed), `admitted`, `rules`, `values`, `cost`, `layout`,
//! `coverage` and `dtypes`. Samples come from [`sample`], calls go through [`run`] to the
//! contract's provider, values are compared with [`oracle`].

mod abi;
mod admitted;
pub(crate) mod bits;
mod bounds;
mod conditioning;
pub mod constraints;
mod cost;
mod coverage;
mod domain;
mod dtypes;
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
mod unchecked;
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
use crate::source::SourceFile;
use constraints::Domain;
use fkc_provider::DType;
use sample::Sample;
use std::ops::Range;
use std::sync::Arc;

/// How much sampling to do (book.toml `[preprocessor.fkc] samples` and `seed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Admitted samples per contract (and breaking samples per constraint).
    pub samples: usize,
    pub seed: u64,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            samples: 24,
            seed: 0x5eed_f4c0,
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
    let (admitted, breaking) = gate.draw(first_dtype, options);
    if admitted.is_empty() {
        gate.empty_domain(options, None);
        return (gate.evidence, gate.diagnostics);
    }
    gate.evidence.rows.push((
        "domain".to_owned(),
        format!(
            "{} admitted samples, {} samples breaking one constraint (seed {:#x})",
            admitted.len(),
            breaking.len(),
            options.seed
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
    gate.per_input_dtypes(&ran);
    gate.abi_claims();
    if let Some((sample, _)) = admitted.first() {
        gate.required_inputs(&first_kernel, first_dtype, sample);
        gate.values_refused(&first_kernel, first_dtype, sample);
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
    if gate.diagnostics.is_empty() {
        let dtypes: Vec<DType> = ran.iter().map(|(d, _)| *d).collect();
        gate.path_coverage(&dtypes);
        gate.independence_evidence();
    }
    gate.breaking(&first_kernel, first_dtype, &breaking);
    gate.layouts(&first_kernel, first_dtype, &admitted);
    gate.coverage(first_dtype, &admitted);
    if gate.diagnostics.is_empty() {
        let samples: Vec<&Sample> = admitted.iter().map(|(s, _)| s).collect();
        gate.evidence.worked = worked::example_in(&gate.domain, &kernels, &samples);
    }
    gate.undeclared_dtypes(import, &first_kernel, &admitted);
    if gate.diagnostics.is_empty() {
        gate.unchecked_costs();
    }
    gate.once_per_hang();
    (gate.evidence, gate.diagnostics)
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
            bytes_checked: 0,
            levels: paths::Levels::of(first_kernel.provider.description()),
            reached: std::collections::BTreeMap::new(),
            level_samples: std::collections::BTreeMap::new(),
            growth_stopped: false,
            independence_checked: std::collections::BTreeMap::new(),
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
mod tests {
    //! The checks no reference kernel can fail (they never change dtype and are deterministic)
    //! are proven here with synthetic kernels that do.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::contract::raw::read_contract;
    use crate::contract::read_block;
    use crate::contract::resolved::resolve_expressions;
    use fkc_provider::{AnyTensor, KernelRef, Operand, ParamValues, Registry, Rejection};
    use fuel_reference_backend::fkc::{MAX_POOL2D_FIELDS, MAX_POOL2D_INPUTS};
    use std::sync::atomic::{AtomicU64, Ordering};

    const POOL: &str = "kernel: k\nregistrable: false\nbackend: Cpu\nkernel_source: s\nentry_point: \"fuel_reference_backend::ops::max_pool2d_f32\"\naccept:\n  inputs:\n    - { name: x, dtypes: [F32], rank: 4 }\nop_params:\n  fields:\n    kernel_size: { kind: usize, constraint: \"kernel_size > 0\" }\n    stride: { kind: usize, constraint: \"stride > 0\" }\nreturn:\n  outputs:\n    - { name: out, dtype_rule: passthrough(x), shape_rule: \"from_params(N=x.dim[0], C=x.dim[1], H=(x.dim[2]-kernel_size)/stride+1, W=(x.dim[3]-kernel_size)/stride+1)\" }\ndeterminism: same_hardware_bitwise\n";

    /// A pooling-shaped kernel whose output is F64 whatever the input.
    fn widening(
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> Result<Vec<AnyTensor>, Rejection> {
        let shape = pooled_shape(operands, params);
        Ok(vec![
            AnyTensor::from_f64(DType::F64, &shape, &vec![0.0; shape.iter().product()]).unwrap(),
        ])
    }

    /// A pooling-shaped kernel whose output changes on every call.
    fn flaky(
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> Result<Vec<AnyTensor>, Rejection> {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let shape = pooled_shape(operands, params);
        let value = CALLS.fetch_add(1, Ordering::SeqCst) as f64;
        Ok(vec![
            AnyTensor::from_f64(DType::F32, &shape, &vec![value; shape.iter().product()]).unwrap(),
        ])
    }

    fn pooled_shape(operands: &[Option<Operand>], params: &ParamValues) -> Vec<usize> {
        let x = operands[0].as_ref().unwrap().shape().to_vec();
        let get = |name: &str| match params[name] {
            fkc_provider::ParamValue::Usize(v) => v,
            _ => panic!(),
        };
        let (k, s) = (get("kernel_size"), get("stride"));
        vec![x[0], x[1], (x[2] - k) / s + 1, (x[3] - k) / s + 1]
    }

    /// A provider, in process, serving one pooling-shaped kernel `synthetic::pool_f32`.
    fn synthetic(call: fkc_provider::EntryFn) -> Provider {
        let entry_points: &'static [KernelRef] = Box::leak(Box::new([KernelRef {
            symbol: "synthetic::pool_f32",
            kernel: "k",
            dtype: DType::F32,
            op_kind: None,
            inputs: MAX_POOL2D_INPUTS,
            outputs: &["out"],
            params: MAX_POOL2D_FIELDS,
            call,
        }]));
        in_process(entry_points)
    }

    /// A contract's text read and its expressions resolved (both without a problem), as the
    /// chapter `t.md`.
    pub(super) fn read_resolved(text: &str) -> (Arc<SourceFile>, RawContract, Contract) {
        let source = Arc::new(SourceFile::new("t.md", text));
        let (raw, errors) = read_block(&source, text, &|o| o, read_contract);
        assert!(errors.is_empty(), "{errors:?}");
        let raw = raw.unwrap();
        let (contract, errors) = resolve_expressions(&raw, &source);
        assert!(errors.is_empty(), "{errors:?}");
        (source, raw, contract)
    }

    /// A provider, in process, serving `entry_points` from a registry named `synthetic`.
    pub(super) fn in_process(entry_points: &'static [KernelRef]) -> Provider {
        Provider::in_process(Box::leak(Box::new(Registry {
            name: "synthetic",
            path: "synthetic::REGISTRY",
            crate_name: "synthetic",
            revision: "0",
            op_kinds: &[],
            variants: &[],
            entry_points,
            executor: None,
            levels: None,
        })))
    }

    fn codes_for(provider: &Provider, symbol: &str) -> Vec<Code> {
        gated(provider, symbol, false)
            .iter()
            .map(|d| d.code)
            .collect()
    }

    /// The diagnostics of the admitted-domain check (with `breaking`, of the breaking one).
    fn gated(provider: &Provider, symbol: &str, breaking: bool) -> Vec<Diagnostic> {
        let info = provider.description().entry_point(symbol).unwrap();
        let kernel = Kernel { info, provider };
        let (source, raw, contract) = read_resolved(POOL);
        let mut gate = Gate::new(&raw, &contract, &source, &kernel, 1);
        let (admitted, broken) = gate.draw(DType::F32, VerifyOptions::default());
        assert!(!admitted.is_empty() && !broken.is_empty());
        if breaking {
            gate.breaking(&kernel, DType::F32, &broken);
        } else {
            gate.admitted(&kernel, DType::F32, &admitted);
        }
        for diagnostic in &gate.diagnostics {
            assert_eq!(diagnostic.notes.len(), 1, "{diagnostic:?}");
            let sample = shown_sample(diagnostic);
            let verdict = gate.domain.verdict(&sample, DType::F32);
            assert_eq!(
                matches!(verdict, constraints::Verdict::Breaks { .. }),
                breaking,
                "{verdict:?}"
            );
        }
        gate.diagnostics
    }

    /// The sample a report names, read back from its reproduction line.
    fn shown_sample(diagnostic: &Diagnostic) -> Sample {
        let line = diagnostic
            .help
            .iter()
            .find_map(|h| h.strip_prefix("reproduce: mdbook-fkc repro t.md:1 --dtype F32 --seed "))
            .unwrap();
        let quoted = line.split_once(" --sample '").unwrap().1;
        let sample = Sample::parse(quoted.strip_suffix('\'').unwrap()).unwrap();
        assert!(diagnostic.notes[0].ends_with(&sample.describe()));
        sample
    }

    /// A pooling-shaped kernel that accepts every sample (an output of ones where the shape
    /// is undefined).
    fn lenient(
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> Result<Vec<AnyTensor>, Rejection> {
        let x = operands[0].as_ref().unwrap().shape().to_vec();
        let get = |name: &str| match params[name] {
            fkc_provider::ParamValue::Usize(v) => v,
            _ => panic!(),
        };
        let (k, s) = (get("kernel_size"), get("stride"));
        let pooled = |d: usize| {
            d.checked_sub(k)
                .and_then(|d| d.checked_div(s))
                .map_or(1, |d| d + 1)
        };
        let shape = [x[0], x[1], pooled(x[2]), pooled(x[3])];
        Ok(vec![
            AnyTensor::from_f64(DType::F32, &shape, &vec![0.0; shape.iter().product()]).unwrap(),
        ])
    }

    const SMALLEST: &str =
        "counterexample (shrunk, F32): x: [1, 1, 1, 1], kernel_size = 1, stride = 1";

    #[test]
    fn a_dtype_rule_counterexample_is_shrunk_to_the_smallest_sample() {
        let found = gated(&synthetic(widening), "synthetic::pool_f32", false);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].notes, [SMALLEST]);
        assert!(
            found[0]
                .help
                .iter()
                .any(|h| h.ends_with(" --sample 'x: [1, 1, 1, 1], kernel_size = 1, stride = 1'")),
            "{:?}",
            found[0].help
        );
    }

    #[test]
    fn a_nondeterminism_counterexample_is_shrunk_to_the_smallest_sample() {
        let found = gated(&synthetic(flaky), "synthetic::pool_f32", false);
        assert_eq!(found[0].code, Code::Nondeterministic);
        assert_eq!(found[0].notes, [SMALLEST]);
    }

    #[test]
    fn an_over_promise_is_shrunk_keeping_the_one_broken_constraint() {
        let found = gated(&synthetic(lenient), "synthetic::pool_f32", true);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].code, Code::OverPromise);
        assert!(
            found[0].notes[0].starts_with("counterexample (shrunk, F32): x: [1, 1, "),
            "{:?}",
            found[0].notes
        );
    }

    /// A pooling-shaped kernel that panics, counting its calls.
    fn counted_panic(_: &[Option<Operand>], _: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
        PANICS.fetch_add(1, Ordering::SeqCst);
        panic!("index out of bounds")
    }
    static PANICS: AtomicU64 = AtomicU64::new(0);

    #[test]
    fn shrinking_a_crash_is_bounded_in_kernel_calls() {
        let found = gated(&synthetic(counted_panic), "synthetic::pool_f32", false);
        assert_eq!(found[0].code, Code::KernelCrashed);
        // the crash itself, then at most 30 smaller samples (the smallest's run is its report)
        let calls = PANICS.load(Ordering::SeqCst);
        assert!((2..=31).contains(&calls), "{calls}");
        assert!(found[0].notes[0].starts_with("counterexample (shrunk, F32)"));
    }

    #[test]
    fn an_output_of_another_dtype_breaks_the_dtype_rule() {
        let provider = synthetic(widening);
        assert_eq!(
            codes_for(&provider, "synthetic::pool_f32"),
            [Code::DtypeRuleViolated]
        );
    }

    #[test]
    fn differing_repeated_runs_break_determinism() {
        let provider = synthetic(flaky);
        assert_eq!(
            codes_for(&provider, "synthetic::pool_f32"),
            [Code::Nondeterministic]
        );
    }

    /// A pooling-shaped kernel that panics.
    fn panicking(_: &[Option<Operand>], _: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
        panic!("index out of bounds")
    }

    #[test]
    fn a_panic_is_a_crash_not_a_rejection() {
        let provider = synthetic(panicking);
        assert_eq!(
            codes_for(&provider, "synthetic::pool_f32"),
            [Code::KernelCrashed]
        );
    }

    #[test]
    fn the_real_kernel_passes_the_same_checks() {
        let builtin = Provider::builtin();
        assert_eq!(
            codes_for(&builtin, "fuel_reference_backend::ops::max_pool2d_f32"),
            []
        );
    }
}
