//! Lowering a planned loop nest: its forms' coefficients and offsets for the sample, the rows
//! it tracks (accesses, checks the intervals do not prove, bounds), the levels whose ranges are
//! solved on entry, the inner box, and the kernel its innermost level runs.

use super::super::ast::AssignOp;
use super::super::fast::{self, FastVal, NestPlan, Target};
use super::super::ir::{Func, IntOp, Origin};
use super::super::machine::Arith;
use super::code::{CE, Code, FixedRanges, IE, Kernel, NUpdate, NV, Nest};
use super::interval::{Iv, LIMIT, iv_bin};
use super::lower::Lower;
use super::{Bail, Go};

impl<A: Arith> Lower<'_, '_, A> {
    /// A planned nest, lowered: [`Code::Bail`] where the reference fails on every entry (or
    /// uses coefficients that change between entries), `Err` where some quantity of the run
    /// may overflow.
    pub(super) fn nest(&mut self, plan: &NestPlan) -> Go<Code<A::V>> {
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
