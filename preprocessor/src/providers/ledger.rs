//! The build's ledger of kernel calls: how long each entry point took, per provider, so that a
//! provider's time budget (`budget-ms`) and the whole build's (`build-budget-ms`) can stop a
//! build that would otherwise crawl, and the diagnostic can name the slowest kernels.

use super::Crash;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Time spent in one entry point.
#[derive(Debug, Default, Clone, Copy)]
struct Spent {
    time: Duration,
    calls: u32,
}

/// Every call of one build, by provider and entry point, and the build's clock.
#[derive(Debug)]
pub struct Ledger {
    started: Instant,
    build_budget: Option<Duration>,
    /// provider → entry point → time spent.
    spent: Mutex<HashMap<String, HashMap<String, Spent>>>,
}

/// How many of the slowest kernels a budget diagnostic names.
const SLOWEST: usize = 3;

impl Ledger {
    /// A ledger whose clock starts now; `build_budget` limits the whole build's calls.
    pub fn new(build_budget: Option<Duration>) -> Ledger {
        Ledger {
            started: Instant::now(),
            build_budget,
            spent: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `provider` may be called now: `Err` once the build's budget, or the provider's
    /// own `budget`, is spent.
    pub fn admit(&self, provider: &str, budget: Option<Duration>) -> Result<(), Crash> {
        if let Some(limit) = self.build_budget
            && self.started.elapsed() >= limit
        {
            return Err(Crash::BuildBudget(format!(
                "the build's time budget ({} ms, `build-budget-ms`) is spent; the slowest kernels: {}",
                limit.as_millis(),
                self.slowest(None)
            )));
        }
        if let Some(limit) = budget
            && self.total(provider) >= limit
        {
            return Err(Crash::ProviderBudget(format!(
                "the provider `{provider}` has spent its time budget ({} ms, `budget-ms`); its slowest kernels: {}",
                limit.as_millis(),
                self.slowest(Some(provider))
            )));
        }
        Ok(())
    }

    /// Records one call of `symbol` that took `took`.
    pub fn record(&self, provider: &str, symbol: &str, took: Duration) {
        let Ok(mut spent) = self.spent.lock() else {
            return;
        };
        let of_provider = match spent.get_mut(provider) {
            Some(map) => map,
            None => spent.entry(provider.to_owned()).or_default(),
        };
        let entry = match of_provider.get_mut(symbol) {
            Some(entry) => entry,
            None => of_provider.entry(symbol.to_owned()).or_default(),
        };
        entry.time += took;
        entry.calls += 1;
    }

    /// The time `provider`'s calls took in all.
    fn total(&self, provider: &str) -> Duration {
        self.spent
            .lock()
            .ok()
            .and_then(|spent| {
                spent
                    .get(provider)
                    .map(|m| m.values().map(|s| s.time).sum())
            })
            .unwrap_or_default()
    }

    /// The slowest entry points (of `provider`, or of every provider), slowest first:
    /// "`sym` 41.2 s in 12 calls, …".
    fn slowest(&self, provider: Option<&str>) -> String {
        let Ok(spent) = self.spent.lock() else {
            return "unknown".to_owned();
        };
        let mut all: Vec<(&String, &Spent)> = spent
            .iter()
            .filter(|(name, _)| provider.is_none_or(|p| p == name.as_str()))
            .flat_map(|(_, symbols)| symbols.iter())
            .collect();
        all.sort_by(|a, b| b.1.time.cmp(&a.1.time).then_with(|| a.0.cmp(b.0)));
        if all.is_empty() {
            return "none was called".to_owned();
        }
        all.iter()
            .take(SLOWEST)
            .map(|(symbol, spent)| {
                format!(
                    "`{symbol}` {:.1} s in {} call{}",
                    spent.time.as_secs_f64(),
                    spent.calls,
                    if spent.calls == 1 { "" } else { "s" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_spent_provider_budget_names_its_slowest_kernels() {
        let ledger = Ledger::new(None);
        let budget = Some(Duration::from_secs(10));
        assert!(ledger.admit("slow", budget).is_ok());
        ledger.record("slow", "slow::a_f32", Duration::from_secs(4));
        ledger.record("slow", "slow::b_f32", Duration::from_millis(500));
        ledger.record("slow", "slow::a_f32", Duration::from_secs(4));
        ledger.record("other", "other::c_f32", Duration::from_secs(60));
        assert!(ledger.admit("slow", budget).is_ok(), "8.5 s of 10");
        ledger.record("slow", "slow::b_f32", Duration::from_secs(2));
        let Err(Crash::ProviderBudget(message)) = ledger.admit("slow", budget) else {
            panic!("the budget is spent");
        };
        assert!(message.contains("(10000 ms, `budget-ms`)"), "{message}");
        assert!(
            message.ends_with("`slow::a_f32` 8.0 s in 2 calls, `slow::b_f32` 2.5 s in 2 calls"),
            "{message}"
        );
        assert!(ledger.admit("other", budget).is_err());
        assert!(ledger.admit("other", None).is_ok());
    }

    #[test]
    fn a_spent_build_budget_stops_every_provider() {
        let ledger = Ledger::new(Some(Duration::ZERO));
        ledger.record("p", "p::k_f32", Duration::from_millis(1500));
        let Err(Crash::BuildBudget(message)) = ledger.admit("q", None) else {
            panic!("the build's budget is spent");
        };
        assert!(message.contains("`p::k_f32` 1.5 s in 1 call"), "{message}");
    }
}
