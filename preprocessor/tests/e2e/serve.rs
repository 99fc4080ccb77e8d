//! Failures are seen in `mdbook serve` (`on-failure = "continue"`): a failing contract puts a
//! banner at the top of its page linking to its error box, and the inventory lists it as failing
//! with honest totals; the error box carries no terminal summary line.

use super::support::*;

const FRONT: &str = "---\nfkc_version: 1\nprovider:\n  name: fuel-reference-backend\n  backend: Cpu\n  kernel_source: \"reference-oracle\"\n  link_registry: fuel_reference_backend::fkc::ENTRY_POINTS\n  revision_base: r\n---\n";

/// A pooling contract; `CONSTRAINT` is the window's constraint.
const POOL: &str = "```fkc\nkernel: NAME\nregistrable: false\nbackend: Cpu\nkernel_source: \"reference-oracle\"\nentry_point: \"fuel_reference_backend::ops::max_pool2d_f32\"\naccept:\n  inputs:\n    - { name: x, dtypes: [F32, F64, BF16, F16], rank: 4 }\nop_params:\n  fields:\n    kernel_size: { kind: usize, constraint: \"CONSTRAINT\" }\n    stride: { kind: usize, constraint: \"stride > 0\" }\nreturn:\n  outputs:\n    - { name: out, dtype_rule: passthrough(x), shape_rule: \"from_params(N=x.dim[0], C=x.dim[1], H=(x.dim[2]-kernel_size)/stride+1, W=(x.dim[3]-kernel_size)/stride+1)\" }\nprecision:\n  nan: ignore\n```\n";

fn pool(name: &str, constraint: &str) -> String {
    POOL.replace("NAME", name).replace("CONSTRAINT", constraint)
}

#[test]
fn a_failing_contract_is_seen_from_the_top_of_its_page_and_in_the_inventory() {
    let dir = temp_dir("serve-mode");
    std::fs::create_dir_all(dir.join("book")).unwrap();
    std::fs::write(
        dir.join("book.toml"),
        format!(
            "[book]\ntitle = \"t\"\nsrc = \"book\"\n\n[build]\nbuild-dir = \"build\"\n\n[preprocessor.fkc]\ncommand = {:?}\non-failure = \"continue\"\n",
            fkc_bin().display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("book/SUMMARY.md"),
        "# Summary\n\n- [Pools](pools.md)\n- [Inventory](inventory.md)\n",
    )
    .unwrap();
    let chapter = format!(
        "{FRONT}# Pools\n\nIntro.\n\n{}\n{}",
        pool("good_pool", "kernel_size > 0"),
        pool("bad_pool", "kernel_size > 2")
    );
    std::fs::write(dir.join("book/pools.md"), chapter).unwrap();
    std::fs::write(
        dir.join("book/inventory.md"),
        "# Inventory\n\n<!-- fkc:inventory -->\n",
    )
    .unwrap();
    let output = real_mdbook_build(&dir);
    assert!(output.status.success(), "{}", stderr(&output));
    let html = page(&dir, "pools.html");
    let banner = html.find("fkc-banner").expect("no banner");
    let intro = html.find("Intro.").unwrap();
    assert!(banner < intro, "the banner is not at the top of the page");
    assert!(html.contains("<a href=\"#fkc-bad-pool\"><code>bad_pool</code></a>"));
    assert!(html.contains("<div id=\"fkc-bad-pool\">"));
    // The failing contract keeps its card, under the error box, marked failing and verifying
    // nothing.
    let error_box = html.find("<div id=\"fkc-bad-pool\">").unwrap();
    let card = html.find("id=\"fkc-bad-pool-card\"").expect("no card");
    assert!(error_box < card, "the card is above its error box");
    let card_html = &html[card..];
    let card_html = &card_html[..card_html.find("</details>").unwrap()];
    assert!(
        card_html.contains("failing: see the error above"),
        "{card_html}"
    );
    assert!(
        !card_html.contains("Verified when this page was built"),
        "{card_html}"
    );
    assert!(html.contains("<a class=\"fkc-permalink\" href=\"#fkc-good-pool\""));
    assert!(html.contains("error[FKC0307]"), "one kernel, two contracts");
    assert!(
        !html.contains("contract error found"),
        "terminal summary in the page"
    );
    let inventory = page(&dir, "inventory.html");
    assert!(inventory.contains("2 contracts: 1 verified when this page was built, 1 failing"));
    assert!(inventory.contains("pools.html#fkc-bad-pool"));
    assert!(inventory.contains("fkc-badge-error\">failing</span>"));
}
