//! The Judge (`mdbook-fkc judge [DIR]`): every verified contract's kernel is timed on a ladder of
//! sizes drawn from its admitted domain ([`ladder`]); `overhead_ns + flops / throughput +
//! bytes_moved / bandwidth` is fitted to the median times, non-negative, by least squares
//! ([`crate::calibration::fit`]); and the results — machine, ISA, tool, per contract the ladder,
//! the fitted figures, the residuals and a verdict on how well the contract's formulas explain
//! the times — are written beside the book ([`crate::calibration`], the data the build reads).
//! The book build never times anything: it reads the file and shows each contract's measurements
//! on its page ([`crate::render::judge`], a view like the others), or says they are stale when
//! the contract changed since. This command sits above the book build it reuses.
//!
//! In the order of the stages, [`fit`], [`calibration`] and [`figure`] are data and a view (the
//! build reads them beside `render`); this module and [`ladder`] and `timing` are a command that
//! comes last, after the whole gate.
//!
//! The gate runs first (a book whose contracts fail is not judged); the contracts are then
//! read, resolved and imported again exactly as the build does, and only the kernels run here.

pub mod ladder;
mod timing;

use crate::calibration::{self, Calibration, Judged, Machine};
use crate::config::Options;
use crate::contract::raw::RawContract;
use crate::diag::has_errors;
use crate::providers::{Kernel, Provider, Providers};
use crate::read;
use crate::resolve::{self, BookRegistry, Resolved};
use crate::verify::constraints::{Domain, Verdict};
use crate::verify::sample::{Rng, Sample};
use fkc_provider::DType;
use ladder::Rung;
use mdbook_preprocessor::book::{Book, BookItem};
use mdbook_preprocessor::config::Config;
use std::path::{Path, PathBuf};

/// Admitted samples tried as the ladder's base.
const BASES: usize = 24;
/// The command that writes the calibration, as the pages name it.
pub const COMMAND: &str = "mdbook-fkc judge";

/// Why the Judge did not write a calibration.
#[derive(Debug)]
pub enum JudgeError {
    /// The book could not be checked, or its `[preprocessor.fkc]` does not read.
    Book(String),
    /// The book's contracts fail the gate (the diagnostics were printed).
    Failing,
    /// The calibration file could not be written.
    Calibration(crate::calibration::CalibrationError),
}

impl std::fmt::Display for JudgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JudgeError::Book(why) => write!(f, "{why}"),
            JudgeError::Failing => write!(
                f,
                "the book's contracts fail the gate; fix them before the Judge times their kernels"
            ),
            JudgeError::Calibration(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for JudgeError {}

/// Runs the gate over the book in `root`, then times every verified contract and writes the
/// calibration file beside book.toml. Returns the file's path and a summary, one line per
/// contract.
pub fn judge_book(
    root: &Path,
    config: &Config,
    book: &Book,
) -> Result<(PathBuf, String), JudgeError> {
    let mut checked = book.clone();
    let outcome = crate::preprocessor::process_book_with(
        root,
        config,
        &mut checked,
        crate::pipeline::Deny::default(),
    )
    .map_err(|error| JudgeError::Book(format!("{error:#}")))?;
    if crate::preprocessor::failed(&outcome) {
        crate::preprocessor::print_errors(&outcome.diagnostics);
        return Err(JudgeError::Failing);
    }
    let table: Option<serde_json::Value> = config
        .get(&format!("preprocessor.{}", crate::preprocessor::NAME))
        .map_err(|error| JudgeError::Book(format!("cannot read [preprocessor.fkc]: {error}")))?;
    let options = Options::from_table(table.as_ref())
        .map_err(|error| JudgeError::Book(error.to_string()))?
        .with_root(root);
    let mut providers = Providers::new(judge_limits(options.providers.clone()));
    let mut registry = BookRegistry::default();
    let mut contracts = Vec::new();
    for item in book.iter() {
        let BookItem::Chapter(chapter) = item else {
            continue;
        };
        let Some(path) = chapter.source_path.as_ref().or(chapter.path.as_ref()) else {
            continue;
        };
        let display = config.book.src.join(path).display().to_string();
        contracts.extend(judge_chapter(
            &display,
            &chapter.content,
            &mut providers,
            &mut registry,
            options.verify.seed,
        ));
    }
    let calibration = Calibration {
        format: calibration::FORMAT,
        tool: format!("mdbook-fkc {}", env!("CARGO_PKG_VERSION")),
        command: COMMAND.to_owned(),
        machine: machine(),
        verdict_rule: calibration::verdict_rule(),
        contracts,
    };
    let path = calibration::save(root, &calibration).map_err(JudgeError::Calibration)?;
    Ok((path, summary(&calibration)))
}

/// One line per contract: verdict, kernel, fitted figures.
fn summary(calibration: &Calibration) -> String {
    let mut out = format!(
        "machine: {} ({}, {} CPUs, load average {})\n",
        calibration.machine.cpu,
        calibration.machine.isa,
        calibration.machine.cpus,
        calibration.machine.load_average
    );
    for judged in &calibration.contracts {
        let figures = judged.fit.as_ref().map_or_else(String::new, |fit| {
            format!(
                ": overhead {} ns, {}, {}",
                fit.overhead_ns,
                fit.gflop_per_s
                    .map_or("no flops term".to_owned(), |g| format!("{g} GFLOP/s")),
                fit.gb_per_s
                    .map_or("no bytes term".to_owned(), |g| format!("{g} GB/s"))
            )
        });
        out.push_str(&format!(
            "{:<10} {} ({}, {} rungs){figures} — {}\n",
            judged.verdict,
            judged.kernel,
            judged.dtype,
            judged.ladder.len(),
            judged.reason
        ));
    }
    out
}

/// Every verified contract of one chapter, timed.
fn judge_chapter(
    path: &str,
    content: &str,
    providers: &mut Providers,
    registry: &mut BookRegistry,
    seed: u64,
) -> Vec<Judged> {
    let Some(read) = read::chapter(path, content) else {
        return Vec::new();
    };
    let Some(front) = read.clean_front() else {
        return Vec::new();
    };
    let (provider, found) = crate::import::check_provider(&read.source, front, providers);
    let Some(provider) = provider.filter(|_| !has_errors(&found)) else {
        return Vec::new();
    };
    let mut judged = Vec::new();
    for fence in &read.fences {
        let Some((raw, contract)) = fence.clean() else {
            continue;
        };
        let (resolved, found) = resolve::resolve(
            raw,
            (contract.clone(), Vec::new()),
            Some(front),
            Some(&provider),
            &read.source,
            registry,
            true,
        );
        if has_errors(&found) {
            continue;
        }
        if let Some(one) = judge_contract(path, raw, &resolved, &provider, seed) {
            eprintln!(
                "mdbook-fkc judge: {} ({} rungs)",
                one.kernel,
                one.ladder.len()
            );
            judged.push(one);
        }
    }
    judged
}

/// Times one contract's kernel (its F32 entry point, or its first) on a ladder.
fn judge_contract(
    path: &str,
    raw: &RawContract,
    resolved: &Resolved,
    provider: &Provider,
    seed: u64,
) -> Option<Judged> {
    let entries: Vec<_> = resolved
        .import
        .entry_points
        .iter()
        .filter_map(|e| Some((e.dtype, e.kernel.as_ref()?)))
        .collect();
    let &(dtype, info) = entries
        .iter()
        .find(|(d, _)| *d == DType::F32)
        .or_else(|| entries.first())?;
    // A formula the contract does not state (a count that depends on the values) is no term
    // of the fit; without either there is nothing to fit.
    let has = |name: &str| resolved.contract.formulas.iter().any(|(n, _)| n == name);
    if !has("flops") && !has("bytes_moved") {
        return None;
    }
    let domain = Domain::new(raw, &resolved.contract, &info.params);
    let rungs = best_ladder(&domain, dtype, seed);
    let by_bytes = rungs.iter().all(|r| r.flops == 0.0);
    let kernel = Kernel { info, provider };
    let (mut ladder, timed) = timing::time_ladder(&kernel, &rungs, dtype, by_bytes, seed);
    timing::retime_outliers(&kernel, &mut ladder, &timed, dtype, seed);
    let (fit, residuals, verdict, reason) = calibration::judge_fit(&ladder);
    Some(Judged {
        kernel: raw.kernel.value.clone(),
        file: path.to_owned(),
        revision_hash: resolved.revision_hash.clone(),
        dtype: dtype.name().to_owned(),
        symbol: info.symbol.clone(),
        axis: if by_bytes { "bytes_moved" } else { "flops" }.to_owned(),
        ladder,
        fit,
        residuals,
        verdict: verdict.to_owned(),
        reason,
    })
}

/// The widest ladder any of the first admitted samples grows into.
fn best_ladder(domain: &Domain<'_>, dtype: DType, seed: u64) -> Vec<Rung> {
    let mut rng = Rng::new(seed);
    let mut bases: Vec<Sample> = Vec::new();
    for _ in 0..20_000 {
        if bases.len() >= BASES {
            break;
        }
        let sample = domain.draw(&mut rng);
        if let Verdict::Admitted { .. } = domain.verdict(&sample, dtype)
            && !bases.contains(&sample)
        {
            bases.push(sample);
        }
    }
    let mut best: Vec<Rung> = Vec::new();
    let mut best_score = 0.0;
    for base in &bases {
        let candidates = ladder::candidates(domain, base, dtype);
        let by_bytes = candidates.iter().all(|r| r.flops == 0.0);
        let rungs = ladder::pick(candidates, by_bytes);
        let (Some(first), Some(last)) = (rungs.first(), rungs.last()) else {
            continue;
        };
        let span = last.cost(by_bytes) / first.cost(by_bytes);
        let score = rungs.len() as f64 * span.max(1.0).ln();
        if score > best_score {
            best_score = score;
            best = rungs;
        }
    }
    best
}

/// This machine: CPU model, widest SIMD extension, CPUs, platform.
fn machine() -> Machine {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    Machine {
        cpu,
        isa: isa().to_owned(),
        cpus: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        platform: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        load_average: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|text| {
                text.split_whitespace()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_else(|| "unknown".to_owned()),
    }
}

/// The widest SIMD extension this CPU reports.
fn isa() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512f";
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return "avx2";
        }
        "sse2"
    }
    #[cfg(target_arch = "aarch64")]
    {
        "neon"
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        "scalar"
    }
}

/// The Judge's rungs hold up to 2^20 elements per operand, far more than the gate's samples:
/// their answers may take lines up to [`JUDGE_LINE_BYTES`] whatever the book's limit, and
/// timing them is the Judge's whole work, so no provider's time budget applies.
fn judge_limits(
    mut providers: std::collections::BTreeMap<String, crate::providers::ProviderConfig>,
) -> std::collections::BTreeMap<String, crate::providers::ProviderConfig> {
    for config in providers.values_mut() {
        config.max_line_bytes = config.max_line_bytes.max(JUDGE_LINE_BYTES);
        config.budget = None;
    }
    providers
}

/// The longest answer line the Judge reads: an F64 output of 2^20 elements is 16 MiB of digits.
const JUDGE_LINE_BYTES: usize = 64 << 20;
