//! The planner's priced plan on a worked example (seed §4.3): where a contract says
//! `awkward_layout_strategy: requires_contiguous`, a strided producer of its first input makes
//! the planner insert `Op::Contiguize` in front of the kernel, priced from the book's own
//! Contiguize contract (whatever chapter holds it) on the example's input shape and dtype, and
//! summed with the kernel's own cost on the example. Both are evaluated as the example's cost
//! is ([`cost_values`]). Without a Contiguize contract for that dtype, or one that does not
//! admit that input, the plan says so: no number is invented.

use super::svg::{PlanStep, PlanView};
use super::view::ContractView;
use crate::contract::raw::RawContract;
use crate::contract::resolved::Contract;
use crate::read::FenceRead;
use crate::verify::constraints::{Domain, Verdict};
use crate::verify::sample::Sample;
use crate::verify::worked::{CostValue, Worked, cost_values};
use fkc_provider::DType;

/// The op kind of the kernel the planner inserts.
pub const CONTIGUIZE: &str = "Contiguize";

/// The formulas a plan sums, as (column, formula name).
const COLUMNS: [(&str, &str); 3] = [
    ("flops", "flops"),
    ("bytes_moved", "bytes_moved"),
    ("host_bytes", "memory.host_bytes"),
];

/// One contract of the book, read (parsed and its expressions resolved) but not run: the gate
/// checks it in its own chapter.
#[derive(Debug)]
pub struct BookContract {
    pub op_kind: String,
    pub raw: RawContract,
    pub contract: Contract,
    /// Its section from the book's root (`contracts/contiguize.html#fkc-contiguize`).
    pub link: String,
}

/// The contracts of a whole book, gathered in a first pass over every chapter so that a page
/// can price a step with a contract from another chapter.
#[derive(Debug, Default)]
pub struct BookContracts {
    contracts: Vec<BookContract>,
}

impl BookContracts {
    /// Adds the contracts of one chapter: `path` is the author's file, `page` the chapter's
    /// page from the book's root. Contracts that do not read cleanly, examples that must fail
    /// and spec-first (`unverified`) contracts are left out.
    pub fn add_chapter(&mut self, path: &str, page: &str, content: &str) {
        let Some(read) = crate::read::chapter(path, content) else {
            return;
        };
        for (raw, contract) in read.fences.iter().filter_map(FenceRead::clean) {
            self.add(page, raw, contract);
        }
    }

    /// Adds one contract, read and resolved cleanly, of the chapter whose page (from the
    /// book's root) is `page`; a contract without an op kind prices nothing and is left out.
    pub fn add(&mut self, page: &str, raw: &RawContract, contract: &Contract) {
        let Some(op_kind) = raw.op_kind.as_ref().map(|k| k.value.clone()) else {
            return;
        };
        self.contracts.push(BookContract {
            op_kind,
            raw: raw.clone(),
            contract: contract.clone(),
            link: format!("{page}#{}", super::view::anchor(&raw.kernel.value)),
        });
    }

    /// The first contract (in book order) of `op_kind` whose first input declares `dtype`.
    pub fn find(&self, op_kind: &str, dtype: DType) -> Option<&BookContract> {
        self.contracts.iter().find(|c| {
            c.op_kind == op_kind
                && c.raw
                    .inputs
                    .first()
                    .is_some_and(|input| input.dtypes.iter().any(|d| d.value == dtype))
        })
    }
}

/// Shows the priced plan under a worked example's cost (nothing without a worked example, or
/// without the book's contracts).
pub fn attach(
    view: &mut ContractView,
    raw: &RawContract,
    worked: Option<&Worked>,
    book: Option<&BookContracts>,
    prefix: &str,
) {
    if let (Some(figure), Some(worked), Some(book)) = (view.worked.as_mut(), worked, book) {
        figure.plan = plan(raw, worked, book, prefix);
    }
}

/// The plan for a contract's worked example, when the contract requires contiguous operands
/// (`None` otherwise, or when the example has no input). Links are prefixed with `prefix`, the
/// way up from the page to the book's root.
pub fn plan(
    raw: &RawContract,
    worked: &Worked,
    book: &BookContracts,
    prefix: &str,
) -> Option<PlanView> {
    let strategy = raw.caps.as_ref()?.awkward_layout_strategy.as_ref()?;
    if strategy.value != "requires_contiguous" {
        return None;
    }
    let (input, dims) = worked.shapes.first()?;
    let dtype = DType::ALL.into_iter().find(|d| d.name() == worked.dtype)?;
    let mut view = PlanView {
        input: input.clone(),
        shape: format!("{dims:?}"),
        dtype: worked.dtype.clone(),
        steps: Vec::new(),
        unpriced: None,
    };
    match contiguize_cost(book, dims, dtype) {
        Ok((contiguize, cost)) => {
            let first = step(
                format!(
                    "{CONTIGUIZE}(`{input}`) — `{}`",
                    contiguize.raw.kernel.value
                ),
                Some(format!("{prefix}{}", contiguize.link)),
                &cost,
            );
            let kernel = step(format!("`{}`", raw.kernel.value), None, &worked.cost);
            let total = PlanStep {
                step: "total".to_owned(),
                link: None,
                flops: sum(first.flops, kernel.flops),
                bytes_moved: sum(first.bytes_moved, kernel.bytes_moved),
                host_bytes: sum(first.host_bytes, kernel.host_bytes),
            };
            view.steps = vec![first, kernel, total];
        }
        Err(reason) => view.unpriced = Some(format!("not priced: {reason}")),
    }
    Some(view)
}

/// Why the planner's Contiguize step cannot be priced.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unpriced {
    /// The book has no Contiguize contract for the dtype.
    NoContract(DType),
    /// The Contiguize contract (its kernel named) does not admit the input.
    NotAdmitted {
        kernel: String,
        dims: Vec<i64>,
        dtype: DType,
    },
}

impl std::fmt::Display for Unpriced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unpriced::NoContract(dtype) => write!(
                f,
                "this book has no {CONTIGUIZE} contract for {}",
                dtype.name()
            ),
            Unpriced::NotAdmitted {
                kernel,
                dims,
                dtype,
            } => write!(
                f,
                "`{kernel}`'s contract does not admit an input of shape {dims:?} in {}",
                dtype.name()
            ),
        }
    }
}

/// Contiguize's cost on an input of `dims` in `dtype`, from the book's Contiguize contract; or
/// why it cannot be priced.
fn contiguize_cost<'b>(
    book: &'b BookContracts,
    dims: &[i64],
    dtype: DType,
) -> Result<(&'b BookContract, Vec<CostValue>), Unpriced> {
    let found = book
        .find(CONTIGUIZE, dtype)
        .ok_or(Unpriced::NoContract(dtype))?;
    let domain = Domain::new(&found.raw, &found.contract, &[]);
    let sample = Sample {
        inputs: found
            .raw
            .inputs
            .iter()
            .enumerate()
            .map(|(i, input)| (input.name.value.clone(), dims.to_vec(), i == 0))
            .collect(),
        params: Vec::new(),
    };
    if !matches!(domain.verdict(&sample, dtype), Verdict::Admitted { .. }) {
        return Err(Unpriced::NotAdmitted {
            kernel: found.raw.kernel.value.clone(),
            dims: dims.to_vec(),
            dtype,
        });
    }
    Ok((found, cost_values(&domain, &sample, dtype)))
}

/// A step priced by `cost` (a contract's formulas evaluated on the example).
fn step(step: String, link: Option<String>, cost: &[CostValue]) -> PlanStep {
    let [flops, bytes_moved, host_bytes] = COLUMNS.map(|(_, formula)| {
        cost.iter()
            .find(|c| c.name == formula)
            .and_then(|c| c.value)
    });
    PlanStep {
        step,
        link,
        flops,
        bytes_moved,
        host_bytes,
    }
}

fn sum(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    a?.checked_add(b?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const CONTIGUIZE_CHAPTER: &str = include_str!("../../../book/contracts/contiguize.md");

    fn kernel(strategy: &str) -> RawContract {
        let yaml = format!(
            "kernel: k\nop_kind: Relu\naccept:\n  inputs:\n    - {{ name: x, dtypes: [F32], rank: 4 }}\ncaps:\n  awkward_layout_strategy: {strategy}\n"
        );
        let chapter = format!("```fkc\n{yaml}```\n");
        read("k.md", &chapter).fences.remove(0).raw.unwrap()
    }

    fn worked(dtype: &str, cost: &[(&str, Option<i64>)]) -> Worked {
        Worked {
            symbol: "k_f32".to_owned(),
            dtype: dtype.to_owned(),
            sample: String::new(),
            shapes: vec![("x".to_owned(), vec![1, 2, 5, 5])],
            grids: Vec::new(),
            operands: "small integers".to_owned(),
            agrees: true,
            legend: Vec::new(),
            trace: None,
            cost: cost
                .iter()
                .map(|(name, value)| CostValue {
                    name: (*name).to_owned(),
                    formula: String::new(),
                    value: *value,
                })
                .collect(),
            layout: None,
            drift: Vec::new(),
        }
    }

    fn read(path: &str, content: &str) -> crate::read::ChapterRead {
        crate::read::chapter(path, content).unwrap()
    }

    fn book() -> BookContracts {
        let mut book = BookContracts::default();
        book.add_chapter(
            "book/contracts/contiguize.md",
            "contracts/contiguize.html",
            CONTIGUIZE_CHAPTER,
        );
        book
    }

    #[test]
    fn contiguize_is_priced_from_its_own_contract_and_summed_with_the_kernel() {
        let cost = [
            ("flops", Some(144)),
            ("bytes_moved", Some(304)),
            ("memory.host_bytes", Some(32)),
        ];
        let plan = super::plan(
            &kernel("requires_contiguous"),
            &worked("F32", &cost),
            &book(),
            "../",
        )
        .unwrap();
        assert_eq!(plan.unpriced, None);
        // x: [1, 2, 5, 5] in F32 is 50 elements of 4 bytes: read once, written once.
        let rows: Vec<_> = plan
            .steps
            .iter()
            .map(|s| (s.flops, s.bytes_moved, s.host_bytes))
            .collect();
        assert_eq!(
            rows,
            [
                (Some(0), Some(400), Some(200)),
                (Some(144), Some(304), Some(32)),
                (Some(144), Some(704), Some(232)),
            ]
        );
        assert_eq!(
            plan.steps[0].link.as_deref(),
            Some("../contracts/contiguize.html#fkc-contiguize")
        );
        assert_eq!(plan.steps[0].step, "Contiguize(`x`) — `contiguize`");
    }

    #[test]
    fn without_a_contiguize_contract_for_the_dtype_nothing_is_invented() {
        let empty = BookContracts::default();
        let plan = super::plan(
            &kernel("requires_contiguous"),
            &worked("F32", &[]),
            &empty,
            "",
        )
        .unwrap();
        assert!(plan.steps.is_empty());
        assert_eq!(
            plan.unpriced.as_deref(),
            Some("not priced: this book has no Contiguize contract for F32")
        );
        // A contract declaring other dtypes does not price this one.
        let f32_only = CONTIGUIZE_CHAPTER.replace("[F32, F64, BF16, F16]", "[F64]");
        let mut book = BookContracts::default();
        book.add_chapter("c.md", "c.html", &f32_only);
        let plan = super::plan(
            &kernel("requires_contiguous"),
            &worked("F32", &[]),
            &book,
            "",
        );
        assert!(
            plan.unwrap()
                .unpriced
                .unwrap()
                .contains("no Contiguize contract for F32")
        );
    }

    #[test]
    fn an_unknown_kernel_cost_leaves_the_total_undefined() {
        let plan = super::plan(
            &kernel("requires_contiguous"),
            &worked("F32", &[("flops", Some(10))]),
            &book(),
            "",
        )
        .unwrap();
        let total = plan.steps.last().unwrap();
        assert_eq!(
            (total.flops, total.bytes_moved, total.host_bytes),
            (Some(10), None, None)
        );
    }

    #[test]
    fn only_contracts_that_require_contiguous_operands_have_a_plan() {
        let worked = worked("F32", &[]);
        assert_eq!(
            super::plan(&kernel("handles_strides"), &worked, &book(), ""),
            None
        );
        let rank3 = Worked {
            shapes: vec![("x".to_owned(), vec![2, 5, 5])],
            ..worked
        };
        let plan = super::plan(&kernel("requires_contiguous"), &rank3, &book(), "").unwrap();
        assert_eq!(
            plan.unpriced.as_deref(),
            Some(
                "not priced: `contiguize`'s contract does not admit an input of shape [2, 5, 5] in F32"
            )
        );
    }

    #[test]
    fn examples_that_must_fail_and_spec_first_contracts_price_nothing() {
        let body = CONTIGUIZE_CHAPTER
            .split("```fkc")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .unwrap();
        for (info, priced) in [
            ("fkc", true),
            ("fkc,should_fail=FKC0107", false),
            ("fkc,unverified", false),
        ] {
            let chapter = format!("# c\n\n```{info}{body}```\n");
            let mut book = BookContracts::default();
            book.add_chapter("c.md", "c.html", &chapter);
            assert_eq!(
                book.find(CONTIGUIZE, DType::F32).is_some(),
                priced,
                "{info}"
            );
        }
    }
}
