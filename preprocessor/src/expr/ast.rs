//! The syntax tree: [`Expr`] nodes that each carry the byte [`Span`] they were parsed from.
//!
//! Grouping parentheses leave no node behind: the grouped node keeps its own span and its
//! parent's span covers the parentheses. [`Expr::to_source`] prints the canonical form (single spaces around binary operators,
//! parentheses only where precedence needs them), so `parse(e.to_source())` gives back `e`
//! up to spans ([`Expr::eq_ignore_spans`]). Traversals used by callers ([`Expr::walk`],
//! [`Expr::names`]) are iterative, so they cannot overflow the stack on any tree.

use std::fmt;

use super::span::Span;

/// An expression with its source span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    /// What the node is.
    pub kind: ExprKind,
    /// Where it is in the source (including any grouping parentheses).
    pub span: Span,
    /// For a `Name`: its slot in the contract's [`Slots`](super::Slots) table, once
    /// [`Slots::resolve`](super::Slots::resolve) has given it one.
    pub slot: Option<u32>,
}

/// The node kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExprKind {
    /// An integer literal (the parser only produces non-negative ones; `-1` is a [`UnOp::Neg`]).
    Int(i64),
    /// A floating-point literal, as its bits (never negative).
    Float(u64),
    /// A string literal (an enumeration's value), without its quotes.
    Text(String),
    /// `true` or `false`.
    Bool(bool),
    /// A root name bound by the caller: `groups`, `x`, `dtype_bytes`, `depthwise`.
    Name(String),
    /// `()`, `(a,)`, `(a, b)`.
    Tuple(Vec<Expr>),
    /// `-a`, `!a` (the operator is the first byte of the node's span).
    Unary {
        /// The operator.
        op: UnOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// `lhs op rhs`.
    Binary {
        /// The operator.
        op: BinOp,
        /// Where the operator token is.
        op_span: Span,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `base.field`, e.g. `x.dim`.
    Member {
        /// The record.
        base: Box<Expr>,
        /// The field name.
        field: String,
        /// Where the field name is.
        field_span: Span,
    },
    /// `base[index]`, e.g. `stride[0]`.
    Index {
        /// The tuple.
        base: Box<Expr>,
        /// The index.
        index: Box<Expr>,
    },
    /// `name(args)`, e.g. `divisible(a, b)` or `from_params(N=x.dim[0], ...)`.
    Call {
        /// The function name.
        name: String,
        /// Where the function name is.
        name_span: Span,
        /// Positional arguments first, then keyword arguments, in source order.
        args: Vec<Arg>,
    },
}

/// One call argument: positional (`name: None`) or keyword (`N=expr`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    /// The keyword and its span, for `name=value` arguments.
    pub name: Option<(String, Span)>,
    /// The argument value.
    pub value: Expr,
}

/// Prefix operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-a` (checked: `-i64::MIN` overflows).
    Neg,
    /// `!a` on booleans.
    Not,
}

/// Infix operators, from loosest to tightest binding: `||`, `&&`, `== !=`, `< <= > >=`,
/// `+ -`, `* / %`. All are left-associative except comparisons, which do not chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (floor division)
    Div,
    /// `%` (floor modulo: the result has the divisor's sign)
    Rem,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `&&` (short-circuit)
    And,
    /// `||` (short-circuit)
    Or,
}

/// Precedence of prefix operators, above every binary operator.
pub(crate) const PREFIX_LEVEL: u8 = 7;
/// Precedence of atoms and postfix forms (`a.b`, `a[i]`, calls).
const ATOM_LEVEL: u8 = 8;

impl BinOp {
    /// The operator as written.
    pub const fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    /// Precedence level, 1 (`||`) to 6 (`* / %`).
    pub const fn level(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne => 3,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 6,
        }
    }

    /// `(left, right)` binding powers for the Pratt parser (left-associative).
    pub const fn binding_power(self) -> (u8, u8) {
        let level = self.level();
        (2 * level, 2 * level + 1)
    }

    /// Whether this is one of `< <= > >= == !=` (these do not chain).
    pub const fn is_comparison(self) -> bool {
        matches!(self.level(), 3 | 4)
    }

    /// Whether this is one of `+ - * / %`.
    pub const fn is_arithmetic(self) -> bool {
        matches!(self.level(), 5 | 6)
    }

    /// Whether this is `&&` or `||`.
    pub const fn is_logical(self) -> bool {
        matches!(self.level(), 1 | 2)
    }

    /// How a type error phrases the operation: "cannot {verb} int and bool".
    pub const fn verb(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "subtract",
            BinOp::Mul => "multiply",
            BinOp::Div => "divide",
            BinOp::Rem => "take the remainder of",
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => "order-compare",
            BinOp::Eq | BinOp::Ne => "compare",
            BinOp::And => "apply `&&` to",
            BinOp::Or => "apply `||` to",
        }
    }
}

impl UnOp {
    /// The operator as written.
    pub const fn symbol(self) -> &'static str {
        match self {
            UnOp::Neg => "-",
            UnOp::Not => "!",
        }
    }
}

impl fmt::Display for BinOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

impl fmt::Display for UnOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

impl Expr {
    /// A node.
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr {
            kind,
            span,
            slot: None,
        }
    }

    /// The direct children, in source order.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Text(_) | ExprKind::Bool(_) | ExprKind::Name(_) => Vec::new(),
            ExprKind::Tuple(items) => items.iter().collect(),
            ExprKind::Unary { operand, .. } => vec![operand],
            ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Member { base, .. } => vec![base],
            ExprKind::Index { base, index } => vec![base, index],
            ExprKind::Call { args, .. } => args.iter().map(|a| &a.value).collect(),
        }
    }

    /// The direct children, mutably, in source order.
    pub(crate) fn children_mut(&mut self) -> Vec<&mut Expr> {
        match &mut self.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Text(_) | ExprKind::Bool(_) | ExprKind::Name(_) => Vec::new(),
            ExprKind::Tuple(items) => items.iter_mut().collect(),
            ExprKind::Unary { operand, .. } => vec![operand],
            ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Member { base, .. } => vec![base],
            ExprKind::Index { base, index } => vec![base, index],
            ExprKind::Call { args, .. } => args.iter_mut().map(|a| &mut a.value).collect(),
        }
    }

    /// Visits every node in pre-order (source order), without recursion.
    pub fn walk<'a>(&'a self, mut visit: impl FnMut(&'a Expr)) {
        let mut stack = vec![self];
        while let Some(node) = stack.pop() {
            visit(node);
            stack.extend(node.children().into_iter().rev());
        }
    }

    /// Every root name used (`x` in `x.dim[1]`, not `dim`; not function names or keywords),
    /// with its span, in source order, repeats included.
    pub fn names(&self) -> Vec<(String, Span)> {
        let mut out = Vec::new();
        self.walk(|e| {
            if let ExprKind::Name(name) = &e.kind {
                out.push((name.clone(), e.span));
            }
        });
        out
    }

    /// Every function called, with the span of its name, in source order.
    pub fn calls(&self) -> Vec<(String, Span)> {
        let mut out = Vec::new();
        self.walk(|e| {
            if let ExprKind::Call {
                name, name_span, ..
            } = &e.kind
            {
                out.push((name.clone(), *name_span));
            }
        });
        out
    }

    /// Whether the expression uses no names and calls no functions (so it is a constant).
    pub fn is_closed(&self) -> bool {
        let mut closed = true;
        self.walk(|e| closed &= !matches!(e.kind, ExprKind::Name(_) | ExprKind::Call { .. }));
        closed
    }

    /// The first node (pre-order) deeper than `limit` levels below the root, if any.
    pub(crate) fn too_deep(&self, limit: usize) -> Option<Span> {
        let mut stack = vec![(self, 0usize)];
        while let Some((node, depth)) = stack.pop() {
            if depth > limit {
                return Some(node.span);
            }
            stack.extend(node.children().into_iter().rev().map(|c| (c, depth + 1)));
        }
        None
    }

    /// A copy with every span set to `0..0` and no slots, for structural comparison.
    pub fn without_spans(&self) -> Expr {
        let zero = Span::default();
        let boxed = |e: &Expr| Box::new(e.without_spans());
        let kind = match &self.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Text(_) | ExprKind::Bool(_) | ExprKind::Name(_) => self.kind.clone(),
            ExprKind::Tuple(items) => {
                ExprKind::Tuple(items.iter().map(Expr::without_spans).collect())
            }
            ExprKind::Unary { op, operand } => ExprKind::Unary {
                op: *op,
                operand: boxed(operand),
            },
            ExprKind::Binary { op, lhs, rhs, .. } => ExprKind::Binary {
                op: *op,
                op_span: zero,
                lhs: boxed(lhs),
                rhs: boxed(rhs),
            },
            ExprKind::Member { base, field, .. } => ExprKind::Member {
                base: boxed(base),
                field: field.clone(),
                field_span: zero,
            },
            ExprKind::Index { base, index } => ExprKind::Index {
                base: boxed(base),
                index: boxed(index),
            },
            ExprKind::Call { name, args, .. } => ExprKind::Call {
                name: name.clone(),
                name_span: zero,
                args: args
                    .iter()
                    .map(|a| Arg {
                        name: a.name.as_ref().map(|(n, _)| (n.clone(), zero)),
                        value: a.value.without_spans(),
                    })
                    .collect(),
            },
        };
        Expr::new(kind, zero)
    }

    /// Structural equality, ignoring every span.
    pub fn eq_ignore_spans(&self, other: &Expr) -> bool {
        self.without_spans() == other.without_spans()
    }

    /// The canonical source text of the expression. `parse` gives the same tree back, unless
    /// the canonical spacing pushes an input that was near [`MAX_SOURCE_LEN`] over it.
    ///
    /// [`MAX_SOURCE_LEN`]: super::MAX_SOURCE_LEN
    pub fn to_source(&self) -> String {
        let mut out = String::new();
        write_expr(self, &mut out);
        out
    }

    /// Precedence of the node as printed: binary level, prefix, or atom.
    fn level(&self) -> u8 {
        match &self.kind {
            ExprKind::Binary { op, .. } => op.level(),
            ExprKind::Unary { .. } => PREFIX_LEVEL,
            _ => ATOM_LEVEL,
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_source())
    }
}

fn write_expr(e: &Expr, out: &mut String) {
    match &e.kind {
        ExprKind::Int(v) => out.push_str(&v.to_string()),
        ExprKind::Float(bits) => out.push_str(&format!("{:?}", f64::from_bits(*bits))),
        ExprKind::Text(text) => {
            out.push('"');
            out.push_str(text);
            out.push('"');
        }
        ExprKind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        ExprKind::Name(name) => out.push_str(name),
        ExprKind::Tuple(items) => {
            out.push('(');
            write_list(items.iter().map(|e| (None, e)), out);
            if items.len() == 1 {
                out.push(',');
            }
            out.push(')');
        }
        ExprKind::Unary { op, operand } => {
            out.push_str(op.symbol());
            write_child(operand, operand.level() < PREFIX_LEVEL, out);
        }
        ExprKind::Binary { op, lhs, rhs, .. } => {
            let level = op.level();
            let lhs_parens = lhs.level() < level || (op.is_comparison() && lhs.level() == level);
            write_child(lhs, lhs_parens, out);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            write_child(rhs, rhs.level() <= level, out);
        }
        ExprKind::Member { base, field, .. } => {
            write_child(base, base.level() < ATOM_LEVEL, out);
            out.push('.');
            out.push_str(field);
        }
        ExprKind::Index { base, index } => {
            write_child(base, base.level() < ATOM_LEVEL, out);
            out.push('[');
            write_expr(index, out);
            out.push(']');
        }
        ExprKind::Call { name, args, .. } => {
            out.push_str(name);
            out.push('(');
            write_list(
                args.iter()
                    .map(|a| (a.name.as_ref().map(|(n, _)| n.as_str()), &a.value)),
                out,
            );
            out.push(')');
        }
    }
}

fn write_child(e: &Expr, parens: bool, out: &mut String) {
    if parens {
        out.push('(');
    }
    write_expr(e, out);
    if parens {
        out.push(')');
    }
}

fn write_list<'a>(items: impl Iterator<Item = (Option<&'a str>, &'a Expr)>, out: &mut String) {
    for (i, (keyword, value)) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if let Some(keyword) = keyword {
            out.push_str(keyword);
            out.push('=');
        }
        write_expr(value, out);
    }
}

#[cfg(test)]
mod tests;
