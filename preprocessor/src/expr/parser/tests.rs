//! Unit tests of the expression parser.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use super::*;

/// Parses and prints back canonically.
fn canon(src: &str) -> String {
    parse(src)
        .unwrap_or_else(|e| panic!("{src}: {}", e.render(src)))
        .to_source()
}

fn err(src: &str) -> ExprError {
    parse(src).expect_err(src)
}

fn at(src: &str) -> (usize, usize) {
    let e = err(src);
    (e.span.start, e.span.end)
}

#[test]
fn precedence_and_associativity_are_c() {
    assert_eq!(canon("a+b*c"), "a + b * c");
    assert_eq!(canon("(a+b)*c"), "(a + b) * c");
    assert_eq!(canon("a-b-c"), "a - b - c");
    assert_eq!(canon("a-(b-c)"), "a - (b - c)");
    assert_eq!(canon("a/b*c%d"), "a / b * c % d");
    assert_eq!(canon("a || b && c"), "a || b && c");
    assert_eq!(canon("(a || b) && c"), "(a || b) && c");
    assert_eq!(canon("a < b == c"), "a < b == c");
    assert_eq!(canon("a == (b == c)"), "a == (b == c)");
    assert_eq!(canon("!a && -b < c"), "!a && -b < c");
    assert_eq!(canon("-x.dim[0]"), "-x.dim[0]");
    assert_eq!(canon("(-x).dim"), "(-x).dim");
    assert_eq!(canon("--5"), "--5");
    assert_eq!(canon("((((a))))"), "a");
}

#[test]
fn tree_shape_and_spans() {
    let e = parse("a + b * c").unwrap();
    let ExprKind::Binary {
        op: BinOp::Add,
        op_span,
        rhs,
        ..
    } = &e.kind
    else {
        panic!("{e:?}")
    };
    assert_eq!(*op_span, Span::new(2, 3));
    assert_eq!(rhs.span, Span::new(4, 9));
    assert!(matches!(rhs.kind, ExprKind::Binary { op: BinOp::Mul, .. }));
    assert_eq!(e.span, Span::new(0, 9));
    let e = parse(" (a + b) * c").unwrap();
    let ExprKind::Binary { lhs, .. } = &e.kind else {
        panic!()
    };
    assert_eq!(
        lhs.span,
        Span::new(2, 7),
        "a grouped node keeps its own span"
    );
    assert_eq!(
        e.span,
        Span::new(1, 12),
        "its parent covers the parentheses"
    );
    let e = parse("(x).dim").unwrap();
    assert_eq!(e.names(), [("x".to_owned(), Span::new(1, 2))]);
    assert_eq!(e.span, Span::new(0, 7));
    let e = parse("-(a)").unwrap();
    assert_eq!(e.span, Span::new(0, 4));
    let e = parse("(f)(a)").unwrap();
    assert_eq!(e.span, Span::new(0, 6));
    let e = parse("x.dim[1]").unwrap();
    let ExprKind::Index { base, index } = &e.kind else {
        panic!()
    };
    assert_eq!(
        (base.span, index.span, e.span),
        (Span::new(0, 5), Span::new(6, 7), Span::new(0, 8))
    );
    let ExprKind::Member {
        field, field_span, ..
    } = &base.kind
    else {
        panic!()
    };
    assert_eq!((field.as_str(), *field_span), ("dim", Span::new(2, 5)));
    let e = parse("-\tx").unwrap();
    assert_eq!(e.span, Span::new(0, 3));
}

#[test]
fn tuples_and_calls() {
    assert_eq!(canon("()"), "()");
    assert_eq!(canon("(1,)"), "(1,)");
    assert_eq!(canon("(1, 2,)"), "(1, 2)");
    assert_eq!(canon("((1, 2), (3,))[0]"), "((1, 2), (3,))[0]");
    assert_eq!(canon("min(a,b,)"), "min(a, b)");
    assert_eq!(canon("f()"), "f()");
    let src = "from_params(N=x.dim[0], C = x.dim[1])";
    assert_eq!(canon(src), "from_params(N=x.dim[0], C=x.dim[1])");
    let ExprKind::Call {
        name,
        name_span,
        args,
    } = parse(src).unwrap().kind
    else {
        panic!()
    };
    assert_eq!(
        (name.as_str(), name_span),
        ("from_params", Span::new(0, 11))
    );
    assert_eq!(args[0].name, Some(("N".to_owned(), Span::new(12, 13))));
    assert_eq!(args[1].name, Some(("C".to_owned(), Span::new(24, 25))));
    assert_eq!(args[1].value.span, Span::new(28, 36));
    assert_eq!(canon("passthrough(x)"), "passthrough(x)");
    assert_eq!(canon("conv2d(params)"), "conv2d(params)");
}

#[test]
fn empty_and_missing_operands() {
    let e = err("");
    assert_eq!(
        (e.span, e.message.as_str(), e.kind),
        (Span::at(0), "expected an expression", ExprErrorKind::Syntax)
    );
    assert_eq!(err(" \t ").span, Span::at(3));
    assert_eq!(at("a +"), (3, 3));
    assert_eq!(at("a + * b"), (4, 5));
    assert_eq!(err("a + * b").message, "expected an expression, found `*`");
    assert_eq!(at("x.dim[]"), (6, 7));
    assert_eq!(at("(,)"), (1, 2));
    assert_eq!(
        err("+a").help.as_deref(),
        Some("unary `+` is not supported; remove it")
    );
}

#[test]
fn helpful_syntax_errors() {
    let e = err("groups = 1");
    assert_eq!(
        (e.span, e.help.as_deref()),
        (Span::new(7, 8), Some("use `==` to compare"))
    );
    let e = err("same_as=x.dim[1]");
    assert_eq!(e.span, Span::new(7, 8));
    assert!(e.help.unwrap().contains("shorthand"));
    let e = err("a and b");
    assert_eq!(
        (e.span, e.help.as_deref()),
        (Span::new(2, 5), Some("use `&&` for logical and"))
    );
    let e = err("a or b");
    assert_eq!(
        (e.span, e.help.as_deref()),
        (Span::new(2, 4), Some("use `||` for logical or"))
    );
    let e = err("not a");
    assert_eq!(
        (e.span, e.help.as_deref()),
        (Span::new(0, 3), Some("use `!` for logical not"))
    );
    let e = err("a b");
    assert_eq!(e.span, Span::new(2, 3));
    assert_eq!(
        e.message,
        "expected an operator or the end of the expression, found identifier `b`"
    );
    assert_eq!(at("a < b < c"), (6, 7));
    assert!(err("a == b != c").message.contains("cannot be chained"));
    assert_eq!(at("a)"), (1, 2));
    assert_eq!(at("x.0"), (2, 3));
    assert_eq!(
        err("x.0").help.as_deref(),
        Some("index tuples with brackets: `[0]`")
    );
    assert_eq!(at("x.dim(1)"), (5, 6));
    assert_eq!(at("f(N=1, 2)"), (7, 8));
    assert_eq!(at("f(N=1, N=2)"), (7, 8));
    assert_eq!(at("(a b)"), (3, 4));
}

#[test]
fn unclosed_brackets_point_at_the_opener() {
    for (src, start) in [
        ("(a + b", 0),
        ("x.dim[1", 5),
        ("min(a, b", 3),
        ("f(", 1),
        ("(a,", 0),
    ] {
        let e = err(src);
        assert_eq!(e.span, Span::new(start, start + 1), "{src}");
        assert!(e.message.starts_with("unclosed"), "{src}: {}", e.message);
    }
}

#[test]
fn deep_nesting_fails_fast_at_the_opener() {
    let src = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    let e = err(&src);
    assert_eq!(e.kind, ExprErrorKind::Budget);
    assert_eq!(e.span, Span::new(MAX_DEPTH, MAX_DEPTH + 1));
    let ok = format!("{}1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
    assert_eq!(canon(&ok), "1");
    for (opener, at) in [
        ("-", MAX_DEPTH),
        ("!", MAX_DEPTH),
        ("a[", 2 * MAX_DEPTH + 1),
        ("f(", 2 * MAX_DEPTH + 1),
    ] {
        let src = format!("{}0", opener.repeat(5000));
        let e = err(&src);
        assert_eq!(
            (e.kind, e.span),
            (ExprErrorKind::Budget, Span::new(at, at + 1)),
            "{opener}"
        );
    }
}

#[test]
fn long_chains_are_bounded_by_height() {
    let ok = vec!["1"; MAX_HEIGHT + 1].join("+");
    assert!(parse(&ok).is_ok());
    let deep = vec!["1"; MAX_HEIGHT + 2].join("+");
    let e = err(&deep);
    assert_eq!(e.kind, ExprErrorKind::Budget);
    assert_eq!(e.span, Span::new(0, 1));
}

#[test]
fn source_length_budget() {
    let huge = "a+".repeat(512 * 1024) + "a";
    let e = err(&huge);
    assert_eq!(e.kind, ExprErrorKind::Budget);
    assert_eq!(e.span, Span::new(MAX_SOURCE_LEN, huge.len()));
    let multibyte = format!("{}·", "a".repeat(MAX_SOURCE_LEN - 1));
    assert_eq!(
        err(&multibyte).span.start,
        MAX_SOURCE_LEN - 1,
        "span starts on a char boundary"
    );
}

#[test]
fn numbers_past_u64_and_tabs() {
    let e = err("x_shape[0] * 123456789012345678901234567890");
    assert_eq!(e.span, Span::new(13, 43));
    assert_eq!(canon("\tgroups\t==\t1\n"), "groups == 1");
    assert_eq!(canon("1_000 * 2"), "1000 * 2");
}
