//! The fixture books of the provider tests, copied to temporary directories with their
//! provider commands pointed at this test run's binaries: the demo provider's (built once),
//! the Python provider's script, and `mdbook-fkc` itself.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The demo provider's binaries, built once per test run into their own target directory (so
/// the build does not wait on the lock of the one running these tests).
pub(super) fn provider_bins() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let target = repo_root().join("target/fkc-providers");
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "--locked",
                "--release",
                "-p",
                "demo-provider",
                "--bins",
            ])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(repo_root())
            .status()
            .unwrap();
        assert!(status.success(), "building the demo provider failed");
        target.join("release")
    })
}

/// A copy of a fixture book whose provider commands are the demo provider's binaries.
pub(super) fn provider_book(name: &str) -> PathBuf {
    let dir = fixture_book(name);
    let toml = dir.join("book.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    let bins = provider_bins().display().to_string();
    std::fs::write(&toml, text.replace("@PROVIDERS@", &bins)).unwrap();
    dir
}

/// A copy of the demo provider's book run by this test run's binary and the demo's binary.
pub(super) fn demo_book() -> PathBuf {
    let dir = temp_dir("demo-book");
    let demo = repo_root().join("examples/demo-provider");
    copy_dir(&demo.join("book"), &dir.join("book"));
    let toml = std::fs::read_to_string(demo.join("book.toml")).unwrap();
    let ours = format!("command = {:?}", fkc_bin().display().to_string());
    let provider = format!(
        "command = {:?}",
        provider_bins().join("fkc-provider").display().to_string()
    );
    let toml = toml
        .replace("command = \"cargo run --quiet --locked --release -p mdbook-fkc --\"", &ours)
        .replace(
            "command = \"cargo run --quiet --locked --release -p demo-provider --bin fkc-provider\"",
            &provider,
        );
    std::fs::write(dir.join("book.toml"), toml).unwrap();
    dir
}

/// `demo_book()` with one text of its chapter replaced.
pub(super) fn mutated_demo_book(from: &str, to: &str) -> PathBuf {
    let dir = demo_book();
    let chapter = dir.join("book/kernels.md");
    let text = std::fs::read_to_string(&chapter).unwrap();
    assert!(text.contains(from), "{from}");
    std::fs::write(&chapter, text.replacen(from, to, 1)).unwrap();
    dir
}

/// A copy of the Python provider's book, run by this test run's binary.
pub(super) fn python_book() -> PathBuf {
    let dir = temp_dir("python-book");
    let example = repo_root().join("examples/python-provider");
    copy_dir(&example.join("book"), &dir.join("book"));
    let toml = std::fs::read_to_string(example.join("book.toml")).unwrap();
    let ours = format!("command = {:?}", fkc_bin().display().to_string());
    let provider = format!(
        "command = {:?}",
        format!("python3 {}", example.join("provider.py").display())
    );
    let toml = toml
        .replace(
            "command = \"cargo run --quiet --locked --release -p mdbook-fkc --\"",
            &ours,
        )
        .replace("command = \"python3 provider.py\"", &provider);
    std::fs::write(dir.join("book.toml"), toml).unwrap();
    dir
}
