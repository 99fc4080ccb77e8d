//! The importer: resolves a contract against its provider's link registry, as the seed's prose
//! describes. A registrable contract needs a real `OpKind`, a real `OpParams` variant whose
//! fields and kinds equal the contract's, and one entry point per declared dtype; contract and
//! provider agree on backend, kernel source and crate. A `registrable: false` contract is
//! describe-only: its fields are checked against the kernel's own parameter description and the
//! importer's refusal to register it is shown as a note.

use crate::contract::front_matter::Provider as ProviderSpec;
use crate::contract::raw::{EntryPointSpec, RawContract};
use crate::contract::schema::Located;
use crate::diag::{Code, Diagnostic, did_you_mean};
use crate::providers::Provider;
use crate::source::SourceFile;
use fkc_provider::{DType, EntryPointInfo, VariantInfo};
use std::sync::Arc;

mod fields;
mod provider_lookup;

use fields::compare_fields;
pub use provider_lookup::check_provider;

/// One entry point as the importer resolved it.
#[derive(Debug, Clone)]
pub struct ResolvedEntryPoint {
    pub dtype: DType,
    pub symbol: String,
    pub kernel: Option<EntryPointInfo>,
}

/// What the importer found.
#[derive(Debug, Clone, Default)]
pub struct Import {
    pub registrable: bool,
    pub op_kind: Option<String>,
    pub variant: Option<VariantInfo>,
    pub entry_points: Vec<ResolvedEntryPoint>,
}

/// Imports one contract.
pub fn import(
    contract: &RawContract,
    spec: Option<&ProviderSpec>,
    provider: Option<&Provider>,
    source: &Arc<SourceFile>,
) -> (Import, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let registrable = contract.registrable.as_ref().is_none_or(|r| r.value);
    if let Some(spec) = spec {
        diagnostics.extend(provider_agreement(contract, spec, source));
    }
    let registry = provider;
    let mut import = Import {
        registrable,
        ..Import::default()
    };
    let Some(registry) = registry else {
        return (import, diagnostics);
    };
    import.entry_points = entry_points(contract, registry, source, &mut diagnostics);
    let carrier = carrier(contract, registry, source);
    if registrable {
        diagnostics.extend(carrier.problems.iter().cloned());
        if let Some(variant) = &carrier.variant {
            diagnostics.extend(compare_fields(
                contract,
                &variant.fields,
                &variant.variant,
                source,
            ));
        }
    } else {
        diagnostics.push(describe_only_note(contract, &carrier, source));
        let kernel_params = import
            .entry_points
            .iter()
            .find_map(|e| e.kernel.as_ref())
            .map(|k| k.params.clone());
        if let Some(params) = kernel_params {
            diagnostics.extend(compare_fields(
                contract,
                &params,
                "the kernel's parameters",
                source,
            ));
        }
    }
    import.op_kind = carrier.op_kind;
    import.variant = carrier.variant;
    (import, diagnostics)
}

fn provider_agreement(
    contract: &RawContract,
    provider: &ProviderSpec,
    source: &Arc<SourceFile>,
) -> Vec<Diagnostic> {
    let pairs = [
        ("backend", &contract.backend, &provider.backend),
        (
            "kernel_source",
            &contract.kernel_source,
            &provider.kernel_source,
        ),
    ];
    pairs
        .into_iter()
        .filter_map(|(field, ours, theirs)| {
            let (ours, theirs) = (ours.as_ref()?, theirs.as_ref()?);
            (ours.value != theirs.value).then(|| {
                Diagnostic::error(
                    Code::ProviderMismatch,
                    source,
                    ours.span.clone(),
                    format!(
                        "`{field}: {}` disagrees with the provider's `{field}: {}`",
                        ours.value, theirs.value
                    ),
                )
                .with_secondary(theirs.span.clone(), "the provider says this")
                .with_help(format!(
                    "write `{field}: {}` or move the contract to its own provider's chapter",
                    theirs.value
                ))
            })
        })
        .collect()
}

/// The dtypes the contract declares: every input's dtypes, in the canonical order.
pub fn declared_dtypes(contract: &RawContract) -> Vec<DType> {
    DType::ALL
        .into_iter()
        .filter(|dtype| {
            contract
                .inputs
                .iter()
                .any(|input| input.dtypes.iter().any(|d| d.value == *dtype))
        })
        .collect()
}

/// The symbol for `dtype` derived from a template symbol ending in some dtype's suffix.
pub fn symbol_for(template: &str, dtype: DType) -> Option<String> {
    DType::ALL.into_iter().find_map(|known| {
        template
            .strip_suffix(known.suffix())
            .filter(|stem| stem.ends_with('_'))
            .map(|stem| format!("{stem}{}", dtype.suffix()))
    })
}

fn entry_points(
    contract: &RawContract,
    registry: &Provider,
    source: &Arc<SourceFile>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<ResolvedEntryPoint> {
    let Some(spec) = &contract.entry_point else {
        return Vec::new();
    };
    let mut resolved = Vec::new();
    for dtype in declared_dtypes(contract) {
        let symbol = match &spec.value {
            EntryPointSpec::Template(template) => symbol_for(template, dtype),
            EntryPointSpec::PerDtype(symbols) => symbols
                .iter()
                .find(|(d, _)| d.value == dtype)
                .map(|(_, symbol)| symbol.value.clone()),
        };
        let Some(symbol) = symbol else {
            diagnostics.push(underivable_symbol(spec, dtype, source));
            continue;
        };
        let crate_name = &registry.hello().crate_name;
        if !symbol.starts_with(&format!("{crate_name}::")) {
            diagnostics.push(
                Diagnostic::error(
                    Code::ProviderMismatch,
                    source,
                    spec.span.clone(),
                    format!("entry point `{symbol}` is not in the provider's crate `{crate_name}`"),
                )
                .with_help(format!(
                    "name a symbol of `{}` (the provider's link registry)",
                    registry.hello().registry
                )),
            );
            continue;
        }
        let kernel = registry.description().entry_point(&symbol).cloned();
        match &kernel {
            None => diagnostics.push(unresolved_symbol(
                spec, dtype, &symbol, registry, contract, source,
            )),
            Some(found) => diagnostics.extend(wrong_dtype(spec, dtype, found, source)),
        }
        resolved.push(ResolvedEntryPoint {
            dtype,
            symbol,
            kernel,
        });
    }
    resolved
}

/// A symbol must run the dtype it stands for.
fn wrong_dtype(
    spec: &Located<EntryPointSpec>,
    dtype: DType,
    found: &EntryPointInfo,
    source: &Arc<SourceFile>,
) -> Option<Diagnostic> {
    if found.dtype == dtype {
        return None;
    }
    let message = format!(
        "entry point `{}` runs {}, but stands for {} here",
        found.symbol,
        found.dtype.name(),
        dtype.name()
    );
    Some(
        Diagnostic::error(
            Code::EntryPointUnresolved,
            source,
            spec.span.clone(),
            message,
        )
        .with_label("wrong symbol for this contract")
        .with_help("give each dtype the kernel's symbol for that dtype"),
    )
}

fn underivable_symbol(
    spec: &Located<EntryPointSpec>,
    dtype: DType,
    source: &Arc<SourceFile>,
) -> Diagnostic {
    let suffixes: Vec<String> = DType::ALL
        .iter()
        .map(|d| format!("_{}", d.suffix()))
        .collect();
    Diagnostic::error(
        Code::EntryPointUnresolved,
        source,
        spec.span.clone(),
        format!("no entry point is named for dtype {}", dtype.name()),
    )
    .with_label("no symbol for this dtype")
    .with_help(format!(
        "end the symbol with a dtype suffix ({}) so one symbol per dtype can be derived, or map each dtype to its symbol",
        suffixes.join(", ")
    ))
}

fn unresolved_symbol(
    spec: &Located<EntryPointSpec>,
    dtype: DType,
    symbol: &str,
    registry: &Provider,
    contract: &RawContract,
    source: &Arc<SourceFile>,
) -> Diagnostic {
    let entry_points = &registry.description().entry_points;
    let shipped: Vec<&str> = entry_points
        .iter()
        .filter(|entry| entry.kernel == contract.kernel.value)
        .map(|entry| entry.symbol.as_str())
        .collect();
    let mut diagnostic = Diagnostic::error(
        Code::EntryPointUnresolved,
        source,
        spec.span.clone(),
        format!(
            "entry point `{symbol}` for {} is not in `{}`",
            dtype.name(),
            registry.hello().registry
        ),
    )
    .with_label(format!("no symbol for {}", dtype.name()));
    if shipped.is_empty() {
        let all = entry_points.iter().map(|entry| entry.symbol.as_str());
        if let Some(close) = did_you_mean(symbol, all) {
            diagnostic.help.push(format!("did you mean `{close}`?"));
        }
    } else {
        diagnostic
            .notes
            .push(format!("the registry ships: {}", shipped.join(", ")));
        diagnostic.help.push(format!(
            "remove {} from the declared dtypes, or add its entry point to the backend",
            dtype.name()
        ));
    }
    diagnostic
}

/// The dispatch carrier a contract names, with the problems a registration would hit.
#[derive(Debug)]
struct Carrier {
    op_kind: Option<String>,
    variant: Option<VariantInfo>,
    problems: Vec<Diagnostic>,
}

fn carrier(contract: &RawContract, registry: &Provider, source: &Arc<SourceFile>) -> Carrier {
    let mut problems = Vec::new();
    let kinds = &registry.description().op_kinds;
    let op_kind = match &contract.op_kind {
        Some(name) => {
            let kind = kinds.iter().find(|k| **k == name.value).cloned();
            if kind.is_none() {
                problems.push(unknown_op_kind(name, kinds, source));
            }
            kind
        }
        None => {
            problems.push(missing_carrier(contract, "op_kind", source));
            None
        }
    };
    let variant_name = contract.op_params.as_ref().and_then(|p| p.variant.as_ref());
    let variant = match variant_name {
        Some(name) => {
            let variant = registry.description().variant(&name.value).cloned();
            if variant.is_none() {
                problems.push(bad_variant(name, registry, source));
            }
            variant
        }
        None => {
            problems.push(missing_carrier(contract, "op_params.variant", source));
            None
        }
    };
    if let (Some(kind), Some(variant), Some(name)) = (&op_kind, &variant, variant_name)
        && variant.op_kind.as_ref() != Some(kind)
    {
        problems.push(
            Diagnostic::error(
                Code::OpKindVariantMismatch,
                source,
                name.span.clone(),
                format!(
                    "`OpParams::{}` is not the carrier of `OpKind::{}`",
                    variant.variant, kind
                ),
            )
            .with_help(format!(
                "use the variant of OpKind::{kind} or change op_kind"
            )),
        );
    }
    Carrier {
        op_kind,
        variant,
        problems,
    }
}

fn unknown_op_kind(
    name: &Located<String>,
    kinds: &[String],
    source: &Arc<SourceFile>,
) -> Diagnostic {
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    let mut diagnostic = Diagnostic::error(
        Code::UnknownOpKind,
        source,
        name.span.clone(),
        format!("unknown OpKind `{}`", name.value),
    )
    .with_label("not a variant of OpKind");
    diagnostic
        .help
        .push(match did_you_mean(&name.value, kinds.iter().copied()) {
            Some(kind) => format!("did you mean `{kind}`?"),
            None => format!(
                "the OpKinds are {}; a kernel without a dispatch carrier is `registrable: false`",
                kinds.join(", ")
            ),
        });
    diagnostic
}

fn bad_variant(
    name: &Located<String>,
    registry: &Provider,
    source: &Arc<SourceFile>,
) -> Diagnostic {
    let variants: Vec<&str> = registry
        .description()
        .variants
        .iter()
        .map(|v| v.variant.as_str())
        .collect();
    let mut diagnostic = Diagnostic::error(
        Code::BadOpParamsVariant,
        source,
        name.span.clone(),
        format!(
            "BadOpParamsVariant: `{}` is not an OpParams variant",
            name.value
        ),
    )
    .with_label("not a variant of OpParams");
    diagnostic.help.push(match did_you_mean(&name.value, variants.iter().copied()) {
        Some(variant) => format!("did you mean `{variant}`?"),
        None => format!(
            "the OpParams variants are {}; mark the contract `registrable: false` until its carrier lands",
            variants.join(", ")
        ),
    });
    diagnostic
}

fn missing_carrier(contract: &RawContract, field: &str, source: &Arc<SourceFile>) -> Diagnostic {
    Diagnostic::error(
        Code::NotRegistrableWithoutCarrier,
        source,
        contract.kernel.span.clone(),
        format!(
            "registrable contract `{}` has no `{field}`",
            contract.kernel.value
        ),
    )
    .with_help(format!(
        "declare `{field}`, or add `registrable: false` to document the kernel as describe-only"
    ))
}

fn describe_only_note(
    contract: &RawContract,
    carrier: &Carrier,
    source: &Arc<SourceFile>,
) -> Diagnostic {
    let reasons: Vec<String> = carrier.problems.iter().map(|p| p.message.clone()).collect();
    let message = if reasons.is_empty() {
        "describe-only: marked `registrable: false`, so the importer does not register it"
            .to_owned()
    } else {
        format!(
            "describe-only: the importer refuses to register it ({})",
            reasons.join("; ")
        )
    };
    let span = contract
        .registrable
        .as_ref()
        .map_or_else(|| contract.kernel.span.clone(), |r| r.span.clone());
    Diagnostic::note(Code::DescribeOnly, source, span, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_derived_per_dtype() {
        let template = "fuel_reference_backend::ops::conv2d_f32";
        assert_eq!(
            symbol_for(template, DType::BF16).as_deref(),
            Some("fuel_reference_backend::ops::conv2d_bf16")
        );
        assert_eq!(
            symbol_for("fuel_reference_backend::ops::max_pool2d_bf16", DType::F64).as_deref(),
            Some("fuel_reference_backend::ops::max_pool2d_f64")
        );
        assert_eq!(symbol_for("no_suffix", DType::F32), None);
    }
}
