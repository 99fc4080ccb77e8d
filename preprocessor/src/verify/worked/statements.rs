//! Reading the semantics' program as a whole: every statement in turn, the scalar functions
//! they call, and whether any of them can round.

use crate::semantics::ast::AssignOp;
use crate::semantics::ir::{Func, IntKind, Op, Program, Val, ValKind};

/// Calls `f` on every statement, nested ones included.
pub fn walk(ops: &[Op], f: &mut dyn FnMut(&Op)) {
    for op in ops {
        f(op);
        match op {
            Op::For { body, .. } => walk(body, f),
            Op::If {
                then, otherwise, ..
            } => {
                walk(then, f);
                walk(otherwise, f);
            }
            _ => {}
        }
    }
}

/// The value functions a statement calls.
pub fn scan_op(op: &Op, funcs: &mut Vec<Func>) {
    match op {
        Op::SetVal { value, .. } | Op::Store { value, .. } | Op::Alloc { init: value, .. } => {
            scan_val(value, funcs);
        }
        _ => {}
    }
}

fn scan_val(val: &Val, funcs: &mut Vec<Func>) {
    match &val.kind {
        ValKind::Func(func, args, _) => {
            funcs.push(*func);
            args.iter().for_each(|a| scan_val(a, funcs));
        }
        ValKind::Neg(a) | ValKind::Cast(a, _) => scan_val(a, funcs),
        ValKind::Bin(_, a, b, _) | ValKind::Select(_, a, b) => {
            scan_val(a, funcs);
            scan_val(b, funcs);
        }
        ValKind::Const(_) | ValKind::Param(_) | ValKind::FromInt(..) => {}
        ValKind::Slot(_) | ValKind::Read { .. } => {}
    }
}

/// Whether the semantics can round at all: an arithmetic operation, a scalar function other
/// than `abs`, `max` and `min`, a cast, an index or a parameter used as a number, a constant
/// other than 0, ±1, ±∞ and small integers, or a compound update.
/// Without any (a selection, a copy), every result is exact on every sample.
pub fn rounds(program: &Program) -> bool {
    let mut rounds = false;
    walk(&program.body, &mut |op| match op {
        Op::SetVal { op, value, .. } | Op::Store { op, value, .. } => {
            rounds |= *op != AssignOp::Set || value_rounds(value);
        }
        Op::Alloc { init, .. } => rounds |= value_rounds(init),
        _ => {}
    });
    rounds
}

fn value_rounds(value: &Val) -> bool {
    match &value.kind {
        // A constant every dtype holds exactly; any other may be rounded where it is stored.
        ValKind::Const(c) => !(*c == 0.0 || c.abs() == 1.0 || c.is_infinite()),
        ValKind::Slot(_) | ValKind::Read { .. } => false,
        ValKind::Neg(a) => value_rounds(a),
        ValKind::Select(_, a, b) => value_rounds(a) || value_rounds(b),
        ValKind::Func(Func::Abs | Func::Max | Func::Min, args, _) => args.iter().any(value_rounds),
        // A small integer literal (every dtype holds up to 256 exactly).
        ValKind::FromInt(int, _) => !matches!(int.kind, IntKind::Const(c) if c.abs() <= 256),
        ValKind::Func(..) | ValKind::Bin(..) | ValKind::Cast(..) | ValKind::Param(_) => true,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::semantics::{SigTensor, Signature, check, parse};
    use fkc_provider::DType;

    /// `out = f(x)` elementwise on rank-1 tensors, checked in F16.
    fn elementwise(body: &str) -> Program {
        let tensor = |name: &str| SigTensor {
            dtype: None,
            name: name.to_owned(),
            rank: 1,
            optional: false,
        };
        let signature = Signature {
            inputs: vec![tensor("x")],
            outputs: vec![tensor("out")],
            params: Vec::new(),
            undeclared_absent: true,
        };
        let ast = parse(&format!("for i in out:\n  {body}\n")).unwrap();
        check(&ast, &signature, DType::F16).unwrap()
    }

    #[test]
    fn only_selections_copies_and_exact_constants_never_round() {
        for exact in [
            "out[i] = x[i]",
            "out[i] = max(x[i], 0)",
            "out[i] = -abs(min(x[i], 1))",
        ] {
            assert!(!rounds(&elementwise(exact)), "{exact}");
        }
        for rounding in [
            "out[i] = x[i] * 2",
            "out[i] = max(x[i], 0.1)",
            "out[i] = max(x[i], 257)",
            "out[i] = exp(x[i])",
            "out[i] = max(x[i], 0)\n  out[i] += x[i]",
        ] {
            assert!(rounds(&elementwise(rounding)), "{rounding}");
        }
    }
}
