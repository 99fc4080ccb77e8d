//! Shared test support: a seeded PRNG, tensor builders, and reference definitions written
//! independently of the crate — naive nested loops in `T` (for bitwise checks) and gather-form
//! definitions in `f64` (for value checks with a rigorous error bound).
#![allow(dead_code, clippy::unwrap_used, clippy::too_many_arguments)]

use fuel_reference_backend::{Element, RefTensor, Scalar};

/// xorshift64* — small, seeded, deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
    /// A value exactly representable in bf16, f16, f32 and f64: k/8 with |k| <= 32.
    pub fn small(&mut self) -> f64 {
        (self.range(0, 64) as f64 - 32.0) / 8.0
    }
    pub fn values(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.small()).collect()
    }
}

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

pub fn arange(shape: &[usize]) -> Vec<f64> {
    (0..numel(shape)).map(|i| i as f64).collect()
}

pub fn tensor<T: Element>(values: &[f64], shape: &[usize]) -> RefTensor<T> {
    RefTensor::from_vec(values.iter().map(|&v| T::from_f64(v)).collect(), shape).unwrap()
}

pub fn f64s<T: Element>(t: &RefTensor<T>) -> Vec<f64> {
    t.data().iter().map(|&v| Scalar::to_f64(v)).collect()
}

pub fn bits<T: Element>(t: &RefTensor<T>) -> Vec<u64> {
    t.data().iter().map(|v| v.to_bits_u64()).collect()
}

/// Geometry of a 2-D convolution test case (both conv and transposed conv).
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub x: [usize; 4],
    pub w: [usize; 4],
    pub stride: (usize, usize),
    pub padding: (usize, usize),
    pub dilation: (usize, usize),
    pub output_padding: (usize, usize),
    pub groups: usize,
}

/// Signed position `i·s + k·d − p`.
fn pos(i: usize, s: usize, k: usize, d: usize, p: usize) -> isize {
    (i * s + k * d) as isize - p as isize
}

/// conv2d output size per the textbook formula, `None` when the dilated kernel does not fit.
pub fn conv_out_len(input: usize, k: usize, s: usize, p: usize, d: usize) -> Option<usize> {
    let span = d * (k - 1) + 1;
    let padded = input + 2 * p;
    (span <= padded).then(|| (padded - span) / s + 1)
}

/// Naive conv2d in `T`, the documented loop: per output, acc = 0; ci, kh, kw; skip padding;
/// acc = acc + x*w; then + bias.
pub fn naive_conv2d<T: Element>(
    c: &Case,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
) -> (Vec<T>, [usize; 4]) {
    let [n_, cin, h, wd] = c.x;
    let [cout, cin_g, kh_, kw_] = c.w;
    let ho = conv_out_len(h, kh_, c.stride.0, c.padding.0, c.dilation.0).unwrap();
    let wo = conv_out_len(wd, kw_, c.stride.1, c.padding.1, c.dilation.1).unwrap();
    let cout_g = cout / c.groups;
    let mut out = Vec::new();
    for n in 0..n_ {
        for co in 0..cout {
            let g = co / cout_g;
            for oh in 0..ho {
                for ow in 0..wo {
                    let mut acc = T::zero();
                    for ci in 0..cin_g {
                        for kh in 0..kh_ {
                            for kw in 0..kw_ {
                                let ih = pos(oh, c.stride.0, kh, c.dilation.0, c.padding.0);
                                let iw = pos(ow, c.stride.1, kw, c.dilation.1, c.padding.1);
                                if ih < 0 || iw < 0 || ih >= h as isize || iw >= wd as isize {
                                    continue;
                                }
                                let xi = ((n * cin + g * cin_g + ci) * h + ih as usize) * wd
                                    + iw as usize;
                                let wi = ((co * cin_g + ci) * kh_ + kh) * kw_ + kw;
                                acc = acc + x[xi] * w[wi];
                            }
                        }
                    }
                    out.push(match bias {
                        Some(b) => acc + b[co],
                        None => acc,
                    });
                }
            }
        }
    }
    (out, [n_, cout, ho, wo])
}

/// Transposed-conv output size per the seed's formula, `None` when padding eats the output.
pub fn conv_t_out_len(
    input: usize,
    k: usize,
    s: usize,
    p: usize,
    op: usize,
    d: usize,
) -> Option<usize> {
    let produced = (input - 1) * s + d * (k - 1) + 1;
    (2 * p <= produced && produced + op > 2 * p).then(|| produced + op - 2 * p)
}

/// Naive scatter-form transposed conv in `T`, loops n, g, ci, ih, iw, co, kh, kw.
pub fn naive_conv_t<T: Element>(c: &Case, x: &[T], w: &[T]) -> (Vec<T>, [usize; 4]) {
    let [n_, cin, h, wd] = c.x;
    let [_, cout_g, kh_, kw_] = c.w;
    let ho = conv_t_out_len(
        h,
        kh_,
        c.stride.0,
        c.padding.0,
        c.output_padding.0,
        c.dilation.0,
    )
    .unwrap();
    let wo = conv_t_out_len(
        wd,
        kw_,
        c.stride.1,
        c.padding.1,
        c.output_padding.1,
        c.dilation.1,
    )
    .unwrap();
    let cout = cout_g * c.groups;
    let cin_g = cin / c.groups;
    let mut out = vec![T::zero(); n_ * cout * ho * wo];
    for n in 0..n_ {
        for g in 0..c.groups {
            for ci in 0..cin_g {
                let ch = g * cin_g + ci;
                for ih in 0..h {
                    for iw in 0..wd {
                        let xv = x[((n * cin + ch) * h + ih) * wd + iw];
                        for co in 0..cout_g {
                            for kh in 0..kh_ {
                                for kw in 0..kw_ {
                                    let oh = pos(ih, c.stride.0, kh, c.dilation.0, c.padding.0);
                                    let ow = pos(iw, c.stride.1, kw, c.dilation.1, c.padding.1);
                                    if oh < 0 || ow < 0 || oh >= ho as isize || ow >= wo as isize {
                                        continue;
                                    }
                                    let oi = ((n * cout + g * cout_g + co) * ho + oh as usize) * wo
                                        + ow as usize;
                                    let wi = ((ch * cout_g + co) * kh_ + kh) * kw_ + kw;
                                    out[oi] = out[oi] + xv * w[wi];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    (out, [n_, cout, ho, wo])
}

/// One oracle output: the exact-ish value and Σ|terms| (for the error bound).
#[derive(Clone, Copy, Debug)]
pub struct Oracle {
    pub value: f64,
    pub abs_sum: f64,
    pub terms: usize,
}

/// Gather-form conv2d in f64: out = Σ over valid taps (+ bias). Written from the math, not
/// from the kernel: the tap set is enumerated over the *input* window of each output.
pub fn oracle_conv2d(
    c: &Case,
    x: &[f64],
    w: &[f64],
    bias: Option<&[f64]>,
) -> Option<(Vec<Oracle>, [usize; 4])> {
    let [n_, cin, h, wd] = c.x;
    let [cout, cin_g, kh_, kw_] = c.w;
    let ho = conv_out_len(h, kh_, c.stride.0, c.padding.0, c.dilation.0)?;
    let wo = conv_out_len(wd, kw_, c.stride.1, c.padding.1, c.dilation.1)?;
    let cout_g = cout / c.groups;
    let mut out = Vec::new();
    for n in 0..n_ {
        for co in 0..cout {
            let g = co / cout_g;
            for oh in 0..ho {
                for ow in 0..wo {
                    let mut o = Oracle {
                        value: 0.0,
                        abs_sum: 0.0,
                        terms: 0,
                    };
                    // Walk the input rows/cols the window covers, derive the tap.
                    for ih in 0..h {
                        let dh = ih as isize + c.padding.0 as isize - (oh * c.stride.0) as isize;
                        if dh < 0
                            || dh % c.dilation.0 as isize != 0
                            || dh / c.dilation.0 as isize >= kh_ as isize
                        {
                            continue;
                        }
                        let kh = (dh / c.dilation.0 as isize) as usize;
                        for iw in 0..wd {
                            let dw =
                                iw as isize + c.padding.1 as isize - (ow * c.stride.1) as isize;
                            if dw < 0
                                || dw % c.dilation.1 as isize != 0
                                || dw / c.dilation.1 as isize >= kw_ as isize
                            {
                                continue;
                            }
                            let kw = (dw / c.dilation.1 as isize) as usize;
                            for ci in 0..cin_g {
                                let t = x[((n * cin + g * cin_g + ci) * h + ih) * wd + iw]
                                    * w[((co * cin_g + ci) * kh_ + kh) * kw_ + kw];
                                o.value += t;
                                o.abs_sum += t.abs();
                                o.terms += 1;
                            }
                        }
                    }
                    if let Some(b) = bias {
                        o.value += b[co];
                        o.abs_sum += b[co].abs();
                        o.terms += 1;
                    }
                    out.push(o);
                }
            }
        }
    }
    Some((out, [n_, cout, ho, wo]))
}

/// Gather-form transposed conv in f64: out[oh, ow] = Σ x[ih, iw]·w[kh, kw] over
/// ih·s + kh·d − p = oh (likewise for w).
pub fn oracle_conv_t(c: &Case, x: &[f64], w: &[f64]) -> Option<(Vec<Oracle>, [usize; 4])> {
    let [n_, cin, h, wd] = c.x;
    let [_, cout_g, kh_, kw_] = c.w;
    let ho = conv_t_out_len(
        h,
        kh_,
        c.stride.0,
        c.padding.0,
        c.output_padding.0,
        c.dilation.0,
    )?;
    let wo = conv_t_out_len(
        wd,
        kw_,
        c.stride.1,
        c.padding.1,
        c.output_padding.1,
        c.dilation.1,
    )?;
    let cin_g = cin / c.groups;
    let cout = cout_g * c.groups;
    let mut out = Vec::new();
    for n in 0..n_ {
        for co in 0..cout {
            let g = co / cout_g;
            for oh in 0..ho {
                for ow in 0..wo {
                    let mut o = Oracle {
                        value: 0.0,
                        abs_sum: 0.0,
                        terms: 0,
                    };
                    for kh in 0..kh_ {
                        let num = (oh + c.padding.0) as isize - (kh * c.dilation.0) as isize;
                        if num < 0
                            || num % c.stride.0 as isize != 0
                            || num / c.stride.0 as isize >= h as isize
                        {
                            continue;
                        }
                        let ih = (num / c.stride.0 as isize) as usize;
                        for kw in 0..kw_ {
                            let num = (ow + c.padding.1) as isize - (kw * c.dilation.1) as isize;
                            if num < 0
                                || num % c.stride.1 as isize != 0
                                || num / c.stride.1 as isize >= wd as isize
                            {
                                continue;
                            }
                            let iw = (num / c.stride.1 as isize) as usize;
                            for ci in 0..cin_g {
                                let ch = g * cin_g + ci;
                                let t = x[((n * cin + ch) * h + ih) * wd + iw]
                                    * w[((ch * cout_g + co % cout_g) * kh_ + kh) * kw_ + kw];
                                o.value += t;
                                o.abs_sum += t.abs();
                                o.terms += 1;
                            }
                        }
                    }
                    out.push(o);
                }
            }
        }
    }
    Some((out, [n_, cout, ho, wo]))
}

/// Unit roundoff of a dtype.
pub fn unit_roundoff<T: Element>() -> f64 {
    Scalar::to_f64(T::epsilon()) / 2.0
}

/// Asserts |got − oracle| ≤ γ_{k}·Σ|terms| with k = terms + 1 (Higham's bound for recursive
/// summation of rounded products in precision u), for every element.
pub fn assert_within_bound<T: Element>(got: &[f64], oracle: &[Oracle], what: &str) {
    assert_eq!(got.len(), oracle.len(), "{what}: length");
    let u = unit_roundoff::<T>();
    for (i, (g, o)) in got.iter().zip(oracle).enumerate() {
        let k = (o.terms + 1) as f64;
        let gamma = k * u / (1.0 - k * u);
        let bound = gamma * o.abs_sum;
        assert!(
            (g - o.value).abs() <= bound,
            "{what}: element {i}: got {g}, oracle {}, bound {bound}",
            o.value
        );
    }
}
