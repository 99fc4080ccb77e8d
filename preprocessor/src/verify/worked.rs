//! The worked example a reader sees: one small admitted sample, run through the real kernel on
//! small-integer operands (readable, and exact in every dtype), with the first channel of each
//! operand and of the output laid out as grids, and the result compared with the oracle.

use super::oracle::{self, Input};
use super::run::{Fill, operands, params};
use super::sample::Sample;
use crate::providers::{CallOutcome, Kernel};
use fkc_provider::DType;

/// A 2-D slice of a tensor, with an optional highlighted rectangle (inclusive cell bounds).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Grid {
    pub label: String,
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<f64>,
    pub highlight: Option<(usize, usize, usize, usize)>,
}

/// What ran, on what, with what result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Worked {
    pub symbol: String,
    pub dtype: String,
    pub sample: String,
    pub grids: Vec<Grid>,
    /// Whether the output equals the independent oracle exactly; `None` when the op kind has
    /// no oracle.
    pub matches_oracle: Option<bool>,
}

/// Picks a readable admitted sample and runs it.
pub fn example(
    kernel: &Kernel<'_>,
    op_kind: &str,
    dtype: DType,
    admitted: &[&Sample],
) -> Option<Worked> {
    let sample = pick(admitted)?;
    let operands = operands(kernel, sample, dtype, Fill::SmallIntegers).ok()?;
    let values = params(kernel, sample).ok()?;
    let CallOutcome::Outputs(outputs) = kernel.run(&operands, &values) else {
        return None;
    };
    let output = outputs.first()?;
    let inputs: Vec<Option<Input>> = operands
        .iter()
        .map(|o| {
            o.as_ref().map(|o| Input {
                dims: o.shape().to_vec(),
                values: o.storage().to_f64_vec(),
            })
        })
        .collect();
    let out_values = output.to_f64_vec();
    let matches_oracle =
        oracle::reference(op_kind, &inputs, sample).map(|r| r.values == out_values);
    let mut grids: Vec<Grid> = kernel
        .inputs
        .iter()
        .zip(&inputs)
        .filter_map(|(desc, input)| input.as_ref().map(|i| grid(&desc.name, &i.dims, &i.values)))
        .collect();
    if let Some(first) = grids.first_mut() {
        first.highlight = receptive_field(op_kind, sample, first.rows, first.cols);
    }
    let mut out_grid = grid("out", output.shape(), &out_values);
    if grids.first().is_some_and(|g| g.highlight.is_some()) {
        out_grid.highlight = Some((0, 0, 0, 0));
    }
    grids.push(out_grid);
    Some(Worked {
        symbol: kernel.symbol.clone(),
        dtype: dtype.name().to_owned(),
        sample: sample.describe(),
        grids,
        matches_oracle,
    })
}

/// The smallest sample whose first input is at least 3×3 in its last two dims and whose
/// output is at least 2×2; otherwise the smallest sample.
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

/// The first channel (`[0, 0, :, :]`) of a tensor as a grid; rank 1 is one row.
fn grid(name: &str, dims: &[usize], values: &[f64]) -> Grid {
    let (rows, cols) = match dims {
        [len] => (1, *len),
        [.., r, c] => (*r, *c),
        [] => (1, 1),
    };
    let label = match dims.len() {
        0..=2 => format!("{name} {dims:?}"),
        rank => {
            let leading = vec!["0"; rank - 2].join(", ");
            format!("{name}[{leading}] of {dims:?}")
        }
    };
    Grid {
        label,
        rows,
        cols,
        values: values.iter().take(rows * cols).copied().collect(),
        highlight: None,
    }
}

/// The input cells that output `[0, 0]` reads, for the op kinds whose geometry is a window.
fn receptive_field(
    op_kind: &str,
    sample: &Sample,
    rows: usize,
    cols: usize,
) -> Option<(usize, usize, usize, usize)> {
    let pair =
        |name: &str, default: i64| sample.pair_or(name, default).unwrap_or((default, default));
    let (k_rows, k_cols, pad, dil) = match op_kind {
        "Conv2D" | "Conv2dSimple" => {
            let weight = sample
                .inputs
                .get(1)
                .map(|(_, d, _)| d.clone())
                .unwrap_or_default();
            let (kh, kw) = (*weight.get(2)?, *weight.get(3)?);
            (
                kh,
                kw,
                pair("padding", 0),
                if op_kind == "Conv2D" {
                    pair("dilation", 1)
                } else {
                    (1, 1)
                },
            )
        }
        "MaxPool2D" => {
            let (k, _) = pair("kernel_size", 1);
            (k, k, (0, 0), (1, 1))
        }
        _ => return None,
    };
    let span = |k: i64, p: i64, d: i64, len: usize| -> Option<(usize, usize)> {
        let first = (-p).max(0);
        let last = (-p + d * (k - 1)).min(i64::try_from(len).ok()? - 1);
        (first <= last)
            .then(|| Some((usize::try_from(first).ok()?, usize::try_from(last).ok()?)))?
    };
    let (r0, r1) = span(k_rows, pad.0, dil.0, rows)?;
    let (c0, c1) = span(k_cols, pad.1, dil.1, cols)?;
    Some((r0, c0, r1, c1))
}
