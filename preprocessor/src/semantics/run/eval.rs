//! Evaluating the program's expressions on the frame: index expressions, element positions,
//! conditions and values (each check located), with the work they count and the steps they
//! trace.

use super::super::ast::AssignOp;
use super::super::error::SemanticsError;
use super::super::ir::{self, Bool, Func, Int, IntKind, IntOp, Origin, ParamValue, Val, ValKind};
use super::super::machine::{Arith, Step};
use std::rc::Rc;
use super::Frame;
use super::errors::{Fallible, absent, overflow, read_before_write};
use crate::expr::Span;

impl<A: Arith> Frame<'_, A> {
    /// Counts a `max`/`min` where a NaN meets a number.
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

    pub(super) fn count_update(&mut self, op: AssignOp, mac: bool, compare: bool) {
        if op != AssignOp::Set {
            self.counts.ops += 1;
        }
        self.counts.macs += u64::from(mac);
        self.counts.compares += u64::from(compare);
    }

    pub(super) fn begin_trace(&mut self) {
        if self.trace {
            self.pending.clear();
            self.pending_reads.clear();
        }
    }

    /// The steps of the value just evaluated: the steps of the slots it read, then one step
    /// for its own tensor reads.
    pub(super) fn end_trace(&mut self, v: A::V) -> Vec<Rc<Step>> {
        let mut steps = std::mem::take(&mut self.pending);
        if !self.pending_reads.is_empty() {
            steps.push(Rc::new(Step {
                reads: std::mem::take(&mut self.pending_reads),
                value: self.arith.number(v),
            }));
        }
        steps
    }

    pub(super) fn record(&mut self, target: &mut TraceTarget, op: AssignOp, steps: Vec<Rc<Step>>) {
        let list = match target {
            TraceTarget::Slot(slot) => self.val_steps.get_mut(*slot),
            TraceTarget::Element(tensor, flat) => self
                .tensors
                .get_mut(*tensor)
                .and_then(|t| t.steps.get_mut(*flat)),
        };
        if let Some(list) = list {
            if op == AssignOp::Set {
                *list = steps;
            } else {
                list.extend(steps);
            }
        }
    }

    pub(super) fn condition(&mut self, cond: &Bool) -> Fallible<bool> {
        Ok(match cond {
            Bool::Const(b) => *b,
            Bool::Not(c) => !self.condition(c)?,
            Bool::And(a, b) => self.condition(a)? && self.condition(b)?,
            Bool::Or(a, b) => self.condition(a)? || self.condition(b)?,
            Bool::CompareInt(operands, ops) => {
                let mut left = self.int(&operands[0])?;
                for (op, operand) in ops.iter().zip(&operands[1..]) {
                    let right = self.int(operand)?;
                    if !op.holds(left, right) {
                        return Ok(false);
                    }
                    left = right;
                }
                true
            }
            Bool::Present(tensor) => self.tensors[*tensor].present,
            Bool::CompareVal(..) | Bool::IsNan(_) => {
                // The checker allows value comparisons only inside `select`.
                return Err(Box::new(SemanticsError::run(
                    Span::default(),
                    "a value comparison outside `select`",
                    "choose between values with `select`",
                )));
            }
        })
    }

    /// A `select` condition: `None` when the arithmetic cannot decide it.
    fn value_condition(&mut self, cond: &Bool) -> Fallible<Option<bool>> {
        Ok(match cond {
            Bool::CompareVal(operands, ops) => {
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
            Bool::IsNan(v) => {
                let v = self.val(v)?;
                self.arith.is_nan(v)
            }
            Bool::Not(c) => self.value_condition(c)?.map(|b| !b),
            Bool::And(a, b) => match (self.value_condition(a)?, self.value_condition(b)?) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Bool::Or(a, b) => match (self.value_condition(a)?, self.value_condition(b)?) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            other => Some(self.condition(other)?),
        })
    }

    pub(super) fn int(&self, e: &Int) -> Fallible<i64> {
        Ok(match &e.kind {
            IntKind::Const(v) => *v,
            IntKind::Slot(slot) => self.ints[*slot],
            IntKind::Dim { tensor, axis } => {
                let storage = &self.tensors[*tensor];
                if !storage.present {
                    return Err(absent(&self.program.tensors[*tensor].name, e.span));
                }
                storage.dims.get(*axis).map_or(0, |d| *d as i64)
            }
            IntKind::Rank(tensor) => self.program.tensors[*tensor].rank as i64,
            IntKind::Param { param, element } => match (self.inputs.params.get(*param), element) {
                (Some(ParamValue::Int(v)), None) => *v,
                (Some(ParamValue::Tuple(vs)), Some(i)) => match vs.get(*i) {
                    Some(v) => *v,
                    None => {
                        let name = &self.program.params[*param].name;
                        return Err(Box::new(SemanticsError::run(
                            e.span,
                            format!("`{name}` has {} elements: there is no element {i}", vs.len()),
                            "constrain the list's length (`len(perm) == x.rank`)",
                        )));
                    }
                },
                _ => {
                    let name = &self.program.params[*param].name;
                    return Err(Box::new(SemanticsError::run(
                        e.span,
                        format!("the sample has no value of the right kind for `{name}`"),
                        "declare the parameter with the kind the kernel takes",
                    )));
                }
            },
            IntKind::Neg(a) => self.int(a)?.checked_neg().ok_or_else(|| overflow(e.span))?,
            IntKind::Bin(op, a, b) => {
                let (a, b) = (self.int(a)?, self.int(b)?);
                match op {
                    IntOp::Add => a.checked_add(b),
                    IntOp::Sub => a.checked_sub(b),
                    IntOp::Mul => a.checked_mul(b),
                    IntOp::Div | IntOp::Rem if b == 0 => {
                        return Err(Box::new(SemanticsError::run(
                            e.span,
                            "a division by zero",
                            "guard the division, or constrain the contract so the divisor is never 0",
                        )));
                    }
                    IntOp::Div => crate::expr::floor_div(a, b),
                    IntOp::Rem => crate::expr::floor_mod(a, b),
                }
                .ok_or_else(|| overflow(e.span))?
            }
            IntKind::Element { tensor, index } => {
                let flat = self.flat(*tensor, index, e.span)?;
                let value = self.tensors[*tensor].values.get(flat).copied();
                match value {
                    Some(v) if v.fract() == 0.0 && v.abs() < 2f64.powi(63) => v as i64,
                    _ => {
                        return Err(Box::new(SemanticsError::run(
                            e.span,
                            "this element is not an integer index".to_owned(),
                            "index with an element of an integer input (`I64`, `I32`, …)",
                        )));
                    }
                }
            }
            IntKind::Numel(tensor) => {
                let storage = &self.tensors[*tensor];
                if !storage.present {
                    return Err(absent(&self.program.tensors[*tensor].name, e.span));
                }
                let numel = storage.dims.iter().try_fold(1i64, |n, d| {
                    n.checked_mul(i64::try_from(*d).ok()?)
                });
                numel.ok_or_else(|| overflow(e.span))?
            }
            IntKind::Reduced {
                index,
                axes,
                keepdim,
                component,
                width,
            } => self.reduced(e.span, index, *axes, keepdim, *component, *width)?,
            IntKind::Broadcast {
                index,
                tensor,
                component,
                ..
            } => self.broadcast(e.span, index, *tensor, *component)?,
            IntKind::Along {
                index,
                axis,
                value,
                component,
            } => {
                let at = self.int(axis)?;
                if !usize::try_from(at).is_ok_and(|a| a < index.len()) {
                    return Err(Box::new(SemanticsError::run(
                        axis.span,
                        format!("axis {at} is outside 0..{}", index.len()),
                        "constrain the axis to the tensor's rank; a negative one: `axis % x.rank`",
                    )));
                }
                match usize::try_from(at) == Ok(*component) {
                    true => self.int(value)?,
                    false => self.whole_component(index, Some(*component))?,
                }
            }
            IntKind::Pick { index, options } => {
                let at = self.int(index)?;
                let option = usize::try_from(at).ok().and_then(|i| options.get(i));
                let Some(option) = option else {
                    return Err(Box::new(SemanticsError::run(
                        index.span,
                        format!("index {at} is outside 0..{}", options.len()),
                        "constrain the contract so the axis or position is in range (a negative axis: `axis % x.rank`)",
                    )));
                };
                self.int(option)?
            }
            IntKind::Min(items) | IntKind::Max(items) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(self.int(item)?);
                }
                let found = if matches!(e.kind, IntKind::Min(_)) {
                    values.into_iter().min()
                } else {
                    values.into_iter().max()
                };
                found.unwrap_or(0)
            }
        })
    }

    /// Component `component` of `reduced(index, axes, keepdim)` for a tensor of rank `width`.
    fn reduced(
        &self,
        span: Span,
        index: &[Int],
        axes: usize,
        keepdim: &Int,
        component: usize,
        width: usize,
    ) -> Fallible<i64> {
        let listed = match self.inputs.params.get(axes) {
            Some(ParamValue::Tuple(listed)) => listed.as_slice(),
            _ => &[],
        };
        let keep = self.int(keepdim)? != 0;
        let source = ir::reduced_source(index.len(), listed, keep, component, width);
        let name = &self.program.params[axes].name;
        let source = source.map_err(|problem| {
            Box::new(SemanticsError::run(
                span,
                format!("`{name}` = {problem}"),
                "constrain the contract: `axes(axes, x.rank)`, and index the reduction's output, whose shape rule is `reduce(x, axes, keepdim)`",
            ))
        })?;
        self.whole_component(index, source)
    }

    /// Component `component` of `broadcast(index, tensor)`.
    fn broadcast(&self, span: Span, index: &[Int], tensor: usize, component: usize) -> Fallible<i64> {
        let storage = &self.tensors[tensor];
        if !storage.present {
            return Err(absent(&self.program.tensors[tensor].name, span));
        }
        let source = ir::broadcast_source(index.len(), &storage.dims, component);
        let source = source.map_err(|problem| {
            Box::new(SemanticsError::run(
                span,
                problem,
                "index an input with the output's whole index broadcast to it: `a[broadcast(o)]` with `o` over `out`, whose shape rule is `broadcast(a, b)`",
            ))
        })?;
        self.whole_component(index, source)
    }

    /// Component `source` of a whole index, or 0 for `None`.
    fn whole_component(&self, index: &[Int], source: Option<usize>) -> Fallible<i64> {
        match source.and_then(|axis| index.get(axis)) {
            Some(i) => self.int(i),
            None => Ok(0),
        }
    }

    /// The flat position of an element, every index checked against its axis.
    pub(super) fn flat(&self, tensor: usize, index: &[Int], span: Span) -> Fallible<usize> {
        let storage = &self.tensors[tensor];
        if !storage.present {
            return Err(absent(&self.program.tensors[tensor].name, span));
        }
        let mut flat = 0usize;
        for (axis, (i, (dim, stride))) in index
            .iter()
            .zip(storage.dims.iter().zip(&storage.strides))
            .enumerate()
        {
            let at = self.int(i)?;
            match usize::try_from(at) {
                Ok(at) if at < *dim => flat += at * stride,
                _ => {
                    let name = &self.program.tensors[tensor].name;
                    return Err(Box::new(SemanticsError::run(
                        i.span,
                        format!(
                            "index {at} is outside `{name}` on axis {axis} (`{name}.dim[{axis}]` is {dim})"
                        ),
                        "guard the access with an `if` on its indices, or fix the index arithmetic",
                    )));
                }
            }
        }
        Ok(flat)
    }

    pub(super) fn val(&mut self, e: &Val) -> Fallible<A::V> {
        let arith = self.arith;
        Ok(match &e.kind {
            ValKind::Const(v) => arith.constant(*v),
            ValKind::Param(param) => match self.inputs.params.get(*param) {
                Some(ParamValue::Float(v)) => arith.constant(*v),
                _ => {
                    let name = &self.program.params[*param].name;
                    return Err(Box::new(SemanticsError::run(
                        e.span,
                        format!("the sample has no float value for `{name}`"),
                        "declare the parameter `f32` or `f64`",
                    )));
                }
            },
            ValKind::FromInt(i, dtype) => arith.index(self.int(i)?, *dtype),
            ValKind::Slot(slot) => {
                let dtype = self.program.vals[*slot];
                let Some(cell) = &self.vals[*slot] else {
                    return Err(read_before_write(e.span, "this local"));
                };
                let v = arith.load(cell, dtype);
                if let Some(steps) = self.val_steps.get(*slot) {
                    self.pending.extend(steps.iter().cloned());
                }
                v
            }
            ValKind::Read { tensor, index } => {
                let flat = self.flat(*tensor, index, e.span)?;
                let dtype = self.program.tensors[*tensor].dtype;
                let storage = &mut self.tensors[*tensor];
                if let Some(value) = storage.values.get(flat) {
                    storage.read[flat] = true;
                    if self.trace {
                        self.pending_reads.push((*tensor, flat));
                    }
                    return Ok(arith.input(*value));
                }
                let Some(Some(cell)) = storage.data.get(flat) else {
                    let name = &self.program.tensors[*tensor].name;
                    return Err(read_before_write(
                        e.span,
                        &format!("this element of `{name}`"),
                    ));
                };
                let v = arith.load(cell, dtype);
                storage.read[flat] = true;
                if self.trace {
                    if let Origin::Input(_) = self.program.tensors[*tensor].origin {
                        self.pending_reads.push((*tensor, flat));
                    } else if let Some(steps) = storage.steps.get(flat) {
                        self.pending.extend(steps.iter().cloned());
                    }
                }
                v
            }
            ValKind::Neg(a) => {
                let a = self.val(a)?;
                arith.neg(a)
            }
            ValKind::Bin(op, a, b, dtype) => {
                let (a, b) = (self.val(a)?, self.val(b)?);
                self.counts.ops += 1;
                arith.binary(*op, a, b, *dtype)
            }
            ValKind::Func(func, args, dtype) => {
                let mut values = [arith.constant(0.0); 2];
                for (slot, arg) in values.iter_mut().zip(args) {
                    *slot = self.val(arg)?;
                }
                self.counts.ops += 1;
                self.count_nan_meeting(*func, &values);
                arith.func(*func, &values[..args.len().min(2)], *dtype)
            }
            ValKind::Select(cond, a, b) => match self.value_condition(cond)? {
                Some(true) => self.val(a)?,
                Some(false) => self.val(b)?,
                None => {
                    let (a, b) = (self.val(a)?, self.val(b)?);
                    arith.either(a, b)
                }
            },
            ValKind::Cast(a, dtype) => {
                let a = self.val(a)?;
                arith.cast(a, *dtype)
            }
        })
    }
}

pub(super) enum TraceTarget {
    Slot(usize),
    Element(usize, usize),
}
