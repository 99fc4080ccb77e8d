"""py-kernels: a kernel provider for mdbook-fkc written in Python (standard library only).

Four kernels, each in F32 and F64: `relu` (max(x, 0) elementwise) and `max_pool2d` (a square
window without padding, scalar stride), with a parameter carrier `MaxPool2D`; `add` (two
matrices elementwise) and `cumsum` (running sums along each row), op kinds mdbook-fkc has no
definition of, checked through the `semantics` their contracts write. Run by book.toml
as `python3 provider.py`; it speaks the provider protocol on stdin/stdout (fkc_provider.py).
"""

import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fkc_provider import (  # noqa: E402
    EntryPoint, Registry, Rejected, Tensor, field, operand, serve)

POOL_FIELDS = [
    field("kernel_size", "Usize", "square window side, 1 <= kernel_size <= min(H, W)"),
    field("stride", "Usize", "window step on both axes, >= 1"),
]


def only(operands, dtype, rank, op):
    """The one contiguous operand of `dtype` and `rank`, or a rejection."""
    if len(operands) != 1 or operands[0] is None:
        raise Rejected("MissingOperand", f"{op}: takes one operand x")
    x = operands[0]
    if x.dtype != dtype:
        raise Rejected("DType", f"{op}: x is {x.dtype}, this entry point takes {dtype}")
    if len(x.shape) != rank:
        raise Rejected("Rank", f"{op}: x must have rank {rank}, not {len(x.shape)}")
    if not x.is_contiguous():
        raise Rejected("Layout", f"{op}: x must be contiguous")
    return x.packed()


def no_params(params, op):
    if params:
        raise Rejected("BadParams", f"{op}: unknown parameter `{sorted(params)[0]}`")


def relu(dtype):
    def call(operands, params):
        no_params(params, "relu")
        x = only(operands, dtype, 2, "relu")
        zero = "0" * len(x.patterns[0]) if x.patterns else ""
        # Negative values become +0.0; everything else (NaN, -0.0, +Inf) keeps its bits.
        out = [zero if x.value(i) < 0 else p for i, p in enumerate(x.patterns)]
        return [Tensor(dtype, x.shape, out)]
    return call


def max_pool2d(dtype):
    def call(operands, params):
        unknown = set(params) - {"kernel_size", "stride"}
        if unknown:
            raise Rejected("BadParams", f"max_pool2d: unknown parameter `{sorted(unknown)[0]}`")
        x = only(operands, dtype, 4, "max_pool2d")
        k, s = params.get("kernel_size"), params.get("stride")
        if not isinstance(k, int) or not isinstance(s, int):
            raise Rejected("BadParams", "max_pool2d: kernel_size and stride are integers")
        n, c, h, w = x.shape
        if k == 0 or s == 0:
            raise Rejected("ZeroSize", "max_pool2d: kernel_size and stride must be at least 1")
        if k > h or k > w:
            raise Rejected("KernelTooLarge", f"max_pool2d: window {k} larger than {h}x{w}")
        ho, wo = (h - k) // s + 1, (w - k) // s + 1
        out = []
        for plane in range(n * c):
            for oy in range(ho):
                for ox in range(wo):
                    best = None
                    for ky in range(k):
                        for kx in range(k):
                            i = ((plane * h) + oy * s + ky) * w + ox * s + kx
                            # A NaN propagates: the first NaN of the window wins.
                            if best is None or math.isnan(x.value(i)) and not math.isnan(
                                    x.value(best)) or x.value(i) > x.value(best):
                                best = i
                    out.append(x.patterns[best])
        return [Tensor(dtype, [n, c, ho, wo], out)]
    return call


# The canonical quiet NaN each kernel below returns for a NaN result.
CANONICAL_NAN = {"F32": "7fc00000", "F64": "7ff8000000000000"}


def rounded(dtype, value):
    """`value` rounded once to `dtype`, as its bit pattern (a NaN is the canonical one)."""
    if math.isnan(value):
        return CANONICAL_NAN[dtype]
    pack = ">f" if dtype == "F32" else ">d"
    try:
        return struct.pack(pack, value).hex()
    except OverflowError:  # rounds past the largest finite value: an infinity
        return struct.pack(pack, math.copysign(math.inf, value)).hex()


def through(dtype, value):
    """`value` rounded once to `dtype`, as a Python float."""
    return struct.unpack(">f" if dtype == "F32" else ">d", bytes.fromhex(rounded(dtype, value)))[0]


def matrices(operands, dtype, names, op):
    """The contiguous rank-2 operands `names`, of `dtype`, or a rejection."""
    if len(operands) != len(names) or any(o is None for o in operands):
        raise Rejected("MissingOperand", f"{op}: takes {', '.join(names)}")
    for name, x in zip(names, operands):
        if x.dtype != dtype:
            raise Rejected("DType", f"{op}: {name} is {x.dtype}, this entry point takes {dtype}")
        if len(x.shape) != 2:
            raise Rejected("Rank", f"{op}: {name} must have rank 2, not {len(x.shape)}")
        if not x.is_contiguous():
            raise Rejected("Layout", f"{op}: {name} must be contiguous")
    return [x.packed() for x in operands]


def add(dtype):
    def call(operands, params):
        no_params(params, "add")
        a, b = matrices(operands, dtype, ["a", "b"], "add")
        if a.shape != b.shape:
            raise Rejected("ShapeMismatch", f"add: a is {a.shape}, b is {b.shape}")
        # Two F32 values' sum in a Python float, then rounded to F32, is their sum rounded once.
        out = [rounded(dtype, a.value(i) + b.value(i)) for i in range(len(a.patterns))]
        return [Tensor(dtype, a.shape, out)]
    return call


def cumsum(dtype):
    def call(operands, params):
        no_params(params, "cumsum")
        (x,) = matrices(operands, dtype, ["x"], "cumsum")
        rows, cols = x.shape
        out = []
        for r in range(rows):
            acc = 0.0
            for c in range(cols):
                # Each running sum rounded to the dtype, left to right: the written order.
                acc = through(dtype, acc + x.value(r * cols + c))
                out.append(rounded(dtype, acc))
        return [Tensor(dtype, x.shape, out)]
    return call


def entry(kernel, dtype, op_kind, rank, params, call):
    return EntryPoint(f"py_kernels::{kernel}_{dtype.lower()}", kernel, dtype, op_kind,
                      [operand("x", rank)], ["out"], params, call)


REGISTRY = Registry(
    name="py-kernels",
    path="py_kernels::REGISTRY",
    crate_name="py_kernels",
    revision="0.1.0",
    op_kinds=["MaxPool2D"],
    variants=[{"variant": "MaxPool2D", "op_kind": "MaxPool2D", "fields": POOL_FIELDS}],
    entry_points=[
        entry("relu", "F32", "Relu", 2, [], relu("F32")),
        entry("relu", "F64", "Relu", 2, [], relu("F64")),
        entry("max_pool2d", "F32", "MaxPool2D", 4, POOL_FIELDS, max_pool2d("F32")),
        entry("max_pool2d", "F64", "MaxPool2D", 4, POOL_FIELDS, max_pool2d("F64")),
        EntryPoint("py_kernels::add_f32", "add", "F32", "Add",
                   [operand("a", 2), operand("b", 2)], ["out"], [], add("F32")),
        EntryPoint("py_kernels::add_f64", "add", "F64", "Add",
                   [operand("a", 2), operand("b", 2)], ["out"], [], add("F64")),
        entry("cumsum", "F32", "CumSum", 2, [], cumsum("F32")),
        entry("cumsum", "F64", "CumSum", 2, [], cumsum("F64")),
    ],
    sources=[__file__, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "fkc_provider.py")],
)

if __name__ == "__main__":
    serve(REGISTRY)
