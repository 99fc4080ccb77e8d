//! What every way of running a program shares: the arithmetic a run computes in ([`Arith`]:
//! the exact oracle, rounding in a dtype), what it runs on ([`Inputs`]), and what it gives back
//! ([`Outcome`], [`Counts`], the [`Step`]s of a trace), with the budgets every run keeps.

use super::ast::{AssignOp, CmpOp};
use super::ir::{Func, ParamValue, ValOp};
use fkc_provider::DType;

/// How values are computed.
pub trait Arith {
    /// A value while an expression is evaluated.
    type V: Copy + std::fmt::Debug + Send + Sync + 'static;
    /// A stored value (a local or a tensor element), which may be an open sum.
    type Cell: Clone + std::fmt::Debug;
    /// An element of an input tensor (a value of its dtype, exactly).
    fn input(&self, value: f64) -> Self::V;
    /// A literal.
    fn constant(&self, value: f64) -> Self::V;
    /// An index as a value of `dtype`.
    fn index(&self, value: i64, dtype: DType) -> Self::V;
    /// A stored value, read.
    fn load(&self, cell: &Self::Cell, dtype: DType) -> Self::V;
    /// A value stored (already of the cell's dtype).
    fn store(&self, value: Self::V) -> Self::Cell;
    /// `cell op= value` in `dtype`.
    fn update(&self, cell: &mut Self::Cell, op: AssignOp, value: Self::V, dtype: DType);
    /// `cell += a * b` in `dtype` (the product rounded to `dtype` first).
    fn mac(&self, cell: &mut Self::Cell, a: Self::V, b: Self::V, dtype: DType) {
        let product = self.binary(ValOp::Mul, a, b, dtype);
        self.update(cell, AssignOp::Add, product, dtype);
    }
    /// `cell += xs[i]·ws[j]` for `n` steps from `(i, j)` by `(di, dj)`, in order; every index
    /// is inside its slice (the caller checked the ends).
    #[allow(clippy::too_many_arguments)]
    fn dot(
        &self,
        cell: &mut Self::Cell,
        xs: &[f64],
        (i, di): (i64, i64),
        ws: &[f64],
        (j, dj): (i64, i64),
        n: usize,
        dtype: DType,
    ) {
        for k in 0..n as i64 {
            let x = self.input(xs[(i + di * k) as usize]);
            let w = self.input(ws[(j + dj * k) as usize]);
            self.mac(cell, x, w, dtype);
        }
    }
    fn neg(&self, value: Self::V) -> Self::V;
    fn binary(&self, op: ValOp, a: Self::V, b: Self::V, dtype: DType) -> Self::V;
    fn func(&self, func: Func, args: &[Self::V], dtype: DType) -> Self::V;
    fn cast(&self, value: Self::V, dtype: DType) -> Self::V;
    /// `a op b`; `None` when the arithmetic cannot decide (the values' error intervals meet).
    fn compare(&self, op: CmpOp, a: Self::V, b: Self::V) -> Option<bool>;
    fn is_nan(&self, value: Self::V) -> Option<bool>;
    /// Either of two values (a `select` whose condition is undecided).
    fn either(&self, a: Self::V, b: Self::V) -> Self::V;
    /// A representative number, for traces.
    fn number(&self, value: Self::V) -> f64;
}

/// What a program runs on: each input's dims and values (`None` when absent), each output's
/// dims, each parameter's value (in the program's order).
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub inputs: &'a [Option<(Vec<usize>, Vec<f64>)>],
    pub outputs: &'a [Vec<usize>],
    pub params: &'a [ParamValue],
    /// The run's element dtype `T`.
    pub dtype: DType,
}

/// The work a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Executed `acc += a * b` updates.
    pub macs: u64,
    /// Iterations of the loops whose bodies update a reduction (padding taps included).
    pub taps: u64,
    /// Executed `max`/`min` of a reduction with itself.
    pub compares: u64,
    /// Executed arithmetic on values (`+ - * /`, functions, updates).
    pub ops: u64,
    /// Executed `max`/`min` where a NaN met a number (where the NaN policy decides).
    pub nan_meets: u64,
    /// Per tensor: distinct elements read.
    pub read: Vec<u64>,
    /// Per tensor: elements (of an output or local) written at least once.
    pub written: Vec<u64>,
}

/// One step of how an element was made: the input elements it read (tensor, flat index) and
/// the value that step added.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub reads: Vec<(usize, usize)>,
    pub value: f64,
}

/// What a run gave.
#[derive(Debug, Clone)]
pub struct Outcome<C> {
    /// Each output's elements, row-major.
    pub outputs: Vec<Vec<C>>,
    pub counts: Counts,
    /// With tracing: each output's elements' steps.
    pub trace: Option<Vec<Vec<Vec<Step>>>>,
}

/// At most this many loop iterations and statements per run.
pub const MAX_STEPS: u64 = 200_000_000;
/// At most this many elements in one local tensor.
pub const MAX_LOCAL_ELEMENTS: usize = 1 << 20;
