//! `mdbook-fkc repro`: one sample of one contract run again through the check that reported it,
//! with the operand seed it used, by the gate's own code ([`Gate::replay`]).

use super::sample::{Rng, Sample, Verdict};
use super::shrink::{Check, Keep, Replay};
use super::{Gate, entry_kernels, named};
use crate::contract::raw::RawContract;
use crate::contract::resolved::Contract;
use crate::diag::Diagnostic;
use crate::import::Import;
use crate::providers::Provider;
use crate::source::SourceFile;
use fkc_provider::DType;
use std::sync::Arc;

/// One sample to run again: in which dtype, with which operand seed, through which check.
#[derive(Debug, Clone)]
pub struct Reproduction {
    pub dtype: DType,
    pub seed: u64,
    pub check: Check,
    pub sample: Sample,
}

/// What running the sample again showed.
#[derive(Debug)]
pub enum Reproduced {
    /// The check held; what the contract says of the sample (`admitted`, or the one constraint
    /// it breaks).
    Passed(String),
    /// The check failed, with the gate's report.
    Failed(Vec<Diagnostic>),
}

/// Runs `request` on the contract. `Err` when it does not fit the contract: a dtype without an
/// entry point, a sample with other inputs or parameters, or one the contract does not
/// classify (neither admitted nor breaking exactly one constraint).
pub fn reproduce(
    raw: &RawContract,
    contract: &Contract,
    import: &Import,
    provider: &Provider,
    builtin: &Provider,
    source: &Arc<SourceFile>,
    request: &Reproduction,
) -> Result<Reproduced, String> {
    let kernels = entry_kernels(import, provider);
    let (_, first) = kernels
        .first()
        .ok_or("the contract has no entry point the provider serves")?;
    let kernel = kernels
        .iter()
        .find(|(dtype, _)| *dtype == request.dtype)
        .map(|(_, kernel)| *kernel)
        .ok_or_else(|| format!("the contract has no {} entry point", request.dtype.name()))?;
    let mut gate = Gate::new(raw, contract, source, first, request.seed);
    gate.named_oracle = match named::resolve(&mut gate, [provider, builtin]) {
        Ok(named) => named,
        Err(()) => return Ok(Reproduced::Failed(gate.diagnostics)),
    };
    let sample = gate.fitted(&request.sample)?;
    let keep = match gate.domain.verdict(&sample, request.dtype) {
        Verdict::Admitted { .. } => Keep::Admitted,
        Verdict::Breaks { constraint } if request.check == Check::Domain => {
            Keep::Breaks(constraint)
        }
        Verdict::Breaks { .. } => {
            return Err("this check runs on admitted samples; the contract rejects this one".into());
        }
        Verdict::Other => return Err("the contract does not classify this sample: it breaks several constraints, or an output or a constraint is undefined on it".into()),
    };
    let replay = Replay {
        kernel: &kernel,
        dtype: request.dtype,
        seed: request.seed,
        check: request.check,
        keep,
    };
    if gate.replay(&replay, &sample) {
        Ok(Reproduced::Passed(match keep {
            Keep::Admitted => "admitted by the contract".to_owned(),
            Keep::Breaks(index) => format!(
                "breaking only `{}` of the contract",
                gate.constraint_source(index).1
            ),
        }))
    } else {
        Ok(Reproduced::Failed(gate.diagnostics))
    }
}

impl Gate<'_> {
    /// `given` checked against the contract's inputs and parameters (same names, order, ranks
    /// and tuple lengths), with each absent input given dims of ones.
    fn fitted(&self, given: &Sample) -> Result<Sample, String> {
        let template = self.domain.draw(&mut Rng::new(0));
        let names = |s: &Sample| {
            let inputs = s.inputs.iter().map(|(n, _, _)| n.clone());
            inputs
                .chain(s.params.iter().map(|(n, _)| n.clone()))
                .collect::<Vec<_>>()
        };
        if names(given) != names(&template) {
            return Err(format!(
                "the contract's sample has {}",
                names(&template).join(", ")
            ));
        }
        let mut sample = given.clone();
        for ((name, dims, present), (_, shape, _)) in sample.inputs.iter_mut().zip(&template.inputs)
        {
            let optional = self
                .raw
                .inputs
                .iter()
                .any(|i| i.name.value == *name && i.optional.as_ref().is_some_and(|o| o.value));
            if !*present && !optional {
                return Err(format!("`{name}` is not optional"));
            }
            if !*present {
                *dims = vec![1; shape.len()];
            }
            if dims.len() != shape.len() {
                return Err(format!("`{name}` has rank {}", shape.len()));
            }
        }
        let lengths = |s: &Sample| {
            s.params
                .iter()
                .map(|(_, p)| match p {
                    super::sample::Param::Int(_) => None,
                    super::sample::Param::Ints(vs) => Some(vs.len()),
                })
                .collect::<Vec<_>>()
        };
        if lengths(&sample) != lengths(&template) {
            return Err(format!(
                "the parameters are written like {}",
                template.describe()
            ));
        }
        Ok(sample)
    }
}
