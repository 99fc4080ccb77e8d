#!/usr/bin/env python3
"""The peer column of `cargo bench --bench kernels`: onnxruntime's f32 CPU kernels on the
bench's four layers, one thread, timed in the same run as ours.

Prints one line per layer, `<key> <best milliseconds>`, after a line `peer onnxruntime <version>`.
The bench binary spawns this script and puts the figures beside its own. Inputs are random in
[-1, 1); each layer is one ONNX node with its weight as an initializer, run through an
IOBinding with preallocated input and output (no per-run allocation), best of several runs
after a warm-up (the same rule as the Rust side). A missing module exits with status 3 and a
one-line reason on stderr.
"""

import sys
import time

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    import onnxruntime as ort
except ImportError as err:  # the bench prints "peer: not available (...)"
    print(f"python module missing: {err.name}", file=sys.stderr)
    sys.exit(3)

BUDGET_S = 1.0
OPSET = 17
IR_VERSION = 8

# key, op, input shape, weight shape (or None), attributes, output shape
LAYERS = [
    ("resnet", "Conv", [1, 64, 56, 56], [64, 64, 3, 3], {"pads": [1, 1, 1, 1]}, [1, 64, 56, 56]),
    (
        "depthwise",
        "Conv",
        [1, 64, 56, 56],
        [64, 1, 3, 3],
        {"pads": [1, 1, 1, 1], "group": 64},
        [1, 64, 56, 56],
    ),
    (
        "conv_transpose",
        "ConvTranspose",
        [1, 64, 28, 28],
        [64, 32, 4, 4],
        {"strides": [2, 2], "pads": [1, 1, 1, 1]},
        [1, 32, 56, 56],
    ),
    (
        "max_pool",
        "MaxPool",
        [1, 64, 112, 112],
        None,
        {"kernel_shape": [3, 3], "strides": [2, 2]},
        [1, 64, 55, 55],
    ),
]


def model(op, x_shape, w_shape, attrs, y_shape, rng):
    inputs = ["X"] if w_shape is None else ["X", "W"]
    node = helper.make_node(op, inputs, ["Y"], **attrs)
    inits = []
    if w_shape is not None:
        w = rng.uniform(-1, 1, w_shape).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "W"))
    graph = helper.make_graph(
        [node],
        op,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    onnx.checker.check_model(m)
    return m.SerializeToString()


def best_ms(session, x, y):
    binding = session.io_binding()
    binding.bind_ortvalue_input("X", ort.OrtValue.ortvalue_from_numpy(x))
    binding.bind_ortvalue_output("Y", ort.OrtValue.ortvalue_from_numpy(y))
    session.run_with_iobinding(binding)
    best = float("inf")
    start = time.perf_counter()
    runs = 0
    while runs < 3 or time.perf_counter() - start < BUDGET_S:
        t = time.perf_counter()
        session.run_with_iobinding(binding)
        best = min(best, time.perf_counter() - t)
        runs += 1
    return best * 1e3


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    rng = np.random.default_rng(1)
    print(f"peer onnxruntime {ort.__version__}")
    for key, op, x_shape, w_shape, attrs, y_shape in LAYERS:
        session = ort.InferenceSession(
            model(op, x_shape, w_shape, attrs, y_shape, rng),
            opts,
            providers=["CPUExecutionProvider"],
        )
        x = rng.uniform(-1, 1, x_shape).astype(np.float32)
        y = np.empty(y_shape, dtype=np.float32)
        print(f"{key} {best_ms(session, x, y):.6f}", flush=True)


if __name__ == "__main__":
    main()
