//! The Common kernels chapter's proof: each kernel's realistic bug (planted in the backend by
//! its `mutants` feature) and single-field lies in its contract — a wrong axis, a broadcast rule
//! off, `eps` ignored, a flag's meaning swapped, an enumeration's value misnamed, an order
//! claimed that the kernel does not keep, an integer overflow claimed the other way, an
//! accumulator too narrow, an index range off by one — each fail the gate at the default
//! settings, while the unmutated chapter passes.

use super::{entry_for_dtype, error_codes, mutate, planted};
use crate::support::repo_root;
use fkc_provider::{AnyTensor, DType, KernelRef, Operand, ParamValues, Registry, Rejection};
use fuel_reference_backend::fkc::ENTRY_POINTS;
use fuel_reference_backend::mutants::Mutant;
use mdbook_fkc::Providers;
use std::collections::BTreeSet;

const COMMON: &str = "book/contracts/common.md";

fn common() -> String {
    std::fs::read_to_string(repo_root().join(COMMON)).unwrap()
}

/// (the contract, the mutant planted in its kernel).
const MUTANTS: &[(&str, Mutant)] = &[
    ("add", Mutant::AddIntSaturates),
    ("qmatmul", Mutant::QmatmulNarrowAccumulator),
    ("qmatmul", Mutant::QmatmulWrappingRequantize),
    ("qmatmul", Mutant::QmatmulRoundHalfAway),
    ("embedding", Mutant::EmbeddingInclusiveBound),
    ("embedding", Mutant::EmbeddingNegativeWraps),
    ("matmul", Mutant::MatmulIgnoresTransposeB),
    ("add", Mutant::AddBroadcastAlignsLeading),
    ("mul", Mutant::MulBroadcastByModulo),
    ("gelu", Mutant::GeluTanhApprox),
    ("leaky_relu", Mutant::LeakyReluScalesZero),
    ("softmax", Mutant::SoftmaxNegativeAxisFromFront),
    ("layer_norm", Mutant::LayerNormIgnoresEps),
    ("cumsum", Mutant::CumsumReverseOrder),
    ("avg_pool2d", Mutant::AvgPoolValidDividesByWindow),
    ("transpose", Mutant::TransposeInversePerm),
    ("reduce_sum", Mutant::ReduceSumDropsLast),
    ("reduce_mean", Mutant::MeanKeepdimCountsOne),
    // found by an independent red-team round (2026-12-04), each missed by the gate then
    ("matmul", Mutant::MatmulSplitsLongK),
    ("transpose", Mutant::TransposeSwapFastPathFirstAxis),
    ("add", Mutant::AddScalarKeepsShape),
    // found by a second red-team round (2026-12-04), each missed by the gate then
    ("matmul", Mutant::PackBroadcastRepeats),
    ("gelu", Mutant::FloatOperandsConverted),
    ("embedding", Mutant::EmbeddingIdsTruncated32),
    ("reduce_sum", Mutant::ReduceSumBlocked1024),
    ("softmax", Mutant::SoftmaxSingleElementIsOne),
    // found by a third red-team round (2026-12-04), each missed by the gate then
    ("cumsum", Mutant::CumsumBlockedScan64),
    ("add", Mutant::E5m2ClampsNearMax),
    ("transpose", Mutant::TransposeBlockedCorner),
    // missed by the third round's gate, caught since 2026-12-05 (empty operands, middle-axis views)
    ("embedding", Mutant::EmbeddingEmptyRowsUnchecked),
    ("avg_pool2d", Mutant::PackAssumesOuterPacked),
    // found by a fourth red-team round (2026-12-05), each missed by the gate then (a path for
    // two large dims, caught on the sample with the last two dims past 32 and a batch of two)
    ("matmul", Mutant::MatmulLargePacksFirstB),
    ("cumsum", Mutant::CumsumPanelsDropRemainder),
    // found by a fifth red-team round (2026-12-05), missed by the gate then (caught on two
    // inputs crossed: `[1, n]` and `[n, 1]`)
    ("add", Mutant::SameCountZips),
    // found by a sixth red-team round (2026-12-05), missed by the gate then (caught since a
    // contiguous view that is a prefix of a longer storage is among the layout views)
    ("gelu", Mutant::PackBorrowsPrefixView),
    // found by the sixth round too, missed then (caught since the near-overflow runs straddle
    // the largest value)
    ("add", Mutant::E5m2OverflowPastLargest),
    // found by an eighth red-team round (2026-12-06), missed by the gate then (caught since
    // `rank: any` is checked at ranks 5 and 6 on designed samples of small dims)
    ("transpose", Mutant::TransposeHighRankInversePerm),
    // found by a ninth red-team round (2026-12-06), missed by the gate then (caught since the
    // crossed inputs also pair a full `[n, n]` with a column `[n, 1]`)
    ("mul", Mutant::MulRowByCount),
    // found by the ninth round too, missed then (caught since each float parameter is also
    // tried at 1/6 in its own type, where integer sums times it land on halves)
    ("qmatmul", Mutant::QmatmulRequantizeF64),
    // found by a tenth red-team round (2026-12-07), missed by the gate then (caught since a
    // transposed view, dense from offset 0, is among the strided views)
    ("mul", Mutant::PackDenseAsStored),
    // found by the tenth round too, missed then (caught since an exact zero's sign is held
    // under an error bound as well)
    ("gelu", Mutant::GeluZeroShortcut),
    // the ninth round's miss (quieting a signalling NaN), caught since the special values
    // carry signalling NaNs built from bits and copies claim `nan_bits: preserve`
    ("embedding", Mutant::EmbeddingRowsThroughF64),
];

/// `MUTANTS[M]`'s kernel in the `D`-th dtype of [`DType::ALL`] with its bug planted (a dtype
/// the kernel lacks is refused, as the reference refuses it).
fn common_mutant<const M: usize, const D: usize>(
    operands: &[Option<Operand>],
    params: &ParamValues,
) -> Result<Vec<AnyTensor>, Rejection> {
    let (kernel, mutant) = MUTANTS[M];
    let symbol = format!(
        "fuel_reference_backend::ops::{kernel}_{}",
        DType::ALL[D].suffix()
    );
    match ENTRY_POINTS.iter().find(|k| k.symbol == symbol) {
        Some(original) => planted(mutant, original, operands, params),
        None => Err(Rejection::new(
            fkc_provider::KernelErrorKind::DType,
            format!("no {symbol}"),
        )),
    }
}

macro_rules! common_mutant_registry {
    ($($index:literal),*) => {
        /// `mutant::c{index}_{dtype}`: the kernel of `MUTANTS[index]` with its bug planted.
        fn mutant_registry() -> &'static Registry {
            let mut entries: Vec<KernelRef> = Vec::new();
            $(
                let (kernel, _) = MUTANTS[$index];
                for reference in ENTRY_POINTS.iter().filter(|k| k.kernel == kernel) {
                    let symbol: &'static str = Box::leak(
                        format!("mutant::c{}_{}", $index, reference.dtype.suffix()).into_boxed_str(),
                    );
                    entries.push(KernelRef {
                        symbol,
                        call: entry_for_dtype!(common_mutant, $index, reference.dtype),
                        ..*reference
                    });
                }
            )*
            Box::leak(Box::new(Registry {
                name: "mutants",
                path: "mutant::REGISTRY",
                crate_name: "mutant",
                entry_points: Box::leak(entries.into_boxed_slice()),
                ..fuel_reference_backend::fkc::REGISTRY
            }))
        }
    };
}

common_mutant_registry!(
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
    26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41
);

/// The dtype suffix of the entry point a contract names.
fn named_suffix(text: &str, kernel: &str) -> &'static str {
    let start = text.find(&format!("kernel: {kernel}\n")).unwrap();
    let named = &text[start..];
    let symbol = format!("fuel_reference_backend::ops::{kernel}_");
    let at = named.find(&symbol).unwrap() + symbol.len();
    ["f32", "i8"]
        .into_iter()
        .find(|suffix| named[at..].starts_with(suffix))
        .unwrap()
}

#[test]
fn the_common_kernels_chapter_passes_and_every_kernel_mutant_fails() {
    assert_eq!(
        error_codes(&common(), Providers::default()),
        BTreeSet::new()
    );
    let text = common().replace(
        "link_registry: fuel_reference_backend::fkc::ENTRY_POINTS",
        "link_registry: mutant::REGISTRY",
    );
    let mut survived = Vec::new();
    for (index, (kernel, mutant)) in MUTANTS.iter().enumerate() {
        let suffix = named_suffix(&text, kernel);
        let from = format!("fuel_reference_backend::ops::{kernel}_{suffix}");
        let mutated = mutate(
            &text,
            kernel,
            &from,
            0,
            &format!("mutant::c{index}_{suffix}"),
        );
        let mut providers = Providers::default();
        providers.link(mutant_registry());
        let codes = error_codes(&mutated, providers);
        println!("mutant {mutant:?} under {kernel}: {codes:?}");
        if !codes.iter().any(|c| c.starts_with("FKC04")) {
            survived.push(format!("{mutant:?} ({codes:?})"));
        }
    }
    assert!(survived.is_empty(), "survivors: {survived:?}");
}

/// (kernel, what to replace, which occurrence, replacement, expected code).
const LIES: &[(&str, &str, usize, &str, &str)] = &[
    // a NaN claimed passed on bit for bit by a kernel that computes (it quiets a signalling
    // NaN, and Inf − Inf makes x86's default NaN)
    ("add", "nan_bits: any", 0, "nan_bits: preserve", "FKC0409"),
    // an input claimed optional that every constraint needs (from a ninth red-team round,
    // passed then: no sample without it was ever admitted, and nothing said so)
    (
        "matmul",
        "rank: 3 # [B, K, N], or [B, N, K] with transpose_b",
        0,
        "rank: 3 # [B, K, N], or [B, N, K] with transpose_b\n      optional: true",
        "FKC0412",
    ),
    // a flag's meaning swapped in the semantics: an index past the stored axis, or values off
    (
        "matmul",
        "if transpose_a:",
        0,
        "if !transpose_a:",
        "FKC0504",
    ),
    (
        "matmul",
        "if transpose_b:",
        1,
        "if !transpose_b:",
        "FKC0409",
    ),
    // a broadcast rule off: the output shaped like `a` alone (where `b` stretches it, the
    // kernel's output is wider), shapes admitted only when `a` has the larger rank
    (
        "mul",
        "shape_rule: \"broadcast(a, b)\"",
        0,
        "shape_rule: \"broadcast(a, a)\"",
        "FKC0403",
    ),
    (
        "mul",
        "broadcastable(a.dim, b.dim)",
        0,
        "a.rank >= b.rank && broadcastable(a.dim, b.dim)",
        "FKC0402",
    ),
    // cost formulas: the multiply-adds counted once, `b` forgotten in the traffic
    ("matmul", "\"2 * out.dim[0]", 0, "\"out.dim[0]", "FKC0407"),
    (
        "add",
        "+ prod(b.dim) + prod(out.dim)",
        0,
        "+ prod(out.dim)",
        "FKC0407",
    ),
    // layer_norm's costs: the weight's multiplications, or the bias's traffic, forgotten
    (
        "layer_norm",
        " + min(prod(weight.dim), 1)",
        0,
        "",
        "FKC0407",
    ),
    (
        "layer_norm",
        " + prod(bias.dim) + prod(out.dim)",
        0,
        " + prod(out.dim)",
        "FKC0407",
    ),
    // an accumulator too narrow: layer_norm's sums claimed in the dtype
    ("layer_norm", "s: f64 = 0", 0, "s: T = 0", "FKC0409"),
    // eps ignored by the semantics
    (
        "layer_norm",
        "q / x.dim[1] + eps",
        0,
        "q / x.dim[1]",
        "FKC0409",
    ),
    // a wrong axis: the negative axis taken from the front (-1 as axis 0)
    (
        "softmax",
        "s += exp(x[along(i, axis % x.rank, t)] - m)",
        0,
        "s += exp(x[along(i, max(axis, -1 - axis), t)] - m)",
        "FKC0409",
    ),
    (
        "cumsum",
        "acc += x[along(i, axis % x.rank, t)]",
        0,
        "acc += x[along(i, max(axis, -1 - axis), t)]",
        "FKC0409",
    ),
    // the enumeration's values swapped
    (
        "avg_pool2d",
        "if divisor == \"valid\":",
        0,
        "if divisor == \"window\":",
        "FKC0409",
    ),
    // a value name the contract does not declare
    (
        "avg_pool2d",
        "if divisor == \"valid\":",
        0,
        "if divisor == \"exact\":",
        "FKC0503",
    ),
    // enumeration values that are not the kernel's
    (
        "avg_pool2d",
        "values: [window, valid]",
        0,
        "values: [window, valid, ceil]",
        "FKC0303",
    ),
    // values on a field that is no enumeration
    (
        "leaky_relu",
        "kind: f64,",
        0,
        "kind: f64, values: [low, high],",
        "FKC0303",
    ),
    // a parameter kind that is not the kernel's
    ("leaky_relu", "kind: f64", 0, "kind: f32", "FKC0303"),
    ("softmax", "kind: i64", 0, "kind: usize", "FKC0303"),
    // a constraint narrower than the kernel's domain
    (
        "layer_norm",
        "eps >= 0.0",
        0,
        "eps >= 0.0 && eps <= 1.0",
        "FKC0402",
    ),
    (
        "transpose",
        "permutation(perm, x.rank)",
        0,
        "permutation(perm, x.rank) && perm[0] == 0",
        "FKC0402",
    ),
    // an order the kernel does not keep: the running sum claimed from the other end
    (
        "cumsum",
        "acc += x[along(i, axis % x.rank, t)]",
        0,
        "acc += x[along(i, axis % x.rank, i[axis % x.rank] - t)]",
        "FKC0409",
    ),
    // the tanh approximation claimed for the erf form
    (
        "gelu",
        "(1 + erf(v / 1.4142135623730951))",
        0,
        "(1 + tanh(v * 0.7978845608028654 * (1 + 0.044715 * v * v)))",
        "FKC0409",
    ),
    // integer arithmetic: the wrap claimed as saturation, the saturation as a wrap, an
    // accumulator too narrow
    ("add", "overflow: wrap", 0, "overflow: saturate", "FKC0409"),
    (
        "qmatmul",
        "overflow: saturate",
        0,
        "overflow: wrap",
        "FKC0409",
    ),
    ("qmatmul", "acc: i32 = 0", 0, "acc: i8 = 0", "FKC0409"),
    // the requantize rounding claimed in f64 (a double rounding the kernel does not do)
    (
        "qmatmul",
        "cast(cast(acc, f32) * cast(scale, f32), i8)",
        0,
        "cast(acc * scale, i8)",
        "FKC0409",
    ),
    // an index range one too wide (the kernel refuses an id it admits) or too narrow (the
    // kernel takes an id it excludes)
    (
        "embedding",
        "max: \"weight.dim[0] - 1\"",
        0,
        "max: \"weight.dim[0]\"",
        "FKC0401",
    ),
    (
        "embedding",
        "max: \"weight.dim[0] - 1\"",
        0,
        "max: \"weight.dim[0] - 2\"",
        "FKC0402",
    ),
    // an operand's own dtype that is not the kernel's
    ("embedding", "dtype: I64", 0, "dtype: I32", "FKC0408"),
    // the gathered output forgotten in the traffic
    (
        "embedding",
        " + prod(out.dim)) * dtype_bytes\"",
        0,
        ") * dtype_bytes\"",
        "FKC0407",
    ),
    // the permutation applied the other way round; a list of distinct axes admitted where the
    // shape rule needs a permutation
    (
        "transpose",
        "out[permuted(i, perm)] = x[i]",
        0,
        "out[i] = x[permuted(i, perm)]",
        "FKC0504",
    ),
    (
        "transpose",
        "permutation(perm, x.rank)",
        0,
        "distinct(perm) && len(perm) == x.rank",
        "FKC0401",
    ),
    // broadcasting: the constraint that the shapes broadcast forgotten (the shape rule is
    // then undefined on samples the contract admits)
    (
        "add",
        "shape_constraint: \"broadcastable(a.dim, b.dim)\"",
        0,
        "optional: false",
        "FKC0401",
    ),
    // reductions: `keepdim` ignored by the shape rule, repeated axes admitted (`[1, -2]` is
    // axis 1 twice), the empty axes list refused, a sum starting at +0.0 (a lone -0.0 comes
    // back +0.0), the mean divided by every element, the divisions not counted
    (
        "reduce_sum",
        "reduce(x, axes, keepdim)",
        0,
        "reduce(x, axes, true)",
        "FKC0403",
    ),
    (
        "reduce_mean",
        "axes(axes, x.rank)",
        0,
        "distinct(axes) && within(axes, -x.rank, x.rank)",
        "FKC0401",
    ),
    (
        "reduce_sum",
        "axes(axes, x.rank)",
        0,
        "axes(axes, x.rank) && len(axes) > 0",
        "FKC0402",
    ),
    ("reduce_sum", "out[o] = -0.0", 0, "out[o] = 0.0", "FKC0409"),
    (
        "reduce_mean",
        "out[o] / (numel(x) / numel(out))",
        0,
        "out[o] / numel(x)",
        "FKC0409",
    ),
    (
        "reduce_mean",
        "\"prod(x.dim) + prod(out.dim)\"",
        0,
        "\"prod(x.dim)\"",
        "FKC0407",
    ),
    // from a tenth red-team round (2026-12-07), each passed then: a constraint dropped whose
    // samples the rule cannot shape (a division by a stride of 0) was passed over, a shape rule
    // that comes out empty without the optional inputs was taken to rule the sample out, and
    // `kernel_size > 0` dropped was met only at some seeds (a padding bounded by the window)
    (
        "avg_pool2d",
        "constraint: \"stride > 0\"",
        0,
        "note: \"any\"",
        "FKC0401",
    ),
    (
        "layer_norm",
        "D=x.dim[1])",
        0,
        "D=max(weight.dim[0], bias.dim[0]))",
        "FKC0403",
    ),
    (
        "layer_norm",
        "D=x.dim[1])",
        0,
        "D=x.dim[1] * min(prod(weight.dim) + prod(bias.dim), 1))",
        "FKC0403",
    ),
    ("avg_pool2d", "\"kernel_size > 0 && ", 0, "\"", "FKC0401"),
    // and `independent_of` naming a boolean field, listed unchecked then (only integer fields
    // were run again, at 1; now each kind at another value)
    (
        "matmul",
        "determinism: same_hardware_bitwise",
        0,
        "  independent_of: [transpose_b]\ndeterminism: same_hardware_bitwise",
        "FKC0418",
    ),
];

#[test]
fn every_common_contract_lie_fails_with_its_code() {
    let text = common();
    let mut wrong = Vec::new();
    for (kernel, from, nth, to, code) in LIES {
        let codes = error_codes(&mutate(&text, kernel, from, *nth, to), Providers::default());
        println!("{kernel}: `{from}` → `{to}`: {codes:?}");
        if !codes.contains(*code) {
            wrong.push(format!("{kernel}: `{to}` gave {codes:?}, not {code}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
