//! The checks no reference kernel can fail (they never change dtype and are deterministic)
//! are proven here with synthetic kernels that do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use super::*;
use crate::contract::raw::read_contract;
use crate::contract::read_block;
use crate::contract::resolved::resolve_expressions;
use crate::verify::sample::Param;
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
fn flaky(operands: &[Option<Operand>], params: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
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

/// The one kernel of a [`synthetic`] provider.
fn pool_kernel(provider: &Provider) -> Kernel<'_> {
    let info = (provider.description())
        .entry_point("synthetic::pool_f32")
        .unwrap();
    Kernel { info, provider }
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
    gated_on(POOL, provider, symbol, breaking)
}

/// [`gated`] on the contract `text`.
fn gated_on(text: &str, provider: &Provider, symbol: &str, breaking: bool) -> Vec<Diagnostic> {
    let info = provider.description().entry_point(symbol).unwrap();
    let kernel = Kernel { info, provider };
    let (source, raw, contract) = read_resolved(text);
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

const SMALLEST: &str = "counterexample (shrunk, F32): x: [1, 1, 1, 1], kernel_size = 1, stride = 1";

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

#[test]
fn bit_stability_is_a_promise_of_identical_runs_too() {
    // Without `determinism`, `precision.bit_stable_on_same_hardware: true` alone promises bits.
    let text = POOL.replace(
        "determinism: same_hardware_bitwise\n",
        "precision:\n  bit_stable_on_same_hardware: true\n",
    );
    let found = gated_on(&text, &synthetic(flaky), "synthetic::pool_f32", false);
    assert_eq!(found[0].code, Code::Nondeterministic, "{found:?}");
    let before = &text[..found[0].span.start];
    assert!(
        before.ends_with("bit_stable_on_same_hardware: "),
        "{before}"
    );
    assert!(found[0].help[0].starts_with("write `bit_stable_on_same_hardware: false`"));
    let unpromised = POOL.replace("determinism: same_hardware_bitwise\n", "");
    let found = gated_on(&unpromised, &synthetic(flaky), "synthetic::pool_f32", false);
    assert!(found.is_empty(), "nothing promised bits: {found:?}");
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

#[test]
fn an_under_constraint_points_at_the_parameter_the_kernel_names_first() {
    let provider = Provider::builtin();
    let info = provider
        .description()
        .entry_point("fuel_reference_backend::ops::max_pool2d_f32")
        .unwrap();
    let kernel = Kernel {
        info,
        provider: &provider,
    };
    let (source, raw, contract) = read_resolved(POOL);
    let gate = Gate::new(&raw, &contract, &source, &kernel, 1);
    let at = |error: &str| {
        let (span, label) = gate.missing_constraint_at(error);
        (source.text[span].to_owned(), label)
    };
    // `kernel_size` is declared first, but the message is about `stride`
    let (text, label) = at("stride 3 must be at most kernel_size 2");
    assert!(text.contains("stride > 0"), "{text}");
    assert!(label.contains("`stride`"), "{label}");
    let (text, label) = at("kernel_size 5 exceeds the input; stride 1");
    assert!(text.contains("kernel_size > 0"), "{text}");
    assert!(label.contains("`kernel_size`"), "{label}");
    // an input's name, when no parameter is named; a word inside another does not count
    let (_, label) = at("x is too small for this strided window");
    assert!(label.contains("`x`"), "{label}");
}

/// The reference max pool, its subnormal results flushed to zero (as under a flush-to-zero
/// floating-point mode).
fn flushing(
    operands: &[Option<Operand>],
    params: &ParamValues,
) -> Result<Vec<AnyTensor>, Rejection> {
    let reference = fuel_reference_backend::fkc::ENTRY_POINTS
        .iter()
        .find(|k| k.symbol == "fuel_reference_backend::ops::max_pool2d_f32")
        .unwrap();
    let outputs = (reference.call)(operands, params)?;
    Ok(outputs
        .iter()
        .map(|t| {
            let flushed: Vec<f64> = (t.to_f64_vec().iter())
                .map(|&v| if (v as f32).is_subnormal() { 0.0 } else { v })
                .collect();
            AnyTensor::from_f64(t.dtype(), t.shape(), &flushed).unwrap()
        })
        .collect())
}

#[test]
fn a_bitwise_claim_is_attacked_near_underflow_where_a_flush_to_zero_shows() {
    let text = POOL.replace("kernel: k\n", "kernel: k\nop_kind: MaxPool2D\n");
    let attacked = |call: fkc_provider::EntryFn| {
        let provider = synthetic(call);
        let kernel = pool_kernel(&provider);
        let (source, raw, contract) = read_resolved(&text);
        let mut gate = Gate::new(&raw, &contract, &source, &kernel, 1);
        let (admitted, _) = gate.draw(DType::F32, VerifyOptions::default());
        let samples: Vec<&Sample> = admitted.iter().map(|(s, _)| s).collect();
        gate.designed_attacks(&kernel, DType::F32, &samples);
        (gate.diagnostics, gate.evidence.rows)
    };
    let (found, rows) = attacked(flushing);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].code, Code::WrongValue, "{found:?}");
    let underflow = "operands: near the smallest normal value, so products and sums are subnormal";
    assert!(
        found[0].notes.iter().any(|n| n == underflow),
        "{:?}",
        found[0].notes
    );
    assert!(
        !rows
            .iter()
            .any(|(check, _)| check.contains("near underflow"))
    );
    // The reference kernel keeps its subnormals: the attack ran and held.
    let reference = |operands: &[Option<Operand>], params: &ParamValues| {
        let entry = fuel_reference_backend::fkc::ENTRY_POINTS.iter();
        let k = entry
            .clone()
            .find(|k| k.symbol.ends_with("ops::max_pool2d_f32"))
            .unwrap();
        (k.call)(operands, params)
    };
    let (found, rows) = attacked(reference);
    assert!(found.is_empty(), "{found:?}");
    let row = rows
        .iter()
        .find(|(check, _)| check == "F32 near underflow")
        .unwrap();
    assert!(
        row.1
            .starts_with("4 samples on operands near the smallest normal value"),
        "{row:?}"
    );
}

#[test]
fn promises_no_run_here_can_observe_are_listed_unchecked() {
    let text = POOL.replace(
        "determinism: same_hardware_bitwise\n",
        "caps:\n  fast_paths:\n    - { when: \"stride == 1\", note: \"dense rows\" }\ndeterminism: cross_hardware_bitwise\n",
    );
    let provider = synthetic(lenient);
    let kernel = pool_kernel(&provider);
    let (source, raw, contract) = read_resolved(&text);
    let mut gate = Gate::new(&raw, &contract, &source, &kernel, 1);
    gate.abi_claims();
    let claims: Vec<&str> = gate
        .evidence
        .unchecked
        .iter()
        .map(|(c, _)| c.as_str())
        .collect();
    assert_eq!(
        claims,
        [
            "`determinism: cross_hardware_bitwise`",
            "`fast_paths`: a faster path where `stride == 1` (dense rows)"
        ]
    );
    // Same-hardware bits are observed (repeated runs), and no fast path is claimed: nothing.
    let (source, raw, contract) = read_resolved(POOL);
    let mut gate = Gate::new(&raw, &contract, &source, &kernel, 1);
    gate.abi_claims();
    assert!(
        gate.evidence.unchecked.is_empty(),
        "{:?}",
        gate.evidence.unchecked
    );
}

#[test]
fn an_operand_of_another_dtype_must_be_refused() {
    // `lenient` computes whatever dtype it is handed
    let provider = synthetic(lenient);
    let kernel = pool_kernel(&provider);
    let (source, raw, contract) = read_resolved(POOL);
    let mut gate = Gate::new(&raw, &contract, &source, &kernel, 1);
    let (admitted, _) = gate.draw(DType::F32, VerifyOptions::default());
    gate.other_dtype_operands_refused(&[(DType::F32, pool_kernel(&provider))], &admitted[0].0);
    assert_eq!(gate.diagnostics.len(), 1);
    assert_eq!(gate.diagnostics[0].code, Code::DtypeMismatch);
    assert!(
        (gate.diagnostics[0].message)
            .ends_with("runs with `x` in F64, but its entry point takes F32 there"),
        "{}",
        gate.diagnostics[0].message
    );
}

#[test]
fn every_parameter_is_raised_at_once_on_one_designed_sample() {
    let provider = synthetic(lenient);
    let kernel = pool_kernel(&provider);
    let (source, raw, contract) = read_resolved(POOL);
    let mut gate = Gate::new(&raw, &contract, &source, &kernel, 1);
    let (admitted, _) = gate.draw(DType::F32, VerifyOptions::default());
    let mut one = vec![admitted[0].clone()];
    gate.add_everything_on(DType::F32, &mut one);
    assert_eq!(one.len(), 2, "no sample added");
    let on = &one[1].0;
    assert!(
        on.params.iter().all(|(_, p)| *p == Param::Int(2)),
        "{}",
        on.describe()
    );
    // the first sample's dims, where they leave room for a window of 2 (else 6)
    let first = &admitted[0].0.inputs[0].1;
    let room = first[2] >= 2 && first[3] >= 2;
    assert!(on.inputs[0].1 == *first || (!room && on.inputs[0].1.iter().all(|d| *d >= 6)));
}

#[test]
fn every_choice_of_a_field_runs_where_every_integer_field_is_at_least_one() {
    let provider = synthetic(lenient);
    let kernel = pool_kernel(&provider);
    let text = POOL.replace(
        "    stride: {",
        "    padding: { kind: usize, constraint: \"2 * padding <= kernel_size\" }\n    divisor: { kind: enum, values: [window, valid, none] }\n    stride: {",
    );
    let (source, raw, contract) = read_resolved(&text);
    let gate = Gate::new(&raw, &contract, &source, &kernel, 1);
    let sample = |padding: i64, divisor: &str| Sample {
        inputs: vec![("x".to_owned(), vec![1, 1, 4, 4], true)],
        params: vec![
            ("kernel_size".to_owned(), Param::Int(2)),
            ("padding".to_owned(), Param::Int(padding)),
            ("divisor".to_owned(), Param::Text(divisor.to_owned())),
            ("stride".to_owned(), Param::Int(1)),
        ],
    };
    let admitted = |s: Sample| match gate.domain.verdict(&s, DType::F32) {
        constraints::Verdict::Admitted { outputs } => (s, outputs),
        other => panic!("{other:?}: {}", s.describe()),
    };
    // `valid` ran only with a padding of 0, `none` never
    let mut samples = vec![admitted(sample(1, "window")), admitted(sample(0, "valid"))];
    gate.cover_choices(DType::F32, &mut samples);
    let shown: Vec<String> = samples.iter().map(|(s, _)| s.describe()).collect();
    assert_eq!(samples.len(), 4, "{shown:?}");
    assert_eq!(samples[2].0, sample(1, "valid"), "{shown:?}");
    assert_eq!(samples[3].0, sample(1, "none"), "{shown:?}");
}
