//! Cost formulas: every one evaluates to a non-negative integer on an accepted sample,
//! `memory.host_bytes` is what was allocated, and `flops` matches the work the loop nest does.

use super::Gate;
use super::sample::Sample;
use super::shrink::sample_note;
use crate::diag::Code;
use crate::providers::Kernel;
use fkc_provider::DType;

impl Gate<'_> {
    /// `flops` equals, on this sample, 2 × the multiply-adds really performed or 2 × the taps
    /// the loop nest visits (both counted by the oracle, independently of the formula): which
    /// of the two it equals is returned, so that every sample can be held to the
    /// same one. `None` after reporting a failure; `Some(None)` when there is nothing
    /// to check.
    pub(super) fn flops_within_work(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        predicted: &[Vec<i64>],
        work: Option<(u64, u64)>,
    ) -> Option<Option<FlopsCount>> {
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
        let count = FlopsCount::of(flops, macs, visited);
        if count.equals != 0 {
            return Some(Some(count));
        }
        let span = formula.source.span.clone();
        let diagnostic = self.error(
            Code::CostFormula,
            span,
            format!(
                "`flops` is {flops}, but `{}` performs {macs} multiply-adds and its loop nest visits {visited} taps: `flops` must be 2 × one of them ({} or {})",
                kernel.symbol,
                2 * macs,
                2 * visited
            ),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(
            "count 2 flops per multiply-add performed, or 2 per tap the loop nest visits (padding taps included), on every sample".to_owned(),
        );
        None
    }

    /// `flops` equalled one count on an earlier sample and only the other on `sample`.
    pub(super) fn flops_inconsistent(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        earlier: u8,
        now: &FlopsCount,
    ) {
        let Some((_, formula)) = self
            .domain
            .contract
            .formulas
            .iter()
            .find(|(name, _)| name == "flops")
        else {
            return;
        };
        let span = formula.source.span.clone();
        let diagnostic = self.error(
            Code::CostFormula,
            span,
            format!(
                "`flops` is {} on this sample of `{}`, {}; on earlier samples it was {}: it must be the same count on every sample",
                now.flops,
                kernel.symbol,
                now.describe(),
                kind_name(earlier)
            ),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(
            "count 2 flops per multiply-add performed, or 2 per tap the loop nest visits (padding taps included), on every sample".to_owned(),
        );
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

/// Which work count a sample's `flops` equals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FlopsCount {
    pub flops: i64,
    /// 2 × the multiply-adds performed.
    pub macs2: u64,
    /// 2 × the taps the loop nest visits.
    pub taps2: u64,
    /// [`FlopsCount::MACS`] and/or [`FlopsCount::TAPS`]: the counts `flops` equals.
    pub equals: u8,
}

impl FlopsCount {
    pub const MACS: u8 = 1;
    pub const TAPS: u8 = 2;

    fn of(flops: i64, macs: u64, visited: u64) -> FlopsCount {
        let (macs2, taps2) = (2 * macs, 2 * visited);
        let value = u64::try_from(flops).ok();
        let bit = |equal: bool, bit: u8| if equal { bit } else { 0 };
        let equals = bit(value == Some(macs2), Self::MACS) | bit(value == Some(taps2), Self::TAPS);
        FlopsCount {
            flops,
            macs2,
            taps2,
            equals,
        }
    }

    /// What the count equals on this sample, in words.
    fn describe(&self) -> String {
        match self.equals {
            Self::MACS => format!(
                "2 × the multiply-adds performed ({}), not 2 × the taps visited ({})",
                self.macs2, self.taps2
            ),
            Self::TAPS => format!(
                "2 × the taps visited ({}), not 2 × the multiply-adds performed ({})",
                self.taps2, self.macs2
            ),
            _ => format!(
                "2 × the multiply-adds performed and 2 × the taps visited ({})",
                self.taps2
            ),
        }
    }
}

/// The count a set of [`FlopsCount`] bits names, in words.
pub(super) fn kind_name(equals: u8) -> &'static str {
    match equals {
        FlopsCount::MACS => "2 × the multiply-adds performed (padding taps skipped)",
        FlopsCount::TAPS => "2 × the taps the loop nest visits (padding taps included)",
        _ => "2 × the multiply-adds performed, which here is also 2 × the taps visited",
    }
}
