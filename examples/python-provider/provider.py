"""py-kernels: a kernel provider for mdbook-fkc written in Python (standard library only).

Two kernels, each in F32 and F64: `relu` (max(x, 0) elementwise) and `max_pool2d` (a square
window without padding, scalar stride), with a parameter carrier `MaxPool2D`. Run by book.toml
as `python3 provider.py`; it speaks the provider protocol on stdin/stdout (fkc_provider.py).
"""

import math
import os
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
    return x.storage


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
    ],
    sources=[__file__, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "fkc_provider.py")],
)

if __name__ == "__main__":
    serve(REGISTRY)
