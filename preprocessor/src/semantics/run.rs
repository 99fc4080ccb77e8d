//! The interpreter: one checked program, run on one sample in one arithmetic ([`Arith`]): in
//! `f64` with a forward error bound and the special values it may give (the oracle,
//! [`super::exact`]), or in the dtype in exactly the written order ([`super::rounded`]). Every
//! run also counts the work (multiply-adds, taps, comparisons, arithmetic, distinct elements
//! read and written) and, when asked, traces which input elements each output element was made
//! from. Indices are checked on every access, elements read before they are written and output
//! elements never written are errors located in the pseudo-code, and a run is bounded in steps
//! and memory.

use super::ast::{AssignOp, CmpOp};
use super::error::SemanticsError;
use super::ir::{Bool, Func, Int, IntKind, IntOp, Op, Origin, Program, Val, ValKind, ValOp};
use crate::expr::Span;
use fkc_provider::DType;

/// How values are computed.
pub trait Arith {
    /// A value while an expression is evaluated.
    type V: Copy + std::fmt::Debug;
    /// A stored value (a local or a tensor element), which may be an open sum.
    type Cell: Clone + std::fmt::Debug;
    /// An element of an input tensor (a value of its dtype, exactly).
    fn input(&self, value: f64) -> Self::Cell;
    /// A literal.
    fn constant(&self, value: f64) -> Self::V;
    /// An index as a value of `dtype`.
    fn index(&self, value: i64, dtype: DType) -> Self::V;
    /// A stored value, read.
    fn load(&self, cell: &Self::Cell, dtype: DType) -> Self::V;
    /// A value stored (already of the cell's dtype).
    fn store(&self, value: Self::V) -> Self::Cell;
    /// `cell op= value` in `dtype`.
    fn update(&self, cell: &mut Self::Cell, op: AssignOp, value: Self::V, dtype: DType);
    fn neg(&self, value: Self::V) -> Self::V;
    fn binary(&self, op: ValOp, a: Self::V, b: Self::V, dtype: DType) -> Self::V;
    fn func(&self, func: Func, args: &[Self::V], dtype: DType) -> Self::V;
    fn cast(&self, value: Self::V, dtype: DType) -> Self::V;
    /// `a op b`; `None` when the arithmetic cannot decide (the values' error intervals meet).
    fn compare(&self, op: CmpOp, a: Self::V, b: Self::V) -> Option<bool>;
    fn is_nan(&self, value: Self::V) -> Option<bool>;
    /// Either of two values (a `select` whose condition is undecided).
    fn either(&self, a: Self::V, b: Self::V) -> Self::V;
    /// A representative number, for traces.
    fn number(&self, value: Self::V) -> f64;
}

/// A parameter's value on a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamValue {
    Int(i64),
    Tuple(Vec<i64>),
}

/// What a program runs on: each input's dims and values (`None` when absent), each output's
/// dims, each parameter's value (in the program's order).
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub inputs: &'a [Option<(Vec<usize>, Vec<f64>)>],
    pub outputs: &'a [Vec<usize>],
    pub params: &'a [ParamValue],
    /// The run's element dtype `T`.
    pub dtype: DType,
}

/// The work a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Executed `acc += a * b` updates.
    pub macs: u64,
    /// Iterations of the loops whose bodies update a reduction (padding taps included).
    pub taps: u64,
    /// Executed `max`/`min` of a reduction with itself.
    pub compares: u64,
    /// Executed arithmetic on values (`+ - * /`, functions, updates).
    pub ops: u64,
    /// Per tensor: distinct elements read.
    pub read: Vec<u64>,
    /// Per tensor: elements (of an output or local) written at least once.
    pub written: Vec<u64>,
}

/// One step of how an element was made: the input elements it read (tensor, flat index) and
/// the value that step added.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub reads: Vec<(usize, usize)>,
    pub value: f64,
}

/// What a run gave.
#[derive(Debug, Clone)]
pub struct Outcome<C> {
    /// Each output's elements, row-major.
    pub outputs: Vec<Vec<C>>,
    pub counts: Counts,
    /// With tracing: each output's elements' steps.
    pub trace: Option<Vec<Vec<Vec<Step>>>>,
}

/// At most this many loop iterations and statements per run.
pub const MAX_STEPS: u64 = 200_000_000;
/// At most this many elements in one local tensor.
pub const MAX_LOCAL_ELEMENTS: usize = 1 << 24;

/// Runs `program` on `inputs` in `arith`; with `trace`, records every output element's steps.
pub fn run<A: Arith>(
    program: &Program,
    inputs: &Inputs<'_>,
    arith: &A,
    trace: bool,
) -> Result<Outcome<A::Cell>, SemanticsError> {
    let mut frame = Frame::new(program, inputs, arith, trace)?;
    frame.block(&program.body)?;
    frame.finish()
}

/// A tensor's storage during a run.
#[derive(Debug)]
struct Storage<C> {
    dims: Vec<usize>,
    strides: Vec<usize>,
    data: Vec<Option<C>>,
    /// Elements read at least once (for distinct-read counts).
    read: Vec<bool>,
    present: bool,
    steps: Vec<Vec<Step>>,
}

impl<C> Storage<C> {
    fn new(dims: Vec<usize>, data: Vec<Option<C>>, present: bool, trace: bool) -> Self {
        let mut strides = vec![1; dims.len()];
        for axis in (0..dims.len().saturating_sub(1)).rev() {
            strides[axis] = strides[axis + 1] * dims[axis + 1];
        }
        let len = data.len();
        Storage {
            dims,
            strides,
            data,
            read: vec![false; len],
            present,
            steps: if trace {
                vec![Vec::new(); len]
            } else {
                Vec::new()
            },
        }
    }

    fn absent() -> Self {
        Storage::new(Vec::new(), Vec::new(), false, false)
    }
}

struct Frame<'p, A: Arith> {
    program: &'p Program,
    inputs: &'p Inputs<'p>,
    arith: &'p A,
    ints: Vec<i64>,
    vals: Vec<Option<A::Cell>>,
    tensors: Vec<Storage<A::Cell>>,
    counts: Counts,
    steps_left: u64,
    /// With tracing: each value slot's steps, and the reads of the expression being evaluated.
    trace: bool,
    val_steps: Vec<Vec<Step>>,
    pending: Vec<Step>,
    pending_reads: Vec<(usize, usize)>,
}

impl<'p, A: Arith> Frame<'p, A> {
    fn new(
        program: &'p Program,
        inputs: &'p Inputs<'p>,
        arith: &'p A,
        trace: bool,
    ) -> Result<Self, SemanticsError> {
        let tensors = program
            .tensors
            .iter()
            .map(|tensor| match tensor.origin {
                Origin::Input(i) => match inputs.inputs.get(i).and_then(Option::as_ref) {
                    Some((dims, values)) => Storage::new(
                        dims.clone(),
                        values.iter().map(|v| Some(arith.input(*v))).collect(),
                        true,
                        false,
                    ),
                    None => Storage::absent(),
                },
                Origin::Output(i) => {
                    let dims = inputs.outputs.get(i).cloned().unwrap_or_default();
                    let len = dims.iter().product();
                    Storage::new(dims, vec![None; len], true, trace)
                }
                Origin::Local => Storage::absent(),
            })
            .collect();
        Ok(Frame {
            program,
            inputs,
            arith,
            ints: vec![0; program.ints],
            vals: vec![None; program.vals.len()],
            tensors,
            counts: Counts::default(),
            steps_left: MAX_STEPS,
            trace,
            val_steps: vec![Vec::new(); if trace { program.vals.len() } else { 0 }],
            pending: Vec::new(),
            pending_reads: Vec::new(),
        })
    }

    fn finish(self) -> Result<Outcome<A::Cell>, SemanticsError> {
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
        let mut traces = Vec::new();
        for (tensor, storage) in self.program.tensors.iter().zip(self.tensors) {
            if !matches!(tensor.origin, Origin::Output(_)) {
                continue;
            }
            let mut cells = Vec::with_capacity(storage.data.len());
            for (flat, cell) in storage.data.into_iter().enumerate() {
                let Some(cell) = cell else {
                    return Err(never_written(&tensor.name, &storage.dims, flat));
                };
                cells.push(cell);
            }
            outputs.push(cells);
            traces.push(storage.steps);
        }
        Ok(Outcome {
            outputs,
            counts,
            trace: self.trace.then_some(traces),
        })
    }

    fn step(&mut self, span: Span) -> Result<(), SemanticsError> {
        if self.steps_left == 0 {
            return Err(SemanticsError::budget(
                span,
                format!("the pseudo-code ran more than {MAX_STEPS} steps on one sample"),
            ));
        }
        self.steps_left -= 1;
        Ok(())
    }

    fn block(&mut self, ops: &[Op]) -> Result<(), SemanticsError> {
        for op in ops {
            self.op(op)?;
        }
        Ok(())
    }

    fn op(&mut self, op: &Op) -> Result<(), SemanticsError> {
        match op {
            Op::For {
                var,
                lo,
                hi,
                body,
                taps,
                span,
            } => {
                let (lo, hi) = (self.int(lo)?, self.int(hi)?);
                for i in lo..hi {
                    self.step(*span)?;
                    self.ints[*var] = i;
                    if *taps {
                        self.counts.taps += 1;
                    }
                    self.block(body)?;
                }
                Ok(())
            }
            Op::If {
                cond,
                then,
                otherwise,
            } => {
                if self.condition(cond)? {
                    self.block(then)
                } else {
                    self.block(otherwise)
                }
            }
            Op::SetInt {
                slot,
                op,
                value,
                span,
            } => {
                self.step(*span)?;
                let value = self.int(value)?;
                let current = self.ints[*slot];
                self.ints[*slot] = match op {
                    AssignOp::Set => Some(value),
                    AssignOp::Add => current.checked_add(value),
                    AssignOp::Sub => current.checked_sub(value),
                    AssignOp::Mul => current.checked_mul(value),
                }
                .ok_or_else(|| overflow(*span))?;
                Ok(())
            }
            Op::SetVal {
                slot,
                op,
                value,
                update,
                span,
            } => {
                self.step(*span)?;
                self.begin_trace();
                let v = self.val(value)?;
                self.count_update(*op, update.mac, update.compare);
                let dtype = self.program.vals[*slot];
                match (op, &mut self.vals[*slot]) {
                    (AssignOp::Set, cell) => *cell = Some(self.arith.store(v)),
                    (_, Some(cell)) => self.arith.update(cell, *op, v, dtype),
                    (_, None) => return Err(read_before_write(*span, "this local")),
                }
                if self.trace {
                    let steps = self.end_trace(v);
                    self.record(&mut TraceTarget::Slot(*slot), *op, steps);
                }
                Ok(())
            }
            Op::Store {
                tensor,
                index,
                op,
                value,
                update,
                span,
            } => {
                self.step(*span)?;
                let flat = self.flat(*tensor, index, *span)?;
                self.begin_trace();
                let v = self.val(value)?;
                self.count_update(*op, update.mac, update.compare);
                let dtype = self.program.tensors[*tensor].dtype;
                let arith = self.arith;
                match (op, self.tensors[*tensor].data.get_mut(flat)) {
                    (AssignOp::Set, Some(cell)) => *cell = Some(arith.store(v)),
                    (_, Some(Some(cell))) => arith.update(cell, *op, v, dtype),
                    _ => {
                        let name = self.program.tensors[*tensor].name.clone();
                        return Err(read_before_write(
                            *span,
                            &format!("this element of `{name}`"),
                        ));
                    }
                }
                if self.trace {
                    let steps = self.end_trace(v);
                    self.record(&mut TraceTarget::Element(*tensor, flat), *op, steps);
                }
                Ok(())
            }
            Op::Alloc {
                tensor,
                shape,
                init,
                span,
            } => {
                let dims = shape
                    .iter()
                    .map(|d| {
                        let d = self.int(d)?;
                        usize::try_from(d).map_err(|_| {
                            SemanticsError::run(
                                *span,
                                format!("a dimension is negative ({d})"),
                                "declare dimensions of at least 0",
                            )
                        })
                    })
                    .collect::<Result<Vec<usize>, _>>()?;
                let len = dims
                    .iter()
                    .try_fold(1usize, |n, d| n.checked_mul(*d))
                    .filter(|n| *n <= MAX_LOCAL_ELEMENTS)
                    .ok_or_else(|| {
                        SemanticsError::budget(
                            *span,
                            format!("a local tensor of more than {MAX_LOCAL_ELEMENTS} elements"),
                        )
                    })?;
                let v = self.val(init)?;
                let cell = self.arith.store(v);
                let trace = self.trace;
                self.tensors[*tensor] = Storage::new(dims, vec![Some(cell); len], true, trace);
                Ok(())
            }
        }
    }

    fn count_update(&mut self, op: AssignOp, mac: bool, compare: bool) {
        if op != AssignOp::Set {
            self.counts.ops += 1;
        }
        self.counts.macs += u64::from(mac);
        self.counts.compares += u64::from(compare);
    }

    fn begin_trace(&mut self) {
        if self.trace {
            self.pending.clear();
            self.pending_reads.clear();
        }
    }

    /// The steps of the value just evaluated: the steps of the slots it read, then one step
    /// for its own tensor reads.
    fn end_trace(&mut self, v: A::V) -> Vec<Step> {
        let mut steps = std::mem::take(&mut self.pending);
        if !self.pending_reads.is_empty() {
            steps.push(Step {
                reads: std::mem::take(&mut self.pending_reads),
                value: self.arith.number(v),
            });
        }
        steps
    }

    fn record(&mut self, target: &mut TraceTarget, op: AssignOp, steps: Vec<Step>) {
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

    fn condition(&mut self, cond: &Bool) -> Result<bool, SemanticsError> {
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
                return Err(SemanticsError::run(
                    Span::default(),
                    "a value comparison outside `select`",
                    "choose between values with `select`",
                ));
            }
        })
    }

    /// A `select` condition: `None` when the arithmetic cannot decide it.
    fn value_condition(&mut self, cond: &Bool) -> Result<Option<bool>, SemanticsError> {
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

    fn int(&self, e: &Int) -> Result<i64, SemanticsError> {
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
                (Some(super::run::ParamValue::Int(v)), None) => *v,
                (Some(super::run::ParamValue::Tuple(vs)), Some(i)) => {
                    vs.get(*i).copied().unwrap_or(0)
                }
                _ => {
                    let name = &self.program.params[*param].name;
                    return Err(SemanticsError::run(
                        e.span,
                        format!("the sample has no value of the right kind for `{name}`"),
                        "declare the parameter with the kind the kernel takes",
                    ));
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
                        return Err(SemanticsError::run(
                            e.span,
                            "a division by zero",
                            "guard the division, or constrain the contract so the divisor is never 0",
                        ));
                    }
                    IntOp::Div => crate::expr::floor_div(a, b),
                    IntOp::Rem => crate::expr::floor_mod(a, b),
                }
                .ok_or_else(|| overflow(e.span))?
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

    /// The flat position of an element, every index checked against its axis.
    fn flat(&self, tensor: usize, index: &[Int], span: Span) -> Result<usize, SemanticsError> {
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
                    return Err(SemanticsError::run(
                        i.span,
                        format!(
                            "index {at} is outside `{name}` on axis {axis} (`{name}.dim[{axis}]` is {dim})"
                        ),
                        "guard the access with an `if` on its indices, or fix the index arithmetic",
                    ));
                }
            }
        }
        Ok(flat)
    }

    fn val(&mut self, e: &Val) -> Result<A::V, SemanticsError> {
        let arith = self.arith;
        Ok(match &e.kind {
            ValKind::Const(v) => arith.constant(*v),
            ValKind::FromInt(i, dtype) => arith.index(self.int(i)?, *dtype),
            ValKind::Slot(slot) => {
                let dtype = self.program.vals[*slot];
                let Some(cell) = &self.vals[*slot] else {
                    return Err(read_before_write(e.span, "this local"));
                };
                let v = arith.load(cell, dtype);
                if self.trace {
                    let steps = self.val_steps.get(*slot).cloned().unwrap_or_default();
                    self.pending.extend(steps);
                }
                v
            }
            ValKind::Read { tensor, index } => {
                let flat = self.flat(*tensor, index, e.span)?;
                let dtype = self.program.tensors[*tensor].dtype;
                let storage = &mut self.tensors[*tensor];
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
                        let steps = steps.clone();
                        self.pending.extend(steps);
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

enum TraceTarget {
    Slot(usize),
    Element(usize, usize),
}

fn overflow(span: Span) -> SemanticsError {
    SemanticsError::run(
        span,
        "index arithmetic overflows 64 bits",
        "keep index arithmetic within the tensors' sizes",
    )
}

fn absent(name: &str, span: Span) -> SemanticsError {
    SemanticsError::run(
        span,
        format!("`{name}` is absent on this sample"),
        format!("guard its use with `if present({name}):`"),
    )
}

fn read_before_write(span: Span, what: &str) -> SemanticsError {
    SemanticsError::run(
        span,
        format!("{what} is read before it is written"),
        "give it a first value with `=` before reading it or updating it with `+=`",
    )
}

fn never_written(name: &str, dims: &[usize], flat: usize) -> SemanticsError {
    let mut index = vec![0; dims.len()];
    let mut rest = flat;
    for (axis, dim) in dims.iter().enumerate().rev() {
        index[axis] = rest % dim.max(&1);
        rest /= dim.max(&1);
    }
    let index: Vec<String> = index.iter().map(ToString::to_string).collect();
    SemanticsError::run(
        Span::default(),
        format!("`{name}[{}]` is never written", index.join(", ")),
        "every output element must be written: loop over all of the output's indices",
    )
}
