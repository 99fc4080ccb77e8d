//! The interpreter: one checked program, run on one sample in one arithmetic ([`Arith`]): in
//! `f64` with a forward error bound and the special values it may give (the oracle,
//! [`super::exact`]), or in the dtype in exactly the written order ([`super::rounded`]). Every
//! run also counts the work (multiply-adds, taps, comparisons, arithmetic, distinct elements
//! read and written) and, when asked, traces which input elements each output element was made
//! from. Indices are checked on every access, elements read before they are written and output
//! elements never written are errors located in the pseudo-code, and a run is bounded in steps
//! and memory.

use super::ast::AssignOp;
use super::error::SemanticsError;
use super::fast::{self, FastVal, NestPlan};
use super::ir::ParamValue;
use super::ir::{Bool, Func, Int, IntKind, IntOp, Op, Origin, Program, Val, ValKind, ValOp};
use super::machine::{Arith, Counts, Inputs, MAX_LOCAL_ELEMENTS, MAX_STEPS, Outcome, Step};
use crate::expr::Span;

/// A step of a run that may fail (boxed: the error path is cold, the success path hot).
type Fallible<T> = Result<T, Box<SemanticsError>>;

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
    if !trace && let Some(outcome) = super::exec::run(program, inputs, arith) {
        return Ok(outcome);
    }
    reference(program, inputs, arith, trace, true)
}

/// The reference interpreter: the checked program walked statement by statement, its planned
/// loop nests run by their plans when `plans` (the generic walk everywhere otherwise).
pub fn reference<A: Arith>(
    program: &Program,
    inputs: &Inputs<'_>,
    arith: &A,
    trace: bool,
    plans: bool,
) -> Result<Outcome<A::Cell>, SemanticsError> {
    let mut frame = Frame::new(program, inputs, arith, trace);
    frame.plans = plans;
    frame.block(&program.body).map_err(|e| *e)?;
    frame.finish()
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
    steps: Vec<Vec<Step>>,
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
    /// With tracing: each value slot's steps, and the reads of the expression being evaluated.
    trace: bool,
    val_steps: Vec<Vec<Step>>,
    pending: Vec<Step>,
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
    fn new(program: &'p Program, inputs: &'p Inputs<'p>, arith: &'p A, trace: bool) -> Self {
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
            steps_left: MAX_STEPS,
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
            traces.push(storage.steps);
        }
        Ok(Outcome {
            outputs,
            counts,
            trace: self.trace.then_some(traces),
        })
    }

    fn step(&mut self, span: Span) -> Fallible<()> {
        if self.steps_left == 0 {
            return Err(Box::new(SemanticsError::budget(
                span,
                format!("the pseudo-code ran more than {MAX_STEPS} steps on one sample"),
            )));
        }
        self.steps_left -= 1;
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
                if u64::try_from(hi.saturating_sub(lo)).unwrap_or(0) > self.steps_left {
                    self.steps_left = 0;
                    self.step(*span)?; // certain to exceed the budget: refused before it starts
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
                let v = self.val(init)?;
                let cell = self.arith.store(v);
                let trace = self.trace;
                self.tensors[*tensor] = Storage::new(dims, vec![Some(cell); len], true, trace);
                Ok(())
            }
        }
    }

    /// Runs a loop nest by its plan; false when it leaves this entry to the generic walk (a
    /// budget the generic walk then reports).
    fn planned(&mut self, plan: &NestPlan) -> Fallible<bool> {
        let mut forms = std::mem::take(&mut self.forms);
        let evaluated = self.evaluate_forms(plan, &mut forms);
        let result = evaluated.and_then(|()| self.run_nest(plan, &forms));
        self.forms = forms;
        result
    }

    /// Every form's coefficients (cached per run when fixed) and offset, `depth + 1` numbers
    /// per form.
    fn evaluate_forms(&mut self, plan: &NestPlan, out: &mut Vec<i64>) -> Fallible<()> {
        let depth = plan.levels.len();
        out.clear();
        out.resize(plan.forms.len() * (depth + 1), 0);
        for (index, form) in plan.forms.iter().enumerate() {
            let row = &mut out[index * (depth + 1)..(index + 1) * (depth + 1)];
            let cached = self.fixed_coeffs.get(form.id).and_then(Option::as_ref);
            let (Some(cached), true, Some((terms, _))) = (cached, form.fixed_coeffs, &form.split)
            else {
                // evaluated whole (and cached for the run when fixed)
                for (slot, coeff) in row.iter_mut().zip(&form.coeffs) {
                    *slot = self.int(coeff)?;
                }
                row[depth] = self.int(&form.offset)?;
                if form.fixed_coeffs
                    && let Some((terms, rest)) = &form.split
                {
                    let mut cache: Vec<i64> = row[..form.coeffs.len()].to_vec();
                    for (_, k) in terms {
                        cache.push(self.int(k)?);
                    }
                    cache.push(self.int(rest)?);
                    if self.fixed_coeffs.len() <= form.id {
                        self.fixed_coeffs.resize(form.id + 1, None);
                    }
                    self.fixed_coeffs[form.id] = Some(cache);
                }
                continue;
            };
            // The cache holds the coefficients, each slot's factor, then the rest.
            let levels = form.coeffs.len();
            row[..levels].copy_from_slice(&cached[..levels]);
            let mut offset = cached[cached.len() - 1];
            for ((slot, _), k) in terms.iter().zip(&cached[levels..]) {
                offset = k
                    .checked_mul(self.ints[*slot])
                    .and_then(|t| t.checked_add(offset))
                    .ok_or_else(|| overflow(form.offset.span))?;
            }
            row[depth] = offset;
        }
        Ok(())
    }

    fn run_nest(&mut self, plan: &NestPlan, forms: &[i64]) -> Fallible<bool> {
        let depth = plan.levels.len();
        let stride = depth + 1;
        // The nest is a box: its taps in closed form.
        let mut iterations: u64 = 1;
        for level in &plan.levels {
            let (lo, hi) = (
                forms[level.lo * stride + depth],
                forms[level.hi * stride + depth],
            );
            iterations =
                iterations.saturating_mul(u64::try_from(hi.saturating_sub(lo)).unwrap_or(0));
        }
        if iterations > self.steps_left {
            // certain to exceed the budget: refused before it starts
            return Err(Box::new(SemanticsError::budget(
                this_span(plan),
                format!("the pseudo-code ran more than {MAX_STEPS} steps on one sample"),
            )));
        }
        if iterations.saturating_mul(1 + plan.updates.len() as u64) > self.steps_left {
            return Ok(false);
        }
        self.steps_left -= iterations;
        if plan.taps {
            self.counts.taps += iterations;
        }
        for cond in &plan.invariant {
            if !self.condition(cond)? {
                return Ok(true);
            }
        }
        // Each access's flat offset: a base, and a step per level.
        let mut flat = std::mem::take(&mut self.flat_steps);
        flat.clear();
        for access in plan.reads.iter().chain(&plan.writes) {
            let storage = &self.tensors[access.tensor];
            if !storage.present {
                self.flat_steps = flat;
                return Err(absent(
                    &self.program.tensors[access.tensor].name,
                    access.span,
                ));
            }
            let start = flat.len();
            flat.resize(start + stride, 0);
            for ((form, span), axis_stride) in access.axes.iter().zip(&storage.strides) {
                let s = *axis_stride as i64;
                for (slot, value) in flat[start..]
                    .iter_mut()
                    .zip(&forms[form * stride..(form + 1) * stride])
                {
                    match value.checked_mul(s).and_then(|v| v.checked_add(*slot)) {
                        Some(sum) => *slot = sum,
                        None => {
                            self.flat_steps = flat;
                            return Err(overflow(*span));
                        }
                    }
                }
            }
        }
        // Tracked rows: every access's flat offset, then every level's bound forms; each row
        // its coefficients per level and its base. `partial` holds each row's value with the
        // outer levels' variables applied, level by level.
        let accesses = flat.len() / stride;
        for level in &plan.levels {
            for form in &level.bounds {
                flat.extend_from_slice(&forms[form * stride..(form + 1) * stride]);
            }
        }
        let rows = flat.len() / stride;
        let mut partial = std::mem::take(&mut self.partials);
        partial.clear();
        partial.resize((depth + 1) * rows, 0);
        for (row, value) in flat.chunks(stride).zip(partial.iter_mut()) {
            *value = row[depth];
        }
        let mut vars = std::mem::take(&mut self.nest_vars);
        vars.clear();
        vars.resize(depth, 0);
        let nest = Nest {
            plan,
            forms,
            rows: &flat,
            accesses,
        };
        let result = self
            .check_axes(plan, forms, depth, &vars, None)
            .and_then(|()| self.walk(&nest, 0, accesses, &mut vars, &mut partial));
        self.flat_steps = flat;
        self.nest_vars = vars;
        self.partials = partial;
        result.map(|()| true)
    }

    /// The axes whose deepest variable is `level`'s (`depth`: none) inside their tensors at
    /// `vars` — with `ends`, at the innermost range's both ends.
    fn check_axes(
        &self,
        plan: &NestPlan,
        forms: &[i64],
        level: usize,
        vars: &[i64],
        ends: Option<(i64, i64)>,
    ) -> Fallible<()> {
        let depth = plan.levels.len();
        let stride = depth + 1;
        for &(access, axis, form) in &plan.checks[level] {
            let (tensor, span) = match plan.reads.get(access) {
                Some(read) => (read.tensor, read.axes[axis].1),
                None => {
                    let write = &plan.writes[access - plan.reads.len()];
                    (write.tensor, write.axes[axis].1)
                }
            };
            let row = &forms[form * stride..(form + 1) * stride];
            let value_at = |vars: &[i64]| {
                vars.iter().zip(row).try_fold(row[depth], |sum, (v, c)| {
                    sum.checked_add(c.checked_mul(*v)?)
                })
            };
            let dim = self.tensors[tensor].dims.get(axis).copied().unwrap_or(0) as i64;
            let points = match ends {
                Some((first, last)) => {
                    // vars[level] is not set yet: the value without it, plus each end's term
                    let rest = vars[..level]
                        .iter()
                        .zip(row)
                        .try_fold(row[depth], |sum, (v, c)| {
                            sum.checked_add(c.checked_mul(*v)?)
                        });
                    let at =
                        |end: i64| rest.and_then(|r| r.checked_add(row[level].checked_mul(end)?));
                    [Some(at(first)), Some(at(last))]
                }
                None => [Some(value_at(vars)), None],
            };
            for index in points.into_iter().flatten() {
                let index = index.ok_or_else(|| overflow(span))?;
                if !(0..dim).contains(&index) {
                    let name = &self.program.tensors[tensor].name;
                    return Err(Box::new(SemanticsError::run(
                        span,
                        format!(
                            "index {index} is outside `{name}` on axis {axis} (`{name}.dim[{axis}]` is {dim})"
                        ),
                        "guard the access with an `if` on its indices, or fix the index arithmetic",
                    )));
                }
            }
        }
        Ok(())
    }

    /// Level `level` of the nest, its range cut to where its bounds pass; `first_bound` is
    /// the tracked row of this level's first bound, and `partial` holds every tracked row's
    /// value at this level (then the deeper levels' room).
    fn walk(
        &mut self,
        nest: &Nest<'_>,
        level: usize,
        first_bound: usize,
        vars: &mut [i64],
        partial: &mut [i64],
    ) -> Fallible<()> {
        let plan = nest.plan;
        let depth = plan.levels.len();
        let stride = depth + 1;
        let rows = nest.rows.len() / stride;
        let this = &plan.levels[level];
        let (lo, hi) = (
            nest.forms[this.lo * stride + depth],
            nest.forms[this.hi * stride + depth],
        );
        let (here, deeper) = partial.split_at_mut(rows);
        let (from, to) = if this.bounds.is_empty() {
            (lo, hi)
        } else {
            let bounds = (first_bound..first_bound + this.bounds.len())
                .map(|row| (nest.rows[row * stride + level], here[row]));
            fast::solve(lo, hi, bounds).ok_or_else(|| overflow(this_span(plan)))?
        };
        if from >= to {
            return Ok(());
        }
        let checked = !plan.checks[level].is_empty();
        if level + 1 == depth {
            if checked {
                self.check_axes(plan, nest.forms, level, vars, Some((from, to - 1)))?;
            }
            let mut offsets = std::mem::take(&mut self.offsets);
            offsets.clear();
            for (access, base) in here.iter().take(nest.accesses).enumerate() {
                offsets.push((*base, nest.rows[access * stride + level]));
            }
            let result = if self.dot(plan, &offsets, from, to) {
                Ok(())
            } else {
                self.outer_vars.clear();
                self.outer_vars.extend_from_slice(&vars[..level]);
                (from..to).try_for_each(|v| self.updates(plan, v, &offsets))
            };
            self.offsets = offsets;
            return result;
        }
        let next_bound = first_bound + this.bounds.len();
        for v in from..to {
            vars[level] = v;
            if checked {
                self.check_axes(plan, nest.forms, level, vars, None)?;
            }
            for (row, (next, value)) in deeper[..rows].iter_mut().zip(here.iter()).enumerate() {
                *next = nest.rows[row * stride + level]
                    .checked_mul(v)
                    .and_then(|t| t.checked_add(*value))
                    .ok_or_else(|| overflow(this_span(plan)))?;
            }
            self.walk(nest, level + 1, next_bound, vars, deeper)?;
        }
        Ok(())
    }

    /// The innermost body `acc += a[…] * b[…]` over two inputs, run as one dot product with
    /// the accumulator held in a register; false when the body is another.
    fn dot(&mut self, plan: &NestPlan, offsets: &[(i64, i64)], from: i64, to: i64) -> bool {
        let [update] = plan.updates.as_slice() else {
            return false;
        };
        let (fast::Target::Slot(slot), AssignOp::Add, FastVal::Product(a, b, dtype)) =
            (update.target, update.op, &update.value)
        else {
            return false;
        };
        let (ta, tb) = (plan.reads[*a].tensor, plan.reads[*b].tensor);
        if self.tensors[ta].values.is_empty() || self.tensors[tb].values.is_empty() || ta == tb {
            return false;
        }
        let Some(mut cell) = self.vals[slot].take() else {
            return false;
        };
        let ((ba, sa), (bb, sb)) = (offsets[*a], offsets[*b]);
        let n = (to - from) as u64;
        {
            let (xs, ws) = (self.tensors[ta].values, self.tensors[tb].values);
            self.arith.dot(
                &mut cell,
                xs,
                (ba + sa * from, sa),
                ws,
                (bb + sb * from, sb),
                n as usize,
                *dtype,
            );
        }
        for (tensor, (base, step)) in [(ta, (ba, sa)), (tb, (bb, sb))] {
            let read = &mut self.tensors[tensor].read;
            for v in from..to {
                if let Some(r) = read.get_mut((base + step * v) as usize) {
                    *r = true;
                }
            }
        }
        self.vals[slot] = Some(cell);
        self.counts.ops += update.ops * n;
        self.counts.macs += u64::from(update.update.mac) * n;
        self.steps_left = self.steps_left.saturating_sub(n);
        true
    }

    /// The innermost body's updates at `v`.
    fn updates(&mut self, plan: &NestPlan, v: i64, offsets: &[(i64, i64)]) -> Fallible<()> {
        let arith = self.arith;
        let reads = plan.reads.len();
        for update in &plan.updates {
            if let (AssignOp::Add, FastVal::Product(a, b, dtype)) = (update.op, &update.value) {
                // a multiply-add: the taps of a convolution or a matrix product
                let (x, w) = (
                    self.read_at(plan, *a, v, offsets)?,
                    self.read_at(plan, *b, v, offsets)?,
                );
                self.counts.ops += update.ops;
                self.counts.macs += u64::from(update.update.mac);
                self.steps_left = self.steps_left.saturating_sub(1);
                let cell = match update.target {
                    fast::Target::Slot(slot) => self.vals[slot].as_mut(),
                    fast::Target::Element(write) => {
                        let (base, step) = offsets[reads + write];
                        let tensor = plan.writes[write].tensor;
                        self.tensors[tensor]
                            .data
                            .get_mut((base + step * v) as usize)
                            .and_then(Option::as_mut)
                    }
                };
                let Some(cell) = cell else {
                    return Err(read_before_write(update.span, "the element it updates"));
                };
                arith.mac(cell, x, w, *dtype);
                continue;
            }
            let value = self.fast_val(&update.value, v, plan, offsets)?;
            self.counts.ops += update.ops;
            self.counts.macs += u64::from(update.update.mac);
            self.counts.compares += u64::from(update.update.compare);
            self.steps_left = self.steps_left.saturating_sub(1);
            match update.target {
                fast::Target::Slot(slot) => {
                    let dtype = self.program.vals[slot];
                    match (update.op, &mut self.vals[slot]) {
                        (AssignOp::Set, cell) => *cell = Some(arith.store(value)),
                        (op, Some(cell)) => arith.update(cell, op, value, dtype),
                        (_, None) => return Err(read_before_write(update.span, "this local")),
                    }
                }
                fast::Target::Element(write) => {
                    let access = &plan.writes[write];
                    let (base, step) = offsets[reads + write];
                    let flat = (base + step * v) as usize;
                    let dtype = self.program.tensors[access.tensor].dtype;
                    let storage = &mut self.tensors[access.tensor];
                    match (update.op, storage.data.get_mut(flat)) {
                        (AssignOp::Set, Some(cell)) => *cell = Some(arith.store(value)),
                        (op, Some(Some(cell))) => arith.update(cell, op, value, dtype),
                        _ => {
                            let name = &self.program.tensors[access.tensor].name;
                            return Err(read_before_write(
                                update.span,
                                &format!("this element of `{name}`"),
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Read number `read` of a nest at `v`.
    #[inline]
    fn read_at(
        &mut self,
        plan: &NestPlan,
        read: usize,
        v: i64,
        offsets: &[(i64, i64)],
    ) -> Fallible<A::V> {
        let access = &plan.reads[read];
        let (base, step) = offsets[read];
        let flat = (base + step * v) as usize;
        let dtype = self.program.tensors[access.tensor].dtype;
        let storage = &mut self.tensors[access.tensor];
        if let Some(value) = storage.values.get(flat) {
            storage.read[flat] = true;
            return Ok(self.arith.input(*value));
        }
        let Some(Some(cell)) = storage.data.get(flat) else {
            let name = &self.program.tensors[access.tensor].name;
            return Err(read_before_write(
                access.span,
                &format!("this element of `{name}`"),
            ));
        };
        storage.read[flat] = true;
        Ok(self.arith.load(cell, dtype))
    }

    fn fast_val(
        &mut self,
        e: &FastVal,
        v: i64,
        plan: &NestPlan,
        offsets: &[(i64, i64)],
    ) -> Fallible<A::V> {
        let arith = self.arith;
        Ok(match e {
            FastVal::Const(c) => arith.constant(*c),
            FastVal::FromInt(form, dtype) => {
                let form = &plan.forms[*form];
                // rare (an index used as a number): evaluated whole
                let mut index = self.int(&form.offset)?;
                // the outer levels' variables (the walk's), then the innermost's
                let vars = self.outer_vars.iter().copied().chain([v]);
                for (coeff, var) in form.coeffs.iter().zip(vars) {
                    index = self
                        .int(coeff)?
                        .checked_mul(var)
                        .and_then(|c| c.checked_add(index))
                        .ok_or_else(|| overflow(form.offset.span))?;
                }
                arith.index(index, *dtype)
            }
            FastVal::Slot(slot) => {
                let Some(cell) = &self.vals[*slot] else {
                    return Err(read_before_write(Span::default(), "a local"));
                };
                arith.load(cell, self.program.vals[*slot])
            }
            FastVal::Read(read) => self.read_at(plan, *read, v, offsets)?,
            FastVal::Neg(a) => {
                let a = self.fast_val(a, v, plan, offsets)?;
                arith.neg(a)
            }
            FastVal::Product(a, b, dtype) => {
                let a = self.read_at(plan, *a, v, offsets)?;
                let b = self.read_at(plan, *b, v, offsets)?;
                arith.binary(ValOp::Mul, a, b, *dtype)
            }
            FastVal::Bin(op, a, b, dtype) => {
                let a = self.fast_val(a, v, plan, offsets)?;
                let b = self.fast_val(b, v, plan, offsets)?;
                arith.binary(*op, a, b, *dtype)
            }
            FastVal::Func(func, args, dtype) => {
                let mut values = [arith.constant(0.0); 2];
                for (slot, arg) in values.iter_mut().zip(args) {
                    *slot = self.fast_val(arg, v, plan, offsets)?;
                }
                self.count_nan_meeting(*func, &values);
                arith.func(*func, &values[..args.len().min(2)], *dtype)
            }
            FastVal::Cast(a, dtype) => {
                let a = self.fast_val(a, v, plan, offsets)?;
                arith.cast(a, *dtype)
            }
        })
    }

    /// Counts a `max`/`min` where a NaN meets a number.
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

    fn condition(&mut self, cond: &Bool) -> Fallible<bool> {
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

    fn int(&self, e: &Int) -> Fallible<i64> {
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
    fn flat(&self, tensor: usize, index: &[Int], span: Span) -> Fallible<usize> {
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

    fn val(&mut self, e: &Val) -> Fallible<A::V> {
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

/// A nest entry's evaluated data.
struct Nest<'n> {
    plan: &'n NestPlan,
    forms: &'n [i64],
    /// Tracked rows (accesses, then bounds), each its coefficients per level and its base.
    rows: &'n [i64],
    accesses: usize,
}

/// Where a nest's arithmetic overflowed (the nest's first update).
fn this_span(plan: &NestPlan) -> Span {
    plan.updates.first().map_or(Span::default(), |u| u.span)
}

enum TraceTarget {
    Slot(usize),
    Element(usize, usize),
}

fn overflow(span: Span) -> Box<SemanticsError> {
    Box::new(SemanticsError::run(
        span,
        "index arithmetic overflows 64 bits",
        "keep index arithmetic within the tensors' sizes",
    ))
}

fn absent(name: &str, span: Span) -> Box<SemanticsError> {
    Box::new(SemanticsError::run(
        span,
        format!("`{name}` is absent on this sample"),
        format!("guard its use with `if present({name}):`"),
    ))
}

fn read_before_write(span: Span, what: &str) -> Box<SemanticsError> {
    Box::new(SemanticsError::run(
        span,
        format!("{what} is read before it is written"),
        "give it a first value with `=` before reading it or updating it with `+=`",
    ))
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
