//! `conv2d_simple`: the legacy gather-form convolution — no bias, no groups, scalar stride and
//! padding. It is `conv2d` with `groups = 1`, `dilation = (1, 1)` and square parameters, and
//! runs the same loop nest, so its numerics are identical by construction.

use crate::error::KernelError;
use crate::ops::conv2d::{Conv2dParams, ConvNames, conv2d_named};
use crate::tensor::{Element, RefTensor};

const NAMES: ConvNames = ConvNames {
    op: "conv2d_simple",
    weight: "kernel",
};

/// Parameters of [`conv2d_simple`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Conv2dSimpleParams {
    /// Output step on both axes; ≥ 1.
    pub stride: usize,
    /// Symmetric zero padding on both axes; padded taps are skipped.
    pub padding: usize,
}

impl Conv2dSimpleParams {
    fn as_conv2d(&self) -> Conv2dParams {
        Conv2dParams {
            stride: (self.stride, self.stride),
            padding: (self.padding, self.padding),
            dilation: (1, 1),
            groups: 1,
        }
    }

    /// `[N, Cout, (H + 2·padding − Kh)/stride + 1, (W + 2·padding − Kw)/stride + 1]`, checked.
    pub fn out_dims(
        &self,
        x_shape: &[usize],
        kernel_shape: &[usize],
    ) -> Result<[usize; 4], KernelError> {
        self.as_conv2d()
            .geometry_named(NAMES, x_shape, kernel_shape, None)
            .map(|g| g.out_dims())
    }
}

/// Legacy 2-D convolution: `x [N, Cin, H, W]`, `kernel [Cout, Cin, Kh, Kw]` →
/// `[N, Cout, Hout, Wout]`. Per output: `acc = T::zero()`, then for `ci, kh, kw` in that order,
/// skipping padding taps, `acc = acc + x·kernel` (separate multiply and add, in `T`). Bitwise
/// equal to `conv2d` with `groups = 1`, no bias, `dilation = (1, 1)`.
pub fn conv2d_simple<T: Element>(
    x: &RefTensor<T>,
    kernel: &RefTensor<T>,
    params: &Conv2dSimpleParams,
) -> Result<RefTensor<T>, KernelError> {
    conv2d_named(NAMES, x, kernel, None, &params.as_conv2d())
}
