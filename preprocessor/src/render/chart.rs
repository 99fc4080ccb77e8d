//! The one plotter: charts whose axes are logarithmic (the drift plot's error against
//! reduction length, the Judge's time against its cost formula), drawn as inline SVG with
//! grid lines per decade, polylines that break where a value is missing, and dots that carry
//! their numbers as a tooltip. Every chart of a page is drawn here.

use super::markup::escape;

/// A chart's size and the margins around its plot area, in pixels.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl Frame {
    /// The plot area's right edge.
    pub fn plot_right(&self) -> f64 {
        self.width - self.right
    }

    /// The plot area's bottom edge.
    pub fn plot_bottom(&self) -> f64 {
        self.height - self.bottom
    }
}

/// A linear map from axis units (`log10` of a value, or `log2` of a length) onto pixels.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    from: (f64, f64),
    to: (f64, f64),
}

impl Scale {
    /// Axis units `from.0..from.1` onto pixels `to.0..to.1` (either may run backwards).
    pub fn new(from: (f64, f64), to: (f64, f64)) -> Scale {
        Scale { from, to }
    }

    pub fn at(self, units: f64) -> f64 {
        let (a, b) = self.from;
        let (p, q) = self.to;
        p + (units - a) / (b - a) * (q - p)
    }
}

/// The decades covering the positive, finite `values` (`log10` floor of the least, ceiling of
/// the greatest, at least one decade apart); `None` when there is none.
pub fn decades(values: impl Iterator<Item = f64>) -> Option<(i32, i32)> {
    let (low, high) = values
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(v), h.max(v))
        });
    if !low.is_finite() {
        return None;
    }
    let low = low.log10().floor() as i32;
    let high = (high.log10().ceil() as i32).max(low + 1);
    Some((low, high))
}

/// How a chart's text is set: its size, and how far below a grid line its label's baseline
/// sits.
#[derive(Debug, Clone, Copy)]
pub struct Type {
    pub size: u32,
    pub baseline: f64,
}

/// A chart being drawn.
#[derive(Debug)]
pub struct Chart {
    out: String,
    pub frame: Frame,
    pub x: Scale,
    pub y: Scale,
    pub kind: Type,
}

impl Chart {
    /// Opens the `<svg>` of class `class`, described to screen readers by `label`.
    pub fn new(
        frame: Frame,
        kind: Type,
        (x, y): (Scale, Scale),
        class: &str,
        label: &str,
    ) -> Chart {
        let (w, h) = (frame.width, frame.height);
        let out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{class}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\">",
            escape(label)
        );
        Chart {
            out,
            frame,
            x,
            y,
            kind,
        }
    }

    /// Raw SVG, for a mark of the chart's own.
    pub fn push(&mut self, svg: &str) {
        self.out.push_str(svg);
    }

    /// Text at a point; `attributes` go on the element as written.
    pub fn text(&mut self, (x, y): (f64, f64), size: u32, attributes: &str, text: &str) {
        self.out.push_str(&format!(
            "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\"{attributes} fill=\"currentColor\">{}</text>",
            escape(text)
        ));
    }

    /// A grid line across the plot at `units` on the y axis, labelled left of the plot.
    pub fn y_rule(&mut self, units: f64, class: &str, label: &str) {
        let (left, right) = (self.frame.left, self.frame.plot_right());
        let y = self.y.at(units);
        self.out.push_str(&format!(
            "<line{} x1=\"{left}\" y1=\"{y:.1}\" x2=\"{right:.1}\" y2=\"{y:.1}\" stroke=\"currentColor\" stroke-opacity=\"0.12\"/>",
            class_attribute(class)
        ));
        let at = (left - 4.0, y + self.kind.baseline);
        self.text(at, self.kind.size, " text-anchor=\"end\"", label);
    }

    /// A grid line down the plot at `units` on the x axis, labelled below the plot.
    pub fn x_rule(&mut self, units: f64, class: &str, label: &str) {
        let (top, bottom) = (self.frame.top, self.frame.plot_bottom());
        let x = self.x.at(units);
        self.out.push_str(&format!(
            "<line{} x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" stroke=\"currentColor\" stroke-opacity=\"0.12\"/>",
            class_attribute(class)
        ));
        self.x_label(units, label);
    }

    /// A label below the plot at `units` on the x axis.
    pub fn x_label(&mut self, units: f64, label: &str) {
        let at = (self.x.at(units), self.frame.plot_bottom() + 14.0);
        self.text(at, self.kind.size, " text-anchor=\"middle\"", label);
    }

    /// The SVG path through `points` (axis units); a missing or infinite y lifts the pen.
    pub fn path(&self, points: impl Iterator<Item = (f64, Option<f64>)>) -> String {
        let mut d = String::new();
        let mut pen_down = false;
        for (x, y) in points {
            let Some(y) = y.filter(|y| y.is_finite()) else {
                pen_down = false;
                continue;
            };
            let step = if pen_down { " L" } else { " M" };
            d.push_str(&format!("{step}{:.1} {:.1}", self.x.at(x), self.y.at(y)));
            pen_down = true;
        }
        d.trim_start().to_owned()
    }

    /// A dot at a point (axis units) with `attributes` and a tooltip.
    pub fn dot(&mut self, (x, y): (f64, f64), radius: f64, attributes: &str, tooltip: &str) {
        self.out.push_str(&format!(
            "<circle {attributes} cx=\"{:.1}\" cy=\"{:.1}\" r=\"{radius}\"><title>{}</title></circle>",
            self.x.at(x),
            self.y.at(y),
            escape(tooltip)
        ));
    }

    /// The finished `<svg>`: one line, no blank line, every text escaped.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

fn class_attribute(class: &str) -> String {
    if class.is_empty() {
        String::new()
    } else {
        format!(" class=\"{class}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_maps_its_ends_and_may_run_backwards() {
        let down = Scale::new((0.0, 2.0), (100.0, 0.0));
        assert_eq!(
            (down.at(0.0), down.at(1.0), down.at(2.0)),
            (100.0, 50.0, 0.0)
        );
    }

    #[test]
    fn decades_cover_the_positive_values_and_span_one_at_least() {
        assert_eq!(
            decades([0.002, 30.0, 0.0, f64::NAN].into_iter()),
            Some((-3, 2))
        );
        assert_eq!(decades([5.0].into_iter()), Some((0, 1)));
        assert_eq!(decades([0.0, -1.0].into_iter()), None);
    }

    #[test]
    fn a_missing_value_lifts_the_pen() {
        let frame = Frame {
            width: 100.0,
            height: 100.0,
            left: 0.0,
            right: 0.0,
            top: 0.0,
            bottom: 0.0,
        };
        let unit = Scale::new((0.0, 10.0), (0.0, 100.0));
        let kind = Type {
            size: 10,
            baseline: 3.0,
        };
        let chart = Chart::new(frame, kind, (unit, unit), "c", "a <chart>");
        let points = [
            (1.0, Some(1.0)),
            (2.0, None),
            (3.0, Some(3.0)),
            (4.0, Some(4.0)),
        ];
        assert_eq!(
            chart.path(points.into_iter()),
            "M10.0 10.0 M30.0 30.0 L40.0 40.0"
        );
        let svg = chart.finish();
        assert!(svg.contains("aria-label=\"a &lt;chart&gt;\"") && svg.ends_with("</svg>"));
    }
}
