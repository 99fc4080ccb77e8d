//! Per-dtype entry points: the functions the link registry's symbols name.
//!
//! Every entry point has the same signature — operand views in the kernel's input order and
//! parameter values by name — so a caller can run any kernel the same way. Op-kind kernels
//! (`conv2d`, `conv_transpose2d`, `contiguize`) build their `OpParams` (filling omitted
//! shape-carrying fields from the operands and the computed output) and go through
//! [`exec::execute`](crate::exec::execute). Describe-only kernels (`conv2d_simple`,
//! `max_pool2d`) have no `OpKind`; their entry points check operands and parameters the same
//! way and call the kernel directly. Every entry point rejects an operand whose dtype is not
//! the symbol's.

use half::{bf16, f16};

use crate::dispatch::{OpKind, OpParams, ParamValue, ParamValues, Reader, VariantDesc, variant};
use crate::error::{ExecError, KernelError, KernelErrorKind};
use crate::exec::{
    execute, execute_threaded, expected_out_shape, operand_descs, three, typed_operands,
};
use crate::fkc::{
    CONV2D_SIMPLE_FIELDS, CONV2D_SIMPLE_INPUTS, MAX_POOL2D_FIELDS, MAX_POOL2D_INPUTS,
    MAX_POOL2D_THREADED_FIELDS, OperandDesc,
};
use crate::ops::{
    Conv2dSimpleParams, MaxPool2dParams, conv2d_simple, max_pool2d, max_pool2d_threaded,
};
use crate::tensor::{AnyTensor, Element};
use crate::view::Operand;

/// Fails with `WrongDType` if any present operand is not `T`.
fn require_dtype<T: Element>(
    op: &'static str,
    descs: &[OperandDesc],
    operands: &[Option<Operand>],
) -> Result<(), ExecError> {
    let present = descs
        .iter()
        .zip(operands)
        .filter_map(|(d, o)| o.as_ref().map(|o| (d, o)));
    for (desc, operand) in present {
        if operand.dtype() != T::DTYPE {
            return Err(ExecError::WrongDType {
                op,
                operand: desc.name,
                expected: T::DTYPE,
                found: operand.dtype(),
            });
        }
    }
    Ok(())
}

/// Entry for an op-kind kernel in dtype `T`.
fn op_kind_entry<T: Element>(
    op: OpKind,
    operands: &[Option<Operand>],
    values: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    let descs = operand_descs(op);
    crate::exec::check_arity(op.kernel_name(), descs, operands)?;
    require_dtype::<T>(op.kernel_name(), descs, operands)?;
    let params = complete_params(op, descs, operands, values)?;
    execute(op, &params, operands)
}

/// Builds `OpParams` from `values`, filling absent shape-carrying fields from the operands
/// (`shape_of = "x"`, `"weight"`) and from the computed output shape (`shape_of = "out"`).
fn complete_params(
    op: OpKind,
    descs: &[OperandDesc],
    operands: &[Option<Operand>],
    values: &ParamValues,
) -> Result<OpParams, ExecError> {
    let desc = variant(op.name()).ok_or(ExecError::UnknownOp {
        name: op.name().into(),
    })?;
    let mut values = values.clone();
    let mut fill_out = None;
    for field in desc.fields {
        let Some(of) = field.shape_of else { continue };
        if values.contains_key(field.name) {
            continue;
        }
        if of == "out" {
            fill_out = Some(field.name);
            values.insert(field.name.into(), ParamValue::Array4([0; 4]));
            continue;
        }
        let shape = descs
            .iter()
            .position(|d| d.name == of)
            .and_then(|i| operands.get(i))
            .and_then(Option::as_ref)
            .map(Operand::shape)
            .unwrap_or_default();
        let array: [usize; 4] = shape.try_into().map_err(|_| {
            KernelError::new(
                op.kernel_name(),
                KernelErrorKind::Rank,
                format!(
                    "operand `{of}` must be rank 4 to fill `{}`, got shape {shape:?}",
                    field.name
                ),
            )
        })?;
        values.insert(field.name.into(), ParamValue::Array4(array));
    }
    let mut params = OpParams::from_values(desc.variant, &values)?;
    if let Some(name) = fill_out
        && let Some(out) = expected_out_shape(&params)?
    {
        values.insert(name.into(), ParamValue::Array4(out));
        params = OpParams::from_values(desc.variant, &values)?;
    }
    Ok(params)
}

/// Reads a describe-only kernel's parameters: exactly `fields`, each of its kind.
fn reader<'a>(variant: &'a VariantDesc, values: &'a ParamValues) -> Result<Reader<'a>, ExecError> {
    let reader = Reader {
        desc: variant,
        values,
    };
    reader.reject_unknown()?;
    Ok(reader)
}

const CONV2D_SIMPLE_VARIANT: VariantDesc = VariantDesc {
    variant: "conv2d_simple",
    op_kind: None,
    fields: CONV2D_SIMPLE_FIELDS,
};

const MAX_POOL2D_VARIANT: VariantDesc = VariantDesc {
    variant: "max_pool2d",
    op_kind: None,
    fields: MAX_POOL2D_FIELDS,
};

fn conv2d_simple_entry<T: Element>(
    operands: &[Option<Operand>],
    values: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    let ops = typed_operands::<T>("conv2d_simple", CONV2D_SIMPLE_INPUTS, operands)?;
    let r = reader(&CONV2D_SIMPLE_VARIANT, values)?;
    let params = Conv2dSimpleParams {
        stride: r.usize("stride")?,
        padding: r.usize("padding")?,
    };
    let [x, kernel, _] = three(&ops);
    let (Some(x), Some(kernel)) = (x, kernel) else {
        return Err(missing("conv2d_simple"));
    };
    Ok(vec![T::wrap(conv2d_simple(x, kernel, &params)?)])
}

fn max_pool2d_entry<T: Element>(
    operands: &[Option<Operand>],
    values: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    let ops = typed_operands::<T>("max_pool2d", MAX_POOL2D_INPUTS, operands)?;
    let r = reader(&MAX_POOL2D_VARIANT, values)?;
    let params = MaxPool2dParams {
        kernel_size: r.usize("kernel_size")?,
        stride: r.usize("stride")?,
    };
    let [x, _, _] = three(&ops);
    let x = x.ok_or_else(|| missing("max_pool2d"))?;
    Ok(vec![T::wrap(max_pool2d(x, &params)?)])
}

/// Entry for an op-kind kernel in dtype `T` on `threads` threads (the `threads` field; the
/// others as [`op_kind_entry`]'s).
fn threaded_entry<T: Element>(
    op: OpKind,
    operands: &[Option<Operand>],
    values: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    let mut values = values.clone();
    let threads = match values.remove("threads") {
        Some(ParamValue::Usize(threads)) => threads,
        _ => {
            return Err(KernelError::new(
                op.kernel_name(),
                KernelErrorKind::BadParams,
                "`threads` (a usize) is required",
            )
            .into());
        }
    };
    let descs = operand_descs(op);
    crate::exec::check_arity(op.kernel_name(), descs, operands)?;
    require_dtype::<T>(op.kernel_name(), descs, operands)?;
    let params = complete_params(op, descs, operands, &values)?;
    execute_threaded(op, &params, operands, threads)
}

fn max_pool2d_threaded_entry<T: Element>(
    operands: &[Option<Operand>],
    values: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    let ops = typed_operands::<T>("max_pool2d", MAX_POOL2D_INPUTS, operands)?;
    let r = reader(&MAX_POOL2D_THREADED_VARIANT, values)?;
    let params = MaxPool2dParams {
        kernel_size: r.usize("kernel_size")?,
        stride: r.usize("stride")?,
    };
    let [x, _, _] = three(&ops);
    let x = x.ok_or_else(|| missing("max_pool2d"))?;
    Ok(vec![T::wrap(max_pool2d_threaded(
        x,
        &params,
        r.usize("threads")?,
    )?)])
}

const MAX_POOL2D_THREADED_VARIANT: VariantDesc = VariantDesc {
    variant: "max_pool2d_threaded",
    op_kind: None,
    fields: MAX_POOL2D_THREADED_FIELDS,
};

fn missing(op: &'static str) -> ExecError {
    KernelError::new(
        op,
        KernelErrorKind::MissingOperand,
        "a required operand is absent",
    )
    .into()
}

entry_points! {
    conv2d_f32 = |o, v| op_kind_entry::<f32>(OpKind::Conv2D, o, v);
    conv2d_f64 = |o, v| op_kind_entry::<f64>(OpKind::Conv2D, o, v);
    conv_transpose2d_f32 = |o, v| op_kind_entry::<f32>(OpKind::ConvTranspose2D, o, v);
    conv_transpose2d_f64 = |o, v| op_kind_entry::<f64>(OpKind::ConvTranspose2D, o, v);
    contiguize_f32 = |o, v| op_kind_entry::<f32>(OpKind::Contiguize, o, v);
    contiguize_f64 = |o, v| op_kind_entry::<f64>(OpKind::Contiguize, o, v);
    contiguize_bf16 = |o, v| op_kind_entry::<bf16>(OpKind::Contiguize, o, v);
    contiguize_f16 = |o, v| op_kind_entry::<f16>(OpKind::Contiguize, o, v);
    conv2d_simple_f32 = conv2d_simple_entry::<f32>;
    conv2d_simple_f64 = conv2d_simple_entry::<f64>;
    conv2d_simple_bf16 = conv2d_simple_entry::<bf16>;
    conv2d_simple_f16 = conv2d_simple_entry::<f16>;
    max_pool2d_f32 = max_pool2d_entry::<f32>;
    max_pool2d_f64 = max_pool2d_entry::<f64>;
    max_pool2d_bf16 = max_pool2d_entry::<bf16>;
    max_pool2d_f16 = max_pool2d_entry::<f16>;
    conv2d_threaded_f32 = |o, v| threaded_entry::<f32>(OpKind::Conv2D, o, v);
    conv2d_threaded_f64 = |o, v| threaded_entry::<f64>(OpKind::Conv2D, o, v);
    conv_transpose2d_threaded_f32 = |o, v| threaded_entry::<f32>(OpKind::ConvTranspose2D, o, v);
    conv_transpose2d_threaded_f64 = |o, v| threaded_entry::<f64>(OpKind::ConvTranspose2D, o, v);
    max_pool2d_threaded_f32 = max_pool2d_threaded_entry::<f32>;
    max_pool2d_threaded_f64 = max_pool2d_threaded_entry::<f64>;
    max_pool2d_threaded_bf16 = max_pool2d_threaded_entry::<bf16>;
    max_pool2d_threaded_f16 = max_pool2d_threaded_entry::<f16>;
}
