//! The executor and the link registry: routing, dtype admission, layout rejection and the
//! contiguize path, params-vs-operand validation, and calling every entry point the same way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "backend_util/mod.rs"]
mod util;

use std::sync::Arc;

use fuel_reference_backend::dispatch::{CONV2D_FIELDS, variant};
use fuel_reference_backend::fkc::entry_point_for;
use fuel_reference_backend::view::{
    broadcast_view_of, offset_view_of, reversed_view_of, strided_view_of,
};
use fuel_reference_backend::{
    AnyTensor, DType, ENTRY_POINTS, ExecError, KernelErrorKind, OpKind, OpParams, Operand,
    ParamValue, ParamValues, entry_point, execute,
};
use util::{Rng, arange};

fn any(dtype: DType, shape: &[usize], values: &[f64]) -> AnyTensor {
    AnyTensor::from_f64(dtype, shape, values).unwrap()
}

fn conv_params() -> OpParams {
    OpParams::Conv2D {
        x_shape: [1, 2, 3, 3],
        w_shape: [1, 2, 2, 2],
        out_shape: [1, 1, 2, 2],
        stride: (1, 1),
        padding: (0, 0),
        dilation: (1, 1),
        groups: 1,
    }
}

fn conv_operands(dtype: DType, bias: bool) -> Vec<Option<Operand>> {
    vec![
        Some(Operand::contiguous(any(
            dtype,
            &[1, 2, 3, 3],
            &arange(&[18]),
        ))),
        Some(Operand::contiguous(any(
            dtype,
            &[1, 2, 2, 2],
            &arange(&[8]),
        ))),
        bias.then(|| Operand::contiguous(any(dtype, &[1], &[10.0]))),
    ]
}

#[test]
fn executes_conv2d_in_f32_and_f64_with_and_without_bias() {
    // Same numbers as the conv2d known-answer test: [278, 306, 362, 390] with bias 10.
    for dtype in [DType::F32, DType::F64] {
        let out = execute(OpKind::Conv2D, &conv_params(), &conv_operands(dtype, true)).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].dtype(), dtype);
        assert_eq!(out[0].shape(), &[1, 1, 2, 2]);
        assert_eq!(out[0].to_f64_vec(), vec![278.0, 306.0, 362.0, 390.0]);
        let out = execute(OpKind::Conv2D, &conv_params(), &conv_operands(dtype, false)).unwrap();
        assert_eq!(out[0].to_f64_vec(), vec![268.0, 296.0, 352.0, 380.0]);
        assert_eq!(out[0].size_bytes(), 4 * dtype.size_bytes());
    }
}

#[test]
fn rejects_unwired_dtypes_mixed_dtypes_and_wrong_params() {
    for dtype in [DType::BF16, DType::F16] {
        let e = execute(OpKind::Conv2D, &conv_params(), &conv_operands(dtype, false)).unwrap_err();
        assert!(
            matches!(e, ExecError::UnsupportedDType { op: "conv2d", .. }),
            "{e}"
        );
        assert_eq!(e.kind(), KernelErrorKind::DType);
    }
    let mut mixed = conv_operands(DType::F32, true);
    mixed[2] = Some(Operand::contiguous(any(DType::F64, &[1], &[1.0])));
    let e = execute(OpKind::Conv2D, &conv_params(), &mixed).unwrap_err();
    assert!(
        matches!(
            e,
            ExecError::WrongDType {
                operand: "bias",
                ..
            }
        ),
        "{e}"
    );
    let e = execute(
        OpKind::ConvTranspose2D,
        &conv_params(),
        &conv_operands(DType::F32, false),
    )
    .unwrap_err();
    assert!(matches!(e, ExecError::ParamsMismatch { .. }), "{e}");
    assert!(
        e.to_string().contains("ConvTranspose2D") && e.to_string().contains("Conv2D"),
        "{e}"
    );
}

#[test]
fn rejects_params_inconsistent_with_operands() {
    let ops = conv_operands(DType::F64, false);
    let with = |f: fn(&mut OpParams)| {
        let mut p = conv_params();
        f(&mut p);
        execute(OpKind::Conv2D, &p, &ops).unwrap_err()
    };
    let e = with(|p| {
        if let OpParams::Conv2D { x_shape, .. } = p {
            x_shape[2] = 4;
        }
    });
    assert_eq!(e.kind(), KernelErrorKind::ShapeMismatch, "{e}");
    assert!(e.to_string().contains("x_shape [1, 2, 4, 3]"), "{e}");
    let e = with(|p| {
        if let OpParams::Conv2D { out_shape, .. } = p {
            *out_shape = [1, 1, 3, 3];
        }
    });
    assert_eq!(e.kind(), KernelErrorKind::ShapeMismatch, "{e}");
    let e = with(|p| {
        if let OpParams::Conv2D { w_shape, .. } = p {
            w_shape[0] = 2;
        }
    });
    assert_eq!(e.kind(), KernelErrorKind::ShapeMismatch, "{e}");
    let e = with(|p| {
        if let OpParams::Conv2D { groups, .. } = p {
            *groups = 2;
        }
    });
    assert_eq!(e.kind(), KernelErrorKind::ChannelMismatch, "{e}");
}

#[test]
fn rejects_missing_and_extra_operands() {
    let ops = conv_operands(DType::F32, false);
    let e = execute(OpKind::Conv2D, &conv_params(), &ops[..1]).unwrap_err();
    assert_eq!(e.kind(), KernelErrorKind::MissingOperand, "{e}");
    assert!(e.to_string().contains("weight"), "{e}");
    let e = execute(OpKind::Conv2D, &conv_params(), &[None, ops[1].clone()]).unwrap_err();
    assert_eq!(e.kind(), KernelErrorKind::MissingOperand);
    let mut extra = conv_operands(DType::F32, true);
    extra.push(ops[0].clone());
    let e = execute(OpKind::Conv2D, &conv_params(), &extra).unwrap_err();
    assert_eq!(e.kind(), KernelErrorKind::MissingOperand, "{e}");
}

/// Every non-contiguous view the helpers can build of `t`.
fn awkward_views(t: &AnyTensor) -> Vec<(&'static str, Operand)> {
    let mut views = vec![("start_offset", offset_view_of(t))];
    views.extend(strided_view_of(t).map(|v| ("strided", v)));
    views.extend(reversed_view_of(t).map(|v| ("reverse_strides", v)));
    views.extend(broadcast_view_of(t).map(|v| ("broadcast_stride0", v)));
    views
}

#[test]
fn layout_flags_are_real_rejected_and_contiguize_restores_bitwise_results() {
    // x constant along N (two identical images) so a broadcast view exists too.
    let mut rng = Rng::new(7);
    let image = rng.values(18);
    let xv: Vec<f64> = image.iter().chain(&image).copied().collect();
    let x = any(DType::F32, &[2, 2, 3, 3], &xv);
    let w = Operand::contiguous(any(DType::F32, &[1, 2, 2, 2], &rng.values(8)));
    let params = OpParams::Conv2D {
        x_shape: [2, 2, 3, 3],
        w_shape: [1, 2, 2, 2],
        out_shape: [2, 1, 2, 2],
        stride: (1, 1),
        padding: (0, 0),
        dilation: (1, 1),
        groups: 1,
    };
    let reference = execute(
        OpKind::Conv2D,
        &params,
        &[Some(Operand::contiguous(x.clone())), Some(w.clone())],
    )
    .unwrap();
    let views = awkward_views(&x);
    assert_eq!(views.len(), 4);
    for (flag, view) in views {
        let layout = view.layout();
        assert!(!view.is_contiguous(), "{flag}");
        let set = match flag {
            "start_offset" => layout.start_offset,
            "strided" => layout.strided,
            "reverse_strides" => layout.reverse_strides,
            _ => layout.broadcast_stride0,
        };
        assert!(set, "{flag}: {layout:?}");
        let e = execute(
            OpKind::Conv2D,
            &params,
            &[Some(view.clone()), Some(w.clone())],
        )
        .unwrap_err();
        assert!(
            matches!(e, ExecError::Layout { operand: "x", .. }),
            "{flag}: {e}"
        );
        // Weight views are rejected too.
        let wt = any(DType::F32, &[1, 2, 2, 2], &arange(&[8]));
        let e = execute(
            OpKind::Conv2D,
            &params,
            &[
                Some(Operand::contiguous(x.clone())),
                Some(offset_view_of(&wt)),
            ],
        );
        assert!(matches!(
            e,
            Err(ExecError::Layout {
                operand: "weight",
                ..
            })
        ));
        // The planner's fix: Contiguize (itself an op) then the kernel, bitwise the reference.
        let packed = execute(OpKind::Contiguize, &OpParams::Contiguize, &[Some(view)]).unwrap();
        assert_eq!(packed[0].to_bits(), x.to_bits(), "{flag}");
        let out = execute(
            OpKind::Conv2D,
            &params,
            &[
                Some(Operand::contiguous(packed[0].clone())),
                Some(w.clone()),
            ],
        )
        .unwrap();
        assert_eq!(out[0].to_bits(), reference[0].to_bits(), "{flag}");
    }
}

#[test]
fn contiguize_runs_in_every_dtype_and_leaves_inputs_unchanged() {
    // contiguize takes the four floats (protocol 2's dtypes)
    for dtype in DType::PROTOCOL_2 {
        let t = any(dtype, &[2, 3, 4], &arange(&[24]));
        let view = reversed_view_of(&t).unwrap();
        let before = view.storage().to_bits();
        let out = execute(
            OpKind::Contiguize,
            &OpParams::Contiguize,
            &[Some(view.clone())],
        )
        .unwrap();
        assert_eq!(out[0].dtype(), dtype);
        assert_eq!(out[0].to_bits(), t.to_bits());
        assert_eq!(view.storage().to_bits(), before);
        assert!(!Arc::ptr_eq(view.storage(), &Arc::new(out[0].clone())));
    }
    // A contiguous view of a prefix of larger storage is accepted by the conv kernels.
    let storage = Arc::new(any(DType::F64, &[40], &arange(&[40])));
    let x = Operand::view(storage, vec![1, 2, 3, 3], vec![18, 9, 3, 1], 0).unwrap();
    assert!(x.is_contiguous());
    let mut ops = conv_operands(DType::F64, true);
    ops[0] = Some(x);
    let out = execute(OpKind::Conv2D, &conv_params(), &ops).unwrap();
    assert_eq!(out[0].to_f64_vec(), vec![278.0, 306.0, 362.0, 390.0]);
}

#[test]
fn conv_transpose2d_executes_and_checks_its_params() {
    let params = OpParams::ConvTranspose2D {
        x_shape: [1, 1, 2, 2],
        w_shape: [1, 1, 2, 2],
        out_shape: [1, 1, 3, 3],
        stride: (1, 1),
        padding: (0, 0),
        output_padding: (0, 0),
        dilation: (1, 1),
        groups: 1,
    };
    let ops = |dtype| {
        vec![
            Some(Operand::contiguous(any(
                dtype,
                &[1, 1, 2, 2],
                &arange(&[4]),
            ))),
            Some(Operand::contiguous(any(
                dtype,
                &[1, 1, 2, 2],
                &[1.0, 2.0, 3.0, 4.0],
            ))),
        ]
    };
    let out = execute(OpKind::ConvTranspose2D, &params, &ops(DType::F64)).unwrap();
    assert_eq!(
        out[0].to_f64_vec(),
        vec![0.0, 1.0, 2.0, 2.0, 10.0, 10.0, 6.0, 17.0, 12.0]
    );
    let e = execute(OpKind::ConvTranspose2D, &params, &ops(DType::BF16)).unwrap_err();
    assert_eq!(e.kind(), KernelErrorKind::DType);
    let mut three = ops(DType::F32);
    three.push(None);
    assert_eq!(
        execute(OpKind::ConvTranspose2D, &params, &three)
            .unwrap_err()
            .kind(),
        KernelErrorKind::MissingOperand
    );
}

/// Operands and values that every entry point of `kernel` accepts.
fn sample_call(kernel: &str, dtype: DType) -> (Vec<Option<Operand>>, ParamValues) {
    let op = |shape: &[usize]| Some(Operand::contiguous(any(dtype, shape, &arange(shape))));
    let mut v = ParamValues::new();
    // A threaded variant takes its kernel's operands and values and a thread count.
    if let Some(single) = kernel.strip_suffix("_threaded") {
        let (ops, mut v) = sample_call(single, dtype);
        v.insert("threads".into(), ParamValue::Usize(3));
        return (ops, v);
    }
    let ops = match kernel {
        "conv2d" => {
            v.insert("stride".into(), ParamValue::Pair(1, 1));
            v.insert("padding".into(), ParamValue::Pair(1, 0));
            v.insert("dilation".into(), ParamValue::Pair(1, 1));
            v.insert("groups".into(), ParamValue::Usize(2));
            vec![op(&[1, 2, 3, 3]), op(&[2, 1, 2, 2]), op(&[2])]
        }
        "conv_transpose2d" => {
            v.insert("stride".into(), ParamValue::Pair(2, 1));
            v.insert("padding".into(), ParamValue::Pair(0, 0));
            v.insert("output_padding".into(), ParamValue::Pair(1, 0));
            v.insert("dilation".into(), ParamValue::Pair(1, 1));
            v.insert("groups".into(), ParamValue::Usize(1));
            vec![op(&[1, 2, 3, 3]), op(&[2, 1, 2, 2])]
        }
        "conv2d_simple" => {
            v.insert("stride".into(), ParamValue::Usize(1));
            v.insert("padding".into(), ParamValue::Usize(1));
            vec![op(&[1, 2, 3, 3]), op(&[1, 2, 2, 2])]
        }
        "max_pool2d" => {
            v.insert("kernel_size".into(), ParamValue::Usize(2));
            v.insert("stride".into(), ParamValue::Usize(1));
            vec![op(&[1, 2, 3, 3])]
        }
        "matmul" => {
            v.insert("transpose_a".into(), ParamValue::Bool(false));
            v.insert("transpose_b".into(), ParamValue::Bool(true));
            vec![op(&[2, 3, 4]), op(&[2, 5, 4])]
        }
        "add" | "mul" => vec![op(&[2, 1, 3]), op(&[4, 1])],
        "leaky_relu" => {
            v.insert("negative_slope".into(), ParamValue::F64(0.25));
            vec![op(&[2, 3])]
        }
        "softmax" | "cumsum" => {
            v.insert("axis".into(), ParamValue::I64(-1));
            vec![op(&[2, 3])]
        }
        "layer_norm" => {
            v.insert("eps".into(), ParamValue::F32(1e-5));
            vec![op(&[2, 3]), op(&[3]), None]
        }
        "reduce_sum" | "reduce_mean" => {
            v.insert("axes".into(), ParamValue::I64List(vec![0, -1]));
            v.insert("keepdim".into(), ParamValue::Bool(true));
            vec![op(&[2, 3, 2])]
        }
        "avg_pool2d" => {
            v.insert("kernel_size".into(), ParamValue::Usize(2));
            v.insert("stride".into(), ParamValue::Usize(1));
            v.insert("padding".into(), ParamValue::Usize(1));
            v.insert("divisor".into(), ParamValue::Enum("valid".into()));
            vec![op(&[1, 2, 3, 3])]
        }
        "transpose" => {
            v.insert("perm".into(), ParamValue::UsizeList(vec![2, 0, 1]));
            vec![op(&[2, 3, 4])]
        }
        "embedding" => {
            // ids are I64 whatever the entry point's dtype: rows 0..2 of a [3, 4] table
            let ids = any(DType::I64, &[2, 2], &[0.0, 2.0, 1.0, 0.0]);
            vec![Some(Operand::contiguous(ids)), op(&[3, 4])]
        }
        "qmatmul" => {
            v.insert("scale".into(), ParamValue::F32(0.5));
            vec![op(&[2, 3]), op(&[3, 4])]
        }
        _ => vec![op(&[2, 3])],
    };
    (ops, v)
}

#[test]
fn every_entry_point_runs_and_rejects_other_dtypes_and_layouts() {
    for k in ENTRY_POINTS {
        let (ops, values) = sample_call(k.kernel, k.dtype);
        let out = k
            .run(&ops, &values)
            .unwrap_or_else(|e| panic!("{}: {e}", k.symbol));
        assert_eq!(out.len(), k.outputs.len());
        assert_eq!(out[0].dtype(), k.dtype, "{}", k.symbol);
        assert_eq!(ops.len(), k.inputs.len());
        for other in DType::ALL.into_iter().filter(|&d| d != k.dtype) {
            let (ops, values) = sample_call(k.kernel, other);
            let e = (k.call)(&ops, &values).unwrap_err();
            assert_eq!(
                e.kind,
                KernelErrorKind::DType,
                "{} with {other}: {e}",
                k.symbol
            );
        }
        // The common kernels read any layout; the seed's kernels refuse what is not packed.
        if k.kernel != "contiguize"
            && !fuel_reference_backend::fkc_common::accepts_any_layout(k.kernel)
        {
            let mut awkward = ops.clone();
            let first = awkward[0].take().unwrap();
            let packed = fuel_reference_backend::ops::contiguize_any(&first).unwrap();
            awkward[0] = Some(offset_view_of(&packed));
            let e = k.run(&awkward, &values).unwrap_err();
            assert_eq!(e.kind, KernelErrorKind::Layout, "{}: {e}", k.symbol);
        }
    }
}

#[test]
fn entry_points_match_the_admitted_dtypes_and_carriers() {
    for kernel in ["conv2d", "conv_transpose2d"] {
        let dtypes: Vec<DType> = DType::ALL
            .into_iter()
            .filter(|&d| entry_point_for(kernel, d).is_some())
            .collect();
        assert_eq!(dtypes, vec![DType::F32, DType::F64], "{kernel}");
    }
    for kernel in ["conv2d_simple", "max_pool2d", "contiguize"] {
        assert!(
            DType::PROTOCOL_2
                .into_iter()
                .all(|d| entry_point_for(kernel, d).is_some()),
            "{kernel}"
        );
    }
    let k = entry_point("fuel_reference_backend::ops::conv2d_f32").unwrap();
    assert_eq!(k.op_kind, Some(OpKind::Conv2D.name()));
    assert_eq!(k.params, CONV2D_FIELDS);
    assert_eq!(k.params, variant("Conv2D").unwrap().fields);
    let names: Vec<&str> = k.inputs.iter().map(|i| i.name).collect();
    assert_eq!(names, ["x", "weight", "bias"]);
    assert!(k.inputs[2].optional && k.inputs[2].rank == 1);
    let simple = entry_point("fuel_reference_backend::ops::conv2d_simple_bf16").unwrap();
    assert_eq!(simple.op_kind, None);
    let pool_params: Vec<&str> = entry_point("fuel_reference_backend::ops::max_pool2d_f16")
        .unwrap()
        .params
        .iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(pool_params, ["kernel_size", "stride"]);
}

#[test]
fn entry_points_fill_shape_fields_and_check_given_ones() {
    let k = entry_point("fuel_reference_backend::ops::conv2d_f64").unwrap();
    let (ops, mut values) = sample_call("conv2d", DType::F64);
    let filled = k.run(&ops, &values).unwrap();
    values.insert("out_shape".into(), ParamValue::Array4([1, 2, 4, 2]));
    values.insert("x_shape".into(), ParamValue::Array4([1, 2, 3, 3]));
    assert_eq!(
        k.run(&ops, &values).unwrap()[0].to_bits(),
        filled[0].to_bits()
    );
    values.insert("out_shape".into(), ParamValue::Array4([1, 2, 3, 2]));
    assert_eq!(
        k.run(&ops, &values).unwrap_err().kind,
        KernelErrorKind::ShapeMismatch
    );
    values.remove("out_shape");
    values.insert("groups".into(), ParamValue::Pair(1, 1));
    assert_eq!(
        k.run(&ops, &values).unwrap_err().kind,
        KernelErrorKind::BadParams
    );
    values.insert("groups".into(), ParamValue::Usize(2));
    values.insert("bogus".into(), ParamValue::Usize(2));
    assert_eq!(
        k.run(&ops, &values).unwrap_err().kind,
        KernelErrorKind::BadParams
    );
    values.remove("bogus");
    values.remove("stride");
    assert_eq!(
        k.run(&ops, &values).unwrap_err().kind,
        KernelErrorKind::BadParams
    );

    let pool = entry_point("fuel_reference_backend::ops::max_pool2d_f32").unwrap();
    let (ops, mut values) = sample_call("max_pool2d", DType::F32);
    values.insert("kernel_size".into(), ParamValue::Usize(9));
    assert_eq!(
        pool.run(&ops, &values).unwrap_err().kind,
        KernelErrorKind::KernelTooLarge
    );
    values.remove("kernel_size");
    assert_eq!(
        pool.run(&ops, &values).unwrap_err().kind,
        KernelErrorKind::BadParams
    );
    // Rank errors surface from the entry point, not a panic.
    let k = entry_point("fuel_reference_backend::ops::conv2d_f32").unwrap();
    let (mut ops, values) = sample_call("conv2d", DType::F32);
    ops[0] = Some(Operand::contiguous(any(
        DType::F32,
        &[2, 3, 3],
        &arange(&[18]),
    )));
    assert_eq!(
        k.run(&ops, &values).unwrap_err().kind,
        KernelErrorKind::Rank
    );
}
