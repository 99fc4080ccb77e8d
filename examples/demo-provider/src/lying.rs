//! A test fixture: a provider whose kernels are fine but whose contracts (in mdbook-fkc's
//! fixture book `providers/lying`) lie — about a dtype, a shape rule and the values. Each lie
//! must fail with the same code as it would against the built-in backend.

use crate::entry;
use fkc_provider::{
    AnyTensor, DType, KernelErrorKind, Operand, OperandDesc, ParamValues, Registry, Rejection,
};

const MATRIX: &[OperandDesc] = &[OperandDesc::required("x", 2)];

/// The lying fixture's registry.
pub static REGISTRY: Registry = Registry {
    name: "demo-lying",
    path: "demo_provider::lying::REGISTRY",
    crate_name: "demo_provider",
    revision: env!("CARGO_PKG_VERSION"),
    op_kinds: &[],
    variants: &[],
    entry_points: &[
        // Runs F32 and F64; its contract declares F32 only (FKC0406).
        entry(
            "demo_provider::lying::dtype_liar_f32",
            "dtype_liar",
            DType::F32,
            "Relu",
            MATRIX,
            &[],
            clamp,
        ),
        entry(
            "demo_provider::lying::dtype_liar_f64",
            "dtype_liar",
            DType::F64,
            "Relu",
            MATRIX,
            &[],
            clamp,
        ),
        // Its contract swaps the output's dimensions (FKC0403).
        entry(
            "demo_provider::lying::shape_liar_f32",
            "shape_liar",
            DType::F32,
            "Relu",
            MATRIX,
            &[],
            clamp,
        ),
        // Computes |x| while its contract says relu (FKC0409).
        entry(
            "demo_provider::lying::value_liar_f32",
            "value_liar",
            DType::F32,
            "Relu",
            MATRIX,
            &[],
            absolute,
        ),
    ],
    executor: None,
    levels: None,
};

fn elementwise(
    operands: &[Option<Operand>],
    params: &ParamValues,
    f: fn(f64) -> f64,
) -> Result<Vec<AnyTensor>, Rejection> {
    crate::reject_params("liar", params, &[])?;
    let [x] = crate::contiguous_operands("liar", operands, 1)?[..] else {
        return Err(Rejection::new(KernelErrorKind::MissingOperand, "liar: x"));
    };
    let values: Vec<f64> = x.packed()?.to_f64_vec().into_iter().map(f).collect();
    Ok(vec![AnyTensor::from_f64(x.dtype(), x.shape(), &values)?])
}

fn clamp(operands: &[Option<Operand>], params: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
    elementwise(operands, params, |v| if v < 0.0 { 0.0 } else { v })
}

fn absolute(
    operands: &[Option<Operand>],
    params: &ParamValues,
) -> Result<Vec<AnyTensor>, Rejection> {
    elementwise(operands, params, f64::abs)
}
