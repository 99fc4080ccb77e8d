//! Golden outputs from independent peers (ONNX Runtime f32, NumPy f64 definitions), generated
//! by `tests/peer/gen.py` and committed as JSON; this test only reads them (no Python in CI).
//! f64 kernels must match the f64 peer within 1e-12 relative, f32 kernels the ONNX Runtime
//! output and the f64 peer within 2e-5 relative, max_pool2d bitwise; every case the peer
//! rejects must be rejected too. Each case also runs through the per-dtype entry points.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fuel_reference_backend::ops::{
    Conv2dParams, Conv2dSimpleParams, ConvTranspose2dParams, MaxPool2dParams, conv_transpose2d,
    conv2d, conv2d_simple, max_pool2d,
};
use fuel_reference_backend::{
    AnyTensor, DType, Element, KernelError, Operand, ParamValue, ParamValues, RefTensor, Scalar,
    entry_point,
};
use serde_json::Value;

fn load(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/peer/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["cases"].as_array().unwrap().clone()
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn dims(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn pair(v: &Value) -> (usize, usize) {
    let d = dims(v);
    (d[0], d[1])
}

fn tensor<T: Element>(c: &Value, key: &str, shape_key: &str) -> RefTensor<T> {
    let values: Vec<T> = nums(&c[key]).into_iter().map(T::from_f64).collect();
    RefTensor::from_vec(values, &dims(&c[shape_key])).unwrap()
}

fn close(got: &[f64], want: &[f64], rel: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * (1.0 + w.abs()),
            "{what}[{i}]: got {g}, peer {w}"
        );
    }
}

fn as_f64<T: Element>(t: &RefTensor<T>) -> Vec<f64> {
    t.data().iter().map(|&v| Scalar::to_f64(v)).collect()
}

/// Checks one precision's result against the peer (or the peer's rejection).
fn check<T: Element>(
    c: &Value,
    got: Result<RefTensor<T>, KernelError>,
    rel: f64,
) -> Option<RefTensor<T>> {
    let name = c["name"].as_str().unwrap();
    if let Some(err) = c.get("error") {
        let e = got.expect_err(&format!("{name}: the peer rejects it ({err}), so must we"));
        assert!(e.to_string().starts_with(e.op), "{e}");
        return None;
    }
    let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(got.shape(), &dims(&c["out_shape"])[..], "{name}");
    close(
        &as_f64(&got),
        &nums(&c["out_f64"]),
        rel,
        &format!("{name} {:?} vs f64 peer", T::DTYPE),
    );
    if T::DTYPE == DType::F32 && !c["out_f32"].is_null() {
        close(
            &as_f64(&got),
            &nums(&c["out_f32"]),
            rel,
            &format!("{name} vs onnxruntime f32"),
        );
    }
    Some(got)
}

fn operand<T: Element>(c: &Value, key: &str, shape_key: &str) -> Option<Operand> {
    Some(Operand::contiguous(AnyTensor::from(tensor::<T>(
        c, key, shape_key,
    ))))
}

/// Runs the entry point `symbol` and asserts it is bitwise the direct kernel call.
fn via_entry(symbol: &str, ops: &[Option<Operand>], values: &ParamValues, direct: &RefTensor<f64>) {
    let out = entry_point(symbol).unwrap().run(ops, values).unwrap();
    let bits: Vec<u64> = direct.data().iter().map(|v| v.to_bits()).collect();
    assert_eq!(out[0].to_bits(), bits, "{symbol}");
}

fn conv_values(c: &Value) -> ParamValues {
    let mut v = ParamValues::new();
    for key in ["stride", "padding", "dilation", "output_padding"] {
        if !c[key].is_null() {
            let (a, b) = pair(&c[key]);
            v.insert(key.into(), ParamValue::Pair(a, b));
        }
    }
    v.insert(
        "groups".into(),
        ParamValue::Usize(c["groups"].as_u64().unwrap() as usize),
    );
    v
}

fn run_conv2d<T: Element>(c: &Value, p: &Conv2dParams) -> Result<RefTensor<T>, KernelError> {
    let bias = (!c["bias"].is_null()).then(|| {
        let b: Vec<T> = nums(&c["bias"]).into_iter().map(T::from_f64).collect();
        RefTensor::from_vec(b.clone(), &[b.len()]).unwrap()
    });
    conv2d(
        &tensor::<T>(c, "x", "x_shape"),
        &tensor::<T>(c, "w", "w_shape"),
        bias.as_ref(),
        p,
    )
}

#[test]
fn conv2d_agrees_with_peers() {
    let cases = load("conv2d.json");
    assert!(cases.len() >= 8 && cases.iter().any(|c| c.get("error").is_some()));
    for c in &cases {
        let p = Conv2dParams {
            stride: pair(&c["stride"]),
            padding: pair(&c["padding"]),
            dilation: pair(&c["dilation"]),
            groups: c["groups"].as_u64().unwrap() as usize,
        };
        check::<f32>(c, run_conv2d::<f32>(c, &p), 2e-5);
        let Some(direct) = check::<f64>(c, run_conv2d::<f64>(c, &p), 1e-12) else {
            continue;
        };
        let bias = (!c["bias"].is_null()).then(|| {
            let b = nums(&c["bias"]);
            Operand::contiguous(AnyTensor::from_f64(DType::F64, &[b.len()], &b).unwrap())
        });
        let ops = [
            operand::<f64>(c, "x", "x_shape"),
            operand::<f64>(c, "w", "w_shape"),
            bias,
        ];
        via_entry(
            "fuel_reference_backend::ops::conv2d_f64",
            &ops,
            &conv_values(c),
            &direct,
        );
        // conv2d_simple covers the square, ungrouped, undilated, bias-free subset.
        let square = p.stride.0 == p.stride.1 && p.padding.0 == p.padding.1;
        if square && p.groups == 1 && p.dilation == (1, 1) && c["bias"].is_null() {
            let sp = Conv2dSimpleParams {
                stride: p.stride.0,
                padding: p.padding.0,
            };
            let simple = conv2d_simple(
                &tensor::<f64>(c, "x", "x_shape"),
                &tensor::<f64>(c, "w", "w_shape"),
                &sp,
            );
            assert_eq!(simple.unwrap().data(), direct.data());
        }
    }
}

#[test]
fn conv_transpose2d_agrees_with_peers() {
    let cases = load("conv_transpose2d.json");
    assert!(cases.len() >= 6 && cases.iter().any(|c| c.get("error").is_some()));
    for c in &cases {
        let p = ConvTranspose2dParams {
            stride: pair(&c["stride"]),
            padding: pair(&c["padding"]),
            output_padding: pair(&c["output_padding"]),
            dilation: pair(&c["dilation"]),
            groups: c["groups"].as_u64().unwrap() as usize,
        };
        let run = |f32_: bool| {
            if f32_ {
                check::<f32>(
                    c,
                    conv_transpose2d(&tensor(c, "x", "x_shape"), &tensor(c, "w", "w_shape"), &p),
                    2e-5,
                );
                None
            } else {
                check::<f64>(
                    c,
                    conv_transpose2d(&tensor(c, "x", "x_shape"), &tensor(c, "w", "w_shape"), &p),
                    1e-12,
                )
            }
        };
        run(true);
        let Some(direct) = run(false) else { continue };
        let ops = [
            operand::<f64>(c, "x", "x_shape"),
            operand::<f64>(c, "w", "w_shape"),
        ];
        via_entry(
            "fuel_reference_backend::ops::conv_transpose2d_f64",
            &ops,
            &conv_values(c),
            &direct,
        );
    }
}

#[test]
fn max_pool2d_agrees_with_peers_bitwise() {
    let cases = load("max_pool2d.json");
    assert!(cases.len() >= 4 && cases.iter().any(|c| c.get("error").is_some()));
    for c in &cases {
        let p = MaxPool2dParams {
            kernel_size: c["kernel_size"].as_u64().unwrap() as usize,
            stride: c["stride"].as_u64().unwrap() as usize,
        };
        check::<f32>(c, max_pool2d(&tensor(c, "x", "x_shape"), &p), 0.0);
        let Some(direct) = check::<f64>(c, max_pool2d(&tensor(c, "x", "x_shape"), &p), 0.0) else {
            continue;
        };
        let mut values = ParamValues::new();
        values.insert("kernel_size".into(), ParamValue::Usize(p.kernel_size));
        values.insert("stride".into(), ParamValue::Usize(p.stride));
        via_entry(
            "fuel_reference_backend::ops::max_pool2d_f64",
            &[operand::<f64>(c, "x", "x_shape")],
            &values,
            &direct,
        );
    }
}
