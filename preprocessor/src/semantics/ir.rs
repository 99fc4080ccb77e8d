//! The checked program: every name resolved to a slot (a loop variable or local), a tensor or a
//! parameter, every expression typed as an index (`i64`), a condition or an element value with
//! the dtype it is computed in. The interpreter ([`super::run`]) walks this, never the syntax
//! tree, so no name is looked up while a program runs. It also holds what is attached to a
//! program once: a loop nest's plan ([`NestPlan`], made by [`super::fast`]) and the forms the
//! executor lowered it to ([`Lowered`], filled by [`super::exec`]), and the parameter values a
//! run is given ([`ParamValue`]).

use super::ast::{AssignOp, CmpOp};
use crate::expr::Span;
use fkc_provider::DType;

/// The dtype written in the pseudo-code: `T` (the run's element dtype) or a fixed one, spelt
/// as its entry-point suffix (`f32`, `i32`, `f8e5m2`, `bool`).
pub fn parse_dtype(word: &str, t: DType) -> Option<DType> {
    if word == "T" {
        return Some(t);
    }
    DType::ALL.into_iter().find(|d| d.suffix() == word)
}

/// The dtype an operation on values of `a` and `b` is computed in: the wider one. Two floats
/// of one width (bf16 with f16) widen to f32, which holds both exactly; a float with an
/// integer is the float; two integers are the wider one (i8 with u8: i32).
pub fn wider(a: DType, b: DType) -> DType {
    use fkc_provider::dtype::Format;
    let width = |d: DType| match d.format() {
        Format::Float { exponent, mantissa } => 1 + exponent + mantissa,
        Format::Int { bits, .. } => bits,
        Format::Bool => 1,
    };
    if a == b {
        return a;
    }
    match (a.is_float(), b.is_float()) {
        (true, false) => a,
        (false, true) => b,
        (true, true) if width(a) == width(b) => DType::F32,
        (false, false) if width(a) == width(b) => DType::I32,
        _ if width(a) > width(b) => a,
        _ => b,
    }
}

/// Where a tensor comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The contract's `accept.inputs[i]`.
    Input(usize),
    /// The contract's `return.outputs[i]`.
    Output(usize),
    /// Declared in the pseudo-code (`m: T[n] = -inf`).
    Local,
}

/// A tensor the program reads or writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub origin: Origin,
    pub rank: usize,
    /// May be absent (an optional input).
    pub optional: bool,
    /// The dtype its elements are held in (an input's or output's is the run's `T`).
    pub dtype: DType,
}

/// A parameter the program reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub form: ParamForm,
}

/// What a parameter holds, as the pseudo-code uses it.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamForm {
    /// An integer (`usize`, `i64`): an index expression.
    Int,
    /// A tuple of this many integers (`(usize, usize)`, `[usize; 4]`), indexed `stride[0]`.
    Tuple(usize),
    /// A list of integers (`Vec<usize>`, `Vec<i64>`) of the sample's length, at most
    /// [`MAX_LIST`]; indexed by any integer expression (`perm[k]`), inside its length.
    List,
    /// A float (`f32`, `f64`): a value, like a literal.
    Float,
    /// A boolean: a condition.
    Bool,
    /// An enumeration with these values: compared with one (`mode == "valid"`).
    Enum(Vec<String>),
}

/// The longest list parameter the pseudo-code indexes.
pub const MAX_LIST: usize = 8;

/// An index (integer) expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Int {
    pub kind: IntKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum IntKind {
    Const(i64),
    Slot(usize),
    Dim {
        tensor: usize,
        axis: usize,
    },
    Rank(usize),
    Param {
        param: usize,
        element: Option<usize>,
    },
    Neg(Box<Int>),
    Bin(IntOp, Box<Int>, Box<Int>),
    Min(Vec<Int>),
    Max(Vec<Int>),
    /// `options[index]`: an axis chosen at run time (`x.dim[axis]`, `i[perm[k]]`, `perm[k]`);
    /// an index outside the options is an error.
    Pick {
        index: Box<Int>,
        options: Vec<Int>,
    },
    /// An element of an integer input tensor used as an index (`weight[ids[n, l], d]`): known
    /// only on a run, so every access it indexes is checked then.
    Element { tensor: usize, index: Vec<Int> },
    /// `numel(t)`: the product of a tensor's dims.
    Numel(usize),
    /// Component `component` of `reduced(i, axes, keepdim)`, the index a reduction writes for
    /// the whole index `i`: `i` with the axes the list parameter `axes` names (negative from
    /// the end) removed, or set to 0 where `keepdim` (a boolean parameter, or a constant: not
    /// 0 keeps) holds. `width` is the rank of the tensor it indexes; a run checks the axes and
    /// that width.
    Reduced {
        index: Vec<Int>,
        axes: usize,
        keepdim: Box<Int>,
        component: usize,
        width: usize,
    },
    /// Component `component` of `broadcast(o, t)`, the element of tensor `t` (of rank `width`)
    /// NumPy broadcasting reads for the whole index `o`: trailing axes aligned, 0 on an axis
    /// where `t`'s extent is 1.
    Broadcast {
        index: Vec<Int>,
        tensor: usize,
        component: usize,
        width: usize,
    },
    /// Component `component` of `along(i, axis, t)`: the whole index `i` with its component
    /// `axis` (known on a run) replaced by `t` — every element along one axis.
    Along {
        index: Vec<Int>,
        axis: Box<Int>,
        value: Box<Int>,
        component: usize,
    },
}

/// Which component of the whole index a reduced index's component `component` takes (`None`: a
/// kept reduced axis, 0), for an index of `len` axes, the reduced `axes` and `keep`; `Err` with
/// what is wrong when the axes repeat or fall outside, or the reduced index has another rank
/// than `width`.
pub fn reduced_source(
    len: usize,
    axes: &[i64],
    keep: bool,
    component: usize,
    width: usize,
) -> Result<Option<usize>, String> {
    let rank = i64::try_from(len).unwrap_or(i64::MAX);
    let Some(reduced) = crate::expr::normalized_axes(axes, rank) else {
        return Err(format!("{axes:?} are not distinct axes of a rank-{rank} index"));
    };
    let is_reduced = |axis: usize| reduced.contains(&i64::try_from(axis).unwrap_or(-1));
    let kept: Vec<usize> = (0..len).filter(|&a| keep || !is_reduced(a)).collect();
    if kept.len() != width {
        return Err(format!(
            "this reduced index has {} axes; the tensor it indexes has rank {width}",
            kept.len()
        ));
    }
    Ok(kept.get(component).copied().filter(|&a| !is_reduced(a)))
}

/// Which component of a whole index of `len` axes NumPy broadcasting reads for axis `component`
/// of a tensor of `dims` (`None`: an extent of 1, read at 0); `Err` when the tensor has more
/// axes than the index.
pub fn broadcast_source(len: usize, dims: &[usize], component: usize) -> Result<Option<usize>, String> {
    let Some(lead) = len.checked_sub(dims.len()) else {
        return Err(format!(
            "a rank-{} tensor does not broadcast to an index of {len} axes",
            dims.len()
        ));
    };
    Ok((dims.get(component) != Some(&1)).then_some(lead + component))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntOp {
    Add,
    Sub,
    Mul,
    /// Floor division.
    Div,
    /// Floor modulo.
    Rem,
}

/// A condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Bool {
    Const(bool),
    Not(Box<Bool>),
    And(Box<Bool>, Box<Bool>),
    Or(Box<Bool>, Box<Bool>),
    /// `a op b op c …` on indices.
    CompareInt(Vec<Int>, Vec<CmpOp>),
    /// `a op b …` on element values (only inside `select`).
    CompareVal(Vec<Val>, Vec<CmpOp>),
    /// `present(t)`: an optional input was passed.
    Present(usize),
    /// `isnan(v)`.
    IsNan(Box<Val>),
}

/// An element-value expression; each operation names the dtype it rounds to.
#[derive(Debug, Clone, PartialEq)]
pub struct Val {
    pub kind: ValKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ValKind {
    Const(f64),
    /// A float parameter's value (like a literal, it takes the dtype of what it meets).
    Param(usize),
    /// An index used as a number (exact in `f64`, rounded to `prec`).
    FromInt(Int, DType),
    Slot(usize),
    Read {
        tensor: usize,
        index: Vec<Int>,
    },
    Neg(Box<Val>),
    Bin(ValOp, Box<Val>, Box<Val>, DType),
    Func(Func, Vec<Val>, DType),
    /// `select(c, a, b)`.
    Select(Box<Bool>, Box<Val>, Box<Val>),
    /// `cast(v, dtype)`, or an implicit conversion to a narrower store.
    Cast(Box<Val>, DType),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// The scalar functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    Erf,
    Abs,
    /// Under the contract's NaN policy; a tie keeps the first argument.
    Max,
    Min,
}

impl Func {
    pub fn parse(name: &str) -> Option<Func> {
        Some(match name {
            "exp" => Func::Exp,
            "log" => Func::Log,
            "sqrt" => Func::Sqrt,
            "rsqrt" => Func::Rsqrt,
            "tanh" => Func::Tanh,
            "erf" => Func::Erf,
            "abs" => Func::Abs,
            "max" => Func::Max,
            "min" => Func::Min,
            _ => return None,
        })
    }

    pub fn arity(self) -> usize {
        match self {
            Func::Max | Func::Min => 2,
            _ => 1,
        }
    }

    /// How many units in the last place of its dtype an implementation may be off (the
    /// correctly rounded result is half a unit off): the allowance the error bound grants a
    /// kernel's own `exp`, `log`, … .
    pub fn ulp_allowance(self) -> f64 {
        match self {
            Func::Abs | Func::Max | Func::Min => 0.0,
            Func::Sqrt => 0.5,
            Func::Exp | Func::Log | Func::Tanh | Func::Erf | Func::Rsqrt => 4.0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Func::Exp => "exp",
            Func::Log => "log",
            Func::Sqrt => "sqrt",
            Func::Rsqrt => "rsqrt",
            Func::Tanh => "tanh",
            Func::Erf => "erf",
            Func::Abs => "abs",
            Func::Max => "max",
            Func::Min => "min",
        }
    }
}

/// What a statement of the program does.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// `for var in lo..hi`; `taps`: an iteration of this loop is a tap (its body updates a
    /// reduction directly, perhaps under a condition).
    For {
        var: usize,
        lo: Int,
        hi: Int,
        body: Vec<Op>,
        taps: bool,
        span: Span,
        /// The compiled form of the loop nest rooted here ([`super::fast`]).
        plan: Option<Box<NestPlan>>,
    },
    If {
        cond: Bool,
        then: Vec<Op>,
        otherwise: Vec<Op>,
    },
    SetInt {
        slot: usize,
        op: AssignOp,
        value: Int,
        span: Span,
    },
    SetVal {
        slot: usize,
        op: AssignOp,
        value: Val,
        update: Update,
        span: Span,
    },
    Store {
        tensor: usize,
        index: Vec<Int>,
        op: AssignOp,
        value: Val,
        update: Update,
        span: Span,
    },
    /// A local tensor: its shape and every element's first value.
    Alloc {
        tensor: usize,
        shape: Vec<Int>,
        init: Val,
        span: Span,
    },
}

/// How an assignment counts towards the work done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Update {
    /// `acc += a * b`: one multiply-add.
    pub mac: bool,
    /// `m = max(m, v)` or `min`: a comparison in a reduction.
    pub compare: bool,
    /// Part of a reduction (`+=`, `-=`, `*=`, or a max/min of itself).
    pub reduction: bool,
}

/// A checked program.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub body: Vec<Op>,
    pub tensors: Vec<Tensor>,
    pub params: Vec<Param>,
    /// Integer slots (loop variables and index locals).
    pub ints: usize,
    /// Value slots and the dtype each holds.
    pub vals: Vec<DType>,
    /// Each value slot's name, for traces.
    pub val_names: Vec<String>,
    /// How many forms the planned loop nests have in all.
    pub forms: usize,
    /// The program calls `max` or `min` on values (a selection, where NaN policies matter).
    pub selects: bool,
    /// Its forms lowered for the samples it ran on lately ([`super::exec`]'s cache).
    pub(crate) lowered: Lowered,
}

/// A parameter's value on a sample (a boolean is 0 or 1, an enumeration's value its
/// position among the values).
#[derive(Debug, Clone)]
pub enum ParamValue {
    Int(i64),
    Tuple(Vec<i64>),
    Float(f64),
}

/// Bit for bit: `-0.0` is not `+0.0` (a program lowered for one must not run for the other:
/// `x · -0.0` and `x · +0.0` differ in sign), and a NaN is itself.
impl PartialEq for ParamValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ParamValue::Int(a), ParamValue::Int(b)) => a == b,
            (ParamValue::Tuple(a), ParamValue::Tuple(b)) => a == b,
            (ParamValue::Float(a), ParamValue::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl Eq for ParamValue {}

/// Hashes what [`PartialEq`] compares: a float's bits.
impl std::hash::Hash for ParamValue {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            ParamValue::Int(v) => v.hash(state),
            ParamValue::Tuple(v) => v.hash(state),
            ParamValue::Float(v) => v.to_bits().hash(state),
        }
    }
}

/// `Σ coeffs[i]·vᵢ + offset` over the nest's variables (outermost first).
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub coeffs: Vec<Int>,
    pub offset: Int,
    /// The coefficients use no loop variable or local: evaluated once per run.
    pub fixed_coeffs: bool,
    /// The offset as `Σ kₛ·slotₛ + rest` over the slots of the enclosing loops, each `kₛ` and
    /// `rest` fixed for a run (`None` when it is not linear in them: then evaluated whole).
    pub split: Option<(Vec<(usize, Int)>, Int)>,
    /// This form's number among the program's forms (for the per-run cache).
    pub id: usize,
}

/// An element access: one form per axis (with the span of its index expression).
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    pub tensor: usize,
    pub axes: Vec<(usize, Span)>,
    pub span: Span,
}

/// A value expression with its accesses numbered.
#[derive(Debug, Clone, PartialEq)]
pub enum FastVal {
    Const(f64),
    FromInt(usize, DType),
    Slot(usize),
    /// The access with this number in [`NestPlan::reads`].
    Read(usize),
    Neg(Box<FastVal>),
    /// `a[…] * b[…]`: two accesses multiplied (the taps of a convolution or a product).
    Product(usize, usize, DType),
    Bin(ValOp, Box<FastVal>, Box<FastVal>, DType),
    Func(Func, Vec<FastVal>, DType),
    Cast(Box<FastVal>, DType),
}

/// What an update writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    Slot(usize),
    /// The access with this number in [`NestPlan::writes`].
    Element(usize),
}

/// One update of the innermost body.
#[derive(Debug, Clone, PartialEq)]
pub struct FastUpdate {
    pub target: Target,
    pub op: AssignOp,
    pub value: FastVal,
    pub update: Update,
    /// Value operations per execution (for the `ops` count).
    pub ops: u64,
    pub span: Span,
}

/// One loop of the nest.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub var: usize,
    pub lo: usize,
    pub hi: usize,
    /// Forms that must be `>= 0` for the innermost body to run, whose deepest variable is
    /// this level's.
    pub bounds: Vec<usize>,
}

/// A loop nest, planned.
#[derive(Debug, Clone, PartialEq)]
pub struct NestPlan {
    pub levels: Vec<Level>,
    pub forms: Vec<Form>,
    /// Conditions free of the nest's variables (the body runs only when they hold).
    pub invariant: Vec<Bool>,
    pub reads: Vec<Access>,
    pub writes: Vec<Access>,
    pub updates: Vec<FastUpdate>,
    /// The innermost loop's iterations are taps.
    pub taps: bool,
    /// Each access axis (access number among reads then writes, axis, form), grouped by the
    /// deepest level whose variable its index uses (the last group: none, checked on entry).
    pub checks: Vec<Vec<(usize, usize, usize)>>,
}

/// A program's lowered forms for the samples it ran on lately, by what lowering reads: the
/// arithmetic (its constants), the run's dtype, the inputs' presence and dims, the outputs' dims
/// and the parameters (never the values). The gate runs a sample in both arithmetics and often
/// several times; each lowering is done once.
#[derive(Default)]
pub struct Lowered(
    pub(super)  std::sync::Mutex<
        std::collections::HashMap<LoweredKey, std::sync::Arc<dyn std::any::Any + Send + Sync>>,
    >,
);

/// What a lowering depends on (never the operands' values).
#[derive(PartialEq, Eq, Hash)]
pub(super) struct LoweredKey {
    pub(super) arith: &'static str,
    pub(super) dtype: DType,
    pub(super) inputs: Vec<Option<Vec<usize>>>,
    pub(super) outputs: Vec<Vec<usize>>,
    pub(super) params: Vec<ParamValue>,
}

#[cfg(test)]
mod tests {
    use super::ParamValue;

    #[test]
    fn parameter_values_are_equal_bit_for_bit() {
        assert_ne!(ParamValue::Float(0.0), ParamValue::Float(-0.0));
        assert_eq!(ParamValue::Float(f64::NAN), ParamValue::Float(f64::NAN));
        assert_eq!(ParamValue::Int(3), ParamValue::Int(3));
        assert_ne!(ParamValue::Int(0), ParamValue::Float(0.0));
        assert_eq!(ParamValue::Tuple(vec![1, 2]), ParamValue::Tuple(vec![1, 2]));
    }
}
