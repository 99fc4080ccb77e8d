//! The worked example a reader sees: a small sample chosen for clarity (every feature the
//! contract admits visible — padding, stride, dilation, groups — on small integers, exact in
//! every dtype), run through the real kernel, with the geometry of one traced output drawn:
//! the padded border, each tap the kernel reads numbered in the input and in the weight, the
//! output it lands in (for a transposed convolution, one input element's scatter footprint; for
//! pooling, the window and the maximum chosen; for Contiguize, the strides before and after).
//! With the contract's domain at hand the sample is checked to be admitted, the cost formulas
//! are evaluated on it, and a drift plot is measured for each half-precision dtype.

use super::run::Input;
use super::run::{Fill, arguments, operands, params};
use super::sample::{Domain, Param, Sample, Verdict};
use super::semantic::{Elements, Mode, evaluate};
use crate::providers::{CallOutcome, Kernel};
use fkc_provider::{AnyTensor, DType, Operand};
use std::sync::Arc;

/// What a mark on a cell means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarkKind {
    /// A tap the traced computation reads (input or weight), numbered.
    Tap,
    /// The output cell traced (or, for a transposed convolution, the input element traced).
    Out,
    /// The maximum a pooling window chose.
    Max,
}

/// A marked cell, in the grid's own (unpadded) coordinates: padding cells are negative or
/// beyond the last row/column.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Mark {
    pub row: i64,
    pub col: i64,
    pub kind: MarkKind,
    /// The tap's number (the same number in the input and the weight).
    pub number: Option<usize>,
}

/// A 2-D slice of a tensor, drawn with a padded border of `pad` (rows, cols) on every side.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Grid {
    pub label: String,
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<f64>,
    pub pad: (usize, usize),
    pub marks: Vec<Mark>,
    /// A dashed window (first row, first col, last row, last col), inclusive, unpadded coords.
    pub window: Option<(i64, i64, i64, i64)>,
}

/// A cost formula evaluated on the example.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CostValue {
    pub name: String,
    pub formula: String,
    pub value: Option<i64>,
}

/// One reduction length of a drift measurement.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DriftPoint {
    /// Terms summed per output (the reduction length K).
    pub length: usize,
    /// `|T-accumulated − exact|`, the worst over the trials.
    pub error: f64,
    /// Higham's bound `γ_K · Σ|w·x|` for that same trial.
    pub bound: f64,
}

/// `|T-accumulated − exact|` against reduction length, measured by running the kernel.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Drift {
    pub dtype: String,
    /// What one output does with its K terms ("summed K products of random values in [-1, 1)").
    pub reduction: String,
    pub symbol: String,
    pub trials: usize,
    pub points: Vec<DriftPoint>,
}

/// What ran, on what, with what result.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Worked {
    pub symbol: String,
    pub dtype: String,
    pub sample: String,
    /// The example's present inputs and their dims, in contract order (what a planner would
    /// hand the kernel, e.g. to price a Contiguize in front of it).
    pub shapes: Vec<(String, Vec<i64>)>,
    pub grids: Vec<Grid>,
    /// Whether the output equals the independent oracle exactly; `None` when the op kind has
    /// no oracle.
    pub matches_oracle: Option<bool>,
    /// (mark kind or `pad`/`window`, what it means) for the marks this figure uses.
    pub legend: Vec<(String, String)>,
    /// The traced computation in words and numbers.
    pub trace: Option<String>,
    /// The contract's cost formulas on this example (empty without the domain).
    pub cost: Vec<CostValue>,
    /// Strides before and after, for a layout kernel.
    pub layout: Option<String>,
    /// One drift measurement per declared half-precision dtype.
    pub drift: Vec<Drift>,
}

/// The worked example with the contract's domain: a designed sample when the contract admits
/// one (else the most readable admitted sample), the cost formulas on it, and a drift plot
/// for every BF16/F16 kernel of `kernels`.
pub fn example_in(
    domain: &Domain<'_>,
    kernels: &[(DType, Kernel<'_>)],
    op_kind: &str,
    admitted: &[&Sample],
) -> Option<Worked> {
    let &(dtype, kernel) = kernels.first()?;
    let template = pick(admitted)?;
    let admits = |s: &Sample| matches!(domain.verdict(s, dtype), Verdict::Admitted { .. });
    let (mut worked, sample) = designed(op_kind, template)
        .into_iter()
        .filter(|s| admits(s))
        .find_map(|s| Some((run_example(&kernel, op_kind, dtype, &s, Some(domain))?, s)))
        .or_else(|| {
            Some((
                run_example(&kernel, op_kind, dtype, template, Some(domain))?,
                template.clone(),
            ))
        })?;
    worked.cost = cost_values(domain, &sample, dtype);
    for &(half, kernel) in kernels {
        if matches!(half, DType::BF16 | DType::F16)
            && let Some(drift) = drift(domain, &kernel, op_kind, half, template, &admits)
        {
            worked.drift.push(drift);
        }
    }
    Some(worked)
}

fn run_example(
    kernel: &Kernel<'_>,
    op_kind: &str,
    dtype: DType,
    sample: &Sample,
    domain: Option<&Domain<'_>>,
) -> Option<Worked> {
    let operands = operands(kernel, sample, dtype, Fill::SmallIntegers).ok()?;
    let mut operands = if op_kind == "MaxPool2D" {
        refill(&operands, dtype, distinct)?
    } else {
        refill(&operands, dtype, small_integer)?
    };
    let mut layout = None;
    let mut storage = None;
    if op_kind == "Contiguize"
        && let Some(Some(first)) = operands.first()
        && let Some((view, text)) = transposed(first)
    {
        layout = Some(text);
        let values = view.storage().to_f64_vec();
        storage = Some(Grid {
            label: "x's storage, in memory order".to_owned(),
            rows: 1,
            cols: values.len(),
            values,
            pad: (0, 0),
            marks: Vec::new(),
            window: None,
        });
        operands[0] = Some(view);
    }
    let values = params(kernel, sample).ok()?;
    let CallOutcome::Outputs(outputs) = kernel.run(&operands, &values) else {
        return None;
    };
    let output = outputs.first()?;
    let inputs: Vec<Option<Input>> = operands
        .iter()
        .map(|o| {
            o.as_ref().and_then(|o| {
                Some(Input {
                    dims: o.shape().to_vec(),
                    values: o.packed().ok()?.to_f64_vec(),
                })
            })
        })
        .collect();
    let out_values = output.to_f64_vec();
    let shape: Vec<i64> = output.shape().iter().map(|d| *d as i64).collect();
    let matches_oracle = domain
        .and_then(|domain| {
            evaluate(
                domain,
                kernel,
                dtype,
                sample,
                &inputs,
                &[shape],
                Mode::Bounded,
                false,
            )
            .ok()
            .flatten()
        })
        .and_then(|(expected, _)| match expected.outputs.first() {
            Some(Elements::Bounded(want)) => Some(
                want.len() == out_values.len()
                    && want.iter().zip(&out_values).all(|(w, g)| w.admits(*g)),
            ),
            _ => None,
        });
    if let Some(text) = &mut layout {
        text.push_str(&format!(
            " → `out`: shape {:?}, strides {:?} (contiguous, row-major)",
            output.shape(),
            fkc_provider::shape::row_major_strides(output.shape())
        ));
    }
    let names: Vec<&str> = kernel.inputs.iter().map(|d| d.name.as_str()).collect();
    let out = Input {
        dims: output.shape().to_vec(),
        values: out_values,
    };
    let (mut grids, legend, trace) = figure(op_kind, sample, &names, &inputs, &out);
    if let Some(storage) = storage {
        grids.insert(0, storage);
    }
    Some(Worked {
        symbol: kernel.symbol.clone(),
        dtype: dtype.name().to_owned(),
        sample: sample.describe(),
        shapes: sample
            .inputs
            .iter()
            .filter(|(_, _, present)| *present)
            .map(|(name, dims, _)| (name.clone(), dims.clone()))
            .collect(),
        grids,
        matches_oracle,
        legend,
        trace,
        cost: Vec::new(),
        layout,
        drift: Vec::new(),
    })
}

/// The smallest sample whose first input is between 3×3 and 6×6 in its last two dims;
/// otherwise the smallest sample.
fn pick<'a>(admitted: &[&'a Sample]) -> Option<&'a Sample> {
    let size = |s: &Sample| {
        s.inputs
            .iter()
            .map(|(_, d, _)| d.iter().product::<i64>())
            .sum::<i64>()
    };
    let readable = |s: &Sample| {
        s.inputs.first().is_some_and(|(_, dims, _)| {
            dims.len() >= 2 && dims.iter().rev().take(2).all(|d| (3..=6).contains(d))
        })
    };
    let mut sorted: Vec<&Sample> = admitted.to_vec();
    sorted.sort_by_key(|s| size(s));
    sorted
        .iter()
        .copied()
        .find(|s| readable(s))
        .or_else(|| sorted.first().copied())
}

/// `template` with the first two inputs' dims and some parameters replaced (optional inputs
/// absent); parameters the template does not have are not added.
fn with(template: &Sample, dims: &[&[i64]], set: &[(&str, i64, i64)]) -> Sample {
    let mut sample = template.clone();
    for (index, (_, d, present)) in sample.inputs.iter_mut().enumerate() {
        match dims.get(index) {
            Some(new) => {
                *d = new.to_vec();
                *present = true;
            }
            None => *present = false,
        }
    }
    for (name, param) in &mut sample.params {
        if let Some((_, a, b)) = set.iter().find(|(n, _, _)| n == name) {
            *param = match param {
                Param::Int(_) => Param::Int(*a),
                Param::Ints(values) if values.len() == 2 => Param::Ints(vec![*a, *b]),
                Param::Ints(values) => Param::Ints(vec![*a; values.len()]),
            };
        }
    }
    sample
}

/// Candidate samples for an op kind, clearest first (each must still be admitted).
fn designed(op_kind: &str, template: &Sample) -> Vec<Sample> {
    let all = |p: &[(&'static str, i64)]| -> Vec<(&'static str, i64, i64)> {
        p.iter().map(|(n, v)| (*n, *v, *v)).collect()
    };
    match op_kind {
        "Conv2D" => vec![
            with(
                template,
                &[&[1, 2, 5, 5], &[2, 1, 3, 3]],
                &all(&[
                    ("stride", 2),
                    ("padding", 1),
                    ("dilation", 2),
                    ("groups", 2),
                ]),
            ),
            with(
                template,
                &[&[1, 1, 5, 5], &[1, 1, 3, 3]],
                &all(&[
                    ("stride", 1),
                    ("padding", 1),
                    ("dilation", 2),
                    ("groups", 1),
                ]),
            ),
            with(
                template,
                &[&[1, 1, 4, 4], &[1, 1, 3, 3]],
                &all(&[
                    ("stride", 1),
                    ("padding", 1),
                    ("dilation", 1),
                    ("groups", 1),
                ]),
            ),
            with(
                template,
                &[&[1, 1, 4, 4], &[1, 1, 2, 2]],
                &all(&[
                    ("stride", 1),
                    ("padding", 0),
                    ("dilation", 1),
                    ("groups", 1),
                ]),
            ),
        ],
        "Conv2dSimple" => vec![
            with(
                template,
                &[&[1, 1, 5, 5], &[1, 1, 3, 3]],
                &all(&[("stride", 2), ("padding", 1)]),
            ),
            with(
                template,
                &[&[1, 1, 4, 4], &[1, 1, 3, 3]],
                &all(&[("stride", 1), ("padding", 1)]),
            ),
            with(
                template,
                &[&[1, 1, 4, 4], &[1, 1, 2, 2]],
                &all(&[("stride", 1), ("padding", 0)]),
            ),
        ],
        "ConvTranspose2D" => vec![
            with(
                template,
                &[&[1, 1, 3, 3], &[1, 1, 3, 3]],
                &all(&[
                    ("stride", 2),
                    ("padding", 1),
                    ("output_padding", 1),
                    ("dilation", 1),
                    ("groups", 1),
                ]),
            ),
            with(
                template,
                &[&[1, 1, 3, 3], &[1, 1, 3, 3]],
                &all(&[
                    ("stride", 2),
                    ("padding", 1),
                    ("output_padding", 0),
                    ("dilation", 1),
                    ("groups", 1),
                ]),
            ),
            with(
                template,
                &[&[1, 1, 2, 2], &[1, 1, 2, 2]],
                &all(&[
                    ("stride", 1),
                    ("padding", 0),
                    ("output_padding", 0),
                    ("dilation", 1),
                    ("groups", 1),
                ]),
            ),
        ],
        "MaxPool2D" => vec![
            with(
                template,
                &[&[1, 1, 5, 5]],
                &all(&[("kernel_size", 3), ("stride", 2)]),
            ),
            with(
                template,
                &[&[1, 1, 4, 4]],
                &all(&[("kernel_size", 2), ("stride", 2)]),
            ),
        ],
        "Contiguize" => vec![with(template, &[&[1, 1, 3, 4]], &[])],
        _ => Vec::new(),
    }
}

/// The same operands refilled by `value(index, count)`.
fn refill(
    operands: &[Option<Operand>],
    dtype: DType,
    value: impl Fn(usize, usize) -> f64,
) -> Option<Vec<Option<Operand>>> {
    operands
        .iter()
        .map(|o| {
            let Some(o) = o else { return Some(None) };
            let count: usize = o.shape().iter().product();
            let values: Vec<f64> = (0..count).map(|i| value(i, count)).collect();
            let tensor = AnyTensor::from_f64(dtype, o.shape(), &values).ok()?;
            Some(Some(Operand::contiguous(tensor)))
        })
        .collect()
}

/// Distinct small integers 0, 1, … in a scrambled order (a pooling window's maximum is then
/// unambiguous).
fn distinct(index: usize, count: usize) -> f64 {
    let step = (1..=count.max(1))
        .rev()
        .find(|s| *s * 2 < count.max(2) && gcd(*s, count) == 1)
        .unwrap_or(1);
    ((index * step + 3) % count.max(1)) as f64
}

/// Integers from −3 to 3 with period 7, so neighbouring rows of a small plane differ; a 3×3
/// tap sum over two channels stays below 256, exact even in BF16.
fn small_integer(index: usize, _: usize) -> f64 {
    ((index * 5 + 3) % 7) as f64 - 3.0
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// A view with `first`'s logical values whose last two axes are stored transposed (column
/// major), with a sentence on its strides.
fn transposed(first: &Operand) -> Option<(Operand, String)> {
    let shape = first.shape().to_vec();
    let [lead @ .., rows, cols] = shape.as_slice() else {
        return None;
    };
    let (rows, cols) = (*rows, *cols);
    let plane = rows * cols;
    let values = first.packed().ok()?.to_f64_vec();
    let mut stored = vec![0.0; values.len()];
    for (index, value) in values.iter().enumerate() {
        let (base, within) = (index / plane * plane, index % plane);
        let (r, c) = (within / cols, within % cols);
        *stored.get_mut(base + c * rows + r)? = *value;
    }
    let storage = AnyTensor::from_f64(first.dtype(), &[stored.len()], &stored).ok()?;
    let mut strides = fkc_provider::shape::row_major_strides(&shape);
    let n = strides.len();
    *strides.get_mut(n - 1)? = isize::try_from(rows).ok()?;
    *strides.get_mut(n - 2)? = 1;
    let view = Operand::view(Arc::new(storage), shape.clone(), strides.clone(), 0).ok()?;
    let _ = lead;
    let text = format!(
        "`x`: shape {shape:?}, strides {strides:?} (its last two axes stored column-major, as a transposing producer leaves them)"
    );
    Some((view, text))
}

/// The grids, legend and trace of an op kind's figure.
fn figure(
    op_kind: &str,
    sample: &Sample,
    names: &[&str],
    inputs: &[Option<Input>],
    out: &Input,
) -> (Vec<Grid>, Vec<(String, String)>, Option<String>) {
    let name = |i: usize| names.get(i).copied().unwrap_or("input");
    let x = inputs.first().and_then(Option::as_ref);
    let w = inputs.get(1).and_then(Option::as_ref);
    let traced = match (op_kind, x, w) {
        ("Conv2D" | "Conv2dSimple", Some(x), Some(w)) => {
            conv_figure(op_kind, sample, (name(0), x), (name(1), w), out)
        }
        ("ConvTranspose2D", Some(x), Some(w)) => {
            transpose_figure(sample, (name(0), x), (name(1), w), out)
        }
        ("MaxPool2D", Some(x), _) => pool_figure(sample, (name(0), x), out),
        _ => None,
    };
    if let Some(figure) = traced {
        return figure;
    }
    let mut grids: Vec<Grid> = inputs
        .iter()
        .enumerate()
        .filter_map(|(i, input)| input.as_ref().map(|t| plane(name(i), t, 0, 0)))
        .collect();
    grids.push(plane("out", out, 0, 0));
    (grids, Vec::new(), None)
}

fn dims4(t: &Input) -> [usize; 4] {
    let mut dims = [1; 4];
    let skip = 4usize.saturating_sub(t.dims.len());
    for (slot, dim) in dims.iter_mut().skip(skip).zip(&t.dims) {
        *slot = *dim;
    }
    dims
}

/// Plane `[a, b, :, :]` of a tensor as a grid (rank 1 is one row).
fn plane(name: &str, t: &Input, a: usize, b: usize) -> Grid {
    let [_, d1, rows, cols] = dims4(t);
    let start = (a * d1 + b) * rows * cols;
    let label = match t.dims.len() {
        0..=2 => format!("{name} {:?}", t.dims),
        rank => {
            let mut index = vec!["0".to_owned(); rank - 2];
            if rank >= 4 {
                index[0] = a.to_string();
                index[1] = b.to_string();
            }
            format!("{name}[{}, :, :]", index.join(", "))
        }
    };
    Grid {
        label,
        rows,
        cols,
        values: t
            .values
            .iter()
            .skip(start)
            .take(rows * cols)
            .copied()
            .collect(),
        pad: (0, 0),
        marks: Vec::new(),
        window: None,
    }
}

fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e6 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

fn legend(entries: &[(&str, &str)]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|(kind, text)| ((*kind).to_owned(), (*text).to_owned()))
        .collect()
}

type Figure = (Vec<Grid>, Vec<(String, String)>, Option<String>);

/// A direct convolution: the output traced is the first that reads both padding and real
/// cells (the most real cells), or `out[0, 0]`.
fn conv_figure(
    op_kind: &str,
    sample: &Sample,
    (x_name, x): (&str, &Input),
    (w_name, w): (&str, &Input),
    out: &Input,
) -> Option<Figure> {
    let [_, cin, h, wd] = dims4(x);
    let [cout, cin_g, kh, kw] = dims4(w);
    let [_, _, out_h, out_w] = dims4(out);
    let p = |name: &str, default: i64| sample.pair_or(name, default).unwrap_or((default, default));
    let (sh, sw) = p("stride", 1);
    let (ph, pw) = p("padding", 0);
    let (dh, dw) = if op_kind == "Conv2D" {
        p("dilation", 1)
    } else {
        (1, 1)
    };
    let groups = usize::try_from(sample.int_or("groups", 1).unwrap_or(1))
        .unwrap_or(1)
        .max(1);
    let (h, wd) = (i64::try_from(h).ok()?, i64::try_from(wd).ok()?);
    let taps = |oh: i64, ow: i64| -> Vec<(i64, i64, i64, i64)> {
        let mut taps = Vec::new();
        for i in 0..i64::try_from(kh).unwrap_or(0) {
            for j in 0..i64::try_from(kw).unwrap_or(0) {
                taps.push((i, j, oh * sh - ph + i * dh, ow * sw - pw + j * dw));
            }
        }
        taps
    };
    let inside = |r: i64, c: i64| (0..h).contains(&r) && (0..wd).contains(&c);
    let mut best = (0i64, 0i64, -1i64);
    for oh in 0..i64::try_from(out_h).ok()? {
        for ow in 0..i64::try_from(out_w).ok()? {
            let t = taps(oh, ow);
            let real = t.iter().filter(|(_, _, r, c)| inside(*r, *c)).count() as i64;
            let padded = t.len() as i64 - real;
            let score = if real > 0 && padded > 0 {
                100 + real
            } else {
                real
            };
            if score > best.2 {
                best = (oh, ow, score);
            }
        }
    }
    let (oh, ow, _) = best;
    let co = 0usize;
    let group = co / (cout / groups).max(1);
    let shown = cin_g.min(3);
    let taps = taps(oh, ow);
    let pad = (
        usize::try_from(ph).unwrap_or(0),
        usize::try_from(pw).unwrap_or(0),
    );
    // Every channel when the tensors are small (at most 3 planes each); the traced output's
    // taps marked in the planes it reads.
    let all = cin <= 3 && cout <= 3 && cout * cin_g <= 3;
    let mut x_grids = Vec::new();
    let mut w_grids = Vec::new();
    for channel in 0..cin {
        let traced = channel / cin_g.max(1) == group && channel % cin_g.max(1) < shown;
        if !(traced || all) {
            continue;
        }
        let mut grid = plane(x_name, x, 0, channel);
        grid.pad = pad;
        if traced {
            let ci = channel % cin_g.max(1);
            let mut weight = plane(w_name, w, co, ci);
            for (n, (i, j, r, c)) in taps.iter().enumerate() {
                let number = Some(ci * taps.len() + n + 1);
                grid.marks.push(Mark {
                    row: *r,
                    col: *c,
                    kind: MarkKind::Tap,
                    number,
                });
                weight.marks.push(Mark {
                    row: *i,
                    col: *j,
                    kind: MarkKind::Tap,
                    number,
                });
            }
            w_grids.push(weight);
        }
        x_grids.push(grid);
    }
    if all {
        for other in 1..cout {
            for ci in 0..cin_g {
                w_grids.push(plane(w_name, w, other, ci));
            }
        }
    }
    let mut grids = x_grids;
    grids.extend(w_grids);
    for channel in 0..if all { cout } else { 1 } {
        let mut out_grid = plane("out", out, 0, channel);
        if channel == co {
            out_grid.marks.push(Mark {
                row: oh,
                col: ow,
                kind: MarkKind::Out,
                number: None,
            });
        }
        grids.push(out_grid);
    }
    let value = out
        .values
        .get((co * out_h + usize::try_from(oh).ok()?) * out_w + usize::try_from(ow).ok()?)
        .copied()?;
    let padded = taps.iter().filter(|(_, _, r, c)| !inside(*r, *c)).count() * shown;
    let total = taps.len() * shown;
    let mut trace = format!(
        "`out[0, {co}, {oh}, {ow}]` = Σ `{x_name}` × `{w_name}` over the {total} numbered taps ({}{}{}): ",
        if dh > 1 || dw > 1 {
            format!("dilation ({dh}, {dw}) spaces them, ")
        } else {
            String::new()
        },
        if sh > 1 || sw > 1 {
            format!("stride ({sh}, {sw}) moves the window, ")
        } else {
            String::new()
        },
        if padded > 0 {
            format!("{padded} fall in the padding and read 0")
        } else {
            "none falls in the padding".to_owned()
        }
    );
    if cin_g > shown {
        trace.push_str(&format!(
            "(the first {shown} of {cin_g} input channels shown) "
        ));
    }
    trace.push_str(&format!("= {}.", number(value)));
    if groups > 1 {
        let channels = if cin_g == 1 {
            format!("input channel {}", group * cin_g)
        } else {
            format!(
                "input channels {} to {}",
                group * cin_g,
                group * cin_g + cin_g - 1
            )
        };
        trace.push_str(&format!(
            " With groups = {groups}, output channel {co} reads {channels} only."
        ));
    }
    let mut entries = vec![
        (
            "tap",
            "a tap of the traced output: the same number in the input and the weight",
        ),
        ("out", "the output it produces"),
    ];
    if ph > 0 || pw > 0 {
        entries.push(("pad", "padding (read as 0)"));
    }
    Some((grids, legend(&entries), Some(trace)))
}

/// A transposed convolution: one input element's scatter footprint in the output.
fn transpose_figure(
    sample: &Sample,
    (x_name, x): (&str, &Input),
    (w_name, w): (&str, &Input),
    out: &Input,
) -> Option<Figure> {
    let [_, _, h, wd] = dims4(x);
    let [_, _, kh, kw] = dims4(w);
    let [_, _, out_h, out_w] = dims4(out);
    let p = |name: &str, default: i64| sample.pair_or(name, default).unwrap_or((default, default));
    let (sh, sw) = p("stride", 1);
    let (ph, pw) = p("padding", 0);
    let (dh, dw) = p("dilation", 1);
    let (ih, iw) = (i64::try_from(h / 2).ok()?, i64::try_from(wd / 2).ok()?);
    let mut x_grid = plane(x_name, x, 0, 0);
    x_grid.marks.push(Mark {
        row: ih,
        col: iw,
        kind: MarkKind::Out,
        number: None,
    });
    let mut w_grid = plane(w_name, w, 0, 0);
    let mut out_grid = plane("out", out, 0, 0);
    let (oh_max, ow_max) = (i64::try_from(out_h).ok()?, i64::try_from(out_w).ok()?);
    let mut cropped = 0;
    let mut number = 0;
    for i in 0..i64::try_from(kh).ok()? {
        for j in 0..i64::try_from(kw).ok()? {
            number += 1;
            let (r, c) = (ih * sh - ph + i * dh, iw * sw - pw + j * dw);
            w_grid.marks.push(Mark {
                row: i,
                col: j,
                kind: MarkKind::Tap,
                number: Some(number),
            });
            if (0..oh_max).contains(&r) && (0..ow_max).contains(&c) {
                out_grid.marks.push(Mark {
                    row: r,
                    col: c,
                    kind: MarkKind::Tap,
                    number: Some(number),
                });
            } else {
                cropped += 1;
            }
        }
    }
    let value = x
        .values
        .get(usize::try_from(ih).ok()? * wd + usize::try_from(iw).ok()?)
        .copied()?;
    let trace = format!(
        "`{x_name}[0, 0, {ih}, {iw}]` = {} scatters: it adds {} × `{w_name}[0, 0, i, j]` to the numbered `out` cells, which start at ({ih}·{sh} − {ph}, {iw}·{sw} − {pw}) = ({}, {}) and step by the dilation ({dh}, {dw}){}. Each `out` cell sums what every input element scatters onto it.",
        number_text(value),
        number_text(value),
        ih * sh - ph,
        iw * sw - pw,
        if cropped > 0 {
            format!("; {cropped} taps fall outside `out` (cropped by the padding)")
        } else {
            String::new()
        }
    );
    let entries = [
        ("out", "the input element traced"),
        (
            "tap",
            "its scatter footprint: weight tap n lands on out cell n",
        ),
    ];
    Some((
        vec![x_grid, w_grid, out_grid],
        legend(&entries),
        Some(trace),
    ))
}

fn number_text(value: f64) -> String {
    number(value)
}

/// Max pooling: the window of `out[0, 0, 0, 0]` and the maximum it chose.
fn pool_figure(sample: &Sample, (x_name, x): (&str, &Input), out: &Input) -> Option<Figure> {
    let [_, _, _, wd] = dims4(x);
    let k = sample.int_or("kernel_size", 1).unwrap_or(1).max(1);
    let (sh, _) = sample.pair_or("stride", 1).unwrap_or((1, 1));
    let mut x_grid = plane(x_name, x, 0, 0);
    x_grid.window = Some((0, 0, k - 1, k - 1));
    let mut best: Option<(i64, i64, f64)> = None;
    for r in 0..k {
        for c in 0..k {
            let value = x
                .values
                .get(usize::try_from(r).ok()? * wd + usize::try_from(c).ok()?)
                .copied()?;
            if best.is_none_or(|(_, _, b)| value > b) {
                best = Some((r, c, value));
            }
        }
    }
    let (r, c, value) = best?;
    x_grid.marks.push(Mark {
        row: r,
        col: c,
        kind: MarkKind::Max,
        number: None,
    });
    let mut out_grid = plane("out", out, 0, 0);
    out_grid.marks.push(Mark {
        row: 0,
        col: 0,
        kind: MarkKind::Out,
        number: None,
    });
    let trace = format!(
        "`out[0, 0, 0, 0]` = max of the {k}×{k} window = {} (at `{x_name}[0, 0, {r}, {c}]`); the next window starts {sh} cells on (stride {sh}).",
        number(value)
    );
    let entries = [
        ("window", "the window of out[0, 0, 0, 0]"),
        ("max", "the maximum it chose"),
        ("out", "the output"),
    ];
    Some((vec![x_grid, out_grid], legend(&entries), Some(trace)))
}

/// The contract's cost formulas evaluated on a sample (the example's; the priced plan's
/// Contiguize step).
pub fn cost_values(domain: &Domain<'_>, sample: &Sample, dtype: DType) -> Vec<CostValue> {
    let mut bindings = domain.bindings(sample, dtype);
    if let Some(outputs) = domain.outputs(sample, &bindings) {
        domain.bind_outputs(&mut bindings, &outputs);
    }
    domain
        .contract
        .formulas
        .iter()
        .map(|(name, formula)| CostValue {
            name: name.clone(),
            formula: formula.source.value.clone(),
            value: crate::expr::eval(&formula.expr, &bindings)
                .ok()
                .and_then(|v| v.as_int()),
        })
        .collect()
}

/// Reduction lengths of the drift plot.
const DRIFT_LENGTHS: &[i64] = &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
/// Trials per length (seeded random operands in [-1, 1)).
const DRIFT_TRIALS: u64 = 4;

/// A sample whose single output element sums `length` products.
fn reduction_sample(op_kind: &str, template: &Sample, length: i64) -> Option<Sample> {
    let ones = |names: &[&'static str]| -> Vec<(&'static str, i64, i64)> {
        names.iter().map(|n| (*n, 1, 1)).collect()
    };
    let mut set = ones(&["stride", "dilation", "groups"]);
    set.extend([("padding", 0, 0), ("output_padding", 0, 0)]);
    match op_kind {
        "Conv2D" | "Conv2dSimple" => Some(with(
            template,
            &[&[1, length, 1, 1], &[1, length, 1, 1]],
            &set,
        )),
        "ConvTranspose2D" => Some(with(
            template,
            &[&[1, length, 1, 1], &[length, 1, 1, 1]],
            &set,
        )),
        "MaxPool2D" => {
            // A k×k window over a k×k plane: one output, the maximum of K = k² values.
            let side = (1..=64).find(|k| k * k == length)?;
            Some(with(
                template,
                &[&[1, 1, side, side]],
                &[("kernel_size", side, side), ("stride", 1, 1)],
            ))
        }
        _ => None,
    }
}

/// Runs the kernel in a half-precision dtype on growing reductions and compares each result
/// with the exact sum of the same (rounded) operands.
fn drift(
    domain: &Domain<'_>,
    kernel: &Kernel<'_>,
    op_kind: &str,
    dtype: DType,
    template: &Sample,
    admits: &dyn Fn(&Sample) -> bool,
) -> Option<Drift> {
    let mut points = Vec::new();
    for &length in DRIFT_LENGTHS {
        let Some(sample) = reduction_sample(op_kind, template, length) else {
            continue;
        };
        if !admits(&sample) {
            continue;
        }
        let mut worst: Option<DriftPoint> = None;
        for trial in 0..DRIFT_TRIALS {
            let seed = 0x000d_41f7 ^ (trial << 20) ^ u64::try_from(length).unwrap_or(0);
            let Ok((operands, values)) = arguments(kernel, &sample, dtype, Fill::Random(seed))
            else {
                continue;
            };
            let CallOutcome::Outputs(outputs) = kernel.run(&operands, &values) else {
                continue;
            };
            let Some(got) = outputs
                .first()
                .and_then(|o| o.to_f64_vec().first().copied())
            else {
                continue;
            };
            let inputs: Vec<Option<Input>> = operands
                .iter()
                .map(|o| {
                    o.as_ref().map(|o| Input {
                        dims: o.shape().to_vec(),
                        values: o.storage().to_f64_vec(),
                    })
                })
                .collect();
            let shape: Vec<i64> = outputs
                .first()
                .map(|o| o.shape().iter().map(|d| *d as i64).collect())
                .unwrap_or_default();
            let expected = evaluate(
                domain,
                kernel,
                dtype,
                &sample,
                &inputs,
                &[shape],
                Mode::Bounded,
                false,
            );
            let Some(Elements::Bounded(want)) = expected
                .ok()
                .flatten()
                .and_then(|(e, _)| e.outputs.into_iter().next())
            else {
                continue;
            };
            let Some(exact) = want.first() else {
                continue;
            };
            let point = DriftPoint {
                length: usize::try_from(length).unwrap_or(0),
                error: (got - exact.value).abs(),
                bound: exact.error,
            };
            let ratio = |p: &DriftPoint| p.error / p.bound.max(f64::MIN_POSITIVE);
            if worst.as_ref().is_none_or(|w| ratio(&point) > ratio(w)) {
                worst = Some(point);
            }
        }
        points.extend(worst);
    }
    (points.len() >= 2).then(|| Drift {
        dtype: dtype.name().to_owned(),
        reduction: if op_kind == "MaxPool2D" {
            "took the maximum of K random values in [-1, 1)".to_owned()
        } else {
            "summed K products of random values in [-1, 1)".to_owned()
        },
        symbol: kernel.symbol.clone(),
        trials: usize::try_from(DRIFT_TRIALS).unwrap_or(0),
        points,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample() -> Sample {
        Sample {
            inputs: vec![
                ("x".into(), vec![1, 1, 4, 4], true),
                ("weight".into(), vec![1, 1, 2, 2], true),
                ("bias".into(), vec![1], true),
            ],
            params: vec![
                ("stride".into(), Param::Ints(vec![3, 3])),
                ("padding".into(), Param::Ints(vec![0, 0])),
                ("groups".into(), Param::Int(1)),
            ],
        }
    }

    #[test]
    fn designed_samples_replace_dims_and_known_params_only() {
        let designed = designed("Conv2D", &sample());
        let first = &designed[0];
        assert_eq!(first.dims("x"), Some(&[1, 2, 5, 5][..]));
        assert_eq!(first.dims("weight"), Some(&[2, 1, 3, 3][..]));
        assert!(!first.inputs[2].2, "optional bias is absent");
        assert_eq!(first.param("stride"), Some(&Param::Ints(vec![2, 2])));
        assert_eq!(first.param("groups"), Some(&Param::Int(2)));
        assert_eq!(
            first.param("dilation"),
            None,
            "not a field of this contract"
        );
    }

    #[test]
    fn conv_trace_marks_each_dilated_tap_where_the_kernel_reads_it() {
        // x [1,1,5,5], weight [1,1,3,3], stride 1, padding 1, dilation 2 → out 3×3.
        let s = with(
            &sample(),
            &[&[1, 1, 5, 5], &[1, 1, 3, 3]],
            &[("stride", 1, 1), ("padding", 1, 1), ("dilation", 2, 2)],
        );
        let mut s = s;
        s.params.push(("dilation".into(), Param::Ints(vec![2, 2])));
        let x = Input {
            dims: vec![1, 1, 5, 5],
            values: (0..25).map(f64::from).collect(),
        };
        let w = Input {
            dims: vec![1, 1, 3, 3],
            values: vec![1.0; 9],
        };
        let out = Input {
            dims: vec![1, 1, 3, 3],
            values: vec![0.0; 9],
        };
        let (grids, legend, trace) =
            conv_figure("Conv2D", &s, ("x", &x), ("weight", &w), &out).unwrap();
        assert_eq!(grids.len(), 3, "x, weight, out");
        let taps: Vec<(i64, i64)> = grids[0].marks.iter().map(|m| (m.row, m.col)).collect();
        // out[0,0] reads 4 real cells and 5 padding; out[0,1] reads (-1,0) … (3,4) in steps
        // of 2: 6 real cells and 3 in the padding, so it is the one traced.
        assert_eq!(
            taps,
            vec![
                (-1, 0),
                (-1, 2),
                (-1, 4),
                (1, 0),
                (1, 2),
                (1, 4),
                (3, 0),
                (3, 2),
                (3, 4)
            ]
        );
        assert_eq!(grids[2].marks[0].row, 0);
        assert_eq!(grids[2].marks[0].col, 1);
        assert_eq!(grids[0].pad, (1, 1));
        assert_eq!(grids[1].marks[4].number, grids[0].marks[4].number);
        assert!(trace.unwrap().contains("3 fall in the padding"));
        assert!(legend.iter().any(|(kind, _)| kind == "pad"));
    }

    #[test]
    fn transposed_footprint_starts_at_stride_times_index_minus_padding() {
        let s = with(
            &sample(),
            &[&[1, 1, 3, 3], &[1, 1, 3, 3]],
            &[("stride", 2, 2), ("padding", 1, 1)],
        );
        let x = Input {
            dims: vec![1, 1, 3, 3],
            values: vec![1.0; 9],
        };
        let w = x.clone();
        let out = Input {
            dims: vec![1, 1, 5, 5],
            values: vec![0.0; 25],
        };
        let (grids, _, _) = transpose_figure(&s, ("x", &x), ("weight", &w), &out).unwrap();
        let footprint: Vec<(i64, i64)> = grids[2].marks.iter().map(|m| (m.row, m.col)).collect();
        assert_eq!(footprint.first(), Some(&(1, 1)));
        assert_eq!(footprint.last(), Some(&(3, 3)));
        assert_eq!(footprint.len(), 9);
    }

    #[test]
    fn pooling_marks_the_window_and_its_maximum() {
        let mut s = sample();
        s.params = vec![
            ("kernel_size".into(), Param::Int(2)),
            ("stride".into(), Param::Int(2)),
        ];
        let x = Input {
            dims: vec![1, 1, 4, 4],
            values: vec![
                0.0, 9.0, 1.0, 1.0, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
            ],
        };
        let out = Input {
            dims: vec![1, 1, 2, 2],
            values: vec![9.0, 1.0, 1.0, 1.0],
        };
        let (grids, _, trace) = pool_figure(&s, ("x", &x), &out).unwrap();
        assert_eq!(grids[0].window, Some((0, 0, 1, 1)));
        assert_eq!((grids[0].marks[0].row, grids[0].marks[0].col), (0, 1));
        assert!(trace.unwrap().contains("= 9"));
    }
}
