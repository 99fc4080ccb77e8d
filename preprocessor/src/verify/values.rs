//! Values against the op kind's independent oracle: exact where claimed, otherwise within
//! Higham's bound and the authored tolerances.

use super::sample::Sample;
use super::shrink::sample_note;
use super::{Agreement, Gate, oracle};
use crate::diag::Code;
use crate::providers::Kernel;
use fkc_provider::DType;

/// The promise a value broke.
#[derive(Debug, Clone, Copy)]
pub(super) enum Claim {
    /// `max_ulp: 0`, or an exact operation.
    Exact,
    /// Higham's bound in the dtype.
    Bound(f64),
    /// The authored `max_absolute + max_relative × |exact|`.
    Authored(f64),
}

impl Gate<'_> {
    /// The values agree with the oracle: exactly where `max_ulp: 0` is claimed (or the operation
    /// is exact), otherwise within Higham's bound `γ_K·Σ|w·x|` in the dtype, and within
    /// `max_absolute` / `max_relative` when authored. Returns the worst error as a fraction of
    /// its bound (`None` after reporting a failure).
    pub(super) fn values_hold(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        inputs: &[Option<oracle::Input>],
        values: &[Vec<f64>],
        predicted: &[Vec<i64>],
    ) -> Option<Agreement> {
        let reference = self.reference(kernel, sample, inputs).ok()?;
        let (Some(reference), Some(actual)) = (reference, values.first()) else {
            return Some(Agreement {
                exact: false,
                worst: 0.0,
                flops: None,
            });
        };
        let precision = self.raw.precision.as_ref();
        let exact = precision
            .and_then(|p| p.max_ulp.as_ref())
            .and_then(|m| m.value)
            == Some(0);
        let authored = |field: Option<&crate::contract::schema::Nullable<f64>>| {
            field.and_then(|f| f.as_ref()).and_then(|f| f.value)
        };
        let max_absolute = authored(precision.map(|p| &p.max_absolute));
        let max_relative = authored(precision.map(|p| &p.max_relative));
        let gamma = oracle::gamma(reference.terms + 1, oracle::unit_roundoff(dtype));
        let slack = (reference.terms as f64 + 2.0) * oracle::smallest_subnormal(dtype);
        if actual.len() != reference.values.len() {
            self.wrong_value(
                kernel,
                dtype,
                sample,
                actual.len(),
                f64::NAN,
                f64::NAN,
                Claim::Exact,
            );
            return None;
        }
        let mut worst: f64 = 0.0;
        for (index, (&got, &want)) in actual.iter().zip(&reference.values).enumerate() {
            let error = (got - want).abs();
            let magnitude = reference.magnitude.get(index).copied().unwrap_or(0.0);
            let bound = if exact {
                0.0
            } else {
                gamma * magnitude + slack
            };
            let within_bound = error <= bound || (got.is_nan() && want.is_nan());
            // Authored tolerances combine as `allclose` does: `|error| <= atol + rtol * |exact|`.
            let tolerance = max_absolute.unwrap_or(0.0) + max_relative.unwrap_or(0.0) * want.abs();
            let within_authored =
                (max_absolute.is_none() && max_relative.is_none()) || error <= tolerance;
            let claim = match (within_bound, within_authored) {
                (true, true) => None,
                (false, _) if exact => Some(Claim::Exact),
                (false, _) => Some(Claim::Bound(bound)),
                (true, false) => Some(Claim::Authored(tolerance)),
            };
            if let Some(claim) = claim {
                self.wrong_value(kernel, dtype, sample, index, got, want, claim);
                return None;
            }
            if bound > 0.0 {
                worst = worst.max(error / bound);
            }
        }
        let exact = exact || reference.terms == 0;
        let flops = self.flops_within_work(kernel, dtype, sample, predicted, reference.work)?;
        Some(Agreement {
            exact,
            worst,
            flops,
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn wrong_value(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        index: usize,
        got: f64,
        want: f64,
        claim: Claim,
    ) {
        let precision = self.raw.precision.as_ref();
        let authored_span = precision.and_then(|p| {
            [&p.max_relative, &p.max_absolute]
                .into_iter()
                .find_map(|f| f.as_ref().map(|f| f.span.clone()))
        });
        let ulp_span = precision.and_then(|p| p.max_ulp.as_ref().map(|m| m.span.clone()));
        let span = match claim {
            Claim::Authored(_) => authored_span.or(ulp_span),
            _ => ulp_span,
        }
        .unwrap_or_else(|| self.raw.kernel.span.clone());
        let claim = match claim {
            Claim::Exact => "exactly (max_ulp: 0)".to_owned(),
            Claim::Bound(bound) => format!("within {bound:e} (γ_K·Σ|w·x| in {})", dtype.name()),
            Claim::Authored(tolerance) => {
                format!("within {tolerance:e} (max_absolute + max_relative × |exact|)")
            }
        };
        let oracle = self.named_oracle.map_or("the oracle's".to_owned(), |n| {
            format!("`{}`'s", n.kernel.symbol)
        });
        let diagnostic = self.error(
            Code::WrongValue,
            span,
            format!("`{}` computes {got:e} at output element {index}; {oracle} value is {want:e}, and the contract promises it {claim}", kernel.symbol),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic
            .help
            .push("fix the kernel, or state the precision it really has".to_owned());
    }
}
