//! `conv2d`: direct NCHW 2-D convolution with groups, dilation and an optional bias.
//!
//! [`Conv2dParams`] owns the geometry (validated once, checked arithmetic, errors naming the
//! op, shapes and parameters); [`conv2d`] runs the output-stationary loop nest. `conv2d_simple`
//! reuses both with `groups = 1`, no bias and square stride/padding.

use crate::error::{KernelError, KernelErrorKind};
use crate::ops::common::{
    GatherAxis, axpy_gather, canonical_nans, check_out_numel, ensure, require_nonempty,
    require_rank, valid_range,
};
use crate::ops::tile::{self, ColPhase, ColTap, Gather, GatherPlan, WeightLayout};
use crate::shape::zeroed_vec;
use crate::tensor::{Element, RefTensor};

/// Parameters of [`conv2d`]. Every pair is `(height, width)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv2dParams {
    /// Output step along each axis; each ≥ 1.
    pub stride: (usize, usize),
    /// Symmetric zero padding; padded taps are skipped, never read or summed.
    pub padding: (usize, usize),
    /// Spacing between kernel taps; each ≥ 1. Implemented (not only `(1, 1)`).
    pub dilation: (usize, usize),
    /// Channel groups; `Cin` and `Cout` must be multiples, `weight.dim[1] == Cin / groups`.
    pub groups: usize,
}

impl Default for Conv2dParams {
    fn default() -> Self {
        Conv2dParams {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        }
    }
}

/// A validated `conv2d` geometry, with full-word dimension names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv2dGeometry {
    /// N
    pub batch: usize,
    /// Cin
    pub in_channels: usize,
    /// H
    pub height: usize,
    /// W
    pub width: usize,
    /// Cout
    pub out_channels: usize,
    /// Kh
    pub kernel_height: usize,
    /// Kw
    pub kernel_width: usize,
    /// Hout
    pub out_height: usize,
    /// Wout
    pub out_width: usize,
    /// The parameters the geometry was validated with.
    pub params: Conv2dParams,
}

impl Conv2dGeometry {
    /// `[N, Cout, Hout, Wout]`.
    pub fn out_dims(&self) -> [usize; 4] {
        [
            self.batch,
            self.out_channels,
            self.out_height,
            self.out_width,
        ]
    }
}

/// Names used in messages: the op and what it calls its weight operand.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvNames {
    pub op: &'static str,
    pub weight: &'static str,
}

const CONV2D: ConvNames = ConvNames {
    op: "conv2d",
    weight: "weight",
};

impl Conv2dParams {
    /// The output shape `[N, Cout, Hout, Wout]` for these operand shapes, with
    /// `Hout = (H + 2·ph − (dh·(Kh − 1) + 1)) / sh + 1` (for `dilation = (1, 1)` this is the
    /// seed's `(H + 2·ph − Kh)/sh + 1`) and `Wout` likewise.
    pub fn out_dims(
        &self,
        x_shape: &[usize],
        w_shape: &[usize],
    ) -> Result<[usize; 4], KernelError> {
        self.geometry(x_shape, w_shape, None).map(|g| g.out_dims())
    }

    /// Validates the operand shapes (and the bias shape, if any) against the parameters.
    pub fn geometry(
        &self,
        x_shape: &[usize],
        w_shape: &[usize],
        bias_shape: Option<&[usize]>,
    ) -> Result<Conv2dGeometry, KernelError> {
        self.geometry_named(CONV2D, x_shape, w_shape, bias_shape)
    }

    pub(crate) fn geometry_named(
        &self,
        names: ConvNames,
        x_shape: &[usize],
        w_shape: &[usize],
        bias_shape: Option<&[usize]>,
    ) -> Result<Conv2dGeometry, KernelError> {
        let op = names.op;
        let wname = names.weight;
        let ctx = format!(
            "x {x_shape:?}, {wname} {w_shape:?}, stride {:?}, padding {:?}, dilation {:?}, groups {}",
            self.stride, self.padding, self.dilation, self.groups
        );
        require_rank(op, "x", "N, Cin, H, W", x_shape, &ctx)?;
        require_rank(op, wname, "Cout, Cin/groups, Kh, Kw", w_shape, &ctx)?;
        require_nonempty(op, "x", x_shape, &ctx)?;
        require_nonempty(op, wname, w_shape, &ctx)?;
        let &[batch, in_channels, height, width] = x_shape else {
            return Err(KernelError::new(op, KernelErrorKind::Rank, ctx));
        };
        let &[out_channels, group_in, kernel_height, kernel_width] = w_shape else {
            return Err(KernelError::new(op, KernelErrorKind::Rank, ctx));
        };
        self.check_scalars(op, &ctx)?;
        let groups = self.groups;
        ensure(
            in_channels.is_multiple_of(groups) && out_channels.is_multiple_of(groups),
            op,
            KernelErrorKind::ChannelMismatch,
            || {
                format!(
                    "Cin {in_channels} and Cout {out_channels} must both be divisible by groups {groups}"
                )
            },
            &ctx,
        )?;
        ensure(
            group_in == in_channels / groups,
            op,
            KernelErrorKind::ChannelMismatch,
            || {
                format!(
                    "{wname} {w_shape:?} expects Cin/groups = {group_in}, but x has Cin/groups = {in_channels}/{groups} = {}",
                    in_channels / groups
                )
            },
            &ctx,
        )?;
        check_bias(op, bias_shape, out_channels, &ctx)?;
        let axis = |name, input, kernel, stride, pad, dilation| GatherAxis {
            name,
            input,
            kernel,
            stride,
            pad,
            dilation,
        };
        let (sh, sw) = self.stride;
        let (ph, pw) = self.padding;
        let (dh, dw) = self.dilation;
        let out_height = axis("H", height, kernel_height, sh, ph, dh).out_len(op, &ctx)?;
        let out_width = axis("W", width, kernel_width, sw, pw, dw).out_len(op, &ctx)?;
        let geometry = Conv2dGeometry {
            batch,
            in_channels,
            height,
            width,
            out_channels,
            kernel_height,
            kernel_width,
            out_height,
            out_width,
            params: *self,
        };
        check_out_numel(op, &geometry.out_dims(), &ctx)?;
        Ok(geometry)
    }

    fn check_scalars(&self, op: &'static str, ctx: &str) -> Result<(), KernelError> {
        let (sh, sw) = self.stride;
        let (dh, dw) = self.dilation;
        let stride_ok = sh > 0 && sw > 0;
        ensure(
            stride_ok,
            op,
            KernelErrorKind::ZeroStride,
            || "stride must be >= 1".into(),
            ctx,
        )?;
        let dilation_ok = dh > 0 && dw > 0;
        ensure(
            dilation_ok,
            op,
            KernelErrorKind::BadParams,
            || "dilation must be >= 1".into(),
            ctx,
        )?;
        ensure(
            self.groups > 0,
            op,
            KernelErrorKind::BadParams,
            || "groups must be >= 1".into(),
            ctx,
        )
    }
}

/// Fails unless the bias (if present) is `[Cout]`.
fn check_bias(
    op: &'static str,
    bias_shape: Option<&[usize]>,
    out_channels: usize,
    ctx: &str,
) -> Result<(), KernelError> {
    let Some(bias) = bias_shape else {
        return Ok(());
    };
    require_rank(op, "bias", "Cout", bias, ctx)?;
    ensure(
        bias == [out_channels],
        op,
        KernelErrorKind::ShapeMismatch,
        || format!("bias {bias:?} must be [Cout] = [{out_channels}]"),
        ctx,
    )
}

/// Direct 2-D convolution: `x [N, Cin, H, W]`, `weight [Cout, Cin/groups, Kh, Kw]`, optional
/// `bias [Cout]` → `[N, Cout, Hout, Wout]` (see [`Conv2dParams::out_dims`]).
///
/// Exact arithmetic, in `T` (no widening): for each output element, with `g = co / (Cout/groups)`,
///
/// ```text
/// acc = T::zero()
/// for ci in 0..Cin/groups, kh in 0..Kh, kw in 0..Kw (in that order):
///     ih = oh·sh + kh·dh − ph;  iw = ow·sw + kw·dw − pw
///     if 0 ≤ ih < H and 0 ≤ iw < W:            // padding taps are skipped entirely
///         acc = acc + x[n, g·Cin/groups + ci, ih, iw] · weight[co, ci, kh, kw]
/// out = acc + bias[co]   if bias is present, else acc
/// ```
///
/// with a separate multiply and add (never FMA). The loops are reordered to run across output
/// columns for a fixed tap, but each output still adds its terms in exactly this order, so the
/// result is bitwise the naive nested sum. A NaN or Inf weight on a skipped tap never reaches
/// the sum. Every NaN output is the canonical quiet NaN `T::nan()` (which NaN a sum of two
/// NaNs yields is up to the compiler's operand order, so it is not part of the result).
pub fn conv2d<T: Element>(
    x: &RefTensor<T>,
    weight: &RefTensor<T>,
    bias: Option<&RefTensor<T>>,
    params: &Conv2dParams,
) -> Result<RefTensor<T>, KernelError> {
    conv2d_named(CONV2D, x, weight, bias, params)
}

/// [`conv2d`] on `threads` threads (`0` and `1` both mean the calling thread only), splitting
/// the work over images and output channels. Every output is computed by the same
/// instructions whatever the split, so the result is bitwise equal to [`conv2d`]'s.
pub fn conv2d_threaded<T: Element>(
    x: &RefTensor<T>,
    weight: &RefTensor<T>,
    bias: Option<&RefTensor<T>>,
    params: &Conv2dParams,
    threads: usize,
) -> Result<RefTensor<T>, KernelError> {
    conv2d_run(CONV2D, x, weight, bias, params, threads)
}

pub(crate) fn conv2d_named<T: Element>(
    names: ConvNames,
    x: &RefTensor<T>,
    weight: &RefTensor<T>,
    bias: Option<&RefTensor<T>>,
    params: &Conv2dParams,
) -> Result<RefTensor<T>, KernelError> {
    conv2d_run(names, x, weight, bias, params, 1)
}

fn conv2d_run<T: Element>(
    names: ConvNames,
    x: &RefTensor<T>,
    weight: &RefTensor<T>,
    bias: Option<&RefTensor<T>>,
    params: &Conv2dParams,
    threads: usize,
) -> Result<RefTensor<T>, KernelError> {
    let bias_shape = bias.map(RefTensor::shape);
    let g = params.geometry_named(names, x.shape(), weight.shape(), bias_shape)?;
    let out_dims = g.out_dims();
    if let Some(out) = tile::run(&gather(&g), x, weight, bias, threads) {
        return Ok(RefTensor::from_vec(out, &out_dims)?);
    }
    fkc_provider::call::took("conv2d.scalar-fallback");
    let plane = g.out_height * g.out_width;
    let mut out = zeroed_vec::<T>(g.batch * g.out_channels * plane)?;
    for (image, out_image) in out.chunks_exact_mut(g.out_channels * plane).enumerate() {
        for (co, acc) in out_image.chunks_exact_mut(plane).enumerate() {
            accumulate_channel(&g, x.data(), weight.data(), image, co, acc);
            if let Some(b) = bias
                && !crate::mutants::active(crate::mutants::Mutant::FallbackDropsBias)
            {
                let b = b.data()[co];
                acc.iter_mut().for_each(|a| *a = *a + b);
            }
        }
    }
    canonical_nans(&mut out);
    Ok(RefTensor::from_vec(out, &out_dims)?)
}

/// The gather form of a validated geometry: output row `oh` takes kernel rows `kh` ascending
/// with `ih = oh·sh + kh·dh − ph` inside the input; output column `ow` takes kernel columns
/// `kw` ascending, reading padded position `ow·sw + kw·dw` (input column plus `pw`), which the
/// buffer stores split into `sw` phases so that consecutive outputs read consecutive elements.
pub(crate) fn gather(g: &Conv2dGeometry) -> Gather {
    let p = &g.params;
    let (sh, sw) = p.stride;
    let (dh, dw) = p.dilation;
    let (ph, pw) = p.padding;
    let rows = (0..g.out_height)
        .map(|oh| {
            (0..g.kernel_height)
                .filter_map(|kh| {
                    let pos = oh * sh + kh * dh;
                    let ih = pos.checked_sub(ph)?;
                    (ih < g.height).then_some((kh, ih))
                })
                .collect()
        })
        .collect();
    let taps = (0..g.kernel_width)
        .map(|kw| ColTap {
            kw,
            phase: (kw * dw) % sw,
            start: (kw * dw) / sw,
            valid: valid_range(g.out_width, g.width, sw, kw * dw, pw),
        })
        .filter(|t| !t.valid.is_empty())
        .collect();
    let plan = GatherPlan {
        weights: WeightLayout::Conv,
        phases: sw,
        left: pw,
        rows,
        cols: vec![ColPhase {
            taps,
            count: g.out_width,
            out_base: 0,
        }],
        out_step: 1,
    };
    Gather::new(
        [g.batch, g.in_channels, g.height, g.width],
        g.out_dims(),
        [g.kernel_height, g.kernel_width],
        p.groups,
        plan,
    )
}

/// Adds every valid tap of output channel `co` of image `n` into its zeroed output plane.
fn accumulate_channel<T: Element>(
    g: &Conv2dGeometry,
    x: &[T],
    weight: &[T],
    n: usize,
    co: usize,
    acc: &mut [T],
) {
    let p = &g.params;
    let group_in = g.in_channels / p.groups;
    let group = co / (g.out_channels / p.groups);
    let in_plane = g.height * g.width;
    let taps = g.kernel_height * g.kernel_width;
    let interleaved = crate::mutants::active(crate::mutants::Mutant::FallbackGroupsInterleaved);
    for ci in 0..group_in {
        let channel = match interleaved {
            true => ci * p.groups + group,
            false => group * group_in + ci,
        };
        let x_plane = &x[(n * g.in_channels + channel) * in_plane..][..in_plane];
        let w_taps = &weight[(co * group_in + ci) * taps..][..taps];
        for kh in 0..g.kernel_height {
            let rows = valid_range(
                g.out_height,
                g.height,
                p.stride.0,
                kh * p.dilation.0,
                p.padding.0,
            );
            for kw in 0..g.kernel_width {
                let row_stride_bug = crate::mutants::Mutant::FallbackColumnsByRowStride;
                let column_stride = match crate::mutants::active(row_stride_bug) {
                    true => p.stride.0,
                    false => p.stride.1,
                };
                let cols = valid_range(
                    g.out_width,
                    g.width,
                    column_stride,
                    kw * p.dilation.1,
                    p.padding.1,
                );
                if cols.is_empty() {
                    continue;
                }
                let w = w_taps[kh * g.kernel_width + kw];
                let iw0 = cols.start * p.stride.1 + kw * p.dilation.1 - p.padding.1;
                for oh in rows.clone() {
                    let ih = oh * p.stride.0 + kh * p.dilation.0 - p.padding.0;
                    let x_row = &x_plane[ih * g.width + iw0..(ih + 1) * g.width];
                    let acc_row = &mut acc[oh * g.out_width..][cols.clone()];
                    axpy_gather(acc_row, x_row, p.stride.1, w);
                }
            }
        }
    }
}
