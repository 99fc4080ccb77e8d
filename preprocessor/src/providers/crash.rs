//! How a call can fail to return normally, and what each way means for the author: the stable
//! code a contract fails with and the help line that says what to do.

use crate::diag::Code;
use std::time::Duration;

/// A call that did not return normally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Crash {
    /// The kernel panicked (the provider caught it and kept serving).
    Panicked(String),
    /// The provider process died (abort, stack overflow, exit) or closed its stdout; it is
    /// restarted for the next call.
    Died(String),
    /// No answer within the time limit; the provider was killed and is restarted, and the
    /// entry point is marked hung.
    TimedOut(Duration),
    /// Not called: the entry point hung earlier in this build (its time limit).
    Hung(Duration),
    /// The provider broke the protocol on this call (the message says how); it is restarted.
    Protocol(String),
    /// The answer was larger than the host accepts (the message names the limit); it was not
    /// read, and the provider is restarted.
    Oversized(String),
    /// Not called: the provider's time budget is spent (the message names the slowest
    /// kernels).
    ProviderBudget(String),
    /// Not called: the build's time budget is spent (the message names the slowest kernels).
    BuildBudget(String),
}

impl Crash {
    /// The code a contract fails with.
    pub fn code(&self) -> Code {
        match self {
            Crash::Panicked(_) | Crash::Died(_) => Code::KernelCrashed,
            Crash::TimedOut(_) => Code::KernelTimedOut,
            Crash::Hung(_) => Code::EntryPointHung,
            Crash::Protocol(_) => Code::ProviderProtocolFault,
            Crash::Oversized(_) => Code::FrameLimit,
            Crash::ProviderBudget(_) => Code::ProviderBudget,
            Crash::BuildBudget(_) => Code::BuildBudget,
        }
    }

    /// What the author can do about it.
    pub fn help(&self) -> &'static str {
        match self {
            Crash::Panicked(_) | Crash::Died(_) => {
                "a kernel must refuse bad input with an error, never crash: fix the kernel, then rebuild the provider"
            }
            Crash::TimedOut(_) | Crash::Hung(_) => {
                "make the kernel return on this input (or raise `call-timeout-ms` in the provider's table of book.toml if it is only slow)"
            }
            Crash::Protocol(_) => {
                "answer every request exactly once, repeating its `id`, one JSON object per line, and log to stderr only (see the format reference's provider protocol)"
            }
            Crash::Oversized(_) => {
                "return outputs of the shape the contract's shape rule gives (or raise `max-line-bytes` in the provider's table of book.toml)"
            }
            Crash::ProviderBudget(_) => {
                "make the slowest kernels faster, give the provider `jobs`, or raise its `budget-ms` in book.toml"
            }
            Crash::BuildBudget(_) => {
                "make the slowest kernels faster, or raise `build-budget-ms` under [preprocessor.fkc] in book.toml"
            }
        }
    }
}

impl std::fmt::Display for Crash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Crash::Panicked(message) => write!(f, "the kernel panicked: {message}"),
            Crash::Died(message) => write!(f, "the provider process died: {message}"),
            Crash::TimedOut(limit) => write!(
                f,
                "the kernel did not return within the time limit ({} ms)",
                limit.as_millis()
            ),
            Crash::Hung(limit) => write!(
                f,
                "not called: it did not return within the time limit ({} ms) earlier in this build, so it is marked hung",
                limit.as_millis()
            ),
            Crash::Protocol(message) => write!(f, "the provider broke the protocol: {message}"),
            Crash::Oversized(message) => write!(f, "the answer is too large: {message}"),
            Crash::ProviderBudget(message) | Crash::BuildBudget(message) => {
                write!(f, "not called: {message}")
            }
        }
    }
}
