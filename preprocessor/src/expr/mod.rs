//! The FKC expression language: the formulas of `shape_constraint`, `constraint`,
//! `shape_rule`, `dtype_rule`, `flops`, `bytes_moved`, `memory.*` and `fast_paths.when`.
//!
//! [`parse`] turns source text into an [`Expr`] whose every node carries a byte [`Span`];
//! [`check`] proves against a [`Scope`] of types that every name binds, every index is a
//! constant within its tuple and every operation is well-typed, collecting all errors;
//! [`eval`] computes a [`Value`] against [`Bindings`] with checked `i64` arithmetic. Every
//! failure is an [`ExprError`] located in the source; nothing panics on any input.
//!
//! ```
//! use mdbook_fkc::expr::{Bindings, ExprErrorKind, Scope, Type, Value, check, eval, parse};
//!
//! let expr = parse("x.dim[1] % groups == 0").unwrap();
//! let mut scope = Scope::new();
//! scope.insert("x", Type::operand(4)).insert("groups", Type::Int);
//! assert_eq!(check(&expr, &scope), Ok(Type::Bool));
//!
//! let mut bindings = Bindings::new();
//! bindings.insert("x", Value::operand(&[2, 4, 9, 9])).insert("groups", Value::Int(2));
//! assert_eq!(eval(&expr, &bindings), Ok(Value::Bool(true)));
//!
//! let errors = check(&parse("x.dim[4] + grups").unwrap(), &scope).unwrap_err();
//! assert_eq!(errors[0].kind, ExprErrorKind::IndexOutOfRange);
//! assert_eq!((errors[0].span.start, errors[0].span.end), (6, 7));
//! assert_eq!(errors[1].help.as_deref(), Some("did you mean `groups`? (names in scope: `groups`, `x`)"));
//! ```
//!
//! # Grammar
//!
//! ```text
//! expr     = or ;
//! or       = and { "||" and } ;
//! and      = equality { "&&" equality } ;
//! equality = ordering [ ( "==" | "!=" ) ordering ] ;      (* comparisons do not chain *)
//! ordering = sum [ ( "<" | "<=" | ">" | ">=" ) sum ] ;
//! sum      = product { ( "+" | "-" ) product } ;
//! product  = prefix { ( "*" | "/" | "%" ) prefix } ;
//! prefix   = ( "-" | "!" ) prefix | postfix ;
//! postfix  = primary { "." IDENT | "[" expr "]" } ;
//! primary  = INT | "true" | "false" | call | IDENT
//!          | "(" ")" | "(" expr ")" | "(" expr "," [ expr { "," expr } [ "," ] ] ")" ;
//! call     = IDENT "(" [ args [ "," ] ] ")" ;
//! args     = arg { "," arg } ;                            (* positional before keyword *)
//! arg      = [ IDENT "=" ] expr ;
//! INT      = DIGIT { DIGIT | "_" } ;                       (* decimal, must fit i64 *)
//! IDENT    = ( ALPHA | "_" ) { ALPHA | DIGIT | "_" } ;     (* ASCII; not true/false *)
//! ```
//!
//! Whitespace (space, tab, newline) separates tokens. `(a)` is grouping, `(a,)` a 1-tuple.
//! Precedence and associativity are C's: `a < b == c` is `(a < b) == c`, but `a < b < c`
//! is rejected with a help. The equality chain `a == b == c` is rejected the same way.
//!
//! # Semantics
//!
//! - Values are [`Value::Int`] (`i64`), [`Value::Bool`], [`Value::Tuple`] and
//!   [`Value::Record`]. An operand `x` is the record `{ dim: (..), rank: n }`
//!   ([`Value::operand`]); op-param fields are ints or tuples (`stride[0]`).
//! - `+ - *` and unary `-` are checked: overflow is an error. `/` and `%` are floor division
//!   and modulo (`(2 - 3) / 1 + 1 == 0`, so an undefined output size shows up as `<= 0`);
//!   a zero divisor is an error.
//! - `< <= > >=` compare ints; `== !=` compare ints, bools or tuples of the same shape;
//!   `&& ||` take bools and short-circuit; `!` takes a bool.
//! - `x[i]` needs a tuple and an int in `0..len`; negative indices are out of range.
//! - Built-in functions: `divisible(a, b)` is `b != 0 && a % b == 0` (so a zero divisor gives
//!   `false`, not an error); `min(a, b, ...)` and `max(a, b, ...)` take two or more ints.
//!   Other calls (`passthrough(x)`, `conv2d(params)`, `from_params(N=..., ...)`) parse, and
//!   are rejected by `check`/`eval` unless the caller registers them
//!   ([`Scope::insert_function`], [`Bindings::insert_function`]) or interprets the [`Expr`]
//!   itself. Caller functions take positional arguments only.
//! - Integer literals are never negative in the tree: `-5` is `Neg(5)`, and `i64::MIN` must be
//!   written `-9223372036854775807 - 1`.
//!
//! # Budgets
//!
//! Source longer than [`MAX_SOURCE_LEN`] bytes, more than [`MAX_TOKENS`] tokens, nesting
//! deeper than [`MAX_DEPTH`] (parentheses, brackets, calls, prefix operators; checked before
//! recursing) and trees higher than [`MAX_HEIGHT`] are [`ExprErrorKind::Budget`] errors, so
//! every pass over a parsed tree recurses at most [`MAX_HEIGHT`] deep.

mod ast;
mod check;
mod error;
mod eval;
mod lexer;
mod parser;
mod rules;
mod slots;
mod span;
mod value;

pub use ast::{Arg, BinOp, Expr, ExprKind, UnOp};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // also the fuzzers' and tests' API
pub use check::{FunctionSig, Scope, check};
pub use error::{ExprError, ExprErrorKind};

/// The closest of `candidates` to a misspelt `name`, if it is a plausible typo.
pub fn suggest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    error::did_you_mean(name, candidates)
}
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // also the fuzzers' and tests' API
pub use eval::{Bindings, NativeFn, divisible, eval, floor_div, floor_mod, normalized_axes};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // also the fuzzers' and tests' API
pub use lexer::MAX_TOKENS;
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // also the fuzzers' and tests' API
pub use parser::{MAX_DEPTH, MAX_HEIGHT, MAX_SOURCE_LEN, parse};
pub use slots::Slots;
pub use span::Span;
pub use value::{Real, Type, Value};

#[cfg(test)]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::fixtures::{SEED, bindings};
    use super::*;

    /// `parse(to_source(e))` is `e` up to spans, and printing is idempotent.
    fn round_trips(src: &str) {
        let e = parse(src).unwrap_or_else(|err| panic!("{src}: {}", err.render(src)));
        let printed = e.to_source();
        let again =
            parse(&printed).unwrap_or_else(|err| panic!("{printed}: {}", err.render(&printed)));
        assert!(again.eq_ignore_spans(&e), "{src} -> {printed}");
        assert_eq!(again.to_source(), printed);
        assert_eq!(e.to_string(), printed);
    }

    #[test]
    fn seed_expressions_round_trip() {
        for (_, _, src, _) in SEED {
            round_trips(src);
        }
        let e = parse(SEED[6].2).unwrap();
        assert_eq!(
            e.to_source(),
            "2 * out_shape[0] * out_shape[1] * (x_shape[1] / groups) * w_shape[2] * w_shape[3] * out_shape[2] * out_shape[3]"
        );
    }

    #[test]
    fn assorted_expressions_round_trip() {
        for src in [
            "a - (b - c)",
            "(a < b) == (c < d)",
            "(a == b) == c",
            "a == (b == c)",
            "-(a + b) * -c",
            "!(a && b) || !!c",
            "(-x).dim[0]",
            "((1, 2), (3,), ())[0][1]",
            "f(a, b=(1, 2), c=-d)",
            "-9223372036854775807 - 1",
            "a % b / c * d",
            "a * (b / c)",
            "x.dim[(1 + 2) * 0]",
        ] {
            round_trips(src);
        }
    }

    #[test]
    fn names_are_the_roots() {
        let e = parse("divisible(x.dim[1], weight.dim[1]) && groups == N").unwrap();
        let names: Vec<(String, (usize, usize))> = e
            .names()
            .into_iter()
            .map(|(n, s)| (n, (s.start, s.end)))
            .collect();
        assert_eq!(
            names,
            [
                ("x".into(), (10, 11)),
                ("weight".into(), (20, 26)),
                ("groups".into(), (38, 44)),
                ("N".into(), (48, 49))
            ]
        );
        let e = parse("from_params(N=x.dim[0])").unwrap();
        assert_eq!(e.names(), [("x".to_owned(), Span::new(14, 15))]);
    }

    #[test]
    fn errors_come_in_source_order() {
        // A syntax error before a bad character is reported first, and vice versa.
        assert_eq!(parse("a b · c").unwrap_err().span, Span::new(2, 3));
        assert_eq!(parse("a · b c").unwrap_err().span, Span::new(2, 4));
        assert_eq!(
            parse("(a + 99999999999999999999").unwrap_err().span,
            Span::new(5, 25)
        );
    }

    #[test]
    fn one_megabyte_is_refused_quickly() {
        let src = "x.dim[1] + ".repeat(100_000);
        assert!(src.len() > 1_000_000);
        let e = parse(&src).unwrap_err();
        assert_eq!(e.kind, ExprErrorKind::Budget);
        assert_eq!(e.span, Span::new(MAX_SOURCE_LEN, src.len()));
        let just_under = "1+".repeat(MAX_SOURCE_LEN / 2 - 1) + "1";
        assert_eq!(
            parse(&just_under).unwrap_err().kind,
            ExprErrorKind::Budget,
            "too many tokens"
        );
    }

    #[test]
    fn checked_expressions_evaluate_without_lookup_errors() {
        let scope = Scope::of(&bindings("conv2d"));
        let b = bindings("conv2d");
        for src in [
            "x.dim[3] - w_shape[3] + 2 * padding[1]",
            "stride == (2, 2) && !depthwise",
            "min(groups, 1)",
        ] {
            let e = parse(src).unwrap();
            let t = check(&e, &scope).unwrap();
            let v = eval(&e, &b).unwrap();
            assert!(t.admits(&v), "{src}: {t} vs {v}");
        }
    }

    #[test]
    fn every_kind_has_a_stable_name() {
        let kinds = [
            ExprErrorKind::Syntax,
            ExprErrorKind::Budget,
            ExprErrorKind::UnknownName,
            ExprErrorKind::UnknownFunction,
            ExprErrorKind::Type,
            ExprErrorKind::IndexOutOfRange,
            ExprErrorKind::Overflow,
            ExprErrorKind::DivisionByZero,
            ExprErrorKind::Arity,
            ExprErrorKind::Function,
        ];
        let mut names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), kinds.len());
    }

    /// Inputs found by `cargo fuzz run expr_parse` that once misbehaved, plus hostile ones.
    #[test]
    fn fuzz_regressions() {
        // crash-f4955f89: a grouped name's span covered its parentheses, so `names()` pointed
        // at `(in0mm3)` instead of `in0mm3`.
        let src = "p>(in0mm3) || !depthwise";
        for (name, span) in parse(src).unwrap().names() {
            assert_eq!(span.slice(src), name);
        }
        let hostile = ["", "(", ")", "a[", "f(a=", "-", "x.", "((((((((", "1_", "_"];
        for src in hostile {
            let _ = parse(src);
        }
    }
}
