//! Order claims: `precision.order: as_written` (or `naive_nested`) promises that every output
//! equals, bit for bit, the contract's semantics computed in the dtype in exactly the written
//! order. It is checked on operands whose exponents spread wide enough that any other order
//! changes bits.

use super::Gate;
use super::fill::Fill;
use super::run::{arguments, oracle_inputs};
use super::sample::Sample;
use super::semantic::{Elements, Mode};
use super::shrink::{Check, Keep, Replay, sample_note};
use crate::diag::Code;
use crate::providers::{CallOutcome, Kernel};
use fkc_provider::DType;

/// Samples the order claim runs on.
const ORDER_SAMPLES: usize = 8;

impl Gate<'_> {
    /// Checks `precision.order` on the first admitted samples, and on the very long reductions
    /// among the others (where a kernel may sum in blocks).
    pub(super) fn order_claim(&mut self, kernel: &Kernel<'_>, dtype: DType, admitted: &[&Sample]) {
        let Some(order) = self.raw.precision.as_ref().and_then(|p| p.order.clone()) else {
            return;
        };
        if !self.has_semantics() {
            self.not_checked(
                format!("`order: {}`", order.value),
                "the contract has no semantics to give the written order",
            );
            return;
        }
        let mut checked = 0;
        let long = admitted
            .iter()
            .skip(ORDER_SAMPLES)
            .filter(|s| super::stretch::blocked_length(s));
        for (index, sample) in admitted.iter().take(ORDER_SAMPLES).chain(long).enumerate() {
            let seed = self.seed ^ ((index as u64) << 8);
            let before = self.diagnostics.len();
            let Some(held) = self.order_one(kernel, dtype, sample, seed) else {
                continue;
            };
            if !held {
                let replay = Replay {
                    kernel,
                    dtype,
                    seed,
                    check: Check::Order,
                    keep: Keep::Admitted,
                };
                self.shrink_report(before, &replay, sample);
                return;
            }
            checked += 1;
        }
        self.evidence.rows.push((
            "summation order".to_owned(),
            format!(
                "`order: {}` — on {checked} {dtype} samples with {}, every output bit for bit the semantics computed in {dtype} in the written order",
                order.value,
                if dtype.is_float() {
                    "operand exponents spread wide"
                } else {
                    "random operands of the whole dtype"
                }
            ),
        ));
    }

    /// Checks `precision.order` on one admitted sample with operands spread wide by `seed`:
    /// `Some(false)` after reporting outputs that are not the naive nested sum bit for bit,
    /// `None` when nothing could be compared.
    pub(super) fn order_one(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
    ) -> Option<bool> {
        let order = self.raw.precision.as_ref()?.order.clone()?;
        let bounds = self.domain.value_bounds(sample, dtype);
        let fill = Fill::WideExponents(seed);
        let (ops, values) = arguments(kernel, sample, dtype, fill, &bounds).ok()?;
        let CallOutcome::Outputs(outputs) = kernel.run(&ops, &values) else {
            return None; // the admitted-domain check reports refusals and crashes
        };
        let inputs = oracle_inputs(&ops);
        let predicted: Vec<Vec<i64>> = outputs
            .iter()
            .map(|o| o.shape().iter().map(|d| *d as i64).collect())
            .collect();
        let expected =
            match self.expected(kernel, dtype, sample, &inputs, &predicted, Mode::Ordered) {
                Ok(Some(expected)) => expected,
                Ok(None) => return None,
                Err(()) => return Some(false),
            };
        let (Some(Elements::Ordered(expected)), Some(actual)) = (
            expected.outputs.into_iter().next(),
            outputs.first().map(|o| o.to_f64_vec()),
        ) else {
            return None;
        };
        let differs = actual
            .iter()
            .zip(&expected)
            .position(|(a, e)| a.to_bits() != e.to_bits() && !(a.is_nan() && e.is_nan()));
        let Some(at) = differs.or((actual.len() != expected.len()).then_some(0)) else {
            return Some(true);
        };
        let got = actual.get(at).copied().unwrap_or(f64::NAN);
        let want = expected.get(at).copied().unwrap_or(f64::NAN);
        let diagnostic = self.error(
            Code::WrongValue,
            order.span.clone(),
            format!(
                "`{}` computes {got:e} at output element {at}; the semantics computed in {dtype} in the written order give {want:e}, and the contract promises it bit for bit (`order: {}`)",
                kernel.symbol, order.value
            ),
        );
        diagnostic.notes.push(sample_note(
            &format!("{dtype}, operand exponents spread wide"),
            sample,
        ));
        diagnostic.help.push(
            "keep the documented summation order (no reassociation, no FMA, no wider accumulator), or drop the claim"
                .to_owned(),
        );
        Some(false)
    }
}
