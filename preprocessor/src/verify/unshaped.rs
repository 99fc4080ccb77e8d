//! Samples the constraints admit but the shape rules give no output (a computed dim below 1: a
//! window that does not fit): the contract says the kernel has nothing to return there, so it
//! must refuse them (or return an empty tensor). A rule that comes out empty where the kernel
//! returns a tensor — `D` made 0 when the optional inputs are absent — is caught here; such
//! samples are otherwise passed over as outside the contract.

use super::Gate;
use super::fill::Fill;
use super::run::arguments;
use super::sample::Rng;
use crate::diag::Code;
use crate::providers::{CallOutcome, Kernel};
use fkc_provider::DType;

/// Fresh candidates searched for an admitted sample the shape rules give no output.
const SEARCH: usize = 400;

/// Mixed into the gate's seed for the search's own draws.
const UNSHAPED_SEED: u64 = 0x0a11_2a4c_5e4d_0008;

impl Gate<'_> {
    /// The kernel refuses the first admitted sample (among fresh draws) on which a shape rule
    /// gives no output; `false` after reporting one it answers with a tensor (FKC0403).
    pub(super) fn unshaped_refused(&mut self, kernel: &Kernel<'_>, dtype: DType) -> bool {
        let mut rng = Rng::new(self.seed ^ UNSHAPED_SEED);
        let found = (0..SEARCH).find_map(|_| {
            let sample = self.domain.draw(&mut rng);
            let output = self.domain.unshaped(&sample, dtype)?;
            Some((sample, output))
        });
        let Some((sample, output)) = found else {
            return true;
        };
        let bounds = self.domain.value_bounds(&sample, dtype);
        let Ok((operands, values)) =
            arguments(kernel, &sample, dtype, Fill::Random(self.seed), &bounds)
        else {
            return true;
        };
        let CallOutcome::Outputs(outputs) = kernel.run(&operands, &values) else {
            return true; // refused (or failed, which the other checks meet): no output, as said
        };
        let (Some(raw), Some(got)) = (self.raw.outputs.get(output), outputs.get(output)) else {
            return true;
        };
        // An empty output (a dim of 0, as a window count of 0 gives it) is no output either.
        if got.shape().contains(&0) {
            return true;
        }
        let Some(rule) = raw.shape_rule.clone() else {
            return true;
        };
        let note = super::shrink::sample_note(dtype.name(), &sample);
        let diagnostic = self.error(
            Code::ShapeRuleViolated,
            rule.span.clone(),
            format!(
                "the shape rule `{}` gives `{}` a dim below 1 (no output) on a sample the constraints admit, but `{}` returns one of shape {:?}",
                rule.value,
                raw.name.value,
                kernel.symbol,
                got.shape()
            ),
        );
        diagnostic.notes.push(note);
        diagnostic.help.push(
            "give the output's real shape on every sample the constraints admit, or constrain the samples the kernel has no output for"
                .to_owned(),
        );
        false
    }
}
