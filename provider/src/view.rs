//! Operand views at the executor boundary: shape, strides and offset over shared storage.
//!
//! `RefTensor` itself is always contiguous, so layout claims ("strided: rejected") can only be
//! tested if something upstream can express a non-contiguous producer. [`Operand`] is that
//! producer: an `Arc<AnyTensor>` storage viewed with element strides (possibly zero or
//! negative) and a start offset, bounds-checked at construction. [`LayoutFlags`] classifies a
//! view the way kernel contracts do, and the `*_view_of` helpers build real non-contiguous
//! views with the same logical values as a given tensor, for layout tests.

use std::fmt;
use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{KernelErrorKind, TensorError};
use crate::shape::{numel, row_major_strides};
use crate::tensor::AnyTensor;

/// How a view departs from a packed row-major layout. Dimensions of size 1 are ignored (their
/// stride never changes an address). A contiguous view has every flag false.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LayoutFlags {
    /// Some positive stride differs from the packed row-major stride (step, transpose, pitch).
    pub strided: bool,
    /// Some dimension of size > 1 has stride 0 (broadcast).
    pub broadcast_stride0: bool,
    /// The view starts at a non-zero element offset into its storage.
    pub start_offset: bool,
    /// Some dimension of size > 1 has a negative stride.
    pub reverse_strides: bool,
}

impl LayoutFlags {
    /// True when no flag is set.
    pub fn is_contiguous(self) -> bool {
        self == LayoutFlags::default()
    }
}

impl fmt::Display for LayoutFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (self.strided, "strided"),
            (self.broadcast_stride0, "broadcast_stride0"),
            (self.start_offset, "start_offset"),
            (self.reverse_strides, "reverse_strides"),
        ];
        let set: Vec<&str> = names
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
        if set.is_empty() {
            f.write_str("contiguous")
        } else {
            f.write_str(&set.join(", "))
        }
    }
}

/// A view of shared storage: element `idx` lives at `offset + Σ idx[i]·strides[i]`.
#[derive(Clone, Debug)]
pub struct Operand {
    storage: Arc<AnyTensor>,
    shape: Vec<usize>,
    strides: Vec<isize>,
    offset: usize,
}

impl Operand {
    /// The packed row-major view of a whole tensor.
    pub fn contiguous(t: AnyTensor) -> Operand {
        let shape = t.shape().to_vec();
        let strides = row_major_strides(&shape);
        Operand {
            storage: Arc::new(t),
            shape,
            strides,
            offset: 0,
        }
    }

    /// A view of `storage`; fails unless `strides` has one entry per dimension and every
    /// addressable element lies inside the storage.
    pub fn view(
        storage: Arc<AnyTensor>,
        shape: Vec<usize>,
        strides: Vec<isize>,
        offset: usize,
    ) -> Result<Operand, TensorError> {
        if shape.len() != strides.len() {
            return Err(TensorError::new(
                KernelErrorKind::Rank,
                format!(
                    "view shape {shape:?} has {} strides {strides:?}",
                    strides.len()
                ),
            ));
        }
        if numel(&shape)? > 0 {
            check_bounds(storage.len(), &shape, &strides, offset)?;
        }
        Ok(Operand {
            storage,
            shape,
            strides,
            offset,
        })
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.storage.dtype()
    }

    /// The logical dimensions.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Element strides, one per dimension.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// Element offset of index `[0, 0, ...]` in the storage.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The shared storage.
    pub fn storage(&self) -> &Arc<AnyTensor> {
        &self.storage
    }

    /// Classifies the layout (see [`LayoutFlags`]).
    pub fn layout(&self) -> LayoutFlags {
        let packed = row_major_strides(&self.shape);
        let mut flags = LayoutFlags {
            start_offset: self.offset != 0,
            ..LayoutFlags::default()
        };
        if self.shape.contains(&0) {
            return flags; // no element: every stride is as good as the packed one
        }
        let dims = self.shape.iter().zip(&self.strides).zip(&packed);
        for ((&size, &stride), &want) in dims {
            if size <= 1 {
                continue;
            }
            match stride {
                0 => flags.broadcast_stride0 = true,
                s if s < 0 => flags.reverse_strides = true,
                s if s != want => flags.strided = true,
                _ => {}
            }
        }
        flags
    }

    /// True when the view is packed row-major from offset 0.
    pub fn is_contiguous(&self) -> bool {
        self.layout().is_contiguous()
    }

    /// Calls `f` with the storage index of every element, in row-major logical order.
    pub fn for_each_storage_index(&self, mut f: impl FnMut(usize)) {
        if self.shape.contains(&0) {
            return;
        }
        let mut index = vec![0usize; self.shape.len()];
        // Addresses were bounds-checked in `view`, so they are in 0..storage.len().
        let mut addr = self.offset as isize;
        loop {
            f(addr as usize);
            let mut axis = self.shape.len();
            loop {
                if axis == 0 {
                    return;
                }
                axis -= 1;
                index[axis] += 1;
                addr += self.strides[axis];
                if index[axis] < self.shape[axis] {
                    break;
                }
                addr -= self.strides[axis] * self.shape[axis] as isize;
                index[axis] = 0;
            }
        }
    }
}

impl Operand {
    /// The view's logical values packed into a contiguous tensor, bit for bit (what a planner's
    /// contiguize step produces).
    pub fn packed(&self) -> Result<AnyTensor, TensorError> {
        let storage = self.storage.to_bits();
        let mut bits = Vec::new();
        bits.try_reserve_exact(numel(&self.shape)?).map_err(|_| {
            TensorError::new(KernelErrorKind::Overflow, "cannot allocate the packed copy")
        })?;
        self.for_each_storage_index(|i| bits.push(storage.get(i).copied().unwrap_or(0)));
        AnyTensor::from_bits(self.dtype(), &self.shape, &bits)
    }
}

/// Checks that the lowest and highest addressed elements are inside `0..len`.
fn check_bounds(
    len: usize,
    shape: &[usize],
    strides: &[isize],
    offset: usize,
) -> Result<(), TensorError> {
    let out_of_range = || {
        TensorError::new(
            KernelErrorKind::Length,
            format!(
                "view shape {shape:?} strides {strides:?} offset {offset} addresses outside storage of {len} elements"
            ),
        )
    };
    let mut lo = i128::try_from(offset).map_err(|_| out_of_range())?;
    let mut hi = lo;
    for (&size, &stride) in shape.iter().zip(strides) {
        let span = i128::try_from(size - 1)
            .ok()
            .and_then(|s| s.checked_mul(stride as i128))
            .ok_or_else(out_of_range)?;
        if span < 0 {
            lo = lo.checked_add(span).ok_or_else(out_of_range)?;
        } else {
            hi = hi.checked_add(span).ok_or_else(out_of_range)?;
        }
    }
    let len = i128::try_from(len).map_err(|_| out_of_range())?;
    if lo < 0 || hi >= len {
        return Err(out_of_range());
    }
    Ok(())
}

/// Filler for storage slots no view element addresses: NaN, so reading one shows up.
const JUNK: f64 = f64::NAN;

/// A view with the same logical values as `t` whose strides are twice the packed ones
/// (`strided` flag): the storage interleaves `t`'s elements with NaN junk.
/// `None` when `t` has fewer than 2 elements (no stride can then be observed).
pub fn strided_view_of(t: &AnyTensor) -> Option<Operand> {
    if t.len() < 2 {
        return None;
    }
    let values: Vec<f64> = t.to_f64_vec().into_iter().flat_map(|v| [v, JUNK]).collect();
    let storage = AnyTensor::from_f64(t.dtype(), &[values.len()], &values).ok()?;
    let strides = row_major_strides(t.shape()).iter().map(|s| s * 2).collect();
    Operand::view(Arc::new(storage), t.shape().to_vec(), strides, 0).ok()
}

/// A packed view with the same logical values as `t` that starts at element offset 3 of its
/// storage (`start_offset` flag); the three leading slots hold NaN junk.
pub fn offset_view_of(t: &AnyTensor) -> Operand {
    packed_among_junk(t, 3, 0).unwrap_or_else(|| Operand::contiguous(t.clone()))
}

/// A packed view from offset 0 with the same logical values as `t` whose storage holds three
/// NaN junk elements after them, as a leading slice `x[..n]` of a longer tensor does. It is
/// contiguous (no flag set): a kernel must read the view's elements, never the whole storage.
/// `None` when `t` is empty (nothing to tell its storage apart from).
pub fn prefix_view_of(t: &AnyTensor) -> Option<Operand> {
    if t.is_empty() {
        return None;
    }
    packed_among_junk(t, 0, 3)
}

/// A packed row-major view of `t`'s values in a storage with `lead` NaN junk elements before
/// them and `tail` after, starting at element `lead`.
fn packed_among_junk(t: &AnyTensor, lead: usize, tail: usize) -> Option<Operand> {
    let mut values = vec![JUNK; lead];
    values.extend(t.to_f64_vec());
    values.extend(std::iter::repeat_n(JUNK, tail));
    let storage = AnyTensor::from_f64(t.dtype(), &[values.len()], &values).ok()?;
    let shape = t.shape().to_vec();
    let strides = row_major_strides(&shape);
    Operand::view(Arc::new(storage), shape, strides, lead).ok()
}

/// A view with the same logical values as `t` whose storage holds the data reversed along the
/// last axis of size > 1; that axis gets a negative stride and the view starts at its far end
/// (`reverse_strides` and `start_offset` flags). `None` when every axis has size ≤ 1.
pub fn reversed_view_of(t: &AnyTensor) -> Option<Operand> {
    let axis = t.shape().iter().rposition(|&d| d > 1)?;
    reversed_view_along(t, axis)
}

/// A view with the same logical values as `t` whose storage holds the data reversed along
/// `axis`, which gets a negative stride; the view starts at that axis's far end
/// (`reverse_strides` and `start_offset` flags). `None` when `axis` is out of range or has
/// size ≤ 1.
pub fn reversed_view_along(t: &AnyTensor, axis: usize) -> Option<Operand> {
    let shape = t.shape().to_vec();
    let size = *shape.get(axis).filter(|&&d| d > 1)?;
    let packed = row_major_strides(&shape);
    let inner = usize::try_from(packed[axis]).ok()?;
    let values = t.to_f64_vec();
    // Each block of `size * inner` elements is reversed at the granularity of `inner` runs.
    let mut reversed = Vec::with_capacity(values.len());
    for block in values.chunks(size * inner) {
        for run in block.chunks(inner).rev() {
            reversed.extend_from_slice(run);
        }
    }
    let storage = AnyTensor::from_f64(t.dtype(), &shape, &reversed).ok()?;
    let mut strides = packed;
    strides[axis] = -strides[axis];
    let offset = (size - 1) * inner;
    Operand::view(Arc::new(storage), shape, strides, offset).ok()
}

/// A view with the same logical values as `t` whose last axis is packed but whose rows are a
/// pitch apart: one NaN junk element after each row, as in a slice of a wider tensor
/// (`strided` flag, with a unit innermost stride). `None` when `t` has fewer than two axes of
/// size > 1 (no pitch can then be observed).
pub fn row_pitch_view_of(t: &AnyTensor) -> Option<Operand> {
    pitch_view_along(t, t.shape().len().checked_sub(1)?)
}

/// A view with the same logical values as `t` stored as a slice of a tensor one longer along
/// `axis` (a NaN junk slice after each run of `axis`): every axis before `axis` a pitch apart,
/// `axis` and those after it packed (`strided` flag). Along the last axis these are rows a
/// pitch apart; along a middle one, planes a pitch apart over packed rows — a kernel that takes
/// the outer strides for packed over the pitch reads junk. `None` when no axis before `axis`
/// has size > 1 (no pitch can then be observed) or `t` is empty.
pub fn pitch_view_along(t: &AnyTensor, axis: usize) -> Option<Operand> {
    let shape = t.shape().to_vec();
    let observable = shape.get(..axis)?.iter().any(|&d| d > 1) && shape.get(axis).is_some();
    if !observable || shape.contains(&0) {
        return None;
    }
    let mut wider = shape.clone();
    *wider.get_mut(axis)? += 1;
    // `run` elements of `t` (one run of `axis` and the axes after it), then `slice` of junk
    let slice: usize = shape.get(axis + 1..)?.iter().product();
    let run = slice.checked_mul(*shape.get(axis)?)?;
    let padded: Vec<f64> = t
        .to_f64_vec()
        .chunks(run)
        .flat_map(|chunk| {
            chunk
                .iter()
                .copied()
                .chain(std::iter::repeat_n(JUNK, slice))
        })
        .collect();
    let storage = AnyTensor::from_f64(t.dtype(), &[padded.len()], &padded).ok()?;
    let strides = row_major_strides(&wider);
    Operand::view(Arc::new(storage), shape, strides, 0).ok()
}

/// A view with the same logical values as `t` whose storage holds them with the axes in
/// reverse order — a transposed tensor, column-major: dense, from offset 0, exactly as long as
/// `t`, yet not row-major (`strided` flag). A kernel that takes any dense view for packed reads
/// it wrong. `None` when `t` has fewer than two axes of size > 1 (the order cannot then be
/// told apart from row-major).
pub fn transposed_view_of(t: &AnyTensor) -> Option<Operand> {
    let shape = t.shape().to_vec();
    if shape.iter().filter(|&&d| d > 1).count() < 2 || shape.contains(&0) {
        return None;
    }
    // Column-major strides: axis k steps over the product of the axes before it.
    let mut strides = Vec::with_capacity(shape.len());
    let mut step = 1usize;
    for &d in &shape {
        strides.push(isize::try_from(step).ok()?);
        step = step.checked_mul(d)?;
    }
    let bits = t.to_bits();
    let mut stored = vec![0u64; bits.len()];
    let view = Operand::view(
        Arc::new(AnyTensor::from_bits(t.dtype(), &[bits.len()], &stored).ok()?),
        shape.clone(),
        strides.clone(),
        0,
    )
    .ok()?;
    // The view's storage index of each logical element, in row-major logical order.
    let mut logical = bits.iter();
    let mut placed = true;
    view.for_each_storage_index(|at| match (stored.get_mut(at), logical.next()) {
        (Some(slot), Some(&b)) => *slot = b,
        _ => placed = false,
    });
    let storage = AnyTensor::from_bits(t.dtype(), &[stored.len()], &stored).ok()?;
    placed
        .then(|| Operand::view(Arc::new(storage), shape, strides, 0).ok())
        .flatten()
}

/// A view with the same logical values as `t` that reads one slice of an axis along which
/// `t` is constant (all slices bitwise equal) through stride 0 (`broadcast_stride0` flag;
/// axes before it may also show `strided`). The first such axis of size > 1 is used.
/// `None` when `t` is not constant along any axis of size > 1.
pub fn broadcast_view_of(t: &AnyTensor) -> Option<Operand> {
    let shape = t.shape();
    let axis = (0..shape.len()).find(|&a| shape[a] > 1 && constant_along(t, a))?;
    let packed = row_major_strides(shape);
    let inner = usize::try_from(packed[axis]).ok()?;
    let values = t.to_f64_vec();
    let kept: Vec<f64> = values
        .chunks(shape[axis] * inner)
        .flat_map(|block| block.iter().take(inner).copied())
        .collect();
    let mut collapsed = shape.to_vec();
    collapsed[axis] = 1;
    let storage = AnyTensor::from_f64(t.dtype(), &collapsed, &kept).ok()?;
    let mut strides = row_major_strides(&collapsed);
    strides[axis] = 0;
    Operand::view(Arc::new(storage), shape.to_vec(), strides, 0).ok()
}

/// Expands axis `axis` of `t`, which must have size 1, to `size` through stride 0 (the
/// `broadcast_stride0` flag), like `Tensor::expand`. `None` if the axis is out of range or
/// not of size 1.
pub fn expand_view_of(t: &AnyTensor, axis: usize, size: usize) -> Option<Operand> {
    if t.shape().get(axis) != Some(&1) {
        return None;
    }
    let mut strides = row_major_strides(t.shape());
    strides[axis] = 0;
    let mut shape = t.shape().to_vec();
    shape[axis] = size;
    Operand::view(Arc::new(t.clone()), shape, strides, 0).ok()
}

/// True when all slices of `t` along `axis` are bitwise equal.
fn constant_along(t: &AnyTensor, axis: usize) -> bool {
    let shape = t.shape();
    let inner: usize = shape[axis + 1..].iter().product();
    let bits = t.to_bits();
    bits.chunks(shape[axis] * inner).all(|block| {
        let first = &block[..inner];
        block.chunks(inner).all(|slice| slice == first)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn arange(shape: &[usize]) -> AnyTensor {
        let n: usize = shape.iter().product();
        let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
        AnyTensor::from_f64(DType::F32, shape, &values).unwrap()
    }

    fn logical_values(op: &Operand) -> Vec<f64> {
        let storage = op.storage().to_f64_vec();
        let mut out = Vec::new();
        op.for_each_storage_index(|i| out.push(storage[i]));
        out
    }

    #[test]
    fn a_transposed_view_is_dense_from_offset_0_yet_strided() {
        let t = arange(&[2, 3]);
        let view = transposed_view_of(&t).unwrap();
        assert_eq!(view.strides(), [1, 2]);
        assert_eq!(view.storage().to_f64_vec(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(view.packed().unwrap().to_bits(), t.to_bits());
        let flags = view.layout();
        assert!(flags.strided && !flags.start_offset && !flags.reverse_strides);
        // one long axis: a column-major storage is the row-major one
        assert!(transposed_view_of(&arange(&[1, 4, 1])).is_none());
        assert!(transposed_view_of(&arange(&[2, 0, 3])).is_none());
    }

    #[test]
    fn a_prefix_view_is_contiguous_over_a_longer_storage() {
        let t = arange(&[2, 3]);
        let view = prefix_view_of(&t).unwrap();
        assert!(view.is_contiguous());
        assert_eq!(view.storage().len(), 9);
        assert_eq!(view.packed().unwrap().to_bits(), t.to_bits());
        assert!(prefix_view_of(&arange(&[2, 0])).is_none());
    }

    #[test]
    fn contiguous_view_has_no_flags() {
        let op = Operand::contiguous(arange(&[2, 3]));
        assert!(op.is_contiguous());
        assert_eq!(logical_values(&op), arange(&[2, 3]).to_f64_vec());
    }

    #[test]
    fn an_empty_operand_is_contiguous_whatever_its_strides() {
        // Row-major strides of [2, 0] are [0, 1]: the 0 is no broadcast, there is no element.
        let op = Operand::contiguous(arange(&[2, 0]));
        assert_eq!(op.strides(), &[0, 1]);
        assert!(op.is_contiguous());
        assert!(logical_values(&op).is_empty());
    }

    #[test]
    fn helpers_keep_values_and_set_flags() {
        let t = arange(&[2, 3, 4]);
        let strided = strided_view_of(&t).unwrap();
        assert!(strided.layout().strided && !strided.layout().start_offset);
        assert_eq!(logical_values(&strided), t.to_f64_vec());

        let offset = offset_view_of(&t);
        assert_eq!(
            offset.layout(),
            LayoutFlags {
                start_offset: true,
                ..LayoutFlags::default()
            }
        );
        assert_eq!(logical_values(&offset), t.to_f64_vec());

        let reversed = reversed_view_of(&t).unwrap();
        assert!(reversed.layout().reverse_strides);
        assert_eq!(logical_values(&reversed), t.to_f64_vec());
    }

    #[test]
    fn outer_reversal_and_row_pitch_keep_values() {
        let t = arange(&[2, 3, 4]);
        let outer = reversed_view_along(&t, 0).unwrap();
        assert!(outer.layout().reverse_strides);
        assert!(outer.strides()[0] < 0 && outer.strides()[2] == 1);
        assert_eq!(logical_values(&outer), t.to_f64_vec());
        assert!(reversed_view_along(&arange(&[1, 3]), 0).is_none());

        let pitched = row_pitch_view_of(&t).unwrap();
        assert!(pitched.layout().strided && pitched.strides()[2] == 1);
        assert_eq!(pitched.strides()[1], 5);
        assert_eq!(logical_values(&pitched), t.to_f64_vec());
        assert!(row_pitch_view_of(&arange(&[1, 4])).is_none());

        // planes a pitch apart: axis 1 one longer, rows packed within each plane
        let t = arange(&[2, 3, 4, 5]);
        let planes = pitch_view_along(&t, 2).unwrap();
        assert!(planes.layout().strided);
        assert_eq!(planes.strides(), &[3 * 5 * 5, 5 * 5, 5, 1]);
        assert_eq!(logical_values(&planes), t.to_f64_vec());
        let channels = pitch_view_along(&t, 1).unwrap();
        assert_eq!(channels.strides(), &[4 * 4 * 5, 4 * 5, 5, 1]);
        assert_eq!(logical_values(&channels), t.to_f64_vec());
        assert!(pitch_view_along(&arange(&[1, 3, 4]), 1).is_none());
        assert!(pitch_view_along(&t, 4).is_none());
    }

    #[test]
    fn packed_copies_keep_bits() {
        let t = arange(&[2, 3, 4]);
        for view in [
            strided_view_of(&t).unwrap(),
            offset_view_of(&t),
            reversed_view_of(&t).unwrap(),
        ] {
            assert_eq!(view.packed().unwrap(), t);
        }
    }

    #[test]
    fn broadcast_views() {
        let t = AnyTensor::from_f64(DType::F64, &[2, 3], &[1., 2., 3., 1., 2., 3.]).unwrap();
        let b = broadcast_view_of(&t).unwrap();
        assert_eq!(
            b.layout(),
            LayoutFlags {
                broadcast_stride0: true,
                ..LayoutFlags::default()
            }
        );
        assert_eq!(logical_values(&b), t.to_f64_vec());
        assert!(broadcast_view_of(&arange(&[2, 3])).is_none());

        let e = expand_view_of(&arange(&[1, 3]), 0, 4).unwrap();
        assert!(e.layout().broadcast_stride0);
        assert_eq!(logical_values(&e).len(), 12);
        assert!(expand_view_of(&arange(&[2, 3]), 0, 4).is_none());
    }

    #[test]
    fn view_bounds_are_checked() {
        let s = Arc::new(arange(&[6]));
        assert!(Operand::view(s.clone(), vec![2, 3], vec![3, 1], 0).is_ok());
        let e = Operand::view(s.clone(), vec![2, 3], vec![3, 1], 1).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Length);
        let e = Operand::view(s.clone(), vec![2, 3], vec![-3, 1], 0).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Length);
        assert!(Operand::view(s.clone(), vec![2, 3], vec![-3, 1], 3).is_ok());
        let e = Operand::view(s.clone(), vec![2], vec![isize::MAX], 0).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Length);
        let e = Operand::view(s, vec![2, 3], vec![1], 0).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::Rank);
    }
}
