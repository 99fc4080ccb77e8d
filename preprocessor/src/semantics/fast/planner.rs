//! Planning one perfect loop nest: its levels and their bounds, its index locals and accesses
//! as forms, the conditions of its innermost body as bounds on its deepest variables, its
//! updates, and which access axes need a check at which level.

use super::super::ast::{AssignOp, CmpOp};
use super::super::ir::{Bool, Int, IntKind, IntOp, Op, Val, ValKind, ValOp};
use super::affine::{
    Linear, combine, constant, fixed, int, is_zero, neg, same, same_coeffs, scale, split_slots,
};
use super::{Access, FastUpdate, FastVal, Form, Level, NestPlan, Target};
use crate::expr::Span;
use std::collections::HashMap;

/// The plan of the nest rooted at `root`, when all of it can be planned.
pub(super) fn plan_nest(root: &Op, forms: &mut usize) -> Option<NestPlan> {
    let mut planner = Planner {
        vars: Vec::new(),
        defs: HashMap::new(),
        plan: NestPlan {
            levels: Vec::new(),
            forms: Vec::new(),
            invariant: Vec::new(),
            reads: Vec::new(),
            writes: Vec::new(),
            updates: Vec::new(),
            taps: false,
            checks: Vec::new(),
        },
        first_form: *forms,
    };
    planner.level(root)?;
    planner.group_checks();
    // Taps are counted in closed form: every level's range must be a box.
    let rectangular = planner.plan.levels.iter().all(|level| {
        [level.lo, level.hi]
            .iter()
            .all(|f| planner.plan.forms[*f].coeffs.iter().all(is_zero))
    });
    if !rectangular || planner.plan.updates.is_empty() {
        return None;
    }
    *forms += planner.plan.forms.len();
    Some(planner.plan)
}

struct Planner {
    /// The nest's variables, outermost first.
    vars: Vec<usize>,
    /// Index locals defined in the nest, as forms over its variables.
    defs: HashMap<usize, Linear>,
    plan: NestPlan,
    first_form: usize,
}

impl Planner {
    /// Groups every access axis by the deepest level its index uses.
    /// Axes proven inside their tensor need no check: a loop variable over exactly the
    /// axis's range, or an index the body's own condition keeps within `0..dim`.
    fn group_checks(&mut self) {
        let depth = self.plan.levels.len();
        let mut checks = vec![Vec::new(); depth + 1];
        let accesses: Vec<Access> = self
            .plan
            .reads
            .iter()
            .chain(&self.plan.writes)
            .cloned()
            .collect();
        for (access, a) in accesses.iter().enumerate() {
            for (axis, (form, _)) in a.axes.iter().enumerate() {
                if self.proven(a.tensor, axis, *form) {
                    continue;
                }
                let deepest = self.plan.forms[*form]
                    .coeffs
                    .iter()
                    .rposition(|c| !is_zero(c));
                checks[deepest.unwrap_or(depth)].push((access, axis, *form));
            }
        }
        self.plan.checks = checks;
    }

    /// Whether `form`, an index into axis `axis` of `tensor`, is within `0..dim` wherever the
    /// innermost body runs.
    fn proven(&self, tensor: usize, axis: usize, form: usize) -> bool {
        let f = &self.plan.forms[form];
        let dim = int(IntKind::Dim { tensor, axis }, Span::default());
        // `v` of a level over `0..tensor.dim[axis]`
        let single = f.coeffs.iter().filter(|c| !is_zero(c)).count() == 1 && is_zero(&f.offset);
        if single
            && let Some(level) = f
                .coeffs
                .iter()
                .position(|c| matches!(c.kind, IntKind::Const(1)))
        {
            let l = &self.plan.levels[level];
            let (lo, hi) = (&self.plan.forms[l.lo], &self.plan.forms[l.hi]);
            if is_zero(&lo.offset) && same(&hi.offset, &dim) {
                return true;
            }
        }
        // the body's condition `0 <= index < tensor.dim[axis]`
        let low = Linear {
            coeffs: f.coeffs.clone(),
            offset: f.offset.clone(),
        };
        let high = Linear {
            coeffs: f.coeffs.iter().cloned().map(neg).collect(),
            offset: combine(
                IntOp::Sub,
                combine(IntOp::Sub, dim, f.offset.clone()),
                constant(1),
            ),
        };
        let bound = |wanted: &Linear| {
            self.plan.levels.iter().flat_map(|l| &l.bounds).any(|b| {
                let b = &self.plan.forms[*b];
                same(&b.offset, &wanted.offset) && same_coeffs(&b.coeffs, &wanted.coeffs)
            })
        };
        bound(&low) && bound(&high)
    }

    /// One level of the nest: a loop whose body is index definitions and then either the
    /// next level or the innermost body.
    fn level(&mut self, op: &Op) -> Option<()> {
        let Op::For {
            var,
            lo,
            hi,
            body,
            taps,
            ..
        } = op
        else {
            return None;
        };
        let (lo, hi) = (self.linear(lo)?, self.linear(hi)?);
        self.vars.push(*var);
        let (lo, hi) = (self.form(lo), self.form(hi));
        self.plan.levels.push(Level {
            var: *var,
            lo,
            hi,
            bounds: Vec::new(),
        });
        let definitions = body
            .iter()
            .take_while(|op| {
                matches!(
                    op,
                    Op::SetInt {
                        op: AssignOp::Set,
                        ..
                    }
                )
            })
            .count();
        for op in &body[..definitions] {
            if let Op::SetInt { slot, value, .. } = op {
                let linear = self.linear(value)?;
                self.defs.insert(*slot, linear);
            }
        }
        match &body[definitions..] {
            [next @ Op::For { .. }] => self.level(next),
            rest if !rest.iter().any(|op| matches!(op, Op::For { .. })) => {
                self.plan.taps = *taps;
                self.innermost(rest)
            }
            _ => None,
        }
    }

    /// The innermost body: updates, or one chain of `if`s (no `else`) around them.
    fn innermost(&mut self, ops: &[Op]) -> Option<()> {
        match ops {
            [
                Op::If {
                    cond,
                    then,
                    otherwise,
                },
            ] if otherwise.is_empty() => {
                self.condition(cond)?;
                let definitions = then
                    .iter()
                    .take_while(|op| {
                        matches!(
                            op,
                            Op::SetInt {
                                op: AssignOp::Set,
                                ..
                            }
                        )
                    })
                    .count();
                for op in &then[..definitions] {
                    if let Op::SetInt { slot, value, .. } = op {
                        let linear = self.linear(value)?;
                        self.defs.insert(*slot, linear);
                    }
                }
                self.innermost(&then[definitions..])
            }
            updates => {
                for op in updates {
                    self.update(op)?;
                }
                Some(())
            }
        }
    }

    fn update(&mut self, op: &Op) -> Option<()> {
        let (target, op, value, update, span) = match op {
            Op::SetVal {
                slot,
                op,
                value,
                update,
                span,
            } => (Target::Slot(*slot), *op, value, *update, *span),
            Op::Store {
                tensor,
                index,
                op,
                value,
                update,
                span,
            } => {
                let access = self.access(*tensor, index, *span)?;
                self.plan.writes.push(access);
                let target = Target::Element(self.plan.writes.len() - 1);
                (target, *op, value, *update, *span)
            }
            _ => return None,
        };
        let value = self.value(value)?;
        let ops = count_ops(&value) + u64::from(op != AssignOp::Set);
        self.plan.updates.push(FastUpdate {
            target,
            op,
            value,
            update,
            ops,
            span,
        });
        Some(())
    }

    /// Registers a form (its coefficients padded to the nest's depth later) and returns its
    /// number in the plan.
    fn form(&mut self, linear: Linear) -> usize {
        let fixed_coeffs = linear.coeffs.iter().all(fixed);
        let split = split_slots(&linear.offset);
        self.plan.forms.push(Form {
            coeffs: linear.coeffs,
            offset: linear.offset,
            fixed_coeffs,
            split,
            id: self.first_form + self.plan.forms.len(),
        });
        self.plan.forms.len() - 1
    }

    /// `e` as a linear form over the nest's variables so far, or `None` when it is not
    /// affine in them.
    fn linear(&self, e: &Int) -> Option<Linear> {
        let depth = self.vars.len();
        let free = |e: &Int| Linear {
            coeffs: vec![constant(0); depth],
            offset: e.clone(),
        };
        Some(match &e.kind {
            IntKind::Slot(slot) => {
                if let Some(level) = self.vars.iter().position(|v| v == slot) {
                    let mut coeffs = vec![constant(0); depth];
                    coeffs[level] = constant(1);
                    Linear {
                        coeffs,
                        offset: constant(0),
                    }
                } else if let Some(def) = self.defs.get(slot) {
                    let mut def = def.clone();
                    def.coeffs.resize(depth, constant(0));
                    def
                } else {
                    free(e)
                }
            }
            IntKind::Const(_)
            | IntKind::Dim { .. }
            | IntKind::Rank(_)
            | IntKind::Param { .. }
            | IntKind::Numel(_) => free(e),
            IntKind::Pick { .. } if super::affine::fixed(e) => free(e),
            IntKind::Pick { .. }
            | IntKind::Element { .. }
            | IntKind::Reduced { .. }
            | IntKind::Broadcast { .. }
            | IntKind::Along { .. } => {
                return None;
            }
            IntKind::Neg(a) => {
                let a = self.linear(a)?;
                Linear {
                    coeffs: a.coeffs.into_iter().map(neg).collect(),
                    offset: neg(a.offset),
                }
            }
            IntKind::Bin(op, a, b) => {
                let (a, b) = (self.linear(a)?, self.linear(b)?);
                let a_free = a.coeffs.iter().all(is_zero);
                let b_free = b.coeffs.iter().all(is_zero);
                match op {
                    IntOp::Add | IntOp::Sub => Linear {
                        coeffs: a
                            .coeffs
                            .into_iter()
                            .zip(b.coeffs)
                            .map(|(x, y)| combine(*op, x, y))
                            .collect(),
                        offset: combine(*op, a.offset, b.offset),
                    },
                    IntOp::Mul if a_free => scale(b, &a.offset),
                    IntOp::Mul if b_free => scale(a, &b.offset),
                    IntOp::Div | IntOp::Rem if a_free && b_free => free(&int(
                        IntKind::Bin(*op, Box::new(a.offset), Box::new(b.offset)),
                        e.span,
                    )),
                    _ => return None,
                }
            }
            IntKind::Min(items) | IntKind::Max(items) => {
                let all: Option<Vec<Linear>> = items.iter().map(|i| self.linear(i)).collect();
                let all = all?;
                if !all.iter().all(|l| l.coeffs.iter().all(is_zero)) {
                    return None;
                }
                let offsets = all.into_iter().map(|l| l.offset).collect();
                let kind = if matches!(e.kind, IntKind::Min(_)) {
                    IntKind::Min(offsets)
                } else {
                    IntKind::Max(offsets)
                };
                free(&int(kind, e.span))
            }
        })
    }

    /// The innermost body's condition: `&&` splits, conditions free of the nest's variables
    /// are kept whole, comparisons of affine indices become bounds.
    fn condition(&mut self, cond: &Bool) -> Option<()> {
        match cond {
            Bool::And(a, b) => {
                self.condition(a)?;
                self.condition(b)
            }
            Bool::Const(_) | Bool::Present(_) => {
                self.plan.invariant.push(cond.clone());
                Some(())
            }
            Bool::CompareInt(operands, ops) => {
                let linear: Option<Vec<Linear>> = operands.iter().map(|o| self.linear(o)).collect();
                let linear = linear?;
                for (op, pair) in ops.iter().zip(linear.windows(2)) {
                    let difference = Linear {
                        coeffs: pair[0]
                            .coeffs
                            .iter()
                            .zip(&pair[1].coeffs)
                            .map(|(a, b)| combine(IntOp::Sub, a.clone(), b.clone()))
                            .collect(),
                        offset: combine(IntOp::Sub, pair[0].offset.clone(), pair[1].offset.clone()),
                    };
                    self.bound(*op, difference)?;
                }
                Some(())
            }
            _ => None,
        }
    }

    /// `d op 0` as bounds `form >= 0`, each on the deepest variable it involves.
    fn bound(&mut self, op: CmpOp, d: Linear) -> Option<()> {
        let negate = |l: &Linear| Linear {
            coeffs: l.coeffs.iter().cloned().map(neg).collect(),
            offset: neg(l.offset.clone()),
        };
        let minus_one = |l: Linear| Linear {
            coeffs: l.coeffs,
            offset: combine(IntOp::Sub, l.offset, constant(1)),
        };
        let forms = match op {
            CmpOp::Ge => vec![d],
            CmpOp::Gt => vec![minus_one(d)],
            CmpOp::Le => vec![negate(&d)],
            CmpOp::Lt => vec![minus_one(negate(&d))],
            CmpOp::Eq => vec![negate(&d), d],
            CmpOp::Ne => return None,
        };
        for linear in forms {
            let deepest = linear.coeffs.iter().rposition(|c| !is_zero(c));
            let form = self.form(linear);
            match deepest {
                Some(level) => self.plan.levels[level].bounds.push(form),
                None => {
                    // free of the nest: checked once per entry, as a bound on the outermost
                    // level whose coefficient is zero (it passes or empties the range)
                    self.plan.levels.first_mut()?.bounds.push(form);
                }
            }
        }
        Some(())
    }

    fn access(&mut self, tensor: usize, index: &[Int], span: Span) -> Option<Access> {
        let mut axes = Vec::with_capacity(index.len());
        for i in index {
            let linear = self.linear(i)?;
            axes.push((self.form(linear), i.span));
        }
        Some(Access { tensor, axes, span })
    }

    fn value(&mut self, v: &Val) -> Option<FastVal> {
        Some(match &v.kind {
            ValKind::Const(c) => FastVal::Const(*c),
            ValKind::Param(_) => return None,
            ValKind::FromInt(i, dtype) => {
                let linear = self.linear(i)?;
                FastVal::FromInt(self.form(linear), *dtype)
            }
            ValKind::Slot(slot) => FastVal::Slot(*slot),
            ValKind::Read { tensor, index } => {
                let access = self.access(*tensor, index, v.span)?;
                self.plan.reads.push(access);
                FastVal::Read(self.plan.reads.len() - 1)
            }
            ValKind::Neg(a) => FastVal::Neg(Box::new(self.value(a)?)),
            ValKind::Bin(op, a, b, dtype) => {
                let (a, b) = (self.value(a)?, self.value(b)?);
                match (op, a, b) {
                    (ValOp::Mul, FastVal::Read(a), FastVal::Read(b)) => {
                        FastVal::Product(a, b, *dtype)
                    }
                    (op, a, b) => FastVal::Bin(*op, Box::new(a), Box::new(b), *dtype),
                }
            }
            ValKind::Func(func, args, dtype) => {
                let args: Option<Vec<FastVal>> = args.iter().map(|a| self.value(a)).collect();
                FastVal::Func(*func, args?, *dtype)
            }
            ValKind::Cast(a, dtype) => FastVal::Cast(Box::new(self.value(a)?), *dtype),
            ValKind::Select(..) => return None,
        })
    }
}

/// Value operations one evaluation of `v` does.
fn count_ops(v: &FastVal) -> u64 {
    match v {
        FastVal::Const(_) | FastVal::FromInt(..) | FastVal::Slot(_) | FastVal::Read(_) => 0,
        FastVal::Neg(a) | FastVal::Cast(a, _) => count_ops(a),
        FastVal::Product(..) => 1,
        FastVal::Bin(_, a, b, _) => 1 + count_ops(a) + count_ops(b),
        FastVal::Func(_, args, _) => 1 + args.iter().map(count_ops).sum::<u64>(),
    }
}
