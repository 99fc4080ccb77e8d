//! The worked-example figure as inline SVG: the first channel of each operand and of the output
//! as grids of numbers, the window that output `[0, 0]` reads highlighted. Drawn in
//! `currentColor`, so it follows mdBook's light and dark themes; no script, no external asset,
//! no XML prolog, no blank line, and every text escaped.

use crate::verify::worked::{Grid, Worked};

const CELL: usize = 30;
const GAP: usize = 26;
const LABEL: usize = 22;

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

fn grid_svg(grid: &Grid, x0: usize, out: &mut String) {
    out.push_str(&format!(
        "<text x=\"{x0}\" y=\"14\" font-size=\"12\" fill=\"currentColor\">{}</text>",
        escape(&grid.label)
    ));
    if let Some((r0, c0, r1, c1)) = grid.highlight {
        out.push_str(&format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"currentColor\" fill-opacity=\"0.14\"/>",
            x0 + c0 * CELL,
            LABEL + r0 * CELL,
            (c1 + 1 - c0) * CELL,
            (r1 + 1 - r0) * CELL
        ));
    }
    for row in 0..grid.rows {
        for col in 0..grid.cols {
            let (x, y) = (x0 + col * CELL, LABEL + row * CELL);
            out.push_str(&format!(
                "<rect x=\"{x}\" y=\"{y}\" width=\"{CELL}\" height=\"{CELL}\" fill=\"none\" stroke=\"currentColor\" stroke-opacity=\"0.35\"/>"
            ));
            let value = grid
                .values
                .get(row * grid.cols + col)
                .copied()
                .unwrap_or(f64::NAN);
            out.push_str(&format!(
                "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
                x + CELL / 2,
                y + CELL / 2 + 4,
                escape(&number(value))
            ));
        }
    }
}

/// The figure for a worked example.
pub fn worked_example(worked: &Worked) -> String {
    let widths: Vec<usize> = worked
        .grids
        .iter()
        .map(|g| (g.cols * CELL).max(g.label.chars().count() * 8 + 4))
        .collect();
    let width = widths.iter().sum::<usize>() + GAP * worked.grids.len().saturating_sub(1) + 2;
    let height = LABEL
        + worked
            .grids
            .iter()
            .map(|g| g.rows * CELL)
            .max()
            .unwrap_or(CELL)
        + 2;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"fkc-figure\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{}\">",
        escape(&format!("worked example of {}", worked.symbol))
    );
    let mut x0 = 1;
    for (grid, width) in worked.grids.iter().zip(&widths) {
        grid_svg(grid, x0, &mut out);
        x0 += width + GAP;
    }
    out.push_str("</svg>");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_is_escaped_inline_svg_without_blank_lines() {
        let worked = Worked {
            symbol: "k<script>".to_owned(),
            dtype: "F32".to_owned(),
            sample: String::new(),
            grids: vec![Grid {
                label: "x & <y>".to_owned(),
                rows: 2,
                cols: 2,
                values: vec![1.0, -2.0, 0.5, 3.0],
                highlight: Some((0, 0, 1, 0)),
            }],
            matches_oracle: Some(true),
        };
        let svg = worked_example(&worked);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(!svg.contains("<?xml") && !svg.contains("CDATA") && !svg.contains('\n'));
        assert!(!svg.contains("<script>") && svg.contains("x &amp; &lt;y&gt;"));
        assert!(svg.contains(">-2<") && svg.contains(">0.500<"));
        assert_eq!(svg.matches("fill-opacity").count(), 1);
    }
}
