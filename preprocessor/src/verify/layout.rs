//! Layout claims, tested with real views at the executor boundary: for each input, a
//! contiguous view over a longer storage, strided views (a transposed one among them), a view
//! with a start offset, a reversed view and a stride-0 broadcast view of the same logical values
//! are passed to the kernel. A layout the contract rejects must be refused; one it accepts must
//! give the contiguous result bit for bit. With `awkward_layout_strategy: requires_contiguous`,
//! the planner's `Contiguize` kernel turns each view into a contiguous tensor, and the kernel's
//! result must then be bitwise the contiguous one.

use super::run::arguments;
use super::sample::Sample;
use super::shrink::{Check, Keep, Replay, sample_note};
use crate::contract::raw::{LayoutRequirement, RawContract, RawInput};
use crate::providers::{CallOutcome, Kernel};
use fkc_provider::view::{
    broadcast_view_of, offset_view_of, pitch_view_along, prefix_view_of, reversed_view_along,
    row_pitch_view_of, strided_view_of, transposed_view_of,
};
use fkc_provider::{AnyTensor, DType, Operand, ParamValues};

use super::Gate;
use crate::diag::Code;

/// The help on a layout claim that does not hold.
const DECLARE_HELP: &str =
    "state the layouts the kernel really takes (`required`, `accepted` or `rejected`)";
/// The help when a contiguous view that is a prefix of its storage goes wrong.
const PREFIX_HELP: &str = "a contiguous view may be a prefix of a longer storage: read the \
    view's elements (`Operand::packed`), not the whole storage";

/// One layout flag of one input that does not hold.
#[derive(Debug, Clone)]
pub struct LayoutFailure {
    pub input: String,
    pub flag: &'static str,
    pub message: String,
}

/// What the layout check ran.
#[derive(Debug, Clone, Default)]
pub struct LayoutReport {
    /// (input, flag, how many views of it, what happened) for every flag tried.
    pub tried: Vec<(String, &'static str, usize, &'static str)>,
    pub failure: Option<LayoutFailure>,
}

const FLAGS: [&str; 5] = [
    "contiguous",
    "strided",
    "start_offset",
    "reverse_strides",
    "broadcast_stride0",
];

/// Runs every layout view of every present input on one admitted sample.
pub fn check(
    raw: &RawContract,
    kernel: &Kernel<'_>,
    (sample, bounds): (&Sample, &[super::constraints::ValueBound]),
    dtype: DType,
    seed: u64,
) -> LayoutReport {
    let mut report = LayoutReport::default();
    let fill = super::fill::Fill::Random(seed);
    let Ok((base, values)) = arguments(kernel, sample, dtype, fill, bounds) else {
        return report;
    };
    let contiguizes = raw
        .caps
        .as_ref()
        .and_then(|c| c.awkward_layout_strategy.as_ref())
        .is_some_and(|s| s.value == "requires_contiguous");
    for (slot, desc) in kernel.inputs.iter().enumerate() {
        let Some(input) = raw.inputs.iter().find(|i| i.name.value == desc.name) else {
            continue;
        };
        let Some(Some(operand)) = base.get(slot) else {
            continue;
        };
        for flag in FLAGS {
            let views = views_for(flag, operand);
            let mut done = None;
            for (variant, tensor, view) in &views {
                let claim = Claim {
                    flag,
                    input: &desc.name,
                    requirement: requirement(input, flag),
                    contiguizes,
                };
                let outcome = one_view(
                    &claim,
                    kernel,
                    (&base, &values, slot),
                    (tensor, view, dtype),
                )
                .map_err(|message| format!("{message} ({variant})"));
                match outcome {
                    Ok(Some(outcome)) => done = Some(outcome),
                    Ok(None) => {}
                    Err(message) => {
                        report.failure = Some(LayoutFailure {
                            input: desc.name.to_owned(),
                            flag,
                            message,
                        });
                        return report;
                    }
                }
            }
            if let Some(done) = done {
                report
                    .tried
                    .push((desc.name.to_owned(), flag, views.len(), done));
            }
        }
    }
    report
}

/// The layout claim one view puts to the test.
struct Claim<'c> {
    flag: &'static str,
    input: &'c str,
    requirement: Option<LayoutRequirement>,
    /// The planner turns a refused view into a contiguous tensor first.
    contiguizes: bool,
}

/// One view of one input: the kernel's result on it against the contiguous tensor's, and,
/// where the planner contiguizes, the result after its `Contiguize`. `None` when the kernel
/// does not run the contiguous operands either (nothing to compare with).
fn one_view(
    claim: &Claim<'_>,
    kernel: &Kernel<'_>,
    (base, values, slot): (&[Option<Operand>], &ParamValues, usize),
    (tensor, view, dtype): (&AnyTensor, &Operand, DType),
) -> Result<Option<&'static str>, String> {
    let (flag, input, symbol) = (claim.flag, claim.input, &kernel.symbol);
    let mut contiguous = base.to_vec();
    let mut viewed = base.to_vec();
    if let (Some(c), Some(v)) = (contiguous.get_mut(slot), viewed.get_mut(slot)) {
        *c = Some(Operand::contiguous(tensor.clone()));
        *v = Some(view.clone());
    }
    let CallOutcome::Outputs(expected) = kernel.run(&contiguous, values) else {
        return Ok(None);
    };
    let got = match kernel.run(&viewed, values) {
        CallOutcome::Outputs(out) => Ok(out),
        CallOutcome::Rejected(error) => Err(error),
        CallOutcome::Crashed(crash) => Err(crash.to_string()),
    };
    let done = match (claim.requirement, got) {
        (Some(LayoutRequirement::Rejected), Ok(_)) => Err(format!(
            "`{symbol}` accepts a {flag} view of `{input}`, but the contract says `{flag}: rejected`"
        )),
        (Some(LayoutRequirement::Accepted | LayoutRequirement::Required), Err(error)) => {
            Err(format!(
                "`{symbol}` refuses a {flag} view of `{input}` ({error}), but the contract accepts it"
            ))
        }
        (Some(LayoutRequirement::Accepted | LayoutRequirement::Required), Ok(out))
            if !same_bits(&out, &expected) =>
        {
            Err(format!(
                "`{symbol}` gives a different result on a {flag} view of `{input}` than on the contiguous tensor"
            ))
        }
        (None, _) => Ok("not declared"),
        (Some(LayoutRequirement::Rejected), Err(_)) => Ok("refused"),
        _ => Ok("accepted, bitwise the contiguous result"),
    }?;
    if !claim.contiguizes {
        return Ok(Some(done));
    }
    let planned = contiguize(kernel, view, dtype)
        .map_err(|e| format!("Contiguize failed on a {flag} view of `{input}`: {e}"))?;
    let mut operands = base.to_vec();
    if let Some(o) = operands.get_mut(slot) {
        *o = Some(Operand::contiguous(planned));
    }
    match kernel.run(&operands, values) {
        CallOutcome::Outputs(out) if same_bits(&out, &expected) => Ok(Some(if done == "refused" {
            "refused; contiguized, bitwise the contiguous result"
        } else {
            done
        })),
        _ => Err(format!(
            "after Contiguize, a {flag} view of `{input}` does not give the contiguous result"
        )),
    }
}

/// Why the planner's contiguize step failed.
#[derive(Debug)]
enum ContiguizeError {
    /// The view could not be packed here.
    Pack(fkc_provider::TensorError),
    /// The provider's Contiguize returned this many outputs, not one.
    Outputs(usize),
    Rejected(String),
    Crashed(crate::providers::Crash),
}

impl std::fmt::Display for ContiguizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContiguizeError::Pack(error) => write!(f, "{error}"),
            ContiguizeError::Outputs(count) => write!(f, "it returned {count} outputs"),
            ContiguizeError::Rejected(error) => write!(f, "{error}"),
            ContiguizeError::Crashed(crash) => write!(f, "{crash}"),
        }
    }
}

/// The planner's contiguize step: the provider's own `Contiguize` kernel for the dtype when it
/// has one, otherwise a packed copy made here.
fn contiguize(
    kernel: &Kernel<'_>,
    view: &Operand,
    dtype: DType,
) -> Result<AnyTensor, ContiguizeError> {
    let own = kernel
        .provider
        .description()
        .entry_points
        .iter()
        .find(|e| e.op_kind.as_deref() == Some("Contiguize") && e.dtype == dtype);
    let Some(own) = own else {
        return view.packed().map_err(ContiguizeError::Pack);
    };
    let contiguize = Kernel {
        info: own,
        provider: kernel.provider,
    };
    match contiguize.run(&[Some(view.clone())], &ParamValues::new()) {
        CallOutcome::Outputs(mut out) if out.len() == 1 => Ok(out.remove(0)),
        CallOutcome::Outputs(out) => Err(ContiguizeError::Outputs(out.len())),
        CallOutcome::Rejected(error) => Err(ContiguizeError::Rejected(error)),
        CallOutcome::Crashed(crash) => Err(ContiguizeError::Crashed(crash)),
    }
}

/// What `input` declares for `flag`; a contiguous view (packed from offset 0, whatever lies
/// after it in the storage) is accepted unless the contract says otherwise.
fn requirement(input: &RawInput, flag: &str) -> Option<LayoutRequirement> {
    let declared = input.layout.as_ref().and_then(|layout| {
        layout
            .flags()
            .into_iter()
            .find(|(name, _)| *name == flag)
            .and_then(|(_, r)| r.map(|r| r.value))
    });
    match flag {
        "contiguous" => declared.or(Some(LayoutRequirement::Accepted)),
        _ => declared,
    }
}

/// The views with `flag` of `operand`'s values, each named, with the contiguous tensor of the
/// same logical values: a packed prefix of a longer storage (contiguous, yet not the whole
/// storage); strides doubled, rows a pitch apart (a slice of a wider tensor) and the axes
/// stored in reverse order (a transposed tensor: dense, but not row-major);
/// an offset start; the first and the last axis of size > 1 reversed; and, for broadcast, the
/// operand made constant along its first and along its last axis of size > 1, read through
/// stride 0. A kernel that handles only the outermost broadcast or reversal, or a unit
/// innermost stride only when the rows are packed, is told apart.
fn views_for(flag: &str, operand: &Operand) -> Vec<(String, AnyTensor, Operand)> {
    let tensor = operand.storage().as_ref().clone();
    let shape = tensor.shape().to_vec();
    let long_axes: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] > 1).collect();
    let ends: Vec<usize> = match (long_axes.first(), long_axes.last()) {
        (Some(&first), Some(&last)) if first != last => vec![last, first],
        (Some(&only), _) => vec![only],
        _ => Vec::new(),
    };
    let named =
        |name: String, view: Option<Operand>, t: &AnyTensor| view.map(|v| (name, t.clone(), v));
    match flag {
        "contiguous" => named(
            "a prefix of a longer storage".to_owned(),
            prefix_view_of(&tensor),
            &tensor,
        )
        .into_iter()
        .collect(),
        "strided" => [
            named(
                "strides doubled".to_owned(),
                strided_view_of(&tensor),
                &tensor,
            ),
            named(
                "rows a pitch apart".to_owned(),
                row_pitch_view_of(&tensor),
                &tensor,
            ),
            named(
                "axes stored in reverse order (transposed, dense from offset 0)".to_owned(),
                transposed_view_of(&tensor),
                &tensor,
            ),
        ]
        .into_iter()
        .chain((1..shape.len().saturating_sub(1)).map(|axis| {
            named(
                format!("axis {axis} padded by one slice, the axes before it a pitch apart"),
                pitch_view_along(&tensor, axis),
                &tensor,
            )
        }))
        .flatten()
        .collect(),
        "start_offset" => vec![(
            "an offset start".to_owned(),
            tensor.clone(),
            offset_view_of(&tensor),
        )],
        "reverse_strides" => ends
            .iter()
            .filter_map(|&axis| {
                named(
                    format!("reversed along axis {axis}"),
                    reversed_view_along(&tensor, axis),
                    &tensor,
                )
            })
            .collect(),
        _ => ends
            .iter()
            .filter_map(|&axis| {
                let constant = constant_along(&tensor, axis)?;
                let view = broadcast_view_of(&constant)?;
                Some((format!("stride 0 along axis {axis}"), constant, view))
            })
            .collect(),
    }
}

/// `t` with every slice along `axis` replaced by the first one (bitwise constant along it).
fn constant_along(t: &AnyTensor, axis: usize) -> Option<AnyTensor> {
    let shape = t.shape().to_vec();
    let inner: usize = shape.get(axis + 1..)?.iter().product();
    let outer: usize = shape.get(..axis)?.iter().product();
    let size = *shape.get(axis)?;
    let values = t.to_f64_vec();
    let mut out = values.clone();
    for o in 0..outer {
        for a in 0..size {
            for i in 0..inner {
                let from = (o * size) * inner + i;
                let to = (o * size + a) * inner + i;
                if let (Some(v), Some(slot)) = (values.get(from), out.get_mut(to)) {
                    *slot = *v;
                }
            }
        }
    }
    AnyTensor::from_f64(t.dtype(), &shape, &out).ok()
}

fn same_bits(a: &[AnyTensor], b: &[AnyTensor]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

impl Gate<'_> {
    /// Layout claims hold on real strided, offset, reversed and broadcast views.
    pub(super) fn layouts(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        admitted: &[(Sample, Vec<Vec<i64>>)],
    ) {
        let mut tried: Vec<(String, &'static str, usize, &'static str)> = Vec::new();
        let seed = self.seed;
        let samples = layout_samples(admitted);
        for sample in &samples {
            let before = self.diagnostics.len();
            let Some(report) = self.layout_one(kernel, dtype, sample, seed) else {
                let replay = Replay {
                    kernel,
                    dtype,
                    seed,
                    check: Check::Layout,
                    keep: Keep::Admitted,
                };
                self.shrink_report(before, &replay, sample);
                return;
            };
            for (input, flag, views, outcome) in report.tried {
                let same = |t: &&mut (String, &str, usize, &str)| {
                    t.0 == input && t.1 == flag && t.3 == outcome
                };
                match tried.iter_mut().find(same) {
                    Some(entry) => entry.2 += views,
                    None => tried.push((input, flag, views, outcome)),
                }
            }
        }
        if tried.is_empty() {
            self.not_checked(
                "layout claims",
                "no input of the sample has enough elements for a strided, offset, reversed or broadcast view",
            );
            return;
        }
        let summary =
            super::grouped_by_outcome(tried.iter().map(|(input, flag, views, outcome)| {
                let what = match views {
                    1 => format!("{flag} `{input}`"),
                    n => format!("{flag} `{input}` ({n} views)"),
                };
                (*outcome, what)
            }));
        let on = match samples.len() {
            1 => String::new(),
            n => format!(", on {n} samples (the first and the one of the most axes longer than 1)"),
        };
        self.evidence.rows.push((
            "layout claims".to_owned(),
            format!("real views through `{}`{on} — {summary}", kernel.symbol),
        ));
    }

    /// Runs every layout view on one admitted sample; `None` after reporting a claim that
    /// does not hold.
    pub(super) fn layout_one(
        &mut self,
        kernel: &Kernel<'_>,
        dtype: DType,
        sample: &Sample,
        seed: u64,
    ) -> Option<LayoutReport> {
        let bounds = self.domain.value_bounds(sample, dtype);
        let report = check(self.raw, kernel, (sample, &bounds), dtype, seed);
        let Some(failure) = report.failure else {
            return Some(report);
        };
        let input = self
            .raw
            .inputs
            .iter()
            .find(|i| i.name.value == failure.input);
        let span = input
            .and_then(|i| i.layout.as_ref())
            .and_then(|l| {
                l.flags()
                    .into_iter()
                    .find(|(f, _)| *f == failure.flag)
                    .and_then(|(_, r)| r.map(|r| r.span.clone()))
            })
            .or_else(|| input.map(|i| i.span.clone()))
            .unwrap_or_else(|| self.raw.kernel.span.clone());
        let diagnostic = self.error(Code::LayoutClaim, span, failure.message);
        diagnostic.notes.push(sample_note(dtype.name(), sample));
        let help = match failure.flag {
            "contiguous" => PREFIX_HELP,
            _ => DECLARE_HELP,
        };
        diagnostic.help.push(help.to_owned());
        None
    }
}

/// The samples layout views are tried on: the first admitted one, and the one whose present
/// inputs have the most axes longer than 1 (the fewest elements among those): a view's middle
/// axes, and a broadcast along an inner axis, show only where several axes are long.
fn layout_samples(admitted: &[(Sample, Vec<Vec<i64>>)]) -> Vec<&Sample> {
    let long_axes = |s: &Sample| {
        let present = s.inputs.iter().filter(|(_, _, present)| *present);
        present
            .flat_map(|(_, dims, _)| dims)
            .filter(|d| **d > 1)
            .count()
    };
    let first = admitted.first().map(|(s, _)| s);
    let busiest = (admitted.iter().map(|(s, _)| s))
        .max_by_key(|s| (long_axes(s), std::cmp::Reverse(s.elements())))
        .filter(|b| first.is_some_and(|f| long_axes(b) > long_axes(f)));
    first.into_iter().chain(busiest).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn operand(shape: &[usize]) -> Operand {
        let count = shape.iter().product::<usize>();
        let values: Vec<f64> = (0..count).map(|i| i as f64 + 0.5).collect();
        Operand::contiguous(AnyTensor::from_f64(DType::F32, shape, &values).unwrap())
    }

    #[test]
    fn reversal_and_broadcast_each_take_the_first_and_the_last_long_axis() {
        let x = operand(&[2, 1, 3]);
        for flag in ["reverse_strides", "broadcast_stride0"] {
            let views = views_for(flag, &x);
            let names: Vec<&str> = views.iter().map(|(n, _, _)| n.as_str()).collect();
            assert_eq!(names.len(), 2, "{names:?}");
            assert!(names[0].ends_with("axis 2") && names[1].ends_with("axis 0"));
            for (name, tensor, view) in &views {
                assert_eq!(&view.packed().unwrap(), tensor, "{name}");
                let axis = if name.ends_with('2') { 2 } else { 0 };
                let stride = view.strides()[axis];
                assert!(if flag == "reverse_strides" {
                    stride < 0
                } else {
                    stride == 0
                });
            }
        }
    }

    #[test]
    fn strided_views_double_the_strides_and_pitch_the_rows() {
        let views = views_for("strided", &operand(&[2, 3]));
        let strides: Vec<&[isize]> = views.iter().map(|(_, _, v)| v.strides()).collect();
        assert_eq!(strides, [&[6, 2][..], &[4, 1][..], &[1, 2][..]]);
        for (name, tensor, view) in &views {
            assert_eq!(&view.packed().unwrap(), tensor, "{name}");
        }
        // one long axis: no pitch to see, one reversal, one broadcast
        let row = operand(&[1, 4]);
        assert_eq!(views_for("strided", &row).len(), 1);
        assert_eq!(views_for("reverse_strides", &row).len(), 1);
        assert_eq!(views_for("broadcast_stride0", &row).len(), 1);
    }

    #[test]
    fn views_also_run_on_the_sample_of_the_most_long_axes_the_smallest_of_them() {
        let sample = |dims: &[i64]| {
            let inputs = vec![("x".to_owned(), dims.to_vec(), true)];
            (
                Sample {
                    inputs,
                    params: Vec::new(),
                },
                Vec::new(),
            )
        };
        let admitted = [
            sample(&[1, 1, 4, 4]),
            sample(&[2, 3, 4, 5]),
            sample(&[2, 3, 4, 4]),
            sample(&[1, 6, 6, 6]),
        ];
        let chosen: Vec<&Sample> = layout_samples(&admitted);
        assert_eq!(chosen, [&admitted[0].0, &admitted[2].0]);
        // the first has as many long axes as any: it alone
        assert_eq!(layout_samples(&admitted[1..]), [&admitted[1].0]);
    }
}
