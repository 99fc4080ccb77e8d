//! A child provider's processes: up to `jobs` sessions of the same command, each serving one
//! call at a time, started on demand and started again after a crash. Each call's answer is
//! turned into a [`CallOutcome`] here, its outputs checked against what the host accepts before
//! anything is decoded.

use super::child::{Exchange, Fault, Session};
use super::{CallOutcome, Crash, ProviderConfig};
use fkc_provider::protocol::{Answer, Method, WireTensor};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Outputs of at most this many elements are always decoded; larger ones only when the
/// contract's shape rule gives at least as many for the sample.
pub const DECODED_ALWAYS: usize = 1 << 16;

/// The sessions of one provider command.
#[derive(Debug)]
pub struct Pool {
    config: ProviderConfig,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug)]
struct State {
    /// Sessions waiting for a call.
    idle: Vec<Session>,
    /// Sessions alive (idle or serving) or being started.
    live: usize,
}

impl Pool {
    /// A pool holding the session that answered the start.
    pub fn new(config: ProviderConfig, first: Session) -> Pool {
        Pool {
            config,
            state: Mutex::new(State {
                idle: vec![first],
                live: 1,
            }),
            freed: Condvar::new(),
        }
    }

    /// Sends `method` on a free session (starting one when fewer than `jobs` run) and awaits
    /// its answer; a session that crashed is dropped (ended), the others wait for the next.
    pub fn exchange(&self, method: Method, call: Option<&str>) -> Exchange {
        let (mut session, waited) = match self.take() {
            Ok(taken) => taken,
            Err(crash) => {
                return Exchange {
                    answer: Err(crash),
                    paths: Vec::new(),
                    faults: Vec::new(),
                    waited: Duration::ZERO,
                };
            }
        };
        let mut exchange = session.ask(method, call, self.config.call_timeout);
        self.give_back(exchange.answer.is_ok().then_some(session));
        exchange.waited = waited;
        exchange
    }

    /// Asks every idle session for its description once more, so that a second answer still
    /// on its way to the host is read: the faults found.
    pub fn settle(&self) -> Vec<Fault> {
        let sessions = std::mem::take(&mut self.lock().idle);
        let mut faults = Vec::new();
        for mut session in sessions {
            let exchange = session.ask(Method::Describe, None, self.config.call_timeout);
            faults.extend(exchange.faults);
            self.give_back(exchange.answer.is_ok().then_some(session));
        }
        faults
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A free session: an idle one, a new one while fewer than `jobs` run, or the next one
    /// given back; with the time spent waiting for another call to give one back (not the
    /// provider's time: starting a session is).
    fn take(&self) -> Result<(Session, Duration), Crash> {
        let mut state = self.lock();
        let mut waited = Duration::ZERO;
        loop {
            if let Some(session) = state.idle.pop() {
                return Ok((session, waited));
            }
            if state.live < self.config.jobs {
                state.live += 1;
                drop(state);
                return match Session::greeted(&self.config) {
                    Ok((session, _)) => Ok((session, waited)),
                    Err(error) => {
                        self.give_back(None);
                        Err(Crash::Died(format!("starting it again failed: {error}")))
                    }
                };
            }
            let since = Instant::now();
            state = self
                .freed
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            waited += since.elapsed();
        }
    }

    /// Returns a session after a call (`None`: it is gone).
    fn give_back(&self, session: Option<Session>) {
        let mut state = self.lock();
        match session {
            Some(session) => state.idle.push(session),
            None => state.live = state.live.saturating_sub(1),
        }
        drop(state);
        self.freed.notify_one();
    }
}

/// What a call's answer means; `expected` gives, per output, the elements the contract's shape
/// rule computes for the sample (when known): larger outputs are not decoded.
pub fn outcome_of(answer: Result<Answer, Crash>, expected: Option<&[usize]>) -> CallOutcome {
    match answer {
        Ok(Answer::Outputs(outputs)) => decode_outputs(&outputs, expected),
        Ok(Answer::Rejected(rejection)) => CallOutcome::Rejected(rejection.message),
        Ok(Answer::Panicked { message }) => CallOutcome::Crashed(Crash::Panicked(message)),
        Ok(Answer::Error { message }) => CallOutcome::Crashed(Crash::Protocol(format!(
            "it answered the call with an error: {message}"
        ))),
        Ok(other) => CallOutcome::Crashed(Crash::Protocol(format!(
            "it answered a call with {}",
            super::child::clip(&format!("{other:?}"))
        ))),
        Err(crash) => CallOutcome::Crashed(crash),
    }
}

fn decode_outputs(outputs: &[WireTensor], expected: Option<&[usize]>) -> CallOutcome {
    for (index, output) in outputs.iter().enumerate() {
        let wanted = expected.and_then(|e| e.get(index)).copied().unwrap_or(0);
        let limit = wanted.max(DECODED_ALWAYS);
        if output.elements().is_none_or(|count| count > limit) {
            return CallOutcome::Crashed(Crash::Oversized(format!(
                "output {index} declares the shape {:?}, more than {limit} elements (the larger of {DECODED_ALWAYS} and the {wanted} the contract's shape rule gives for this sample); it was not decoded",
                output.shape
            )));
        }
        if let Err(error) = output.check_length() {
            return CallOutcome::Crashed(Crash::Protocol(format!(
                "it sent a malformed output: {error}"
            )));
        }
    }
    let decoded: Result<Vec<_>, _> = outputs.iter().map(WireTensor::decode).collect();
    match decoded {
        Ok(outputs) => CallOutcome::Outputs(outputs),
        Err(error) => CallOutcome::Crashed(Crash::Protocol(format!(
            "it sent a malformed output: {error}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use fkc_provider::DType;

    fn wire(shape: &[usize], digits: usize) -> WireTensor {
        WireTensor {
            dtype: DType::F32,
            shape: shape.to_vec(),
            bits: "0".repeat(digits),
        }
    }

    #[test]
    fn outputs_larger_than_the_contract_says_are_not_decoded() {
        // Far more elements than the sample's shape rule gives: refused before decoding (the
        // bits are not even there).
        let big = wire(&[13_000_000], 8);
        let CallOutcome::Crashed(Crash::Oversized(message)) =
            outcome_of(Ok(Answer::Outputs(vec![big])), Some(&[6]))
        else {
            panic!()
        };
        assert!(message.contains("[13000000]"), "{message}");
        assert!(message.contains("65536"), "{message}");
        // A small wrong shape is decoded: the gate reports the shape (FKC0403).
        let small = wire(&[2, 4], 64);
        assert!(matches!(
            outcome_of(Ok(Answer::Outputs(vec![small])), Some(&[6])),
            CallOutcome::Outputs(_)
        ));
        // A large output the contract asks for is decoded.
        let asked = wire(&[70_000], 8 * 70_000);
        assert!(matches!(
            outcome_of(Ok(Answer::Outputs(vec![asked.clone()])), Some(&[70_000])),
            CallOutcome::Outputs(_)
        ));
        assert!(matches!(
            outcome_of(Ok(Answer::Outputs(vec![asked])), None),
            CallOutcome::Crashed(Crash::Oversized(_))
        ));
        // Bits that do not fit the declared shape are a protocol fault, found before decoding.
        let short = wire(&[2, 3], 8);
        let CallOutcome::Crashed(Crash::Protocol(message)) =
            outcome_of(Ok(Answer::Outputs(vec![short])), Some(&[6]))
        else {
            panic!()
        };
        assert!(message.contains("needs 48 hexadecimal digits"), "{message}");
    }
}
