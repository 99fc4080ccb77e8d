//! The checker: a parsed program against the contract's signature (its inputs, outputs and
//! parameters) → an [`ir::Program`]. Every name must bind (a did-you-mean otherwise), every
//! expression is typed — an index, a condition or an element value with its dtype — and every
//! statement is one the interpreter can run. All errors are collected, each located.

mod calls_and_operators;
mod expressions;
mod statements;

use super::ast;
use super::error::{SemanticsError, SemanticsErrorKind};
use super::ir::{self, Bool, Int, Origin, Val};
use crate::expr::Span;
use fkc_provider::DType;
use std::collections::HashMap;

/// What the contract declares, as the pseudo-code sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Signature {
    pub inputs: Vec<SigTensor>,
    pub outputs: Vec<SigTensor>,
    pub params: Vec<ir::Param>,
    /// An input the signature does not declare is never present: `present(name)` is false and
    /// the block it guards is not checked (an op kind's standard semantics name every optional
    /// input of the op kind; a contract may declare fewer).
    pub undeclared_absent: bool,
}

/// An input or output of the contract.
#[derive(Debug, Clone, PartialEq)]
pub struct SigTensor {
    pub name: String,
    pub rank: usize,
    pub optional: bool,
    /// Its own dtype (`ids: I64`), whatever the run's `T`.
    pub dtype: Option<DType>,
}

/// Checks `program` against `signature`, with `T` the element dtype `t`.
pub fn check(
    program: &ast::Program,
    signature: &Signature,
    t: DType,
) -> Result<ir::Program, Vec<SemanticsError>> {
    let mut checker = Checker::new(signature, t);
    let mut body = checker.block(&program.body);
    let mut forms = 0;
    super::fast::plan_all(&mut body, &mut forms);
    if checker.errors.is_empty() {
        Ok(ir::Program {
            body,
            forms,
            tensors: checker.tensors,
            params: signature.params.clone(),
            selects: checker.selects,
            ints: checker.ints,
            vals: checker.vals,
            val_names: checker.val_names,
            lowered: Default::default(),
        })
    } else {
        Err(checker.errors)
    }
}

/// What a name means in a scope.
#[derive(Debug, Clone, Copy)]
enum Bound {
    Int(usize),
    Val(usize),
    Tensor(usize),
    /// A whole index of a tensor (`for i in out:` over a tensor of rank other than 1): one
    /// integer slot per axis, starting at this one.
    Index(usize, usize),
}

/// A typed expression.
#[derive(Debug, Clone)]
enum Typed {
    Int(Int),
    Bool(Bool),
    /// A value, with the dtype it holds (`None`: a literal, which takes its partner's).
    Val(Val, Option<DType>),
    /// A tuple parameter (only indexed), or a list one (of at most this many elements).
    Tuple(usize, usize),
    /// An enumeration parameter (only compared with one of its values).
    Enum(usize),
    /// `"name"`: an enumeration's value (only compared with an enumeration parameter).
    Text(String),
    /// A tensor (only indexed, or asked `.dim` / `.rank` / `present`).
    Tensor(usize),
    /// `t.dim` (only indexed).
    Dims(usize),
    /// A whole index (`i` of `for i in out:`): `rank` integer slots from `first`.
    Index {
        first: usize,
        rank: usize,
    },
}

struct Checker<'s> {
    signature: &'s Signature,
    t: DType,
    tensors: Vec<ir::Tensor>,
    scopes: Vec<HashMap<String, Bound>>,
    ints: usize,
    vals: Vec<DType>,
    val_names: Vec<String>,
    /// For each value slot, how many loops enclose its declaration.
    val_depths: Vec<usize>,
    /// How many loops enclose the statement being checked.
    loop_depth: usize,
    /// A `max` or `min` of values was seen.
    selects: bool,
    errors: Vec<SemanticsError>,
}

const CONSTANTS: &[&str] = &["true", "false", "inf", "nan"];
const FUNCTIONS: &[&str] = &[
    "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "abs", "max", "min", "select", "cast", "present",
    "isnan", "numel", "reduced", "broadcast", "permuted", "along",
];

impl<'s> Checker<'s> {
    fn new(signature: &'s Signature, t: DType) -> Self {
        let tensor = |sig: &SigTensor, origin| ir::Tensor {
            name: sig.name.clone(),
            origin,
            rank: sig.rank,
            optional: sig.optional,
            dtype: sig.dtype.unwrap_or(t),
        };
        let tensors = signature
            .inputs
            .iter()
            .enumerate()
            .map(|(i, s)| tensor(s, Origin::Input(i)))
            .chain(
                signature
                    .outputs
                    .iter()
                    .enumerate()
                    .map(|(i, s)| tensor(s, Origin::Output(i))),
            )
            .collect();
        Checker {
            signature,
            t,
            tensors,
            scopes: vec![HashMap::new()],
            ints: 0,
            vals: Vec::new(),
            val_names: Vec::new(),
            val_depths: Vec::new(),
            loop_depth: 0,
            selects: false,
            errors: Vec::new(),
        }
    }

    fn error(&mut self, kind: SemanticsErrorKind, span: Span, message: String, help: &str) {
        self.errors
            .push(SemanticsError::new(kind, span, message, help.to_owned()));
    }

    fn type_error(&mut self, span: Span, message: String, help: &str) {
        self.error(SemanticsErrorKind::Type, span, message, help);
    }

    fn lookup(&self, name: &str) -> Option<Bound> {
        for scope in self.scopes.iter().rev() {
            if let Some(bound) = scope.get(name) {
                return Some(*bound);
            }
        }
        self.tensors
            .iter()
            .position(|t| t.name == name && t.origin != Origin::Local)
            .map(Bound::Tensor)
    }

    fn bind(&mut self, name: &str, bound: Bound) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_owned(), bound);
        }
    }

    fn new_int(&mut self) -> usize {
        self.ints += 1;
        self.ints - 1
    }

    fn new_val(&mut self, name: &str, dtype: DType) -> usize {
        self.vals.push(dtype);
        self.val_names.push(name.to_owned());
        self.val_depths.push(self.loop_depth);
        self.vals.len() - 1
    }

    /// Every name in scope, for a did-you-mean.
    fn names_in_scope(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .scopes
            .iter()
            .flat_map(|s| s.keys().cloned())
            .chain(self.tensors.iter().map(|t| t.name.clone()))
            .chain(self.signature.params.iter().map(|p| p.name.clone()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn unknown_name(&mut self, name: &str, span: Span) {
        let names = self.names_in_scope();
        let candidates: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .chain(CONSTANTS.iter().copied())
            .collect();
        let close = crate::diag::did_you_mean(name, candidates.iter().copied())
            .filter(|_| name.chars().count() > 1); // a one-letter name is close to every other
        let help = match close {
            Some(close) => format!("did you mean `{close}`?"),
            None => format!(
                "names in scope: {}",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        self.error(
            SemanticsErrorKind::UnknownName,
            span,
            format!("`{name}` is not bound here"),
            &help,
        );
    }
}
