//! Test fixtures: every expression of the seed's four contracts, with worked bindings.
//!
//! The bindings are small, consistent geometries (the output dims follow each contract's own
//! shape formula), and the expected values below were computed by hand from them:
//!
//! - conv2d: x [2, 4, 9, 9], weight [8, 2, 3, 3], bias [8], groups 2, stride (2, 2),
//!   padding (1, 1) → out [2, 8, 5, 5]; dtype_bytes 4.
//! - conv_transpose2d: x [1, 4, 3, 3], weight [4, 3, 3, 3], groups 2, stride (2, 2),
//!   padding (1, 1), output_padding (1, 1) → out [1, 6, 6, 6]; dtype_bytes 4.
//! - conv2d_simple: x [1, 2, 5, 5], kernel [3, 2, 3, 3], stride 1, padding 1 → out [1, 3, 5, 5];
//!   dtype_bytes 2 (bf16).
//! - max_pool2d: x [1, 2, 6, 6], kernel_size 2, stride 2 → out [1, 2, 3, 3]; dtype_bytes 4.

use super::{Bindings, Expr, ExprKind, Span, UnOp, Value};

/// What a seed expression should evaluate to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    Int(i64),
    Bool(bool),
    /// A rule-level special form (`passthrough(x)`, `conv2d(params)`, `from_params(...)`),
    /// interpreted by the caller; only its arguments are checked and evaluated.
    Special,
}

/// `(contract, field, source, expected)` for every expression in the seed document.
pub(crate) const SEED: &[(&str, &str, &str, Expect)] = &[
    (
        "conv2d",
        "weight.shape_constraint",
        "divisible(x.dim[1], weight.dim[1])",
        Expect::Bool(true),
    ),
    (
        "conv2d",
        "groups.constraint",
        "x.dim[1] % groups == 0 && weight.dim[0] % groups == 0",
        Expect::Bool(true),
    ),
    (
        "conv2d",
        "out.dtype_rule",
        "passthrough(x)",
        Expect::Special,
    ),
    (
        "conv2d",
        "out.shape_rule",
        "conv2d(params)",
        Expect::Special,
    ),
    (
        "conv2d",
        "fast_paths[0].when",
        "groups == 1",
        Expect::Bool(false),
    ),
    (
        "conv2d",
        "fast_paths[1].when",
        "depthwise",
        Expect::Bool(false),
    ),
    (
        "conv2d",
        "cost.flops",
        "2 * out_shape[0] * out_shape[1] * (x_shape[1] / groups) * w_shape[2] * w_shape[3] * out_shape[2] * out_shape[3]",
        Expect::Int(14_400),
    ),
    (
        "conv2d",
        "cost.bytes_moved",
        "(x_shape[0]*x_shape[1]*x_shape[2]*x_shape[3] + w_shape[0]*w_shape[1]*w_shape[2]*w_shape[3] + out_shape[0]*out_shape[1]*out_shape[2]*out_shape[3]) * dtype_bytes",
        Expect::Int(4_768),
    ),
    (
        "conv2d",
        "memory.host_bytes",
        "out_shape[0]*out_shape[1]*out_shape[2]*out_shape[3] * dtype_bytes",
        Expect::Int(1_600),
    ),
    ("conv2d", "memory.device_bytes", "0", Expect::Int(0)),
    (
        "conv_transpose2d",
        "groups.constraint",
        "x.dim[1] % groups == 0",
        Expect::Bool(true),
    ),
    (
        "conv_transpose2d",
        "out.dtype_rule",
        "passthrough(x)",
        Expect::Special,
    ),
    (
        "conv_transpose2d",
        "out.shape_rule",
        "conv_transpose2d(params)",
        Expect::Special,
    ),
    (
        "conv_transpose2d",
        "fast_paths[0].when",
        "groups == 1",
        Expect::Bool(false),
    ),
    (
        "conv_transpose2d",
        "cost.flops",
        "2 * x_shape[0] * x_shape[1] * x_shape[2] * x_shape[3] * (w_shape[1]) * w_shape[2] * w_shape[3]",
        Expect::Int(1_944),
    ),
    (
        "conv_transpose2d",
        "cost.bytes_moved",
        "(x_shape[0]*x_shape[1]*x_shape[2]*x_shape[3] + w_shape[0]*w_shape[1]*w_shape[2]*w_shape[3] + out_shape[0]*out_shape[1]*out_shape[2]*out_shape[3]) * dtype_bytes",
        Expect::Int(1_440),
    ),
    (
        "conv_transpose2d",
        "memory.host_bytes",
        "out_shape[0]*out_shape[1]*out_shape[2]*out_shape[3] * dtype_bytes",
        Expect::Int(864),
    ),
    (
        "conv2d_simple",
        "stride.constraint",
        "stride > 0",
        Expect::Bool(true),
    ),
    (
        "conv2d_simple",
        "out.dtype_rule",
        "passthrough(x)",
        Expect::Special,
    ),
    (
        "conv2d_simple",
        "out.shape_rule",
        "from_params(N=x.dim[0], Cout=kernel.dim[0], Hout=(x.dim[2]+2*padding-kernel.dim[2])/stride+1, Wout=(x.dim[3]+2*padding-kernel.dim[3])/stride+1)",
        Expect::Special,
    ),
    (
        "conv2d_simple",
        "cost.flops",
        "2 * x.dim[0] * kernel.dim[0] * x.dim[1] * kernel.dim[2] * kernel.dim[3] * out.dim[2] * out.dim[3]",
        Expect::Int(2_700),
    ),
    (
        "conv2d_simple",
        "cost.bytes_moved",
        "(x.dim[0]*x.dim[1]*x.dim[2]*x.dim[3] + kernel.dim[0]*kernel.dim[1]*kernel.dim[2]*kernel.dim[3] + out.dim[0]*out.dim[1]*out.dim[2]*out.dim[3]) * dtype_bytes",
        Expect::Int(358),
    ),
    (
        "conv2d_simple",
        "memory.host_bytes",
        "out.dim[0]*out.dim[1]*out.dim[2]*out.dim[3] * dtype_bytes",
        Expect::Int(150),
    ),
    (
        "max_pool2d",
        "kernel_size.constraint",
        "kernel_size > 0 && kernel_size <= x.dim[2] && kernel_size <= x.dim[3]",
        Expect::Bool(true),
    ),
    (
        "max_pool2d",
        "stride.constraint",
        "stride > 0",
        Expect::Bool(true),
    ),
    (
        "max_pool2d",
        "out.dtype_rule",
        "passthrough(x)",
        Expect::Special,
    ),
    (
        "max_pool2d",
        "out.shape_rule",
        "from_params(N=x.dim[0], C=x.dim[1], Hout=(x.dim[2]-kernel_size)/stride+1, Wout=(x.dim[3]-kernel_size)/stride+1)",
        Expect::Special,
    ),
    (
        "max_pool2d",
        "cost.flops",
        "x.dim[0] * x.dim[1] * out.dim[2] * out.dim[3] * kernel_size * kernel_size",
        Expect::Int(72),
    ),
    (
        "max_pool2d",
        "cost.bytes_moved",
        "(x.dim[0]*x.dim[1]*x.dim[2]*x.dim[3] + out.dim[0]*out.dim[1]*out.dim[2]*out.dim[3]) * dtype_bytes",
        Expect::Int(360),
    ),
    (
        "max_pool2d",
        "memory.host_bytes",
        "out.dim[0]*out.dim[1]*out.dim[2]*out.dim[3] * dtype_bytes",
        Expect::Int(72),
    ),
];

/// The expected keyword arguments of the seed's `from_params` shape rules, in order.
pub(crate) fn from_params_expected(contract: &str) -> Vec<(&'static str, i64)> {
    match contract {
        "conv2d_simple" => vec![("N", 1), ("Cout", 3), ("Hout", 5), ("Wout", 5)],
        "max_pool2d" => vec![("N", 1), ("C", 2), ("Hout", 3), ("Wout", 3)],
        _ => Vec::new(),
    }
}

/// The worked bindings of one of the seed's contracts (see the module doc).
pub(crate) fn bindings(contract: &str) -> Bindings {
    let mut b = Bindings::new();
    match contract {
        "conv2d" => {
            operands(
                &mut b,
                &[
                    ("x", &[2, 4, 9, 9]),
                    ("weight", &[8, 2, 3, 3]),
                    ("bias", &[8]),
                    ("out", &[2, 8, 5, 5]),
                ],
            );
            b.insert("x_shape", Value::ints(&[2, 4, 9, 9]))
                .insert("w_shape", Value::ints(&[8, 2, 3, 3]))
                .insert("out_shape", Value::ints(&[2, 8, 5, 5]))
                .insert("stride", Value::ints(&[2, 2]))
                .insert("padding", Value::ints(&[1, 1]))
                .insert("dilation", Value::ints(&[1, 1]))
                .insert("groups", Value::Int(2))
                .insert("depthwise", Value::Bool(false));
        }
        "conv_transpose2d" => {
            operands(
                &mut b,
                &[
                    ("x", &[1, 4, 3, 3]),
                    ("weight", &[4, 3, 3, 3]),
                    ("out", &[1, 6, 6, 6]),
                ],
            );
            b.insert("x_shape", Value::ints(&[1, 4, 3, 3]))
                .insert("w_shape", Value::ints(&[4, 3, 3, 3]))
                .insert("out_shape", Value::ints(&[1, 6, 6, 6]))
                .insert("stride", Value::ints(&[2, 2]))
                .insert("padding", Value::ints(&[1, 1]))
                .insert("output_padding", Value::ints(&[1, 1]))
                .insert("dilation", Value::ints(&[1, 1]))
                .insert("groups", Value::Int(2));
        }
        "conv2d_simple" => {
            operands(
                &mut b,
                &[
                    ("x", &[1, 2, 5, 5]),
                    ("kernel", &[3, 2, 3, 3]),
                    ("out", &[1, 3, 5, 5]),
                ],
            );
            b.insert("stride", Value::Int(1))
                .insert("padding", Value::Int(1));
        }
        _ => {
            operands(&mut b, &[("x", &[1, 2, 6, 6]), ("out", &[1, 2, 3, 3])]);
            b.insert("kernel_size", Value::Int(2))
                .insert("stride", Value::Int(2));
        }
    }
    let dtype_bytes = if contract == "conv2d_simple" { 2 } else { 4 };
    b.insert("dtype_bytes", Value::Int(dtype_bytes));
    b
}

fn operands(b: &mut Bindings, list: &[(&str, &[i64])]) {
    for (name, dims) in list {
        b.insert(*name, Value::operand(dims));
    }
}

/// `-(-(…(1)…))` built by hand `height` deep, past what the parser would accept.
pub(crate) fn deep_negation(height: usize) -> Expr {
    let mut e = Expr::new(ExprKind::Int(1), Span::new(0, 1));
    for _ in 0..height {
        e = Expr::new(
            ExprKind::Unary {
                op: UnOp::Neg,
                operand: Box::new(e),
            },
            Span::new(0, 1),
        );
    }
    e
}
