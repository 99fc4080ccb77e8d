//! The worked example's drawings as inline SVG: each operand's plane as a grid of numbers with
//! its padded border, the traced taps numbered alike in the input and the weight, the output
//! cell (or window, or maximum) they produce; and the half-precision drift plot. Shapes carry
//! CSS classes (`fkc-fig-*`, `fkc-drift-*`, styled in `style.html.tera` from mdBook's theme
//! variables, so a book restyles them) and presentation attributes as a fallback. No script,
//! no external asset, no XML prolog, no CDATA, no newline (so no blank line), every text
//! escaped. [`figure`] gathers the drawings and sentences the `figure.html` template lays out.

use crate::verify::worked::{CostValue, Drift, Grid, MarkKind, Worked};
use serde::Serialize;

const CELL: i64 = 28;
const LABEL: i64 = 20;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e6 {
        format!("{value:.0}")
    } else {
        format!("{value:.3}")
    }
}

/// The drawn size of a grid: (width, height) including its padded border.
fn extent(grid: &Grid) -> (i64, i64) {
    let cols = grid.cols as i64 + 2 * grid.pad.1 as i64;
    let rows = grid.rows as i64 + 2 * grid.pad.0 as i64;
    let label = grid.label.chars().count() as i64 * 7 + 4;
    ((cols * CELL).max(label), LABEL + rows * CELL)
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
    let (pr, pc) = (grid.pad.0 as i64, grid.pad.1 as i64);
    let (rows, cols) = (grid.rows as i64, grid.cols as i64);
    let at = |row: i64, col: i64| (x0 + (col + pc) * CELL, LABEL + (row + pr) * CELL);
    for row in -pr..rows + pr {
        for col in -pc..cols + pc {
            let (x, y) = at(row, col);
            let real = (0..rows).contains(&row) && (0..cols).contains(&col);
            let (class, text_class, value) = if real {
                let index = usize::try_from(row * cols + col).unwrap_or(usize::MAX);
                let value = grid.values.get(index).copied().unwrap_or(f64::NAN);
                ("fkc-fig-cell", "", number(value))
            } else {
                ("fkc-fig-pad", " class=\"fkc-fig-padtext\"", "0".to_owned())
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
                "<text{text_class} x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
                x + CELL / 2,
                y + CELL / 2 + 4,
                escape(&value)
            ));
        }
    }
    let drawn =
        |row: i64, col: i64| (-pr..rows + pr).contains(&row) && (-pc..cols + pc).contains(&col);
    for mark in grid.marks.iter().filter(|m| drawn(m.row, m.col)) {
        let (x, y) = at(mark.row, mark.col);
        let (class, attrs) = match mark.kind {
            MarkKind::Tap => (
                "fkc-fig-tap",
                "fill=\"currentColor\" fill-opacity=\"0.18\" stroke=\"currentColor\" stroke-width=\"2\"",
            ),
            MarkKind::Out => (
                "fkc-fig-out",
                "fill=\"currentColor\" fill-opacity=\"0.35\" stroke=\"currentColor\" stroke-width=\"2\"",
            ),
            MarkKind::Max => (
                "fkc-fig-max",
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
    if let Some((r0, c0, r1, c1)) = grid.window {
        let (x, y) = at(r0, c0);
        rect(
            out,
            "fkc-fig-window",
            "fill=\"none\" stroke=\"currentColor\" stroke-width=\"2\" stroke-dasharray=\"5 3\"",
            x - 2,
            y - 2,
            (c1 - c0 + 1) * CELL + 4,
            (r1 - r0 + 1) * CELL + 4,
        );
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

/// The sentence under the figure: what ran, on what, and how it compared with the oracle.
pub fn caption(worked: &Worked) -> String {
    format!(
        "Computed by `{}` ({}) when this page was built, on {}; operands are small integers, so every dtype holds them exactly. {}",
        worked.symbol,
        worked.dtype,
        worked.sample,
        match worked.matches_oracle {
            Some(true) => "The result equals the independent oracle's exactly.",
            Some(false) => "The result is within the oracle's error bound (see the checks above).",
            None => "No oracle defines this op kind: the values were not checked.",
        }
    )
}

const PLOT_W: f64 = 440.0;
const PLOT_H: f64 = 260.0;
const LEFT: f64 = 62.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 46.0;
const BOTTOM: f64 = 40.0;

/// The drift plot: `|T-accumulated − exact|` (dots, solid) and Higham's bound (dashed) against
/// the reduction length, both on log scales.
pub fn drift_plot(drift: &Drift) -> String {
    let positive = |v: f64| v.is_finite() && v > 0.0;
    let values: Vec<f64> = drift
        .points
        .iter()
        .flat_map(|p| [p.error, p.bound])
        .filter(|v| positive(*v))
        .collect();
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(0.0, f64::max);
    let (low, high) = if low.is_finite() && high > 0.0 {
        (
            low.log10().floor(),
            high.log10().ceil().max(low.log10().floor() + 1.0),
        )
    } else {
        (-6.0, 0.0)
    };
    let floor = low - 0.5; // where an exact (zero) error is drawn
    let lengths: Vec<f64> = drift
        .points
        .iter()
        .map(|p| (p.length.max(1) as f64).log2())
        .collect();
    let x_max = lengths.iter().copied().fold(1.0, f64::max);
    let x = |l: f64| LEFT + l / x_max * (PLOT_W - LEFT - RIGHT);
    let y = |v: f64| {
        let e = if positive(v) { v.log10() } else { floor };
        TOP + (high - e) / (high - floor) * (PLOT_H - TOP - BOTTOM)
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"fkc-drift\" width=\"{PLOT_W}\" height=\"{PLOT_H}\" viewBox=\"0 0 {PLOT_W} {PLOT_H}\" role=\"img\" aria-label=\"{}\">",
        escape(&format!(
            "{} drift of {}: error against reduction length",
            drift.dtype, drift.symbol
        ))
    );
    let bottom = PLOT_H - BOTTOM;
    for decade in (low as i64)..=(high as i64) {
        let v = 10f64.powi(i32::try_from(decade).unwrap_or(0));
        let yy = y(v);
        out.push_str(&format!(
            "<line class=\"fkc-drift-grid\" x1=\"{LEFT}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"currentColor\" stroke-opacity=\"0.12\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\" fill=\"currentColor\">1e{decade}</text>",
            PLOT_W - RIGHT,
            LEFT - 4.0,
            yy + 3.0
        ));
    }
    out.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\" fill=\"currentColor\">0</text>",
        LEFT - 4.0,
        y(0.0) + 3.0
    ));
    for (point, l) in drift.points.iter().zip(&lengths) {
        if (*l as i64) % 2 == 0 {
            out.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
                x(*l),
                bottom + 14.0,
                point.length
            ));
        }
    }
    out.push_str(&format!(
        "<path class=\"fkc-drift-axis\" d=\"M{LEFT} {TOP} V{bottom} H{:.1}\" fill=\"none\" stroke=\"currentColor\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"13\" text-anchor=\"middle\" fill=\"currentColor\">reduction length K (terms summed per output)</text>",
        PLOT_W - RIGHT,
        (LEFT + PLOT_W - RIGHT) / 2.0,
        PLOT_H - 6.0
    ));
    // A polyline through the finite values; an infinite one (a vacuous bound) ends it.
    let path = |values: &mut dyn Iterator<Item = (f64, f64)>| -> String {
        let mut d = String::new();
        let mut pen_down = false;
        for (l, v) in values {
            if !v.is_finite() {
                pen_down = false;
                continue;
            }
            d.push_str(&format!(
                "{}{:.1} {:.1}",
                if pen_down { " L" } else { " M" },
                x(l),
                y(v)
            ));
            pen_down = true;
        }
        d.trim_start().to_owned()
    };
    let bound = path(
        &mut drift
            .points
            .iter()
            .zip(&lengths)
            .map(|(p, l)| (*l, p.bound)),
    );
    let error = path(
        &mut drift
            .points
            .iter()
            .zip(&lengths)
            .map(|(p, l)| (*l, p.error)),
    );
    out.push_str(&format!(
        "<path class=\"fkc-drift-bound\" d=\"{bound}\" fill=\"none\" stroke=\"currentColor\" stroke-dasharray=\"6 4\" stroke-width=\"2\"/><path class=\"fkc-drift-err\" d=\"{error}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\"/>"
    ));
    for (point, l) in drift.points.iter().zip(&lengths) {
        out.push_str(&format!(
            "<circle class=\"fkc-drift-dot\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"currentColor\"><title>K = {}: |error| = {:e}, bound = {:e}</title></circle>",
            x(*l),
            y(point.error),
            point.length,
            point.error,
            point.bound
        ));
    }
    out.push_str(&format!(
        "<line class=\"fkc-drift-bound\" x1=\"{LEFT:.1}\" y1=\"12\" x2=\"{:.1}\" y2=\"12\" stroke=\"currentColor\" stroke-dasharray=\"6 4\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"16\" font-size=\"13\" fill=\"currentColor\">bound γ_K·Σ|w·x|</text><circle class=\"fkc-drift-dot\" cx=\"{:.1}\" cy=\"30\" r=\"3\" fill=\"currentColor\"/><text x=\"{:.1}\" y=\"34\" font-size=\"13\" fill=\"currentColor\">|{}-accumulated − exact|</text>",
        LEFT + 24.0,
        LEFT + 30.0,
        LEFT + 12.0,
        LEFT + 30.0,
        escape(&drift.dtype)
    ));
    out.push_str("</svg>");
    out
}

/// One legend entry: the mark's kind (`tap`, `out`, `max`, `pad`, `window`) and its meaning.
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
            .map(|drift| {
                let within = drift.points.iter().all(|p| p.error <= p.bound);
                let longest = drift.points.last();
                DriftView {
                    dtype: drift.dtype.clone(),
                    svg: drift_plot(drift),
                    caption: format!(
                        "Measured when this page was built: `{}` ({}) {} for each K, {} trials per length, each compared with the exact result on the same rounded operands; the plot shows each length's worst trial against its own bound.{}{}",
                        drift.symbol,
                        drift.dtype,
                        drift.reduction,
                        drift.trials,
                        longest.map_or(String::new(), |p| format!(
                            " At K = {}: |error| = {:.3e}, {}.",
                            p.length,
                            p.error,
                            if p.bound.is_finite() {
                                format!("bound = {:.3e}", p.bound)
                            } else {
                                "no finite bound (the magnitude of the terms overflowed)".to_owned()
                            }
                        )),
                        if drift.points.iter().all(|p| p.error == 0.0) {
                            " Every error is 0: the operation rounds nothing, whatever K."
                        } else if within {
                            " Every point is within its bound."
                        } else {
                            " Some points exceed their bound."
                        }
                    ),
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::worked::{DriftPoint, Mark};

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
                values: vec![1.0, -2.0, 0.5, 3.0],
                pad: (1, 1),
                marks: vec![
                    Mark {
                        row: -1,
                        col: 0,
                        kind: MarkKind::Tap,
                        number: Some(1),
                    },
                    Mark {
                        row: 9,
                        col: 9,
                        kind: MarkKind::Out,
                        number: None,
                    },
                ],
                window: None,
            }],
            matches_oracle: Some(true),
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
        assert!(svg.contains(">-2<") && svg.contains(">0.500<"));
        // A 2×2 grid with a border of 1: 16 cells, 12 of them padding.
        assert_eq!(svg.matches("class=\"fkc-fig-pad\"").count(), 12);
        assert_eq!(svg.matches("class=\"fkc-fig-cell\"").count(), 4);
        // The tap in the padding is drawn and numbered; the mark outside the drawing is not.
        assert_eq!(svg.matches("class=\"fkc-fig-tap\"").count(), 1);
        assert_eq!(svg.matches("class=\"fkc-fig-out\"").count(), 0);
        assert!(svg.contains("class=\"fkc-fig-tapnum\""));
    }

    #[test]
    fn drift_plot_draws_error_and_bound_on_log_scales() {
        let drift = Drift {
            dtype: "BF16".to_owned(),
            reduction: "summed".to_owned(),
            symbol: "conv<bf16>".to_owned(),
            trials: 4,
            points: vec![
                DriftPoint {
                    length: 1,
                    error: 0.0,
                    bound: 0.004,
                },
                DriftPoint {
                    length: 4,
                    error: 0.01,
                    bound: 0.03,
                },
                DriftPoint {
                    length: 16,
                    error: 0.05,
                    bound: 0.3,
                },
            ],
        };
        let svg = drift_plot(&drift);
        assert!(svg.starts_with("<svg") && !svg.contains('\n') && !svg.contains("CDATA"));
        assert!(svg.contains("conv&lt;bf16&gt;"));
        assert_eq!(svg.matches("class=\"fkc-drift-dot\"").count(), 4); // 3 points + legend
        assert!(svg.contains("class=\"fkc-drift-bound\""));
        assert!(svg.contains(">1e-3<") && svg.contains(">1e0<"));
        let view = figure(&Worked {
            drift: vec![drift],
            ..worked()
        });
        assert!(view.drift[0].caption.contains("within its bound"));
    }
}
