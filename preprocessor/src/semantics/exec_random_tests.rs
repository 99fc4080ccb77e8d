//! The fast executor against the reference interpreter on random programs (random loops,
//! conditions, index arithmetic, reductions, accesses that may leave their tensors): a run gives
//! the same outputs bit for bit, the same counts and the same error as the reference with its
//! planned nests, and — where it succeeds — as the generic walk with no plans at all.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::exec_tests::{Case, GAVE_UP, agree, pair, values};
use super::tests::{param, tensor};
use super::*;
use crate::verify::sample::Rng;
use fkc_provider::DType;

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
