//! Bits under bitwise claims. Where a contract claims bits (an `order`, `max_ulp: 0` or bitwise
//! determinism), a value is its bit pattern: a zero's sign counts (the values check compares
//! it), and every NaN a kernel returns must have the bits `precision.nan_bits` allows — the
//! dtype's canonical quiet NaN (`canonical`), one of the operands' NaNs with its sign and payload,
//! quieted or not (`propagate`), either of those (`either`, the default), one of the operands'
//! NaNs exactly as it was, a signalling one still signalling (`preserve`), or any NaN (`any`).

use super::Gate;
use super::run::Accepted;
use super::sample::Sample;
use super::shrink::sample_note;
use crate::diag::Code;
use crate::providers::Kernel;
use crate::semantics::float::{canonical_nan, hex_width, is_nan, layout};
use fkc_provider::DType;

/// The NaN bit patterns a contract allows in its outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NanBits {
    Canonical,
    Propagate,
    Either,
    Preserve,
    Any,
}

impl NanBits {
    fn name(self) -> &'static str {
        match self {
            NanBits::Canonical => "canonical",
            NanBits::Propagate => "propagate",
            NanBits::Either => "either",
            NanBits::Preserve => "preserve",
            NanBits::Any => "any",
        }
    }
}

/// Whether a NaN output with `bits` is one `rule` allows, given the operands' NaNs.
fn allowed(
    rule: NanBits,
    bits: u64,
    dtype: DType,
    inputs: &std::collections::BTreeSet<u64>,
) -> bool {
    let (_, _, quiet) = layout(dtype);
    let canonical = bits == canonical_nan(dtype);
    let preserved = inputs.contains(&bits);
    let propagated = preserved || inputs.iter().any(|n| n | quiet == bits);
    match rule {
        NanBits::Canonical => canonical,
        NanBits::Propagate => propagated,
        NanBits::Either => canonical || propagated,
        NanBits::Preserve => preserved,
        NanBits::Any => true,
    }
}

impl Gate<'_> {
    /// The NaN rule the contract states (`either` by default).
    pub(super) fn nan_bits(&self) -> NanBits {
        match self
            .raw
            .precision
            .as_ref()
            .and_then(|p| p.nan_bits.as_ref())
            .map(|n| n.value.as_str())
        {
            Some("canonical") => NanBits::Canonical,
            Some("propagate") => NanBits::Propagate,
            Some("preserve") => NanBits::Preserve,
            Some("any") => NanBits::Any,
            _ => NanBits::Either,
        }
    }

    /// Under a bitwise claim, every NaN the call returned has bits the NaN rule allows.
    /// `None` after reporting one that does not.
    pub(super) fn bits_hold(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        accepted: &Accepted,
    ) -> Option<()> {
        let rule = self.nan_bits();
        if !self.claims_bits() || rule == NanBits::Any {
            return Some(());
        }
        for (output, bits) in accepted.bits.iter().enumerate() {
            let offending = bits
                .iter()
                .position(|b| is_nan(*b, dtype) && !allowed(rule, *b, dtype, &accepted.input_nans));
            if let Some(at) = offending {
                let got = bits.get(at).copied().unwrap_or(0);
                self.wrong_nan(kernel, dtype, sample, (output, at, got), rule, accepted);
                return None;
            }
        }
        Some(())
    }

    fn wrong_nan(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        (output, at, got): (usize, usize, u64),
        rule: NanBits,
        accepted: &Accepted,
    ) {
        let width = hex_width(dtype);
        let precision = self.raw.precision.as_ref();
        let span = precision
            .and_then(|p| p.nan_bits.as_ref().map(|n| n.span.clone()))
            .or_else(|| precision.and_then(|p| p.order.as_ref().map(|o| o.span.clone())))
            .or_else(|| precision.and_then(|p| p.max_ulp.as_ref().map(|m| m.span.clone())))
            .unwrap_or_else(|| self.raw.kernel.span.clone());
        let canonical = canonical_nan(dtype);
        let inputs: Vec<String> = accepted
            .input_nans
            .iter()
            .take(6)
            .map(|n| format!("{n:#0width$x}"))
            .collect();
        let diagnostic = self.error(
            Code::WrongValue,
            span,
            format!(
                "`{}` stores the NaN {got:#0width$x} at element {at} of output {output}; under `nan_bits: {}` a NaN output must be {}",
                kernel.symbol,
                rule.name(),
                match rule {
                    NanBits::Canonical => format!("the canonical quiet NaN {canonical:#0width$x}"),
                    NanBits::Propagate => "one of the operands' NaNs, quieted or as it was".to_owned(),
                    NanBits::Preserve => "one of the operands' NaNs bit for bit (a signalling NaN still signalling)".to_owned(),
                    _ => format!(
                        "the canonical quiet NaN {canonical:#0width$x} or one of the operands' NaNs, quieted or as it was"
                    ),
                }
            ),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.notes.push(format!(
            "the operands' NaNs: {}",
            if inputs.is_empty() {
                "none".to_owned()
            } else {
                inputs.join(", ")
            }
        ));
        diagnostic.notes.push("the contract claims bits (an `order`, `max_ulp: 0` or bitwise determinism), so a NaN's sign and payload are part of the result".to_owned());
        diagnostic.help.push("return the NaN the rule names (the reference backend stores the canonical quiet NaN), or state the rule the kernel follows in `precision.nan_bits`".to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nans_are_told_apart_by_their_bits() {
        assert!(is_nan(0x7fc0_0000, DType::F32));
        assert!(is_nan(0xffc0_0000, DType::F32));
        assert!(!is_nan(0x7f80_0000, DType::F32), "inf is not a NaN");
        assert!(is_nan(0x7e00, DType::F16) && !is_nan(0x7c00, DType::F16));
        assert_eq!(canonical_nan(DType::F64), f64::NAN.to_bits());
        assert_eq!(canonical_nan(DType::F32), u64::from(f32::NAN.to_bits()));
        let inputs = std::iter::once(0x7fa0_0001).collect();
        assert!(allowed(
            NanBits::Propagate,
            0x7fe0_0001,
            DType::F32,
            &inputs
        ));
        assert!(!allowed(
            NanBits::Canonical,
            0x7fe0_0001,
            DType::F32,
            &inputs
        ));
        assert!(!allowed(NanBits::Either, 0xffc0_0000, DType::F32, &inputs));
        assert!(allowed(NanBits::Either, 0x7fc0_0000, DType::F32, &inputs));
        // the signalling input itself: propagated and preserved; quieted: propagated only
        assert!(allowed(
            NanBits::Propagate,
            0x7fa0_0001,
            DType::F32,
            &inputs
        ));
        assert!(allowed(NanBits::Preserve, 0x7fa0_0001, DType::F32, &inputs));
        assert!(!allowed(
            NanBits::Preserve,
            0x7fe0_0001,
            DType::F32,
            &inputs
        ));
        assert!(!allowed(
            NanBits::Preserve,
            0x7fc0_0000,
            DType::F32,
            &inputs
        ));
    }
}
