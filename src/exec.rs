//! The executor: routes an `OpKind` + `OpParams` + operand views to a kernel.
//!
//! It admits only what the backend wires — `Conv2D` and `ConvTranspose2D` in F32/F64,
//! `Contiguize` in every dtype — and rejects everything else with a typed [`ExecError`]:
//! a params variant of another op, an unwired dtype, mixed dtypes, a missing or extra operand,
//! a non-contiguous view reaching a contiguous-only kernel, or `OpParams` shapes that disagree
//! with the operands (`x_shape`, `w_shape`) or with the computed output (`out_shape`).

use std::borrow::Cow;

use half::{bf16, f16};

use crate::dispatch::{CONTIGUIZE_INPUTS, CONV_TRANSPOSE2D_INPUTS, CONV2D_INPUTS, OperandDesc};
use crate::dispatch::{OpKind, OpParams};
use crate::dtype::DType;
use crate::error::{ExecError, KernelError, KernelErrorKind};
use crate::ops::{
    Conv2dParams, ConvTranspose2dParams, contiguize_any, conv_transpose2d_threaded, conv2d_threaded,
};
use crate::tensor::{AnyTensor, Element, RefTensor};
use crate::view::Operand;

/// Dtypes the executor routes to `conv2d` and `conv_transpose2d`.
pub const CONV_DTYPES: &[DType] = &[DType::F32, DType::F64];

/// Dtypes the executor routes to `contiguize`.
pub const CONTIGUIZE_DTYPES: &[DType] = &DType::ALL;

/// The dtypes `op` is wired for.
pub fn admitted_dtypes(op: OpKind) -> &'static [DType] {
    match op {
        OpKind::Conv2D | OpKind::ConvTranspose2D => CONV_DTYPES,
        OpKind::Contiguize => CONTIGUIZE_DTYPES,
    }
}

/// The operands `op` takes, in order.
pub fn operand_descs(op: OpKind) -> &'static [OperandDesc] {
    match op {
        OpKind::Conv2D => CONV2D_INPUTS,
        OpKind::ConvTranspose2D => CONV_TRANSPOSE2D_INPUTS,
        OpKind::Contiguize => CONTIGUIZE_INPUTS,
    }
}

/// Runs `op` with `params` on `operands` (in [`operand_descs`] order; `None` for an absent
/// optional operand): `Conv2D [x, weight, bias?]`, `ConvTranspose2D [x, weight]`,
/// `Contiguize [x]`. Returns the outputs (`[out]`).
pub fn execute(
    op: OpKind,
    params: &OpParams,
    operands: &[Option<Operand>],
) -> Result<Vec<AnyTensor>, ExecError> {
    execute_threaded(op, params, operands, 1)
}

/// [`execute`] on `threads` threads (`0` and `1`: the calling thread only); bitwise the same
/// result whatever the count.
pub fn execute_threaded(
    op: OpKind,
    params: &OpParams,
    operands: &[Option<Operand>],
    threads: usize,
) -> Result<Vec<AnyTensor>, ExecError> {
    if params.op_kind() != op {
        return Err(ExecError::ParamsMismatch {
            op,
            variant: params.variant_name(),
        });
    }
    let kernel = op.kernel_name();
    let descs = operand_descs(op);
    check_arity(kernel, descs, operands)?;
    let dtype = first_dtype(kernel, descs, operands)?;
    if !admitted_dtypes(op).contains(&dtype) {
        return Err(ExecError::UnsupportedDType {
            op: kernel,
            dtype,
            admitted: admitted_dtypes(op),
        });
    }
    match dtype {
        DType::F32 => run::<f32>(params, operands, threads),
        DType::F64 => run::<f64>(params, operands, threads),
        DType::BF16 => run::<bf16>(params, operands, threads),
        DType::F16 => run::<f16>(params, operands, threads),
        dtype => Err(ExecError::UnsupportedDType {
            op: kernel,
            dtype,
            admitted: admitted_dtypes(op),
        }),
    }
}

/// The output shape `params` promises, computed from its own `x_shape`/`w_shape` and
/// geometry (`None` for `Contiguize`, whose output has the operand's shape).
pub fn expected_out_shape(params: &OpParams) -> Result<Option<[usize; 4]>, KernelError> {
    match *params {
        OpParams::Conv2D {
            x_shape, w_shape, ..
        } => conv2d_params(params).out_dims(&x_shape, &w_shape).map(Some),
        OpParams::ConvTranspose2D {
            x_shape, w_shape, ..
        } => conv_transpose2d_params(params)
            .out_dims(&x_shape, &w_shape)
            .map(Some),
        OpParams::Contiguize => Ok(None),
    }
}

fn run<T: Element>(
    params: &OpParams,
    operands: &[Option<Operand>],
    threads: usize,
) -> Result<Vec<AnyTensor>, ExecError> {
    let out = match *params {
        OpParams::Conv2D {
            x_shape,
            w_shape,
            out_shape,
            ..
        } => {
            let ops = typed_operands::<T>("conv2d", CONV2D_INPUTS, operands)?;
            let [x, w, bias] = three(&ops);
            let (x, w) = (required(x)?, required(w)?);
            let p = conv2d_params(params);
            let geometry = p.geometry(x.shape(), w.shape(), bias.map(RefTensor::shape))?;
            declared("conv2d", "x_shape", &x_shape, x.shape())?;
            declared("conv2d", "w_shape", &w_shape, w.shape())?;
            declared("conv2d", "out_shape", &out_shape, &geometry.out_dims())?;
            T::wrap(conv2d_threaded(x, w, bias, &p, threads)?)
        }
        OpParams::ConvTranspose2D {
            x_shape,
            w_shape,
            out_shape,
            ..
        } => {
            let op = "conv_transpose2d";
            let ops = typed_operands::<T>(op, CONV_TRANSPOSE2D_INPUTS, operands)?;
            let [x, w, _] = three(&ops);
            let (x, w) = (required(x)?, required(w)?);
            let p = conv_transpose2d_params(params);
            let geometry = p.geometry(x.shape(), w.shape())?;
            declared(op, "x_shape", &x_shape, x.shape())?;
            declared(op, "w_shape", &w_shape, w.shape())?;
            declared(op, "out_shape", &out_shape, &geometry.out_dims())?;
            T::wrap(conv_transpose2d_threaded(x, w, &p, threads)?)
        }
        OpParams::Contiguize => {
            let x = operands
                .first()
                .and_then(Option::as_ref)
                .ok_or_else(|| missing("contiguize", "x"))?;
            contiguize_any(x)?
        }
    };
    Ok(vec![out])
}

fn conv2d_params(params: &OpParams) -> Conv2dParams {
    match *params {
        OpParams::Conv2D {
            stride,
            padding,
            dilation,
            groups,
            ..
        } => Conv2dParams {
            stride,
            padding,
            dilation,
            groups,
        },
        _ => Conv2dParams::default(),
    }
}

fn conv_transpose2d_params(params: &OpParams) -> ConvTranspose2dParams {
    match *params {
        OpParams::ConvTranspose2D {
            stride,
            padding,
            output_padding,
            dilation,
            groups,
            ..
        } => ConvTranspose2dParams {
            stride,
            padding,
            output_padding,
            dilation,
            groups,
        },
        _ => ConvTranspose2dParams::default(),
    }
}

/// Fails with `ShapeMismatch` unless the shape declared in `OpParams` equals the actual one.
fn declared(
    op: &'static str,
    field: &str,
    declared: &[usize; 4],
    actual: &[usize],
) -> Result<(), KernelError> {
    if declared.as_slice() == actual {
        return Ok(());
    }
    let what = if field == "out_shape" {
        "the computed output shape"
    } else {
        "the operand shape"
    };
    Err(KernelError::new(
        op,
        KernelErrorKind::ShapeMismatch,
        format!("OpParams {field} {declared:?} does not match {what} {actual:?}"),
    ))
}

fn missing(op: &'static str, name: &str) -> ExecError {
    KernelError::new(
        op,
        KernelErrorKind::MissingOperand,
        format!("required operand `{name}` is absent"),
    )
    .into()
}

/// Fails if there are more operands than `descs`, or a required one is absent.
pub(crate) fn check_arity(
    op: &'static str,
    descs: &[OperandDesc],
    operands: &[Option<Operand>],
) -> Result<(), ExecError> {
    if operands.len() > descs.len() {
        let names: Vec<&str> = descs.iter().map(|d| d.name).collect();
        return Err(KernelError::new(
            op,
            KernelErrorKind::MissingOperand,
            format!(
                "takes at most {} operands [{}], got {}",
                descs.len(),
                names.join(", "),
                operands.len()
            ),
        )
        .into());
    }
    for (i, desc) in descs.iter().enumerate() {
        if !desc.optional && operands.get(i).and_then(Option::as_ref).is_none() {
            return Err(missing(op, desc.name));
        }
    }
    Ok(())
}

/// The dtype of the first operand (required operands are checked present by `check_arity`).
fn first_dtype(
    op: &'static str,
    descs: &[OperandDesc],
    operands: &[Option<Operand>],
) -> Result<DType, ExecError> {
    let first = descs.first().map_or("x", |d| d.name);
    operands
        .first()
        .and_then(Option::as_ref)
        .map(Operand::dtype)
        .ok_or_else(|| missing(op, first))
}

/// Borrows every operand as a contiguous `RefTensor<T>`: checks arity, presence, that each
/// operand is `T` (`WrongDType`) and contiguous (`Layout`). A contiguous view that does not
/// cover its whole storage is copied; otherwise the storage is borrowed.
pub(crate) fn typed_operands<'a, T: Element>(
    op: &'static str,
    descs: &[OperandDesc],
    operands: &'a [Option<Operand>],
) -> Result<Vec<Option<Cow<'a, RefTensor<T>>>>, ExecError> {
    check_arity(op, descs, operands)?;
    descs
        .iter()
        .enumerate()
        .map(|(i, desc)| match operands.get(i).and_then(Option::as_ref) {
            None => Ok(None),
            Some(operand) => contiguous_tensor::<T>(op, desc.name, operand).map(Some),
        })
        .collect()
}

fn contiguous_tensor<'a, T: Element>(
    op: &'static str,
    name: &'static str,
    operand: &'a Operand,
) -> Result<Cow<'a, RefTensor<T>>, ExecError> {
    let storage = T::peel(operand.storage()).ok_or(ExecError::WrongDType {
        op,
        operand: name,
        expected: T::DTYPE,
        found: operand.dtype(),
    })?;
    let layout = operand.layout();
    if crate::mutants::active(crate::mutants::Mutant::DenseViewTakenAsPacked)
        && crate::mutants::covers_its_storage(operand, storage.data().len())
    {
        let data = storage.data().to_vec();
        return Ok(Cow::Owned(RefTensor::from_vec(data, operand.shape())?));
    }
    if !layout.is_contiguous() {
        return Err(ExecError::Layout {
            op,
            operand: name,
            layout,
        });
    }
    if storage.shape() == operand.shape() {
        return Ok(Cow::Borrowed(storage));
    }
    let len = crate::shape::numel(operand.shape())?;
    let data = storage
        .data()
        .get(..len)
        .map(<[T]>::to_vec)
        .unwrap_or_default();
    Ok(Cow::Owned(RefTensor::from_vec(data, operand.shape())?))
}

/// The first three operand slots (absent ones as `None`).
pub(crate) fn three<'a, T: Element>(
    ops: &'a [Option<Cow<'a, RefTensor<T>>>],
) -> [Option<&'a RefTensor<T>>; 3] {
    let get = |i: usize| ops.get(i).and_then(|o| o.as_deref());
    [get(0), get(1), get(2)]
}

fn required<T>(t: Option<&RefTensor<T>>) -> Result<&RefTensor<T>, ExecError> {
    t.ok_or_else(|| missing("exec", "operand"))
}
