//! The link registry: `fkc::ENTRY_POINTS`, symbol → [`KernelRef`], one symbol per kernel and
//! dtype actually supported.
//!
//! A contract's `entry_point: "fuel_reference_backend::ops::conv2d_f32"` resolves here. Each
//! [`KernelRef`] says which kernel and dtype the symbol runs, its `OpKind` (none for the
//! describe-only `conv2d_simple`, `max_pool2d` and the common ops of [`crate::fkc_common`]),
//! its operands, outputs and parameter fields, and holds the function to call — the real
//! `ops::*` function of that name. Calling it: operands in `inputs` order (`None` for an absent
//! optional one), parameters by name; fields with a `shape_of` may be omitted and are then
//! filled from the operands and the computed output.

pub use crate::dispatch::{
    CONTIGUIZE_INPUTS, CONV_TRANSPOSE2D_INPUTS, CONV2D_INPUTS, CONV2D_SIMPLE_INPUTS,
    MAX_POOL2D_INPUTS,
};
use crate::dispatch::{
    CONV_TRANSPOSE2D_FIELDS, CONV2D_FIELDS, FieldDesc, OP_PARAMS_VARIANTS, OpKind, OpParams,
    ParamKind, ParamValues,
};
use crate::dtype::DType;
use crate::error::{ExecError, Rejection};
pub use crate::fkc_common::{
    AVG_POOL2D_FIELDS, AVG_POOL2D_INPUTS, AXIS_FIELDS, BINARY_INPUTS, EMBEDDING_INPUTS,
    LAYER_NORM_FIELDS, LAYER_NORM_INPUTS, LEAKY_RELU_FIELDS, MATMUL_FIELDS, MATMUL_INPUTS,
    QMATMUL_FIELDS, QMATMUL_INPUTS, REDUCE_FIELDS, REDUCE_INPUTS, TRANSPOSE_FIELDS,
    TRANSPOSE_INPUTS, UNARY_INPUTS,
};
use crate::tensor::AnyTensor;
use crate::view::Operand;
pub use fkc_provider::registry::{EntryFn, KernelRef, OperandDesc, Registry};

/// The path of [`ENTRY_POINTS`], as a contract's front matter names it.
pub const REGISTRY_PATH: &str = "fuel_reference_backend::fkc::ENTRY_POINTS";

/// `conv2d_simple` parameters.
pub const CONV2D_SIMPLE_FIELDS: &[FieldDesc] = &[
    FieldDesc::new("stride", ParamKind::Usize, "output step on both axes, >= 1"),
    FieldDesc::new(
        "padding",
        ParamKind::Usize,
        "symmetric zero padding on both axes; padded taps are skipped",
    ),
];

/// `max_pool2d` parameters.
pub const MAX_POOL2D_FIELDS: &[FieldDesc] = &[
    FieldDesc::new(
        "kernel_size",
        ParamKind::Usize,
        "square window side, 1 <= kernel_size <= min(H, W)",
    ),
    FieldDesc::new("stride", ParamKind::Usize, "window step on both axes, >= 1"),
];

/// The thread count of a threaded variant.
const THREADS: FieldDesc = FieldDesc::new(
    "threads",
    ParamKind::Usize,
    "threads to split the work over (0 and 1: the calling thread only); bitwise the same result whatever the count",
);

/// `max_pool2d_threaded` parameters: `max_pool2d`'s and `threads`.
pub const MAX_POOL2D_THREADED_FIELDS: &[FieldDesc] =
    &[MAX_POOL2D_FIELDS[0], MAX_POOL2D_FIELDS[1], THREADS];

/// `conv2d_threaded` parameters: `OpParams::Conv2D`'s fields and `threads`.
pub const CONV2D_THREADED_FIELDS: &[FieldDesc] = &[
    CONV2D_FIELDS[0],
    CONV2D_FIELDS[1],
    CONV2D_FIELDS[2],
    CONV2D_FIELDS[3],
    CONV2D_FIELDS[4],
    CONV2D_FIELDS[5],
    CONV2D_FIELDS[6],
    THREADS,
];

/// `conv_transpose2d_threaded` parameters: `OpParams::ConvTranspose2D`'s fields and `threads`.
pub const CONV_TRANSPOSE2D_THREADED_FIELDS: &[FieldDesc] = &[
    CONV_TRANSPOSE2D_FIELDS[0],
    CONV_TRANSPOSE2D_FIELDS[1],
    CONV_TRANSPOSE2D_FIELDS[2],
    CONV_TRANSPOSE2D_FIELDS[3],
    CONV_TRANSPOSE2D_FIELDS[4],
    CONV_TRANSPOSE2D_FIELDS[5],
    CONV_TRANSPOSE2D_FIELDS[6],
    CONV_TRANSPOSE2D_FIELDS[7],
    THREADS,
];

const OUT: &[&str] = &["out"];

/// One `KernelRef` for the `ops` function `$function`, whose name is the symbol's last segment.
macro_rules! kernel_ref {
    ($kernel:literal, $function:ident, $dtype:ident, $op_kind:expr, $inputs:expr, $params:expr) => {
        KernelRef {
            symbol: concat!("fuel_reference_backend::ops::", stringify!($function)),
            kernel: $kernel,
            dtype: DType::$dtype,
            op_kind: $op_kind,
            inputs: $inputs,
            outputs: OUT,
            params: $params,
            call: |operands, params| {
                crate::ops::$function(operands, params).map_err(Rejection::from)
            },
        }
    };
}

const CONV2D: Option<&str> = Some(OpKind::Conv2D.name());
const CONV_T: Option<&str> = Some(OpKind::ConvTranspose2D.name());
const CONTIG: Option<&str> = Some(OpKind::Contiguize.name());

/// Every wired entry point. A kernel has a symbol for exactly the dtypes it runs:
/// `conv2d` and `conv_transpose2d` F32/F64 (what the executor admits); `conv2d_simple`,
/// `max_pool2d` and `contiguize` all four; the threaded variants (`threads` one more field,
/// no op kind of their own) as their one-thread kernels; the describe-only common ops
/// ([`crate::fkc_common`]) F32/F64, `mul`, `transpose` and `embedding` all four floats, `add`
/// the four floats and F8E5M2, I8, I32 (wrapping), `qmatmul` I8 only.
#[rustfmt::skip]
pub static ENTRY_POINTS: &[KernelRef] = &[
    kernel_ref!("conv2d", conv2d_f32, F32, CONV2D, CONV2D_INPUTS, CONV2D_FIELDS),
    kernel_ref!("conv2d", conv2d_f64, F64, CONV2D, CONV2D_INPUTS, CONV2D_FIELDS),
    kernel_ref!("conv_transpose2d", conv_transpose2d_f32, F32, CONV_T, CONV_TRANSPOSE2D_INPUTS, CONV_TRANSPOSE2D_FIELDS),
    kernel_ref!("conv_transpose2d", conv_transpose2d_f64, F64, CONV_T, CONV_TRANSPOSE2D_INPUTS, CONV_TRANSPOSE2D_FIELDS),
    kernel_ref!("conv2d_simple", conv2d_simple_f32, F32, None, CONV2D_SIMPLE_INPUTS, CONV2D_SIMPLE_FIELDS),
    kernel_ref!("conv2d_simple", conv2d_simple_f64, F64, None, CONV2D_SIMPLE_INPUTS, CONV2D_SIMPLE_FIELDS),
    kernel_ref!("conv2d_simple", conv2d_simple_bf16, BF16, None, CONV2D_SIMPLE_INPUTS, CONV2D_SIMPLE_FIELDS),
    kernel_ref!("conv2d_simple", conv2d_simple_f16, F16, None, CONV2D_SIMPLE_INPUTS, CONV2D_SIMPLE_FIELDS),
    kernel_ref!("max_pool2d", max_pool2d_f32, F32, None, MAX_POOL2D_INPUTS, MAX_POOL2D_FIELDS),
    kernel_ref!("max_pool2d", max_pool2d_f64, F64, None, MAX_POOL2D_INPUTS, MAX_POOL2D_FIELDS),
    kernel_ref!("max_pool2d", max_pool2d_bf16, BF16, None, MAX_POOL2D_INPUTS, MAX_POOL2D_FIELDS),
    kernel_ref!("max_pool2d", max_pool2d_f16, F16, None, MAX_POOL2D_INPUTS, MAX_POOL2D_FIELDS),
    kernel_ref!("contiguize", contiguize_f32, F32, CONTIG, CONTIGUIZE_INPUTS, &[]),
    kernel_ref!("contiguize", contiguize_f64, F64, CONTIG, CONTIGUIZE_INPUTS, &[]),
    kernel_ref!("contiguize", contiguize_bf16, BF16, CONTIG, CONTIGUIZE_INPUTS, &[]),
    kernel_ref!("contiguize", contiguize_f16, F16, CONTIG, CONTIGUIZE_INPUTS, &[]),
    kernel_ref!("conv2d_threaded", conv2d_threaded_f32, F32, None, CONV2D_INPUTS, CONV2D_THREADED_FIELDS),
    kernel_ref!("conv2d_threaded", conv2d_threaded_f64, F64, None, CONV2D_INPUTS, CONV2D_THREADED_FIELDS),
    kernel_ref!("conv_transpose2d_threaded", conv_transpose2d_threaded_f32, F32, None, CONV_TRANSPOSE2D_INPUTS, CONV_TRANSPOSE2D_THREADED_FIELDS),
    kernel_ref!("conv_transpose2d_threaded", conv_transpose2d_threaded_f64, F64, None, CONV_TRANSPOSE2D_INPUTS, CONV_TRANSPOSE2D_THREADED_FIELDS),
    kernel_ref!("max_pool2d_threaded", max_pool2d_threaded_f32, F32, None, MAX_POOL2D_INPUTS, MAX_POOL2D_THREADED_FIELDS),
    kernel_ref!("max_pool2d_threaded", max_pool2d_threaded_f64, F64, None, MAX_POOL2D_INPUTS, MAX_POOL2D_THREADED_FIELDS),
    kernel_ref!("max_pool2d_threaded", max_pool2d_threaded_bf16, BF16, None, MAX_POOL2D_INPUTS, MAX_POOL2D_THREADED_FIELDS),
    kernel_ref!("max_pool2d_threaded", max_pool2d_threaded_f16, F16, None, MAX_POOL2D_INPUTS, MAX_POOL2D_THREADED_FIELDS),
    // The describe-only common ops.
    kernel_ref!("matmul", matmul_f32, F32, None, MATMUL_INPUTS, MATMUL_FIELDS),
    kernel_ref!("matmul", matmul_f64, F64, None, MATMUL_INPUTS, MATMUL_FIELDS),
    kernel_ref!("add", add_f32, F32, None, BINARY_INPUTS, &[]),
    kernel_ref!("add", add_f64, F64, None, BINARY_INPUTS, &[]),
    kernel_ref!("add", add_bf16, BF16, None, BINARY_INPUTS, &[]),
    kernel_ref!("add", add_f16, F16, None, BINARY_INPUTS, &[]),
    kernel_ref!("add", add_f8e5m2, F8E5M2, None, BINARY_INPUTS, &[]),
    kernel_ref!("add", add_i8, I8, None, BINARY_INPUTS, &[]),
    kernel_ref!("add", add_i32, I32, None, BINARY_INPUTS, &[]),
    kernel_ref!("mul", mul_f32, F32, None, BINARY_INPUTS, &[]),
    kernel_ref!("mul", mul_f64, F64, None, BINARY_INPUTS, &[]),
    kernel_ref!("mul", mul_bf16, BF16, None, BINARY_INPUTS, &[]),
    kernel_ref!("mul", mul_f16, F16, None, BINARY_INPUTS, &[]),
    kernel_ref!("leaky_relu", leaky_relu_f32, F32, None, UNARY_INPUTS, LEAKY_RELU_FIELDS),
    kernel_ref!("leaky_relu", leaky_relu_f64, F64, None, UNARY_INPUTS, LEAKY_RELU_FIELDS),
    kernel_ref!("gelu", gelu_f32, F32, None, UNARY_INPUTS, &[]),
    kernel_ref!("gelu", gelu_f64, F64, None, UNARY_INPUTS, &[]),
    kernel_ref!("softmax", softmax_f32, F32, None, UNARY_INPUTS, AXIS_FIELDS),
    kernel_ref!("softmax", softmax_f64, F64, None, UNARY_INPUTS, AXIS_FIELDS),
    kernel_ref!("layer_norm", layer_norm_f32, F32, None, LAYER_NORM_INPUTS, LAYER_NORM_FIELDS),
    kernel_ref!("layer_norm", layer_norm_f64, F64, None, LAYER_NORM_INPUTS, LAYER_NORM_FIELDS),
    kernel_ref!("reduce_sum", reduce_sum_f32, F32, None, REDUCE_INPUTS, REDUCE_FIELDS),
    kernel_ref!("reduce_sum", reduce_sum_f64, F64, None, REDUCE_INPUTS, REDUCE_FIELDS),
    kernel_ref!("reduce_mean", reduce_mean_f32, F32, None, REDUCE_INPUTS, REDUCE_FIELDS),
    kernel_ref!("reduce_mean", reduce_mean_f64, F64, None, REDUCE_INPUTS, REDUCE_FIELDS),
    kernel_ref!("avg_pool2d", avg_pool2d_f32, F32, None, AVG_POOL2D_INPUTS, AVG_POOL2D_FIELDS),
    kernel_ref!("avg_pool2d", avg_pool2d_f64, F64, None, AVG_POOL2D_INPUTS, AVG_POOL2D_FIELDS),
    kernel_ref!("transpose", transpose_f32, F32, None, TRANSPOSE_INPUTS, TRANSPOSE_FIELDS),
    kernel_ref!("transpose", transpose_f64, F64, None, TRANSPOSE_INPUTS, TRANSPOSE_FIELDS),
    kernel_ref!("transpose", transpose_bf16, BF16, None, TRANSPOSE_INPUTS, TRANSPOSE_FIELDS),
    kernel_ref!("transpose", transpose_f16, F16, None, TRANSPOSE_INPUTS, TRANSPOSE_FIELDS),
    kernel_ref!("cumsum", cumsum_f32, F32, None, UNARY_INPUTS, AXIS_FIELDS),
    kernel_ref!("cumsum", cumsum_f64, F64, None, UNARY_INPUTS, AXIS_FIELDS),
    kernel_ref!("embedding", embedding_f32, F32, None, EMBEDDING_INPUTS, &[]),
    kernel_ref!("embedding", embedding_f64, F64, None, EMBEDDING_INPUTS, &[]),
    kernel_ref!("embedding", embedding_bf16, BF16, None, EMBEDDING_INPUTS, &[]),
    kernel_ref!("embedding", embedding_f16, F16, None, EMBEDDING_INPUTS, &[]),
    kernel_ref!("qmatmul", qmatmul_i8, I8, None, QMATMUL_INPUTS, QMATMUL_FIELDS),
];

/// The reference backend as a provider: its link registry with its op kinds, carriers and
/// executor. mdbook-fkc runs it in process; `cargo run --bin fuel-reference-provider` serves it over the
/// provider protocol.
pub static REGISTRY: Registry = Registry {
    name: "fuel-reference-backend",
    path: REGISTRY_PATH,
    crate_name: "fuel_reference_backend",
    revision: env!("CARGO_PKG_VERSION"),
    op_kinds: &[
        OpKind::Conv2D.name(),
        OpKind::ConvTranspose2D.name(),
        OpKind::Contiguize.name(),
    ],
    variants: OP_PARAMS_VARIANTS,
    entry_points: ENTRY_POINTS,
    executor: Some(execute_by_name),
    levels: Some(crate::ops::simd::levels),
};

/// The executor behind the protocol's `execute`: the op kind and carrier by name.
fn execute_by_name(
    op_kind: &str,
    values: &ParamValues,
    operands: &[Option<Operand>],
) -> Result<Vec<AnyTensor>, Rejection> {
    let op = OpKind::from_name(op_kind).ok_or_else(|| ExecError::UnknownOp {
        name: op_kind.to_owned(),
    })?;
    let params = OpParams::from_values(op.name(), values).map_err(ExecError::from)?;
    Ok(crate::exec::execute(op, &params, operands)?)
}

/// The entry point with this exact symbol.
pub fn entry_point(symbol: &str) -> Option<&'static KernelRef> {
    REGISTRY.entry_point(symbol)
}

/// The entry point of `kernel` in `dtype`, if that dtype is supported.
pub fn entry_point_for(kernel: &str, dtype: DType) -> Option<&'static KernelRef> {
    ENTRY_POINTS
        .iter()
        .find(|k| k.kernel == kernel && k.dtype == dtype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_unique_and_consistent() {
        for (i, k) in ENTRY_POINTS.iter().enumerate() {
            let expected = format!(
                "fuel_reference_backend::ops::{}_{}",
                k.kernel,
                k.dtype.suffix()
            );
            assert_eq!(k.symbol, expected);
            assert_eq!(entry_point(k.symbol).map(|e| e.symbol), Some(k.symbol));
            assert!(ENTRY_POINTS[..i].iter().all(|o| o.symbol != k.symbol));
            if let Some(op) = k.op_kind {
                assert_eq!(
                    OpKind::from_name(op).map(OpKind::kernel_name),
                    Some(k.kernel)
                );
            }
        }
        assert!(entry_point("fuel_reference_backend::ops::conv2d_bf16").is_none());
        assert_eq!(ENTRY_POINTS.len(), 62);
    }
}
