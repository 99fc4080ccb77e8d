//! The vectorised, register-tiled paths against the naive nested loops, bit for bit: random
//! geometries wide enough to fill several vectors and tiles (strides, dilations, padding,
//! groups, bias), values that make the summation order matter (random non-dyadic numbers,
//! ±0, ±∞, NaN, subnormals, values that overflow f16), every dtype, and every thread count.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "backend_util/mod.rs"]
mod util;

use fuel_reference_backend::dtype::DType;
use fuel_reference_backend::ops::{
    Conv2dParams, ConvTranspose2dParams, MaxPool2dParams, conv_transpose2d,
    conv_transpose2d_threaded, conv2d, conv2d_threaded, max_pool2d, max_pool2d_threaded, max_step,
};
use fuel_reference_backend::{AnyTensor, Element, RefTensor};
use half::{bf16, f16};
use util::{Case, Rng, conv_out_len, conv_t_out_len, naive_conv_t, naive_conv2d};

/// A value for the fast-path tests: mostly random non-dyadic numbers of mixed magnitude, with
/// a sprinkling of specials when `specials` is set.
fn value(rng: &mut Rng, specials: bool) -> f64 {
    let r = rng.next_u64();
    if specials && r.is_multiple_of(23) {
        const SPECIAL: [f64; 9] = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-6,
            -3e-8,
            70000.0,
            -1e5,
        ];
        return SPECIAL[(r >> 8) as usize % SPECIAL.len()];
    }
    let unit = (r >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    let scale = [1.0, 1.0, 1e-3, 300.0][(r >> 3) as usize % 4];
    unit * scale
}

fn tensor<T: Element>(rng: &mut Rng, shape: &[usize], specials: bool) -> RefTensor<T> {
    let n: usize = shape.iter().product();
    let data = (0..n).map(|_| T::from_f64(value(rng, specials))).collect();
    RefTensor::from_vec(data, shape).unwrap()
}

/// Equal bits, except that two NaNs are equal whatever their payloads: when two different
/// NaNs meet in one operation, IEEE 754 (and Rust) leave the result's payload unspecified.
fn same<T: Element>(got: &[T], want: &[T]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(a, b)| a.to_bits_u64() == b.to_bits_u64() || (a.is_nan() && b.is_nan()))
}

/// Every NaN is the canonical quiet NaN `T::nan()`.
fn canonical_nans<T: Element>(values: &[T]) -> bool {
    let nan = T::nan().to_bits_u64();
    values.iter().all(|v| !v.is_nan() || v.to_bits_u64() == nan)
}

fn exact_bits<T: Element>(got: &[T], want: &[T]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(a, b)| a.to_bits_u64() == b.to_bits_u64())
}

fn conv_case(rng: &mut Rng) -> Case {
    let groups = [1, 1, 2, 3][rng.range(0, 3)];
    Case {
        x: [
            rng.range(1, 2),
            groups * rng.range(1, 3),
            rng.range(1, 9),
            rng.range(1, 80),
        ],
        w: [
            groups * rng.range(1, 6),
            0,
            rng.range(1, 4),
            rng.range(1, 4),
        ],
        stride: (rng.range(1, 3), rng.range(1, 3)),
        padding: (rng.range(0, 2), rng.range(0, 3)),
        dilation: (rng.range(1, 2), rng.range(1, 3)),
        output_padding: (0, 0),
        groups,
    }
}

fn check_conv2d<T: Element>(seed: u64, cases: usize, specials: bool) {
    let mut rng = Rng::new(seed);
    let mut ran = 0;
    for _ in 0..cases {
        let mut c = conv_case(&mut rng);
        c.w[1] = c.x[1] / c.groups;
        let fits = conv_out_len(c.x[2], c.w[2], c.stride.0, c.padding.0, c.dilation.0).is_some()
            && conv_out_len(c.x[3], c.w[3], c.stride.1, c.padding.1, c.dilation.1).is_some();
        if !fits {
            continue;
        }
        let x = tensor::<T>(&mut rng, &c.x, specials);
        let w = tensor::<T>(&mut rng, &c.w, specials);
        let b = tensor::<T>(&mut rng, &[c.w[0]], specials);
        let bias = (rng.range(0, 1) == 1).then_some(&b);
        let p = Conv2dParams {
            stride: c.stride,
            padding: c.padding,
            dilation: c.dilation,
            groups: c.groups,
        };
        let got = conv2d(&x, &w, bias, &p).unwrap();
        let (naive, _) = naive_conv2d(&c, x.data(), w.data(), bias.map(|b| b.data()));
        let ok = if specials {
            same(got.data(), &naive)
        } else {
            exact_bits(got.data(), &naive)
        };
        assert!(
            ok,
            "{:?}: conv2d differs from the naive loop: {c:?}",
            T::DTYPE
        );
        assert!(
            canonical_nans(got.data()),
            "{:?}: conv2d NaN: {c:?}",
            T::DTYPE
        );
        for threads in [2, 3] {
            let t = conv2d_threaded(&x, &w, bias, &p, threads).unwrap();
            assert!(exact_bits(t.data(), got.data()), "{threads} threads: {c:?}");
        }
        ran += 1;
    }
    assert!(ran > cases / 3, "too few admitted cases: {ran}");
}

#[test]
fn conv2d_wide_rows_bitwise_every_dtype() {
    check_conv2d::<f32>(1, 120, false);
    check_conv2d::<f64>(2, 120, false);
    check_conv2d::<bf16>(3, 80, false);
    check_conv2d::<f16>(4, 80, false);
}

#[test]
fn conv2d_special_values_bitwise_every_dtype() {
    check_conv2d::<f32>(5, 80, true);
    check_conv2d::<f64>(6, 80, true);
    check_conv2d::<bf16>(7, 60, true);
    check_conv2d::<f16>(8, 60, true);
}

#[test]
fn conv2d_padding_taps_are_skipped_not_added_as_zeros() {
    // Infinite weights on kernel column 0: for output column 0 that column only ever meets
    // padding, so the outputs there stay finite; a padding tap added as 0 · ∞ would be NaN.
    let c = Case {
        x: [1, 2, 3, 40],
        w: [5, 2, 3, 3],
        stride: (1, 1),
        padding: (1, 1),
        dilation: (1, 1),
        output_padding: (0, 0),
        groups: 1,
    };
    let x = RefTensor::from_vec(vec![1.0f32; 240], &c.x).unwrap();
    let w: Vec<f32> = (0..90)
        .map(|i| if i % 3 == 0 { f32::INFINITY } else { 0.5 })
        .collect();
    let w = RefTensor::from_vec(w, &c.w).unwrap();
    let p = Conv2dParams {
        padding: (1, 1),
        ..Conv2dParams::default()
    };
    let got = conv2d(&x, &w, None, &p).unwrap();
    let (naive, _) = naive_conv2d(&c, x.data(), w.data(), None);
    assert!(exact_bits(got.data(), &naive));
    for row in got.data().chunks_exact(40) {
        assert!(row[0].is_finite(), "{row:?}");
        assert!(row[1..].iter().all(|v| *v == f32::INFINITY), "{row:?}");
    }
}

fn conv_t_case(rng: &mut Rng) -> Case {
    let groups = [1, 1, 2][rng.range(0, 2)];
    let stride = (rng.range(1, 3), rng.range(1, 3));
    let dilation = (rng.range(1, 2), rng.range(1, 2));
    let op = |s: usize, d: usize, r: &mut Rng| r.range(0, s.max(d) - 1);
    Case {
        x: [
            rng.range(1, 2),
            groups * rng.range(1, 3),
            rng.range(1, 6),
            rng.range(1, 40),
        ],
        w: [0, rng.range(1, 5), rng.range(1, 4), rng.range(1, 4)],
        stride,
        padding: (rng.range(0, 2), rng.range(0, 2)),
        dilation,
        output_padding: (op(stride.0, dilation.0, rng), op(stride.1, dilation.1, rng)),
        groups,
    }
}

fn check_conv_t<T: Element>(seed: u64, cases: usize, specials: bool) {
    let mut rng = Rng::new(seed);
    let mut ran = 0;
    for _ in 0..cases {
        let mut c = conv_t_case(&mut rng);
        c.w[0] = c.x[1];
        let fits = conv_t_out_len(
            c.x[2],
            c.w[2],
            c.stride.0,
            c.padding.0,
            c.output_padding.0,
            c.dilation.0,
        )
        .is_some()
            && conv_t_out_len(
                c.x[3],
                c.w[3],
                c.stride.1,
                c.padding.1,
                c.output_padding.1,
                c.dilation.1,
            )
            .is_some();
        if !fits {
            continue;
        }
        let x = tensor::<T>(&mut rng, &c.x, specials);
        let w = tensor::<T>(&mut rng, &c.w, specials);
        let p = ConvTranspose2dParams {
            stride: c.stride,
            padding: c.padding,
            output_padding: c.output_padding,
            dilation: c.dilation,
            groups: c.groups,
        };
        let got = conv_transpose2d(&x, &w, &p).unwrap();
        let (naive, _) = naive_conv_t(&c, x.data(), w.data());
        let ok = if specials {
            same(got.data(), &naive)
        } else {
            exact_bits(got.data(), &naive)
        };
        assert!(ok, "{:?}: conv_transpose2d differs: {c:?}", T::DTYPE);
        assert!(
            canonical_nans(got.data()),
            "{:?}: conv_t NaN: {c:?}",
            T::DTYPE
        );
        let t = conv_transpose2d_threaded(&x, &w, &p, 2).unwrap();
        assert!(exact_bits(t.data(), got.data()), "2 threads: {c:?}");
        ran += 1;
    }
    assert!(ran > cases / 3, "too few admitted cases: {ran}");
}

#[test]
fn conv_transpose2d_wide_rows_bitwise_every_dtype() {
    check_conv_t::<f32>(11, 120, false);
    check_conv_t::<f64>(12, 120, false);
    check_conv_t::<bf16>(13, 60, false);
    check_conv_t::<f16>(14, 60, false);
}

#[test]
fn conv_transpose2d_special_values_bitwise_every_dtype() {
    check_conv_t::<f32>(15, 80, true);
    check_conv_t::<f64>(16, 80, true);
    check_conv_t::<bf16>(17, 40, true);
    check_conv_t::<f16>(18, 40, true);
}

/// The documented window scan, written from the definition.
fn naive_pool<T: Element>(x: &RefTensor<T>, k: usize, s: usize) -> Vec<T> {
    let [_, _, h, w] = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
    let (ho, wo) = ((h - k) / s + 1, (w - k) / s + 1);
    let mut out = Vec::new();
    for plane in x.data().chunks_exact(h * w) {
        for oh in 0..ho {
            for ow in 0..wo {
                let mut m = plane[oh * s * w + ow * s];
                for r in 0..k {
                    for c in 0..k {
                        m = max_step(m, plane[(oh * s + r) * w + ow * s + c]);
                    }
                }
                out.push(m);
            }
        }
    }
    out
}

/// A NaN of `T` with a payload and sign drawn from `r` (quiet or signalling).
fn nan_bits<T: Element>(r: u64) -> u64 {
    let (exponent, mantissa, sign): (u64, u64, u64) = match T::DTYPE {
        DType::F64 => (0x7ff0_0000_0000_0000, 0x000f_ffff_ffff_ffff, 1 << 63),
        DType::F32 => (0x7f80_0000, 0x007f_ffff, 1 << 31),
        DType::BF16 => (0x7f80, 0x007f, 1 << 15),
        DType::F16 => (0x7c00, 0x03ff, 1 << 15),
        other => unreachable!("{other} is not a float kernel's dtype"),
    };
    let payload = 1 + (r >> 8) % mantissa;
    exponent | payload | if r & 1 == 1 { sign } else { 0 }
}

/// Windows mostly of NaNs with distinct payloads and signs, zeros of both signs and -Inf, so
/// that whole-NaN windows and zero ties are common: the pooled bits must be the scan's.
fn check_pool_nan_payloads<T: Element>(seed: u64, cases: usize) {
    let mut rng = Rng::new(seed);
    for _ in 0..cases {
        let (k, s) = (rng.range(1, 4), rng.range(1, 3));
        let shape = [1, rng.range(1, 3), rng.range(k, k + 6), rng.range(k, 70)];
        let n: usize = shape.iter().product();
        let bits: Vec<u64> = (0..n)
            .map(|_| {
                let r = rng.next_u64();
                match r % 8 {
                    0..=4 => nan_bits::<T>(r),
                    5 => T::zero().to_bits_u64(),
                    6 => T::neg_zero().to_bits_u64(),
                    _ => T::neg_infinity().to_bits_u64(),
                }
            })
            .collect();
        let any = AnyTensor::from_bits(T::DTYPE, &shape, &bits).unwrap();
        let x = T::peel(&any).unwrap();
        let p = MaxPool2dParams {
            kernel_size: k,
            stride: s,
        };
        let got = max_pool2d(x, &p).unwrap();
        assert!(
            exact_bits(got.data(), &naive_pool(x, k, s)),
            "{:?}: max_pool2d NaN payloads {shape:?} k {k} s {s}",
            T::DTYPE
        );
        let two = max_pool2d_threaded(x, &p, 2).unwrap();
        assert!(exact_bits(two.data(), got.data()), "2 threads: {shape:?}");
    }
}

#[test]
fn max_pool2d_keeps_nan_payloads_and_zero_signs_every_dtype() {
    check_pool_nan_payloads::<f32>(31, 100);
    check_pool_nan_payloads::<f64>(32, 100);
    check_pool_nan_payloads::<bf16>(33, 100);
    check_pool_nan_payloads::<f16>(34, 100);
}

fn check_pool<T: Element>(seed: u64, cases: usize) {
    let mut rng = Rng::new(seed);
    for _ in 0..cases {
        let k = rng.range(1, 4);
        let s = rng.range(1, 3);
        let shape = [
            rng.range(1, 2),
            rng.range(1, 3),
            rng.range(k, k + 7),
            rng.range(k, 90),
        ];
        // Pooling selects, never rounds: NaN payloads and zero signs must survive exactly.
        let n: usize = shape.iter().product();
        let data = (0..n)
            .map(|_| {
                let r = rng.next_u64();
                match r % 9 {
                    0 => T::nan(),
                    1 => T::zero(),
                    2 => T::neg_zero(),
                    3 => T::neg_infinity(),
                    _ => T::from_f64(value(&mut rng, false)),
                }
            })
            .collect();
        let x = RefTensor::from_vec(data, &shape).unwrap();
        let p = MaxPool2dParams {
            kernel_size: k,
            stride: s,
        };
        let got = max_pool2d(&x, &p).unwrap();
        assert!(
            exact_bits(got.data(), &naive_pool(&x, k, s)),
            "{:?}: max_pool2d {shape:?} k {k} s {s}",
            T::DTYPE
        );
        for threads in [2, 3] {
            let t = max_pool2d_threaded(&x, &p, threads).unwrap();
            assert!(
                exact_bits(t.data(), got.data()),
                "{threads} threads: {shape:?}"
            );
        }
    }
}

#[test]
fn max_pool2d_bitwise_every_dtype() {
    check_pool::<f32>(21, 150);
    check_pool::<f64>(22, 150);
    check_pool::<bf16>(23, 100);
    check_pool::<f16>(24, 100);
}
