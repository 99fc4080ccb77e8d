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
mod tests {
    //! Each failure kind the gate shrinks is reported with a `reproduce:` line that
    //! [`reproduce`] runs to the same code (and that passes on the honest contract), proven with
    //! synthetic kernels no reference kernel can stand in for.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::diag::Code;
    use crate::import::{ResolvedEntryPoint, symbol_for};
    use crate::verify::{VerifyOptions, verify};
    use fkc_provider::{
        AnyTensor, KernelErrorKind, KernelRef, Operand, OperandDesc, ParamValue, ParamValues,
        Rejection,
    };
    use fuel_reference_backend::fkc::{MAX_POOL2D_FIELDS, MAX_POOL2D_INPUTS};

    /// A pooling contract on `synthetic::pool_f32`; `extra` is spliced after the input `x`
    /// (more inputs) and `tail` at the end (`oracle:`).
    fn contract(dtypes: &str, extra: &str, tail: &str) -> String {
        format!(
            "kernel: k\nregistrable: false\nbackend: Cpu\nkernel_source: s\nentry_point: \"synthetic::pool_f32\"\naccept:\n  inputs:\n    - {{ name: x, dtypes: [{dtypes}], rank: 4 }}\n{extra}op_params:\n  fields:\n    kernel_size: {{ kind: usize, constraint: \"kernel_size > 0\" }}\n    stride: {{ kind: usize, constraint: \"stride > 0\" }}\nreturn:\n  outputs:\n    - {{ name: out, dtype_rule: passthrough(x), shape_rule: \"from_params(N=x.dim[0], C=x.dim[1], H=(x.dim[2]-kernel_size)/stride+1, W=(x.dim[3]-kernel_size)/stride+1)\" }}\ndeterminism: same_hardware_bitwise\n{tail}"
        )
    }

    fn refused(message: &str) -> Rejection {
        Rejection::new(KernelErrorKind::ShapeMismatch, message)
    }

    /// Zeros of the pooled shape in `x`'s dtype: right shapes and dtypes, wrong values. Refuses
    /// a call without `x` and what the contract's constraints exclude.
    fn zeros(
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> Result<Vec<AnyTensor>, Rejection> {
        let x = operands
            .first()
            .and_then(Option::as_ref)
            .ok_or_else(|| refused("no x"))?;
        let get = |name: &str| match params.get(name) {
            Some(ParamValue::Usize(v)) if *v > 0 => Ok(*v),
            _ => Err(refused("bad parameter")),
        };
        let (k, s) = (get("kernel_size")?, get("stride")?);
        let pooled = |d: usize| {
            d.checked_sub(k)
                .map(|d| d / s + 1)
                .ok_or(refused("too small"))
        };
        let [n, c, h, w] = <[usize; 4]>::try_from(x.shape()).map_err(|_| refused("rank"))?;
        let shape = [n, c, pooled(h)?, pooled(w)?];
        let count = shape.iter().product();
        Ok(vec![
            AnyTensor::from_f64(x.dtype(), &shape, &vec![0.0; count]).unwrap(),
        ])
    }

    /// An oracle that refuses every sample.
    fn refusing(_: &[Option<Operand>], _: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
        Err(refused("never"))
    }

    /// `x` and an operand `scale` the kernel may go without.
    const SCALED: &[OperandDesc] = &[
        OperandDesc::required("x", 4),
        OperandDesc {
            name: "scale",
            rank: 1,
            optional: true,
            any_rank: false,
            dtype: None,
        },
    ];

    fn entry(symbol: &'static str, dtype: DType, inputs: &'static [OperandDesc]) -> KernelRef {
        let call = if symbol.contains("refusing") {
            refusing
        } else {
            zeros
        };
        KernelRef {
            symbol,
            kernel: "k",
            dtype,
            op_kind: None,
            inputs,
            outputs: &["out"],
            params: MAX_POOL2D_FIELDS,
            call,
        }
    }

    /// An in-process provider serving `entries`.
    fn provider(entries: Vec<KernelRef>) -> Provider {
        crate::verify::tests::in_process(Box::leak(entries.into_boxed_slice()))
    }

    /// Runs `run` on `text` read and resolved, with the import of its declared `dtypes`.
    fn with_contract<T>(
        text: &str,
        provider: &Provider,
        dtypes: &[DType],
        run: impl FnOnce(&RawContract, &Contract, &Import, &Arc<SourceFile>) -> T,
    ) -> T {
        let (source, raw, contract) = crate::verify::tests::read_resolved(text);
        let entry_points = dtypes
            .iter()
            .map(|&dtype| {
                let symbol = symbol_for("synthetic::pool_f32", dtype).unwrap();
                let kernel = provider.description().entry_point(&symbol).cloned();
                ResolvedEntryPoint {
                    dtype,
                    symbol,
                    kernel,
                }
            })
            .collect();
        let import = Import {
            registrable: false,
            op_kind: None,
            variant: None,
            entry_points,
        };
        run(&raw, &contract, &import, &source)
    }

    /// The gate's diagnostics on `text`.
    fn gate(text: &str, provider: &Provider, dtypes: &[DType]) -> Vec<Diagnostic> {
        let builtin = Provider::builtin();
        with_contract(text, provider, dtypes, |raw, contract, import, source| {
            let options = VerifyOptions::default();
            verify(raw, contract, import, provider, &builtin, source, options).1
        })
    }

    /// `reproduce` run on `text` with `request`.
    fn replayed(
        text: &str,
        provider: &Provider,
        dtypes: &[DType],
        request: &Reproduction,
    ) -> Result<Reproduced, ReproError> {
        let builtin = Provider::builtin();
        with_contract(text, provider, dtypes, |raw, contract, import, source| {
            reproduce(raw, contract, import, provider, &builtin, source, request)
        })
    }

    /// The request a report's `reproduce:` line makes.
    fn request(report: &Diagnostic) -> Reproduction {
        let line = report
            .help
            .iter()
            .find_map(|h| h.strip_prefix("reproduce: mdbook-fkc repro t.md:1 "))
            .unwrap_or_else(|| panic!("no reproduce line: {report:?}"));
        let (flags, sample) = line.split_once(" --sample '").unwrap();
        let words: Vec<&str> = flags.split(' ').collect();
        let value = |flag: &str| {
            let at = words.iter().position(|w| *w == flag)?;
            words.get(at + 1).copied()
        };
        let seed = value("--seed").unwrap().strip_prefix("0x").unwrap();
        Reproduction {
            dtype: DType::from_name(value("--dtype").unwrap()).unwrap(),
            seed: u64::from_str_radix(seed, 16).unwrap(),
            check: value("--check").map_or(Check::Domain, |c| Check::parse(c).unwrap()),
            sample: Sample::parse(sample.strip_suffix('\'').unwrap()).unwrap(),
        }
    }

    fn codes(reproduced: Result<Reproduced, ReproError>) -> Vec<Code> {
        match reproduced {
            Ok(Reproduced::Failed(report)) => report.iter().map(|d| d.code).collect(),
            other => panic!("not reproduced: {other:?}"),
        }
    }

    fn passes(reproduced: Result<Reproduced, ReproError>) -> String {
        match reproduced {
            Ok(Reproduced::Passed(verdict)) => verdict,
            other => panic!("does not pass: {other:?}"),
        }
    }

    const SMALLEST: &str = "x: [1, 1, 1, 1], kernel_size = 1, stride = 1";

    #[test]
    fn an_undeclared_dtype_that_runs_is_shrunk_and_reproduced() {
        let both = provider(vec![
            entry("synthetic::pool_f32", DType::F32, MAX_POOL2D_INPUTS),
            entry("synthetic::pool_f64", DType::F64, MAX_POOL2D_INPUTS),
        ]);
        let f32_only = [DType::F32];
        let lie = contract("F32", "", "");
        let found = gate(&lie, &both, &f32_only);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, Code::DtypeMismatch);
        assert_eq!(
            found[0].notes,
            [format!("counterexample (shrunk, F64): {SMALLEST}")]
        );
        let request = request(&found[0]);
        assert_eq!(
            (request.check, request.dtype),
            (Check::Undeclared, DType::F64)
        );
        let again = replayed(&lie, &both, &f32_only, &request);
        assert_eq!(codes(again), [Code::DtypeMismatch]);

        let refusing_f64 = provider(vec![entry(
            "synthetic::pool_f32",
            DType::F32,
            MAX_POOL2D_INPUTS,
        )]);
        let verdict = passes(replayed(&lie, &refusing_f64, &f32_only, &request));
        assert!(verdict.contains("F64 is not declared"), "{verdict}");
        let truth = contract("F32, F64", "", "");
        let declared = [DType::F32, DType::F64];
        let verdict = passes(replayed(&truth, &both, &declared, &request));
        assert_eq!(verdict, "the contract declares F64");
    }

    #[test]
    fn a_required_input_the_kernel_does_without_is_shrunk_and_reproduced() {
        let scaled = provider(vec![entry("synthetic::pool_f32", DType::F32, SCALED)]);
        let lie = contract("F32", "    - { name: scale, dtypes: [F32], rank: 1 }\n", "");
        let found = gate(&lie, &scaled, &[DType::F32]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, Code::OperandsMismatch);
        assert_eq!(
            found[0].notes,
            [
                "counterexample (shrunk, F32): x: [1, 1, 1, 1], scale: absent, kernel_size = 1, stride = 1"
            ]
        );
        let request = request(&found[0]);
        assert_eq!(request.check, Check::Required);
        let again = replayed(&lie, &scaled, &[DType::F32], &request);
        assert_eq!(codes(again), [Code::OperandsMismatch]);

        let truth = contract(
            "F32",
            "    - { name: scale, dtypes: [F32], rank: 1, optional: true }\n",
            "",
        );
        let verdict = passes(replayed(&truth, &scaled, &[DType::F32], &request));
        assert_eq!(verdict, "every absent input is optional in the contract");
        let absent_x = Reproduction {
            sample: Sample::parse("x: absent, scale: [2], kernel_size = 1, stride = 1").unwrap(),
            ..request
        };
        let verdict = passes(replayed(&lie, &scaled, &[DType::F32], &absent_x));
        assert!(verdict.contains("refuses a call without `x`"), "{verdict}");
    }

    #[test]
    fn a_sample_gets_its_share_of_the_contract_s_step_budget() {
        let pool = provider(vec![entry(
            "synthetic::pool_f32",
            DType::F32,
            MAX_POOL2D_INPUTS,
        )]);
        // About 18 million steps on one sample: within the per-sample limit, beyond its share.
        let busy = "semantics: |\n  for n, c, oh, ow in out:\n    m = x[n, c, oh * stride, ow * stride]\n    for t in 0..9000000:\n      m = max(m, x[n, c, oh * stride, ow * stride])\n    out[n, c, oh, ow] = m\n";
        let request = Reproduction {
            dtype: DType::F32,
            seed: 1,
            check: Check::Domain,
            sample: Sample::parse(SMALLEST).unwrap(),
        };
        let again = replayed(&contract("F32", "", busy), &pool, &[DType::F32], &request);
        assert_eq!(codes(again), [Code::SemanticsBudget]);
    }

    #[test]
    fn a_named_oracle_disagreement_is_shrunk_and_reproduced() {
        let pool = provider(vec![entry(
            "synthetic::pool_f32",
            DType::F32,
            MAX_POOL2D_INPUTS,
        )]);
        let oracle = "oracle:\n  entry_point: \"fuel_reference_backend::ops::max_pool2d_f64\"\n";
        let lie = contract("F32", "", oracle);
        let found = gate(&lie, &pool, &[DType::F32]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, Code::WrongValue);
        assert!(
            found[0]
                .message
                .contains("`fuel_reference_backend::ops::max_pool2d_f64`'s value")
        );
        assert_eq!(
            found[0].notes,
            [format!("counterexample (shrunk, F32): {SMALLEST}")]
        );
        let again = replayed(&lie, &pool, &[DType::F32], &request(&found[0]));
        assert_eq!(codes(again), [Code::WrongValue]);
        let truth = contract("F32", "", "");
        let verdict = passes(replayed(&truth, &pool, &[DType::F32], &request(&found[0])));
        assert_eq!(verdict, "admitted by the contract");
    }

    #[test]
    fn a_named_oracle_that_cannot_run_a_sample_is_shrunk_and_reproduced() {
        let pool = provider(vec![
            entry("synthetic::pool_f32", DType::F32, MAX_POOL2D_INPUTS),
            entry("synthetic::refusing_f64", DType::F64, MAX_POOL2D_INPUTS),
        ]);
        let lie = contract(
            "F32",
            "",
            "oracle:\n  entry_point: \"synthetic::refusing_f64\"\n",
        );
        let found = gate(&lie, &pool, &[DType::F32]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, Code::OperandsMismatch);
        assert!(found[0].message.contains("cannot be run on this sample"));
        assert_eq!(
            found[0].notes,
            [format!("counterexample (shrunk, F32): {SMALLEST}")]
        );
        let again = replayed(&lie, &pool, &[DType::F32], &request(&found[0]));
        assert_eq!(codes(again), [Code::OperandsMismatch]);
    }
}
