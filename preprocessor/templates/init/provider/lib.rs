//! {{name}}: kernels whose contracts mdbook-fkc verifies on every `mdbook build`.
//!
//! [`REGISTRY`] is the link registry: one entry point per kernel and dtype. `book/kernels.md`
//! holds each kernel's contract. Add a kernel by writing its function, listing it in
//! `entry_points`, and writing its contract; the build fails while the contract says something
//! the kernel does not do.

#![forbid(unsafe_code)]

use fkc_provider::{
    AnyTensor, DType, KernelErrorKind, KernelRef, Operand, OperandDesc, ParamValues, Registry,
    Rejection,
};

/// `square`'s operand: a matrix `x [rows, cols]`.
const MATRIX: &[OperandDesc] = &[OperandDesc::required("x", 2)];
const OUT: &[&str] = &["out"];

/// This crate's link registry (the front matter's `link_registry: {{crate}}::REGISTRY`).
pub static REGISTRY: Registry = Registry {
    name: "{{name}}",
    path: "{{crate}}::REGISTRY",
    crate_name: "{{crate}}",
    revision: env!("CARGO_PKG_VERSION"),
    op_kinds: &[],
    variants: &[],
    entry_points: &[
        square_entry("{{crate}}::square_f32", DType::F32),
        square_entry("{{crate}}::square_f64", DType::F64),
    ],
    executor: None,
    levels: None,
};

const fn square_entry(symbol: &'static str, dtype: DType) -> KernelRef {
    KernelRef {
        symbol,
        kernel: "square",
        dtype,
        op_kind: Some("Square"),
        inputs: MATRIX,
        outputs: OUT,
        params: &[],
        call: square,
    }
}

/// `x * x` elementwise, rounded once to the operand's dtype (NaN stays NaN, overflow is Inf).
fn square(operands: &[Option<Operand>], params: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
    if let Some(name) = params.keys().next() {
        return Err(Rejection::new(
            KernelErrorKind::BadParams,
            format!("square: unknown parameter `{name}`"),
        ));
    }
    let [Some(x)] = operands else {
        return Err(Rejection::new(
            KernelErrorKind::MissingOperand,
            "square: takes one operand, x",
        ));
    };
    if !x.is_contiguous() {
        return Err(Rejection::new(
            KernelErrorKind::Layout,
            format!("square: x is not contiguous ({})", x.layout()),
        ));
    }
    if !matches!(x.dtype(), DType::F32 | DType::F64) {
        return Err(Rejection::new(
            KernelErrorKind::DType,
            format!("square: {} is not supported", x.dtype()),
        ));
    }
    // The product of two f32 values is exact in f64, so rounding it to f32 once gives the f32
    // product, as the contract's `max_ulp: 0` promises.
    let values: Vec<f64> = x.packed()?.to_f64_vec().iter().map(|v| v * v).collect();
    Ok(vec![AnyTensor::from_f64(x.dtype(), x.shape(), &values)?])
}
