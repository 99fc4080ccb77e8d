//! A test fixture: kernels that never return normally — one panics, one aborts the process,
//! one overflows its stack, one exits, one never returns. mdbook-fkc must report each as a
//! located failure (FKC0413, or FKC0414 for the hang) and carry on, never crash or hang itself.

use crate::entry;
use fkc_provider::{AnyTensor, DType, Operand, OperandDesc, ParamValues, Registry, Rejection};

const MATRIX: &[OperandDesc] = &[OperandDesc::required("x", 2)];

/// The crashing fixture's registry.
pub static REGISTRY: Registry = Registry {
    name: "demo-crashing",
    path: "demo_provider::crashing::REGISTRY",
    crate_name: "demo_provider",
    revision: env!("CARGO_PKG_VERSION"),
    op_kinds: &[],
    variants: &[],
    entry_points: &[
        entry(
            "demo_provider::crashing::panics_f32",
            "panics",
            DType::F32,
            "Relu",
            MATRIX,
            &[],
            panics,
        ),
        entry(
            "demo_provider::crashing::aborts_f32",
            "aborts",
            DType::F32,
            "Relu",
            MATRIX,
            &[],
            aborts,
        ),
        entry(
            "demo_provider::crashing::overflows_f32",
            "overflows",
            DType::F32,
            "Relu",
            MATRIX,
            &[],
            overflows,
        ),
        entry(
            "demo_provider::crashing::exits_f32",
            "exits",
            DType::F32,
            "Relu",
            MATRIX,
            &[],
            exits,
        ),
        entry(
            "demo_provider::crashing::hangs_f32",
            "hangs",
            DType::F32,
            "Relu",
            MATRIX,
            &[],
            hangs,
        ),
    ],
    executor: None,
    levels: None,
};

type Outputs = Result<Vec<AnyTensor>, Rejection>;

/// Panics on purpose: this fixture exists to prove that a panicking kernel is reported as a
/// crash (FKC0413) and never takes the book build down.
#[allow(clippy::panic)]
fn panics(_: &[Option<Operand>], _: &ParamValues) -> Outputs {
    panic!("index 7 out of bounds for a 2x3 tile")
}

fn aborts(_: &[Option<Operand>], _: &ParamValues) -> Outputs {
    eprintln!("aborts: giving up");
    std::process::abort()
}

fn overflows(operands: &[Option<Operand>], _: &ParamValues) -> Outputs {
    Ok(vec![AnyTensor::from_f64(
        DType::F32,
        &[1],
        &[depth(operands.len() as u64)],
    )?])
}

/// Recursion without end, each frame holding a buffer the optimiser cannot drop.
#[allow(unconditional_recursion)]
fn depth(n: u64) -> f64 {
    let frame = std::hint::black_box([n as f64; 256]);
    frame[(n % 256) as usize] + depth(std::hint::black_box(n + 1))
}

fn exits(_: &[Option<Operand>], _: &ParamValues) -> Outputs {
    std::process::exit(3)
}

fn hangs(_: &[Option<Operand>], _: &ParamValues) -> Outputs {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}
