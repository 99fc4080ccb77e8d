//! Running a lowered nest: its ranges and step budget on entry, its rows' bases, then its
//! levels walked and its innermost level run by its kernel (a dot product, a scatter, a fold of
//! a register, or the general updates).

use super::super::ast::AssignOp;
use super::super::fast::Target;
use super::super::ir::ValOp;
use super::super::machine::Arith;
use super::code::{Kernel, NUpdate, NV, Nest};
use super::executor::Exec;
use super::nest_walk::{Levels, inner_box, mark, run_box, scatter, solve};
use super::{Bail, Go};

impl<A: Arith> Exec<'_, A> {
    pub(super) fn nest(&mut self, nest: &Nest<A::V>) -> Go<()> {
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
