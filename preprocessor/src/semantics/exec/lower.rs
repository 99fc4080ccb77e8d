//! Lowering a checked program for one sample: every integer slot's interval from its
//! definitions, index expressions folded to numbers or affine sums, element accesses with only
//! the checks the intervals do not prove, conditions and values; planned nests are lowered by
//! [`super::lower_nest`].

use super::super::ast::AssignOp;
use super::super::ir::{Bool, Int, IntKind, IntOp, Op, ParamValue, Program, Val, ValKind};
use super::super::machine::{Arith, Inputs};
use super::code::{Access, CE, Code, IE, VE};
use super::executor::{Exec, Tensor};
use super::interval::{Iv, LIMIT, iv_bin};
use super::{Bail, Go};

/// `program` lowered for a sample of `inputs`' dims and parameters; `None` where the executor
/// does not run it.
pub(super) fn lower<A: Arith>(
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

pub(super) struct Lower<'a, 'p, A: Arith> {
    pub(super) program: &'p Program,
    pub(super) arith: &'a A,
    params: &'a [ParamValue],
    pub(super) tensors: &'a [Tensor<'a, A::Cell>],
    defs: Vec<Vec<Def<'p>>>,
    slots: Vec<SlotState>,
}

impl<A: Arith> Lower<'_, '_, A> {
    /// The interval of a slot's values: the union of its definitions'.
    pub(super) fn slot(&mut self, slot: usize) -> Go<Iv> {
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

    /// Component `source` of a whole index, lowered, or the constant 0 for `None`.
    fn component(&mut self, index: &[Int], source: Option<usize>) -> Go<(IE, Iv)> {
        match source {
            Some(axis) => self.int(index.get(axis).ok_or(Bail)?),
            None => Ok((IE::Const(0), Iv::point(0))),
        }
    }

    /// `e` lowered, with its interval (every node's inside [`LIMIT`]).
    pub(super) fn int(&mut self, e: &Int) -> Go<(IE, Iv)> {
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
                // (an element past a list's end is the reference's to report)
                (Some(ParamValue::Tuple(vs)), Some(i)) => {
                    let v = *vs.get(*i).ok_or(Bail)?;
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
            // (an axis chosen at run time is lowered when it is fixed for the run)
            // (an index read from a tensor is the generic walk's, which checks it on the run)
            IntKind::Element { .. } => return Err(Bail),
            // (a reduced or broadcast index is fixed for the run: each component is one of the
            // whole index's, or 0; anything wrong is the generic walk's to report)
            IntKind::Reduced {
                index,
                axes,
                keepdim,
                component,
                width,
            } => {
                let Some(ParamValue::Tuple(listed)) = self.params.get(*axes) else {
                    return Err(Bail);
                };
                let IE::Const(keep) = self.int(keepdim)?.0 else {
                    return Err(Bail);
                };
                let source = super::super::ir::reduced_source(
                    index.len(),
                    listed,
                    keep != 0,
                    *component,
                    *width,
                );
                return self.component(index, source.map_err(|_| Bail)?);
            }
            IntKind::Along {
                index,
                axis,
                value,
                component,
            } => {
                let IE::Const(axis) = self.int(axis)?.0 else {
                    return Err(Bail);
                };
                let axis = usize::try_from(axis).ok().filter(|a| *a < index.len());
                return match axis.ok_or(Bail)? == *component {
                    true => self.int(value),
                    false => self.int(index.get(*component).ok_or(Bail)?),
                };
            }
            IntKind::Broadcast {
                index,
                tensor,
                component,
                ..
            } => {
                let storage = self.tensors.get(*tensor).ok_or(Bail)?;
                if !storage.present {
                    return Err(Bail);
                }
                let source =
                    super::super::ir::broadcast_source(index.len(), &storage.dims, *component);
                return self.component(index, source.map_err(|_| Bail)?);
            }
            IntKind::Numel(tensor) => {
                let storage = self.tensors.get(*tensor).ok_or(Bail)?;
                if !storage.present {
                    return Err(Bail);
                }
                let numel = storage.dims.iter().try_fold(1i64, |n, d| {
                    n.checked_mul(i64::try_from(*d).ok()?)
                });
                let numel = numel.ok_or(Bail)?;
                (IE::Const(numel), Iv::point(i128::from(numel)))
            }
            IntKind::Pick { index, options } => match self.int(index)?.0 {
                IE::Const(at) => {
                    let option = usize::try_from(at).ok().and_then(|i| options.get(i));
                    return self.int(option.ok_or(Bail)?);
                }
                _ => return Err(Bail),
            },
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

    pub(super) fn bin(&mut self, op: IntOp, a: IE, b: IE) -> Go<IE> {
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
    pub(super) fn cond(&mut self, cond: &Bool, value: bool) -> Go<CE<A::V>> {
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
            ValKind::Param(param) => match self.params.get(*param) {
                Some(ParamValue::Float(v)) => VE::Const(self.arith.constant(*v)),
                _ => return Err(Bail),
            },
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
}
