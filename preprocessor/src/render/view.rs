//! View models: plain, serialisable descriptions of what a page shows, built from contracts.
//! Templates only lay these out; every decision about wording lives here, and every string is
//! escaped by tera on output.

use crate::contract::front_matter::{FrontMatter, Provider};
use crate::contract::raw::{RawContract, RawCost, RawInput, RawOutput};
use crate::contract::schema::{Located, Nullable};
use serde::Serialize;

/// One row of a field table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub field: String,
    pub value: String,
    /// Show the value as code (expressions, symbols, identifiers).
    pub code: bool,
    /// The author's YAML comment, shown as an annotation.
    pub note: Option<String>,
}

impl Row {
    fn text(field: &str, value: impl Into<String>, note: Option<String>) -> Row {
        Row {
            field: field.to_owned(),
            value: value.into(),
            code: false,
            note,
        }
    }

    fn code(field: &str, value: impl Into<String>, note: Option<String>) -> Row {
        Row {
            code: true,
            ..Row::text(field, value, note)
        }
    }
}

/// A small coloured label in a contract's header.
#[derive(Debug, Clone, Serialize)]
pub struct Badge {
    pub label: String,
    /// A CSS modifier: `ok`, `info`, `warn`.
    pub kind: &'static str,
}

/// One operand of `accept.inputs`.
#[derive(Debug, Clone, Serialize)]
pub struct InputView {
    pub name: String,
    pub dtypes: Vec<String>,
    pub rank: String,
    pub axes: Option<String>,
    /// One line per requirement: "required: contiguous", "rejected: strided, …".
    pub layout: Vec<String>,
    pub shape_constraint: Option<String>,
    pub constraint_note: Option<String>,
    /// `min ≤ NAME ≤ max` for an input with `values`.
    pub values: Option<String>,
    pub optional: bool,
}

/// One declared op-param field.
#[derive(Debug, Clone, Serialize)]
pub struct ParamView {
    pub name: String,
    pub kind: String,
    pub constraint: Option<String>,
    pub note: Option<String>,
}

/// One output of `return.outputs`.
#[derive(Debug, Clone, Serialize)]
pub struct OutputView {
    pub name: String,
    pub rows: Vec<Row>,
}

/// One `caps.fast_paths` entry.
#[derive(Debug, Clone, Serialize)]
pub struct FastPathView {
    pub when: String,
    pub note: Option<String>,
}

/// One resolved entry point.
#[derive(Debug, Clone, Serialize)]
pub struct EntryPointView {
    pub dtype: String,
    pub symbol: String,
    pub resolved: bool,
}

/// A note from the importer shown under the header (for example a describe-only refusal).
#[derive(Debug, Clone, Serialize)]
pub struct ImportNote {
    pub code: String,
    pub message: String,
}

/// Everything a contract's section shows.
#[derive(Debug, Clone, Serialize)]
pub struct ContractView {
    pub kernel: String,
    pub anchor: String,
    pub blurb: Option<String>,
    pub badges: Vec<Badge>,
    pub identity: Vec<Row>,
    pub entry_points: Vec<EntryPointView>,
    pub import_notes: Vec<ImportNote>,
    /// What the behavioural gate ran on this contract.
    pub evidence: Vec<Row>,
    /// The claims no check could decide (claim, why), shown apart from what ran.
    pub unchecked: Vec<Row>,
    /// The worked example as inline SVG (already escaped), and its caption.
    pub figure: Option<String>,
    pub figure_caption: Option<String>,
    pub inputs: Vec<InputView>,
    pub op_params_variant: Option<Row>,
    pub op_params: Vec<ParamView>,
    pub outputs: Vec<OutputView>,
    pub caps: Vec<Row>,
    pub fast_paths: Vec<FastPathView>,
    pub cost: Vec<Row>,
    pub memory: Vec<Row>,
    pub precision: Vec<Row>,
    pub source: String,
    pub source_location: String,
    /// The worked example as the `figure.html` template lays it out (grids, legend, trace,
    /// cost on the example, drift plots).
    pub worked: Option<super::svg::FigureView>,
    /// What the kernel computes: the semantics the gate checked it against, highlighted.
    pub semantics: Option<super::pseudo::SemanticsView>,
    /// What verified it: the tool's version and the gate's settings (no timestamp, so two
    /// builds stay byte-identical).
    pub verified_with: String,
    /// The Judge's measurements of the kernel, from the calibration file (shown before the
    /// contract's source), when it measured this contract.
    pub judge: Option<super::judge::JudgeView>,
}

/// The provider card rendered in place of the front matter.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderView {
    pub version: String,
    pub rows: Vec<Row>,
}

/// Text for a `~` value.
pub const NOT_AUTHORED: &str = "not authored (~)";

fn note<T>(located: &Located<T>) -> Option<String> {
    located.comment.clone()
}

fn optional_code(rows: &mut Vec<Row>, field: &str, value: Option<&Located<String>>) {
    if let Some(value) = value {
        rows.push(Row::code(field, value.value.clone(), note(value)));
    }
}

fn nullable_code(rows: &mut Vec<Row>, field: &str, value: &Nullable<String>) {
    if let Some(value) = value {
        match &value.value {
            Some(text) => rows.push(Row::code(field, text.clone(), note(value))),
            None => rows.push(Row::text(field, NOT_AUTHORED, note(value))),
        }
    }
}

fn nullable_display<T: ToString>(rows: &mut Vec<Row>, field: &str, value: &Nullable<T>) {
    if let Some(value) = value {
        let text = value
            .value
            .as_ref()
            .map_or_else(|| NOT_AUTHORED.to_owned(), ToString::to_string);
        rows.push(Row::text(field, text, note(value)));
    }
}

fn optional_display<T: ToString>(rows: &mut Vec<Row>, field: &str, value: Option<&Located<T>>) {
    if let Some(value) = value {
        rows.push(Row::text(field, value.value.to_string(), note(value)));
    }
}

/// An HTML id for a kernel: lowercase letters, digits and dashes.
pub fn anchor(kernel: &str) -> String {
    let slug: String = kernel
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("fkc-{slug}")
}

/// Builds the view of one contract.
pub fn contract_view(
    contract: &RawContract,
    source: &str,
    source_location: String,
) -> ContractView {
    ContractView {
        kernel: contract.kernel.value.clone(),
        anchor: anchor(&contract.kernel.value),
        blurb: contract.blurb.as_ref().map(|b| b.value.clone()),
        badges: badges(contract),
        identity: identity(contract),
        entry_points: Vec::new(),
        import_notes: Vec::new(),
        evidence: Vec::new(),
        unchecked: Vec::new(),
        figure: None,
        figure_caption: None,
        inputs: shown_once(contract.inputs.iter().map(input_view).collect()),
        op_params_variant: contract.op_params.as_ref().and_then(|p| {
            p.variant
                .as_ref()
                .map(|v| Row::code("variant", v.value.clone(), note(v)))
        }),
        op_params: contract
            .op_params
            .iter()
            .flat_map(|p| &p.fields)
            .map(|field| ParamView {
                name: field.name.value.clone(),
                kind: field.kind.value.clone(),
                constraint: field.constraint.as_ref().map(|c| c.value.clone()),
                note: field
                    .note
                    .as_ref()
                    .map(|n| n.value.clone())
                    .or_else(|| field.name.comment.clone()),
            })
            .collect(),
        outputs: contract.outputs.iter().map(output_view).collect(),
        caps: caps_rows(contract),
        fast_paths: contract
            .caps
            .iter()
            .flat_map(|c| &c.fast_paths)
            .map(|path| FastPathView {
                when: path.when.value.clone(),
                note: path.note.as_ref().map(|n| n.value.clone()),
            })
            .collect(),
        cost: contract.cost.as_ref().map(cost_rows).unwrap_or_default(),
        memory: contract.cost.as_ref().map(memory_rows).unwrap_or_default(),
        precision: precision_rows(contract),
        source: source.to_owned(),
        source_location,
        worked: None,
        semantics: None,
        verified_with: String::new(),
        judge: None,
    }
}

fn badges(contract: &RawContract) -> Vec<Badge> {
    let registrable = contract.registrable.as_ref().is_none_or(|r| r.value);
    let mut badges = vec![if registrable {
        Badge {
            label: "registrable".to_owned(),
            kind: "ok",
        }
    } else {
        Badge {
            label: "describe-only".to_owned(),
            kind: "warn",
        }
    }];
    if let Some(backend) = &contract.backend {
        badges.push(Badge {
            label: format!("backend: {}", backend.value),
            kind: "info",
        });
    }
    if let Some(determinism) = &contract.determinism {
        badges.push(Badge {
            label: determinism.value.as_str().replace('_', " "),
            kind: "info",
        });
    }
    badges
}

fn identity(contract: &RawContract) -> Vec<Row> {
    let mut rows = vec![Row::code(
        "kernel",
        contract.kernel.value.clone(),
        note(&contract.kernel),
    )];
    optional_code(&mut rows, "op_kind", contract.op_kind.as_ref());
    optional_display(&mut rows, "registrable", contract.registrable.as_ref());
    optional_code(&mut rows, "backend", contract.backend.as_ref());
    optional_code(&mut rows, "kernel_source", contract.kernel_source.as_ref());
    if let Some(entry) = &contract.entry_point {
        let text = match &entry.value {
            crate::contract::raw::EntryPointSpec::Template(symbol) => symbol.clone(),
            crate::contract::raw::EntryPointSpec::PerDtype(symbols) => symbols
                .iter()
                .map(|(dtype, symbol)| format!("{}: {}", dtype.value.name(), symbol.value))
                .collect::<Vec<_>>()
                .join(", "),
        };
        rows.push(Row::code("entry_point", text, note(entry)));
    }
    if let Some(hash) = &contract.kernel_revision_hash {
        let text = match &hash.value {
            crate::contract::raw::RevisionHash::Auto => "auto".to_owned(),
            crate::contract::raw::RevisionHash::Authored(text) => text.clone(),
        };
        rows.push(Row::code("kernel_revision_hash", text, note(hash)));
    }
    optional_display(
        &mut rows,
        "determinism",
        contract
            .determinism
            .as_ref()
            .map(|d| d.clone().map(|d| d.as_str()))
            .as_ref(),
    );
    if let Some(oracle) = &contract.oracle {
        let fixed: Vec<String> = oracle
            .params
            .iter()
            .map(|(name, value)| format!("{} = {:?}", name.value, value.value))
            .collect();
        let text = if fixed.is_empty() {
            oracle.entry_point.value.clone()
        } else {
            format!("{} ({})", oracle.entry_point.value, fixed.join(", "))
        };
        rows.push(Row::code("oracle", text, note(&oracle.entry_point)));
    }
    rows
}

/// An input whose layout list is the same as an earlier input's says so instead of repeating it.
fn shown_once(mut inputs: Vec<InputView>) -> Vec<InputView> {
    for index in 1..inputs.len() {
        let same = inputs[..index]
            .iter()
            .find(|earlier| !earlier.layout.is_empty() && earlier.layout == inputs[index].layout)
            .map(|earlier| earlier.name.clone());
        if let Some(name) = same {
            inputs[index].layout = vec![format!("as {name}")];
        }
    }
    inputs
}

fn input_view(input: &RawInput) -> InputView {
    let layout = input.layout.as_ref().map(layout_lines).unwrap_or_default();
    InputView {
        name: input.name.value.clone(),
        dtypes: match &input.dtype {
            Some(own) => vec![format!("{} (whatever the kernel's)", own.value.name())],
            None => input
                .dtypes
                .iter()
                .map(|d| d.value.name().to_owned())
                .collect(),
        },
        values: input
            .values
            .as_ref()
            .map(|v| format!("{} ≤ {} ≤ {}", v.min.value, input.name.value, v.max.value)),
        rank: input
            .rank
            .as_ref()
            .map_or_else(|| "any".to_owned(), |r| r.value.to_string()),
        axes: input.rank.as_ref().and_then(|r| r.comment.clone()),
        layout,
        shape_constraint: input.shape_constraint.as_ref().map(|c| c.value.clone()),
        constraint_note: input
            .shape_constraint
            .as_ref()
            .and_then(|c| c.comment.clone()),
        optional: input.is_optional(),
    }
}

/// Groups layout flags by requirement, in the order required, accepted, rejected.
fn layout_lines(layout: &crate::contract::raw::RawLayout) -> Vec<String> {
    use crate::contract::raw::LayoutRequirement;
    [
        LayoutRequirement::Required,
        LayoutRequirement::Accepted,
        LayoutRequirement::Rejected,
    ]
    .into_iter()
    .filter_map(|wanted| {
        let flags: Vec<&str> = layout
            .flags()
            .into_iter()
            .filter(|(_, r)| r.is_some_and(|r| r.value == wanted))
            .map(|(flag, _)| flag)
            .collect();
        (!flags.is_empty()).then(|| format!("{}: {}", wanted.as_str(), flags.join(", ")))
    })
    .collect()
}

fn output_view(output: &RawOutput) -> OutputView {
    let mut rows = Vec::new();
    optional_code(&mut rows, "dtype_rule", output.dtype_rule.as_ref());
    optional_code(&mut rows, "shape_rule", output.shape_rule.as_ref());
    optional_code(
        &mut rows,
        "layout_guarantee",
        output.layout_guarantee.as_ref(),
    );
    optional_code(&mut rows, "aliasing", output.aliasing.as_ref());
    OutputView {
        name: output.name.value.clone(),
        rows,
    }
}

fn caps_rows(contract: &RawContract) -> Vec<Row> {
    let mut rows = Vec::new();
    if let Some(caps) = &contract.caps {
        optional_code(
            &mut rows,
            "awkward_layout_strategy",
            caps.awkward_layout_strategy.as_ref(),
        );
        optional_display(&mut rows, "in_place", caps.in_place.as_ref());
        optional_display(&mut rows, "alignment_bytes", caps.alignment_bytes.as_ref());
        optional_display(
            &mut rows,
            "access_granularity_bits",
            caps.access_granularity_bits.as_ref(),
        );
    }
    rows
}

fn cost_rows(cost: &RawCost) -> Vec<Row> {
    let mut rows = Vec::new();
    optional_code(&mut rows, "provenance", cost.provenance.as_ref());
    optional_code(&mut rows, "class", cost.class.as_ref());
    nullable_code(&mut rows, "flops", &cost.flops);
    nullable_code(&mut rows, "bytes_moved", &cost.bytes_moved);
    nullable_code(&mut rows, "overhead_ns", &cost.overhead_ns);
    rows
}

fn memory_rows(cost: &RawCost) -> Vec<Row> {
    let mut rows = Vec::new();
    if let Some(memory) = &cost.memory {
        nullable_code(&mut rows, "device_bytes", &memory.device_bytes);
        nullable_code(&mut rows, "host_bytes", &memory.host_bytes);
        nullable_code(&mut rows, "disk_bytes", &memory.disk_bytes);
    }
    rows
}

fn precision_rows(contract: &RawContract) -> Vec<Row> {
    let mut rows = Vec::new();
    if let Some(precision) = &contract.precision {
        optional_display(
            &mut rows,
            "bit_stable_on_same_hardware",
            precision.bit_stable_on_same_hardware.as_ref(),
        );
        nullable_display(&mut rows, "max_ulp", &precision.max_ulp);
        nullable_display(&mut rows, "max_relative", &precision.max_relative);
        nullable_display(&mut rows, "max_absolute", &precision.max_absolute);
        optional_display(&mut rows, "audited", precision.audited.as_ref());
        if let Some(notes) = &precision.notes {
            rows.push(Row::text("notes", notes.value.clone(), note(notes)));
        }
    }
    rows
}

/// Builds the provider card.
pub fn provider_view(front: &FrontMatter) -> ProviderView {
    let mut rows = Vec::new();
    if let Some(Provider {
        name,
        backend,
        kernel_source,
        link_registry,
        revision_base,
        ..
    }) = &front.provider
    {
        optional_code(&mut rows, "name", name.as_ref());
        optional_code(&mut rows, "backend", backend.as_ref());
        optional_code(&mut rows, "kernel_source", kernel_source.as_ref());
        optional_code(&mut rows, "link_registry", link_registry.as_ref());
        optional_code(&mut rows, "revision_base", revision_base.as_ref());
    }
    ProviderView {
        version: front
            .fkc_version
            .as_ref()
            .map_or_else(|| "?".to_owned(), |v| v.value.to_string()),
        rows,
    }
}
