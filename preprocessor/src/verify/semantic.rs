//! The gate's oracle: the contract's semantics run on the very operands the kernel ran on — in
//! `f64` with a forward error bound (every element's exact value, how far a kernel may be from
//! it, and the special values some order of its sums may give), or, where the contract claims
//! an order, in the dtype in exactly the written order (compared bit for bit). Every run also
//! counts the work for the cost checks. A failure of the semantics themselves on a sample (an
//! index outside its tensor, an element never written) is reported in the pseudo-code.

use super::Gate;
use super::constraints::Domain;
use super::run::{Input, operand_named};
use super::sample::Sample;
use super::shrink::sample_note;
use crate::contract::raw::RawContract;
use crate::contract::semantic::Semantics;
use crate::providers::Kernel;
use crate::semantics::{self, Approx, Counts, Exact, ParamValue, Rounded};
use fkc_provider::DType;
use std::sync::Arc;

/// What the semantics say about one run of a kernel.
#[derive(Debug, Clone)]
pub struct Expected {
    /// Per output, per element.
    pub outputs: Vec<Elements>,
    pub counts: Counts,
}

/// The expected elements of one output.
#[derive(Debug, Clone)]
pub enum Elements {
    /// The oracle: each element's exact value, bound and possible special values.
    Bounded(Vec<Approx>),
    /// The order reference: each element bit for bit.
    Ordered(Vec<f64>),
}

/// How the semantics are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// In f64 with a bound (the oracle).
    Bounded,
    /// In the dtype, in the written order.
    Ordered,
}

impl Gate<'_> {
    /// Whether the contract has semantics the gate can run.
    pub(super) fn has_semantics(&self) -> bool {
        self.domain.contract.semantics.is_some()
    }

    /// Whether the semantics select with `max` or `min` (where the NaN policy decides).
    pub(super) fn selects(&self) -> bool {
        self.domain
            .contract
            .semantics
            .as_ref()
            .is_some_and(|s| s.programs.iter().any(|c| c.program.selects))
    }

    /// Whether values are held to the written order (`precision.order`).
    pub(super) fn claims_order(&self) -> bool {
        let claimed = self
            .raw
            .precision
            .as_ref()
            .is_some_and(|p| p.order.is_some());
        claimed && self.has_semantics()
    }

    /// The semantics run on `inputs` (the kernel's operands, in the kernel's operand order) for
    /// `sample` with outputs of the `predicted` shapes: `Ok(None)` without semantics, `Err`
    /// after reporting that the semantics fail on this sample.
    pub(super) fn expected(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        inputs: &[Option<Input>],
        predicted: &[Vec<i64>],
        mode: Mode,
    ) -> Result<Option<Expected>, ()> {
        match evaluate(
            &self.domain,
            kernel,
            dtype,
            sample,
            inputs,
            predicted,
            mode,
            false,
        ) {
            Ok(expected) => Ok(expected.map(|(expected, _)| expected)),
            Err((semantics, error)) => {
                let mut diagnostic = semantics.diagnostic(&error, self.raw, self.source);
                diagnostic.notes.push(sample_note(dtype.name(), sample));
                self.diagnostics.push(diagnostic);
                Err(())
            }
        }
    }

    /// The work the semantics do on `sample` (whatever its values): for the cost formulas on a
    /// sample the kernel refused.
    pub(super) fn count_work(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        predicted: &[Vec<i64>],
    ) -> Option<Counts> {
        let inputs = zero_inputs(kernel, sample);
        // A refused sample may lie outside where the semantics are defined: no report then.
        let before = self.diagnostics.len();
        let expected = self.expected(kernel, dtype, sample, &inputs, predicted, Mode::Ordered);
        self.diagnostics.truncate(before);
        Some(expected.ok()??.counts)
    }

    /// The NaN policy the contract declares.
    pub(super) fn nan_policy(&self) -> semantics::float::NanPolicy {
        nan_policy(self.raw)
    }
}

/// The traces of one run (per output, per element, the steps that made it).
pub type Traces = Vec<Vec<Vec<semantics::Step>>>;

/// A run of the semantics: what they give (and traced), or where they failed.
pub type Evaluated =
    Result<Option<(Expected, Option<Traces>)>, (Arc<Semantics>, semantics::SemanticsError)>;

/// Zeros for every input of `kernel` that `sample` passes, in the kernel's operand order (the
/// semantics' work and traces do not depend on the values).
pub(super) fn zero_inputs(kernel: &Kernel<'_>, sample: &Sample) -> Vec<Option<Input>> {
    kernel
        .inputs
        .iter()
        .map(|desc| {
            let (_, dims, present) = sample.inputs.iter().find(|(n, _, _)| *n == desc.name)?;
            let dims: Vec<usize> = dims
                .iter()
                .map(|d| usize::try_from(*d).ok())
                .collect::<Option<_>>()?;
            let count = dims.iter().product();
            present.then(|| Input {
                dims,
                values: vec![0.0; count],
            })
        })
        .collect()
}

/// The semantics of `domain`'s contract run on `inputs` (the kernel's operands, in the kernel's
/// operand order) for `sample`, with outputs of the `predicted` shapes; with `trace`, also
/// what each output element was made from. `Ok(None)` without semantics for `dtype`.
#[allow(clippy::too_many_arguments)]
pub fn evaluate(
    domain: &Domain<'_>,
    kernel: &Kernel<'_>,
    dtype: DType,
    sample: &Sample,
    inputs: &[Option<Input>],
    predicted: &[Vec<i64>],
    mode: Mode,
    trace: bool,
) -> Evaluated {
    let Some(semantics) = domain.contract.semantics.clone() else {
        return Ok(None);
    };
    let by_name = |name: &str| {
        operand_named(kernel, inputs, name).map(|input| (input.dims.clone(), input.values.clone()))
    };
    let run_inputs: Vec<Option<(Vec<usize>, Vec<f64>)>> = semantics
        .signature
        .inputs
        .iter()
        .map(|input| by_name(&input.name))
        .collect();
    let outputs: Vec<Vec<usize>> = predicted
        .iter()
        .map(|dims| {
            dims.iter()
                .map(|d| usize::try_from(*d).unwrap_or(0))
                .collect()
        })
        .collect();
    let ranks: Vec<Option<usize>> = run_inputs
        .iter()
        .map(|input| input.as_ref().map(|(dims, _)| dims.len()))
        .chain(outputs.iter().map(|dims| Some(dims.len())))
        .collect();
    let Some(program) = semantics.program(dtype, &ranks) else {
        return Ok(None);
    };
    let params = param_values(domain, &semantics.signature, sample, predicted);
    let on = semantics::Inputs {
        inputs: &run_inputs,
        outputs: &outputs,
        params: &params,
        dtype,
    };
    let nan = nan_policy(domain.raw);
    let result = match mode {
        Mode::Bounded => semantics::run(program, &on, &Exact { nan }, trace).map(|outcome| {
            let exact = Exact { nan };
            let outputs = outcome
                .outputs
                .iter()
                .map(|cells| {
                    Elements::Bounded(
                        cells
                            .iter()
                            .map(|c| semantics::Arith::load(&exact, c, dtype))
                            .collect(),
                    )
                })
                .collect();
            let expected = Expected {
                outputs,
                counts: outcome.counts,
            };
            (expected, outcome.trace)
        }),
        Mode::Ordered => semantics::run(
            program,
            &on,
            &Rounded {
                nan,
                overflow: overflow_policy(domain.raw),
            },
            trace,
        )
        .map(|outcome| {
            let expected = Expected {
                outputs: outcome.outputs.into_iter().map(Elements::Ordered).collect(),
                counts: outcome.counts,
            };
            (expected, outcome.trace)
        }),
    };
    match result {
        Ok(done) => Ok(Some(done)),
        Err(error) => Err((semantics, error)),
    }
}

/// The kernel's operand slot of the semantics' tensor `tensor` when it is one of the contract's
/// inputs (the programs of a dtype share their tensors: the widest one says).
pub fn input_slot(
    domain: &Domain<'_>,
    kernel: &Kernel<'_>,
    dtype: DType,
    tensor: usize,
) -> Option<usize> {
    let declared = domain.contract.semantics.as_ref()?;
    let program = declared.widest_program(dtype)?;
    let semantics::ir::Origin::Input(k) = program.tensors.get(tensor)?.origin else {
        return None;
    };
    let name = &declared.signature.inputs.get(k)?.name;
    kernel.inputs.iter().position(|d| d.name == *name)
}

/// The NaN policy a contract declares.
pub fn nan_policy(raw: &RawContract) -> semantics::float::NanPolicy {
    use semantics::float::NanPolicy;
    match raw.precision.as_ref().and_then(|p| p.nan.as_ref()) {
        Some(nan) if nan.value == "ignore" => NanPolicy::Ignore,
        _ => NanPolicy::Propagate,
    }
}

/// The integer overflow policy a contract declares (`precision.overflow`, default `wrap`).
pub fn overflow_policy(raw: &RawContract) -> semantics::float::Overflow {
    use semantics::float::Overflow;
    match raw.precision.as_ref().and_then(|p| p.overflow.as_ref()) {
        Some(overflow) if overflow.value == "saturate" => Overflow::Saturate,
        _ => Overflow::Wrap,
    }
}

/// Each parameter the semantics name, on `sample`: a drawn field's value, or the dims of
/// the operand (or output) a shape-carrying field carries.
fn param_values(
    domain: &Domain<'_>,
    signature: &semantics::Signature,
    sample: &Sample,
    predicted: &[Vec<i64>],
) -> Vec<ParamValue> {
    use super::sample::Param;
    let shaped: Vec<(&str, &str)> = domain.shaped_fields().collect();
    signature
        .params
        .iter()
        .map(|param| {
            if let Some(value) = sample.param(&param.name) {
                return match value {
                    Param::Int(v) => ParamValue::Int(*v),
                    Param::Ints(vs) => ParamValue::Tuple(vs.clone()),
                    Param::Float(v) => ParamValue::Float(v.value()),
                    Param::Bool(b) => ParamValue::Int(i64::from(*b)),
                    Param::Text(text) => {
                        let values = match &param.form {
                            semantics::ParamForm::Enum(values) => values.as_slice(),
                            _ => &[],
                        };
                        let position = values.iter().position(|v| v == text);
                        ParamValue::Int(position.and_then(|p| i64::try_from(p).ok()).unwrap_or(-1))
                    }
                };
            }
            let of = shaped
                .iter()
                .find(|(field, _)| *field == param.name)
                .map(|(_, of)| *of);
            let dims = of.and_then(|of| {
                sample.dims(of).map(<[i64]>::to_vec).or_else(|| {
                    let index = domain.contract.outputs.iter().position(|o| o.name == of)?;
                    predicted.get(index).cloned()
                })
            });
            ParamValue::Tuple(dims.unwrap_or_default())
        })
        .collect()
}
