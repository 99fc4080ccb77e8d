//! An input's `values` is a constraint on its elements: the kernel must refuse an element just
//! outside it (an index one past the table, or negative), as it refuses a sample breaking a
//! shape constraint (FKC0402). Run on the first admitted sample, each one whose output is
//! empty and a grown one (a kernel may skip its check where it has nothing to write, or in its
//! vectorised body), one element — the first, then the last — moved past each end, and, for a
//! 64-bit integer input, far past them: `min + 2^32` (which an index truncated to 32 bits takes
//! for `min`) and the dtype's smallest value (which overflows a negation or an added offset).

use super::Gate;
use super::constraints::ValueBound;
use super::fill::Fill;
use super::run::arguments;
use super::sample::Sample;
use super::shrink::sample_note;
use crate::diag::Code;
use crate::providers::{CallOutcome, Kernel};
use fkc_provider::{AnyTensor, DType, Operand};

impl Gate<'_> {
    /// Each input with `values`: an element just below its `min` and just above its `max`, put
    /// first and then last in the operand, is refused on each of `samples` (reported once per
    /// input otherwise).
    pub(super) fn values_refused(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        samples: &[&Sample],
    ) {
        let mut refused: Vec<String> = Vec::new();
        let mut accepted: Vec<String> = Vec::new();
        let mut ran = 0;
        for sample in samples {
            let bounds = self.domain.value_bounds(sample, dtype);
            let mut tried = false;
            for bound in &bounds {
                if accepted.contains(&bound.input) {
                    continue;
                }
                match self.refuses_outside(kernel, dtype, sample, &bounds, bound) {
                    Refusal::Refused(values) => {
                        tried |= !values.is_empty();
                        for value in values {
                            if !refused.contains(&value) {
                                refused.push(value);
                            }
                        }
                    }
                    Refusal::Accepted(value) => {
                        accepted.push(bound.input.clone());
                        self.accepts_outside(kernel, dtype, sample, &bound.input, value);
                    }
                }
            }
            ran += usize::from(tried);
        }
        if !refused.is_empty() && accepted.is_empty() {
            self.evidence.rows.push((
                "values outside `values` are refused".to_owned(),
                format!(
                    "{} (one element moved outside, first and then last in its operand, on {ran} admitted sample{} through `{}`: the first, each with an empty output and a grown one, where the domain has them): refused",
                    refused.join(", "),
                    if ran == 1 { "" } else { "s" },
                    kernel.symbol
                ),
            ));
        }
    }

    /// `bound`'s input given each value just outside it, at its first and at its last element,
    /// on `sample`: every one refused (what was tried), or the first one accepted.
    fn refuses_outside(
        &self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        bounds: &[ValueBound],
        bound: &ValueBound,
    ) -> Refusal {
        let Some(position) = kernel.inputs.iter().position(|d| d.name == bound.input) else {
            return Refusal::Refused(Vec::new());
        };
        let dtype_of_input = (kernel.inputs.get(position))
            .and_then(|d| d.dtype)
            .unwrap_or(dtype);
        let mut refused = Vec::new();
        for value in outside(bound, dtype_of_input) {
            for at in [At::First, At::Last] {
                let Ok((mut operands, params)) =
                    arguments(kernel, sample, dtype, Fill::Random(self.seed), bounds)
                else {
                    continue;
                };
                let Some(moved) = operands
                    .get(position)
                    .and_then(Option::as_ref)
                    .and_then(|o| with_one(o, at, value as f64))
                else {
                    continue; // an empty input holds no element to move
                };
                operands[position] = Some(moved);
                match kernel.run(&operands, &params) {
                    CallOutcome::Outputs(_) => return Refusal::Accepted(value),
                    _ => {
                        let text = format!("`{}` = {value}", bound.input);
                        if !refused.contains(&text) {
                            refused.push(text);
                        }
                    }
                }
            }
        }
        Refusal::Refused(refused)
    }

    fn accepts_outside(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        input: &str,
        value: i64,
    ) {
        let Some(span) = self
            .raw
            .inputs
            .iter()
            .find(|i| i.name.value == input)
            .and_then(|i| i.values.as_ref())
            .map(|v| v.span.clone())
        else {
            return;
        };
        let diagnostic = self.error(
            Code::OverPromise,
            span,
            format!(
                "`{}` accepts an element {value} of `{input}`, outside the contract's `values`",
                kernel.symbol
            ),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(format!(
            "make the kernel refuse `{input}` values outside `values`, or widen `values` to what it takes"
        ));
    }
}

/// The values just outside `bound`, then, for an `I64` input, the far ones (see the module
/// documentation); those a value of the dtype cannot be are left out.
fn outside(bound: &ValueBound, dtype: DType) -> Vec<i64> {
    let mut values = vec![bound.min.checked_sub(1), bound.max.checked_add(1)];
    if dtype == DType::I64 {
        values.push(bound.min.checked_add(1 << 32).filter(|v| *v > bound.max));
        values.push(Some(i64::MIN).filter(|v| *v < bound.min));
    }
    let (low, high) = dtype.int_range().unwrap_or((i128::MIN, i128::MAX));
    values
        .into_iter()
        .flatten()
        .filter(|v| (low..=high).contains(&i128::from(*v)))
        .collect()
}

/// What came of an input's values just outside its `values`.
enum Refusal {
    /// Every one refused: `` `ids` = -1 `` for each value tried.
    Refused(Vec<String>),
    /// This one was accepted.
    Accepted(i64),
}

/// Which element of an operand is moved outside its `values`.
#[derive(Debug, Clone, Copy)]
enum At {
    First,
    Last,
}

/// `operand` packed, one element replaced by `value` (`None` when it has none).
fn with_one(operand: &Operand, at: At, value: f64) -> Option<Operand> {
    let packed = operand.packed().ok()?;
    let mut values = packed.to_f64_vec();
    let slot = match at {
        At::First => values.first_mut()?,
        At::Last => values.last_mut()?,
    };
    *slot = value;
    let tensor = AnyTensor::from_f64(packed.dtype(), packed.shape(), &values).ok()?;
    Some(Operand::contiguous(tensor))
}
