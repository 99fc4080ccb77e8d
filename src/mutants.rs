//! Deliberate bugs for the gate's mutation suite. With the `mutants` feature (test builds
//! only), a test runs a kernel call under one [`Mutant`] and the kernel misbehaves in exactly
//! that way, on that call alone (the calling thread and the workers it starts); without the
//! feature [`active`] is a constant `false` and the checks compile away.

/// One realistic kernel bug, planted where such a bug would live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutant {
    /// Convolution: the widest register tile (four vectors at AVX-512, two at AVX2 and below)
    /// stores its sums without the bias.
    WideTileDropsBias,
    /// Convolution: a four-channel tile adds its first channel's bias to all four.
    ChannelTileBiasIndex,
    /// Convolution: a row's masked last vector stores one lane too few.
    TailLaneLost,
    /// Convolution: at the AVX2 level only (256-bit vectors), the masked last vector stores
    /// one lane too few.
    Avx2TailLaneLost,
    /// Convolution: split over threads, the last thread's share of the work is never run.
    LastThreadIdle,
    /// Convolution in BF16: each rounding truncates instead of rounding to nearest even.
    Bf16Truncates,
    /// Convolution in F16: a result in the subnormal range is flushed to zero.
    F16FlushesSubnormals,
    /// Convolution: a NaN result keeps the payload of the NaN it came from instead of being
    /// made the canonical quiet NaN.
    NanPayloadKept,
    /// Max pooling: the unrolled scan takes the later of two equal values, so a window of
    /// `+0.0` and `-0.0` returns the other zero.
    PoolTieTakesLater,
    /// Max pooling: the lane-by-lane scan of a row's last positions takes `v > m`, so a NaN
    /// after a window's first element is dropped and a NaN first is kept.
    PoolLaneTailNaiveMax,
    /// `matmul`: `transpose_b` is ignored, so `b` is always read as `[B, K, N]`.
    MatmulIgnoresTransposeB,
    /// `add`: operands of different ranks are aligned on their leading dimensions (missing
    /// dimensions appended as 1) instead of their trailing ones.
    AddBroadcastAlignsLeading,
    /// `mul`: `b` is read at `flat output index % b.len()`, right when `b`'s shape is a suffix
    /// of the output's, wrong for a size-1 dimension inside it.
    MulBroadcastByModulo,
    /// `gelu`: the tanh approximation instead of the exact erf form.
    GeluTanhApprox,
    /// `softmax`: a negative axis counts from the front (`-1` is axis 0).
    SoftmaxNegativeAxisFromFront,
    /// `layer_norm`: `eps` is ignored (treated as 0).
    LayerNormIgnoresEps,
    /// `reduce_sum`: the last element of each reduction is never added.
    ReduceSumDropsLast,
    /// `reduce_mean`: with `keepdim`, the count is read from the output's size-1 reduced
    /// extents, so the mean is the sum.
    MeanKeepdimCountsOne,
    /// `avg_pool2d`: the `"valid"` divisor divides by the whole window like `"window"`.
    AvgPoolValidDividesByWindow,
    /// `transpose`: the inverse permutation is applied (the same for involutions only).
    TransposeInversePerm,
    /// `leaky_relu`: a zero is passed through unscaled, so `-0.0 · slope`'s sign is lost for
    /// a negative slope (`+0.0` and `-0.0` both returned as they came).
    LeakyReluScalesZero,
    /// `cumsum`: each output sums its prefix in descending order (`x_t` first), the same
    /// terms in another order.
    CumsumReverseOrder,
    /// `embedding`: the range check lets `id == V` through (`id > V` instead of `id >= V`)
    /// and the row is then taken `id % V`, so `id == V` reads row 0 instead of being refused.
    EmbeddingInclusiveBound,
    /// `embedding`: a negative id is taken from the end (Python-style, row `V + id`) instead
    /// of being refused.
    EmbeddingNegativeWraps,
    /// `qmatmul`: the dot product accumulates in `i16` (wrapping) and is widened to `i32` only
    /// afterwards, so a sum beyond ±2^15 wraps early.
    QmatmulNarrowAccumulator,
    /// `qmatmul`: the rounded product is converted through `i32` and then `as i8`, which wraps
    /// instead of saturating at `[-128, 127]`.
    QmatmulWrappingRequantize,
    /// `qmatmul`: the product rounds half away from zero (`f32::round`) instead of to even.
    QmatmulRoundHalfAway,
    /// `add` on integers (`I8`, `I32`): `saturating_add` instead of the specified wrapping
    /// two's-complement addition.
    AddIntSaturates,
    /// `matmul`: from 16 terms on, odd `k` go into a second accumulator added at the end (an
    /// unrolled reduction whose order differs only for long sums).
    MatmulSplitsLongK,
    /// `transpose`: a fast path for swapping the last two axes that loops over the first axis
    /// only, not every leading axis (wrong at rank 4 and above).
    TransposeSwapFastPathFirstAxis,
    /// `add`: a fast path for a one-element `b` that keeps `a`'s shape (wrong when `b` has
    /// more axes than `a`: `[3] + [1, 1]` is `[1, 3]`).
    AddScalarKeepsShape,
    /// Half-precision rounding (the vectorised F16 path): the subnormal range taken to start
    /// one binade too low, so results in `[2^-15, 2^-14)` are rounded as normals.
    F16SubnormalThresholdLow,
    /// Half-precision rounding (the vectorised BF16 path): results below F32's smallest
    /// normal flushed to a signed zero.
    Bf16FlushesSubnormals,
    /// Every common kernel: a stride-0 broadcast view is packed by repeating its stored
    /// values (right only when the broadcast axis is the outermost long one).
    PackBroadcastRepeats,
    /// Every common kernel: a contiguous view handed over as its whole storage (wrong when the
    /// view is a prefix of a longer storage, as a leading slice is).
    PackBorrowsPrefixView,
    /// Every common kernel: a float operand of another float dtype is converted (NumPy-style
    /// promotion) instead of refused.
    FloatOperandsConverted,
    /// `embedding`: an id is truncated to 32 bits before the range check, so `2^32 + i` reads
    /// row `i`.
    EmbeddingIdsTruncated32,
    /// Threaded max pooling: windows wider than 4 take the max of each column first, and the
    /// window's last column is left out.
    PoolWideWindowDropsLastColumn,
    /// `reduce_sum`: a long reduction is summed in blocks of 1024 terms, then the block sums
    /// (the same terms in another order, for sums past 1024 terms only).
    ReduceSumBlocked1024,
    /// `softmax`: a softmax over one element is taken to be 1 (wrong for NaN and ±Inf).
    SoftmaxSingleElementIsOne,
    /// `cumsum`: a blocked scan — each 64-element block's own prefix sums, plus the last
    /// output of the blocks before (the same terms in another order past element 64).
    CumsumBlockedScan64,
    /// `add` in `F8E5M2`: a sum just above the largest finite value (below 65536) is clamped
    /// to it instead of rounding to ±Inf.
    E5m2ClampsNearMax,
    /// `transpose`: a 16×16 blocked fast path for a rank-2 swap that never writes the corner
    /// past both full tiles.
    TransposeBlockedCorner,
    /// `embedding`: a table without columns (`D = 0`) returns its empty output at once,
    /// without checking the ids (an id outside the table passes).
    EmbeddingEmptyRowsUnchecked,
    /// Every common kernel: a view whose rows are a pitch apart (unit innermost stride) is
    /// packed row by row at `offset + row · pitch`, as if every outer axis were packed over
    /// the pitch (wrong when a middle axis is a slice).
    PackAssumesOuterPacked,
    /// `matmul`: products with `n` and `k` of 32 or more take `b` packed once, from the first
    /// batch, for every batch.
    MatmulLargePacksFirstB,
    /// `cumsum`: a scan of 32 or more over rows of 32 or more columns runs 16-column panels
    /// and leaves the columns past the last full panel zero.
    CumsumPanelsDropRemainder,
    /// Convolution: the plain loops (taken where the padded buffer would be absurdly large)
    /// store their sums without the bias.
    FallbackDropsBias,
    /// Convolution: the plain loops find each kernel column's valid output columns with the
    /// row stride.
    FallbackColumnsByRowStride,
    /// Convolution: the plain loops take a group's input channels interleaved
    /// (`ci · groups + group`) instead of as one contiguous block (`group · group_in + ci`).
    FallbackGroupsInterleaved,
    /// The vectorised F16 rounding: a value exactly halfway between the largest finite and
    /// 65536 (65520) is kept in the f32 lane instead of becoming ±Inf.
    F16OverflowTieKept,
    /// The vectorised F16 rounding: every value past the largest finite (65504) becomes ±Inf,
    /// though those short of the tie (65520) round to the largest.
    F16OverflowPastLargest,
    /// E5M2 `add`: every sum past the largest finite value (57344) becomes ±Inf, though those
    /// short of the tie (61440) round to the largest.
    E5m2OverflowPastLargest,
    /// `add` and `mul`: operands of as many elements are zipped element by element into `a`'s
    /// shape (the element counts compared where the shapes should be: `[1, n]` and `[n, 1]`).
    SameCountZips,
    /// `transpose`: above rank 4 (a generic path) the inverse permutation is applied.
    TransposeHighRankInversePerm,
    /// `mul`: a fast path for a row scaling every row of `a` takes any `b` of as many elements
    /// as `a`'s last axis for that row (wrong for a column `[n, 1]` against `[n, n]`).
    MulRowByCount,
    /// `qmatmul`: the sum is requantized in `f64` (`acc as f64 * scale as f64`, rounded there)
    /// instead of in `f32`: wherever the `f32` product rounds onto a half (3 · f32(1/6) is 0.5
    /// in `f32`, just above it in `f64`) the result rounds the other way.
    QmatmulRequantizeF64,
    /// Max pooling in F16: a NaN is widened to `f32` and narrowed back arithmetically, like a
    /// number, which quiets a signalling NaN (`0x7d00` comes out `0x7f00`).
    PoolF16NanWidened,
    /// `embedding`: each row is copied through `f64` (`from_f64(v.to_f64())`, the widening
    /// kept from being folded away), exact for every number but quieting a signalling NaN.
    EmbeddingRowsThroughF64,
    /// Every common kernel: a view that covers its storage exactly (offset 0, no gaps) is taken
    /// as packed and its storage copied as it lies — wrong for a transposed view.
    PackDenseAsStored,
    /// The contiguous-only kernels (convolutions, max pooling): a view that covers its storage
    /// exactly is accepted as contiguous and its storage read as it lies — a transposed view is
    /// neither refused nor read right.
    DenseViewTakenAsPacked,
    /// `gelu`: a zero operand short-cut to `+0.0` (skipping `erf`), so `gelu(-0.0)` loses its
    /// sign.
    GeluZeroShortcut,
}

/// The planted dense-view mutants' test: `operand` covers its `stored` elements exactly, with
/// positive strides from offset 0 (dense in some order of its axes, not necessarily row-major).
pub(crate) fn covers_its_storage(operand: &fkc_provider::Operand, stored: usize) -> bool {
    let mut axes: Vec<(isize, usize)> = (operand.strides().iter().copied())
        .zip(operand.shape().iter().copied())
        .filter(|&(_, d)| d > 1)
        .collect();
    axes.sort_unstable();
    let mut step = 1isize;
    let mut dense = operand.offset() == 0;
    for (stride, d) in axes {
        dense &= stride == step;
        step = step.saturating_mul(isize::try_from(d).unwrap_or(isize::MAX));
    }
    dense && usize::try_from(step).is_ok_and(|n| n == stored)
}

#[cfg(feature = "mutants")]
thread_local! {
    static ACTIVE: std::cell::Cell<Option<Mutant>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with `mutant` active on this thread (and on the workers the kernel starts); the
/// mutant before is restored afterwards, even when `f` panics.
#[cfg(feature = "mutants")]
pub fn with<R>(mutant: Option<Mutant>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Mutant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            ACTIVE.set(self.0);
        }
    }
    let _restore = Restore(ACTIVE.replace(mutant));
    f()
}

/// Runs `f` (without the `mutants` feature there is nothing to activate).
#[cfg(not(feature = "mutants"))]
pub fn with<R>(_: Option<Mutant>, f: impl FnOnce() -> R) -> R {
    f()
}

/// The mutant active on this thread.
#[inline(always)]
pub(crate) fn current() -> Option<Mutant> {
    #[cfg(feature = "mutants")]
    {
        ACTIVE.get()
    }
    #[cfg(not(feature = "mutants"))]
    {
        None
    }
}

/// Whether `mutant` is active on this thread.
#[inline(always)]
pub(crate) fn active(mutant: Mutant) -> bool {
    current() == Some(mutant)
}
