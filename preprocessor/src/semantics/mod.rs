//! Executable semantics: what a kernel computes, as naive loop-nest pseudo-code inside its
//! contract (`semantics:`), in the spirit of the TOSA specification's pseudo-code and Tensor
//! Comprehensions' index notation. One small language and one interpreter give every
//! value-level check of the gate:
//!
//! - run in `f64` with a forward error bound ([`Exact`]) it is the **oracle**: each output
//!   element's exact value, how far a kernel computing it in the stated dtypes may lie from it,
//!   and which special values (NaN, ±Inf) some order of its sums may give;
//! - run in the dtypes in exactly the written order ([`Rounded`]) it is the **order
//!   reference** (`precision.order: as_written`), compared bit for bit;
//! - every run **counts** the work (multiply-adds, taps visited, comparisons, arithmetic,
//!   distinct elements read and written) for the `flops` and `bytes_moved` checks;
//! - **traced**, it records which input elements each output element was made from, in order,
//!   which draws the worked example of any op.
//!
//! [`parse`] turns the text into a located syntax tree, [`check`] resolves it against the
//! contract's [`Signature`] into an [`ir::Program`] (every name bound, every expression typed),
//! and [`run`] runs that on one sample. Index bounds, reads before writes and output elements
//! never written are checked on every sample the gate runs, located in the pseudo-code.
//!
//! # Grammar
//!
//! ```text
//! program   = { statement } ;
//! statement = "for" binding { "," binding } ":" block
//!           | "if" expr ":" block { "elif" expr ":" block } [ "else" ":" block ]
//!           | target [ ":" DTYPE [ "[" exprs "]" ] ] ( "=" | "+=" | "-=" | "*=" ) expr NEWLINE ;
//! binding   = IDENT "in" expr ".." expr            (* lo, lo+1, …, hi-1 *)
//!           | IDENT { "," IDENT } "in" IDENT ;     (* every index of a tensor, row-major *)
//! block     = NEWLINE INDENT { statement } DEDENT | statement ;
//! target    = IDENT [ "[" exprs "]" ] ;
//! expr      = C's precedence: || && (comparisons, chaining: 0 <= i < n) + - * / % unary(- !)
//!             postfix(.dim[k] .rank [i, j]) calls; INT, FLOAT, IDENT, "(" expr ")" ;
//! DTYPE     = "T" | "f64" | "f32" | "bf16" | "f16" | "f8e5m2" | "i8" | "u8" | "i32" | "i64"
//!           | "bool" ;
//! ```
//!
//! Names: the contract's inputs and outputs (tensors: `x[n, c, h, w]`, `x.dim[2]`, `x.rank`),
//! its op-param fields (`groups`, `stride[0]`), loop variables, locals, `true`, `false`, `inf`,
//! `nan`. Functions: `exp log sqrt rsqrt tanh erf abs max min` on values (`max`/`min` of
//! indices too), `select(cond, a, b)`, `cast(v, dtype)`, `present(input)`, `isnan(v)`,
//! `numel(t)` (a tensor's element count), and as a tensor's only index the whole indices
//! `broadcast(o)`, `permuted(i, perm)`, `along(i, axis, t)` and `reduced(i, axes, keepdim)`.

pub mod ast;
mod check;
pub mod error;
pub mod exact;
mod exec;
pub(crate) mod fast;
pub mod float;
pub mod fuel;
pub mod ir;
mod lexer;
mod machine;
mod parser;
pub mod rounded;
pub mod run;
pub mod standard;

pub use check::{SigTensor, Signature, check};
pub use error::{SemanticsError, SemanticsErrorKind};
pub use exact::{Approx, Exact, Kinds};
pub use ir::{ParamForm, ParamValue};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // also the tests' and fuzzers' API
pub use machine::{Arith, Counts, Inputs, Outcome, Step};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // also the tests' and fuzzers' API
pub use parser::{MAX_DEPTH, MAX_SOURCE_LEN, parse};
pub use rounded::Rounded;
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // also the tests' and fuzzers' API
pub use run::{reference, run};

/// How a token of the pseudo-code is shown on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Highlight {
    Keyword,
    Number,
    Name,
    Function,
    Operator,
    Comment,
}

/// The highlighted pieces of `src`: (byte range, class); text between them is plain.
pub fn highlight(src: &str) -> Vec<(std::ops::Range<usize>, Highlight)> {
    let mut out = Vec::new();
    if let Ok(tokens) = lexer::tokenize(src) {
        for token in tokens {
            let class = match token.tok {
                lexer::Tok::Int(_) | lexer::Tok::Float(_) => Highlight::Number,
                lexer::Tok::Ident => match token.text(src) {
                    "for" | "in" | "if" | "elif" | "else" => Highlight::Keyword,
                    name if ir::Func::parse(name).is_some()
                        || matches!(name, "select" | "cast" | "present" | "isnan") =>
                    {
                        Highlight::Function
                    }
                    _ => Highlight::Name,
                },
                lexer::Tok::Newline | lexer::Tok::Indent | lexer::Tok::Dedent | lexer::Tok::Eof => {
                    continue;
                }
                _ => Highlight::Operator,
            };
            out.push((token.span.start..token.span.end, class));
        }
    }
    // comments: from `#` to the end of the line, outside any token
    let mut covered = out.iter().map(|(r, _)| r.clone()).peekable();
    let mut comments = Vec::new();
    let mut at = 0;
    for line in src.split_inclusive('\n') {
        if let Some(hash) = line.find('#') {
            let start = at + hash;
            while covered.peek().is_some_and(|r| r.end <= start) {
                covered.next();
            }
            if covered.peek().is_none_or(|r| r.start > start) {
                comments.push((
                    start..at + line.trim_end_matches('\n').len(),
                    Highlight::Comment,
                ));
            }
        }
        at += line.len();
    }
    out.extend(comments);
    out.sort_by_key(|(r, _)| r.start);
    out
}

#[cfg(test)]
mod exec_random_tests;
#[cfg(test)]
mod exec_tests;
#[cfg(test)]
mod language_tests;
#[cfg(test)]
mod tests;
