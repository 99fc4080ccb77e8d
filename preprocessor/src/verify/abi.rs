//! What the provider boundary itself guarantees, and each input's own claims: outputs are new,
//! owned, packed tensors (so `in_place: false`, `aliasing: none` and `layout_guarantee:
//! contiguous` hold by construction, and `in_place: true` cannot); `alignment_bytes`,
//! `access_granularity_bits`, `overhead_ns` and the device and disk memory are not observable at
//! the boundary (listed as not checked); every input's own dtype list and optionality hold for
//! that input.

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
        if let Some(granularity) = caps.and_then(|c| c.access_granularity_bits.as_ref()) {
            let claim = format!("`access_granularity_bits: {}`", granularity.value);
            self.not_checked(
                claim,
                "the boundary carries element values, not the kernel's memory accesses, so no access width can be observed",
            );
        }
        self.unobserved_costs();
        self.unobserved_promises();
    }

    /// Promises no run on this machine can observe: bits on other hardware, and that a kernel
    /// takes a faster path where a `fast_paths[].when` holds (the gate checks only that the
    /// condition holds for some admitted sample, FKC0411).
    fn unobserved_promises(&mut self) {
        let cross = crate::contract::raw::Determinism::CrossHardwareBitwise;
        if self
            .raw
            .determinism
            .as_ref()
            .is_some_and(|d| d.value == cross)
        {
            self.not_checked(
                "`determinism: cross_hardware_bitwise`",
                "one machine observes its own repeated runs (checked as `same_hardware_bitwise`), not another machine's bits",
            );
        }
        let paths = self.raw.caps.as_ref().map(|c| c.fast_paths.clone());
        for path in paths.unwrap_or_default() {
            let note = path
                .note
                .map(|n| format!(" ({})", n.value))
                .unwrap_or_default();
            self.not_checked(
                format!("`fast_paths`: a faster path where `{}`{note}", path.when.value),
                "the gate checks that the condition holds for some admitted sample (FKC0411), not which code the kernel runs there (name the code path in `caps.paths` to have it reached)",
            );
        }
    }

    /// The cost formulas no call across the boundary can observe: the time a launch takes and
    /// the memory a kernel uses beyond the host allocation of its outputs.
    fn unobserved_costs(&mut self) {
        let Some(cost) = self.raw.cost.as_ref() else {
            return;
        };
        let memory = cost.memory.as_ref();
        let formulas = [
            (
                "cost.overhead_ns",
                Some(&cost.overhead_ns),
                "the gate counts work and traffic; it does not time calls (`mdbook-fkc judge` measures the overhead, and the page shows its fit)",
            ),
            (
                "cost.memory.device_bytes",
                memory.map(|m| &m.device_bytes),
                "the boundary observes the host memory a call allocates, not device memory",
            ),
            (
                "cost.memory.disk_bytes",
                memory.map(|m| &m.disk_bytes),
                "the boundary observes the host memory a call allocates, not what it writes to disk",
            ),
        ];
        for (name, formula, why) in formulas {
            let text = formula
                .and_then(Option::as_ref)
                .and_then(|f| f.value.as_ref());
            if let Some(text) = text {
                self.not_checked(format!("`{name}: {text}`"), why);
            }
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
