//! The Judge's cost model, fitted: `time = overhead_ns + flops / throughput + bytes_moved /
//! bandwidth`, every coefficient non-negative, by least squares on *relative* error (each ladder
//! point weighs as much as any other, whether it ran for a microsecond or a second). Three
//! coefficients make the non-negative problem small enough to solve exactly: every subset of
//! the coefficients is fitted unconstrained, and the best fit whose coefficients are all
//! non-negative wins (the active-set solution, found by enumeration).

/// One timed rung of the ladder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The contract's `flops` formula on this rung.
    pub flops: f64,
    /// The contract's `bytes_moved` formula on this rung.
    pub bytes: f64,
    /// The median measured time, in nanoseconds.
    pub ns: f64,
}

/// The fitted coefficients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub overhead_ns: f64,
    /// Nanoseconds per flop (0 when flops do not explain any time).
    pub ns_per_flop: f64,
    /// Nanoseconds per byte moved (0 when bytes do not explain any time).
    pub ns_per_byte: f64,
}

impl Fit {
    /// The time the model predicts for a point.
    pub fn predict(&self, flops: f64, bytes: f64) -> f64 {
        self.overhead_ns + flops * self.ns_per_flop + bytes * self.ns_per_byte
    }

    /// Throughput in GFLOP/s (`None` when flops explain no time).
    pub fn gflops(&self) -> Option<f64> {
        (self.ns_per_flop > 0.0).then(|| 1.0 / self.ns_per_flop)
    }

    /// Bandwidth in GB/s (`None` when bytes explain no time).
    pub fn gbps(&self) -> Option<f64> {
        (self.ns_per_byte > 0.0).then(|| 1.0 / self.ns_per_byte)
    }

    /// Each point's relative residual: (fitted − measured) / measured.
    pub fn residuals(&self, points: &[Point]) -> Vec<f64> {
        points
            .iter()
            .map(|p| (self.predict(p.flops, p.bytes) - p.ns) / p.ns)
            .collect()
    }
}

/// Fits the model to `points` (each with a positive time). `None` without points.
pub fn fit(points: &[Point]) -> Option<Fit> {
    let points: Vec<&Point> = points
        .iter()
        .filter(|p| p.ns > 0.0 && p.ns.is_finite())
        .collect();
    if points.is_empty() {
        return None;
    }
    // Rows of the weighted system: each row divided by the measured time, so the residual is
    // relative; the right-hand side becomes 1. Columns are scaled to unit size for stability.
    let rows: Vec<[f64; 3]> = points
        .iter()
        .map(|p| [1.0 / p.ns, p.flops / p.ns, p.bytes / p.ns])
        .collect();
    let mut scale = [0.0f64; 3];
    for row in &rows {
        for (s, v) in scale.iter_mut().zip(row) {
            *s = s.max(v.abs());
        }
    }
    let mut best: Option<([f64; 3], f64)> = None;
    for mask in 1u8..8 {
        let columns: Vec<usize> = (0..3).filter(|c| mask & (1 << c) != 0).collect();
        if columns.iter().any(|&c| scale[c] == 0.0) {
            continue;
        }
        let Some(solution) = least_squares(&rows, &columns, &scale) else {
            continue;
        };
        if solution.iter().any(|v| *v < 0.0 || !v.is_finite()) {
            continue;
        }
        let mut coefficients = [0.0; 3];
        for (&c, v) in columns.iter().zip(&solution) {
            coefficients[c] = *v;
        }
        let error: f64 = rows
            .iter()
            .map(|row| {
                let predicted: f64 = row.iter().zip(&coefficients).map(|(a, b)| a * b).sum();
                (predicted - 1.0).powi(2)
            })
            .sum();
        if best.is_none_or(|(_, e)| error < e * (1.0 - 1e-12)) {
            best = Some((coefficients, error));
        }
    }
    let ([overhead_ns, ns_per_flop, ns_per_byte], _) = best?;
    Some(Fit {
        overhead_ns,
        ns_per_flop,
        ns_per_byte,
    })
}

/// The unconstrained least-squares solution over `columns` (normal equations, solved by
/// Gaussian elimination with partial pivoting on the column-scaled system); `None` when singular.
fn least_squares(rows: &[[f64; 3]], columns: &[usize], scale: &[f64; 3]) -> Option<Vec<f64>> {
    let n = columns.len();
    let mut matrix = vec![vec![0.0f64; n + 1]; n];
    for row in rows {
        for (i, &ci) in columns.iter().enumerate() {
            let a = row[ci] / scale[ci];
            for (j, &cj) in columns.iter().enumerate() {
                matrix[i][j] += a * row[cj] / scale[cj];
            }
            matrix[i][n] += a;
        }
    }
    for pivot in 0..n {
        let best = (pivot..n)
            .max_by(|&a, &b| matrix[a][pivot].abs().total_cmp(&matrix[b][pivot].abs()))?;
        if matrix[best][pivot].abs() < 1e-12 {
            return None;
        }
        matrix.swap(pivot, best);
        let pivot_row = matrix[pivot].clone();
        for (index, row) in matrix.iter_mut().enumerate() {
            if index == pivot {
                continue;
            }
            let factor = row[pivot] / pivot_row[pivot];
            for (value, above) in row.iter_mut().zip(&pivot_row).skip(pivot) {
                *value -= factor * above;
            }
        }
    }
    Some(
        (0..n)
            .map(|i| matrix[i][n] / matrix[i][i] / scale[columns[i]])
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance * b.abs().max(1e-30)
    }

    /// Points of a known model on a ladder whose flops and bytes grow at different rates.
    fn synthetic(overhead: f64, gflops: f64, gbps: f64) -> Vec<Point> {
        (0..8)
            .map(|i| {
                let flops = 1e4 * 2f64.powi(i);
                let bytes = 4e3 * 1.5f64.powi(i) + if i % 2 == 0 { 0.0 } else { 5e3 };
                Point {
                    flops,
                    bytes,
                    ns: overhead + flops / gflops + bytes / gbps,
                }
            })
            .collect()
    }

    #[test]
    fn the_fit_recovers_known_parameters_from_synthetic_points() {
        let fit = fit(&synthetic(800.0, 12.5, 3.0)).unwrap();
        assert!(close(fit.overhead_ns, 800.0, 1e-6), "{fit:?}");
        assert!(close(fit.gflops().unwrap(), 12.5, 1e-6), "{fit:?}");
        assert!(close(fit.gbps().unwrap(), 3.0, 1e-6), "{fit:?}");
        assert!(
            fit.residuals(&synthetic(800.0, 12.5, 3.0))
                .iter()
                .all(|r| r.abs() < 1e-9)
        );
    }

    #[test]
    fn a_coefficient_that_would_be_negative_is_held_at_zero() {
        // Pure compute: time = 100 + flops / 2, and bytes anti-correlated with time.
        let points: Vec<Point> = (0..6)
            .map(|i| {
                let flops = 1e3 * 3f64.powi(i);
                Point {
                    flops,
                    bytes: 1e6 / flops,
                    ns: 100.0 + flops / 2.0 * if i % 2 == 0 { 1.02 } else { 0.98 },
                }
            })
            .collect();
        let fit = fit(&points).unwrap();
        assert!(fit.overhead_ns >= 0.0 && fit.ns_per_flop >= 0.0 && fit.ns_per_byte >= 0.0);
        assert!(close(fit.gflops().unwrap(), 2.0, 0.05), "{fit:?}");
    }

    #[test]
    fn noise_shows_in_the_residuals() {
        let mut points = synthetic(0.0, 10.0, 1e9);
        points[3].ns *= 2.0;
        let fit = fit(&points).unwrap();
        let worst = fit
            .residuals(&points)
            .iter()
            .fold(0.0f64, |m, r| m.max(r.abs()));
        assert!(worst > 0.2, "{worst}");
    }

    #[test]
    fn no_points_no_fit() {
        assert!(fit(&[]).is_none());
    }
}
