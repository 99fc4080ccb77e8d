//! The executor's state for one run (the tensors' storage, the slots, the counts and the step
//! budget) and its running of the lowered statements, conditions and values outside the
//! planned nests (those are [`super::run_nest`]'s).

use super::super::ast::AssignOp;
use super::super::ir::{Func, Origin, Program};
use super::super::machine::{Arith, Counts, Inputs, MAX_STEPS, Outcome};
use super::code::{Access, CE, Code, VE};
use super::{Bail, Go};

/// A tensor's storage during a run.
#[derive(Debug)]
pub(super) struct Tensor<'v, C> {
    pub(super) dims: Vec<usize>,
    pub(super) strides: Vec<usize>,
    pub(super) data: Vec<Option<C>>,
    /// An input's elements.
    pub(super) values: &'v [f64],
    pub(super) read: Vec<bool>,
    pub(super) present: bool,
}

fn strides_of(dims: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; dims.len()];
    for axis in (0..dims.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * dims[axis + 1];
    }
    strides
}

pub(super) struct Exec<'p, A: Arith> {
    pub(super) program: &'p Program,
    pub(super) arith: &'p A,
    pub(super) ints: Vec<i64>,
    pub(super) vals: Vec<Option<A::Cell>>,
    pub(super) tensors: Vec<Tensor<'p, A::Cell>>,
    pub(super) counts: Counts,
    pub(super) steps_left: u64,
    /// A nest's rows per level, its levels' ranges and the ranges solved on entry.
    pub(super) scratch: Vec<i64>,
    pub(super) ranges: Vec<(i64, i64)>,
    pub(super) cut: Vec<(i64, i64)>,
    /// The outer levels' variables of a boxed nest.
    pub(super) odometer: Vec<i64>,
}

impl<'p, A: Arith> Exec<'p, A> {
    pub(super) fn new(program: &'p Program, inputs: &Inputs<'p>, arith: &'p A) -> Option<Self> {
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

    pub(super) fn finish(self) -> Option<Outcome<A::Cell>> {
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

    pub(super) fn block(&mut self, code: &[Code<A::V>]) -> Go<()> {
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
    pub(super) fn read(&mut self, tensor: usize, flat: usize) -> Go<A::V> {
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
    pub(super) fn count_nan_meeting(&mut self, func: Func, values: &[A::V; 2]) {
        if matches!(func, Func::Max | Func::Min) {
            let nan = |v: A::V| self.arith.is_nan(v);
            if let (Some(a), Some(b)) = (nan(values[0]), nan(values[1]))
                && a != b
            {
                self.counts.nan_meets += 1;
            }
        }
    }
}
