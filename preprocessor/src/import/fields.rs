//! A contract's `op_params.fields` compared with the fields an entry point or carrier really
//! has: names, kinds and an enumeration's values (FKC0303), and a kind that is none.

use crate::contract::raw::{RawContract, RawParamField};
use crate::diag::{Code, Diagnostic, did_you_mean};
use crate::source::SourceFile;
use fkc_provider::{FieldInfo, ParamKind};
use std::sync::Arc;

/// The declared op-param fields must equal the real ones, name for name and kind for kind (an
/// enumeration's values too), and only an enumeration has `values`.
pub(super) fn compare_fields(
    contract: &RawContract,
    real: &[FieldInfo],
    owner: &str,
    source: &Arc<SourceFile>,
) -> Vec<Diagnostic> {
    let declared: &[RawParamField] = contract.op_params.as_ref().map_or(&[], |p| &p.fields);
    let anchor = contract
        .op_params
        .as_ref()
        .map_or_else(|| contract.kernel.span.clone(), |p| p.span.clone());
    let mut problems = Vec::new();
    for field in declared {
        problems.extend(values_without_enum(field, source));
        match real.iter().find(|r| r.name == field.name.value) {
            None => problems.push(extra_field(field, real, owner, source)),
            Some(desc) => problems.extend(kind_mismatch(field, desc, owner, source)),
        }
    }
    for desc in real {
        if !declared.iter().any(|f| f.name.value == desc.name) {
            problems.push(
                Diagnostic::error(
                    Code::OpParamsMismatch,
                    source,
                    anchor.clone(),
                    format!("op_params lacks `{}`, a field of {owner}", desc.name),
                )
                .with_help(format!(
                    "add `{}: {{ kind: \"{}\" }}` under op_params.fields",
                    desc.name,
                    desc.kind.as_str()
                )),
            );
        }
    }
    problems
}

fn extra_field(
    field: &RawParamField,
    real: &[FieldInfo],
    owner: &str,
    source: &Arc<SourceFile>,
) -> Diagnostic {
    let names: Vec<&str> = real.iter().map(|r| r.name.as_str()).collect();
    let mut diagnostic = Diagnostic::error(
        Code::OpParamsMismatch,
        source,
        field.name.span.clone(),
        format!("`{}` is not a field of {owner}", field.name.value),
    )
    .with_label("no such field");
    diagnostic.help.push(
        match did_you_mean(&field.name.value, names.iter().copied()) {
            Some(name) => format!("did you mean `{name}`?"),
            None => format!("the fields are: {}", names.join(", ")),
        },
    );
    diagnostic
}

/// `values` written on a field that is not an enumeration.
fn values_without_enum(field: &RawParamField, source: &Arc<SourceFile>) -> Option<Diagnostic> {
    let first = field.values.first()?;
    if ParamKind::parse(&field.kind.value) == Some(ParamKind::Enum) {
        return None;
    }
    Some(
        Diagnostic::error(
            Code::OpParamsMismatch,
            source,
            first.span.clone(),
            format!(
                "`{}` is `{}`: only an enumeration has `values`",
                field.name.value, field.kind.value
            ),
        )
        .with_help("write `kind: enum`, or remove `values`"),
    )
}

fn kind_mismatch(
    field: &RawParamField,
    desc: &FieldInfo,
    owner: &str,
    source: &Arc<SourceFile>,
) -> Option<Diagnostic> {
    match ParamKind::parse(&field.kind.value) {
        Some(ParamKind::Enum) if desc.kind == ParamKind::Enum => {
            enum_values_mismatch(field, desc, owner, source)
        }
        Some(kind) if kind == desc.kind => None,
        Some(kind) => Some(
            Diagnostic::error(
                Code::OpParamsMismatch,
                source,
                field.kind.span.clone(),
                format!(
                    "`{}` is `{}` in {owner}, not `{}`",
                    field.name.value,
                    desc.kind.as_str(),
                    kind.as_str()
                ),
            )
            .with_help(format!("write `kind: \"{}\"`", desc.kind.as_str())),
        ),
        None => Some(
            Diagnostic::error(
                Code::InvalidValue,
                source,
                field.kind.span.clone(),
                format!("`{}` is not a parameter kind", field.kind.value),
            )
            .with_label(format!("expected one of {}", kind_list()))
            .with_help(format!("this field is `{}` in {owner}", desc.kind.as_str())),
        ),
    }
}

/// Every parameter kind's spelling, for messages: `` `usize`, `(usize, usize)`, … ``.
pub(crate) fn kind_list() -> String {
    let kinds: Vec<String> = ParamKind::ALL
        .iter()
        .map(|k| format!("`{}`", k.as_str()))
        .collect();
    kinds.join(", ")
}

/// An enumeration field whose `values` are not the entry point's, in the same order.
fn enum_values_mismatch(
    field: &RawParamField,
    desc: &FieldInfo,
    owner: &str,
    source: &Arc<SourceFile>,
) -> Option<Diagnostic> {
    let written: Vec<&str> = field.values.iter().map(|v| v.value.as_str()).collect();
    if written == desc.values {
        return None;
    }
    let span = match field.values.first() {
        Some(first) => first.span.start..field.values.last().map_or(first.span.end, |l| l.span.end),
        None => field.kind.span.clone(),
    };
    let real = desc.values.join(", ");
    Some(
        Diagnostic::error(
            Code::OpParamsMismatch,
            source,
            span,
            format!(
                "`{}` takes the values [{real}] in {owner}, not [{}]",
                field.name.value,
                written.join(", ")
            ),
        )
        .with_help(format!("write `values: [{real}]`")),
    )
}
