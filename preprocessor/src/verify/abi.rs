//! What the provider boundary itself guarantees, and each input's own claims: outputs are new,
//! owned, packed tensors (so `in_place: false`, `aliasing: none` and `layout_guarantee:
//! contiguous` hold by construction, and `in_place: true` cannot); `alignment_bytes` is not
//! observable at the boundary; every input's own dtype list and optionality hold for that input.

use super::Gate;
use super::sample::Sample;
use super::shrink::{Check, Keep, Replay};
use crate::diag::Code;
use crate::providers::Kernel;
use fkc_provider::DType;

impl Gate<'_> {
    /// The claims the ABI decides: shown as holding by construction, or an error when they
    /// cannot hold.
    pub(super) fn abi_claims(&mut self) {
        let caps = self.raw.caps.as_ref();
        if let Some(in_place) = caps.and_then(|c| c.in_place.as_ref())
            && in_place.value
        {
            let span = in_place.span.clone();
            self.error(
                Code::AbiClaim,
                span,
                "`in_place: true`, but an entry point receives immutable operand views and returns new tensors: no kernel behind this boundary writes into its input".to_owned(),
            )
            .help
            .push("write `in_place: false`".to_owned());
            return;
        }
        let mut held = Vec::new();
        if caps.and_then(|c| c.in_place.as_ref()).is_some() {
            held.push("`in_place: false`");
        }
        let outputs = &self.raw.outputs;
        if outputs
            .iter()
            .any(|o| o.aliasing.as_ref().is_some_and(|a| a.value == "none"))
        {
            held.push("`aliasing: none`");
        }
        if outputs.iter().any(|o| {
            o.layout_guarantee
                .as_ref()
                .is_some_and(|l| l.value == "contiguous")
        }) {
            held.push("`layout_guarantee: contiguous`");
        }
        if !held.is_empty() {
            self.evidence.rows.push((
                "outputs: ownership and layout".to_owned(),
                format!(
                    "{} hold by construction, not by a run: an entry point receives immutable operand views and returns new, owned, packed tensors",
                    held.join(", ")
                ),
            ));
        }
        if let Some(alignment) = caps.and_then(|c| c.alignment_bytes.as_ref()) {
            let claim = format!("`alignment_bytes: {}`", alignment.value);
            self.not_checked(
                claim,
                "the boundary carries element values, not addresses, so no alignment can be observed",
            );
        }
    }

    /// Each input's own dtype list: a dtype the kernel ran with every operand in it, but that
    /// one input does not declare, is a mismatch located at that input's list.
    pub(super) fn per_input_dtypes(&mut self, ran: &[(DType, String)]) {
        for (dtype, symbol) in ran {
            let silent: Vec<(String, std::ops::Range<usize>)> = self
                .raw
                .inputs
                .iter()
                .filter(|i| i.dtype.is_none() && !i.dtypes.iter().any(|d| d.value == *dtype))
                .map(|i| (i.name.value.clone(), i.dtypes_span.clone()))
                .collect();
            for (name, span) in silent {
                self.error(
                    Code::DtypeMismatch,
                    span,
                    format!("`{name}` does not declare {dtype}, but `{symbol}` ran with `{name}` in {dtype}"),
                )
                .help
                .push(format!("add {dtype} to `{name}`'s dtypes, or make the kernel refuse it"));
            }
        }
    }

    /// An input the contract does not mark optional must be required by the kernel: a call
    /// without it must be refused (a call accepted is shrunk and reported with a reproduction).
    pub(super) fn required_inputs(&mut self, kernel: &Kernel<'_>, dtype: DType, sample: &Sample) {
        let mut refused = Vec::new();
        for desc in &kernel.inputs {
            if self.declares_optional(&desc.name) {
                continue;
            }
            let absent = super::operands::without(sample, &desc.name);
            let before = self.diagnostics.len();
            match self.required_one(kernel, dtype, &absent, self.seed) {
                None => continue,
                Some(true) => refused.push(format!("`{}`", desc.name)),
                Some(false) => {
                    let replay = Replay {
                        kernel,
                        dtype,
                        seed: self.seed,
                        check: Check::Required,
                        keep: Keep::Admitted,
                    };
                    self.shrink_report(before, &replay, &absent);
                    return;
                }
            }
        }
        if !refused.is_empty() {
            self.evidence.rows.push((
                "required inputs".to_owned(),
                format!(
                    "a call without each is refused by `{}`: {}",
                    kernel.symbol,
                    refused.join(", ")
                ),
            ));
        }
    }
}
