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
}

#[test]
fn embedded_build_runs_the_preprocessor_once() {
    // A contract file duplicated in SUMMARY would be a duplicate kernel; a second run of the
    // preprocessor over its own output would find no fences and pass. Instead we count the
    // provider cards: exactly one per chapter with front matter.
    let dir = project_book();
    let out = fkc(&["build", "."], &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = page(&dir, "seed/reference-conv-pool.html");
    assert_eq!(html.matches("fkc-card fkc-provider").count(), 1);
    assert_eq!(html.matches("fkc-card fkc-contract").count(), 4);
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
