//! Tests of the common kernels' entry points: every symbol runs, parameters are read
//! leniently, operands of any layout are read through their logical indices, and bad calls
//! are refused with the right kind.

#![allow(clippy::unwrap_used, clippy::panic, clippy::cloned_ref_to_slice_refs)]

use std::sync::Arc;

use crate::dispatch::{ParamValue, ParamValues};
use crate::dtype::DType;
use crate::error::{KernelErrorKind, Rejection};
use crate::fkc::{ENTRY_POINTS, entry_point};
use crate::tensor::AnyTensor;
use crate::view::{Operand, offset_view_of, reversed_view_of, strided_view_of};

const COMMON: [&str; 11] = [
    "matmul",
    "add",
    "mul",
    "gelu",
    "softmax",
    "layer_norm",
    "reduce_sum",
    "reduce_mean",
    "avg_pool2d",
    "transpose",
    "cumsum",
];

pub(super) fn tensor(dtype: DType, shape: &[usize], values: &[f64]) -> AnyTensor {
    AnyTensor::from_f64(dtype, shape, values).unwrap()
}

pub(super) fn op(dtype: DType, shape: &[usize], values: &[f64]) -> Option<Operand> {
    Some(Operand::contiguous(tensor(dtype, shape, values)))
}

/// `0, 1, …` as a tensor of `shape`.
pub(super) fn iota(dtype: DType, shape: &[usize]) -> Option<Operand> {
    let n: usize = shape.iter().product();
    let values: Vec<f64> = (0..n).map(|v| v as f64).collect();
    op(dtype, shape, &values)
}

pub(super) fn values(pairs: &[(&str, ParamValue)]) -> ParamValues {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

pub(super) fn call(
    symbol: &str,
    operands: &[Option<Operand>],
    params: &[(&str, ParamValue)],
) -> Result<AnyTensor, Rejection> {
    let k = entry_point(&format!("fuel_reference_backend::ops::{symbol}")).unwrap();
    let mut out = k.run(operands, &values(params))?;
    assert_eq!(out.len(), 1);
    Ok(out.remove(0))
}

pub(super) fn kind(r: Result<AnyTensor, Rejection>) -> KernelErrorKind {
    r.unwrap_err().kind
}

/// A small valid call of `kernel` in `dtype`.
fn sample(kernel: &str, dtype: DType) -> (Vec<Option<Operand>>, Vec<(&'static str, ParamValue)>) {
    use ParamValue as V;
    match kernel {
        "matmul" => (
            vec![iota(dtype, &[2, 2, 3]), iota(dtype, &[2, 3, 2])],
            vec![
                ("transpose_a", V::Bool(false)),
                ("transpose_b", V::Bool(false)),
            ],
        ),
        "add" | "mul" => (vec![iota(dtype, &[3]), iota(dtype, &[2, 1, 3])], vec![]),
        "softmax" | "cumsum" => (vec![iota(dtype, &[2, 3])], vec![("axis", V::I64(-1))]),
        "layer_norm" => (
            vec![iota(dtype, &[2, 3]), iota(dtype, &[3]), None],
            vec![("eps", V::F32(1e-5))],
        ),
        "reduce_sum" | "reduce_mean" => (
            vec![iota(dtype, &[2, 3, 2])],
            vec![
                ("axes", V::I64List(vec![-1, 0])),
                ("keepdim", V::Bool(false)),
            ],
        ),
        "avg_pool2d" => (
            vec![iota(dtype, &[1, 2, 3, 3])],
            vec![
                ("kernel_size", V::Usize(2)),
                ("stride", V::Usize(1)),
                ("padding", V::Usize(1)),
                ("divisor", V::Enum("valid".into())),
            ],
        ),
        "transpose" => (
            vec![iota(dtype, &[2, 3, 4])],
            vec![("perm", V::UsizeList(vec![2, 0, 1]))],
        ),
        _ => (vec![iota(dtype, &[2, 3])], vec![]),
    }
}

#[test]
fn every_common_symbol_runs_in_its_dtypes_only() {
    let mut seen = 0;
    for k in ENTRY_POINTS.iter().filter(|k| COMMON.contains(&k.kernel)) {
        seen += 1;
        assert_eq!(k.op_kind, None);
        let (operands, params) = sample(k.kernel, k.dtype);
        assert_eq!(operands.len(), k.inputs.len(), "{}", k.symbol);
        let out = k
            .run(&operands, &values(&params))
            .unwrap_or_else(|e| panic!("{}: {e}", k.symbol));
        assert_eq!(out[0].dtype(), k.dtype);
        for other in DType::ALL.into_iter().filter(|&d| d != k.dtype) {
            let (operands, params) = sample(k.kernel, other);
            let e = k.run(&operands, &values(&params)).unwrap_err();
            assert_eq!(e.kind, KernelErrorKind::DType, "{} with {other}", k.symbol);
        }
    }
    assert_eq!(seen, 31);
    for kernel in ["add", "mul", "transpose"] {
        assert!(
            DType::PROTOCOL_2
                .into_iter()
                .all(|d| crate::fkc::entry_point_for(kernel, d).is_some())
        );
    }
    assert!(entry_point("fuel_reference_backend::ops::matmul_bf16").is_none());
}

#[test]
fn strided_views_are_read_through_their_logical_indices() {
    // A [3, 2] storage read as its transpose [2, 3]: logical [[0, 2, 4], [1, 3, 5]].
    let storage = Arc::new(tensor(DType::F64, &[3, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]));
    let transposed = Operand::view(storage, vec![2, 3], vec![1, 2], 0).unwrap();
    assert!(!transposed.is_contiguous());
    let b = op(DType::F64, &[3], &[10.0, 20.0, 30.0]);
    let out = call("add_f64", &[Some(transposed.clone()), b], &[]).unwrap();
    assert_eq!(out.to_f64_vec(), vec![10.0, 22.0, 34.0, 11.0, 23.0, 35.0]);
    let t = call(
        "transpose_f64",
        &[Some(transposed.clone())],
        &[("perm", ParamValue::Pair(1, 0))],
    );
    assert_eq!(t.unwrap().to_f64_vec(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let sums = call(
        "reduce_sum_f64",
        &[Some(transposed.clone())],
        &[
            ("axes", ParamValue::Usize(1)),
            ("keepdim", ParamValue::Bool(true)),
        ],
    );
    let sums = sums.unwrap_err();
    assert_eq!(
        sums.kind,
        KernelErrorKind::BadParams,
        "a lone integer is not a list"
    );
    let sums = call(
        "reduce_sum_f64",
        &[Some(transposed)],
        &[
            ("axes", ParamValue::UsizeList(vec![1])),
            ("keepdim", ParamValue::Bool(true)),
        ],
    );
    let sums = sums.unwrap();
    assert_eq!(sums.shape(), &[2, 1]);
    assert_eq!(sums.to_f64_vec(), vec![6.0, 9.0]);
    // Every awkward layout gives the contiguous operand's result, bit for bit.
    for kernel in COMMON {
        let (operands, params) = sample(kernel, DType::F32);
        let want = call(&format!("{kernel}_f32"), &operands, &params).unwrap();
        let first = operands[0].as_ref().unwrap().packed().unwrap();
        let views = [
            strided_view_of(&first),
            Some(offset_view_of(&first)),
            reversed_view_of(&first),
        ];
        for view in views.into_iter().flatten() {
            let mut awkward = operands.clone();
            awkward[0] = Some(view);
            let got = call(&format!("{kernel}_f32"), &awkward, &params).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{kernel}");
        }
    }
}

#[test]
fn parameters_are_read_by_their_declared_kind() {
    use ParamValue as V;
    let x = iota(DType::F64, &[2, 3]);
    let by_usize = call("softmax_f64", &[x.clone()], &[("axis", V::Usize(1))]).unwrap();
    let by_i64 = call("softmax_f64", &[x.clone()], &[("axis", V::I64(-1))]).unwrap();
    assert_eq!(by_usize, by_i64);
    let eps_f64 = call(
        "layer_norm_f64",
        &[x.clone(), None, None],
        &[("eps", V::F64(0.0))],
    );
    let eps_int = call(
        "layer_norm_f64",
        &[x.clone(), None, None],
        &[("eps", V::Usize(0))],
    );
    assert_eq!(eps_f64.unwrap(), eps_int.unwrap());
    let axes_pair = call(
        "reduce_mean_f64",
        &[x.clone()],
        &[("axes", V::Pair(0, 1)), ("keepdim", V::Bool(false))],
    );
    assert_eq!(axes_pair.unwrap().to_f64_vec(), vec![2.5]);
    let no_axes = call(
        "reduce_sum_f64",
        &[x.clone()],
        &[("axes", V::UsizeList(vec![])), ("keepdim", V::Bool(false))],
    );
    assert_eq!(
        no_axes.unwrap().to_f64_vec(),
        vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    );
    // Refusals: an unknown field, a missing one, a value of another kind.
    assert_eq!(
        kind(call("gelu_f64", &[x.clone()], &[("axis", V::I64(0))])),
        KernelErrorKind::BadParams
    );
    assert_eq!(
        kind(call("cumsum_f64", &[x.clone()], &[])),
        KernelErrorKind::BadParams
    );
    assert_eq!(
        kind(call("cumsum_f64", &[x.clone()], &[("axis", V::Bool(true))])),
        KernelErrorKind::BadParams
    );
    assert_eq!(
        kind(call("cumsum_f64", &[x], &[("axis", V::I64(2))])),
        KernelErrorKind::BadParams
    );
}

#[test]
fn bad_calls_are_refused_with_their_kind() {
    use ParamValue as V;
    let x = iota(DType::F64, &[2, 3]);
    let perm = |p: Vec<usize>| vec![("perm", V::UsizeList(p))];
    for p in [vec![0, 0], vec![1], vec![0, 2]] {
        assert_eq!(
            kind(call("transpose_f64", &[x.clone()], &perm(p))),
            KernelErrorKind::BadParams
        );
    }
    let y = iota(DType::F64, &[3, 2]);
    assert_eq!(
        kind(call("add_f64", &[x.clone(), y.clone()], &[])),
        KernelErrorKind::ShapeMismatch
    );
    assert_eq!(
        kind(call(
            "mul_f16",
            &[iota(DType::F16, &[2]), iota(DType::F16, &[3])],
            &[]
        )),
        KernelErrorKind::ShapeMismatch
    );
    let eps = |e: f32| vec![("eps", V::F32(e))];
    assert_eq!(
        kind(call(
            "layer_norm_f64",
            &[x.clone(), None, None],
            &eps(-1e-5)
        )),
        KernelErrorKind::BadParams
    );
    assert_eq!(
        kind(call("layer_norm_f64", &[None, None, None], &eps(1e-5))),
        KernelErrorKind::MissingOperand
    );
    let weight = iota(DType::F64, &[2]);
    assert_eq!(
        kind(call(
            "layer_norm_f64",
            &[x.clone(), weight, None],
            &eps(1e-5)
        )),
        KernelErrorKind::ShapeMismatch
    );
    let mm = vec![
        ("transpose_a", V::Bool(false)),
        ("transpose_b", V::Bool(false)),
    ];
    assert_eq!(
        kind(call(
            "matmul_f64",
            &[iota(DType::F64, &[1, 2, 3]), iota(DType::F64, &[1, 2, 3])],
            &mm
        )),
        KernelErrorKind::ShapeMismatch
    );
    assert_eq!(
        kind(call("matmul_f64", &[x.clone(), y], &mm)),
        KernelErrorKind::Rank
    );
    let pool = |divisor: &str| {
        vec![
            ("kernel_size", V::Usize(2)),
            ("stride", V::Usize(1)),
            ("padding", V::Usize(0)),
            ("divisor", V::Enum(divisor.into())),
        ]
    };
    let image = iota(DType::F64, &[1, 1, 3, 3]);
    assert_eq!(
        kind(call("avg_pool2d_f64", &[image.clone()], &pool("mean"))),
        KernelErrorKind::BadParams
    );
    assert!(call("avg_pool2d_f64", &[image.clone()], &pool("window")).is_ok());
    let mut too_wide = pool("window");
    too_wide[0].1 = V::Usize(4);
    assert_eq!(
        kind(call("avg_pool2d_f64", &[image], &too_wide)),
        KernelErrorKind::KernelTooLarge
    );
    let extra = [x.clone(), x.clone(), x];
    assert_eq!(
        kind(call("gelu_f64", &extra, &[])),
        KernelErrorKind::MissingOperand
    );
}

/// Each planted bug changes the result of a call that exercises it.
#[cfg(feature = "mutants")]
#[test]
fn every_common_mutant_changes_a_result() {
    use crate::mutants::{Mutant, with};
    use ParamValue as V;
    let d = DType::F64;
    let mm = vec![
        ("transpose_a", V::Bool(false)),
        ("transpose_b", V::Bool(true)),
    ];
    let keep = |axes: Vec<i64>| vec![("axes", V::I64List(axes)), ("keepdim", V::Bool(true))];
    let pool = vec![
        ("kernel_size", V::Usize(2)),
        ("stride", V::Usize(2)),
        ("padding", V::Usize(1)),
        ("divisor", V::Enum("valid".into())),
    ];
    #[allow(clippy::type_complexity)]
    let cases: Vec<(Mutant, &str, Vec<Option<Operand>>, Vec<(&str, ParamValue)>)> = vec![
        (
            Mutant::MatmulIgnoresTransposeB,
            "matmul_f64",
            vec![iota(d, &[1, 2, 2]), iota(d, &[1, 2, 2])],
            mm,
        ),
        (
            Mutant::AddBroadcastAlignsLeading,
            "add_f64",
            vec![iota(d, &[2]), iota(d, &[2, 2])],
            vec![],
        ),
        (
            Mutant::MulBroadcastByModulo,
            "mul_f64",
            vec![iota(d, &[2, 3]), iota(d, &[2, 1])],
            vec![],
        ),
        (
            Mutant::MulRowByCount,
            "mul_f64",
            vec![iota(d, &[2, 2]), iota(d, &[2, 1])],
            vec![],
        ),
        (
            Mutant::GeluTanhApprox,
            "gelu_f64",
            vec![op(d, &[1], &[1.5])],
            vec![],
        ),
        (
            Mutant::SoftmaxNegativeAxisFromFront,
            "softmax_f64",
            vec![iota(d, &[2, 3])],
            vec![("axis", V::I64(-1))],
        ),
        (
            Mutant::LayerNormIgnoresEps,
            "layer_norm_f64",
            vec![iota(d, &[1, 2]), None, None],
            vec![("eps", V::F32(1.0))],
        ),
        (
            Mutant::ReduceSumDropsLast,
            "reduce_sum_f64",
            vec![iota(d, &[2, 3])],
            keep(vec![1]),
        ),
        (
            Mutant::MeanKeepdimCountsOne,
            "reduce_mean_f64",
            vec![iota(d, &[2, 3])],
            keep(vec![1]),
        ),
        (
            Mutant::AvgPoolValidDividesByWindow,
            "avg_pool2d_f64",
            vec![iota(d, &[1, 1, 3, 3])],
            pool,
        ),
        (
            Mutant::TransposeInversePerm,
            "transpose_f64",
            vec![iota(d, &[2, 3, 4])],
            vec![("perm", V::UsizeList(vec![1, 2, 0]))],
        ),
        (
            Mutant::TransposeHighRankInversePerm,
            "transpose_f64",
            vec![iota(d, &[2, 3, 4, 1, 2])],
            vec![("perm", V::UsizeList(vec![1, 2, 0, 3, 4]))],
        ),
        (
            Mutant::CumsumReverseOrder,
            "cumsum_f64",
            vec![op(d, &[3], &[1e16, 1.0, 1.0])],
            vec![("axis", V::I64(0))],
        ),
        (
            Mutant::EmbeddingInclusiveBound,
            "embedding_f64",
            vec![op(DType::I64, &[1, 1], &[3.0]), iota(d, &[3, 2])],
            vec![],
        ),
        (
            Mutant::EmbeddingRowsThroughF64,
            "embedding_f32",
            vec![
                op(DType::I64, &[1, 1], &[0.0]),
                // a signalling NaN, which a round trip through f64 quiets
                Some(Operand::contiguous(
                    AnyTensor::from_bits(DType::F32, &[1, 1], &[0x7fa0_0000]).unwrap(),
                )),
            ],
            vec![],
        ),
        (
            Mutant::EmbeddingNegativeWraps,
            "embedding_f64",
            vec![op(DType::I64, &[1, 1], &[-1.0]), iota(d, &[3, 2])],
            vec![],
        ),
        (
            Mutant::QmatmulNarrowAccumulator,
            "qmatmul_i8",
            vec![
                op(DType::I8, &[1, 4], &[100.0; 4]),
                op(DType::I8, &[4, 1], &[100.0; 4]),
            ],
            vec![("scale", V::F32(1e-3))],
        ),
        (
            Mutant::QmatmulWrappingRequantize,
            "qmatmul_i8",
            vec![
                op(DType::I8, &[1, 1], &[100.0]),
                op(DType::I8, &[1, 1], &[2.0]),
            ],
            vec![("scale", V::F32(1.0))],
        ),
        (
            Mutant::QmatmulRoundHalfAway,
            "qmatmul_i8",
            vec![
                op(DType::I8, &[1, 1], &[5.0]),
                op(DType::I8, &[1, 1], &[1.0]),
            ],
            vec![("scale", V::F32(0.5))],
        ),
        (
            Mutant::QmatmulRequantizeF64,
            "qmatmul_i8",
            vec![
                op(DType::I8, &[1, 1], &[3.0]),
                op(DType::I8, &[1, 1], &[1.0]),
            ],
            vec![("scale", V::F32(1.0 / 6.0))],
        ),
        (
            Mutant::AddIntSaturates,
            "add_i32",
            vec![
                op(DType::I32, &[1], &[2147483647.0]),
                op(DType::I32, &[1], &[1.0]),
            ],
            vec![],
        ),
    ];
    // A call's outcome: the output's bits and shape, or the refusal's kind (an id the
    // reference refuses may be read by a mutant).
    let outcome = |r: Result<AnyTensor, Rejection>| {
        r.map(|t| (t.to_bits(), t.shape().to_vec()))
            .map_err(|e| e.kind)
    };
    for (mutant, symbol, operands, params) in cases {
        let good = outcome(call(symbol, &operands, &params));
        let bad = outcome(with(Some(mutant), || call(symbol, &operands, &params)));
        assert_ne!(good, bad, "{mutant:?} left {symbol} unchanged");
    }
}
