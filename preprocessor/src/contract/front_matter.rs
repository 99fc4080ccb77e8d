//! The FKC front matter: `fkc_version` and the `provider` that every contract of the chapter is
//! resolved against. mdBook would print it as text, so the preprocessor consumes it and renders
//! a provider card in its place.

use super::schema::{Located, Reader};
use crate::diag::Code;
use crate::yaml::Node;
use std::ops::Range;

/// The only FKC version this preprocessor understands.
pub const SUPPORTED_VERSION: u64 = 1;

/// The `provider` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    pub span: Range<usize>,
    pub name: Option<Located<String>>,
    pub backend: Option<Located<String>>,
    pub kernel_source: Option<Located<String>>,
    pub link_registry: Option<Located<String>>,
    pub revision_base: Option<Located<String>>,
}

/// The front matter as written.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontMatter {
    pub span: Range<usize>,
    pub fkc_version: Option<Located<u64>>,
    pub provider: Option<Provider>,
}

const PROVIDER_FIELDS: &[&str] = &[
    "name",
    "backend",
    "kernel_source",
    "link_registry",
    "revision_base",
];

/// Reads the front matter; problems are recorded in the reader.
pub fn read_front_matter(reader: &mut Reader<'_>, root: &Node) -> Option<FrontMatter> {
    let fields = reader.mapping_with_sections(
        root,
        "the front matter",
        &["fkc_version", "provider"],
        &[("provider", PROVIDER_FIELDS)],
    )?;
    let fkc_version = reader
        .required(&fields, "fkc_version", "the front matter")
        .and_then(|node| reader.unsigned(node, "fkc_version"));
    if let Some(version) = &fkc_version
        && version.value != SUPPORTED_VERSION
        && let Some(node) = fields.get("fkc_version")
    {
        let diagnostic = reader.error_at(
            Code::UnsupportedVersion,
            node,
            format!("fkc_version {} is not supported", version.value),
        );
        diagnostic.label = Some(format!(
            "this preprocessor reads fkc_version {SUPPORTED_VERSION}"
        ));
        diagnostic.help.push(format!(
            "write `fkc_version: {SUPPORTED_VERSION}`, or upgrade mdbook-fkc"
        ));
    }
    let provider = reader
        .required(&fields, "provider", "the front matter")
        .and_then(|node| read_provider(reader, node));
    Some(FrontMatter {
        span: reader.file_span(&root.span),
        fkc_version,
        provider,
    })
}

fn read_provider(reader: &mut Reader<'_>, node: &Node) -> Option<Provider> {
    let fields = reader.mapping(node, "provider", PROVIDER_FIELDS)?;
    let mut text = |key: &str| {
        reader
            .required(&fields, key, "provider")
            .and_then(|n| reader.string(n, key))
    };
    Some(Provider {
        name: text("name"),
        backend: text("backend"),
        kernel_source: text("kernel_source"),
        link_registry: text("link_registry"),
        revision_base: text("revision_base"),
        span: reader.file_span(&node.span),
    })
}
