//! `avg_pool2d`: per-channel 2-D average pooling with a square window, scalar stride and
//! symmetric zero padding, dividing by the whole window or by its taps inside the input.

use crate::error::{KernelError, KernelErrorKind};
use crate::mutants::{Mutant, active};
use crate::ops::common::{GatherAxis, check_out_numel, ensure, require_nonempty, require_rank};
use crate::tensor::{Element, RefTensor};

const OP: &str = "avg_pool2d";

/// What a window's sum is divided by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AvgDivisor {
    /// `kernel_size²`, padding taps included (PyTorch's `count_include_pad=True`).
    Window,
    /// The number of window taps inside the unpadded input (`count_include_pad=False`).
    Valid,
}

impl AvgDivisor {
    /// The value names, as the `divisor` field spells them.
    pub const NAMES: &'static [&'static str] = &["window", "valid"];

    /// Parses `"window"` or `"valid"` (exact).
    pub fn from_name(name: &str) -> Option<AvgDivisor> {
        match name {
            "window" => Some(AvgDivisor::Window),
            "valid" => Some(AvgDivisor::Valid),
            _ => None,
        }
    }
}

/// Parameters of [`avg_pool2d`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AvgPool2dParams {
    /// Window side; ≥ 1, and the window must fit the padded input.
    pub kernel_size: usize,
    /// Window step on both axes; ≥ 1.
    pub stride: usize,
    /// Symmetric zero padding on both axes; ≤ `kernel_size / 2`.
    pub padding: usize,
    /// What each window's sum is divided by.
    pub divisor: AvgDivisor,
}

impl AvgPool2dParams {
    /// `[N, C, (H + 2·padding − kernel_size)/stride + 1, (W + 2·padding − kernel_size)/stride
    /// + 1]`, checked: `Rank`, `ZeroSize` (an empty `x` or `kernel_size` 0), `ZeroStride`,
    /// `BadParams` (`padding > kernel_size / 2`), `KernelTooLarge`, `Overflow`.
    pub fn out_dims(&self, x_shape: &[usize]) -> Result<[usize; 4], KernelError> {
        let ctx = format!(
            "x {x_shape:?}, kernel_size {}, stride {}, padding {}",
            self.kernel_size, self.stride, self.padding
        );
        require_rank(OP, "x", "N, C, H, W", x_shape, &ctx)?;
        require_nonempty(OP, "x", x_shape, &ctx)?;
        let &[batch, channels, height, width] = x_shape else {
            return Err(KernelError::new(OP, KernelErrorKind::Rank, ctx));
        };
        let k = self.kernel_size;
        let zero_size = || "kernel_size must be >= 1".to_owned();
        ensure(k > 0, OP, KernelErrorKind::ZeroSize, zero_size, &ctx)?;
        let zero_stride = || "stride must be >= 1".to_owned();
        ensure(
            self.stride > 0,
            OP,
            KernelErrorKind::ZeroStride,
            zero_stride,
            &ctx,
        )?;
        let too_much = || format!("padding must be <= kernel_size / 2 = {}", k / 2);
        ensure(
            self.padding <= k / 2,
            OP,
            KernelErrorKind::BadParams,
            too_much,
            &ctx,
        )?;
        let axis = |name, input| GatherAxis {
            name,
            input,
            kernel: k,
            stride: self.stride,
            pad: self.padding,
            dilation: 1,
        };
        let out = [
            batch,
            channels,
            axis("H", height).out_len(OP, &ctx)?,
            axis("W", width).out_len(OP, &ctx)?,
        ];
        check_out_numel(OP, &out, &ctx)?;
        Ok(out)
    }
}

/// 2-D average pooling: `x [N, C, H, W]` → `[N, C, Hout, Wout]` (see
/// [`AvgPool2dParams::out_dims`]).
///
/// Window `(oh, ow)` covers padded rows `oh·stride .. oh·stride + kernel_size` (input row
/// `oh·stride + kh − padding`), likewise for columns. Its taps inside the input are summed in
/// row-major window order (`kh`, then `kw`) with an accumulator in `T` (`acc: T = 0`,
/// `acc = acc + v`); padding taps are skipped (they are zeros). The sum is then divided once,
/// in `T`, by `kernel_size²` (`Window`) or by the number of in-bounds taps (`Valid`, at least
/// 1 since `padding ≤ kernel_size / 2`), each count converted to `T`.
pub fn avg_pool2d<T: Element>(
    x: &RefTensor<T>,
    params: &AvgPool2dParams,
) -> Result<RefTensor<T>, KernelError> {
    let out_dims = params.out_dims(x.shape())?;
    let [_, _, out_height, out_width] = out_dims;
    let (height, width) = (x.shape()[2], x.shape()[3]);
    let (k, s, p) = (params.kernel_size, params.stride, params.padding);
    let window = k.checked_mul(k).ok_or_else(|| {
        KernelError::new(
            OP,
            KernelErrorKind::Overflow,
            "kernel_size² overflows usize",
        )
    })?;
    let by_window =
        params.divisor == AvgDivisor::Window || active(Mutant::AvgPoolValidDividesByWindow);
    let mut out = Vec::with_capacity(x.data().len() / (height * width) * out_height * out_width);
    for plane in x.data().chunks_exact(height * width) {
        for oh in 0..out_height {
            for ow in 0..out_width {
                let mut acc = T::zero();
                let mut taps = 0usize;
                for kh in 0..k {
                    let Some(ih) = (oh * s + kh).checked_sub(p).filter(|&h| h < height) else {
                        continue;
                    };
                    for kw in 0..k {
                        let Some(iw) = (ow * s + kw).checked_sub(p).filter(|&w| w < width) else {
                            continue;
                        };
                        acc = acc + plane[ih * width + iw];
                        taps += 1;
                    }
                }
                let count = if by_window { window } else { taps };
                out.push(acc / T::from_f64(count as f64));
            }
        }
    }
    Ok(RefTensor::from_vec(out, &out_dims)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn params(
        kernel_size: usize,
        stride: usize,
        padding: usize,
        divisor: AvgDivisor,
    ) -> AvgPool2dParams {
        AvgPool2dParams {
            kernel_size,
            stride,
            padding,
            divisor,
        }
    }

    fn x3x3() -> RefTensor<f64> {
        let data: Vec<f64> = (1..=9).map(f64::from).collect();
        RefTensor::from_vec(data, &[1, 1, 3, 3]).unwrap()
    }

    #[test]
    fn unpadded_windows_average() {
        let out = avg_pool2d(&x3x3(), &params(2, 1, 0, AvgDivisor::Window)).unwrap();
        assert_eq!(out.shape(), &[1, 1, 2, 2]);
        assert_eq!(out.data(), &[3.0, 4.0, 6.0, 7.0]);
        let valid = avg_pool2d(&x3x3(), &params(2, 1, 0, AvgDivisor::Valid)).unwrap();
        assert_eq!(valid, out);
    }

    #[test]
    fn padding_divisors_differ() {
        // k 2, stride 2, padding 1 on 3x3: windows at padded rows {0,1}, {2,3}.
        let window = avg_pool2d(&x3x3(), &params(2, 2, 1, AvgDivisor::Window)).unwrap();
        assert_eq!(window.shape(), &[1, 1, 2, 2]);
        // Taps: {1}, {2, 3}, {4, 7}, {5, 6, 8, 9}.
        assert_eq!(window.data(), &[0.25, 1.25, 2.75, 7.0]);
        let valid = avg_pool2d(&x3x3(), &params(2, 2, 1, AvgDivisor::Valid)).unwrap();
        assert_eq!(valid.data(), &[1.0, 2.5, 5.5, 7.0]);
        let k3 = avg_pool2d(&x3x3(), &params(3, 1, 1, AvgDivisor::Valid)).unwrap();
        assert_eq!(k3.shape(), &[1, 1, 3, 3]);
        assert_eq!(k3.data()[0], 3.0); // (1 + 2 + 4 + 5) / 4
        assert_eq!(k3.data()[4], 5.0);
    }

    #[test]
    fn bad_geometry_is_rejected() {
        let kind = |p: AvgPool2dParams| avg_pool2d(&x3x3(), &p).unwrap_err().kind;
        assert_eq!(
            kind(params(4, 1, 0, AvgDivisor::Window)),
            KernelErrorKind::KernelTooLarge
        );
        assert_eq!(
            kind(params(2, 1, 2, AvgDivisor::Window)),
            KernelErrorKind::BadParams
        );
        assert_eq!(
            kind(params(0, 1, 0, AvgDivisor::Window)),
            KernelErrorKind::ZeroSize
        );
        assert_eq!(
            kind(params(2, 0, 0, AvgDivisor::Window)),
            KernelErrorKind::ZeroStride
        );
        let flat = RefTensor::<f64>::zeros(&[3, 3]).unwrap();
        let e = avg_pool2d(&flat, &params(1, 1, 0, AvgDivisor::Valid)).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Rank);
        assert_eq!(AvgDivisor::from_name("mean"), None);
        assert_eq!(AvgDivisor::from_name("valid"), Some(AvgDivisor::Valid));
    }
}
