//! demo-provider: how a kernel author brings their own kernels to mdbook-fkc.
//!
//! The crate exports a link registry, [`REGISTRY`], built on `fkc-provider`, and a three-line
//! `fkc-provider` binary serves it. Its kernels are written independently of the reference
//! backend: `relu` (F32, F64); `conv2d_im2col` (F32), a convolution computed as im2col
//! columns times the weights in blocks of output pixels, accumulated in f64 and rounded to f32
//! once ("f32 widening") — so its sums are *not* the reference's nested f32 sums, and the gate
//! holds it to the error bound its contract states; and `matmul` (F32), an op kind mdbook-fkc
//! knows nothing about, checked through the pseudo-code of its contract's `semantics` alone. [`lying`] and [`crashing`] are fixtures for
//! mdbook-fkc's own tests.

#![forbid(unsafe_code)]

pub mod crashing;
pub mod lying;

use fkc_provider::{
    AnyTensor, DType, FieldDesc, KernelErrorKind, KernelRef, Operand, OperandDesc, ParamKind,
    ParamValue, ParamValues, Registry, Rejection,
};

/// `relu`'s operand: a matrix.
const MATRIX: &[OperandDesc] = &[OperandDesc::required("x", 2)];
/// `conv2d_im2col`'s operands: `x [N, Cin, H, W]`, `weight [Cout, Cin, Kh, Kw]`.
const CONV_INPUTS: &[OperandDesc] = &[
    OperandDesc::required("x", 4),
    OperandDesc::required("weight", 4),
];
const CONV_FIELDS: &[FieldDesc] = &[
    FieldDesc::new("stride", ParamKind::UsizePair, "(sh, sw), each >= 1"),
    FieldDesc::new("padding", ParamKind::UsizePair, "zero padding (ph, pw)"),
];
const OUT: &[&str] = &["out"];
/// `matmul`'s operands: `a [M, K]`, `b [K, N]`.
const MATMUL_INPUTS: &[OperandDesc] =
    &[OperandDesc::required("a", 2), OperandDesc::required("b", 2)];

/// The demo's link registry.
pub static REGISTRY: Registry = Registry {
    name: "demo-provider",
    path: "demo_provider::REGISTRY",
    crate_name: "demo_provider",
    revision: env!("CARGO_PKG_VERSION"),
    op_kinds: &[],
    variants: &[],
    entry_points: &[
        entry(
            "demo_provider::relu_f32",
            "relu",
            DType::F32,
            "Relu",
            MATRIX,
            &[],
            relu,
        ),
        entry(
            "demo_provider::relu_f64",
            "relu",
            DType::F64,
            "Relu",
            MATRIX,
            &[],
            relu,
        ),
        entry(
            "demo_provider::conv2d_im2col_f32",
            "conv2d_im2col",
            DType::F32,
            "Conv2D",
            CONV_INPUTS,
            CONV_FIELDS,
            conv2d_im2col,
        ),
        entry(
            "demo_provider::matmul_f32",
            "matmul",
            DType::F32,
            "MatMul",
            MATMUL_INPUTS,
            &[],
            matmul,
        ),
    ],
    executor: None,
    levels: None,
};

/// One entry point of the demo's registries.
pub const fn entry(
    symbol: &'static str,
    kernel: &'static str,
    dtype: DType,
    op_kind: &'static str,
    inputs: &'static [OperandDesc],
    params: &'static [FieldDesc],
    call: fkc_provider::EntryFn,
) -> KernelRef {
    KernelRef {
        symbol,
        kernel,
        dtype,
        op_kind: Some(op_kind),
        inputs,
        outputs: OUT,
        params,
        call,
    }
}

/// The present operands, checked: as many as `want`, contiguous, all of one dtype.
pub fn contiguous_operands<'a>(
    op: &str,
    operands: &'a [Option<Operand>],
    want: usize,
) -> Result<Vec<&'a Operand>, Rejection> {
    let present: Vec<&Operand> = operands.iter().flatten().collect();
    if present.len() != want || operands.len() != want {
        return Err(Rejection::new(
            KernelErrorKind::MissingOperand,
            format!("{op}: takes {want} operands, got {}", present.len()),
        ));
    }
    if let Some(awkward) = present.iter().find(|o| !o.is_contiguous()) {
        return Err(Rejection::new(
            KernelErrorKind::Layout,
            format!("{op}: operand is not contiguous ({})", awkward.layout()),
        ));
    }
    Ok(present)
}

/// Fails unless every operand has the dtype of the symbol (`dtype`).
fn require_dtype(op: &str, operands: &[&Operand], dtype: DType) -> Result<(), Rejection> {
    match operands.iter().find(|o| o.dtype() != dtype) {
        Some(o) => Err(Rejection::new(
            KernelErrorKind::DType,
            format!("{op}: operand is {}, expected {dtype}", o.dtype()),
        )),
        None => Ok(()),
    }
}

/// `max(x, 0)` elementwise; NaN stays NaN, -0.0 stays -0.0. The dtype is the operand's, and the
/// symbol's suffix names the one it must be.
fn relu(operands: &[Option<Operand>], params: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
    reject_params("relu", params, &[])?;
    let [x] = contiguous_operands("relu", operands, 1)?[..] else {
        return Err(Rejection::new(KernelErrorKind::MissingOperand, "relu: x"));
    };
    if !matches!(x.dtype(), DType::F32 | DType::F64) {
        return Err(Rejection::new(
            KernelErrorKind::DType,
            format!("relu: {} is not supported", x.dtype()),
        ));
    }
    let values: Vec<f64> = x
        .packed()?
        .to_f64_vec()
        .into_iter()
        .map(|v| if v < 0.0 { 0.0 } else { v })
        .collect();
    Ok(vec![AnyTensor::from_f64(x.dtype(), x.shape(), &values)?])
}

/// Fails on a parameter that is not one of `fields`.
pub fn reject_params(op: &str, params: &ParamValues, fields: &[&str]) -> Result<(), Rejection> {
    match params.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(k) => Err(Rejection::new(
            KernelErrorKind::BadParams,
            format!("{op}: unknown parameter `{k}`"),
        )),
        None => Ok(()),
    }
}

/// Reads a `(usize, usize)` parameter.
pub fn pair(op: &str, params: &ParamValues, name: &str) -> Result<(usize, usize), Rejection> {
    match params.get(name) {
        Some(ParamValue::Pair(a, b)) => Ok((*a, *b)),
        _ => Err(Rejection::new(
            KernelErrorKind::BadParams,
            format!("{op}: `{name}` must be given as (usize, usize)"),
        )),
    }
}

/// The convolution's geometry, validated.
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    pub batch: usize,
    pub in_channels: usize,
    pub height: usize,
    pub width: usize,
    pub out_channels: usize,
    pub kernel_height: usize,
    pub kernel_width: usize,
    pub stride: (usize, usize),
    pub padding: (usize, usize),
    pub out_height: usize,
    pub out_width: usize,
}

impl Geometry {
    /// Validates shapes and parameters (checked arithmetic; every failure a rejection).
    pub fn new(x: &[usize], w: &[usize], params: &ParamValues) -> Result<Geometry, Rejection> {
        let bad = |kind, message: String| Rejection::new(kind, format!("conv2d_im2col: {message}"));
        let (&[batch, in_channels, height, width], &[out_channels, w_in, kh, kw]) = (x, w) else {
            return Err(bad(
                KernelErrorKind::Rank,
                "x and weight must be rank 4".into(),
            ));
        };
        // Like its oracle (the reference backend's conv2d), it takes no empty operand.
        if x.contains(&0) || w.contains(&0) {
            return Err(bad(
                KernelErrorKind::ZeroSize,
                format!("an empty operand: x {x:?}, weight {w:?}"),
            ));
        }
        if w_in != in_channels {
            return Err(bad(
                KernelErrorKind::ChannelMismatch,
                format!("weight has {w_in} input channels, x has {in_channels}"),
            ));
        }
        let stride = pair("conv2d_im2col", params, "stride")?;
        let padding = pair("conv2d_im2col", params, "padding")?;
        if stride.0 == 0 || stride.1 == 0 {
            return Err(bad(
                KernelErrorKind::ZeroStride,
                format!("stride {stride:?}"),
            ));
        }
        let out = |size: usize, k: usize, s: usize, p: usize| {
            size.checked_add(p.checked_mul(2)?)?
                .checked_sub(k)
                .map(|span| span / s + 1)
        };
        let (Some(out_height), Some(out_width)) = (
            out(height, kh, stride.0, padding.0),
            out(width, kw, stride.1, padding.1),
        ) else {
            return Err(bad(
                KernelErrorKind::KernelTooLarge,
                format!("a {kh}x{kw} kernel does not fit {height}x{width} padded by {padding:?}"),
            ));
        };
        Ok(Geometry {
            batch,
            in_channels,
            height,
            width,
            out_channels,
            kernel_height: kh,
            kernel_width: kw,
            stride,
            padding,
            out_height,
            out_width,
        })
    }
}

/// Output pixels per block of the multiply loop.
const BLOCK: usize = 64;

/// Convolution as im2col columns times the weight matrix, in f64, rounded to f32 once.
fn conv2d_im2col(
    operands: &[Option<Operand>],
    params: &ParamValues,
) -> Result<Vec<AnyTensor>, Rejection> {
    reject_params("conv2d_im2col", params, &["stride", "padding"])?;
    let present = contiguous_operands("conv2d_im2col", operands, 2)?;
    require_dtype("conv2d_im2col", &present, DType::F32)?;
    let [x, w] = present[..] else {
        return Err(Rejection::new(KernelErrorKind::MissingOperand, "x, weight"));
    };
    let g = Geometry::new(x.shape(), w.shape(), params)?;
    let (xs, ws) = (x.packed()?.to_f64_vec(), w.packed()?.to_f64_vec());
    let taps = g.in_channels * g.kernel_height * g.kernel_width;
    let pixels = g.out_height * g.out_width;
    let mut out = vec![0.0f64; g.batch * g.out_channels * pixels];
    for n in 0..g.batch {
        let columns = im2col(&g, &xs, n);
        for co in 0..g.out_channels {
            let row = &ws[co * taps..(co + 1) * taps];
            let target = &mut out[(n * g.out_channels + co) * pixels..][..pixels];
            for (block, chunk) in target.chunks_mut(BLOCK).enumerate() {
                for (k, weight) in row.iter().enumerate() {
                    let column = &columns[k * pixels + block * BLOCK..][..chunk.len()];
                    // A padding tap is skipped, not multiplied: 0 × Inf would be NaN.
                    for (acc, value) in chunk
                        .iter_mut()
                        .zip(column)
                        .filter_map(|(a, v)| Some((a, (*v)?)))
                    {
                        *acc += weight * value;
                    }
                }
            }
        }
    }
    let shape = [g.batch, g.out_channels, g.out_height, g.out_width];
    Ok(vec![AnyTensor::from_f64(DType::F32, &shape, &out)?])
}

/// The `[Cin·Kh·Kw, Hout·Wout]` column matrix of batch item `n` (`None` where a tap falls in the
/// padding).
fn im2col(g: &Geometry, xs: &[f64], n: usize) -> Vec<Option<f64>> {
    let pixels = g.out_height * g.out_width;
    let mut columns = vec![None; g.in_channels * g.kernel_height * g.kernel_width * pixels];
    for c in 0..g.in_channels {
        for i in 0..g.kernel_height {
            for j in 0..g.kernel_width {
                let k = (c * g.kernel_height + i) * g.kernel_width + j;
                for oh in 0..g.out_height {
                    for ow in 0..g.out_width {
                        let h = (oh * g.stride.0 + i).checked_sub(g.padding.0);
                        let v = (ow * g.stride.1 + j).checked_sub(g.padding.1);
                        if let (Some(h), Some(v)) = (h, v)
                            && h < g.height
                            && v < g.width
                        {
                            columns[k * pixels + oh * g.out_width + ow] =
                                Some(xs[((n * g.in_channels + c) * g.height + h) * g.width + v]);
                        }
                    }
                }
            }
        }
    }
    columns
}

/// Partial sums per output element of [`matmul`].
const PARTIALS: usize = 4;

/// `a · b` in f32: each element's products go round-robin into [`PARTIALS`] f32 partial sums
/// (term `k` into sum `k mod 4`), added pairwise at the end — not the left-to-right order of
/// the contract's semantics, so its contract claims a tolerance, not bits.
fn matmul(operands: &[Option<Operand>], params: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
    reject_params("matmul", params, &[])?;
    let present = contiguous_operands("matmul", operands, 2)?;
    require_dtype("matmul", &present, DType::F32)?;
    let [a, b] = present[..] else {
        return Err(Rejection::new(
            KernelErrorKind::MissingOperand,
            "matmul: a, b",
        ));
    };
    let (&[m, k], &[k_b, n]) = (a.shape(), b.shape()) else {
        return Err(Rejection::new(
            KernelErrorKind::Rank,
            "matmul: a and b must be rank 2",
        ));
    };
    if k_b != k {
        return Err(Rejection::new(
            KernelErrorKind::ShapeMismatch,
            format!("matmul: a is {m}x{k}, b is {k_b}x{n}"),
        ));
    }
    let narrow = |values: Vec<f64>| -> Vec<f32> { values.into_iter().map(|v| v as f32).collect() };
    let (av, bv) = (
        narrow(a.packed()?.to_f64_vec()),
        narrow(b.packed()?.to_f64_vec()),
    );
    let mut out = Vec::with_capacity(m.saturating_mul(n));
    for row in av.chunks(k.max(1)).take(m) {
        for j in 0..n {
            let mut partial = [0.0f32; PARTIALS];
            let column = bv.iter().skip(j).step_by(n.max(1));
            for (term, (x, y)) in row.iter().zip(column).enumerate() {
                partial[term % PARTIALS] += x * y;
            }
            let [p0, p1, p2, p3] = partial;
            out.push(f64::from((p0 + p1) + (p2 + p3)));
        }
    }
    if k == 0 {
        out = vec![0.0; m.saturating_mul(n)];
    }
    Ok(vec![AnyTensor::from_f64(DType::F32, &[m, n], &out)?])
}
