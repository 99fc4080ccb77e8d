//! The parser's tests: a convolution's nested statements, C's precedence with chained
//! comparisons, errors located with their help, and hostile nesting bounded.

#![allow(clippy::unwrap_used, clippy::panic)]
use super::*;

const CONV: &str = "cout_g = out.dim[1] / groups
for n, co, oh, ow in out:
  acc: T = 0
  for ci in 0..weight.dim[1], kh in 0..weight.dim[2], kw in 0..weight.dim[3]:
    ih = oh * stride[0] + kh * dilation[0] - padding[0]
    iw = ow * stride[1] + kw * dilation[1] - padding[1]
    if 0 <= ih < x.dim[2] && 0 <= iw < x.dim[3]:
      acc += x[n, co / cout_g * weight.dim[1] + ci, ih, iw] * weight[co, ci, kh, kw]
  if present(bias): acc += bias[co]
  out[n, co, oh, ow] = acc
";

#[test]
fn a_convolution_parses_into_nested_statements() {
    let program = parse(CONV).unwrap();
    assert_eq!(program.body.len(), 2);
    let StmtKind::For { bindings, body } = &program.body[1].kind else {
        panic!()
    };
    assert_eq!(bindings[0].names.len(), 4);
    assert!(matches!(&bindings[0].domain, Domain::Tensor(t, _) if t == "out"));
    assert_eq!(body.len(), 4);
    let StmtKind::For { bindings, body } = &body[1].kind else {
        panic!()
    };
    assert_eq!(bindings.len(), 3);
    let StmtKind::If { arms, .. } = &body[2].kind else {
        panic!()
    };
    let ExprKind::Binary {
        op: BinOp::And,
        lhs,
        ..
    } = &arms[0].0.kind
    else {
        panic!()
    };
    let ExprKind::Compare { rest, .. } = &lhs.kind else {
        panic!()
    };
    assert_eq!(rest.len(), 2);
    // spans point into the source
    let StmtKind::Assign { value, .. } = &arms[0].1[0].kind else {
        panic!()
    };
    assert!(CONV[value.span.start..value.span.end].starts_with("x[n, co / cout_g"));
}

#[test]
fn precedence_is_c_and_comparisons_chain() {
    let program = parse("a = 1 + 2 * 3 < 4 || b\n").unwrap();
    let StmtKind::Assign { value, .. } = &program.body[0].kind else {
        panic!()
    };
    assert!(matches!(value.kind, ExprKind::Binary { op: BinOp::Or, .. }));
}

#[test]
fn errors_are_located_with_help() {
    let at = |src: &str| {
        let e = parse(src).unwrap_err();
        (e.span.start, e.span.end)
    };
    assert_eq!(at("for i in 0..n\n  a = 1\n"), (13, 14));
    assert_eq!(at("a == 1\n"), (2, 4));
    assert_eq!(at("else:\n  a = 1\n"), (0, 4));
    assert_eq!(at("for i in f(x):\n  a = 1\n"), (9, 13));
    assert!(parse("").is_err());
    assert!(parse("# only a comment\n").is_err());
    assert!(parse("a = ").is_err());
}

#[test]
fn hostile_nesting_is_bounded() {
    let deep = format!("a = {}1{}\n", "(".repeat(10_000), ")".repeat(10_000));
    assert!(parse(&deep).is_err());
    let mut blocks = String::new();
    for depth in 0..200 {
        blocks.push_str(&" ".repeat(depth));
        blocks.push_str("if a:\n");
    }
    assert!(parse(&blocks).is_err());
    let unary = format!("a = {}1\n", "-".repeat(100_000));
    assert!(parse(&unary).is_err());
    assert!(parse(&"x".repeat(MAX_SOURCE_LEN + 1)).is_err());
}
