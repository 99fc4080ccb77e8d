//! The calibration file (`fkc-calibration.json`, beside book.toml): what `mdbook-fkc judge`
//! measured, on which machine, with which tool, and how well each contract's cost formulas
//! explain the measured times. The book build only reads it; a contract's entry is shown on its
//! page when its revision hash still matches the contract, and flagged as stale otherwise.

pub mod fit;

use fit::{Fit, Point};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file's name, in the book's root.
pub const FILE_NAME: &str = "fkc-calibration.json";
/// The version of the file's format.
pub const FORMAT: u32 = 1;
/// A fit is poor when the root-mean-square relative residual exceeds this…
pub const POOR_RMS: f64 = 0.25;
/// …or when any one point's relative residual exceeds this.
pub const POOR_WORST: f64 = 0.5;
/// Fewer timed rungs than this are not fitted.
pub const MIN_POINTS: usize = 4;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub format: u32,
    /// `mdbook-fkc VERSION`.
    pub tool: String,
    /// The command that wrote the file.
    pub command: String,
    pub machine: Machine,
    /// How the verdict is reached, in words.
    pub verdict_rule: String,
    pub contracts: Vec<Judged>,
}

/// Where the times were measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// The CPU model (`model name` in /proc/cpuinfo).
    pub cpu: String,
    /// The widest SIMD extension the CPU reports (avx512f, avx2, sse2, neon, …).
    pub isa: String,
    /// Logical CPUs available.
    pub cpus: usize,
    /// `os/arch`.
    pub platform: String,
    /// /proc/loadavg's 1, 5 and 15 minute averages when the Judge started (a busy machine
    /// measures slower and noisier).
    pub load_average: String,
}

/// One contract's measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub kernel: String,
    /// The chapter the contract is in.
    pub file: String,
    /// The contract's revision hash when it was measured.
    pub revision_hash: String,
    pub dtype: String,
    pub symbol: String,
    /// The ladder's axis: `flops`, or `bytes_moved` when the contract does no arithmetic.
    pub axis: String,
    pub ladder: Vec<LadderPoint>,
    /// The fitted model (absent when too few rungs ran).
    pub fit: Option<FitRecord>,
    /// Each rung's relative residual, (fitted − measured) / measured, in ladder order.
    pub residuals: Vec<f64>,
    /// `good`, `poor` or `not fitted`.
    pub verdict: String,
    /// Why, in words.
    pub reason: String,
}

/// One timed rung.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderPoint {
    /// The sample, as the gate's reproductions write it.
    pub sample: String,
    pub flops: f64,
    pub bytes_moved: f64,
    /// The median of `repetitions` timed calls, in nanoseconds.
    pub ns: f64,
    pub repetitions: usize,
}

/// The fitted model, in the units a reader thinks in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitRecord {
    pub overhead_ns: f64,
    /// `None` when flops explain no time.
    pub gflop_per_s: Option<f64>,
    /// `None` when bytes explain no time.
    pub gb_per_s: Option<f64>,
    pub rms_relative_residual: f64,
    pub worst_relative_residual: f64,
}

impl FitRecord {
    pub fn model(&self) -> Fit {
        Fit {
            overhead_ns: self.overhead_ns,
            ns_per_flop: self.gflop_per_s.map_or(0.0, |g| 1.0 / g),
            ns_per_byte: self.gb_per_s.map_or(0.0, |g| 1.0 / g),
        }
    }
}

impl LadderPoint {
    pub fn point(&self) -> Point {
        Point {
            flops: self.flops,
            bytes: self.bytes_moved,
            ns: self.ns,
        }
    }
}

/// The rule the verdict follows, in words (written into the file and shown on pages).
pub fn verdict_rule() -> String {
    format!(
        "poor when the root-mean-square relative residual exceeds {:.0} % or any rung's exceeds {:.0} %; not fitted with fewer than {MIN_POINTS} rungs",
        POOR_RMS * 100.0,
        POOR_WORST * 100.0
    )
}

/// A fit's verdict in words: each residual beside its own limit, and which formulas explain
/// the time (one that explains none of it is named, so a fit through the other alone does not
/// read as both fitting).
pub fn fit_reason(record: &FitRecord) -> String {
    let (rms, worst) = (record.rms_relative_residual, record.worst_relative_residual);
    let poor = rms > POOR_RMS || worst > POOR_WORST;
    let residuals = format!(
        "relative residuals {:.1} % RMS (limit {:.0} %), {:.1} % worst (limit {:.0} %)",
        rms * 100.0,
        POOR_RMS * 100.0,
        worst * 100.0,
        POOR_WORST * 100.0
    );
    if poor {
        return format!(
            "the formulas do not explain the measured times: {residuals} — a prior of the wrong shape, such as one that forgets padding or a fast path"
        );
    }
    match (record.gflop_per_s, record.gb_per_s) {
        (None, Some(_)) => format!(
            "`bytes_moved` alone explains the measured times, `flops` none of them: {residuals}"
        ),
        (Some(_), None) => format!(
            "`flops` alone explains the measured times, `bytes_moved` none of them: {residuals}"
        ),
        (None, None) => format!("only the fixed overhead explains the measured times: {residuals}"),
        (Some(_), Some(_)) => format!("the formulas explain the measured times: {residuals}"),
    }
}

/// Fits `ladder` and judges the fit: (fit, residuals, verdict, reason).
pub fn judge_fit(ladder: &[LadderPoint]) -> (Option<FitRecord>, Vec<f64>, &'static str, String) {
    let points: Vec<Point> = ladder.iter().map(LadderPoint::point).collect();
    if points.len() < MIN_POINTS {
        return (
            None,
            Vec::new(),
            "not fitted",
            format!(
                "only {} rung(s) ran within the time budget; at least {MIN_POINTS} are needed",
                points.len()
            ),
        );
    }
    let Some(fit) = fit::fit(&points) else {
        return (
            None,
            Vec::new(),
            "not fitted",
            "no non-negative fit exists".to_owned(),
        );
    };
    let residuals: Vec<f64> = fit
        .residuals(&points)
        .into_iter()
        .map(|r| round(r, 4))
        .collect();
    let rms = (residuals.iter().map(|r| r * r).sum::<f64>() / residuals.len() as f64).sqrt();
    let worst = residuals.iter().fold(0.0f64, |m, r| m.max(r.abs()));
    let record = FitRecord {
        overhead_ns: round(fit.overhead_ns, 4),
        gflop_per_s: fit.gflops().map(|g| round(g, 4)),
        gb_per_s: fit.gbps().map(|g| round(g, 4)),
        rms_relative_residual: round(rms, 4),
        worst_relative_residual: round(worst, 4),
    };
    let verdict = if rms > POOR_RMS || worst > POOR_WORST {
        "poor"
    } else {
        "good"
    };
    let reason = fit_reason(&record);
    (Some(record), residuals, verdict, reason)
}

/// `value` to `digits` significant digits (so the file reads well and diffs little).
pub fn round(value: f64, digits: i32) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let magnitude = value.abs().log10().floor() as i32;
    let factor = 10f64.powi(digits - 1 - magnitude);
    (value * factor).round() / factor
}

/// The calibration file of the book in `root`.
pub fn path_in(root: &Path) -> PathBuf {
    root.join(FILE_NAME)
}

/// Why the calibration file could not be read or written.
#[derive(Debug)]
pub enum CalibrationError {
    /// The file system refused.
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The file is not a calibration file.
    Malformed {
        path: PathBuf,
        error: serde_json::Error,
    },
    /// The file is of a format this version does not read.
    Format { path: PathBuf, format: u32 },
    /// The calibration could not be encoded.
    Encode(serde_json::Error),
}

impl std::fmt::Display for CalibrationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CalibrationError::Io { path, error } => {
                write!(f, "cannot access {}: {error}", path.display())
            }
            CalibrationError::Malformed { path, error } => {
                write!(f, "{} is not a calibration file: {error}", path.display())
            }
            CalibrationError::Format { path, format } => write!(
                f,
                "{} has format {format}, this mdbook-fkc reads format {FORMAT}",
                path.display()
            ),
            CalibrationError::Encode(error) => write!(f, "cannot encode the calibration: {error}"),
        }
    }
}

impl std::error::Error for CalibrationError {}

/// Reads the calibration beside the book in `root`: `Ok(None)` when there is none.
pub fn load(root: &Path) -> Result<Option<Calibration>, CalibrationError> {
    let path = path_in(root);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(CalibrationError::Io { path, error }),
    };
    let calibration: Calibration = match serde_json::from_str(&text) {
        Ok(calibration) => calibration,
        Err(error) => return Err(CalibrationError::Malformed { path, error }),
    };
    if calibration.format != FORMAT {
        let format = calibration.format;
        return Err(CalibrationError::Format { path, format });
    }
    Ok(Some(calibration))
}

/// The calibration beside the book in `root`, for the build: `None` when there is none, or
/// (with a warning) when it cannot be read.
pub fn beside(root: &Path) -> Option<Calibration> {
    match load(root) {
        Ok(calibration) => calibration,
        Err(message) => {
            eprintln!("warning: mdbook-fkc: {message}; measured costs are not shown");
            None
        }
    }
}

/// Writes the calibration beside the book in `root` (pretty JSON, one trailing newline).
pub fn save(root: &Path, calibration: &Calibration) -> Result<PathBuf, CalibrationError> {
    let path = path_in(root);
    let mut text = serde_json::to_string_pretty(calibration).map_err(CalibrationError::Encode)?;
    text.push('\n');
    match std::fs::write(&path, text) {
        Ok(()) => Ok(path),
        Err(error) => Err(CalibrationError::Io { path, error }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ladder(shape: impl Fn(f64) -> f64) -> Vec<LadderPoint> {
        (0..8)
            .map(|i| {
                let flops = 1e4 * 2f64.powi(i);
                let bytes = 1e3 * 1.4f64.powi(i);
                LadderPoint {
                    sample: format!("x: [{i}]"),
                    flops,
                    bytes_moved: bytes,
                    ns: 500.0 + shape(flops) / 10.0 + bytes / 4.0,
                    repetitions: 5,
                }
            })
            .collect()
    }

    #[test]
    fn a_formula_of_the_right_shape_is_good() {
        let (fit, residuals, verdict, _) = judge_fit(&ladder(|f| f));
        assert_eq!(verdict, "good");
        assert_eq!(residuals.len(), 8);
        let fit = fit.unwrap();
        assert!((fit.gflop_per_s.unwrap() - 10.0).abs() < 0.01, "{fit:?}");
    }

    #[test]
    fn a_formula_of_the_wrong_shape_is_poor() {
        // The time grows with flops^1.5, which no linear model in flops and bytes explains.
        let (_, _, verdict, reason) = judge_fit(&ladder(|f| f.powf(1.5) / 30.0));
        assert_eq!(verdict, "poor", "{reason}");
    }

    /// A 2-D convolution with full padding (`K - 1` on each side) skips the padding taps, but
    /// its `flops` formula counts every tap of the loop nest (which the gate accepts: it lies
    /// between the work performed and the taps visited). On small inputs most taps are padding,
    /// so the formula's shape is wrong there, and the Judge says so.
    #[test]
    fn a_prior_that_forgets_padding_is_poor() {
        let kernel: f64 = 7.0;
        let ladder: Vec<LadderPoint> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
            .iter()
            .map(|side: &f64| {
                let out = side + kernel - 1.0;
                let performed = 2.0 * (side * kernel).powi(2);
                LadderPoint {
                    sample: format!("x: [1, 1, {side}, {side}]"),
                    flops: 2.0 * (out * kernel).powi(2),
                    bytes_moved: 4.0 * (side * side + out * out + kernel * kernel),
                    ns: 50.0 + performed / 2.0,
                    repetitions: 5,
                }
            })
            .collect();
        let (_, _, verdict, reason) = judge_fit(&ladder);
        assert_eq!(verdict, "poor", "{reason}");
        // The same times against the work really performed fit well.
        let honest: Vec<LadderPoint> = ladder
            .iter()
            .map(|p| LadderPoint {
                flops: (p.ns - 50.0) * 2.0,
                ..p.clone()
            })
            .collect();
        assert_eq!(judge_fit(&honest).2, "good");
    }

    #[test]
    fn too_few_rungs_are_not_fitted() {
        let (fit, _, verdict, _) = judge_fit(&ladder(|f| f)[..3]);
        assert!(fit.is_none());
        assert_eq!(verdict, "not fitted");
    }

    #[test]
    fn a_missing_file_is_none_and_a_malformed_one_an_error() {
        let dir = std::env::temp_dir().join(format!("fkc-judge-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _ = std::fs::remove_file(path_in(&dir));
        assert!(matches!(load(&dir), Ok(None)));
        std::fs::write(path_in(&dir), "{ not json").unwrap();
        assert!(
            load(&dir)
                .unwrap_err()
                .to_string()
                .contains("not a calibration file")
        );
        std::fs::write(path_in(&dir), r#"{"format": 99}"#).unwrap();
        assert!(load(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn round_keeps_significant_digits() {
        assert_eq!(round(123_456.0, 3), 123_000.0);
        assert_eq!(round(0.012_345, 2), 0.012);
        assert_eq!(round(0.0, 3), 0.0);
    }
}
