//! The provider protocol, version [`PROTOCOL_VERSION`]: one JSON object per line, the host
//! writing a [`Request`] to the provider's stdin and reading one [`Response`] from its stdout.
//!
//! Every request carries an `id` (a number the host never reuses in one session) and every
//! answer repeats it, so that an answer to a call that was never asked, or a second answer to
//! one, is caught at the call that caused it instead of being read as the answer to the next:
//!
//! - `{"id":0,"method":"handshake","protocol":3}` → `{"id":0,"hello":{"protocol":3,
//!   "provider":…,"registry":…,"crate_name":…,"revision":…,"build":…}}` (the provider answers
//!   with its own version, whatever the host's; the host decides whether it can talk to it).
//! - `{"id":1,"method":"describe"}` → `{"id":1,"description":{…}}`: every entry point, op kind
//!   and carrier ([`Description`]).
//! - `{"id":2,"method":"call","symbol":…,"operands":[…],"params":{…}}` →
//!   `{"id":2,"outputs":[…]}`, or `{"id":2,"rejected":{"kind":…,"message":…}}` when the kernel
//!   refuses the call, or `{"id":2,"panicked":{"message":…}}` when it panicked (the provider
//!   keeps serving).
//! - `{"id":3,"method":"execute","op_kind":…,"operands":[…],"params":{…}}`: the same through
//!   the provider's executor, for providers that have one.
//! - A request that cannot be read is answered `{"id":N,"error":{"message":…}}` (`"id":null`
//!   when not even its id can be read).
//!
//! Unknown fields are ignored on both sides, so later versions may add optional fields without
//! breaking older peers. The JSON Schemas of every message are in this crate's `schema/`
//! directory.
//!
//! Tensors travel as dtype, shape and the elements' bit patterns in hexadecimal, fixed width per
//! dtype (two digits per byte: 2 for F8E5M2/I8/U8/Bool, 4 for BF16/F16, 8 for F32/I32, 16 for
//! F64/I64; integers in two's complement, a Bool as `00` or `01`), so every value arrives bit for bit —
//! NaN payloads, signed zeros and subnormals included. An operand is a storage tensor plus the
//! view's shape, element strides (possibly 0 or negative) and start offset, as in DLPack.
//! [`serve`] is the whole provider side; anything a provider prints on stdout besides responses
//! breaks the protocol, so kernels must log to stderr.
//!
//! Version history: 1 had no ids; 2 (this crate since 0.2) added `id` to every message; 3 (since
//! 0.5) added the dtypes F8E5M2, I8, U8, I32, I64 and Bool, and an operand's own `dtype` in the
//! description (an `I64` index operand of an `F32` kernel). A host speaking 3 talks to a
//! provider that greets it with 2 and never sends it a dtype protocol 2 lacks
//! ([`dtypes_of`]); it refuses one that greets it with 1 (mdbook-fkc reports FKC0313).

use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::describe::Description;
use crate::dtype::DType;
use crate::error::{KernelErrorKind, Rejection, TensorError};
use crate::registry::{ParamValues, Registry};
use crate::tensor::AnyTensor;
use crate::view::Operand;

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 3;

/// The oldest protocol version a host of this crate still talks to.
pub const OLDEST_PROTOCOL: u32 = 2;

/// The dtypes a peer speaking protocol `version` knows.
pub fn dtypes_of(version: u32) -> &'static [DType] {
    if version >= 3 {
        &DType::ALL
    } else {
        &DType::PROTOCOL_2
    }
}

/// A tensor on the wire: `{"dtype":"F32","shape":[2,3],"bits":"3f800000…"}`.
///
/// ```
/// use fkc_provider::protocol::WireTensor;
/// use fkc_provider::{AnyTensor, DType};
///
/// let tensor = AnyTensor::from_f64(DType::BF16, &[2], &[1.0, -0.0])?;
/// let wire = WireTensor::encode(&tensor);
/// assert_eq!(wire.bits, "3f808000");
/// assert_eq!(wire.decode()?, tensor);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireTensor {
    /// The element type.
    pub dtype: DType,
    /// The dimensions, outermost first.
    pub shape: Vec<usize>,
    /// Every element's bit pattern, fixed-width lowercase hexadecimal, concatenated in
    /// row-major order.
    pub bits: String,
}

/// An operand view on the wire: a storage tensor and where the view's elements lie in it
/// (element `idx` is at `offset + Σ idx[i]·strides[i]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireOperand {
    /// The whole storage the view looks into.
    pub storage: WireTensor,
    /// The view's dimensions.
    pub shape: Vec<usize>,
    /// The view's strides, in elements (0 broadcasts, negative reverses).
    pub strides: Vec<isize>,
    /// The storage index of the view's first element.
    pub offset: usize,
}

/// A message from the host: its id, which the answer repeats, and what it asks.
///
/// ```
/// use fkc_provider::protocol::{Method, Request};
///
/// let request: Request = serde_json::from_str(r#"{"id":7,"method":"describe"}"#)?;
/// assert_eq!(request, Request { id: 7, method: Method::Describe });
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The request's number; the host never reuses one within a session.
    pub id: u64,
    /// What is asked (the `method` field and its arguments).
    #[serde(flatten)]
    pub method: Method,
}

/// What a request asks, tagged by its `method` field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Method {
    /// The first request of every session: the host's protocol version.
    Handshake {
        /// The version the host speaks.
        protocol: u32,
    },
    /// Asks for the provider's [`Description`].
    Describe,
    /// Calls one entry point.
    Call {
        /// The entry point's symbol, as the description lists it.
        symbol: String,
        /// One operand per input of the entry point, in order; `None` (`null`) for an absent
        /// optional input.
        operands: Vec<Option<WireOperand>>,
        /// Parameter values by field name.
        params: ParamValues,
        /// The instruction-set level to run at (one of the description's `levels`); absent:
        /// the provider's own choice.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        level: Option<String>,
    },
    /// Runs an op kind through the provider's executor.
    Execute {
        /// The op kind, as the description's `op_kinds` lists it.
        op_kind: String,
        /// The operands, in the op's input order.
        operands: Vec<Option<WireOperand>>,
        /// Every field of the op's carrier (shape-carrying ones included).
        params: ParamValues,
    },
}

/// Who answers, and which registry it serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The protocol version the provider speaks.
    pub protocol: u32,
    /// The provider's name (`Registry::name`).
    pub provider: String,
    /// The path of the registry it serves, as front matters name it (`Registry::path`).
    pub registry: String,
    /// The crate every symbol lives in.
    pub crate_name: String,
    /// The provider's revision, shown to readers.
    pub revision: String,
    /// What identifies this build of the provider: for a compiled provider the content hash
    /// of its own binary ([`crate::identity::own_binary`], filled in by [`serve`]); for an
    /// interpreted one a hash of its source files. mdbook-fkc caches the verification of this
    /// provider's contracts only when the greeting carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

/// A message from the provider: the id of the request it answers, and the answer.
///
/// ```
/// use fkc_provider::protocol::{Answer, Response};
///
/// let response = Response {
///     id: Some(3),
///     answer: Answer::Panicked { message: "boom".into() },
///     paths: Vec::new(),
/// };
/// let line = serde_json::to_string(&response)?;
/// assert_eq!(line, r#"{"id":3,"panicked":{"message":"boom"}}"#);
/// assert_eq!(serde_json::from_str::<Response>(&line)?, response);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The id of the request answered; `None` (`null`) only in an `error` answer to a request
    /// whose id could not be read. The field itself is required: an answer without it is not
    /// a protocol 2 answer.
    #[serde(deserialize_with = "required_id")]
    pub id: Option<u64>,
    /// The answer (one of its variants' names is the message's other field).
    #[serde(flatten)]
    pub answer: Answer,
    /// The code paths a call's kernel said it took ([`crate::call::took`]), sorted; empty
    /// (and left out of the message) otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// What a provider answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// The answer to `handshake`.
    Hello(Hello),
    /// The answer to `describe`.
    Description(Description),
    /// The kernel returned these tensors.
    Outputs(Vec<WireTensor>),
    /// The kernel refused the call.
    Rejected(Rejection),
    /// The kernel panicked; the provider caught it and keeps serving.
    Panicked {
        /// The panic's message.
        message: String,
    },
    /// The request could not be served (it was malformed, or asked for an executor the
    /// provider does not have).
    Error {
        /// What was wrong.
        message: String,
    },
}

/// Reads an id that may be `null` but not missing (serde would default a missing `Option`).
fn required_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Option::<u64>::deserialize(d)
}

impl Hello {
    /// The greeting of `registry` (without a build hash).
    pub fn of(registry: &Registry) -> Hello {
        Hello {
            protocol: PROTOCOL_VERSION,
            provider: registry.name.to_owned(),
            registry: registry.path.to_owned(),
            crate_name: registry.crate_name.to_owned(),
            revision: registry.revision.to_owned(),
            build: None,
        }
    }
}

impl WireTensor {
    /// Encodes a tensor.
    pub fn encode(tensor: &AnyTensor) -> WireTensor {
        let width = tensor.dtype().size_bytes() * 2;
        let mut bits = String::with_capacity(tensor.len() * width);
        for pattern in tensor.to_bits() {
            bits.push_str(&format!("{pattern:0width$x}"));
        }
        WireTensor {
            dtype: tensor.dtype(),
            shape: tensor.shape().to_vec(),
            bits,
        }
    }

    /// The number of elements its shape declares (`None` when the product overflows).
    pub fn elements(&self) -> Option<usize> {
        self.shape
            .iter()
            .try_fold(1usize, |count, dim| count.checked_mul(*dim))
    }

    /// Checks, without decoding anything, that `bits` holds exactly the elements the shape
    /// declares.
    pub fn check_length(&self) -> Result<(), WireError> {
        let width = self.dtype.size_bytes() * 2;
        let expected = self
            .elements()
            .and_then(|count| count.checked_mul(width))
            .ok_or_else(|| WireError::TooManyElements(self.shape.clone()))?;
        if self.bits.len() != expected {
            return Err(WireError::Length {
                dtype: self.dtype,
                shape: self.shape.clone(),
                expected,
                digits: self.bits.len(),
            });
        }
        Ok(())
    }

    /// Decodes a tensor, refusing a malformed one. The length is checked against the shape
    /// before any element is decoded.
    pub fn decode(&self) -> Result<AnyTensor, WireError> {
        self.check_length()?;
        let width = self.dtype.size_bytes() * 2;
        let patterns: Result<Vec<u64>, WireError> = self
            .bits
            .as_bytes()
            .chunks(width)
            .map(|digits| {
                std::str::from_utf8(digits)
                    .ok()
                    .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
                    .and_then(|d| u64::from_str_radix(d, 16).ok())
                    .ok_or(WireError::NotHexadecimal)
            })
            .collect();
        AnyTensor::from_bits(self.dtype, &self.shape, &patterns?).map_err(WireError::Tensor)
    }
}

/// Why a tensor or a view on the wire does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The shape's element count overflows.
    TooManyElements(Vec<usize>),
    /// `bits` does not hold the shape's elements.
    Length {
        /// The tensor's element type, as declared.
        dtype: DType,
        /// The tensor's shape, as declared.
        shape: Vec<usize>,
        /// The hexadecimal digits the shape needs.
        expected: usize,
        /// The hexadecimal digits `bits` has.
        digits: usize,
    },
    /// `bits` holds something other than hexadecimal digits.
    NotHexadecimal,
    /// The tensor or the view could not be built (a view outside its storage).
    Tensor(TensorError),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::TooManyElements(shape) => {
                write!(f, "the shape {shape:?} has too many elements")
            }
            WireError::Length {
                dtype,
                shape,
                expected,
                digits,
            } => {
                let width = dtype.size_bytes() * 2;
                write!(
                    f,
                    "a {dtype} tensor of shape {shape:?} needs {expected} hexadecimal digits ({width} per element), not {digits}"
                )
            }
            WireError::NotHexadecimal => write!(f, "bits are not hexadecimal"),
            WireError::Tensor(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for WireError {}

impl WireOperand {
    /// Encodes a view (its whole storage travels).
    pub fn encode(operand: &Operand) -> WireOperand {
        WireOperand {
            storage: WireTensor::encode(operand.storage()),
            shape: operand.shape().to_vec(),
            strides: operand.strides().to_vec(),
            offset: operand.offset(),
        }
    }

    /// Decodes a view, bounds-checked like any other.
    pub fn decode(&self) -> Result<Operand, WireError> {
        let storage = Arc::new(self.storage.decode()?);
        Operand::view(
            storage,
            self.shape.clone(),
            self.strides.clone(),
            self.offset,
        )
        .map_err(WireError::Tensor)
    }
}

/// Encodes a call's operands.
pub fn encode_operands(operands: &[Option<Operand>]) -> Vec<Option<WireOperand>> {
    operands
        .iter()
        .map(|o| o.as_ref().map(WireOperand::encode))
        .collect()
}

fn decode_operands(operands: &[Option<WireOperand>]) -> Result<Vec<Option<Operand>>, WireError> {
    operands
        .iter()
        .map(|o| o.as_ref().map(WireOperand::decode).transpose())
        .collect()
}

/// Answers one request (the provider side, without I/O): what [`serve`] does with each line.
///
/// ```
/// use fkc_provider::protocol::{respond, Answer, Method, Request};
/// # static REGISTRY: fkc_provider::Registry = fkc_provider::Registry {
/// #     name: "demo", path: "demo::REGISTRY", crate_name: "demo", revision: "1",
/// #     op_kinds: &[], variants: &[], entry_points: &[], executor: None, levels: None };
///
/// let answer = respond(&REGISTRY, Request { id: 1, method: Method::Describe });
/// assert_eq!(answer.id, Some(1));
/// assert!(matches!(answer.answer, Answer::Description(_)));
/// ```
pub fn respond(registry: &Registry, request: Request) -> Response {
    let (answer, paths) = answer(registry, request.method);
    Response {
        id: Some(request.id),
        answer,
        paths,
    }
}

/// The answer to `method`, and the paths a call took.
fn answer(registry: &Registry, method: Method) -> (Answer, Vec<String>) {
    let answer = match method {
        Method::Handshake { .. } => Answer::Hello(Hello {
            build: crate::identity::own_binary().map(str::to_owned),
            ..Hello::of(registry)
        }),
        Method::Describe => Answer::Description(Description::from(registry)),
        Method::Call {
            symbol,
            operands,
            params,
            level,
        } => match registry.entry_point(&symbol) {
            Some(kernel) => {
                return crate::call::record(level.as_deref(), || {
                    run(&operands, |ops| (kernel.call)(ops, &params))
                });
            }
            None => Answer::Rejected(Rejection::new(
                KernelErrorKind::UnknownOp,
                format!("no entry point `{symbol}` in {}", registry.path),
            )),
        },
        Method::Execute {
            op_kind,
            operands,
            params,
        } => match registry.executor {
            Some(execute) => run(&operands, |ops| execute(&op_kind, &params, ops)),
            None => Answer::Error {
                message: format!("{} has no executor", registry.name),
            },
        },
    };
    (answer, Vec::new())
}

/// Decodes the operands, runs `call` catching a panic, and encodes what it returned.
fn run(
    operands: &[Option<WireOperand>],
    call: impl FnOnce(&[Option<Operand>]) -> Result<Vec<AnyTensor>, Rejection>,
) -> Answer {
    let operands = match decode_operands(operands) {
        Ok(operands) => operands,
        Err(error) => {
            let message = error.to_string();
            return Answer::Error { message };
        }
    };
    match panic::catch_unwind(AssertUnwindSafe(|| call(&operands))) {
        Ok(Ok(outputs)) => Answer::Outputs(outputs.iter().map(WireTensor::encode).collect()),
        Ok(Err(rejection)) => Answer::Rejected(rejection),
        Err(payload) => Answer::Panicked {
            message: panic_message(payload.as_ref()),
        },
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}

/// Serves `registry` on stdin/stdout until stdin closes: the whole `main` of a provider's
/// `fkc-provider` binary.
///
/// ```no_run
/// # static REGISTRY: fkc_provider::Registry = fkc_provider::Registry {
/// #     name: "demo", path: "demo::REGISTRY", crate_name: "demo", revision: "1",
/// #     op_kinds: &[], variants: &[], entry_points: &[], executor: None, levels: None };
/// fn main() -> std::process::ExitCode {
///     fkc_provider::serve(&REGISTRY)
/// }
/// ```
pub fn serve(registry: &Registry) -> std::process::ExitCode {
    match serve_on(registry, io::stdin().lock(), io::stdout().lock()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fkc-provider: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Serves `registry` on any line reader and writer (what [`serve`] does on stdin and stdout).
///
/// ```
/// # static REGISTRY: fkc_provider::Registry = fkc_provider::Registry {
/// #     name: "demo", path: "demo::REGISTRY", crate_name: "demo", revision: "1",
/// #     op_kinds: &[], variants: &[], entry_points: &[], executor: None, levels: None };
/// let mut answers = Vec::new();
/// fkc_provider::protocol::serve_on(&REGISTRY, &b"{\"id\":4,\"method\":\"describe\"}\n"[..], &mut answers)?;
/// assert!(String::from_utf8_lossy(&answers).starts_with(r#"{"id":4,"description":"#));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn serve_on(
    registry: &Registry,
    mut reader: impl BufRead,
    mut writer: impl Write,
) -> io::Result<()> {
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line.trim().is_empty() {
            continue;
        }
        let response = match serde_json::from_str::<Request>(&line) {
            Ok(request) => respond(registry, request),
            Err(error) => unreadable(&line, &error),
        };
        let text = serde_json::to_string(&response).map_err(io::Error::other)?;
        writer.write_all(text.as_bytes())?;
        writer.write_all(b"\n")?;
        writer.flush()?;
    }
}

/// The `error` answer to a line that is not a request: with its id when that much can be read.
fn unreadable(line: &str, error: &serde_json::Error) -> Response {
    #[derive(Deserialize)]
    struct IdOnly {
        id: Option<u64>,
    }
    let id = serde_json::from_str::<IdOnly>(line)
        .ok()
        .and_then(|only| only.id);
    Response {
        paths: Vec::new(),
        id,
        answer: Answer::Error {
            message: format!("not a protocol {PROTOCOL_VERSION} request: {error}"),
        },
    }
}

#[cfg(test)]
mod tests;
