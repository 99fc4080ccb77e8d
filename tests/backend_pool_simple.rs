//! conv2d_simple and max_pool2d: known answers, agreement with conv2d / a window-max definition,
//! NaN and signed-zero semantics of the pooling reduction, and every error path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "backend_util/mod.rs"]
mod util;

use fuel_reference_backend::ops::{
    Conv2dParams, Conv2dSimpleParams, MaxPool2dParams, conv2d, conv2d_simple, max_pool2d,
};
use fuel_reference_backend::{Element, KernelErrorKind, RefTensor, Scalar};
use half::{bf16, f16};
use util::{Rng, arange, bits, tensor};

#[test]
fn conv2d_simple_known_answer() {
    // x = arange(9) as [1,1,3,3], kernel = ones [1,1,3,3], stride 2, padding 1:
    // each output sums the 2×2 corner its window overlaps: [8, 12, 20, 24].
    let x = tensor::<f32>(&arange(&[1, 1, 3, 3]), &[1, 1, 3, 3]);
    let k = tensor::<f32>(&[1.0; 9], &[1, 1, 3, 3]);
    let p = Conv2dSimpleParams {
        stride: 2,
        padding: 1,
    };
    assert_eq!(
        conv2d_simple(&x, &k, &p).unwrap().data(),
        &[8.0, 12.0, 20.0, 24.0]
    );
}

fn simple_matches_conv2d<T: Element>(seed: u64) {
    let mut rng = Rng::new(seed);
    for _ in 0..100 {
        let xs = [
            rng.range(1, 2),
            rng.range(1, 3),
            rng.range(1, 6),
            rng.range(1, 6),
        ];
        let ks = [rng.range(1, 3), xs[1], rng.range(1, 3), rng.range(1, 3)];
        let p = Conv2dSimpleParams {
            stride: rng.range(1, 3),
            padding: rng.range(0, 2),
        };
        let x = tensor::<T>(&rng.values(util::numel(&xs)), &xs);
        let k = tensor::<T>(&rng.values(util::numel(&ks)), &ks);
        let full = Conv2dParams {
            stride: (p.stride, p.stride),
            padding: (p.padding, p.padding),
            ..Conv2dParams::default()
        };
        match (conv2d_simple(&x, &k, &p), conv2d(&x, &k, None, &full)) {
            (Ok(a), Ok(b)) => assert_eq!(bits(&a), bits(&b)),
            (Err(a), Err(b)) => {
                assert_eq!(a.kind, b.kind);
                assert_eq!(a.op, "conv2d_simple");
            }
            (a, b) => panic!("disagree: {a:?} vs {b:?}"),
        }
    }
}

#[test]
fn conv2d_simple_is_bitwise_conv2d_with_groups_one() {
    simple_matches_conv2d::<f32>(21);
    simple_matches_conv2d::<f64>(22);
    simple_matches_conv2d::<bf16>(23);
    simple_matches_conv2d::<f16>(24);
}

#[test]
fn conv2d_simple_errors() {
    let x = RefTensor::<f32>::zeros(&[1, 2, 4, 4]).unwrap();
    let k = RefTensor::<f32>::zeros(&[1, 3, 2, 2]).unwrap();
    let e = conv2d_simple(
        &x,
        &k,
        &Conv2dSimpleParams {
            stride: 1,
            padding: 0,
        },
    )
    .unwrap_err();
    assert_eq!(
        (e.op, e.kind),
        ("conv2d_simple", KernelErrorKind::ChannelMismatch)
    );
    assert!(e.message.contains("kernel [1, 3, 2, 2]"), "{e}");
    let k = RefTensor::<f32>::zeros(&[1, 2, 2, 2]).unwrap();
    let e = conv2d_simple(
        &x,
        &k,
        &Conv2dSimpleParams {
            stride: 0,
            padding: 0,
        },
    )
    .unwrap_err();
    assert_eq!(e.kind, KernelErrorKind::ZeroStride);
    let k = RefTensor::<f32>::zeros(&[1, 2, 7, 2]).unwrap();
    let e = conv2d_simple(
        &x,
        &k,
        &Conv2dSimpleParams {
            stride: 1,
            padding: 1,
        },
    )
    .unwrap_err();
    assert_eq!(e.kind, KernelErrorKind::KernelTooLarge);
}

fn pool(values: &[f64], shape: &[usize], k: usize, s: usize) -> RefTensor<f64> {
    max_pool2d(
        &tensor::<f64>(values, shape),
        &MaxPool2dParams {
            kernel_size: k,
            stride: s,
        },
    )
    .unwrap()
}

#[test]
fn max_pool2d_known_answers() {
    // x = arange(16) as [1,1,4,4]: the max of a window is its bottom-right element.
    // k=2, s=2: windows at (0,0),(0,2),(2,0),(2,2) → [5, 7, 13, 15].
    let x = arange(&[1, 1, 4, 4]);
    assert_eq!(
        pool(&x, &[1, 1, 4, 4], 2, 2).data(),
        &[5.0, 7.0, 13.0, 15.0]
    );
    // k=3, s=1: 2×2 output → [10, 11, 14, 15].
    assert_eq!(
        pool(&x, &[1, 1, 4, 4], 3, 1).data(),
        &[10.0, 11.0, 14.0, 15.0]
    );
    // Rectangular, two channels: [1,2,2,3], k=2, s=1 → per channel [4, 5] and [10, 11].
    let x = arange(&[1, 2, 2, 3]);
    let out = pool(&x, &[1, 2, 2, 3], 2, 1);
    assert_eq!(out.shape(), &[1, 2, 1, 2]);
    assert_eq!(out.data(), &[4.0, 5.0, 10.0, 11.0]);
}

#[test]
fn max_pool2d_nan_is_ignored_unless_the_whole_window_is_nan() {
    let nan = f64::NAN;
    // One window each (k = 2 over 2×2): NaN first, NaN last, NaN middle, all NaN.
    let cases: [([f64; 4], f64); 4] = [
        ([nan, 1.0, -2.0, 0.5], 1.0),
        ([1.0, -2.0, 0.5, nan], 1.0),
        ([-1.0, nan, -3.0, -2.0], -1.0),
        ([-5.0, nan, nan, nan], -5.0),
    ];
    for (window, want) in cases {
        assert_eq!(
            pool(&window, &[1, 1, 2, 2], 2, 1).data(),
            &[want],
            "{window:?}"
        );
    }
    assert!(pool(&[nan; 4], &[1, 1, 2, 2], 2, 1).data()[0].is_nan());
    // Inf is an ordinary value.
    assert_eq!(
        pool(
            &[f64::NEG_INFINITY, nan, f64::INFINITY, 1.0],
            &[1, 1, 2, 2],
            2,
            1
        )
        .data(),
        &[f64::INFINITY]
    );
    // Same semantics in bf16 (the reduction is a selection in T).
    let x = tensor::<bf16>(&[nan, 2.0, nan, 1.0], &[1, 1, 2, 2]);
    let out = max_pool2d(
        &x,
        &MaxPool2dParams {
            kernel_size: 2,
            stride: 2,
        },
    )
    .unwrap();
    assert_eq!(Scalar::to_f64(out.data()[0]), 2.0);
}

#[test]
fn max_pool2d_signed_zero_keeps_the_first_in_scan_order() {
    let z = pool(&[-0.0, 0.0, -1.0, -2.0], &[1, 1, 2, 2], 2, 1).data()[0];
    assert_eq!(z.to_bits(), (-0.0f64).to_bits());
    let z = pool(&[-1.0, 0.0, -0.0, -2.0], &[1, 1, 2, 2], 2, 1).data()[0];
    assert_eq!(z.to_bits(), 0.0f64.to_bits());
}

#[test]
fn max_pool2d_matches_window_definition_and_is_exact() {
    let mut rng = Rng::new(31);
    for _ in 0..200 {
        let xs = [
            rng.range(1, 2),
            rng.range(1, 3),
            rng.range(1, 7),
            rng.range(1, 7),
        ];
        let k = rng.range(1, 4);
        let s = rng.range(1, 3);
        let xv: Vec<f64> = rng.values(util::numel(&xs));
        let x = tensor::<f16>(&xv, &xs);
        let got = max_pool2d(
            &x,
            &MaxPool2dParams {
                kernel_size: k,
                stride: s,
            },
        );
        if k > xs[2] || k > xs[3] {
            assert_eq!(got.unwrap_err().kind, KernelErrorKind::KernelTooLarge);
            continue;
        }
        let got = got.unwrap();
        let (ho, wo) = ((xs[2] - k) / s + 1, (xs[3] - k) / s + 1);
        assert_eq!(got.shape(), &[xs[0], xs[1], ho, wo]);
        let mut i = 0;
        for plane in xv.chunks(xs[2] * xs[3]) {
            for oh in 0..ho {
                for ow in 0..wo {
                    let m = (0..k)
                        .flat_map(|a| (0..k).map(move |b| (a, b)))
                        .map(|(a, b)| plane[(oh * s + a) * xs[3] + ow * s + b])
                        .fold(f64::NEG_INFINITY, f64::max);
                    assert_eq!(Scalar::to_f64(got.data()[i]), m);
                    i += 1;
                }
            }
        }
    }
}

#[test]
fn max_pool2d_errors() {
    let x = RefTensor::<f32>::zeros(&[1, 1, 3, 4]).unwrap();
    let check = |p: MaxPool2dParams, kind| {
        let e = max_pool2d(&x, &p).unwrap_err();
        assert_eq!((e.op, e.kind), ("max_pool2d", kind), "{e}");
        assert!(
            e.to_string().contains("kernel_size") && e.message.contains("x [1, 1, 3, 4]"),
            "{e}"
        );
    };
    check(
        MaxPool2dParams {
            kernel_size: 0,
            stride: 1,
        },
        KernelErrorKind::ZeroSize,
    );
    check(
        MaxPool2dParams {
            kernel_size: 2,
            stride: 0,
        },
        KernelErrorKind::ZeroStride,
    );
    check(
        MaxPool2dParams {
            kernel_size: 4,
            stride: 1,
        },
        KernelErrorKind::KernelTooLarge,
    );
    let e = max_pool2d(
        &RefTensor::<f32>::zeros(&[3, 4]).unwrap(),
        &MaxPool2dParams {
            kernel_size: 1,
            stride: 1,
        },
    );
    assert_eq!(e.unwrap_err().kind, KernelErrorKind::Rank);
    let e = max_pool2d(
        &RefTensor::<f32>::zeros(&[1, 2, 0, 4]).unwrap(),
        &MaxPool2dParams {
            kernel_size: 1,
            stride: 1,
        },
    );
    assert_eq!(e.unwrap_err().kind, KernelErrorKind::ZeroSize);
    // an empty batch, or no channels, pools to an empty output of the pooled shape
    let params = MaxPool2dParams {
        kernel_size: 2,
        stride: 1,
    };
    for shape in [[1, 0, 3, 4], [0, 2, 3, 4]] {
        let out = max_pool2d(&RefTensor::<f32>::zeros(&shape).unwrap(), &params).unwrap();
        assert_eq!(out.shape(), &[shape[0], shape[1], 2, 3]);
        assert!(out.data().is_empty());
    }
}
