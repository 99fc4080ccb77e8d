//! The worked example run: every candidate sample traced through the semantics on small
//! integers and ranked by what its best element shows, the best run through the real kernel
//! (an input whose layout accepts strided views passed as a view of a transposed storage;
//! for a selection, one of the traced element's reads made NaN), and its figure drawn with
//! what the kernel returned.

use super::super::constraints::Domain;
use super::super::run::{Input, params};
use super::super::sample::Sample;
use super::super::semantic::{Elements, Mode, evaluate, input_slot, nan_policy};
use super::candidates;
use super::figure::{self, Combine};
use super::focus::{Focus, Shown, Storage, Traced};
use super::statements::{scan_op, walk};
use super::{Worked, focus::READABLE_PARTS};
use crate::contract::raw::LayoutRequirement;
use crate::fast_hash::FastMap;
use crate::providers::{CallOutcome, Kernel};
use crate::semantics::ast::AssignOp;
use crate::semantics::float::NanPolicy;
use crate::semantics::ir::{Func, IntKind, Op, Origin, Program};
use crate::semantics::{Approx, Kinds};
use fkc_provider::{AnyTensor, DType, Operand};
use std::cell::RefCell;
use std::cmp::Reverse;
use std::sync::Arc;

/// Rounds of single moves that improve the best candidates, and how many are improved.
const CLIMB: usize = 3;
const CLIMBERS: usize = 1;
/// Candidates run through the kernel, best first, before giving up.
const TRIES: usize = 6;
/// A figure of more grids than this gets long.
const COMPACT_GRIDS: usize = 4;
/// A plane of more rows or columns than this reads badly.
const READABLE_SIDE: usize = 7;

/// How the semantics compute, read from their program.
#[derive(Debug, Clone, Copy)]
struct Style {
    /// They add into their outputs (`out[…] += …`): the figure follows an input element.
    scatter: bool,
    combine: Combine,
}

impl Style {
    fn of(program: &Program, nan: NanPolicy) -> Style {
        let nan = match nan {
            NanPolicy::Ignore => "ignore",
            NanPolicy::Propagate => "propagate",
        };
        let mut funcs = Vec::new();
        walk(&program.body, &mut |op| scan_op(op, &mut funcs));
        let combine = match (funcs.contains(&Func::Max), funcs.contains(&Func::Min)) {
            (true, false) => Combine::Select("max", nan),
            (false, true) => Combine::Select("min", nan),
            _ => Combine::Sum,
        };
        let mut scatter = false;
        walk(&program.body, &mut |op| {
            if let Op::Store {
                tensor,
                op: how,
                index,
                ..
            } = op
            {
                let output = program
                    .tensors
                    .get(*tensor)
                    .is_some_and(|t| matches!(t.origin, Origin::Output(_)));
                // `out[reduced(i, axes, keepdim)] += x[i]` gathers many inputs into each output
                let reduction = (index.iter()).any(|i| matches!(i.kind, IntKind::Reduced { .. }));
                scatter |= output && *how != AssignOp::Set && !reduction;
            }
        });
        Style { scatter, combine }
    }

    fn selects(self) -> bool {
        matches!(self.combine, Combine::Select(..))
    }
}

/// The example: the best-ranked candidate the kernel runs, with the sample it ran.
pub fn run(
    domain: &Domain<'_>,
    kernel: &Kernel<'_>,
    dtype: DType,
    pool: &[Sample],
) -> Option<(Worked, Sample)> {
    let program = domain.contract.semantics.as_ref()?.widest_program(dtype)?;
    let style = Style::of(program, nan_policy(domain.raw));
    let on = On {
        domain,
        kernel,
        dtype,
        style,
        ranked: Default::default(),
    };
    let pool = candidates::spread(pool, candidates::RANKED);
    let mut ranked: Vec<(i64, usize)> = pool
        .iter()
        .enumerate()
        .filter_map(|(index, sample)| Some((on.rank(sample)?, index)))
        .collect();
    ranked.sort_by_key(|&(score, index)| {
        let elements = pool.get(index).map_or(0, |s| s.elements());
        (Reverse(score), elements, index)
    });
    // The best few, each improved by single moves, best first; then the rest as ranked.
    let mut climbed: Vec<(i64, Sample)> = ranked
        .iter()
        .take(CLIMBERS)
        .filter_map(|&(score, index)| Some(on.climb(pool.get(index)?, score)))
        .collect();
    climbed.sort_by_key(|(score, sample)| (Reverse(*score), sample.elements()));
    let rest = ranked
        .iter()
        .filter_map(|(_, index)| pool.get(*index).copied().cloned());
    climbed
        .into_iter()
        .map(|(_, sample)| sample)
        .chain(rest)
        .take(TRIES)
        .find_map(|sample| Some((on.show(&sample)?, sample)))
}

/// What the example runs on.
struct On<'d, 'k> {
    domain: &'d Domain<'d>,
    kernel: &'k Kernel<'k>,
    dtype: DType,
    style: Style,
    /// Every rank computed so far, by sample: a climb meets the same samples again.
    ranked: RefCell<FastMap<candidates::Key, Option<i64>>>,
}

/// Each kernel input's values (`None` when absent), in the kernel's operand order.
type Values = Vec<Option<Vec<f64>>>;

impl On<'_, '_> {
    /// How well a sample's best element shows the computation, and how readable its figure
    /// is; `None` when it has no element worth tracing.
    fn rank(&self, sample: &Sample) -> Option<i64> {
        let key = candidates::key(sample);
        if let Some(rank) = self.ranked.borrow().get(&key) {
            return *rank;
        }
        let rank = self.rank_afresh(sample);
        self.ranked.borrow_mut().insert(key, rank);
        rank
    }

    /// [`On::rank`], computed.
    fn rank_afresh(&self, sample: &Sample) -> Option<i64> {
        let values = self.fill(sample);
        let (traced, _) = self.trace(sample, &values)?;
        let (focus, score) = traced.choose(self.style.scatter)?;
        Some(score + self.readability(&traced, focus) - sample.elements() / 20)
    }

    /// Bonuses for a figure that reads well (a first input of 3 to 6 rows and columns, an
    /// output of two rows and columns at least, a sum written out, divided by a whole number
    /// if at all), penalties for one that does not (windows
    /// mostly outside their input, more than [`COMPACT_GRIDS`] grids, planes wider than
    /// [`READABLE_SIDE`], a sum too long to write out).
    fn readability(&self, traced: &Traced, focus: Focus) -> i64 {
        let planes = figure::planned(traced, focus, self.style.combine);
        let wide = planes
            .iter()
            .filter_map(|(t, _)| traced.tensor(*t))
            .filter(|t| {
                let (rows, cols) = t.plane_shape();
                rows.max(cols) > READABLE_SIDE
            })
            .count();
        let shape = |tensor: Option<&Shown>| tensor.map_or((0, 0), Shown::plane_shape);
        let (rows, cols) = shape(traced.tensors.iter().flatten().next());
        let square = (3..=6).contains(&rows) && (3..=6).contains(&cols);
        let (rows, cols) = shape(traced.outputs.first().and_then(|t| traced.tensor(*t)));
        let picture = rows >= 2 && cols >= 2;
        let hollow = !self.style.scatter && traced.hollow();
        let parts = traced.parts(focus);
        // A sum is written out when the element is its sum, better when it is the sum divided
        // by a whole number (a scale, a count: that step shows too); not when it is neither
        // (a saturation, an odd scale), which the figure can only list.
        let sum: f64 = parts.iter().map(|p| p.value).sum();
        let value = traced.value(focus.element());
        let sums = matches!(self.style.combine, Combine::Sum) && !self.style.scatter;
        let whole = sums && sum.to_bits() == value.to_bits();
        let divided = sums && !whole && figure::divisor(sum, value).is_some();
        let parts = parts.len();
        let flag = |b: bool, weight: i64| if b { weight } else { 0 };
        flag(square, 3) + flag(picture, 2) + flag(whole, 1) + flag(divided, 3)
            - flag(hollow, 4)
            - 2 * planes.len().saturating_sub(COMPACT_GRIDS) as i64
            - 5 * wide as i64
            - 2 * parts.saturating_sub(READABLE_PARTS) as i64
    }

    /// `start` moved, one variable at a time, while a move ranks it higher (or as high
    /// with fewer elements).
    fn climb(&self, start: &Sample, score: i64) -> (i64, Sample) {
        let key = |rank: i64, s: &Sample| (rank, Reverse(s.elements()));
        let (mut best, mut score) = (start.clone(), score);
        for _ in 0..CLIMB {
            let mut next: Option<(i64, Sample)> = None;
            for moved in candidates::moves(self.domain, &best, self.dtype) {
                if !candidates::small(self.domain, &moved, self.dtype) {
                    continue;
                }
                let to_beat = next.as_ref().map_or(key(score, &best), |(r, s)| key(*r, s));
                if let Some(rank) = self.rank(&moved)
                    && key(rank, &moved) > to_beat
                {
                    next = Some((rank, moved));
                }
            }
            match next {
                Some((rank, moved)) => (score, best) = (rank, moved),
                None => break,
            }
        }
        (score, best)
    }

    /// The example on `sample`: traced, run through the kernel, drawn.
    fn show(&self, sample: &Sample) -> Option<Worked> {
        let mut values = self.fill(sample);
        let (traced, _) = self.trace(sample, &values)?;
        let (focus, _) = traced.choose(self.style.scatter)?;
        let nan = self.style.selects() && self.with_nan(&traced, focus, &mut values);
        let (mut traced, expected) = self.trace(sample, &values)?;
        let operands = self.operands(sample, &values)?;
        let call_params = params(self.kernel, sample).ok()?;
        let CallOutcome::Outputs(outputs) = self.kernel.run(&operands, &call_params) else {
            return None;
        };
        let returned: Vec<Vec<f64>> = outputs.iter().map(AnyTensor::to_f64_vec).collect();
        let agrees = agree(&expected, &returned);
        for (tensor, values) in traced.outputs.clone().iter().zip(returned) {
            if let Some(Some(shown)) = traced.tensors.get_mut(*tensor) {
                shown.values = values;
            }
        }
        let figure = figure::draw(&traced, focus, self.style.combine);
        Some(Worked {
            symbol: self.kernel.symbol.clone(),
            dtype: self.dtype.name().to_owned(),
            sample: sample.describe(),
            shapes: sample
                .inputs
                .iter()
                .filter(|(_, _, present)| *present)
                .map(|(name, dims, _)| (name.clone(), dims.clone()))
                .collect(),
            grids: figure.grids,
            operands: if nan {
                "small integers and one NaN".to_owned()
            } else {
                "small integers".to_owned()
            },
            agrees,
            legend: figure.legend,
            trace: Some(figure.sentence),
            cost: Vec::new(),
            layout: traced
                .storage
                .as_ref()
                .map(|s| layout_sentence(&traced, s, &outputs)),
            drift: Vec::new(),
        })
    }

    /// Small integers for every present input: for a selection distinct ones (its choice is
    /// then unambiguous), otherwise non-zero ones from −3 to 3 that differ between neighbours
    /// and between inputs; an input with `values` steps through them (`ValueBound::nth`).
    fn fill(&self, sample: &Sample) -> Values {
        let bounds = self.domain.value_bounds(sample, self.dtype);
        self.kernel
            .inputs
            .iter()
            .enumerate()
            .map(|(slot, desc)| {
                let count = present_dims(sample, &desc.name)?.iter().product::<usize>();
                let bound = bounds.iter().find(|b| b.input == desc.name);
                Some(
                    (0..count)
                        .map(|i| {
                            if let Some(b) = bound {
                                b.nth(i)
                            } else if self.style.selects() {
                                distinct(i, count)
                            } else {
                                small(slot, i)
                            }
                        })
                        .collect(),
                )
            })
            .collect()
    }

    /// The semantics run on `values`, traced, with what they expect of each output.
    fn trace(&self, sample: &Sample, values: &Values) -> Option<(Traced, Vec<Vec<Approx>>)> {
        let predicted = candidates::outputs(self.domain, sample, self.dtype)?;
        let inputs: Vec<Option<Input>> = self
            .kernel
            .inputs
            .iter()
            .zip(values)
            .map(|(desc, values)| {
                Some(Input {
                    dims: present_dims(sample, &desc.name)?,
                    values: values.clone()?,
                })
            })
            .collect();
        let (expected, traces) = evaluate(
            self.domain,
            self.kernel,
            self.dtype,
            sample,
            &inputs,
            &predicted,
            Mode::Bounded,
            true,
        )
        .ok()??;
        let expected: Vec<Vec<Approx>> = expected
            .outputs
            .into_iter()
            .map(|elements| match elements {
                Elements::Bounded(approx) => approx,
                Elements::Ordered(_) => Vec::new(),
            })
            .collect();
        let program = self.program()?;
        let mut tensors = Vec::new();
        let mut outputs = Vec::new();
        for (index, tensor) in program.tensors.iter().enumerate() {
            tensors.push(match tensor.origin {
                Origin::Input(_) => {
                    let input = self.slot(index).and_then(|slot| inputs.get(slot)?.as_ref());
                    input.map(|input| Shown {
                        name: tensor.name.clone(),
                        dims: input.dims.clone(),
                        values: input.values.clone(),
                    })
                }
                Origin::Output(k) => {
                    outputs.push(index);
                    Some(Shown {
                        name: tensor.name.clone(),
                        dims: dims(predicted.get(k)?),
                        values: expected.get(k)?.iter().map(representative).collect(),
                    })
                }
                Origin::Local => None,
            });
        }
        let storage = self.view(sample, values).and_then(|(slot, view)| {
            let tensor = (0..tensors.len()).find(|t| self.slot(*t) == Some(slot))?;
            let mut offsets = Vec::new();
            view.for_each_storage_index(|index| offsets.push(index));
            Some(Storage {
                tensor,
                values: view.storage().to_f64_vec(),
                offsets,
                strides: view.strides().to_vec(),
            })
        });
        let traced = Traced {
            tensors,
            outputs,
            traces: traces?,
            storage,
        };
        Some((traced, expected))
    }

    fn program(&self) -> Option<&Program> {
        self.domain
            .contract
            .semantics
            .as_ref()?
            .widest_program(self.dtype)
    }

    /// The kernel's operand slot of one of the program's input tensors.
    fn slot(&self, tensor: usize) -> Option<usize> {
        input_slot(self.domain, self.kernel, self.dtype, tensor)
    }

    /// Makes one of the traced element's reads NaN (the middle one of those it reads), so
    /// the figure shows what the NaN policy does; false when it reads fewer than two.
    fn with_nan(&self, traced: &Traced, focus: Focus, values: &mut Values) -> bool {
        let mut reads: Vec<(usize, usize)> = Vec::new();
        for part in traced.parts(focus) {
            for read in part.reads {
                if !reads.contains(&read) {
                    reads.push(read);
                }
            }
        }
        if reads.len() < 2 {
            return false;
        }
        let Some(&(tensor, flat)) = reads.get(reads.len() / 2) else {
            return false;
        };
        let cell = self
            .slot(tensor)
            .and_then(|slot| values.get_mut(slot)?.as_mut()?.get_mut(flat));
        match cell {
            Some(cell) => {
                *cell = f64::NAN;
                true
            }
            None => false,
        }
    }

    /// The kernel's operands: contiguous, except the input [`On::view`] passes as a view.
    fn operands(&self, sample: &Sample, values: &Values) -> Option<Vec<Option<Operand>>> {
        let mut view = self.view(sample, values);
        let mut operands = Vec::new();
        for (slot, (desc, values)) in self.kernel.inputs.iter().zip(values).enumerate() {
            let operand = match (values, view.take_if(|(s, _)| *s == slot)) {
                (None, _) => None,
                (Some(_), Some((_, view))) => Some(view),
                (Some(values), None) => {
                    let shape = present_dims(sample, &desc.name)?;
                    let tensor =
                        AnyTensor::from_f64(desc.dtype.unwrap_or(self.dtype), &shape, values)
                            .ok()?;
                    Some(Operand::contiguous(tensor))
                }
            };
            operands.push(operand);
        }
        Some(operands)
    }

    /// The first input whose layout the contract lets be a strided view, as one (its last
    /// two axes stored transposed), with its kernel slot.
    fn view(&self, sample: &Sample, values: &Values) -> Option<(usize, Operand)> {
        let input = self.domain.raw.inputs.iter().find(|input| {
            input.layout.as_ref().is_some_and(|layout| {
                layout
                    .strided
                    .as_ref()
                    .is_some_and(|r| r.value == LayoutRequirement::Accepted)
            })
        })?;
        let name = &input.name.value;
        let slot = self.kernel.inputs.iter().position(|d| d.name == *name)?;
        let shape = present_dims(sample, name)?;
        let values = values.get(slot)?.as_ref()?;
        let dtype = self.kernel.inputs.get(slot)?.dtype.unwrap_or(self.dtype);
        let tensor = AnyTensor::from_f64(dtype, &shape, values).ok()?;
        Some((slot, transposed(&tensor)?))
    }
}

/// The dims of a present input.
fn present_dims(sample: &Sample, name: &str) -> Option<Vec<usize>> {
    let (_, dims, present) = sample.inputs.iter().find(|(n, _, _)| n == name)?;
    present.then(|| self::dims(dims))
}

fn dims(dims: &[i64]) -> Vec<usize> {
    dims.iter()
        .map(|d| usize::try_from(*d).unwrap_or(0))
        .collect()
}

/// One number for an expected element: its value, or the special value it must be.
fn representative(approx: &Approx) -> f64 {
    if approx.finite() {
        approx.value
    } else if approx.kinds.contains(Kinds::NAN) {
        f64::NAN
    } else if approx.kinds.contains(Kinds::PLUS_INFINITY) {
        f64::INFINITY
    } else {
        f64::NEG_INFINITY
    }
}

/// Whether every element the kernel returned is one the semantics allow.
fn agree(expected: &[Vec<Approx>], returned: &[Vec<f64>]) -> bool {
    expected.len() == returned.len()
        && expected.iter().zip(returned).all(|(want, got)| {
            want.len() == got.len() && want.iter().zip(got).all(|(w, g)| w.admits(*g))
        })
}

/// Non-zero integers from −3 to 3, with a period of 7 (neighbouring rows of a small plane
/// differ) shifted per input.
fn small(slot: usize, index: usize) -> f64 {
    const VALUES: [f64; 7] = [1.0, -2.0, 3.0, -1.0, 2.0, -3.0, 2.0];
    VALUES[(index * 3 + slot * 2) % VALUES.len()]
}

/// Distinct integers around 0 in a scrambled order (a selection's choice is then unambiguous).
fn distinct(index: usize, count: usize) -> f64 {
    let count = count.max(1);
    let step = (1..=count)
        .rev()
        .find(|s| *s * 2 < count.max(2) && gcd(*s, count) == 1)
        .unwrap_or(1);
    let value = (index * step + 3) % count;
    value as f64 - (count / 2) as f64
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// A view with `tensor`'s logical values whose last two axes are stored transposed (column
/// major), as a transposing producer leaves them.
fn transposed(tensor: &AnyTensor) -> Option<Operand> {
    let shape = tensor.shape().to_vec();
    let [.., rows, cols] = shape.as_slice() else {
        return None;
    };
    let (rows, cols) = (*rows, *cols);
    let plane = rows * cols;
    let values = tensor.to_f64_vec();
    let mut stored = vec![0.0; values.len()];
    for (index, value) in values.iter().enumerate() {
        let (base, within) = (index / plane * plane, index % plane);
        *stored.get_mut(base + within % cols * rows + within / cols)? = *value;
    }
    let storage = AnyTensor::from_f64(tensor.dtype(), &[stored.len()], &stored).ok()?;
    let mut strides = fkc_provider::shape::row_major_strides(&shape);
    let n = strides.len();
    *strides.get_mut(n.checked_sub(1)?)? = isize::try_from(rows).ok()?;
    *strides.get_mut(n.checked_sub(2)?)? = 1;
    Operand::view(Arc::new(storage), shape, strides, 0).ok()
}

/// `` `x` was passed as a strided view: shape [1, 1, 3, 4], strides [12, 12, 1, 3] … ``.
fn layout_sentence(traced: &Traced, storage: &Storage, outputs: &[AnyTensor]) -> String {
    let (name, dims) = traced
        .tensor(storage.tensor)
        .map_or(("input", Vec::new()), |s| (s.name.as_str(), s.dims.clone()));
    let mut text = format!(
        "`{name}` was passed as a strided view: shape {dims:?}, strides {:?} (its last two axes stored column-major, as a transposing producer leaves them)",
        storage.strides
    );
    for (output, tensor) in traced.outputs.iter().zip(outputs) {
        let out = traced.tensor(*output).map_or("out", |s| s.name.as_str());
        text.push_str(&format!(
            " → `{out}`: shape {:?}, strides {:?} (contiguous, row-major)",
            tensor.shape(),
            fkc_provider::shape::row_major_strides(tensor.shape())
        ));
    }
    text.push('.');
    text
}

#[cfg(test)]
#[path = "example_tests.rs"]
mod tests;
