//! The vectorised `max_pool2d` scan for `f32` and `f64`: per output row, vectors of output
//! columns; each input row is first split into `stride` phases so that the window element
//! `(r, c)` of consecutive outputs sits at consecutive addresses. Every lane runs exactly the
//! scalar scan — seed with the window's first element, then `max_step` over the window in
//! row-major order — so the output is bitwise the scalar kernel's.

use std::any::Any;

use pulp::{Arch, Simd, WithSimd};

use crate::ops::simd::Lane;
use crate::tensor::{Element, RefTensor};

/// A validated pooling geometry (one plane).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoolGeometry {
    pub height: usize,
    pub width: usize,
    pub out_height: usize,
    pub out_width: usize,
    pub kernel: usize,
    pub stride: usize,
}

impl PoolGeometry {
    /// Length of one phase row: every output vector's loads stay inside it.
    fn row_len(&self) -> usize {
        self.out_width.next_multiple_of(64) + (self.kernel - 1) / self.stride + 1
    }
}

/// The vectorised scan if `T` is `f32` or `f64`, else `None`.
pub(crate) fn run<T: Element>(g: &PoolGeometry, x: &RefTensor<T>) -> Option<Vec<T>> {
    fn typed<T: Element, A: Lane + Element>(g: &PoolGeometry, x: &RefTensor<T>) -> Option<Vec<T>> {
        let x = (x as &dyn Any).downcast_ref::<RefTensor<A>>()?;
        let out = pool::<A>(g, x.data())?;
        (Box::new(out) as Box<dyn Any>)
            .downcast::<Vec<T>>()
            .ok()
            .map(|b| *b)
    }
    let any = x as &dyn Any;
    if any.is::<RefTensor<f32>>() {
        typed::<T, f32>(g, x)
    } else if any.is::<RefTensor<f64>>() {
        typed::<T, f64>(g, x)
    } else {
        None
    }
}

fn pool<A: Lane>(g: &PoolGeometry, x: &[A]) -> Option<Vec<A>> {
    let plane = g.height.checked_mul(g.width)?;
    let planes = x.len() / plane;
    let out_plane = g.out_height.checked_mul(g.out_width)?;
    let mut out = crate::shape::zeroed_vec::<A>(planes.checked_mul(out_plane)?).ok()?;
    let phased_len = g.height.checked_mul(g.stride)?.checked_mul(g.row_len())?;
    let mut phased = crate::shape::zeroed_vec::<A>(phased_len).ok()?;
    Arch::new().dispatch(Pool {
        g,
        x,
        out: &mut out,
        phased: &mut phased,
    });
    Some(out)
}

struct Pool<'a, A> {
    g: &'a PoolGeometry,
    x: &'a [A],
    out: &'a mut [A],
    phased: &'a mut [A],
}

impl<A: Lane> WithSimd for Pool<'_, A> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let g = self.g;
        let (k, stride) = (g.kernel, g.stride);
        let row_len = g.row_len();
        let lanes = A::lanes::<S>();
        let plane = g.height * g.width;
        let out_plane = g.out_height * g.out_width;
        for (src, dst) in self
            .x
            .chunks_exact(plane)
            .zip(self.out.chunks_exact_mut(out_plane))
        {
            // Phase split: input (ih, iw) → phased[(ih·stride + iw % stride)·row_len + iw / stride].
            for (ih, row) in src.chunks_exact(g.width).enumerate() {
                for p in 0..stride {
                    let base = (ih * stride + p) * row_len;
                    let target = &mut self.phased[base..][..row_len];
                    for (t, &v) in target.iter_mut().zip(row.iter().skip(p).step_by(stride)) {
                        *t = v;
                    }
                }
            }
            let phased = &*self.phased;
            for (oh, out_row) in dst.chunks_exact_mut(g.out_width).enumerate() {
                for j0 in (0..g.out_width).step_by(lanes) {
                    let window = |r: usize, c: usize| {
                        let base = ((oh * stride + r) * stride + c % stride) * row_len;
                        A::load::<S>(&phased[base + c / stride + j0..])
                    };
                    let mut m = window(0, 0);
                    for r in 0..k {
                        for c in 0..k {
                            m = A::max_step(s, m, window(r, c));
                        }
                    }
                    let n = (g.out_width - j0).min(lanes);
                    A::store(s, &mut out_row[j0..][..n], m);
                }
            }
        }
    }
}
