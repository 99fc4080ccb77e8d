//! The contract as written: every field of the FKC format (design §3) read from located YAML,
//! each value with its span in the author's file and its YAML comment. Nothing is interpreted
//! yet: expressions are still text and names are not bound (that is [`super::resolved`]).

use super::schema::{Located, Nullable};
use fkc_provider::DType;
use std::ops::Range;

mod from_yaml;

pub use from_yaml::read_contract;

/// The highest operand rank the format accepts (the gate draws every dimension of it).
pub const MAX_RANK: usize = 8;

/// How an operand's layout property is treated by the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutRequirement {
    Required,
    Accepted,
    Rejected,
}

impl LayoutRequirement {
    pub const WORDS: &[(&str, LayoutRequirement)] = &[
        ("required", LayoutRequirement::Required),
        ("accepted", LayoutRequirement::Accepted),
        ("rejected", LayoutRequirement::Rejected),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LayoutRequirement::Required => "required",
            LayoutRequirement::Accepted => "accepted",
            LayoutRequirement::Rejected => "rejected",
        }
    }
}

/// The five layout properties of an operand view.
#[derive(Debug, Clone, PartialEq)]
pub struct RawLayout {
    pub span: Range<usize>,
    pub contiguous: Option<Located<LayoutRequirement>>,
    pub strided: Option<Located<LayoutRequirement>>,
    pub broadcast_stride0: Option<Located<LayoutRequirement>>,
    pub start_offset: Option<Located<LayoutRequirement>>,
    pub reverse_strides: Option<Located<LayoutRequirement>>,
}

impl RawLayout {
    pub const FIELDS: &[&str] = &[
        "contiguous",
        "strided",
        "broadcast_stride0",
        "start_offset",
        "reverse_strides",
    ];

    /// (name, requirement) pairs in format order.
    pub fn flags(&self) -> [(&'static str, Option<&Located<LayoutRequirement>>); 5] {
        [
            ("contiguous", self.contiguous.as_ref()),
            ("strided", self.strided.as_ref()),
            ("broadcast_stride0", self.broadcast_stride0.as_ref()),
            ("start_offset", self.start_offset.as_ref()),
            ("reverse_strides", self.reverse_strides.as_ref()),
        ]
    }
}

/// The ranks `rank:` declares for an input: one (`rank: 3`), a range (`rank: {min: 1, max:
/// 4}`), or every rank (`rank: any`, which the gate draws from 0 to [`ANY_RANK_SAMPLED`] and
/// checks up to [`ANY_RANK_CHECKED`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rank {
    pub min: usize,
    pub max: usize,
    /// Written `any`: the kernel takes every rank; `min..=max` are the ranks checked.
    pub any: bool,
}

/// The highest rank the gate draws for `rank: any` (an operand of rank 4 with dims up to 6
/// has at most 1296 elements).
pub const ANY_RANK_SAMPLED: usize = 4;

/// The highest rank the gate checks for `rank: any`: past the draws, a designed sample of small
/// dims at each higher rank reaches code kept for ranks past 4.
pub const ANY_RANK_CHECKED: usize = 8;

impl Rank {
    /// Exactly this rank.
    pub fn fixed(rank: usize) -> Rank {
        Rank {
            min: rank,
            max: rank,
            any: false,
        }
    }

    /// The one rank, when only one is declared.
    pub fn single(&self) -> Option<usize> {
        (self.min == self.max && !self.any).then_some(self.min)
    }

    /// Every rank declared (checked, for `any`).
    pub fn ranks(&self) -> std::ops::RangeInclusive<usize> {
        self.min..=self.max
    }

    /// The ranks random draws take: every rank declared, up to [`ANY_RANK_SAMPLED`] for `any`.
    pub fn drawn(&self) -> std::ops::RangeInclusive<usize> {
        match self.any {
            true => self.min..=self.max.min(ANY_RANK_SAMPLED).max(self.min),
            false => self.ranks(),
        }
    }

    /// The ranks only designed samples take (`any` past [`ANY_RANK_SAMPLED`]).
    pub fn designed(&self) -> std::ops::RangeInclusive<usize> {
        *self.drawn().end() + 1..=self.max
    }

}

/// How the page and messages say it: `3`, `1 to 4`, `any`.
impl std::fmt::Display for Rank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.single() {
            Some(rank) => write!(f, "{rank}"),
            None if self.any => f.write_str("any"),
            None => write!(f, "{} to {}", self.min, self.max),
        }
    }
}

/// One entry of `accept.inputs`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawInput {
    pub span: Range<usize>,
    pub name: Located<String>,
    pub dtypes: Vec<Located<DType>>,
    pub dtypes_span: Range<usize>,
    /// `dtype: I64`: the input's own dtype, whatever the kernel's (`dtypes` then absent).
    pub dtype: Option<Located<DType>>,
    /// `values: {min, max}`: the element values the contract admits (an index's range).
    pub values: Option<RawValues>,
    pub layout: Option<RawLayout>,
    pub rank: Option<Located<Rank>>,
    pub shape_constraint: Option<Located<String>>,
    pub optional: Option<Located<bool>>,
}

impl RawInput {
    /// Whether the input is marked `optional: true` (a call may pass it or not).
    pub fn is_optional(&self) -> bool {
        self.optional.as_ref().is_some_and(|o| o.value)
    }
}

/// An input's `values`: the smallest and largest element value the contract admits, as
/// expressions (`max: "weight.dim[0] - 1"`); outside them, the kernel must refuse.
#[derive(Debug, Clone, PartialEq)]
pub struct RawValues {
    pub span: Range<usize>,
    pub min: Located<String>,
    pub max: Located<String>,
}

/// One entry of `op_params.fields`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawParamField {
    pub name: Located<String>,
    pub kind: Located<String>,
    /// An enumeration's value names (`kind: enum`), in order.
    pub values: Vec<Located<String>>,
    pub constraint: Option<Located<String>>,
    pub note: Option<Located<String>>,
}

/// `op_params`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawOpParams {
    pub span: Range<usize>,
    pub variant: Option<Located<String>>,
    pub fields: Vec<RawParamField>,
}

/// One entry of `return.outputs`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawOutput {
    pub span: Range<usize>,
    pub name: Located<String>,
    pub dtype_rule: Option<Located<String>>,
    pub shape_rule: Option<Located<String>>,
    pub layout_guarantee: Option<Located<String>>,
    pub aliasing: Option<Located<String>>,
}

/// One entry of `caps.paths`: a code path the kernel reports, reached in every listed dtype
/// (every declared one when none is listed) at some listed instruction-set level (any level
/// when none is listed; a path whose levels this machine cannot run is not required here).
#[derive(Debug, Clone, PartialEq)]
pub struct RawPath {
    pub name: Located<String>,
    pub dtypes: Vec<Located<DType>>,
    pub levels: Vec<Located<String>>,
    pub note: Option<Located<String>>,
}

/// One entry of `caps.fast_paths`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawFastPath {
    pub when: Located<String>,
    pub note: Option<Located<String>>,
}

/// `caps`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawCaps {
    pub awkward_layout_strategy: Option<Located<String>>,
    pub fast_paths: Vec<RawFastPath>,
    /// The code paths the kernel reports (`fkc_provider::call::took`) that the gate must reach.
    pub paths: Vec<RawPath>,
    pub in_place: Option<Located<bool>>,
    pub alignment_bytes: Option<Located<u64>>,
    pub access_granularity_bits: Option<Located<u64>>,
}

/// `cost.memory`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawMemory {
    pub device_bytes: Nullable<String>,
    pub host_bytes: Nullable<String>,
    pub disk_bytes: Nullable<String>,
}

/// `cost`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawCost {
    pub provenance: Option<Located<String>>,
    pub class: Option<Located<String>>,
    pub flops: Nullable<String>,
    pub bytes_moved: Nullable<String>,
    pub overhead_ns: Nullable<String>,
    pub memory: Option<RawMemory>,
}

/// `precision`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawPrecision {
    pub bit_stable_on_same_hardware: Option<Located<bool>>,
    pub max_ulp: Nullable<u64>,
    pub max_relative: Nullable<f64>,
    pub max_absolute: Nullable<f64>,
    pub audited: Option<Located<bool>>,
    pub notes: Option<Located<String>>,
    /// `order: as_written` (or its older name `naive_nested`): every output equals, bit for
    /// bit, the semantics computed in the dtype in exactly the written order.
    pub order: Option<Located<String>>,
    /// `nan: propagate | ignore`: what a NaN operand does to a result.
    pub nan: Option<Located<String>>,
    /// What bits a NaN output may have where the contract claims bits: `canonical`,
    /// `propagate` (an input NaN's, quieted), `either` (the default) or `any`.
    pub nan_bits: Option<Located<String>>,
    /// `overflow: wrap | saturate`: what integer arithmetic, and a conversion into an integer
    /// dtype, does with a result beyond the dtype (default `wrap`).
    pub overflow: Option<Located<String>>,
    /// Op-params the outputs' bits do not depend on (a thread count): each sample runs again
    /// with each of them 1, bit for bit the same.
    pub independent_of: Vec<Located<String>>,
}

/// What `kernel_revision_hash` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevisionHash {
    Auto,
    Authored(String),
}

/// `entry_point`: one symbol whose dtype suffix is substituted per dtype, or a map dtype → symbol.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryPointSpec {
    Template(String),
    PerDtype(Vec<(Located<DType>, Located<String>)>),
}

/// The contract as written.
#[derive(Debug, Clone, PartialEq)]
pub struct RawContract {
    /// The whole fence body in the file.
    pub span: Range<usize>,
    /// The canonical text of the contract without `kernel_revision_hash` (what the hash covers).
    pub canonical: String,
    pub kernel: Located<String>,
    pub op_kind: Option<Located<String>>,
    pub registrable: Option<Located<bool>>,
    pub blurb: Option<Located<String>>,
    pub backend: Option<Located<String>>,
    pub kernel_source: Option<Located<String>>,
    pub entry_point: Option<Located<EntryPointSpec>>,
    pub kernel_revision_hash: Option<Located<RevisionHash>>,
    pub inputs: Vec<RawInput>,
    pub op_params: Option<RawOpParams>,
    pub outputs: Vec<RawOutput>,
    pub caps: Option<RawCaps>,
    pub cost: Option<RawCost>,
    pub precision: Option<RawPrecision>,
    pub determinism: Option<Located<Determinism>>,
    pub oracle: Option<RawOracle>,
    /// What the kernel computes, as pseudo-code the gate runs (`semantics: |`).
    pub semantics: Option<Located<String>>,
}

/// `oracle`: another registry's entry point the values are checked against (differential
/// testing), with fixed values for the oracle's parameters this kernel does not have.
#[derive(Debug, Clone, PartialEq)]
pub struct RawOracle {
    pub span: Range<usize>,
    pub entry_point: Located<String>,
    /// (field, value): one integer, or a list for a tuple or array field.
    pub params: Vec<(Located<String>, Located<Vec<u64>>)>,
}

/// `determinism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Determinism {
    /// Repeated runs on the same hardware are bit-identical.
    SameHardwareBitwise,
    /// Bit-identical on every hardware.
    CrossHardwareBitwise,
    /// No promise.
    Nondeterministic,
}

impl Determinism {
    pub const WORDS: &[(&str, Determinism)] = &[
        ("same_hardware_bitwise", Determinism::SameHardwareBitwise),
        ("cross_hardware_bitwise", Determinism::CrossHardwareBitwise),
        ("nondeterministic", Determinism::Nondeterministic),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Determinism::SameHardwareBitwise => "same_hardware_bitwise",
            Determinism::CrossHardwareBitwise => "cross_hardware_bitwise",
            Determinism::Nondeterministic => "nondeterministic",
        }
    }
}
