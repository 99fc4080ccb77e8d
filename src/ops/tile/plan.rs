//! The plan of a tiled convolution, free of any arithmetic: the convolution in gather form
//! ([`Gather`]: which kernel rows and columns reach each output, and where they read the padded,
//! phase-split input), the sizes of its padded buffers, and the output rows grouped into the
//! register tiles that can share their kernel rows.

use std::ops::Range;

/// One kernel column tap of a column phase: output `j` of the phase reads
/// `buffer[.., phase][start + j]`, and the tap is real (not padding) for `j` in `valid`.
#[derive(Clone, Debug)]
pub(crate) struct ColTap {
    pub kw: usize,
    pub phase: usize,
    pub start: usize,
    pub valid: Range<usize>,
}

/// Output columns `ow = j · out_step + out_base` for `j` in `0..count`, and their taps.
#[derive(Clone, Debug)]
pub(crate) struct ColPhase {
    pub taps: Vec<ColTap>,
    pub count: usize,
    pub out_base: usize,
}

/// Where weight `(co, ci, kh, kw)` (`ci` local to the group) lives in the weight operand.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WeightLayout {
    /// `[Cout, Cin/groups, Kh, Kw]` (conv2d).
    Conv,
    /// `[Cin, Cout/groups, Kh, Kw]` (conv_transpose2d).
    Transposed,
}

/// A convolution in gather form, for every image of the batch.
#[derive(Clone, Debug)]
pub(crate) struct Gather {
    pub batch: usize,
    pub in_channels: usize,
    pub height: usize,
    pub width: usize,
    pub out_channels: usize,
    pub out_height: usize,
    pub out_width: usize,
    pub groups: usize,
    pub kernel_height: usize,
    pub kernel_width: usize,
    /// How the input is read: everything but the sizes.
    pub plan: GatherPlan,
}

/// How a convolution reads its input in gather form: everything of a [`Gather`] but the
/// sizes.
#[derive(Clone, Debug)]
pub(crate) struct GatherPlan {
    pub weights: WeightLayout,
    /// Input column `iw` sits at padded position `iw + left`, stored in buffer phase
    /// `(iw + left) % phases` at index `(iw + left) / phases`.
    pub phases: usize,
    pub left: usize,
    /// Per output row: the `(kh, ih)` pairs that reach it, in summation order.
    pub rows: Vec<Vec<(usize, usize)>>,
    pub cols: Vec<ColPhase>,
    pub out_step: usize,
}

impl Gather {
    /// The gather of a convolution with input `[N, Cin, H, W]`, output `[N, Cout, Hout, Wout]`,
    /// kernel `[Kh, Kw]` and `groups`, read as `plan` says.
    pub(crate) fn new(
        input: [usize; 4],
        output: [usize; 4],
        kernel: [usize; 2],
        groups: usize,
        plan: GatherPlan,
    ) -> Gather {
        let [batch, in_channels, height, width] = input;
        let [_, out_channels, out_height, out_width] = output;
        let [kernel_height, kernel_width] = kernel;
        Gather {
            batch,
            in_channels,
            height,
            width,
            out_channels,
            out_height,
            out_width,
            groups,
            kernel_height,
            kernel_width,
            plan,
        }
    }
}

/// Output columns per phase are covered in spans of at most this many (`NV · lanes` divides
/// it for every instruction set), so phase rows are padded up to a multiple of it.
const SPAN_QUANTUM: usize = 64;

impl Gather {
    pub(super) fn group_in(&self) -> usize {
        self.in_channels / self.groups
    }
    pub(super) fn group_out(&self) -> usize {
        self.out_channels / self.groups
    }
    /// How far the reads of one phase row reach from its start (largest tap offset plus the
    /// padded column span), or `None` on overflow.
    pub(super) fn row_len(&self) -> Option<usize> {
        let mut len = 0usize;
        for phase in &self.plan.cols {
            let cover = phase.count.checked_next_multiple_of(SPAN_QUANTUM)?;
            for tap in &phase.taps {
                len = len.max(tap.start.checked_add(cover)?);
            }
        }
        // At least one element, so that buffer rows are never empty.
        Some(len.max(1))
    }
    /// Distance between consecutive phase rows of the padded buffer. One phase: the input
    /// width, so that the buffer is the input itself shifted by `left` (one copy per group
    /// of channels; a read past the end of a row lands in the next one, on lanes that are
    /// masked out). Several phases: `row_len`, each phase row holding its own columns.
    pub(super) fn pitch(&self, row_len: usize) -> usize {
        if self.plan.phases == 1 {
            self.width
        } else {
            row_len
        }
    }
    /// Elements of a padded buffer of `rows` input rows, with room after the last row for
    /// the reads that run past it; `None` on overflow.
    pub(super) fn buffer_len(&self, rows: usize, row_len: usize) -> Option<usize> {
        rows.checked_mul(self.plan.phases)?
            .checked_mul(self.pitch(row_len))?
            .checked_add(row_len)?
            .checked_add(self.plan.left)
    }
}

/// Most output rows per register tile.
pub(super) const MAX_ROWS: usize = 4;

/// A kernel row `kh` and, per output row of the tile, the input row `ih` it reads there.
pub(super) type PlanRow = (usize, [usize; MAX_ROWS]);

/// Output rows `oh..oh + rows` and their [`row_plan`].
pub(super) struct RowTile {
    pub(super) oh: usize,
    pub(super) rows: usize,
    pub(super) plan: Vec<PlanRow>,
}

/// Every output row in tiles of `rows_per_tile` rows where [`row_plan`] allows, else of one.
pub(super) fn row_tiles(g: &Gather, rows_per_tile: usize) -> Vec<RowTile> {
    let mut tiles = Vec::new();
    let mut oh = 0;
    while oh < g.out_height {
        let full = rows_per_tile <= g.out_height - oh;
        let (rows, plan) = match row_plan(g, oh, rows_per_tile).filter(|_| full) {
            Some(plan) => (rows_per_tile, plan),
            None => (1, row_plan(g, oh, 1).unwrap_or_default()),
        };
        tiles.push(RowTile { oh, rows, plan });
        oh += rows;
    }
    tiles
}

/// The kernel rows of output rows `oh..oh + nr`, each output row's in its own summation
/// order. A tile of several rows needs every row to take the same kernel rows in the same
/// order (true away from the top and bottom padding); `None` when they do not (never for
/// one row), and a one-row tile is used instead.
fn row_plan(g: &Gather, oh: usize, nr: usize) -> Option<Vec<PlanRow>> {
    let rows = g.plan.rows.get(oh..oh + nr)?;
    let first = rows.first()?;
    let same = |row: &Vec<(usize, usize)>| {
        row.len() == first.len() && row.iter().zip(first).all(|(a, b)| a.0 == b.0)
    };
    if !rows.iter().all(same) {
        return None;
    }
    let plan = first
        .iter()
        .enumerate()
        .map(|(j, &(kh, _))| {
            let mut ihs = [0; MAX_ROWS];
            for (ih, row) in ihs.iter_mut().zip(rows) {
                *ih = row[j].1;
            }
            (kh, ihs)
        })
        .collect();
    Some(plan)
}
