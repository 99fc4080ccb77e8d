//! Finding a chapter's provider among the book's: a configured one by `provider.name`, or the
//! built-in one by its link registry, each way this can fail a diagnostic in the front matter.

use crate::contract::front_matter::FrontMatter;
use crate::contract::schema::Located;
use crate::diag::{Code, Diagnostic, did_you_mean};
use crate::providers::{Provider, Providers, StartError};
use crate::source::SourceFile;
use std::sync::Arc;

/// Finds the chapter's provider among the book's (starting it on first use): a configured one
/// by `provider.name`, or the built-in one by its registry. Every way this can fail is a
/// diagnostic located in the front matter.
pub fn check_provider(
    source: &Arc<SourceFile>,
    front: &FrontMatter,
    providers: &mut Providers,
) -> (Option<Arc<Provider>>, Vec<Diagnostic>) {
    let Some(spec) = front.provider.as_ref() else {
        return (None, Vec::new());
    };
    let Some(registry) = spec.link_registry.as_ref() else {
        return (None, Vec::new());
    };
    let name = spec.name.as_ref().map(|n| n.value.as_str());
    let span = spec
        .name
        .as_ref()
        .map_or(registry.span.clone(), |n| n.span.clone());
    match providers.find(name, &registry.value) {
        None => (None, vec![unknown_registry(source, registry, providers)]),
        Some(Err(error)) => (None, vec![start_failure(source, span, &error)]),
        Some(Ok(provider)) if provider.hello().registry != registry.value => {
            let served = provider.hello().registry.clone();
            let diagnostic = Diagnostic::error(
                Code::ProviderRegistryMismatch,
                source,
                registry.span.clone(),
                format!(
                    "provider `{}` serves the registry `{served}`, not `{}`",
                    provider.hello().provider,
                    registry.value
                ),
            )
            .with_label("not the registry the provider serves")
            .with_help(format!(
                "write `link_registry: {served}`, or point the provider's command at the crate that exports `{}`",
                registry.value
            ));
            (None, vec![diagnostic])
        }
        Some(Ok(provider)) => (Some(provider), Vec::new()),
    }
}

fn unknown_registry(
    source: &Arc<SourceFile>,
    registry: &Located<String>,
    providers: &Providers,
) -> Diagnostic {
    let builtin = providers.builtin().hello().registry.clone();
    let configured: Vec<&str> = providers.configured_names().collect();
    let mut diagnostic = Diagnostic::error(
        Code::UnknownRegistry,
        source,
        registry.span.clone(),
        format!(
            "link registry `{}` is neither built in nor served by a configured provider",
            registry.value
        ),
    )
    .with_label("unknown link registry");
    if let Some(close) = did_you_mean(&registry.value, [builtin.as_str()]) {
        diagnostic.help.push(format!("did you mean `{close}`?"));
    } else {
        diagnostic.help.push(format!(
            "add `[preprocessor.fkc.provider.NAME]` with `command = \"…\"` to book.toml and write `provider.name: NAME` (configured: {}; built in: `{builtin}`)",
            if configured.is_empty() { "none".to_owned() } else { configured.join(", ") }
        ));
    }
    diagnostic
}

fn start_failure(
    source: &Arc<SourceFile>,
    span: std::ops::Range<usize>,
    error: &StartError,
) -> Diagnostic {
    let (code, help) = match error {
        StartError::Version { .. } => (
            Code::ProviderProtocol,
            "rebuild the provider against the fkc-provider version this mdbook-fkc uses",
        ),
        StartError::Spawn { .. } | StartError::NoHandshake { .. } => (
            Code::ProviderStart,
            "run the command by hand in the book's directory: its `main` must be `fkc_provider::serve(&REGISTRY)`, and nothing else may print on stdout",
        ),
        StartError::Describe { .. } => (
            Code::ProviderDescription,
            "answer `describe` with a `description` as the format reference specifies it (its JSON Schema is fkc-provider's `schema/description.json`)",
        ),
    };
    Diagnostic::error(code, source, span, error.to_string())
        .with_label("this chapter's provider")
        .with_help(help)
}
