//! The worked example a reader sees, drawn from the contract's semantics: a small admitted
//! sample run through the real kernel on small integers, one element traced through the
//! semantics (the input elements one output element reads, numbered in the order it reads
//! them, or the outputs one input element is scattered to), and, for each half-precision
//! dtype whose sums drift, the kernel's error against the semantics' bound as the reduction
//! grows. Nothing here knows an op kind: every choice is made on the trace.

mod candidates;
mod drift;
mod example;
mod figure;
mod focus;
mod statements;

pub(super) use statements::rounds;

use super::constraints::Domain;
use super::sample::Sample;
use crate::providers::Kernel;
use fkc_provider::DType;

/// What a mark on a cell means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarkKind {
    /// Read by one numbered step of the traced computation (the same number in every grid).
    Tap,
    /// The element traced.
    Traced,
    /// The element a selection (a `max` or `min`) returned.
    Chosen,
}

/// A marked cell of a grid.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Mark {
    pub row: usize,
    pub col: usize,
    pub kind: MarkKind,
    /// The step's number.
    pub number: Option<usize>,
}

/// A 2-D plane of a tensor (its last two axes), each cell's text as shown (empty: blank).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Grid {
    pub label: String,
    pub rows: usize,
    pub cols: usize,
    pub cells: Vec<String>,
    pub marks: Vec<Mark>,
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
    /// Terms summed by the one output element (the steps its trace has).
    pub length: usize,
    /// `|kernel − exact|`, the worst over the trials.
    pub error: f64,
    /// The semantics' bound for that trial, where it is below the terms' own magnitude
    /// `Σ|term|` (beyond that it says nothing).
    pub bound: Option<f64>,
}

/// `|kernel − exact|` against reduction length, measured by running the kernel.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Drift {
    pub dtype: String,
    pub symbol: String,
    /// What grows with K (`` `x.dim[1]`, `kernel.dim[1]` ``).
    pub grows: String,
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
    /// What the operands hold ("small integers", "small integers and one NaN").
    pub operands: String,
    /// Whether the kernel's output is, element by element, what the semantics give.
    pub agrees: bool,
    /// (mark kind, what it means) for the marks this figure uses.
    pub legend: Vec<(String, String)>,
    /// The traced computation in words and numbers.
    pub trace: Option<String>,
    /// The contract's cost formulas on this example.
    pub cost: Vec<CostValue>,
    /// The strides of a view the example passed, and of the output.
    pub layout: Option<String>,
    /// One drift measurement per half-precision dtype whose sums drift.
    pub drift: Vec<Drift>,
}

/// The worked example of a contract with semantics (`None` without): drawn on the first of
/// `kernels`, with its cost formulas and a drift plot for every BF16/F16 kernel whose
/// results drift. `admitted` are the gate's samples, a fallback for the example's own.
pub fn example_in(
    domain: &Domain<'_>,
    kernels: &[(DType, Kernel<'_>)],
    admitted: &[&Sample],
) -> Option<Worked> {
    let &(dtype, kernel) = kernels.first()?;
    // Without semantics there is nothing to trace: no candidate is worth drawing.
    domain.contract.semantics.as_ref()?.widest_program(dtype)?;
    let pool = candidates::pool(domain, dtype, admitted);
    let (mut worked, sample) = example::run(domain, &kernel, dtype, &pool)?;
    worked.cost = cost_values(domain, &sample, dtype);
    for &(half, kernel) in kernels {
        if matches!(half, DType::BF16 | DType::F16) {
            worked
                .drift
                .extend(drift::measure(domain, &kernel, half, &pool));
        }
    }
    Some(worked)
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

/// A number as the figure shows it: integers without a fraction, a true minus sign.
pub fn number(value: f64) -> String {
    let text = if value.is_nan() {
        return "NaN".to_owned();
    } else if value.is_infinite() {
        "inf".to_owned()
    } else if value.fract() == 0.0 && value.abs() < 1e6 {
        format!("{:.0}", value.abs())
    } else {
        let short = format!("{:.3}", value.abs());
        short.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    if value.is_sign_negative() && value != 0.0 {
        format!("−{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    //! The worked example and drift plot of real kernels (the built-in reference backend) on
    //! the seed chapter's corrected contracts.
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::providers::Provider;
    use crate::verify::tests::read_resolved;

    const SEED: &str = include_str!("../../../../book/seed/reference-conv-pool.md");

    const COMMON: &str = include_str!("../../../../book/contracts/common.md");

    /// The last `fkc` block of the seed chapter for `kernel` (its corrected contract).
    fn block(kernel: &str) -> String {
        block_in(SEED, kernel)
    }

    /// The last `fkc` block of `chapter` for `kernel`.
    fn block_in(chapter: &str, kernel: &str) -> String {
        chapter
            .split("```fkc\n")
            .filter_map(|rest| rest.split("```").next())
            .filter(|body| body.starts_with(&format!("kernel: {kernel}\n")))
            .last()
            .expect("a corrected block")
            .to_owned()
    }

    /// The example of the seed's `kernel` on the built-in kernels of `dtypes`.
    fn example(kernel: &str, dtypes: &[DType], text: Option<String>) -> Option<Worked> {
        let provider = Provider::builtin();
        let text = text.unwrap_or_else(|| block(kernel));
        let (_, raw, contract) = read_resolved(&text);
        let kernels: Vec<(DType, Kernel<'_>)> = dtypes
            .iter()
            .map(|dtype| {
                let symbol = format!(
                    "fuel_reference_backend::ops::{kernel}_{}",
                    dtype.name().to_lowercase()
                );
                let info = provider.description().entry_point(&symbol).unwrap();
                (
                    *dtype,
                    Kernel {
                        info,
                        provider: &provider,
                    },
                )
            })
            .collect();
        let domain = Domain::new(&raw, &contract, &kernels[0].1.info.params);
        example_in(&domain, &kernels, &[])
    }

    #[test]
    fn a_selection_shows_a_nan_in_its_window_and_never_drifts() {
        let worked = example("max_pool2d", &[DType::F32, DType::BF16], None).unwrap();
        assert!(worked.agrees);
        assert_eq!(worked.operands, "small integers and one NaN");
        let trace = worked.trace.unwrap();
        assert!(trace.contains("= max(") && trace.contains("NaN"), "{trace}");
        assert!(
            trace.contains("under `precision.nan: ignore` the NaN is dropped"),
            "{trace}"
        );
        let marks = worked.grids.iter().flat_map(|g| &g.marks);
        assert_eq!(marks.filter(|m| m.kind == MarkKind::Chosen).count(), 1);
        assert!(worked.drift.is_empty(), "a maximum rounds nothing");
    }

    #[test]
    fn a_sum_is_written_out_with_its_bias_and_its_drift_bounded_only_where_it_says_something() {
        let worked = example("conv2d", &[DType::F32], None).unwrap();
        let trace = worked.trace.unwrap();
        assert!(trace.contains("+ bias "), "{trace}");
        assert!(worked.grids.iter().any(|g| g.label == "bias"));
        let simple = example("conv2d_simple", &[DType::F32, DType::BF16], None).unwrap();
        assert_eq!(simple.drift.len(), 1, "{:?}", simple.drift);
        let drift = &simple.drift[0];
        assert_eq!(drift.grows, "`kernel.dim[1]`, and `x.dim[1]` follows");
        let lengths: Vec<usize> = drift.points.iter().map(|p| p.length).collect();
        assert_eq!(lengths.first(), Some(&1));
        assert_eq!(lengths.last(), Some(&4096));
        // BF16's γ_K reaches 1 between K = 128 and 256: no bound is stated beyond.
        for point in &drift.points {
            assert_eq!(point.bound.is_some(), point.length <= 128, "{point:?}");
            assert!(point.bound.is_none_or(|b| point.error <= b), "{point:?}");
        }
        assert!(drift.points.iter().any(|p| p.error > 0.0));
    }

    #[test]
    fn a_scatter_traces_an_input_element_to_its_own_contributions() {
        let worked = example("conv_transpose2d", &[DType::F32], None).unwrap();
        let trace = worked.trace.unwrap();
        assert!(trace.contains("is scattered to"), "{trace}");
        let landing = worked
            .grids
            .iter()
            .find(|g| g.label.contains(" → out"))
            .unwrap();
        // Blank where the traced element adds nothing, its contributions where it does.
        assert!(landing.cells.iter().any(String::is_empty));
        assert!(landing.marks.iter().all(|m| m.number.is_some()));
    }

    #[test]
    fn a_scaled_sum_is_shown_with_its_scale() {
        // A scale of 1 would hide the step after the sum: the example prefers one that shows it.
        let text = block_in(COMMON, "qmatmul");
        let worked = example("qmatmul", &[DType::I8], Some(text)).unwrap();
        let trace = worked.trace.unwrap();
        assert!(trace.contains(", divided by "), "{trace}");
    }

    #[test]
    fn without_semantics_there_is_no_figure() {
        // An op kind no standard semantics defines, and no semantics of its own.
        let text = block("max_pool2d").replace("op_kind: MaxPool2D", "op_kind: Unknown2D");
        assert_eq!(example("max_pool2d", &[DType::F32], Some(text)), None);
    }
}
