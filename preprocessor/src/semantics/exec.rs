//! The fast executor: one checked program lowered for one sample, then run. Lowering knows the
//! sample's dims and parameters, so every index expression that reads no loop variable or local
//! is folded to a number, every affine one becomes `Σ cₛ·slotₛ + k` over the integer slots, and
//! every element access one such sum giving its flat position directly. Interval arithmetic over
//! the sample's loop ranges proves most accesses inside their tensors (their checks are dropped)
//! and proves that no index arithmetic of the run can overflow. Planned loop nests
//! ([`super::fast`]) keep their plans: on each entry the nest's tracked rows (each access's flat
//! position, each bound, each check) are sums over the enclosing slots, a level whose bounds do
//! not depend on the nest's outer levels has its range solved once per entry, and the innermost
//! level runs one of a few kernels: a dot product into a local, a scatter of products into an
//! output, a fold of a local held in a register (`m = max(m, x[…])`), or the general updates.
//!
//! The executor gives the reference interpreter ([`super::run`]) the last word: it computes
//! exactly what the reference computes — the same values, in the same order, the same counts,
//! the same step budget — and wherever the reference would fail (an index outside its tensor, a
//! read before a write, an absent input, a division by zero, an overflow, a budget exceeded, an
//! output element never written), or the program uses what the executor does not lower (local
//! tensors, compound updates of index locals), it gives up ([`Bail`]) before returning anything,
//! and the reference runs the sample from the start and reports. So a run's outcome and error are
//! the reference's by construction; only its speed differs.

use super::ast::{AssignOp, CmpOp};
use super::fast::{self, FastVal, NestPlan, Target};
use super::ir::{Bool, Func, Int, IntKind, IntOp, Op, Origin, Program, Val, ValKind, ValOp};
use super::ir::{Lowered, LoweredKey as Key, ParamValue};
use super::machine::{Arith, Counts, Inputs, MAX_STEPS, Outcome};
use fkc_provider::DType;
use std::any::Any;
use std::sync::Arc;

/// The executor gave up on this run: the reference interpreter runs it instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bail;

type Go<T> = Result<T, Bail>;

/// Runs `program` on `inputs` in `arith` (without tracing): `None` when the reference must run it.
pub fn run<A: Arith>(
    program: &Program,
    inputs: &Inputs<'_>,
    arith: &A,
) -> Option<Outcome<A::Cell>> {
    let mut exec = Exec::new(program, inputs, arith)?;
    let code = program
        .lowered
        .get::<A, _>(inputs, || lower(program, inputs, arith, &exec))?;
    exec.block(&code).ok()?;
    exec.finish()
}

/// `program` lowered for a sample of `inputs`' dims and parameters; `None` where the executor
/// does not run it.
fn lower<A: Arith>(
    program: &Program,
    inputs: &Inputs<'_>,
    arith: &A,
    exec: &Exec<'_, A>,
) -> Option<Vec<Code<A::V>>> {
    let mut defs = vec![Vec::new(); program.ints];
    collect_defs(&program.body, &mut defs).ok()?;
    let mut lower = Lower {
        program,
        arith,
        params: inputs.params,
        tensors: &exec.tensors,
        defs,
        slots: vec![SlotState::Todo; program.ints],
    };
    let mut code = Vec::new();
    lower.block(&program.body, &mut code).ok()?;
    Some(code)
}

/// How many samples' forms a program keeps.
const LOWERED: usize = 8;

impl Lowered {
    /// The forms for `inputs` in `A`, lowered by `lower` the first time (`None`: not run by the
    /// executor, remembered too).
    fn get<A: Arith, F: FnOnce() -> Option<Vec<Code<A::V>>>>(
        &self,
        inputs: &Inputs<'_>,
        lower: F,
    ) -> Option<Arc<[Code<A::V>]>> {
        let key = Key {
            arith: std::any::type_name::<A>(),
            dtype: inputs.dtype,
            inputs: inputs
                .inputs
                .iter()
                .map(|i| i.as_ref().map(|(dims, _)| dims.clone()))
                .collect(),
            outputs: inputs.outputs.to_vec(),
            params: inputs.params.to_vec(),
        };
        let found = {
            let cache = self.0.lock().ok()?;
            cache
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, code)| Arc::clone(code))
        };
        let code = match found {
            Some(code) => code,
            None => {
                let lowered: Option<Arc<[Code<A::V>]>> = lower().map(Into::into);
                let code: Arc<dyn Any + Send + Sync> = Arc::new(lowered);
                let mut cache = self.0.lock().ok()?;
                if cache.len() >= LOWERED {
                    cache.remove(0);
                }
                cache.push((key, Arc::clone(&code)));
                code
            }
        };
        code.downcast_ref::<Option<Arc<[Code<A::V>]>>>()?.clone()
    }
}

impl Clone for Lowered {
    /// A copy of a program starts without lowered forms.
    fn clone(&self) -> Self {
        Lowered::default()
    }
}

impl PartialEq for Lowered {
    /// Lowered forms are a cache: they never make two programs differ.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Lowered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.0.lock().map_or(0, |c| c.len());
        write!(f, "Lowered({len} samples)")
    }
}

#[cfg(test)]
pub fn show<A: Arith>(program: &Program, inputs: &Inputs<'_>, arith: &A) {
    if let Some(exec) = Exec::new(program, inputs, arith) {
        println!("{:#?}", lower(program, inputs, arith, &exec));
    }
}

// ---------------------------------------------------------------------------------------------
// Intervals: what every index expression of the run may be.

/// Every index quantity of a run (of the reference's, and of the executor's) stays within this;
/// far inside `i64`, so that no sum of a few of them overflows either.
const LIMIT: i128 = 1 << 62;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Iv {
    lo: i128,
    hi: i128,
}

impl Iv {
    fn point(v: i128) -> Iv {
        Iv { lo: v, hi: v }
    }

    fn safe(self) -> Go<Iv> {
        if self.lo >= -LIMIT && self.hi <= LIMIT {
            Ok(self)
        } else {
            Err(Bail)
        }
    }

    fn magnitude(self) -> i128 {
        self.lo.abs().max(self.hi.abs())
    }

    fn union(self, other: Iv) -> Iv {
        Iv {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    fn within(self, lo: i128, hi: i128) -> bool {
        self.lo >= lo && self.hi <= hi
    }
}

fn floor_div128(a: i128, b: i128) -> i128 {
    let (q, r) = (a / b, a % b);
    if r != 0 && ((r < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// The interval of `a op b` (operands within [`LIMIT`]; a division's by zero excluded: it never
/// gives a value).
fn iv_bin(op: IntOp, a: Iv, b: Iv) -> Iv {
    let corners = |f: &dyn Fn(i128, i128) -> i128, bs: &[i128]| {
        let mut out: Option<Iv> = None;
        for x in [a.lo, a.hi] {
            for y in bs {
                let v = Iv::point(f(x, *y));
                out = Some(out.map_or(v, |o| o.union(v)));
            }
        }
        out.unwrap_or(Iv::point(0))
    };
    // the divisor's extremes on each side of zero
    let divisors = || {
        let mut bs = Vec::new();
        if b.hi >= 1 {
            bs.extend([b.lo.max(1), b.hi]);
        }
        if b.lo <= -1 {
            bs.extend([b.lo, b.hi.min(-1)]);
        }
        bs
    };
    match op {
        IntOp::Add => Iv {
            lo: a.lo + b.lo,
            hi: a.hi + b.hi,
        },
        IntOp::Sub => Iv {
            lo: a.lo - b.hi,
            hi: a.hi - b.lo,
        },
        IntOp::Mul => corners(&|x, y| x * y, &[b.lo, b.hi]),
        IntOp::Div => corners(&floor_div128, &divisors()),
        IntOp::Rem => {
            let mut out: Option<Iv> = None;
            if b.hi >= 1 {
                out = Some(Iv {
                    lo: 0,
                    hi: b.hi - 1,
                });
            }
            if b.lo <= -1 {
                let negative = Iv {
                    lo: b.lo + 1,
                    hi: 0,
                };
                out = Some(out.map_or(negative, |o| o.union(negative)));
            }
            out.unwrap_or(Iv::point(0))
        }
    }
}

/// How an integer slot gets its values.
#[derive(Debug, Clone, Copy)]
enum Def<'p> {
    /// A loop variable over `lo..hi`.
    Range(&'p Int, &'p Int),
    /// An index local set to a value.
    Value(&'p Int),
}

#[derive(Debug, Clone, Copy)]
enum SlotState {
    Todo,
    Busy,
    Done(Iv),
}

/// Every slot's definitions; `Err` when the program uses what the executor does not lower.
fn collect_defs<'p>(ops: &'p [Op], defs: &mut [Vec<Def<'p>>]) -> Go<()> {
    for op in ops {
        match op {
            Op::For {
                var, lo, hi, body, ..
            } => {
                defs.get_mut(*var).ok_or(Bail)?.push(Def::Range(lo, hi));
                collect_defs(body, defs)?;
            }
            Op::If {
                then, otherwise, ..
            } => {
                collect_defs(then, defs)?;
                collect_defs(otherwise, defs)?;
            }
            Op::SetInt {
                slot,
                op: AssignOp::Set,
                value,
                ..
            } => defs.get_mut(*slot).ok_or(Bail)?.push(Def::Value(value)),
            // an index local updated in place (its values unbounded by its definitions), a
            // local tensor (strides that change during the run)
            Op::SetInt { .. } | Op::Alloc { .. } => return Err(Bail),
            Op::SetVal { .. } | Op::Store { .. } => {}
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The lowered program.

/// An index expression of the run.
#[derive(Debug, Clone)]
enum IE {
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
    fn eval(&self, ints: &[i64]) -> Option<i64> {
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
    fn infallible(&self) -> bool {
        matches!(self, IE::Const(_) | IE::Lin(..))
    }

    fn affine(&self) -> Option<(Vec<(usize, i64)>, i64)> {
        match self {
            IE::Const(c) => Some((Vec::new(), *c)),
            IE::Lin(terms, k) => Some((terms.to_vec(), *k)),
            _ => None,
        }
    }
}

/// An element access of a statement outside the planned nests.
#[derive(Debug)]
struct Access {
    tensor: usize,
    /// The axes not proven inside the tensor, each with its dim.
    checks: Box<[(IE, i64)]>,
    flat: IE,
    /// The tensor is absent.
    absent: bool,
}

/// A condition of the run.
#[derive(Debug)]
enum CE<V> {
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
enum VE<V> {
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
enum Code<V> {
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
type FixedRanges = (Box<[(i64, i64)]>, u64);

/// The `(row, dim)` pairs one level checks inside `0..dim`.
type Checks = Box<[(usize, i64)]>;

#[derive(Debug)]
struct Nest<V> {
    depth: usize,
    lo: Box<[IE]>,
    hi: Box<[IE]>,
    /// Every level's range and the box's size, when they are numbers for the run.
    fixed: Option<FixedRanges>,
    /// Form offsets that may fail (evaluated first on entry, as the reference does).
    fallible: Box<[IE]>,
    /// Updates per innermost iteration (for the budget).
    updates: u64,
    taps: bool,
    /// The conditions free of the nest's variables hold.
    invariant: bool,
    /// Some access's tensor is absent.
    absent: bool,
    rows: usize,
    /// Rows carried into deeper levels (the bounds of levels solved on entry are not).
    live: usize,
    bases: Box<[IE]>,
    /// `coefs[level * rows + row]`.
    coefs: Box<[i64]>,
    /// Per level: its bounds' rows.
    bounds: Box<[Box<[usize]>]>,
    /// Per level: its bounds use no outer level's variable (its range is solved on entry).
    hoisted: Box<[bool]>,
    /// Per level (and last, on entry): the rows to check inside `0..dim`.
    checks: Box<[Checks]>,
    /// Per level: no level above it checks (an empty range here leaves nothing to do).
    quiet: Box<[bool]>,
    /// Per level: the deeper levels whose ranges its move changes (bit per level).
    moves: Box<[u64]>,
    /// The first level of the inner box: the levels from it on have ranges (and checks) that
    /// use no variable of the box, so a kernel runs the whole box at each point of the levels
    /// above it.
    split: usize,
    /// The coefficients of the rows a specialised kernel tracks at each level of the inner box.
    tracked: Box<[i64]>,
    /// Each access's tensor (reads, then writes).
    tensors: Box<[usize]>,
    reads: usize,
    kernel: Kernel<V>,
}

/// A value of the innermost body.
#[derive(Debug)]
enum NV<V> {
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
struct NUpdate<V> {
    target: Target,
    op: AssignOp,
    value: NV<V>,
    ops: u64,
    mac: bool,
    compare: bool,
}

/// How the innermost level runs.
#[derive(Debug)]
enum Kernel<V> {
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

// ---------------------------------------------------------------------------------------------
// Lowering.

struct Lower<'a, 'p, A: Arith> {
    program: &'p Program,
    arith: &'a A,
    params: &'a [ParamValue],
    tensors: &'a [Tensor<'a, A::Cell>],
    defs: Vec<Vec<Def<'p>>>,
    slots: Vec<SlotState>,
}

impl<A: Arith> Lower<'_, '_, A> {
    /// The interval of a slot's values: the union of its definitions'.
    fn slot(&mut self, slot: usize) -> Go<Iv> {
        match self.slots.get(slot).copied().ok_or(Bail)? {
            SlotState::Done(iv) => return Ok(iv),
            SlotState::Busy => return Err(Bail), // defined through itself
            SlotState::Todo => {}
        }
        self.slots[slot] = SlotState::Busy;
        let mut out: Option<Iv> = None;
        for def in self.defs[slot].clone() {
            let iv = match def {
                Def::Range(lo, hi) => {
                    let (lo, hi) = (self.int(lo)?.1, self.int(hi)?.1);
                    Iv {
                        lo: lo.lo,
                        hi: (hi.hi - 1).max(lo.lo),
                    }
                }
                Def::Value(value) => self.int(value)?.1,
            };
            out = Some(out.map_or(iv, |o| o.union(iv)));
        }
        let iv = out.unwrap_or(Iv::point(0)).safe()?;
        self.slots[slot] = SlotState::Done(iv);
        Ok(iv)
    }

    /// `e` lowered, with its interval (every node's inside [`LIMIT`]).
    fn int(&mut self, e: &Int) -> Go<(IE, Iv)> {
        let (ie, iv) = match &e.kind {
            IntKind::Const(c) => (IE::Const(*c), Iv::point(i128::from(*c))),
            IntKind::Slot(slot) => (IE::Lin(Box::new([(*slot, 1)]), 0), self.slot(*slot)?),
            IntKind::Dim { tensor, axis } => {
                let storage = self.tensors.get(*tensor).ok_or(Bail)?;
                if storage.present {
                    let d = storage.dims.get(*axis).map_or(0, |d| *d as i64);
                    (IE::Const(d), Iv::point(i128::from(d)))
                } else {
                    (IE::Bail, Iv::point(0))
                }
            }
            IntKind::Rank(tensor) => {
                let rank = self.program.tensors.get(*tensor).ok_or(Bail)?.rank as i64;
                (IE::Const(rank), Iv::point(i128::from(rank)))
            }
            IntKind::Param { param, element } => match (self.params.get(*param), element) {
                (Some(ParamValue::Int(v)), None) => (IE::Const(*v), Iv::point(i128::from(*v))),
                (Some(ParamValue::Tuple(vs)), Some(i)) => {
                    let v = vs.get(*i).copied().unwrap_or(0);
                    (IE::Const(v), Iv::point(i128::from(v)))
                }
                _ => (IE::Bail, Iv::point(0)),
            },
            IntKind::Neg(a) => {
                let (a, ia) = self.int(a)?;
                let iv = Iv {
                    lo: -ia.hi,
                    hi: -ia.lo,
                };
                (self.neg(a)?, iv)
            }
            IntKind::Bin(op, a, b) => {
                let (a, ia) = self.int(a)?;
                let (b, ib) = self.int(b)?;
                (self.bin(*op, a, b)?, iv_bin(*op, ia, ib))
            }
            IntKind::Min(items) | IntKind::Max(items) => {
                let min = matches!(e.kind, IntKind::Min(_));
                let mut lowered = Vec::with_capacity(items.len());
                let mut iv: Option<Iv> = None;
                for item in items {
                    let (item, ii) = self.int(item)?;
                    iv = Some(iv.map_or(ii, |o| {
                        if min {
                            Iv {
                                lo: o.lo.min(ii.lo),
                                hi: o.hi.min(ii.hi),
                            }
                        } else {
                            Iv {
                                lo: o.lo.max(ii.lo),
                                hi: o.hi.max(ii.hi),
                            }
                        }
                    }));
                    lowered.push(item);
                }
                let iv = iv.unwrap_or(Iv::point(0));
                let ie = if lowered.iter().any(|i| matches!(i, IE::Bail)) {
                    IE::Bail
                } else if lowered.iter().all(|i| matches!(i, IE::Const(_))) {
                    let values = lowered.iter().filter_map(|i| i.eval(&[]));
                    IE::Const(if min {
                        values.min().unwrap_or(0)
                    } else {
                        values.max().unwrap_or(0)
                    })
                } else if min {
                    IE::Min(lowered.into())
                } else {
                    IE::Max(lowered.into())
                };
                (ie, iv)
            }
        };
        // a node the reference never evaluates to a value needs no bound
        let iv = if matches!(ie, IE::Bail) {
            Iv::point(0)
        } else {
            iv.safe()?
        };
        Ok((ie, iv))
    }

    /// `Σ terms + k` as an expression, when every partial sum of it stays inside [`LIMIT`].
    fn lin(&mut self, terms: Vec<(usize, i128)>, k: i128) -> Go<IE> {
        let mut merged: Vec<(usize, i64)> = Vec::with_capacity(terms.len());
        let mut bound = k.abs();
        let mut sums: Vec<(usize, i128)> = Vec::with_capacity(terms.len());
        for (slot, c) in terms {
            match sums.iter_mut().find(|(s, _)| *s == slot) {
                Some((_, existing)) => *existing += c,
                None => sums.push((slot, c)),
            }
        }
        for (slot, c) in sums {
            if c == 0 {
                continue;
            }
            let c = i64::try_from(c).map_err(|_| Bail)?;
            bound = bound.saturating_add(
                i128::from(c)
                    .abs()
                    .saturating_mul(self.slot(slot)?.magnitude()),
            );
            merged.push((slot, c));
        }
        if bound > LIMIT {
            return Err(Bail);
        }
        let k = i64::try_from(k).map_err(|_| Bail)?;
        Ok(if merged.is_empty() {
            IE::Const(k)
        } else {
            IE::Lin(merged.into(), k)
        })
    }

    fn neg(&mut self, a: IE) -> Go<IE> {
        Ok(match a {
            IE::Bail => IE::Bail,
            IE::Const(c) => IE::Const(c.checked_neg().ok_or(Bail)?),
            IE::Lin(terms, k) => self.lin(
                terms.iter().map(|(s, c)| (*s, -i128::from(*c))).collect(),
                -i128::from(k),
            )?,
            other => IE::Neg(Box::new(other)),
        })
    }

    fn bin(&mut self, op: IntOp, a: IE, b: IE) -> Go<IE> {
        if matches!(a, IE::Bail) || matches!(b, IE::Bail) {
            return Ok(IE::Bail);
        }
        if let (IE::Const(x), IE::Const(y)) = (&a, &b) {
            let (x, y) = (*x, *y);
            let folded = match op {
                IntOp::Add => x.checked_add(y),
                IntOp::Sub => x.checked_sub(y),
                IntOp::Mul => x.checked_mul(y),
                IntOp::Div => crate::expr::floor_div(x, y),
                IntOp::Rem => crate::expr::floor_mod(x, y),
            };
            return Ok(folded.map_or(IE::Bail, IE::Const));
        }
        let wide = |terms: Vec<(usize, i64)>| -> Vec<(usize, i128)> {
            terms.into_iter().map(|(s, c)| (s, i128::from(c))).collect()
        };
        match (op, a.affine(), b.affine()) {
            (IntOp::Add | IntOp::Sub, Some((ta, ka)), Some((tb, kb))) => {
                let sign = if op == IntOp::Sub { -1 } else { 1 };
                let mut terms = wide(ta);
                terms.extend(wide(tb).into_iter().map(|(s, c)| (s, sign * c)));
                self.lin(terms, i128::from(ka) + sign * i128::from(kb))
            }
            (IntOp::Mul, Some((ta, ka)), Some((tb, kb))) if ta.is_empty() || tb.is_empty() => {
                let (terms, k, factor) = if ta.is_empty() {
                    (tb, kb, ka)
                } else {
                    (ta, ka, kb)
                };
                let factor = i128::from(factor);
                let terms = wide(terms)
                    .into_iter()
                    .map(|(s, c)| (s, c * factor))
                    .collect();
                self.lin(terms, i128::from(k) * factor)
            }
            _ => Ok(IE::Bin(op, Box::new(a), Box::new(b))),
        }
    }

    /// An element access: each axis checked unless its interval lies inside the axis.
    fn access(&mut self, tensor: usize, index: &[Int]) -> Go<Access> {
        let storage = self.tensors.get(tensor).ok_or(Bail)?;
        if !storage.present {
            return Ok(Access {
                tensor,
                checks: Box::default(),
                flat: IE::Bail,
                absent: true,
            });
        }
        let (dims, strides) = (storage.dims.clone(), storage.strides.clone());
        let mut checks = Vec::new();
        let mut flat = IE::Const(0);
        for (i, (dim, stride)) in index.iter().zip(dims.iter().zip(&strides)) {
            let (ie, iv) = self.int(i)?;
            let dim = i64::try_from(*dim).map_err(|_| Bail)?;
            if !iv.within(0, i128::from(dim) - 1) || !ie.infallible() {
                checks.push((ie.clone(), dim));
            }
            let stride = i64::try_from(*stride).map_err(|_| Bail)?;
            let term = self.bin(IntOp::Mul, ie, IE::Const(stride))?;
            flat = self.bin(IntOp::Add, flat, term)?;
        }
        Ok(Access {
            tensor,
            checks: checks.into(),
            flat,
            absent: false,
        })
    }

    fn block(&mut self, ops: &[Op], out: &mut Vec<Code<A::V>>) -> Go<()> {
        for op in ops {
            self.op(op, out)?;
        }
        Ok(())
    }

    fn op(&mut self, op: &Op, out: &mut Vec<Code<A::V>>) -> Go<()> {
        match op {
            Op::For {
                var,
                lo,
                hi,
                body,
                taps,
                plan,
                ..
            } => {
                if let Some(plan) = plan {
                    out.push(self.nest(plan)?);
                    return Ok(());
                }
                let (lo, hi) = (self.int(lo)?.0, self.int(hi)?.0);
                let mut lowered = Vec::new();
                self.block(body, &mut lowered)?;
                out.push(Code::Loop {
                    var: *var,
                    lo,
                    hi,
                    body: lowered.into(),
                    taps: *taps,
                });
            }
            Op::If {
                cond,
                then,
                otherwise,
            } => match self.cond(cond, false)? {
                CE::Const(true) => self.block(then, out)?,
                CE::Const(false) => self.block(otherwise, out)?,
                cond => {
                    let (mut t, mut o) = (Vec::new(), Vec::new());
                    self.block(then, &mut t)?;
                    self.block(otherwise, &mut o)?;
                    out.push(Code::If {
                        cond,
                        then: t.into(),
                        otherwise: o.into(),
                    });
                }
            },
            Op::SetInt {
                slot,
                op: AssignOp::Set,
                value,
                ..
            } => {
                let value = self.int(value)?.0;
                out.push(Code::SetInt { slot: *slot, value });
            }
            Op::SetVal {
                slot,
                op,
                value,
                update,
                ..
            } => {
                let value = self.val(value)?;
                out.push(Code::SetVal {
                    slot: *slot,
                    op: *op,
                    value,
                    mac: update.mac,
                    compare: update.compare,
                });
            }
            Op::Store {
                tensor,
                index,
                op,
                value,
                update,
                ..
            } => {
                let access = self.access(*tensor, index)?;
                let value = self.val(value)?;
                out.push(Code::Store {
                    access,
                    op: *op,
                    value,
                    mac: update.mac,
                    compare: update.compare,
                });
            }
            Op::SetInt { .. } | Op::Alloc { .. } => return Err(Bail),
        }
        Ok(())
    }

    /// A condition; in `value` context (a `select`'s), `&&` and `||` evaluate both sides.
    fn cond(&mut self, cond: &Bool, value: bool) -> Go<CE<A::V>> {
        Ok(match cond {
            Bool::Const(b) => CE::Const(*b),
            Bool::Present(tensor) => CE::Const(self.tensors.get(*tensor).ok_or(Bail)?.present),
            Bool::Not(c) => match self.cond(c, value)? {
                CE::Const(b) => CE::Const(!b),
                c => CE::Not(Box::new(c)),
            },
            Bool::And(a, b) => {
                let (a, b) = (self.cond(a, value)?, self.cond(b, value)?);
                match (a, b) {
                    (CE::Const(false), _) if !value => CE::Const(false),
                    (CE::Const(true), b) if !value => b,
                    (a, b) => CE::And(Box::new(a), Box::new(b)),
                }
            }
            Bool::Or(a, b) => {
                let (a, b) = (self.cond(a, value)?, self.cond(b, value)?);
                match (a, b) {
                    (CE::Const(true), _) if !value => CE::Const(true),
                    (CE::Const(false), b) if !value => b,
                    (a, b) => CE::Or(Box::new(a), Box::new(b)),
                }
            }
            Bool::CompareInt(operands, ops) => {
                let mut lowered = Vec::with_capacity(operands.len());
                for operand in operands {
                    lowered.push(self.int(operand)?.0);
                }
                CE::Cmp(lowered.into(), ops.clone().into())
            }
            Bool::CompareVal(operands, ops) if value => {
                let mut lowered = Vec::with_capacity(operands.len());
                for operand in operands {
                    lowered.push(self.val(operand)?);
                }
                CE::CmpVal(lowered.into(), ops.clone().into())
            }
            Bool::IsNan(v) if value => CE::IsNan(Box::new(self.val(v)?)),
            Bool::CompareVal(..) | Bool::IsNan(_) => CE::Bail,
        })
    }

    fn val(&mut self, e: &Val) -> Go<VE<A::V>> {
        Ok(match &e.kind {
            ValKind::Const(c) => VE::Const(self.arith.constant(*c)),
            // (a number's conversions are computed once: they count no work)
            ValKind::FromInt(i, dtype) => match self.int(i)?.0 {
                IE::Const(c) => VE::Const(self.arith.index(c, *dtype)),
                i => VE::FromInt(i, *dtype),
            },
            ValKind::Slot(slot) => VE::Slot(*slot, *self.program.vals.get(*slot).ok_or(Bail)?),
            ValKind::Read { tensor, index } => VE::Read(Box::new(self.access(*tensor, index)?)),
            ValKind::Neg(a) => match self.val(a)? {
                VE::Const(v) => VE::Const(self.arith.neg(v)),
                a => VE::Neg(Box::new(a)),
            },
            ValKind::Bin(op, a, b, dtype) => {
                VE::Bin(*op, Box::new(self.val(a)?), Box::new(self.val(b)?), *dtype)
            }
            ValKind::Func(func, args, dtype) => {
                let mut lowered = Vec::with_capacity(args.len());
                for arg in args {
                    lowered.push(self.val(arg)?);
                }
                VE::Func(*func, lowered.into(), *dtype)
            }
            ValKind::Select(cond, a, b) => VE::Select(
                Box::new(self.cond(cond, true)?),
                Box::new(self.val(a)?),
                Box::new(self.val(b)?),
            ),
            ValKind::Cast(a, dtype) => match self.val(a)? {
                VE::Const(v) => VE::Const(self.arith.cast(v, *dtype)),
                a => VE::Cast(Box::new(a), *dtype),
            },
        })
    }

    /// A planned nest, lowered: [`Code::Bail`] where the reference fails on every entry (or
    /// uses coefficients that change between entries), `Err` where some quantity of the run
    /// may overflow.
    fn nest(&mut self, plan: &NestPlan) -> Go<Code<A::V>> {
        let depth = plan.levels.len();
        if depth == 0 {
            return Ok(Code::Bail);
        }
        // Every form: its coefficients (numbers for the run) and its offset.
        let mut coefs: Vec<Vec<i64>> = Vec::with_capacity(plan.forms.len());
        let mut offsets: Vec<(IE, Iv)> = Vec::with_capacity(plan.forms.len());
        let mut fallible = Vec::new();
        for form in &plan.forms {
            if !form.fixed_coeffs || form.coeffs.len() > depth {
                return Ok(Code::Bail);
            }
            let mut row = Vec::with_capacity(depth);
            for c in &form.coeffs {
                match self.int(c)?.0 {
                    IE::Const(v) => row.push(v),
                    _ => return Ok(Code::Bail),
                }
            }
            row.resize(depth, 0);
            let (offset, iv) = self.int(&form.offset)?;
            if matches!(offset, IE::Bail) {
                return Ok(Code::Bail);
            }
            // the reference's cached form of the offset: `rest + Σ k·slot`
            if let Some((terms, rest)) = &form.split {
                let IE::Const(rest) = self.int(rest)?.0 else {
                    return Ok(Code::Bail);
                };
                let mut bound = i128::from(rest).abs();
                for (slot, k) in terms {
                    let IE::Const(k) = self.int(k)?.0 else {
                        return Ok(Code::Bail);
                    };
                    bound += i128::from(k).abs() * self.slot(*slot)?.magnitude();
                }
                if bound > LIMIT {
                    return Err(Bail);
                }
            }
            if !offset.infallible() {
                fallible.push(offset.clone());
            }
            coefs.push(row);
            offsets.push((offset, iv));
        }
        // Each level's variable: its values and their magnitude.
        let mut ranges = Vec::with_capacity(depth);
        for level in &plan.levels {
            let (lo, hi) = (offsets[level.lo].1, offsets[level.hi].1);
            ranges.push(Iv {
                lo: lo.lo,
                hi: (hi.hi - 1).max(lo.lo),
            });
        }
        let magnitude: Vec<i128> = ranges.iter().map(|r| r.magnitude()).collect();
        // the value of form `f` anywhere in the box, and a bound on every partial sum of it
        let reach = |f: usize| -> Iv {
            let mut iv = offsets[f].1;
            for (c, r) in coefs[f].iter().zip(&ranges) {
                iv = iv_bin(
                    IntOp::Add,
                    iv,
                    iv_bin(IntOp::Mul, Iv::point(i128::from(*c)), *r),
                );
            }
            iv
        };
        for f in 0..plan.forms.len() {
            let mut bound = offsets[f].1.magnitude();
            for (c, m) in coefs[f].iter().zip(&magnitude) {
                bound += i128::from(*c).abs() * m;
            }
            if bound > LIMIT {
                return Err(Bail);
            }
        }
        let accesses: Vec<&fast::Access> = plan.reads.iter().chain(&plan.writes).collect();
        let mut bases: Vec<IE> = Vec::new();
        let mut rows: Vec<Vec<i64>> = Vec::new();
        let mut absent = false;
        let mut tensors = Vec::with_capacity(accesses.len());
        // access rows: flat positions
        for access in &accesses {
            tensors.push(access.tensor);
            let storage = self.tensors.get(access.tensor).ok_or(Bail)?;
            if !storage.present {
                absent = true;
                bases.push(IE::Const(0));
                rows.push(vec![0; depth]);
                continue;
            }
            let strides = storage.strides.clone();
            let mut base = IE::Const(0);
            let mut base_bound: i128 = 0;
            let mut steps = vec![0i128; depth];
            let mut step_bounds = vec![0i128; depth];
            for ((form, _), stride) in access.axes.iter().zip(&strides) {
                let stride = i128::try_from(*stride).map_err(|_| Bail)?;
                for level in 0..depth {
                    let c = i128::from(coefs[*form][level]);
                    steps[level] += c * stride;
                    step_bounds[level] += c.abs() * stride;
                }
                base_bound += offsets[*form].1.magnitude() * stride;
                if base_bound > LIMIT || step_bounds.iter().any(|b| *b > LIMIT) {
                    return Err(Bail);
                }
                let stride = i64::try_from(stride).map_err(|_| Bail)?;
                let term = self.bin(IntOp::Mul, offsets[*form].0.clone(), IE::Const(stride))?;
                base = self.bin(IntOp::Add, base, term)?;
            }
            let mut bound = base_bound;
            for (b, m) in step_bounds.iter().zip(&magnitude) {
                bound += b * m;
            }
            if bound > LIMIT {
                return Err(Bail);
            }
            bases.push(base);
            rows.push(
                steps
                    .iter()
                    .map(|s| i64::try_from(*s).map_err(|_| Bail))
                    .collect::<Go<Vec<i64>>>()?,
            );
        }
        let form_row = |f: usize, bases: &mut Vec<IE>, rows: &mut Vec<Vec<i64>>| {
            bases.push(offsets[f].0.clone());
            rows.push(coefs[f].clone());
            rows.len() - 1
        };
        // rows of the forms updates convert to values
        let mut from_int = Vec::new();
        for update in &plan.updates {
            collect_from_int(&update.value, &mut from_int);
        }
        let from_int: Vec<(usize, usize)> = from_int
            .into_iter()
            .map(|f| (f, form_row(f, &mut bases, &mut rows)))
            .collect();
        // checks: an axis whose index the intervals keep inside needs none
        let mut checks: Vec<Vec<(usize, i64)>> = vec![Vec::new(); depth + 1];
        if !absent {
            for (level, list) in plan.checks.iter().enumerate().take(depth + 1) {
                for &(access, axis, form) in list {
                    let tensor = accesses.get(access).ok_or(Bail)?.tensor;
                    let dim = self.tensors[tensor].dims.get(axis).copied().unwrap_or(0);
                    let dim = i64::try_from(dim).map_err(|_| Bail)?;
                    if reach(form).within(0, i128::from(dim) - 1) {
                        continue;
                    }
                    let row = form_row(form, &mut bases, &mut rows);
                    checks[level].push((row, dim));
                }
            }
        }
        // bounds: those of levels solved on entry last
        let hoisted: Vec<bool> = plan
            .levels
            .iter()
            .enumerate()
            .map(|(level, l)| {
                l.bounds
                    .iter()
                    .all(|f| coefs[*f][..level].iter().all(|c| *c == 0))
            })
            .collect();
        let mut bounds: Vec<Vec<usize>> = vec![Vec::new(); depth];
        let mut live = 0;
        for pass in [false, true] {
            if pass {
                live = rows.len();
            }
            for (level, l) in plan.levels.iter().enumerate() {
                if hoisted[level] == pass {
                    for f in &l.bounds {
                        bounds[level].push(form_row(*f, &mut bases, &mut rows));
                    }
                }
            }
        }
        // the body's value and updates
        let mut lowered = Vec::with_capacity(plan.updates.len());
        for update in &plan.updates {
            lowered.push(NUpdate {
                target: update.target,
                op: update.op,
                value: self.nest_val(&update.value, &from_int)?,
                ops: update.ops,
                mac: update.update.mac,
                compare: update.update.compare,
            });
        }
        let input = |read: usize| {
            plan.reads.get(read).is_some_and(|r| {
                matches!(self.program.tensors[r.tensor].origin, Origin::Input(_))
                    && self.tensors[r.tensor].present
            })
        };
        let kernel = match lowered.as_slice() {
            [
                NUpdate {
                    target,
                    op: AssignOp::Add,
                    value: NV::Product(a, b, dtype),
                    ops,
                    mac,
                    ..
                },
            ] if input(*a) && input(*b) => match target {
                Target::Slot(slot) => Kernel::Dot {
                    slot: *slot,
                    a: *a,
                    b: *b,
                    dtype: *dtype,
                    ops: *ops,
                    mac: *mac,
                },
                Target::Element(write) => Kernel::Scatter {
                    write: plan.reads.len() + write,
                    a: *a,
                    b: *b,
                    dtype: *dtype,
                    ops: *ops,
                    mac: *mac,
                },
            },
            [
                NUpdate {
                    target: Target::Slot(slot),
                    op: AssignOp::Set,
                    value: NV::Func(func @ (Func::Max | Func::Min), args, dtype),
                    ops,
                    mac,
                    compare,
                },
            ] if matches!(
                args.as_ref(),
                [NV::Slot(s, _), NV::Read(_)] | [NV::Read(_), NV::Slot(s, _)] if s == slot
            ) =>
            {
                let (read, slot_first) = match args.as_ref() {
                    [NV::Slot(..), NV::Read(read)] => (*read, true),
                    [NV::Read(read), _] => (*read, false),
                    _ => return Err(Bail),
                };
                Kernel::Extreme {
                    slot: *slot,
                    read,
                    func: *func,
                    slot_first,
                    dtype: *dtype,
                    ops: *ops,
                    mac: *mac,
                    compare: *compare,
                }
            }
            [
                NUpdate {
                    target: Target::Slot(_),
                    op: AssignOp::Set,
                    ..
                },
            ] => Kernel::Fold(lowered.pop().ok_or(Bail)?),
            _ => Kernel::General(lowered.into()),
        };
        // the inner box: the deepest levels whose bounds and checks use none of their variables
        // (for the kernels that track a few rows; the others run the innermost level alone)
        let kernel_rows: Option<Vec<usize>> = match &kernel {
            Kernel::Dot { a, b, .. } => Some(vec![*a, *b]),
            Kernel::Scatter { a, b, write, .. } => Some(vec![*a, *b, *write]),
            Kernel::Extreme { read, .. } => Some(vec![*read]),
            Kernel::Fold(_) | Kernel::General(_) => None,
        };
        let free_of =
            |row: usize, from: usize, level: usize| rows[row][from..level].iter().all(|c| *c == 0);
        let mut split = depth - 1;
        if kernel_rows.is_some() {
            while split > 0 {
                let s = split - 1;
                let inside = (s..depth).all(|level| {
                    bounds[level].iter().all(|row| free_of(*row, s, level))
                        && checks[level].iter().all(|(row, _)| free_of(*row, s, level))
                });
                if !inside {
                    break;
                }
                split = s;
            }
        }
        let mut tracked = Vec::new();
        if let Some(kernel_rows) = &kernel_rows {
            let rows = &rows;
            tracked.extend(
                (split..depth)
                    .flat_map(|level| kernel_rows.iter().map(move |row| rows[*row][level])),
            );
        }
        let n = rows.len();
        let mut flat = vec![0i64; depth * n];
        for (row, c) in rows.iter().enumerate() {
            for (level, v) in c.iter().enumerate() {
                flat[level * n + row] = *v;
            }
        }
        let lo: Box<[IE]> = plan
            .levels
            .iter()
            .map(|l| offsets[l.lo].0.clone())
            .collect();
        let hi: Box<[IE]> = plan
            .levels
            .iter()
            .map(|l| offsets[l.hi].0.clone())
            .collect();
        let invariant = plan.invariant.iter().try_fold(true, |all, cond| {
            Ok(all
                && match self.cond(cond, false)? {
                    CE::Const(b) => b,
                    _ => return Err(Bail),
                })
        })?;
        let fixed = fixed_ranges(&lo, &hi);
        Ok(Code::Nest(Box::new(Nest {
            depth,
            lo,
            hi,
            fixed,
            fallible: fallible.into(),
            updates: plan.updates.len() as u64,
            taps: plan.taps,
            invariant,
            absent,
            rows: n,
            live,
            bases: bases.into(),
            coefs: flat.into(),
            bounds: bounds.into_iter().map(Into::into).collect(),
            quiet: (0..depth)
                .map(|level| checks[..level].iter().all(Vec::is_empty))
                .collect(),
            moves: (0..depth)
                .map(|moved| {
                    let mut mask = 0u64;
                    for (level, l) in plan.levels.iter().enumerate().skip(moved + 1).take(63) {
                        if level < 63
                            && l.bounds
                                .iter()
                                .any(|f| coefs[*f][moved..level].iter().any(|c| *c != 0))
                        {
                            mask |= 1 << level;
                        }
                    }
                    mask
                })
                .collect(),
            split,
            tracked: tracked.into(),
            hoisted: hoisted.into(),
            checks: checks.into_iter().map(Into::into).collect(),
            tensors: tensors.into(),
            reads: plan.reads.len(),
            kernel,
        })))
    }

    fn nest_val(&mut self, v: &FastVal, from_int: &[(usize, usize)]) -> Go<NV<A::V>> {
        Ok(match v {
            FastVal::Const(c) => NV::Const(self.arith.constant(*c)),
            FastVal::FromInt(form, dtype) => {
                let row = from_int
                    .iter()
                    .find(|(f, _)| f == form)
                    .map(|(_, r)| *r)
                    .ok_or(Bail)?;
                NV::FromInt(row, *dtype)
            }
            FastVal::Slot(slot) => NV::Slot(*slot, *self.program.vals.get(*slot).ok_or(Bail)?),
            FastVal::Read(read) => NV::Read(*read),
            FastVal::Neg(a) => NV::Neg(Box::new(self.nest_val(a, from_int)?)),
            FastVal::Product(a, b, dtype) => NV::Product(*a, *b, *dtype),
            FastVal::Bin(op, a, b, dtype) => NV::Bin(
                *op,
                Box::new(self.nest_val(a, from_int)?),
                Box::new(self.nest_val(b, from_int)?),
                *dtype,
            ),
            FastVal::Func(func, args, dtype) => {
                let mut lowered = Vec::with_capacity(args.len());
                for arg in args {
                    lowered.push(self.nest_val(arg, from_int)?);
                }
                NV::Func(*func, lowered.into(), *dtype)
            }
            FastVal::Cast(a, dtype) => NV::Cast(Box::new(self.nest_val(a, from_int)?), *dtype),
        })
    }
}

/// Every level's range and their box's size, when every bound is a number.
fn fixed_ranges(lo: &[IE], hi: &[IE]) -> Option<FixedRanges> {
    let mut ranges = Vec::with_capacity(lo.len());
    let mut iterations: u64 = 1;
    for (lo, hi) in lo.iter().zip(hi) {
        let (IE::Const(lo), IE::Const(hi)) = (lo, hi) else {
            return None;
        };
        ranges.push((*lo, *hi));
        iterations = iterations.saturating_mul(u64::try_from(hi.saturating_sub(*lo)).unwrap_or(0));
    }
    Some((ranges.into(), iterations))
}

fn collect_from_int(v: &FastVal, out: &mut Vec<usize>) {
    match v {
        FastVal::FromInt(form, _) => {
            if !out.contains(form) {
                out.push(*form);
            }
        }
        FastVal::Neg(a) | FastVal::Cast(a, _) => collect_from_int(a, out),
        FastVal::Bin(_, a, b, _) => {
            collect_from_int(a, out);
            collect_from_int(b, out);
        }
        FastVal::Func(_, args, _) => {
            for arg in args {
                collect_from_int(arg, out);
            }
        }
        FastVal::Const(_) | FastVal::Slot(_) | FastVal::Read(_) | FastVal::Product(..) => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Running.

/// The range of a level within `lo..hi` where each bound `coefs[row]·v + values[row] >= 0`
/// holds: [`fast::solve`]'s (no overflow is possible: the intervals proved it).
#[inline]
fn solve(lo: i64, hi: i64, bounds: &[usize], coefs: &[i64], values: &[i64]) -> (i64, i64) {
    let (mut lo, mut hi) = (lo, hi);
    for &row in bounds {
        let (a, b) = (coefs[row], values[row]);
        match a {
            1 => lo = lo.max(-b),
            -1 => hi = hi.min(b + 1),
            0 if b < 0 => return (lo, lo),
            0 => {}
            // v >= ceil(-b / a)
            _ if a > 0 => lo = lo.max(-(b.div_euclid(a))),
            // v <= floor(b / -a)
            _ => hi = hi.min(b.div_euclid(-a) + 1),
        }
    }
    (lo, hi.max(lo))
}

/// `data[w] += xs[a] * ws[b]` for `n` steps from `bases` by `steps` (`[a, b, w]`), in order.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn scatter<A: Arith>(
    arith: &A,
    data: &mut [Option<A::Cell>],
    xs: &[f64],
    ws: &[f64],
    bases: [i64; 3],
    steps: [i64; 3],
    n: usize,
    dtype: DType,
) -> Go<()> {
    let [ba, bb, bw] = bases;
    let [sa, sb, sw] = steps;
    for k in 0..n as i64 {
        let (x, w) = (
            arith.input(xs[(ba + sa * k) as usize]),
            arith.input(ws[(bb + sb * k) as usize]),
        );
        let Some(cell) = data[(bw + sw * k) as usize].as_mut() else {
            return Err(Bail);
        };
        arith.mac(cell, x, w, dtype);
    }
    Ok(())
}

/// Marks `n` elements from `base` by `step` read.
#[inline]
fn mark(read: &mut [bool], base: i64, step: i64, n: usize) {
    for k in 0..n as i64 {
        read[(base + step * k) as usize] = true;
    }
}

/// The outer levels of a nest (those above its inner box): every point of them in
/// lexicographic order, each level's range re-solved only when a level its bounds use has
/// moved, each tracked row's value at the point carried in `here`.
struct Levels<'a, V> {
    nest: &'a Nest<V>,
    /// Each outer level's range before its bounds.
    ranges: &'a [(i64, i64)],
    /// Each level's variable.
    odometer: &'a mut [i64],
    /// Each outer level's range (those solved on entry, then as solved).
    cut: &'a mut [(i64, i64)],
    here: &'a mut [i64],
}

impl<V> Levels<'_, V> {
    /// `run` at each point of the outer levels, until one gives up.
    #[inline(always)]
    fn each<T>(&mut self, this: &mut T, mut run: impl FnMut(&mut T, &[i64]) -> Go<()>) -> Go<()> {
        let nest = self.nest;
        let (rows, live, split) = (nest.rows, nest.live, self.cut.len());
        if split == 0 {
            return run(this, self.here);
        }
        // levels whose range is to be solved again (bit per level)
        let mut stale: u64 = !0;
        let mut level = 0;
        'enter: loop {
            // enter `level`: the levels above it are at their points, in `here`
            let coefs = &nest.coefs[level * rows..(level + 1) * rows];
            if !nest.hoisted[level] && (level >= 63 || stale & (1 << level) != 0) {
                let (lo, hi) = self.ranges[level];
                self.cut[level] = solve(lo, hi, &nest.bounds[level], coefs, self.here);
                if level < 63 {
                    stale &= !(1 << level);
                }
            }
            let (from, to) = self.cut[level];
            if from < to {
                for &(row, dim) in nest.checks[level].iter() {
                    let (base, c) = (self.here[row], coefs[row]);
                    let range = 0..dim;
                    if !range.contains(&(base + c * from))
                        || !range.contains(&(base + c * (to - 1)))
                    {
                        return Err(Bail);
                    }
                }
                self.odometer[level] = from;
                for (value, c) in self.here[..live].iter_mut().zip(coefs) {
                    *value += c * from;
                }
                if level + 1 < split {
                    level += 1;
                    continue 'enter;
                }
                loop {
                    run(this, self.here)?;
                    // the next point: the deepest level that can move
                    loop {
                        stale |= nest.moves[level];
                        if self.step(level) {
                            break;
                        }
                        if level == 0 {
                            return Ok(());
                        }
                        level -= 1;
                    }
                    if level + 1 < split {
                        level += 1;
                        continue 'enter;
                    }
                }
            }
            // nothing at this level: the next point of the levels above
            loop {
                if level == 0 {
                    return Ok(());
                }
                level -= 1;
                stale |= nest.moves[level];
                if self.step(level) {
                    break;
                }
            }
            level += 1;
        }
    }

    /// Moves `level` to its next value, carrying the rows; false (and the level's share of the
    /// rows taken back out) after its last.
    #[inline(always)]
    fn step(&mut self, level: usize) -> bool {
        let (rows, live) = (self.nest.rows, self.nest.live);
        let coefs = &self.nest.coefs[level * rows..level * rows + live];
        self.odometer[level] += 1;
        if self.odometer[level] < self.cut[level].1 {
            for (value, c) in self.here[..live].iter_mut().zip(coefs) {
                *value += c;
            }
            return true;
        }
        let back = self.odometer[level] - 1;
        for (value, c) in self.here[..live].iter_mut().zip(coefs) {
            *value -= c * back;
        }
        false
    }
}

/// The inner box of a nest at a point of its outer levels (`here`): each of its levels' range
/// (into `cut`: those solved on entry are there already), each checked at its ends, and the
/// tracked `rows`' values at the box's first point (the innermost level's aside); `None` when a
/// range is empty.
#[inline(always)]
fn inner_box<V, const K: usize>(
    nest: &Nest<V>,
    here: &[i64],
    ranges: &[(i64, i64)],
    cut: &mut [(i64, i64)],
    tracked: [usize; K],
) -> Go<Option<[i64; K]>> {
    let (rows, split, depth) = (nest.rows, nest.split, nest.depth);
    let mut start = tracked.map(|row| here[row]);
    for (j, level) in (split..depth).enumerate() {
        let coefs = &nest.coefs[level * rows..(level + 1) * rows];
        if !nest.hoisted[level] {
            let (lo, hi) = ranges[j];
            cut[j] = solve(lo, hi, &nest.bounds[level], coefs, here);
        }
        let (from, to) = cut[j];
        if from >= to {
            return Ok(None);
        }
        for &(row, dim) in nest.checks[level].iter() {
            let (base, c) = (here[row], coefs[row]);
            let range = 0..dim;
            if !range.contains(&(base + c * from)) || !range.contains(&(base + c * (to - 1))) {
                return Err(Bail);
            }
        }
        if level + 1 < depth {
            for (value, row) in start.iter_mut().zip(tracked) {
                *value += coefs[row] * from;
            }
        }
    }
    Ok(Some(start))
}

/// `run(from, to, values)` over the innermost ranges of the box `cut` (no range empty) in
/// lexicographic order, `values` the tracked rows' at each run's point (`steps[j]`: their
/// coefficients at the box's level `j`).
#[inline(always)]
fn run_box<const K: usize>(
    cut: &[(i64, i64)],
    steps: &[[i64; K]],
    start: [i64; K],
    mut run: impl FnMut(i64, i64, [i64; K]) -> Go<()>,
) -> Go<()> {
    fn add<const K: usize>(values: &mut [i64; K], steps: &[i64; K]) {
        for (v, s) in values.iter_mut().zip(steps) {
            *v += s;
        }
    }
    let (from, to) = cut[cut.len() - 1];
    match cut.len() {
        1 => run(from, to, start),
        2 => {
            let mut values = start;
            for _ in cut[0].0..cut[0].1 {
                run(from, to, values)?;
                add(&mut values, &steps[0]);
            }
            Ok(())
        }
        3 => {
            let mut outer = start;
            for _ in cut[0].0..cut[0].1 {
                let mut values = outer;
                for _ in cut[1].0..cut[1].1 {
                    run(from, to, values)?;
                    add(&mut values, &steps[1]);
                }
                add(&mut outer, &steps[0]);
            }
            Ok(())
        }
        _ => {
            fn deeper<const K: usize>(
                cut: &[(i64, i64)],
                steps: &[[i64; K]],
                mut values: [i64; K],
                run: &mut impl FnMut(i64, i64, [i64; K]) -> Go<()>,
            ) -> Go<()> {
                let (from, to) = cut[cut.len() - 1];
                if cut.len() == 1 {
                    return run(from, to, values);
                }
                for _ in cut[0].0..cut[0].1 {
                    deeper(&cut[1..], &steps[1..], values, run)?;
                    add(&mut values, &steps[0]);
                }
                Ok(())
            }
            deeper(cut, steps, start, &mut run)
        }
    }
}

/// A tensor's storage during a run.
#[derive(Debug)]
struct Tensor<'v, C> {
    dims: Vec<usize>,
    strides: Vec<usize>,
    data: Vec<Option<C>>,
    /// An input's elements.
    values: &'v [f64],
    read: Vec<bool>,
    present: bool,
}

fn strides_of(dims: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; dims.len()];
    for axis in (0..dims.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * dims[axis + 1];
    }
    strides
}

struct Exec<'p, A: Arith> {
    program: &'p Program,
    arith: &'p A,
    ints: Vec<i64>,
    vals: Vec<Option<A::Cell>>,
    tensors: Vec<Tensor<'p, A::Cell>>,
    counts: Counts,
    steps_left: u64,
    /// A nest's rows per level, its levels' ranges and the ranges solved on entry.
    scratch: Vec<i64>,
    ranges: Vec<(i64, i64)>,
    cut: Vec<(i64, i64)>,
    /// The outer levels' variables of a boxed nest.
    odometer: Vec<i64>,
}

impl<'p, A: Arith> Exec<'p, A> {
    fn new(program: &'p Program, inputs: &Inputs<'p>, arith: &'p A) -> Option<Self> {
        let mut tensors = Vec::with_capacity(program.tensors.len());
        for tensor in &program.tensors {
            tensors.push(match tensor.origin {
                Origin::Input(i) => match inputs.inputs.get(i).and_then(Option::as_ref) {
                    Some((dims, values)) => {
                        let len = dims.iter().try_fold(1usize, |n, d| n.checked_mul(*d));
                        if len != Some(values.len()) {
                            return None;
                        }
                        Tensor {
                            strides: strides_of(dims),
                            dims: dims.clone(),
                            data: Vec::new(),
                            values: values.as_slice(),
                            read: vec![false; values.len()],
                            present: true,
                        }
                    }
                    None => Tensor {
                        dims: Vec::new(),
                        strides: Vec::new(),
                        data: Vec::new(),
                        values: &[],
                        read: Vec::new(),
                        present: false,
                    },
                },
                Origin::Output(i) => {
                    let dims = inputs.outputs.get(i).cloned().unwrap_or_default();
                    let len = dims.iter().try_fold(1usize, |n, d| n.checked_mul(*d))?;
                    Tensor {
                        strides: strides_of(&dims),
                        dims,
                        data: vec![None; len],
                        values: &[],
                        read: vec![false; len],
                        present: true,
                    }
                }
                Origin::Local => return None,
            });
        }
        Some(Exec {
            program,
            arith,
            ints: vec![0; program.ints],
            vals: vec![None; program.vals.len()],
            tensors,
            counts: Counts::default(),
            steps_left: MAX_STEPS,
            scratch: Vec::new(),
            ranges: Vec::new(),
            cut: Vec::new(),
            odometer: Vec::new(),
        })
    }

    fn finish(self) -> Option<Outcome<A::Cell>> {
        let mut counts = self.counts;
        counts.read = self
            .tensors
            .iter()
            .map(|t| t.read.iter().filter(|r| **r).count() as u64)
            .collect();
        counts.written = self
            .tensors
            .iter()
            .map(|t| t.data.iter().filter(|d| d.is_some()).count() as u64)
            .collect();
        let mut outputs = Vec::new();
        for (tensor, storage) in self.program.tensors.iter().zip(self.tensors) {
            if matches!(tensor.origin, Origin::Output(_)) {
                // an element never written: the reference reports it
                outputs.push(storage.data.into_iter().collect::<Option<Vec<_>>>()?);
            }
        }
        Some(Outcome {
            outputs,
            counts,
            trace: None,
        })
    }

    #[inline]
    fn step(&mut self) -> Go<()> {
        if self.steps_left == 0 {
            return Err(Bail);
        }
        self.steps_left -= 1;
        Ok(())
    }

    fn block(&mut self, code: &[Code<A::V>]) -> Go<()> {
        for c in code {
            self.code(c)?;
        }
        Ok(())
    }

    fn code(&mut self, code: &Code<A::V>) -> Go<()> {
        match code {
            Code::Loop {
                var,
                lo,
                hi,
                body,
                taps,
            } => {
                let lo = lo.eval(&self.ints).ok_or(Bail)?;
                let hi = hi.eval(&self.ints).ok_or(Bail)?;
                if u64::try_from(hi.saturating_sub(lo)).unwrap_or(0) > self.steps_left {
                    return Err(Bail); // the reference refuses it before it starts
                }
                for i in lo..hi {
                    self.step()?;
                    self.ints[*var] = i;
                    if *taps {
                        self.counts.taps += 1;
                    }
                    self.block(body)?;
                }
            }
            Code::Nest(nest) => self.nest(nest)?,
            Code::SetInt { slot, value } => {
                self.step()?;
                self.ints[*slot] = value.eval(&self.ints).ok_or(Bail)?;
            }
            Code::SetVal {
                slot,
                op,
                value,
                mac,
                compare,
            } => {
                self.step()?;
                let v = self.val(value)?;
                self.count_update(*op, *mac, *compare);
                let dtype = self.program.vals[*slot];
                match (op, &mut self.vals[*slot]) {
                    (AssignOp::Set, cell) => *cell = Some(self.arith.store(v)),
                    (_, Some(cell)) => self.arith.update(cell, *op, v, dtype),
                    (_, None) => return Err(Bail),
                }
            }
            Code::Store {
                access,
                op,
                value,
                mac,
                compare,
            } => {
                self.step()?;
                let flat = self.flat(access)?;
                let v = self.val(value)?;
                self.count_update(*op, *mac, *compare);
                let dtype = self.program.tensors[access.tensor].dtype;
                let arith = self.arith;
                match (op, self.tensors[access.tensor].data.get_mut(flat)) {
                    (AssignOp::Set, Some(cell)) => *cell = Some(arith.store(v)),
                    (_, Some(Some(cell))) => arith.update(cell, *op, v, dtype),
                    _ => return Err(Bail),
                }
            }
            Code::If {
                cond,
                then,
                otherwise,
            } => {
                if self.condition(cond)? {
                    self.block(then)?;
                } else {
                    self.block(otherwise)?;
                }
            }
            Code::Bail => return Err(Bail),
        }
        Ok(())
    }

    #[inline]
    fn count_update(&mut self, op: AssignOp, mac: bool, compare: bool) {
        if op != AssignOp::Set {
            self.counts.ops += 1;
        }
        self.counts.macs += u64::from(mac);
        self.counts.compares += u64::from(compare);
    }

    #[inline]
    fn flat(&self, access: &Access) -> Go<usize> {
        if access.absent {
            return Err(Bail);
        }
        for (index, dim) in access.checks.iter() {
            let at = index.eval(&self.ints).ok_or(Bail)?;
            if !(0..*dim).contains(&at) {
                return Err(Bail);
            }
        }
        usize::try_from(access.flat.eval(&self.ints).ok_or(Bail)?).map_err(|_| Bail)
    }

    fn condition(&mut self, cond: &CE<A::V>) -> Go<bool> {
        Ok(match cond {
            CE::Const(b) => *b,
            CE::Not(c) => !self.condition(c)?,
            CE::And(a, b) => self.condition(a)? && self.condition(b)?,
            CE::Or(a, b) => self.condition(a)? || self.condition(b)?,
            CE::Cmp(operands, ops) => {
                let mut left = operands[0].eval(&self.ints).ok_or(Bail)?;
                for (op, operand) in ops.iter().zip(&operands[1..]) {
                    let right = operand.eval(&self.ints).ok_or(Bail)?;
                    if !op.holds(left, right) {
                        return Ok(false);
                    }
                    left = right;
                }
                true
            }
            CE::CmpVal(..) | CE::IsNan(_) | CE::Bail => return Err(Bail),
        })
    }

    fn value_condition(&mut self, cond: &CE<A::V>) -> Go<Option<bool>> {
        Ok(match cond {
            CE::CmpVal(operands, ops) => {
                let mut left = self.val(&operands[0])?;
                let mut all = Some(true);
                for (op, operand) in ops.iter().zip(&operands[1..]) {
                    let right = self.val(operand)?;
                    all = match (all, self.arith.compare(*op, left, right)) {
                        (Some(false), _) | (_, Some(false)) => Some(false),
                        (Some(true), Some(true)) => Some(true),
                        _ => None,
                    };
                    left = right;
                }
                all
            }
            CE::IsNan(v) => {
                let v = self.val(v)?;
                self.arith.is_nan(v)
            }
            CE::Not(c) => self.value_condition(c)?.map(|b| !b),
            CE::And(a, b) => match (self.value_condition(a)?, self.value_condition(b)?) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            CE::Or(a, b) => match (self.value_condition(a)?, self.value_condition(b)?) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            other => Some(self.condition(other)?),
        })
    }

    /// A tensor element: an input's value, or a written cell.
    #[inline]
    fn read(&mut self, tensor: usize, flat: usize) -> Go<A::V> {
        let dtype = self.program.tensors[tensor].dtype;
        let storage = &mut self.tensors[tensor];
        if let Some(value) = storage.values.get(flat) {
            storage.read[flat] = true;
            return Ok(self.arith.input(*value));
        }
        let Some(Some(cell)) = storage.data.get(flat) else {
            return Err(Bail);
        };
        storage.read[flat] = true;
        Ok(self.arith.load(cell, dtype))
    }

    fn val(&mut self, e: &VE<A::V>) -> Go<A::V> {
        let arith = self.arith;
        Ok(match e {
            VE::Const(v) => *v,
            VE::FromInt(i, dtype) => arith.index(i.eval(&self.ints).ok_or(Bail)?, *dtype),
            VE::Slot(slot, dtype) => match &self.vals[*slot] {
                Some(cell) => arith.load(cell, *dtype),
                None => return Err(Bail),
            },
            VE::Read(access) => {
                let flat = self.flat(access)?;
                self.read(access.tensor, flat)?
            }
            VE::Neg(a) => {
                let a = self.val(a)?;
                arith.neg(a)
            }
            VE::Bin(op, a, b, dtype) => {
                let a = self.val(a)?;
                let b = self.val(b)?;
                self.counts.ops += 1;
                arith.binary(*op, a, b, *dtype)
            }
            VE::Func(func, args, dtype) => {
                let mut values = [arith.constant(0.0); 2];
                for (slot, arg) in values.iter_mut().zip(args.iter()) {
                    *slot = self.val(arg)?;
                }
                self.counts.ops += 1;
                self.count_nan_meeting(*func, &values);
                arith.func(*func, &values[..args.len().min(2)], *dtype)
            }
            VE::Select(cond, a, b) => match self.value_condition(cond)? {
                Some(true) => self.val(a)?,
                Some(false) => self.val(b)?,
                None => {
                    let a = self.val(a)?;
                    let b = self.val(b)?;
                    arith.either(a, b)
                }
            },
            VE::Cast(a, dtype) => {
                let a = self.val(a)?;
                arith.cast(a, *dtype)
            }
        })
    }

    #[inline]
    fn count_nan_meeting(&mut self, func: Func, values: &[A::V; 2]) {
        if matches!(func, Func::Max | Func::Min) {
            let nan = |v: A::V| self.arith.is_nan(v);
            if let (Some(a), Some(b)) = (nan(values[0]), nan(values[1]))
                && a != b
            {
                self.counts.nan_meets += 1;
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Nests.

    fn nest(&mut self, nest: &Nest<A::V>) -> Go<()> {
        for offset in nest.fallible.iter() {
            offset.eval(&self.ints).ok_or(Bail)?;
        }
        let mut ranges = std::mem::take(&mut self.ranges);
        let iterations = match &nest.fixed {
            Some((_, iterations)) => *iterations,
            None => {
                ranges.clear();
                let mut iterations: u64 = 1;
                for (lo, hi) in nest.lo.iter().zip(nest.hi.iter()) {
                    let (Some(lo), Some(hi)) = (lo.eval(&self.ints), hi.eval(&self.ints)) else {
                        self.ranges = ranges;
                        return Err(Bail);
                    };
                    ranges.push((lo, hi));
                    iterations = iterations
                        .saturating_mul(u64::try_from(hi.saturating_sub(lo)).unwrap_or(0));
                }
                iterations
            }
        };
        let result = self.count_and_enter(nest, iterations, &ranges);
        self.ranges = ranges;
        result
    }

    fn count_and_enter(
        &mut self,
        nest: &Nest<A::V>,
        iterations: u64,
        ranges: &[(i64, i64)],
    ) -> Go<()> {
        if iterations.saturating_mul(1 + nest.updates) > self.steps_left {
            // the reference refuses it, or walks it generically near the end of its budget
            return Err(Bail);
        }
        self.steps_left -= iterations;
        if nest.taps {
            self.counts.taps += iterations;
        }
        if !nest.invariant {
            return Ok(());
        }
        if nest.absent {
            return Err(Bail);
        }
        let ranges = match &nest.fixed {
            Some((fixed, _)) => fixed,
            None => ranges,
        };
        let rows = nest.rows;
        let mut scratch = std::mem::take(&mut self.scratch);
        if scratch.len() < rows {
            scratch.resize(rows, 0);
        }
        let mut bases = Ok(());
        for (slot, base) in scratch.iter_mut().zip(nest.bases.iter()) {
            match base.eval(&self.ints) {
                Some(value) => *slot = value,
                None => bases = Err(Bail),
            }
        }
        let result = bases.and_then(|()| self.enter(nest, &mut scratch[..rows], ranges));
        self.scratch = scratch;
        result
    }

    fn enter(&mut self, nest: &Nest<A::V>, scratch: &mut [i64], ranges: &[(i64, i64)]) -> Go<()> {
        let (depth, rows) = (nest.depth, nest.rows);
        for &(row, dim) in nest.checks[depth].iter() {
            if !(0..dim).contains(&scratch[row]) {
                return Err(Bail);
            }
        }
        let mut cut = std::mem::take(&mut self.cut);
        cut.clear();
        for (level, &(lo, hi)) in ranges.iter().enumerate().take(depth) {
            let range = if nest.hoisted[level] {
                let coefs = &nest.coefs[level * rows..(level + 1) * rows];
                let range = solve(lo, hi, &nest.bounds[level], coefs, scratch);
                if range.0 >= range.1 && nest.quiet[level] {
                    // no iteration, and no check on the way to it
                    self.cut = cut;
                    return Ok(());
                }
                range
            } else {
                (lo, hi)
            };
            cut.push(range);
        }
        let mut odometer = std::mem::take(&mut self.odometer);
        if odometer.len() < depth {
            odometer.resize(depth, 0);
        }
        let split = nest.split;
        let (outer, inner) = cut.split_at_mut(split);
        let mut levels = Levels {
            nest,
            ranges: &ranges[..split],
            odometer: &mut odometer,
            cut: outer,
            here: &mut scratch[..rows],
        };
        let inner_ranges = &ranges[split..];
        let result = match &nest.kernel {
            Kernel::Dot {
                slot,
                a,
                b,
                dtype,
                ops,
                mac,
            } => match self.vals[*slot].is_some() {
                false => Err(Bail),
                true => {
                    let (slot, a, b, dtype) = (*slot, *a, *b, *dtype);
                    let (ta, tb) = (nest.tensors[a], nest.tensors[b]);
                    let (xs, ws) = (self.tensors[ta].values, self.tensors[tb].values);
                    let (steps, _) = nest.tracked.as_chunks::<2>();
                    let arith = self.arith;
                    let mut total: u64 = 0;
                    let result = levels.each(self, |this, here| {
                        let Some(start) = inner_box(nest, here, inner_ranges, inner, [a, b])?
                        else {
                            return Ok(());
                        };
                        let [sa, sb] = steps[steps.len() - 1];
                        run_box(inner, steps, start, |from, to, [ba, bb]| {
                            let n = (to - from) as usize;
                            let (ba, bb) = (ba + sa * from, bb + sb * from);
                            let Some(cell) = this.vals[slot].as_mut() else {
                                return Err(Bail);
                            };
                            arith.dot(cell, xs, (ba, sa), ws, (bb, sb), n, dtype);
                            mark(&mut this.tensors[ta].read, ba, sa, n);
                            mark(&mut this.tensors[tb].read, bb, sb, n);
                            total += n as u64;
                            Ok(())
                        })
                    });
                    self.counts.ops += ops * total;
                    self.counts.macs += u64::from(*mac) * total;
                    self.steps_left = self.steps_left.saturating_sub(total);
                    result
                }
            },
            Kernel::Scatter {
                write,
                a,
                b,
                dtype,
                ops,
                mac,
            } => {
                let (a, b, write, dtype) = (*a, *b, *write, *dtype);
                let (ta, tb, tw) = (nest.tensors[a], nest.tensors[b], nest.tensors[write]);
                let (xs, ws) = (self.tensors[ta].values, self.tensors[tb].values);
                let (steps, _) = nest.tracked.as_chunks::<3>();
                let arith = self.arith;
                let mut total: u64 = 0;
                let result = levels.each(self, |this, here| {
                    let Some(start) = inner_box(nest, here, inner_ranges, inner, [a, b, write])?
                    else {
                        return Ok(());
                    };
                    let [sa, sb, sw] = steps[steps.len() - 1];
                    run_box(inner, steps, start, |from, to, [ba, bb, bw]| {
                        let n = (to - from) as usize;
                        let (ba, bb, bw) = (ba + sa * from, bb + sb * from, bw + sw * from);
                        mark(&mut this.tensors[ta].read, ba, sa, n);
                        mark(&mut this.tensors[tb].read, bb, sb, n);
                        total += n as u64;
                        let data = &mut this.tensors[tw].data;
                        scatter(arith, data, xs, ws, [ba, bb, bw], [sa, sb, sw], n, dtype)
                    })
                });
                self.counts.ops += ops * total;
                self.counts.macs += u64::from(*mac) * total;
                self.steps_left = self.steps_left.saturating_sub(total);
                result
            }
            Kernel::Extreme { read, .. } => {
                let read = *read;
                let (steps, _) = nest.tracked.as_chunks::<1>();
                levels.each(self, |this, here| {
                    let Some(start) = inner_box(nest, here, inner_ranges, inner, [read])? else {
                        return Ok(());
                    };
                    let [step] = steps[steps.len() - 1];
                    run_box(inner, steps, start, |from, to, [base]| {
                        this.extreme(nest, from, to, base + step * from, step)
                    })
                })
            }
            Kernel::Fold(_) | Kernel::General(_) => {
                // (the innermost level alone is the inner box)
                let steps = &nest.coefs[(depth - 1) * rows..depth * rows];
                levels.each(self, |this, here| {
                    let (lo, hi) = inner_ranges[0];
                    let (from, to) = if nest.hoisted[depth - 1] {
                        inner[0]
                    } else {
                        solve(lo, hi, &nest.bounds[depth - 1], steps, here)
                    };
                    if from >= to {
                        return Ok(());
                    }
                    for &(row, dim) in nest.checks[depth - 1].iter() {
                        let (base, c) = (here[row], steps[row]);
                        let range = 0..dim;
                        if !range.contains(&(base + c * from))
                            || !range.contains(&(base + c * (to - 1)))
                        {
                            return Err(Bail);
                        }
                    }
                    this.kernel(nest, from, to, here, steps)
                })
            }
        };
        self.odometer = odometer;
        self.cut = cut;
        result
    }

    /// `slot = max(slot, a[…])` (or `min`, either operand first) over `from..to`, the read
    /// from `base` by `step`.
    #[inline(always)]
    fn extreme(&mut self, nest: &Nest<A::V>, from: i64, to: i64, base: i64, step: i64) -> Go<()> {
        let Kernel::Extreme {
            slot,
            read,
            func,
            slot_first,
            dtype,
            ops,
            mac,
            compare,
        } = &nest.kernel
        else {
            return Err(Bail);
        };
        let slot_dtype = self.program.vals[*slot];
        let Some(cell) = &self.vals[*slot] else {
            return Err(Bail);
        };
        let mut register = self.arith.load(cell, slot_dtype);
        let tensor = nest.tensors[*read];
        let arith = self.arith;
        let input = !self.tensors[tensor].values.is_empty();
        for k in 0..(to - from) {
            let flat = (base + step * k) as usize;
            let x = if input {
                self.tensors[tensor].read[flat] = true;
                arith.input(self.tensors[tensor].values[flat])
            } else {
                self.read(tensor, flat)?
            };
            let values = if *slot_first {
                [register, x]
            } else {
                [x, register]
            };
            self.count_nan_meeting(*func, &values);
            register = arith.func(*func, &values, *dtype);
        }
        let n = (to - from) as u64;
        self.counts.ops += ops * n;
        self.counts.macs += u64::from(*mac) * n;
        self.counts.compares += u64::from(*compare) * n;
        self.steps_left = self.steps_left.saturating_sub(n);
        // `load(store(v))` is `v`: the register is what the cell would have given
        self.vals[*slot] = Some(self.arith.store(register));
        Ok(())
    }

    /// The innermost level over `from..to` (not empty) by the general kernels: each access's
    /// flat position at `v` is `here[access] + steps[access]·v`.
    fn kernel(
        &mut self,
        nest: &Nest<A::V>,
        from: i64,
        to: i64,
        here: &[i64],
        steps: &[i64],
    ) -> Go<()> {
        match &nest.kernel {
            Kernel::Fold(update) => {
                let Target::Slot(slot) = update.target else {
                    return Err(Bail);
                };
                let dtype = self.program.vals[slot];
                let mut register = self.vals[slot]
                    .as_ref()
                    .map(|cell| self.arith.load(cell, dtype));
                for v in from..to {
                    let value = self.nv(&update.value, v, nest, here, steps, (slot, register))?;
                    self.counts.ops += update.ops;
                    self.counts.macs += u64::from(update.mac);
                    self.counts.compares += u64::from(update.compare);
                    self.steps_left = self.steps_left.saturating_sub(1);
                    register = Some(value);
                }
                if let Some(value) = register {
                    // `load(store(v))` is `v`: the register is what the cell would give
                    self.vals[slot] = Some(self.arith.store(value));
                }
            }
            Kernel::General(updates) => {
                for v in from..to {
                    for update in updates.iter() {
                        self.update(update, v, nest, here, steps)?;
                    }
                }
            }
            Kernel::Dot { .. } | Kernel::Scatter { .. } | Kernel::Extreme { .. } => {
                return Err(Bail);
            }
        }
        Ok(())
    }

    /// Access `access` of a nest at `v`.
    #[inline]
    fn nest_read(
        &mut self,
        nest: &Nest<A::V>,
        access: usize,
        v: i64,
        here: &[i64],
        steps: &[i64],
    ) -> Go<A::V> {
        let flat = (here[access] + steps[access] * v) as usize;
        self.read(nest.tensors[access], flat)
    }

    fn update(
        &mut self,
        update: &NUpdate<A::V>,
        v: i64,
        nest: &Nest<A::V>,
        here: &[i64],
        steps: &[i64],
    ) -> Go<()> {
        let arith = self.arith;
        if let (AssignOp::Add, NV::Product(a, b, dtype)) = (update.op, &update.value) {
            let x = self.nest_read(nest, *a, v, here, steps)?;
            let w = self.nest_read(nest, *b, v, here, steps)?;
            self.counts.ops += update.ops;
            self.counts.macs += u64::from(update.mac);
            self.steps_left = self.steps_left.saturating_sub(1);
            let cell = match update.target {
                Target::Slot(slot) => self.vals[slot].as_mut(),
                Target::Element(write) => {
                    let access = nest.reads + write;
                    let flat = (here[access] + steps[access] * v) as usize;
                    self.tensors[nest.tensors[access]]
                        .data
                        .get_mut(flat)
                        .and_then(Option::as_mut)
                }
            };
            let Some(cell) = cell else {
                return Err(Bail);
            };
            arith.mac(cell, x, w, *dtype);
            return Ok(());
        }
        let value = self.nv(&update.value, v, nest, here, steps, (usize::MAX, None))?;
        self.counts.ops += update.ops;
        self.counts.macs += u64::from(update.mac);
        self.counts.compares += u64::from(update.compare);
        self.steps_left = self.steps_left.saturating_sub(1);
        match update.target {
            Target::Slot(slot) => {
                let dtype = self.program.vals[slot];
                match (update.op, &mut self.vals[slot]) {
                    (AssignOp::Set, cell) => *cell = Some(arith.store(value)),
                    (op, Some(cell)) => arith.update(cell, op, value, dtype),
                    (_, None) => return Err(Bail),
                }
            }
            Target::Element(write) => {
                let access = nest.reads + write;
                let flat = (here[access] + steps[access] * v) as usize;
                let tensor = nest.tensors[access];
                let dtype = self.program.tensors[tensor].dtype;
                match (update.op, self.tensors[tensor].data.get_mut(flat)) {
                    (AssignOp::Set, Some(cell)) => *cell = Some(arith.store(value)),
                    (op, Some(Some(cell))) => arith.update(cell, op, value, dtype),
                    _ => return Err(Bail),
                }
            }
        }
        Ok(())
    }

    /// A value of the innermost body at `v`; `register` holds a slot's value instead of its cell.
    fn nv(
        &mut self,
        e: &NV<A::V>,
        v: i64,
        nest: &Nest<A::V>,
        here: &[i64],
        steps: &[i64],
        register: (usize, Option<A::V>),
    ) -> Go<A::V> {
        let arith = self.arith;
        Ok(match e {
            NV::Const(c) => *c,
            NV::FromInt(row, dtype) => arith.index(here[*row] + steps[*row] * v, *dtype),
            NV::Slot(slot, dtype) => {
                if *slot == register.0 {
                    register.1.ok_or(Bail)?
                } else {
                    match &self.vals[*slot] {
                        Some(cell) => arith.load(cell, *dtype),
                        None => return Err(Bail),
                    }
                }
            }
            NV::Read(read) => self.nest_read(nest, *read, v, here, steps)?,
            NV::Neg(a) => {
                let a = self.nv(a, v, nest, here, steps, register)?;
                arith.neg(a)
            }
            NV::Product(a, b, dtype) => {
                let a = self.nest_read(nest, *a, v, here, steps)?;
                let b = self.nest_read(nest, *b, v, here, steps)?;
                arith.binary(ValOp::Mul, a, b, *dtype)
            }
            NV::Bin(op, a, b, dtype) => {
                let a = self.nv(a, v, nest, here, steps, register)?;
                let b = self.nv(b, v, nest, here, steps, register)?;
                arith.binary(*op, a, b, *dtype)
            }
            NV::Func(func, args, dtype) => {
                let mut values = [arith.constant(0.0); 2];
                for (slot, arg) in values.iter_mut().zip(args.iter()) {
                    *slot = self.nv(arg, v, nest, here, steps, register)?;
                }
                self.count_nan_meeting(*func, &values);
                arith.func(*func, &values[..args.len().min(2)], *dtype)
            }
            NV::Cast(a, dtype) => {
                let a = self.nv(a, v, nest, here, steps, register)?;
                arith.cast(a, *dtype)
            }
        })
    }
}
