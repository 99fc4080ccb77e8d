//! Providers that misbehave in exactly one way cannot hurt the build: a real Python provider
//! process (`fixtures/providers-faults/faulty.py`, on the example Python provider's protocol
//! module) serves an honest kernel, `victim`, and a `culprit` that floods, answers out of step,
//! closes its stdout, hangs, is slow, or fails its handshake. Each build ends promptly with the
//! culprit's located diagnostic, in bounded memory, and the victim still verifies.

use crate::support::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where the fixture's contracts are: `victim`'s fence and entry point, `culprit`'s.
const VICTIM: &str = "book/faults.md:16";
const CULPRIT_FENCE: &str = "book/faults.md:62";
const CULPRIT: &str = "book/faults.md:69";

/// How long a whole faulty build may take: about 15 s alone, several times that while the rest
/// of the suite loads both cores, far less than a call's time limit in the tests that set one.
const PROMPTLY: Duration = Duration::from_secs(180);

/// The example Python provider's directory (its `fkc_provider.py`).
pub fn python_provider() -> PathBuf {
    repo_root().join("examples/python-provider")
}

/// A copy of the faults fixture whose provider runs in `mode`, with `extra` lines appended to
/// its provider table.
pub fn faulty_book(mode: &str, extra: &[&str]) -> PathBuf {
    let dir = fixture_book("providers-faults");
    let toml = dir.join("book.toml");
    let mut text = std::fs::read_to_string(&toml)
        .unwrap()
        .replace(
            "@PYTHON_PROVIDER@",
            &python_provider().display().to_string(),
        )
        .replace("@MODE@", mode);
    for line in extra {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&toml, text).unwrap();
    dir
}

/// `check --format json --no-cache` in `dir`, how long it took and its peak resident memory
/// (VmHWM, read from /proc while it runs: a high-water mark, so any reading after the peak
/// holds it).
fn measured_check(dir: &Path) -> (serde_json::Value, Duration, u64) {
    let started = Instant::now();
    let mut child = Command::new(fkc_bin())
        .args(["check", "--format", "json", "--no-cache"])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).unwrap();
            text
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        let hwm = std::fs::read_to_string(&status).ok().and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        });
        peak = peak.max(hwm.unwrap_or(0));
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = started.elapsed();
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    let json = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (json, took, peak)
}

/// `check --format json --no-cache` in `dir`, and how long it took.
fn timed_check(dir: &Path) -> (serde_json::Value, Duration) {
    let (json, took, _) = measured_check(dir);
    (json, took)
}

/// (code, file:line) of every error, in order.
fn errors(json: &serde_json::Value) -> Vec<(String, String)> {
    json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            let at = format!("{}:{}", d["file"].as_str().unwrap(), d["line"]);
            (d["code"].as_str().unwrap().to_owned(), at)
        })
        .collect()
}

/// The one error's message, asserting that it is the only one and is `code` at `at`.
fn only_error(json: &serde_json::Value, code: &str, at: &str) -> String {
    assert_eq!(errors(json), [(code.to_owned(), at.to_owned())], "{json:#}");
    let diagnostic = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["severity"] == "error")
        .unwrap();
    assert!(
        diagnostic["help"].as_array().is_some_and(|h| !h.is_empty()),
        "{diagnostic}"
    );
    diagnostic["message"].as_str().unwrap().to_owned()
}

/// The failing flag of each contract, by kernel.
fn failing(json: &serde_json::Value) -> Vec<(String, bool)> {
    json["contracts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kernel"].as_str().unwrap().to_owned(),
                c["failing"] == true,
            )
        })
        .collect()
}

/// The victim verifies and the culprit fails: nothing else lost.
fn only_the_culprit_fails(json: &serde_json::Value) {
    assert_eq!(
        failing(json),
        [("victim".to_owned(), false), ("culprit".to_owned(), true)],
        "{json:#}"
    );
}

#[test]
fn an_honest_provider_verifies_both_kernels() {
    let (json, _) = timed_check(&faulty_book("honest", &[]));
    assert_eq!(errors(&json), []);
    assert_eq!(json["summary"]["verified"], 2, "{json:#}");
    assert_eq!(json["summary"]["failing"], 0, "{json:#}");
    let victim = &json["contracts"][0];
    assert_eq!(
        format!("{}:{}", victim["file"].as_str().unwrap(), victim["line"]),
        VICTIM
    );
}

#[test]
fn a_flooding_provider_is_cut_at_the_line_limit_in_bounded_memory() {
    let (honest, _, calm) = measured_check(&faulty_book("honest", &[]));
    assert_eq!(errors(&honest), []);
    // 200 MiB of answer on one line: the default limit (4 MiB) stops the reading.
    let (flood, took, flooded) = measured_check(&faulty_book("flood", &[]));
    let message = only_error(&flood, "FKC0318", CULPRIT);
    assert!(
        message.contains("longer than 4194304 bytes (`max-line-bytes`)"),
        "{message}"
    );
    only_the_culprit_fails(&flood);
    // Bounded time (a whole build, on a machine the rest of the suite loads); the sharp
    // check is the memory below.
    assert!(took < PROMPTLY, "took {took:?}");
    eprintln!("peak memory {flooded} KiB with the flood, {calm} KiB without");
    assert!(
        calm > 0 && flooded <= 2 * calm,
        "peak memory {flooded} KiB with the flood, {calm} KiB without"
    );
    // The limit is configurable: 64 KiB is enough for this book's samples.
    let (small, _) = timed_check(&faulty_book("flood", &["max-line-bytes = 65536"]));
    let message = only_error(&small, "FKC0318", CULPRIT);
    assert!(message.contains("longer than 65536 bytes"), "{message}");
}

#[test]
fn outputs_far_larger_than_the_contract_says_are_refused_before_decoding() {
    // 13 million elements (a 104 MB line) for a sample whose shape rule gives a few.
    let (huge, took) = timed_check(&faulty_book("huge", &[]));
    let message = only_error(&huge, "FKC0318", CULPRIT);
    assert!(message.contains("`max-line-bytes`"), "{message}");
    only_the_culprit_fails(&huge);
    assert!(took < PROMPTLY, "took {took:?}");
    // 100 000 elements fit the line, but not the contract's shape: never decoded.
    let (wide, _) = timed_check(&faulty_book("wide", &[]));
    let message = only_error(&wide, "FKC0318", CULPRIT);
    assert!(
        message.contains("declares the shape [100000], more than 65536 elements"),
        "{message}"
    );
    only_the_culprit_fails(&wide);
}

#[test]
fn an_answer_out_of_step_is_a_fault_of_the_call_that_caused_it() {
    // The culprit's first call is answered twice: the second answer is found while another
    // call waits (or when the build settles), and blamed on the culprit alone.
    let (twice, _) = timed_check(&faulty_book("twice", &[]));
    let message = only_error(&twice, "FKC0317", CULPRIT);
    assert!(
        message.contains("(a call of `faulty::culprit_f32`) a second time"),
        "{message}"
    );
    only_the_culprit_fails(&twice);
    // An answer to a request never sent.
    let (unasked, _) = timed_check(&faulty_book("unasked", &[]));
    let message = only_error(&unasked, "FKC0317", CULPRIT);
    assert!(message.contains("which was never sent"), "{message}");
    only_the_culprit_fails(&unasked);
}

#[test]
fn a_closed_stdout_is_a_crash_at_once() {
    // The time limit is 10 minutes: the build must not wait for it (the whole build, the
    // honest kernel's checks included, takes a fraction of it even on a loaded machine).
    let (json, took) = timed_check(&faulty_book("closed", &["call-timeout-ms = 600000"]));
    let message = only_error(&json, "FKC0413", CULPRIT);
    assert!(message.contains("it closed its stdout"), "{message}");
    only_the_culprit_fails(&json);
    assert!(took < PROMPTLY, "took {took:?}");
}

#[test]
fn an_entry_point_that_hung_is_never_called_again() {
    let dir = faulty_book("hang", &["call-timeout-ms = 1000"]);
    let log = dir.join("calls.log");
    let output = Command::new(fkc_bin())
        .args(["check", "--no-cache"])
        .current_dir(&dir)
        .env("FKC_FAULTY_LOG", &log)
        .output()
        .unwrap();
    let text = stderr(&output);
    assert!(text.contains("error[FKC0414]"), "{text}");
    assert!(text.contains(&format!("--> {CULPRIT}:")), "{text}");
    assert!(
        text.contains("now marked hung: the contract's remaining checks"),
        "{text}"
    );
    assert!(stdout(&output).contains(&format!("ok   victim (describe-only) {VICTIM}")));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        calls.lines().filter(|l| *l == "call").count(),
        1,
        "the hung entry point was called again:\n{calls}"
    );
}

#[test]
fn time_budgets_end_a_build_that_would_crawl_naming_the_slowest_kernels() {
    // Every call takes 0.4 s, under the 2 s limit; the provider may spend 1.5 s in all.
    let (json, took) = timed_check(&faulty_book(
        "slow",
        &["call-timeout-ms = 2000", "budget-ms = 1500"],
    ));
    let found = errors(&json);
    assert!(!found.is_empty(), "{json:#}");
    assert!(found.iter().all(|(code, _)| code == "FKC0420"), "{json:#}");
    let message = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "FKC0420")
        .and_then(|d| d["message"].as_str())
        .unwrap_or("");
    assert!(
        message.contains("the provider `faulty` has spent its time budget (1500 ms, `budget-ms`); its slowest kernels: `faulty::"),
        "{json:#}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
    // One process serves one call at a time: the time charged to the calls cannot exceed the
    // check's own (a call waiting for the process is not charged the other call's time).
    let charged: f64 = message
        .split(" s in ")
        .filter_map(|before| before.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(
        charged > 0.0 && charged <= took.as_secs_f64() + 0.1,
        "{charged} s charged in a check of {took:?}: {message}"
    );
    // The whole build's budget stops every provider.
    let dir = faulty_book("slow", &["call-timeout-ms = 2000"]);
    let toml = dir.join("book.toml");
    let text = std::fs::read_to_string(&toml).unwrap().replace(
        "before = [\"links\", \"index\"]",
        "before = [\"links\", \"index\"]\nbuild-budget-ms = 1000",
    );
    std::fs::write(&toml, text).unwrap();
    let (json, took) = timed_check(&dir);
    let found = errors(&json);
    assert!(!found.is_empty(), "{json:#}");
    assert!(found.iter().all(|(code, _)| code == "FKC0421"), "{json:#}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn a_provider_slow_to_start_is_waited_for_and_said_to_be() {
    let dir = faulty_book("late", &[]);
    let output = fkc(&["check", "--no-cache"], &dir);
    let said = stderr(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("mdbook-fkc: waiting for the provider `")
            && said.contains("(a first run may be compiling it; up to 600 s, `start-timeout-ms`)"),
        "{said}"
    );
    // Said once, not once per call or per restart.
    assert_eq!(
        said.matches("waiting for the provider").count(),
        1,
        "{said}"
    );
}

/// The check of a book whose provider fails at the start, in one format.
fn check_format(dir: &Path, format: &str) -> Output {
    let output = fkc(&["check", "--no-cache", "--format", format], dir);
    assert!(!output.status.success(), "{}", stdout(&output));
    output
}

#[test]
fn contracts_of_a_provider_that_failed_its_handshake_or_describe_fail_in_every_format() {
    for (mode, code, says) in [
        (
            "v1",
            "FKC0313",
            "speaks provider protocol 1, this mdbook-fkc speaks 2 to 3",
        ),
        (
            "describe",
            "FKC0316",
            "answered the handshake, but not `describe`",
        ),
    ] {
        let dir = faulty_book(mode, &[]);
        let json: serde_json::Value =
            serde_json::from_str(&stdout(&check_format(&dir, "json"))).unwrap();
        assert_eq!(
            errors(&json),
            [
                (code.to_owned(), "book/faults.md:4".to_owned()),
                ("FKC0320".to_owned(), "book/faults.md:23".to_owned()),
                ("FKC0320".to_owned(), CULPRIT.to_owned()),
            ],
            "{json:#}"
        );
        assert!(json.to_string().contains(says), "{json:#}");
        assert_eq!(
            failing(&json),
            [("victim".to_owned(), true), ("culprit".to_owned(), true)]
        );
        assert_eq!(json["summary"]["failing"], 2, "{json:#}");
        let text = check_format(&dir, "text");
        let listed = stdout(&text);
        assert!(listed.contains("FAIL victim"), "{listed}");
        assert!(listed.contains("FAIL culprit"), "{listed}");
        assert!(
            listed.contains("0 contract(s) verified, 0 unverified, 3 error(s)"),
            "{listed}"
        );
        let sarif: serde_json::Value =
            serde_json::from_str(&stdout(&check_format(&dir, "sarif"))).unwrap();
        let rules: Vec<&str> = sarif["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["ruleId"].as_str())
            .collect();
        assert_eq!(rules, [code, "FKC0320", "FKC0320"], "{sarif:#}");
    }
}

#[test]
fn calls_run_on_several_processes_with_results_independent_of_their_number() {
    let run = |jobs: usize| {
        let dir = faulty_book("honest", &[&format!("jobs = {jobs}")]);
        let log = dir.join("starts.log");
        let output = Command::new(fkc_bin())
            .args(["check", "--format", "json", "--no-cache"])
            .current_dir(&dir)
            .env("FKC_FAULTY_LOG", &log)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        let starts = std::fs::read_to_string(&log).unwrap();
        let processes = starts.lines().filter(|l| l.starts_with("start")).count();
        (stdout(&output), processes)
    };
    let (one, single) = run(1);
    let (three, several) = run(3);
    assert_eq!(single, 1);
    assert!(several >= 2, "jobs = 3 started {several} process(es)");
    assert_eq!(one, three);
    let _ = CULPRIT_FENCE;
}
