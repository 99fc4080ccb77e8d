//! Parameters the bits do not depend on: `precision.independent_of: [threads]` promises that
//! the outputs are bit for bit the same whatever those op-params' values (a thread count, a
//! tile size, a flag). Every admitted sample runs again with such a parameter at a reference
//! value — an integer 1 (one thread), a boolean flipped, a float 1.0, an enumeration's other
//! value — where that is another value and still admitted, at the main instruction-set level,
//! and the bits must be the same.

use super::Gate;
use super::constraints::Verdict;
use super::run::{Accepted, Outcome, call};
use super::sample::{Param, Sample};
use super::shrink::sample_note;
use crate::diag::Code;
use crate::providers::Kernel;
use fkc_provider::DType;

impl Gate<'_> {
    /// The sample's outputs do not change with the parameters of `independent_of`. `None`
    /// after reporting one that does.
    pub(super) fn independent_of_params(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
        accepted: &Accepted,
    ) -> Option<()> {
        let names: Vec<(String, std::ops::Range<usize>)> = self
            .raw
            .precision
            .iter()
            .flat_map(|p| &p.independent_of)
            .map(|n| (n.value.clone(), n.span.clone()))
            .collect();
        for (name, span) in names {
            let Some(param) = sample.param(&name) else {
                self.not_a_param(&name, span);
                return None;
            };
            let Some(other) = self.reference_value(&name, param) else {
                continue;
            };
            let mut reference = sample.clone();
            if let Some((_, slot)) = reference.params.iter_mut().find(|(n, _)| *n == name) {
                *slot = other;
            }
            if !matches!(
                self.domain.verdict(&reference, dtype),
                Verdict::Admitted { .. }
            ) {
                continue;
            }
            let runs = self.levels.main_only();
            let same = match call(kernel, &self.domain, &reference, dtype, seed, runs) {
                Outcome::Accepted(other) => other.bits == accepted.bits,
                _ => false,
            };
            if !same {
                self.depends_on(kernel, dtype, sample, &name, span);
                return None;
            }
            *self.independence_checked.entry(name).or_default() += 1;
        }
        Some(())
    }

    /// The value `param` is run again at: 1 for an integer (each element of a tuple), the
    /// other boolean, 1.0 for a float, the enumeration's first other value; `None` where that
    /// is the sample's own value.
    fn reference_value(&self, name: &str, param: &Param) -> Option<Param> {
        let reference = match param {
            Param::Int(_) => Param::Int(1),
            Param::Ints(values) => Param::Ints(vec![1; values.len()]),
            Param::Bool(b) => Param::Bool(!b),
            Param::Float(_) => Param::Float(crate::expr::Real(1.0)),
            Param::Text(text) => {
                let (_, choices) = self.domain.choices().find(|(n, _)| *n == name)?;
                let other = choices.iter().find(|c| **c != text)?;
                Param::Text((*other).to_owned())
            }
        };
        (reference != *param).then_some(reference)
    }

    fn depends_on(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        name: &str,
        span: std::ops::Range<usize>,
    ) {
        let reference = sample
            .param(name)
            .and_then(|p| self.reference_value(name, p));
        let reference = reference.as_ref();
        let diagnostic = self.error(
            Code::ParamChangesBits,
            span,
            format!(
                "`{}` gives other bits with `{name}` {} than with the sample's `{name}`",
                kernel.symbol,
                reference.map_or_else(String::new, Param::written)
            ),
        );
        diagnostic.label = Some("the outputs are promised not to depend on it".to_owned());
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        diagnostic.help.push(format!(
            "make the result independent of `{name}` (each output computed by the same operations in the same order whatever its value), or remove it from `independent_of`"
        ));
    }

    fn not_a_param(&mut self, name: &str, span: std::ops::Range<usize>) {
        let diagnostic = self.error(
            Code::ParamChangesBits,
            span,
            format!(
                "`independent_of` names `{name}`, which is not a sampled op-param of this contract"
            ),
        );
        diagnostic
            .help
            .push("name op-params of `op_params.fields`".to_owned());
    }

    /// The evidence row for `independent_of`.
    pub(super) fn independence_evidence(&mut self) {
        if self.independence_checked.is_empty() {
            let named: Vec<String> = self
                .raw
                .precision
                .iter()
                .flat_map(|p| &p.independent_of)
                .map(|n| format!("`{}`", n.value))
                .collect();
            if !named.is_empty() {
                self.not_checked(
                    format!("`independent_of: [{}]`", named.join(", ").replace('`', "")),
                    "no admitted sample could be run again with another value of it (1, the other boolean, 1.0, another choice)",
                );
            }
            return;
        }
        let parts: Vec<String> = self
            .independence_checked
            .iter()
            .map(|(name, count)| {
                format!("`{name}`: {count} samples run again with it at another value")
            })
            .collect();
        self.evidence.rows.push((
            "independent of".to_owned(),
            format!("{}, every output bit for bit the same", parts.join("; ")),
        ));
    }
}
