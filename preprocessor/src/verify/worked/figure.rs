//! A worked example's drawing and sentence, made from one traced element: each tensor's
//! planes that hold what the element reads (or, for a scatter, where it goes), the reads
//! numbered in the order the semantics made them, the traced element marked, and the
//! computation written out — a sum term by term, a selection with the values it chose from
//! and the NaN policy that decided, a scatter with the traced element's own contributions.

use super::focus::{Focus, Part, READABLE_PARTS, Shown, Storage, Traced};
use super::{Grid, Mark, MarkKind, number};
use crate::semantics::Step;
use std::collections::HashSet;

/// At most this many planes of one tensor are drawn.
const PLANES_PER_TENSOR: usize = 4;

/// How the traced element combines what it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Its steps add up.
    Sum,
    /// It keeps the largest (`"max"`) or smallest (`"min"`) of what it reads, under the
    /// contract's NaN policy (`"propagate"` or `"ignore"`).
    Select(&'static str, &'static str),
}

/// What a figure shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub grids: Vec<Grid>,
    pub legend: Vec<(String, String)>,
    pub sentence: String,
}

/// One cell to mark: (tensor, flat index, kind, number).
type Marked = (usize, usize, MarkKind, Option<usize>);

/// The figure of `focus` in `traced` (output tensors hold what the kernel returned).
pub fn draw(traced: &Traced, focus: Focus, combine: Combine) -> Figure {
    let storage = traced.storage.as_ref();
    let parts = traced.parts(focus);
    let marked = marks(traced, focus, combine, &parts);
    let mut grids: Vec<Grid> = storage
        .into_iter()
        .map(|s| storage_grid(traced, s, &marked))
        .collect();
    for (tensor, plane) in planes(traced, &marked) {
        if let Some(grid) = plane_grid(traced, focus, &parts, &marked, (tensor, plane)) {
            grids.push(grid);
        }
    }
    let mut sentence = match (focus, combine) {
        (Focus::Scatter { .. }, _) => scatter_sentence(traced, focus, &parts),
        (Focus::Gather { .. }, Combine::Select(op, nan)) if numbered(&parts).len() >= 2 => {
            select_sentence(traced, focus, &parts, op, nan)
        }
        (Focus::Gather { .. }, _) => sum_sentence(traced, focus, &parts),
    };
    if let Some(storage) = storage {
        sentence.push_str(&stored_at(traced, storage, &parts));
    }
    Figure {
        grids,
        legend: legend(focus, combine, &marked),
        sentence,
    }
}

/// The planes the figure of `focus` draws (see [`planes`]).
pub fn planned(traced: &Traced, focus: Focus, combine: Combine) -> Vec<(usize, usize)> {
    let parts = traced.parts(focus);
    planes(traced, &marks(traced, focus, combine, &parts))
}

/// The parts that read something not read before, each with its number (from 1): a cell
/// read twice keeps its first number.
fn numbered(parts: &[Part]) -> Vec<(usize, &Part)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for part in parts {
        let mut fresh = false;
        for read in &part.reads {
            fresh |= seen.insert(*read);
        }
        if fresh || part.reads.is_empty() {
            out.push((out.len() + 1, part));
        }
    }
    out
}

/// Every cell the figure marks, in order.
fn marks(traced: &Traced, focus: Focus, combine: Combine, parts: &[Part]) -> Vec<Marked> {
    let traced_element = focus.element();
    let mut marked = vec![(traced_element.0, traced_element.1, MarkKind::Traced, None)];
    let mut seen = HashSet::from([traced_element]);
    for (number, part) in numbered(parts) {
        let cells = part.reads.iter().chain(&part.lands);
        for &(tensor, flat) in cells {
            if seen.insert((tensor, flat)) {
                marked.push((tensor, flat, MarkKind::Tap, Some(number)));
            }
        }
    }
    if let (Focus::Gather { .. }, Combine::Select(..)) = (focus, combine) {
        let result = traced.value(traced_element);
        let chosen = parts
            .iter()
            .flat_map(|p| &p.reads)
            .find(|read| traced.value(**read) == result);
        if let Some(&(tensor, flat)) = chosen {
            marked.push((tensor, flat, MarkKind::Chosen, None));
        }
    }
    marked
}

/// The planes to draw, inputs first: per tensor, those holding a marked cell (in the order
/// first marked), at most [`PLANES_PER_TENSOR`].
fn planes(traced: &Traced, marked: &[Marked]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (tensor, shown) in traced.tensors.iter().enumerate() {
        let Some(shown) = shown else { continue };
        let mut chosen: Vec<usize> = Vec::new();
        for &(t, flat, _, _) in marked {
            let plane = shown.locate(flat).0;
            if t == tensor && !chosen.contains(&plane) {
                chosen.push(plane);
            }
        }
        chosen.truncate(PLANES_PER_TENSOR);
        out.extend(chosen.into_iter().map(|plane| (tensor, plane)));
    }
    out
}

/// One plane as a grid with its marks; for a scatter, an output plane shows the traced
/// element's contributions (blank where it adds nothing), not the totals.
fn plane_grid(
    traced: &Traced,
    focus: Focus,
    parts: &[Part],
    marked: &[Marked],
    (tensor, plane): (usize, usize),
) -> Option<Grid> {
    let shown = traced.tensor(tensor)?;
    let (rows, cols) = shown.plane_shape();
    let start = plane * rows * cols;
    let landing = matches!(focus, Focus::Scatter { .. }) && traced.outputs.contains(&tensor);
    let cells = (start..start + rows * cols)
        .map(|flat| {
            if landing {
                let added = parts.iter().filter(|p| p.lands == Some((tensor, flat)));
                let values: Vec<f64> = added.map(|p| p.value).collect();
                if values.is_empty() {
                    String::new()
                } else {
                    number(values.iter().sum())
                }
            } else {
                shown
                    .values
                    .get(flat)
                    .map_or_else(String::new, |v| number(*v))
            }
        })
        .collect();
    let marks = marked
        .iter()
        .filter(|(t, flat, _, _)| *t == tensor && shown.locate(*flat).0 == plane)
        .map(|&(_, flat, kind, number)| {
            let (_, row, col) = shown.locate(flat);
            Mark {
                row,
                col,
                kind,
                number,
            }
        })
        .collect();
    let label = plane_label(shown, plane);
    let label = if landing {
        let (t, f) = focus.element();
        let from = traced.tensor(t).map_or_else(String::new, |s| s.element(f));
        format!("{from} → {label}")
    } else {
        label
    };
    Some(Grid {
        label,
        rows,
        cols,
        cells,
        marks,
    })
}

/// `x[0, 1, :, :]` for a plane of a tensor of rank 3 or more, the name otherwise.
fn plane_label(shown: &Shown, plane: usize) -> String {
    let rank = shown.dims.len();
    if rank <= 2 {
        return shown.name.clone();
    }
    let (rows, cols) = shown.plane_shape();
    let index = shown.index(plane * rows * cols);
    let leading: Vec<String> = index.iter().take(rank - 2).map(usize::to_string).collect();
    format!("{}[{}, :, :]", shown.name, leading.join(", "))
}

/// The storage of a strided view as one row, in memory order, its cells marked as the
/// logical elements stored there.
fn storage_grid(traced: &Traced, storage: &Storage, marked: &[Marked]) -> Grid {
    let name = traced
        .tensor(storage.tensor)
        .map_or("input", |s| s.name.as_str());
    let marks = marked
        .iter()
        .filter(|(t, _, _, _)| *t == storage.tensor)
        .filter_map(|&(_, flat, kind, number)| {
            Some(Mark {
                row: 0,
                col: *storage.offsets.get(flat)?,
                kind,
                number,
            })
        })
        .collect();
    Grid {
        label: format!("{name}'s storage, in memory order"),
        rows: 1,
        cols: storage.values.len(),
        cells: storage.values.iter().map(|v| number(*v)).collect(),
        marks,
    }
}

/// `factor` for a product: a negative number in parentheses.
fn factor(value: f64) -> String {
    if value < 0.0 {
        format!("({})", number(value))
    } else {
        number(value)
    }
}

/// One step of a sum as written: `a·b` where it is the product of what it read, `name v`
/// for a lone read of a tensor no product reads (a bias), otherwise its value.
fn term(traced: &Traced, part: &Part, products: &HashSet<usize>) -> String {
    let values: Vec<f64> = part.reads.iter().map(|r| traced.value(*r)).collect();
    match (part.reads.as_slice(), values.as_slice()) {
        (_, [_, _, ..]) if values.iter().product::<f64>() == part.value => values
            .iter()
            .map(|v| factor(*v))
            .collect::<Vec<_>>()
            .join("·"),
        ([(tensor, _)], [value]) if *value == part.value && !products.contains(tensor) => {
            let name = traced.tensor(*tensor).map_or("", |s| s.name.as_str());
            format!("{name} {}", factor(*value))
        }
        _ => factor(part.value),
    }
}

/// The whole number `sum / result` (at least 2) when `result` is `sum` divided by it.
pub(super) fn divisor(sum: f64, result: f64) -> Option<u64> {
    let ratio = sum / result;
    let whole = ratio.round();
    (ratio.is_finite() && (2.0..=1e6).contains(&whole) && (ratio - whole).abs() < 1e-6 * whole)
        .then_some(whole as u64)
}

/// `` `out[0, 1, 2, 2]` = 1·2 + (−1)·1 + … + bias 3 = 7 ``.
fn sum_sentence(traced: &Traced, focus: Focus, parts: &[Part]) -> String {
    let (tensor, flat) = focus.element();
    let Some(out) = traced.tensor(tensor) else {
        return String::new();
    };
    let target = out.element(flat);
    let result = traced.value((tensor, flat));
    if let [part] = parts
        && let [read] = part.reads.as_slice()
    {
        let source = element_name(traced, *read);
        let value = traced.value(*read);
        return if value.to_bits() == result.to_bits() {
            format!("`{target}` = `{source}` = {}.", number(result))
        } else {
            format!(
                "`{target}` = {}, made from `{source}` = {}.",
                number(result),
                number(value)
            )
        };
    }
    let products: HashSet<usize> = parts
        .iter()
        .filter(|p| p.reads.len() >= 2)
        .flat_map(|p| p.reads.iter().map(|(t, _)| *t))
        .collect();
    let terms: Vec<String> = parts.iter().map(|p| term(traced, p, &products)).collect();
    let written = if terms.len() > READABLE_PARTS {
        format!(
            "{} + … + {} ({} terms)",
            terms[..6].join(" + "),
            terms[terms.len() - 2..].join(" + "),
            terms.len()
        )
    } else {
        terms.join(" + ")
    };
    let sum: f64 = parts.iter().map(|p| p.value).sum();
    let mut sentence = format!("`{target}` = {written} = {}", number(sum));
    if sum.to_bits() != result.to_bits() {
        match divisor(sum, result) {
            // an average: the sum divided by a count (avg_pool2d, reduce_mean)
            Some(by) => sentence.push_str(&format!(
                ", divided by {by}: {}, which the kernel returned",
                number(result)
            )),
            // not a sum of its reads (a normalisation): name them, claim no total
            None => {
                sentence = format!(
                    "`{target}` is computed from {}, in the semantics' order but not as their sum; the kernel returned {}",
                    written.replace(" + ", ", "),
                    number(result)
                );
            }
        }
    }
    sentence.push('.');
    sentence.push_str(&cut_note(traced, focus, parts));
    sentence
}

/// Where the element has fewer steps than others of its output: that the semantics' conditions
/// skip the rest, and, when its first read input is read at the border of a plane, that these
/// are reads past that edge.
fn cut_note(traced: &Traced, focus: Focus, parts: &[Part]) -> String {
    let (tensor, _) = focus.element();
    let fullest = traced
        .outputs
        .iter()
        .position(|t| *t == tensor)
        .and_then(|o| traced.traces.get(o))
        .and_then(|elements| elements.iter().map(Vec::len).max())
        .unwrap_or(0);
    if parts.len() >= fullest {
        return String::new();
    }
    let name = traced.tensor(tensor).map_or("", |s| s.name.as_str());
    let why = if at_border(traced, parts) {
        "at this edge the semantics skip the reads that would fall outside their input"
    } else {
        "the semantics' conditions skip the others here"
    };
    format!(
        " It has {} where other elements of `{name}` have up to {fullest}: {why}.",
        plural(parts.len(), "term")
    )
}

/// Whether a read of the first tensor read lies on the border of its plane.
fn at_border(traced: &Traced, parts: &[Part]) -> bool {
    let Some(&(tensor, _)) = parts.iter().flat_map(|p| &p.reads).next() else {
        return false;
    };
    let Some(shown) = traced.tensor(tensor) else {
        return false;
    };
    let (rows, cols) = shown.plane_shape();
    let reads = parts
        .iter()
        .flat_map(|p| &p.reads)
        .filter(|(t, _)| *t == tensor);
    reads
        .map(|(_, flat)| shown.locate(*flat))
        .any(|(_, row, col)| {
            (rows > 1 && (row == 0 || row + 1 == rows)) || col == 0 || col + 1 == cols
        })
}

/// `` `out[0, 0, 1, 1]` = max(3, 8, NaN, 5) = 8 under `precision.nan: ignore` … ``.
fn select_sentence(traced: &Traced, focus: Focus, parts: &[Part], op: &str, nan: &str) -> String {
    let (tensor, flat) = focus.element();
    let target = traced
        .tensor(tensor)
        .map_or_else(String::new, |s| s.element(flat));
    let read: Vec<(usize, usize)> = numbered(parts)
        .iter()
        .flat_map(|(_, p)| p.reads.clone())
        .collect();
    let values: Vec<f64> = read.iter().map(|r| traced.value(*r)).collect();
    let listed: Vec<String> = values.iter().map(|v| number(*v)).collect();
    let result = traced.value((tensor, flat));
    let mut sentence = format!(
        "`{target}` = {op}({}) = {}, in the order the semantics read them",
        listed.join(", "),
        number(result)
    );
    if values.iter().any(|v| v.is_nan()) {
        let what = if result.is_nan() {
            "the NaN propagates"
        } else {
            "the NaN is dropped"
        };
        sentence.push_str(&format!(
            ": under `precision.nan: {nan}` {what}, and the kernel returned {}",
            number(result)
        ));
    }
    sentence.push('.');
    sentence
}

/// `` `x[0, 0, 1, 1]` = −1 is scattered to 9 elements of `out` … ``.
fn scatter_sentence(traced: &Traced, focus: Focus, parts: &[Part]) -> String {
    let source = element_name(traced, focus.element());
    let value = traced.value(focus.element());
    let landed: Vec<(usize, usize)> = parts.iter().filter_map(|p| p.lands).collect();
    let Some(&first) = landed.first() else {
        return format!("`{source}` = {} reaches no output.", number(value));
    };
    let out = traced.tensor(first.0).map_or("", |s| s.name.as_str());
    let products: HashSet<usize> = parts
        .iter()
        .flat_map(|p| p.reads.iter().map(|(t, _)| *t))
        .collect();
    let listed: Vec<String> = parts
        .iter()
        .take(3)
        .filter_map(|p| {
            let to = element_name(traced, p.lands?);
            Some(format!(
                "{} = {} to `{to}`",
                term(traced, p, &products),
                number(p.value)
            ))
        })
        .collect();
    let more = match parts.len() {
        0..=3 => String::new(),
        n => format!(", and {} more", n - 3),
    };
    let mut sentence = format!(
        "`{source}` = {} is scattered to {} of `{out}`, numbered in `{out}`'s row-major order (the grid of `{out}` shows its own contributions, not `{out}`'s totals): {}{more}.",
        number(value),
        plural(landed.len(), "element"),
        listed.join(", "),
    );
    sentence.push_str(&total_note(traced, &landed));
    sentence
}

/// How one element the scatter reaches adds up every contribution it receives.
fn total_note(traced: &Traced, landed: &[(usize, usize)]) -> String {
    let steps_of = |(tensor, flat): (usize, usize)| {
        let output = traced.outputs.iter().position(|t| *t == tensor)?;
        traced.traces.get(output)?.get(flat)
    };
    let received: Vec<((usize, usize), &Vec<Step>)> = landed
        .iter()
        .filter_map(|cell| Some((*cell, steps_of(*cell)?)))
        .filter(|(_, steps)| steps.len() >= 2)
        .collect();
    let total = |steps: &[Step]| steps.iter().map(|s| s.value).sum::<f64>();
    let chosen = received
        .iter()
        .find(|(_, steps)| total(steps) != 0.0)
        .or(received.first());
    let Some(&(cell, steps)) = chosen else {
        return String::new();
    };
    let values: Vec<String> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if i == 0 {
                number(s.value)
            } else {
                factor(s.value)
            }
        })
        .collect();
    let sum = total(steps);
    format!(
        " Each element of the output adds up what every input element sends it: `{}` = {} = {}, and the kernel returned {}.",
        element_name(traced, cell),
        values.join(" + "),
        number(sum),
        number(traced.value(cell))
    )
}

/// Where the traced reads of a strided view sit in its storage.
fn stored_at(traced: &Traced, storage: &Storage, parts: &[Part]) -> String {
    let read = parts
        .iter()
        .flat_map(|p| &p.reads)
        .find(|(t, _)| *t == storage.tensor);
    let Some(&(tensor, flat)) = read else {
        return String::new();
    };
    storage
        .offsets
        .get(flat)
        .map_or_else(String::new, |offset| {
            format!(
                " `{}` is stored at offset {offset} of its storage (first grid).",
                element_name(traced, (tensor, flat))
            )
        })
}

/// `1 term`, `3 terms`.
fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

fn element_name(traced: &Traced, (tensor, flat): (usize, usize)) -> String {
    traced
        .tensor(tensor)
        .map_or_else(String::new, |s| s.element(flat))
}

/// What the figure's marks mean.
fn legend(focus: Focus, combine: Combine, marked: &[Marked]) -> Vec<(String, String)> {
    let uses = |kind: MarkKind| marked.iter().any(|(_, _, k, _)| *k == kind);
    let mut entries = Vec::new();
    match focus {
        Focus::Gather { .. } => {
            entries.push(("traced", "the output element traced"));
            if uses(MarkKind::Tap) {
                entries.push((
                    "tap",
                    "what it reads, numbered in the semantics' order (one number per step)",
                ));
            }
            if let (true, Combine::Select(..)) = (uses(MarkKind::Chosen), combine) {
                entries.push(("chosen", "the value it returns"));
            }
        }
        Focus::Scatter { .. } => {
            entries.push(("traced", "the input element traced"));
            entries.push((
                "tap",
                "each step that reads it: what it multiplies and where the result goes, numbered alike",
            ));
        }
    }
    entries
        .into_iter()
        .map(|(kind, text)| (kind.to_owned(), text.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests;
