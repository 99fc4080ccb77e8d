//! The contract's domain: admitted samples and samples breaking exactly one constraint, drawn
//! with bounded effort; each constraint must be needed (a sample breaking it alone is rejected).

use super::constraints::Verdict;
use super::run::{Outcome, Runs, call};
use super::sample::{Param, Rng, Sample};
use super::{Admitted, Breaking, Gate, VerifyOptions};
use crate::contract::raw::RawContract;
use crate::diag::Code;
use crate::providers::Kernel;
use fkc_provider::{DType, ParamKind};
use std::ops::Range;

/// Candidates drawn per wanted sample before giving up, and a hard cap, so that sampling takes
/// bounded time on any contract (however many constraints it declares).
const ATTEMPTS_PER_SAMPLE: usize = 150;
const MAX_ATTEMPTS: usize = 40_000;
/// Constraint evaluations per contract, at most (a contract with thousands of constraints gets
/// proportionally fewer candidates).
const MAX_EVALUATIONS: usize = 4_000_000;

/// Random candidates without a new sample after which drawing stops (once the admitted quota is
/// met); the quotas still open are then filled by moving one variable of admitted samples.
const IDLE_ATTEMPTS: usize = 200;
/// Admitted samples in a row whose every one-variable move breaks no open part alone, after
/// which filling the breaking quotas by moving stops.
const IDLE_NEIGHBOURHOODS: usize = 4;
/// A property of an admitted sample (with its outputs) that some admitted sample should have.
type Condition<'a> = dyn Fn(&Sample, &[Vec<i64>]) -> bool + 'a;

/// Candidates tried to find an admitted sample meeting a condition none of the drawn ones meets
/// (a fast path's `when`, an `||` alternative alone).
const CONDITION_SEARCH: usize = 3000;

/// For the inputs that declare several ranks, the ranks the admitted samples have: `; ranks
/// admitted: x 1 to 4 (of any)`, so a rank the constraints never admit is not claimed as
/// checked. Empty when every input has one rank.
pub(super) fn ranks_admitted(raw: &RawContract, admitted: &Admitted) -> String {
    let ranged = raw.inputs.iter().filter_map(|input| {
        let declared = input.rank.as_ref()?.value;
        if declared.single().is_some() {
            return None;
        }
        let name = &input.name.value;
        let mut ranks: Vec<usize> = admitted
            .iter()
            .filter_map(|(sample, _)| Some(sample.dims(name)?.len()))
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        let listed: Vec<String> = ranks.iter().map(usize::to_string).collect();
        Some(format!("`{name}` {} (of {declared})", listed.join(", ")))
    });
    let ranged: Vec<String> = ranged.collect();
    if ranged.is_empty() {
        return String::new();
    }
    format!("; ranks admitted: {}", ranged.join("; "))
}

/// Fresh candidates searched for an admitted sample with an input at a rank none has yet.
const RANK_SEARCH: usize = 400;

/// Fresh candidates searched for a sample the constraints admit but a `broadcast` or `reduce`
/// shape rule cannot shape.
const UNDEFINED_SEARCH: usize = 400;

impl Gate<'_> {
    /// The constraints must rule out every sample on which a `broadcast` or `reduce` shape rule
    /// is undefined (shapes that do not broadcast, repeated axes) or a `from_params` rule cannot
    /// be computed (a division by 0, an absent input's dims): such a sample is admitted, yet
    /// the contract cannot say what the kernel returns (FKC0401). `false` after reporting.
    pub(super) fn shape_rules_defined(&mut self, dtype: DType, options: VerifyOptions) -> bool {
        use crate::contract::resolved::ShapeRule;
        let may_be_undefined =
            |rule: &ShapeRule| rule.is_partial() || matches!(rule, ShapeRule::FromParams(_));
        let shapes_itself = (self.domain.contract.outputs.iter())
            .any(|o| o.shape.as_ref().is_some_and(may_be_undefined));
        if !shapes_itself {
            return true;
        }
        let mut rng = Rng::new(options.seed ^ 0x5eed_5a9e);
        let found = (0..UNDEFINED_SEARCH).find_map(|_| {
            let sample = self.domain.draw(&mut rng);
            let output = self.domain.undefined_shape(&sample, dtype)?;
            Some((sample, output))
        });
        let Some((sample, output)) = found else {
            return true;
        };
        let Some(rule) = self
            .raw
            .outputs
            .get(output)
            .and_then(|o| o.shape_rule.clone())
        else {
            return true;
        };
        let note = super::shrink::sample_note("admitted, its output unshaped", &sample);
        let diagnostic = self.error(
            Code::UnderConstrained,
            rule.span.clone(),
            format!(
                "the constraints admit a sample on which the shape rule `{}` is undefined",
                rule.value
            ),
        );
        diagnostic.notes.push(note);
        diagnostic.help.push("constrain the inputs and fields so the rule is defined on every sample they admit: shapes that broadcast (each pair of trailing dims equal or 1), distinct axes (`axes(axes, x.rank)`), no division by a field that may be 0, no dims of an optional input that may be absent".to_owned());
        false
    }

    /// Fills each constraint part's breaking quota by moving one variable (a dimension or a
    /// parameter value) of an admitted sample until exactly that part is false.
    fn break_by_moving_one_variable(
        &self,
        dtype: DType,
        admitted: &Admitted,
        breaking: &mut Breaking,
        constraints: usize,
        quota: usize,
    ) {
        let open = |breaking: &Breaking, c: usize| {
            breaking.iter().filter(|(_, b)| *b == c).count() < quota
        };
        if (0..constraints).all(|c| !open(breaking, c)) {
            return;
        }
        let mut idle = 0;
        for (sample, _) in admitted {
            let before = breaking.len();
            for candidate in sample.neighbours() {
                if let Verdict::Breaks { constraint } = self.domain.verdict(&candidate, dtype)
                    && open(breaking, constraint)
                    && !breaking.iter().any(|(s, _)| *s == candidate)
                {
                    breaking.push((candidate, constraint));
                    if (0..constraints).all(|c| !open(breaking, c)) {
                        return;
                    }
                }
            }
            idle = if breaking.len() > before { 0 } else { idle + 1 };
            if idle >= IDLE_NEIGHBOURHOODS {
                return; // the open quotas cannot be met by moving one variable
            }
        }
    }

    /// The next candidate: with `walk`, a random admitted sample with one variable moved (a
    /// fresh draw while there is none), otherwise a fresh draw.
    fn candidate(&self, rng: &mut Rng, admitted: &Admitted, walk: bool) -> Sample {
        let start = usize::try_from(rng.range(0, admitted.len() as i64 - 1)).unwrap_or(0);
        match admitted.get(start).filter(|_| walk) {
            Some((from, _)) => from.moved(rng),
            None => self.domain.draw(rng),
        }
    }

    /// Adds, for each condition no admitted sample meets — a fast path's `when`, or one `||`
    /// alternative holding alone — one admitted sample that meets it, searched with bounded
    /// effort (fresh draws and one-variable moves of admitted samples).
    fn cover_conditions(&self, dtype: DType, rng: &mut Rng, admitted: &mut Admitted) {
        let domain = &self.domain;
        let mut conditions: Vec<Box<Condition<'_>>> = Vec::new();
        for path in &domain.contract.fast_paths {
            conditions.push(Box::new(move |s, o| domain.holds(&path.expr, s, o, dtype)));
        }
        for (_, alternatives) in domain.alternatives() {
            for which in 0..alternatives.len() {
                let alternatives = alternatives.clone();
                conditions.push(Box::new(move |s, _| {
                    domain.alone(&alternatives, which, s, dtype)
                }));
            }
        }
        for condition in &conditions {
            if admitted.is_empty() || admitted.iter().any(|(s, o)| condition(s, o)) {
                continue;
            }
            let meets = |candidate: &Sample| match domain.verdict(candidate, dtype) {
                Verdict::Admitted { outputs } if condition(candidate, &outputs) => Some(outputs),
                _ => None,
            };
            let random = (0..CONDITION_SEARCH).find_map(|attempt| {
                let candidate = self.candidate(rng, admitted, attempt % 2 == 1);
                Some((meets(&candidate)?, candidate))
            });
            // Where chance missed, every one-variable move of the admitted samples in turn (a
            // condition one step from an admitted sample, like `b` alone in `a || b`, is then
            // found whatever the budget), then each move with the dims tied to it following
            // (`groups == x.dim[1]` moves `x.dim[1]` through `weight.dim[1] * groups == x.dim[1]`).
            let moves = || admitted.iter().flat_map(|(sample, _)| sample.neighbours());
            let found = random
                .or_else(|| {
                    moves()
                        .take(CONDITION_SEARCH)
                        .find_map(|candidate| Some((meets(&candidate)?, candidate)))
                })
                .or_else(|| {
                    moves()
                        .take(CONDITION_SEARCH)
                        .map(|candidate| domain.tied(&candidate, dtype))
                        .find_map(|candidate| Some((meets(&candidate)?, candidate)))
                });
            if let Some((outputs, candidate)) = found {
                admitted.push((candidate, outputs));
            }
        }
    }

    /// Every optional input both ways: present in at least a third of the admitted samples
    /// (an absent one turned present, its dims set by its own `==` constraints where it has
    /// them, so `bias.dim[0] == weight.dim[0]` admits it), and absent in at least one.
    fn cover_optional_inputs(&self, dtype: DType, admitted: &mut Admitted) {
        for name in self.optional_inputs() {
            let present = |s: &Sample| s.inputs.iter().any(|(n, _, p)| n == name && *p);
            let wanted = admitted.len().div_ceil(3);
            let mut count = admitted.iter().filter(|(s, _)| present(s)).count();
            for index in 0..admitted.len() {
                if count >= wanted {
                    break;
                }
                if present(&admitted[index].0) {
                    continue;
                }
                let candidate = self.domain.with_present(&admitted[index].0, name, dtype);
                if let Verdict::Admitted { outputs } = self.domain.verdict(&candidate, dtype)
                    && !admitted.iter().any(|(s, _)| *s == candidate)
                {
                    admitted[index] = (candidate, outputs);
                    count += 1;
                }
            }
            if count == admitted.len() {
                // The last sample without it, else the one before, …: the first admitted.
                let without = admitted.iter().rev().find_map(|(sample, _)| {
                    let absent = super::operands::without(sample, name);
                    match self.domain.verdict(&absent, dtype) {
                        Verdict::Admitted { outputs } => Some((absent, outputs)),
                        _ => None,
                    }
                });
                admitted.extend(without);
            }
        }
    }

    /// Every value of an enumeration or boolean field on an admitted sample whose integer
    /// fields are all at least 1, where one is admitted: a choice shows where every other
    /// field is in play (a padding of 0 hides a divisor that counts the padding). The first
    /// such sample with the field set to the value is added where none had it.
    pub(super) fn cover_choices(&self, dtype: DType, admitted: &mut Admitted) {
        let busy = |sample: &Sample| {
            sample.params.iter().all(|(_, param)| match param {
                Param::Int(v) => *v >= 1,
                Param::Ints(vs) => vs.iter().all(|v| *v >= 1),
                Param::Float(_) | Param::Bool(_) | Param::Text(_) => true,
            })
        };
        let fields: Vec<(&str, Vec<Param>)> = (self.domain.drawn_params())
            .zip(self.domain.choices())
            .filter_map(|((name, kind), (_, choices))| match kind {
                ParamKind::Bool => Some((name, vec![Param::Bool(false), Param::Bool(true)])),
                ParamKind::Enum => {
                    let texts = choices.iter().map(|c| Param::Text((*c).to_owned()));
                    Some((name, texts.collect()))
                }
                _ => None,
            })
            .collect();
        for (name, choices) in fields {
            for choice in choices {
                let with = |s: &Sample| busy(s) && s.param(name) == Some(&choice);
                if !admitted.iter().any(|(s, _)| busy(s)) || admitted.iter().any(|(s, _)| with(s)) {
                    continue;
                }
                let found = admitted
                    .iter()
                    .filter(|(s, _)| busy(s))
                    .find_map(|(sample, _)| {
                        let candidate = sample.with_param(name, choice.clone());
                        match self.domain.verdict(&candidate, dtype) {
                            Verdict::Admitted { outputs } => Some((candidate, outputs)),
                            _ => None,
                        }
                    });
                admitted.extend(found);
            }
        }
    }

    /// The first of `tries` candidates from `draw` (`None`: a candidate passed over) that the
    /// domain admits, with its outputs.
    pub(super) fn first_admitted(
        &self,
        dtype: DType,
        tries: usize,
        mut draw: impl FnMut() -> Option<Sample>,
    ) -> Option<(Sample, Vec<Vec<i64>>)> {
        (0..tries).find_map(|_| {
            let candidate = draw()?;
            match self.domain.verdict(&candidate, dtype) {
                Verdict::Admitted { outputs } => Some((candidate, outputs)),
                _ => None,
            }
        })
    }

    /// Every rank an input declares (`rank: any`, a range) in some admitted sample, where the
    /// constraints admit it: fresh draws searched for each rank the drawn samples lack.
    fn cover_ranks(&self, dtype: DType, rng: &mut Rng, admitted: &mut Admitted) {
        for input in &self.raw.inputs {
            let Some(declared) = input.rank.as_ref().map(|r| r.value) else {
                continue;
            };
            if declared.single().is_some() {
                continue;
            }
            let name = input.name.value.as_str();
            let rank_of = |s: &Sample| s.dims(name).map(<[i64]>::len);
            for rank in declared.drawn() {
                if admitted.iter().any(|(s, _)| rank_of(s) == Some(rank)) {
                    continue;
                }
                let found = self.first_admitted(dtype, RANK_SEARCH, || {
                    let candidate = self.domain.draw(rng);
                    (rank_of(&candidate) == Some(rank)).then_some(candidate)
                });
                admitted.extend(found);
            }
        }
    }

    /// Draws admitted samples and samples breaking exactly one constraint.
    pub(super) fn draw(&mut self, dtype: DType, options: VerifyOptions) -> (Admitted, Breaking) {
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
        let quota = options.samples.div_ceil(4);
        let mut idle = 0;
        // Admitted samples found by moving one variable of another admitted sample: a step of a
        // walk admits far more often than a fresh draw, but at most two in three admitted
        // samples come from it, so the independent fresh draws keep the set diverse.
        let mut walked = 0;
        for attempt in 0..attempts {
            let fresh = admitted.len() - walked;
            let walk = attempt % 2 == 1 && walked < 2 * fresh && admitted.len() < options.samples;
            let sample = self.candidate(&mut rng, &admitted, walk);
            let progress = match self.domain.verdict(&sample, dtype) {
                Verdict::Admitted { outputs }
                    if admitted.len() < options.samples
                        && !admitted.iter().any(|(s, _)| *s == sample) =>
                {
                    admitted.push((sample, outputs));
                    walked += usize::from(walk);
                    true
                }
                Verdict::Breaks { constraint }
                    if breaking.iter().filter(|(_, c)| *c == constraint).count() < quota =>
                {
                    breaking.push((sample, constraint));
                    true
                }
                _ => false,
            };
            idle = if progress { 0 } else { idle + 1 };
            let full = admitted.len() >= options.samples;
            if full && (breaking.len() >= constraints * quota || idle > IDLE_ATTEMPTS) {
                break;
            }
        }
        self.add_edge_samples(dtype, &mut admitted, quota);
        self.cover_conditions(dtype, &mut rng, &mut admitted);
        self.cover_optional_inputs(dtype, &mut admitted);
        self.cover_choices(dtype, &mut admitted);
        self.cover_zero_fields(dtype, &mut admitted);
        self.cover_ranks(dtype, &mut rng, &mut admitted);
        self.designed_edges = self.add_designed_edges(dtype, &mut admitted);
        self.break_by_moving_one_variable(dtype, &admitted, &mut breaking, constraints, quota);
        (admitted, breaking)
    }

    /// No drawn sample satisfies the contract: nothing could be verified, which is an error.
    /// `proof` says why no sample of the box can (then none was drawn).
    pub(super) fn empty_domain(&mut self, options: VerifyOptions, proof: Option<&str>) {
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
        let (dims, params) = (super::sample::DIMS, super::sample::PARAMS);
        let drawn = format!(
            "samples draw every dim from {} to {} and every op-param from {} to {}",
            dims.start(),
            dims.end(),
            params.start(),
            params.end()
        );
        diagnostic.notes.push(match proof {
            Some(proof) => format!(
                "{drawn}; on every one of them {proof}, so none can have every constraint true and every output dimension at least 1 (shown without drawing)"
            ),
            None => format!(
                "{drawn} (seed {:#x}); none had every constraint true and every output dimension defined and at least 1",
                options.seed
            ),
        });
        diagnostic.help.push(
            "check the shape rule and the constraints: together they must admit small inputs"
                .to_owned(),
        );
    }

    /// Every sample breaking exactly one constraint must be rejected.
    pub(super) fn breaking(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        samples: &[(Sample, usize)],
    ) {
        use super::shrink::{Check, Keep, Replay};
        let mut rejected = 0;
        for (index, (sample, constraint)) in samples.iter().enumerate() {
            let seed = self.seed ^ index as u64;
            let before = self.diagnostics.len();
            if !self.breaking_one(kernel, dtype, sample, *constraint, seed) {
                let replay = Replay {
                    kernel,
                    dtype,
                    seed,
                    check: Check::Domain,
                    keep: Keep::Breaks(*constraint),
                };
                self.shrink_report(before, &replay, sample);
                return;
            }
            rejected += 1;
        }
        let total = self.domain.contract.input_constraints.len()
            + self.domain.contract.param_constraints.len();
        let counts: Vec<(usize, String)> = (0..total)
            .map(|index| {
                let count = samples.iter().filter(|(_, c)| *c == index).count();
                (count, self.constraint_source(index).1)
            })
            .collect();
        let needed: Vec<String> = counts
            .iter()
            .filter(|(count, _)| *count > 0)
            .map(|(count, text)| format!("`{text}`: {count} rejected"))
            .collect();
        let unbroken: Vec<String> = counts
            .iter()
            .filter(|(count, _)| *count == 0)
            .map(|(_, text)| format!("`{text}`"))
            .collect();
        if !needed.is_empty() {
            self.evidence.rows.push((
                format!("constraints needed ({} of {total} parts)", needed.len()),
                format!(
                    "each `&&` part broken alone, every other part true: {rejected} samples, each rejected by `{}` — {}",
                    kernel.symbol,
                    needed.join("; ")
                ),
            ));
        }
        if !unbroken.is_empty() {
            self.evidence.rows.push((
                "constraints not shown to be needed".to_owned(),
                format!(
                    "never broken alone on the drawn samples (breaking it also broke another part or the shape rule), so not counted as needed: {}",
                    unbroken.join("; ")
                ),
            ));
        }
    }

    /// Runs one sample breaking exactly `constraint`: the kernel must reject it. False after
    /// reporting an acceptance (an over-promise) or a crash.
    pub(super) fn breaking_one(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        constraint: usize,
        seed: u64,
    ) -> bool {
        let outcome = call(kernel, &self.domain, sample, dtype, seed, Runs::default());
        if let Outcome::Crashed(crash) = &outcome {
            self.crashed(kernel, dtype, sample, crash);
            return false;
        }
        if let Outcome::Accepted(_) = outcome {
            let located = self.constraint_source(constraint);
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
                .push(super::shrink::sample_note(dtype.name(), sample));
            diagnostic.help.push(format!("the kernel does not need `{}`: relax the constraint, or make the kernel validate it", located.1));
            return false;
        }
        true
    }

    pub(super) fn constraint_source(&self, index: usize) -> (Range<usize>, String) {
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
}
