//! Whole books built end to end: the project's book green through both paths with identical
//! pages, and broken books failing with a code, the file and the line.

use crate::support::*;

const KERNELS: [&str; 4] = ["conv2d", "conv_transpose2d", "conv2d_simple", "max_pool2d"];

#[test]
fn project_book_builds_in_process_and_under_real_mdbook_with_the_same_page() {
    let embedded = project_book();
    let out = fkc(&["build", "."], &embedded);
    assert!(
        out.status.success(),
        "mdbook-fkc build failed:\n{}",
        stderr(&out)
    );
    let real = project_book();
    let out = real_mdbook_build(&real);
    assert!(
        out.status.success(),
        "mdbook build failed:\n{}",
        stderr(&out)
    );

    let page_embedded = page(&embedded, "seed/reference-conv-pool.html");
    let page_real = page(&real, "seed/reference-conv-pool.html");
    assert_eq!(
        page_embedded, page_real,
        "the two build paths render different pages"
    );
    for kernel in KERNELS {
        assert!(
            page_real.contains(&format!("<h3><code>{kernel}</code></h3>")),
            "no table section for {kernel}"
        );
        assert!(page_real.contains(&format!("id=\"fkc-{}\"", kernel.replace('_', "-"))));
    }
    // The front matter became a provider card, not stray text or a setext heading.
    assert!(page_real.contains("fkc-provider"));
    assert!(
        !page_real.contains("<h2 id=\"revision_base"),
        "front matter leaked into the page"
    );
    // The YAML comments are kept as annotations.
    assert!(page_real.contains("[N, Cin, H, W]"));
    // Each verified contract shows a worked example as inline SVG that survived mdBook's HTML
    // pass, computed by the kernel, traced through the semantics and equal to what they give.
    assert_eq!(
        page_real.matches("class=\"fkc-example\"").count(),
        4,
        "one figure per contract"
    );
    assert!(page_real.matches("class=\"fkc-grid\"").count() >= 4 * 2);
    assert_eq!(
        page_real
            .matches("Every element the kernel returned is what the semantics give.")
            .count(),
        4
    );
    // Every figure numbers what its traced element reads and marks that element.
    assert!(page_real.matches("class=\"fkc-fig-tapnum\"").count() >= 4 * 2);
    assert!(page_real.matches("class=\"fkc-fig-traced\"").count() >= 4);
    assert!(!page_real.contains("<?xml"));
    // The inventory lists every contract of the book with a link to its section.
    let inventory = page(&real, "inventory.html");
    for (kernel, link) in [
        ("conv2d", "seed/reference-conv-pool.html#fkc-conv2d"),
        ("max_pool2d", "seed/reference-conv-pool.html#fkc-max-pool2d"),
        ("contiguize", "contracts/contiguize.html#fkc-contiguize"),
        (
            "conv2d_threaded",
            "contracts/threaded.html#fkc-conv2d-threaded",
        ),
    ] {
        assert!(
            inventory.contains(&format!("<a href=\"{link}\"><code>{kernel}</code></a>")),
            "{kernel} missing from the inventory"
        );
    }
    assert!(
        inventory.contains("22 contracts"),
        "the inventory counts the book's contracts"
    );
    // Each row carries the Judge's verdict and whether it is stale; this copy of the book has
    // no calibration file beside it, so each says it was never measured (the judge tests show
    // the verdicts and a stale one).
    assert_eq!(inventory.matches("<td data-label=\"Judge\">").count(), 22);
    let never = "<td data-label=\"stale\"><span class=\"fkc-note\">never measured</span>";
    assert_eq!(inventory.matches(never).count(), 22, "{inventory}");
    assert!(
        !inventory.contains("fkc:inventory"),
        "the marker was left in place"
    );
}

#[test]
fn the_preprocessor_runs_exactly_once_per_build_under_both_paths() {
    for embedded in [true, false] {
        let dir = project_book();
        let log = dir.join("runs.log");
        let mut command = if embedded {
            let mut c = std::process::Command::new(fkc_bin());
            c.args(["build", "."]);
            c
        } else {
            let mut c = std::process::Command::new(mdbook_bin());
            c.arg("build");
            c
        };
        let out = run(command.current_dir(&dir).env("MDBOOK_FKC_RUN_LOG", &log));
        assert!(out.status.success(), "{}", stderr(&out));
        let runs = std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(runs, "run renderer=html\n", "embedded = {embedded}");
        let html = page(&dir, "seed/reference-conv-pool.html");
        assert_eq!(html.matches("fkc-card fkc-provider").count(), 1);
        assert_eq!(html.matches("fkc-card fkc-contract").count(), 4);
    }
}

#[test]
fn flattened_seed_fails_at_its_lines_under_both_paths() {
    let dir = fixture_book("flattened-seed");
    for out in [fkc(&["build", "."], &dir), real_mdbook_build(&dir)] {
        assert!(!out.status.success(), "a flattened seed must not build");
        let err = stderr(&out);
        assert!(
            err.contains("error[FKC0104]: the fields of `provider` lost their indentation"),
            "{err}"
        );
        assert!(err.contains("book/seed.md:4:1"), "{err}");
        assert!(err.contains("error[FKC0101]"), "{err}");
        assert!(err.contains("book/seed.md:55:3"), "{err}");
    }
}

#[test]
fn a_book_without_contracts_builds_and_is_untouched() {
    let dir = fixture_book("no-contracts");
    let out = real_mdbook_build(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = page(&dir, "plain.html");
    assert!(!html.contains("fkc-card"));
    assert!(html.contains("Trailing text with a tab"));
}
