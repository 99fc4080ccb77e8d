//! The contract's inputs must be the kernel's operands: the same names, ranks and optionality.

use super::Gate;
use crate::diag::Code;
use crate::providers::Kernel;

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
                Some(input) => {
                    let rank = input.rank.as_ref().map(|r| r.value);
                    (!desc.any_rank && rank != Some(desc.rank as u64)).then(|| {
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

fn operand_list(kernel: &Kernel<'_>) -> String {
    kernel
        .inputs
        .iter()
        .map(|d| {
            format!(
                "`{}` (rank {}{})",
                d.name,
                d.rank,
                if d.optional { ", optional" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
