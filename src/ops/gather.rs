//! `embedding`: gathers rows of a `[V, D]` table by the `I64` ids of an `[N, L]` tensor.

use crate::error::{KernelError, KernelErrorKind};
use crate::mutants::{Mutant, active};
use crate::ops::common::dims;
use crate::shape::numel;
use crate::tensor::{RefTensor, Scalar};

const OP: &str = "embedding";

/// The weight row `id` (found at `ids[n, l]`) selects: `id` itself when `0 <= id < vocab`,
/// anything else `Length`.
fn row_of(id: i64, vocab: usize, n: usize, l: usize) -> Result<usize, KernelError> {
    let outside = || {
        KernelError::new(
            OP,
            KernelErrorKind::Length,
            format!("id {id} at [{n}, {l}] is outside 0..{vocab}"),
        )
    };
    let wide_vocab = i128::try_from(vocab).map_err(|_| outside())?;
    let mut index = if active(Mutant::EmbeddingIdsTruncated32) {
        i128::from(id as u32)
    } else {
        i128::from(id)
    };
    if index < 0 && active(Mutant::EmbeddingNegativeWraps) {
        index += wide_vocab;
    }
    let inclusive = active(Mutant::EmbeddingInclusiveBound);
    let inside = index >= 0 && (index < wide_vocab || (inclusive && index == wide_vocab));
    if !inside {
        return Err(outside());
    }
    let row = usize::try_from(index).map_err(|_| outside())?;
    if inclusive {
        return row.checked_rem(vocab).ok_or_else(outside);
    }
    Ok(row)
}

/// Embedding lookup: `out[n, l, d] = weight[ids[n, l], d]`.
///
/// `ids` is `[N, L]` (`I64`), `weight` is `[V, D]`, `out` is `[N, L, D]` in `weight`'s dtype.
/// Each output row is a bit-for-bit copy of the selected weight row (no arithmetic: NaN
/// payloads and signed zeros are kept). An id outside `0..V` — negative ones included — is
/// `Length`, naming the id and its position; an operand of another rank is `Rank`. Zero-sized
/// dimensions are allowed (`V = 0` refuses every id, so only an empty `ids` passes).
pub fn embedding<T: Scalar>(
    ids: &RefTensor<i64>,
    weight: &RefTensor<T>,
) -> Result<RefTensor<T>, KernelError> {
    let [n, l] = dims(OP, "ids", "N, L", ids.shape())?;
    let [vocab, dim] = dims(OP, "weight", "V, D", weight.shape())?;
    let out_shape = [n, l, dim];
    let mut out = Vec::with_capacity(numel(&out_shape)?);
    let table = weight.data();
    if dim == 0 && active(Mutant::EmbeddingEmptyRowsUnchecked) {
        return Ok(RefTensor::from_vec(out, &out_shape)?);
    }
    for (flat, &id) in ids.data().iter().enumerate() {
        let row = row_of(id, vocab, flat / l.max(1), flat % l.max(1))?;
        // `row < vocab` and `table.len() == vocab * dim`, so the range is inside the table.
        let start = row * dim;
        let values = table.get(start..start + dim).ok_or_else(|| {
            KernelError::new(
                OP,
                KernelErrorKind::Length,
                format!("row {row} is outside weight {:?}", weight.shape()),
            )
        })?;
        if active(Mutant::EmbeddingRowsThroughF64) {
            // black_box: the widening is done, not folded away with the narrowing
            let widened = values.iter().map(|v| std::hint::black_box(v.to_f64()));
            out.extend(widened.map(T::from_f64));
        } else {
            out.extend_from_slice(values);
        }
    }
    Ok(RefTensor::from_vec(out, &out_shape)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use half::bf16;

    use super::*;

    use crate::ops::axes::test_tensor as t;

    fn ids(values: &[i64], shape: &[usize]) -> RefTensor<i64> {
        RefTensor::from_vec(values.to_vec(), shape).unwrap()
    }

    #[test]
    fn rows_are_gathered_in_id_order() {
        // weight rows: [0, 1], [10, 11], [20, 21].
        let weight = t(&[0.0, 1.0, 10.0, 11.0, 20.0, 21.0], &[3, 2]);
        let out = embedding(&ids(&[2, 0, 1, 2], &[2, 2]), &weight).unwrap();
        assert_eq!(out.shape(), &[2, 2, 2]);
        let want = [20.0, 21.0, 0.0, 1.0, 10.0, 11.0, 20.0, 21.0];
        assert_eq!(out.data(), &want);
        let one = embedding(&ids(&[1], &[1, 1]), &weight).unwrap();
        assert_eq!(one.data(), &[10.0, 11.0]);
    }

    #[test]
    fn rows_are_copied_bit_for_bit() {
        let values = [
            bf16::from_bits(0x7fc1),
            bf16::NEG_ZERO,
            bf16::from_bits(0x0001),
        ];
        let weight = RefTensor::from_vec(values.to_vec(), &[3, 1]).unwrap();
        let out = embedding(&ids(&[0, 1, 2], &[1, 3]), &weight).unwrap();
        let bits: Vec<u16> = out.data().iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, [0x7fc1, 0x8000, 0x0001]);
    }

    #[test]
    fn empty_dimensions_are_allowed() {
        let weight = t(&[1.0, 2.0], &[2, 1]);
        assert_eq!(
            embedding(&ids(&[], &[0, 3]), &weight).unwrap().shape(),
            &[0, 3, 1]
        );
        let no_columns = embedding(&ids(&[1, 0], &[2, 1]), &t(&[], &[2, 0])).unwrap();
        assert_eq!(no_columns.shape(), &[2, 1, 0]);
        assert!(embedding(&ids(&[], &[2, 0]), &t(&[], &[0, 4])).is_ok());
        let e = embedding(&ids(&[0], &[1, 1]), &t(&[], &[0, 4])).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Length);
    }

    #[test]
    fn ids_outside_the_table_and_bad_ranks_are_refused() {
        let weight = t(&[0.0; 6], &[3, 2]);
        for bad in [3, -1, i64::MIN, i64::MAX] {
            let e = embedding(&ids(&[0, 1, bad, 2], &[2, 2]), &weight).unwrap_err();
            assert_eq!(e.kind, KernelErrorKind::Length);
            assert_eq!(e.message, format!("id {bad} at [1, 0] is outside 0..3"));
        }
        let e = embedding(&ids(&[0, 1], &[2]), &weight).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Rank);
        let e = embedding(&ids(&[0], &[1, 1]), &t(&[0.0; 3], &[3])).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Rank);
    }

    #[cfg(feature = "mutants")]
    #[test]
    fn inclusive_bound_mutant_reads_row_zero_for_id_v() {
        use crate::mutants::with;
        let weight = t(&[5.0, 6.0, 7.0], &[3, 1]);
        let call = || embedding(&ids(&[3], &[1, 1]), &weight);
        assert_eq!(call().unwrap_err().kind, KernelErrorKind::Length);
        let bad = with(Some(Mutant::EmbeddingInclusiveBound), call).unwrap();
        assert_eq!(bad.data(), &[5.0]);
    }

    #[cfg(feature = "mutants")]
    #[test]
    fn negative_wraps_mutant_reads_from_the_end() {
        use crate::mutants::with;
        let weight = t(&[5.0, 6.0, 7.0], &[3, 1]);
        let call = || embedding(&ids(&[-1], &[1, 1]), &weight);
        assert_eq!(call().unwrap_err().kind, KernelErrorKind::Length);
        let bad = with(Some(Mutant::EmbeddingNegativeWraps), call).unwrap();
        assert_eq!(bad.data(), &[7.0]);
    }
}
