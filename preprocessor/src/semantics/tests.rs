//! The interpreter against the hand-written oracles it replaces, on thousands of random
//! geometries of the seed's op kinds: the same values (the oracle's f64 sums), error bounds at
//! least as wide as Higham's and not much wider, the same naive nested sums in each dtype bit for
//! bit, and the same work counts. (Small programs, located errors and the grammar:
//! [`super::language_tests`].)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::verify::oracle::{self, Input};
use crate::verify::sample::{Param as SampleParam, Rng, Sample};
use fkc_provider::DType;

pub const CONV2D: &str = "# gather form: ci, kh, kw ascending, then the bias
for n, co, oh, ow in out:
  g = co / (out.dim[1] / groups)
  acc: T = 0
  for ci in 0..weight.dim[1], kh in 0..weight.dim[2], kw in 0..weight.dim[3]:
    ih = oh * stride[0] + kh * dilation[0] - padding[0]
    iw = ow * stride[1] + kw * dilation[1] - padding[1]
    if 0 <= ih < x.dim[2] && 0 <= iw < x.dim[3]:
      acc += x[n, g * weight.dim[1] + ci, ih, iw] * weight[co, ci, kh, kw]
  if present(bias):
    acc += bias[co]
  out[n, co, oh, ow] = acc
";

pub const CONV_TRANSPOSE2D: &str = "for n, co, oh, ow in out:
  out[n, co, oh, ow] = 0
cin_g = x.dim[1] / groups
for n in 0..x.dim[0], ci in 0..x.dim[1], ih in 0..x.dim[2], iw in 0..x.dim[3]:
  g = ci / cin_g
  for co in 0..weight.dim[1], kh in 0..weight.dim[2], kw in 0..weight.dim[3]:
    oh = ih * stride[0] + kh * dilation[0] - padding[0]
    ow = iw * stride[1] + kw * dilation[1] - padding[1]
    if 0 <= oh < out.dim[2] && 0 <= ow < out.dim[3]:
      out[n, g * weight.dim[1] + co, oh, ow] += x[n, ci, ih, iw] * weight[ci, co, kh, kw]
";

pub const MAX_POOL2D: &str = "for n, c, oh, ow in out:
  m = x[n, c, oh * stride, ow * stride]
  for kh in 0..kernel_size, kw in 0..kernel_size:
    m = max(m, x[n, c, oh * stride + kh, ow * stride + kw])
  out[n, c, oh, ow] = m
";

pub(super) fn tensor(name: &str, rank: usize, optional: bool) -> SigTensor {
    SigTensor {
        dtype: None,
        name: name.to_owned(),
        rank,
        optional,
    }
}

pub(super) fn param(name: &str, width: Option<usize>) -> ir::Param {
    ir::Param {
        form: match width {
            Some(width) => ir::ParamForm::Tuple(width),
            None => ir::ParamForm::Int,
        },
        name: name.to_owned(),
    }
}

pub(super) fn conv_signature(bias: bool, transposed: bool) -> Signature {
    let mut inputs = vec![tensor("x", 4, false), tensor("weight", 4, false)];
    if bias {
        inputs.push(tensor("bias", 1, true));
    }
    let mut params = vec![
        param("stride", Some(2)),
        param("padding", Some(2)),
        param("dilation", Some(2)),
        param("groups", None),
    ];
    if transposed {
        params.push(param("output_padding", Some(2)));
    }
    Signature {
        inputs,
        outputs: vec![tensor("out", 4, false)],
        params,
        undeclared_absent: true,
    }
}

pub(super) fn compile(src: &str, signature: &Signature, dtype: DType) -> ir::Program {
    let ast = parse(src).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
    check(&ast, signature, dtype).unwrap_or_else(|e| panic!("{e:?}\n{src}"))
}

/// A random conv2d geometry: (x dims, weight dims, stride, padding, dilation, groups, out dims).
struct Conv {
    x: Vec<usize>,
    w: Vec<usize>,
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    groups: usize,
    out: Vec<usize>,
}

fn random_conv(rng: &mut Rng) -> Option<Conv> {
    let r = |rng: &mut Rng, lo, hi| usize::try_from(rng.range(lo, hi)).unwrap_or(1);
    let groups = r(rng, 1, 3);
    let cin_g = r(rng, 1, 3);
    let cout_g = r(rng, 1, 3);
    let (kh, kw) = (r(rng, 1, 3), r(rng, 1, 3));
    let (h, w) = (r(rng, 1, 7), r(rng, 1, 7));
    let stride = (r(rng, 1, 3), r(rng, 1, 3));
    let padding = (r(rng, 0, 2), r(rng, 0, 2));
    let dilation = (r(rng, 1, 2), r(rng, 1, 2));
    let size = |len: usize, p: usize, d: usize, k: usize, s: usize| {
        (len + 2 * p)
            .checked_sub(d * (k - 1) + 1)
            .map(|v| v / s + 1)
    };
    let out_h = size(h, padding.0, dilation.0, kh, stride.0)?;
    let out_w = size(w, padding.1, dilation.1, kw, stride.1)?;
    let n = r(rng, 1, 2);
    Some(Conv {
        x: vec![n, groups * cin_g, h, w],
        w: vec![groups * cout_g, cin_g, kh, kw],
        stride,
        padding,
        dilation,
        groups,
        out: vec![n, groups * cout_g, out_h, out_w],
    })
}

fn values(rng: &mut Rng, dims: &[usize], dtype: DType) -> Vec<f64> {
    let count: usize = dims.iter().product();
    (0..count)
        .map(|_| rounded::round(rng.unit(), dtype))
        .collect()
}

pub(super) fn pair(v: (usize, usize)) -> ParamValue {
    ParamValue::Tuple(vec![v.0 as i64, v.1 as i64])
}

fn sample_of(conv: &Conv) -> Sample {
    let ints = |v: (usize, usize)| SampleParam::Ints(vec![v.0 as i64, v.1 as i64]);
    Sample {
        inputs: Vec::new(),
        params: vec![
            ("stride".to_owned(), ints(conv.stride)),
            ("padding".to_owned(), ints(conv.padding)),
            ("dilation".to_owned(), ints(conv.dilation)),
            ("groups".to_owned(), SampleParam::Int(conv.groups as i64)),
        ],
    }
}

#[test]
fn conv2d_semantics_agree_with_the_hand_written_oracle_on_random_geometries() {
    let mut rng = Rng::new(7);
    let mut checked = 0;
    for _ in 0..3000 {
        let Some(conv) = random_conv(&mut rng) else {
            continue;
        };
        let dtype = [DType::F32, DType::F64, DType::BF16, DType::F16][checked % 4];
        let program = compile(CONV2D, &conv_signature(true, false), dtype);
        let x = values(&mut rng, &conv.x, dtype);
        let w = values(&mut rng, &conv.w, dtype);
        let with_bias = rng.range(0, 1) == 1;
        let b = with_bias.then(|| values(&mut rng, &conv.w[..1], dtype));
        let inputs = [
            Some((conv.x.clone(), x.clone())),
            Some((conv.w.clone(), w.clone())),
            b.clone().map(|b| (vec![conv.w[0]], b)),
        ];
        let params = [
            pair(conv.stride),
            pair(conv.padding),
            pair(conv.dilation),
            ParamValue::Int(conv.groups as i64),
        ];
        let run_inputs = Inputs {
            inputs: &inputs,
            outputs: std::slice::from_ref(&conv.out),
            params: &params,
            dtype,
        };
        let exact = run(&program, &run_inputs, &Exact::default(), false).unwrap();
        let ordered = run(&program, &run_inputs, &Rounded::default(), false).unwrap();
        let old_inputs = [
            Some(Input {
                dims: conv.x.clone(),
                values: x,
            }),
            Some(Input {
                dims: conv.w.clone(),
                values: w,
            }),
            b.map(|b| Input {
                dims: vec![conv.w[0]],
                values: b,
            }),
        ];
        let sample = sample_of(&conv);
        let reference = oracle::reference("Conv2D", &old_inputs, &sample).unwrap();
        let naive = oracle::ordered("Conv2D", dtype, &old_inputs, &sample).unwrap();
        let e = Exact::default();
        for (i, cell) in exact.outputs[0].iter().enumerate() {
            let got = e.load(cell, dtype);
            assert_eq!(got.value, reference.values[i], "value {i}");
            let higham = oracle::gamma(reference.terms + 1, oracle::unit_roundoff(dtype))
                * reference.magnitude[i];
            let slack = (reference.terms as f64 + 3.0) * oracle::smallest_subnormal(dtype);
            assert!(
                got.error <= higham * 3.0 + slack,
                "bound {} far above Higham's {higham}",
                got.error
            );
            assert!(
                got.admits(naive[i]),
                "the naive sum {} outside {got:?}",
                naive[i]
            );
        }
        assert_eq!(ordered.outputs[0], naive, "naive nested sum in {dtype}");
        let (macs, visited) = reference.work.unwrap();
        assert_eq!((exact.counts.macs, exact.counts.taps), (macs, visited));
        checked += 1;
    }
    assert!(checked > 2000, "{checked}");
}

#[test]
fn transposed_conv_and_max_pool_semantics_agree_with_the_hand_written_oracles() {
    let mut rng = Rng::new(11);
    let mut checked = 0;
    for round in 0..2000 {
        let Some(conv) = random_conv(&mut rng) else {
            continue;
        };
        // transposed: x [N, Cin, H, W], weight [Cin, Cout/g, kh, kw]
        let (n, cin, h, w) = (conv.x[0], conv.x[1], conv.x[2], conv.x[3]);
        let (cout_g, kh, kw) = (conv.w[0] / conv.groups, conv.w[2], conv.w[3]);
        let wdims = vec![cin, cout_g, kh, kw];
        let size = |len: usize, s: usize, d: usize, k: usize, p: usize| {
            ((len - 1) * s + d * (k - 1) + 1).checked_sub(2 * p)
        };
        let (Some(oh), Some(ow)) = (
            size(h, conv.stride.0, conv.dilation.0, kh, conv.padding.0),
            size(w, conv.stride.1, conv.dilation.1, kw, conv.padding.1),
        ) else {
            continue;
        };
        if oh == 0 || ow == 0 {
            continue;
        }
        let out = vec![n, cout_g * conv.groups, oh, ow];
        let x = values(&mut rng, &conv.x, DType::F64);
        let wv = values(&mut rng, &wdims, DType::F64);
        let program = compile(CONV_TRANSPOSE2D, &conv_signature(false, true), DType::F64);
        let inputs = [
            Some((conv.x.clone(), x.clone())),
            Some((wdims.clone(), wv.clone())),
        ];
        let params = [
            pair(conv.stride),
            pair(conv.padding),
            pair(conv.dilation),
            ParamValue::Int(conv.groups as i64),
            pair((0, 0)),
        ];
        let run_inputs = Inputs {
            inputs: &inputs,
            outputs: std::slice::from_ref(&out),
            params: &params,
            dtype: DType::F64,
        };
        let exact = run(&program, &run_inputs, &Exact::default(), false).unwrap();
        let mut sample = sample_of(&conv);
        sample
            .params
            .push(("output_padding".to_owned(), SampleParam::Ints(vec![0, 0])));
        let old = [
            Some(Input {
                dims: conv.x.clone(),
                values: x.clone(),
            }),
            Some(Input {
                dims: wdims,
                values: wv,
            }),
        ];
        let reference = oracle::reference("ConvTranspose2D", &old, &sample).unwrap();
        let e = Exact::default();
        for (i, cell) in exact.outputs[0].iter().enumerate() {
            let got = e.load(cell, DType::F64);
            assert!(
                (got.value - reference.values[i]).abs() <= 1e-12,
                "{round}: element {i}"
            );
            assert!(got.admits(reference.values[i]));
        }
        let (macs, visited) = reference.work.unwrap();
        assert_eq!((exact.counts.macs, exact.counts.taps), (macs, visited));
        // max pooling over the same input
        let (k, s) = (conv.w[2].min(h).min(w), conv.stride.0);
        let pooled = vec![n, cin, (h - k) / s + 1, (w - k) / s + 1];
        let pool = compile(
            MAX_POOL2D,
            &Signature {
                inputs: vec![tensor("x", 4, false)],
                outputs: vec![tensor("out", 4, false)],
                params: vec![param("kernel_size", None), param("stride", None)],
                undeclared_absent: false,
            },
            DType::F64,
        );
        let pool_inputs = [Some((conv.x.clone(), x.clone()))];
        let pool_params = [ParamValue::Int(k as i64), ParamValue::Int(s as i64)];
        let result = run(
            &pool,
            &Inputs {
                inputs: &pool_inputs,
                outputs: std::slice::from_ref(&pooled),
                params: &pool_params,
                dtype: DType::F64,
            },
            &Rounded::default(),
            false,
        )
        .unwrap();
        let pool_sample = Sample {
            inputs: Vec::new(),
            params: vec![
                ("kernel_size".to_owned(), SampleParam::Int(k as i64)),
                ("stride".to_owned(), SampleParam::Int(s as i64)),
            ],
        };
        let old_pool = oracle::reference("MaxPool2D", &old[..1], &pool_sample).unwrap();
        assert_eq!(result.outputs[0], old_pool.values);
        assert_eq!(
            result.counts.compares as usize,
            old_pool.values.len() * k * k
        );
        checked += 1;
    }
    assert!(checked > 800, "{checked}");
}

#[test]
#[ignore = "a timing probe, run by hand in release"]
fn speed_probe() {
    let conv = Conv {
        x: vec![2, 8, 20, 20],
        w: vec![16, 8, 3, 3],
        stride: (1, 1),
        padding: (1, 1),
        dilation: (1, 1),
        groups: 1,
        out: vec![2, 16, 20, 20],
    };
    let mut rng = Rng::new(3);
    let dtype = DType::F32;
    let program = compile(CONV2D, &conv_signature(true, false), dtype);
    let x = values(&mut rng, &conv.x, dtype);
    let w = values(&mut rng, &conv.w, dtype);
    let inputs = [
        Some((conv.x.clone(), x.clone())),
        Some((conv.w.clone(), w.clone())),
        None,
    ];
    let params = [
        pair(conv.stride),
        pair(conv.padding),
        pair(conv.dilation),
        ParamValue::Int(1),
    ];
    let run_inputs = Inputs {
        inputs: &inputs,
        outputs: std::slice::from_ref(&conv.out),
        params: &params,
        dtype,
    };
    let t = std::time::Instant::now();
    let exact = run(&program, &run_inputs, &Exact::default(), false).unwrap();
    let t_exact = t.elapsed();
    let t = std::time::Instant::now();
    let _ = run(&program, &run_inputs, &Rounded::default(), false).unwrap();
    let t_rounded = t.elapsed();
    let old_inputs = [
        Some(Input {
            dims: conv.x.clone(),
            values: x,
        }),
        Some(Input {
            dims: conv.w.clone(),
            values: w,
        }),
    ];
    let t = std::time::Instant::now();
    let _ = oracle::reference("Conv2D", &old_inputs, &sample_of(&conv)).unwrap();
    let t_old = t.elapsed();
    println!(
        "taps {} exact {t_exact:?} rounded {t_rounded:?} old {t_old:?}",
        exact.counts.taps
    );
}
