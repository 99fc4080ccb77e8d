//! The book in a real browser: headless Chromium loads the seed chapter, the contiguize chapter
//! (a worked example with a strided view's storage), the format reference, the inventory and the
//! diagnostics index in mdBook's light and navy themes at 1280 and 420 px
//! (each page in an iframe of exactly that width, `browser/frame.html`), and a probe script
//! injected at the top of each page (`browser/probe.js`) reports console errors, failed loads,
//! every element wider than the content column, and how many cards, figures and drift plots it
//! found. Chromium is driven with `--headless --dump-dom` only: no driver, no new dependency.
//!
//! Without Chromium the test says so and passes, unless `FKC_REQUIRE_BROWSER` is set (as `.ci/run`
//! does after installing Debian's `chromium`). `FKC_SCREENSHOTS=DIR` also writes a screenshot of
//! every page, theme and width into DIR, to look at.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROBE: &str = include_str!("browser/probe.js");
const FRAME: &str = include_str!("browser/frame.html");

/// (page, what it must show).
const PAGES: &[(&str, Expect)] = &[
    (
        "seed/reference-conv-pool.html",
        Expect {
            contracts: 4,
            figures: 4,
            drifts: 1,
            cards: 5,
        },
    ),
    (
        "contracts/contiguize.html",
        Expect {
            contracts: 1,
            figures: 1,
            drifts: 0,
            cards: 2,
        },
    ),
    (
        "format.html",
        Expect {
            contracts: 0,
            figures: 0,
            drifts: 0,
            cards: 0,
        },
    ),
    (
        "inventory.html",
        Expect {
            contracts: 0,
            figures: 0,
            drifts: 0,
            cards: 1,
        },
    ),
    (
        "diagnostics/index.html",
        Expect {
            contracts: 0,
            figures: 0,
            drifts: 0,
            cards: 30,
        },
    ),
];
const THEMES: &[&str] = &["light", "navy"];
const WIDTHS: &[u32] = &[1280, 420];

/// The least a page must show.
#[derive(Debug, Clone, Copy)]
struct Expect {
    contracts: u64,
    figures: u64,
    drifts: u64,
    cards: u64,
}

/// Chromium: `$CHROMIUM`, or the first of the usual names on PATH that runs.
fn chromium() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            ["chromium", "chromium-browser", "google-chrome", "chrome"]
                .iter()
                .map(PathBuf::from),
        )
        .collect();
    candidates.into_iter().find(|bin| {
        Command::new(bin)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success())
    })
}

/// Writes the probed copy of `page` and its frame beside the page; returns the frame's path.
fn instrument(site: &Path, page: &str, theme: &str, width: u32, height: u32) -> PathBuf {
    let path = site.join(page);
    let html = std::fs::read_to_string(&path).unwrap();
    let probe = PROBE.replace("@THEME@", theme);
    assert!(html.contains("<head>"), "{page} has no <head>");
    let probed = html.replacen("<head>", &format!("<head>\n<script>{probe}</script>"), 1);
    let dir = path.parent().unwrap();
    let stem = format!("fkc-probe-{theme}-{width}");
    std::fs::write(dir.join(format!("{stem}.html")), probed).unwrap();
    let frame = FRAME
        .replace("@PAGE@", &format!("{stem}.html"))
        .replace("@WIDTH@", &width.to_string())
        .replace("@HEIGHT@", &height.to_string());
    let frame_path = dir.join(format!("{stem}-frame.html"));
    std::fs::write(&frame_path, frame).unwrap();
    frame_path
}

fn headless(bin: &Path, profile: &Path, width: u32, height: u32) -> Command {
    let mut command = Command::new(bin);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--virtual-time-budget=8000",
        ])
        .arg(format!("--window-size={},{height}", width.max(500)))
        .arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// The probe's JSON report out of the dumped DOM.
fn report(dom: &str) -> Option<serde_json::Value> {
    let start = dom.find("<pre id=\"fkc-probe-report\">")? + "<pre id=\"fkc-probe-report\">".len();
    let end = start + dom[start..].find("</pre>")?;
    let text = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    serde_json::from_str(&text).ok()
}

/// Loads one page in one theme at one width; returns what is wrong with it.
fn check_page(
    bin: &Path,
    site: &Path,
    page: &str,
    expect: Expect,
    theme: &str,
    width: u32,
) -> Vec<String> {
    let case = format!("{page} ({theme}, {width} px)");
    let frame = instrument(site, page, theme, width, 900);
    let profile = temp_dir("chromium-profile");
    let out = run(headless(bin, &profile, width, 900)
        .arg("--dump-dom")
        .arg(format!("file://{}", frame.display())));
    let dom = stdout(&out);
    let Some(report) = report(&dom) else {
        return vec![format!(
            "{case}: no probe report (status {:?})\n{}",
            out.status,
            stderr(&out)
                .lines()
                .rev()
                .take(10)
                .collect::<Vec<_>>()
                .join("\n")
        )];
    };
    let mut problems = Vec::new();
    if !report["theme"]
        .as_str()
        .unwrap_or("")
        .split(' ')
        .any(|c| c == theme)
    {
        problems.push(format!(
            "{case}: the page is not in the {theme} theme: {}",
            report["theme"]
        ));
    }
    if report["width"].as_u64() != Some(u64::from(width)) {
        problems.push(format!("{case}: the page is {} px wide", report["width"]));
    }
    for error in report["errors"].as_array().into_iter().flatten() {
        problems.push(format!("{case}: {error}"));
    }
    for wide in report["wide"].as_array().into_iter().flatten() {
        problems.push(format!("{case}: wider than the column: {wide}"));
    }
    for (key, least) in [
        ("contracts", expect.contracts),
        ("figures", expect.figures),
        ("drifts", expect.drifts),
        ("cards", expect.cards),
    ] {
        let found = report[key].as_u64().unwrap_or(0);
        if found < least {
            problems.push(format!("{case}: {found} {key}, expected at least {least}"));
        }
    }
    if let Some(dir) = std::env::var_os("FKC_SCREENSHOTS") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let height = 2400;
        let frame = instrument(site, page, theme, width, height);
        let name = format!("{}-{theme}-{width}.png", page.replace(['/', '.'], "_"));
        let shot = run(headless(bin, &profile, width, height)
            .arg(format!("--screenshot={}", dir.join(&name).display()))
            .arg(format!("file://{}", frame.display())));
        if !shot.status.success() {
            problems.push(format!("{case}: no screenshot: {}", stderr(&shot)));
        }
    }
    let _ = std::fs::remove_dir_all(&profile);
    problems
}

#[test]
fn pages_fit_their_column_in_both_themes_at_both_widths() {
    let Some(bin) = chromium() else {
        assert!(
            std::env::var_os("FKC_REQUIRE_BROWSER").is_none(),
            "FKC_REQUIRE_BROWSER is set but no Chromium was found (set CHROMIUM to its path)"
        );
        eprintln!("skipped: no Chromium on PATH (install Debian's `chromium`, or set CHROMIUM)");
        return;
    };
    let book = project_book();
    let site = book.join("site");
    let out = run(Command::new(fkc_bin())
        .args(["build", ".", "-d"])
        .arg(&site)
        .current_dir(&book));
    assert!(out.status.success(), "{}", stderr(&out));
    let cases: Vec<(&str, Expect, &str, u32)> = PAGES
        .iter()
        .flat_map(|(page, expect)| {
            THEMES.iter().flat_map(move |theme| {
                WIDTHS
                    .iter()
                    .map(move |width| (*page, *expect, *theme, *width))
            })
        })
        .collect();
    // Two browsers at a time.
    let problems: Vec<String> = cases
        .chunks(cases.len().div_ceil(2))
        .map(|chunk| {
            let (bin, site) = (bin.clone(), site.clone());
            let chunk = chunk.to_vec();
            std::thread::spawn(move || {
                chunk
                    .into_iter()
                    .flat_map(|(page, expect, theme, width)| {
                        check_page(&bin, &site, page, expect, theme, width)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|handle| handle.join().unwrap())
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_probe_reports_an_element_wider_than_the_column() {
    // The check itself must be able to fail: a page with a 2000 px table in a card and a
    // 1500 px Markdown table in mdBook's scrolling wrapper.
    let Some(bin) = chromium() else {
        assert!(std::env::var_os("FKC_REQUIRE_BROWSER").is_none());
        return;
    };
    let site = temp_dir("wide-page");
    std::fs::write(
        site.join("wide.html"),
        "<!DOCTYPE html><html class=\"light\"><head><title>wide</title></head><body><main style=\"max-width:600px\"><div class=\"fkc-card\"><table style=\"width:2000px\"><tr><td>x</td></tr></table></div><div class=\"table-wrapper\" style=\"overflow-x:auto\"><table style=\"width:1500px\"><tr><td>a Markdown table</td></tr></table></div></main><script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    let expect = Expect {
        contracts: 0,
        figures: 1,
        drifts: 0,
        cards: 1,
    };
    let problems = check_page(&bin, &site, "wide.html", expect, "light", 1280);
    let text = problems.join("\n");
    assert!(text.contains("wider than the column"), "{text}");
    // mdBook's table wrapper fits the column but scrolls: that is reported too.
    assert!(
        text.contains("div.table-wrapper in page: content"),
        "{text}"
    );
    assert!(text.contains("console.error: boom"), "{text}");
    assert!(text.contains("0 figures, expected at least 1"), "{text}");
}
