//! Which element a worked example traces, chosen on the semantics' trace alone: an output
//! element (gather form: the input elements it reads) or, where the semantics scatter into
//! their outputs, an element of the first input (the output elements it is added to). The
//! element is non-zero, made of several distinct contributions, and shows as much of the
//! geometry as the trace reveals: every input read (a bias), reads spaced apart (dilation),
//! fewer steps than the fullest element (an edge, padding).

use crate::fast_hash::FastSet;
use crate::semantics::Step;

/// A tensor of one run as the figure shows it: its logical values, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub name: String,
    pub dims: Vec<usize>,
    pub values: Vec<f64>,
}

impl Shown {
    /// Rows and columns of one plane (its last two axes; a vector is one row).
    pub fn plane_shape(&self) -> (usize, usize) {
        match self.dims.as_slice() {
            [] => (1, 1),
            [cols] => (1, *cols),
            [.., rows, cols] => (*rows, *cols),
        }
    }

    /// Which plane a flat index is in, and its row and column there.
    pub fn locate(&self, flat: usize) -> (usize, usize, usize) {
        let (rows, cols) = self.plane_shape();
        let size = (rows * cols).max(1);
        let within = flat % size;
        (flat / size, within / cols.max(1), within % cols.max(1))
    }

    /// The multi-index of a flat index, row-major.
    pub fn index(&self, flat: usize) -> Vec<usize> {
        let mut index = vec![0; self.dims.len()];
        let mut rest = flat;
        for (slot, dim) in index.iter_mut().zip(&self.dims).rev() {
            *slot = rest % (*dim).max(1);
            rest /= (*dim).max(1);
        }
        index
    }

    /// `name[i, j, …]` of a flat index.
    pub fn element(&self, flat: usize) -> String {
        if self.dims.is_empty() {
            return self.name.clone();
        }
        let parts: Vec<String> = self.index(flat).iter().map(usize::to_string).collect();
        format!("{}[{}]", self.name, parts.join(", "))
    }
}

/// The element a figure traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// An element of an output (by the program's tensor numbering): what it reads.
    Gather { tensor: usize, flat: usize },
    /// An element of an input: the output elements it is added to.
    Scatter { tensor: usize, flat: usize },
}

impl Focus {
    /// The traced element: (tensor, flat index).
    pub fn element(self) -> (usize, usize) {
        match self {
            Focus::Gather { tensor, flat } | Focus::Scatter { tensor, flat } => (tensor, flat),
        }
    }
}

/// One step of the traced computation.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The input elements it read: (tensor, flat index).
    pub reads: Vec<(usize, usize)>,
    /// What it added (in a selection, the running result).
    pub value: f64,
    /// For a scatter, the output element it was added to.
    pub lands: Option<(usize, usize)>,
}

/// The storage of an input passed as a strided view: its elements in memory order, and
/// where each logical element is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Storage {
    pub tensor: usize,
    pub values: Vec<f64>,
    /// The storage offset of each logical element, row-major.
    pub offsets: Vec<usize>,
    /// The view's strides.
    pub strides: Vec<isize>,
}

/// One traced run: the tensors by the program's numbering (inputs, then outputs; `None` for
/// an absent input or a local), the program's number of each output, each output's trace
/// (per element, row-major, its steps), and the storage of an input passed as a view.
#[derive(Debug, Clone)]
pub struct Traced {
    pub tensors: Vec<Option<Shown>>,
    pub outputs: Vec<usize>,
    pub traces: Vec<Vec<Vec<Step>>>,
    pub storage: Option<Storage>,
}

impl Traced {
    pub fn tensor(&self, tensor: usize) -> Option<&Shown> {
        self.tensors.get(tensor).and_then(Option::as_ref)
    }

    /// An element's value (NaN when out of range).
    pub fn value(&self, (tensor, flat): (usize, usize)) -> f64 {
        self.tensor(tensor)
            .and_then(|t| t.values.get(flat).copied())
            .unwrap_or(f64::NAN)
    }

    /// The steps of the traced element, in order: for a gather the element's own steps; for
    /// a scatter every step that read the element, by output element in row-major order.
    pub fn parts(&self, focus: Focus) -> Vec<Part> {
        let steps = match focus {
            Focus::Gather { tensor, flat } => self.own_steps(tensor, flat),
            Focus::Scatter { tensor, flat } => self.scattered(tensor).into_iter().nth(flat),
        };
        steps
            .unwrap_or_default()
            .into_iter()
            .map(|step| Part {
                reads: step.reads.to_vec(),
                value: step.value,
                lands: step.lands,
            })
            .collect()
    }

    /// The steps of element `flat` of output `tensor` (`None` for another tensor).
    fn own_steps(&self, tensor: usize, flat: usize) -> Option<Vec<StepRef<'_>>> {
        let output = self.outputs.iter().position(|t| *t == tensor)?;
        let steps = self.traces.get(output)?.get(flat)?;
        Some(steps.iter().map(StepRef::own).collect())
    }

    /// For each element of output `tensor`, its own steps (none for another tensor).
    fn gathered(&self, tensor: usize) -> Vec<Vec<StepRef<'_>>> {
        let output = self.outputs.iter().position(|t| *t == tensor);
        let elements = output.and_then(|o| self.traces.get(o));
        let elements = elements.into_iter().flatten();
        elements
            .map(|steps| steps.iter().map(StepRef::own).collect())
            .collect()
    }

    /// For each element of input `tensor`, the steps that read it (each with the output
    /// element it went into), in the outputs' row-major order.
    fn scattered(&self, tensor: usize) -> Vec<Vec<StepRef<'_>>> {
        let count = self.tensor(tensor).map_or(0, |t| t.values.len());
        let mut parts = vec![Vec::new(); count];
        for (output, elements) in self.outputs.iter().zip(&self.traces) {
            for (flat, steps) in elements.iter().enumerate() {
                for step in steps {
                    let reads = step.reads.iter().filter(|(t, _)| *t == tensor);
                    for &(_, read) in reads {
                        if let Some(list) = parts.get_mut(read) {
                            list.push(StepRef {
                                reads: step.reads.as_slice(),
                                value: step.value,
                                lands: Some((*output, flat)),
                            });
                        }
                    }
                }
            }
        }
        parts
    }

    /// The element to trace and how well it shows the computation: for a gather among the
    /// first output's elements, for a scatter among the first input's.
    pub fn choose(&self, scatter: bool) -> Option<(Focus, i64)> {
        let (tensor, candidates) = if scatter {
            let tensor = self.tensors.iter().position(Option::is_some)?;
            (tensor, self.scattered(tensor))
        } else {
            let tensor = *self.outputs.first()?;
            (tensor, self.gathered(tensor))
        };
        let fullest = candidates.iter().map(Vec::len).max()?;
        let mut best: Option<(Focus, i64)> = None;
        for (flat, parts) in candidates.iter().enumerate() {
            let focus = if scatter {
                Focus::Scatter { tensor, flat }
            } else {
                Focus::Gather { tensor, flat }
            };
            let Some(score) = self.features(focus, parts, fullest).score() else {
                continue;
            };
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((focus, score));
            }
        }
        best
    }

    /// Whether more than a quarter of the first output's elements have fewer than half the
    /// steps of the fullest (windows mostly outside their input: a padding that swamps it).
    pub fn hollow(&self) -> bool {
        let Some(elements) = self.traces.first() else {
            return false;
        };
        let fullest = elements.iter().map(Vec::len).max().unwrap_or(0);
        let thin = elements.iter().filter(|s| 2 * s.len() < fullest).count();
        4 * thin > elements.len()
    }

    fn features(&self, focus: Focus, parts: &[StepRef<'_>], fullest: usize) -> Features {
        let value = self.value(focus.element());
        if value == 0.0 || value.is_nan() || parts.is_empty() {
            return Features::NOTHING;
        }
        let reads: Vec<(usize, usize)> = parts.iter().flat_map(|p| p.reads).copied().collect();
        let lands: Vec<(usize, usize)> = parts.iter().filter_map(|p| p.lands).collect();
        let mut tensors: FastSet<usize> = reads.iter().map(|(t, _)| *t).collect();
        tensors.extend(lands.iter().map(|(t, _)| *t));
        let distinct: FastSet<Vec<u64>> = parts
            .iter()
            .filter(|p| p.value != 0.0)
            .map(|p| {
                let read = p.reads.iter().map(|r| self.value(*r).to_bits());
                std::iter::once(p.value.to_bits()).chain(read).collect()
            })
            .collect();
        let traced = focus.element();
        // The data the window moves over: what a gather reads first, where a scatter lands.
        let data = match focus {
            Focus::Gather { .. } => reads.iter().map(|(t, _)| *t).find(|t| *t != traced.0),
            Focus::Scatter { .. } => lands.first().map(|(t, _)| *t),
        };
        let cells = |tensor: usize| -> Vec<usize> {
            let all = reads.iter().chain(&lands).filter(|(t, _)| *t == tensor);
            let mut cells: Vec<usize> = all.map(|(_, f)| *f).collect();
            cells.sort_unstable();
            cells.dedup();
            cells
        };
        // Every other tensor read more than once (a filter) is mostly used.
        let others: Vec<usize> = tensors
            .iter()
            .copied()
            .filter(|t| Some(*t) != data && *t != traced.0)
            .filter(|t| reads.iter().filter(|(r, _)| r == t).count() >= 2)
            .collect();
        Features {
            nonzero: value != 0.0 && !value.is_nan(),
            unit: matches!(focus, Focus::Scatter { .. }) && value.abs() == 1.0,
            parts: parts.len(),
            distinct: distinct.len(),
            tensors: tensors.len(),
            cut: parts.len() < fullest && 2 * parts.len() >= fullest,
            gaps: data.is_some_and(|t| self.gaps(t, &cells(t))),
            window: data.is_some_and(|t| 2.0 * self.share(t, &cells(t)) <= 1.0),
            filters: !others.is_empty()
                && others
                    .iter()
                    .all(|t| 2.0 * self.share(*t, &cells(*t)) >= 1.0),
            relocated: self.relocated(&reads),
        }
    }

    /// The share of the cells of the planes they are in that `cells` of `tensor` are.
    fn share(&self, tensor: usize, cells: &[usize]) -> f64 {
        let Some(shown) = self.tensor(tensor) else {
            return 0.0;
        };
        let planes: FastSet<usize> = cells.iter().map(|f| shown.locate(*f).0).collect();
        let (rows, cols) = shown.plane_shape();
        cells.len() as f64 / (planes.len() * rows * cols).max(1) as f64
    }

    /// Whether a read sits in a view's storage away from its logical place.
    fn relocated(&self, reads: &[(usize, usize)]) -> bool {
        self.storage.as_ref().is_some_and(|storage| {
            reads.iter().any(|(t, flat)| {
                *t == storage.tensor && storage.offsets.get(*flat).is_some_and(|o| o != flat)
            })
        })
    }

    /// Whether two of `cells` (distinct, sorted) are in the same row of a plane and further
    /// apart than neighbours (a dilation, a stride).
    fn gaps(&self, tensor: usize, cells: &[usize]) -> bool {
        let Some(shown) = self.tensor(tensor) else {
            return false;
        };
        let located: Vec<(usize, usize, usize)> = cells.iter().map(|f| shown.locate(*f)).collect();
        located
            .windows(2)
            .any(|w| w[0].0 == w[1].0 && w[0].1 == w[1].1 && w[1].2 > w[0].2 + 1)
    }
}

/// What a traced element shows of the computation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Features {
    nonzero: bool,
    /// A scattered element of ±1: its contributions look like the filter's own values.
    unit: bool,
    parts: usize,
    /// Distinct non-zero steps (by value and what they read).
    distinct: usize,
    /// Tensors read (and written, for a scatter).
    tensors: usize,
    /// Fewer steps than the fullest element, but at least half as many (an edge).
    cut: bool,
    gaps: bool,
    /// The data read (or, for a scatter, written) covers at most half of its planes: a
    /// window that moves.
    window: bool,
    /// Every other tensor read more than once (a filter) is at least half used.
    filters: bool,
    /// A read is stored away from its logical place (in a view).
    relocated: bool,
}

impl Features {
    /// What an element not worth tracing shows (zero, NaN, or made of nothing).
    const NOTHING: Features = Features {
        nonzero: false,
        unit: false,
        parts: 0,
        distinct: 0,
        tensors: 0,
        cut: false,
        gaps: false,
        window: false,
        filters: false,
        relocated: false,
    };
}

/// A step of the trace as a candidate element sees it, borrowed from the trace.
#[derive(Debug, Clone, Copy)]
struct StepRef<'t> {
    reads: &'t [(usize, usize)],
    value: f64,
    lands: Option<(usize, usize)>,
}

impl<'t> StepRef<'t> {
    /// A step of an output element's own computation (it lands nowhere else).
    fn own(step: &'t Step) -> StepRef<'t> {
        StepRef {
            reads: step.reads.as_slice(),
            value: step.value,
            lands: None,
        }
    }
}

/// Steps a sum may have and still be written out in full.
pub const READABLE_PARTS: usize = 12;

impl Features {
    /// `None` for an element not worth tracing (zero, NaN, or made of nothing).
    fn score(self) -> Option<i64> {
        if !self.nonzero || self.parts == 0 {
            return None;
        }
        let flag = |b: bool, weight: i64| if b { weight } else { 0 };
        let long = self.parts.saturating_sub(READABLE_PARTS);
        Some(
            flag(self.parts >= 2, 6)
                + self.distinct.min(6) as i64
                + 3 * self.tensors as i64
                + flag(self.cut, 2)
                + flag(self.gaps, 2)
                + flag(self.window, 2)
                + flag(self.filters, 3)
                + flag(self.relocated, 2)
                - flag(self.unit, 2)
                - 2 * long as i64,
        )
    }
}

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A tensor as a figure shows it (a test's fixture).
    pub(crate) fn shown(name: &str, dims: &[usize], values: Vec<f64>) -> Option<Shown> {
        Some(Shown {
            name: name.to_owned(),
            dims: dims.to_vec(),
            values,
        })
    }

    /// One step of a trace (a test's fixture).
    pub(crate) fn step(reads: &[(usize, usize)], value: f64) -> Step {
        Step {
            reads: reads.to_vec(),
            value,
        }
    }

    /// A 1-D "convolution" of x [4] with w [2]: out[i] = x[i]·w[0] + x[i+1]·w[1] (+ b[0]).
    fn conv(bias: bool) -> Traced {
        let x = vec![1.0, 2.0, 0.0, 3.0];
        let w = vec![1.0, -1.0];
        let mut traces = Vec::new();
        let mut out = Vec::new();
        for i in 0..3 {
            let mut steps = vec![
                step(&[(0, i), (1, 0)], x[i] * w[0]),
                step(&[(0, i + 1), (1, 1)], x[i + 1] * w[1]),
            ];
            if bias {
                steps.push(step(&[(2, 0)], 5.0));
            }
            out.push(steps.iter().map(|s| s.value).sum());
            traces.push(steps);
        }
        Traced {
            tensors: vec![
                shown("x", &[4], x),
                shown("w", &[2], w),
                bias.then(|| Shown {
                    name: "b".to_owned(),
                    dims: vec![1],
                    values: vec![5.0],
                }),
                shown("out", &[3], out),
            ],
            outputs: vec![3],
            traces: vec![traces],
            storage: None,
        }
    }

    #[test]
    fn a_zero_element_is_never_traced() {
        // out = [1·1 + 2·(−1), 2·1 + 0·(−1), 0·1 + 3·(−1)] = [−1, 2, −3]: out[1] has a zero
        // contribution (one distinct value), out[0] and out[2] two.
        let traced = conv(false);
        let (focus, _) = traced.choose(false).unwrap();
        assert_eq!(focus, Focus::Gather { tensor: 3, flat: 0 });
        let mut zero = conv(false);
        zero.tensors[3].as_mut().unwrap().values = vec![0.0, 2.0, 0.0];
        assert_eq!(
            zero.choose(false).unwrap().0,
            Focus::Gather { tensor: 3, flat: 1 }
        );
    }

    #[test]
    fn an_element_reading_every_input_wins() {
        let traced = conv(true);
        let (focus, score) = traced.choose(false).unwrap();
        let parts = traced.parts(focus);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].reads, vec![(2, 0)]);
        let (_, without) = conv(false).choose(false).unwrap();
        assert!(score > without, "{score} vs {without}");
    }

    #[test]
    fn a_scatter_traces_an_input_element_to_every_output_it_reaches() {
        let traced = conv(false);
        // x[1] = 2 goes into out[0] (times w[1]) and out[1] (times w[0]).
        let parts = traced.parts(Focus::Scatter { tensor: 0, flat: 1 });
        let lands: Vec<_> = parts.iter().map(|p| p.lands.unwrap()).collect();
        assert_eq!(lands, vec![(3, 0), (3, 1)]);
        assert_eq!(
            parts.iter().map(|p| p.value).collect::<Vec<_>>(),
            [-2.0, 2.0]
        );
        // x[2] = 0 is never chosen; x[1] (two distinct contributions) beats x[0] (one).
        let (focus, _) = traced.choose(true).unwrap();
        assert_eq!(focus, Focus::Scatter { tensor: 0, flat: 1 });
    }

    #[test]
    fn gaps_and_shares_are_seen_in_the_reads() {
        let traced = Traced {
            tensors: vec![shown("x", &[2, 1, 5], vec![1.0; 10])],
            outputs: Vec::new(),
            traces: Vec::new(),
            storage: None,
        };
        assert!(traced.gaps(0, &[0, 2]));
        assert!(!traced.gaps(0, &[0, 1, 5]));
        assert_eq!(traced.share(0, &[0, 1, 5]), 0.3);
    }

    #[test]
    fn an_output_of_mostly_empty_windows_is_hollow() {
        let mut traced = conv(false);
        assert!(!traced.hollow());
        // out[1] loses both its steps: one element of three (more than a quarter) is thin.
        traced.traces[0][1].clear();
        assert!(traced.hollow());
        // One of five is not.
        let full = traced.traces[0][0].clone();
        traced.traces[0].extend([full.clone(), full]);
        assert!(!traced.hollow());
    }

    #[test]
    fn elements_are_named_by_their_index() {
        let t = shown("out", &[1, 2, 3, 3], vec![0.0; 18]).unwrap();
        assert_eq!(t.element(14), "out[0, 1, 1, 2]");
        assert_eq!(t.locate(14), (1, 1, 2));
        let scalar = shown("s", &[], vec![1.0]).unwrap();
        assert_eq!(scalar.element(0), "s");
        assert_eq!(scalar.plane_shape(), (1, 1));
    }
}
