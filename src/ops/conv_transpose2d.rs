//! `conv_transpose2d`: scatter-form NCHW 2-D transposed convolution with groups, dilation and
//! output padding.
//!
//! [`ConvTranspose2dParams`] owns the output-size formula and its checks; [`conv_transpose2d`]
//! scatters every input pixel through every kernel tap into a zeroed output, in a documented
//! order that fixes each output's summation order.

use crate::error::{KernelError, KernelErrorKind};
use crate::ops::common::{
    add, axpy_scatter, canonical_nans, check_out_numel, ensure, in_context, mul, require_nonempty,
    require_rank, valid_range,
};
use crate::ops::tile::{self, ColPhase, ColTap, Gather, GatherPlan, WeightLayout};
use crate::shape::zeroed_vec;
use crate::tensor::{Element, RefTensor};

const OP: &str = "conv_transpose2d";

/// Parameters of [`conv_transpose2d`]. Every pair is `(height, width)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvTranspose2dParams {
    /// Input step in the output; each ≥ 1.
    pub stride: (usize, usize),
    /// Cropped from both ends of the produced output; `2·padding` may not exceed the produced
    /// (unpadded) size.
    pub padding: (usize, usize),
    /// Extra rows/columns at the bottom/right; each must be `< stride` or `< dilation` (per axis).
    pub output_padding: (usize, usize),
    /// Spacing between kernel taps; each ≥ 1.
    pub dilation: (usize, usize),
    /// Channel groups; `Cin` must be a multiple.
    pub groups: usize,
}

impl Default for ConvTranspose2dParams {
    fn default() -> Self {
        ConvTranspose2dParams {
            stride: (1, 1),
            padding: (0, 0),
            output_padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        }
    }
}

/// A validated `conv_transpose2d` geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvTranspose2dGeometry {
    /// N
    pub batch: usize,
    /// Cin
    pub in_channels: usize,
    /// H
    pub height: usize,
    /// W
    pub width: usize,
    /// Cout = `weight.dim[1] · groups`
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
    pub params: ConvTranspose2dParams,
}

impl ConvTranspose2dGeometry {
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

/// One output axis: `produced = (input − 1)·stride + dilation·(kernel − 1) + 1`, then
/// `out = produced − 2·pad + output_pad`.
struct ScatterAxis {
    name: &'static str,
    input: usize,
    kernel: usize,
    stride: usize,
    pad: usize,
    output_pad: usize,
    dilation: usize,
}

impl ScatterAxis {
    fn out_len(&self, ctx: &str) -> Result<usize, KernelError> {
        let name = self.name;
        let (stride, dilation, output_pad) = (self.stride, self.dilation, self.output_pad);
        ensure(
            output_pad < stride || output_pad < dilation,
            OP,
            KernelErrorKind::BadParams,
            || {
                format!(
                    "{name}: output_padding {output_pad} must be smaller than stride {stride} or dilation {dilation}"
                )
            },
            ctx,
        )?;
        let sizes = || -> Result<(usize, usize), KernelError> {
            let steps = mul(OP, self.input.saturating_sub(1), stride, "(H - 1) * stride")?;
            let taps = mul(
                OP,
                dilation,
                self.kernel.saturating_sub(1),
                "dilation * (K - 1)",
            )?;
            let produced = add(OP, steps, taps, "produced size")?;
            let produced = add(OP, produced, 1, "produced size")?;
            Ok((produced, mul(OP, 2, self.pad, "2 * padding")?))
        };
        let (produced, crop) = sizes().map_err(|e| in_context(e, ctx))?;
        ensure(
            crop <= produced,
            OP,
            KernelErrorKind::PaddingTooLarge,
            || format!("{name}: 2 * padding = {crop} exceeds the produced size {produced}"),
            ctx,
        )?;
        let out =
            add(OP, produced - crop, output_pad, "output size").map_err(|e| in_context(e, ctx))?;
        ensure(
            out > 0,
            OP,
            KernelErrorKind::PaddingTooLarge,
            || format!("{name}: padding {} leaves an empty output", self.pad),
            ctx,
        )?;
        Ok(out)
    }
}

impl ConvTranspose2dParams {
    /// The output shape `[N, Cout, Hout, Wout]` with `Cout = weight.dim[1]·groups` and
    /// `Hout = (H − 1)·sh − 2·ph + dh·(Kh − 1) + oph + 1` (the seed's formula), `Wout` likewise,
    /// computed with checked arithmetic.
    pub fn out_dims(
        &self,
        x_shape: &[usize],
        w_shape: &[usize],
    ) -> Result<[usize; 4], KernelError> {
        self.geometry(x_shape, w_shape).map(|g| g.out_dims())
    }

    /// Validates the operand shapes against the parameters.
    pub fn geometry(
        &self,
        x_shape: &[usize],
        w_shape: &[usize],
    ) -> Result<ConvTranspose2dGeometry, KernelError> {
        let ctx = format!(
            "x {x_shape:?}, weight {w_shape:?}, stride {:?}, padding {:?}, output_padding {:?}, dilation {:?}, groups {}",
            self.stride, self.padding, self.output_padding, self.dilation, self.groups
        );
        require_rank(OP, "x", "N, Cin, H, W", x_shape, &ctx)?;
        require_rank(OP, "weight", "Cin, Cout/groups, Kh, Kw", w_shape, &ctx)?;
        require_nonempty(OP, "x", x_shape, &ctx)?;
        require_nonempty(OP, "weight", w_shape, &ctx)?;
        let &[batch, in_channels, height, width] = x_shape else {
            return Err(KernelError::new(OP, KernelErrorKind::Rank, ctx));
        };
        let &[w_in, group_out, kernel_height, kernel_width] = w_shape else {
            return Err(KernelError::new(OP, KernelErrorKind::Rank, ctx));
        };
        self.check_scalars(&ctx)?;
        let groups = self.groups;
        ensure(
            w_in == in_channels,
            OP,
            KernelErrorKind::ChannelMismatch,
            || format!("weight {w_shape:?} has dim[0] = {w_in}, but x has Cin = {in_channels}"),
            &ctx,
        )?;
        ensure(
            in_channels.is_multiple_of(groups),
            OP,
            KernelErrorKind::ChannelMismatch,
            || format!("Cin {in_channels} must be divisible by groups {groups}"),
            &ctx,
        )?;
        let out_channels = mul(OP, group_out, groups, "Cout = weight.dim[1] * groups")
            .map_err(|e| in_context(e, &ctx))?;
        let axis = |name, input, kernel, i: usize| ScatterAxis {
            name,
            input,
            kernel,
            stride: [self.stride.0, self.stride.1][i],
            pad: [self.padding.0, self.padding.1][i],
            output_pad: [self.output_padding.0, self.output_padding.1][i],
            dilation: [self.dilation.0, self.dilation.1][i],
        };
        let out_height = axis("H", height, kernel_height, 0).out_len(&ctx)?;
        let out_width = axis("W", width, kernel_width, 1).out_len(&ctx)?;
        let geometry = ConvTranspose2dGeometry {
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
        check_out_numel(OP, &geometry.out_dims(), &ctx)?;
        Ok(geometry)
    }

    fn check_scalars(&self, ctx: &str) -> Result<(), KernelError> {
        let (sh, sw) = self.stride;
        let (dh, dw) = self.dilation;
        let stride_ok = sh > 0 && sw > 0;
        ensure(
            stride_ok,
            OP,
            KernelErrorKind::ZeroStride,
            || "stride must be >= 1".into(),
            ctx,
        )?;
        let dilation_ok = dh > 0 && dw > 0;
        ensure(
            dilation_ok,
            OP,
            KernelErrorKind::BadParams,
            || "dilation must be >= 1".into(),
            ctx,
        )?;
        ensure(
            self.groups > 0,
            OP,
            KernelErrorKind::BadParams,
            || "groups must be >= 1".into(),
            ctx,
        )
    }
}

/// Transposed 2-D convolution: `x [N, Cin, H, W]`, `weight [Cin, Cout/groups, Kh, Kw]` →
/// `[N, Cout, Hout, Wout]` (see [`ConvTranspose2dParams::out_dims`]). No bias.
///
/// Exact arithmetic, in `T` (no widening): the output starts at `T::zero()` and the scatter
///
/// ```text
/// for n, g in 0..groups, ci in 0..Cin/groups, ih, iw, co in 0..Cout/groups, kh, kw (in that order):
///     oh = ih·sh + kh·dh − ph;  ow = iw·sw + kw·dw − pw
///     if 0 ≤ oh < Hout and 0 ≤ ow < Wout:
///         out[n, g·Cout/groups + co, oh, ow] += x[n, g·Cin/groups + ci, ih, iw] · weight[g·Cin/groups + ci, co, kh, kw]
/// ```
///
/// is applied (`a = a + x·w`, separate multiply and add). Hence each output element is
/// `((0 + t₁) + t₂) + …` over its terms in ascending `(ci, ih, iw)` order — equivalently
/// ascending `ci`, then descending `kh`, then descending `kw`. The implementation loops
/// `co, ci, kh↓, kw↓, ih, iw` to vectorise along `iw`, which adds each output's terms in that
/// same order, so it is bitwise equal to the scatter above.
///
/// For `f32`, `f64`, `bf16` and `f16` the kernel runs as a gather instead: for each output it
/// visits ascending `ci`, then descending `kh`, then descending `kw`, keeping only the taps
/// with `oh + ph − kh·dh` and `ow + pw − kw·dw` divisible by the strides and landing inside
/// the input — the same terms in the same order, so bitwise the same result. Every NaN
/// output is the canonical quiet NaN `T::nan()`, as in [`crate::ops::conv2d::conv2d`].
pub fn conv_transpose2d<T: Element>(
    x: &RefTensor<T>,
    weight: &RefTensor<T>,
    params: &ConvTranspose2dParams,
) -> Result<RefTensor<T>, KernelError> {
    conv_transpose2d_threaded(x, weight, params, 1)
}

/// [`conv_transpose2d`] on `threads` threads (`0` and `1` both mean the calling thread only),
/// splitting the work over images and output channels; bitwise equal to one thread.
pub fn conv_transpose2d_threaded<T: Element>(
    x: &RefTensor<T>,
    weight: &RefTensor<T>,
    params: &ConvTranspose2dParams,
    threads: usize,
) -> Result<RefTensor<T>, KernelError> {
    let g = params.geometry(x.shape(), weight.shape())?;
    let out_dims = g.out_dims();
    if let Some(gather) = gather(&g)
        && let Some(out) = tile::run(&gather, x, weight, None, threads)
    {
        return Ok(RefTensor::from_vec(out, &out_dims)?);
    }
    fkc_provider::call::took("conv_transpose2d.scatter-fallback");
    let plane = g.out_height * g.out_width;
    let mut out = zeroed_vec::<T>(g.batch * g.out_channels * plane)?;
    for (n, out_image) in out.chunks_exact_mut(g.out_channels * plane).enumerate() {
        for (co, acc) in out_image.chunks_exact_mut(plane).enumerate() {
            scatter_channel(&g, x.data(), weight.data(), n, co, acc);
        }
    }
    canonical_nans(&mut out);
    Ok(RefTensor::from_vec(out, &out_dims)?)
}

/// The gather form: output row `oh` takes `kh` descending with `oh + ph − kh·dh = ih·sh`,
/// `0 ≤ ih < H`. Output columns split into `sw` phases `ow = j·sw + c`; in phase `c`, column
/// tap `kw` (descending) is live when `c + pw − kw·dw = e·sw` and reads input column `j + e`,
/// which the (single-phase) buffer stores at `j + e + left`. `None` if an offset overflows.
fn gather(g: &ConvTranspose2dGeometry) -> Option<Gather> {
    let p = &g.params;
    let (sh, sw) = p.stride;
    let (dh, dw) = p.dilation;
    let (ph, pw) = p.padding;
    let signed = |v: usize| isize::try_from(v).ok();
    let mut rows = Vec::with_capacity(g.out_height);
    for oh in 0..g.out_height {
        let mut taps = Vec::new();
        for kh in (0..g.kernel_height).rev() {
            let num = signed(oh.checked_add(ph)?)? - signed(kh.checked_mul(dh)?)?;
            let stride = signed(sh)?;
            if num >= 0 && num % stride == 0 {
                let ih = (num / stride) as usize;
                if ih < g.height {
                    taps.push((kh, ih));
                }
            }
        }
        rows.push(taps);
    }
    // Input column j + e ≥ j − (Kw − 1)·dw / sw, so this margin keeps every load in the buffer.
    let left = (g.kernel_width - 1).checked_mul(dw)?.div_ceil(sw) + 1;
    let (width, stride) = (signed(g.width)?, signed(sw)?);
    let mut cols = Vec::new();
    for c in 0..sw.min(g.out_width) {
        let count = (g.out_width - c).div_ceil(sw);
        let mut taps = Vec::new();
        for kw in (0..g.kernel_width).rev() {
            let num = signed(c.checked_add(pw)?)? - signed(kw.checked_mul(dw)?)?;
            if num % stride != 0 {
                continue;
            }
            let e = num / stride;
            // 0 ≤ j + e < W.
            let lo = (-e).max(0);
            let hi = (width - e).clamp(0, signed(count)?);
            if lo >= hi {
                continue;
            }
            taps.push(ColTap {
                kw,
                phase: 0,
                start: usize::try_from(signed(left)? + e).ok()?,
                valid: lo as usize..hi as usize,
            });
        }
        cols.push(ColPhase {
            taps,
            count,
            out_base: c,
        });
    }
    let plan = GatherPlan {
        weights: WeightLayout::Transposed,
        phases: 1,
        left,
        rows,
        cols,
        out_step: sw,
    };
    Some(Gather::new(
        [g.batch, g.in_channels, g.height, g.width],
        g.out_dims(),
        [g.kernel_height, g.kernel_width],
        p.groups,
        plan,
    ))
}

/// Adds every term of output channel `co` of image `n` into its zeroed output plane.
fn scatter_channel<T: Element>(
    g: &ConvTranspose2dGeometry,
    x: &[T],
    weight: &[T],
    n: usize,
    co: usize,
    acc: &mut [T],
) {
    let p = &g.params;
    let group_in = g.in_channels / p.groups;
    let group_out = g.out_channels / p.groups;
    let (group, co_local) = (co / group_out, co % group_out);
    let in_plane = g.height * g.width;
    let taps = g.kernel_height * g.kernel_width;
    for ci in 0..group_in {
        let channel = group * group_in + ci;
        let x_plane = &x[(n * g.in_channels + channel) * in_plane..][..in_plane];
        let w_taps = &weight[(channel * group_out + co_local) * taps..][..taps];
        for kh in (0..g.kernel_height).rev() {
            let rows = valid_range(
                g.height,
                g.out_height,
                p.stride.0,
                kh * p.dilation.0,
                p.padding.0,
            );
            for kw in (0..g.kernel_width).rev() {
                let cols = valid_range(
                    g.width,
                    g.out_width,
                    p.stride.1,
                    kw * p.dilation.1,
                    p.padding.1,
                );
                if cols.is_empty() {
                    continue;
                }
                let w = w_taps[kh * g.kernel_width + kw];
                let ow0 = cols.start * p.stride.1 + kw * p.dilation.1 - p.padding.1;
                for ih in rows.clone() {
                    let oh = ih * p.stride.0 + kh * p.dilation.0 - p.padding.0;
                    let x_row = &x_plane[ih * g.width..][cols.clone()];
                    let acc_row = &mut acc[oh * g.out_width + ow0..(oh + 1) * g.out_width];
                    axpy_scatter(acc_row, p.stride.1, x_row, w);
                }
            }
        }
    }
}
