//! Unit tests of the expression evaluator.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use super::super::check::Scope;
use super::super::fixtures::{Expect, SEED, bindings, deep_negation, from_params_expected};
use super::super::parse;
use super::*;

fn run(src: &str) -> Result<Value, ExprError> {
    eval(&parse(src).unwrap(), &bindings("conv2d"))
}

fn int(src: &str) -> i64 {
    run(src)
        .unwrap_or_else(|e| panic!("{src}: {}", e.render(src)))
        .as_int()
        .unwrap()
}

fn fails(src: &str) -> (ExprErrorKind, usize, usize) {
    let e = run(src).expect_err(src);
    (e.kind, e.span.start, e.span.end)
}

#[test]
fn the_fast_path_agrees_with_the_full_evaluator_or_leaves_it_the_decision() {
    let b = bindings("conv2d");
    let mut sources: Vec<&str> = SEED
        .iter()
        .filter(|(contract, ..)| *contract == "conv2d")
        .map(|(_, _, src, _)| *src)
        .collect();
    sources.extend([
        "-7 / 2 == -4 && -7 % 2 == 1",
        "x.dim[1] / 0",
        "x.dim[1] % 0 == 0",
        "9223372036854775807 + 1",
        "-(-9223372036854775807 - 1)",
        "(-9223372036854775807 - 1) / -1",
        "true || 1 / 0 == 1",
        "false && 1 / 0 == 1",
        "true && 1",
        "1 || true",
        "(true == false) != true",
        "1 == true",
        "!(x.dim[0] > 1) || !true",
        "divisible(x.dim[1], 0) || min(3, 1, 2) == max(-1, 1)",
        "divisible(1)",
        "min(1)",
        "max(1, true)",
        "min(a=1, b=2)",
        "x.dim[9]",
        "x.dim[-1]",
        "x",
        "(1, 2) == (1, 2)",
        "nope + 1",
        "nope(1)",
    ]);
    for src in sources {
        let expr = parse(src).unwrap();
        let evaluator = Evaluator { bindings: &b };
        let full = evaluator.value(&expr, 0);
        match evaluator.scalar(&expr, 0) {
            Some(Scalar::Int(v)) => assert_eq!(full, Ok(Value::Int(v)), "{src}"),
            Some(Scalar::Bool(v)) => assert_eq!(full, Ok(Value::Bool(v)), "{src}"),
            None => {}
        }
        assert_eq!(eval(&expr, &b), full, "{src}");
    }
    // Too deep for either: the fast path gives up, the full evaluator reports it.
    let deep = deep_negation(MAX_HEIGHT + 10);
    assert!(Evaluator { bindings: &b }.scalar(&deep, 0).is_none());
    assert_eq!(eval(&deep, &b).unwrap_err().kind, ExprErrorKind::Budget);
}

#[test]
fn seed_expressions_evaluate_to_hand_computed_values() {
    for (contract, field, src, expected) in SEED {
        let expr = parse(src).unwrap();
        let b = bindings(contract);
        match expected {
            Expect::Int(v) => {
                assert_eq!(eval(&expr, &b), Ok(Value::Int(*v)), "{contract}.{field}")
            }
            Expect::Bool(v) => {
                assert_eq!(eval(&expr, &b), Ok(Value::Bool(*v)), "{contract}.{field}")
            }
            Expect::Special => {
                let ExprKind::Call { name, args, .. } = &expr.kind else {
                    panic!("{src}")
                };
                let got: Vec<(&str, i64)> = args
                    .iter()
                    .filter_map(|a| {
                        Some((
                            a.name.as_ref()?.0.as_str(),
                            eval(&a.value, &b).ok()?.as_int()?,
                        ))
                    })
                    .collect();
                let want = if name == "from_params" {
                    from_params_expected(contract)
                } else {
                    Vec::new()
                };
                assert_eq!(got, want, "{contract}.{field}");
            }
        }
    }
}

#[test]
fn floor_division_and_modulo() {
    for (a, b, q, r) in [
        (7, 2, 3, 1),
        (-7, 2, -4, 1),
        (7, -2, -4, -1),
        (-7, -2, 3, -1),
        (6, 3, 2, 0),
        (-6, 3, -2, 0),
    ] {
        assert_eq!(floor_div(a, b), Some(q), "{a} / {b}");
        assert_eq!(floor_mod(a, b), Some(r), "{a} % {b}");
        assert_eq!(q * b + r, a);
    }
    assert_eq!(floor_div(i64::MIN, -1), None);
    assert_eq!(floor_mod(i64::MIN, -1), Some(0));
    assert_eq!(floor_div(1, 0), None);
    assert_eq!(floor_mod(1, 0), None);
    // An undefined output size shows up as <= 0 instead of an underflow: H=2, K=3, s=1.
    assert_eq!(int("(2 - 3) / 1 + 1"), 0);
    assert_eq!(int("(2 - 5) / 2 + 1"), -1);
    assert_eq!(int("-7 / 2"), -4);
    assert_eq!(int("-7 % 2"), 1);
}

#[test]
fn checked_arithmetic() {
    assert_eq!(int("9223372036854775807"), i64::MAX);
    assert_eq!(int("-9223372036854775807 - 1"), i64::MIN);
    let e = run("9223372036854775807 + 1").unwrap_err();
    assert_eq!(
        (e.kind, e.span),
        (ExprErrorKind::Overflow, Span::new(0, 23))
    );
    assert_eq!(
        e.message,
        "overflow: 9223372036854775807 + 1 does not fit in i64"
    );
    assert_eq!(
        fails("groups - 9223372036854775807 - 9"),
        (ExprErrorKind::Overflow, 0, 32)
    );
    assert_eq!(
        fails("x_shape[0] * 4611686018427387904"),
        (ExprErrorKind::Overflow, 0, 32)
    );
    assert_eq!(
        fails("-(-9223372036854775807 - 1)"),
        (ExprErrorKind::Overflow, 0, 27)
    );
    assert_eq!(
        fails("(-9223372036854775807 - 1) / -1"),
        (ExprErrorKind::Overflow, 0, 31)
    );
    assert_eq!(int("(-9223372036854775807 - 1) % -1"), 0);
}

#[test]
fn division_by_zero_points_at_the_divisor() {
    let e = run("x_shape[1] / (groups - 2)").unwrap_err();
    assert_eq!(
        (e.kind, e.span),
        (ExprErrorKind::DivisionByZero, Span::new(14, 24))
    );
    assert_eq!(e.message, "division by zero: `groups - 2` is 0");
    assert_eq!(fails("1 % 0"), (ExprErrorKind::DivisionByZero, 4, 5));
    assert_eq!(run("1 % 0").unwrap_err().message, "remainder by zero");
}

#[test]
fn builtins() {
    assert_eq!(run("divisible(x.dim[1], groups)"), Ok(Value::Bool(true)));
    assert_eq!(run("divisible(5, 2)"), Ok(Value::Bool(false)));
    assert_eq!(
        run("divisible(5, 0)"),
        Ok(Value::Bool(false)),
        "a zero divisor divides nothing"
    );
    assert_eq!(run("divisible(0, 5)"), Ok(Value::Bool(true)));
    assert_eq!(
        run("divisible(-9223372036854775807 - 1, -1)"),
        Ok(Value::Bool(true))
    );
    assert_eq!(int("min(3, -1, 2)"), -1);
    assert_eq!(int("max(3, -1, 2)"), 3);
    assert_eq!(fails("min(1)"), (ExprErrorKind::Arity, 0, 6));
    assert_eq!(fails("max(1, depthwise)"), (ExprErrorKind::Type, 7, 16));
    assert_eq!(fails("min(a=1, b=2)"), (ExprErrorKind::Arity, 4, 5));
    assert_eq!(
        fails("conv2d(params)"),
        (ExprErrorKind::UnknownFunction, 0, 6)
    );
}

#[test]
fn logic_short_circuits() {
    assert_eq!(run("false && 1 / 0 == 1"), Ok(Value::Bool(false)));
    assert_eq!(run("true || x.dim[9] == 1"), Ok(Value::Bool(true)));
    assert_eq!(run("true && !depthwise"), Ok(Value::Bool(true)));
    assert_eq!(
        fails("true && 1 / 0 == 1"),
        (ExprErrorKind::DivisionByZero, 12, 13)
    );
    let e = run("groups && true").unwrap_err();
    assert_eq!(
        (e.kind, e.span, e.message.as_str()),
        (
            ExprErrorKind::Type,
            Span::new(0, 6),
            "cannot apply `&&` to int and bool"
        )
    );
    assert_eq!(fails("true && groups"), (ExprErrorKind::Type, 8, 14));
}

#[test]
fn equality_on_tuples_and_bools() {
    assert_eq!(run("stride == (2, 2)"), Ok(Value::Bool(true)));
    assert_eq!(run("stride != padding"), Ok(Value::Bool(true)));
    assert_eq!(run("depthwise == false"), Ok(Value::Bool(true)));
    assert_eq!(
        run("(1, (2, true)) == (1, (2, true))"),
        Ok(Value::Bool(true))
    );
    assert_eq!(fails("stride == x_shape"), (ExprErrorKind::Type, 0, 17));
    assert_eq!(fails("x == x"), (ExprErrorKind::Type, 0, 6));
    assert_eq!(fails("depthwise < true"), (ExprErrorKind::Type, 0, 9));
}

#[test]
fn runtime_lookup_errors() {
    let e = run("x.dim[4]").unwrap_err();
    assert_eq!(
        (e.kind, e.span),
        (ExprErrorKind::IndexOutOfRange, Span::new(6, 7))
    );
    assert_eq!(e.message, "index 4 is out of range for `x.dim` of length 4");
    assert_eq!(
        fails("stride[groups - 3]"),
        (ExprErrorKind::IndexOutOfRange, 7, 17)
    );
    let e = run("strid[0]").unwrap_err();
    assert_eq!(
        (e.kind, e.span),
        (ExprErrorKind::UnknownName, Span::new(0, 5))
    );
    assert!(e.help.unwrap().starts_with("did you mean `stride`?"));
    assert_eq!(fails("x.dims"), (ExprErrorKind::UnknownName, 2, 6));
    assert_eq!(fails("groups.dim"), (ExprErrorKind::Type, 7, 10));
    assert_eq!(fails("groups[0]"), (ExprErrorKind::Type, 7, 8));
    assert_eq!(fails("stride[true]"), (ExprErrorKind::Type, 7, 11));
    assert_eq!(fails("-depthwise"), (ExprErrorKind::Type, 1, 10));
    assert_eq!(fails("!groups"), (ExprErrorKind::Type, 1, 7));
}

#[test]
fn caller_functions() {
    let mut b = bindings("conv2d");
    b.insert_function("passthrough", |args: &[Value]| {
        args.first()
            .cloned()
            .ok_or_else(|| "no argument".to_owned())
    });
    b.insert_function("fail", |_: &[Value]| Err("always".to_owned()));
    let value = |src: &str| eval(&parse(src).unwrap(), &b);
    assert_eq!(value("passthrough(groups) + 1"), Ok(Value::Int(3)));
    let e = value("fail(1)").unwrap_err();
    assert_eq!(
        (e.kind, e.span, e.message.as_str()),
        (
            ExprErrorKind::Function,
            Span::new(0, 7),
            "`fail` failed: always"
        )
    );
    let e = value("passthrough(N=1)").unwrap_err();
    assert_eq!((e.kind, e.span), (ExprErrorKind::Arity, Span::new(12, 13)));
    assert!(format!("{b:?}").contains("passthrough"));
    assert_eq!(Scope::of(&b).get("groups"), Some(&Type::Int));
    assert_eq!(b.names().len(), 13);
}

#[test]
fn values_of_other_forms() {
    assert_eq!(run("x.dim"), Ok(Value::ints(&[2, 4, 9, 9])));
    assert_eq!(
        run("(groups, depthwise)"),
        Ok(Value::Tuple(vec![Value::Int(2), Value::Bool(false)]))
    );
    assert_eq!(run("()"), Ok(Value::Tuple(vec![])));
    assert_eq!(run("x.rank"), Ok(Value::Int(4)));
    assert_eq!(int("x.dim[1 + 2] - -1"), 10);
}

#[test]
fn hand_built_deep_trees_are_refused_not_overflowed() {
    let e = deep_negation(MAX_HEIGHT + 10);
    assert_eq!(
        eval(&e, &Bindings::new()).unwrap_err().kind,
        ExprErrorKind::Budget
    );
}

/// The parameter kinds beyond `usize`: floats (IEEE comparisons), enumeration values, lists
/// (indexed at run time, with `len`, `contains`, `distinct`, `within`, `permutation`) and
/// `select` on integers.
#[test]
fn floats_names_and_lists() {
    let mut b = Bindings::new();
    b.insert("eps", Value::Float(Real(1e-5)));
    b.insert("nan_eps", Value::Float(Real(f64::NAN)));
    b.insert("mode", Value::Text("valid".to_owned()));
    b.insert("perm", Value::ints(&[2, 0, 1]));
    b.insert("axes", Value::ints(&[0, -1]));
    b.insert("flag", Value::Bool(true));
    b.insert("x", Value::operand(&[4, 5, 6]));
    let truth = |src: &str| eval(&parse(src).unwrap(), &b).unwrap();
    for src in [
        "eps > 0.0 && eps < 1",
        "!(nan_eps >= 0.0) && nan_eps != nan_eps && isnan(nan_eps) && !isfinite(nan_eps)",
        "-eps < 0 && eps * 2 == 2e-5",
        "mode == \"valid\" && mode != \"window\"",
        "len(perm) == 3 && permutation(perm, x.rank) && !permutation(axes, 2)",
        "contains(axes, -1) && !contains(axes, 1) && distinct(axes) && within(axes, -3, 3)",
        "perm[0] == 2 && x.dim[perm[0]] == 6",
        "select(flag, x.dim[2], x.dim[1]) == 6 && select(!flag, 1, 2) == 2",
    ] {
        assert_eq!(truth(src), Value::Bool(true), "{src}");
    }
    let e = eval(&parse("perm[3]").unwrap(), &b).unwrap_err();
    assert_eq!(e.kind, ExprErrorKind::IndexOutOfRange);
    let e = eval(&parse("x.dim[perm[0] + 1]").unwrap(), &b).unwrap_err();
    assert_eq!(e.kind, ExprErrorKind::IndexOutOfRange);
    let e = eval(&parse("eps % 2").unwrap(), &b).unwrap_err();
    assert_eq!(e.kind, ExprErrorKind::Type);
    let e = eval(&parse("mode < \"z\"").unwrap(), &b).unwrap_err();
    assert_eq!(e.kind, ExprErrorKind::Type);
}

/// The rank-generic functions: `axes` (distinct axes once negative ones are counted from the
/// end), `prod` of an operand's dims, `broadcastable` shapes.
#[test]
fn axes_prod_and_broadcastable() {
    let mut b = Bindings::new();
    b.insert("x", Value::operand(&[4, 5, 6]));
    b.insert("y", Value::operand(&[5, 1]));
    b.insert("z", Value::operand(&[4, 6]));
    b.insert("ok", Value::ints(&[0, -1]));
    b.insert("twice", Value::ints(&[1, -2]));
    b.insert("outside", Value::ints(&[3]));
    b.insert("none", Value::ints(&[]));
    let truth = |src: &str| eval(&parse(src).unwrap(), &b).unwrap();
    for src in [
        "axes(ok, x.rank) && axes(none, 0) && !axes(twice, x.rank) && !axes(outside, 3)",
        "axes(outside, 4) && !axes(ok, 1)",
        "prod(x.dim) == 120 && prod(none) == 1 && prod(y.dim) == 5",
        "broadcastable(x.dim, y.dim) && !broadcastable(x.dim, z.dim)",
        "broadcastable(none, x.dim) && broadcastable(y.dim, y.dim)",
    ] {
        assert_eq!(truth(src), Value::Bool(true), "{src}");
    }
    b.insert("huge", Value::ints(&[i64::MAX, 2]));
    let e = eval(&parse("prod(huge)").unwrap(), &b).unwrap_err();
    assert_eq!(e.kind, ExprErrorKind::Overflow);
}
