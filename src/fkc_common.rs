//! Operands and parameter fields of the describe-only common kernels — `matmul`, `add`, `mul`,
//! `gelu`, `leaky_relu`, `softmax`, `layer_norm`, `reduce_sum`, `reduce_mean`, `avg_pool2d`,
//! `transpose`, `cumsum`, `embedding`, `qmatmul` — as the link registry
//! ([`crate::fkc::ENTRY_POINTS`]) describes them.
//!
//! None of them has an `OpKind` or an `OpParams` variant. An operand marked `any_rank` takes
//! any rank; its `rank` is the one samples use by default. An operand with a `dtype` has that
//! dtype whatever the entry point's (`embedding`'s `I64` ids).

use crate::dispatch::{FieldDesc, OperandDesc, ParamKind};
use crate::dtype::DType;
use crate::ops::avg_pool2d::AvgDivisor;

/// An operand of any rank (`rank`: the samples' default).
const fn any_rank(name: &'static str, rank: usize) -> OperandDesc {
    OperandDesc {
        any_rank: true,
        ..OperandDesc::required(name, rank)
    }
}

/// An optional operand of a fixed rank.
const fn optional(name: &'static str, rank: usize) -> OperandDesc {
    OperandDesc {
        optional: true,
        ..OperandDesc::required(name, rank)
    }
}

/// `matmul` operands: `a [B, M, K]` (`[B, K, M]` with `transpose_a`), `b [B, K, N]`
/// (`[B, N, K]` with `transpose_b`).
pub const MATMUL_INPUTS: &[OperandDesc] =
    &[OperandDesc::required("a", 3), OperandDesc::required("b", 3)];

/// `matmul` parameters.
pub const MATMUL_FIELDS: &[FieldDesc] = &[
    FieldDesc::new(
        "transpose_a",
        ParamKind::Bool,
        "a is [B, K, M] and read as its transpose",
    ),
    FieldDesc::new(
        "transpose_b",
        ParamKind::Bool,
        "b is [B, N, K] and read as its transpose",
    ),
];

/// `add` and `mul` operands: `a` and `b`, any ranks, NumPy-broadcast together.
pub const BINARY_INPUTS: &[OperandDesc] = &[any_rank("a", 3), any_rank("b", 3)];

/// The operand of `gelu`, `softmax` and `cumsum`: `x`, any rank.
pub const UNARY_INPUTS: &[OperandDesc] = &[any_rank("x", 2)];

/// `leaky_relu` parameters.
pub const LEAKY_RELU_FIELDS: &[FieldDesc] = &[FieldDesc::new(
    "negative_slope",
    ParamKind::F64,
    "what a non-positive element is multiplied by (rounded to the dtype first)",
)];

/// `softmax` and `cumsum` parameters.
pub const AXIS_FIELDS: &[FieldDesc] = &[FieldDesc::new(
    "axis",
    ParamKind::I64,
    "the axis, in [-rank, rank); negative counts from the end",
)];

/// `layer_norm` operands: `x [N, D]`, optional `weight [D]`, optional `bias [D]`.
pub const LAYER_NORM_INPUTS: &[OperandDesc] = &[
    OperandDesc::required("x", 2),
    optional("weight", 1),
    optional("bias", 1),
];

/// `layer_norm` parameters.
pub const LAYER_NORM_FIELDS: &[FieldDesc] = &[FieldDesc::new(
    "eps",
    ParamKind::F32,
    "added to the variance before the square root; >= 0, not NaN",
)];

/// `reduce_sum` and `reduce_mean` operand: `x`, any rank.
pub const REDUCE_INPUTS: &[OperandDesc] = &[any_rank("x", 3)];

/// `reduce_sum` and `reduce_mean` parameters.
pub const REDUCE_FIELDS: &[FieldDesc] = &[
    FieldDesc::new(
        "axes",
        ParamKind::I64List,
        "reduced axes, each in [-rank, rank), none twice; empty reduces no axis",
    ),
    FieldDesc::new(
        "keepdim",
        ParamKind::Bool,
        "keep each reduced axis as size 1 (else remove it)",
    ),
];

/// `avg_pool2d` operand: `x [N, C, H, W]`.
pub const AVG_POOL2D_INPUTS: &[OperandDesc] = &[OperandDesc::required("x", 4)];

/// `avg_pool2d` parameters.
pub const AVG_POOL2D_FIELDS: &[FieldDesc] = &[
    FieldDesc::new(
        "kernel_size",
        ParamKind::Usize,
        "square window side, >= 1, at most the padded H and W",
    ),
    FieldDesc::new("stride", ParamKind::Usize, "window step on both axes, >= 1"),
    FieldDesc::new(
        "padding",
        ParamKind::Usize,
        "symmetric zero padding on both axes, <= kernel_size / 2",
    ),
    FieldDesc::choice(
        "divisor",
        AvgDivisor::NAMES,
        "window: divide by kernel_size^2 (padding counted); valid: by the taps inside the input",
    ),
];

/// `transpose` operand: `x`, any rank.
pub const TRANSPOSE_INPUTS: &[OperandDesc] = &[any_rank("x", 3)];

/// `transpose` parameters.
pub const TRANSPOSE_FIELDS: &[FieldDesc] = &[FieldDesc::new(
    "perm",
    ParamKind::UsizeList,
    "a permutation of 0..rank: out.shape[i] = x.shape[perm[i]]",
)];

/// `embedding` operands: `ids [N, L]`, always `I64`, and `weight [V, D]` in the entry point's
/// dtype.
pub const EMBEDDING_INPUTS: &[OperandDesc] = &[
    OperandDesc::required("ids", 2).of_dtype(DType::I64),
    OperandDesc::required("weight", 2),
];

/// `qmatmul` operands: `a [M, K]` and `b [K, N]`, both `I8` (the entry point's dtype).
pub const QMATMUL_INPUTS: &[OperandDesc] =
    &[OperandDesc::required("a", 2), OperandDesc::required("b", 2)];

/// `qmatmul` parameters.
pub const QMATMUL_FIELDS: &[FieldDesc] = &[FieldDesc::new(
    "scale",
    ParamKind::F32,
    "each i32 sum is multiplied by it in f32, rounded to even and saturated to i8; any value (NaN gives 0)",
)];

/// The common kernels: each reads its operands through any view (strided, offset, stride-0,
/// reversed), unlike the seed's kernels, which refuse what is not packed.
pub const COMMON_KERNELS: &[&str] = &[
    "matmul",
    "add",
    "mul",
    "gelu",
    "leaky_relu",
    "softmax",
    "layer_norm",
    "reduce_sum",
    "reduce_mean",
    "cumsum",
    "avg_pool2d",
    "transpose",
    "embedding",
    "qmatmul",
];

/// Whether `kernel` is one of the [`COMMON_KERNELS`] (it accepts any layout).
pub fn accepts_any_layout(kernel: &str) -> bool {
    COMMON_KERNELS.contains(&kernel)
}
