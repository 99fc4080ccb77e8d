//! Contracts in two stages, as ripgrep has low and high arguments: [`raw`] is the contract as
//! written (every value located in the author's file, comments kept), [`resolved`] the contract
//! with expressions parsed, names bound and the link registry consulted.

pub mod comments;
pub mod front_matter;
pub mod raw;
pub mod resolved;
pub mod schema;
pub mod semantic;

use crate::diag::{Code, Diagnostic};
use crate::source::SourceFile;
use crate::yaml::{self, YamlErrorKind};
use schema::{Origin, Reader};
use std::sync::Arc;

/// Parses one YAML block of a file into located nodes and reads it with `read`. Returns what
/// could be read and every diagnostic found.
pub fn read_block<T>(
    source: &Arc<SourceFile>,
    yaml_text: &str,
    to_file: &dyn Fn(usize) -> usize,
    read: impl FnOnce(&mut Reader<'_>, &yaml::Node) -> Option<T>,
) -> (Option<T>, Vec<Diagnostic>) {
    let root = match yaml::parse(yaml_text) {
        Ok(root) => root,
        Err(error) => {
            let code = match error.kind {
                YamlErrorKind::Syntax => Code::YamlSyntax,
                YamlErrorKind::Budget => Code::YamlBudget,
            };
            let at = to_file(error.offset);
            let mut diagnostic = Diagnostic::error(code, source, at..at, error.message.clone())
                .with_label("the YAML parser stopped here");
            diagnostic
                .help
                .push(yaml_help(code, yaml_text, &error.message));
            return (None, vec![diagnostic]);
        }
    };
    let mut reader = Reader::new(Origin {
        source,
        yaml: yaml_text,
        to_file,
    });
    let value = read(&mut reader, &root);
    (value, reader.errors)
}

fn yaml_help(code: Code, yaml_text: &str, message: &str) -> String {
    let flat = !yaml_text.lines().any(|line| line.starts_with(' '));
    let has_sections = yaml_text.lines().any(|line| line.trim_end().ends_with(':'));
    match code {
        Code::YamlBudget => "contracts are small: remove aliases, nesting or bulk".to_owned(),
        _ if message_is_duplicate(message) => "each field appears once in a mapping: remove or rename the repeated one".to_owned(),
        _ if flat && has_sections => "this block has no indentation at all: the fields of nested sections (`accept:`, `inputs:` items, `op_params:`, …) must be indented under them".to_owned(),
        _ => "check indentation (spaces only), `key: value` spacing and closing quotes or brackets".to_owned(),
    }
}

fn message_is_duplicate(message: &str) -> bool {
    message.contains("written twice")
}
