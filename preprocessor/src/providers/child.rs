//! A provider in a child process: its command runs through the shell in the book's directory,
//! in a process group of its own; requests go to its stdin and each answer is awaited with a
//! time limit. A provider that dies (abort, stack overflow, exit), breaks the protocol or does
//! not answer in time is killed with its whole group and started again for the next call.

use super::ProviderConfig;
use fkc_provider::protocol::{
    Hello, PROTOCOL_VERSION, Request, Response, WireTensor, encode_operands,
};
use fkc_provider::{Description, Operand, ParamValues};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{CallOutcome, Crash};

/// The last bytes of a provider's stderr kept for a crash report.
const STDERR_TAIL: usize = 2048;

/// Why a provider could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// The command could not be run at all.
    Spawn { command: String, error: String },
    /// It ran but did not answer the handshake (it exited, printed something else or hung).
    NoHandshake { command: String, detail: String },
    /// It speaks another protocol version.
    Version { command: String, theirs: u32 },
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
                "the provider command `{command}` speaks provider protocol {theirs}, this mdbook-fkc speaks {PROTOCOL_VERSION}"
            ),
        }
    }
}

/// One running provider process.
#[derive(Debug)]
struct Running {
    process: std::process::Child,
    stdin: ChildStdin,
    lines: Receiver<Option<String>>,
    stderr: Arc<Mutex<String>>,
    stderr_reader: std::thread::JoinHandle<()>,
}

/// A provider child, restarted on demand.
#[derive(Debug)]
pub struct Child {
    config: ProviderConfig,
    running: Option<Running>,
}

impl Child {
    /// Starts the command, greets it and reads its description.
    pub fn start(config: &ProviderConfig) -> Result<(Child, Hello, Description), StartError> {
        let mut child = Child {
            config: config.clone(),
            running: None,
        };
        let hello = child.spawn()?;
        let description = match child.request(&Request::Describe, config.start_timeout) {
            Ok(Response::Description(description)) => description,
            Ok(other) => return Err(child.no_handshake(format!("`describe` answered {other:?}"))),
            Err(crash) => return Err(child.no_handshake(crash.to_string())),
        };
        Ok((child, hello, description))
    }

    fn no_handshake(&self, detail: String) -> StartError {
        StartError::NoHandshake {
            command: self.config.command.clone(),
            detail,
        }
    }

    /// Runs the command and checks its greeting.
    fn spawn(&mut self) -> Result<Hello, StartError> {
        let command = self.config.command.clone();
        let mut process = shell(&command)
            .current_dir(&self.config.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| StartError::Spawn {
                command: command.clone(),
                error: error.to_string(),
            })?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            process.stdin.take(),
            process.stdout.take(),
            process.stderr.take(),
        ) else {
            return Err(StartError::Spawn {
                command,
                error: "its standard streams could not be opened".to_owned(),
            });
        };
        let (stderr, stderr_reader) = tail_of(stderr);
        self.running = Some(Running {
            process,
            stdin,
            lines: read_lines(stdout),
            stderr,
            stderr_reader,
        });
        let handshake = Request::Handshake {
            protocol: PROTOCOL_VERSION,
        };
        match self.request(&handshake, self.config.start_timeout) {
            Ok(Response::Hello(hello)) if hello.protocol == PROTOCOL_VERSION => Ok(hello),
            Ok(Response::Hello(hello)) => {
                self.stop();
                Err(StartError::Version {
                    command,
                    theirs: hello.protocol,
                })
            }
            Ok(other) => {
                self.stop();
                Err(self.no_handshake(format!("it answered {other:?}")))
            }
            Err(crash) => Err(self.no_handshake(crash.to_string())),
        }
    }

    /// Calls an entry point.
    pub fn call(
        &mut self,
        symbol: &str,
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> CallOutcome {
        self.outcome(&Request::Call {
            symbol: symbol.to_owned(),
            operands: encode_operands(operands),
            params: params.clone(),
        })
    }

    /// Runs an op kind through the provider's executor.
    pub fn execute(
        &mut self,
        op_kind: &str,
        operands: &[Option<Operand>],
        params: &ParamValues,
    ) -> CallOutcome {
        self.outcome(&Request::Execute {
            op_kind: op_kind.to_owned(),
            operands: encode_operands(operands),
            params: params.clone(),
        })
    }

    fn outcome(&mut self, request: &Request) -> CallOutcome {
        if self.running.is_none()
            && let Err(error) = self.spawn()
        {
            return CallOutcome::Crashed(Crash::Died(format!("restarting it failed: {error}")));
        }
        match self.request(request, self.config.call_timeout) {
            Ok(Response::Outputs(outputs)) => decode_outputs(&outputs),
            Ok(Response::Rejected(rejection)) => CallOutcome::Rejected(rejection.message),
            Ok(Response::Panicked { message }) => CallOutcome::Crashed(Crash::Panicked(message)),
            Ok(Response::Error { message }) => CallOutcome::Crashed(Crash::Died(format!(
                "it reported a protocol error: {message}"
            ))),
            Ok(other) => {
                self.stop();
                CallOutcome::Crashed(Crash::Died(format!("it answered {other:?} to a call")))
            }
            Err(crash) => CallOutcome::Crashed(crash),
        }
    }

    /// Sends one request and waits for one response. On a crash the process is stopped.
    fn request(&mut self, request: &Request, limit: Duration) -> Result<Response, Crash> {
        let Some(running) = self.running.as_mut() else {
            return Err(Crash::Died("it is not running".to_owned()));
        };
        if let Ok(mut stderr) = running.stderr.lock() {
            stderr.clear(); // a crash report shows what this request made it say
        }
        let mut line = serde_json::to_string(request)
            .map_err(|e| Crash::Died(format!("cannot encode the request: {e}")))?;
        line.push('\n');
        let sent = running
            .stdin
            .write_all(line.as_bytes())
            .and_then(|()| running.stdin.flush());
        let answer = match sent {
            Ok(()) => running.lines.recv_timeout(limit),
            Err(_) => Ok(None), // its stdin is closed: it has exited
        };
        match answer {
            Ok(Some(text)) => serde_json::from_str(&text).map_err(|error| {
                self.stop();
                Crash::Died(format!(
                    "it printed a line that is not a protocol response ({error}): {}",
                    clip(&text)
                ))
            }),
            Ok(None) | Err(RecvTimeoutError::Disconnected) => {
                let status = self.reap();
                Err(Crash::Died(status))
            }
            Err(RecvTimeoutError::Timeout) => {
                self.stop();
                Err(Crash::TimedOut(limit))
            }
        }
    }

    /// Waits for an exited process and describes how it ended, with its stderr's last lines.
    fn reap(&mut self) -> String {
        let Some(mut running) = self.running.take() else {
            return "it is not running".to_owned();
        };
        let status = running
            .process
            .wait()
            .map_or_else(|e| e.to_string(), |s| s.to_string());
        kill_group(&running.process);
        // The pipe closes once the group is gone: give the reader a moment to take the rest.
        for _ in 0..50 {
            if running.stderr_reader.is_finished() {
                break;
            }
            std::thread::sleep(Duration::from_millis(4));
        }
        let stderr = running.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        let stderr = stderr.trim();
        if stderr.is_empty() {
            format!("it exited ({status})")
        } else {
            format!(
                "it exited ({status}); its stderr ends: {}",
                last_words(stderr)
            )
        }
    }

    /// Kills the process and its group.
    fn stop(&mut self) {
        if let Some(mut running) = self.running.take() {
            kill_group(&running.process);
            let _ = running.process.kill();
            let _ = running.process.wait();
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.stop();
    }
}

fn decode_outputs(outputs: &[WireTensor]) -> CallOutcome {
    let decoded: Result<Vec<_>, String> = outputs.iter().map(WireTensor::decode).collect();
    match decoded {
        Ok(outputs) => CallOutcome::Outputs(outputs),
        Err(error) => {
            CallOutcome::Crashed(Crash::Died(format!("it sent a malformed output: {error}")))
        }
    }
}

/// The command through the platform's shell, in a process group of its own (so that a hung
/// grandchild, such as the binary under `cargo run`, is killed with it).
fn shell(command: &str) -> Command {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(command).process_group(0);
        shell
    }
    #[cfg(not(unix))]
    {
        let mut shell = Command::new("cmd");
        shell.arg("/C").arg(command);
        shell
    }
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

/// Reads stdout line by line on a thread; `None` marks the end of the stream.
fn read_lines(stdout: impl Read + Send + 'static) -> Receiver<Option<String>> {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => {
                    let _ = sender.send(None);
                    return;
                }
                Ok(_) if line.trim().is_empty() => {}
                Ok(_) => {
                    if sender.send(Some(line)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    receiver
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

fn clip(text: &str) -> String {
    let line: String = text.trim().chars().take(400).collect();
    line.replace('\n', " ⏎ ")
}
