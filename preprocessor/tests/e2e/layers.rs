//! The preprocessor's modules form layers that only point down, in the data's direction: this
//! test reads every `crate::…` path of every source file (test modules and `*tests.rs` files
//! aside) and fails on an import of a module from a higher layer — so lib.rs's and the README's
//! "no stage reaches back up" stays true.

use crate::support::*;
use std::path::Path;

/// The top-level modules of `preprocessor/src`, lowest first: a module may use only those
/// before it. (`main.rs` and `cli/` are the binary, above them all.)
const LAYERS: [&str; 21] = [
    "source",
    "expr",
    "diag",
    "revision",
    "yaml",
    "chapter",
    "report",
    "quote",
    "providers",
    "semantics",
    "contract",
    "import",
    "resolve",
    "verify",
    "cache",
    "config",
    "calibration",
    "render",
    "pipeline",
    "preprocessor",
    "judge",
];

/// Each import of `text` (the source of a file of module `own`) that points up: (the module it
/// names, the line).
fn back_imports(own: &str, text: &str) -> Vec<(String, usize)> {
    let Some(rank) = LAYERS.iter().position(|m| *m == own) else {
        return vec![(format!("{own} (not in LAYERS)"), 0)];
    };
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break; // the test module: tests may reach anywhere
        }
        let code = line.split("//").next().unwrap_or("");
        for name in named_modules(code) {
            let above = LAYERS
                .iter()
                .position(|m| *m == name)
                .is_some_and(|r| r > rank);
            if above {
                found.push((name, number + 1));
            }
        }
    }
    found
}

/// The top-level modules a line of code names: `crate::x` and `use crate::{x, y::z}`.
fn named_modules(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inside = group.split('}').next().unwrap_or("");
            names.extend(inside.split(',').map(|part| head(part.trim())));
        } else {
            names.push(head(rest));
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// The first path segment of `path`.
fn head(path: &str) -> String {
    path.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every source file under `dir`, with its top-level module.
fn sources(root: &Path, dir: &Path, out: &mut Vec<(String, std::path::PathBuf)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(root, &path, out);
            continue;
        }
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let is_test = relative.ends_with("tests.rs");
        let binary = relative == "main.rs" || relative == "lib.rs" || relative.starts_with("cli/");
        if path.extension().is_some_and(|e| e == "rs") && !is_test && !binary {
            let module = relative
                .split('/')
                .next()
                .unwrap_or("")
                .trim_end_matches(".rs");
            out.push((module.to_owned(), path));
        }
    }
}

#[test]
fn no_module_imports_one_from_a_higher_layer() {
    let root = repo_root().join("preprocessor/src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    assert!(files.len() > 100, "{} files", files.len());
    let mut problems = Vec::new();
    for (module, path) in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for (above, line) in back_imports(module, &text) {
            problems.push(format!(
                "{}:{line}: `{module}` uses `{above}`",
                path.display()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "imports back up:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_planted_back_import_is_found_and_tests_and_comments_are_not() {
    let planted = "use crate::diag::Code;\nuse crate::{source, render::view};\nfn f() { crate::pipeline::x(); }\n// crate::judge in a comment\n#[cfg(test)]\nmod tests { use crate::judge; }\n";
    assert_eq!(
        back_imports("verify", planted),
        [("render".to_owned(), 2), ("pipeline".to_owned(), 3)]
    );
    assert_eq!(back_imports("judge", planted), []);
    assert_eq!(
        back_imports("nowhere", "").len(),
        1,
        "a new module must be placed"
    );
}
