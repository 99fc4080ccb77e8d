//! What a provider exports: its link registry — one [`KernelRef`] per entry point (kernel ×
//! dtype), the op kinds it dispatches, the parameter carriers ([`VariantDesc`]) and their
//! fields ([`FieldDesc`]) — plus the types a call passes ([`ParamValues`]).
//!
//! Everything here is `'static` data a provider writes once, in a `static REGISTRY: Registry`.
//! [`crate::describe`] turns it into the owned description that travels over the protocol.

use std::collections::BTreeMap;

use crate::dtype::DType;
use crate::error::Rejection;
pub use crate::param::{ParamKind, ParamValue};
use crate::tensor::AnyTensor;
use crate::view::Operand;

/// Parameter values by field name.
pub type ParamValues = BTreeMap<String, ParamValue>;

/// Description of one parameter field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDesc {
    /// Field name, e.g. `"stride"`.
    pub name: &'static str,
    /// Field kind.
    pub kind: ParamKind,
    /// The operand (`"x"`, `"weight"`) or output (`"out"`) whose full shape this field
    /// carries, if any. Such fields may be omitted when calling an entry point.
    pub shape_of: Option<&'static str>,
    /// One-line meaning.
    pub doc: &'static str,
    /// An enumeration's value names (empty for every other kind).
    pub values: &'static [&'static str],
}

impl FieldDesc {
    /// A plain field (no operand's shape).
    pub const fn new(name: &'static str, kind: ParamKind, doc: &'static str) -> FieldDesc {
        FieldDesc {
            name,
            kind,
            shape_of: None,
            doc,
            values: &[],
        }
    }

    /// An enumeration field: one of `values`.
    pub const fn choice(
        name: &'static str,
        values: &'static [&'static str],
        doc: &'static str,
    ) -> FieldDesc {
        FieldDesc {
            name,
            kind: ParamKind::Enum,
            shape_of: None,
            doc,
            values,
        }
    }
}

/// Description of one parameter carrier (an `OpParams` variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariantDesc {
    /// Variant name, e.g. `"Conv2D"`.
    pub variant: &'static str,
    /// The op kind this variant parameterises (its name, e.g. `"Conv2D"`).
    pub op_kind: Option<&'static str>,
    /// Its fields, in declaration order.
    pub fields: &'static [FieldDesc],
}

/// One operand of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperandDesc {
    /// Name, as contracts spell it (`"x"`, `"weight"`, `"bias"`, `"kernel"`).
    pub name: &'static str,
    /// Required rank (with `any_rank`, the rank samples use).
    pub rank: usize,
    /// May be passed as `None`.
    pub optional: bool,
    /// Accepts any rank.
    pub any_rank: bool,
    /// The operand's own dtype, whatever the entry point's (`I64` indices of an `F32` gather);
    /// `None`: the entry point's dtype.
    pub dtype: Option<DType>,
}

impl OperandDesc {
    /// A required operand of a fixed rank, in the entry point's dtype.
    pub const fn required(name: &'static str, rank: usize) -> OperandDesc {
        OperandDesc {
            name,
            rank,
            optional: false,
            any_rank: false,
            dtype: None,
        }
    }

    /// The same operand, always of `dtype`.
    pub const fn of_dtype(self, dtype: DType) -> OperandDesc {
        OperandDesc {
            dtype: Some(dtype),
            ..self
        }
    }
}

/// The signature every entry point shares.
pub type EntryFn = fn(&[Option<Operand>], &ParamValues) -> Result<Vec<AnyTensor>, Rejection>;

/// One entry point of a link registry: a kernel in one dtype.
#[derive(Clone, Copy, Debug)]
pub struct KernelRef {
    /// Full symbol, e.g. `"fuel_reference_backend::ops::conv2d_f32"`.
    pub symbol: &'static str,
    /// Kernel name, e.g. `"conv2d"`.
    pub kernel: &'static str,
    /// The one dtype this symbol runs.
    pub dtype: DType,
    /// The op kind it implements (e.g. `"Conv2D"`), `None` for describe-only kernels.
    pub op_kind: Option<&'static str>,
    /// Operands in call order.
    pub inputs: &'static [OperandDesc],
    /// Output names (`["out"]`).
    pub outputs: &'static [&'static str],
    /// Parameter fields (for op-kind kernels, the `OpParams` variant's fields).
    pub params: &'static [FieldDesc],
    /// The function to call.
    pub call: EntryFn,
}

impl KernelRef {
    /// Calls the entry point.
    pub fn run(
        &self,
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> Result<Vec<AnyTensor>, Rejection> {
        (self.call)(operands, params)
    }
}

/// Runs an op kind through the provider's executor: op-kind name, the carrier's named values
/// (every field, shape-carrying ones included), operands in the op's input order.
pub type ExecuteFn =
    fn(&str, &ParamValues, &[Option<Operand>]) -> Result<Vec<AnyTensor>, Rejection>;

/// A provider's link registry.
#[derive(Clone, Copy, Debug)]
pub struct Registry {
    /// The provider's name, as a contract's front matter gives it (`provider.name`).
    pub name: &'static str,
    /// The path a front matter names the registry by (`provider.link_registry`).
    pub path: &'static str,
    /// The crate every symbol lives in (`my_backend` in `my_backend::ops::relu_f32`).
    pub crate_name: &'static str,
    /// The provider's revision (for example its crate version), shown to readers.
    pub revision: &'static str,
    /// Every op kind the provider dispatches (`"Conv2D"`, ...).
    pub op_kinds: &'static [&'static str],
    /// Every parameter carrier, one per op kind.
    pub variants: &'static [VariantDesc],
    /// Every entry point, one per kernel and dtype actually supported.
    pub entry_points: &'static [KernelRef],
    /// The provider's executor, if it has one: it must refuse what it does not route.
    pub executor: Option<ExecuteFn>,
    /// The instruction-set levels its kernels dispatch to, if it can run a call at a chosen
    /// one ([`crate::call::level`]); `None`: each kernel picks its own.
    pub levels: Option<crate::call::LevelsFn>,
}

impl Registry {
    /// The entry point with this exact symbol.
    pub fn entry_point(&self, symbol: &str) -> Option<&'static KernelRef> {
        self.entry_points.iter().find(|k| k.symbol == symbol)
    }

    /// The carrier called `name` (exact spelling).
    pub fn variant(&self, name: &str) -> Option<&'static VariantDesc> {
        self.variants.iter().find(|v| v.variant == name)
    }
}
