//! Walking a lowered nest: each level's range solved from its bounds, the outer levels' points
//! in order with their tracked rows carried along, the inner box run by its innermost ranges,
//! and the hot loops of the specialised kernels.

use super::super::machine::Arith;
use super::code::Nest;
use super::{Bail, Go};
use fkc_provider::DType;

/// The range of a level within `lo..hi` where each bound `coefs[row]·v + values[row] >= 0`
/// holds: [`fast::solve`](super::super::fast::solve)'s (no overflow is possible: the intervals
/// proved it).
#[inline]
pub(super) fn solve(
    lo: i64,
    hi: i64,
    bounds: &[usize],
    coefs: &[i64],
    values: &[i64],
) -> (i64, i64) {
    let (mut lo, mut hi) = (lo, hi);
    for &row in bounds {
        let (a, b) = (coefs[row], values[row]);
        match a {
            1 => lo = lo.max(-b),
            -1 => hi = hi.min(b + 1),
            0 if b < 0 => return (lo, lo),
            0 => {}
            // v >= ceil(-b / a)
            _ if a > 0 => lo = lo.max(-(b.div_euclid(a))),
            // v <= floor(b / -a)
            _ => hi = hi.min(b.div_euclid(-a) + 1),
        }
    }
    (lo, hi.max(lo))
}

/// `data[w] += xs[a] * ws[b]` for `n` steps from `bases` by `steps` (`[a, b, w]`), in order.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn scatter<A: Arith>(
    arith: &A,
    data: &mut [Option<A::Cell>],
    xs: &[f64],
    ws: &[f64],
    bases: [i64; 3],
    steps: [i64; 3],
    n: usize,
    dtype: DType,
) -> Go<()> {
    let [ba, bb, bw] = bases;
    let [sa, sb, sw] = steps;
    for k in 0..n as i64 {
        let (x, w) = (
            arith.input(xs[(ba + sa * k) as usize]),
            arith.input(ws[(bb + sb * k) as usize]),
        );
        let Some(cell) = data[(bw + sw * k) as usize].as_mut() else {
            return Err(Bail);
        };
        arith.mac(cell, x, w, dtype);
    }
    Ok(())
}

/// Marks `n` elements from `base` by `step` read.
#[inline]
pub(super) fn mark(read: &mut [bool], base: i64, step: i64, n: usize) {
    for k in 0..n as i64 {
        read[(base + step * k) as usize] = true;
    }
}

/// The outer levels of a nest (those above its inner box): every point of them in
/// lexicographic order, each level's range re-solved only when a level its bounds use has
/// moved, each tracked row's value at the point carried in `here`.
pub(super) struct Levels<'a, V> {
    pub(super) nest: &'a Nest<V>,
    /// Each outer level's range before its bounds.
    pub(super) ranges: &'a [(i64, i64)],
    /// Each level's variable.
    pub(super) odometer: &'a mut [i64],
    /// Each outer level's range (those solved on entry, then as solved).
    pub(super) cut: &'a mut [(i64, i64)],
    pub(super) here: &'a mut [i64],
}

impl<V> Levels<'_, V> {
    /// `run` at each point of the outer levels, until one gives up.
    #[inline(always)]
    pub(super) fn each<T>(
        &mut self,
        this: &mut T,
        mut run: impl FnMut(&mut T, &[i64]) -> Go<()>,
    ) -> Go<()> {
        let nest = self.nest;
        let (rows, live, split) = (nest.rows, nest.live, self.cut.len());
        if split == 0 {
            return run(this, self.here);
        }
        // levels whose range is to be solved again (bit per level)
        let mut stale: u64 = !0;
        let mut level = 0;
        'enter: loop {
            // enter `level`: the levels above it are at their points, in `here`
            let coefs = &nest.coefs[level * rows..(level + 1) * rows];
            if !nest.hoisted[level] && (level >= 63 || stale & (1 << level) != 0) {
                let (lo, hi) = self.ranges[level];
                self.cut[level] = solve(lo, hi, &nest.bounds[level], coefs, self.here);
                if level < 63 {
                    stale &= !(1 << level);
                }
            }
            let (from, to) = self.cut[level];
            if from < to {
                for &(row, dim) in nest.checks[level].iter() {
                    let (base, c) = (self.here[row], coefs[row]);
                    let range = 0..dim;
                    if !range.contains(&(base + c * from))
                        || !range.contains(&(base + c * (to - 1)))
                    {
                        return Err(Bail);
                    }
                }
                self.odometer[level] = from;
                for (value, c) in self.here[..live].iter_mut().zip(coefs) {
                    *value += c * from;
                }
                if level + 1 < split {
                    level += 1;
                    continue 'enter;
                }
                loop {
                    run(this, self.here)?;
                    // the next point: the deepest level that can move
                    loop {
                        stale |= nest.moves[level];
                        if self.step(level) {
                            break;
                        }
                        if level == 0 {
                            return Ok(());
                        }
                        level -= 1;
                    }
                    if level + 1 < split {
                        level += 1;
                        continue 'enter;
                    }
                }
            }
            // nothing at this level: the next point of the levels above
            loop {
                if level == 0 {
                    return Ok(());
                }
                level -= 1;
                stale |= nest.moves[level];
                if self.step(level) {
                    break;
                }
            }
            level += 1;
        }
    }

    /// Moves `level` to its next value, carrying the rows; false (and the level's share of the
    /// rows taken back out) after its last.
    #[inline(always)]
    fn step(&mut self, level: usize) -> bool {
        let (rows, live) = (self.nest.rows, self.nest.live);
        let coefs = &self.nest.coefs[level * rows..level * rows + live];
        self.odometer[level] += 1;
        if self.odometer[level] < self.cut[level].1 {
            for (value, c) in self.here[..live].iter_mut().zip(coefs) {
                *value += c;
            }
            return true;
        }
        let back = self.odometer[level] - 1;
        for (value, c) in self.here[..live].iter_mut().zip(coefs) {
            *value -= c * back;
        }
        false
    }
}

/// The inner box of a nest at a point of its outer levels (`here`): each of its levels' range
/// (into `cut`: those solved on entry are there already), each checked at its ends, and the
/// tracked `rows`' values at the box's first point (the innermost level's aside); `None` when a
/// range is empty.
#[inline(always)]
pub(super) fn inner_box<V, const K: usize>(
    nest: &Nest<V>,
    here: &[i64],
    ranges: &[(i64, i64)],
    cut: &mut [(i64, i64)],
    tracked: [usize; K],
) -> Go<Option<[i64; K]>> {
    let (rows, split, depth) = (nest.rows, nest.split, nest.depth);
    let mut start = tracked.map(|row| here[row]);
    for (j, level) in (split..depth).enumerate() {
        let coefs = &nest.coefs[level * rows..(level + 1) * rows];
        if !nest.hoisted[level] {
            let (lo, hi) = ranges[j];
            cut[j] = solve(lo, hi, &nest.bounds[level], coefs, here);
        }
        let (from, to) = cut[j];
        if from >= to {
            return Ok(None);
        }
        for &(row, dim) in nest.checks[level].iter() {
            let (base, c) = (here[row], coefs[row]);
            let range = 0..dim;
            if !range.contains(&(base + c * from)) || !range.contains(&(base + c * (to - 1))) {
                return Err(Bail);
            }
        }
        if level + 1 < depth {
            for (value, row) in start.iter_mut().zip(tracked) {
                *value += coefs[row] * from;
            }
        }
    }
    Ok(Some(start))
}

/// `run(from, to, values)` over the innermost ranges of the box `cut` (no range empty) in
/// lexicographic order, `values` the tracked rows' at each run's point (`steps[j]`: their
/// coefficients at the box's level `j`).
#[inline(always)]
pub(super) fn run_box<const K: usize>(
    cut: &[(i64, i64)],
    steps: &[[i64; K]],
    start: [i64; K],
    mut run: impl FnMut(i64, i64, [i64; K]) -> Go<()>,
) -> Go<()> {
    fn add<const K: usize>(values: &mut [i64; K], steps: &[i64; K]) {
        for (v, s) in values.iter_mut().zip(steps) {
            *v += s;
        }
    }
    let (from, to) = cut[cut.len() - 1];
    match cut.len() {
        1 => run(from, to, start),
        2 => {
            let mut values = start;
            for _ in cut[0].0..cut[0].1 {
                run(from, to, values)?;
                add(&mut values, &steps[0]);
            }
            Ok(())
        }
        3 => {
            let mut outer = start;
            for _ in cut[0].0..cut[0].1 {
                let mut values = outer;
                for _ in cut[1].0..cut[1].1 {
                    run(from, to, values)?;
                    add(&mut values, &steps[1]);
                }
                add(&mut outer, &steps[0]);
            }
            Ok(())
        }
        _ => {
            fn deeper<const K: usize>(
                cut: &[(i64, i64)],
                steps: &[[i64; K]],
                mut values: [i64; K],
                run: &mut impl FnMut(i64, i64, [i64; K]) -> Go<()>,
            ) -> Go<()> {
                let (from, to) = cut[cut.len() - 1];
                if cut.len() == 1 {
                    return run(from, to, values);
                }
                for _ in cut[0].0..cut[0].1 {
                    deeper(&cut[1..], &steps[1..], values, run)?;
                    add(&mut values, &steps[0]);
                }
                Ok(())
            }
            deeper(cut, steps, start, &mut run)
        }
    }
}
