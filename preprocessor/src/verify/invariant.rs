//! Parameters the bits do not depend on: `precision.independent_of: [threads]` promises that
//! the outputs are bit for bit the same whatever those op-params' values (a thread count, a
//! tile size). Every admitted sample whose value of such a parameter is not 1 runs again with
//! it 1 (one thread), at the main instruction-set level, and the bits must be the same.

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
            let unit = match param {
                Param::Int(1) => continue,
                Param::Int(_) => Param::Int(1),
                Param::Ints(values) if values.iter().all(|v| *v == 1) => continue,
                Param::Ints(values) => Param::Ints(vec![1; values.len()]),
                // A thread count is an integer: other kinds have no one-unit reference.
                Param::Float(_) | Param::Bool(_) | Param::Text(_) => continue,
            };
            let mut reference = sample.clone();
            if let Some((_, slot)) = reference.params.iter_mut().find(|(n, _)| *n == name) {
                *slot = unit;
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

    fn depends_on(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        name: &str,
        span: std::ops::Range<usize>,
    ) {
        let diagnostic = self.error(
            Code::ParamChangesBits,
            span,
            format!(
                "`{}` gives other bits with `{name}` 1 than with the sample's `{name}`",
                kernel.symbol
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
                    "no admitted sample had a value other than 1",
                );
            }
            return;
        }
        let parts: Vec<String> = self
            .independence_checked
            .iter()
            .map(|(name, count)| format!("`{name}`: {count} samples run again with it 1"))
            .collect();
        self.evidence.rows.push((
            "independent of".to_owned(),
            format!("{}, every output bit for bit the same", parts.join("; ")),
        ));
    }
}
