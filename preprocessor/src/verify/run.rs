//! Running a kernel on a sample: operands filled with seeded values of the dtype, parameters
//! taken from the sample by the kernel's own field descriptions, through the entry point (or the
//! executor, for a dtype no entry point declares).

use super::sample::{Rng, Sample};

use super::constraints::Domain;
use crate::providers::{CallOutcome, Crash, How, Kernel, Traced};
use fkc_provider::{AnyTensor, DType, EntryPointInfo, Operand, ParamValue, ParamValues};

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

/// How operand values are chosen.
#[derive(Debug, Clone, Copy)]
pub enum Fill {
    /// Seeded values in [-1, 1) (the gate's samples).
    Random(u64),
    /// Seeded values whose exponents spread as widely as the dtype allows without overflow in
    /// a product (±2^k·(1 + f) with |k| up to 5 in half precision, 20 in single and double),
    /// so that any change of summation order changes bits.
    WideExponents(u64),
    /// Seeded values of which about one in three is special: NaN (canonical in every other run,
    /// with a payload, or negative), ±Inf, -0.0, the smallest subnormal, or ±3/4 of the largest finite value of the
    /// dtype.
    Special(u64),
    /// Seeded `+0.0`, `-0.0` and `-1.0`: windows and sums whose result is a zero of either
    /// sign, so that a bitwise claim's zero signs are put to the test.
    SignedZeros(u64),
}

/// One value for [`Fill::Special`]; without `canonical`, the canonical NaN's place is taken by
/// another payload (so that a kernel which makes every NaN canonical is told apart from one
/// that passes an operand's NaN on).
fn special_value(rng: &mut Rng, dtype: DType, canonical: bool) -> f64 {
    let (largest, smallest) = match dtype {
        DType::F64 => (f64::MAX, 5e-324),
        DType::F32 => (f64::from(f32::MAX), 2f64.powi(-149)),
        DType::BF16 => (f64::from(half::bf16::MAX), 2f64.powi(-133)),
        DType::F16 => (f64::from(half::f16::MAX), 2f64.powi(-24)),
    };
    match rng.range(0, 26) {
        0 if canonical => f64::NAN,
        0 => f64::from_bits(0x7ffa_0000_0000_0000),
        // NaNs that are not the canonical one: a payload, and a sign (x86's default NaN).
        7 => f64::from_bits(0x7ffc_0000_0000_0000),
        8 => f64::from_bits(0xfff8_0000_0000_0000),
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => -0.0,
        4 => smallest,
        5 => 0.75 * largest,
        6 => -0.75 * largest,
        _ => rng.unit(),
    }
}

/// One wide-exponent value for `dtype`.
fn wide_exponent(rng: &mut Rng, dtype: DType) -> f64 {
    let reach = match dtype {
        DType::BF16 | DType::F16 => 5,
        DType::F32 | DType::F64 => 20,
    };
    let exponent = i32::try_from(rng.range(-reach, reach)).unwrap_or(0);
    let mantissa = 1.0 + (rng.unit() + 1.0) / 2.0;
    let sign = if rng.range(0, 1) == 0 { -1.0 } else { 1.0 };
    sign * mantissa * 2f64.powi(exponent)
}

/// One value for [`Fill::SignedZeros`]: `+0.0` or `-0.0` three times in eight each, else
/// `-1.0`.
fn signed_zero(rng: &mut Rng) -> f64 {
    match rng.range(0, 7) {
        0..=2 => 0.0,
        3..=5 => -0.0,
        _ => -1.0,
    }
}

pub(crate) fn operands(
    kernel: &EntryPointInfo,
    sample: &Sample,
    dtype: DType,
    fill: Fill,
) -> Result<Vec<Option<Operand>>, CallError> {
    let seed = match fill {
        Fill::Random(seed)
        | Fill::WideExponents(seed)
        | Fill::Special(seed)
        | Fill::SignedZeros(seed) => seed,
    };
    let mut rng = Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15);
    kernel
        .inputs
        .iter()
        .map(|desc| {
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
            let values: Vec<f64> = match fill {
                Fill::Random(_) => (0..count).map(|_| rng.unit()).collect(),
                Fill::Special(seed) => {
                    // Every other run (by the run index in bits 16 and up) without it.
                    let canonical = (seed >> 16) & 1 == 0;
                    (0..count)
                        .map(|_| special_value(&mut rng, dtype, canonical))
                        .collect()
                }
                Fill::WideExponents(_) => {
                    (0..count).map(|_| wide_exponent(&mut rng, dtype)).collect()
                }
                Fill::SignedZeros(_) => (0..count).map(|_| signed_zero(&mut rng)).collect(),
            };
            AnyTensor::from_f64(dtype, &shape, &values)
                .map(|t| Some(Operand::contiguous(t)))
                .map_err(CallError::Operand)
        })
        .collect()
}

/// A call's arguments for `sample`: its operands filled by `fill`, and its parameter values;
/// `Err` says why the sample cannot be expressed as a call.
pub(crate) fn arguments(
    kernel: &EntryPointInfo,
    sample: &Sample,
    dtype: DType,
    fill: Fill,
) -> Result<(Vec<Option<Operand>>, ParamValues), CallError> {
    Ok((
        operands(kernel, sample, dtype, fill)?,
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
    let (operands, values) = match arguments(kernel, sample, dtype, fill) {
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
    let Traced { outcome, mut paths } = run(runs.level);
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
    let Ok((operands, mut values)) = arguments(kernel, sample, dtype, Fill::Random(1)) else {
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
