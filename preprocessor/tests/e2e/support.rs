//! Shared helpers: fixture copies in temporary directories, running our binary and the real
//! `mdbook` (installed with `cargo install --locked` into the target directory when missing, so a
//! fresh machine with only the Rust toolchain can run every test).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The mdBook version the project targets.
pub const MDBOOK_VERSION: &str = "0.5.4";

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Our binary, as cargo built it for this test run.
pub fn fkc_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mdbook-fkc"))
}

/// A fresh, empty temporary directory.
pub fn temp_dir(name: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("fkc-e2e-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "build" {
                copy_dir(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A copy of a fixture book whose `[preprocessor.fkc]` runs this test run's binary.
pub fn fixture_book(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    copy_dir(&fixture(name), &dir);
    point_at_our_binary(&dir);
    dir
}

/// A copy of the project's own book (book.toml + book/).
pub fn project_book() -> PathBuf {
    let dir = temp_dir("project-book");
    copy_dir(&repo_root().join("book"), &dir.join("book"));
    std::fs::copy(repo_root().join("book.toml"), dir.join("book.toml")).unwrap();
    point_at_our_binary(&dir);
    dir
}

/// Rewrites book.toml so the fkc preprocessor command is this run's binary.
fn point_at_our_binary(dir: &Path) {
    let path = dir.join("book.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let command = format!("command = {:?}", fkc_bin().display().to_string());
    let mut out = String::new();
    let mut in_fkc = false;
    for line in text.lines() {
        if line.starts_with('[') {
            if in_fkc {
                out.push_str(&command);
                out.push('\n');
            }
            in_fkc = line.trim() == "[preprocessor.fkc]";
        }
        if !(in_fkc && line.starts_with("command")) {
            out.push_str(line);
            out.push('\n');
        }
    }
    if in_fkc {
        out.push_str(&command);
        out.push('\n');
    }
    std::fs::write(path, out).unwrap();
}

/// The real `mdbook` 0.5 binary: `$MDBOOK`, or `mdbook` on PATH when it is 0.5.x, or one
/// installed into the target directory on first use.
pub fn mdbook_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(path) = std::env::var_os("MDBOOK") {
            return PathBuf::from(path);
        }
        if is_mdbook_05(Path::new("mdbook")) {
            return PathBuf::from("mdbook");
        }
        let root = repo_root().join("target/e2e-tools");
        let bin = root.join("bin/mdbook");
        if !is_mdbook_05(&bin) {
            eprintln!(
                "installing mdbook {MDBOOK_VERSION} into {} (first run only)",
                root.display()
            );
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args([
                    "install",
                    "--locked",
                    "mdbook",
                    "--version",
                    MDBOOK_VERSION,
                    "--root",
                ])
                .arg(&root)
                .status()
                .expect("cargo install mdbook");
            assert!(
                status.success(),
                "cargo install mdbook {MDBOOK_VERSION} failed"
            );
        }
        bin
    })
}

fn is_mdbook_05(bin: &Path) -> bool {
    Command::new(bin)
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("v0.5."))
}

/// Runs a command and returns its output.
pub fn run(command: &mut Command) -> Output {
    command.output().unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `mdbook build` with the real binary in `dir`.
pub fn real_mdbook_build(dir: &Path) -> Output {
    run(Command::new(mdbook_bin()).arg("build").current_dir(dir))
}

/// `mdbook-fkc ARGS…`.
pub fn fkc(args: &[&str], dir: &Path) -> Output {
    run(Command::new(fkc_bin()).args(args).current_dir(dir))
}

/// A built page with asset fingerprints (`book-609e4cb8.js`) removed, for comparisons.
pub fn page(dir: &Path, page: &str) -> String {
    let html = std::fs::read_to_string(dir.join("build").join(page)).unwrap();
    strip_fingerprints(&html)
}

fn strip_fingerprints(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let bytes: Vec<char> = html.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let is_fingerprint = bytes[i] == '-'
            && i + 9 < bytes.len()
            && bytes[i + 1..i + 9].iter().all(|c| c.is_ascii_hexdigit())
            && bytes[i + 9] == '.';
        if is_fingerprint {
            i += 9;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}
