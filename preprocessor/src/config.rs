//! The `[preprocessor.fkc]` table of book.toml. mdBook's own keys (`command`, `before`, `after`,
//! `renderers`, `optional`) are allowed beside ours; anything else is an error, so a misspelt
//! option is never silently ignored.

use crate::cache::Cache;
use crate::diag::did_you_mean;
use crate::providers::{DEFAULT_BUILD_BUDGET, ProviderConfig};
use crate::verify::VerifyOptions;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a failing contract does to the build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Print the diagnostics and fail the build (the CI gate; the default).
    #[default]
    Bail,
    /// Show each failure in the page as an error box, warn on stderr, and keep building
    /// (for `mdbook serve`).
    Continue,
}

/// The options of `[preprocessor.fkc]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub on_failure: OnFailure,
    /// A directory whose `NAME.html.tera` files replace the built-in templates (relative to the
    /// book root).
    pub template_dir: Option<PathBuf>,
    /// How much the behavioural gate samples (`samples`, `seed`).
    pub verify: VerifyOptions,
    /// `[preprocessor.fkc.provider.NAME]` tables: provider commands by name.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `cache = false` verifies every contract afresh on every build.
    pub no_cache: bool,
    /// `cache-dir`: where passing verifications are kept (relative to the book root; default
    /// [`DEFAULT_CACHE_DIR`]).
    pub cache_dir: Option<PathBuf>,
    /// `jobs`: contracts verified at once (default: the machine's threads).
    pub jobs: Option<usize>,
    /// `build-budget-ms`: how long the build's kernel calls may go on (`None`: the default,
    /// [`DEFAULT_BUILD_BUDGET`]).
    pub build_budget: Option<Duration>,
}

/// Where the verification cache lives by default, relative to the book root: the target
/// directory, beside the build output and never among the book's sources.
pub const DEFAULT_CACHE_DIR: &str = "target/fkc-cache";

const OWN_KEYS: &[&str] = &[
    "on-failure",
    "template-dir",
    "samples",
    "seed",
    "provider",
    "cache",
    "cache-dir",
    "jobs",
    "build-budget-ms",
];
const PROVIDER_KEYS: &[&str] = &[
    "command",
    "call-timeout-ms",
    "start-timeout-ms",
    "max-line-bytes",
    "jobs",
    "budget-ms",
    "env",
];

/// The most samples a book may ask for per contract (bounded build time).
pub const MAX_SAMPLES: u64 = 1000;
const MDBOOK_KEYS: &[&str] = &["command", "before", "after", "renderers", "optional"];

/// What is wrong with `[preprocessor.fkc]` in book.toml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A key holds a value of the wrong kind or out of its range: the key in full, what it
    /// must be, and what it holds (`None`: not worth repeating).
    Invalid {
        key: String,
        expected: String,
        found: Option<String>,
    },
    /// A key this version does not know: the key in full, and the closest known key or the
    /// list of them.
    Unknown { key: String, hint: String },
    /// A provider's table has no `command`.
    NoCommand { table: String },
    /// `cache-dir` lies among the book's sources.
    CacheAmongSources { dir: PathBuf, src: PathBuf },
}

impl ConfigError {
    fn invalid(key: &str, expected: impl Into<String>, found: &serde_json::Value) -> Self {
        ConfigError::Invalid {
            key: key.to_owned(),
            expected: expected.into(),
            found: Some(found.to_string()),
        }
    }

    fn shape(key: &str, expected: &str) -> Self {
        ConfigError::Invalid {
            key: key.to_owned(),
            expected: expected.to_owned(),
            found: None,
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Invalid {
                key,
                expected,
                found: Some(found),
            } => write!(f, "`{key}` must be {expected}, found {found}"),
            ConfigError::Invalid { key, expected, .. } => write!(f, "`{key}` must be {expected}"),
            ConfigError::Unknown { key, hint } => write!(f, "unknown option `{key}`; {hint}"),
            ConfigError::NoCommand { table } => write!(
                f,
                "`{table}` needs a `command`, for example `cargo run -q --release -p my-backend --bin fkc-provider`"
            ),
            ConfigError::CacheAmongSources { dir, src } => write!(
                f,
                "`preprocessor.fkc.cache-dir` ({}) is inside the book's sources ({}); choose a directory outside them, such as `{DEFAULT_CACHE_DIR}`",
                dir.display(),
                src.display()
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl Options {
    /// The verification cache of the book in `root` whose sources are in `src`: `None` with
    /// `cache = false`; an error when `cache-dir` points among the book's sources (cached
    /// results must never become part of the book).
    pub fn cache(&self, root: &Path, src: &Path) -> Result<Option<Cache>, ConfigError> {
        if self.no_cache {
            return Ok(None);
        }
        let relative = self
            .cache_dir
            .as_deref()
            .unwrap_or(Path::new(DEFAULT_CACHE_DIR));
        let dir = root.join(relative);
        let sources = root.join(src);
        if dir.starts_with(&sources) {
            return Err(ConfigError::CacheAmongSources {
                dir: relative.to_path_buf(),
                src: src.to_path_buf(),
            });
        }
        Ok(Some(Cache::in_dir(dir)))
    }

    /// The build's time budget (`build-budget-ms`, or the default).
    pub fn build_budget(&self) -> Duration {
        self.build_budget.unwrap_or(DEFAULT_BUILD_BUDGET)
    }

    /// Runs every provider command in `root` (the book's root directory).
    pub fn with_root(mut self, root: &std::path::Path) -> Self {
        for provider in self.providers.values_mut() {
            provider.dir = root.to_path_buf();
        }
        self
    }

    /// Reads the table (`None` when book.toml has no `[preprocessor.fkc]`).
    pub fn from_table(table: Option<&serde_json::Value>) -> Result<Self, ConfigError> {
        let mut options = Options::default();
        let Some(table) = table else {
            return Ok(options);
        };
        let Some(entries) = table.as_object() else {
            return Err(ConfigError::shape("[preprocessor.fkc]", "a table"));
        };
        for (key, value) in entries {
            match key.as_str() {
                "on-failure" => options.on_failure = on_failure(value)?,
                "template-dir" => {
                    let dir = value.as_str().ok_or_else(|| {
                        ConfigError::shape("preprocessor.fkc.template-dir", "a string (a directory)")
                    })?;
                    options.template_dir = Some(PathBuf::from(dir));
                }
                "samples" => {
                    options.verify.samples =
                        integer("preprocessor.fkc.samples", value, 1, MAX_SAMPLES)?;
                }
                "seed" => {
                    options.verify.seed = value.as_u64().ok_or_else(|| {
                        let expected = "a non-negative integer";
                        ConfigError::invalid("preprocessor.fkc.seed", expected, value)
                    })?;
                }
                "provider" => options.providers = providers(value)?,
                "cache" => {
                    options.no_cache = !value.as_bool().ok_or_else(|| {
                        ConfigError::invalid("preprocessor.fkc.cache", "true or false", value)
                    })?;
                }
                "cache-dir" => {
                    let dir = value
                        .as_str()
                        .filter(|d| !d.trim().is_empty())
                        .ok_or_else(|| {
                            let expected = "a directory (a string)";
                            ConfigError::shape("preprocessor.fkc.cache-dir", expected)
                        })?;
                    options.cache_dir = Some(PathBuf::from(dir));
                }
                "jobs" => {
                    options.jobs = Some(integer("preprocessor.fkc.jobs", value, 1, 256)?);
                }
                "build-budget-ms" => {
                    options.build_budget = Some(budget("preprocessor.fkc.build-budget-ms", value)?);
                }
                key if MDBOOK_KEYS.contains(&key) => {}
                unknown => return Err(unknown_key(unknown)),
            }
        }
        Ok(options)
    }
}

fn providers(value: &serde_json::Value) -> Result<BTreeMap<String, ProviderConfig>, ConfigError> {
    let tables = value.as_object().ok_or_else(|| {
        let expected = "tables: `[preprocessor.fkc.provider.NAME]`";
        ConfigError::shape("preprocessor.fkc.provider", expected)
    })?;
    tables
        .iter()
        .map(|(name, table)| Ok((name.clone(), provider(name, table)?)))
        .collect()
}

/// A time limit: milliseconds from 1 to 3600000 (an hour), for `key`.
fn millis(key: &str, value: &serde_json::Value) -> Result<Duration, ConfigError> {
    up_to(key, value, 3_600_000)
}

/// A time budget: milliseconds from 1 to 86400000 (a day), for `key`.
fn budget(key: &str, value: &serde_json::Value) -> Result<Duration, ConfigError> {
    up_to(key, value, 86_400_000)
}

fn up_to(key: &str, value: &serde_json::Value, most: u64) -> Result<Duration, ConfigError> {
    value
        .as_u64()
        .filter(|ms| (1..=most).contains(ms))
        .map(Duration::from_millis)
        .ok_or_else(|| {
            let expected = format!("a number of milliseconds from 1 to {most}");
            ConfigError::invalid(key, expected, value)
        })
}

/// An integer from `low` to `high`, for `key`.
fn integer(
    key: &str,
    value: &serde_json::Value,
    low: u64,
    high: u64,
) -> Result<usize, ConfigError> {
    value
        .as_u64()
        .filter(|n| (low..=high).contains(n))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            let expected = format!("an integer from {low} to {high}");
            ConfigError::invalid(key, expected, value)
        })
}

fn provider(name: &str, table: &serde_json::Value) -> Result<ProviderConfig, ConfigError> {
    let at = format!("preprocessor.fkc.provider.{name}");
    let entries = table
        .as_object()
        .ok_or_else(|| ConfigError::shape(&at, "a table with a `command`"))?;
    let mut config = ProviderConfig::new("");
    for (key, value) in entries {
        let full = format!("{at}.{key}");
        match key.as_str() {
            "command" => {
                config.command = value
                    .as_str()
                    .filter(|c| !c.trim().is_empty())
                    .ok_or_else(|| ConfigError::shape(&full, "a non-empty string"))?
                    .to_owned();
            }
            "call-timeout-ms" => config.call_timeout = millis(&full, value)?,
            "start-timeout-ms" => config.start_timeout = millis(&full, value)?,
            "budget-ms" => config.budget = Some(budget(&full, value)?),
            "max-line-bytes" => config.max_line_bytes = integer(&full, value, 1024, 1 << 32)?,
            "jobs" => config.jobs = integer(&full, value, 1, 64)?,
            "env" => config.env = names(&full, value)?,
            unknown => {
                let hint = did_you_mean(unknown, PROVIDER_KEYS.iter().copied()).map_or_else(
                    || format!("the keys are: {}", PROVIDER_KEYS.join(", ")),
                    |s| format!("did you mean `{s}`?"),
                );
                return Err(ConfigError::Unknown { key: full, hint });
            }
        }
    }
    if config.command.is_empty() {
        return Err(ConfigError::NoCommand { table: at });
    }
    Ok(config)
}

/// A list of environment variable names.
fn names(key: &str, value: &serde_json::Value) -> Result<Vec<String>, ConfigError> {
    let wrong = || ConfigError::invalid(key, "a list of environment variable names", value);
    value
        .as_array()
        .ok_or_else(wrong)?
        .iter()
        .map(|name| {
            name.as_str()
                .filter(|n| !n.is_empty() && !n.contains('='))
                .map(str::to_owned)
                .ok_or_else(wrong)
        })
        .collect()
}

fn on_failure(value: &serde_json::Value) -> Result<OnFailure, ConfigError> {
    match value.as_str() {
        Some("bail") => Ok(OnFailure::Bail),
        Some("continue") => Ok(OnFailure::Continue),
        _ => {
            let expected = "\"bail\" or \"continue\"";
            Err(ConfigError::invalid("preprocessor.fkc.on-failure", expected, value))
        }
    }
}

fn unknown_key(key: &str) -> ConfigError {
    let known = OWN_KEYS.iter().chain(MDBOOK_KEYS).copied();
    let hint = match did_you_mean(key, known) {
        Some(suggestion) => format!("did you mean `{suggestion}`?"),
        None => format!("the options are: {}", OWN_KEYS.join(", ")),
    };
    ConfigError::Unknown {
        key: format!("preprocessor.fkc.{key}"),
        hint,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_options_and_allows_mdbook_keys() {
        let table = json!({"command": "x", "before": ["links"], "on-failure": "continue", "template-dir": "t", "samples": 8, "seed": 7});
        let options = Options::from_table(Some(&table)).unwrap();
        assert_eq!(
            options.verify,
            VerifyOptions {
                samples: 8,
                seed: 7,
                ..VerifyOptions::default()
            }
        );
        assert_eq!(options.on_failure, OnFailure::Continue);
        assert_eq!(options.template_dir, Some(PathBuf::from("t")));
        assert_eq!(Options::from_table(None).unwrap(), Options::default());
    }

    #[test]
    fn rejects_unknown_and_invalid_options() {
        let error = Options::from_table(Some(&json!({"on-failur": "bail"}))).unwrap_err();
        assert!(error.to_string().contains("did you mean `on-failure`"), "{error}");
        let error = Options::from_table(Some(&json!({"on-failure": "explode"}))).unwrap_err();
        assert!(error.to_string().contains("\"bail\" or \"continue\""), "{error}");
        let error = Options::from_table(Some(&json!({"samples": 0}))).unwrap_err();
        assert!(error.to_string().contains("from 1 to 1000"), "{error}");
        assert!(Options::from_table(Some(&json!({"seed": -1}))).is_err());
    }

    #[test]
    fn the_cache_is_on_by_default_off_on_request_and_never_among_the_sources() {
        let root = Path::new("/book");
        let src = Path::new("src");
        let default = Options::from_table(None).unwrap();
        assert_eq!(
            default.cache(root, src).unwrap(),
            Some(Cache::in_dir("/book/target/fkc-cache"))
        );
        let off = Options::from_table(Some(&json!({"cache": false}))).unwrap();
        assert_eq!(off.cache(root, src).unwrap(), None);
        let moved = Options::from_table(Some(&json!({"cache-dir": "build-cache"}))).unwrap();
        assert_eq!(
            moved.cache(root, src).unwrap(),
            Some(Cache::in_dir("/book/build-cache"))
        );
        let inside = Options::from_table(Some(&json!({"cache-dir": "src/.cache"}))).unwrap();
        let error = inside.cache(root, src).unwrap_err();
        assert!(error.to_string().contains("inside the book's sources"), "{error}");
        assert!(Options::from_table(Some(&json!({"cache": "no"}))).is_err());
        assert!(Options::from_table(Some(&json!({"jobs": 0}))).is_err());
        let jobs = Options::from_table(Some(&json!({"jobs": 2}))).unwrap();
        assert_eq!(jobs.jobs, Some(2));
    }

    #[test]
    fn reads_provider_tables() {
        let table =
            json!({"provider": {"demo": {"command": "demo-provider", "call-timeout-ms": 250}}});
        let options = Options::from_table(Some(&table))
            .unwrap()
            .with_root(std::path::Path::new("/book"));
        let demo = &options.providers["demo"];
        assert_eq!(demo.command, "demo-provider");
        assert_eq!(demo.call_timeout, Duration::from_millis(250));
        assert_eq!(demo.start_timeout, crate::providers::DEFAULT_START_TIMEOUT);
        assert_eq!(demo.dir, PathBuf::from("/book"));
        let error = Options::from_table(Some(&json!({"provider": {"demo": {}}}))).unwrap_err();
        assert!(error.to_string().contains("needs a `command`"), "{error}");
        let error =
            Options::from_table(Some(&json!({"provider": {"demo": {"comand": "x"}}}))).unwrap_err();
        assert!(error.to_string().contains("did you mean `command`"), "{error}");
        let table = json!({"provider": {"demo": {"command": "x", "call-timeout-ms": 0}}});
        assert!(Options::from_table(Some(&table)).is_err());
    }

    #[test]
    fn reads_limits_budgets_jobs_and_environment_names() {
        let table = json!({"build-budget-ms": 60000, "provider": {"p": {"command": "x",
            "max-line-bytes": 4096, "jobs": 3, "budget-ms": 2500, "env": ["MY_FLAG", "OMP_NUM_THREADS"]}}});
        let options = Options::from_table(Some(&table)).unwrap();
        assert_eq!(options.build_budget(), Duration::from_secs(60));
        let p = &options.providers["p"];
        assert_eq!(p.max_line_bytes, 4096);
        assert_eq!(p.jobs, 3);
        assert_eq!(p.budget, Some(Duration::from_millis(2500)));
        assert_eq!(p.env, ["MY_FLAG", "OMP_NUM_THREADS"]);
        let defaults = Options::from_table(None).unwrap();
        assert_eq!(defaults.build_budget(), DEFAULT_BUILD_BUDGET);
        let defaults = ProviderConfig::new("x");
        assert_eq!(
            defaults.max_line_bytes,
            crate::providers::DEFAULT_MAX_LINE_BYTES
        );
        assert_eq!(defaults.jobs, 1);
        for bad in [
            json!({"jobs": 0}),
            json!({"max-line-bytes": 10}),
            json!({"env": "MY_FLAG"}),
            json!({"env": ["A=B"]}),
            json!({"budget-ms": -1}),
        ] {
            let mut table = bad.as_object().unwrap().clone();
            table.insert("command".to_owned(), json!("x"));
            let book = json!({"provider": {"p": table}});
            assert!(Options::from_table(Some(&book)).is_err(), "{book}");
        }
        let error = Options::from_table(Some(&json!({"build-budget": 1}))).unwrap_err();
        assert!(error.to_string().contains("did you mean `build-budget-ms`"), "{error}");
    }
}
