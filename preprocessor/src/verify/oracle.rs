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
pub use crate::semantics::float::{NanPolicy, gamma, smallest_subnormal, unit_roundoff};
use fkc_provider::DType;

mod envelope;

use envelope::envelope;
pub use envelope::{Envelope, Outcomes};

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
        Arith::In(other) => conv2d_rounded(x, w, bias, g, move |v| {
            crate::semantics::rounded::round(f64::from(v), other)
        }),
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
mod tests;
