//! The fast executor against the reference interpreter on the standard semantics over random
//! geometries: a run gives the same outputs bit for bit, the same counts and the same error as
//! the reference with its planned nests, and — where it succeeds — as the generic walk with no
//! plans at all. (Random programs: [`super::exec_random_tests`].)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::tests::{compile, conv_signature, param, tensor};
use super::*;
use crate::verify::sample::Rng;
use fkc_provider::DType;

fn standard(op_kind: &str) -> &'static str {
    &standard::of(op_kind).unwrap().text
}

pub(super) fn values(rng: &mut Rng, len: usize, dtype: DType) -> Vec<f64> {
    (0..len)
        .map(|_| rounded::round(rng.unit() * 2.0, dtype))
        .collect()
}

pub(super) fn pair(a: i64, b: i64) -> ParamValue {
    ParamValue::Tuple(vec![a, b])
}

/// One program and what it runs on.
pub(super) struct Case {
    pub(super) program: ir::Program,
    pub(super) inputs: Vec<Option<(Vec<usize>, Vec<f64>)>>,
    pub(super) outputs: Vec<Vec<usize>>,
    pub(super) params: Vec<ParamValue>,
    pub(super) dtype: DType,
}

impl Case {
    pub(super) fn on(&self) -> Inputs<'_> {
        Inputs {
            inputs: &self.inputs,
            outputs: &self.outputs,
            params: &self.params,
            dtype: self.dtype,
        }
    }
}

fn simple_signature() -> Signature {
    Signature {
        inputs: vec![tensor("x", 4, false), tensor("kernel", 4, false)],
        outputs: vec![tensor("out", 4, false)],
        params: vec![param("stride", None), param("padding", None)],
        undeclared_absent: true,
    }
}

fn pool_signature() -> Signature {
    Signature {
        inputs: vec![tensor("x", 4, false)],
        outputs: vec![tensor("out", 4, false)],
        params: vec![param("kernel_size", None), param("stride", None)],
        undeclared_absent: false,
    }
}

/// `Conv2dSimple` on x `[n, c, h, w]`, kernel `[co, c, k, k]`.
fn simple_case(
    rng: &mut Rng,
    x: [usize; 4],
    k: [usize; 2],
    co: usize,
    stride: usize,
    padding: usize,
    dtype: DType,
) -> Option<Case> {
    let size = |len: usize, k: usize| (len + 2 * padding).checked_sub(k).map(|v| v / stride + 1);
    let out = vec![x[0], co, size(x[2], k[0])?, size(x[3], k[1])?];
    let w = [co, x[1], k[0], k[1]];
    Some(Case {
        program: compile(standard("Conv2dSimple"), &simple_signature(), dtype),
        inputs: vec![
            Some((x.to_vec(), values(rng, x.iter().product(), dtype))),
            Some((w.to_vec(), values(rng, w.iter().product(), dtype))),
        ],
        outputs: vec![out],
        params: vec![
            ParamValue::Int(stride as i64),
            ParamValue::Int(padding as i64),
        ],
        dtype,
    })
}

/// `Conv2D` with groups, dilation and an optional bias.
#[allow(clippy::too_many_arguments)]
fn conv_case(
    rng: &mut Rng,
    x: [usize; 4],
    k: [usize; 2],
    cout_g: usize,
    groups: usize,
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    bias: bool,
    dtype: DType,
) -> Option<Case> {
    let size = |len: usize, a: usize| {
        (len + 2 * padding[a])
            .checked_sub(dilation[a] * (k[a] - 1) + 1)
            .map(|v| v / stride[a] + 1)
    };
    if !x[1].is_multiple_of(groups) {
        return None;
    }
    let co = cout_g * groups;
    let out = vec![x[0], co, size(x[2], 0)?, size(x[3], 1)?];
    let w = [co, x[1] / groups, k[0], k[1]];
    Some(Case {
        program: compile(standard("Conv2D"), &conv_signature(true, false), dtype),
        inputs: vec![
            Some((x.to_vec(), values(rng, x.iter().product(), dtype))),
            Some((w.to_vec(), values(rng, w.iter().product(), dtype))),
            bias.then(|| (vec![co], values(rng, co, dtype))),
        ],
        outputs: vec![out],
        params: vec![
            pair(stride[0] as i64, stride[1] as i64),
            pair(padding[0] as i64, padding[1] as i64),
            pair(dilation[0] as i64, dilation[1] as i64),
            ParamValue::Int(groups as i64),
        ],
        dtype,
    })
}

/// `ConvTranspose2D`.
#[allow(clippy::too_many_arguments)]
fn transposed_case(
    rng: &mut Rng,
    x: [usize; 4],
    k: [usize; 2],
    cout_g: usize,
    groups: usize,
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    dtype: DType,
) -> Option<Case> {
    if !x[1].is_multiple_of(groups) {
        return None;
    }
    let size = |len: usize, a: usize| {
        ((len - 1) * stride[a] + dilation[a] * (k[a] - 1) + 1).checked_sub(2 * padding[a])
    };
    let out = vec![x[0], cout_g * groups, size(x[2], 0)?, size(x[3], 1)?];
    if out[2] == 0 || out[3] == 0 {
        return None;
    }
    let w = [x[1], cout_g, k[0], k[1]];
    Some(Case {
        program: compile(
            standard("ConvTranspose2D"),
            &conv_signature(true, true),
            dtype,
        ),
        inputs: vec![
            Some((x.to_vec(), values(rng, x.iter().product(), dtype))),
            Some((w.to_vec(), values(rng, w.iter().product(), dtype))),
            None,
        ],
        outputs: vec![out],
        params: vec![
            pair(stride[0] as i64, stride[1] as i64),
            pair(padding[0] as i64, padding[1] as i64),
            pair(dilation[0] as i64, dilation[1] as i64),
            ParamValue::Int(groups as i64),
            pair(0, 0),
        ],
        dtype,
    })
}

fn pool_case(rng: &mut Rng, x: [usize; 4], k: usize, stride: usize, dtype: DType) -> Option<Case> {
    let out = vec![
        x[0],
        x[1],
        x[2].checked_sub(k)? / stride + 1,
        x[3].checked_sub(k)? / stride + 1,
    ];
    Some(Case {
        program: compile(standard("MaxPool2D"), &pool_signature(), dtype),
        inputs: vec![Some((x.to_vec(), values(rng, x.iter().product(), dtype)))],
        outputs: vec![out],
        params: vec![ParamValue::Int(k as i64), ParamValue::Int(stride as i64)],
        dtype,
    })
}

thread_local! {
    /// Runs the executor gave up on although the reference succeeds.
    pub(super) static GAVE_UP: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The executor (through [`run`]), the reference with its plans and the generic walk agree.
pub(super) fn agree(case: &Case, what: &str) -> bool {
    fn one<A: Arith>(case: &Case, arith: &A, what: &str, bitwise_walk: bool) -> bool
    where
        A::Cell: PartialEq,
    {
        let fast = exec::run(&case.program, &case.on(), arith);
        let planned = reference(&case.program, &case.on(), arith, false, true);
        let walked = reference(&case.program, &case.on(), arith, false, false);
        let through = run(&case.program, &case.on(), arith, false);
        match (&fast, &planned) {
            (Some(fast), Ok(planned)) => {
                assert!(
                    same_cells(&fast.outputs, &planned.outputs),
                    "{what}: outputs differ"
                );
                assert_eq!(fast.counts, planned.counts, "{what}: counts differ");
                let walked = walked.unwrap_or_else(|e| panic!("{what}: the walk fails: {e:?}"));
                // (the oracle's bounds of a planned product are its own: only the order
                // reference's values are the walk's bit for bit)
                assert!(
                    !bitwise_walk || same_cells(&walked.outputs, &planned.outputs),
                    "{what}: the walk's outputs differ"
                );
                assert_eq!(
                    (walked.counts.macs, walked.counts.taps, walked.counts.ops),
                    (planned.counts.macs, planned.counts.taps, planned.counts.ops),
                    "{what}: the walk's counts differ"
                );
                assert_eq!(walked.counts.compares, planned.counts.compares);
                assert_eq!(walked.counts.nan_meets, planned.counts.nan_meets);
                assert_eq!(walked.counts.read, planned.counts.read);
                assert_eq!(walked.counts.written, planned.counts.written);
                true
            }
            (Some(_), Err(e)) => {
                panic!("{what}: the executor succeeds where the reference fails: {e:?}")
            }
            (None, planned) => {
                if planned.is_ok() {
                    GAVE_UP.with(|g| g.set(g.get() + 1));
                }
                // the reference decides, through `run` too
                match (planned, &through) {
                    (Ok(p), Ok(t)) => {
                        assert!(same_cells(&p.outputs, &t.outputs));
                        assert_eq!(p.counts, t.counts);
                    }
                    (Err(p), Err(t)) => assert_eq!(p, t, "{what}"),
                    _ => panic!("{what}: `run` differs from the reference"),
                }
                false
            }
        }
    }
    let exact = Exact::default();
    let rounded = Rounded::default();
    let a = one(case, &exact, what, false);
    let b = one(case, &rounded, what, true);
    assert_eq!(
        a, b,
        "{what}: the executor runs one arithmetic but not the other"
    );
    a
}

/// Cells equal, NaNs (of the rounded arithmetic) equal to each other.
fn same_cells<C: PartialEq + std::fmt::Debug>(a: &[Vec<C>], b: &[Vec<C>]) -> bool {
    let text = |cells: &[Vec<C>]| format!("{cells:?}");
    a == b || text(a) == text(b)
}

#[test]
fn the_executor_runs_the_standard_semantics_as_the_reference_does() {
    let mut rng = Rng::new(5);
    let r = |rng: &mut Rng, lo: i64, hi: i64| usize::try_from(rng.range(lo, hi)).unwrap();
    let dtypes = [DType::F32, DType::F64, DType::BF16, DType::F16];
    let (mut ran, mut cases) = (0, 0);
    for round in 0..600 {
        let dtype = dtypes[round % 4];
        let x = [
            r(&mut rng, 1, 2),
            r(&mut rng, 1, 4),
            r(&mut rng, 1, 7),
            r(&mut rng, 1, 7),
        ];
        let k = [r(&mut rng, 1, 4), r(&mut rng, 1, 4)];
        let stride = [r(&mut rng, 1, 3), r(&mut rng, 1, 3)];
        let padding = [r(&mut rng, 0, 3), r(&mut rng, 0, 3)];
        let dilation = [r(&mut rng, 1, 2), r(&mut rng, 1, 2)];
        let groups = r(&mut rng, 1, 2);
        let cout_g = r(&mut rng, 1, 3);
        let bias = rng.range(0, 1) == 1;
        let all = [
            simple_case(&mut rng, x, k, cout_g, stride[0], padding[0], dtype),
            conv_case(
                &mut rng, x, k, cout_g, groups, stride, padding, dilation, bias, dtype,
            ),
            transposed_case(
                &mut rng, x, k, cout_g, groups, stride, padding, dilation, dtype,
            ),
            pool_case(&mut rng, x, k[0], stride[0], dtype),
        ];
        for (kind, case) in all.into_iter().enumerate() {
            let Some(case) = case else { continue };
            cases += 1;
            if agree(&case, &format!("round {round} kind {kind}")) {
                ran += 1;
            }
        }
    }
    // valid geometries: the executor runs every one of them
    assert_eq!(ran, cases);
    assert!(cases > 1500, "{cases}");
}

#[test]
#[ignore = "a timing probe, run by hand in release"]
fn executor_speed_probe() {
    let mut rng = Rng::new(3);
    let cases = [
        (
            "conv2d_simple f32",
            simple_case(&mut rng, [6, 2, 5, 5], [6, 6], 6, 1, 2, DType::F32),
        ),
        (
            "conv2d_simple f64 pad 4",
            simple_case(&mut rng, [6, 2, 5, 5], [6, 4], 6, 1, 4, DType::F64),
        ),
        (
            "conv2d grouped bias",
            conv_case(
                &mut rng,
                [3, 4, 6, 6],
                [3, 3],
                3,
                2,
                [1, 1],
                [1, 1],
                [1, 1],
                true,
                DType::F32,
            ),
        ),
        (
            "conv_transpose2d",
            transposed_case(
                &mut rng,
                [2, 4, 5, 5],
                [3, 3],
                3,
                1,
                [2, 2],
                [1, 1],
                [1, 1],
                DType::F32,
            ),
        ),
        (
            "max_pool2d",
            pool_case(&mut rng, [6, 4, 9, 9], 3, 2, DType::F32),
        ),
    ];
    let only = std::env::var("PROBE_ONLY").ok();
    for (name, case) in &cases {
        let case = case.as_ref().unwrap();
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let reps = std::env::var("PROBE_REPS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(200);
        let skip_reference = std::env::var_os("PROBE_EXEC").is_some();
        for (arith_name, exact) in [("exact", true), ("rounded", false)] {
            // the fastest of `reps` runs (robust to a machine shared with other work)
            let time = |f: &dyn Fn()| {
                (0..reps)
                    .map(|_| {
                        let t = std::time::Instant::now();
                        f();
                        t.elapsed()
                    })
                    .min()
                    .unwrap_or_default()
            };
            let (fast, slow) = if exact {
                let a = Exact::default();
                (
                    time(&|| {
                        exec::run(&case.program, &case.on(), &a).unwrap();
                    }),
                    time(&|| {
                        if !skip_reference {
                            reference(&case.program, &case.on(), &a, false, true).unwrap();
                        }
                    }),
                )
            } else {
                let a = Rounded::default();
                (
                    time(&|| {
                        exec::run(&case.program, &case.on(), &a).unwrap();
                    }),
                    time(&|| {
                        if !skip_reference {
                            reference(&case.program, &case.on(), &a, false, true).unwrap();
                        }
                    }),
                )
            };
            let taps = reference(&case.program, &case.on(), &Rounded::default(), false, true)
                .unwrap()
                .counts
                .taps;
            println!("{name:28} {arith_name:8} taps {taps:7} executor {fast:?} reference {slow:?}");
        }
    }
}

#[test]
#[ignore = "debugging aid"]
fn show_lowered() {
    let mut rng = Rng::new(3);
    let case = transposed_case(
        &mut rng,
        [2, 4, 5, 5],
        [3, 3],
        3,
        1,
        [2, 2],
        [1, 1],
        [1, 1],
        DType::F32,
    )
    .unwrap();
    exec::show(&case.program, &case.on(), &Rounded::default());
}
