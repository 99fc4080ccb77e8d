//! The behavioural gate: the kernels really run. From deterministic samples of the contract's
//! domain ([`sample`]), every admitted sample must be accepted by every declared dtype's entry
//! point, every sample breaking exactly one constraint must be rejected, the shape and dtype
//! rules must hold on every result, repeated runs must be bit-identical where determinism is
//! promised, every dtype the contract does not declare must be refused, and the cost formulas
//! must evaluate (with `memory.host_bytes` equal to the bytes really allocated). A failure is
//! shrunk to a small counterexample and reported with a one-line reproduction.

pub mod geometry;
pub mod layout;
pub mod oracle;
pub mod run;
pub mod sample;
mod shrink;
pub mod worked;

use crate::contract::raw::{Determinism, RawContract};
use crate::contract::resolved::Contract;
use crate::diag::{Code, Diagnostic};
use crate::import::{Import, symbol_for};
use crate::providers::{Crash, Kernel, Provider};
use crate::source::SourceFile;
use fkc_provider::DType;
use run::{Outcome, call};
use sample::{Domain, Rng, Sample, Verdict};
use std::ops::Range;
use std::sync::Arc;

/// How much sampling to do (book.toml `[preprocessor.fkc] samples` and `seed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Admitted samples per contract (and breaking samples per constraint).
    pub samples: usize,
    pub seed: u64,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            samples: 24,
            seed: 0x5eed_f4c0,
        }
    }
}

/// Candidates drawn per wanted sample before giving up, and a hard cap, so that sampling takes
/// bounded time on any contract (however many constraints it declares).
const ATTEMPTS_PER_SAMPLE: usize = 150;
const MAX_ATTEMPTS: usize = 40_000;
/// Constraint evaluations per contract, at most (a contract with thousands of constraints gets
/// proportionally fewer candidates).
const MAX_EVALUATIONS: usize = 4_000_000;
/// Admitted samples also run in the other declared dtypes (half precision is slow in software).
const SAMPLES_PER_EXTRA_DTYPE: usize = 6;

/// Admitted samples with their predicted output shapes.
type Admitted = Vec<(Sample, Vec<Vec<i64>>)>;
/// Samples breaking exactly one constraint, with that constraint's index.
type Breaking = Vec<(Sample, usize)>;

/// What was verified, for the page: (check, what was run).
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    pub rows: Vec<(String, String)>,
    /// The worked example shown on the page (when the gate passed).
    pub worked: Option<worked::Worked>,
}

/// Runs the gate on one imported contract.
pub fn verify(
    raw: &RawContract,
    contract: &Contract,
    import: &Import,
    provider: &Provider,
    source: &Arc<SourceFile>,
    options: VerifyOptions,
) -> (Evidence, Vec<Diagnostic>) {
    let kernels: Vec<(DType, Kernel<'_>)> = import
        .entry_points
        .iter()
        .filter_map(|e| {
            let info = e.kernel.as_ref()?;
            Some((e.dtype, Kernel { info, provider }))
        })
        .collect();
    let Some(&(first_dtype, first_kernel)) = kernels.first() else {
        return (Evidence::default(), Vec::new());
    };
    let mut gate = Gate {
        raw,
        source,
        domain: Domain {
            raw,
            contract,
            kernel_params: &first_kernel.info.params,
        },
        diagnostics: Vec::new(),
        evidence: Evidence::default(),
        seed: options.seed,
        op_kind: raw
            .op_kind
            .as_ref()
            .map(|k| k.value.clone())
            .or_else(|| first_kernel.op_kind.clone())
            .unwrap_or_default(),
    };
    if !gate.operands_match(&first_kernel) {
        return (gate.evidence, gate.diagnostics);
    }
    let (admitted, breaking) = gate.draw(first_dtype, options);
    if admitted.is_empty() {
        gate.empty_domain(options);
        return (gate.evidence, gate.diagnostics);
    }
    gate.evidence.rows.push((
        "domain".to_owned(),
        format!(
            "{} admitted samples, {} samples breaking one constraint (seed {:#x})",
            admitted.len(),
            breaking.len(),
            options.seed
        ),
    ));
    for (index, &(dtype, kernel)) in kernels.iter().enumerate() {
        let take = if index == 0 {
            admitted.len()
        } else {
            SAMPLES_PER_EXTRA_DTYPE
        };
        if !gate.admitted(&kernel, dtype, &admitted[..take.min(admitted.len())]) {
            break; // one counterexample is enough; the other dtypes would repeat it
        }
    }
    gate.breaking(&first_kernel, first_dtype, &breaking);
    gate.layouts(&first_kernel, first_dtype, &admitted);
    gate.coverage(first_dtype, &admitted);
    if gate.diagnostics.is_empty() {
        let samples: Vec<&Sample> = admitted.iter().map(|(s, _)| s).collect();
        gate.evidence.worked = worked::example(&first_kernel, &gate.op_kind, first_dtype, &samples);
    }
    gate.undeclared_dtypes(import, &first_kernel, &admitted);
    (gate.evidence, gate.diagnostics)
}

/// How a result compared with the oracle.
#[derive(Debug, Clone, Copy)]
struct Agreement {
    /// Held to exact equality.
    exact: bool,
    /// The largest error as a fraction of its bound.
    worst: f64,
    /// For multiply-add kernels with a `flops` formula: (flops, 2 × MACs performed, 2 × taps visited).
    flops: Option<(i64, u64, u64)>,
}

struct Gate<'a> {
    raw: &'a RawContract,
    source: &'a Arc<SourceFile>,
    domain: Domain<'a>,
    diagnostics: Vec<Diagnostic>,
    evidence: Evidence,
    seed: u64,
    /// The op kind the contract declares (or the kernel's): it picks the value oracle.
    op_kind: String,
}

impl Gate<'_> {
    fn error(&mut self, code: Code, span: Range<usize>, message: String) -> &mut Diagnostic {
        self.diagnostics
            .push(Diagnostic::error(code, self.source, span, message));
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }

    /// The contract's inputs must be the kernel's operands (names, ranks, optionality).
    fn operands_match(&mut self, kernel: &Kernel<'_>) -> bool {
        let mut ok = true;
        for desc in &kernel.inputs {
            let input = self.raw.inputs.iter().find(|i| i.name.value == desc.name);
            let problem = match input {
                None if desc.optional => None,
                None => Some((
                    self.raw.kernel.span.clone(),
                    format!(
                        "the kernel takes an operand `{}` that the contract does not declare",
                        desc.name
                    ),
                )),
                Some(input) => {
                    let rank = input.rank.as_ref().map(|r| r.value);
                    (!desc.any_rank && rank != Some(desc.rank as u64)).then(|| {
                        let span = input
                            .rank
                            .as_ref()
                            .map_or(input.name.span.clone(), |r| r.span.clone());
                        (
                            span,
                            format!(
                                "`{}` has rank {} in the kernel, not {}",
                                desc.name,
                                desc.rank,
                                rank.map_or("unset".to_owned(), |r| r.to_string())
                            ),
                        )
                    })
                }
            };
            if let Some((span, message)) = problem {
                self.error(Code::OperandsMismatch, span, message)
                    .help
                    .push(format!(
                        "declare the kernel's operands: {}",
                        operand_list(kernel)
                    ));
                ok = false;
            }
        }
        for input in &self.raw.inputs {
            if !kernel.inputs.iter().any(|d| d.name == input.name.value) {
                let span = input.name.span.clone();
                self.error(
                    Code::OperandsMismatch,
                    span,
                    format!(
                        "`{}` is not an operand of `{}`",
                        input.name.value, kernel.symbol
                    ),
                )
                .help
                .push(format!(
                    "the kernel's operands are: {}",
                    operand_list(kernel)
                ));
                ok = false;
            }
        }
        ok
    }

    /// Draws admitted samples and samples breaking exactly one constraint.
    fn draw(&self, dtype: DType, options: VerifyOptions) -> (Admitted, Breaking) {
        let mut rng = Rng::new(options.seed);
        let constraints = self.domain.contract.input_constraints.len()
            + self.domain.contract.param_constraints.len();
        let mut admitted: Admitted = Vec::new();
        let mut breaking: Breaking = Vec::new();
        let attempts = ATTEMPTS_PER_SAMPLE
            .saturating_mul(options.samples.max(1))
            .saturating_mul(1 + constraints)
            .min(MAX_ATTEMPTS)
            .min(MAX_EVALUATIONS / (1 + constraints));
        for _ in 0..attempts {
            let sample = self.domain.draw(&mut rng);
            match self.domain.verdict(&sample, dtype) {
                Verdict::Admitted { outputs }
                    if admitted.len() < options.samples
                        && !admitted.iter().any(|(s, _)| *s == sample) =>
                {
                    admitted.push((sample, outputs));
                }
                Verdict::Breaks { constraint }
                    if breaking.iter().filter(|(_, c)| *c == constraint).count()
                        < options.samples.div_ceil(4) =>
                {
                    breaking.push((sample, constraint));
                }
                _ => {}
            }
            if admitted.len() >= options.samples
                && breaking.len() >= constraints * options.samples.div_ceil(4)
            {
                break;
            }
        }
        (admitted, breaking)
    }

    /// No drawn sample satisfies the contract: nothing could be verified, which is an error.
    fn empty_domain(&mut self, options: VerifyOptions) {
        let span = self
            .raw
            .outputs
            .first()
            .and_then(|o| o.shape_rule.as_ref().map(|r| r.span.clone()))
            .unwrap_or_else(|| self.raw.kernel.span.clone());
        let diagnostic = self.error(
            Code::EmptyDomain,
            span,
            "no sample satisfies this contract, so the gate could verify nothing".to_owned(),
        );
        diagnostic.notes.push(format!(
            "samples draw every dim from 1 to 6 and every op-param from 0 to 4 (seed {:#x}); none had every constraint true and every output dimension defined and at least 1",
            options.seed
        ));
        diagnostic.help.push(
            "check the shape rule and the constraints: together they must admit small inputs"
                .to_owned(),
        );
    }

    /// Every admitted sample runs, with the rules holding on the result; false on a failure.
    fn admitted(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        samples: &[(Sample, Vec<Vec<i64>>)],
    ) -> bool {
        let bitwise = self
            .raw
            .determinism
            .as_ref()
            .is_some_and(|d| d.value != Determinism::Nondeterministic);
        let mut ran = 0;
        let mut worst: f64 = 0.0;
        let mut all_exact = true;
        let mut flops_checked = 0;
        let mut largest_gap: f64 = 0.0;
        for (index, (sample, predicted)) in samples.iter().enumerate() {
            let outcome = call(
                kernel,
                &self.domain,
                sample,
                dtype,
                self.seed ^ index as u64,
                bitwise,
            );
            match outcome {
                Outcome::Rejected(_) => {
                    self.under_constrained(kernel, dtype, sample);
                    return false;
                }
                Outcome::Crashed(crash) => {
                    self.crashed(kernel, dtype, sample, &crash);
                    return false;
                }
                Outcome::Skipped(reason) => {
                    let span = self.raw.kernel.span.clone();
                    let diagnostic = self.error(
                        Code::OperandsMismatch,
                        span,
                        format!(
                            "the gate cannot call `{}` with this contract's parameters: {reason}",
                            kernel.symbol
                        ),
                    );
                    diagnostic.help.push(
                        "declare exactly the entry point's operands and parameters".to_owned(),
                    );
                    return false;
                }
                Outcome::Accepted {
                    outputs,
                    values,
                    inputs,
                    repeat_identical,
                } => {
                    ran += 1;
                    if !self.rules_hold(kernel, dtype, sample, predicted, &outputs) {
                        return false;
                    }
                    match self.values_hold(kernel, dtype, sample, &inputs, &values, predicted) {
                        Some(agreement) => {
                            worst = worst.max(agreement.worst);
                            all_exact &= agreement.exact;
                            if let Some((_, low, high)) = agreement.flops {
                                flops_checked += 1;
                                if high > 0 {
                                    largest_gap = largest_gap.max(1.0 - low as f64 / high as f64);
                                }
                            }
                        }
                        None => return false,
                    }
                    if repeat_identical == Some(false) {
                        self.nondeterministic(kernel, dtype, sample);
                        return false;
                    }
                }
            }
        }
        let values = match (oracle::has_reference(&self.op_kind), all_exact) {
            (false, _) => format!(
                "; values: not checked — no oracle for op kind `{}`",
                if self.op_kind.is_empty() {
                    "(none)"
                } else {
                    &self.op_kind
                }
            ),
            (true, true) => ", values exactly equal to an independent oracle's".to_owned(),
            (true, false) => format!(
                ", values within the error bound of an independent oracle (worst {:.0}% of it)",
                worst * 100.0
            ),
        };
        let already = self
            .evidence
            .rows
            .iter()
            .any(|(check, _)| check.starts_with("`flops`"));
        if flops_checked > 0 && !already {
            self.evidence.rows.push((
                "`flops` against the work done".to_owned(),
                format!(
                    "on {flops_checked} {} samples `flops` lies between 2 × the multiply-adds performed and 2 × the taps the loop nest visits, both counted by the oracle (padding taps are visited but skipped: up to {:.0}% of the taps on these samples)",
                    dtype.name(),
                    largest_gap * 100.0
                ),
            ));
        }
        self.evidence.rows.push((
            format!("{} accepts the admitted domain", dtype.name()),
            format!(
                "{ran} samples through `{}`: accepted, shapes and dtypes as the rules say{values}{}",
                kernel.symbol,
                if bitwise {
                    ", repeated runs bit-identical"
                } else {
                    ""
                }
            ),
        ));
        true
    }

    /// The values agree with the oracle: exactly where `max_ulp: 0` is claimed (or the operation
    /// is exact), otherwise within Higham's bound `γ_K·Σ|w·x|` in the dtype, and within
    /// `max_absolute` / `max_relative` when authored. Returns the worst error as a fraction of
    /// its bound (`None` after reporting a failure).
    fn values_hold(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        inputs: &[Option<oracle::Input>],
        values: &[Vec<f64>],
        predicted: &[Vec<i64>],
    ) -> Option<Agreement> {
        let (Some(reference), Some(actual)) = (
            oracle::reference(&self.op_kind, inputs, sample),
            values.first(),
        ) else {
            return Some(Agreement {
                exact: false,
                worst: 0.0,
                flops: None,
            });
        };
        let precision = self.raw.precision.as_ref();
        let exact = precision
            .and_then(|p| p.max_ulp.as_ref())
            .and_then(|m| m.value)
            == Some(0);
        let authored = |field: Option<&crate::contract::schema::Nullable<f64>>| {
            field.and_then(|f| f.as_ref()).and_then(|f| f.value)
        };
        let max_absolute = authored(precision.map(|p| &p.max_absolute));
        let max_relative = authored(precision.map(|p| &p.max_relative));
        let gamma = oracle::gamma(reference.terms + 1, oracle::unit_roundoff(dtype));
        let slack = (reference.terms as f64 + 2.0) * oracle::smallest_subnormal(dtype);
        if actual.len() != reference.values.len() {
            self.wrong_value(
                kernel,
                dtype,
                sample,
                actual.len(),
                f64::NAN,
                f64::NAN,
                0.0,
                true,
            );
            return None;
        }
        let mut worst: f64 = 0.0;
        for (index, (&got, &want)) in actual.iter().zip(&reference.values).enumerate() {
            let error = (got - want).abs();
            let magnitude = reference.magnitude.get(index).copied().unwrap_or(0.0);
            let bound = if exact {
                0.0
            } else {
                gamma * magnitude + slack
            };
            let within_bound = error <= bound || (got.is_nan() && want.is_nan());
            // Authored tolerances combine as `allclose` does: `|error| <= atol + rtol * |exact|`.
            let within_authored = (max_absolute.is_none() && max_relative.is_none())
                || error <= max_absolute.unwrap_or(0.0) + max_relative.unwrap_or(0.0) * want.abs();
            if !(within_bound && within_authored) {
                self.wrong_value(kernel, dtype, sample, index, got, want, bound, exact);
                return None;
            }
            if bound > 0.0 {
                worst = worst.max(error / bound);
            }
        }
        let exact = exact || reference.terms == 0;
        let flops = self.flops_within_work(kernel, dtype, sample, predicted, reference.work)?;
        Some(Agreement {
            exact,
            worst,
            flops,
        })
    }

    /// `flops` lies between 2 × the multiply-adds really performed and 2 × the taps the loop
    /// nest visits (counted by the oracle, independently of the formula). `None` after
    /// reporting a failure; `Some(None)` when there is nothing to check.
    fn flops_within_work(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        predicted: &[Vec<i64>],
        work: Option<(u64, u64)>,
    ) -> Option<Option<(i64, u64, u64)>> {
        let Some((macs, visited)) = work else {
            return Some(None);
        };
        let Some((_, formula)) = self
            .domain
            .contract
            .formulas
            .iter()
            .find(|(name, _)| name == "flops")
        else {
            return Some(None);
        };
        let mut bindings = self.domain.bindings(sample, dtype);
        self.domain.bind_outputs(&mut bindings, predicted);
        let Some(flops) = crate::expr::eval(&formula.expr, &bindings)
            .ok()
            .and_then(|v| v.as_int())
        else {
            return Some(None); // reported by the cost check
        };
        let (low, high) = (2 * macs, 2 * visited);
        let within = u64::try_from(flops).is_ok_and(|f| (low..=high).contains(&f));
        if within {
            return Some(Some((flops, low, high)));
        }
        let span = formula.source.span.clone();
        let diagnostic = self.error(
            Code::CostFormula,
            span,
            format!("`flops` is {flops}, outside [2 × {macs} multiply-adds performed, 2 × {visited} taps visited] = [{low}, {high}] for `{}`", kernel.symbol),
        );
        diagnostic
            .notes
            .push(format!("sample ({}): {}", dtype.name(), sample.describe()));
        diagnostic
            .help
            .push("count 2 flops per multiply-add the kernel's loop nest visits".to_owned());
        None
    }

    #[allow(clippy::too_many_arguments)]
    fn wrong_value(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        index: usize,
        got: f64,
        want: f64,
        bound: f64,
        exact: bool,
    ) {
        let span = self
            .raw
            .precision
            .as_ref()
            .and_then(|p| p.max_ulp.as_ref().map(|m| m.span.clone()))
            .unwrap_or_else(|| self.raw.kernel.span.clone());
        let claim = if exact {
            "exactly (max_ulp: 0)".to_owned()
        } else {
            format!("within {bound:e} (γ_K·Σ|w·x| in {})", dtype.name())
        };
        let diagnostic = self.error(
            Code::WrongValue,
            span,
            format!("`{}` computes {got:e} at output element {index}; the oracle's value is {want:e}, and the contract promises it {claim}", kernel.symbol),
        );
        diagnostic
            .notes
            .push(format!("sample ({}): {}", dtype.name(), sample.describe()));
        diagnostic
            .help
            .push("fix the kernel, or state the precision it really has".to_owned());
    }

    fn under_constrained(&mut self, kernel: &Kernel<'_>, dtype: DType, sample: &Sample) {
        let small = shrink::shrink(&self.domain, sample, dtype, |candidate| {
            matches!(
                call(kernel, &self.domain, candidate, dtype, self.seed, false),
                Outcome::Rejected(_)
            )
        });
        let error = match call(kernel, &self.domain, &small, dtype, self.seed, false) {
            Outcome::Rejected(error) => error,
            _ => String::new(),
        };
        let span = self
            .raw
            .inputs
            .first()
            .map_or(self.raw.kernel.span.clone(), |i| i.span.clone());
        let diagnostic = self.error(
            Code::UnderConstrained,
            span,
            format!(
                "the contract admits a sample that `{}` rejects",
                kernel.symbol
            ),
        );
        diagnostic.label = Some("every constraint holds for the counterexample".to_owned());
        diagnostic.notes.push(format!(
            "counterexample ({}): {}",
            dtype.name(),
            small.describe()
        ));
        diagnostic.notes.push(format!("the kernel says: {error}"));
        diagnostic.help.push("add the constraint the kernel enforces, so the contract admits only what the kernel accepts".to_owned());
    }

    fn rules_hold(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        predicted: &[Vec<i64>],
        outputs: &[(Vec<usize>, DType, usize)],
    ) -> bool {
        if outputs.len() != self.raw.outputs.len() {
            let span = self
                .raw
                .outputs
                .first()
                .map_or(self.raw.kernel.span.clone(), |o| o.span.clone());
            let diagnostic = self.error(
                Code::ShapeRuleViolated,
                span,
                format!(
                    "`{}` returned {} outputs, but the contract declares {}",
                    kernel.symbol,
                    outputs.len(),
                    self.raw.outputs.len()
                ),
            );
            diagnostic.help.push(
                "declare one entry of `return.outputs` per output the kernel returns".to_owned(),
            );
            return false;
        }
        for (index, output) in self.raw.outputs.iter().enumerate() {
            let Some((shape, out_dtype, _)) = outputs.get(index) else {
                continue;
            };
            let expected = predicted.get(index).cloned().unwrap_or_default();
            let actual: Vec<i64> = shape
                .iter()
                .map(|d| i64::try_from(*d).unwrap_or(-1))
                .collect();
            if actual != expected {
                let span = output
                    .shape_rule
                    .as_ref()
                    .map_or(output.name.span.clone(), |r| r.span.clone());
                let diagnostic = self.error(
                    Code::ShapeRuleViolated,
                    span,
                    format!(
                        "`{}` has shape {actual:?}, but the shape rule says {expected:?}",
                        output.name.value
                    ),
                );
                diagnostic
                    .notes
                    .push(format!("sample ({}): {}", dtype.name(), sample.describe()));
                diagnostic
                    .help
                    .push("correct the shape rule to what the kernel computes".to_owned());
                return false;
            }
            let wanted = self
                .domain
                .contract
                .outputs
                .get(index)
                .and_then(|o| o.dtype_from.as_ref())
                .map(|_| dtype);
            if wanted.is_some_and(|w| w != *out_dtype) {
                let span = output
                    .dtype_rule
                    .as_ref()
                    .map_or(output.name.span.clone(), |r| r.span.clone());
                self.error(
                    Code::DtypeRuleViolated,
                    span,
                    format!(
                        "`{}` is {}, but the dtype rule says {}",
                        output.name.value,
                        out_dtype.name(),
                        dtype.name()
                    ),
                )
                .help
                .push("correct the dtype rule".to_owned());
                return false;
            }
        }
        let allocated = outputs.iter().map(|(_, _, bytes)| bytes).sum();
        self.cost_holds(sample, dtype, predicted, allocated, kernel)
    }

    /// Every cost formula evaluates to a non-negative number; host_bytes is the outputs' size.
    fn cost_holds(
        &mut self,
        sample: &Sample,
        dtype: DType,
        predicted: &[Vec<i64>],
        allocated: usize,
        kernel: &Kernel<'_>,
    ) -> bool {
        let mut bindings = self.domain.bindings(sample, dtype);
        self.domain.bind_outputs(&mut bindings, predicted);
        for (name, formula) in &self.domain.contract.formulas {
            let value = crate::expr::eval(&formula.expr, &bindings)
                .ok()
                .and_then(|v| v.as_int());
            let problem = match value {
                None => Some(format!(
                    "`{name}` cannot be evaluated on a sample `{}` accepts",
                    kernel.symbol
                )),
                Some(v) if v < 0 => Some(format!(
                    "`{name}` is negative ({v}) on a sample `{}` accepts",
                    kernel.symbol
                )),
                Some(v)
                    if name == "memory.host_bytes" && i64::try_from(allocated).ok() != Some(v) =>
                {
                    Some(format!(
                        "`memory.host_bytes` says {v} bytes, but the kernel allocated {allocated}"
                    ))
                }
                Some(_) => None,
            };
            if let Some(message) = problem {
                let span = formula.source.span.clone();
                let diagnostic = self.error(Code::CostFormula, span, message);
                diagnostic
                    .notes
                    .push(format!("sample ({}): {}", dtype.name(), sample.describe()));
                diagnostic.help.push("a cost formula must evaluate to a non-negative integer on every accepted sample".to_owned());
                return false;
            }
        }
        true
    }

    /// The kernel crashed or hung on a sample: never a rejection, always a failure.
    fn crashed(&mut self, kernel: &Kernel<'_>, dtype: DType, sample: &Sample, crash: &Crash) {
        let span = self
            .raw
            .entry_point
            .as_ref()
            .map_or(self.raw.kernel.span.clone(), |e| e.span.clone());
        let code = match crash {
            Crash::TimedOut(_) => Code::KernelTimedOut,
            Crash::Panicked(_) | Crash::Died(_) => Code::KernelCrashed,
        };
        let diagnostic = self.error(code, span, format!("`{}`: {crash}", kernel.symbol));
        diagnostic.label = Some("this entry point".to_owned());
        diagnostic
            .notes
            .push(format!("sample ({}): {}", dtype.name(), sample.describe()));
        diagnostic.help.push(match crash {
            Crash::TimedOut(_) => "make the kernel return on this input (or raise `call-timeout-ms` in the provider's table of book.toml if it is only slow)".to_owned(),
            _ => "a kernel must refuse bad input with an error, never crash: fix the kernel, then rebuild the provider".to_owned(),
        });
    }

    fn nondeterministic(&mut self, kernel: &Kernel<'_>, dtype: DType, sample: &Sample) {
        let span = self
            .raw
            .determinism
            .as_ref()
            .map_or(self.raw.kernel.span.clone(), |d| d.span.clone());
        let diagnostic = self.error(
            Code::Nondeterministic,
            span,
            format!("two runs of `{}` on the same input differ", kernel.symbol),
        );
        diagnostic
            .notes
            .push(format!("sample ({}): {}", dtype.name(), sample.describe()));
        diagnostic.help.push(
            "declare `determinism: nondeterministic`, or make the kernel's order fixed".to_owned(),
        );
    }

    /// Every sample breaking exactly one constraint must be rejected.
    fn breaking(&mut self, kernel: &Kernel<'_>, dtype: DType, samples: &[(Sample, usize)]) {
        let mut rejected = 0;
        for (index, (sample, constraint)) in samples.iter().enumerate() {
            let outcome = call(
                kernel,
                &self.domain,
                sample,
                dtype,
                self.seed ^ index as u64,
                false,
            );
            if let Outcome::Crashed(crash) = &outcome {
                self.crashed(kernel, dtype, sample, crash);
                return;
            }
            if let Outcome::Accepted { .. } = outcome {
                let located = self.constraint_source(*constraint);
                let diagnostic = self.error(
                    Code::OverPromise,
                    located.0,
                    format!(
                        "`{}` accepts a sample that breaks this constraint",
                        kernel.symbol
                    ),
                );
                diagnostic.label = Some("the only constraint the sample breaks".to_owned());
                diagnostic
                    .notes
                    .push(format!("sample ({}): {}", dtype.name(), sample.describe()));
                diagnostic.help.push(format!("the kernel does not need `{}`: relax the constraint, or make the kernel validate it", located.1));
                return;
            }
            rejected += 1;
        }
        let total = self.domain.contract.input_constraints.len()
            + self.domain.contract.param_constraints.len();
        let per_constraint: Vec<String> = (0..total)
            .map(|index| {
                let count = samples.iter().filter(|(_, c)| *c == index).count();
                let text = self.constraint_source(index).1;
                if count == 0 {
                    format!("`{text}`: never broken alone (breaking it also breaks another rule)")
                } else {
                    format!("`{text}`: {count} rejected")
                }
            })
            .collect();
        if total > 0 {
            self.evidence.rows.push((
                "each constraint is needed".to_owned(),
                format!("{rejected} samples breaking exactly one constraint, each rejected by `{}` — {}", kernel.symbol, per_constraint.join("; ")),
            ));
        }
    }

    fn constraint_source(&self, index: usize) -> (Range<usize>, String) {
        let contract = self.domain.contract;
        let resolved = match contract.input_constraints.get(index) {
            Some((_, c)) => c,
            None => match contract
                .param_constraints
                .get(index - contract.input_constraints.len())
            {
                Some((_, c)) => c,
                None => return (self.raw.kernel.span.clone(), String::new()),
            },
        };
        (resolved.source.span.clone(), resolved.source.value.clone())
    }

    /// Every fast path's `when` is taken by some admitted sample, and every optional input ran
    /// both present and absent.
    fn coverage(&mut self, dtype: DType, admitted: &[(Sample, Vec<Vec<i64>>)]) {
        let contract = self.domain.contract;
        let mut hits = vec![0usize; contract.fast_paths.len()];
        for (sample, outputs) in admitted {
            let mut bindings = self.domain.bindings(sample, dtype);
            self.domain.bind_outputs(&mut bindings, outputs);
            for (hit, path) in hits.iter_mut().zip(&contract.fast_paths) {
                if crate::expr::eval(&path.expr, &bindings)
                    .ok()
                    .and_then(|v| v.as_bool())
                    == Some(true)
                {
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
                "fast paths taken".to_owned(),
                format!("admitted samples taking each: {}", taken.join("; ")),
            ));
        }
        let optional: Vec<String> = self
            .raw
            .inputs
            .iter()
            .filter(|i| i.optional.as_ref().is_some_and(|o| o.value))
            .map(|input| {
                let present = admitted
                    .iter()
                    .filter(|(s, _)| {
                        s.inputs
                            .iter()
                            .any(|(n, _, p)| *n == input.name.value && *p)
                    })
                    .count();
                format!(
                    "`{}` present in {present}, absent in {}",
                    input.name.value,
                    admitted.len() - present
                )
            })
            .collect();
        if !optional.is_empty() {
            self.evidence
                .rows
                .push(("optional inputs".to_owned(), optional.join("; ")));
        }
    }

    /// Layout claims hold on real strided, offset, reversed and broadcast views.
    fn layouts(&mut self, kernel: &Kernel<'_>, dtype: DType, admitted: &[(Sample, Vec<Vec<i64>>)]) {
        let Some((sample, _)) = admitted.first() else {
            return;
        };
        let report = layout::check(self.raw, kernel, sample, dtype, self.seed);
        if let Some(failure) = report.failure {
            let input = self
                .raw
                .inputs
                .iter()
                .find(|i| i.name.value == failure.input);
            let span = input
                .and_then(|i| i.layout.as_ref())
                .and_then(|l| {
                    l.flags()
                        .into_iter()
                        .find(|(f, _)| *f == failure.flag)
                        .and_then(|(_, r)| r.map(|r| r.span.clone()))
                })
                .or_else(|| input.map(|i| i.span.clone()))
                .unwrap_or_else(|| self.raw.kernel.span.clone());
            let diagnostic = self.error(Code::LayoutClaim, span, failure.message);
            diagnostic
                .notes
                .push(format!("sample ({}): {}", dtype.name(), sample.describe()));
            diagnostic.help.push(
                "state the layouts the kernel really takes (`required`, `accepted` or `rejected`)"
                    .to_owned(),
            );
            return;
        }
        if report.tried.is_empty() {
            return;
        }
        let mut by_outcome: Vec<(&str, Vec<String>)> = Vec::new();
        for (input, flag, outcome) in &report.tried {
            let entry = format!("{flag} `{input}`");
            match by_outcome.iter_mut().find(|(o, _)| o == outcome) {
                Some((_, list)) => list.push(entry),
                None => by_outcome.push((outcome, vec![entry])),
            }
        }
        let summary: Vec<String> = by_outcome
            .iter()
            .map(|(outcome, views)| format!("{}: {outcome}", views.join(", ")))
            .collect();
        self.evidence.rows.push((
            "layout claims".to_owned(),
            format!(
                "real views through `{}` — {}",
                kernel.symbol,
                summary.join("; ")
            ),
        ));
    }

    /// A dtype the contract does not declare must not run (the PyTorch `test_dtypes` idea).
    fn undeclared_dtypes(
        &mut self,
        import: &Import,
        first: &Kernel<'_>,
        admitted: &[(Sample, Vec<Vec<i64>>)],
    ) {
        let Some((sample, _)) = admitted.first() else {
            return;
        };
        let declared: Vec<DType> = import.entry_points.iter().map(|e| e.dtype).collect();
        let mut refused = Vec::new();
        for dtype in DType::ALL.into_iter().filter(|d| !declared.contains(d)) {
            let symbol = symbol_for(&first.symbol, dtype);
            let other = symbol
                .as_deref()
                .and_then(|s| first.provider.description().entry_point(s))
                .map(|info| Kernel {
                    info,
                    provider: first.provider,
                });
            let via_symbol = other.is_some_and(|k| {
                matches!(
                    call(&k, &self.domain, sample, dtype, self.seed, false),
                    Outcome::Accepted { .. }
                )
            });
            let via_executor = run::executor_accepts(first, &self.domain, sample, dtype);
            if via_symbol || via_executor {
                let span = self
                    .raw
                    .inputs
                    .first()
                    .map_or(self.raw.kernel.span.clone(), |i| i.dtypes_span.clone());
                let route = if via_symbol {
                    format!("`{}`", symbol.unwrap_or_default())
                } else {
                    "the executor".to_owned()
                };
                let diagnostic = self.error(
                    Code::DtypeMismatch,
                    span,
                    format!("{} is not declared, but {route} runs it", dtype.name()),
                );
                diagnostic
                    .notes
                    .push(format!("sample: {}", sample.describe()));
                diagnostic.help.push(format!(
                    "declare {} in every input's dtypes, or make the backend refuse it",
                    dtype.name()
                ));
            } else {
                refused.push(dtype.name());
            }
        }
        if !refused.is_empty() {
            self.evidence.rows.push((
                "undeclared dtypes are refused".to_owned(),
                format!(
                    "{}: no entry point runs them and the executor rejects them",
                    refused.join(", ")
                ),
            ));
        }
    }
}

fn operand_list(kernel: &Kernel<'_>) -> String {
    kernel
        .inputs
        .iter()
        .map(|d| {
            format!(
                "`{}` (rank {}{})",
                d.name,
                d.rank,
                if d.optional { ", optional" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    //! The checks no reference kernel can fail (they never change dtype and are deterministic)
    //! are proven here with synthetic kernels that do.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::contract::raw::read_contract;
    use crate::contract::read_block;
    use crate::contract::resolved::resolve_expressions;
    use fkc_provider::{AnyTensor, KernelRef, Operand, ParamValues, Registry, Rejection};
    use fuel_reference_backend::fkc::{MAX_POOL2D_FIELDS, MAX_POOL2D_INPUTS};
    use std::sync::atomic::{AtomicU64, Ordering};

    const POOL: &str = "kernel: k\nregistrable: false\nbackend: Cpu\nkernel_source: s\nentry_point: \"fuel_reference_backend::ops::max_pool2d_f32\"\naccept:\n  inputs:\n    - { name: x, dtypes: [F32], rank: 4 }\nop_params:\n  fields:\n    kernel_size: { kind: usize, constraint: \"kernel_size > 0\" }\n    stride: { kind: usize, constraint: \"stride > 0\" }\nreturn:\n  outputs:\n    - { name: out, dtype_rule: passthrough(x), shape_rule: \"from_params(N=x.dim[0], C=x.dim[1], H=(x.dim[2]-kernel_size)/stride+1, W=(x.dim[3]-kernel_size)/stride+1)\" }\ndeterminism: same_hardware_bitwise\n";

    /// A pooling-shaped kernel whose output is F64 whatever the input.
    fn widening(
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> Result<Vec<AnyTensor>, Rejection> {
        let shape = pooled_shape(operands, params);
        Ok(vec![
            AnyTensor::from_f64(DType::F64, &shape, &vec![0.0; shape.iter().product()]).unwrap(),
        ])
    }

    /// A pooling-shaped kernel whose output changes on every call.
    fn flaky(
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> Result<Vec<AnyTensor>, Rejection> {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let shape = pooled_shape(operands, params);
        let value = CALLS.fetch_add(1, Ordering::SeqCst) as f64;
        Ok(vec![
            AnyTensor::from_f64(DType::F32, &shape, &vec![value; shape.iter().product()]).unwrap(),
        ])
    }

    fn pooled_shape(operands: &[Option<Operand>], params: &ParamValues) -> Vec<usize> {
        let x = operands[0].as_ref().unwrap().shape().to_vec();
        let get = |name: &str| match params[name] {
            fkc_provider::ParamValue::Usize(v) => v,
            _ => panic!(),
        };
        let (k, s) = (get("kernel_size"), get("stride"));
        vec![x[0], x[1], (x[2] - k) / s + 1, (x[3] - k) / s + 1]
    }

    /// A provider, in process, serving one pooling-shaped kernel `synthetic::pool_f32`.
    fn synthetic(call: fkc_provider::EntryFn) -> Provider {
        let entry_points: &'static [KernelRef] = Box::leak(Box::new([KernelRef {
            symbol: "synthetic::pool_f32",
            kernel: "k",
            dtype: DType::F32,
            op_kind: None,
            inputs: MAX_POOL2D_INPUTS,
            outputs: &["out"],
            params: MAX_POOL2D_FIELDS,
            call,
        }]));
        Provider::in_process(Box::leak(Box::new(Registry {
            name: "synthetic",
            path: "synthetic::REGISTRY",
            crate_name: "synthetic",
            revision: "0",
            op_kinds: &[],
            variants: &[],
            entry_points,
            executor: None,
        })))
    }

    fn codes_for(provider: &Provider, symbol: &str) -> Vec<Code> {
        let info = provider.description().entry_point(symbol).unwrap();
        let kernel = Kernel { info, provider };
        let source = Arc::new(SourceFile::new("t.md", POOL));
        let (raw, errors) = read_block(&source, POOL, &|o| o, read_contract);
        assert!(errors.is_empty());
        let raw = raw.unwrap();
        let (contract, errors) = resolve_expressions(&raw, &source);
        assert!(errors.is_empty());
        let mut gate = Gate {
            raw: &raw,
            source: &source,
            domain: Domain {
                raw: &raw,
                contract: &contract,
                kernel_params: &kernel.info.params,
            },
            diagnostics: Vec::new(),
            evidence: Evidence::default(),
            seed: 1,
            op_kind: String::new(),
        };
        let (admitted, _) = gate.draw(DType::F32, VerifyOptions::default());
        assert!(!admitted.is_empty());
        gate.admitted(&kernel, DType::F32, &admitted);
        gate.diagnostics.iter().map(|d| d.code).collect()
    }

    #[test]
    fn an_output_of_another_dtype_breaks_the_dtype_rule() {
        let provider = synthetic(widening);
        assert_eq!(
            codes_for(&provider, "synthetic::pool_f32"),
            [Code::DtypeRuleViolated]
        );
    }

    #[test]
    fn differing_repeated_runs_break_determinism() {
        let provider = synthetic(flaky);
        assert_eq!(
            codes_for(&provider, "synthetic::pool_f32"),
            [Code::Nondeterministic]
        );
    }

    /// A pooling-shaped kernel that panics.
    fn panicking(_: &[Option<Operand>], _: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
        panic!("index out of bounds")
    }

    #[test]
    fn a_panic_is_a_crash_not_a_rejection() {
        let provider = synthetic(panicking);
        assert_eq!(
            codes_for(&provider, "synthetic::pool_f32"),
            [Code::KernelCrashed]
        );
    }

    #[test]
    fn the_real_kernel_passes_the_same_checks() {
        let builtin = Provider::builtin();
        assert_eq!(
            codes_for(&builtin, "fuel_reference_backend::ops::max_pool2d_f32"),
            []
        );
    }
}
