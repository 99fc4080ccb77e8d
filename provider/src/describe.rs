//! The owned description of a registry — what the protocol's `describe` answers and what a host
//! works with, whether the provider runs in its process or in a child: every entry point with
//! its operands, outputs and parameter fields, every op kind and every parameter carrier.

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::registry::{FieldDesc, KernelRef, OperandDesc, ParamKind, Registry, VariantDesc};

/// One operand of an entry point.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperandInfo {
    /// Name, as contracts spell it.
    pub name: String,
    /// Required rank (with `any_rank`, the rank samples use).
    pub rank: usize,
    /// May be absent.
    pub optional: bool,
    /// Accepts any rank.
    pub any_rank: bool,
    /// The operand's own dtype (absent: the entry point's); new in protocol 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<DType>,
}

/// One parameter field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldInfo {
    /// Field name.
    pub name: String,
    /// Field kind.
    pub kind: ParamKind,
    /// The operand (or `"out"`) whose full shape the field carries, if any; such a field may
    /// be omitted from a call.
    pub shape_of: Option<String>,
    /// One-line meaning.
    pub doc: String,
    /// An enumeration's value names (absent for every other kind).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// One parameter carrier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariantInfo {
    /// Carrier name, e.g. `"Conv2D"`.
    pub variant: String,
    /// The op kind it parameterises.
    pub op_kind: Option<String>,
    /// Its fields, in declaration order.
    pub fields: Vec<FieldInfo>,
}

/// One entry point: a kernel in one dtype.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryPointInfo {
    /// Full symbol, e.g. `"my_backend::ops::relu_f32"`.
    pub symbol: String,
    /// Kernel name, e.g. `"relu"`.
    pub kernel: String,
    /// The one dtype the symbol runs.
    pub dtype: DType,
    /// The op kind it implements, if any.
    pub op_kind: Option<String>,
    /// Operands in call order.
    pub inputs: Vec<OperandInfo>,
    /// Output names.
    pub outputs: Vec<String>,
    /// Parameter fields.
    pub params: Vec<FieldInfo>,
}

/// Everything a registry declares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Description {
    /// Every entry point.
    pub entry_points: Vec<EntryPointInfo>,
    /// Every op kind the provider dispatches.
    pub op_kinds: Vec<String>,
    /// Every parameter carrier.
    pub variants: Vec<VariantInfo>,
    /// Whether the provider has an executor (the protocol's `execute`).
    pub executor: bool,
    /// The instruction-set levels the provider can run a call at (each with whether this
    /// machine runs it); empty when it picks its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelInfo>,
}

/// One instruction-set level, as the description lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelInfo {
    /// Its name, e.g. `"x86-v4"`, `"x86-v3"`, `"scalar"`.
    pub name: String,
    /// Whether this machine runs it.
    pub runs_here: bool,
}

impl Description {
    /// The entry point with this exact symbol.
    pub fn entry_point(&self, symbol: &str) -> Option<&EntryPointInfo> {
        self.entry_points.iter().find(|e| e.symbol == symbol)
    }

    /// The carrier called `name`.
    pub fn variant(&self, name: &str) -> Option<&VariantInfo> {
        self.variants.iter().find(|v| v.variant == name)
    }
}

impl From<&OperandDesc> for OperandInfo {
    fn from(d: &OperandDesc) -> Self {
        OperandInfo {
            name: d.name.to_owned(),
            rank: d.rank,
            optional: d.optional,
            any_rank: d.any_rank,
            dtype: d.dtype,
        }
    }
}

impl From<&FieldDesc> for FieldInfo {
    fn from(d: &FieldDesc) -> Self {
        FieldInfo {
            name: d.name.to_owned(),
            kind: d.kind,
            shape_of: d.shape_of.map(str::to_owned),
            doc: d.doc.to_owned(),
            values: d.values.iter().map(|v| (*v).to_owned()).collect(),
        }
    }
}

impl From<&VariantDesc> for VariantInfo {
    fn from(d: &VariantDesc) -> Self {
        VariantInfo {
            variant: d.variant.to_owned(),
            op_kind: d.op_kind.map(str::to_owned),
            fields: d.fields.iter().map(FieldInfo::from).collect(),
        }
    }
}

impl From<&KernelRef> for EntryPointInfo {
    fn from(k: &KernelRef) -> Self {
        EntryPointInfo {
            symbol: k.symbol.to_owned(),
            kernel: k.kernel.to_owned(),
            dtype: k.dtype,
            op_kind: k.op_kind.map(str::to_owned),
            inputs: k.inputs.iter().map(OperandInfo::from).collect(),
            outputs: k.outputs.iter().map(|o| (*o).to_owned()).collect(),
            params: k.params.iter().map(FieldInfo::from).collect(),
        }
    }
}

impl From<&Registry> for Description {
    fn from(r: &Registry) -> Self {
        Description {
            entry_points: r.entry_points.iter().map(EntryPointInfo::from).collect(),
            op_kinds: r.op_kinds.iter().map(|k| (*k).to_owned()).collect(),
            variants: r.variants.iter().map(VariantInfo::from).collect(),
            executor: r.executor.is_some(),
            levels: r
                .levels
                .map(|levels| {
                    levels()
                        .into_iter()
                        .map(|level| LevelInfo {
                            name: level.name.to_owned(),
                            runs_here: level.runs_here,
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}
