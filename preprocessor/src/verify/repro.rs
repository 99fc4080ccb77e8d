//! `mdbook-fkc repro`: one sample of one contract run again through the check that reported it,
//! with the operand seed it used, by the gate's own code ([`Gate::replay`]).

use super::sample::{Param, Rng, Sample};

use super::constraints::Verdict;
use super::shrink::{Check, Keep, Replay};
use super::{Gate, entry_kernels, named};
use crate::contract::raw::RawContract;
use crate::contract::resolved::Contract;
use crate::diag::Diagnostic;
use crate::import::Import;
use crate::providers::Provider;
use crate::source::SourceFile;
use fkc_provider::{DType, ParamKind};
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

/// Why a reproduction could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReproError {
    /// The book's `[preprocessor.fkc]` does not read.
    Options(String),
    /// No chapter of the book is this file.
    NoChapter { file: String },
    /// No contract fence opens on this `file:line`.
    NoContract { at: String },
    /// The contract there is not verified (it does not import cleanly, or is unverified).
    NotVerified { at: String },
    /// The provider serves none of the contract's entry points.
    NoEntryPoint,
    /// The contract has no entry point of this dtype.
    NoDtype(DType),
    /// The sample does not fit the contract's inputs or parameters; what the contract has.
    Mismatch(String),
    /// The check runs on admitted samples, and the contract rejects this one.
    Rejected,
    /// The contract does not classify the sample (several constraints broken, or something
    /// undefined on it).
    Unclassified,
}

impl std::fmt::Display for ReproError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReproError::Options(why) => write!(f, "{why}"),
            ReproError::NoChapter { file } => write!(
                f,
                "no chapter of the book is `{file}` (write it as `check` prints it)"
            ),
            ReproError::NoContract { at } => write!(f, "no ```fkc fence opens on {at}"),
            ReproError::NotVerified { at } => write!(
                f,
                "the contract at {at} is not verified (it does not import cleanly, or is unverified): run `mdbook-fkc check`"
            ),
            ReproError::NoEntryPoint => {
                write!(f, "the contract has no entry point the provider serves")
            }
            ReproError::NoDtype(dtype) => {
                write!(f, "the contract has no {} entry point", dtype.name())
            }
            ReproError::Mismatch(what) => write!(f, "{what}"),
            ReproError::Rejected => write!(
                f,
                "this check runs on admitted samples; the contract rejects this one"
            ),
            ReproError::Unclassified => write!(
                f,
                "the contract does not classify this sample: it breaks several constraints, or an output or a constraint is undefined on it"
            ),
        }
    }
}

impl std::error::Error for ReproError {}

/// Runs `request` on the contract. `Err` when it does not fit the contract: a dtype without an
/// entry point (except for `--check undeclared`, which runs one), a sample with other inputs or
/// parameters, or one the check needs classified that the contract does not classify (neither
/// admitted nor breaking exactly one constraint).
pub fn reproduce(
    raw: &RawContract,
    contract: &Contract,
    import: &Import,
    provider: &Provider,
    builtin: &Provider,
    source: &Arc<SourceFile>,
    request: &Reproduction,
) -> Result<Reproduced, ReproError> {
    // One sample's share of the contract's step budget: a sample whose semantics take more is
    // what spent the contract's budget, and fails again here.
    let _budget = crate::semantics::fuel::Budget::start(crate::semantics::fuel::STEPS_PER_SAMPLE);
    let kernels = entry_kernels(import, provider);
    let (_, first) = kernels.first().ok_or(ReproError::NoEntryPoint)?;
    let declared = import.entry_points.iter().any(|e| e.dtype == request.dtype);
    if request.check == Check::Undeclared && declared {
        return Ok(Reproduced::Passed(format!(
            "the contract declares {}",
            request.dtype.name()
        )));
    }
    let kernel = match request.check {
        Check::Undeclared => *first,
        _ => kernels
            .iter()
            .find(|(dtype, _)| *dtype == request.dtype)
            .map(|(_, kernel)| *kernel)
            .ok_or(ReproError::NoDtype(request.dtype))?,
    };
    let mut gate = Gate::new(raw, contract, source, first, request.seed);
    gate.named_oracle = match named::resolve(&mut gate, [provider, builtin]) {
        Ok(named) => named,
        Err(()) => return Ok(Reproduced::Failed(gate.diagnostics)),
    };
    let sample = gate.fitted(&request.sample, request.check)?;
    let keep = gate.keep(&sample, request)?;
    let replay = Replay {
        kernel: &kernel,
        dtype: request.dtype,
        seed: request.seed,
        check: request.check,
        keep,
    };
    if gate.replay(&replay, &sample) {
        Ok(Reproduced::Passed(gate.passed(&replay, &sample)))
    } else {
        Ok(Reproduced::Failed(gate.diagnostics))
    }
}

impl Gate<'_> {
    /// What `sample` must stay for `request`'s check: admitted, or (for the contract's verdict)
    /// breaking exactly one constraint; `Err` when the check needs a classification the
    /// contract does not give. Checks that run on any sample keep nothing ([`Keep::Admitted`]
    /// is not consulted by their replay).
    fn keep(&self, sample: &Sample, request: &Reproduction) -> Result<Keep, ReproError> {
        if !request.check.classifies() {
            return Ok(Keep::Admitted);
        }
        match self.domain.verdict(sample, request.dtype) {
            Verdict::Admitted { .. } => Ok(Keep::Admitted),
            Verdict::Breaks { constraint } if request.check == Check::Domain => {
                Ok(Keep::Breaks(constraint))
            }
            Verdict::Breaks { .. } => Err(ReproError::Rejected),
            Verdict::Other => Err(ReproError::Unclassified),
        }
    }

    /// What a passing reproduction says: what the contract says of the sample, or what the
    /// kernel refused.
    fn passed(&self, replay: &Replay<'_>, sample: &Sample) -> String {
        let dtype = replay.dtype.name();
        match (replay.check, replay.keep) {
            (Check::Undeclared, _) => {
                format!(
                    "{dtype} is not declared, and neither an entry point nor the executor runs it"
                )
            }
            (Check::Required, _) => {
                let absent: Vec<String> = sample
                    .inputs
                    .iter()
                    .filter(|(name, _, present)| !present && !self.declares_optional(name))
                    .map(|(name, _, _)| format!("`{name}`"))
                    .collect();
                if absent.is_empty() {
                    "every absent input is optional in the contract".to_owned()
                } else {
                    format!(
                        "`{}` refuses a call without {}, which the contract requires",
                        replay.kernel.symbol,
                        absent.join(", ")
                    )
                }
            }
            (_, Keep::Admitted) => "admitted by the contract".to_owned(),
            (_, Keep::Breaks(index)) => format!(
                "breaking only `{}` of the contract",
                self.constraint_source(index).1
            ),
        }
    }

    /// `given` checked against the contract's inputs and parameters (same names and order, a
    /// rank the input declares, a tuple's length), with each absent input given dims of ones. An
    /// absent input must be optional, except for `--check required`, which runs a call without
    /// a required one.
    fn fitted(&self, given: &Sample, check: Check) -> Result<Sample, ReproError> {
        let template = self.domain.draw(&mut Rng::new(0));
        let names = |s: &Sample| {
            let inputs = s.inputs.iter().map(|(n, _, _)| n.clone());
            inputs
                .chain(s.params.iter().map(|(n, _)| n.clone()))
                .collect::<Vec<_>>()
        };
        if names(given) != names(&template) {
            let names = names(&template).join(", ");
            return Err(ReproError::Mismatch(format!(
                "the contract's sample has {names}"
            )));
        }
        let mut sample = given.clone();
        for ((name, dims, present), (_, shape, _)) in sample.inputs.iter_mut().zip(&template.inputs)
        {
            let optional = check == Check::Required || self.declares_optional(name);
            if !*present && !optional {
                return Err(ReproError::Mismatch(format!("`{name}` is not optional")));
            }
            if !*present {
                *dims = vec![1; shape.len()];
            }
            let declared = self.raw.inputs.iter().find(|i| i.name.value == *name);
            let rank = declared.and_then(|i| i.rank.as_ref()).map(|r| r.value);
            // Only the ranks the semantics were checked at: beyond them no program runs, and a
            // reproduction would pass without its values compared.
            let fits = rank.map_or(dims.len() == shape.len(), |r| {
                r.ranks().contains(&dims.len())
            });
            if !fits {
                let rank = match rank {
                    Some(r) if r.any => {
                        format!("{} to {} (`rank: any` is checked there)", r.min, r.max)
                    }
                    Some(r) => r.to_string(),
                    None => shape.len().to_string(),
                };
                return Err(ReproError::Mismatch(format!("`{name}` has rank {rank}")));
            }
        }
        // A tuple has its kind's length; a list (`Vec<…>`) any length.
        let kinds: Vec<ParamKind> = self.domain.drawn_params().map(|(_, kind)| kind).collect();
        let lengths = |s: &Sample| {
            s.params
                .iter()
                .zip(&kinds)
                .map(|((_, p), kind)| match (p, kind) {
                    (Param::Ints(_), ParamKind::UsizeList | ParamKind::I64List) => Some(None),
                    (Param::Ints(vs), _) => Some(Some(vs.len())),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        if lengths(&sample) != lengths(&template) {
            let written = template.describe();
            return Err(ReproError::Mismatch(format!(
                "the parameters are written like {written}"
            )));
        }
        Ok(sample)
    }
}

#[cfg(test)]
#[path = "repro_tests.rs"]
mod tests;
