//! The fast executor against the reference interpreter: on the standard semantics over random
//! geometries and on random programs (random loops, conditions, index arithmetic, reductions,
//! accesses that may leave their tensors), a run gives the same outputs bit for bit, the same
//! counts and the same error as the reference with its planned nests, and — where it succeeds —
//! as the generic walk with no plans at all.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::tests::{compile, conv_signature, param, tensor};
use super::*;
use crate::verify::sample::Rng;
use fkc_provider::DType;

fn standard(op_kind: &str) -> &'static str {
    &standard::of(op_kind).unwrap().text
}

fn values(rng: &mut Rng, len: usize, dtype: DType) -> Vec<f64> {
    (0..len)
        .map(|_| rounded::round(rng.unit() * 2.0, dtype))
        .collect()
}

fn pair(a: i64, b: i64) -> ParamValue {
    ParamValue::Tuple(vec![a, b])
}

/// One program and what it runs on.
struct Case {
    program: ir::Program,
    inputs: Vec<Option<(Vec<usize>, Vec<f64>)>>,
    outputs: Vec<Vec<usize>>,
    params: Vec<ParamValue>,
    dtype: DType,
}

impl Case {
    fn on(&self) -> Inputs<'_> {
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
    static GAVE_UP: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The executor (through [`run`]), the reference with its plans and the generic walk agree.
fn agree(case: &Case, what: &str) -> bool {
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

// ---------------------------------------------------------------------------------------------
// Random programs.

/// A generator of random programs over x `[a, b]`, w `[c, d]`, an optional bias `[e]`, out
/// `[f, g]`, a scalar `p` and a pair `s`: index arithmetic (affine, and now and then a division,
/// a remainder, a `min`), loop ranges over dims, parameters and constants, guards, reductions of
/// every kind; many of them index outside their tensors on some samples.
struct Gen<'r> {
    rng: &'r mut Rng,
}

impl Gen<'_> {
    fn pick<'a>(&mut self, options: &[&'a str]) -> &'a str {
        options[usize::try_from(self.rng.range(0, options.len() as i64 - 1)).unwrap()]
    }

    fn chance(&mut self, percent: i64) -> bool {
        self.rng.range(0, 99) < percent
    }

    fn bound(&mut self) -> String {
        self.pick(&[
            "x.dim[0]",
            "x.dim[1]",
            "w.dim[0]",
            "w.dim[1]",
            "out.dim[0]",
            "out.dim[1]",
            "p",
            "s[0]",
            "2",
            "3",
        ])
        .to_owned()
    }

    /// An affine index over `vars`.
    fn affine(&mut self, vars: &[&str]) -> String {
        let mut terms = Vec::new();
        for _ in 0..self.rng.range(1, 2) {
            let var = self.pick(vars);
            let coefficient = self.pick(&["", "", "", "2 * ", "s[0] * ", "s[1] * "]);
            terms.push(format!("{coefficient}{var}"));
        }
        let mut e = terms.join(" + ");
        match self.rng.range(0, 5) {
            0 => e.push_str(" - 1"),
            1 => e.push_str(" + 1"),
            2 => e.push_str(" - s[1]"),
            3 => e = format!("{e} - {}", self.pick(vars)),
            _ => {}
        }
        e
    }

    fn index(&mut self, vars: &[&str]) -> String {
        let e = self.affine(vars);
        match self.rng.range(0, 11) {
            0 => format!("({e}) / 2"),
            1 => format!("({e}) % 3"),
            2 => format!("min({e}, {})", self.bound()),
            _ => e,
        }
    }

    fn condition(&mut self, vars: &[&str]) -> String {
        let e = self.affine(vars);
        let first = match self.rng.range(0, 6) {
            0 => format!("{e} < {}", self.bound()),
            1 => format!("{e} >= 1"),
            2 => format!("{e} != 1"),
            3 => "present(bias)".to_owned(),
            _ => format!("0 <= {e} < {}", self.bound()),
        };
        match self.rng.range(0, 5) {
            0 => format!("{first} && {}", self.condition(vars)),
            1 => format!("{first} || {e} == 0"),
            _ => first,
        }
    }

    fn element(&mut self, tensor: &str, vars: &[&str]) -> String {
        if tensor == "bias" {
            return format!("bias[{}]", self.index(vars));
        }
        format!("{tensor}[{}, {}]", self.index(vars), self.index(vars))
    }

    /// A range `lo..hi` for a loop.
    fn range(&mut self, outer: &[&str]) -> String {
        match self.rng.range(0, 6) {
            0 => format!("1..{}", self.bound()),
            1 if !outer.is_empty() => {
                let var = self.pick(outer);
                format!("{var}..{var} + 2")
            }
            2 => "0..p + 1".to_owned(),
            _ => format!("0..{}", self.bound()),
        }
    }

    /// A product or another term of a sum.
    fn term(&mut self, vars: &[&str]) -> String {
        match self.rng.range(0, 7) {
            0 => self.element("x", vars),
            1 => format!("{} + 0.5", self.element("w", vars)),
            2 => format!("cast({}, T)", self.affine(vars)),
            3 => format!("-{}", self.element("x", vars)),
            _ => format!("{} * {}", self.element("x", vars), self.element("w", vars)),
        }
    }

    /// `for i, j in out:` around a reduction nest.
    fn gather(&mut self) -> String {
        let mut src = String::from("for i, j in out:\n");
        let declare = self.pick(&["acc: T = 0", "acc = 0.0", "acc: f64 = 0"]);
        src.push_str(&format!("  {declare}\n"));
        if self.chance(30) {
            src.push_str(&format!("  q = {}\n", self.index(&["i", "j"])));
        }
        let outer: &[&str] = if src.contains("  q =") {
            &["i", "j", "q"]
        } else {
            &["i", "j"]
        };
        let (r1, r2) = (self.range(outer), self.range(outer));
        let nested = self.chance(70);
        if nested {
            src.push_str(&format!("  for a in {r1}, b in {r2}:\n"));
        } else {
            src.push_str(&format!("  for a in {r1}:\n"));
        }
        let mut vars: Vec<&str> = outer.to_vec();
        vars.push("a");
        if nested {
            vars.push("b");
        }
        let mut indent = "    ".to_owned();
        if self.chance(50) {
            src.push_str(&format!("{indent}k = {}\n", self.affine(&vars)));
            vars.push("k");
        }
        if self.chance(70) {
            src.push_str(&format!("{indent}if {}:\n", self.condition(&vars)));
            indent.push_str("  ");
        }
        let op = self.pick(&["+=", "+=", "+=", "-=", "*="]);
        let update = match self.rng.range(0, 6) {
            0 => format!("acc = max(acc, {})", self.element("x", &vars)),
            1 => format!("acc = min({}, acc)", self.element("w", &vars)),
            _ => format!("acc {op} {}", self.term(&vars)),
        };
        src.push_str(&format!("{indent}{update}\n"));
        if self.chance(30) {
            src.push_str(&format!("{indent}acc += {}\n", self.element("w", &vars)));
        }
        if self.chance(40) {
            src.push_str(&format!(
                "  if present(bias):\n    acc += {}\n",
                self.element("bias", &["i", "j"])
            ));
        }
        src.push_str("  out[i, j] = acc\n");
        src
    }

    /// A zeroed output, then products scattered into it.
    fn scatter(&mut self) -> String {
        let mut src = String::from("for i, j in out:\n  out[i, j] = 0\n");
        src.push_str("for a in 0..x.dim[0], b in 0..x.dim[1]:\n");
        let r = self.range(&["a", "b"]);
        src.push_str(&format!("  for c in {r}:\n"));
        let vars = ["a", "b", "c", "o"];
        src.push_str(&format!("    o = {}\n", self.affine(&["a", "b", "c"])));
        if self.chance(70) {
            src.push_str(&format!("    if {}:\n  ", self.condition(&vars)));
        }
        let target = self.element("out", &vars);
        let value = self.term(&vars);
        src.push_str(&format!("    {target} += {value}\n"));
        src
    }

    /// Elementwise: whole indices, index values, selections.
    fn elementwise(&mut self) -> String {
        let value = match self.rng.range(0, 5) {
            0 => format!("cast({}, T) + x[i, j]", self.affine(&["i", "j"])),
            1 => format!(
                "select({} > 0, x[i, j], w[i, j])",
                self.element("x", &["i", "j"])
            ),
            2 => format!("max({}, 0)", self.element("x", &["i", "j"])),
            3 => "exp(x[i, j]) * 2 - 1".to_owned(),
            _ => format!("{} * 3", self.affine(&["i", "j"])),
        };
        if self.chance(50) {
            format!("for i, j in out:\n  out[i, j] = {value}\n")
        } else {
            format!("for i in 0..out.dim[0], j in 0..out.dim[1]:\n  out[i, j] = {value}\n")
        }
    }

    fn program(&mut self) -> String {
        match self.rng.range(0, 3) {
            0 => self.scatter(),
            1 => self.elementwise(),
            _ => self.gather(),
        }
    }
}

fn random_signature() -> Signature {
    Signature {
        inputs: vec![
            tensor("x", 2, false),
            tensor("w", 2, false),
            tensor("bias", 1, true),
        ],
        outputs: vec![tensor("out", 2, false)],
        params: vec![param("p", None), param("s", Some(2))],
        undeclared_absent: false,
    }
}

#[test]
fn the_executor_runs_random_programs_as_the_reference_does() {
    let mut rng = Rng::new(17);
    let dtypes = [DType::F32, DType::F64, DType::BF16, DType::F16];
    let signature = random_signature();
    let (mut ran, mut failed, mut programs) = (0, 0, 0);
    for round in 0..1500 {
        let src = Gen { rng: &mut rng }.program();
        let dtype = dtypes[round % 4];
        let Ok(program) = check(&parse(&src).unwrap(), &signature, dtype) else {
            continue;
        };
        programs += 1;
        for sample in 0..4 {
            let mut dim = |lo, hi| usize::try_from(rng.range(lo, hi)).unwrap();
            let (x, w, out) = (
                [dim(1, 4), dim(1, 5)],
                [dim(1, 4), dim(1, 5)],
                [dim(1, 4), dim(1, 4)],
            );
            let bias = (sample % 2 == 0).then(|| dim(1, 5));
            let p = rng.range(0, 3);
            let s = pair(rng.range(1, 2), rng.range(0, 2));
            let case = Case {
                program: program.clone(),
                inputs: vec![
                    Some((x.to_vec(), values(&mut rng, x[0] * x[1], dtype))),
                    Some((w.to_vec(), values(&mut rng, w[0] * w[1], dtype))),
                    bias.map(|b| (vec![b], values(&mut rng, b, dtype))),
                ],
                outputs: vec![out.to_vec()],
                params: vec![ParamValue::Int(p), s],
                dtype,
            };
            let what = format!("round {round} sample {sample}:\n{src}");
            if agree(&case, &what) {
                ran += 1;
            } else {
                failed += 1;
            }
        }
    }
    let gave_up = GAVE_UP.with(std::cell::Cell::get);
    eprintln!("{programs} programs: ran {ran}, failed {failed} (gave up on {gave_up} that run)");
    assert!(programs > 1000, "{programs}");
    assert!(ran > 1000 && failed > 500, "ran {ran}, failed {failed}");
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
