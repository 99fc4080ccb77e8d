//! An input's `values` is a constraint on its elements: the kernel must refuse an element just
//! outside it (an index one past the table, or negative), as it refuses a sample breaking a
//! shape constraint (FKC0402). Run on one admitted sample, one element moved past each end,
//! and, for a 64-bit integer input, far past them: `min + 2^32` (which an index truncated to
//! 32 bits takes for `min`) and the dtype's smallest value (which overflows a negation or an
//! added offset).

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
    /// Each input with `values`: an element just below its `min` and just above its `max` is
    /// refused on `sample` (reported once per input otherwise).
    pub(super) fn values_refused(&mut self, kernel: &Kernel<'_>, dtype: DType, sample: &Sample) {
        let bounds = self.domain.value_bounds(sample, dtype);
        let mut refused = Vec::new();
        for bound in &bounds {
            let Some(position) = kernel.inputs.iter().position(|d| d.name == bound.input) else {
                continue;
            };
            let dtype_of_input = kernel
                .inputs
                .get(position)
                .and_then(|d| d.dtype)
                .unwrap_or(dtype);
            for value in outside(bound, dtype_of_input) {
                let Ok((mut operands, params)) =
                    arguments(kernel, sample, dtype, Fill::Random(self.seed), &bounds)
                else {
                    continue;
                };
                let Some(moved) = operands
                    .get(position)
                    .and_then(Option::as_ref)
                    .and_then(|o| with_first(o, value as f64))
                else {
                    continue; // an empty input holds no element to move
                };
                operands[position] = Some(moved);
                match kernel.run(&operands, &params) {
                    CallOutcome::Outputs(_) => {
                        self.accepts_outside(kernel, dtype, sample, &bound.input, value);
                        break;
                    }
                    _ => refused.push(format!("`{}` = {value}", bound.input)),
                }
            }
        }
        if !refused.is_empty() {
            self.evidence.rows.push((
                "values outside `values` are refused".to_owned(),
                format!(
                    "{} (one element moved outside, on one admitted sample through `{}`): refused",
                    refused.join(", "),
                    kernel.symbol
                ),
            ));
        }
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

/// `operand` packed, its first element replaced by `value` (`None` when it has none).
fn with_first(operand: &Operand, value: f64) -> Option<Operand> {
    let packed = operand.packed().ok()?;
    let mut values = packed.to_f64_vec();
    *values.first_mut()? = value;
    let tensor = AnyTensor::from_f64(packed.dtype(), packed.shape(), &values).ok()?;
    Some(Operand::contiguous(tensor))
}
