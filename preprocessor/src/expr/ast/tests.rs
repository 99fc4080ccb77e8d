//! Tests of the syntax tree: spans, children, written form.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use super::*;

fn e(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::default())
}
fn name(n: &str) -> Expr {
    e(ExprKind::Name(n.to_owned()))
}
fn int(v: i64) -> Expr {
    e(ExprKind::Int(v))
}
fn bin(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    e(ExprKind::Binary {
        op,
        op_span: Span::default(),
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
    })
}

#[test]
fn printing_adds_parentheses_only_where_needed() {
    let sum = bin(BinOp::Add, name("a"), name("b"));
    assert_eq!(
        bin(BinOp::Mul, sum.clone(), name("c")).to_source(),
        "(a + b) * c"
    );
    assert_eq!(
        bin(BinOp::Add, name("c"), sum.clone()).to_source(),
        "c + (a + b)"
    );
    assert_eq!(
        bin(BinOp::Add, sum.clone(), name("c")).to_source(),
        "a + b + c"
    );
    let lt = bin(BinOp::Lt, name("a"), name("b"));
    assert_eq!(
        bin(BinOp::Lt, lt.clone(), name("c")).to_source(),
        "(a < b) < c"
    );
    assert_eq!(
        bin(BinOp::Eq, lt.clone(), name("c")).to_source(),
        "a < b == c"
    );
    let neg = e(ExprKind::Unary {
        op: UnOp::Neg,
        operand: Box::new(sum.clone()),
    });
    assert_eq!(neg.to_source(), "-(a + b)");
    let member = e(ExprKind::Member {
        base: Box::new(neg),
        field: "dim".into(),
        field_span: Span::default(),
    });
    assert_eq!(member.to_string(), "(-(a + b)).dim");
    let tuple1 = e(ExprKind::Tuple(vec![int(1)]));
    assert_eq!(tuple1.to_source(), "(1,)");
    assert_eq!(e(ExprKind::Tuple(vec![])).to_source(), "()");
    let call = e(ExprKind::Call {
        name: "from_params".into(),
        name_span: Span::default(),
        args: vec![
            Arg {
                name: None,
                value: int(1),
            },
            Arg {
                name: Some(("N".into(), Span::default())),
                value: sum,
            },
        ],
    });
    assert_eq!(call.to_source(), "from_params(1, N=a + b)");
}

#[test]
fn names_calls_and_closedness() {
    let call = e(ExprKind::Call {
        name: "min".into(),
        name_span: Span::new(0, 3),
        args: vec![
            Arg {
                name: None,
                value: name("a"),
            },
            Arg {
                name: None,
                value: name("b"),
            },
        ],
    });
    let whole = bin(BinOp::Add, call, name("a"));
    let names: Vec<String> = whole.names().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "b", "a"]);
    assert_eq!(whole.calls(), [("min".to_owned(), Span::new(0, 3))]);
    assert!(!whole.is_closed());
    assert!(bin(BinOp::Add, int(1), int(2)).is_closed());
}

#[test]
fn depth_is_measured_without_recursion() {
    let mut chain = int(0);
    for _ in 0..100_000 {
        chain = bin(BinOp::Add, chain, int(1));
    }
    assert!(chain.too_deep(10).is_some());
    assert_eq!(chain.too_deep(100_000), None);
    assert_eq!(chain.names().len(), 0);
    // Dropping a deep tree recurses; keep the test's stack use modest by unwinding it here.
    while let ExprKind::Binary { lhs, .. } = chain.kind {
        chain = *lhs;
    }
}

#[test]
fn binding_powers_follow_c() {
    let order = [
        BinOp::Or,
        BinOp::And,
        BinOp::Eq,
        BinOp::Lt,
        BinOp::Add,
        BinOp::Mul,
    ];
    for pair in order.windows(2) {
        assert!(pair[0].binding_power().1 < pair[1].binding_power().0);
    }
    assert!(BinOp::Ne.is_comparison() && !BinOp::And.is_comparison());
    assert!(BinOp::Rem.is_arithmetic() && BinOp::Or.is_logical());
}
