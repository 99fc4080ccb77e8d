//! Every field of the seed's contracts reaches the contract as written with its location (the
//! span's text in the file is what the author wrote), its comment, and resolves: entry points,
//! carriers, expressions and the revision hash.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::contract::raw::RawContract;
use crate::contract::schema::Located;
use crate::pipeline::BookChecker;
use crate::render::Renderer;
use crate::source::SourceFile;
use std::path::PathBuf;
use std::sync::Arc;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn seed() -> (Arc<SourceFile>, Vec<RawContract>) {
    let text =
        std::fs::read_to_string(repo_root().join("book/seed/reference-conv-pool.md")).unwrap();
    let read = crate::read::chapter("book/seed/reference-conv-pool.md", &text).unwrap();
    let contracts = read
        .fences
        .into_iter()
        .filter(|fence| fence.fence.attributes.should_fail.is_none())
        .map(|fence| {
            assert!(
                fence.found.is_empty(),
                "{:?}",
                fence.found.iter().map(|d| &d.message).collect::<Vec<_>>()
            );
            fence.raw.unwrap()
        })
        .collect();
    (read.source, contracts)
}

/// The file text at a value's span, without surrounding quotes, is the value.
fn written<T: ToString>(source: &SourceFile, value: &Located<T>) -> String {
    let text = source.slice(value.span.clone());
    let unquoted = text.trim_matches('"');
    assert_eq!(unquoted, value.value.to_string(), "span {:?}", value.span);
    unquoted.to_owned()
}

#[test]
fn every_seed_field_keeps_its_text_location_and_comment() {
    let (source, contracts) = seed();
    let kernels: Vec<String> = contracts
        .iter()
        .map(|c| written(&source, &c.kernel))
        .collect();
    assert_eq!(
        kernels,
        ["conv2d", "conv_transpose2d", "conv2d_simple", "max_pool2d"]
    );
    for contract in &contracts {
        written(&source, contract.op_kind.as_ref().unwrap());
        written(&source, contract.blurb.as_ref().unwrap());
        written(&source, contract.backend.as_ref().unwrap());
        written(&source, contract.kernel_source.as_ref().unwrap());
        assert!(
            source
                .slice(contract.entry_point.as_ref().unwrap().span.clone())
                .contains("fuel_reference_backend::ops::")
        );
        assert!(
            contract
                .entry_point
                .as_ref()
                .unwrap()
                .comment
                .as_deref()
                .unwrap()
                .contains("one per dtype")
        );
        for input in &contract.inputs {
            written(&source, &input.name);
            for dtype in &input.dtypes {
                assert_eq!(source.slice(dtype.span.clone()), dtype.value.name());
            }
            let rank = input.rank.as_ref().unwrap();
            written(&source, rank);
            assert!(
                rank.comment.as_deref().unwrap().starts_with('['),
                "axis names kept as a comment"
            );
            let layout = input.layout.as_ref().unwrap();
            for (flag, requirement) in layout.flags() {
                let requirement = requirement.unwrap_or_else(|| panic!("{flag} missing"));
                assert_eq!(
                    source.slice(requirement.span.clone()),
                    requirement.value.as_str()
                );
            }
            if let Some(constraint) = &input.shape_constraint {
                written(&source, constraint);
            }
        }
        let op_params = contract.op_params.as_ref().unwrap();
        written(&source, op_params.variant.as_ref().unwrap());
        for field in &op_params.fields {
            written(&source, &field.name);
            written(&source, &field.kind);
            if let Some(constraint) = &field.constraint {
                written(&source, constraint);
            }
        }
        for output in &contract.outputs {
            written(&source, output.dtype_rule.as_ref().unwrap());
            written(&source, output.shape_rule.as_ref().unwrap());
            written(&source, output.layout_guarantee.as_ref().unwrap());
            written(&source, output.aliasing.as_ref().unwrap());
        }
        let caps = contract.caps.as_ref().unwrap();
        written(&source, caps.awkward_layout_strategy.as_ref().unwrap());
        for path in &caps.fast_paths {
            written(&source, &path.when);
            written(&source, path.note.as_ref().unwrap());
        }
        written(&source, caps.in_place.as_ref().unwrap());
        written(&source, caps.alignment_bytes.as_ref().unwrap());
        written(&source, caps.access_granularity_bits.as_ref().unwrap());
        let cost = contract.cost.as_ref().unwrap();
        written(&source, cost.provenance.as_ref().unwrap());
        written(&source, cost.class.as_ref().unwrap());
        let flops = cost.flops.as_ref().unwrap();
        let above = flops.comment.as_deref().unwrap_or("");
        assert!(
            above.contains("MACs =") || above.starts_with("comparisons ="),
            "the comment above flops: {above}"
        );
        assert_eq!(
            cost.overhead_ns.as_ref().unwrap().value,
            None,
            "`~` is kept as not authored"
        );
        assert_eq!(
            source.slice(cost.overhead_ns.as_ref().unwrap().span.clone()),
            "~"
        );
        let memory = cost.memory.as_ref().unwrap();
        assert_eq!(
            memory.device_bytes.as_ref().unwrap().value.as_deref(),
            Some("0")
        );
        let precision = contract.precision.as_ref().unwrap();
        written(
            &source,
            precision.bit_stable_on_same_hardware.as_ref().unwrap(),
        );
        written(&source, precision.audited.as_ref().unwrap());
        written(&source, precision.notes.as_ref().unwrap());
        assert_eq!(
            source.slice(contract.determinism.as_ref().unwrap().span.clone()),
            "same_hardware_bitwise"
        );
    }
    let pool = &contracts[3];
    assert_eq!(
        pool.precision
            .as_ref()
            .unwrap()
            .max_ulp
            .as_ref()
            .unwrap()
            .value,
        Some(0)
    );
    assert!(
        pool.op_kind
            .as_ref()
            .unwrap()
            .comment
            .as_deref()
            .unwrap()
            .contains("exists, op.rs:93"),
        "continued comment"
    );
}

#[test]
fn seed_contracts_resolve_against_the_registry() {
    let text =
        std::fs::read_to_string(repo_root().join("book/seed/reference-conv-pool.md")).unwrap();
    let renderer = Renderer::new(None).unwrap();
    let report = BookChecker::new(&renderer)
        .chapter("book/seed/reference-conv-pool.md", &text)
        .unwrap();
    let html = report.content.unwrap();
    for symbol in [
        "fuel_reference_backend::ops::conv2d_f32",
        "fuel_reference_backend::ops::conv2d_f64",
        "fuel_reference_backend::ops::conv_transpose2d_f64",
        "fuel_reference_backend::ops::conv2d_simple_bf16",
        "fuel_reference_backend::ops::max_pool2d_f16",
    ] {
        assert!(
            html.contains(&format!(
                "<code>{symbol}</code></td><td data-label=\"link registry\">resolved"
            )),
            "{symbol}"
        );
    }
    let notes: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|d| !d.is_error())
        .map(|d| d.message.clone())
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].contains("unknown OpKind `Conv2dSimple`")
            && notes[0].contains("BadOpParamsVariant"),
        "{}",
        notes[0]
    );
    assert!(
        notes[1].contains("unknown OpKind `MaxPool2D`"),
        "{}",
        notes[1]
    );
}

fn hashes(text: &str) -> Vec<String> {
    let renderer = Renderer::new(None).unwrap();
    let report = BookChecker::new(&renderer)
        .chapter("book/seed.md", text)
        .unwrap();
    report
        .contracts
        .iter()
        .map(|c| c.revision_hash.clone())
        .collect()
}

#[test]
fn revision_hash_is_stable_and_changes_with_the_contract_or_the_revision_base() {
    let text =
        std::fs::read_to_string(repo_root().join("book/seed/reference-conv-pool.md")).unwrap();
    let base = hashes(&text);
    assert_eq!(base.len(), 4);
    assert_eq!(base, hashes(&text), "stable across runs");
    // Comments and layout do not count.
    let recommented = text.replace("# [N, Cin, H, W]", "# batch, channels, height, width");
    assert_eq!(base, hashes(&recommented));
    // A value does (`class: reduction` is max_pool2d's, the last contract).
    let changed = text.replace("class: reduction", "class: pooling");
    let after = hashes(&changed);
    assert_ne!(after[3], base[3]);
    assert_eq!(after[..3], base[..3]);
    // The provider's revision_base changes every hash.
    let rebased = text.replace("git:f41137b4", "git:f41137b5");
    let after = hashes(&rebased);
    assert!(after.iter().zip(&base).all(|(a, b)| a != b));
}
