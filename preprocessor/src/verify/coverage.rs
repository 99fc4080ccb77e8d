//! Coverage: every fast path's condition holds on some admitted sample, and every optional
//! input ran both present and absent.

use super::Gate;
use super::sample::Sample;
use crate::diag::Code;
use fkc_provider::DType;

impl Gate<'_> {
    /// Every fast path's `when` is taken by some admitted sample, and every optional input ran
    /// both present and absent.
    pub(super) fn coverage(&mut self, dtype: DType, admitted: &[(Sample, Vec<Vec<i64>>)]) {
        let contract = self.domain.contract;
        let mut hits = vec![0usize; contract.fast_paths.len()];
        for (sample, outputs) in admitted {
            for (hit, path) in hits.iter_mut().zip(&contract.fast_paths) {
                if self.domain.holds(&path.expr, sample, outputs, dtype) {
                    *hit += 1;
                }
            }
        }
        let mut taken = Vec::new();
        for (count, path) in hits.iter().zip(&contract.fast_paths) {
            if *count == 0 && !admitted.is_empty() {
                let span = path.source.span.clone();
                let diagnostic = self.error(
                    Code::FastPathUnreachable,
                    span,
                    format!(
                        "no admitted sample takes the fast path `{}`",
                        path.source.value
                    ),
                );
                diagnostic
                    .notes
                    .push(format!("{} admitted samples were drawn", admitted.len()));
                diagnostic.help.push("a fast path no input in the contract's domain can take is dead: fix its condition or remove it".to_owned());
                return;
            }
            taken.push(format!("`{}`: {count}", path.source.value));
        }
        if !taken.is_empty() {
            self.evidence.rows.push((
                "fast-path conditions held".to_owned(),
                format!(
                    "each `when` held on some admitted sample: {} (the kernel does not report which path it took, so this shows the condition is reachable, not that the path ran)",
                    taken.join("; ")
                ),
            ));
        }
        self.alternatives_alone(dtype, admitted);
        let mut optional = Vec::new();
        let mut never_absent = Vec::new();
        for input in self.raw.inputs.iter().filter(|i| i.is_optional()) {
            let name = &input.name.value;
            let present = admitted
                .iter()
                .filter(|(s, _)| s.inputs.iter().any(|(n, _, p)| n == name && *p))
                .count();
            let absent = admitted.len() - present;
            optional.push(format!("`{name}` present in {present}, absent in {absent}"));
            if absent == 0 && present > 0 {
                let span = input
                    .optional
                    .as_ref()
                    .map_or(input.name.span.clone(), |o| o.span.clone());
                never_absent.push((name.clone(), span));
            }
        }
        for (name, span) in never_absent {
            let diagnostic = self.error(
                Code::EmptyDomain,
                span,
                format!("`{name}` is optional, but no sample without it satisfies the contract"),
            );
            diagnostic.notes.push(format!(
                "the drawn samples were tried with `{name}` absent, and none satisfies the contract: a constraint or a shape rule needs it"
            ));
            diagnostic.help.push(format!(
                "drop `optional: true`, or guard what reads it (`!present({name}) || …`) so that the contract holds without it"
            ));
        }
        if !optional.is_empty() {
            self.evidence
                .rows
                .push(("optional inputs".to_owned(), optional.join("; ")));
        }
    }

    /// For each constraint part written `a || b`, how many admitted samples — each accepted by
    /// the kernel — had each alternative holding alone; one never seen alone is shown as not
    /// shown to be sufficient.
    fn alternatives_alone(&mut self, dtype: DType, admitted: &[(Sample, Vec<Vec<i64>>)]) {
        for (part, alternatives) in self.domain.alternatives() {
            let counts: Vec<String> = (0..alternatives.len())
                .map(|which| {
                    let alone = admitted
                        .iter()
                        .filter(|(s, _)| self.domain.alone(&alternatives, which, s, dtype))
                        .count();
                    let text = alternatives
                        .get(which)
                        .map_or(String::new(), |a| a.to_source());
                    if alone == 0 {
                        format!("`{text}`: never alone on the drawn samples, so not shown to be sufficient")
                    } else {
                        format!("`{text}`: alone on {alone}, each accepted")
                    }
                })
                .collect();
            self.evidence.rows.push((
                "`||` alternatives satisfied alone".to_owned(),
                format!(
                    "`{}` — {}",
                    self.constraint_source(part).1,
                    counts.join("; ")
                ),
            ));
        }
    }
}
