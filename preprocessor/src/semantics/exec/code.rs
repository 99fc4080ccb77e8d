//! The lowered program: the index, condition and value expressions, the statements and the
//! planned loop nests (with the kernel of their innermost level) as the executor runs them.

use super::super::ast::{AssignOp, CmpOp};
use super::super::fast::Target;
use super::super::ir::{Func, IntOp, ValOp};
use fkc_provider::DType;

/// An index expression of the run.
#[derive(Debug, Clone)]
pub(super) enum IE {
    Const(i64),
    /// `Σ c·ints[slot] + k`.
    Lin(Box<[(usize, i64)]>, i64),
    Neg(Box<IE>),
    Bin(IntOp, Box<IE>, Box<IE>),
    Min(Box<[IE]>),
    Max(Box<[IE]>),
    /// The reference fails evaluating it.
    Bail,
}

impl IE {
    /// Its value; `None` where the reference fails (no overflow is possible: the intervals
    /// proved it).
    #[inline]
    pub(super) fn eval(&self, ints: &[i64]) -> Option<i64> {
        match self {
            IE::Const(c) => Some(*c),
            IE::Lin(terms, k) => Some(terms.iter().fold(*k, |sum, &(slot, c)| {
                sum.wrapping_add(c.wrapping_mul(ints[slot]))
            })),
            _ => self.eval_tree(ints),
        }
    }

    #[inline(never)]
    fn eval_tree(&self, ints: &[i64]) -> Option<i64> {
        Some(match self {
            IE::Const(c) => *c,
            IE::Lin(terms, k) => terms.iter().fold(*k, |sum, &(slot, c)| {
                sum.wrapping_add(c.wrapping_mul(ints[slot]))
            }),
            IE::Neg(a) => a.eval(ints)?.wrapping_neg(),
            IE::Bin(op, a, b) => {
                let (a, b) = (a.eval(ints)?, b.eval(ints)?);
                match op {
                    IntOp::Add => a.wrapping_add(b),
                    IntOp::Sub => a.wrapping_sub(b),
                    IntOp::Mul => a.wrapping_mul(b),
                    IntOp::Div => crate::expr::floor_div(a, b)?,
                    IntOp::Rem => crate::expr::floor_mod(a, b)?,
                }
            }
            IE::Min(items) | IE::Max(items) => {
                let mut found: Option<i64> = None;
                for item in items {
                    let v = item.eval(ints)?;
                    found = Some(match (found, self) {
                        (None, _) => v,
                        (Some(f), IE::Min(_)) => f.min(v),
                        (Some(f), _) => f.max(v),
                    });
                }
                found.unwrap_or(0)
            }
            IE::Bail => return None,
        })
    }

    /// It cannot fail.
    pub(super) fn infallible(&self) -> bool {
        matches!(self, IE::Const(_) | IE::Lin(..))
    }

    pub(super) fn affine(&self) -> Option<(Vec<(usize, i64)>, i64)> {
        match self {
            IE::Const(c) => Some((Vec::new(), *c)),
            IE::Lin(terms, k) => Some((terms.to_vec(), *k)),
            _ => None,
        }
    }
}

/// An element access of a statement outside the planned nests.
#[derive(Debug)]
pub(super) struct Access {
    pub(super) tensor: usize,
    /// The axes not proven inside the tensor, each with its dim.
    pub(super) checks: Box<[(IE, i64)]>,
    pub(super) flat: IE,
    /// The tensor is absent.
    pub(super) absent: bool,
}

/// A condition of the run.
#[derive(Debug)]
pub(super) enum CE<V> {
    Const(bool),
    Not(Box<CE<V>>),
    And(Box<CE<V>>, Box<CE<V>>),
    Or(Box<CE<V>>, Box<CE<V>>),
    Cmp(Box<[IE]>, Box<[CmpOp]>),
    CmpVal(Box<[VE<V>]>, Box<[CmpOp]>),
    IsNan(Box<VE<V>>),
    /// A value comparison outside `select` (the reference fails).
    Bail,
}

/// A value expression of the run.
#[derive(Debug)]
pub(super) enum VE<V> {
    Const(V),
    FromInt(IE, DType),
    Slot(usize, DType),
    Read(Box<Access>),
    Neg(Box<VE<V>>),
    Bin(ValOp, Box<VE<V>>, Box<VE<V>>, DType),
    Func(Func, Box<[VE<V>]>, DType),
    Select(Box<CE<V>>, Box<VE<V>>, Box<VE<V>>),
    Cast(Box<VE<V>>, DType),
}

/// A statement of the run.
#[derive(Debug)]
pub(super) enum Code<V> {
    Loop {
        var: usize,
        lo: IE,
        hi: IE,
        body: Box<[Code<V>]>,
        taps: bool,
    },
    Nest(Box<Nest<V>>),
    SetInt {
        slot: usize,
        value: IE,
    },
    SetVal {
        slot: usize,
        op: AssignOp,
        value: VE<V>,
        mac: bool,
        compare: bool,
    },
    Store {
        access: Access,
        op: AssignOp,
        value: VE<V>,
        mac: bool,
        compare: bool,
    },
    If {
        cond: CE<V>,
        then: Box<[Code<V>]>,
        otherwise: Box<[Code<V>]>,
    },
    /// The reference fails here.
    Bail,
}

/// A planned loop nest, lowered for the run. Its tracked rows: every access's flat position
/// (reads, then writes), every form an update converts to a value, every check, then every
/// bound; a row's value at a level is its base (a sum over the enclosing slots) plus its
/// coefficient times each outer level's variable.
/// Every level's `(lo, hi)` range and the box's size.
pub(super) type FixedRanges = (Box<[(i64, i64)]>, u64);

/// The `(row, dim)` pairs one level checks inside `0..dim`.
type Checks = Box<[(usize, i64)]>;

#[derive(Debug)]
pub(super) struct Nest<V> {
    pub(super) depth: usize,
    pub(super) lo: Box<[IE]>,
    pub(super) hi: Box<[IE]>,
    /// Every level's range and the box's size, when they are numbers for the run.
    pub(super) fixed: Option<FixedRanges>,
    /// Form offsets that may fail (evaluated first on entry, as the reference does).
    pub(super) fallible: Box<[IE]>,
    /// Updates per innermost iteration (for the budget).
    pub(super) updates: u64,
    pub(super) taps: bool,
    /// The conditions free of the nest's variables hold.
    pub(super) invariant: bool,
    /// Some access's tensor is absent.
    pub(super) absent: bool,
    pub(super) rows: usize,
    /// Rows carried into deeper levels (the bounds of levels solved on entry are not).
    pub(super) live: usize,
    pub(super) bases: Box<[IE]>,
    /// `coefs[level * rows + row]`.
    pub(super) coefs: Box<[i64]>,
    /// Per level: its bounds' rows.
    pub(super) bounds: Box<[Box<[usize]>]>,
    /// Per level: its bounds use no outer level's variable (its range is solved on entry).
    pub(super) hoisted: Box<[bool]>,
    /// Per level (and last, on entry): the rows to check inside `0..dim`.
    pub(super) checks: Box<[Checks]>,
    /// Per level: no level above it checks (an empty range here leaves nothing to do).
    pub(super) quiet: Box<[bool]>,
    /// Per level: the deeper levels whose ranges its move changes (bit per level).
    pub(super) moves: Box<[u64]>,
    /// The first level of the inner box: the levels from it on have ranges (and checks) that
    /// use no variable of the box, so a kernel runs the whole box at each point of the levels
    /// above it.
    pub(super) split: usize,
    /// The coefficients of the rows a specialised kernel tracks at each level of the inner box.
    pub(super) tracked: Box<[i64]>,
    /// Each access's tensor (reads, then writes).
    pub(super) tensors: Box<[usize]>,
    pub(super) reads: usize,
    pub(super) kernel: Kernel<V>,
}

/// A value of the innermost body.
#[derive(Debug)]
pub(super) enum NV<V> {
    Const(V),
    /// A row's value, as a number of `dtype`.
    FromInt(usize, DType),
    Slot(usize, DType),
    Read(usize),
    Neg(Box<NV<V>>),
    Product(usize, usize, DType),
    Bin(ValOp, Box<NV<V>>, Box<NV<V>>, DType),
    Func(Func, Box<[NV<V>]>, DType),
    Cast(Box<NV<V>>, DType),
}

#[derive(Debug)]
pub(super) struct NUpdate<V> {
    pub(super) target: Target,
    pub(super) op: AssignOp,
    pub(super) value: NV<V>,
    pub(super) ops: u64,
    pub(super) mac: bool,
    pub(super) compare: bool,
}

/// How the innermost level runs.
#[derive(Debug)]
pub(super) enum Kernel<V> {
    /// `slot += a[…] * b[…]` over two inputs.
    Dot {
        slot: usize,
        a: usize,
        b: usize,
        dtype: DType,
        ops: u64,
        mac: bool,
    },
    /// `out[…] += a[…] * b[…]` over two inputs.
    Scatter {
        write: usize,
        a: usize,
        b: usize,
        dtype: DType,
        ops: u64,
        mac: bool,
    },
    /// `slot = max(slot, a[…])` (or `min`, the operands either way round), the slot held in
    /// a register across the range.
    Extreme {
        slot: usize,
        read: usize,
        func: Func,
        slot_first: bool,
        dtype: DType,
        ops: u64,
        mac: bool,
        compare: bool,
    },
    /// `slot = value`, the slot held in a register across the range.
    Fold(NUpdate<V>),
    General(Box<[NUpdate<V>]>),
}
