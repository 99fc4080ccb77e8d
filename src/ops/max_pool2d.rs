//! `max_pool2d`: per-channel 2-D max pooling with a square window, scalar stride, no padding.
//!
//! The window reduction is a pure selection (no rounding), so the output is exact and
//! bit-stable. Its NaN and signed-zero behaviour is pinned down in [`max_pool2d`].

use crate::error::{KernelError, KernelErrorKind};
use crate::mutants::{Mutant, active};
use crate::ops::common::{
    GatherAxis, check_out_numel, ensure, max_step, require_nonempty, require_rank,
};
use crate::ops::pool_fast;
use crate::tensor::{Element, RefTensor};

const OP: &str = "max_pool2d";

/// Parameters of [`max_pool2d`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MaxPool2dParams {
    /// Window side; ≥ 1 and ≤ both H and W.
    pub kernel_size: usize,
    /// Window step on both axes; ≥ 1.
    pub stride: usize,
}

impl MaxPool2dParams {
    /// `[N, C, (H − kernel_size)/stride + 1, (W − kernel_size)/stride + 1]`, checked.
    pub fn out_dims(&self, x_shape: &[usize]) -> Result<[usize; 4], KernelError> {
        let ctx = format!(
            "x {x_shape:?}, kernel_size {}, stride {}",
            self.kernel_size, self.stride
        );
        require_rank(OP, "x", "N, C, H, W", x_shape, &ctx)?;
        let &[batch, channels, height, width] = x_shape else {
            return Err(KernelError::new(OP, KernelErrorKind::Rank, ctx));
        };
        // An empty batch, or no channels, pools to an empty output; an empty plane has no window.
        require_nonempty(OP, "x plane", &[height, width], &ctx)?;
        let k = self.kernel_size;
        ensure(
            k > 0,
            OP,
            KernelErrorKind::ZeroSize,
            || "kernel_size must be >= 1".into(),
            &ctx,
        )?;
        let stride_ok = self.stride > 0;
        ensure(
            stride_ok,
            OP,
            KernelErrorKind::ZeroStride,
            || "stride must be >= 1".into(),
            &ctx,
        )?;
        let axis = |name, input| GatherAxis {
            name,
            input,
            kernel: k,
            stride: self.stride,
            pad: 0,
            dilation: 1,
        };
        let out_height = axis("H", height).out_len(OP, &ctx)?;
        let out_width = axis("W", width).out_len(OP, &ctx)?;
        let out = [batch, channels, out_height, out_width];
        check_out_numel(OP, &out, &ctx)?;
        Ok(out)
    }
}

/// 2-D max pooling: `x [N, C, H, W]` → `[N, C, Hout, Wout]`.
///
/// Each window is scanned in row-major order starting from its first (top-left) element `m`,
/// then `m = max_step(m, v)` for every following element `v`, where `max_step` is `T::max`
/// with pinned ties. Exactly:
/// - a NaN in a window is ignored unless every element of the window is NaN, in which case the
///   output is that NaN (the last one scanned);
/// - `±Inf` are ordinary values;
/// - when the maximum is zero and the window holds both `-0.0` and `+0.0`, the zero that comes
///   first in the scan is returned (they compare equal; no later equal value replaces it).
///
/// The kernel runs the same scan on vectors, one window row at a time (each input row reduced
/// across the window's columns, then each output row across the window's rows, in order):
/// the scan's result does not depend on how its sequence is cut into consecutive pieces, and
/// the selection is lane-wise `max_step`, so the result is bitwise the scalar scan's, NaN
/// payloads and zero signs included, for every element type.
pub fn max_pool2d<T: Element>(
    x: &RefTensor<T>,
    params: &MaxPool2dParams,
) -> Result<RefTensor<T>, KernelError> {
    max_pool2d_threaded(x, params, 1)
}

/// [`max_pool2d`] on `threads` threads (`0` and `1` both mean the calling thread only),
/// splitting the work over (image, channel) planes. Every plane is computed by the same
/// instructions whatever the split, so the result is bitwise equal to [`max_pool2d`]'s.
pub fn max_pool2d_threaded<T: Element>(
    x: &RefTensor<T>,
    params: &MaxPool2dParams,
    threads: usize,
) -> Result<RefTensor<T>, KernelError> {
    let out_dims = params.out_dims(x.shape())?;
    let [batch, channels, out_height, out_width] = out_dims;
    if batch == 0 || channels == 0 {
        return Ok(RefTensor::from_vec(Vec::new(), &out_dims)?);
    }
    let (height, width) = (x.shape()[2], x.shape()[3]);
    let (k, s) = (params.kernel_size, params.stride);
    let geometry = pool_fast::PoolGeometry {
        height,
        width,
        out_height,
        out_width,
        kernel: k,
        stride: s,
    };
    let wide_bug = k > 4 && active(Mutant::PoolWideWindowDropsLastColumn);
    if !wide_bug && let Some(out) = pool_fast::run(&geometry, x, threads) {
        return Ok(RefTensor::from_vec(out, &out_dims)?);
    }
    let columns = if wide_bug { k - 1 } else { k };
    fkc_provider::call::took("max_pool2d.scalar-fallback");
    let mut out = Vec::with_capacity(x.data().len() / (height * width) * out_height * out_width);
    for plane in x.data().chunks_exact(height * width) {
        for oh in 0..out_height {
            for ow in 0..out_width {
                let corner = oh * s * width + ow * s;
                // Seeding with the first element and scanning it again is harmless:
                // max_step(m, m) is m, bit for bit, NaN or not.
                let mut m = plane[corner];
                for row in 0..k {
                    for &v in &plane[corner + row * width..][..columns] {
                        m = max_step(m, v);
                    }
                }
                out.push(m);
            }
        }
    }
    Ok(RefTensor::from_vec(out, &out_dims)?)
}
