//! The syntax tree of a `semantics` program, every node with the byte span it was parsed from.

use crate::expr::Span;

/// A whole program: its statements in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub body: Vec<Stmt>,
}

/// A statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// `for i in lo..hi, j in lo..hi:` or `for n, c, h, w in out:` — loops nested in the order
    /// written.
    For {
        bindings: Vec<Binding>,
        body: Vec<Stmt>,
    },
    /// `if c: … elif c: … else: …`
    If {
        arms: Vec<(Expr, Vec<Stmt>)>,
        otherwise: Vec<Stmt>,
    },
    /// `name = e`, `name: T = e`, `name[i, j] += e`, `name: T[d0, d1] = e` (a tensor of that
    /// shape, every element `e`).
    Assign {
        target: Target,
        declared: Option<Declared>,
        op: AssignOp,
        value: Expr,
    },
}

/// One loop binding.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    /// The loop variables (several only over a tensor's indices).
    pub names: Vec<(String, Span)>,
    pub domain: Domain,
    pub span: Span,
}

/// What a loop runs over.
#[derive(Debug, Clone, PartialEq)]
pub enum Domain {
    /// `lo..hi`: `lo`, `lo + 1`, …, `hi - 1` (none when `hi <= lo`).
    Range(Expr, Expr),
    /// Every index of the tensor, row-major (the last axis fastest).
    Tensor(String, Span),
}

/// What an assignment writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub name: String,
    pub name_span: Span,
    /// `name[i, j]`: an element of a tensor.
    pub index: Option<Vec<Expr>>,
}

/// `: dtype` or `: dtype[d0, d1]` after a target.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    pub dtype: String,
    pub dtype_span: Span,
    pub shape: Option<Vec<Expr>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
}

impl AssignOp {
    pub fn symbol(self) -> &'static str {
        match self {
            AssignOp::Set => "=",
            AssignOp::Add => "+=",
            AssignOp::Sub => "-=",
            AssignOp::Mul => "*=",
        }
    }
}

/// An expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    /// `"name"`: an enumeration parameter's value.
    Text(String),
    /// A name: a tensor, a parameter, a loop variable, a local, `true`, `false`, `inf`, `nan`.
    Name(String),
    /// `base.field`: `x.dim`, `x.rank`.
    Member {
        base: Box<Expr>,
        field: String,
        field_span: Span,
    },
    /// `base[i]` or `base[i, j, …]`: a tuple element, a dimension, or a tensor element.
    Index {
        base: Box<Expr>,
        indices: Vec<Expr>,
    },
    /// `f(a, b)`.
    Call {
        name: String,
        name_span: Span,
        args: Vec<Expr>,
    },
    Unary {
        op: UnOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        op_span: Span,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `a < b <= c`: every adjacent pair holds (each operand evaluated once).
    Compare {
        first: Box<Expr>,
        rest: Vec<(CmpOp, Span, Expr)>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    /// Whether `a op b` holds for ordered `a`, `b`.
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        }
    }
}

impl Expr {
    /// The name, when the expression is a bare name.
    pub fn as_name(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Name(name) => Some(name),
            _ => None,
        }
    }
}

impl Stmt {
    /// Visits this statement and every statement nested in it, in source order.
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn walk<'a>(&'a self, visit: &mut impl FnMut(&'a Stmt)) {
        visit(self);
        match &self.kind {
            StmtKind::For { body, .. } => body.iter().for_each(|s| s.walk(visit)),
            StmtKind::If { arms, otherwise } => {
                for (_, body) in arms {
                    body.iter().for_each(|s| s.walk(visit));
                }
                otherwise.iter().for_each(|s| s.walk(visit));
            }
            StmtKind::Assign { .. } => {}
        }
    }
}
