//! The contract's inputs must be the kernel's operands: the same names, ranks and optionality.
//! An input the contract does not mark optional must be required by the kernel: a call without
//! it is refused (one sample per input, shrunk and reproducible with `repro --check required`).

use super::Gate;
use super::fill::Fill;
use super::run::arguments;
use super::sample::Sample;
use super::shrink::sample_note;
use crate::diag::Code;
use crate::providers::{CallOutcome, Kernel};
use fkc_provider::DType;

impl Gate<'_> {
    /// The contract's inputs must be the kernel's operands (names, ranks, optionality).
    pub(super) fn operands_match(&mut self, kernel: &Kernel<'_>) -> bool {
        let mut ok = true;
        for desc in &kernel.inputs {
            let input = self.raw.inputs.iter().find(|i| i.name.value == desc.name);
            let problem = match input {
                None if desc.optional => None,
                None => Some((
                    self.raw.kernel.span.clone(),
                    format!(
                        "the kernel takes an operand `{}` that the contract does not declare",
                        desc.name
                    ),
                )),
                Some(input) if input.dtype.as_ref().map(|d| d.value) != desc.dtype => {
                    let own = |d: Option<DType>| {
                        d.map_or("in the kernel's dtype".to_owned(), |d| {
                            format!("always {d}")
                        })
                    };
                    Some((
                        input.dtypes_span.clone(),
                        format!(
                            "`{}` is {} in the kernel, but {} in the contract",
                            desc.name,
                            own(desc.dtype),
                            own(input.dtype.as_ref().map(|d| d.value))
                        ),
                    ))
                }
                Some(input) => {
                    let rank = input.rank.as_ref().map(|r| r.value);
                    let single = rank.and_then(|r| r.single());
                    (!desc.any_rank && single != Some(desc.rank)).then(|| {
                        let span = input
                            .rank
                            .as_ref()
                            .map_or(input.name.span.clone(), |r| r.span.clone());
                        (
                            span,
                            format!(
                                "`{}` has rank {} in the kernel, not {}",
                                desc.name,
                                desc.rank,
                                rank.map_or("unset".to_owned(), |r| r.to_string())
                            ),
                        )
                    })
                }
            };
            if let Some((span, message)) = problem {
                self.error(Code::OperandsMismatch, span, message)
                    .help
                    .push(format!(
                        "declare the kernel's operands: {}",
                        operand_list(kernel)
                    ));
                ok = false;
            }
        }
        for input in &self.raw.inputs {
            if !kernel.inputs.iter().any(|d| d.name == input.name.value) {
                let span = input.name.span.clone();
                self.error(
                    Code::OperandsMismatch,
                    span,
                    format!(
                        "`{}` is not an operand of `{}`",
                        input.name.value, kernel.symbol
                    ),
                )
                .help
                .push(format!(
                    "the kernel's operands are: {}",
                    operand_list(kernel)
                ));
                ok = false;
            }
        }
        ok
    }
}

impl Gate<'_> {
    /// Whether the contract marks input `name` optional.
    pub(super) fn declares_optional(&self, name: &str) -> bool {
        self.raw
            .inputs
            .iter()
            .any(|i| i.name.value == name && i.is_optional())
    }

    /// Calls `kernel` on `sample` as it is, absent inputs passed as `None`: when one of them is
    /// not optional in the contract, the call must be refused. `Some(false)` after reporting
    /// that it was accepted, `Some(true)` when refused, `None` when no such input is absent or
    /// the sample cannot be expressed as a call.
    pub(super) fn required_one(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
    ) -> Option<bool> {
        let name = sample
            .inputs
            .iter()
            .find(|(name, _, present)| !present && !self.declares_optional(name))
            .map(|(name, _, _)| name.clone())?;
        let bounds = self.domain.value_bounds(sample, dtype);
        let (operands, values) =
            arguments(kernel, sample, dtype, Fill::Random(seed), &bounds).ok()?;
        let CallOutcome::Outputs(_) = kernel.run(&operands, &values) else {
            return Some(true);
        };
        let input = self.raw.inputs.iter().find(|i| i.name.value == name)?;
        let span = input
            .optional
            .as_ref()
            .map_or(input.name.span.clone(), |o| o.span.clone());
        let diagnostic = self.error(
            Code::OperandsMismatch,
            span,
            format!(
                "`{name}` is not optional in the contract, but `{}` accepts a call without it",
                kernel.symbol
            ),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(format!(
            "mark `{name}` `optional: true`, or make the kernel require it"
        ));
        Some(false)
    }
}

/// `sample` with input `name` absent (its dims kept, so the contract still classifies it).
pub(super) fn without(sample: &Sample, name: &str) -> Sample {
    let mut absent = sample.clone();
    for (input, _, present) in &mut absent.inputs {
        if input == name {
            *present = false;
        }
    }
    absent
}

fn operand_list(kernel: &Kernel<'_>) -> String {
    kernel
        .inputs
        .iter()
        .map(|d| {
            format!(
                "`{}` (rank {}{}{})",
                d.name,
                d.rank,
                if d.optional { ", optional" } else { "" },
                d.dtype
                    .map_or(String::new(), |own| format!(", always {own}")),
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
