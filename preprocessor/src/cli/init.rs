//! `mdbook-fkc init`: a book set up for mdbook-fkc — the `[preprocessor.fkc]` table added to an
//! existing book.toml, a new book with a first contract, or (`--provider NAME`) a provider crate
//! with one kernel, its binary and a book whose contract of it `mdbook build` verifies.

use crate::error::CliError;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The chapter `init` writes into a new book.
const FIRST_CONTRACT: &str = include_str!("../../templates/init/first-contract.md");

/// The provider crate `init --provider` writes: (path in the crate, template).
const PROVIDER_FILES: [(&str, &str); 6] = [
    (
        "Cargo.toml",
        include_str!("../../templates/init/provider/Cargo.toml"),
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/init/provider/lib.rs"),
    ),
    (
        "src/main.rs",
        include_str!("../../templates/init/provider/main.rs"),
    ),
    (
        "book.toml",
        include_str!("../../templates/init/provider/book.toml"),
    ),
    (
        "book/SUMMARY.md",
        include_str!("../../templates/init/provider/SUMMARY.md"),
    ),
    (
        "book/kernels.md",
        include_str!("../../templates/init/provider/kernels.md"),
    ),
];

/// The fkc-provider crate beside this binary's sources, when it was built from a checkout.
const FKC_PROVIDER_SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../provider");
/// The fkc-provider release a scaffold depends on when there is no checkout.
const FKC_PROVIDER_VERSION: &str = "0.5";

/// Runs `init` in `dir`, scaffolding the provider `provider` when given.
pub fn init(dir: &Path, provider: Option<&str>) -> Result<ExitCode, CliError> {
    match provider {
        Some(name) => scaffold_provider(dir, name),
        None => init_book(dir),
    }
}

/// Writes `text` to `path`, creating its directory.
fn write(path: &Path, text: &str) -> Result<(), CliError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(CliError::io("create", parent))?;
    }
    std::fs::write(path, text).map_err(CliError::io("write", path))
}

/// The `[preprocessor.fkc]` table added to DIR's book.toml, or a new book with a first contract.
fn init_book(dir: &Path) -> Result<ExitCode, CliError> {
    let toml = dir.join("book.toml");
    let table = preprocessor_table();
    if toml.is_file() {
        let text = std::fs::read_to_string(&toml).map_err(CliError::io("read", &toml))?;
        if text.lines().any(|l| l.trim() == "[preprocessor.fkc]") {
            outln!(
                "mdbook-fkc init: {} already has [preprocessor.fkc]; nothing to do",
                toml.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        write(&toml, &format!("{}\n\n{table}", text.trim_end()))?;
        outln!(
            "mdbook-fkc init: added [preprocessor.fkc] to {}; write a ```fkc contract in a chapter and run `mdbook build`",
            toml.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let summary = dir.join("src/SUMMARY.md");
    let chapter = dir.join("src/first-contract.md");
    if summary.exists() || chapter.exists() {
        return Err(CliError::Refused(format!(
            "{} has a src/ of its own but no book.toml: write its book.toml first (or run `mdbook init`), then `mdbook-fkc init` again",
            dir.display()
        )));
    }
    write(
        &toml,
        &format!("[book]\ntitle = \"Kernel contracts\"\nsrc = \"src\"\n\n{table}"),
    )?;
    write(
        &summary,
        "# Summary\n\n- [My first contract](first-contract.md)\n",
    )?;
    write(&chapter, FIRST_CONTRACT)?;
    outln!(
        "mdbook-fkc init: wrote a book in {} with one contract (src/first-contract.md); run `mdbook build` there",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A provider crate `name` in `dir`: its kernel, binary and book. Refuses a directory that
/// already holds a crate or a book, so nothing is overwritten.
fn scaffold_provider(dir: &Path, name: &str) -> Result<ExitCode, CliError> {
    check_name(name)?;
    if let Some(taken) = PROVIDER_FILES
        .iter()
        .map(|(path, _)| dir.join(path))
        .find(|path| path.exists())
    {
        return Err(CliError::Refused(format!(
            "{} already exists: `init --provider` writes a new crate and overwrites nothing; choose another DIR",
            taken.display()
        )));
    }
    let crate_name = name.replace('-', "_");
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{crate}}", &crate_name)
            .replace("{{fkc_provider}}", &fkc_provider_dependency())
            .replace("{{fkc_table}}", preprocessor_table().trim_end())
    };
    for (path, template) in PROVIDER_FILES {
        write(&dir.join(path), &fill(template))?;
    }
    write(&dir.join(".gitignore"), "/target\n/build\n")?;
    outln!(
        "mdbook-fkc init: wrote the provider crate `{name}` in {}: the kernel `square` (src/lib.rs), the binary that serves it (src/main.rs) and its contract (book/kernels.md). Run `mdbook build` there; the first build compiles the crate",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A provider name is a crate name: a lowercase letter, then lowercase letters, digits, `-`
/// and `_` (it is also a TOML key and a Rust path once `-` becomes `_`).
fn check_name(name: &str) -> Result<(), CliError> {
    let mut chars = name.chars();
    let starts = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if starts && rest && name.len() <= 64 {
        Ok(())
    } else {
        Err(CliError::Refused(format!(
            "`{name}` cannot name a provider crate: use a lowercase letter, then lowercase letters, digits, `-` or `_` (for example `my-kernels`)"
        )))
    }
}

/// The scaffold's `fkc-provider` dependency: this checkout's copy when the binary was built
/// from one, else the registry release.
fn fkc_provider_dependency() -> String {
    let source = PathBuf::from(FKC_PROVIDER_SOURCE);
    match source
        .join("Cargo.toml")
        .is_file()
        .then(|| source.canonicalize())
    {
        Some(Ok(path)) => format!(
            "fkc-provider = {{ path = {:?} }} # the copy beside this mdbook-fkc; or fkc-provider = \"{FKC_PROVIDER_VERSION}\"",
            path.display().to_string()
        ),
        _ => format!("fkc-provider = \"{FKC_PROVIDER_VERSION}\""),
    }
}

/// The `[preprocessor.fkc]` table `init` writes: with this binary as `command` unless
/// `mdbook-fkc` is on PATH (where mdBook finds it by name).
fn preprocessor_table() -> String {
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| dir.join("mdbook-fkc").is_file())
    });
    let command = match std::env::current_exe() {
        Ok(exe) if !on_path => format!(
            "command = {:?} # this mdbook-fkc; drop the line once mdbook-fkc is on PATH\n",
            exe.display().to_string()
        ),
        _ => String::new(),
    };
    format!(
        "[preprocessor.fkc]\n{command}before = [\"links\", \"index\"] # first, so diagnostics point at your own file and line\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_are_crate_names() {
        assert!(check_name("my-kernels").is_ok());
        assert!(check_name("k2_fast").is_ok());
        for bad in ["", "My", "2d", "a b", "a/b", "ä"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_registry_release_is_the_one_this_checkout_builds() {
        let manifest = std::fs::read_to_string(Path::new(FKC_PROVIDER_SOURCE).join("Cargo.toml"))
            .unwrap_or_default();
        let version = format!("version = \"{FKC_PROVIDER_VERSION}.");
        assert!(manifest.contains(&version), "{manifest}");
    }
}
