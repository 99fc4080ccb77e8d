//! conv2d: known answers on arange inputs, seeded properties against a naive nested loop
//! (bitwise) and a gather-form f64 definition (error bound), edge cases and every error path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "backend_util/mod.rs"]
mod util;

use fuel_reference_backend::ops::{Conv2dParams, conv2d};
use fuel_reference_backend::{Element, KernelErrorKind, RefTensor, Scalar};
use half::{bf16, f16};
use util::{
    Case, Rng, arange, assert_within_bound, bits, f64s, naive_conv2d, oracle_conv2d, tensor,
};

fn params(c: &Case) -> Conv2dParams {
    Conv2dParams {
        stride: c.stride,
        padding: c.padding,
        dilation: c.dilation,
        groups: c.groups,
    }
}

fn run(c: &Case, x: &[f64], w: &[f64], bias: Option<&[f64]>) -> RefTensor<f64> {
    let b = bias.map(|b| tensor::<f64>(b, &[b.len()]));
    conv2d(&tensor(x, &c.x), &tensor(w, &c.w), b.as_ref(), &params(c)).unwrap()
}

fn case(x: [usize; 4], w: [usize; 4]) -> Case {
    Case {
        x,
        w,
        stride: (1, 1),
        padding: (0, 0),
        dilation: (1, 1),
        output_padding: (0, 0),
        groups: 1,
    }
}

#[test]
fn known_answer_two_channels_with_bias() {
    // x = arange(18) as [1, 2, 3, 3]: ch0 = [[0,1,2],[3,4,5],[6,7,8]], ch1 = ch0 + 9.
    // w = arange(8) as [1, 2, 2, 2]: w0 = [[0,1],[2,3]], w1 = [[4,5],[6,7]]; bias = [10].
    // out[0,0] = (0·0 + 1·1 + 2·3 + 3·4) + (4·9 + 5·10 + 6·12 + 7·13) + 10 = 19 + 249 + 10 = 278
    // out[0,1] = (0·1 + 1·2 + 2·4 + 3·5) + (4·10 + 5·11 + 6·13 + 7·14) + 10 = 25 + 271 + 10 = 306
    // out[1,0] = (0·3 + 1·4 + 2·6 + 3·7) + (4·12 + 5·13 + 6·15 + 7·16) + 10 = 37 + 315 + 10 = 362
    // out[1,1] = (0·4 + 1·5 + 2·7 + 3·8) + (4·13 + 5·14 + 6·16 + 7·17) + 10 = 43 + 337 + 10 = 390
    let c = case([1, 2, 3, 3], [1, 2, 2, 2]);
    let out = run(&c, &arange(&c.x), &arange(&c.w), Some(&[10.0]));
    assert_eq!(out.shape(), &[1, 1, 2, 2]);
    assert_eq!(out.data(), &[278.0, 306.0, 362.0, 390.0]);
}

#[test]
fn known_answer_stride_two_padding_one() {
    // x = arange(9) as [1,1,3,3], w = ones [1,1,3,3], stride 2, padding 1 → Hout = (3+2-3)/2+1 = 2.
    // Each output sums the 2×2 corner of x its window overlaps (padding taps skipped):
    // [0+1+3+4, 1+2+4+5, 3+4+6+7, 4+5+7+8] = [8, 12, 20, 24].
    let c = Case {
        stride: (2, 2),
        padding: (1, 1),
        ..case([1, 1, 3, 3], [1, 1, 3, 3])
    };
    let out = run(&c, &arange(&c.x), &[1.0; 9], None);
    assert_eq!(out.data(), &[8.0, 12.0, 20.0, 24.0]);
}

#[test]
fn known_answer_depthwise_and_dilation_and_rectangular() {
    // Depthwise (groups = Cin = 2): x = arange(8) as [1,2,2,2], w = [2, 3] as [2,1,1,1]:
    // ch0·2 = [0, 2, 4, 6], ch1·3 = [4,5,6,7]·3 = [12, 15, 18, 21].
    let c = Case {
        groups: 2,
        ..case([1, 2, 2, 2], [2, 1, 1, 1])
    };
    let out = run(&c, &arange(&c.x), &[2.0, 3.0], None);
    assert_eq!(out.data(), &[0.0, 2.0, 4.0, 6.0, 12.0, 15.0, 18.0, 21.0]);

    // Dilation (2, 2): x = arange(9) as [1,1,3,3], w = ones [1,1,2,2] touches the corners:
    // 0 + 2 + 6 + 8 = 16.
    let c = Case {
        dilation: (2, 2),
        ..case([1, 1, 3, 3], [1, 1, 2, 2])
    };
    assert_eq!(run(&c, &arange(&c.x), &[1.0; 4], None).data(), &[16.0]);

    // Rectangular, stride (1, 2): x = arange(8) as [1,1,2,4] = [[0,1,2,3],[4,5,6,7]],
    // w = [[1, 10]] as [1,1,1,2] → Hout = 2, Wout = (4-2)/2+1 = 2:
    // [0+10, 2+30, 4+50, 6+70] = [10, 32, 54, 76].
    let c = Case {
        stride: (1, 2),
        ..case([1, 1, 2, 4], [1, 1, 1, 2])
    };
    let out = run(&c, &arange(&c.x), &[1.0, 10.0], None);
    assert_eq!(out.shape(), &[1, 1, 2, 2]);
    assert_eq!(out.data(), &[10.0, 32.0, 54.0, 76.0]);
}

/// A random in- or out-of-domain geometry.
fn random_case(rng: &mut Rng) -> Case {
    let groups = rng.range(1, 3);
    let cin_g = rng.range(1, 3);
    let cout_g = rng.range(1, 3);
    Case {
        x: [
            rng.range(1, 2),
            groups * cin_g,
            rng.range(1, 7),
            rng.range(1, 7),
        ],
        w: [groups * cout_g, cin_g, rng.range(1, 4), rng.range(1, 4)],
        stride: (rng.range(1, 3), rng.range(1, 3)),
        padding: (rng.range(0, 3), rng.range(0, 3)),
        dilation: (rng.range(1, 3), rng.range(1, 3)),
        output_padding: (0, 0),
        groups,
    }
}

fn check_bitwise_and_bound<T: Element>(seed: u64, cases: usize) -> (usize, usize) {
    let mut rng = Rng::new(seed);
    let (mut accepted, mut rejected) = (0, 0);
    for _ in 0..cases {
        let c = random_case(&mut rng);
        let xv = rng.values(util::numel(&c.x));
        let wv = rng.values(util::numel(&c.w));
        let bv = rng.values(c.w[0]);
        let bias = (rng.range(0, 1) == 1).then_some(&bv[..]);
        let (x, w) = (tensor::<T>(&xv, &c.x), tensor::<T>(&wv, &c.w));
        let b = bias.map(|b| tensor::<T>(b, &[b.len()]));
        let got = conv2d(&x, &w, b.as_ref(), &params(&c));
        let Some((oracle, shape)) = oracle_conv2d(&c, &xv, &wv, bias) else {
            let err = got.expect_err("out of domain must be rejected");
            assert_eq!(err.kind, KernelErrorKind::KernelTooLarge, "{c:?}");
            rejected += 1;
            continue;
        };
        let got = got.unwrap_or_else(|e| panic!("{c:?}: {e}"));
        assert_eq!(got.shape(), &shape, "{c:?}");
        let b_t: Option<Vec<T>> = b.as_ref().map(|b| b.data().to_vec());
        let (naive, _) = naive_conv2d(&c, x.data(), w.data(), b_t.as_deref());
        let naive_bits: Vec<u64> = naive.iter().map(|v| v.to_bits_u64()).collect();
        assert_eq!(
            bits(&got),
            naive_bits,
            "not bitwise the naive nested sum: {c:?}"
        );
        assert_within_bound::<T>(&f64s(&got), &oracle, &format!("{c:?}"));
        accepted += 1;
    }
    (accepted, rejected)
}

#[test]
fn property_matches_naive_bitwise_and_oracle_within_bound() {
    let (a, r) = check_bitwise_and_bound::<f64>(1, 300);
    assert!(
        a > 100 && r > 10,
        "sampling must hit both domains: {a} accepted, {r} rejected"
    );
    check_bitwise_and_bound::<f32>(2, 300);
    check_bitwise_and_bound::<bf16>(3, 200);
    check_bitwise_and_bound::<f16>(4, 200);
}

#[test]
fn wide_rows_match_naive_bitwise() {
    // Rows long enough for the vectorised path, with random non-dyadic values so that the
    // summation order matters.
    let mut rng = Rng::new(99);
    let c = Case {
        padding: (1, 2),
        stride: (1, 1),
        ..case([1, 3, 9, 37], [4, 3, 3, 5])
    };
    let xv: Vec<f64> = (0..util::numel(&c.x))
        .map(|_| rng.next_u64() as f64 / u64::MAX as f64 - 0.5)
        .collect();
    let wv: Vec<f64> = (0..util::numel(&c.w))
        .map(|_| rng.next_u64() as f64 / u64::MAX as f64 - 0.5)
        .collect();
    let (x, w) = (tensor::<f32>(&xv, &c.x), tensor::<f32>(&wv, &c.w));
    let got = conv2d(&x, &w, None, &params(&c)).unwrap();
    let (naive, _) = naive_conv2d(&c, x.data(), w.data(), None);
    assert_eq!(got.data(), &naive[..]);
    let again = conv2d(&x, &w, None, &params(&c)).unwrap();
    assert_eq!(
        bits(&got),
        bits(&again),
        "repeated runs must be bit-identical"
    );
}

#[test]
fn nan_and_inf_weights_on_skipped_padding_taps_never_reach_the_sum() {
    // 1×1 input, 3×3 kernel, padding 1: only the centre tap is ever valid.
    let c = Case {
        padding: (1, 1),
        ..case([1, 1, 1, 1], [1, 1, 3, 3])
    };
    let w = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        2.0,
        f64::NAN,
        f64::INFINITY,
        f64::NAN,
        f64::NAN,
    ];
    let out = run(&c, &[3.0], &w, None);
    assert_eq!(out.data(), &[6.0]);
    let out32 = conv2d(
        &tensor::<f32>(&[3.0], &c.x),
        &tensor::<f32>(&w, &c.w),
        None,
        &params(&c),
    )
    .unwrap();
    assert_eq!(out32.data(), &[6.0]);
}

#[test]
fn signed_zero_follows_the_documented_sum() {
    // acc starts at +0.0; +0.0 + (-1·0) = +0.0 (IEEE: x + (-0) = x for x = +0).
    let c = case([1, 1, 1, 1], [1, 1, 1, 1]);
    let out = run(&c, &[-1.0], &[0.0], None);
    assert_eq!(out.data()[0].to_bits(), 0.0f64.to_bits());
    // With bias -0.0: +0.0 + -0.0 = +0.0.
    let out = run(&c, &[-1.0], &[0.0], Some(&[-0.0]));
    assert_eq!(out.data()[0].to_bits(), 0.0f64.to_bits());
    // All taps skipped (output entirely in padding) gives the bias alone added to +0.0.
    let c = Case {
        padding: (2, 2),
        ..case([1, 1, 1, 1], [1, 1, 1, 1])
    };
    let out = run(&c, &[5.0], &[1.0], Some(&[-3.0]));
    assert_eq!(out.shape(), &[1, 1, 5, 5]);
    assert_eq!(out.data()[0], -3.0);
    assert_eq!(out.data()[12], 2.0);
}

#[test]
fn half_precision_accumulates_in_t_not_f32() {
    // bf16 has 8 significand bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 and rounds to 1.
    // Terms (1, 2^-8, 2^-8) summed in bf16: (0 + 1) = 1; 1 + 2^-8 → 1; 1 + 2^-8 → 1 ⇒ 1.0.
    // Summed in f32 and rounded once: 1 + 2^-7 = 1.0078125 (exact in bf16). The kernel must
    // give the T answer, 1.0.
    let c = case([1, 3, 1, 1], [1, 3, 1, 1]);
    let xv = [1.0, 1.0 / 256.0, 1.0 / 256.0];
    let out = conv2d(
        &tensor::<bf16>(&xv, &c.x),
        &tensor::<bf16>(&[1.0; 3], &c.w),
        None,
        &params(&c),
    )
    .unwrap();
    let widened: f32 = xv.iter().map(|&v| v as f32).sum();
    assert_eq!(bf16::from_f32(widened).to_f64(), 1.0078125);
    assert_eq!(Scalar::to_f64(out.data()[0]), 1.0);

    // f16 has 11 significand bits: the same with 2^-11.
    let xv = [1.0, 1.0 / 2048.0, 1.0 / 2048.0];
    let out = conv2d(
        &tensor::<f16>(&xv, &c.x),
        &tensor::<f16>(&[1.0; 3], &c.w),
        None,
        &params(&c),
    )
    .unwrap();
    let widened: f32 = xv.iter().map(|&v| v as f32).sum();
    assert_eq!(f16::from_f32(widened).to_f64(), 1.0 + 1.0 / 1024.0);
    assert_eq!(Scalar::to_f64(out.data()[0]), 1.0);
}

fn err(c: &Case, bias: Option<&[usize]>) -> fuel_reference_backend::KernelError {
    let x = RefTensor::<f32>::zeros(&c.x).unwrap();
    let w = RefTensor::<f32>::zeros(&c.w).unwrap();
    let b = bias.map(|s| RefTensor::<f32>::zeros(s).unwrap());
    conv2d(&x, &w, b.as_ref(), &params(c)).expect_err("must be rejected")
}

#[test]
fn every_geometry_error_is_typed_and_names_the_op() {
    let ok = case([1, 4, 5, 5], [2, 2, 3, 3]);
    let ok = Case { groups: 2, ..ok };
    let cases: Vec<(Case, Option<&[usize]>, KernelErrorKind)> = vec![
        (
            Case {
                w: [2, 3, 3, 3],
                ..ok
            },
            None,
            KernelErrorKind::ChannelMismatch,
        ),
        (
            Case {
                w: [3, 2, 3, 3],
                ..ok
            },
            None,
            KernelErrorKind::ChannelMismatch,
        ),
        (
            Case { groups: 3, ..ok },
            None,
            KernelErrorKind::ChannelMismatch,
        ),
        (Case { groups: 0, ..ok }, None, KernelErrorKind::BadParams),
        (
            Case {
                stride: (0, 1),
                ..ok
            },
            None,
            KernelErrorKind::ZeroStride,
        ),
        (
            Case {
                stride: (1, 0),
                ..ok
            },
            None,
            KernelErrorKind::ZeroStride,
        ),
        (
            Case {
                dilation: (0, 1),
                ..ok
            },
            None,
            KernelErrorKind::BadParams,
        ),
        (
            Case {
                w: [2, 2, 6, 3],
                ..ok
            },
            None,
            KernelErrorKind::KernelTooLarge,
        ),
        (
            Case {
                dilation: (1, 3),
                ..ok
            },
            None,
            KernelErrorKind::KernelTooLarge,
        ),
        (
            Case {
                x: [0, 4, 5, 5],
                ..ok
            },
            None,
            KernelErrorKind::ZeroSize,
        ),
        (
            Case {
                w: [2, 2, 0, 3],
                ..ok
            },
            None,
            KernelErrorKind::ZeroSize,
        ),
        (
            Case {
                padding: (usize::MAX, 0),
                ..ok
            },
            None,
            KernelErrorKind::Overflow,
        ),
        (
            Case {
                dilation: (usize::MAX, 1),
                ..ok
            },
            None,
            KernelErrorKind::Overflow,
        ),
        (ok, Some(&[3]), KernelErrorKind::ShapeMismatch),
        (ok, Some(&[2, 1]), KernelErrorKind::Rank),
    ];
    for (c, bias, kind) in cases {
        let e = err(&c, bias);
        assert_eq!(e.kind, kind, "{c:?}: {e}");
        assert_eq!(e.op, "conv2d");
        assert!(e.to_string().starts_with("conv2d: "), "{e}");
        assert!(
            e.message.contains("x [") && e.message.contains("groups"),
            "{e}"
        );
    }
    let x = RefTensor::<f32>::zeros(&[4, 5, 5]).unwrap();
    let w = RefTensor::<f32>::zeros(&[2, 2, 3, 3]).unwrap();
    let e = conv2d(&x, &w, None, &Conv2dParams::default()).unwrap_err();
    assert_eq!(e.kind, KernelErrorKind::Rank);
    let e = conv2d(&w, &x, None, &Conv2dParams::default()).unwrap_err();
    assert_eq!(e.kind, KernelErrorKind::Rank);
    // The message names the offending weight shape and the expected Cin/groups.
    let e = err(
        &Case {
            w: [2, 3, 3, 3],
            ..ok
        },
        None,
    );
    assert!(
        e.message
            .contains("weight [2, 3, 3, 3] expects Cin/groups = 3"),
        "{e}"
    );
}

#[test]
fn output_shape_overflow_is_an_error() {
    // A 1×1 kernel with huge padding: (1 + 2p) squared elements overflow usize.
    let p = Conv2dParams {
        padding: (1 << 31, 1 << 31),
        ..Conv2dParams::default()
    };
    let e = p.out_dims(&[4, 1, 1, 1], &[1, 1, 1, 1]).unwrap_err();
    assert_eq!(e.kind, KernelErrorKind::Overflow, "{e}");
}
