//! The language on small programs: a whole index over any rank and the work it counts, traces,
//! located run and check errors, highlighting, the planned convolution nest and its checks, an
//! exact selection, and the grammar the format reference states.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::tests::{CONV2D, compile, conv_signature, pair, param, tensor};
use super::*;
use fkc_provider::DType;

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
    let huge = "big: f64[2048, 1024] = 0\nfor i in out:\n  out[i] = 0\n";
    assert!(run_error(huge).message.contains("local tensor of more than"));
}

#[test]
fn a_contract_s_runs_share_one_step_budget() {
    // Each run takes about 2000 steps (a loop of 1000, a step per iteration and per statement).
    let busy = "for t in 0..1000:\n  d = t\nfor i in out:\n  out[i] = 0\n";
    let signature = Signature {
        inputs: vec![tensor("x", 4, false)],
        outputs: vec![tensor("out", 4, false)],
        params: Vec::new(),
        undeclared_absent: false,
    };
    let program = compile(busy, &signature, DType::F32);
    let inputs = [Some((vec![1, 1, 1, 1], vec![0.5]))];
    let on = Inputs {
        inputs: &inputs,
        outputs: &[vec![1, 1, 1, 1]],
        params: &[],
        dtype: DType::F32,
    };
    let runs = |once: &dyn Fn() -> Result<(), SemanticsError>| (0..4).map(|_| once()).collect::<Vec<_>>();
    for trace in [false, true] {
        let once = || run(&program, &on, &Exact::default(), trace).map(|_| ());
        assert!(runs(&once).iter().all(Result::is_ok), "no budget: every run");
        let ran = fuel::within(5000, || runs(&once));
        assert!(ran[0].is_ok() && ran[1].is_ok(), "{ran:?}");
        let refused = ran[2].as_ref().unwrap_err();
        assert_eq!(refused.kind, SemanticsErrorKind::Budget);
        assert!(
            refused.message.contains("more than 5000 steps over this contract's samples"),
            "{}",
            refused.message
        );
        assert!(ran[3].is_err(), "the budget stays spent");
    }
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

/// A reduction written once for every rank: `reduced(i, axes, keepdim)` is the output element
/// input element `i` adds to, `numel` a tensor's element count; axes that repeat, or an output
/// of another rank than the reduced index, fail on the run (FKC0504's kind).
#[test]
fn a_reduction_over_whole_indices_sums_removes_or_keeps_axes() {
    const MEAN: &str = "for o in out:\n  out[o] = -0.0\nfor i in x:\n  out[reduced(i, axes, keepdim)] += x[i]\nfor o in out:\n  out[o] = out[o] / (numel(x) / numel(out))\n";
    let signature = |out_rank| Signature {
        inputs: vec![tensor("x", 3, false)],
        outputs: vec![tensor("out", out_rank, false)],
        params: vec![
            ir::Param {
                name: "axes".to_owned(),
                form: ir::ParamForm::List,
            },
            ir::Param {
                name: "keepdim".to_owned(),
                form: ir::ParamForm::Bool,
            },
        ],
        undeclared_absent: false,
    };
    // x [2, 1, 3] = 0..6; the mean over axes (0, -1): out [1] (or [1, 1, 1] kept) = 15 / 6
    let x = [Some((vec![2, 1, 3], (0..6).map(f64::from).collect::<Vec<_>>()))];
    let run_at = |out_rank: usize, out: Vec<usize>, axes: Vec<i64>, keep: i64| {
        let program = compile(MEAN, &signature(out_rank), DType::F64);
        let params = [ParamValue::Tuple(axes), ParamValue::Int(keep)];
        let on = Inputs {
            inputs: &x,
            outputs: &[out],
            params: &params,
            dtype: DType::F64,
        };
        run(&program, &on, &Rounded::default(), false)
    };
    let removed = run_at(1, vec![1], vec![0, -1], 0).unwrap();
    assert_eq!(removed.outputs[0], vec![2.5]);
    let kept = run_at(3, vec![1, 1, 1], vec![-1, 0], 1).unwrap();
    assert_eq!(kept.outputs[0], vec![2.5]);
    // axis 2 only: out [2, 1] holds each row's mean, 1 and 4
    let rows = run_at(2, vec![2, 1], vec![2], 0).unwrap();
    assert_eq!(rows.outputs[0], vec![1.0, 4.0]);
    let twice = run_at(2, vec![2, 1], vec![2, -1], 0).unwrap_err();
    assert!(twice.message.contains("not distinct axes"), "{}", twice.message);
    let wrong_rank = run_at(2, vec![2, 1], vec![2], 1).unwrap_err();
    assert!(wrong_rank.message.contains("has rank 2"), "{}", wrong_rank.message);
    // an empty x and out: the divisor `numel(x) / numel(out)` divides by zero, in a loop that
    // runs no iteration, so it is never evaluated
    let empty = [Some((vec![0, 1, 3], Vec::new()))];
    let program = compile(MEAN, &signature(2), DType::F64);
    let params = [ParamValue::Tuple(vec![2]), ParamValue::Int(0)];
    let on = Inputs {
        inputs: &empty,
        outputs: &[vec![0, 1]],
        params: &params,
        dtype: DType::F64,
    };
    let nothing = run(&program, &on, &Rounded::default(), false).unwrap();
    assert!(nothing.outputs[0].is_empty());
}

/// `a[broadcast(o)]` reads an input at the output's whole index broadcast to it (trailing axes
/// aligned, 0 where its extent is 1); `out[permuted(i, perm)]` writes at the permuted index.
#[test]
fn broadcast_and_permuted_whole_indices() {
    let list = |name: &str| ir::Param {
        name: name.to_owned(),
        form: ir::ParamForm::List,
    };
    let signature = Signature {
        inputs: vec![tensor("a", 2, false), tensor("b", 1, false)],
        outputs: vec![tensor("out", 2, false)],
        params: vec![list("perm")],
        undeclared_absent: false,
    };
    let add = compile("for o in out:\n  out[o] = a[broadcast(o)] + b[broadcast(o)]\n", &signature, DType::F64);
    // a [2, 1] = (10, 20) stretched along the columns, b [3] = (1, 2, 3) along the rows
    let inputs = [Some((vec![2, 1], vec![10.0, 20.0])), Some((vec![3], vec![1.0, 2.0, 3.0]))];
    let params = [ParamValue::Tuple(vec![1, 0])];
    let on = |outputs: &[Vec<usize>]| -> Vec<f64> {
        let inputs = Inputs {
            inputs: &inputs,
            outputs,
            params: &params,
            dtype: DType::F64,
        };
        run(&add, &inputs, &Rounded::default(), false).unwrap().outputs.remove(0)
    };
    assert_eq!(on(&[vec![2, 3]]), vec![11.0, 12.0, 13.0, 21.0, 22.0, 23.0]);
    // a transpose of a [2, 3]: out [3, 2], out[permuted(i, perm)] with perm (1, 0)
    let transpose = compile("for i in a:\n  out[permuted(i, perm)] = a[i]\n", &signature, DType::F64);
    let x = [Some((vec![2, 3], (0..6).map(f64::from).collect())), None];
    let inputs = Inputs {
        inputs: &x,
        outputs: &[vec![3, 2]],
        params: &params,
        dtype: DType::F64,
    };
    let out = run(&transpose, &inputs, &Rounded::default(), false).unwrap();
    assert_eq!(out.outputs[0], vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    // a tensor of more axes than the index it is broadcast from is an error on the run
    let wide = Signature {
        outputs: vec![tensor("out", 1, false)],
        ..signature
    };
    let program = compile("for o in out:\n  out[o] = a[broadcast(o)]\n", &wide, DType::F64);
    let inputs = Inputs {
        inputs: &x,
        outputs: &[vec![3]],
        params: &params,
        dtype: DType::F64,
    };
    let error = run(&program, &inputs, &Rounded::default(), false).unwrap_err();
    assert!(error.message.contains("does not broadcast"), "{}", error.message);
}

/// `x[along(i, axis, t)]` walks one axis through the whole index `i` at any rank; a rank-1 whole
/// index is its one variable (`i[0]` is `i`), and a rank-0 one runs its whole body once.
#[test]
fn along_walks_an_axis_at_every_rank() {
    const CUMSUM: &str = "for i in out:\n  acc: T = -0.0\n  for t in 0..i[axis % x.rank] + 1:\n    acc += x[along(i, axis % x.rank, t)]\n  out[i] = acc\n";
    let signature = |rank| Signature {
        inputs: vec![tensor("x", rank, false)],
        outputs: vec![tensor("out", rank, false)],
        params: vec![param("axis", None)],
        undeclared_absent: false,
    };
    let run_at = |rank: usize, dims: Vec<usize>, axis: i64| {
        let values: Vec<f64> = (1..=dims.iter().product::<usize>()).map(|v| v as f64).collect();
        let program = compile(CUMSUM, &signature(rank), DType::F64);
        let inputs = [Some((dims.clone(), values))];
        let params = [ParamValue::Int(axis)];
        let on = Inputs {
            inputs: &inputs,
            outputs: &[dims],
            params: &params,
            dtype: DType::F64,
        };
        run(&program, &on, &Rounded::default(), false).map(|r| r.outputs[0].clone())
    };
    assert_eq!(run_at(2, vec![2, 3], -1).unwrap(), vec![1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
    assert_eq!(run_at(2, vec![2, 3], 0).unwrap(), vec![1.0, 2.0, 3.0, 5.0, 7.0, 9.0]);
    assert_eq!(run_at(1, vec![3], 0).unwrap(), vec![1.0, 3.0, 6.0]);
    // rank 0: `axis % 0` divides by zero, located in the pseudo-code
    assert!(run_at(0, vec![], 0).unwrap_err().message.contains("division by zero"));
    // a rank-0 body of several statements runs whole (it used to keep only the last)
    let two = Signature {
        inputs: vec![tensor("x", 0, false)],
        outputs: vec![tensor("out", 0, false)],
        params: Vec::new(),
        undeclared_absent: false,
    };
    let program = compile("for i in out:\n  v: f64 = x[i]\n  out[i] = v * 2\n", &two, DType::F64);
    let inputs = [Some((vec![], vec![1.5]))];
    let on = Inputs {
        inputs: &inputs,
        outputs: &[vec![]],
        params: &[],
        dtype: DType::F64,
    };
    assert_eq!(run(&program, &on, &Rounded::default(), false).unwrap().outputs[0], vec![3.0]);
}
