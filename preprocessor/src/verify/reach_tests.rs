//! Grown samples: the ones given drawn parameters stay light.
#![allow(clippy::unwrap_used)]
use super::super::sample::Param;
use super::super::tests::{in_process, read_resolved};
use super::super::{Admitted, Gate, VerifyOptions};
use super::*;
use crate::verify::stretch::{BLOCKED_OUTPUTS, BLOCKED_SAMPLES, LARGE_PARAM, LONG, blocked_length};

const POOL: &str = "kernel: k\nop_kind: MaxPool2D\nregistrable: false\nbackend: Cpu\nkernel_source: s\nentry_point: \"fuel_reference_backend::ops::max_pool2d_f32\"\naccept:\n  inputs:\n    - { name: x, dtypes: [F32], rank: 4 }\nop_params:\n  fields:\n    kernel_size: { kind: usize, constraint: \"kernel_size > 0\" }\n    stride: { kind: usize, constraint: \"stride > 0\" }\nreturn:\n  outputs:\n    - { name: out, dtype_rule: passthrough(x), shape_rule: \"from_params(N=x.dim[0], C=x.dim[1], H=(x.dim[2]-kernel_size)/stride+1, W=(x.dim[3]-kernel_size)/stride+1)\" }\n";

/// A sum over `axes` at any rank, in the written order.
const SUM: &str = "kernel: k\nregistrable: false\nbackend: Cpu\nkernel_source: s\nentry_point: \"fuel_reference_backend::ops::reduce_sum_f32\"\naccept:\n  inputs:\n    - { name: x, dtypes: [F32], rank: any }\nop_params:\n  variant: reduce\n  fields:\n    axes: { kind: \"Vec<i64>\", constraint: \"axes(axes, x.rank)\" }\n    keepdim: { kind: bool }\nreturn:\n  outputs:\n    - { name: out, dtype_rule: passthrough(x), shape_rule: \"reduce(x, axes, keepdim)\" }\nsemantics: |\n  for o in out:\n    out[o] = -0.0\n  for i in x:\n    out[reduced(i, axes, keepdim)] += x[i]\nprecision:\n  order: as_written\n";

/// The reference max pool's grown samples in F32 under [`POOL`].
fn grown_pool() -> Admitted {
    grown_of(POOL, "fuel_reference_backend::ops::max_pool2d_f32")
}

/// The grown samples in F32 of the reference kernel `symbol` under the contract `text`.
fn grown_of(text: &str, symbol: &str) -> Admitted {
    let entry = fuel_reference_backend::fkc::ENTRY_POINTS.iter();
    let pool: Vec<_> = entry.filter(|k| k.symbol == symbol).copied().collect();
    let provider = in_process(Box::leak(pool.into_boxed_slice()));
    let info = provider.description().entry_point(symbol).unwrap();
    let kernel = Kernel {
        info,
        provider: &provider,
    };
    let (source, raw, contract) = read_resolved(text);
    let mut gate = Gate::new(&raw, &contract, &source, &kernel, 1);
    let (admitted, _) = gate.draw(DType::F32, VerifyOptions::default());
    gate.grown(&kernel, DType::F32, &admitted)
}

#[test]
fn grown_samples_given_drawn_parameters_keep_their_outer_dims_light() {
    let grown = grown_pool();
    // The first grown samples carry drawn parameters (a window wider than one among them),
    // each within the light budget: a drawn batch of up to 6 is brought back to 1.
    let mixed: Vec<_> = grown.iter().take(MIXED).collect();
    assert!(
        mixed
            .iter()
            .any(|(s, _)| s.params.iter().any(|(_, p)| *p != Param::Int(1)))
    );
    for (sample, outputs) in &mixed {
        assert!(
            weight(sample, outputs) <= MIXED_ELEMENTS,
            "{}",
            sample.describe()
        );
        assert_eq!(sample.inputs[0].1[0], 1, "{}", sample.describe());
        assert!(
            sample.inputs[0].1[3] >= SWEEP_FROM - 1,
            "{}",
            sample.describe()
        );
    }
}

#[test]
fn each_dim_alone_is_made_long_on_the_smallest_sample() {
    let grown = grown_pool();
    // x's channels, a dim no sweep or raise takes past 9: 24 and 33, every other dim 1
    for long in LONG {
        let wanted = vec![1, long, 1, 1];
        assert!(
            grown.iter().any(|(s, _)| s.inputs[0].1 == wanted),
            "no x {wanted:?} among {:?}",
            grown.iter().map(|(s, _)| s.describe()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn each_parameter_alone_is_made_large_with_the_dims_it_needs() {
    let grown = grown_pool();
    for value in LARGE_PARAM {
        // a window of 5 and of 9 on an input with room for several (every other dim 1)
        let window = grown.iter().find(|(s, _)| {
            s.params.first() == Some(&("kernel_size".to_owned(), Param::Int(value)))
                && s.inputs[0].1 == [1, 1, 2 * value, 2 * value]
        });
        assert!(
            window.is_some(),
            "no window of {value} among {:?}",
            grown.iter().map(|(s, _)| s.describe()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_reduced_dim_alone_is_made_longer_than_a_cache_block() {
    let blocked: Vec<_> = grown_of(SUM, "fuel_reference_backend::ops::reduce_sum_f32")
        .into_iter()
        .filter(|(s, _)| blocked_length(s))
        .collect();
    assert!(!blocked.is_empty() && blocked.len() <= BLOCKED_SAMPLES);
    for (sample, outputs) in &blocked {
        let out: i64 = outputs.iter().map(|d| d.iter().product::<i64>()).sum();
        assert!(out <= BLOCKED_OUTPUTS, "{}", sample.describe());
    }
    // a pool's long dims are not reduced: it gets none
    assert!(!grown_pool().iter().any(|(s, _)| blocked_length(s)));
}
