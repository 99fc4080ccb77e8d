//! The Judge end to end: `mdbook-fkc judge` on a fixture book writes the calibration file, and
//! the real `mdbook` build shows it on the contract's page — only when the file exists, flagged
//! stale when the contract's revision hash changed, flagged when the fit is poor — while two
//! builds stay byte-identical (the build reads the file; it never times anything).

use crate::support::*;
use std::path::Path;

const CALIBRATION: &str = "fkc-calibration.json";
const PAGE: &str = "pool.html";

fn judge(dir: &Path) -> serde_json::Value {
    let out = fkc(&["judge", "."], dir);
    assert!(out.status.success(), "judge failed:\n{}", stderr(&out));
    let text = std::fs::read_to_string(dir.join(CALIBRATION)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn build(dir: &Path) -> String {
    let out = real_mdbook_build(dir);
    assert!(
        out.status.success(),
        "mdbook build failed:\n{}",
        stderr(&out)
    );
    std::fs::read_to_string(dir.join("build").join(PAGE)).unwrap()
}

fn rewrite(dir: &Path, change: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join(CALIBRATION);
    let mut calibration: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    change(&mut calibration);
    std::fs::write(path, serde_json::to_string_pretty(&calibration).unwrap()).unwrap();
}

#[test]
fn judge_on_a_fixture_book_writes_the_calibration_file() {
    let dir = fixture_book("judge-book");
    let calibration = judge(&dir);
    assert_eq!(calibration["format"], 1);
    assert!(
        calibration["tool"]
            .as_str()
            .unwrap()
            .starts_with("mdbook-fkc ")
    );
    assert!(!calibration["machine"]["cpu"].as_str().unwrap().is_empty());
    assert!(!calibration["machine"]["isa"].as_str().unwrap().is_empty());
    let contracts = calibration["contracts"].as_array().unwrap();
    assert_eq!(contracts.len(), 1, "{calibration:#}");
    let pool = &contracts[0];
    assert_eq!(pool["kernel"], "max_pool2d");
    assert_eq!(pool["dtype"], "F32");
    assert_eq!(pool["axis"], "flops");
    // The revision hash is the one the gate computes for the contract.
    let check = fkc(&["check", "."], &dir);
    let hash = pool["revision_hash"].as_str().unwrap();
    assert!(stdout(&check).contains(hash), "{}", stdout(&check));
    // A ladder of admitted sizes spanning the cost scale, each timed.
    let ladder = pool["ladder"].as_array().unwrap();
    assert!(ladder.len() >= 4, "{pool:#}");
    let flops: Vec<f64> = ladder
        .iter()
        .map(|p| p["flops"].as_f64().unwrap())
        .collect();
    assert!(flops.windows(2).all(|w| w[0] <= w[1]));
    assert!(flops[flops.len() - 1] / flops[0] >= 10.0, "{flops:?}");
    for point in ladder {
        assert!(point["ns"].as_f64().unwrap() > 0.0);
        assert!(point["bytes_moved"].as_f64().unwrap() > 0.0);
        assert!(point["repetitions"].as_u64().unwrap() >= 5);
    }
    assert!(pool["fit"]["overhead_ns"].as_f64().unwrap() >= 0.0);
    assert_eq!(pool["residuals"].as_array().unwrap().len(), ladder.len());
    assert!(["good", "poor"].contains(&pool["verdict"].as_str().unwrap()));
}

#[test]
fn the_page_shows_the_measured_cost_only_when_the_calibration_exists() {
    let dir = fixture_book("judge-book");
    let without = build(&dir);
    assert!(without.contains("<h3><code>max_pool2d</code></h3>"));
    assert!(
        !without.contains("fkc-judge"),
        "a figure without a calibration"
    );
    judge(&dir);
    let with = build(&dir);
    assert!(with.contains("Measured cost (the Judge)"), "{with}");
    assert!(with.contains("fkc-judge-figure"));
    assert!(with.contains("fkc-judge-fit"));
    assert!(with.matches("fkc-judge-point").count() >= 4);
    assert!(with.contains("GB/s") || with.contains("GFLOP/s"));
    assert!(!with.contains("stale calibration"));
    // The measured cost is a part of the contract's card, just before its source.
    let judged = with.find("Measured cost (the Judge)").unwrap();
    let source = with.find("<details class=\"fkc-source\">").unwrap();
    assert!(judged < source);
    assert!(
        !with[judged..source].contains("fkc-card"),
        "in the same card"
    );
}

#[test]
fn two_builds_with_a_calibration_are_byte_identical() {
    let dir = fixture_book("judge-book");
    judge(&dir);
    let first = build(&dir);
    let second = build(&dir);
    assert!(first.contains("fkc-judge-figure"));
    assert!(first == second, "two builds differ");
}

#[test]
fn a_stale_revision_hash_is_flagged_instead_of_numbers() {
    let dir = fixture_book("judge-book");
    judge(&dir);
    rewrite(&dir, |c| {
        c["contracts"][0]["revision_hash"] = "0000000000000000".into();
    });
    let page = build(&dir);
    assert!(page.contains("stale calibration"), "{page}");
    assert!(page.contains("0000000000000000"));
    assert!(!page.contains("fkc-judge-figure"));
    assert!(!page.contains("GFLOP/s"));
    // The inventory says so too, in its own column, with the revision that was measured.
    let inventory = std::fs::read_to_string(dir.join("build/inventory.html")).unwrap();
    assert!(
        inventory.contains(
            "<td data-label=\"stale\"><span class=\"fkc-badge fkc-badge-warn\">stale</span>"
        ),
        "{inventory}"
    );
    assert!(inventory.contains(
        "<td data-label=\"Judge\"><span class=\"fkc-badge fkc-badge-warn\">not shown</span>"
    ));
    assert!(inventory.contains("0000000000000000"));
    assert!(
        inventory.contains("(1 stale: run <code>mdbook-fkc judge"),
        "{inventory}"
    );
}

#[test]
fn a_contract_changed_since_it_was_judged_is_stale() {
    let dir = fixture_book("judge-book");
    judge(&dir);
    let path = dir.join("book/pool.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = text.replace("blurb: \"Per-channel", "blurb: \"Changed: per-channel");
    assert_ne!(text, changed);
    std::fs::write(&path, changed).unwrap();
    let page = build(&dir);
    assert!(page.contains("stale calibration"), "{page}");
    assert!(!page.contains("fkc-judge-figure"));
}

#[test]
fn a_poor_fit_is_flagged_on_the_page() {
    let dir = fixture_book("judge-book");
    judge(&dir);
    rewrite(&dir, |c| {
        c["contracts"][0]["verdict"] = "poor".into();
        c["contracts"][0]["reason"] = "relative residuals 80 % RMS".into();
    });
    let page = build(&dir);
    assert!(page.contains("poor fit"), "{page}");
    assert!(page.contains("relative residuals 80 % RMS"));
    assert!(page.contains("fkc-judge-figure"));
}

#[test]
fn judge_refuses_a_book_whose_contracts_fail() {
    let dir = fixture_book("judge-book");
    let path = dir.join("book/pool.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(
            "stride: { kind: usize, constraint: \"stride > 0\" }",
            "stride: { kind: usize, constraint: \"stride > 0 && stride < 1\" }",
        ),
    )
    .unwrap();
    let out = fkc(&["judge", "."], &dir);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("fix them before the Judge"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.join(CALIBRATION).exists());
}

#[test]
fn the_committed_calibration_is_current_for_the_seed_book() {
    // A contract edited (or its revision hash changed) since the Judge last ran would show
    // "stale calibration" instead of measured costs: rerun `mdbook-fkc judge` and commit.
    let dir = project_book();
    std::fs::copy(repo_root().join(CALIBRATION), dir.join(CALIBRATION)).unwrap();
    let out = fkc(&["build", "--no-cache"], &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(dir.join("build/seed/reference-conv-pool.html")).unwrap();
    assert!(
        !page.contains("stale calibration"),
        "rerun `mdbook-fkc judge`"
    );
    assert_eq!(page.matches("fkc-judge-figure").count(), 4);
}
