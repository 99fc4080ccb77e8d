//! Undeclared dtypes must be refused, by every entry point and by the executor. A dtype that
//! runs is shrunk to the smallest sample it still runs on and reported with a reproduction
//! (`repro --check undeclared`). An operand of another dtype than its entry point takes (an
//! `F64` tensor handed to the `F32` kernel) must be refused too, or run in its own dtype — not
//! silently converted.

use super::Gate;
use super::run::{Outcome, Runs, call};
use super::sample::Sample;
use super::shrink::{Check, Keep, Replay, sample_note};
use crate::diag::Code;
use crate::import::{Import, symbol_for};
use crate::providers::{CallOutcome, Kernel};
use fkc_provider::{AnyTensor, DType, Operand};

impl Gate<'_> {
    /// A dtype the contract does not declare must not run (the PyTorch `test_dtypes` idea).
    pub(super) fn undeclared_dtypes(
        &mut self,
        import: &Import,
        first: &Kernel<'_>,
        admitted: &[(Sample, Vec<Vec<i64>>)],
    ) {
        let Some((sample, _)) = admitted.first() else {
            return;
        };
        let declared: Vec<DType> = import.entry_points.iter().map(|e| e.dtype).collect();
        let mut refused = Vec::new();
        // only the dtypes the provider's protocol knows (a protocol 2 provider: the floats)
        let known = fkc_provider::protocol::dtypes_of(first.provider.hello().protocol);
        for dtype in known.iter().copied().filter(|d| !declared.contains(d)) {
            let before = self.diagnostics.len();
            if self.undeclared_one(first, dtype, sample, self.seed) {
                refused.push(dtype.name());
                continue;
            }
            let replay = Replay {
                kernel: first,
                dtype,
                seed: self.seed,
                check: Check::Undeclared,
                keep: Keep::Admitted,
            };
            self.shrink_report(before, &replay, sample);
        }
        if !refused.is_empty() {
            self.evidence.rows.push((
                "undeclared dtypes are refused".to_owned(),
                format!(
                    "{}: no entry point runs them and {}",
                    refused.join(", "),
                    if first.provider.description().executor {
                        "the executor rejects them"
                    } else {
                        "the provider has no executor"
                    }
                ),
            ));
        }
    }

    /// Runs `sample` in the undeclared `dtype`, through the entry point named like `first` for
    /// that dtype and through the executor; false after reporting that one of them ran it.
    pub(super) fn undeclared_one(
        &mut self,
        first: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
    ) -> bool {
        let symbol = symbol_for(&first.symbol, dtype);
        let other = symbol
            .as_deref()
            .and_then(|s| first.provider.description().entry_point(s))
            .map(|info| Kernel {
                info,
                provider: first.provider,
            });
        let via_symbol = other.is_some_and(|k| {
            matches!(
                call(&k, &self.domain, sample, dtype, seed, Runs::default()),
                Outcome::Accepted { .. }
            )
        });
        let via_executor =
            !via_symbol && super::run::executor_accepts(first, &self.domain, sample, dtype);
        if !via_symbol && !via_executor {
            return true;
        }
        let route = match symbol {
            Some(symbol) if via_symbol => format!("`{symbol}`"),
            _ => "the executor".to_owned(),
        };
        self.undeclared_runs(dtype, sample, &route);
        false
    }

    /// Reports that `route` runs the undeclared `dtype` on `sample`.
    fn undeclared_runs(&mut self, dtype: DType, sample: &Sample, route: &str) {
        let span = self
            .raw
            .inputs
            .first()
            .map_or(self.raw.kernel.span.clone(), |i| i.dtypes_span.clone());
        let diagnostic = self.error(
            Code::DtypeMismatch,
            span,
            format!("{} is not declared, but {route} runs it", dtype.name()),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(format!(
            "declare {} in every input's dtypes, or make the backend refuse it",
            dtype.name()
        ));
    }

    /// Each input of each entry point in turn given an operand of another dtype (the same
    /// values): the kernel must refuse it, or — where that input alone takes the dtype `T` —
    /// run it in that dtype (a generic kernel: its outputs of `passthrough` rule in that
    /// dtype; whether that dtype may run is the undeclared-dtype check's). A kernel that
    /// converts it instead computes in a dtype nobody asked for; one that takes a mix of dtypes
    /// runs what no dtype declares.
    pub(super) fn other_dtype_operands_refused(
        &mut self,
        kernels: &[(DType, Kernel<'_>)],
        sample: &Sample,
    ) {
        let mut held: Vec<(&str, String)> = Vec::new();
        for (dtype, kernel) in kernels {
            let known = fkc_provider::protocol::dtypes_of(kernel.provider.hello().protocol);
            let bounds = self.domain.value_bounds(sample, *dtype);
            let fill = super::fill::Fill::Random(self.seed);
            let Ok((operands, params)) =
                super::run::arguments(kernel, sample, *dtype, fill, &bounds)
            else {
                continue;
            };
            // the inputs of the entry point's dtype (not of a fixed one, such as `I64` ids)
            let typed = kernel.inputs.iter().filter(|d| d.dtype.is_none()).count();
            for (slot, operand) in operands.iter().enumerate() {
                let (Some(operand), Some(desc)) = (operand, kernel.inputs.get(slot)) else {
                    continue;
                };
                let Some((other, retyped)) = retyped(operand, known) else {
                    continue;
                };
                let mut call = operands.clone();
                call[slot] = Some(retyped);
                let outcome = match kernel.run(&call, &params) {
                    CallOutcome::Outputs(outputs) => {
                        let whole = desc.dtype.is_none() && typed == 1;
                        if !(whole && self.follows_dtype(&outputs, other)) {
                            self.other_dtype_runs(kernel, (*dtype, other), sample, &desc.name);
                            return;
                        }
                        "run in that dtype"
                    }
                    _ => "refused",
                };
                held.push((
                    outcome,
                    format!("{other} `{}` to `{}`", desc.name, kernel.symbol),
                ));
            }
        }
        if !held.is_empty() {
            self.evidence.rows.push((
                "operands of another dtype".to_owned(),
                format!(
                    "the same values, one input at a time, on one admitted sample — {}",
                    super::grouped_by_outcome(held)
                ),
            ));
        }
    }

    /// Whether every output of `passthrough` rule is in `dtype`.
    fn follows_dtype(&self, outputs: &[AnyTensor], dtype: DType) -> bool {
        let rules = &self.domain.contract.outputs;
        outputs
            .iter()
            .zip(rules)
            .all(|(out, rule)| rule.dtype_from.is_none() || out.dtype() == dtype)
    }

    /// Reports that `kernel` ran with its input `input` in `other` instead of its own dtype.
    fn other_dtype_runs(
        &mut self,
        kernel: &Kernel<'_>,
        (dtype, other): (DType, DType),
        sample: &Sample,
        input: &str,
    ) {
        let span = self
            .raw
            .inputs
            .iter()
            .find(|i| i.name.value == input)
            .map_or(self.raw.kernel.span.clone(), |i| i.dtypes_span.clone());
        let diagnostic = self.error(
            Code::DtypeMismatch,
            span,
            format!(
                "`{}` runs with `{input}` in {other}, but its entry point takes {} there",
                kernel.symbol,
                kernel
                    .inputs
                    .iter()
                    .find(|d| d.name == input)
                    .and_then(|d| d.dtype)
                    .unwrap_or(dtype)
            ),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(format!(
            "make the kernel refuse an operand whose dtype is not its entry point's, or compute in that operand's dtype (converting {other} silently computes in a dtype the caller did not ask for)"
        ));
    }
}

/// `operand`'s values in another dtype the protocol carries: a float of another width for a
/// float (the conversion a kernel is tempted to make), else another integer or a float.
fn retyped(operand: &Operand, known: &[DType]) -> Option<(DType, Operand)> {
    let packed = operand.packed().ok()?;
    let own = packed.dtype();
    let preferred: &[DType] = if own.is_float() {
        &[DType::F64, DType::F32, DType::F16]
    } else {
        &[DType::I32, DType::I64, DType::F32]
    };
    let other = preferred
        .iter()
        .copied()
        .find(|d| *d != own && known.contains(d))?;
    let tensor = AnyTensor::from_f64(other, packed.shape(), &packed.to_f64_vec()).ok()?;
    Some((other, Operand::contiguous(tensor)))
}
