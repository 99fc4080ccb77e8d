//! Cost formulas: every one evaluates to a non-negative integer on an accepted sample,
//! `memory.host_bytes` is what was allocated, and `flops` matches the work the loop nest does.

use super::Gate;
use super::sample::Sample;
use super::shrink::sample_note;
use crate::diag::Code;
use crate::providers::Kernel;
use fkc_provider::DType;

impl Gate<'_> {
    /// `flops` lies between 2 × the multiply-adds really performed and 2 × the taps the loop
    /// nest visits (counted by the oracle, independently of the formula). `None` after
    /// reporting a failure; `Some(None)` when there is nothing to check.
    pub(super) fn flops_within_work(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        predicted: &[Vec<i64>],
        work: Option<(u64, u64)>,
    ) -> Option<Option<(i64, u64, u64)>> {
        let Some((macs, visited)) = work else {
            return Some(None);
        };
        let Some((_, formula)) = self
            .domain
            .contract
            .formulas
            .iter()
            .find(|(name, _)| name == "flops")
        else {
            return Some(None);
        };
        let mut bindings = self.domain.bindings(sample, dtype);
        self.domain.bind_outputs(&mut bindings, predicted);
        let Some(flops) = crate::expr::eval(&formula.expr, &bindings)
            .ok()
            .and_then(|v| v.as_int())
        else {
            return Some(None); // reported by the cost check
        };
        let (low, high) = (2 * macs, 2 * visited);
        let within = u64::try_from(flops).is_ok_and(|f| (low..=high).contains(&f));
        if within {
            return Some(Some((flops, low, high)));
        }
        let span = formula.source.span.clone();
        let diagnostic = self.error(
            Code::CostFormula,
            span,
            format!("`flops` is {flops}, outside [2 × {macs} multiply-adds performed, 2 × {visited} taps visited] = [{low}, {high}] for `{}`", kernel.symbol),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic
            .help
            .push("count 2 flops per multiply-add the kernel's loop nest visits".to_owned());
        None
    }

    /// Every cost formula evaluates to a non-negative number; host_bytes is the outputs' size.
    pub(super) fn cost_holds(
        &mut self,
        sample: &Sample,
        dtype: DType,
        predicted: &[Vec<i64>],
        allocated: usize,
        kernel: &Kernel<'_>,
    ) -> bool {
        let mut bindings = self.domain.bindings(sample, dtype);
        self.domain.bind_outputs(&mut bindings, predicted);
        for (name, formula) in &self.domain.contract.formulas {
            let value = crate::expr::eval(&formula.expr, &bindings)
                .ok()
                .and_then(|v| v.as_int());
            let problem = match value {
                None => Some(format!(
                    "`{name}` cannot be evaluated on a sample `{}` accepts",
                    kernel.symbol
                )),
                Some(v) if v < 0 => Some(format!(
                    "`{name}` is negative ({v}) on a sample `{}` accepts",
                    kernel.symbol
                )),
                Some(v)
                    if name == "memory.host_bytes" && i64::try_from(allocated).ok() != Some(v) =>
                {
                    Some(format!(
                        "`memory.host_bytes` says {v} bytes, but the kernel allocated {allocated}"
                    ))
                }
                Some(_) => None,
            };
            if let Some(message) = problem {
                let span = formula.source.span.clone();
                let diagnostic = self.error(Code::CostFormula, span, message);
                diagnostic.notes.push(sample_note(dtype.name(), sample));
                diagnostic.help.push("a cost formula must evaluate to a non-negative integer on every accepted sample".to_owned());
                return false;
            }
        }
        true
    }
}
