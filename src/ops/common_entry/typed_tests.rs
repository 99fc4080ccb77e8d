//! Tests of the entry points whose operands are not all floats of the symbol's dtype:
//! `embedding` (`I64` ids), `qmatmul` (`I8`) and the integer and E5M2 `add`s — registration,
//! values, views of every kind and refusals.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use super::tests::{call, iota, kind, op, tensor, values};
use crate::dispatch::{ParamKind, ParamValue};
use crate::dtype::DType;
use crate::error::KernelErrorKind;
use crate::fkc::{ENTRY_POINTS, entry_point_for};
use crate::tensor::AnyTensor;
use crate::view::{
    Operand, broadcast_view_of, expand_view_of, offset_view_of, reversed_view_of, strided_view_of,
};

fn ids(shape: &[usize], values: &[f64]) -> Option<Operand> {
    op(DType::I64, shape, values)
}

fn scale(s: f32) -> Vec<(&'static str, ParamValue)> {
    vec![("scale", ParamValue::F32(s))]
}

/// Every awkward view of `t` the provider can build (same logical values).
fn views(t: &AnyTensor) -> Vec<Operand> {
    let mut all = vec![offset_view_of(t)];
    all.extend(strided_view_of(t));
    all.extend(reversed_view_of(t));
    all.extend(broadcast_view_of(t));
    all
}

/// `symbol`'s result with operand `slot` replaced by each of its awkward views equals the
/// contiguous call's, bit for bit.
fn views_agree(symbol: &str, operands: &[Option<Operand>], params: &[(&str, ParamValue)]) {
    let want = call(symbol, operands, params).unwrap();
    for slot in 0..operands.len() {
        let packed = operands[slot].as_ref().unwrap().packed().unwrap();
        for view in views(&packed) {
            let mut awkward = operands.to_vec();
            awkward[slot] = Some(view);
            let got = call(symbol, &awkward, params).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{symbol}, operand {slot}");
            assert_eq!(got.shape(), want.shape());
        }
    }
}

#[test]
fn the_new_symbols_are_registered_with_their_descs() {
    let dtypes = |kernel: &str| -> Vec<DType> {
        DType::ALL
            .into_iter()
            .filter(|&d| entry_point_for(kernel, d).is_some())
            .collect()
    };
    assert_eq!(dtypes("embedding"), DType::PROTOCOL_2);
    assert_eq!(dtypes("qmatmul"), [DType::I8]);
    let add = [
        DType::F32,
        DType::F64,
        DType::BF16,
        DType::F16,
        DType::F8E5M2,
        DType::I8,
    ];
    assert_eq!(dtypes("add"), [&add[..], &[DType::I32]].concat());
    let e = entry_point_for("embedding", DType::F32).unwrap();
    let descs: Vec<_> = e.inputs.iter().map(|d| (d.name, d.rank, d.dtype)).collect();
    assert_eq!(descs, [("ids", 2, Some(DType::I64)), ("weight", 2, None)]);
    assert!(e.params.is_empty() && e.op_kind.is_none());
    let q = entry_point_for("qmatmul", DType::I8).unwrap();
    let descs: Vec<_> = q.inputs.iter().map(|d| (d.name, d.rank, d.dtype)).collect();
    assert_eq!(descs, [("a", 2, None), ("b", 2, None)]);
    assert_eq!(q.params.len(), 1);
    assert_eq!(
        (q.params[0].name, q.params[0].kind),
        ("scale", ParamKind::F32)
    );
    for k in ENTRY_POINTS
        .iter()
        .filter(|k| ["embedding", "qmatmul"].contains(&k.kernel))
    {
        assert!(crate::fkc_common::accepts_any_layout(k.kernel));
        assert_eq!(k.outputs, ["out"]);
    }
}

#[test]
fn embedding_gathers_rows_in_every_float_dtype() {
    for dtype in DType::PROTOCOL_2 {
        let symbol = format!("embedding_{}", dtype.suffix());
        let weight = op(dtype, &[3, 2], &[0.0, 1.0, 10.0, 11.0, 20.0, -0.0]);
        let out = call(&symbol, &[ids(&[1, 3], &[2.0, 0.0, 2.0]), weight], &[]).unwrap();
        assert_eq!(out.dtype(), dtype);
        assert_eq!(out.shape(), &[1, 3, 2]);
        assert_eq!(out.to_f64_vec(), [20.0, -0.0, 0.0, 1.0, 20.0, -0.0]);
        assert!(out.to_f64_vec()[1].is_sign_negative());
    }
}

#[test]
fn embedding_copies_weight_bits_exactly() {
    for (dtype, bits) in [
        (DType::F32, vec![0x7fc0_0001, 0x8000_0000, 0x0000_0001]),
        (
            DType::F64,
            vec![0x7ff8_0000_0000_0001, 0x8000_0000_0000_0000, 1],
        ),
        (DType::BF16, vec![0x7fc1, 0x8000, 0x0001]),
        (DType::F16, vec![0x7e01, 0x8000, 0x0001]),
    ] {
        let weight = AnyTensor::from_bits(dtype, &[3, 1], &bits).unwrap();
        let symbol = format!("embedding_{}", dtype.suffix());
        let operands = [
            ids(&[1, 3], &[2.0, 1.0, 0.0]),
            Some(Operand::contiguous(weight)),
        ];
        let out = call(&symbol, &operands, &[]).unwrap();
        assert_eq!(out.to_bits(), [bits[2], bits[1], bits[0]], "{dtype}");
    }
}

#[test]
fn embedding_reads_both_operands_through_any_view() {
    let operands = [
        ids(&[2, 3], &[2.0, 0.0, 1.0, 1.0, 2.0, 0.0]),
        iota(DType::F32, &[3, 4]),
    ];
    views_agree("embedding_f32", &operands, &[]);
    // A transposed ids view: storage [[0, 2], [1, 0], [2, 1]] read as [[0, 1, 2], [2, 0, 1]].
    let storage = Arc::new(tensor(DType::I64, &[3, 2], &[0.0, 2.0, 1.0, 0.0, 2.0, 1.0]));
    let transposed = Operand::view(storage, vec![2, 3], vec![1, 2], 0).unwrap();
    let weight = op(DType::F64, &[3, 1], &[5.0, 6.0, 7.0]);
    let out = call("embedding_f64", &[Some(transposed), weight.clone()], &[]).unwrap();
    assert_eq!(out.to_f64_vec(), [5.0, 6.0, 7.0, 7.0, 5.0, 6.0]);
    // Stride-0 ids (one id repeated) and a stride-0 weight (every row the same).
    let one = tensor(DType::I64, &[1, 1], &[2.0]);
    let repeated = expand_view_of(&one, 1, 4).unwrap();
    let out = call("embedding_f64", &[Some(repeated), weight], &[]).unwrap();
    assert_eq!(out.to_f64_vec(), [7.0; 4]);
    let row = tensor(DType::F64, &[1, 2], &[8.0, 9.0]);
    let table = expand_view_of(&row, 0, 5).unwrap();
    let out = call(
        "embedding_f64",
        &[ids(&[1, 2], &[4.0, 0.0]), Some(table)],
        &[],
    )
    .unwrap();
    assert_eq!(out.to_f64_vec(), [8.0, 9.0, 8.0, 9.0]);
}

#[test]
fn embedding_refuses_bad_ids_dtypes_and_params() {
    let weight = iota(DType::F32, &[3, 2]);
    let e = call(
        "embedding_f32",
        &[ids(&[1, 2], &[0.0, 3.0]), weight.clone()],
        &[],
    )
    .unwrap_err();
    assert_eq!(e.kind, KernelErrorKind::Length);
    assert!(
        e.message.contains("id 3 at [0, 1] is outside 0..3"),
        "{}",
        e.message
    );
    let negative = [ids(&[1, 1], &[-1.0]), weight.clone()];
    assert_eq!(
        kind(call("embedding_f32", &negative, &[])),
        KernelErrorKind::Length
    );
    for other in DType::ALL.into_iter().filter(|&d| d != DType::I64) {
        let wrong = [op(other, &[1, 1], &[0.0]), weight.clone()];
        assert_eq!(
            kind(call("embedding_f32", &wrong, &[])),
            KernelErrorKind::DType,
            "{other}"
        );
    }
    let f64_weight = [ids(&[1, 1], &[0.0]), iota(DType::F64, &[3, 2])];
    assert_eq!(
        kind(call("embedding_f32", &f64_weight, &[])),
        KernelErrorKind::DType
    );
    let good = [ids(&[1, 1], &[0.0]), weight.clone()];
    let extra = [("scale", ParamValue::F32(1.0))];
    assert_eq!(
        kind(call("embedding_f32", &good, &extra)),
        KernelErrorKind::BadParams
    );
    assert_eq!(
        kind(call("embedding_f32", &[None, weight.clone()], &[])),
        KernelErrorKind::MissingOperand
    );
    let rank1 = [ids(&[2], &[0.0, 1.0]), weight];
    assert_eq!(
        kind(call("embedding_f32", &rank1, &[])),
        KernelErrorKind::Rank
    );
}

#[test]
fn qmatmul_multiplies_requantises_and_reads_any_view() {
    let a = op(DType::I8, &[2, 3], &[1.0, -2.0, 3.0, 127.0, 127.0, -128.0]);
    let b = op(DType::I8, &[3, 2], &[4.0, 1.0, 5.0, 1.0, 6.0, 1.0]);
    let out = call("qmatmul_i8", &[a.clone(), b.clone()], &scale(1.0)).unwrap();
    assert_eq!(out.dtype(), DType::I8);
    assert_eq!(out.shape(), &[2, 2]);
    // Row 0: [12, 2]; row 1: [127·9 - 768 = 375 → 127, 126].
    assert_eq!(out.to_f64_vec(), [12.0, 2.0, 127.0, 126.0]);
    let halved = call("qmatmul_i8", &[a.clone(), b.clone()], &scale(0.5)).unwrap();
    assert_eq!(halved.to_f64_vec(), [6.0, 1.0, 127.0, 63.0]);
    let nan = call("qmatmul_i8", &[a.clone(), b.clone()], &scale(f32::NAN)).unwrap();
    assert_eq!(nan.to_f64_vec(), [0.0; 4]);
    let negative = call("qmatmul_i8", &[a.clone(), b.clone()], &scale(-1.0)).unwrap();
    assert_eq!(negative.to_f64_vec(), [-12.0, -2.0, -128.0, -126.0]);
    views_agree("qmatmul_i8", &[a, b], &scale(0.75));
    let row = tensor(DType::I8, &[1, 2], &[3.0, -1.0]);
    let rows = expand_view_of(&row, 0, 3).unwrap();
    let col = iota(DType::I8, &[2, 1]);
    let out = call("qmatmul_i8", &[Some(rows), col], &scale(1.0)).unwrap();
    assert_eq!(out.to_f64_vec(), [-1.0; 3]);
}

#[test]
fn qmatmul_reads_scale_leniently_and_refuses_bad_calls() {
    let (a, b) = (iota(DType::I8, &[2, 3]), iota(DType::I8, &[3, 2]));
    let want = call("qmatmul_i8", &[a.clone(), b.clone()], &scale(1.0)).unwrap();
    for lenient in [
        ParamValue::Usize(1),
        ParamValue::I64(1),
        ParamValue::F64(1.0),
    ] {
        let got = call("qmatmul_i8", &[a.clone(), b.clone()], &[("scale", lenient)]);
        assert_eq!(got.unwrap(), want);
    }
    let ab = [a.clone(), b.clone()];
    assert_eq!(
        kind(call("qmatmul_i8", &ab, &[])),
        KernelErrorKind::BadParams
    );
    let flag = [("scale", ParamValue::Bool(true))];
    assert_eq!(
        kind(call("qmatmul_i8", &ab, &flag)),
        KernelErrorKind::BadParams
    );
    let mismatch = [a.clone(), iota(DType::I8, &[2, 2])];
    assert_eq!(
        kind(call("qmatmul_i8", &mismatch, &scale(1.0))),
        KernelErrorKind::ShapeMismatch
    );
    let rank3 = [iota(DType::I8, &[1, 2, 3]), b.clone()];
    assert_eq!(
        kind(call("qmatmul_i8", &rank3, &scale(1.0))),
        KernelErrorKind::Rank
    );
    for other in DType::ALL.into_iter().filter(|&d| d != DType::I8) {
        let wrong = [a.clone(), iota(other, &[3, 2])];
        assert_eq!(
            kind(call("qmatmul_i8", &wrong, &scale(1.0))),
            KernelErrorKind::DType
        );
    }
    let k = entry_point_for("qmatmul", DType::I8).unwrap();
    assert!(k.run(&[a, b], &values(&scale(1.0))).is_ok());
}

#[test]
fn integer_adds_wrap_and_e5m2_rounds_once() {
    let max_i8 = op(DType::I8, &[2], &[127.0, -128.0]);
    let step = op(DType::I8, &[2, 1], &[1.0, -1.0]);
    let out = call("add_i8", &[max_i8, step], &[]).unwrap();
    assert_eq!(out.shape(), &[2, 2]);
    assert_eq!(out.to_f64_vec(), [-128.0, -127.0, 126.0, 127.0]);
    let big = op(DType::I32, &[2], &[2147483647.0, -2147483648.0]);
    let out = call("add_i32", &[big.clone(), big], &[]).unwrap();
    assert_eq!(out.to_f64_vec(), [-2.0, 0.0]);
    let a = op(DType::F8E5M2, &[3], &[1.0, 1.0, 57344.0]);
    let b = op(DType::F8E5M2, &[3], &[0.125, 0.1875, 57344.0]);
    let out = call("add_f8e5m2", &[a, b], &[]).unwrap();
    assert_eq!(out.dtype(), DType::F8E5M2);
    assert_eq!(out.to_f64_vec(), [1.0, 1.25, f64::INFINITY]);
    for (symbol, dtype) in [
        ("add_i8", DType::I8),
        ("add_i32", DType::I32),
        ("add_f8e5m2", DType::F8E5M2),
    ] {
        views_agree(symbol, &[iota(dtype, &[2, 3]), iota(dtype, &[3])], &[]);
        let mixed = [iota(dtype, &[3]), iota(DType::F32, &[3])];
        assert_eq!(kind(call(symbol, &mixed, &[])), KernelErrorKind::DType);
        let mismatch = [iota(dtype, &[2]), iota(dtype, &[3])];
        assert_eq!(
            kind(call(symbol, &mismatch, &[])),
            KernelErrorKind::ShapeMismatch
        );
    }
}
