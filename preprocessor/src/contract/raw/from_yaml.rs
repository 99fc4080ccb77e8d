//! Reading the raw contract from located YAML: each field of the format checked for its shape
//! and kept with its span and comment; every problem is recorded in the reader.

use super::{
    Determinism, EntryPointSpec, RawCaps, RawContract, RawCost, RawFastPath, RawMemory,
    RawOpParams, RawOracle, RawOutput, RawParamField, RawPath, RawPrecision, RevisionHash,
};
use crate::contract::schema::{Fields, Located, Reader};
use crate::diag::Code;
use crate::yaml::{Node, Value};
use fkc_provider::DType;

mod inputs;

use inputs::{read_accept, read_dtypes};

const CONTRACT_FIELDS: &[&str] = &[
    "kernel",
    "op_kind",
    "registrable",
    "blurb",
    "backend",
    "kernel_source",
    "entry_point",
    "kernel_revision_hash",
    "accept",
    "op_params",
    "return",
    "caps",
    "cost",
    "precision",
    "determinism",
    "oracle",
    "semantics",
];

/// The nested sections of a contract and their fields (to recognise lost indentation).
const CONTRACT_SECTIONS: &[(&str, &[&str])] = &[
    ("accept", &["inputs"]),
    ("op_params", &["variant", "fields"]),
    ("return", &["outputs"]),
    ("caps", CAPS_FIELDS),
    ("cost", COST_FIELDS),
    ("precision", PRECISION_FIELDS),
];

const DTYPE_WORDS: &[(&str, DType)] = &[
    ("F32", DType::F32),
    ("F64", DType::F64),
    ("BF16", DType::BF16),
    ("F16", DType::F16),
    ("F8E5M2", DType::F8E5M2),
    ("I8", DType::I8),
    ("U8", DType::U8),
    ("I32", DType::I32),
    ("I64", DType::I64),
    ("Bool", DType::Bool),
];

/// Reads a contract from its root node. Problems are recorded in the reader; `None` when the
/// contract is too broken to go on (not a mapping, or no `kernel`).
pub fn read_contract(reader: &mut Reader<'_>, root: &Node) -> Option<RawContract> {
    if !matches!(root.value, Value::Map(_)) {
        reader.error_at(
            Code::NotAMapping,
            root,
            format!(
                "a contract must be a YAML mapping, found {}",
                root.value.type_name()
            ),
        );
        return None;
    }
    let fields =
        reader.mapping_with_sections(root, "the contract", CONTRACT_FIELDS, CONTRACT_SECTIONS)?;
    let kernel = reader
        .required(&fields, "kernel", "the contract")
        .and_then(|node| reader.string(node, "kernel"));
    let contract = RawContract {
        span: reader.file_span(&root.span),
        canonical: root.canonical(&["kernel_revision_hash"]),
        kernel: kernel
            .clone()
            .unwrap_or_else(|| reader.located(root, String::new())),
        op_kind: reader.optional(&fields, "op_kind", |r, n| r.string(n, "op_kind")),
        registrable: reader.optional(&fields, "registrable", |r, n| r.boolean(n, "registrable")),
        blurb: reader.optional(&fields, "blurb", |r, n| r.string(n, "blurb")),
        backend: reader
            .required(&fields, "backend", "the contract")
            .and_then(|n| reader.string(n, "backend")),
        kernel_source: reader
            .required(&fields, "kernel_source", "the contract")
            .and_then(|n| reader.string(n, "kernel_source")),
        entry_point: reader
            .required(&fields, "entry_point", "the contract")
            .and_then(|n| read_entry_point(reader, n)),
        kernel_revision_hash: reader.optional(&fields, "kernel_revision_hash", read_revision_hash),
        inputs: read_accept(reader, &fields),
        op_params: reader.optional(&fields, "op_params", read_op_params),
        outputs: read_return(reader, &fields),
        caps: reader.optional(&fields, "caps", read_caps),
        cost: reader.optional(&fields, "cost", read_cost),
        precision: reader.optional(&fields, "precision", read_precision),
        determinism: reader.optional(&fields, "determinism", |r, n| {
            r.word(n, "determinism", Determinism::WORDS)
        }),
        oracle: reader.optional(&fields, "oracle", read_oracle),
        semantics: reader.optional(&fields, "semantics", |r, n| r.string(n, "semantics")),
    };
    kernel.map(|_| contract)
}

fn read_entry_point(reader: &mut Reader<'_>, node: &Node) -> Option<Located<EntryPointSpec>> {
    match &node.value {
        Value::Str(symbol) => Some(reader.located(node, EntryPointSpec::Template(symbol.clone()))),
        Value::Map(entries) => {
            let mut symbols = Vec::new();
            for (key, value) in entries {
                let dtype = reader.word(key, "dtype", DTYPE_WORDS);
                let symbol = reader.string(value, "entry_point symbol");
                if let (Some(dtype), Some(symbol)) = (dtype, symbol) {
                    symbols.push((dtype, symbol));
                }
            }
            Some(reader.located(node, EntryPointSpec::PerDtype(symbols)))
        }
        _ => {
            reader.error_at(
                Code::WrongType,
                node,
                "`entry_point` must be a symbol or a mapping from dtype to symbol",
            );
            None
        }
    }
}

fn read_oracle(reader: &mut Reader<'_>, node: &Node) -> Option<RawOracle> {
    let fields = reader.mapping(node, "oracle", &["entry_point", "params"])?;
    let entry_point = reader
        .required(&fields, "entry_point", "oracle")
        .and_then(|n| reader.string(n, "oracle.entry_point"))?;
    let mut params = Vec::new();
    if let Some(table) = fields.get("params").filter(|n| n.value != Value::Null) {
        let Value::Map(entries) = &table.value else {
            reader.error_at(
                Code::WrongType,
                table,
                format!(
                    "`oracle.params` must be a mapping, found {}",
                    table.value.type_name()
                ),
            );
            return None;
        };
        for (key, value) in entries {
            let name = reader.string(key, "an oracle parameter name");
            let numbers = match &value.value {
                Value::Seq(items) => items
                    .iter()
                    .map(|item| reader.unsigned(item, "oracle.params").map(|n| n.value))
                    .collect::<Option<Vec<u64>>>(),
                _ => reader
                    .unsigned(value, "oracle.params")
                    .map(|n| vec![n.value]),
            };
            if let (Some(name), Some(numbers)) = (name, numbers) {
                params.push((name, reader.located(value, numbers)));
            }
        }
    }
    Some(RawOracle {
        span: reader.file_span(&node.span),
        entry_point,
        params,
    })
}

fn read_revision_hash(reader: &mut Reader<'_>, node: &Node) -> Option<Located<RevisionHash>> {
    let text = reader.string(node, "kernel_revision_hash")?;
    Some(text.map(|text| {
        if text == "auto" {
            RevisionHash::Auto
        } else {
            RevisionHash::Authored(text)
        }
    }))
}

fn read_op_params(reader: &mut Reader<'_>, node: &Node) -> Option<RawOpParams> {
    let fields = reader.mapping(node, "op_params", &["variant", "fields"])?;
    let variant = reader.optional(&fields, "variant", |r, n| r.string(n, "op_params.variant"));
    let mut params = Vec::new();
    if let Some(table) = fields.get("fields").filter(|n| n.value != Value::Null) {
        if let Value::Map(entries) = &table.value {
            for (key, value) in entries {
                params.extend(read_param_field(reader, key, value));
            }
        } else {
            reader.error_at(
                Code::WrongType,
                table,
                format!(
                    "`op_params.fields` must be a mapping, found {}",
                    table.value.type_name()
                ),
            );
        }
    }
    Some(RawOpParams {
        span: reader.file_span(&node.span),
        variant,
        fields: params,
    })
}

fn read_param_field(reader: &mut Reader<'_>, key: &Node, value: &Node) -> Option<RawParamField> {
    let name = reader.string(key, "an op-param name")?;
    let what = format!("op-param `{}`", name.value);
    let fields = reader.mapping(value, &what, &["kind", "values", "constraint", "note"])?;
    let kind = reader
        .required(&fields, "kind", &what)
        .and_then(|n| reader.string(n, "kind"))?;
    let values = reader
        .optional(&fields, "values", |r, n| {
            let items = r.sequence(n, "values")?;
            Some(items.iter().filter_map(|item| r.string(item, "an enumeration value")).collect())
        })
        .unwrap_or_default();
    Some(RawParamField {
        name,
        kind,
        values,
        constraint: reader.optional(&fields, "constraint", |r, n| r.expression(n, "constraint")),
        note: reader.optional(&fields, "note", |r, n| r.string(n, "note")),
    })
}

fn read_return(reader: &mut Reader<'_>, contract: &Fields<'_>) -> Vec<RawOutput> {
    let Some(node) = reader.required(contract, "return", "the contract") else {
        return Vec::new();
    };
    let Some(fields) = reader.mapping(node, "return", &["outputs"]) else {
        return Vec::new();
    };
    let Some(outputs) = reader.required(&fields, "outputs", "return") else {
        return Vec::new();
    };
    let items = reader
        .sequence(outputs, "return.outputs")
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|item| read_output(reader, item))
        .collect()
}

const OUTPUT_FIELDS: &[&str] = &[
    "name",
    "dtype_rule",
    "shape_rule",
    "layout_guarantee",
    "aliasing",
];

fn read_output(reader: &mut Reader<'_>, node: &Node) -> Option<RawOutput> {
    let fields = reader.mapping(node, "an output", OUTPUT_FIELDS)?;
    let name = reader
        .required(&fields, "name", "an output")
        .and_then(|n| reader.string(n, "name"))?;
    Some(RawOutput {
        span: reader.file_span(&node.span),
        name,
        dtype_rule: reader.optional(&fields, "dtype_rule", |r, n| r.string(n, "dtype_rule")),
        shape_rule: reader.optional(&fields, "shape_rule", |r, n| r.string(n, "shape_rule")),
        layout_guarantee: reader.optional(&fields, "layout_guarantee", |r, n| {
            r.one_of(n, "layout guarantee", &["contiguous", "any"])
        }),
        aliasing: reader.optional(&fields, "aliasing", |r, n| {
            r.one_of(n, "aliasing", &["none", "may_alias_input"])
        }),
    })
}

const CAPS_FIELDS: &[&str] = &[
    "awkward_layout_strategy",
    "fast_paths",
    "paths",
    "in_place",
    "alignment_bytes",
    "access_granularity_bits",
];

fn read_caps(reader: &mut Reader<'_>, node: &Node) -> Option<RawCaps> {
    let fields = reader.mapping(node, "caps", CAPS_FIELDS)?;
    let fast_paths = match fields.get("fast_paths").filter(|n| n.value != Value::Null) {
        Some(list) => reader
            .sequence(list, "fast_paths")
            .unwrap_or_default()
            .iter()
            .filter_map(|item| read_fast_path(reader, item))
            .collect(),
        None => Vec::new(),
    };
    let paths = match fields.get("paths").filter(|n| n.value != Value::Null) {
        Some(list) => reader
            .sequence(list, "paths")
            .unwrap_or_default()
            .iter()
            .filter_map(|item| read_path(reader, item))
            .collect(),
        None => Vec::new(),
    };
    Some(RawCaps {
        awkward_layout_strategy: reader.optional(&fields, "awkward_layout_strategy", |r, n| {
            r.one_of(
                n,
                "awkward layout strategy",
                &["requires_contiguous", "handles_strides"],
            )
        }),
        fast_paths,
        paths,
        in_place: reader.optional(&fields, "in_place", |r, n| r.boolean(n, "in_place")),
        alignment_bytes: reader.optional(&fields, "alignment_bytes", |r, n| {
            r.unsigned(n, "alignment_bytes")
        }),
        access_granularity_bits: reader.optional(&fields, "access_granularity_bits", |r, n| {
            r.unsigned(n, "access_granularity_bits")
        }),
    })
}

/// A `caps.paths` entry: a path name, or `{name, dtypes, levels, note}`.
fn read_path(reader: &mut Reader<'_>, node: &Node) -> Option<RawPath> {
    if let Value::Str(_) = node.value {
        return Some(RawPath {
            name: reader.string(node, "a path")?,
            dtypes: Vec::new(),
            levels: Vec::new(),
            note: None,
        });
    }
    let fields = reader.mapping(node, "a path", &["name", "dtypes", "levels", "note"])?;
    let name = reader
        .required(&fields, "name", "a path")
        .and_then(|n| reader.string(n, "name"))?;
    Some(RawPath {
        name,
        dtypes: fields
            .get("dtypes")
            .map(|list| read_dtypes(reader, list))
            .unwrap_or_default(),
        levels: fields
            .get("levels")
            .and_then(|list| reader.sequence(list, "levels"))
            .unwrap_or_default()
            .iter()
            .filter_map(|level| reader.string(level, "an instruction-set level"))
            .collect(),
        note: reader.optional(&fields, "note", |r, n| r.string(n, "note")),
    })
}

fn read_fast_path(reader: &mut Reader<'_>, node: &Node) -> Option<RawFastPath> {
    let fields = reader.mapping(node, "a fast path", &["when", "note"])?;
    let when = reader
        .required(&fields, "when", "a fast path")
        .and_then(|n| reader.expression(n, "when"))?;
    Some(RawFastPath {
        when,
        note: reader.optional(&fields, "note", |r, n| r.string(n, "note")),
    })
}

const COST_FIELDS: &[&str] = &[
    "provenance",
    "class",
    "flops",
    "bytes_moved",
    "overhead_ns",
    "memory",
];

fn read_cost(reader: &mut Reader<'_>, node: &Node) -> Option<RawCost> {
    let fields = reader.mapping(node, "cost", COST_FIELDS)?;
    Some(RawCost {
        provenance: reader.optional(&fields, "provenance", |r, n| {
            r.one_of(
                n,
                "cost provenance",
                &["judge_measured", "authored", "measured"],
            )
        }),
        class: reader.optional(&fields, "class", |r, n| r.string(n, "class")),
        flops: reader.nullable(&fields, "flops", |r, n| r.expression(n, "flops")),
        bytes_moved: reader.nullable(&fields, "bytes_moved", |r, n| {
            r.expression(n, "bytes_moved")
        }),
        overhead_ns: reader.nullable(&fields, "overhead_ns", |r, n| {
            r.expression(n, "overhead_ns")
        }),
        memory: reader.optional(&fields, "memory", read_memory),
    })
}

fn read_memory(reader: &mut Reader<'_>, node: &Node) -> Option<RawMemory> {
    let fields = reader.mapping(
        node,
        "memory",
        &["device_bytes", "host_bytes", "disk_bytes"],
    )?;
    Some(RawMemory {
        device_bytes: reader.nullable(&fields, "device_bytes", |r, n| {
            r.expression(n, "device_bytes")
        }),
        host_bytes: reader.nullable(&fields, "host_bytes", |r, n| r.expression(n, "host_bytes")),
        disk_bytes: reader.nullable(&fields, "disk_bytes", |r, n| r.expression(n, "disk_bytes")),
    })
}

const PRECISION_FIELDS: &[&str] = &[
    "bit_stable_on_same_hardware",
    "max_ulp",
    "max_relative",
    "max_absolute",
    "audited",
    "notes",
    "order",
    "nan",
    "nan_bits",
    "overflow",
    "independent_of",
];

fn read_precision(reader: &mut Reader<'_>, node: &Node) -> Option<RawPrecision> {
    let fields = reader.mapping(node, "precision", PRECISION_FIELDS)?;
    Some(RawPrecision {
        bit_stable_on_same_hardware: reader.optional(
            &fields,
            "bit_stable_on_same_hardware",
            |r, n| r.boolean(n, "bit_stable_on_same_hardware"),
        ),
        max_ulp: reader.nullable(&fields, "max_ulp", |r, n| r.unsigned(n, "max_ulp")),
        max_relative: reader.nullable(&fields, "max_relative", |r, n| r.number(n, "max_relative")),
        max_absolute: reader.nullable(&fields, "max_absolute", |r, n| r.number(n, "max_absolute")),
        audited: reader.optional(&fields, "audited", |r, n| r.boolean(n, "audited")),
        notes: reader.optional(&fields, "notes", |r, n| r.string(n, "notes")),
        order: reader.optional(&fields, "order", |r, n| {
            r.one_of(n, "precision.order", &["as_written", "naive_nested"])
        }),
        nan: reader.optional(&fields, "nan", |r, n| {
            r.one_of(n, "precision.nan", &["propagate", "ignore"])
        }),
        independent_of: fields
            .get("independent_of")
            .map(|list| {
                reader
                    .sequence(list, "independent_of")
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|item| reader.string(item, "an op-param name"))
                    .collect()
            })
            .unwrap_or_default(),
        overflow: reader.optional(&fields, "overflow", |r, n| {
            r.one_of(n, "precision.overflow", &["wrap", "saturate"])
        }),
        nan_bits: reader.optional(&fields, "nan_bits", |r, n| {
            r.one_of(
                n,
                "precision.nan_bits",
                &["canonical", "propagate", "either", "preserve", "any"],
            )
        }),
    })
}
