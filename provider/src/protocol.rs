//! The provider protocol, version [`PROTOCOL_VERSION`]: one JSON object per line, the host
//! writing a [`Request`] to the provider's stdin and reading one [`Response`] from its stdout.
//!
//! - `{"method":"handshake","protocol":1}` → `{"hello":{"protocol":1,"provider":…,"registry":…,
//!   "crate_name":…,"revision":…}}` (the provider answers with its own version, whatever the
//!   host's; the host decides whether it can talk to it).
//! - `{"method":"describe"}` → `{"description":{…}}`: every entry point, op kind and carrier.
//! - `{"method":"call","symbol":…,"operands":[…],"params":{…}}` → `{"outputs":[…]}`, or
//!   `{"rejected":{"kind":…,"message":…}}` when the kernel refuses the call, or
//!   `{"panicked":{"message":…}}` when it panicked (the provider keeps serving).
//! - `{"method":"execute","op_kind":…,"operands":[…],"params":{…}}`: the same through the
//!   provider's executor, for providers that have one.
//!
//! Tensors travel as dtype, shape and the elements' bit patterns in hexadecimal, fixed width per
//! dtype (4 digits for BF16/F16, 8 for F32, 16 for F64), so every value arrives bit for bit —
//! NaN payloads, signed zeros and subnormals included. An operand is a storage tensor plus the
//! view's shape, element strides (possibly 0 or negative) and start offset, as in DLPack.
//! [`serve`] is the whole provider side; anything a provider prints on stdout besides responses
//! breaks the protocol, so kernels must log to stderr.

use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::describe::Description;
use crate::dtype::DType;
use crate::error::{KernelErrorKind, Rejection};
use crate::registry::{ParamValues, Registry};
use crate::tensor::AnyTensor;
use crate::view::Operand;

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// A tensor on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireTensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Every element's bit pattern, fixed-width lowercase hexadecimal, concatenated.
    pub bits: String,
}

/// An operand view on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireOperand {
    pub storage: WireTensor,
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
    pub offset: usize,
}

/// A message from the host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Request {
    Handshake {
        protocol: u32,
    },
    Describe,
    Call {
        symbol: String,
        operands: Vec<Option<WireOperand>>,
        params: ParamValues,
    },
    Execute {
        op_kind: String,
        operands: Vec<Option<WireOperand>>,
        params: ParamValues,
    },
}

/// Who answers, and which registry it serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    pub provider: String,
    pub registry: String,
    pub crate_name: String,
    pub revision: String,
    /// The provider binary's own content hash ([`crate::identity::own_binary`]), when it
    /// knows it: mdbook-fkc caches the verification of this provider's contracts only then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

/// A message from the provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    Hello(Hello),
    Description(Description),
    Outputs(Vec<WireTensor>),
    Rejected(Rejection),
    Panicked { message: String },
    Error { message: String },
}

impl Hello {
    /// The greeting of `registry`.
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

    /// Decodes a tensor; a malformed one is an error message.
    pub fn decode(&self) -> Result<AnyTensor, String> {
        let width = self.dtype.size_bytes() * 2;
        if !self.bits.len().is_multiple_of(width) || !self.bits.is_ascii() {
            return Err(format!(
                "{} bits must be {width} hexadecimal digits per element",
                self.dtype
            ));
        }
        let patterns: Result<Vec<u64>, String> = self
            .bits
            .as_bytes()
            .chunks(width)
            .map(|digits| {
                std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| u64::from_str_radix(d, 16).ok())
                    .ok_or_else(|| "bits are not hexadecimal".to_owned())
            })
            .collect();
        AnyTensor::from_bits(self.dtype, &self.shape, &patterns?).map_err(|e| e.to_string())
    }
}

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
    pub fn decode(&self) -> Result<Operand, String> {
        let storage = Arc::new(self.storage.decode()?);
        Operand::view(
            storage,
            self.shape.clone(),
            self.strides.clone(),
            self.offset,
        )
        .map_err(|e| e.to_string())
    }
}

/// Encodes a call's operands.
pub fn encode_operands(operands: &[Option<Operand>]) -> Vec<Option<WireOperand>> {
    operands
        .iter()
        .map(|o| o.as_ref().map(WireOperand::encode))
        .collect()
}

fn decode_operands(operands: &[Option<WireOperand>]) -> Result<Vec<Option<Operand>>, String> {
    operands
        .iter()
        .map(|o| o.as_ref().map(WireOperand::decode).transpose())
        .collect()
}

/// Answers one request (the provider side, without I/O).
pub fn respond(registry: &Registry, request: Request) -> Response {
    match request {
        Request::Handshake { .. } => Response::Hello(Hello {
            build: crate::identity::own_binary().map(str::to_owned),
            ..Hello::of(registry)
        }),
        Request::Describe => Response::Description(Description::from(registry)),
        Request::Call {
            symbol,
            operands,
            params,
        } => match registry.entry_point(&symbol) {
            Some(kernel) => run(&operands, |ops| (kernel.call)(ops, &params)),
            None => Response::Rejected(Rejection::new(
                KernelErrorKind::UnknownOp,
                format!("no entry point `{symbol}` in {}", registry.path),
            )),
        },
        Request::Execute {
            op_kind,
            operands,
            params,
        } => match registry.executor {
            Some(execute) => run(&operands, |ops| execute(&op_kind, &params, ops)),
            None => Response::Error {
                message: format!("{} has no executor", registry.name),
            },
        },
    }
}

/// Decodes the operands, runs `call` catching a panic, and encodes what it returned.
fn run(
    operands: &[Option<WireOperand>],
    call: impl FnOnce(&[Option<Operand>]) -> Result<Vec<AnyTensor>, Rejection>,
) -> Response {
    let operands = match decode_operands(operands) {
        Ok(operands) => operands,
        Err(message) => return Response::Error { message },
    };
    match panic::catch_unwind(AssertUnwindSafe(|| call(&operands))) {
        Ok(Ok(outputs)) => Response::Outputs(outputs.iter().map(WireTensor::encode).collect()),
        Ok(Err(rejection)) => Response::Rejected(rejection),
        Err(payload) => Response::Panicked {
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
/// #     op_kinds: &[], variants: &[], entry_points: &[], executor: None };
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

/// Serves `registry` on any line reader and writer.
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
            Err(error) => Response::Error {
                message: format!("not a protocol {PROTOCOL_VERSION} request: {error}"),
            },
        };
        let text = serde_json::to_string(&response).map_err(io::Error::other)?;
        writer.write_all(text.as_bytes())?;
        writer.write_all(b"\n")?;
        writer.flush()?;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use crate::registry::{KernelRef, OperandDesc};

    const INPUTS: &[OperandDesc] = &[OperandDesc::required("x", 1)];

    fn negate(operands: &[Option<Operand>], _: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
        let x = operands
            .first()
            .and_then(Option::as_ref)
            .ok_or_else(|| Rejection::new(KernelErrorKind::MissingOperand, "x is absent"))?;
        let values: Vec<f64> = x.packed()?.to_f64_vec().iter().map(|v| -v).collect();
        Ok(vec![AnyTensor::from_f64(x.dtype(), x.shape(), &values)?])
    }

    fn explode(_: &[Option<Operand>], _: &ParamValues) -> Result<Vec<AnyTensor>, Rejection> {
        panic!("boom")
    }

    static REGISTRY: Registry = Registry {
        name: "test",
        path: "test::REGISTRY",
        crate_name: "test",
        revision: "1",
        op_kinds: &["Negate"],
        variants: &[],
        entry_points: &[
            KernelRef {
                symbol: "test::negate_bf16",
                kernel: "negate",
                dtype: DType::BF16,
                op_kind: Some("Negate"),
                inputs: INPUTS,
                outputs: &["out"],
                params: &[],
                call: negate,
            },
            KernelRef {
                symbol: "test::explode_f32",
                kernel: "explode",
                dtype: DType::F32,
                op_kind: None,
                inputs: INPUTS,
                outputs: &["out"],
                params: &[],
                call: explode,
            },
        ],
        executor: None,
    };

    fn reversed_bf16() -> Operand {
        let storage = AnyTensor::from_bits(DType::BF16, &[3], &[0x7fc1, 0x8000, 0x0001]).unwrap();
        Operand::view(Arc::new(storage), vec![3], vec![-1], 2).unwrap()
    }

    #[test]
    fn tensors_and_views_travel_bit_for_bit() {
        let view = reversed_bf16();
        let wire = WireOperand::encode(&view);
        assert_eq!(wire.storage.bits, "7fc180000001");
        let back = wire.decode().unwrap();
        assert_eq!(
            back.packed().unwrap().to_bits(),
            vec![0x0001, 0x8000, 0x7fc1]
        );
        let bad = WireTensor {
            bits: "7fc".to_owned(),
            ..wire.storage.clone()
        };
        assert!(bad.decode().is_err());
        let outside = WireOperand { offset: 3, ..wire };
        assert!(outside.decode().is_err());
    }

    #[test]
    fn serves_a_session() {
        let call = Request::Call {
            symbol: "test::negate_bf16".to_owned(),
            operands: encode_operands(&[Some(reversed_bf16())]),
            params: ParamValues::new(),
        };
        let panics = Request::Call {
            symbol: "test::explode_f32".to_owned(),
            operands: Vec::new(),
            params: ParamValues::new(),
        };
        let mut input = String::new();
        for request in [
            Request::Handshake { protocol: 1 },
            Request::Describe,
            call,
            panics,
        ] {
            input.push_str(&serde_json::to_string(&request).unwrap());
            input.push('\n');
        }
        input.push_str("not json\n");
        let mut output = Vec::new();
        serve_on(&REGISTRY, input.as_bytes(), &mut output).unwrap();
        let responses: Vec<Response> = String::from_utf8(output)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(responses.len(), 5);
        // The greeting announces this binary's own build, so verification can be cached by it.
        let hello = Hello {
            build: crate::identity::own_binary().map(str::to_owned),
            ..Hello::of(&REGISTRY)
        };
        assert!(hello.build.is_some());
        assert_eq!(responses[0], Response::Hello(hello));
        let Response::Description(description) = &responses[1] else {
            panic!("{:?}", responses[1]);
        };
        assert_eq!(description.entry_points.len(), 2);
        assert_eq!(description.op_kinds, vec!["Negate".to_owned()]);
        let Response::Outputs(outputs) = &responses[2] else {
            panic!("{:?}", responses[2]);
        };
        // -subnormal, +0.0, -NaN (sign flipped, payload kept)
        assert_eq!(outputs[0].bits, "80010000ffc1");
        assert!(matches!(&responses[3], Response::Panicked { message } if message == "boom"));
        assert!(matches!(&responses[4], Response::Error { .. }));
    }

    #[test]
    fn unknown_symbols_are_rejected_and_missing_executors_are_errors() {
        let call = Request::Call {
            symbol: "test::nothing".to_owned(),
            operands: Vec::new(),
            params: ParamValues::new(),
        };
        assert!(matches!(
            respond(&REGISTRY, call),
            Response::Rejected(Rejection {
                kind: KernelErrorKind::UnknownOp,
                ..
            })
        ));
        let execute = Request::Execute {
            op_kind: "Negate".to_owned(),
            operands: Vec::new(),
            params: ParamValues::new(),
        };
        assert!(matches!(
            respond(&REGISTRY, execute),
            Response::Error { .. }
        ));
    }
}
