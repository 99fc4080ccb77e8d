//! The worked example's drawings as inline SVG: each plane of a tensor as a grid of numbers,
//! the reads of the traced element numbered alike in every grid, the traced element and (for a
//! selection) the value returned; and the half-precision drift plot. Shapes carry CSS classes
//! (`fkc-fig-*`, `fkc-drift-*`, styled in `style.html.tera` from mdBook's theme variables, so a
//! book restyles them) and presentation attributes as a fallback. No script, no external
//! asset, no XML prolog, no CDATA, no newline (so no blank line), every text escaped.
//! [`figure`] gathers the drawings and sentences the `figure.html` template lays out.

use super::chart::{Chart, Frame, Scale, Type, decades};
use super::markup::escape;
use crate::verify::worked::{CostValue, Drift, DriftPoint, Grid, MarkKind, Worked};
use serde::Serialize;

const CELL: i64 = 28;
const LABEL: i64 = 20;

/// The drawn size of a grid: (width, height).
fn extent(grid: &Grid) -> (i64, i64) {
    let label = grid.label.chars().count() as i64 * 7 + 4;
    (
        (grid.cols as i64 * CELL).max(label),
        LABEL + grid.rows as i64 * CELL,
    )
}

fn rect(out: &mut String, class: &str, attrs: &str, x: i64, y: i64, w: i64, h: i64) {
    out.push_str(&format!(
        "<rect class=\"{class}\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" {attrs}/>"
    ));
}

fn grid_svg(grid: &Grid, x0: i64, out: &mut String) {
    out.push_str(&format!(
        "<text x=\"{x0}\" y=\"14\" font-size=\"12\" fill=\"currentColor\">{}</text>",
        escape(&grid.label)
    ));
    let at = |row: usize, col: usize| (x0 + col as i64 * CELL, LABEL + row as i64 * CELL);
    for row in 0..grid.rows {
        for col in 0..grid.cols {
            let (x, y) = at(row, col);
            let text = grid
                .cells
                .get(row * grid.cols + col)
                .map_or("", String::as_str);
            let class = if text.is_empty() {
                "fkc-fig-blank"
            } else {
                "fkc-fig-cell"
            };
            rect(
                out,
                class,
                "fill=\"none\" stroke=\"currentColor\" stroke-opacity=\"0.35\"",
                x,
                y,
                CELL,
                CELL,
            );
            out.push_str(&format!(
                "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
                x + CELL / 2,
                y + CELL / 2 + 4,
                escape(text)
            ));
        }
    }
    let drawn = |m: &&crate::verify::worked::Mark| m.row < grid.rows && m.col < grid.cols;
    for mark in grid.marks.iter().filter(drawn) {
        let (x, y) = at(mark.row, mark.col);
        let (class, attrs) = match mark.kind {
            MarkKind::Tap => (
                "fkc-fig-tap",
                "fill=\"currentColor\" fill-opacity=\"0.18\" stroke=\"currentColor\" stroke-width=\"2\"",
            ),
            MarkKind::Traced => (
                "fkc-fig-traced",
                "fill=\"currentColor\" fill-opacity=\"0.35\" stroke=\"currentColor\" stroke-width=\"2\"",
            ),
            MarkKind::Chosen => (
                "fkc-fig-chosen",
                "fill=\"none\" stroke=\"currentColor\" stroke-width=\"3\"",
            ),
        };
        rect(out, class, attrs, x + 1, y + 1, CELL - 2, CELL - 2);
        if let Some(n) = mark.number {
            out.push_str(&format!(
                "<text class=\"fkc-fig-tapnum\" x=\"{}\" y=\"{}\" font-size=\"9\" fill=\"currentColor\">{n}</text>",
                x + 3,
                y + 10
            ));
        }
    }
}

/// The figure for a worked example: every grid side by side.
pub fn worked_example(worked: &Worked) -> String {
    // One SVG per grid, in a wrapping row: on a narrow screen the grids flow onto further lines
    // at their own size instead of shrinking together.
    let mut out = format!(
        "<div class=\"fkc-example\" role=\"img\" aria-label=\"{}\">",
        escape(&format!("worked example of {}", worked.symbol))
    );
    for grid in &worked.grids {
        let (width, height) = extent(grid);
        let (width, height) = (width + 4, height + 4);
        out.push_str(&format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"fkc-grid\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" aria-hidden=\"true\">"
        ));
        grid_svg(grid, 2, &mut out);
        out.push_str("</svg>");
    }
    out.push_str("</div>");
    out
}

/// The sentence under the figure: what ran, on what, and how it compared with the semantics.
pub fn caption(worked: &Worked) -> String {
    format!(
        "Computed by `{}` ({}) when this page was built, on {}; the operands are {}, so every dtype holds them exactly, and the traced element is drawn from the contract's semantics. {}",
        worked.symbol,
        worked.dtype,
        worked.sample,
        worked.operands,
        if worked.agrees {
            "Every element the kernel returned is what the semantics give."
        } else {
            "Some element the kernel returned is not what the semantics give (see the checks above)."
        }
    )
}

/// The drift plot's frame.
const DRIFT: Frame = Frame {
    width: 440.0,
    height: 260.0,
    left: 62.0,
    right: 24.0,
    top: 46.0,
    bottom: 40.0,
};

/// The drift plot: `|kernel − exact|` (dots, solid) and the semantics' bound (dashed, where it
/// says something) against the reduction length, on log scales (log2 of the length, log10 of
/// the error; an exact result is drawn half a decade below the lowest).
pub fn drift_plot(drift: &Drift) -> String {
    let values = drift.points.iter().flat_map(|p| [Some(p.error), p.bound]);
    let (low, high) = decades(values.flatten()).map_or((-6.0, 0.0), |(l, h)| (l.into(), h.into()));
    let floor = low - 0.5; // where an exact (zero) error is drawn
    let units = |v: f64| {
        if v.is_finite() && v > 0.0 {
            v.log10()
        } else {
            floor
        }
    };
    let lengths: Vec<f64> = drift
        .points
        .iter()
        .map(|p| (p.length.max(1) as f64).log2())
        .collect();
    let x_max = lengths.iter().copied().fold(1.0, f64::max);
    let frame = DRIFT;
    let x = Scale::new((0.0, x_max), (frame.left, frame.plot_right()));
    let y = Scale::new((high, floor), (frame.top, frame.plot_bottom()));
    let kind = Type {
        size: 12,
        baseline: 3.0,
    };
    let label = format!(
        "{} drift of {}: error against reduction length",
        drift.dtype, drift.symbol
    );
    let mut chart = Chart::new(frame, kind, (x, y), "fkc-drift", &label);
    for decade in (low as i64)..=(high as i64) {
        chart.y_rule(decade as f64, "fkc-drift-grid", &format!("1e{decade}"));
    }
    chart.text(
        (frame.left - 4.0, y.at(floor) + 3.0),
        12,
        " text-anchor=\"end\"",
        "0",
    );
    for (point, l) in drift.points.iter().zip(&lengths) {
        if (*l as i64) % 2 == 0 {
            chart.x_label(*l, &point.length.to_string());
        }
    }
    let (left, top, bottom) = (frame.left, frame.top, frame.plot_bottom());
    chart.push(&format!(
        "<path class=\"fkc-drift-axis\" d=\"M{left} {top} V{bottom} H{:.1}\" fill=\"none\" stroke=\"currentColor\"/>",
        frame.plot_right()
    ));
    chart.text(
        ((left + frame.plot_right()) / 2.0, frame.height - 6.0),
        13,
        " text-anchor=\"middle\"",
        "reduction length K (terms the element sums)",
    );
    let finite = |v: f64| v.is_finite().then(|| units(v));
    let at = |value: fn(&DriftPoint) -> Option<f64>| {
        let points = drift.points.iter().zip(&lengths);
        chart.path(points.map(|(p, l)| (*l, value(p).and_then(finite))))
    };
    let (bound, error) = (at(|p| p.bound), at(|p| Some(p.error)));
    if !bound.is_empty() {
        chart.push(&format!(
            "<path class=\"fkc-drift-bound\" d=\"{bound}\" fill=\"none\" stroke=\"currentColor\" stroke-dasharray=\"6 4\" stroke-width=\"2\"/>"
        ));
    }
    chart.push(&format!(
        "<path class=\"fkc-drift-err\" d=\"{error}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\"/>"
    ));
    for (point, l) in drift.points.iter().zip(&lengths) {
        let bound = point
            .bound
            .map_or(String::new(), |b| format!(", bound = {}", scientific(b)));
        let tooltip = format!(
            "K = {}: |error| = {}{bound}",
            point.length,
            scientific(point.error)
        );
        let attributes = "class=\"fkc-drift-dot\" fill=\"currentColor\"";
        chart.dot((*l, units(point.error)), 3.0, attributes, &tooltip);
    }
    // The legend: the bound's line only where one is drawn.
    if drift.points.iter().any(|p| p.bound.is_some()) {
        chart.push(&format!(
            "<line class=\"fkc-drift-bound\" x1=\"{left:.1}\" y1=\"12\" x2=\"{:.1}\" y2=\"12\" stroke=\"currentColor\" stroke-dasharray=\"6 4\" stroke-width=\"2\"/>",
            left + 24.0,
        ));
        chart.text((left + 30.0, 16.0), 13, "", "bound γ_K·Σ|term|");
    }
    chart.push(&format!(
        "<circle class=\"fkc-drift-dot\" cx=\"{:.1}\" cy=\"30\" r=\"3\" fill=\"currentColor\"/>",
        left + 12.0,
    ));
    chart.text(
        (left + 30.0, 34.0),
        13,
        "",
        &format!("|{} kernel − exact|", drift.dtype),
    );
    chart.finish()
}

/// One legend entry: the mark's kind (`tap`, `traced`, `chosen`) and its meaning.
#[derive(Debug, Clone, Serialize)]
pub struct LegendEntry {
    pub kind: String,
    pub text: String,
}

/// A drift plot and its sentence.
#[derive(Debug, Clone, Serialize)]
pub struct DriftView {
    pub dtype: String,
    pub svg: String,
    pub caption: String,
}

/// One step of a plan, or the total: its cost in each column (`None`: not defined).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanStep {
    /// The step, with `code` spans (`` Contiguize(`x`) ``).
    pub step: String,
    /// Where its contract is, from the page (`None` for the kernel itself and the total).
    pub link: Option<String>,
    pub flops: Option<i64>,
    pub bytes_moved: Option<i64>,
    pub host_bytes: Option<i64>,
}

/// The priced plan for a strided producer of the example's first input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanView {
    pub input: String,
    pub shape: String,
    pub dtype: String,
    /// Contiguize, the kernel, the total (empty when not priced).
    pub steps: Vec<PlanStep>,
    /// Why the plan is not priced ("not priced: this book has no Contiguize contract for F32").
    pub unpriced: Option<String>,
}

/// Everything the `figure.html` template shows for a worked example.
#[derive(Debug, Clone, Serialize)]
pub struct FigureView {
    pub svg: String,
    pub caption: String,
    pub legend: Vec<LegendEntry>,
    pub trace: Option<String>,
    pub layout: Option<String>,
    pub cost: Vec<CostValue>,
    /// The planner's priced plan for a strided producer (contracts that require contiguous
    /// operands; set by [`super::plan::attach`]).
    pub plan: Option<PlanView>,
    pub drift: Vec<DriftView>,
}

/// The figure's view: drawings already escaped, sentences as text (the template escapes them).
pub fn figure(worked: &Worked) -> FigureView {
    FigureView {
        svg: worked_example(worked),
        caption: caption(worked),
        legend: worked
            .legend
            .iter()
            .map(|(kind, text)| LegendEntry {
                kind: kind.clone(),
                text: text.clone(),
            })
            .collect(),
        trace: worked.trace.clone(),
        layout: worked.layout.clone(),
        cost: worked.cost.clone(),
        plan: None,
        drift: worked
            .drift
            .iter()
            .map(|drift| DriftView {
                dtype: drift.dtype.clone(),
                svg: drift_plot(drift),
                caption: drift_caption(drift),
            })
            .collect(),
    }
}

/// What a drift plot measured, and what its bound says.
pub fn drift_caption(drift: &Drift) -> String {
    let bounded: Vec<&DriftPoint> = drift.points.iter().filter(|p| p.bound.is_some()).collect();
    let within = bounded
        .iter()
        .all(|p| p.bound.is_some_and(|b| p.error <= b));
    let bound = match (bounded.last(), drift.points.last()) {
        (None, _) => " The semantics' bound γ_K·Σ|term| is not drawn: at every K here it exceeds Σ|term|, the size of the terms themselves, and says nothing.".to_owned(),
        (Some(last), Some(longest)) if last.length < longest.length => format!(
            " The dashed line is the semantics' bound γ_K·Σ|term|, drawn up to K = {}: beyond, it exceeds Σ|term|, the size of the terms themselves, and says nothing.{}",
            last.length,
            if within { " Every error is within its bound." } else { " Some errors exceed their bound." }
        ),
        _ => format!(
            " The dashed line is the semantics' bound γ_K·Σ|term|.{}",
            if within { " Every error is within its bound." } else { " Some errors exceed their bound." }
        ),
    };
    let longest = drift.points.last().map_or(String::new(), |p| {
        format!(
            " At K = {}: |error| = {}{}.",
            p.length,
            scientific(p.error),
            p.bound
                .map_or(String::new(), |b| format!(", bound = {}", scientific(b)))
        )
    });
    format!(
        "Measured when this page was built: `{}` ({}) on samples whose one output element sums K terms — K grows with {} (a family found by tracing the semantics). Operands are random in [−1, 1), {} trials per K, each compared with the semantics' exact value on the same rounded operands; each K shows its worst trial.{longest}{bound}",
        drift.symbol, drift.dtype, drift.grows, drift.trials,
    )
}

/// A measured error or bound, with three significant digits.
fn scientific(value: f64) -> String {
    if value == 0.0 {
        "0".to_owned()
    } else if (1e-3..1e4).contains(&value.abs()) {
        let digits = 2 - value.abs().log10().floor().clamp(-3.0, 3.0) as i32;
        format!("{value:.*}", usize::try_from(digits.max(0)).unwrap_or(0))
    } else {
        format!("{value:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::worked::Mark;

    fn worked() -> Worked {
        Worked {
            symbol: "k<script>".to_owned(),
            dtype: "F32".to_owned(),
            sample: String::new(),
            shapes: Vec::new(),
            grids: vec![Grid {
                label: "x & <y>".to_owned(),
                rows: 2,
                cols: 2,
                cells: vec!["1".into(), "−2".into(), String::new(), "NaN".into()],
                marks: vec![
                    Mark {
                        row: 0,
                        col: 1,
                        kind: MarkKind::Tap,
                        number: Some(1),
                    },
                    Mark {
                        row: 1,
                        col: 1,
                        kind: MarkKind::Chosen,
                        number: None,
                    },
                    Mark {
                        row: 9,
                        col: 9,
                        kind: MarkKind::Traced,
                        number: None,
                    },
                ],
            }],
            operands: "small integers".to_owned(),
            agrees: true,
            legend: vec![("tap".to_owned(), "a tap".to_owned())],
            trace: None,
            cost: Vec::new(),
            layout: None,
            drift: Vec::new(),
        }
    }

    #[test]
    fn figure_is_escaped_inline_svg_without_newlines() {
        let svg = worked_example(&worked());
        assert!(svg.starts_with("<div class=\"fkc-example\"") && svg.ends_with("</svg></div>"));
        assert!(!svg.contains("<?xml") && !svg.contains("CDATA") && !svg.contains('\n'));
        assert!(!svg.contains("<script>") && svg.contains("x &amp; &lt;y&gt;"));
        assert!(svg.contains("worked example of k&lt;script&gt;"));
        assert!(svg.contains(">−2<") && svg.contains(">NaN<"));
        assert_eq!(svg.matches("class=\"fkc-fig-cell\"").count(), 3);
        assert_eq!(svg.matches("class=\"fkc-fig-blank\"").count(), 1);
        // The numbered tap and the chosen cell are drawn; the mark outside the grid is not.
        assert_eq!(svg.matches("class=\"fkc-fig-tap\"").count(), 1);
        assert_eq!(svg.matches("class=\"fkc-fig-chosen\"").count(), 1);
        assert_eq!(svg.matches("class=\"fkc-fig-traced\"").count(), 0);
        assert!(svg.contains("class=\"fkc-fig-tapnum\""));
        assert!(caption(&worked()).contains("is what the semantics give"));
    }

    fn drift(bounds: [Option<f64>; 3]) -> Drift {
        let point = |length, error, bound| DriftPoint {
            length,
            error,
            bound,
        };
        Drift {
            dtype: "BF16".to_owned(),
            symbol: "conv<bf16>".to_owned(),
            grows: "`x.dim[1]`".to_owned(),
            trials: 4,
            points: vec![
                point(1, 0.0, bounds[0]),
                point(4, 0.01, bounds[1]),
                point(4096, 1.481, bounds[2]),
            ],
        }
    }

    #[test]
    fn drift_plot_draws_error_and_bound_on_log_scales() {
        let drift = drift([Some(0.004), Some(0.03), Some(3.0)]);
        let svg = drift_plot(&drift);
        assert!(svg.starts_with("<svg") && !svg.contains('\n') && !svg.contains("CDATA"));
        assert!(svg.contains("conv&lt;bf16&gt;"));
        assert_eq!(svg.matches("class=\"fkc-drift-dot\"").count(), 4); // 3 points + legend
        assert!(svg.contains("class=\"fkc-drift-bound\""));
        assert!(svg.contains(">1e-3<") && svg.contains(">1e0<"));
        let caption = drift_caption(&drift);
        assert!(
            caption.contains("Every error is within its bound"),
            "{caption}"
        );
        assert!(caption.contains("At K = 4096: |error| = 1.48, bound = 3.00."));
    }

    #[test]
    fn a_bound_that_says_nothing_is_neither_drawn_nor_stated() {
        let drift = drift([Some(0.004), Some(0.03), None]);
        let svg = drift_plot(&drift);
        // The bound's path stops at K = 4: one segment, no third point.
        let bound = svg
            .split("class=\"fkc-drift-bound\" d=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_default();
        assert_eq!(bound.matches(['M', 'L']).count(), 2, "{bound}");
        let caption = drift_caption(&drift);
        assert!(caption.contains("drawn up to K = 4: beyond"), "{caption}");
        assert!(
            caption.contains("At K = 4096: |error| = 1.48."),
            "{caption}"
        );
        assert!(!caption.contains("bound = "), "{caption}");
        let unbounded = self::drift([None, None, None]);
        let none = drift_caption(&unbounded);
        assert!(none.contains("is not drawn"), "{none}");
        assert!(!drift_plot(&unbounded).contains("fkc-drift-bound"));
    }

    #[test]
    fn measured_numbers_keep_three_significant_digits() {
        assert_eq!(scientific(1.4812), "1.48");
        assert_eq!(scientific(0.28104), "0.281");
        assert_eq!(scientific(0.0), "0");
        assert_eq!(scientific(8.921e9), "8.92e9");
        assert_eq!(scientific(2.5e-5), "2.50e-5");
    }
}
