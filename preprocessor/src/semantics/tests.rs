//! The interpreter against the hand-written oracles it replaces, on thousands of random
//! geometries of the seed's op kinds: the same values (the oracle's f64 sums), error bounds at
//! least as wide as Higham's and not much wider, the same naive nested sums in each dtype bit for
//! bit, and the same work counts. Plus located errors on programs that go wrong.
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
        name: name.to_owned(),
        rank,
        optional,
    }
}

pub(super) fn param(name: &str, width: Option<usize>) -> ir::Param {
    ir::Param {
        name: name.to_owned(),
        width,
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

fn pair(v: (usize, usize)) -> ParamValue {
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

fn relu_program() -> (ir::Program, Signature) {
    let signature = Signature {
        inputs: vec![tensor("x", 2, false)],
        outputs: vec![tensor("out", 2, false)],
        params: Vec::new(),
        undeclared_absent: false,
    };
    (
        compile(
            "for i in out:\n  out[i] = max(x[i], 0)\n",
            &signature,
            DType::F32,
        ),
        signature,
    )
}

#[test]
fn a_whole_index_loops_over_any_rank_and_counts_its_work() {
    let (program, _) = relu_program();
    let inputs = [Some((
        vec![2, 3],
        vec![-1.0, 2.0, f64::NAN, 0.5, -0.0, 3.0],
    ))];
    let result = run(
        &program,
        &Inputs {
            inputs: &inputs,
            outputs: &[vec![2, 3]],
            params: &[],
            dtype: DType::F32,
        },
        &Rounded::default(),
        false,
    )
    .unwrap();
    let out = &result.outputs[0];
    assert_eq!((out[0], out[1], out[3], out[5]), (0.0, 2.0, 0.5, 3.0));
    assert!(out[2].is_nan() && out[4].is_sign_negative());
    assert_eq!(result.counts.ops, 6);
    assert_eq!(result.counts.read[0], 6);
    assert_eq!(result.counts.written[1], 6);
}

#[test]
fn a_trace_lists_the_inputs_an_output_element_reads_in_order() {
    let signature = conv_signature(true, false);
    let program = compile(CONV2D, &signature, DType::F64);
    // x [1,1,2,2] = 1..4, weight [1,1,2,2] = ones, bias [1] = 10: one output, 1+2+3+4+10
    let inputs = [
        Some((vec![1, 1, 2, 2], vec![1.0, 2.0, 3.0, 4.0])),
        Some((vec![1, 1, 2, 2], vec![1.0; 4])),
        Some((vec![1], vec![10.0])),
    ];
    let params = [pair((1, 1)), pair((0, 0)), pair((1, 1)), ParamValue::Int(1)];
    let result = run(
        &program,
        &Inputs {
            inputs: &inputs,
            outputs: &[vec![1, 1, 1, 1]],
            params: &params,
            dtype: DType::F64,
        },
        &Rounded::default(),
        true,
    )
    .unwrap();
    assert_eq!(result.outputs[0], vec![20.0]);
    let steps = &result.trace.unwrap()[0][0];
    let reads: Vec<Vec<(usize, usize)>> = steps.iter().map(|s| s.reads.clone()).collect();
    assert_eq!(
        reads,
        vec![
            vec![(0, 0), (1, 0)],
            vec![(0, 1), (1, 1)],
            vec![(0, 2), (1, 2)],
            vec![(0, 3), (1, 3)],
            vec![(2, 0)],
        ]
    );
    let terms: Vec<f64> = steps.iter().map(|s| s.value).collect();
    assert_eq!(terms, vec![1.0, 2.0, 3.0, 4.0, 10.0]);
}

/// The error of `src` (which must check) run on a 1×1×3×3 input with parameters (1, 1).
fn run_error(src: &str) -> SemanticsError {
    let signature = Signature {
        inputs: vec![tensor("x", 4, false), tensor("bias", 1, true)],
        outputs: vec![tensor("out", 4, false)],
        params: vec![param("stride", Some(2))],
        undeclared_absent: false,
    };
    let program = compile(src, &signature, DType::F32);
    let inputs = [Some((vec![1, 1, 3, 3], vec![0.5; 9])), None];
    run(
        &program,
        &Inputs {
            inputs: &inputs,
            outputs: &[vec![1, 1, 3, 3]],
            params: &[pair((1, 1))],
            dtype: DType::F32,
        },
        &Exact::default(),
        false,
    )
    .unwrap_err()
}

#[test]
fn run_errors_are_located_in_the_pseudo_code() {
    let off_by_one = "for n, c, h, w in out:\n  out[n, c, h, w] = x[n, c, h + stride[0], w]\n";
    let e = run_error(off_by_one);
    assert_eq!(e.kind, SemanticsErrorKind::Run);
    assert_eq!(&off_by_one[e.span.start..e.span.end], "h + stride[0]");
    assert!(
        e.message.contains("index 3 is outside `x` on axis 2"),
        "{}",
        e.message
    );
    let absent = "for n, c, h, w in out:\n  out[n, c, h, w] = bias[c]\n";
    assert!(run_error(absent).message.contains("absent"));
    let unwritten = "for n, c, h, w in out:\n  if h < 2:\n    out[n, c, h, w] = 0\n";
    assert!(
        run_error(unwritten)
            .message
            .contains("`out[0, 0, 2, 0]` is never written")
    );
    let unread = "for n, c, h, w in out:\n  out[n, c, h, w] += 1\n";
    assert!(
        run_error(unread)
            .message
            .contains("read before it is written")
    );
    let endless = "for a in 0..100000, b in 0..100000, c in 0..100000:\n  d = a\nfor i in out:\n  out[i] = 0\n";
    assert_eq!(run_error(endless).kind, SemanticsErrorKind::Budget);
}

#[test]
fn check_errors_name_what_is_wrong_with_a_did_you_mean() {
    let signature = conv_signature(true, false);
    let errors = |src: &str| check(&parse(src).unwrap(), &signature, DType::F32).unwrap_err();
    let e = errors("for n, co, oh, ow in out:\n  out[n, co, oh, ow] = wieght[0, 0, 0, 0]\n");
    assert_eq!(e[0].kind, SemanticsErrorKind::UnknownName);
    assert_eq!(e[0].help.as_deref(), Some("did you mean `weight`?"));
    let e = errors("for n, co in out:\n  out[n, co, 0, 0] = 1\n");
    assert!(e[0].message.contains("rank 4"));
    let e = errors("for i in out:\n  if x[0, 0, 0, 0] > 0:\n    out[i] = 1\n");
    assert!(e[0].message.contains("tests indices"));
    let e = errors("for i in out:\n  x[i] = 1\n");
    assert!(e[0].message.contains("is an input"));
    let e = errors("for i in out:\n  out[i] = exq(1.0)\n");
    assert_eq!(e[0].help.as_deref(), Some("did you mean `exp`?"));
    let e = errors("for i in out:\n  out[i] = stride + 1\n");
    assert_eq!(e[0].kind, SemanticsErrorKind::Type);
}

#[test]
fn highlighting_classes_keywords_names_numbers_and_comments() {
    let src = "for i in out:  # every element\n  out[i] = max(x[i], 0.5)\n";
    let classes: Vec<(&str, Highlight)> = highlight(src)
        .into_iter()
        .map(|(r, h)| (&src[r], h))
        .collect();
    assert!(classes.contains(&("for", Highlight::Keyword)));
    assert!(classes.contains(&("max", Highlight::Function)));
    assert!(classes.contains(&("0.5", Highlight::Number)));
    assert!(classes.contains(&("# every element", Highlight::Comment)));
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

#[test]
fn the_convolution_tap_nest_is_planned() {
    let program = compile(CONV2D, &conv_signature(true, false), DType::F32);
    fn planned(ops: &[ir::Op]) -> Vec<usize> {
        ops.iter()
            .flat_map(|op| match op {
                ir::Op::For {
                    plan: Some(plan), ..
                } => vec![plan.levels.len()],
                ir::Op::For { body, .. } => planned(body),
                ir::Op::If {
                    then, otherwise, ..
                } => {
                    let mut v = planned(then);
                    v.extend(planned(otherwise));
                    v
                }
                _ => Vec::new(),
            })
            .collect()
    }
    assert_eq!(planned(&program.body), vec![3]);
}

#[test]
fn guarded_and_ranged_axes_need_no_check_in_the_convolution_nest() {
    let program = compile(CONV2D, &conv_signature(true, false), DType::F32);
    fn plans(ops: &[ir::Op]) -> Vec<&fast::NestPlan> {
        ops.iter()
            .flat_map(|op| match op {
                ir::Op::For {
                    plan: Some(plan), ..
                } => vec![plan.as_ref()],
                ir::Op::For { body, .. } => plans(body),
                _ => Vec::new(),
            })
            .collect()
    }
    let plan = plans(&program.body)[0];
    let per_level: Vec<usize> = plan.checks.iter().map(Vec::len).collect();
    // ci level: x's channel (g·Cin/g + ci is not ci's own range); kh, kw levels: nothing;
    // on entry: x's n, weight's co
    assert_eq!(per_level, vec![1, 0, 0, 2]);
}

#[test]
fn a_selection_of_exact_values_is_exact() {
    let (_, signature) = relu_program();
    let program = compile(
        "for i in out:\n  out[i] = max(x[i], 0)\n",
        &signature,
        DType::F32,
    );
    let inputs = [Some((vec![1, 3], vec![-1.0, 2.0, -0.0]))];
    let exact = Exact::default();
    let result = run(
        &program,
        &Inputs {
            inputs: &inputs,
            outputs: &[vec![1, 3]],
            params: &[],
            dtype: DType::F32,
        },
        &exact,
        false,
    )
    .unwrap();
    let got: Vec<Approx> = result.outputs[0]
        .iter()
        .map(|c| exact.load(c, DType::F32))
        .collect();
    assert!(got.iter().all(|a| a.error == 0.0), "{got:?}");
}

/// The format reference's grammar of the semantics is this module's, and what it lists parses.
#[test]
fn the_format_reference_states_the_grammar_the_parser_reads() {
    let reference = include_str!("../../../book/format.md");
    let section = reference
        .split("## Semantics\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a Semantics section");
    let block = |text: &str, fence: &str| -> String {
        let start = text.find(fence).expect(fence) + fence.len();
        text[start..]
            .split("```")
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    let module = include_str!("mod.rs");
    let documented: String = block(module, "//! ```text\n")
        .lines()
        .map(|line| {
            line.strip_prefix("//! ")
                .unwrap_or(line.trim_start_matches("//!"))
        })
        .map(|line| format!("{line}\n"))
        .collect::<String>()
        .trim_end_matches(['/', '!', '\n'])
        .to_owned();
    assert!(
        documented.contains("program   = { statement }"),
        "{documented}"
    );
    assert_eq!(
        block(section, "```text\n").trim_end(),
        documented.trim_end()
    );
    // The example parses, and every DTYPE of the grammar is accepted as an accumulator's.
    let example = block(section, "```yaml\nsemantics: |\n");
    let example: String = example
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("  ").unwrap_or(l)))
        .collect();
    parse(&example).unwrap_or_else(|e| panic!("{e:?}\n{example}"));
    for dtype in ["T", "f64", "f32", "bf16", "f16"] {
        let program = format!("for i in out:\n  acc: {dtype} = 0\n  out[i] = acc\n");
        parse(&program).unwrap_or_else(|e| panic!("{dtype}: {e:?}"));
    }
    // Every function the reference names is one the checker knows.
    let functions = section
        .split("**Functions**: ")
        .nth(1)
        .and_then(|rest| rest.split(" on values").next())
        .expect("the functions");
    for name in functions.trim_matches('`').split_whitespace() {
        assert!(
            ir::Func::parse(name).is_some(),
            "`{name}` is not a function"
        );
    }
    for special in ["select(", "cast(", "present(", "isnan("] {
        assert!(section.contains(special), "{special}");
    }
}
