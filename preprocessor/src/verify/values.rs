//! Values against the contract's semantics: bit for bit the semantics in the dtype in the
//! written order where the contract claims an order; otherwise each element within the
//! semantics' forward error bound — or, where the contract states its precision, within that
//! (`max_absolute + max_relative·|exact|`, `max_ulp`), with NaN and ±Inf wherever some order of
//! the element's sums gives them. A contract that names an `oracle` entry point is compared
//! with what that oracle computes on the same operands, within the same allowance.

use super::run::Input;
use super::sample::Sample;
use super::semantic::{Elements, Mode};
use super::shrink::sample_note;
use super::{Agreement, Gate};
use crate::diag::Code;
use crate::providers::Kernel;
use crate::semantics::{Approx, Kinds};
use fkc_provider::DType;

/// The promise a value broke.
#[derive(Debug, Clone, Copy)]
pub(super) enum Claim {
    /// `max_ulp: 0`: the exact value, rounded once into the dtype.
    Exact,
    /// Bit for bit the semantics in the dtype, in the written order.
    Ordered,
    /// The semantics' forward error bound in the dtype.
    Bound(f64),
    /// The authored `max_absolute + max_relative × |exact|`.
    Authored(f64),
    /// The authored `max_ulp: N`.
    Ulps(u64, f64),
    /// A special value where the element's sums give another.
    Special,
    /// A zero of the other sign than the semantics' exact zero.
    ZeroSign,
}

/// The precision a contract states.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stated {
    pub max_ulp: Option<u64>,
    pub max_absolute: Option<f64>,
    pub max_relative: Option<f64>,
}

impl Gate<'_> {
    pub(super) fn stated_precision(&self) -> Stated {
        let precision = self.raw.precision.as_ref();
        let authored = |field: Option<&crate::contract::schema::Nullable<f64>>| {
            field.and_then(|f| f.as_ref()).and_then(|f| f.value)
        };
        Stated {
            max_ulp: precision
                .and_then(|p| p.max_ulp.as_ref())
                .and_then(|m| m.value),
            max_absolute: authored(precision.map(|p| &p.max_absolute)),
            max_relative: authored(precision.map(|p| &p.max_relative)),
        }
    }

    /// The values agree with the semantics (and the named oracle, when there is one). Returns
    /// the worst error as a fraction of its allowance and the work counted (`None` after
    /// reporting a failure).
    pub(super) fn values_hold(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        inputs: &[Option<Input>],
        values: &[Vec<f64>],
        predicted: &[Vec<i64>],
    ) -> Option<Agreement> {
        let _ = predicted;
        // The written order where it is claimed, unless a precision is stated too (the exact
        // value is then needed; the order claim has its own check).
        let stated = self.stated_precision();
        let authored = stated.max_ulp.is_some()
            || stated.max_absolute.is_some()
            || stated.max_relative.is_some();
        // Integer arithmetic is exact: an integer dtype is compared bit for bit.
        let mode = if (self.claims_order() && !authored) || !dtype.is_float() {
            Mode::Ordered
        } else {
            Mode::Bounded
        };
        let expected = self
            .expected(kernel, dtype, sample, inputs, predicted, mode)
            .ok()?;
        let named = match self.named_oracle {
            Some(_) => Some(self.named_values(kernel, sample, inputs).ok()?),
            None => None,
        };
        let Some(expected) = expected else {
            // No semantics: only a named oracle, held to the stated precision (exactly without).
            let Some(named) = named else {
                return Some(Agreement::unchecked());
            };
            let want: Vec<Approx> = named.iter().map(|v| Approx::exact(*v)).collect();
            let worst =
                self.bounded(kernel, dtype, sample, values.first()?, &want, Some(&named))?;
            return Some(Agreement {
                checked: true,
                exact: false,
                worst,
                counts: None,
            });
        };
        let mut worst: f64 = 0.0;
        let mut exact = true;
        for (output, (got, want)) in values.iter().zip(&expected.outputs).enumerate() {
            let named = named.as_deref().filter(|_| output == 0);
            match want {
                Elements::Ordered(want) => self.ordered(kernel, dtype, sample, got, want)?,
                Elements::Bounded(want) => {
                    exact &= want.iter().all(|w| w.error == 0.0);
                    worst = worst.max(self.bounded(kernel, dtype, sample, got, want, named)?);
                }
            }
        }
        Some(Agreement {
            checked: true,
            exact: exact || mode == Mode::Ordered,
            worst,
            counts: Some(expected.counts),
        })
    }

    /// Bit for bit the order reference (any NaN matches any NaN).
    fn ordered(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        got: &[f64],
        want: &[f64],
    ) -> Option<()> {
        let differs = got
            .iter()
            .zip(want)
            .position(|(a, e)| a.to_bits() != e.to_bits() && !(a.is_nan() && e.is_nan()));
        let Some(at) = differs.or((got.len() != want.len()).then_some(0)) else {
            return Some(());
        };
        let (g, w) = (
            got.get(at).copied().unwrap_or(f64::NAN),
            want.get(at).copied().unwrap_or(f64::NAN),
        );
        self.wrong_value(kernel, dtype, sample, at, g, w, Claim::Ordered);
        None
    }

    /// Each element within its allowance; the worst error as a fraction of it.
    fn bounded(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        got: &[f64],
        want: &[Approx],
        named: Option<&[f64]>,
    ) -> Option<f64> {
        if got.len() != want.len() {
            self.wrong_value(
                kernel,
                dtype,
                sample,
                got.len(),
                f64::NAN,
                f64::NAN,
                Claim::Exact,
            );
            return None;
        }
        let stated = self.stated_precision();
        let mut worst: f64 = 0.0;
        for (index, (&g, w)) in got.iter().zip(want).enumerate() {
            let reference = named.and_then(|n| n.get(index).copied());
            match allowance(&stated, dtype, g, w, reference) {
                Ok(fraction) => worst = worst.max(fraction),
                Err(claim) => {
                    let value = reference.unwrap_or(match w.kinds {
                        Kinds::NAN => f64::NAN,
                        Kinds::PLUS_INFINITY => f64::INFINITY,
                        Kinds::MINUS_INFINITY => f64::NEG_INFINITY,
                        _ => w.value,
                    });
                    self.wrong_value(kernel, dtype, sample, index, g, value, claim);
                    return None;
                }
            }
        }
        Some(worst)
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
        let order_span = precision.and_then(|p| p.order.as_ref().map(|o| o.span.clone()));
        let span = match claim {
            Claim::Authored(_) => authored_span.or(ulp_span),
            Claim::Ordered => order_span,
            _ => ulp_span,
        }
        .unwrap_or_else(|| self.raw.kernel.span.clone());
        let order = precision
            .and_then(|p| p.order.as_ref())
            .map_or("as_written", |o| o.value.as_str());
        let promise = match claim {
            Claim::Exact => "exactly (max_ulp: 0)".to_owned(),
            Claim::Ordered => format!(
                "bit for bit: the semantics computed in {} in the written order (`order: {order}`)",
                dtype.name()
            ),
            Claim::Bound(bound) => format!(
                "within {bound:e} (the semantics' error bound in {})",
                dtype.name()
            ),
            Claim::Authored(tolerance) => {
                format!("within {tolerance:e} (max_absolute + max_relative × |exact|)")
            }
            Claim::Ulps(n, tolerance) => {
                format!("within {n} ulps of {} ({tolerance:e})", dtype.name())
            }
            Claim::Special => "as some order of its sums gives it".to_owned(),
            Claim::ZeroSign => "a zero of the sign the semantics' exact zero has".to_owned(),
        };
        let source = match (self.named_oracle, claim) {
            (Some(n), _) => format!("`{}`'s value is", n.kernel.symbol),
            (None, Claim::Ordered) => "the semantics in the written order give".to_owned(),
            (None, _) => "the semantics give".to_owned(),
        };
        let own_semantics = self
            .raw
            .semantics
            .as_ref()
            .filter(|_| self.named_oracle.is_none());
        let diagnostic = self.error(
            Code::WrongValue,
            span,
            format!("`{}` computes {got:e} at output element {index}; {source} {want:e}, and the contract promises it {promise}", kernel.symbol),
        );
        if matches!(claim, Claim::Exact | Claim::Ordered) {
            diagnostic.notes.push(format!(
                "bits in {}: the kernel's {}, the semantics' {}",
                dtype.name(),
                dtype_bits(got, dtype),
                dtype_bits(want, dtype)
            ));
        }
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        if let Some(own) = own_semantics {
            // The contract's own pseudo-code may be what is wrong: point at it too.
            let first_line = own.value.lines().next().map_or(0, str::len);
            let start = own.span.start;
            diagnostic.labels.push(crate::diag::Label {
                span: start..start + first_line.max(1),
                message: format!("{want:e} is what these semantics give"),
            });
            diagnostic.help.push(
                "if the kernel is right, the contract's `semantics` are not: fix the pseudo-code"
                    .to_owned(),
            );
        }
        diagnostic.help.push(match claim {
            Claim::Ordered => "keep the written order (no reassociation, no FMA, no wider accumulator), or drop the claim".to_owned(),
            Claim::Special => "state what the kernel does with a NaN operand (`precision.nan: propagate` or `ignore`), or fix the kernel".to_owned(),
            Claim::ZeroSign => "keep the zero's sign as the semantics compute it (`x == 0 ? 0 : …` returns +0 for -0), or write the semantics the kernel follows".to_owned(),
            _ => "fix the kernel, or state the precision it really has".to_owned(),
        });
    }
}

/// How far `got` is from `want`, as a fraction of what the contract allows, or the claim it
/// breaks. `reference`: a named oracle's value, which replaces the exact one.
fn allowance(
    stated: &Stated,
    dtype: DType,
    got: f64,
    want: &Approx,
    reference: Option<f64>,
) -> Result<f64, Claim> {
    if !got.is_finite() || !want.finite() {
        let held = match reference {
            Some(r) if r.is_nan() => got.is_nan(),
            Some(r) if !r.is_finite() => got == r,
            _ => want.admits(got),
        };
        return if held { Ok(0.0) } else { Err(Claim::Special) };
    }
    let exact = reference.unwrap_or(want.value);
    // Where the semantics give an exact zero (no rounding on the way), its sign is part of
    // the value whatever the tolerance: `gelu(-0.0)` is `-0.0`.
    let sign_known = want.error == 0.0 && exact == 0.0;
    let signs_differ = got.is_sign_negative() != exact.is_sign_negative();
    if stated.max_ulp != Some(0) && got == 0.0 && sign_known && signs_differ {
        return Err(Claim::ZeroSign);
    }
    let error = (got - exact).abs();
    let authored = stated.max_absolute.is_some() || stated.max_relative.is_some();
    match (stated.max_ulp, authored) {
        (Some(0), _) => {
            // Exactness is a claim on bits: the exact value rounded once into the dtype (a
            // correctly rounded result, as one multiply gives), and a zero's sign where the
            // exact value's is known (an exact result of the semantics).
            let correctly_rounded = crate::semantics::rounded::round(exact, dtype);
            if got == correctly_rounded && !(sign_known && signs_differ) {
                Ok(0.0)
            } else {
                Err(Claim::Exact)
            }
        }
        (Some(ulps), _) => {
            let tolerance = ulps as f64 * ulp(exact, dtype);
            fraction(error, tolerance).ok_or(Claim::Ulps(ulps, tolerance))
        }
        (None, true) => {
            let tolerance = stated.max_absolute.unwrap_or(0.0)
                + stated.max_relative.unwrap_or(0.0) * exact.abs();
            fraction(error, tolerance).ok_or(Claim::Authored(tolerance))
        }
        (None, false) => fraction(error, want.error).ok_or(Claim::Bound(want.error)),
    }
}

/// The bit pattern of `value` in `dtype` (exact for a value the dtype holds), in hex.
fn dtype_bits(value: f64, dtype: DType) -> String {
    let width = crate::semantics::float::hex_width(dtype);
    match fkc_provider::AnyTensor::from_f64(dtype, &[1], &[value]) {
        Ok(t) => format!("{:#0width$x}", t.to_bits().first().copied().unwrap_or(0)),
        Err(_) => "?".to_owned(),
    }
}

/// `error / allowed` when within it.
fn fraction(error: f64, allowed: f64) -> Option<f64> {
    (error <= allowed).then(|| if allowed > 0.0 { error / allowed } else { 0.0 })
}

/// One unit in the last place of `dtype` at `value` (the spacing of the dtype's values there;
/// the smallest subnormal's below the normal range).
pub(super) fn ulp(value: f64, dtype: DType) -> f64 {
    use fkc_provider::dtype::Format;
    let Format::Float { exponent, mantissa } = dtype.format() else {
        return 1.0; // an integer dtype's values are one apart
    };
    let (mantissa_bits, min_exponent) = (mantissa as i32, 2 - (1 << (exponent - 1)));
    let exponent = if value == 0.0 || !value.is_finite() {
        min_exponent
    } else {
        (value.abs().log2().floor() as i32).max(min_exponent)
    };
    2f64.powi(exponent - mantissa_bits)
}

impl Agreement {
    /// Nothing was compared: the contract has no semantics and no oracle.
    fn unchecked() -> Agreement {
        Agreement {
            checked: false,
            exact: false,
            worst: 0.0,
            counts: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_ulp_0_holds_the_kernel_to_the_correctly_rounded_exact_value() {
        let exact_only = Stated {
            max_ulp: Some(0),
            max_absolute: None,
            max_relative: None,
        };
        // x · x for x = 0.59032571 in F32: the exact product needs 48 bits; a kernel that
        // rounds it once is exact, its neighbour one ulp away is not.
        let x = f64::from(0.590_325_7_f32);
        let want = Approx {
            value: x * x,
            error: f64::from(f32::EPSILON) * x * x,
            kinds: Kinds::FINITE,
        };
        let rounded = f64::from((x * x) as f32);
        assert_ne!(rounded, x * x);
        assert!(allowance(&exact_only, DType::F32, rounded, &want, None).is_ok());
        let neighbour = f64::from(f32::from_bits(((x * x) as f32).to_bits() + 1));
        assert!(allowance(&exact_only, DType::F32, neighbour, &want, None).is_err());
        assert!(allowance(&exact_only, DType::F64, rounded, &want, None).is_err());
    }

    #[test]
    fn an_ulp_is_the_spacing_of_the_dtype_at_a_value() {
        assert_eq!(ulp(1.0, DType::F32), f64::from(f32::EPSILON));
        assert_eq!(ulp(1.5, DType::BF16), 2f64.powi(-7));
        assert_eq!(ulp(0.0, DType::F16), 2f64.powi(-24));
        assert_eq!(ulp(1e-40, DType::F32), 2f64.powi(-149));
        assert_eq!(ulp(1.0, DType::F64), f64::EPSILON);
        assert_eq!(ulp(1.0, DType::F8E5M2), 0.25);
        assert_eq!(ulp(0.0, DType::F8E5M2), 2f64.powi(-16));
        assert_eq!(ulp(100.0, DType::I32), 1.0);
    }
}
