//! Code paths and instruction-set levels. Every path a contract names (`caps.paths`) must be
//! reached, in every dtype it is named for, by some admitted sample (the kernel reports the
//! paths it takes through `fkc_provider::call::took`); every call runs at every
//! instruction-set level the provider dispatches to and this machine runs, each level bit for
//! bit the main one where the contract makes a bitwise claim, otherwise within its precision.

use std::collections::BTreeSet;

use super::Gate;
use super::run::{AT_LEVEL, Accepted, AtLevel, LevelResult, Runs};
use super::sample::Sample;
use super::shrink::sample_note;
use crate::contract::raw::RawPath;
use crate::contract::schema::Located;
use crate::diag::Code;
use crate::providers::Kernel;
use fkc_provider::{DType, Description};

/// The instruction-set levels the gate runs every call at.
#[derive(Debug, Clone, Default)]
pub(super) struct Levels {
    /// The main run's level (the best this machine runs); `None`: the provider's own choice.
    pub main: Option<String>,
    /// The other levels this machine runs, each compared with the main run.
    pub others: Vec<String>,
    /// The levels the provider lists that this machine cannot run (not verified).
    pub not_here: Vec<String>,
}

impl Levels {
    /// The levels a provider's description lists, split by whether this machine runs them.
    pub fn of(description: &Description) -> Levels {
        let (here, not_here): (Vec<_>, Vec<_>) =
            description.levels.iter().partition(|l| l.runs_here);
        let mut here = here.into_iter().map(|l| l.name.clone());
        Levels {
            main: here.next(),
            others: here.collect(),
            not_here: not_here.into_iter().map(|l| l.name.clone()).collect(),
        }
    }

    /// How to run one sample: at the main level, then at every other one.
    /// One run at the main level alone (no repeat, no other level).
    pub fn main_only(&self) -> Runs<'_> {
        Runs {
            level: self.main.as_deref(),
            ..Runs::default()
        }
    }

    /// Every level the provider lists, this machine's first.
    pub fn all(&self) -> Vec<&str> {
        let here = self.main.iter().chain(&self.others);
        here.chain(&self.not_here).map(String::as_str).collect()
    }

    /// Whether the provider lists `level`.
    pub fn lists(&self, level: &str) -> bool {
        self.all().contains(&level)
    }

    /// Whether this machine runs one of `levels` (any level when none is named, and when the
    /// provider lists none).
    pub fn runs_some(&self, levels: &[Located<String>]) -> bool {
        let here = |l: &&Located<String>| {
            self.main.as_deref() == Some(l.value.as_str()) || self.others.contains(&l.value)
        };
        levels.is_empty() || self.all().is_empty() || levels.iter().any(|l| here(&l))
    }

    pub fn runs(&self, repeat: bool) -> Runs<'_> {
        Runs {
            repeat,
            level: self.main.as_deref(),
            others: &self.others,
        }
    }
}

/// This machine, for the evidence: its processor's name and architecture.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.split_whitespace().collect::<Vec<_>>().join(" "))
        });
    let arch = std::env::consts::ARCH;
    match model {
        Some(model) => format!("{model} ({arch})"),
        None => arch.to_owned(),
    }
}

impl Gate<'_> {
    /// Whether the contract promises bits: an order, exactness or bitwise determinism.
    pub(super) fn claims_bits(&self) -> bool {
        self.claims_order() || self.stated_precision().max_ulp == Some(0) || self.promises_bitwise()
    }

    /// A call's runs at the other levels against its main run: the same bits where the
    /// contract claims bits, otherwise each within the contract's precision. `None` after
    /// reporting a failure.
    pub(super) fn levels_agree(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        accepted: &Accepted,
        predicted: &[Vec<i64>],
    ) -> Option<()> {
        for AtLevel { level, result } in &accepted.at_levels {
            match result {
                LevelResult::Same => {}
                LevelResult::Failed(why) => {
                    let why = why.clone();
                    self.level_differs(kernel, dtype, sample, level, &why);
                    return None;
                }
                LevelResult::Differs { bits, .. } if self.claims_bits() => {
                    let why = first_difference(&accepted.bits, bits, dtype);
                    self.level_differs(kernel, dtype, sample, level, &why);
                    return None;
                }
                LevelResult::Differs { values, .. } => {
                    let note = format!(
                        "at instruction-set level `{level}` (the main run, at `{}`, agreed)",
                        self.levels
                            .main
                            .as_deref()
                            .unwrap_or("the provider's choice")
                    );
                    self.noted(&note, |gate| {
                        gate.values_hold(kernel, dtype, sample, &accepted.inputs, values, predicted)
                    })?;
                }
            }
        }
        if !accepted.at_levels.is_empty() {
            *self.level_samples.entry(dtype).or_default() += 1;
        }
        Some(())
    }

    fn level_differs(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        level: &str,
        why: &str,
    ) {
        let main = self
            .levels
            .main
            .clone()
            .unwrap_or_else(|| "its own choice".to_owned());
        let claims = self.claims_bits();
        let span = self.raw.kernel.span.clone();
        let diagnostic = self.error(
            Code::LevelsDiffer,
            span,
            format!(
                "`{}` at instruction-set level `{level}` disagrees with its run at `{main}`: {why}",
                kernel.symbol
            ),
        );
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        if claims {
            diagnostic.notes.push("the contract claims bits (an order, `max_ulp: 0` or bitwise determinism), so every level must give the same bits".to_owned());
        }
        diagnostic.help.push(format!(
            "fix the `{level}` path of the kernel (users whose processors select it get these results)"
        ));
    }

    /// Records the paths a call of `dtype` reported.
    pub(super) fn paths_reached(&mut self, dtype: DType, paths: &[String]) {
        self.reached
            .entry(dtype)
            .or_default()
            .extend(paths.iter().cloned());
    }

    /// The paths the contract names for `dtype` that no call of it reported yet.
    pub(super) fn unreached(&self, dtype: DType) -> Vec<String> {
        let reached = self.reached.get(&dtype);
        self.named_paths(dtype)
            .into_iter()
            .filter(|p| !reached.is_some_and(|r| r.contains(p)))
            .collect()
    }

    /// The paths the contract names for `dtype` that the current NaN-tail series has not taken
    /// on a sample without a parameter of 1.
    pub(super) fn unreached_by_special(&self, dtype: DType) -> Vec<String> {
        (self.named_paths(dtype).into_iter())
            .filter(|p| !self.special_paths.contains(p))
            .collect()
    }

    /// The paths the contract names for `dtype` that this machine can take (see
    /// [`Levels::runs_some`]).
    pub(super) fn named_paths(&self, dtype: DType) -> Vec<String> {
        self.paths()
            .filter(|p| p.dtypes.is_empty() || p.dtypes.iter().any(|d| d.value == dtype))
            .filter(|p| self.levels.runs_some(&p.levels))
            .map(|p| p.name.value.clone())
            .collect()
    }

    fn paths(&self) -> impl Iterator<Item = &RawPath> {
        self.raw.caps.iter().flat_map(|c| &c.paths)
    }

    /// The named paths of `dtype` with the levels they name that this machine runs but no
    /// call of `dtype` took them at: `levels: [x86-v4, x86-v3]` says the path exists at both.
    fn unreached_at_levels(&self, dtype: DType) -> Vec<(String, String)> {
        let reached = self.reached.get(&dtype);
        let here = |level: &str| {
            self.levels.main.as_deref() == Some(level)
                || self.levels.others.iter().any(|o| o == level)
        };
        self.paths()
            .filter(|p| p.dtypes.is_empty() || p.dtypes.iter().any(|d| d.value == dtype))
            .flat_map(|p| {
                p.levels
                    .iter()
                    .map(move |l| (p.name.value.clone(), l.value.clone()))
            })
            .filter(|(_, level)| here(level))
            .filter(|(path, level)| {
                let taken = format!("{path}{AT_LEVEL}{level}");
                !reached.is_some_and(|r| r.contains(&taken))
            })
            .collect()
    }

    /// The named paths whose instruction-set levels this machine cannot run ("`p` (x86-v4)"),
    /// after reporting every level a path names that the provider does not list (FKC0416: such
    /// a path is reached nowhere).
    fn paths_not_here(&mut self) -> Vec<String> {
        let unknown: Vec<(String, Located<String>)> = self
            .paths()
            .flat_map(|p| {
                p.levels
                    .iter()
                    .map(move |l| (p.name.value.clone(), l.clone()))
            })
            .filter(|(_, level)| !self.levels.lists(&level.value))
            .collect();
        for (path, level) in unknown {
            let listed = self.levels.all().join(", ");
            let diagnostic = self.error(
                Code::PathUnreached,
                level.span.clone(),
                format!(
                    "the code path `{path}` is named for the instruction-set level `{}`, which the provider does not list",
                    level.value
                ),
            );
            diagnostic.label = Some("no such level".to_owned());
            diagnostic.help.push(if listed.is_empty() {
                "the provider lists no levels: drop `levels:` from the path".to_owned()
            } else {
                format!("name a level the provider lists: {listed}")
            });
        }
        self.paths()
            .filter(|p| !self.levels.runs_some(&p.levels))
            .map(|p| {
                let levels: Vec<&str> = p.levels.iter().map(|l| l.value.as_str()).collect();
                format!("`{}` ({})", p.name.value, levels.join(", "))
            })
            .collect()
    }

    /// Every named path reached in each dtype that ran (FKC0416 for one that was not), and the
    /// evidence rows for paths and levels.
    pub(super) fn path_coverage(&mut self, ran: &[DType]) {
        let named: BTreeSet<String> = self.paths().map(|p| p.name.value.clone()).collect();
        let not_here = self.paths_not_here();
        let mut missed = Vec::new();
        for &dtype in ran {
            for path in self.unreached(dtype) {
                missed.push((dtype, path));
            }
        }
        for (dtype, path) in &missed {
            self.path_unreached(*dtype, path);
        }
        for &dtype in ran {
            for (path, level) in self.unreached_at_levels(dtype) {
                if !missed.contains(&(dtype, path.clone())) {
                    self.path_unreached_at(dtype, &path, &level);
                }
            }
        }
        let reported: BTreeSet<&String> = self.reached.values().flatten().collect();
        if !named.is_empty() {
            let per_dtype: Vec<String> = ran
                .iter()
                .map(|&d| {
                    let names = self.named_paths(d);
                    let hit = names.len() - missed.iter().filter(|(m, _)| *m == d).count();
                    format!("{} {hit}/{}", d.name(), names.len())
                })
                .collect();
            let not: Vec<String> = missed
                .iter()
                .map(|(d, p)| format!("`{p}` in {}", d.name()))
                .collect();
            self.evidence.rows.push((
                "code paths reached".to_owned(),
                format!(
                    "{} named in `caps.paths`, reached per dtype: {}{}{}",
                    named.len(),
                    per_dtype.join(", "),
                    if not.is_empty() {
                        String::new()
                    } else {
                        format!("; not reached: {}", not.join(", "))
                    },
                    if not_here.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; not required on this machine, which cannot run their levels: {}",
                            not_here.join(", ")
                        )
                    }
                ),
            ));
        } else if !reported.is_empty() {
            let list: Vec<&str> = reported
                .iter()
                .filter(|p| shown(p))
                .map(|p| p.as_str())
                .collect();
            self.evidence.rows.push((
                "code paths reached".to_owned(),
                format!(
                    "none named (the contract has no `caps.paths`); the kernel reported {}",
                    if list.is_empty() {
                        "none".to_owned()
                    } else {
                        list.join(", ")
                    }
                ),
            ));
        }
        self.levels_evidence(ran);
    }

    fn levels_evidence(&mut self, ran: &[DType]) {
        let Some(main) = self.levels.main.clone() else {
            return;
        };
        let all: Vec<String> = std::iter::once(main)
            .chain(self.levels.others.clone())
            .collect();
        let counts: Vec<String> = ran
            .iter()
            .filter_map(|d| {
                self.level_samples
                    .get(d)
                    .map(|n| format!("{n} {} samples", d.name()))
            })
            .collect();
        let compared = if self.levels.others.is_empty() {
            "the only level this machine runs".to_owned()
        } else if counts.is_empty() {
            self.not_checked(
                "the other instruction-set levels",
                "no sample ran at them (the first checks failed or ran nothing)",
            );
            "the first level alone".to_owned()
        } else {
            format!(
                "{} at each, {} the first",
                counts.join(", "),
                if self.claims_bits() {
                    "bit for bit"
                } else {
                    "bit for bit or within the stated precision of"
                }
            )
        };
        let not_here = if self.levels.not_here.is_empty() {
            String::new()
        } else {
            format!(
                "; not verified (this machine cannot run them): {}",
                self.levels.not_here.join(", ")
            )
        };
        self.evidence.rows.push((
            "instruction-set levels".to_owned(),
            format!("{} on {}: {compared}{not_here}", all.join(", "), machine()),
        ));
    }

    fn path_unreached(&mut self, dtype: DType, path: &str) {
        let Some(named) = self.paths().find(|p| p.name.value == path) else {
            return;
        };
        let span = named.name.span.clone();
        let reported: Vec<String> = self
            .reached
            .get(&dtype)
            .map(|r| r.iter().filter(|p| shown(p)).cloned().collect())
            .unwrap_or_default();
        let diagnostic = self.error(
            Code::PathUnreached,
            span,
            format!("no {} sample reached the code path `{path}`", dtype.name()),
        );
        diagnostic.label = Some("named here".to_owned());
        diagnostic.notes.push(format!(
            "the {} calls reported {}",
            dtype.name(),
            listed(&reported)
        ));
        diagnostic.help.push("widen the contract's domain so that some admitted sample takes the path, restrict the path to the dtypes that take it (`dtypes:`), or remove it if the kernel no longer has it".to_owned());
    }

    /// Reports that `path`, reached at some level, was never taken at `level`, which its
    /// `levels` name.
    fn path_unreached_at(&mut self, dtype: DType, path: &str, level: &str) {
        let Some(named) = self.paths().find(|p| p.name.value == path) else {
            return;
        };
        let span = (named.levels.iter())
            .find(|l| l.value == level)
            .map_or_else(|| named.name.span.clone(), |l| l.span.clone());
        let suffix = format!("{AT_LEVEL}{level}");
        let taken: Vec<String> = (self.reached.get(&dtype).into_iter().flatten())
            .filter_map(|p| p.strip_suffix(&suffix).map(str::to_owned))
            .collect();
        let diagnostic = self.error(
            Code::PathUnreached,
            span,
            format!(
                "no {} sample took the code path `{path}` at {level}, though its `levels` name {level}",
                dtype.name()
            ),
        );
        diagnostic.label = Some("named here".to_owned());
        let note = format!(
            "the {} calls at {level} reported {}",
            dtype.name(),
            listed(&taken)
        );
        diagnostic.notes.push(note);
        diagnostic.help.push(format!("remove {level} from the path's `levels` if the kernel does not take it there, or widen the contract's domain so that some admitted sample takes it at {level}"));
    }
}

/// Paths as a note lists them ("no path" for none).
fn listed(paths: &[String]) -> String {
    if paths.is_empty() {
        "no path".to_owned()
    } else {
        paths.join(", ")
    }
}

/// Whether a reported path is shown as one: not a level marker (`level.x86-v4`), nor a path
/// as taken at a level (`tile.tail@x86-v4`).
fn shown(path: &str) -> bool {
    !path.starts_with("level.") && !path.contains(AT_LEVEL)
}

/// The first element whose bits differ, with both patterns.
fn first_difference(main: &[Vec<u64>], other: &[Vec<u64>], dtype: DType) -> String {
    let width = crate::semantics::float::hex_width(dtype);
    for (output, (a, b)) in main.iter().zip(other).enumerate() {
        if let Some(at) = a.iter().zip(b).position(|(x, y)| x != y) {
            return format!(
                "output {output} element {at} is {:#0width$x} here and {:#0width$x} there",
                b[at], a[at],
            );
        }
        if a.len() != b.len() {
            return format!(
                "output {output} has {} elements here and {} there",
                b.len(),
                a.len()
            );
        }
    }
    "the outputs differ".to_owned()
}
