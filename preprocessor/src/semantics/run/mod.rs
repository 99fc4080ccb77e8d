//! The interpreter: one checked program, run on one sample in one arithmetic ([`Arith`]): in
//! `f64` with a forward error bound and the special values it may give (the oracle,
//! [`super::exact`]), or in the dtype in exactly the written order ([`super::rounded`]). Every
//! run also counts the work (multiply-adds, taps, comparisons, arithmetic, distinct elements
//! read and written) and, when asked, traces which input elements each output element was made
//! from. Indices are checked on every access, elements read before they are written and output
//! elements never written are errors located in the pseudo-code, and a run is bounded in steps
//! and memory.

mod errors;
mod eval;
mod nest;

use super::ast::AssignOp;
use super::error::SemanticsError;
use super::ir::{Op, Origin, Program};
use super::machine::{Arith, Counts, Inputs, MAX_LOCAL_ELEMENTS, MAX_STEPS, Outcome, Step};
use crate::expr::Span;
use std::rc::Rc;
use errors::{Fallible, never_written, overflow, read_before_write};
use eval::TraceTarget;

/// Runs `program` on `inputs` in `arith`; with `trace`, records every output element's steps.
///
/// The fast executor ([`super::exec`]) runs it when it can; wherever it cannot, or the run
/// fails, the reference interpreter below runs it from the start (so errors are always the
/// reference's).
pub fn run<A: Arith>(
    program: &Program,
    inputs: &Inputs<'_>,
    arith: &A,
    trace: bool,
) -> Result<Outcome<A::Cell>, SemanticsError> {
    let allowed = super::fuel::allowed();
    if !trace && let Some((outcome, used)) = super::exec::run_within(program, inputs, arith, allowed)
    {
        super::fuel::spend(used);
        return Ok(outcome);
    }
    let (outcome, used) = reference_within(program, inputs, arith, trace, true, allowed);
    super::fuel::spend(used);
    outcome
}

/// The reference interpreter: the checked program walked statement by statement, its planned
/// loop nests run by their plans when `plans` (the generic walk everywhere otherwise).
#[cfg_attr(not(feature = "internals"), allow(dead_code))] // the tests' and fuzzers' API
pub fn reference<A: Arith>(
    program: &Program,
    inputs: &Inputs<'_>,
    arith: &A,
    trace: bool,
    plans: bool,
) -> Result<Outcome<A::Cell>, SemanticsError> {
    reference_within(program, inputs, arith, trace, plans, MAX_STEPS).0
}

/// [`reference`] within `allowed` steps, with the steps it took.
fn reference_within<A: Arith>(
    program: &Program,
    inputs: &Inputs<'_>,
    arith: &A,
    trace: bool,
    plans: bool,
    allowed: u64,
) -> (Result<Outcome<A::Cell>, SemanticsError>, u64) {
    let mut frame = Frame::new(program, inputs, arith, trace, allowed);
    frame.plans = plans;
    let ran = frame.block(&program.body).map_err(|e| *e);
    let used = allowed - frame.steps_left;
    (ran.and_then(|()| frame.finish()), used)
}

/// A tensor's storage during a run.
#[derive(Debug)]
struct Storage<'v, C> {
    dims: Vec<usize>,
    strides: Vec<usize>,
    data: Vec<Option<C>>,
    /// An input's elements (read-only: borrowed numbers, not cells).
    values: &'v [f64],
    /// Elements read at least once (for distinct-read counts).
    read: Vec<bool>,
    present: bool,
    /// With tracing: each element's steps (shared, so that reading a value's steps is cheap).
    steps: Vec<Vec<Rc<Step>>>,
}

impl<C> Storage<'_, C> {
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
            values: &[],
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
    tensors: Vec<Storage<'p, A::Cell>>,
    counts: Counts,
    steps_left: u64,
    /// The steps this run was given (see [`super::fuel`]).
    allowed: u64,
    /// With tracing: each value slot's steps, and the reads of the expression being evaluated.
    trace: bool,
    val_steps: Vec<Vec<Rc<Step>>>,
    pending: Vec<Rc<Step>>,
    pending_reads: Vec<(usize, usize)>,
    /// Scratch of a planned nest: its evaluated forms, each access's (base, step).
    forms: Vec<i64>,
    flat_steps: Vec<i64>,
    nest_vars: Vec<i64>,
    partials: Vec<i64>,
    offsets: Vec<(i64, i64)>,
    /// Per run: the fixed coefficients of every planned form, by the form's number.
    fixed_coeffs: Vec<Option<Vec<i64>>>,
    /// Planned nests run by their plans.
    plans: bool,
    /// The outer levels' variables of the innermost level being run.
    outer_vars: Vec<i64>,
}

impl<'p, A: Arith> Frame<'p, A> {
    fn new(
        program: &'p Program,
        inputs: &'p Inputs<'p>,
        arith: &'p A,
        trace: bool,
        allowed: u64,
    ) -> Self {
        let tensors = program
            .tensors
            .iter()
            .map(|tensor| match tensor.origin {
                Origin::Input(i) => match inputs.inputs.get(i).and_then(Option::as_ref) {
                    Some((dims, values)) => Storage {
                        values: values.as_slice(),
                        read: vec![false; values.len()],
                        ..Storage::new(dims.clone(), Vec::new(), true, false)
                    },
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
        Frame {
            program,
            inputs,
            arith,
            ints: vec![0; program.ints],
            vals: vec![None; program.vals.len()],
            tensors,
            counts: Counts::default(),
            steps_left: allowed,
            allowed,
            trace,
            val_steps: vec![Vec::new(); if trace { program.vals.len() } else { 0 }],
            pending: Vec::new(),
            pending_reads: Vec::new(),
            forms: Vec::new(),
            flat_steps: Vec::new(),
            nest_vars: Vec::new(),
            partials: Vec::new(),
            offsets: Vec::new(),
            fixed_coeffs: vec![None; program.forms],
            plans: true,
            outer_vars: Vec::new(),
        }
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
            let steps = storage.steps.into_iter();
            traces.push(steps.map(|s| s.into_iter().map(Rc::unwrap_or_clone).collect()).collect());
        }
        Ok(Outcome {
            outputs,
            counts,
            trace: self.trace.then_some(traces),
        })
    }

    fn step(&mut self, span: Span) -> Fallible<()> {
        self.steps(span, 1)
    }

    /// Takes `n` steps, or refuses them all before any is taken (nothing is charged then).
    fn steps(&mut self, span: Span, n: u64) -> Fallible<()> {
        if n > self.steps_left {
            return Err(Box::new(SemanticsError::budget(
                span,
                super::fuel::exceeded(self.allowed),
            )));
        }
        self.steps_left -= n;
        Ok(())
    }

    fn block(&mut self, ops: &[Op]) -> Fallible<()> {
        for op in ops {
            self.op(op)?;
        }
        Ok(())
    }

    fn op(&mut self, op: &Op) -> Fallible<()> {
        match op {
            Op::For {
                var,
                lo,
                hi,
                body,
                taps,
                span,
                plan,
            } => {
                if let Some(plan) = plan
                    && !self.trace
                    && self.plans
                    && self.planned(plan)?
                {
                    return Ok(());
                }
                let (lo, hi) = (self.int(lo)?, self.int(hi)?);
                let iterations = u64::try_from(hi.saturating_sub(lo)).unwrap_or(0);
                if iterations > self.steps_left {
                    self.steps(*span, iterations)?; // certain to exceed: refused before it starts
                }
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
                    .map(|d| -> Fallible<usize> {
                        let d = self.int(d)?;
                        usize::try_from(d).map_err(|_| -> Box<SemanticsError> {
                            Box::new(SemanticsError::run(
                                *span,
                                format!("a dimension is negative ({d})"),
                                "declare dimensions of at least 0",
                            ))
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
                // Filling the local is work: one step per element.
                self.steps(*span, len as u64)?;
                let v = self.val(init)?;
                let cell = self.arith.store(v);
                let trace = self.trace;
                self.tensors[*tensor] = Storage::new(dims, vec![Some(cell); len], true, trace);
                Ok(())
            }
        }
    }
}
