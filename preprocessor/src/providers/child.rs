//! One provider process: its command runs through the shell in the book's directory, in a
//! process group of its own; each request goes to its stdin with a fresh id and its answer —
//! the line repeating that id — is awaited with a time limit. Lines are bounded ([`Frames`]).
//! A provider that exits or closes its stdout is a crash at once (its exit is watched while an
//! answer is awaited); one that breaks the protocol, answers too much or does not answer in
//! time is killed with its whole group. A second answer to an earlier call is a fault of that
//! call, never taken for the answer of the one waiting.

use super::frames::{Frame, Frames};
use super::{Crash, ProviderConfig};
use fkc_provider::Description;
use fkc_provider::protocol::{
    Answer, Hello, Method, OLDEST_PROTOCOL, PROTOCOL_VERSION, Request, Response,
};
use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a provider may be silent at its start before the build says it is waiting.
const SILENCE_NOTED_AFTER: Duration = Duration::from_secs(3);

/// The last bytes of a provider's stderr kept for a crash report.
const STDERR_TAIL: usize = 2048;
/// How often an exited process is looked for while an answer is awaited.
const WATCH: Duration = Duration::from_millis(25);
/// How long an ended stream waits for the process's exit status before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// Why a provider could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// The command could not be run at all.
    Spawn { command: String, error: String },
    /// It ran but did not answer the handshake (it exited, printed something else or hung).
    NoHandshake { command: String, detail: String },
    /// It speaks another protocol version.
    Version { command: String, theirs: u32 },
    /// It answered the handshake, but not `describe` with a description.
    Describe { command: String, detail: String },
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Spawn { command, error } => {
                write!(f, "the provider command `{command}` cannot start: {error}")
            }
            StartError::NoHandshake { command, detail } => write!(
                f,
                "the provider command `{command}` did not answer the handshake: {detail}"
            ),
            StartError::Version { command, theirs } => write!(
                f,
                "the provider command `{command}` speaks provider protocol {theirs}, this mdbook-fkc speaks {OLDEST_PROTOCOL} to {PROTOCOL_VERSION}"
            ),
            StartError::Describe { command, detail } => write!(
                f,
                "the provider command `{command}` answered the handshake, but not `describe`: {detail}"
            ),
        }
    }
}

/// A second answer to an earlier call, found while another was awaited: a fault of the call
/// it answers (its entry point), reported there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The entry point (or `execute:OP`) of the call answered twice.
    pub symbol: String,
    pub message: String,
}

/// One running provider process and its session.
#[derive(Debug)]
pub struct Session {
    process: std::process::Child,
    /// `None` once the session is ending (closed, so that the provider sees the end).
    stdin: Option<ChildStdin>,
    /// The last line awaited did not come whole (a time-out, an oversized line, the end of the
    /// stream): a provider in that state gets no grace at the end of its session.
    line_failed: bool,
    frames: Frames,
    stderr: Arc<Mutex<String>>,
    stderr_reader: std::thread::JoinHandle<()>,
    next_id: u64,
    /// What each call of this session asked (its entry point), by id.
    asked: BTreeMap<u64, String>,
}

/// What one request got: the answer or why there is none, and the faults found on the way.
#[derive(Debug)]
pub struct Exchange {
    pub answer: Result<Answer, Crash>,
    /// The code paths a call's kernel said it took.
    pub paths: Vec<String>,
    pub faults: Vec<Fault>,
    /// Time the call waited for a free session before it was sent (another call's time).
    pub waited: Duration,
}

impl Session {
    /// Starts the command, greets it and reads its description.
    pub fn start(config: &ProviderConfig) -> Result<(Session, Hello, Description), StartError> {
        let (mut session, hello) = Session::greeted(config)?;
        let describe_error = |detail: String| StartError::Describe {
            command: config.command.clone(),
            detail,
        };
        let exchange = session.ask(Method::Describe, None, config.start_timeout);
        let description = match exchange.answer {
            Ok(Answer::Description(description)) => description,
            Ok(other) => {
                return Err(describe_error(format!(
                    "it answered {}",
                    clip(&format!("{other:?}"))
                )));
            }
            Err(crash) => return Err(describe_error(crash.to_string())),
        };
        Ok((session, hello, description))
    }

    /// Starts the command and checks its greeting.
    pub fn greeted(config: &ProviderConfig) -> Result<(Session, Hello), StartError> {
        let mut session = Session::spawn(config)?;
        let no_handshake = |detail: String| StartError::NoHandshake {
            command: config.command.clone(),
            detail,
        };
        let handshake = Method::Handshake {
            protocol: PROTOCOL_VERSION,
        };
        let id = session
            .send(handshake)
            .map_err(|c| no_handshake(c.to_string()))?;
        let line = match session.first_line(config) {
            Ok(line) => line,
            Err(crash) => return Err(no_handshake(crash.to_string())),
        };
        if let Some(theirs) = other_version(&line) {
            return Err(StartError::Version {
                command: config.command.clone(),
                theirs,
            });
        }
        match serde_json::from_slice::<Response>(&line) {
            Ok(Response {
                id: Some(answered),
                answer: Answer::Hello(hello),
                ..
            }) if answered == id => Ok((session, hello)),
            Ok(other) => Err(no_handshake(format!(
                "it answered {}",
                clip(&format!("{other:?}"))
            ))),
            Err(error) => Err(no_handshake(format!(
                "it printed a line that is not a protocol {PROTOCOL_VERSION} greeting ({error}): {}",
                clip(&String::from_utf8_lossy(&line))
            ))),
        }
    }

    /// Runs the command, its standard streams piped.
    fn spawn(config: &ProviderConfig) -> Result<Session, StartError> {
        let command = config.command.clone();
        let mut shell = shell(&command);
        shell
            .current_dir(&config.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut process = shell.spawn().map_err(|error| StartError::Spawn {
            command: command.clone(),
            error: error.to_string(),
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            process.stdin.take(),
            process.stdout.take(),
            process.stderr.take(),
        ) else {
            kill_group(&process);
            return Err(StartError::Spawn {
                command,
                error: "its standard streams could not be opened".to_owned(),
            });
        };
        let (stderr, stderr_reader) = tail_of(stderr);
        Ok(Session {
            process,
            stdin: Some(stdin),
            line_failed: false,
            frames: Frames::read(stdout, config.max_line_bytes),
            stderr,
            stderr_reader,
            next_id: 0,
            asked: BTreeMap::new(),
        })
    }

    /// Sends one request and awaits its answer for at most `limit`. `call` names the entry
    /// point a call asks for (so that a second answer to it can be told apart). On any crash
    /// but a caught panic the session is over: drop it.
    pub fn ask(&mut self, method: Method, call: Option<&str>, limit: Duration) -> Exchange {
        let mut faults = Vec::new();
        let response = self.send(method).and_then(|id| {
            if let Some(symbol) = call {
                self.asked.insert(id, symbol.to_owned());
            }
            self.await_answer(id, limit, &mut faults)
        });
        let (answer, paths) = match response {
            Ok(response) => (Ok(response.answer), response.paths),
            Err(crash) => (Err(crash), Vec::new()),
        };
        Exchange {
            answer,
            paths,
            faults,
            waited: Duration::ZERO,
        }
    }

    /// Writes one request with a fresh id.
    fn send(&mut self, method: Method) -> Result<u64, Crash> {
        let id = self.next_id;
        self.next_id += 1;
        if let Ok(mut stderr) = self.stderr.lock() {
            stderr.clear(); // a crash report shows what this request made it say
        }
        let mut line = serde_json::to_vec(&Request { id, method })
            .map_err(|e| Crash::Died(format!("cannot encode the request: {e}")))?;
        line.push(b'\n');
        let sent = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(&line).and_then(|()| stdin.flush()),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        };
        match sent {
            Ok(()) => Ok(id),
            Err(_) => Err(Crash::Died(self.ended("its stdin is closed"))),
        }
    }

    /// Reads lines until the one answering `id`; second answers to earlier calls are faults of
    /// those calls.
    fn await_answer(
        &mut self,
        id: u64,
        limit: Duration,
        faults: &mut Vec<Fault>,
    ) -> Result<Response, Crash> {
        let deadline = Instant::now() + limit;
        loop {
            let line = self.next_line(deadline, limit)?;
            let response: Response = serde_json::from_slice(&line).map_err(|error| {
                Crash::Protocol(format!(
                    "it printed a line that is not a protocol {PROTOCOL_VERSION} answer ({error}): {}",
                    clip(&String::from_utf8_lossy(&line))
                ))
            })?;
            match response.id {
                Some(answered) if answered == id => return Ok(response),
                Some(earlier) if earlier < id => match self.asked.get(&earlier) {
                    Some(symbol) => faults.push(Fault {
                        symbol: symbol.clone(),
                        message: format!(
                            "it answered request {earlier} (a call of `{symbol}`) a second time"
                        ),
                    }),
                    None => {
                        return Err(Crash::Protocol(format!(
                            "it answered request {earlier} a second time while request {id} waited"
                        )));
                    }
                },
                Some(never) => {
                    return Err(Crash::Protocol(format!(
                        "it sent an answer to request {never}, which was never sent (request {id} waited)"
                    )));
                }
                None => {
                    return Err(Crash::Protocol(match response.answer {
                        Answer::Error { message } => {
                            format!("it could not read request {id}: {message}")
                        }
                        other => {
                            format!("it answered without an id: {}", clip(&format!("{other:?}")))
                        }
                    }));
                }
            }
        }
    }

    /// The provider's first line, within `start-timeout-ms`. A provider silent for a while says
    /// so once on stderr (a first `cargo run` compiles it for minutes): the author sees why the
    /// build waits, and not a hang.
    fn first_line(&mut self, config: &ProviderConfig) -> Result<Vec<u8>, Crash> {
        let started = Instant::now();
        let deadline = started + config.start_timeout;
        let patience = deadline.min(started + SILENCE_NOTED_AFTER);
        match self.next_line(patience, config.start_timeout) {
            Err(Crash::TimedOut(_)) if patience < deadline => {
                eprintln!(
                    "mdbook-fkc: waiting for the provider `{}` to answer (a first run may be compiling it; up to {} s, `start-timeout-ms`)",
                    config.command,
                    config.start_timeout.as_secs()
                );
                self.next_line(deadline, config.start_timeout)
            }
            answered => answered,
        }
    }

    /// The next line from the provider, watching for its exit; `limit` is only named in a
    /// time-out.
    fn next_line(&mut self, deadline: Instant, limit: Duration) -> Result<Vec<u8>, Crash> {
        let line = self.wait_for_line(deadline, limit);
        self.line_failed = line.is_err();
        line
    }

    fn wait_for_line(&mut self, deadline: Instant, limit: Duration) -> Result<Vec<u8>, Crash> {
        loop {
            let slice = deadline.min(Instant::now() + WATCH);
            match self.frames.next(slice) {
                Some(Frame::Line(line)) => return Ok(line),
                Some(Frame::Oversized(bytes)) => {
                    return Err(Crash::Oversized(format!(
                        "an answer line is longer than {bytes} bytes (`max-line-bytes`); it was not read"
                    )));
                }
                Some(Frame::End) => return Err(Crash::Died(self.ended("it closed its stdout"))),
                None if Instant::now() >= deadline => return Err(Crash::TimedOut(limit)),
                None => {
                    if let Ok(Some(status)) = self.process.try_wait() {
                        // An answer written just before the exit may still be on its way.
                        let grace = Instant::now() + WATCH;
                        if let Some(Frame::Line(line)) = self.frames.next(grace) {
                            return Ok(line);
                        }
                        return Err(Crash::Died(
                            self.with_stderr(format!("it exited ({status})")),
                        ));
                    }
                }
            }
        }
    }

    /// How the process ended once its stream did: its exit status if it exits within a
    /// moment, else `why` (it is killed when the session is dropped).
    fn ended(&mut self, why: &str) -> String {
        let deadline = Instant::now() + EXIT_GRACE;
        let status = loop {
            match self.process.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => break None,
            }
        };
        let what = match status {
            Some(status) => format!("it exited ({status})"),
            None => format!("{why}, though it still runs"),
        };
        self.with_stderr(what)
    }

    /// `what`, with the last words of its stderr.
    fn with_stderr(&mut self, what: String) -> String {
        kill_group(&self.process);
        // The pipe closes once the group is gone: give the reader a moment to take the rest.
        for _ in 0..50 {
            if self.stderr_reader.is_finished() {
                break;
            }
            std::thread::sleep(Duration::from_millis(4));
        }
        let stderr = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        let stderr = stderr.trim();
        if stderr.is_empty() {
            what
        } else {
            format!("{what}; its stderr ends: {}", last_words(stderr))
        }
    }
}

impl Drop for Session {
    /// Ends the session the way a provider expects: its stdin is closed and it has
    /// [`EXIT_GRACE`] to exit (and whatever it pipes through, such as a `tee`, to finish its
    /// writes) — unless its last answer did not come whole: a hung provider, or one still
    /// writing an oversized line, gets no grace. Then its group is killed, taking any process
    /// it left behind.
    fn drop(&mut self) {
        if !self.line_failed {
            self.stdin = None;
            let deadline = Instant::now() + EXIT_GRACE;
            while matches!(self.process.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        kill_group(&self.process);
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// The version of a greeting from another protocol version (which may lack ids or anything
/// else this version needs): `{"hello":{"protocol":N,…}}` with N not one this host talks to.
fn other_version(line: &[u8]) -> Option<u32> {
    #[derive(serde::Deserialize)]
    struct Greeting {
        hello: Version,
    }
    #[derive(serde::Deserialize)]
    struct Version {
        protocol: u32,
    }
    let greeting: Greeting = serde_json::from_slice(line).ok()?;
    let theirs = greeting.hello.protocol;
    (!(OLDEST_PROTOCOL..=PROTOCOL_VERSION).contains(&theirs)).then_some(theirs)
}

/// The command through the platform's shell, in a process group of its own (so that a hung
/// grandchild, such as the binary under `cargo run`, is killed with it). A simple command
/// replaces the shell (`exec`), so that the provider's own stdout is the pipe's only writer:
/// when it closes it, or exits, the host sees the end at once.
fn shell(command: &str) -> Command {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let mut shell = Command::new("sh");
        let line = if is_simple(command) {
            format!("exec {command}")
        } else {
            command.to_owned()
        };
        shell.arg("-c").arg(line).process_group(0);
        shell
    }
    #[cfg(not(unix))]
    {
        let mut shell = Command::new("cmd");
        shell.arg("/C").arg(command);
        shell
    }
}

/// Whether `command` is one simple command (no list, pipeline, grouping, redirection of its
/// own, leading assignment or keyword), which `exec` may run in the shell's place.
fn is_simple(command: &str) -> bool {
    let first = command.split_whitespace().next().unwrap_or("");
    let keyword = ["if", "for", "while", "until", "case", "!", "exec", "{", "("].contains(&first);
    !keyword && !first.contains('=') && !command.contains([';', '&', '|', '(', ')', '{', '}', '\n'])
}

fn kill_group(process: &std::process::Child) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", process.id())])
            .stderr(Stdio::null())
            .status();
    }
    #[cfg(not(unix))]
    {
        let _ = process;
    }
}

/// Keeps the last [`STDERR_TAIL`] bytes of stderr, read on a thread.
fn tail_of(
    stderr: impl Read + Send + 'static,
) -> (Arc<Mutex<String>>, std::thread::JoinHandle<()>) {
    let tail = Arc::new(Mutex::new(String::new()));
    let writer = tail.clone();
    let reader = std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        let mut chunk = [0u8; 1024];
        while let Ok(read) = reader.read(&mut chunk) {
            if read == 0 {
                return;
            }
            let Ok(mut text) = writer.lock() else { return };
            text.push_str(&String::from_utf8_lossy(chunk.get(..read).unwrap_or(&[])));
            if text.len() > STDERR_TAIL {
                let cut = text.len() - STDERR_TAIL;
                let cut = (cut..text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(text.len());
                text.drain(..cut);
            }
        }
    });
    (tail, reader)
}

/// The last few hundred characters of a stream, on one line (the end says why it stopped).
fn last_words(text: &str) -> String {
    let chars: Vec<char> = text.trim().chars().collect();
    let tail: String = chars[chars.len().saturating_sub(400)..].iter().collect();
    tail.replace('\n', " ⏎ ")
}

/// The first few hundred characters of a line.
pub(super) fn clip(text: &str) -> String {
    let line: String = text.trim().chars().take(400).collect();
    line.replace('\n', " ⏎ ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_simple_commands_replace_the_shell() {
        for simple in [
            "python3 provider.py",
            "cargo run -q --release -p my-backend --bin fkc-provider",
            "'/path with space/fkc-provider' --serve \"$HOME\"",
        ] {
            assert!(is_simple(simple), "{simple}");
        }
        for compound in [
            "cd sub && ./provider",
            "echo hi; cat",
            "tee in.log | provider",
            "RUST_LOG=debug provider",
            "(provider)",
            "exec provider",
            "if true; then p; fi",
        ] {
            assert!(!is_simple(compound), "{compound}");
        }
    }
}
