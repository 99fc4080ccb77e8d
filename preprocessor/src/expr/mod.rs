//! The FKC expression language: the formulas of `shape_constraint`, `constraint`,
//! `shape_rule`, `dtype_rule`, `flops`, `bytes_moved`, `memory.*` and `fast_paths.when`.
//!
//! [`parse`] turns source text into an [`Expr`] whose every node carries a byte [`Span`];
//! [`check`] proves against a [`Scope`] of types that every name binds, every index is a
//! constant within its tuple and every operation is well-typed, collecting all errors;
//! [`eval`] computes a [`Value`] against [`Bindings`] with checked `i64` arithmetic. Every
//! failure is an [`ExprError`] located in the source; nothing panics on any input.
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
mod span;
mod value;

pub use ast::{Arg, BinOp, Expr, ExprKind, UnOp};
pub use check::{FunctionSig, Scope, check};
pub use error::{ExprError, ExprErrorKind};
pub use eval::{Bindings, NativeFn, divisible, eval, floor_div, floor_mod};
pub use lexer::MAX_TOKENS;
pub use parser::{MAX_DEPTH, MAX_HEIGHT, MAX_SOURCE_LEN, parse};
pub use span::Span;
pub use value::{Type, Value};

#[cfg(test)]
pub(crate) mod fixtures;
