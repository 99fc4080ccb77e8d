//! Output rules: as many outputs as declared, each with the shape and dtype its rules give.

use super::Gate;
use super::sample::Sample;
use super::shrink::sample_note;
use crate::contract::resolved::ShapeRule;
use crate::diag::Code;
use crate::providers::Kernel;
use fkc_provider::DType;

impl Gate<'_> {
    pub(super) fn rules_hold(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        predicted: &[Vec<i64>],
        outputs: &[(Vec<usize>, DType, usize)],
    ) -> bool {
        if outputs.len() != self.raw.outputs.len() {
            let span = self
                .raw
                .outputs
                .first()
                .map_or(self.raw.kernel.span.clone(), |o| o.span.clone());
            let diagnostic = self.error(
                Code::ShapeRuleViolated,
                span,
                format!(
                    "`{}` returned {} outputs, but the contract declares {}",
                    kernel.symbol,
                    outputs.len(),
                    self.raw.outputs.len()
                ),
            );
            diagnostic.notes.push(sample_note(dtype.name(), sample));
            diagnostic.help.push(
                "declare one entry of `return.outputs` per output the kernel returns".to_owned(),
            );
            return false;
        }
        for (index, output) in self.raw.outputs.iter().enumerate() {
            let Some((shape, out_dtype, _)) = outputs.get(index) else {
                continue;
            };
            let expected = predicted.get(index).cloned().unwrap_or_default();
            let actual: Vec<i64> = shape
                .iter()
                .map(|d| i64::try_from(*d).unwrap_or(-1))
                .collect();
            if actual != expected {
                let differs = actual.iter().zip(&expected).position(|(a, e)| a != e);
                let span = output
                    .shape_rule
                    .as_ref()
                    .map_or(output.name.span.clone(), |rule| {
                        self.dimension_span(index, differs, rule)
                            .unwrap_or_else(|| rule.span.clone())
                    });
                let diagnostic = self.error(
                    Code::ShapeRuleViolated,
                    span,
                    format!(
                        "`{}` has shape {actual:?}, but the shape rule says {expected:?}",
                        output.name.value
                    ),
                );
                diagnostic.notes.push(sample_note(dtype.name(), sample));
                diagnostic
                    .help
                    .push("correct the shape rule to what the kernel computes".to_owned());
                return false;
            }
            let wanted = self
                .domain
                .contract
                .outputs
                .get(index)
                .and_then(|o| o.dtype_from.as_ref())
                .map(|_| dtype);
            if wanted.is_some_and(|w| w != *out_dtype) {
                let span = output
                    .dtype_rule
                    .as_ref()
                    .map_or(output.name.span.clone(), |r| r.span.clone());
                let diagnostic = self.error(
                    Code::DtypeRuleViolated,
                    span,
                    format!(
                        "`{}` is {}, but the dtype rule says {}",
                        output.name.value,
                        out_dtype.name(),
                        dtype.name()
                    ),
                );
                diagnostic.notes.push(sample_note(dtype.name(), sample));
                diagnostic.help.push("correct the dtype rule".to_owned());
                return false;
            }
        }
        let allocated = outputs.iter().map(|(_, _, bytes)| bytes).sum();
        self.cost_holds(sample, dtype, predicted, allocated, kernel)
    }

    /// The file span of the `from_params` argument that gives dimension `dim` of output
    /// `output`, when the rule is written that way and the text can be located exactly.
    fn dimension_span(
        &self,
        output: usize,
        dim: Option<usize>,
        rule: &crate::contract::schema::Located<String>,
    ) -> Option<std::ops::Range<usize>> {
        let resolved = self.domain.contract.outputs.get(output)?;
        let Some(ShapeRule::FromParams(dims)) = &resolved.shape else {
            return None;
        };
        let (_, expr) = dims.get(dim?)?;
        let written = self.source.slice(rule.span.clone());
        let quote = usize::from(written.starts_with('"') || written.starts_with('\''));
        let start = rule.span.start + quote;
        let exact = self.source.slice(start..start + rule.value.len()) == rule.value;
        exact.then(|| start + expr.span.start..start + expr.span.end)
    }
}
