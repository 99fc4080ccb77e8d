//! Cost formulas: every one evaluates to a non-negative integer on an accepted sample,
//! `memory.host_bytes` is what was allocated, and `flops` matches the work the loop nest does.

use super::Gate;
use super::sample::Sample;
use super::shrink::sample_note;
use crate::diag::Code;
use crate::providers::Kernel;
use crate::semantics::Counts;
use fkc_provider::DType;

impl Gate<'_> {
    /// A formula's value on a sample (with its outputs), when it evaluates.
    fn formula_value(
        &self,
        name: &str,
        sample: &Sample,
        dtype: DType,
        predicted: &[Vec<i64>],
    ) -> Option<(i64, std::ops::Range<usize>)> {
        let (_, formula) = self
            .domain
            .contract
            .formulas
            .iter()
            .find(|(n, _)| n == name)?;
        let mut bindings = self.domain.bindings(sample, dtype);
        self.domain.bind_outputs(&mut bindings, predicted);
        let value = crate::expr::eval(&formula.expr, &bindings).ok()?.as_int()?;
        Some((value, formula.source.span.clone()))
    }

    /// `flops` equals, on this sample, one of the work counts the semantics made (2 × the
    /// multiply-adds performed, 2 × the taps the loop nests visit, the comparisons of the
    /// reductions, or every arithmetic operation on values): which ones it equals is returned,
    /// so that every sample can be held to the same one. `None` after reporting a failure;
    /// `Some(None)` when there is nothing to check.
    pub(super) fn flops_within_work(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        predicted: &[Vec<i64>],
        counts: &Counts,
    ) -> Option<Option<FlopsCount>> {
        let Some((flops, span)) = self.formula_value("flops", sample, dtype, predicted) else {
            return Some(None); // no formula, or reported by the cost check
        };
        let count = FlopsCount::of(flops, counts);
        if count.equals != 0 {
            return Some(Some(count));
        }
        let diagnostic = self.error(
            Code::CostFormula,
            span,
            format!(
                "`flops` is {flops}, but on this sample `{}` does {}: `flops` must be one of them",
                kernel.symbol,
                count.all()
            ),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(FLOPS_HELP.to_owned());
        None
    }

    /// `flops` equalled some counts on earlier samples and none of them on `sample`.
    pub(super) fn flops_inconsistent(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        earlier: u8,
        now: &FlopsCount,
    ) {
        let Some((_, span)) = self.formula_value("flops", sample, dtype, &[]).or_else(|| {
            let (_, f) = self
                .domain
                .contract
                .formulas
                .iter()
                .find(|(n, _)| n == "flops")?;
            Some((0, f.source.span.clone()))
        }) else {
            return;
        };
        let diagnostic = self.error(
            Code::CostFormula,
            span,
            format!(
                "`flops` is {} on this sample of `{}`, which is {}; on earlier samples it was {}: it must be the same count on every sample",
                now.flops,
                kernel.symbol,
                kind_name(now.equals),
                kind_name(earlier)
            ),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(FLOPS_HELP.to_owned());
    }

    /// `bytes_moved` lies between the compulsory traffic (the distinct input elements the
    /// semantics read plus the output elements they write) and every element of the operands
    /// and outputs, in bytes. `None` after reporting a failure.
    pub(super) fn bytes_within_traffic(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        predicted: &[Vec<i64>],
        counts: &Counts,
    ) -> Option<()> {
        let Some((bytes, span)) = self.formula_value("bytes_moved", sample, dtype, predicted)
        else {
            return Some(());
        };
        let (low, high) = self.traffic(sample, predicted, counts, dtype)?;
        if (low..=high).contains(&bytes) {
            self.bytes_checked += 1;
            return Some(());
        }
        let diagnostic = self.error(
            Code::CostFormula,
            span,
            format!(
                "`bytes_moved` is {bytes}, outside [{low}, {high}] for `{}`: at least the distinct input elements read plus the outputs written, at most every element of the operands and outputs, in bytes",
                kernel.symbol
            ),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push("count each operand's elements and each output's once (× dtype_bytes, or an input's own dtype's size: 8 for `I64` ids); an optional input that is present counts too".to_owned());
        None
    }

    /// (compulsory, full) traffic of a sample in bytes, from the semantics' counts: each
    /// element in its operand's dtype (an input's own, `ids: I64`, or the kernel's).
    fn traffic(
        &self,
        sample: &Sample,
        predicted: &[Vec<i64>],
        counts: &Counts,
        dtype: DType,
    ) -> Option<(i64, i64)> {
        let semantics = self.domain.contract.semantics.as_ref()?;
        let size = |d: DType| i64::try_from(d.size_bytes()).ok();
        let bytes = |dims: &[i64], d: DType| dims.iter().product::<i64>().checked_mul(size(d)?);
        let inputs = semantics.signature.inputs.len();
        let (mut low, mut high) = (0i64, 0i64);
        for (index, input) in semantics.signature.inputs.iter().enumerate() {
            let present = sample
                .inputs
                .iter()
                .find(|(name, _, _)| *name == input.name)
                .filter(|(_, _, present)| *present);
            if let Some((_, dims, _)) = present {
                let own = input.dtype.unwrap_or(dtype);
                high = high.checked_add(bytes(dims, own)?)?;
                let read = i64::try_from(*counts.read.get(index)?).ok()?;
                low = low.checked_add(read.checked_mul(size(own)?)?)?;
            }
        }
        for (index, dims) in predicted.iter().enumerate() {
            high = high.checked_add(bytes(dims, dtype)?)?;
            let written = i64::try_from(*counts.written.get(inputs + index)?).ok()?;
            low = low.checked_add(written.checked_mul(size(dtype)?)?)?;
        }
        Some((low, high))
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

const FLOPS_HELP: &str = "count the same thing on every sample: 2 flops per multiply-add performed, 2 per tap the loop nests visit (padding taps included), 1 per comparison of a max or min reduction, or 1 per arithmetic operation on values";

/// Which work counts a sample's `flops` equals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FlopsCount {
    pub flops: i64,
    /// 2 × the multiply-adds, 2 × the taps, the comparisons, the operations.
    pub counts: [u64; 4],
    /// The counts `flops` equals, one bit each, in [`FlopsCount::counts`] order.
    pub equals: u8,
}

/// The names of the counts, in [`FlopsCount::counts`] order.
const NAMES: [&str; 4] = [
    "2 × the multiply-adds performed (padding taps skipped)",
    "2 × the taps the loop nests visit (padding taps included)",
    "the comparisons of its max/min reductions",
    "every arithmetic operation on values",
];

impl FlopsCount {
    /// Every count (before any sample narrowed them).
    pub const ALL: u8 = 15;

    fn of(flops: i64, counts: &Counts) -> FlopsCount {
        let counts = [
            2 * counts.macs,
            2 * counts.taps,
            counts.compares,
            counts.ops,
        ];
        let value = u64::try_from(flops).ok();
        let equals = counts
            .iter()
            .enumerate()
            .filter(|(_, c)| value == Some(**c))
            .fold(0, |bits, (i, _)| bits | (1 << i));
        FlopsCount {
            flops,
            counts,
            equals,
        }
    }

    /// Every count on this sample, in words.
    fn all(&self) -> String {
        NAMES
            .iter()
            .zip(self.counts)
            .map(|(name, count)| format!("{count} ({name})"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The counts a set of [`FlopsCount`] bits names, in words.
pub(super) fn kind_name(equals: u8) -> String {
    let names: Vec<&str> = NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| equals & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect();
    if names.is_empty() {
        "none of the counts".to_owned()
    } else {
        names.join(", which here is also ")
    }
}
