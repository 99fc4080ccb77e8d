//! Recording a provider's protocol traffic (a `tee` on each side of its command) and
//! validating it against fkc-provider's JSON Schemas.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Rewrites the book.toml in `dir` so that the provider command `command` runs between two
/// `tee`s recording its traffic: `requests.jsonl` and `responses.jsonl` in `dir`.
pub(super) fn record_traffic(dir: &Path, command: &str) -> (PathBuf, PathBuf) {
    let (requests, responses) = (dir.join("requests.jsonl"), dir.join("responses.jsonl"));
    let toml = dir.join("book.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    assert!(text.contains(command), "{text}");
    let recorded = format!(
        "tee -a '{}' | {command} | tee -a '{}'",
        requests.display(),
        responses.display()
    );
    // One provider process: two would append to the same files at once, and a long line
    // written in pieces could interleave with the other's.
    let one_process = format!("\"{recorded}\"\njobs = 1");
    let text = text.replace(&format!("\"{command}\""), &one_process);
    assert!(text.contains(&one_process), "{text}");
    std::fs::write(&toml, text).unwrap();
    (requests, responses)
}

/// Whether recorded traffic is valid under fkc-provider's JSON Schemas (`schema/validate.py`),
/// with what the validator says.
pub(super) fn valid_traffic((requests, responses): &(PathBuf, PathBuf)) -> (bool, String) {
    let output = Command::new("python3")
        .arg(repo_root().join("provider/schema/validate.py"))
        .args([requests, responses])
        .output()
        .expect("python3 runs the schema validator (it needs the `jsonschema` package)");
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert!(
        !said.contains("ModuleNotFoundError"),
        "install the validator's package: python3 -m pip install jsonschema\n{said}"
    );
    (output.status.success(), said)
}
