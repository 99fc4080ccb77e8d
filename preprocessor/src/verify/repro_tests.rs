//! Each failure kind the gate shrinks is reported with a `reproduce:` line that
//! [`reproduce`] runs to the same code (and that passes on the honest contract), proven with
//! synthetic kernels no reference kernel can stand in for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use super::*;
use crate::diag::Code;
use crate::import::{ResolvedEntryPoint, symbol_for};
use crate::verify::{VerifyOptions, verify};
use fkc_provider::{
    AnyTensor, KernelErrorKind, KernelRef, Operand, OperandDesc, ParamValue, ParamValues, Rejection,
};
use fuel_reference_backend::fkc::{MAX_POOL2D_FIELDS, MAX_POOL2D_INPUTS};

/// A pooling contract on `synthetic::pool_f32`; `extra` is spliced after the input `x`
/// (more inputs) and `tail` at the end (`oracle:`).
fn contract(dtypes: &str, extra: &str, tail: &str) -> String {
    format!(
        "kernel: k\nregistrable: false\nbackend: Cpu\nkernel_source: s\nentry_point: \"synthetic::pool_f32\"\naccept:\n  inputs:\n    - {{ name: x, dtypes: [{dtypes}], rank: 4 }}\n{extra}op_params:\n  fields:\n    kernel_size: {{ kind: usize, constraint: \"kernel_size > 0\" }}\n    stride: {{ kind: usize, constraint: \"stride > 0\" }}\nreturn:\n  outputs:\n    - {{ name: out, dtype_rule: passthrough(x), shape_rule: \"from_params(N=x.dim[0], C=x.dim[1], H=(x.dim[2]-kernel_size)/stride+1, W=(x.dim[3]-kernel_size)/stride+1)\" }}\ndeterminism: same_hardware_bitwise\n{tail}"
    )
}

fn refused(message: &str) -> Rejection {
    Rejection::new(KernelErrorKind::ShapeMismatch, message)
}

/// [`zeros`] for an `F32` entry point.
fn zeros_f32(
    operands: &[Option<Operand>],
    params: &ParamValues,
) -> Result<Vec<AnyTensor>, Rejection> {
    zeros(DType::F32, operands, params)
}

/// [`zeros`] for an `F64` entry point.
fn zeros_f64(
    operands: &[Option<Operand>],
    params: &ParamValues,
) -> Result<Vec<AnyTensor>, Rejection> {
    zeros(DType::F64, operands, params)
}

/// Zeros of the pooled shape in `dtype`: right shapes and dtypes, wrong values. Refuses
/// a call without `x`, an operand of another dtype and what the contract's constraints exclude.
fn zeros(
    dtype: DType,
    operands: &[Option<Operand>],
    params: &ParamValues,
) -> Result<Vec<AnyTensor>, Rejection> {
    if operands.iter().flatten().any(|o| o.dtype() != dtype) {
        return Err(refused("an operand of another dtype"));
    }
    let x = operands
        .first()
        .and_then(Option::as_ref)
        .ok_or_else(|| refused("no x"))?;
    let get = |name: &str| match params.get(name) {
        Some(ParamValue::Usize(v)) if *v > 0 => Ok(*v),
        _ => Err(refused("bad parameter")),
    };
    let (k, s) = (get("kernel_size")?, get("stride")?);
    let pooled = |d: usize| {
        d.checked_sub(k)
            .map(|d| d / s + 1)
            .ok_or(refused("too small"))
    };
    let [n, c, h, w] = <[usize; 4]>::try_from(x.shape()).map_err(|_| refused("rank"))?;
    let shape = [n, c, pooled(h)?, pooled(w)?];
    let count = shape.iter().product();
    Ok(vec![
        AnyTensor::from_f64(x.dtype(), &shape, &vec![0.0; count]).unwrap(),
    ])
}

/// An oracle that refuses every sample.
fn refusing(_: &[Option<Operand>], _: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
    Err(refused("never"))
}

/// `x` and an operand `scale` the kernel may go without.
const SCALED: &[OperandDesc] = &[
    OperandDesc::required("x", 4),
    OperandDesc {
        name: "scale",
        rank: 1,
        optional: true,
        any_rank: false,
        dtype: None,
    },
];

fn entry(symbol: &'static str, dtype: DType, inputs: &'static [OperandDesc]) -> KernelRef {
    let call = match dtype {
        _ if symbol.contains("refusing") => refusing,
        DType::F64 => zeros_f64,
        _ => zeros_f32,
    };
    KernelRef {
        symbol,
        kernel: "k",
        dtype,
        op_kind: None,
        inputs,
        outputs: &["out"],
        params: MAX_POOL2D_FIELDS,
        call,
    }
}

/// An in-process provider serving `entries`.
fn provider(entries: Vec<KernelRef>) -> Provider {
    crate::verify::tests::in_process(Box::leak(entries.into_boxed_slice()))
}

/// Runs `run` on `text` read and resolved, with the import of its declared `dtypes`.
fn with_contract<T>(
    text: &str,
    provider: &Provider,
    dtypes: &[DType],
    run: impl FnOnce(&RawContract, &Contract, &Import, &Arc<SourceFile>) -> T,
) -> T {
    let (source, raw, contract) = crate::verify::tests::read_resolved(text);
    let entry_points = dtypes
        .iter()
        .map(|&dtype| {
            let symbol = symbol_for("synthetic::pool_f32", dtype).unwrap();
            let kernel = provider.description().entry_point(&symbol).cloned();
            ResolvedEntryPoint {
                dtype,
                symbol,
                kernel,
            }
        })
        .collect();
    let import = Import {
        registrable: false,
        op_kind: None,
        variant: None,
        entry_points,
    };
    run(&raw, &contract, &import, &source)
}

/// The gate's diagnostics on `text`.
fn gate(text: &str, provider: &Provider, dtypes: &[DType]) -> Vec<Diagnostic> {
    let builtin = Provider::builtin();
    with_contract(text, provider, dtypes, |raw, contract, import, source| {
        let options = VerifyOptions::default();
        verify(raw, contract, import, provider, &builtin, source, options).1
    })
}

/// `reproduce` run on `text` with `request`.
fn replayed(
    text: &str,
    provider: &Provider,
    dtypes: &[DType],
    request: &Reproduction,
) -> Result<Reproduced, ReproError> {
    let builtin = Provider::builtin();
    with_contract(text, provider, dtypes, |raw, contract, import, source| {
        reproduce(raw, contract, import, provider, &builtin, source, request)
    })
}

/// The request a report's `reproduce:` line makes.
fn request(report: &Diagnostic) -> Reproduction {
    let line = report
        .help
        .iter()
        .find_map(|h| h.strip_prefix("reproduce: mdbook-fkc repro t.md:1 "))
        .unwrap_or_else(|| panic!("no reproduce line: {report:?}"));
    let (flags, sample) = line.split_once(" --sample '").unwrap();
    let words: Vec<&str> = flags.split(' ').collect();
    let value = |flag: &str| {
        let at = words.iter().position(|w| *w == flag)?;
        words.get(at + 1).copied()
    };
    let seed = value("--seed").unwrap().strip_prefix("0x").unwrap();
    Reproduction {
        dtype: DType::from_name(value("--dtype").unwrap()).unwrap(),
        seed: u64::from_str_radix(seed, 16).unwrap(),
        check: value("--check").map_or(Check::Domain, |c| Check::parse(c).unwrap()),
        sample: Sample::parse(sample.strip_suffix('\'').unwrap()).unwrap(),
    }
}

fn codes(reproduced: Result<Reproduced, ReproError>) -> Vec<Code> {
    match reproduced {
        Ok(Reproduced::Failed(report)) => report.iter().map(|d| d.code).collect(),
        other => panic!("not reproduced: {other:?}"),
    }
}

fn passes(reproduced: Result<Reproduced, ReproError>) -> String {
    match reproduced {
        Ok(Reproduced::Passed(verdict)) => verdict,
        other => panic!("does not pass: {other:?}"),
    }
}

const SMALLEST: &str = "x: [1, 1, 1, 1], kernel_size = 1, stride = 1";

#[test]
fn an_undeclared_dtype_that_runs_is_shrunk_and_reproduced() {
    let both = provider(vec![
        entry("synthetic::pool_f32", DType::F32, MAX_POOL2D_INPUTS),
        entry("synthetic::pool_f64", DType::F64, MAX_POOL2D_INPUTS),
    ]);
    let f32_only = [DType::F32];
    let lie = contract("F32", "", "");
    let found = gate(&lie, &both, &f32_only);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].code, Code::DtypeMismatch);
    assert_eq!(
        found[0].notes,
        [format!("counterexample (shrunk, F64): {SMALLEST}")]
    );
    let request = request(&found[0]);
    assert_eq!(
        (request.check, request.dtype),
        (Check::Undeclared, DType::F64)
    );
    let again = replayed(&lie, &both, &f32_only, &request);
    assert_eq!(codes(again), [Code::DtypeMismatch]);

    let refusing_f64 = provider(vec![entry(
        "synthetic::pool_f32",
        DType::F32,
        MAX_POOL2D_INPUTS,
    )]);
    let verdict = passes(replayed(&lie, &refusing_f64, &f32_only, &request));
    assert!(verdict.contains("F64 is not declared"), "{verdict}");
    let truth = contract("F32, F64", "", "");
    let declared = [DType::F32, DType::F64];
    let verdict = passes(replayed(&truth, &both, &declared, &request));
    assert_eq!(verdict, "the contract declares F64");
}

#[test]
fn a_required_input_the_kernel_does_without_is_shrunk_and_reproduced() {
    let scaled = provider(vec![entry("synthetic::pool_f32", DType::F32, SCALED)]);
    let lie = contract("F32", "    - { name: scale, dtypes: [F32], rank: 1 }\n", "");
    let found = gate(&lie, &scaled, &[DType::F32]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].code, Code::OperandsMismatch);
    assert_eq!(
        found[0].notes,
        [
            "counterexample (shrunk, F32): x: [1, 1, 1, 1], scale: absent, kernel_size = 1, stride = 1"
        ]
    );
    let request = request(&found[0]);
    assert_eq!(request.check, Check::Required);
    let again = replayed(&lie, &scaled, &[DType::F32], &request);
    assert_eq!(codes(again), [Code::OperandsMismatch]);

    let truth = contract(
        "F32",
        "    - { name: scale, dtypes: [F32], rank: 1, optional: true }\n",
        "",
    );
    let verdict = passes(replayed(&truth, &scaled, &[DType::F32], &request));
    assert_eq!(verdict, "every absent input is optional in the contract");
    let absent_x = Reproduction {
        sample: Sample::parse("x: absent, scale: [2], kernel_size = 1, stride = 1").unwrap(),
        ..request
    };
    let verdict = passes(replayed(&lie, &scaled, &[DType::F32], &absent_x));
    assert!(verdict.contains("refuses a call without `x`"), "{verdict}");
}

#[test]
fn a_sample_gets_its_share_of_the_contract_s_step_budget() {
    let pool = provider(vec![entry(
        "synthetic::pool_f32",
        DType::F32,
        MAX_POOL2D_INPUTS,
    )]);
    // About 18 million steps on one sample: within the per-sample limit, beyond its share.
    let busy = "semantics: |\n  for n, c, oh, ow in out:\n    m = x[n, c, oh * stride, ow * stride]\n    for t in 0..9000000:\n      m = max(m, x[n, c, oh * stride, ow * stride])\n    out[n, c, oh, ow] = m\n";
    let request = Reproduction {
        dtype: DType::F32,
        seed: 1,
        check: Check::Domain,
        sample: Sample::parse(SMALLEST).unwrap(),
    };
    let again = replayed(&contract("F32", "", busy), &pool, &[DType::F32], &request);
    assert_eq!(codes(again), [Code::SemanticsBudget]);
}

#[test]
fn a_named_oracle_disagreement_is_shrunk_and_reproduced() {
    let pool = provider(vec![entry(
        "synthetic::pool_f32",
        DType::F32,
        MAX_POOL2D_INPUTS,
    )]);
    let oracle = "oracle:\n  entry_point: \"fuel_reference_backend::ops::max_pool2d_f64\"\n";
    let lie = contract("F32", "", oracle);
    let found = gate(&lie, &pool, &[DType::F32]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].code, Code::WrongValue);
    assert!(
        found[0]
            .message
            .contains("`fuel_reference_backend::ops::max_pool2d_f64`'s value")
    );
    assert_eq!(
        found[0].notes,
        [format!("counterexample (shrunk, F32): {SMALLEST}")]
    );
    let again = replayed(&lie, &pool, &[DType::F32], &request(&found[0]));
    assert_eq!(codes(again), [Code::WrongValue]);
    let truth = contract("F32", "", "");
    let verdict = passes(replayed(&truth, &pool, &[DType::F32], &request(&found[0])));
    assert_eq!(verdict, "admitted by the contract");
}

#[test]
fn a_named_oracle_that_cannot_run_a_sample_is_shrunk_and_reproduced() {
    let pool = provider(vec![
        entry("synthetic::pool_f32", DType::F32, MAX_POOL2D_INPUTS),
        entry("synthetic::refusing_f64", DType::F64, MAX_POOL2D_INPUTS),
    ]);
    let lie = contract(
        "F32",
        "",
        "oracle:\n  entry_point: \"synthetic::refusing_f64\"\n",
    );
    let found = gate(&lie, &pool, &[DType::F32]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].code, Code::OperandsMismatch);
    assert!(found[0].message.contains("cannot be run on this sample"));
    assert_eq!(
        found[0].notes,
        [format!("counterexample (shrunk, F32): {SMALLEST}")]
    );
    let again = replayed(&lie, &pool, &[DType::F32], &request(&found[0]));
    assert_eq!(codes(again), [Code::OperandsMismatch]);
}
