//! What a contract's page shows of the calibration: the measured times against the structural
//! prior as a small log-log inline SVG (measured time against the `flops` formula — or
//! `bytes_moved`, for a contract that does no arithmetic — with the fitted model), the fitted
//! figures, and the verdict; or, when the contract changed since it was measured, that the
//! calibration is stale. Built from the file alone: the build never times anything.

use super::chart::{Chart, Frame, Scale, Type, decades};
use crate::calibration::{Calibration, Judged, LadderPoint};
use serde::Serialize;

/// The calibration as a contract's page shows it (the `judge.html` template's `j`).
#[derive(Debug, Clone, Serialize)]
pub struct JudgeView {
    /// Set when the contract's revision hash differs from the one measured: why.
    pub stale: Option<String>,
    /// The log-log figure (already escaped).
    pub svg: Option<String>,
    pub caption: String,
    /// `good`, `partial` (a good fit through one formula alone), `poor` or `not fitted`.
    pub verdict: String,
    /// The verdict in words.
    pub reason: String,
    /// (figure, value) rows: the fitted model, the machine.
    pub rows: Vec<(String, String)>,
}

/// The view of `kernel` (now at `revision_hash`) in `calibration`, if it was measured.
pub fn view(calibration: &Calibration, kernel: &str, revision_hash: &str) -> Option<JudgeView> {
    let judged = calibration.contracts.iter().find(|c| c.kernel == kernel)?;
    let machine = format!(
        "{} ({}, {} CPUs, {}, load average {}), {}",
        calibration.machine.cpu,
        calibration.machine.isa,
        calibration.machine.cpus,
        calibration.machine.platform,
        calibration.machine.load_average,
        calibration.tool
    );
    if judged.revision_hash != revision_hash {
        return Some(JudgeView {
            stale: Some(format!(
                "The calibration is stale: it measured this contract at revision `{}`, and the contract is now `{revision_hash}`. Its numbers are not shown; run `{}` to measure it again.",
                judged.revision_hash, calibration.command
            )),
            svg: None,
            caption: String::new(),
            verdict: "stale".to_owned(),
            reason: String::new(),
            rows: vec![("measured on".to_owned(), machine)],
        });
    }
    let mut rows = Vec::new();
    if let Some(fit) = &judged.fit {
        rows.push(("overhead".to_owned(), format!("{} ns", fit.overhead_ns)));
        rows.push((
            "throughput".to_owned(),
            fit.gflop_per_s.map_or_else(
                || "flops explain no time".to_owned(),
                |g| format!("{g} GFLOP/s"),
            ),
        ));
        rows.push((
            "bandwidth".to_owned(),
            fit.gb_per_s.map_or_else(
                || "bytes explain no time".to_owned(),
                |g| format!("{g} GB/s"),
            ),
        ));
        rows.push((
            "relative residuals".to_owned(),
            format!(
                "{:.1} % RMS, {:.1} % worst",
                fit.rms_relative_residual * 100.0,
                fit.worst_relative_residual * 100.0
            ),
        ));
    }
    rows.push(("measured on".to_owned(), machine));
    Some(JudgeView {
        stale: None,
        svg: Some(svg(judged)),
        caption: format!(
            "`{}` ({}) timed by `{}` on {} sizes from the admitted domain (each the median of its timed calls), against the `{}` formula; the dashed line is the fitted `overhead_ns + flops / throughput + bytes_moved / bandwidth`, and a hollow point is a size it misses by more than the verdict allows. Measured then, not when this page was built.",
            judged.symbol,
            judged.dtype,
            calibration.command,
            judged.ladder.len(),
            judged.axis
        ),
        verdict: shown_verdict(judged),
        reason: judged.reason.clone(),
        rows,
    })
}

/// What the inventory says of one contract's calibration: the Judge's verdict and whether the
/// measurement is stale.
#[derive(Debug, Clone, Serialize)]
pub struct InventoryJudge {
    /// `good`, `partial`, `poor`, `not fitted`, or `not measured` (no calibration names it) or
    /// `not shown` (stale).
    pub verdict: String,
    /// The badge's colour: `ok`, `warn`, `error` or `info`.
    pub kind: &'static str,
    /// Whether the contract changed since it was measured (`None`: never measured).
    pub stale: Option<bool>,
    /// The revision the calibration measured.
    pub measured_at: Option<String>,
}

/// The inventory's Judge and stale cells for `kernel`, now at `revision_hash`.
pub fn inventory_judge(
    calibration: Option<&Calibration>,
    kernel: &str,
    revision_hash: &str,
) -> InventoryJudge {
    let judged = calibration.and_then(|c| c.contracts.iter().find(|j| j.kernel == kernel));
    let Some(judged) = judged else {
        return InventoryJudge {
            verdict: "not measured".to_owned(),
            kind: "info",
            stale: None,
            measured_at: None,
        };
    };
    let stale = judged.revision_hash != revision_hash;
    let verdict = if stale {
        "not shown".to_owned()
    } else {
        shown_verdict(judged)
    };
    let kind = match verdict.as_str() {
        "good" => "ok",
        "poor" => "error",
        "not fitted" => "info",
        _ => "warn",
    };
    InventoryJudge {
        verdict,
        kind,
        stale: Some(stale),
        measured_at: Some(judged.revision_hash.clone()),
    }
}

/// The verdict a page shows: `partial` for a good fit through one formula alone (the other
/// explaining none of the time), else the file's.
fn shown_verdict(judged: &Judged) -> String {
    match &judged.fit {
        Some(fit)
            if judged.verdict == "good"
                && (fit.gflop_per_s.is_none() || fit.gb_per_s.is_none()) =>
        {
            "partial".to_owned()
        }
        _ => judged.verdict.clone(),
    }
}

/// The Judge's figure's frame.
const FIGURE: Frame = Frame {
    width: 380.0,
    height: 230.0,
    left: 58.0,
    right: 12.0,
    top: 12.0,
    bottom: 40.0,
};

/// The log-log figure: measured time (points) and the fitted model (line) against the axis.
pub fn svg(judged: &Judged) -> String {
    let by_bytes = judged.axis == "bytes_moved";
    let x_of = |p: &LadderPoint| if by_bytes { p.bytes_moved } else { p.flops };
    let model = judged.fit.as_ref().map(|f| f.model());
    let fitted: Vec<(f64, f64)> = match &model {
        Some(model) => judged
            .ladder
            .iter()
            .map(|p| (x_of(p), model.predict(p.flops, p.bytes_moved)))
            .collect(),
        None => Vec::new(),
    };
    let (x_low, x_high) = decades(judged.ladder.iter().map(x_of)).unwrap_or((0, 1));
    let times = judged.ladder.iter().map(|p| p.ns);
    let (y_low, y_high) = decades(times.chain(fitted.iter().map(|(_, y)| *y))).unwrap_or((0, 1));
    let frame = FIGURE;
    let x = Scale::new(
        (x_low.into(), x_high.into()),
        (frame.left, frame.plot_right()),
    );
    let y = Scale::new(
        (y_low.into(), y_high.into()),
        (frame.plot_bottom(), frame.top),
    );
    let kind = Type {
        size: 10,
        baseline: 3.5,
    };
    let label = format!(
        "measured time of {} against its {} formula, log-log, with the fitted model",
        judged.kernel, judged.axis
    );
    let mut chart = Chart::new(frame, kind, (x, y), "fkc-figure fkc-judge-figure", &label);
    let (plot_w, plot_h) = (
        frame.plot_right() - frame.left,
        frame.plot_bottom() - frame.top,
    );
    chart.push(&format!(
        "<rect x=\"{}\" y=\"{}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"none\" stroke=\"currentColor\" stroke-opacity=\"0.5\"/>",
        frame.left, frame.top
    ));
    for decade in x_low..=x_high {
        chart.x_rule(decade.into(), "", &format!("1e{decade}"));
    }
    for decade in y_low..=y_high {
        chart.y_rule(decade.into(), "", &format!("1e{decade}"));
    }
    let middle = frame.top + plot_h / 2.0;
    chart.text(
        (frame.left + plot_w / 2.0, frame.height - 6.0),
        11,
        " text-anchor=\"middle\"",
        &format!("{} (the contract's formula)", judged.axis),
    );
    chart.text(
        (12.0, middle),
        11,
        &format!(" text-anchor=\"middle\" transform=\"rotate(-90 12 {middle:.1})\""),
        "measured ns",
    );
    if fitted.len() > 1 {
        let mut line: Vec<(f64, f64)> = fitted.clone();
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        let positive = line.iter().filter(|(a, b)| *a > 0.0 && *b > 0.0);
        let d = chart.path(positive.map(|(a, b)| (a.log10(), Some(b.log10()))));
        chart.push(&format!(
            "<path class=\"fkc-judge-fit\" d=\"{d}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>"
        ));
    }
    for (index, point) in judged.ladder.iter().enumerate() {
        if x_of(point) <= 0.0 || point.ns <= 0.0 {
            continue;
        }
        let residual = judged.residuals.get(index).copied().unwrap_or(0.0);
        // A rung the fit misses by more than the verdict allows is drawn hollow.
        let attributes = if residual.abs() > crate::calibration::POOR_WORST {
            "class=\"fkc-judge-point fkc-judge-miss\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\""
        } else {
            "class=\"fkc-judge-point\" fill=\"currentColor\" fill-opacity=\"0.7\""
        };
        let tooltip = format!(
            "{}: {} {}, {} ns measured, residual {:+.1} %",
            point.sample,
            x_of(point),
            judged.axis,
            point.ns,
            residual * 100.0
        );
        let at = (x_of(point).log10(), point.ns.log10());
        chart.dot(at, 3.5, attributes, &tooltip);
    }
    chart.finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::calibration::{FitRecord, LadderPoint, Machine};

    pub(crate) fn calibration(hash: &str) -> Calibration {
        Calibration {
            format: 1,
            tool: "mdbook-fkc 0.1.0".to_owned(),
            command: "mdbook-fkc judge".to_owned(),
            machine: Machine {
                cpu: "Test CPU <1>".to_owned(),
                isa: "sse2".to_owned(),
                cpus: 2,
                platform: "linux/x86_64".to_owned(),
                load_average: "0.1 0.1 0.1".to_owned(),
            },
            verdict_rule: String::new(),
            contracts: vec![Judged {
                kernel: "k".to_owned(),
                file: "k.md".to_owned(),
                revision_hash: hash.to_owned(),
                dtype: "F32".to_owned(),
                symbol: "s".to_owned(),
                axis: "flops".to_owned(),
                ladder: (0..6)
                    .map(|i| LadderPoint {
                        sample: format!("x: [{i}] <&>"),
                        flops: 1e3 * 4f64.powi(i),
                        bytes_moved: 1e3,
                        ns: 100.0 + 1e3 * 4f64.powi(i) / 10.0,
                        repetitions: 5,
                    })
                    .collect(),
                fit: Some(FitRecord {
                    overhead_ns: 100.0,
                    gflop_per_s: Some(10.0),
                    gb_per_s: None,
                    rms_relative_residual: 0.0,
                    worst_relative_residual: 0.0,
                }),
                residuals: vec![0.0; 6],
                verdict: "good".to_owned(),
                reason: "fine".to_owned(),
            }],
        }
    }

    #[test]
    fn the_figure_is_escaped_inline_svg_without_blank_lines() {
        let view = view(&calibration("abc"), "k", "abc").unwrap();
        let svg = view.svg.unwrap();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(!svg.contains("<?xml") && !svg.contains("CDATA") && !svg.contains('\n'));
        assert!(svg.contains("&lt;&amp;&gt;"), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 6);
        assert!(svg.contains("fkc-judge-fit"));
        assert!(view.stale.is_none());
    }

    #[test]
    fn a_rung_the_fit_misses_is_drawn_hollow() {
        let mut calibration = calibration("abc");
        calibration.contracts[0].residuals[2] = -0.8;
        let svg = view(&calibration, "k", "abc").unwrap().svg.unwrap();
        assert_eq!(svg.matches("fkc-judge-miss").count(), 1, "{svg}");
        assert!(svg.contains("residual -80.0 %"));
    }

    #[test]
    fn the_inventory_shows_the_verdict_or_that_the_measurement_is_stale_or_missing() {
        let calibration = calibration("fkc1:abc");
        let current = inventory_judge(Some(&calibration), "k", "fkc1:abc");
        // The fixture's fit explains the time through flops alone.
        assert_eq!(
            (current.verdict.as_str(), current.stale),
            ("partial", Some(false))
        );
        let stale = inventory_judge(Some(&calibration), "k", "fkc1:new");
        assert_eq!(
            (stale.verdict.as_str(), stale.stale),
            ("not shown", Some(true))
        );
        assert_eq!(stale.measured_at.as_deref(), Some("fkc1:abc"));
        let missing = inventory_judge(Some(&calibration), "other", "fkc1:abc");
        assert_eq!(
            (missing.verdict.as_str(), missing.stale),
            ("not measured", None)
        );
        assert_eq!(inventory_judge(None, "k", "x").verdict, "not measured");
    }

    #[test]
    fn a_changed_revision_hash_is_stale_and_shows_no_numbers() {
        let view = view(&calibration("old"), "k", "new").unwrap();
        assert!(view.stale.unwrap().contains("`old`"));
        assert!(view.svg.is_none());
        assert!(view.rows.iter().all(|(f, _)| f != "throughput"));
    }

    #[test]
    fn an_unmeasured_contract_has_no_view() {
        assert!(view(&calibration("abc"), "other", "abc").is_none());
    }
}
