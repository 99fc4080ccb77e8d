//! Independent definitional oracles, one per op kind (`Conv2D`, `Conv2dSimple`,
//! `ConvTranspose2D`, `MaxPool2D`, `Contiguize`, `Relu`), written here from the textbook
//! definitions (gather form, in f64) and not from any backend's code. A contract reaches one
//! through its `op_kind`, whatever its kernel is called and whoever provides it. Each
//! gives the exact value of every output element and the magnitude `Σ|w·x|` of its terms, so a
//! result in dtype `T` can be held to Higham's bound for recursive summation,
//! `|out − exact| ≤ γ_K · Σ|w·x|` with `γ_K = (1 + u)^K − 1`, the exact worst case of K
//! roundings that Higham's `K·u / (1 − K·u)` (TOSA's verifier) approximates from above.

use super::sample::Sample;
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
}

/// An operand as the oracle sees it: dims and values in f64 (already rounded to the dtype).
#[derive(Debug, Clone)]
pub struct Input {
    pub dims: Vec<usize>,
    pub values: Vec<f64>,
}

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

/// The unit roundoff of a dtype.
pub fn unit_roundoff(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::EPSILON / 2.0,
        DType::F32 => f64::from(f32::EPSILON) / 2.0,
        DType::BF16 => 2f64.powi(-8),
        DType::F16 => 2f64.powi(-11),
    }
}

/// The smallest positive subnormal of a dtype (absolute slack for underflow in products).
pub fn smallest_subnormal(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => 5e-324,
        DType::F32 => 2f64.powi(-149),
        DType::BF16 => 2f64.powi(-133),
        DType::F16 => 2f64.powi(-24),
    }
}

/// `γ_K = (1 + u)^K − 1`: the largest relative growth of a term through K roundings of
/// relative error at most `u` (the standard model's product `Π(1 + δ_i)`, each `|δ_i| ≤ u`).
/// It is what Higham's `K·u / (1 − K·u)` bounds from above when `K·u < 1`, so it is never
/// looser, and it stays finite for every K (bf16 sums of hundreds of terms included).
pub fn gamma(terms: usize, u: f64) -> f64 {
    (terms as f64 * u.ln_1p()).exp_m1()
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

/// The op kinds these oracles define.
pub const OP_KINDS: &[&str] = &[
    "Conv2D",
    "Conv2dSimple",
    "ConvTranspose2D",
    "MaxPool2D",
    "Contiguize",
    "Relu",
];

/// Whether an oracle defines an op kind.
pub fn has_reference(op_kind: &str) -> bool {
    OP_KINDS.contains(&op_kind)
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
    conv2d(x, w, bias, g, Arith::In(dtype)).map(|r| r.values)
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

/// What a max does with a NaN operand (`precision.nan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NanPolicy {
    /// Any NaN operand makes the result NaN (IEEE arithmetic; the default).
    #[default]
    Propagate,
    /// A NaN operand is dropped (as Rust's `f32::max` does): the result is NaN only when every
    /// operand is.
    Ignore,
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
    let first = inputs.first()?.as_ref()?;
    match op_kind {
        "Conv2D" | "Conv2dSimple" => {
            let (x, w, bias, g) = conv_operands(op_kind, inputs, sample)?;
            conv2d(x, w, bias, g, Arith::Exact)
        }
        "ConvTranspose2D" => conv_transpose2d(first, inputs.get(1)?.as_ref()?, sample),
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
        }),
        // A copy: the logical values themselves, exactly.
        "Contiguize" => Some(Reference {
            values: first.values.clone(),
            magnitude: vec![0.0; first.values.len()],
            terms: 0,
            work: None,
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
) -> Option<Reference> {
    // One monomorphised loop nest per arithmetic: the multiply-add is the oracle's hot path.
    match arith {
        Arith::Exact | Arith::In(DType::F64) => {
            conv2d_in(x, w, bias, g, |a, b| a * b, |a, b| a + b)
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
fn conv_transpose2d(x: &Input, w: &Input, sample: &Sample) -> Option<Reference> {
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
        let r = conv2d(&x, &w, None, g, Arith::Exact).unwrap();
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
        let r = conv_transpose2d(&x, &w, &sample).unwrap();
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
