//! Running a kernel on a sample: operands filled with seeded values of the dtype, parameters
//! taken from the sample by the kernel's own field descriptions, through the entry point (or the
//! executor, for a dtype no entry point declares).

use super::fill::Fill;
use super::sample::{Rng, Sample};

use super::constraints::{Domain, ValueBound};
use crate::providers::{CallOutcome, Crash, How, Kernel, Traced};
use crate::semantics::float::signalling_nan;
use fkc_provider::{
    AnyTensor, DType, EntryPointInfo, Operand, ParamValue, ParamValues, TensorError,
};

/// An operand as the semantics see it: dims and values in f64 (already rounded to the dtype).
#[derive(Debug, Clone)]
pub struct Input {
    pub dims: Vec<usize>,
    pub values: Vec<f64>,
}

/// The operand named `name` among `inputs` (given in `kernel`'s operand order), if passed.
pub fn operand_named<'i>(
    kernel: &EntryPointInfo,
    inputs: &'i [Option<Input>],
    name: &str,
) -> Option<&'i Input> {
    let slot = kernel.inputs.iter().position(|d| d.name == name)?;
    inputs.get(slot)?.as_ref()
}

/// What a kernel did with a sample.
#[derive(Debug)]
pub enum Outcome {
    /// It ran: each output's (shape, dtype, bytes), and whether a second run was bit-identical.
    Accepted(Box<Accepted>),
    /// It refused with an error (the message).
    Rejected(String),
    /// It crashed or hung (never a rejection).
    Crashed(Crash),
    /// The sample cannot be expressed as a call (a parameter the kernel needs is not sampled).
    Skipped(CallError),
}

/// Why a sample cannot be expressed as a call of a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// An operand could not be built (its dims overflow).
    Operand(fkc_provider::TensorError),
    /// A parameter the kernel takes has no value in the sample: its name.
    NoParam(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Operand(error) => write!(f, "{error}"),
            CallError::NoParam(name) => write!(f, "no sampled value for `{name}`"),
        }
    }
}

/// What an accepted call gave.
#[derive(Debug)]
pub struct Accepted {
    pub outputs: Vec<(Vec<usize>, DType, usize)>,
    /// Every output's values (in f64, exactly as the dtype held them).
    pub values: Vec<Vec<f64>>,
    /// Every output's bit patterns in its dtype.
    pub bits: Vec<Vec<u64>>,
    /// The operands the kernel ran on, for the oracle.
    pub inputs: Vec<Option<Input>>,
    /// The bit patterns of the NaNs among the operands (in their dtype).
    pub input_nans: std::collections::BTreeSet<u64>,
    pub repeat_identical: Option<bool>,
    /// The code paths the kernel said it took (on every run, every level).
    pub paths: Vec<String>,
    /// The same call at each further instruction-set level.
    pub at_levels: Vec<AtLevel>,
}

impl Accepted {
    /// Every output's shape, as the shape rules give them.
    pub fn shapes(&self) -> Vec<Vec<i64>> {
        self.outputs
            .iter()
            .map(|(shape, _, _)| shape.iter().map(|d| *d as i64).collect())
            .collect()
    }
}

/// The call run again at another instruction-set level.
#[derive(Debug)]
pub struct AtLevel {
    pub level: String,
    pub result: LevelResult,
}

/// What a run at another level gave, against the main run.
#[derive(Debug)]
pub enum LevelResult {
    /// Every output bit for bit the main run's.
    Same,
    /// Different bits: its values and bit patterns.
    Differs {
        values: Vec<Vec<f64>>,
        bits: Vec<Vec<u64>>,
    },
    /// It refused or crashed where the main run did not.
    Failed(String),
}

/// How the gate calls a kernel on one sample.
#[derive(Debug, Clone, Copy, Default)]
pub struct Runs<'a> {
    /// Run twice on the same operands (determinism).
    pub repeat: bool,
    /// The instruction-set level of the main run (`None`: the provider's choice).
    pub level: Option<&'a str>,
    /// Further levels to run the same call at.
    pub others: &'a [String],
}

/// One operand element a designed run sets, over what its fill gives: the kernel's operand
/// slot, the element's row-major index, its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Placed {
    pub slot: usize,
    pub flat: usize,
    pub value: f64,
}

/// The operands of a call on `sample`, filled by `fill` in `dtype` (an operand of its own dtype
/// in that one), then the `placed` elements set; an input with `values` bounds gets elements
/// within them (and none placed).
pub(crate) fn operands(
    kernel: &EntryPointInfo,
    sample: &Sample,
    dtype: DType,
    fill: Fill,
    bounds: &[ValueBound],
    placed: &[Placed],
) -> Result<Vec<Option<Operand>>, CallError> {
    let seed = fill.seed();
    let mut rng = Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15);
    let small = small_integers(seed);
    kernel
        .inputs
        .iter()
        .enumerate()
        .map(|(slot, desc)| {
            let Some((_, dims, present)) =
                sample.inputs.iter().find(|(name, _, _)| *name == desc.name)
            else {
                return Ok(None);
            };
            if !present {
                return Ok(None);
            }
            let shape: Vec<usize> = dims
                .iter()
                .map(|d| usize::try_from(*d).unwrap_or(0))
                .collect();
            let count: usize = shape.iter().product();
            // an operand of its own dtype (an `I64` index) keeps it whatever the call's
            let dtype = desc.dtype.unwrap_or(dtype);
            if let Some(bound) = bounds.iter().find(|b| b.input == desc.name) {
                let values = fill.bounded(&mut rng, bound, count);
                return AnyTensor::from_f64(dtype, &shape, &values)
                    .map(|t| Some(Operand::contiguous(t)))
                    .map_err(CallError::Operand);
            }
            let mut values = fill.values(&mut rng, dtype, count, small);
            for placed in placed.iter().filter(|p| p.slot == slot) {
                if let Some(value) = values.get_mut(placed.flat) {
                    *value = placed.value;
                }
            }
            tensor_of(dtype, &shape, &values)
                .map(|t| Some(Operand::contiguous(t)))
                .map_err(CallError::Operand)
        })
        .collect()
}

/// A tensor of `dtype` holding `values`, rounded to it — except a signalling NaN among them,
/// which keeps its sign, its payload's top bits and its quiet bit clear (the special values'
/// signalling NaN, which a conversion through the hardware would quiet).
fn tensor_of(dtype: DType, shape: &[usize], values: &[f64]) -> Result<AnyTensor, TensorError> {
    let tensor = AnyTensor::from_f64(dtype, shape, values)?;
    if !values.iter().any(|v| signalling_nan(*v, dtype).is_some()) {
        return Ok(tensor);
    }
    let bits: Vec<u64> = (tensor.to_bits().into_iter().zip(values))
        .map(|(bits, value)| signalling_nan(*value, dtype).unwrap_or(bits))
        .collect();
    AnyTensor::from_bits(dtype, shape, &bits)
}

/// Whether a call with operands filled under `seed` draws small integers (within ±4: sums a
/// scale brings into range, not past it): half the calls, by a bit of the mixed seed — and of
/// two seeds that differ in the lowest bit only, exactly one (the admitted samples are run
/// under the gate's seed with their index mixed in, so of two samples at indices `2k` and
/// `2k + 1`, one draws small integers and the other the whole range).
fn small_integers(seed: u64) -> bool {
    let mixed = (seed | 1) ^ 0x9e37_79b9_7f4a_7c15;
    (mixed.wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 63 == 1) ^ (seed & 1 == 1)
}

/// A call's arguments for `sample`: its operands filled by `fill` (inputs with `values` within
/// `bounds`), and its parameter values; `Err` says why the sample cannot be expressed as a
/// call.
pub(crate) fn arguments(
    kernel: &EntryPointInfo,
    sample: &Sample,
    dtype: DType,
    fill: Fill,
    bounds: &[ValueBound],
) -> Result<(Vec<Option<Operand>>, ParamValues), CallError> {
    Ok((
        operands(kernel, sample, dtype, fill, bounds, &[])?,
        params(kernel, sample)?,
    ))
}

pub(crate) fn params(kernel: &EntryPointInfo, sample: &Sample) -> Result<ParamValues, CallError> {
    let mut values = ParamValues::new();
    for field in kernel.params.iter().filter(|f| f.shape_of.is_none()) {
        let value = sample
            .param(&field.name)
            .and_then(|p| p.to_kernel(field.kind))
            .ok_or_else(|| CallError::NoParam(field.name.clone()))?;
        values.insert(field.name.clone(), value);
    }
    Ok(values)
}

/// The operands as the oracles see them: dims and values in f64 (exactly the dtype's values).
pub(super) fn oracle_inputs(operands: &[Option<Operand>]) -> Vec<Option<Input>> {
    operands
        .iter()
        .map(|operand| {
            operand.as_ref().map(|o| Input {
                dims: o.shape().to_vec(),
                values: o.storage().to_f64_vec(),
            })
        })
        .collect()
}

/// Runs `kernel` on `sample` as `runs` says. Outputs far larger than the contract's shape
/// rule gives for the sample are not decoded.
pub fn call(
    kernel: &Kernel<'_>,
    domain: &Domain<'_>,
    sample: &Sample,
    dtype: DType,
    seed: u64,
    runs: Runs<'_>,
) -> Outcome {
    call_filled(kernel, domain, sample, dtype, Fill::Random(seed), runs)
}

/// [`call`] with operands filled by `fill`.
pub fn call_filled(
    kernel: &Kernel<'_>,
    domain: &Domain<'_>,
    sample: &Sample,
    dtype: DType,
    fill: Fill,
    runs: Runs<'_>,
) -> Outcome {
    call_placed(kernel, domain, sample, dtype, (fill, &[]), runs)
}

/// [`call_filled`] with the `placed` elements set over what the fill gives.
pub(crate) fn call_placed(
    kernel: &Kernel<'_>,
    domain: &Domain<'_>,
    sample: &Sample,
    dtype: DType,
    (fill, placed): (Fill, &[Placed]),
    runs: Runs<'_>,
) -> Outcome {
    let bounds = domain.value_bounds(sample, dtype);
    let arguments = operands(kernel, sample, dtype, fill, &bounds, placed)
        .and_then(|operands| Ok((operands, params(kernel, sample)?)));
    let (operands, values) = match arguments {
        Ok(arguments) => arguments,
        Err(error) => return Outcome::Skipped(error),
    };
    let expected = if kernel.provider.is_in_process() {
        Vec::new() // nothing to bound: in process, outputs are never decoded
    } else {
        expected_elements(domain, sample, dtype)
    };
    let run = |level: Option<&str>| {
        let how = How {
            expected: Some(&expected),
            level,
        };
        kernel.run_traced(&operands, &values, how)
    };
    let Traced {
        outcome, mut paths, ..
    } = run(runs.level);
    let main_paths = at_level(&paths, runs.level);
    paths.extend(main_paths);
    let first = match outcome {
        CallOutcome::Outputs(outputs) => outputs,
        CallOutcome::Rejected(error) => return Outcome::Rejected(error),
        CallOutcome::Crashed(crash) => return Outcome::Crashed(crash),
    };
    let bits: Vec<Vec<u64>> = first.iter().map(AnyTensor::to_bits).collect();
    // A second run that crashed (or was not made) says nothing about determinism.
    let repeat_identical = match runs.repeat.then(|| run(runs.level)) {
        None => None,
        Some(second) => match second.outcome {
            CallOutcome::Crashed(crash) => return Outcome::Crashed(crash),
            CallOutcome::Outputs(second) => Some(same_bits(&second, &bits)),
            CallOutcome::Rejected(_) => Some(false),
        },
    };
    let mut at_levels = Vec::with_capacity(runs.others.len());
    for level in runs.others {
        let traced = run(Some(level));
        paths.extend(at_level(&traced.paths, Some(level)));
        paths.extend(traced.paths);
        let result = match traced.outcome {
            CallOutcome::Outputs(outputs) if same_bits(&outputs, &bits) => LevelResult::Same,
            CallOutcome::Outputs(outputs) => LevelResult::Differs {
                values: outputs.iter().map(AnyTensor::to_f64_vec).collect(),
                bits: outputs.iter().map(AnyTensor::to_bits).collect(),
            },
            CallOutcome::Rejected(error) => LevelResult::Failed(format!("it refused: {error}")),
            CallOutcome::Crashed(crash) => LevelResult::Failed(crash.to_string()),
        };
        at_levels.push(AtLevel {
            level: level.clone(),
            result,
        });
    }
    paths.sort();
    paths.dedup();
    Outcome::Accepted(Box::new(Accepted {
        outputs: first
            .iter()
            .map(|t| (t.shape().to_vec(), t.dtype(), t.size_bytes()))
            .collect(),
        values: first.iter().map(AnyTensor::to_f64_vec).collect(),
        bits,
        inputs: oracle_inputs(&operands),
        input_nans: input_nans(&operands),
        repeat_identical,
        paths,
        at_levels,
    }))
}

/// The separator of a path's name and the level a call took it at (`tile.4ch.4v@x86-v4`).
pub(super) const AT_LEVEL: char = '@';

/// `paths` as taken at `level` (`path@level`; none when the provider chose the level).
fn at_level(paths: &[String], level: Option<&str>) -> Vec<String> {
    let Some(level) = level else {
        return Vec::new();
    };
    (paths.iter())
        .filter(|p| !p.starts_with("level."))
        .map(|p| format!("{p}{AT_LEVEL}{level}"))
        .collect()
}

/// The bit patterns of the NaNs among `operands`, in their dtype.
fn input_nans(operands: &[Option<Operand>]) -> std::collections::BTreeSet<u64> {
    operands
        .iter()
        .flatten()
        .flat_map(|o| {
            let dtype = o.dtype();
            o.storage()
                .to_bits()
                .into_iter()
                .filter(move |b| crate::semantics::float::is_nan(*b, dtype))
        })
        .collect()
}

/// Whether `outputs` have exactly these bit patterns.
fn same_bits(outputs: &[AnyTensor], bits: &[Vec<u64>]) -> bool {
    outputs.len() == bits.len() && outputs.iter().zip(bits).all(|(o, b)| o.to_bits() == *b)
}

/// The elements of each output the contract's shape rule gives for `sample` (0 where it
/// gives none).
fn expected_elements(domain: &Domain<'_>, sample: &Sample, dtype: DType) -> Vec<usize> {
    let bindings = domain.bindings(sample, dtype);
    domain
        .outputs(sample, &bindings)
        .unwrap_or_default()
        .iter()
        .map(|dims| {
            dims.iter()
                .try_fold(1usize, |count, d| {
                    count.checked_mul(usize::try_from(*d).ok()?)
                })
                .unwrap_or(0)
        })
        .collect()
}

/// Whether the provider's executor runs `kernel`'s op kind on operands of `dtype` (false
/// without an op kind or an executor).
pub fn executor_accepts(
    kernel: &Kernel<'_>,
    domain: &Domain<'_>,
    sample: &Sample,
    dtype: DType,
) -> bool {
    let Some(op) = kernel.op_kind.as_deref() else {
        return false;
    };
    if !kernel.provider.description().executor {
        return false;
    }
    let bounds = domain.value_bounds(sample, dtype);
    let Ok((operands, mut values)) = arguments(kernel, sample, dtype, Fill::Random(1), &bounds)
    else {
        return false;
    };
    let bindings = domain.bindings(sample, dtype);
    let Some(outputs) = domain.outputs(sample, &bindings) else {
        return false;
    };
    for field in &kernel.params {
        let Some(of) = field.shape_of.as_deref() else {
            continue;
        };
        let dims = if of == "out" {
            outputs.first().cloned()
        } else {
            sample.dims(of).map(<[i64]>::to_vec)
        };
        let Some(array) = dims.and_then(|d| <[i64; 4]>::try_from(d).ok()) else {
            return false;
        };
        let Some(array) = array
            .iter()
            .map(|d| usize::try_from(*d).ok())
            .collect::<Option<Vec<usize>>>()
        else {
            return false;
        };
        let Ok(array) = <[usize; 4]>::try_from(array) else {
            return false;
        };
        values.insert(field.name.clone(), ParamValue::Array4(array));
    }
    matches!(
        kernel.provider.execute(op, &operands, &values),
        CallOutcome::Outputs(_)
    )
}
