//! Entry points of the describe-only common kernels (`matmul`, `add`, `mul`, `gelu`,
//! `leaky_relu`, `softmax`, `layer_norm`, `reduce_sum`, `reduce_mean`, `avg_pool2d`,
//! `transpose`, `cumsum`, `embedding`, `qmatmul`).
//!
//! Same signature as every entry point ([`crate::fkc`]). Unlike the convolutions', these
//! accept operands of any layout (strided, offset, reversed, broadcast views): each operand is
//! read through its logical indices, packed bit for bit into a contiguous tensor, and the
//! output is a new row-major tensor. An operand whose dtype is not the one it is declared with
//! (its own, like `embedding`'s `I64` ids, else the symbol's) is `WrongDType`. Parameters must be exactly the kernel's fields, each read by its declared
//! kind with the lenient accessors (a JSON `3` is accepted for an `i64` field, `[1, 0]` for a
//! `Vec<usize>` one, …); anything else is `BadParams`.

use std::borrow::Cow;

use half::{bf16, f16};

use crate::dispatch::{FieldDesc, OperandDesc, ParamValue, ParamValues};
use crate::error::{ExecError, KernelError, KernelErrorKind};
use crate::exec::check_arity;
use crate::fkc_common::{
    AVG_POOL2D_FIELDS, AVG_POOL2D_INPUTS, AXIS_FIELDS, BINARY_INPUTS, EMBEDDING_INPUTS,
    LAYER_NORM_FIELDS, LAYER_NORM_INPUTS, LEAKY_RELU_FIELDS, MATMUL_FIELDS, MATMUL_INPUTS,
    QMATMUL_FIELDS, QMATMUL_INPUTS, REDUCE_FIELDS, REDUCE_INPUTS, TRANSPOSE_FIELDS,
    TRANSPOSE_INPUTS, UNARY_INPUTS,
};
use crate::mutants::{Mutant, active};
use crate::ops::avg_pool2d::{AvgDivisor, AvgPool2dParams, avg_pool2d};
use crate::ops::elementwise::{add, add_e5m2, add_wrapping, gelu, leaky_relu, mul};
use crate::ops::gather::embedding;
use crate::ops::linalg::{MatmulParams, matmul};
use crate::ops::normalize::{LayerNormParams, layer_norm, softmax};
use crate::ops::quantized::{QmatmulParams, qmatmul};
use crate::ops::reduce::{ReduceParams, cumsum, reduce_mean, reduce_sum};
use crate::ops::transpose::transpose;
use crate::tensor::{AnyTensor, Element, F8E5M2, RefTensor, Scalar};
use crate::view::Operand;

/// Checks the operand count and that every present operand has its declared dtype: the
/// desc's own, else `T`'s (`WrongDType` otherwise).
fn check_operands<T: Scalar>(
    op: &'static str,
    descs: &[OperandDesc],
    operands: &[Option<Operand>],
) -> Result<(), ExecError> {
    check_arity(op, descs, operands)?;
    for (desc, operand) in descs.iter().zip(operands) {
        let expected = desc.dtype.unwrap_or(T::DTYPE);
        let converted = |o: &Operand| {
            active(Mutant::FloatOperandsConverted) && o.dtype().is_float() && expected.is_float()
        };
        if let Some(operand) = operand
            .as_ref()
            .filter(|o| o.dtype() != expected && !converted(o))
        {
            return Err(ExecError::WrongDType {
                op,
                operand: desc.name,
                expected,
                found: operand.dtype(),
            });
        }
    }
    Ok(())
}

/// `operand` packed into a contiguous `RefTensor<U>` (borrowed when it already is one).
fn pack<'a, U: Scalar>(
    op: &'static str,
    desc: &OperandDesc,
    operand: &'a Operand,
) -> Result<Cow<'a, RefTensor<U>>, ExecError> {
    let whole = U::peel(operand.storage()).filter(|t| {
        operand.is_contiguous()
            && (t.shape() == operand.shape() || active(Mutant::PackBorrowsPrefixView))
    });
    if let Some(t) = whole {
        return Ok(Cow::Borrowed(t));
    }
    if active(Mutant::PackAssumesOuterPacked)
        && let Some(rows) = pitched_rows::<U>(operand)
    {
        return Ok(Cow::Owned(rows?));
    }
    if operand.layout().broadcast_stride0
        && active(Mutant::PackBroadcastRepeats)
        && let Some(t) = U::peel(operand.storage())
    {
        let n = crate::shape::numel(operand.shape())?;
        let data: Vec<U> = t.data().iter().copied().cycle().take(n).collect();
        return Ok(Cow::Owned(RefTensor::from_vec(data, operand.shape())?));
    }
    if active(Mutant::PackDenseAsStored)
        && let Some(t) = U::peel(operand.storage())
        && crate::mutants::covers_its_storage(operand, t.data().len())
    {
        return Ok(Cow::Owned(RefTensor::from_vec(
            t.data().to_vec(),
            operand.shape(),
        )?));
    }
    let mut packed = operand.packed()?;
    if packed.dtype() != U::DTYPE && active(Mutant::FloatOperandsConverted) {
        packed = AnyTensor::from_f64(U::DTYPE, operand.shape(), &packed.to_f64_vec())?;
    }
    let t = U::peel(&packed).ok_or_else(|| ExecError::WrongDType {
        op,
        operand: desc.name,
        expected: U::DTYPE,
        found: operand.dtype(),
    })?;
    Ok(Cow::Owned(t.clone()))
}

/// The planted [`Mutant::PackAssumesOuterPacked`]: a view with a unit innermost stride and
/// rows at least a row apart, copied row by row at `offset + row · pitch` (`None` for any
/// other view).
fn pitched_rows<U: Scalar>(operand: &Operand) -> Option<Result<RefTensor<U>, ExecError>> {
    let (shape, strides) = (operand.shape(), operand.strides());
    let (&[.., cols], &[.., pitch, 1]) = (shape, strides) else {
        return None;
    };
    let pitch = usize::try_from(pitch).ok().filter(|p| *p >= cols)?;
    if strides.iter().any(|&s| s <= 0) || shape.contains(&0) {
        return None;
    }
    let src = U::peel(operand.storage())?.data();
    let rows = shape.iter().rev().skip(1).product::<usize>();
    let mut data = Vec::with_capacity(rows * cols);
    for row in 0..rows {
        let start = operand.offset() + row * pitch;
        data.extend_from_slice(src.get(start..start + cols)?);
    }
    Some(RefTensor::from_vec(data, shape).map_err(Into::into))
}

/// Operands in `descs` order (`None` for an absent optional one), each packed into a
/// contiguous `RefTensor<T>` (borrowed when it already is one).
fn packed_operands<'a, T: Scalar>(
    op: &'static str,
    descs: &[OperandDesc],
    operands: &'a [Option<Operand>],
) -> Result<Vec<Option<Cow<'a, RefTensor<T>>>>, ExecError> {
    check_operands::<T>(op, descs, operands)?;
    descs
        .iter()
        .enumerate()
        .map(|(i, desc)| {
            let operand = operands.get(i).and_then(Option::as_ref);
            operand.map(|o| pack::<T>(op, desc, o)).transpose()
        })
        .collect()
}

/// The `MissingOperand` failure.
fn absent(op: &'static str) -> ExecError {
    KernelError::new(
        op,
        KernelErrorKind::MissingOperand,
        "a required operand is absent",
    )
    .into()
}

/// The required operand in slot `i`.
fn required<'a, T: Scalar>(
    op: &'static str,
    ops: &'a [Option<Cow<'a, RefTensor<T>>>],
    i: usize,
) -> Result<&'a RefTensor<T>, ExecError> {
    ops.get(i)
        .and_then(|o| o.as_deref())
        .ok_or_else(|| absent(op))
}

/// The required operand in slot `i`, checked by [`check_operands`], packed as a `U` (an
/// operand whose dtype is its own, not the entry point's).
fn required_as<'a, U: Scalar>(
    op: &'static str,
    descs: &[OperandDesc],
    operands: &'a [Option<Operand>],
    i: usize,
) -> Result<Cow<'a, RefTensor<U>>, ExecError> {
    match (descs.get(i), operands.get(i).and_then(Option::as_ref)) {
        (Some(desc), Some(operand)) => pack(op, desc, operand),
        _ => Err(absent(op)),
    }
}

/// The optional operand in slot `i`.
fn optional<'a, T: Element>(
    ops: &'a [Option<Cow<'a, RefTensor<T>>>],
    i: usize,
) -> Option<&'a RefTensor<T>> {
    ops.get(i).and_then(|o| o.as_deref())
}

/// A kernel's named parameter values, checked against its fields.
struct Params<'a> {
    op: &'static str,
    fields: &'static [FieldDesc],
    values: &'a ParamValues,
}

impl<'a> Params<'a> {
    /// Fails with `BadParams` on a name that is not one of `fields`.
    fn new(
        op: &'static str,
        fields: &'static [FieldDesc],
        values: &'a ParamValues,
    ) -> Result<Params<'a>, KernelError> {
        if let Some(name) = values
            .keys()
            .find(|k| !fields.iter().any(|f| f.name == k.as_str()))
        {
            let known: Vec<&str> = fields.iter().map(|f| f.name).collect();
            return Err(KernelError::new(
                op,
                KernelErrorKind::BadParams,
                format!(
                    "{op} has no parameter `{name}` (its fields: [{}])",
                    known.join(", ")
                ),
            ));
        }
        Ok(Params { op, fields, values })
    }

    /// The value of field `name`, read by `read`; a missing value or one `read` refuses is
    /// `BadParams`.
    fn read<V>(
        &self,
        name: &str,
        read: impl FnOnce(&ParamValue) -> Option<V>,
    ) -> Result<V, KernelError> {
        let kind = self
            .fields
            .iter()
            .find(|f| f.name == name)
            .map_or("?", |f| f.kind.as_str());
        let value = self.values.get(name).ok_or_else(|| {
            KernelError::new(
                self.op,
                KernelErrorKind::BadParams,
                format!("{} is missing parameter `{name}` ({kind})", self.op),
            )
        })?;
        read(value).ok_or_else(|| {
            KernelError::new(
                self.op,
                KernelErrorKind::BadParams,
                format!(
                    "{}.{name} must be {kind}, got {} `{value}`",
                    self.op,
                    value.kind()
                ),
            )
        })
    }

    fn usize(&self, name: &str) -> Result<usize, KernelError> {
        self.read(name, ParamValue::as_usize)
    }

    fn i64(&self, name: &str) -> Result<i64, KernelError> {
        self.read(name, ParamValue::as_i64)
    }

    fn f32(&self, name: &str) -> Result<f32, KernelError> {
        self.read(name, ParamValue::as_f32)
    }

    fn f64(&self, name: &str) -> Result<f64, KernelError> {
        self.read(name, ParamValue::as_f64)
    }

    fn bool(&self, name: &str) -> Result<bool, KernelError> {
        self.read(name, ParamValue::as_bool)
    }
}

fn one<T: Scalar>(out: RefTensor<T>) -> Result<Vec<AnyTensor>, ExecError> {
    Ok(vec![T::wrap(out)])
}

fn matmul_entry<T: Element>(
    o: &[Option<Operand>],
    v: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    const OP: &str = "matmul";
    let ops = packed_operands::<T>(OP, MATMUL_INPUTS, o)?;
    let p = Params::new(OP, MATMUL_FIELDS, v)?;
    let params = MatmulParams {
        transpose_a: p.bool("transpose_a")?,
        transpose_b: p.bool("transpose_b")?,
    };
    one(matmul(
        required(OP, &ops, 0)?,
        required(OP, &ops, 1)?,
        &params,
    )?)
}

/// A broadcasting binary kernel (`add`, `mul`).
type Binary<T> = fn(&RefTensor<T>, &RefTensor<T>) -> Result<RefTensor<T>, KernelError>;

fn binary_entry<T: Scalar>(
    op: &'static str,
    f: Binary<T>,
    o: &[Option<Operand>],
    v: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    let ops = packed_operands::<T>(op, BINARY_INPUTS, o)?;
    Params::new(op, &[], v)?;
    one(f(required(op, &ops, 0)?, required(op, &ops, 1)?)?)
}

fn gelu_entry<T: Element>(
    o: &[Option<Operand>],
    v: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    let ops = packed_operands::<T>("gelu", UNARY_INPUTS, o)?;
    Params::new("gelu", &[], v)?;
    one(gelu(required("gelu", &ops, 0)?)?)
}

fn leaky_relu_entry<T: Element>(
    o: &[Option<Operand>],
    v: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    let ops = packed_operands::<T>("leaky_relu", UNARY_INPUTS, o)?;
    let slope = Params::new("leaky_relu", LEAKY_RELU_FIELDS, v)?.f64("negative_slope")?;
    one(leaky_relu(required("leaky_relu", &ops, 0)?, slope)?)
}

fn axis_entry<T: Element>(
    op: &'static str,
    f: fn(&RefTensor<T>, i64) -> Result<RefTensor<T>, KernelError>,
    o: &[Option<Operand>],
    v: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    let ops = packed_operands::<T>(op, UNARY_INPUTS, o)?;
    let axis = Params::new(op, AXIS_FIELDS, v)?.i64("axis")?;
    one(f(required(op, &ops, 0)?, axis)?)
}

fn layer_norm_entry<T: Element>(
    o: &[Option<Operand>],
    v: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    const OP: &str = "layer_norm";
    let ops = packed_operands::<T>(OP, LAYER_NORM_INPUTS, o)?;
    let params = LayerNormParams {
        eps: Params::new(OP, LAYER_NORM_FIELDS, v)?.f32("eps")?,
    };
    let x = required(OP, &ops, 0)?;
    one(layer_norm(
        x,
        optional(&ops, 1),
        optional(&ops, 2),
        &params,
    )?)
}

fn reduce_entry<T: Element>(
    op: &'static str,
    f: fn(&RefTensor<T>, &ReduceParams) -> Result<RefTensor<T>, KernelError>,
    o: &[Option<Operand>],
    v: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    let ops = packed_operands::<T>(op, REDUCE_INPUTS, o)?;
    let p = Params::new(op, REDUCE_FIELDS, v)?;
    let params = ReduceParams {
        axes: p.read("axes", ParamValue::as_i64_list)?,
        keepdim: p.bool("keepdim")?,
    };
    one(f(required(op, &ops, 0)?, &params)?)
}

fn avg_pool2d_entry<T: Element>(
    o: &[Option<Operand>],
    v: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    const OP: &str = "avg_pool2d";
    let ops = packed_operands::<T>(OP, AVG_POOL2D_INPUTS, o)?;
    let p = Params::new(OP, AVG_POOL2D_FIELDS, v)?;
    let params = AvgPool2dParams {
        kernel_size: p.usize("kernel_size")?,
        stride: p.usize("stride")?,
        padding: p.usize("padding")?,
        divisor: p.read("divisor", |v| v.as_enum().and_then(AvgDivisor::from_name))?,
    };
    one(avg_pool2d(required(OP, &ops, 0)?, &params)?)
}

fn transpose_entry<T: Element>(
    o: &[Option<Operand>],
    v: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    const OP: &str = "transpose";
    let ops = packed_operands::<T>(OP, TRANSPOSE_INPUTS, o)?;
    let perm = Params::new(OP, TRANSPOSE_FIELDS, v)?.read("perm", ParamValue::as_usize_list)?;
    one(transpose(required(OP, &ops, 0)?, &perm)?)
}

fn embedding_entry<T: Scalar>(
    o: &[Option<Operand>],
    v: &ParamValues,
) -> Result<Vec<AnyTensor>, ExecError> {
    const OP: &str = "embedding";
    check_operands::<T>(OP, EMBEDDING_INPUTS, o)?;
    Params::new(OP, &[], v)?;
    let ids = required_as::<i64>(OP, EMBEDDING_INPUTS, o, 0)?;
    let weight = required_as::<T>(OP, EMBEDDING_INPUTS, o, 1)?;
    one(embedding(&ids, &weight)?)
}

fn qmatmul_entry(o: &[Option<Operand>], v: &ParamValues) -> Result<Vec<AnyTensor>, ExecError> {
    const OP: &str = "qmatmul";
    let ops = packed_operands::<i8>(OP, QMATMUL_INPUTS, o)?;
    let params = QmatmulParams {
        scale: Params::new(OP, QMATMUL_FIELDS, v)?.f32("scale")?,
    };
    one(qmatmul(
        required(OP, &ops, 0)?,
        required(OP, &ops, 1)?,
        &params,
    )?)
}

entry_points! {
    matmul_f32 = matmul_entry::<f32>;
    matmul_f64 = matmul_entry::<f64>;
    add_f32 = |o, v| binary_entry::<f32>("add", add, o, v);
    add_f64 = |o, v| binary_entry::<f64>("add", add, o, v);
    add_bf16 = |o, v| binary_entry::<bf16>("add", add, o, v);
    add_f16 = |o, v| binary_entry::<f16>("add", add, o, v);
    add_f8e5m2 = |o, v| binary_entry::<F8E5M2>("add", add_e5m2, o, v);
    add_i8 = |o, v| binary_entry::<i8>("add", add_wrapping, o, v);
    add_i32 = |o, v| binary_entry::<i32>("add", add_wrapping, o, v);
    mul_f32 = |o, v| binary_entry::<f32>("mul", mul, o, v);
    mul_f64 = |o, v| binary_entry::<f64>("mul", mul, o, v);
    mul_bf16 = |o, v| binary_entry::<bf16>("mul", mul, o, v);
    mul_f16 = |o, v| binary_entry::<f16>("mul", mul, o, v);
    leaky_relu_f32 = leaky_relu_entry::<f32>;
    leaky_relu_f64 = leaky_relu_entry::<f64>;
    gelu_f32 = gelu_entry::<f32>;
    gelu_f64 = gelu_entry::<f64>;
    softmax_f32 = |o, v| axis_entry::<f32>("softmax", softmax, o, v);
    softmax_f64 = |o, v| axis_entry::<f64>("softmax", softmax, o, v);
    layer_norm_f32 = layer_norm_entry::<f32>;
    layer_norm_f64 = layer_norm_entry::<f64>;
    reduce_sum_f32 = |o, v| reduce_entry::<f32>("reduce_sum", reduce_sum, o, v);
    reduce_sum_f64 = |o, v| reduce_entry::<f64>("reduce_sum", reduce_sum, o, v);
    reduce_mean_f32 = |o, v| reduce_entry::<f32>("reduce_mean", reduce_mean, o, v);
    reduce_mean_f64 = |o, v| reduce_entry::<f64>("reduce_mean", reduce_mean, o, v);
    avg_pool2d_f32 = avg_pool2d_entry::<f32>;
    avg_pool2d_f64 = avg_pool2d_entry::<f64>;
    transpose_f32 = transpose_entry::<f32>;
    transpose_f64 = transpose_entry::<f64>;
    transpose_bf16 = transpose_entry::<bf16>;
    transpose_f16 = transpose_entry::<f16>;
    cumsum_f32 = |o, v| axis_entry::<f32>("cumsum", cumsum, o, v);
    cumsum_f64 = |o, v| axis_entry::<f64>("cumsum", cumsum, o, v);
    embedding_f32 = embedding_entry::<f32>;
    embedding_f64 = embedding_entry::<f64>;
    embedding_bf16 = embedding_entry::<bf16>;
    embedding_f16 = embedding_entry::<f16>;
    qmatmul_i8 = qmatmul_entry;
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod typed_tests;
