//! A contract's constraints over samples: where a sample's values bind (each name's slot, the
//! fields that carry an operand's shape), which constraints hold, the outputs' shapes under the
//! shape rules, and so what the contract says of the sample (its [`Verdict`]). Fields that carry
//! an operand's shape are bound to that operand by the backend's description
//! (`FieldInfo::shape_of`), never guessed from their names.

use super::sample::{DIMS, MAX_VALUE, Rng, Sample};
use crate::contract::raw::RawContract;
use crate::contract::resolved::Contract;
use crate::expr::{self, Bindings, Value};
use fkc_provider::{DType, FieldInfo, ParamKind};

mod draw;
mod shapes;

use draw::draw_param;
pub(super) use draw::{STRUCTURED, structured};

/// What the contract says about a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every constraint holds and every output is defined: the kernel must accept it.
    Admitted { outputs: Vec<Vec<i64>> },
    /// Exactly one constraint is false (the rest hold, outputs defined — or undefined only by a
    /// `broadcast` or `reduce` rule): the kernel must reject it.
    Breaks { constraint: usize },
    /// Anything else (several constraints false, undefined arithmetic, undefined outputs).
    Other,
}

/// The element values an input admits on one sample (its `values: {min, max}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueBound {
    pub input: String,
    pub min: i64,
    pub max: i64,
}

/// The largest dim of an input drawn at a rank past the random draws' (rank 8: 6561 elements).
pub const HIGH_RANK_DIMS: i64 = 3;

impl ValueBound {
    /// The `i`th of a run of values stepping through the bounds (odd steps from `min`,
    /// wrapping), for a worked example's operand.
    pub fn nth(&self, i: usize) -> f64 {
        let span = (i128::from(self.max) - i128::from(self.min) + 1).max(1);
        (i128::from(self.min) + (i as i128 * 2 + 1) % span) as f64
    }
}

/// The sampling context of one contract.
#[derive(Debug, Clone)]
pub struct Domain<'a> {
    pub raw: &'a RawContract,
    pub contract: &'a Contract,
    /// How a sample is bound, from the kernel's parameter descriptions (which fields carry
    /// which operand's shape).
    layout: Layout<'a>,
}

/// Where a sample's values are bound, worked out once per domain: each name's slot in the
/// contract's frame (so no name is searched per sample), the op-param fields drawn and their
/// kinds, and the fields that carry an operand's shape.
#[derive(Debug, Clone)]
struct Layout<'a> {
    dtype_bytes: Option<usize>,
    /// Each declared input's slot, in contract order (the order drawn samples list them).
    inputs: Vec<Option<usize>>,
    /// Each drawn op-param field: (name, kind, slot), in contract order.
    drawn: Vec<(&'a str, ParamKind, Option<usize>)>,
    /// Each drawn field's enumeration values (empty for other kinds), in the same order.
    choices: Vec<Vec<&'a str>>,
    /// Each field that carries an operand's shape: (field name, slot, operand name).
    shaped: Vec<(&'a str, Option<usize>, &'a str)>,
    /// Each predicate's slot, as the contract lists them.
    predicates: Vec<Option<usize>>,
    /// Each output's slot, as the contract lists them.
    outputs: Vec<Option<usize>>,
}

impl<'a> Layout<'a> {
    fn of(raw: &'a RawContract, contract: &Contract, kernel_params: &'a [FieldInfo]) -> Self {
        let slots = &contract.slots;
        let shape_of = |field: &str| {
            kernel_params
                .iter()
                .find(|f| f.name == field)
                .and_then(|f| f.shape_of.as_deref())
        };
        let fields = || raw.op_params.iter().flat_map(|p| &p.fields);
        Layout {
            dtype_bytes: slots.slot("dtype_bytes"),
            inputs: raw
                .inputs
                .iter()
                .map(|i| slots.slot(&i.name.value))
                .collect(),
            drawn: fields()
                .filter(|field| shape_of(&field.name.value).is_none())
                .filter_map(|field| {
                    let name = field.name.value.as_str();
                    Some((name, ParamKind::parse(&field.kind.value)?, slots.slot(name)))
                })
                .collect(),
            choices: fields()
                .filter(|field| shape_of(&field.name.value).is_none())
                .filter(|field| ParamKind::parse(&field.kind.value).is_some())
                .map(|field| field.values.iter().map(|v| v.value.as_str()).collect())
                .collect(),
            shaped: fields()
                .filter_map(|field| {
                    let name = field.name.value.as_str();
                    Some((name, slots.slot(name), shape_of(name)?))
                })
                .collect(),
            predicates: contract
                .predicates
                .iter()
                .map(|(n, _)| slots.slot(n))
                .collect(),
            outputs: contract
                .outputs
                .iter()
                .map(|o| slots.slot(&o.name))
                .collect(),
        }
    }
}

impl<'a> Domain<'a> {
    /// The domain of `contract`, sampled with the parameter descriptions of one of its kernels.
    pub fn new(
        raw: &'a RawContract,
        contract: &'a Contract,
        kernel_params: &'a [FieldInfo],
    ) -> Self {
        Domain {
            raw,
            contract,
            layout: Layout::of(raw, contract, kernel_params),
        }
    }
}

impl Domain<'_> {
    /// The op-param fields drawn (those that carry no operand's shape), with their kinds.
    pub fn drawn_params(&self) -> impl Iterator<Item = (&str, ParamKind)> {
        self.layout
            .drawn
            .iter()
            .map(|&(name, kind, _)| (name, kind))
    }

    /// Each drawn field with the values its enumeration takes (none for other kinds).
    pub fn choices(&self) -> impl Iterator<Item = (&str, &[&str])> {
        let names = self.layout.drawn.iter().map(|&(name, ..)| name);
        names.zip(self.layout.choices.iter().map(Vec::as_slice))
    }

    /// The fields that carry an operand's shape: (field, operand).
    pub fn shaped_fields(&self) -> impl Iterator<Item = (&str, &str)> {
        self.layout.shaped.iter().map(|&(field, _, of)| (field, of))
    }

    /// Draws one candidate.
    pub fn draw(&self, rng: &mut Rng) -> Sample {
        self.draw_with(rng, None)
    }

    /// Draws one candidate whose input `name` has rank `rank`, each of its dims 1 to
    /// [`HIGH_RANK_DIMS`] (a rank no random draw takes, kept small).
    pub fn draw_at_rank(&self, rng: &mut Rng, name: &str, rank: usize) -> Sample {
        self.draw_with(rng, Some((name, rank)))
    }

    fn draw_with(&self, rng: &mut Rng, forced: Option<(&str, usize)>) -> Sample {
        let inputs: Vec<(String, Vec<i64>, bool)> = self
            .raw
            .inputs
            .iter()
            .map(|input| {
                // One rank per input and sample, from those it declares (1 without `rank`).
                let ranks = input.rank.as_ref().map_or(1..=1, |r| r.value.drawn());
                let (lo, hi) = (*ranks.start() as i64, *ranks.end() as i64);
                let (rank, largest) = match forced {
                    Some((name, rank)) if name == input.name.value => {
                        (i64::try_from(rank).unwrap_or(lo), HIGH_RANK_DIMS)
                    }
                    _ if lo == hi => (lo, *DIMS.end()),
                    _ => (rng.range(lo, hi), *DIMS.end()),
                };
                let dims = (0..rank)
                    .map(|_| rng.range(*DIMS.start(), largest))
                    .collect();
                let optional = input.is_optional();
                (
                    input.name.value.clone(),
                    dims,
                    !optional || rng.range(0, 1) == 1,
                )
            })
            .collect();
        let ranks: Vec<i64> = self
            .raw
            .inputs
            .iter()
            .zip(&inputs)
            .filter(|(input, _)| input.rank.is_some())
            .map(|(_, (_, dims, _))| dims.len() as i64)
            .collect();
        let params = self
            .layout
            .drawn
            .iter()
            .zip(&self.layout.choices)
            .map(|(&(name, kind, _), choices)| {
                (name.to_owned(), draw_param(rng, kind, choices, &ranks))
            })
            .collect();
        Sample { inputs, params }
    }

    /// `sample` with input `name` present, each of its dims that a constraint writes as
    /// `name.dim[k] == EXPR` (either side) set to that expression's value.
    pub fn with_present(&self, sample: &Sample, name: &str, dtype: DType) -> Sample {
        let mut candidate = sample.clone();
        for input in candidate.inputs.iter_mut().filter(|(n, _, _)| n == name) {
            input.2 = true;
        }
        self.tie(&mut candidate, Some(name), dtype);
        candidate
    }

    /// `sample` with every dim of a present input that a constraint writes as
    /// `INPUT.dim[k] == EXPR` (either side) set to that expression's value, in constraint
    /// order: a sample grown in one dim, with the dims tied to it following.
    pub fn tied(&self, sample: &Sample, dtype: DType) -> Sample {
        let mut candidate = sample.clone();
        self.tie(&mut candidate, None, dtype);
        candidate
    }

    /// Sets the dims equality constraints tie (of input `only`, or of every present input).
    fn tie(&self, candidate: &mut Sample, only: Option<&str>, dtype: DType) {
        // The bindings of the candidate as it stands, rebuilt only after a dim changed.
        let mut bound: Option<Bindings> = None;
        for (_, constraint) in &self.contract.input_constraints {
            let expr::ExprKind::Binary {
                op: expr::BinOp::Eq,
                lhs,
                rhs,
                ..
            } = &constraint.expr.kind
            else {
                continue;
            };
            for (side, other) in [(lhs, rhs), (rhs, lhs)] {
                let target = candidate
                    .inputs
                    .iter()
                    .filter(|(n, _, present)| *present && only.is_none_or(|o| o == n))
                    .find_map(|(n, _, _)| dim_of(side, n).map(|axis| (n.clone(), axis)));
                let Some((name, axis)) = target else {
                    continue;
                };
                let bindings = bound.get_or_insert_with(|| self.bindings(candidate, dtype));
                let value = expr::eval(other, bindings).ok().and_then(|v| v.as_int());
                if let Some(value) = value.filter(|v| (1..=MAX_VALUE).contains(v))
                    && let Some(slot) = candidate
                        .inputs
                        .iter_mut()
                        .find(|(n, _, _)| *n == name)
                        .and_then(|(_, dims, _)| dims.get_mut(axis))
                    && *slot != value
                {
                    *slot = value;
                    bound = None;
                }
                break;
            }
        }
    }

    /// Bindings for evaluating the contract's expressions on a sample (outputs excluded).
    pub fn bindings(&self, sample: &Sample, dtype: DType) -> Bindings {
        let layout = &self.layout;
        let mut bindings = Bindings::framed(&self.contract.slots);
        let bytes = Value::Int(i64::try_from(dtype.size_bytes()).unwrap_or(0));
        bindings.insert_at(layout.dtype_bytes, "dtype_bytes", bytes);
        // A sample lists its inputs and parameters in contract order unless it was written by
        // hand (`repro`); `insert_at` checks the slot's name, so either way each lands right.
        for (index, (name, dims, present)) in sample.inputs.iter().enumerate() {
            let slot = layout.inputs.get(index).copied().flatten();
            // An absent optional input has no elements: its dims read as 0.
            let value = if *present {
                Value::operand(dims)
            } else {
                Value::operand(&vec![0; dims.len()])
            };
            bindings.insert_at(slot, name, value);
        }
        for (index, (name, param)) in sample.params.iter().enumerate() {
            let slot = layout.drawn.get(index).and_then(|(_, _, slot)| *slot);
            bindings.insert_at(slot, name, param.value());
        }
        for &(field, slot, of) in &layout.shaped {
            if let Some(dims) = sample.dims(of) {
                bindings.insert_at(slot, field, Value::ints(dims));
            }
        }
        for ((name, definition), slot) in self.contract.predicates.iter().zip(&layout.predicates) {
            if let Ok(value) = expr::eval(definition, &bindings) {
                bindings.insert_at(*slot, name, value);
            }
        }
        bindings
    }

    /// The constraints a sample breaks — `None` as soon as two are false or one cannot be
    /// evaluated (a zero divisor, an overflow): such a sample is neither admitted nor breaking.
    fn broken_constraint(&self, sample: &Sample, bindings: &Bindings) -> Option<Option<usize>> {
        let present = |input: &str| {
            sample
                .inputs
                .iter()
                .any(|(name, _, present)| name == input && *present)
        };
        let inputs = self.contract.input_constraints.iter();
        let applying = inputs
            .map(|(input, constraint)| present(input).then_some(constraint))
            .chain(self.contract.param_constraints.iter().map(|(_, c)| Some(c)));
        let mut broken = None;
        for (index, constraint) in applying.enumerate() {
            let Some(constraint) = constraint else {
                continue;
            };
            if !expr::eval(&constraint.expr, bindings).ok()?.as_bool()? {
                if broken.is_some() {
                    return None;
                }
                broken = Some(index);
            }
        }
        Some(broken)
    }

    /// Whether `condition` (a fast path's `when`) holds on an admitted sample with its outputs.
    pub fn holds(
        &self,
        condition: &expr::Expr,
        sample: &Sample,
        outputs: &[Vec<i64>],
        dtype: DType,
    ) -> bool {
        let mut bindings = self.bindings(sample, dtype);
        self.bind_outputs(&mut bindings, outputs);
        expr::eval(condition, &bindings)
            .ok()
            .and_then(|v| v.as_bool())
            == Some(true)
    }

    /// The constraint parts written as `a || b || …`: (part index, alternatives), numbered as
    /// [`Verdict::Breaks`] numbers parts.
    pub fn alternatives(&self) -> Vec<(usize, Vec<&expr::Expr>)> {
        let parts = self.contract.input_constraints.iter().map(|(_, c)| c);
        let parts = parts.chain(self.contract.param_constraints.iter().map(|(_, c)| c));
        parts
            .enumerate()
            .filter_map(|(index, part)| {
                let alternatives = disjuncts(&part.expr);
                (alternatives.len() > 1).then_some((index, alternatives))
            })
            .collect()
    }

    /// Whether, on `sample`, alternative `which` is the only one of `alternatives` that holds.
    pub fn alone(
        &self,
        alternatives: &[&expr::Expr],
        which: usize,
        sample: &Sample,
        dtype: DType,
    ) -> bool {
        let bindings = self.bindings(sample, dtype);
        alternatives.iter().enumerate().all(|(index, alternative)| {
            let holds = expr::eval(alternative, &bindings)
                .ok()
                .and_then(|v| v.as_bool());
            holds == Some(index == which)
        })
    }

    /// Classifies a sample.
    /// Whether the op-param `name` is drawn as a list of axes (`Vec<usize>`: a permutation, axes
    /// to reduce).
    pub(super) fn lists_axes(&self, name: &str) -> bool {
        (self.layout.drawn.iter()).any(|(n, kind, _)| *n == name && *kind == ParamKind::UsizeList)
    }

    pub fn verdict(&self, sample: &Sample, dtype: DType) -> Verdict {
        let bindings = self.bindings(sample, dtype);
        let Some(broken) = self.broken_constraint(sample, &bindings) else {
            return Verdict::Other;
        };
        if !self.values_possible(sample, &bindings) {
            return Verdict::Other;
        }
        match (broken, self.outputs(sample, &bindings)) {
            (None, Some(outputs)) => Verdict::Admitted { outputs },
            (Some(constraint), Some(_)) => Verdict::Breaks { constraint },
            // Shapes that do not broadcast, or repeated axes, are what a `broadcastable` or
            // `axes` constraint rules out: breaking it alone undefines only such rules.
            (Some(constraint), None) if self.only_shaping_rules_undefined(sample, &bindings) => {
                Verdict::Breaks { constraint }
            }
            _ => Verdict::Other,
        }
    }
}

impl Domain<'_> {
    /// Each input's admitted element values on `sample` (empty without `values`).
    pub fn value_bounds(&self, sample: &Sample, dtype: DType) -> Vec<ValueBound> {
        if self.contract.value_bounds.is_empty() {
            return Vec::new();
        }
        self.bounds_with(&self.bindings(sample, dtype))
    }

    fn bounds_with(&self, bindings: &Bindings) -> Vec<ValueBound> {
        let int = |e: &expr::Expr| expr::eval(e, bindings).ok().and_then(|v| v.as_int());
        self.contract
            .value_bounds
            .iter()
            .filter_map(|(input, min, max)| {
                Some(ValueBound {
                    input: input.clone(),
                    min: int(&min.expr)?,
                    max: int(&max.expr)?,
                })
            })
            .collect()
    }

    /// Whether every input with `values` can be filled on `sample`: its bounds evaluate, and
    /// hold a value unless the input is empty.
    fn values_possible(&self, sample: &Sample, bindings: &Bindings) -> bool {
        if self.contract.value_bounds.is_empty() {
            return true;
        }
        let bounds = self.bounds_with(bindings);
        bounds.len() == self.contract.value_bounds.len()
            && bounds.iter().all(|b| {
                b.min <= b.max
                    || sample
                        .inputs
                        .iter()
                        .any(|(name, dims, _)| *name == b.input && dims.contains(&0))
            })
    }
}

/// `k` when `e` is `name.dim[k]`.
pub(super) fn dim_of(e: &expr::Expr, name: &str) -> Option<usize> {
    let expr::ExprKind::Index { base, index } = &e.kind else {
        return None;
    };
    let expr::ExprKind::Member { base, field, .. } = &base.kind else {
        return None;
    };
    let expr::ExprKind::Int(k) = index.kind else {
        return None;
    };
    (field == "dim" && matches!(&base.kind, expr::ExprKind::Name(n) if n == name))
        .then(|| usize::try_from(k).ok())
        .flatten()
}

/// The alternatives of a top-level `||` chain (one expression when there is none).
fn disjuncts(e: &expr::Expr) -> Vec<&expr::Expr> {
    match &e.kind {
        expr::ExprKind::Binary {
            op: expr::BinOp::Or,
            lhs,
            rhs,
            ..
        } => {
            let mut all = disjuncts(lhs);
            all.extend(disjuncts(rhs));
            all
        }
        _ => vec![e],
    }
}
