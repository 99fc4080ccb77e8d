//! How long the gate takes: a generated book of 200 contracts (20 chapters of 10, each its own
//! kernel of a linked test registry) checked without a cache, filling an empty cache (cold) and
//! from it (warm); a chapter of 1000 and of 2000 failing contracts (diagnostics must cost linear
//! time); this repository's book checked whole; and, with `MDBOOK` and `MDBOOK_FKC` set, a plain
//! `mdbook build` of the same Markdown without the preprocessor beside `mdbook-fkc build` cold
//! (`--no-cache`) and warm, in the same run. `cargo bench -p mdbook-fkc --bench gate`.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use fkc_provider::{KernelRef, Registry};
use fuel_reference_backend::fkc::ENTRY_POINTS;
use mdbook_fkc::cache::Cache;
use mdbook_fkc::{ChapterInput, Checker, Providers, VerifyOptions};
use std::path::Path;
use std::time::{Duration, Instant};

const FRONT: &str = "---\nfkc_version: 1\nprovider:\n  name: fuel-reference-backend\n  backend: Cpu\n  kernel_source: \"reference-oracle\"\n  link_registry: bench::REGISTRY\n  revision_base: bench\n---\n";

/// Contract `i` of the generated book: the seed's pooling contract (its op kind's semantics the
/// value oracle, its costs checked) with its own name and bounds.
fn contract(i: usize) -> String {
    format!(
        "```fkc\nkernel: pool_{i}\nop_kind: MaxPool2D\nregistrable: false\nbackend: Cpu\nkernel_source: \"reference-oracle\"\nentry_point: \"bench::pool_{i}_f32\"\naccept:\n  inputs:\n    - {{ name: x, dtypes: [F32, F64, BF16, F16], rank: 4, shape_constraint: \"x.dim[0] <= {}\" }}\nop_params:\n  fields:\n    kernel_size: {{ kind: usize, constraint: \"kernel_size > 0 && kernel_size <= x.dim[2] && kernel_size <= x.dim[3]\" }}\n    stride: {{ kind: usize, constraint: \"stride > 0\" }}\nreturn:\n  outputs:\n    - {{ name: out, dtype_rule: passthrough(x), shape_rule: \"from_params(N=x.dim[0], C=x.dim[1], H=(x.dim[2]-kernel_size)/stride+1, W=(x.dim[3]-kernel_size)/stride+1)\" }}\ncost:\n  flops: \"out.dim[0] * out.dim[1] * out.dim[2] * out.dim[3] * kernel_size * kernel_size\"\n  bytes_moved: \"(x.dim[0]*x.dim[1]*x.dim[2]*x.dim[3] + out.dim[0]*out.dim[1]*out.dim[2]*out.dim[3]) * dtype_bytes\"\n  memory: {{ host_bytes: \"out.dim[0]*out.dim[1]*out.dim[2]*out.dim[3] * dtype_bytes\" }}\nprecision:\n  max_ulp: 0\n  nan: ignore\ndeterminism: same_hardware_bitwise\n```\n",
        6 + i % 5
    )
}

/// A registry of 200 pooling kernels `pool_{i}`, each the built-in max_pool2d in every dtype,
/// so that one book can document all of them (a kernel has one contract per book).
fn bench_registry() -> &'static Registry {
    let mut entries: Vec<KernelRef> = Vec::new();
    for i in 0..CONTRACTS {
        let kernel: &'static str = Box::leak(format!("pool_{i}").into_boxed_str());
        for reference in ENTRY_POINTS.iter().filter(|k| k.kernel == "max_pool2d") {
            let symbol = format!("bench::pool_{i}_{}", reference.dtype.suffix());
            entries.push(KernelRef {
                symbol: Box::leak(symbol.into_boxed_str()),
                kernel,
                ..*reference
            });
        }
    }
    Box::leak(Box::new(Registry {
        name: "bench",
        path: "bench::REGISTRY",
        crate_name: "bench",
        entry_points: Box::leak(entries.into_boxed_slice()),
        ..fuel_reference_backend::fkc::REGISTRY
    }))
}

const CONTRACTS: usize = 200;

/// The generated book: 20 chapters of 10 contracts each.
fn generated_chapters() -> Vec<(String, String)> {
    (0..CONTRACTS / 10)
        .map(|chapter| {
            let contracts: String = (0..10).map(|i| contract(chapter * 10 + i)).collect();
            let text = format!("{FRONT}# Pools {chapter}\n\n{contracts}");
            (format!("bench/ch{chapter}.md"), text)
        })
        .collect()
}

/// Checks the generated book once with `cache`, as one build does (one checker, all chapters).
fn check_generated(chapters: &[(String, String)], cache: Option<Cache>) -> Duration {
    let started = Instant::now();
    let mut providers = Providers::default();
    providers.link(bench_registry());
    let mut checker =
        Checker::without_rendering(VerifyOptions::default(), providers).with_cache(cache);
    let inputs = chapter_inputs(chapters);
    for report in checker.chapters(&inputs) {
        let report = report.expect("checks");
        let errors: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{} {}", d.code, d.message))
            .collect();
        assert!(errors.is_empty(), "failed: {errors:?}");
        assert_eq!(report.contracts.len(), 10);
        // The bench times the whole gate: every claim checked, the values by the semantics.
        for contract in &report.contracts {
            assert!(
                contract.unchecked.is_empty(),
                "{}: unchecked {:?}",
                contract.kernel,
                contract.unchecked
            );
        }
    }
    started.elapsed()
}

/// Each (path, text) as a chapter at the book's root.
fn chapter_inputs(chapters: &[(String, String)]) -> Vec<ChapterInput<'_>> {
    chapters
        .iter()
        .map(|(path, text)| ChapterInput {
            path,
            content: text,
            prefix: "",
            page: None,
        })
        .collect()
}

/// (cold without a cache, cold filling an empty cache, warm from that cache).
fn generated_book() -> (Duration, Duration, Duration) {
    let chapters = generated_chapters();
    let dir = std::env::temp_dir().join(format!("fkc-bench-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let uncached = check_generated(&chapters, None);
    let cold = check_generated(&chapters, Some(Cache::in_dir(&dir)));
    let warm = (0..3)
        .map(|_| check_generated(&chapters, Some(Cache::in_dir(&dir))))
        .min()
        .unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (uncached, cold, warm)
}

/// A chapter of `n` contracts failing to read (an unknown field each), checked and its
/// diagnostics rendered for the terminal: the cost must grow linearly with `n`.
fn failing_chapter(n: usize) -> Duration {
    let contracts: String = (0..n)
        .map(|i| format!("```fkc\nkernel: k{i}\nbogus_field: 1\n```\n\n"))
        .collect();
    let text = format!("{FRONT}# Failures\n\n{contracts}");
    let started = Instant::now();
    let mut checker = Checker::without_rendering(VerifyOptions::default(), Providers::default());
    let report = checker.chapter("bench/failures.md", &text).expect("checks");
    let rendered = mdbook_fkc::diag::text::render_all(
        &report.diagnostics,
        mdbook_fkc::diag::text::Style::Plain,
    );
    assert!(rendered.matches("error[").count() >= n);
    started.elapsed()
}

fn this_book(root: &Path) -> (Duration, usize) {
    let mut chapters = Vec::new();
    collect(&root.join("book"), &mut chapters);
    let started = Instant::now();
    let mut checker = Checker::without_rendering(VerifyOptions::default(), Providers::default());
    let inputs = chapter_inputs(&chapters);
    let contracts = checker
        .chapters(&inputs)
        .into_iter()
        .map(|report| report.expect("checks").contracts.len())
        .sum();
    (started.elapsed(), contracts)
}

fn collect(dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            out.push((path.display().to_string(), text));
        }
    }
}

/// The best of `runs` wall times of a command in `dir`.
fn best_of(runs: usize, dir: &Path, program: &Path, args: &[&str]) -> Option<Duration> {
    (0..runs)
        .filter_map(|_| {
            let started = Instant::now();
            let status = std::process::Command::new(program)
                .args(args)
                .current_dir(dir)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .ok()?;
            status.success().then(|| started.elapsed())
        })
        .min()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    println!(
        "machine: {cpu}, {} threads available",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let (uncached, cold, warm) = generated_book();
    let per = |d: Duration| d.as_secs_f64() * 1e3 / 200.0;
    println!(
        "generated book, 200 contracts, {} threads: no cache {:.2} ms per contract; cold (filling the cache) {:.2} ms; warm {:.3} ms",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        per(uncached),
        per(cold),
        per(warm)
    );
    let (thousand, two_thousand) = (failing_chapter(1000), failing_chapter(2000));
    println!(
        "a chapter of 1000 failing contracts: {:.0} ms; of 2000: {:.0} ms ({:.2}x for twice as many)",
        thousand.as_secs_f64() * 1e3,
        two_thousand.as_secs_f64() * 1e3,
        two_thousand.as_secs_f64() / thousand.as_secs_f64()
    );
    let (book, contracts) = this_book(&root);
    println!(
        "this repository's book, check without rendering: {:.1} ms ({contracts} verified contracts, and the diagnostics index's failing examples)",
        book.as_secs_f64() * 1e3
    );
    let (Some(mdbook), Some(fkc)) = (std::env::var_os("MDBOOK"), std::env::var_os("MDBOOK_FKC"))
    else {
        println!("(set MDBOOK and MDBOOK_FKC to time the builds side by side)");
        return;
    };
    let plain = std::env::temp_dir().join("fkc-bench-plain");
    let _ = std::fs::remove_dir_all(&plain);
    let copied = std::fs::create_dir_all(plain.join("book")).is_ok()
        && std::process::Command::new("cp")
            .args(["-r", "book"])
            .arg(&plain)
            .current_dir(&root)
            .status()
            .is_ok_and(|s| s.success())
        && std::fs::write(
            plain.join("book.toml"),
            "[book]\ntitle = \"t\"\nsrc = \"book\"\n[build]\nbuild-dir = \"build\"\n",
        )
        .is_ok();
    if !copied {
        println!("(cannot copy the book for the plain build)");
        return;
    }
    let dest = plain.join("fkc-build");
    let dest = dest.to_string_lossy();
    let plain_build = best_of(5, &plain, Path::new(&mdbook), &["build"]);
    let cold = best_of(
        5,
        &root,
        Path::new(&fkc),
        &["build", "-d", &dest, "--no-cache"],
    );
    let _ = std::process::Command::new(&fkc)
        .args(["build", "-d", &dest])
        .current_dir(&root)
        .output();
    let warm = best_of(5, &root, Path::new(&fkc), &["build", "-d", &dest]);
    if let (Some(plain), Some(cold), Some(warm)) = (plain_build, cold, warm) {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "this book: plain mdbook build {:.0} ms; mdbook-fkc build cold (--no-cache) {:.0} ms = {:.2}x; warm {:.0} ms = {:.2}x (best of 5 each)",
            ms(plain),
            ms(cold),
            ms(cold) / ms(plain),
            ms(warm),
            ms(warm) / ms(plain)
        );
    }
}
