//! A contract's own oracle: another registry's entry point, named by `oracle.entry_point`, run on
//! the very operands the kernel ran on (converted to the oracle's dtype) — differential testing,
//! for example of a production kernel against the reference backend's f64 one. The values are
//! then held to the contract's precision claims; the contract's semantics, when it has them,
//! still supply the error bound and the work counts. A disagreement, or
//! an oracle that cannot run a sample, is shrunk and reproduced like any other failure of an
//! admitted sample (`repro` resolves the same oracle).

use super::Gate;
use super::run::{Input, operand_named};
use super::sample::Sample;
use super::shrink::sample_note;
use crate::contract::raw::RawOracle;
use crate::diag::{Code, did_you_mean};
use crate::providers::{CallOutcome, Kernel, Provider};
use fkc_provider::{AnyTensor, Operand, ParamKind, ParamValue, ParamValues};

/// The oracle a contract names, resolved.
#[derive(Debug, Clone, Copy)]
pub(super) struct NamedOracle<'a> {
    pub kernel: Kernel<'a>,
    pub raw: &'a RawOracle,
}

/// Finds the contract's `oracle.entry_point` in its provider's registry or the built-in one;
/// `Err` after reporting that it is in neither, or that a fixed parameter is not the oracle's.
pub(super) fn resolve<'a>(
    gate: &mut Gate<'a>,
    providers: [&'a Provider; 2],
) -> Result<Option<NamedOracle<'a>>, ()> {
    let Some(raw) = gate.raw.oracle.as_ref() else {
        return Ok(None);
    };
    let symbol = &raw.entry_point.value;
    let found = providers.iter().find_map(|&provider| {
        let info = provider.description().entry_point(symbol)?;
        Some(Kernel { info, provider })
    });
    let Some(kernel) = found else {
        let known = providers.iter().flat_map(|p| {
            p.description()
                .entry_points
                .iter()
                .map(|e| e.symbol.as_str())
        });
        let help = did_you_mean(symbol, known).map_or_else(
            || "name an entry point of the provider's registry or of `fuel_reference_backend::fkc::ENTRY_POINTS`".to_owned(),
            |close| format!("did you mean `{close}`?"),
        );
        gate.error(
            Code::EntryPointUnresolved,
            raw.entry_point.span.clone(),
            format!("oracle entry point `{symbol}` is in neither the provider's registry nor the built-in one"),
        )
        .help
        .push(help);
        return Err(());
    };
    for (name, _) in &raw.params {
        if !kernel.params.iter().any(|f| f.name == name.value) {
            let fields: Vec<&str> = kernel.params.iter().map(|f| f.name.as_str()).collect();
            gate.error(
                Code::OpParamsMismatch,
                name.span.clone(),
                format!(
                    "`{}` is not a parameter of the oracle `{symbol}`",
                    name.value
                ),
            )
            .help
            .push(format!("its parameters are: {}", fields.join(", ")));
            return Err(());
        }
    }
    Ok(Some(NamedOracle { kernel, raw }))
}

impl Gate<'_> {
    /// What the named oracle computes on the kernel's operands (its first output); `Err` after
    /// reporting that it could not be run.
    pub(super) fn named_values(
        &mut self,
        kernel: &Kernel<'_>,
        sample: &Sample,
        inputs: &[Option<Input>],
    ) -> Result<Vec<f64>, ()> {
        let Some(named) = self.named_oracle else {
            return Err(());
        };
        run_named(&named, kernel, sample, inputs).map_err(|problem| {
            let span = named.raw.entry_point.span.clone();
            let diagnostic = self.error(
                Code::OperandsMismatch,
                span,
                format!(
                    "the oracle `{}` cannot be run on this sample: {problem}",
                    named.kernel.symbol
                ),
            );
            diagnostic
                .notes
                .push(sample_note(kernel.dtype.name(), sample));
            diagnostic.help.push("name an oracle with the kernel's operands, and give the oracle's other parameters under `oracle.params`".to_owned());
        })
    }
}

/// Why the named oracle could not be run on a sample.
#[derive(Debug)]
enum OracleError {
    /// An operand could not be built.
    Operand(fkc_provider::TensorError),
    /// `oracle.params.NAME` is not a value of the parameter's kind.
    Fixed {
        name: String,
        kind: ParamKind,
    },
    /// The oracle takes a parameter neither the sample nor `oracle.params` gives.
    NoValue {
        name: String,
    },
    NoOutput,
    Refused(String),
    Crashed(crate::providers::Crash),
}

impl std::fmt::Display for OracleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OracleError::Operand(error) => write!(f, "{error}"),
            OracleError::Fixed { name, kind } => {
                write!(f, "`oracle.params.{name}` is not a {kind}")
            }
            OracleError::NoValue { name } => write!(
                f,
                "the oracle's `{name}` has no value: the contract has no such field; give it under `oracle.params`"
            ),
            OracleError::NoOutput => write!(f, "it returned no output"),
            OracleError::Refused(message) => write!(f, "it refused: {message}"),
            OracleError::Crashed(crash) => write!(f, "{crash}"),
        }
    }
}

/// Runs the named oracle on the kernel's operands (matched by name) and returns its first
/// output's values.
fn run_named(
    named: &NamedOracle<'_>,
    kernel: &Kernel<'_>,
    sample: &Sample,
    inputs: &[Option<Input>],
) -> Result<Vec<f64>, OracleError> {
    let operand = |name: &str| operand_named(kernel, inputs, name);
    let operands = named
        .kernel
        .inputs
        .iter()
        .map(|desc| {
            operand(&desc.name)
                .map(|input| {
                    AnyTensor::from_f64(named.kernel.dtype, &input.dims, &input.values)
                        .map(Operand::contiguous)
                        .map_err(OracleError::Operand)
                })
                .transpose()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let params = params(named, sample)?;
    match named.kernel.run(&operands, &params) {
        CallOutcome::Outputs(outputs) => outputs
            .first()
            .map(AnyTensor::to_f64_vec)
            .ok_or(OracleError::NoOutput),
        CallOutcome::Rejected(message) => Err(OracleError::Refused(message)),
        CallOutcome::Crashed(crash) => Err(OracleError::Crashed(crash)),
    }
}

/// The oracle's parameters: fixed in `oracle.params`, else the sample's value of the same name.
fn params(named: &NamedOracle<'_>, sample: &Sample) -> Result<ParamValues, OracleError> {
    let mut values = ParamValues::new();
    for field in named.kernel.params.iter().filter(|f| f.shape_of.is_none()) {
        let fixed = named
            .raw
            .params
            .iter()
            .find(|(name, _)| name.value == field.name)
            .map(|(_, value)| fixed_value(&value.value, field.kind));
        let value = match fixed {
            Some(value) => value.ok_or_else(|| OracleError::Fixed {
                name: field.name.clone(),
                kind: field.kind,
            })?,
            None => sample
                .param(&field.name)
                .and_then(|p| p.to_kernel(field.kind))
                .ok_or_else(|| OracleError::NoValue {
                    name: field.name.clone(),
                })?,
        };
        values.insert(field.name.clone(), value);
    }
    Ok(values)
}

fn fixed_value(numbers: &[u64], kind: ParamKind) -> Option<ParamValue> {
    let numbers: Vec<usize> = numbers
        .iter()
        .map(|n| usize::try_from(*n).ok())
        .collect::<Option<_>>()?;
    match (kind, numbers.as_slice()) {
        (ParamKind::Usize, [n]) => Some(ParamValue::Usize(*n)),
        (ParamKind::UsizePair, [a, b]) => Some(ParamValue::Pair(*a, *b)),
        (ParamKind::UsizeArray4, [a, b, c, d]) => Some(ParamValue::Array4([*a, *b, *c, *d])),
        _ => None,
    }
}
