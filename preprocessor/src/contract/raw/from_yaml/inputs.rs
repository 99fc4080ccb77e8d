//! Reading `accept.inputs`: each input's name, dtypes (or its own `dtype`), `values`, layout
//! flags, `rank` (one, a range, or `any`), shape constraint and optionality.

use super::super::{
    ANY_RANK_CHECKED, LayoutRequirement, MAX_RANK, Rank, RawInput, RawLayout, RawValues,
};
use super::DTYPE_WORDS;
use crate::contract::schema::{Fields, Located, Reader};
use crate::diag::Code;
use crate::yaml::{Node, Value};
use fkc_provider::DType;

pub(super) fn read_accept(reader: &mut Reader<'_>, contract: &Fields<'_>) -> Vec<RawInput> {
    let Some(accept) = reader.required(contract, "accept", "the contract") else {
        return Vec::new();
    };
    let Some(fields) = reader.mapping(accept, "accept", &["inputs"]) else {
        return Vec::new();
    };
    let Some(inputs) = reader.required(&fields, "inputs", "accept") else {
        return Vec::new();
    };
    let items = reader.sequence(inputs, "accept.inputs").unwrap_or_default();
    items
        .iter()
        .filter_map(|item| read_input(reader, item))
        .collect()
}

const INPUT_FIELDS: &[&str] = &[
    "name",
    "dtypes",
    "dtype",
    "values",
    "layout",
    "rank",
    "shape_constraint",
    "optional",
];

fn read_input(reader: &mut Reader<'_>, node: &Node) -> Option<RawInput> {
    let fields = reader.mapping(node, "an input", INPUT_FIELDS)?;
    let name = reader
        .required(&fields, "name", "an input")
        .and_then(|n| reader.string(n, "name"))?;
    let dtype = reader.optional(&fields, "dtype", |r, n| r.word(n, "dtype", DTYPE_WORDS));
    let (dtypes, dtypes_span) = match (fields.get("dtypes"), &dtype) {
        (Some(list), None) => (read_dtypes(reader, list), reader.file_span(&list.span)),
        (Some(list), Some(_)) => {
            reader
                .error_at(
                    Code::InvalidValue,
                    list,
                    "an input has `dtypes` (the kernel's) or `dtype` (its own), not both".to_owned(),
                )
                .help
                .push("keep `dtypes: [...]` for an input in the kernel's dtype, `dtype: I64` for one whose dtype never changes".to_owned());
            (Vec::new(), name.span.clone())
        }
        (None, Some(own)) => (Vec::new(), own.span.clone()),
        (None, None) => {
            reader.required(&fields, "dtypes", "an input");
            (Vec::new(), name.span.clone())
        }
    };
    Some(RawInput {
        span: reader.file_span(&node.span),
        name,
        dtypes,
        dtypes_span,
        dtype,
        values: reader.optional(&fields, "values", read_values),
        layout: reader.optional(&fields, "layout", read_layout),
        rank: reader.optional(&fields, "rank", read_rank),
        shape_constraint: reader.optional(&fields, "shape_constraint", |r, n| {
            r.expression(n, "shape_constraint")
        }),
        optional: reader.optional(&fields, "optional", |r, n| r.boolean(n, "optional")),
    })
}

fn read_values(reader: &mut Reader<'_>, node: &Node) -> Option<RawValues> {
    let fields = reader.mapping(node, "values", &["min", "max"])?;
    let min = reader
        .required(&fields, "min", "values")
        .and_then(|n| reader.expression(n, "values.min"))?;
    let max = reader
        .required(&fields, "max", "values")
        .and_then(|n| reader.expression(n, "values.max"))?;
    Some(RawValues {
        span: reader.file_span(&node.span),
        min,
        max,
    })
}

fn read_rank(reader: &mut Reader<'_>, node: &Node) -> Option<Located<Rank>> {
    match &node.value {
        Value::Str(word) if word == "any" => Some(reader.located(
            node,
            Rank {
                min: 0,
                max: ANY_RANK_CHECKED,
                any: true,
            },
        )),
        Value::Map(_) => {
            let fields = reader.mapping(node, "rank", &["min", "max"])?;
            let min = reader.required(&fields, "min", "rank");
            let min = min.and_then(|n| one_rank(reader, n))?;
            let max = reader.required(&fields, "max", "rank");
            let max = max.and_then(|n| one_rank(reader, n))?;
            if min > max {
                reader
                    .error_at(
                        Code::InvalidValue,
                        node,
                        format!("the rank range {min} to {max} is empty"),
                    )
                    .help
                    .push("write `min` at most `max`".to_owned());
                return None;
            }
            let any = false;
            Some(reader.located(node, Rank { min, max, any }))
        }
        Value::Str(_) => {
            let expected = "a number, `any` or `{ min: …, max: … }`";
            reader.wrong_type(node, "rank", expected);
            None
        }
        _ => one_rank(reader, node).map(|rank| reader.located(node, Rank::fixed(rank))),
    }
}

/// One rank: a number from 0 to [`MAX_RANK`].
fn one_rank(reader: &mut Reader<'_>, node: &Node) -> Option<usize> {
    let rank = reader.unsigned(node, "rank")?;
    match usize::try_from(rank.value) {
        Ok(rank) if rank <= MAX_RANK => Some(rank),
        _ => {
            reader
                .error_at(
                    Code::InvalidValue,
                    node,
                    format!("rank {} is above the format's limit of {MAX_RANK}", rank.value),
                )
                .help
                .push(format!("operands of the FKC format have rank 0 to {MAX_RANK}"));
            None
        }
    }
}

pub(super) fn read_dtypes(reader: &mut Reader<'_>, node: &Node) -> Vec<Located<DType>> {
    let items = reader.sequence(node, "dtypes").unwrap_or_default();
    items
        .iter()
        .filter_map(|item| reader.word(item, "dtype", DTYPE_WORDS))
        .collect()
}

fn read_layout(reader: &mut Reader<'_>, node: &Node) -> Option<RawLayout> {
    let fields = reader.mapping(node, "layout", RawLayout::FIELDS)?;
    let mut flag = |key: &str| {
        reader.optional(&fields, key, |r, n| {
            r.word(n, "layout requirement", LayoutRequirement::WORDS)
        })
    };
    Some(RawLayout {
        contiguous: flag("contiguous"),
        strided: flag("strided"),
        broadcast_stride0: flag("broadcast_stride0"),
        start_offset: flag("start_offset"),
        reverse_strides: flag("reverse_strides"),
        span: reader.file_span(&node.span),
    })
}
