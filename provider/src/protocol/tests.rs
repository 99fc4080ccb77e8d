//! Unit tests of the wire protocol: tensors and views travel bit for bit, a session is served,
//! the wire form is the documented one, lengths are checked before decoding, unknown symbols are
//! rejected.

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
    levels: None,
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
    let call = Method::Call {
        symbol: "test::negate_bf16".to_owned(),
        operands: encode_operands(&[Some(reversed_bf16())]),
        params: ParamValues::new(),
        level: None,
    };
    let panics = Method::Call {
        symbol: "test::explode_f32".to_owned(),
        operands: Vec::new(),
        params: ParamValues::new(),
        level: None,
    };
    let mut input = String::new();
    let methods = [
        Method::Handshake { protocol: 2 },
        Method::Describe,
        call,
        panics,
    ];
    for (id, method) in (10..).zip(methods) {
        input.push_str(&serde_json::to_string(&Request { id, method }).unwrap());
        input.push('\n');
    }
    input.push_str("not json\n");
    input.push_str("{\"id\":99,\"method\":\"dance\"}\n");
    let mut output = Vec::new();
    serve_on(&REGISTRY, input.as_bytes(), &mut output).unwrap();
    let responses: Vec<Response> = String::from_utf8(output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(responses.len(), 6);
    let ids: Vec<Option<u64>> = responses.iter().map(|r| r.id).collect();
    assert_eq!(
        ids,
        [Some(10), Some(11), Some(12), Some(13), None, Some(99)]
    );
    // The greeting announces this binary's own build, so verification can be cached by it.
    let hello = Hello {
        build: crate::identity::own_binary().map(str::to_owned),
        ..Hello::of(&REGISTRY)
    };
    assert!(hello.build.is_some());
    assert_eq!(responses[0].answer, Answer::Hello(hello));
    let Answer::Description(description) = &responses[1].answer else {
        panic!("{:?}", responses[1]);
    };
    assert_eq!(description.entry_points.len(), 2);
    assert_eq!(description.op_kinds, vec!["Negate".to_owned()]);
    let Answer::Outputs(outputs) = &responses[2].answer else {
        panic!("{:?}", responses[2]);
    };
    // -subnormal, +0.0, -NaN (sign flipped, payload kept)
    assert_eq!(outputs[0].bits, "80010000ffc1");
    assert!(matches!(&responses[3].answer, Answer::Panicked { message } if message == "boom"));
    assert!(matches!(&responses[4].answer, Answer::Error { .. }));
    assert!(matches!(&responses[5].answer, Answer::Error { .. }));
}

#[test]
fn the_wire_form_is_the_documented_one_and_ignores_unknown_fields() {
    let request = Request {
        id: 5,
        method: Method::Handshake { protocol: 2 },
    };
    assert_eq!(
        serde_json::to_string(&request).unwrap(),
        r#"{"id":5,"method":"handshake","protocol":2}"#
    );
    let later: Request =
        serde_json::from_str(r#"{"id":6,"method":"describe","from_the_future":[1]}"#).unwrap();
    assert_eq!(later.method, Method::Describe);
    let answer: Response =
        serde_json::from_str(r#"{"id":6,"rejected":{"kind":"Rank","message":"no"},"extra":1}"#)
            .unwrap();
    assert_eq!(answer.id, Some(6));
    assert!(matches!(answer.answer, Answer::Rejected(_)));
    // An answer without an id does not parse as a protocol 2 response.
    assert!(serde_json::from_str::<Response>(r#"{"outputs":[]}"#).is_err());
}

#[test]
fn lengths_are_checked_before_anything_is_decoded() {
    let wire = WireTensor {
        dtype: DType::F32,
        shape: vec![2, 3],
        bits: "0".repeat(8 * 7),
    };
    let error = wire.check_length().unwrap_err().to_string();
    assert!(error.contains("needs 48 hexadecimal digits"), "{error}");
    assert!(wire.decode().is_err());
    let huge = WireTensor {
        shape: vec![usize::MAX, 2],
        ..wire.clone()
    };
    assert_eq!(huge.elements(), None);
    assert!(huge.check_length().is_err());
    let signed = WireTensor {
        shape: vec![1],
        bits: "+0000000".to_owned(),
        ..wire
    };
    assert!(signed.decode().is_err(), "a sign is not a hex digit");
}

#[test]
fn unknown_symbols_are_rejected_and_missing_executors_are_errors() {
    let call = Method::Call {
        symbol: "test::nothing".to_owned(),
        operands: Vec::new(),
        params: ParamValues::new(),
        level: None,
    };
    assert!(matches!(
        answer(&REGISTRY, call).0,
        Answer::Rejected(Rejection {
            kind: KernelErrorKind::UnknownOp,
            ..
        })
    ));
    let execute = Method::Execute {
        op_kind: "Negate".to_owned(),
        operands: Vec::new(),
        params: ParamValues::new(),
    };
    assert!(matches!(answer(&REGISTRY, execute).0, Answer::Error { .. }));
}
