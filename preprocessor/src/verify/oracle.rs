//! The hand-written definitional oracles the semantics interpreter replaced, kept as the
//! differential test of the interpreter (`semantics::tests`): one per op kind (`Conv2D`, `Conv2dSimple`,
//! `ConvTranspose2D`, `MaxPool2D`, `Contiguize`, `Relu`), written here from the textbook
//! definitions (gather form, in f64) and not from any backend's code. A contract reaches one
//! through its `op_kind`, whatever its kernel is called and whoever provides it. Each
//! gives the exact value of every output element and the magnitude `Σ|w·x|` of its terms, so a
//! result in dtype `T` can be held to Higham's bound for recursive summation,
//! `|out − exact| ≤ γ_K · Σ|w·x|` with `γ_K = (1 + u)^K − 1`, the exact worst case of K
//! roundings that Higham's `K·u / (1 − K·u)` (TOSA's verifier) approximates from above.

use super::sample::Sample;
pub use crate::semantics::float::{NanPolicy, gamma, largest, smallest_subnormal, unit_roundoff};
use fkc_provider::DType;

/// The oracle's answer for one output tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub values: Vec<f64>,
    /// `Σ|w·x|` (plus `|bias|`) per element; 0 for exact operations such as max.
    pub magnitude: Vec<f64>,
    /// The most terms any element sums (K in γ_K).
    pub terms: usize,
    /// For multiply-add kernels: (multiply-adds really performed, taps the loop nest visits,
    /// padding taps included).
    pub work: Option<(u64, u64)>,
    /// Per element, what summing its terms in some order can give: filled for sums when the
    /// oracle is asked for envelopes ([`reference_envelopes`]), empty otherwise.
    pub envelopes: Vec<Envelope>,
    /// For selections (max pooling): the windows holding a NaN among numbers, where the NaN
    /// policy decides the result.
    pub nan_mixed: Option<usize>,
}

/// What summing one element's terms can give when the order of the additions is not fixed:
/// in the dtype (each term a value of the dtype, an overflowing product already ±Inf), a NaN
/// term, or a +Inf and a −Inf term, make NaN in every order; otherwise a partial sum may
/// overflow to ±Inf in some orders (when the positive or the negative terms alone reach the
/// dtype's largest finite value), and an infinite term met by the opposite overflow makes NaN.
/// A kernel may also accumulate in a wider type than it stores (the contract does not say
/// otherwise): then the terms are exact, and the sum overflows only when rounded at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Envelope {
    /// The terms as the dtype holds them.
    narrow: Parts,
    /// The terms exactly (as a wider accumulator holds them).
    wide: Parts,
    /// Σ of the exact terms.
    exact: f64,
}

/// The terms of a sum, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Parts {
    /// Σ of the positive finite terms.
    positive: f64,
    /// Σ of |the negative finite terms|.
    negative: f64,
    nan: bool,
    plus_infinity: bool,
    minus_infinity: bool,
}

/// The results an [`Envelope`] allows (a finite one within the error bound).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcomes {
    pub finite: bool,
    pub nan: bool,
    pub plus_infinity: bool,
    pub minus_infinity: bool,
}

impl Outcomes {
    /// Whether more than one kind of result is possible (the element's value depends on the
    /// summation order).
    pub fn order_dependent(&self) -> bool {
        [
            self.finite,
            self.nan,
            self.plus_infinity,
            self.minus_infinity,
        ]
        .iter()
        .filter(|b| **b)
        .count()
            > 1
    }

    /// Whether `got` (a finite value already held to the bound by the caller, or a special
    /// value) is one of these outcomes.
    pub fn admits_special(&self, got: f64) -> bool {
        if got.is_nan() {
            self.nan
        } else if got == f64::INFINITY {
            self.plus_infinity
        } else if got == f64::NEG_INFINITY {
            self.minus_infinity
        } else {
            self.finite
        }
    }

    fn union(self, other: Outcomes) -> Outcomes {
        Outcomes {
            finite: self.finite || other.finite,
            nan: self.nan || other.nan,
            plus_infinity: self.plus_infinity || other.plus_infinity,
            minus_infinity: self.minus_infinity || other.minus_infinity,
        }
    }
}

impl Parts {
    #[inline]
    fn add(&mut self, term: f64) {
        if term.is_nan() {
            self.nan = true;
        } else if term == f64::INFINITY {
            self.plus_infinity = true;
        } else if term == f64::NEG_INFINITY {
            self.minus_infinity = true;
        } else if term > 0.0 {
            self.positive += term;
        } else {
            self.negative -= term;
        }
    }

    /// The results some order of the additions gives with partial sums in `dtype`, whose
    /// roundings may grow a partial sum by `gamma`.
    fn outcomes(&self, dtype: DType, gamma: f64) -> Outcomes {
        let reach = largest(dtype) / (1.0 + gamma);
        let up = self.positive >= reach; // some order overflows to +Inf
        let down = self.negative >= reach; // some order overflows to −Inf
        let only = |nan, plus_infinity, minus_infinity| Outcomes {
            finite: false,
            nan,
            plus_infinity,
            minus_infinity,
        };
        if self.nan || (self.plus_infinity && self.minus_infinity) {
            only(true, false, false)
        } else if self.plus_infinity {
            only(down, true, false)
        } else if self.minus_infinity {
            only(up, false, true)
        } else {
            Outcomes {
                finite: true,
                nan: false,
                plus_infinity: up,
                minus_infinity: down,
            }
        }
    }
}

impl Envelope {
    /// Adds one term, computed exactly (in f64).
    #[inline]
    fn add(&mut self, exact: f64, dtype: DType) {
        self.narrow.add(in_range(exact, dtype));
        self.wide.add(exact);
        self.exact += exact;
    }

    /// The results some order of the additions gives in `dtype` (roundings growing a partial
    /// sum by at most `gamma`), or a wider accumulator rounded once to `dtype`.
    pub fn outcomes(&self, dtype: DType, gamma: f64) -> Outcomes {
        let narrow = self.narrow.outcomes(dtype, gamma);
        let mut wide = self.wide.outcomes(DType::F64, gamma);
        if wide.finite {
            // One rounding of the wide sum to the dtype may overflow.
            let edge = largest(dtype) * (1.0 - gamma);
            wide.plus_infinity |= self.exact >= edge;
            wide.minus_infinity |= self.exact <= -edge;
            wide.finite = self.exact.abs() <= largest(dtype) * (1.0 + gamma);
        }
        narrow.union(wide)
    }
}

/// The envelope of a sum of `terms` (computed exactly) in `dtype`.
fn envelope(terms: impl Iterator<Item = f64>, dtype: DType) -> Envelope {
    let mut envelope = Envelope::default();
    for term in terms {
        envelope.add(term, dtype);
    }
    envelope
}

/// `value` as the dtype holds it after a rounding: beyond the largest finite value (by more
/// than half a unit in the last place, approximately) it is ±Inf.
fn in_range(value: f64, dtype: DType) -> f64 {
    let limit = largest(dtype) * (1.0 + unit_roundoff(dtype));
    if value.is_finite() && value.abs() >= limit {
        value.signum() * f64::INFINITY
    } else {
        value
    }
}

pub use super::run::Input;

impl Input {
    /// The operand as a rank-4 array (missing trailing dims are 1).
    fn view(&self) -> View<'_> {
        let mut dims = [1; 4];
        for (slot, dim) in dims.iter_mut().zip(&self.dims) {
            *slot = *dim;
        }
        View {
            values: &self.values,
            dims,
        }
    }
}

/// A rank-4 row-major view of an operand's values; an element outside them reads as NaN.
#[derive(Clone, Copy)]
struct View<'v> {
    values: &'v [f64],
    dims: [usize; 4],
}

impl View<'_> {
    #[inline]
    fn at(&self, a: usize, b: usize, c: usize, d: usize) -> f64 {
        let [_, d1, d2, d3] = self.dims;
        self.values
            .get(((a * d1 + b) * d2 + c) * d3 + d)
            .copied()
            .unwrap_or(f64::NAN)
    }
}

fn int(sample: &Sample, name: &str, default: usize) -> usize {
    let fallback = i64::try_from(default).unwrap_or(0);
    sample
        .int_or(name, fallback)
        .and_then(|v| usize::try_from(v).ok())
        .unwrap_or(default)
}

fn pair(sample: &Sample, name: &str, default: usize) -> (usize, usize) {
    let fallback = i64::try_from(default).unwrap_or(0);
    let (a, b) = sample
        .pair_or(name, fallback)
        .unwrap_or((fallback, fallback));
    let unsigned = |v: i64| usize::try_from(v).unwrap_or(default);
    (unsigned(a), unsigned(b))
}

/// How an oracle does its arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    /// In f64: the exact value for the operand sizes the gate draws (the definitional oracle).
    Exact,
    /// In a dtype, rounding after every multiply and every add as the kernels' `T` arithmetic
    /// does (`half` computes each operation in f32 and rounds): the naive nested sum in `T`.
    In(DType),
}

/// The op kinds whose naive nested summation order an oracle can replay in `T`.
pub fn has_order(op_kind: &str) -> bool {
    matches!(op_kind, "Conv2D" | "Conv2dSimple")
}

/// The naive nested sum in `dtype`, in the documented loop order (ci, kh, kw ascending, then
/// the bias), for the op kinds [`has_order`] names.
pub fn ordered(
    op_kind: &str,
    dtype: DType,
    inputs: &[Option<Input>],
    sample: &Sample,
) -> Option<Vec<f64>> {
    has_order(op_kind).then_some(())?;
    let (x, w, bias, g) = conv_operands(op_kind, inputs, sample)?;
    conv2d(x, w, bias, g, Arith::In(dtype), None).map(|r| r.values)
}

/// The operands and geometry of a `Conv2D` or `Conv2dSimple` sample.
fn conv_operands<'i>(
    op_kind: &str,
    inputs: &'i [Option<Input>],
    sample: &Sample,
) -> Option<(&'i Input, &'i Input, Option<&'i Input>, Geometry)> {
    let x = inputs.first()?.as_ref()?;
    let w = inputs.get(1)?.as_ref()?;
    let simple = op_kind == "Conv2dSimple";
    let geometry = Geometry {
        stride: pair(sample, "stride", 1),
        padding: pair(sample, "padding", 0),
        dilation: if simple {
            (1, 1)
        } else {
            pair(sample, "dilation", 1)
        },
        groups: if simple { 1 } else { int(sample, "groups", 1) },
    };
    let bias = if simple {
        None
    } else {
        inputs.get(2).and_then(Option::as_ref)
    };
    Some((x, w, bias, geometry))
}

/// The reference for an op kind, when an oracle defines it.
pub fn reference(op_kind: &str, inputs: &[Option<Input>], sample: &Sample) -> Option<Reference> {
    reference_with(op_kind, inputs, sample, NanPolicy::Propagate)
}

/// [`reference`] under a NaN policy (only selections such as max pooling depend on it; the
/// arithmetic oracles propagate NaN as IEEE arithmetic does).
pub fn reference_with(
    op_kind: &str,
    inputs: &[Option<Input>],
    sample: &Sample,
    nan: NanPolicy,
) -> Option<Reference> {
    reference_envelopes(op_kind, inputs, sample, nan, None)
}

/// [`reference_with`], with each summed element's [`Envelope`] in `dtype` when it is given.
pub fn reference_envelopes(
    op_kind: &str,
    inputs: &[Option<Input>],
    sample: &Sample,
    nan: NanPolicy,
    envelopes: Option<DType>,
) -> Option<Reference> {
    let first = inputs.first()?.as_ref()?;
    match op_kind {
        "Conv2D" | "Conv2dSimple" => {
            let (x, w, bias, g) = conv_operands(op_kind, inputs, sample)?;
            conv2d(x, w, bias, g, Arith::Exact, envelopes)
        }
        "ConvTranspose2D" => conv_transpose2d(first, inputs.get(1)?.as_ref()?, sample, envelopes),
        "MaxPool2D" => max_pool2d(
            first,
            int(sample, "kernel_size", 1),
            int(sample, "stride", 1),
            nan,
        ),
        // max(x, 0), elementwise: exact.
        "Relu" => Some(Reference {
            values: first
                .values
                .iter()
                .map(|v| if v.is_nan() { *v } else { v.max(0.0) })
                .collect(),
            magnitude: vec![0.0; first.values.len()],
            terms: 0,
            work: None,
            envelopes: Vec::new(),
            nan_mixed: None,
        }),
        // A copy: the logical values themselves, exactly.
        "Contiguize" => Some(Reference {
            values: first.values.clone(),
            magnitude: vec![0.0; first.values.len()],
            terms: 0,
            work: None,
            envelopes: Vec::new(),
            nan_mixed: None,
        }),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy)]
struct Geometry {
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    groups: usize,
}

/// Gather form: `out[n, co, oh, ow] = bias[co] + Σ_{ci, kh, kw} x[n, g·Cg + ci, ih, iw] · w[co, ci, kh, kw]`
/// with `ih = oh·s − p + kh·d`, taps outside the input skipped, summed in that order (ci, kh,
/// kw ascending, then the bias) with `arith`'s multiply and add.
fn conv2d(
    x: &Input,
    w: &Input,
    bias: Option<&Input>,
    g: Geometry,
    arith: Arith,
    envelopes: Option<DType>,
) -> Option<Reference> {
    // One monomorphised loop nest per arithmetic: the multiply-add is the oracle's hot path.
    match arith {
        Arith::Exact | Arith::In(DType::F64) => {
            conv2d_in(x, w, bias, g, |a, b| a * b, |a, b| a + b, envelopes)
        }
        Arith::In(DType::F32) => conv2d_rounded(x, w, bias, g, f64::from),
        Arith::In(DType::BF16) => {
            conv2d_rounded(x, w, bias, g, |v| half::bf16::from_f32(v).to_f64())
        }
        Arith::In(DType::F16) => conv2d_rounded(x, w, bias, g, |v| half::f16::from_f32(v).to_f64()),
    }
}

/// [`conv2d_in`] in a dtype narrower than f64: each product and each sum is computed in f32
/// and rounded to the dtype by `round` (as `half` computes its operations).
fn conv2d_rounded(
    x: &Input,
    w: &Input,
    bias: Option<&Input>,
    g: Geometry,
    round: impl Fn(f32) -> f64 + Copy,
) -> Option<Reference> {
    conv2d_in(
        x,
        w,
        bias,
        g,
        move |a, b| round(a as f32 * b as f32),
        move |a, b| round(a as f32 + b as f32),
        None,
    )
}

/// The taps of one output coordinate along one axis of a convolution: (kernel index, input
/// index) for every kernel index whose input index `out·s − p + k·d` lies inside `0..len`,
/// ascending.
fn gather_taps(
    out: usize,
    (s, p, d): (usize, usize, usize),
    k: usize,
    len: usize,
) -> Vec<(usize, usize)> {
    (0..k)
        .filter_map(|i| {
            let at = (out * s + i * d).checked_sub(p)?;
            (at < len).then_some((i, at))
        })
        .collect()
}

fn conv2d_in(
    x: &Input,
    w: &Input,
    bias: Option<&Input>,
    g: Geometry,
    mul: impl Fn(f64, f64) -> f64,
    add: impl Fn(f64, f64) -> f64,
    envelopes: Option<DType>,
) -> Option<Reference> {
    let (x, w) = (x.view(), w.view());
    let [n, cin, h, wd] = x.dims;
    let [cout, cin_g, kh, kw] = w.dims;
    let groups = g.groups.max(1);
    let cout_g = cout / groups;
    let out_h =
        (h + 2 * g.padding.0).checked_sub(g.dilation.0 * (kh - 1) + 1)? / g.stride.0.max(1) + 1;
    let out_w =
        (wd + 2 * g.padding.1).checked_sub(g.dilation.1 * (kw - 1) + 1)? / g.stride.1.max(1) + 1;
    let rows: Vec<_> = (0..out_h)
        .map(|oh| gather_taps(oh, (g.stride.0, g.padding.0, g.dilation.0), kh, h))
        .collect();
    let cols: Vec<_> = (0..out_w)
        .map(|ow| gather_taps(ow, (g.stride.1, g.padding.1, g.dilation.1), kw, wd))
        .collect();
    let mut reference = Reference {
        values: Vec::with_capacity(n * cout * out_h * out_w),
        magnitude: Vec::with_capacity(n * cout * out_h * out_w),
        terms: cin_g * kh * kw + 1,
        work: None,
        envelopes: Vec::new(),
        nan_mixed: None,
    };
    let mut macs: u64 = 0;
    for b in 0..n {
        for co in 0..cout {
            let group = co / cout_g.max(1);
            let channels = (0..cin_g).filter(|ci| group * cin_g + ci < cin);
            let bias = bias.map(|bias| bias.values.get(co).copied().unwrap_or(f64::NAN));
            for row in &rows {
                for col in &cols {
                    let (mut sum, mut mag) = (0.0, 0.0);
                    for ci in channels.clone() {
                        for &(i, ih) in row {
                            for &(j, iw) in col {
                                let term =
                                    mul(x.at(b, group * cin_g + ci, ih, iw), w.at(co, ci, i, j));
                                sum = add(sum, term);
                                mag += term.abs();
                            }
                        }
                        macs += (row.len() * col.len()) as u64;
                    }
                    if let Some(value) = bias {
                        sum = add(sum, value);
                        mag += value.abs();
                    }
                    if let Some(dtype) = envelopes {
                        let terms = channels.clone().flat_map(|ci| {
                            row.iter().flat_map(move |&(i, ih)| {
                                col.iter().map(move |&(j, iw)| {
                                    x.at(b, group * cin_g + ci, ih, iw) * w.at(co, ci, i, j)
                                })
                            })
                        });
                        reference.envelopes.push(envelope(terms.chain(bias), dtype));
                    }
                    reference.values.push(sum);
                    reference.magnitude.push(mag);
                }
            }
        }
    }
    let visited = (n * cout * out_h * out_w * cin_g * kh * kw) as u64;
    reference.work = Some((macs, visited));
    Some(reference)
}

/// Gather form of the transposed convolution: `out[n, co, oh, ow] = Σ x[n, ci, ih, iw] · w[ci, co', kh, kw]`
/// over the taps with `oh + p = ih·s + kh·d` (ci, kh, kw ascending).
fn conv_transpose2d(
    x: &Input,
    w: &Input,
    sample: &Sample,
    envelopes: Option<DType>,
) -> Option<Reference> {
    let (x, w) = (x.view(), w.view());
    let [n, cin, h, wd] = x.dims;
    let [_, cout_g, kh, kw] = w.dims;
    let (stride, padding, output_padding, dilation) = (
        pair(sample, "stride", 1),
        pair(sample, "padding", 0),
        pair(sample, "output_padding", 0),
        pair(sample, "dilation", 1),
    );
    let groups = int(sample, "groups", 1).max(1);
    let cin_g = cin / groups;
    let size = |len: usize, s: usize, p: usize, d: usize, k: usize, op: usize| {
        (len.saturating_sub(1) * s + d * k.saturating_sub(1) + op + 1).checked_sub(2 * p)
    };
    let out_h = size(h, stride.0, padding.0, dilation.0, kh, output_padding.0)?;
    let out_w = size(wd, stride.1, padding.1, dilation.1, kw, output_padding.1)?;
    // The taps of an output coordinate: (kernel index, input index) with `out + p = in·s + k·d`.
    let taps =
        |out: usize, s: usize, p: usize, d: usize, k: usize, len: usize| -> Vec<(usize, usize)> {
            let s = s.max(1);
            (0..k)
                .filter_map(|i| {
                    let t = (out + p).checked_sub(i * d)?;
                    (t % s == 0 && t / s < len).then_some((i, t / s))
                })
                .collect()
        };
    let rows: Vec<_> = (0..out_h)
        .map(|oh| taps(oh, stride.0, padding.0, dilation.0, kh, h))
        .collect();
    let cols: Vec<_> = (0..out_w)
        .map(|ow| taps(ow, stride.1, padding.1, dilation.1, kw, wd))
        .collect();
    let mut reference = Reference {
        values: Vec::with_capacity(n * cout_g * groups * out_h * out_w),
        magnitude: Vec::with_capacity(n * cout_g * groups * out_h * out_w),
        terms: cin_g * kh * kw,
        work: None,
        envelopes: Vec::new(),
        nan_mixed: None,
    };
    let mut macs: u64 = 0;
    for b in 0..n {
        for co in 0..cout_g * groups {
            let (group, co_local) = (co / cout_g.max(1), co % cout_g.max(1));
            for row in &rows {
                for col in &cols {
                    let (mut sum, mut mag) = (0.0, 0.0);
                    for ci in group * cin_g..(group + 1) * cin_g {
                        for &(i, ih) in row {
                            for &(j, iw) in col {
                                let term = x.at(b, ci, ih, iw) * w.at(ci, co_local, i, j);
                                sum += term;
                                mag += term.abs();
                            }
                        }
                        macs += (row.len() * col.len()) as u64;
                    }
                    if let Some(dtype) = envelopes {
                        let terms = (group * cin_g..(group + 1) * cin_g).flat_map(|ci| {
                            row.iter().flat_map(move |&(i, ih)| {
                                col.iter().map(move |&(j, iw)| {
                                    x.at(b, ci, ih, iw) * w.at(ci, co_local, i, j)
                                })
                            })
                        });
                        reference.envelopes.push(envelope(terms, dtype));
                    }
                    reference.values.push(sum);
                    reference.magnitude.push(mag);
                }
            }
        }
    }
    // The scatter loop nest visits every (input pixel, output channel, kernel tap).
    let visited = (n * cin * h * wd * cout_g * kh * kw) as u64;
    reference.work = Some((macs, visited));
    Some(reference)
}

/// The maximum of each `k × k` window (exact: no rounding).
fn max_pool2d(x: &Input, k: usize, stride: usize, nan: NanPolicy) -> Option<Reference> {
    let x = x.view();
    let [n, c, h, w] = x.dims;
    let stride = stride.max(1);
    let out_h = h.checked_sub(k)? / stride + 1;
    let out_w = w.checked_sub(k)? / stride + 1;
    let mut values = Vec::new();
    let mut mixed = 0;
    for b in 0..n {
        for ch in 0..c {
            for oh in 0..out_h {
                for ow in 0..out_w {
                    let (mut best, mut seen, mut any_nan) = (f64::NEG_INFINITY, false, false);
                    for i in 0..k {
                        for j in 0..k {
                            let v = x.at(b, ch, oh * stride + i, ow * stride + j);
                            if v.is_nan() {
                                any_nan = true;
                            } else {
                                best = best.max(v);
                                seen = true;
                            }
                        }
                    }
                    mixed += usize::from(any_nan && seen);
                    let nan_wins = match nan {
                        NanPolicy::Propagate => any_nan,
                        NanPolicy::Ignore => !seen,
                    };
                    values.push(if nan_wins { f64::NAN } else { best });
                }
            }
        }
    }
    let magnitude = vec![0.0; values.len()];
    Some(Reference {
        values,
        magnitude,
        terms: 0,
        work: None,
        envelopes: Vec::new(),
        nan_mixed: Some(mixed),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn input(dims: &[usize], values: Vec<f64>) -> Input {
        Input {
            dims: dims.to_vec(),
            values,
        }
    }

    #[test]
    fn conv2d_on_an_arange_input() {
        // x = 0..9 as [1,1,3,3], w = all ones [1,1,2,2], no padding: each output sums a 2x2 window:
        // [0+1+3+4, 1+2+4+5, 3+4+6+7, 4+5+7+8] = [8, 12, 20, 24].
        let x = input(&[1, 1, 3, 3], (0..9).map(f64::from).collect());
        let w = input(&[1, 1, 2, 2], vec![1.0; 4]);
        let g = Geometry {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        };
        let r = conv2d(&x, &w, None, g, Arith::Exact, None).unwrap();
        assert_eq!(r.values, vec![8.0, 12.0, 20.0, 24.0]);
        assert_eq!(r.terms, 5);
    }

    #[test]
    fn transposed_conv_scatters_each_input_through_the_kernel() {
        // x = [1, 2] as [1,1,1,2], w = [1, 10] as [1,1,1,2], stride 1: out = [1, 12, 20].
        let x = input(&[1, 1, 1, 2], vec![1.0, 2.0]);
        let w = input(&[1, 1, 1, 2], vec![1.0, 10.0]);
        let sample = Sample {
            inputs: Vec::new(),
            params: Vec::new(),
        };
        let r = conv_transpose2d(&x, &w, &sample, None).unwrap();
        assert_eq!(r.values, vec![1.0, 12.0, 20.0]);
    }

    #[test]
    fn max_pool_takes_window_maxima() {
        let x = input(&[1, 1, 2, 3], vec![1.0, 5.0, 2.0, -1.0, 0.0, 7.0]);
        assert_eq!(
            max_pool2d(&x, 2, 1, NanPolicy::Propagate).unwrap().values,
            vec![5.0, 7.0]
        );
    }

    #[test]
    fn max_pool_nan_policies() {
        let x = input(&[1, 1, 1, 4], vec![f64::NAN, 3.0, f64::NAN, f64::NAN]);
        let propagate = max_pool2d(&x, 1, 1, NanPolicy::Propagate).unwrap().values;
        assert!(propagate[0].is_nan() && propagate[1] == 3.0);
        let x = input(&[1, 1, 2, 2], vec![f64::NAN, 3.0, -1.0, f64::NAN]);
        assert!(max_pool2d(&x, 2, 1, NanPolicy::Propagate).unwrap().values[0].is_nan());
        assert_eq!(
            max_pool2d(&x, 2, 1, NanPolicy::Ignore).unwrap().values,
            vec![3.0]
        );
        let all_nan = input(&[1, 1, 1, 1], vec![f64::NAN]);
        assert!(
            max_pool2d(&all_nan, 1, 1, NanPolicy::Ignore)
                .unwrap()
                .values[0]
                .is_nan()
        );
    }

    #[test]
    fn ordered_sums_round_in_the_dtype() {
        // 1 + 2^-24 + 2^-24 in f32, left to right: each small term is lost; exactly, it is not.
        let tiny = 2f64.powi(-24);
        let x = input(&[1, 3, 1, 1], vec![1.0, tiny, tiny]);
        let w = input(&[1, 3, 1, 1], vec![1.0, 1.0, 1.0]);
        let sample = Sample {
            inputs: Vec::new(),
            params: Vec::new(),
        };
        let inputs = [Some(x), Some(w)];
        let in_f32 = ordered("Conv2dSimple", DType::F32, &inputs, &sample).unwrap();
        assert_eq!(in_f32, vec![1.0]);
        let exact = reference("Conv2dSimple", &inputs, &sample).unwrap().values;
        assert_eq!(exact, vec![1.0 + 2.0 * tiny]);
        assert!(ordered("MaxPool2D", DType::F32, &inputs, &sample).is_none());
    }

    fn outcomes(terms: &[f64], dtype: DType) -> Outcomes {
        envelope(terms.iter().copied(), dtype)
            .outcomes(dtype, gamma(terms.len(), unit_roundoff(dtype)))
    }

    #[test]
    fn a_nan_term_or_opposite_infinities_make_nan_in_every_order() {
        let only_nan = Outcomes {
            nan: true,
            ..Outcomes::default()
        };
        assert_eq!(outcomes(&[1.0, f64::NAN, 2.0], DType::F64), only_nan);
        assert_eq!(
            outcomes(&[f64::INFINITY, 1.0, f64::NEG_INFINITY], DType::F64),
            only_nan
        );
        assert!(!only_nan.order_dependent());
    }

    #[test]
    fn partial_sums_that_may_overflow_allow_infinity_as_well_as_the_finite_sum() {
        // 0.75·max + 0.75·max − 0.75·max: left to right overflows to +Inf, in another order it
        // is 0.75·max.
        let big = 0.75 * f64::MAX;
        let got = outcomes(&[big, big, -big], DType::F64);
        assert!(got.finite && got.plus_infinity && !got.minus_infinity && !got.nan);
        assert!(got.order_dependent());
        // The case: positive terms that may overflow, and a −Inf term: −Inf in some
        // orders, NaN (+Inf − Inf) in others; never +Inf, never finite.
        let got = outcomes(&[big, big, f64::NEG_INFINITY], DType::F64);
        assert_eq!(
            got,
            Outcomes {
                nan: true,
                minus_infinity: true,
                ..Outcomes::default()
            }
        );
        assert!(got.admits_special(f64::NEG_INFINITY) && got.admits_special(f64::NAN));
        assert!(!got.admits_special(f64::INFINITY) && !got.admits_special(1.0));
    }

    #[test]
    fn small_terms_allow_only_the_finite_sum() {
        let got = outcomes(&[1.0, -2.0, 3.5], DType::F32);
        assert_eq!(
            got,
            Outcomes {
                finite: true,
                ..Outcomes::default()
            }
        );
        assert!(!got.admits_special(f64::INFINITY) && !got.admits_special(f64::NAN));
    }

    #[test]
    fn products_that_overflow_the_dtype_but_not_a_wider_accumulator_allow_both_results() {
        // In f32 each product overflows (+Inf and −Inf terms: NaN); summed exactly, as an f64
        // accumulator does, they cancel to a finite value, or leave +Inf when rounded to f32.
        let big = 0.75 * f64::from(f32::MAX);
        let square = big * big;
        let cancel = outcomes(&[square, -square, 1.0], DType::F32);
        assert!(cancel.nan && cancel.finite && !cancel.plus_infinity);
        let up = outcomes(&[square, square, -square], DType::F32);
        assert!(up.nan && up.plus_infinity && !up.minus_infinity);
    }

    #[test]
    fn gamma_grows_with_terms_stays_finite_and_is_never_looser_than_highams() {
        assert!(gamma(10, unit_roundoff(DType::F32)) > gamma(1, unit_roundoff(DType::F32)));
        // Never looser than Higham's K·u / (1 − K·u), and equal to first order.
        for dtype in [DType::F64, DType::F32, DType::BF16, DType::F16] {
            let u = unit_roundoff(dtype);
            for k in [1usize, 2, 10, 100, 200] {
                let ku = k as f64 * u;
                if ku < 1.0 {
                    let higham = ku / (1.0 - ku);
                    assert!(gamma(k, u) <= higham, "{dtype:?} K={k}");
                    assert!(gamma(k, u) >= ku, "{dtype:?} K={k}");
                }
            }
        }
        // Finite where Higham's form is not: 300 bf16 roundings (K·u > 1).
        let bf16 = gamma(300, unit_roundoff(DType::BF16));
        assert!(bf16.is_finite() && (2.2..2.3).contains(&bf16), "{bf16}");
        // (1 + u)^2 − 1 = 2u + u², computed without cancellation.
        let u = unit_roundoff(DType::F32);
        assert!((gamma(2, u) - (2.0 * u + u * u)).abs() <= 1e-30);
    }
}
