//! Fuzz target for the FKC expression language (`mdbook_fkc::expr`).
//!
//! Any input (decoded as UTF-8, lossily) must parse or fail with an error whose span lies on
//! char boundaries inside the input. When it parses, the canonical print must parse back to
//! the same tree, and the checker must be sound with respect to the evaluator: if `check`
//! accepts the expression against a fixed scope, `eval` against bindings of exactly those
//! types either returns a value of the checked type or fails with arithmetic only (overflow,
//! division by zero) or an index known only when evaluated (`x.dim[groups]`, `perm[k]`) out of
//! range — never an unknown name or a type error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdbook_fkc::expr::{
    Bindings, Expr, ExprError, ExprErrorKind, FunctionSig, MAX_SOURCE_LEN, Scope, Span, Type,
    Value, check, eval, parse,
};

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data);
    match parse(&src) {
        Ok(expr) => parsed(&src, &expr),
        Err(err) => assert_located(&src, &err),
    }
});

fn parsed(src: &str, expr: &Expr) {
    expr.walk(|node| assert_span(src, node.span));
    for (name, span) in expr.names() {
        assert_eq!(span.slice(src), name);
    }
    round_trip(expr);
    let (scope, bindings) = conv2d_environment();
    let checked = check(expr, &scope);
    if let Err(errors) = &checked {
        assert!(!errors.is_empty());
        errors.iter().for_each(|e| assert_located(src, e));
    }
    let value = eval(expr, &bindings);
    if let Err(err) = &value {
        assert_located(src, err);
    }
    if let Ok(ty) = checked {
        match value {
            Ok(v) => assert!(
                ty.admits(&v),
                "checked as {ty} but evaluated to {v}: {src:?}"
            ),
            Err(err) => assert!(
                matches!(
                    err.kind,
                    ExprErrorKind::Overflow
                        | ExprErrorKind::DivisionByZero
                        | ExprErrorKind::IndexOutOfRange
                ),
                "checked as {ty} but eval failed with {:?} {err}: {src:?}",
                err.kind
            ),
        }
    }
}

fn round_trip(expr: &Expr) {
    let printed = expr.to_source();
    if printed.len() > MAX_SOURCE_LEN {
        // Canonical spacing (`a+b` → `a + b`) can push a near-limit input past the length budget.
        return;
    }
    let again = parse(&printed)
        .unwrap_or_else(|e| panic!("canonical form does not parse: {printed:?}: {e}"));
    assert!(
        again.eq_ignore_spans(expr),
        "round trip changed the tree: {printed:?}"
    );
    assert_eq!(again.to_source(), printed, "printing is not idempotent");
}

fn assert_located(src: &str, err: &ExprError) {
    assert_span(src, err.span);
    assert!(!err.message.is_empty());
}

fn assert_span(src: &str, span: Span) {
    assert!(
        span.start <= span.end && span.end <= src.len(),
        "span {span} outside {} bytes",
        src.len()
    );
    assert!(
        src.is_char_boundary(span.start) && src.is_char_boundary(span.end),
        "span {span} splits a char"
    );
}

/// The conv2d contract's names, with consistent values, plus one caller function.
fn conv2d_environment() -> (Scope, Bindings) {
    let mut bindings = Bindings::new();
    for (name, dims) in [
        ("x", &[2, 4, 9, 9][..]),
        ("weight", &[8, 2, 3, 3]),
        ("bias", &[8]),
        ("out", &[2, 8, 5, 5]),
    ] {
        bindings.insert(name, Value::operand(dims));
    }
    bindings
        .insert("x_shape", Value::ints(&[2, 4, 9, 9]))
        .insert("w_shape", Value::ints(&[8, 2, 3, 3]))
        .insert("out_shape", Value::ints(&[2, 8, 5, 5]))
        .insert("stride", Value::ints(&[2, 2]))
        .insert("padding", Value::ints(&[1, 1]))
        .insert("dilation", Value::ints(&[1, 1]))
        .insert("groups", Value::Int(2))
        .insert("dtype_bytes", Value::Int(4))
        .insert("depthwise", Value::Bool(false));
    bindings.insert_function("clamp0", |args: &[Value]| match args {
        [Value::Int(v)] => Ok(Value::Int((*v).max(0))),
        _ => Err("clamp0 takes one int".to_owned()),
    });
    let mut scope = Scope::of(&bindings);
    scope.insert_function("clamp0", FunctionSig::new(vec![Type::Int], Type::Int));
    (scope, bindings)
}
