#!/usr/bin/env python3
"""Golden outputs for the reference kernels from independent peer implementations.

Peers:
  * ONNX Runtime (CPU) — Conv, ConvTranspose and MaxPool, float32: a production
    implementation (im2col/GEMM, its own summation order and FMA), so the Rust f32 kernels are
    compared with a tolerance.
  * NumPy float64 definitions written here from the textbook formulas (pad-then-slice gather
    for conv, pad-free scatter then crop for transposed conv, sliding-window max): the f64
    reference, compared at 1e-12 relative. The script also checks that both peers agree.
  * Cases where ONNX Runtime refuses the geometry are stored with "error" set; the Rust kernel
    must reject them too.

Inputs are random float32 values (so they are exact in f32 and f64). Run with numpy and
onnxruntime + onnx installed:  python3 tests/peer/gen.py  (writes tests/peer/*.json).
CI never runs this script; it only reads the committed JSON.
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(20260401)


def rand(shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def run_onnx(op, inputs, attrs):
    """Runs one ONNX node on float32 inputs; returns the output or raises."""
    names = [f"in{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["out"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip(names, inputs)))[0]


def np_conv2d(x, w, b, stride, pad, dil, groups):
    """Gather form in float64: zero-pad, then for each tap add a strided slice times weight."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, cin, h, wd = x.shape
    cout, cin_g, kh, kw = w.shape
    eh, ew = dil[0] * (kh - 1) + 1, dil[1] * (kw - 1) + 1
    ho = (h + 2 * pad[0] - eh) // stride[0] + 1
    wo = (wd + 2 * pad[1] - ew) // stride[1] + 1
    if h + 2 * pad[0] < eh or wd + 2 * pad[1] < ew:
        raise ValueError("kernel larger than padded input")
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    out = np.zeros((n, cout, ho, wo))
    cout_g = cout // groups
    for co in range(cout):
        g = co // cout_g
        for ci in range(cin_g):
            for i in range(kh):
                for j in range(kw):
                    r0, c0 = i * dil[0], j * dil[1]
                    patch = xp[:, g * cin_g + ci, r0 : r0 + stride[0] * (ho - 1) + 1 : stride[0],
                               c0 : c0 + stride[1] * (wo - 1) + 1 : stride[1]]
                    out[:, co] += patch * w[co, ci, i, j]
    if b is not None:
        out += b.astype(np.float64)[None, :, None, None]
    return out


def np_conv_t(x, w, stride, pad, opad, dil, groups):
    """Scatter into the full (uncropped) float64 output, then crop padding from both sides."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, cin, h, wd = x.shape
    _, cout_g, kh, kw = w.shape
    full_h = (h - 1) * stride[0] + dil[0] * (kh - 1) + 1 + opad[0]
    full_w = (wd - 1) * stride[1] + dil[1] * (kw - 1) + 1 + opad[1]
    ho, wo = full_h - 2 * pad[0], full_w - 2 * pad[1]
    if ho <= 0 or wo <= 0:
        raise ValueError("padding larger than the produced output")
    full = np.zeros((n, cout_g * groups, full_h, full_w))
    cin_g = cin // groups
    for ci in range(cin):
        g = ci // cin_g
        for co in range(cout_g):
            for i in range(kh):
                for j in range(kw):
                    r0, c0 = i * dil[0], j * dil[1]
                    full[:, g * cout_g + co, r0 : r0 + stride[0] * (h - 1) + 1 : stride[0],
                         c0 : c0 + stride[1] * (wd - 1) + 1 : stride[1]] += x[:, ci] * w[ci, co, i, j]
    return full[:, :, pad[0] : pad[0] + ho, pad[1] : pad[1] + wo]


def np_max_pool(x, k, s):
    n, c, h, w = x.shape
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    out = np.full((n, c, ho, wo), -np.inf)
    for i in range(k):
        for j in range(k):
            out = np.maximum(out, x[:, :, i : i + s * (ho - 1) + 1 : s, j : j + s * (wo - 1) + 1 : s])
    return out.astype(np.float64)


def flat(a):
    return [float(v) for v in np.asarray(a).reshape(-1)]


def conv2d_case(name, xs, ws, stride=(1, 1), pad=(0, 0), dil=(1, 1), groups=1, bias=False):
    x, w = rand(xs), rand(ws)
    b = rand((ws[0],)) if bias else None
    case = dict(kernel="conv2d", name=name, x_shape=list(xs), x=flat(x), w_shape=list(ws), w=flat(w),
                bias=flat(b) if b is not None else None, stride=list(stride), padding=list(pad),
                dilation=list(dil), groups=groups)
    attrs = dict(strides=list(stride), pads=[pad[0], pad[1], pad[0], pad[1]], dilations=list(dil),
                 group=groups, kernel_shape=list(ws[2:]))
    try:
        ref = run_onnx("Conv", [x, w] + ([b] if b is not None else []), attrs)
    except Exception as e:  # the peer refuses the geometry
        case["error"] = str(e).splitlines()[0][:200]
        return case
    exact = np_conv2d(x, w, b, stride, pad, dil, groups)
    assert ref.shape == exact.shape and np.allclose(ref, exact, rtol=1e-5, atol=1e-5), name
    case.update(out_shape=list(exact.shape), out_f64=flat(exact), out_f32=flat(ref))
    return case


def conv_t_case(name, xs, ws, stride=(1, 1), pad=(0, 0), opad=(0, 0), dil=(1, 1), groups=1, onnx_peer=True):
    """onnx_peer=False: ONNX Runtime requires output_padding < stride, PyTorch (and this
    backend) also admit output_padding < dilation; such cases use only the NumPy definition."""
    x, w = rand(xs), rand(ws)
    case = dict(kernel="conv_transpose2d", name=name, x_shape=list(xs), x=flat(x), w_shape=list(ws),
                w=flat(w), stride=list(stride), padding=list(pad), output_padding=list(opad),
                dilation=list(dil), groups=groups)
    attrs = dict(strides=list(stride), pads=[pad[0], pad[1], pad[0], pad[1]], dilations=list(dil),
                 group=groups, kernel_shape=list(ws[2:]), output_padding=list(opad))
    try:
        ref = run_onnx("ConvTranspose", [x, w], attrs) if onnx_peer else None
        if ref is not None and min(ref.shape) == 0:
            raise ValueError("empty output")
    except Exception as e:
        case["error"] = str(e).splitlines()[0][:200]
        return case
    exact = np_conv_t(x, w, stride, pad, opad, dil, groups)
    if ref is None:
        case.update(out_shape=list(exact.shape), out_f64=flat(exact), out_f32=None)
        return case
    assert ref.shape == exact.shape and np.allclose(ref, exact, rtol=1e-5, atol=1e-5), name
    case.update(out_shape=list(exact.shape), out_f64=flat(exact), out_f32=flat(ref))
    return case


def pool_case(name, xs, k, s):
    x = rand(xs)
    case = dict(kernel="max_pool2d", name=name, x_shape=list(xs), x=flat(x), kernel_size=k, stride=s)
    try:
        ref = run_onnx("MaxPool", [x], dict(kernel_shape=[k, k], strides=[s, s]))
        if min(ref.shape) == 0:
            raise ValueError("empty output")
    except Exception as e:
        case["error"] = str(e).splitlines()[0][:200]
        return case
    exact = np_max_pool(x.astype(np.float64), k, s)
    assert ref.shape == exact.shape and np.array_equal(ref, exact), name
    case.update(out_shape=list(exact.shape), out_f64=flat(exact), out_f32=flat(ref))
    return case


def main():
    conv = [
        conv2d_case("dense bias", (2, 3, 7, 6), (4, 3, 3, 3), bias=True),
        conv2d_case("groups 2 stride (2,1) pad (1,0)", (1, 4, 6, 5), (6, 2, 3, 2), (2, 1), (1, 0), groups=2, bias=True),
        conv2d_case("depthwise pad 1", (1, 3, 5, 5), (3, 1, 3, 3), pad=(1, 1), groups=3),
        conv2d_case("dilation (2,3) stride (1,2)", (1, 2, 9, 8), (2, 2, 3, 2), (1, 2), (2, 1), (2, 3)),
        conv2d_case("rectangular stride (3,2) pad (0,2)", (1, 1, 10, 7), (1, 1, 4, 1), (3, 2), (0, 2), bias=True),
        conv2d_case("padding beyond kernel", (1, 1, 2, 2), (2, 1, 1, 1), pad=(2, 2), bias=True),
        conv2d_case("resnet-like slice", (1, 6, 8, 8), (6, 6, 3, 3), pad=(1, 1), bias=True),
        conv2d_case("kernel larger than padded input", (1, 1, 3, 3), (1, 1, 5, 5)),
        conv2d_case("dilated kernel larger than padded input", (1, 1, 4, 4), (1, 1, 3, 3), dil=(3, 1)),
    ]
    conv_t = [
        conv_t_case("stride 1", (1, 2, 4, 5), (2, 3, 3, 3)),
        conv_t_case("stride 2 pad 1 output_padding 1", (1, 3, 4, 4), (3, 2, 4, 4), (2, 2), (1, 1), (1, 1)),
        conv_t_case("groups 2 rectangular", (2, 4, 3, 3), (4, 1, 3, 2), (2, 1), (1, 0), (1, 0), groups=2),
        conv_t_case("dilation (2,1) stride (1,2)", (1, 2, 3, 4), (2, 2, 2, 3), (1, 2), (1, 1), (0, 1), (2, 1)),
        conv_t_case("output_padding < dilation only (numpy peer)", (1, 2, 3, 4), (2, 2, 2, 3), (1, 2), (1, 1), (1, 1),
                    (2, 1), onnx_peer=False),
        conv_t_case("depthwise stride 3", (1, 3, 2, 3), (3, 1, 2, 2), (3, 3), (0, 1), (2, 0), groups=3),
        conv_t_case("padding eats the output", (1, 1, 1, 1), (1, 1, 2, 1), pad=(1, 0)),
    ]
    pool = [
        pool_case("k2 s2", (1, 2, 6, 6), 2, 2),
        pool_case("k3 s1 rectangular", (2, 1, 7, 5), 3, 1),
        pool_case("k3 s2", (1, 1, 5, 7), 3, 2),
        pool_case("k1 s3", (1, 2, 4, 4), 1, 3),
        pool_case("window larger than input", (1, 1, 2, 5), 3, 1),
    ]
    for fname, cases in [("conv2d.json", conv), ("conv_transpose2d.json", conv_t), ("max_pool2d.json", pool)]:
        with open(os.path.join(HERE, fname), "w") as f:
            json.dump({"generator": "tests/peer/gen.py", "onnxruntime": ort.__version__, "onnx": onnx.__version__,
                       "numpy": np.__version__, "cases": cases}, f, indent=None, separators=(",", ":"))
            f.write("\n")
        errors = sum(1 for c in cases if "error" in c)
        print(f"{fname}: {len(cases)} cases, {errors} rejected by the peer")


if __name__ == "__main__":
    main()
