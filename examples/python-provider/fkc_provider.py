"""fkc_provider: the provider side of mdbook-fkc's provider protocol, version 2, in Python.

Written from the format reference (book/format.md, "The protocol, version 2") and the standard
library only. A provider module builds a `Registry` of entry points and calls `serve(registry)`:

    serve(Registry(name="py-kernels", path="py_kernels::REGISTRY", crate_name="py_kernels",
                   revision="0.1.0", entry_points=[...], sources=[__file__]))

Each kernel is a function `(operands, params) -> [Tensor, ...]`; it refuses a call by raising
`Rejected(kind, message)`, and any other exception is answered as `panicked` (the provider keeps
serving). Tensors carry every element's bit pattern, so values travel bit for bit.
"""

import hashlib
import json
import struct
import sys

PROTOCOL_VERSION = 2

# Hexadecimal digits per element, and the struct format of one element, by dtype.
WIDTH = {"F32": 8, "F64": 16, "BF16": 4, "F16": 4}
PACK = {"F32": ">f", "F64": ">d", "F16": ">e"}


class Rejected(Exception):
    """A kernel's refusal of a call: a kind (`Rank`, `ShapeMismatch`, `DType`, `Layout`,
    `BadParams`, `MissingOperand`, ...) and a message."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


class Tensor:
    """A packed row-major tensor: dtype, shape and one hex bit pattern per element."""

    def __init__(self, dtype, shape, patterns):
        count = 1
        for dim in shape:
            count *= dim
        if len(patterns) != count:
            raise Rejected("Length", f"{len(patterns)} elements for shape {shape}")
        self.dtype, self.shape, self.patterns = dtype, list(shape), list(patterns)

    @staticmethod
    def from_wire(wire):
        width = WIDTH[wire["dtype"]]
        bits = wire["bits"]
        if len(bits) % width or any(c not in "0123456789abcdef" for c in bits):
            raise ValueError(f"{wire['dtype']} bits must be {width} lowercase hex digits each")
        patterns = [bits[i:i + width] for i in range(0, len(bits), width)]
        return Tensor(wire["dtype"], wire["shape"], patterns)

    def to_wire(self):
        return {"dtype": self.dtype, "shape": self.shape, "bits": "".join(self.patterns)}

    def value(self, index):
        """Element `index` as a Python float (exact for every dtype)."""
        raw = bytes.fromhex(self.patterns[index])
        if self.dtype == "BF16":
            return struct.unpack(">f", raw + b"\0\0")[0]
        return struct.unpack(PACK[self.dtype], raw)[0]


class View:
    """An operand: a view of a storage tensor (shape, strides in elements, offset)."""

    def __init__(self, wire):
        self.storage = Tensor.from_wire(wire["storage"])
        self.shape, self.strides, self.offset = wire["shape"], wire["strides"], wire["offset"]
        if len(self.shape) != len(self.strides):
            raise ValueError("a view needs one stride per dimension")
        if self.elements() and not 0 <= self.offset < len(self.storage.patterns):
            raise ValueError("the view's offset lies outside its storage")
        for lowest in (False, True):
            corner = self.offset + sum(
                (d - 1) * s for d, s in zip(self.shape, self.strides) if (s < 0) == lowest)
            if self.elements() and not 0 <= corner < len(self.storage.patterns):
                raise ValueError("the view addresses elements outside its storage")

    @property
    def dtype(self):
        return self.storage.dtype

    def elements(self):
        count = 1
        for dim in self.shape:
            count *= dim
        return count

    def is_contiguous(self):
        """Packed row-major strides from offset 0; the storage may hold more after the view."""
        expected, stride = [], 1
        for dim in reversed(self.shape):
            expected.insert(0, stride)
            stride *= dim
        return self.offset == 0 and all(
            d == 1 or s == e for d, s, e in zip(self.shape, self.strides, expected))

    def packed(self):
        """The view's elements as a tensor of its shape, in row-major order. A contiguous view
        may be a prefix of a longer storage, so read this, never the whole storage."""
        patterns = []
        if self.elements():
            index = [0] * len(self.shape)
            while True:
                at = self.offset + sum(i * s for i, s in zip(index, self.strides))
                patterns.append(self.storage.patterns[at])
                axis = len(self.shape) - 1
                while axis >= 0:
                    index[axis] += 1
                    if index[axis] < self.shape[axis]:
                        break
                    index[axis] = 0
                    axis -= 1
                if axis < 0:
                    break
        return Tensor(self.dtype, self.shape, patterns)


class EntryPoint:
    """One kernel in one dtype, as `describe` lists it."""

    def __init__(self, symbol, kernel, dtype, op_kind, inputs, outputs, params, call):
        self.symbol, self.kernel, self.dtype, self.op_kind = symbol, kernel, dtype, op_kind
        self.inputs, self.outputs, self.params, self.call = inputs, outputs, params, call

    def describe(self):
        return {"symbol": self.symbol, "kernel": self.kernel, "dtype": self.dtype,
                "op_kind": self.op_kind, "inputs": self.inputs, "outputs": self.outputs,
                "params": self.params}


class Registry:
    """What the provider serves: its greeting's fields, entry points, op kinds and carriers.
    `sources` are the files whose content identifies this build (the greeting's `build`)."""

    def __init__(self, name, path, crate_name, revision, entry_points, op_kinds=(),
                 variants=(), sources=()):
        self.name, self.path, self.crate_name, self.revision = name, path, crate_name, revision
        self.entry_points = {e.symbol: e for e in entry_points}
        self.op_kinds, self.variants, self.sources = list(op_kinds), list(variants), sources

    def build(self):
        digest = hashlib.sha256()
        for source in self.sources:
            with open(source, "rb") as file:
                digest.update(file.read())
        return "py:" + digest.hexdigest()[:16]

    def hello(self):
        return {"protocol": PROTOCOL_VERSION, "provider": self.name, "registry": self.path,
                "crate_name": self.crate_name, "revision": self.revision, "build": self.build()}

    def description(self):
        return {"entry_points": [e.describe() for e in self.entry_points.values()],
                "op_kinds": self.op_kinds, "variants": self.variants, "executor": False}


def operand(name, rank, optional=False):
    """An input of an entry point."""
    return {"name": name, "rank": rank, "optional": optional, "any_rank": False}


def field(name, kind, doc, shape_of=None):
    """A parameter field: kind is `Usize`, `UsizePair` or `UsizeArray4`."""
    return {"name": name, "kind": kind, "shape_of": shape_of, "doc": doc}


def answer(registry, request):
    """The answer (without its id) to one request."""
    method = request.get("method")
    if method == "handshake":
        return {"hello": registry.hello()}
    if method == "describe":
        return {"description": registry.description()}
    if method == "call":
        entry = registry.entry_points.get(request.get("symbol"))
        if entry is None:
            return {"rejected": {"kind": "UnknownOp",
                                 "message": f"no entry point `{request.get('symbol')}`"}}
        try:
            operands = [None if o is None else View(o) for o in request["operands"]]
        except (KeyError, TypeError, ValueError) as error:
            return {"error": {"message": f"malformed operands: {error}"}}
        try:
            outputs = entry.call(operands, request.get("params", {}))
        except Rejected as refusal:
            return {"rejected": {"kind": refusal.kind, "message": refusal.message}}
        except Exception as error:  # a kernel bug: answered, and the provider keeps serving
            return {"panicked": {"message": f"{type(error).__name__}: {error}"}}
        return {"outputs": [t.to_wire() for t in outputs]}
    if method == "execute":
        return {"error": {"message": f"{registry.name} has no executor"}}
    return {"error": {"message": f"unknown method {method!r}"}}


def respond(registry, line):
    """The whole answer line to one request line."""
    try:
        request = json.loads(line)
        request_id = request["id"]
    except (ValueError, KeyError, TypeError) as error:
        return {"id": None, "error": {"message": f"not a protocol 2 request: {error}"}}
    return {"id": request_id, **answer(registry, request)}


def serve(registry, stdin=None, stdout=None):
    """Answers requests, one JSON object per line, until stdin closes."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    for line in stdin:
        if line.strip():
            stdout.write(json.dumps(respond(registry, line), separators=(",", ":")) + "\n")
            stdout.flush()
