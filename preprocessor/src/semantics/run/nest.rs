//! Running a planned loop nest by its plan: its forms evaluated once per entry (their fixed
//! coefficients once per run), its taps counted in closed form, each level's range cut to where
//! its bounds pass, every access checked at both ends of each innermost range, and only the
//! updates run, with a base and a step per access.

use super::super::ast::AssignOp;
use super::super::error::SemanticsError;
use super::super::fast::{self, FastVal, NestPlan};
use super::super::ir::ValOp;
use super::super::machine::Arith;
use super::Frame;
use super::errors::{Fallible, absent, overflow, read_before_write};
use crate::expr::Span;

impl<A: Arith> Frame<'_, A> {
    /// Runs a loop nest by its plan; false when it leaves this entry to the generic walk (a
    /// budget the generic walk then reports).
    pub(super) fn planned(&mut self, plan: &NestPlan) -> Fallible<bool> {
        let mut forms = std::mem::take(&mut self.forms);
        // A form that cannot be evaluated (a division by zero in an index or a divisor) may
        // belong to a nest that runs no iteration: the plain loop evaluates it only where it
        // runs, and reports it there.
        let result = match self.evaluate_forms(plan, &mut forms) {
            Ok(()) => self.run_nest(plan, &forms),
            Err(_) => Ok(false),
        };
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
                super::super::fuel::exceeded(self.allowed),
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
