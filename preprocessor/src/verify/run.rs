//! Running a kernel on a sample: operands filled with seeded values of the dtype, parameters
//! taken from the sample by the kernel's own field descriptions, through the entry point (or the
//! executor, for a dtype no entry point declares).

use super::sample::{Rng, Sample};

use super::constraints::{Domain, ValueBound};
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
    /// Seeded values near the square root of the dtype's smallest normal value (and one in
    /// four below the smallest normal itself), so that products, sums and some operands are
    /// subnormal: a kernel that flushes subnormals to zero is told apart.
    NearUnderflow(u64),
}

/// One value for [`Fill::Special`]; without `canonical`, the canonical NaN's place is taken by
/// another payload (so that a kernel which makes every NaN canonical is told apart from one
/// that passes an operand's NaN on). An integer dtype's special values are its ends and their
/// neighbours, 0 and ±1.
fn special_value(rng: &mut Rng, dtype: DType, canonical: bool) -> f64 {
    if let Some((low, high)) = dtype.int_range() {
        let (low, high) = (low as f64, high as f64);
        return match rng.range(0, 8) {
            0 => low,
            1 => high,
            2 => low + 1.0,
            3 => high - 1.0,
            4 => 0.0,
            5 => 1.0_f64.min(high),
            6 => (-1.0_f64).max(low),
            _ => integer_value(rng, dtype),
        };
    }
    let (largest, smallest) = (
        crate::semantics::float::largest(dtype),
        crate::semantics::float::smallest_subnormal(dtype),
    );
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

/// A seeded integer of an integer `dtype`: anywhere in its range for the 8-bit ones and
/// `Bool`, within ±2^31 for the wider ones (so that 64-bit values stay exact in f64).
fn integer_value(rng: &mut Rng, dtype: DType) -> f64 {
    let (low, high) = dtype.int_range().unwrap_or((0, 0));
    let (low, high) = (low.max(-(1 << 31)) as i64, high.min((1 << 31) - 1) as i64);
    rng.range(low, high) as f64
}

/// One wide-exponent value for `dtype`.
fn wide_exponent(rng: &mut Rng, dtype: DType) -> f64 {
    if !dtype.is_float() {
        return integer_value(rng, dtype);
    }
    let reach = match dtype {
        DType::F8E5M2 => 3,
        DType::BF16 | DType::F16 => 5,
        _ => 20,
    };
    let exponent = i32::try_from(rng.range(-reach, reach)).unwrap_or(0);
    let mantissa = 1.0 + (rng.unit() + 1.0) / 2.0;
    let sign = if rng.range(0, 1) == 0 { -1.0 } else { 1.0 };
    sign * mantissa * 2f64.powi(exponent)
}

/// One value for [`Fill::NearUnderflow`]: `±(1 + f)·2^k` with `k` from four below to two
/// above half the smallest normal exponent (a product of two lies around the smallest normal),
/// and one in four with `k` up to six below the smallest normal exponent (a subnormal operand,
/// above the smallest subnormal); `f` is random, so that products carry more bits than a
/// subnormal keeps and their rounding shows. An integer dtype gets [`integer_value`]s.
fn near_underflow(rng: &mut Rng, dtype: DType) -> f64 {
    let Some(lowest) = smallest_normal_exponent(dtype) else {
        return integer_value(rng, dtype);
    };
    let (low, high) = match rng.range(0, 3) {
        0 => (lowest - 6, lowest - 1),
        _ => (lowest / 2 - 4, lowest / 2 + 2),
    };
    let exponent = i32::try_from(rng.range(low, high)).unwrap_or(0);
    let mantissa = 1.0 + (rng.unit() + 1.0) / 2.0;
    let sign = if rng.range(0, 1) == 0 { -1.0 } else { 1.0 };
    sign * mantissa * 2f64.powi(exponent)
}

/// The exponent of a float dtype's smallest normal value (`None` for an integer dtype).
fn smallest_normal_exponent(dtype: DType) -> Option<i64> {
    match dtype {
        DType::F64 => Some(-1022),
        DType::F32 | DType::BF16 => Some(-126),
        DType::F16 | DType::F8E5M2 => Some(-14),
        DType::I8 | DType::U8 | DType::I32 | DType::I64 | DType::Bool => None,
    }
}

/// One value for [`Fill::SignedZeros`]: `+0.0` or `-0.0` three times in eight each, else
/// `-1.0` (for an unsigned dtype, 1).
fn signed_zero(rng: &mut Rng, dtype: DType) -> f64 {
    match rng.range(0, 7) {
        0..=2 => 0.0,
        3..=5 => -0.0,
        _ if dtype.int_range().is_some_and(|(low, _)| low == 0) => 1.0,
        _ => -1.0,
    }
}

/// One value for [`Fill::Random`]: in [-1, 1) for a float dtype; for an integer one, any of
/// its values ([`integer_value`]) or, in calls whose seed says `small`, one within ±4 (so that
/// sums and products stay within the dtype's range and what follows them — a rounding, a
/// requantize — is seen, not only its saturation).
fn random_value(rng: &mut Rng, dtype: DType, small: bool) -> f64 {
    if dtype.is_float() {
        rng.unit()
    } else if small {
        let (low, high) = dtype.int_range().unwrap_or((0, 0));
        rng.range(low.max(-4) as i64, high.min(4) as i64) as f64
    } else {
        integer_value(rng, dtype)
    }
}

/// The operands of a call on `sample`, filled by `fill` in `dtype` (an operand of its own dtype
/// in that one); an input with `values` bounds gets elements within them.
pub(crate) fn operands(
    kernel: &EntryPointInfo,
    sample: &Sample,
    dtype: DType,
    fill: Fill,
    bounds: &[ValueBound],
) -> Result<Vec<Option<Operand>>, CallError> {
    let seed = match fill {
        Fill::Random(seed)
        | Fill::WideExponents(seed)
        | Fill::Special(seed)
        | Fill::SignedZeros(seed)
        | Fill::NearUnderflow(seed) => seed,
    };
    let mut rng = Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15);
    // half the calls (by a bit of the mixed seed) draw small integers
    let small = (seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 63 == 1;
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
            // an operand of its own dtype (an `I64` index) keeps it whatever the call's
            let dtype = desc.dtype.unwrap_or(dtype);
            if let Some(bound) = bounds.iter().find(|b| b.input == desc.name) {
                let values = bounded_values(&mut rng, fill, bound, count);
                return AnyTensor::from_f64(dtype, &shape, &values)
                    .map(|t| Some(Operand::contiguous(t)))
                    .map_err(CallError::Operand);
            }
            let values: Vec<f64> = match fill {
                Fill::Random(_) => (0..count)
                    .map(|_| random_value(&mut rng, dtype, small))
                    .collect(),
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
                Fill::SignedZeros(_) => (0..count).map(|_| signed_zero(&mut rng, dtype)).collect(),
                Fill::NearUnderflow(_) => (0..count)
                    .map(|_| near_underflow(&mut rng, dtype))
                    .collect(),
            };
            AnyTensor::from_f64(dtype, &shape, &values)
                .map(|t| Some(Operand::contiguous(t)))
                .map_err(CallError::Operand)
        })
        .collect()
}

/// Values within `bound` (its ends included): uniform, and under [`Fill::Special`] one in
/// three an end.
fn bounded_values(rng: &mut Rng, fill: Fill, bound: &ValueBound, count: usize) -> Vec<f64> {
    let (min, max) = (bound.min, bound.max.max(bound.min));
    (0..count)
        .map(|_| match (fill, rng.range(0, 5)) {
            (Fill::Special(_), 0) => min as f64,
            (Fill::Special(_), 1) => max as f64,
            _ => rng.range(min, max) as f64,
        })
        .collect()
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
        operands(kernel, sample, dtype, fill, bounds)?,
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
    let bounds = domain.value_bounds(sample, dtype);
    let (operands, values) = match arguments(kernel, sample, dtype, fill, &bounds) {
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
