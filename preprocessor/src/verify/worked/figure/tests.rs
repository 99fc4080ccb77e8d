//! Unit tests of the worked-example figure.

#![allow(clippy::unwrap_used)]
use super::super::focus::tests::{shown, step};
use super::*;

/// out[0, 0] = x[0, 0, 0]·w[0] + x[0, 0, 2]·w[1] + b[0] (x: 1×1×3 plus a second plane
/// not read, out: 1×2).
fn dilated() -> Traced {
    let x = vec![2.0, 9.0, -1.0, 4.0, 4.0, 4.0];
    Traced {
        tensors: vec![
            shown("x", &[2, 1, 3], x),
            shown("w", &[2], vec![3.0, 1.0]),
            shown("b", &[1], vec![5.0]),
            shown("out", &[1, 2], vec![10.0, 0.0]),
        ],
        outputs: vec![3],
        storage: None,
        traces: vec![vec![
            vec![
                step(&[(0, 0), (1, 0)], 6.0),
                step(&[(0, 2), (1, 1)], -1.0),
                step(&[(2, 0)], 5.0),
            ],
            vec![step(&[(0, 1), (1, 0)], 27.0)],
        ]],
    }
}

#[test]
fn a_sum_is_written_out_term_by_term_with_its_bias() {
    let traced = dilated();
    let focus = Focus::Gather { tensor: 3, flat: 0 };
    let figure = draw(&traced, focus, Combine::Sum);
    assert_eq!(figure.sentence, "`out[0, 0]` = 2·3 + (−1)·1 + b 5 = 10.");
    // The plane of x read, w, b and out; x's second plane is not read, so not drawn.
    let labels: Vec<&str> = figure.grids.iter().map(|g| g.label.as_str()).collect();
    assert_eq!(labels, ["x[0, :, :]", "w", "b", "out"]);
    let x = &figure.grids[0];
    let numbers: Vec<_> = x.marks.iter().map(|m| (m.col, m.number)).collect();
    assert_eq!(numbers, [(0, Some(1)), (2, Some(2))]);
    assert_eq!(figure.grids[1].marks[1].number, Some(2));
    assert_eq!(figure.grids[2].marks[0].number, Some(3));
    let out = &figure.grids[3];
    assert_eq!(out.marks[0].kind, MarkKind::Traced);
    assert_eq!(out.cells, ["10", "0"]);
    assert_eq!(x.cells, ["2", "9", "−1"]);
}

#[test]
fn a_short_element_says_why() {
    let traced = dilated();
    let figure = draw(&traced, Focus::Gather { tensor: 3, flat: 1 }, Combine::Sum);
    assert_eq!(
        figure.sentence,
        "`out[0, 1]` is computed from 9·3, in the semantics' order but not as their sum; the kernel returned 0. It has 1 term where other elements of `out` have up to 3: the semantics' conditions skip the others here."
    );
    // Read at the border of its plane, the missing terms are reads past the edge.
    let mut edge = dilated();
    edge.traces[0][1] = vec![step(&[(0, 0), (1, 0)], 6.0)];
    let figure = draw(&edge, Focus::Gather { tensor: 3, flat: 1 }, Combine::Sum);
    assert!(
        figure.sentence.ends_with(
            "at this edge the semantics skip the reads that would fall outside their input."
        ),
        "{}",
        figure.sentence
    );
}

#[test]
fn a_selection_shows_the_nan_and_what_was_returned() {
    // out[0] = max over x[0..4] = max(3, NaN, 8, 1) = 8 with NaNs ignored; the semantics
    // read x[0] twice (the running maximum starts there).
    let traced = Traced {
        tensors: vec![
            shown("x", &[4], vec![3.0, f64::NAN, 8.0, 1.0]),
            shown("out", &[1], vec![8.0]),
        ],
        outputs: vec![1],
        storage: None,
        traces: vec![vec![vec![
            step(&[(0, 0)], 3.0),
            step(&[(0, 0)], 3.0),
            step(&[(0, 1)], 3.0),
            step(&[(0, 2)], 8.0),
            step(&[(0, 3)], 8.0),
        ]]],
    };
    let focus = Focus::Gather { tensor: 1, flat: 0 };
    let figure = draw(&traced, focus, Combine::Select("max", "ignore"));
    assert_eq!(
        figure.sentence,
        "`out[0]` = max(3, NaN, 8, 1) = 8, in the order the semantics read them: under `precision.nan: ignore` the NaN is dropped, and the kernel returned 8."
    );
    let x = &figure.grids[0];
    assert_eq!(x.cells[1], "NaN");
    let numbers: Vec<_> = x.marks.iter().filter_map(|m| m.number).collect();
    assert_eq!(numbers, [1, 2, 3, 4], "a cell read twice keeps one number");
    let chosen: Vec<_> = x
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Chosen)
        .collect();
    assert_eq!(chosen.len(), 1);
    assert_eq!(chosen[0].col, 2);
    assert!(figure.legend.iter().any(|(k, _)| k == "chosen"));
}

#[test]
fn a_scatter_shows_its_own_contributions_not_the_totals() {
    // out[i] += x[j]·w[i − j] for x [2], w [2], out [3]: x[1] goes to out[1] and out[2].
    let traced = Traced {
        tensors: vec![
            shown("x", &[2], vec![2.0, -1.0]),
            shown("w", &[2], vec![3.0, 4.0]),
            shown("out", &[3], vec![6.0, 5.0, -4.0]),
        ],
        outputs: vec![2],
        storage: None,
        traces: vec![vec![
            vec![step(&[(0, 0), (1, 0)], 6.0)],
            vec![step(&[(0, 0), (1, 1)], 8.0), step(&[(0, 1), (1, 0)], -3.0)],
            vec![step(&[(0, 1), (1, 1)], -4.0)],
        ]],
    };
    let focus = Focus::Scatter { tensor: 0, flat: 1 };
    let figure = draw(&traced, focus, Combine::Sum);
    let out = figure.grids.last().unwrap();
    assert_eq!(out.label, "x[1] → out");
    assert_eq!(
        out.cells,
        ["", "−3", "−4"],
        "contributions, blank elsewhere"
    );
    let numbers: Vec<_> = out.marks.iter().map(|m| (m.col, m.number)).collect();
    assert_eq!(numbers, [(1, Some(1)), (2, Some(2))]);
    let w = &figure.grids[1];
    let w_numbers: Vec<_> = w.marks.iter().map(|m| (m.col, m.number)).collect();
    assert_eq!(w_numbers, [(0, Some(1)), (1, Some(2))]);
    assert!(
        figure.sentence.starts_with(
            "`x[1]` = −1 is scattered to 2 elements of `out`, numbered in `out`'s row-major order"
        ),
        "{}",
        figure.sentence
    );
    assert!(figure.sentence.contains("(−1)·3 = −3 to `out[1]`"));
    assert!(
        figure
            .sentence
            .contains("`out[1]` = 8 + (−3) = 5, and the kernel returned 5.")
    );
}

#[test]
fn a_strided_view_marks_where_its_elements_are_stored() {
    // x [2, 2] stored column-major: logical (0, 1) sits at storage offset 2.
    let traced = Traced {
        tensors: vec![
            shown("x", &[2, 2], vec![1.0, 2.0, 3.0, 4.0]),
            shown("out", &[2, 2], vec![1.0, 2.0, 3.0, 4.0]),
        ],
        outputs: vec![1],
        storage: None,
        traces: vec![vec![
            vec![step(&[(0, 0)], 1.0)],
            vec![step(&[(0, 1)], 2.0)],
            vec![step(&[(0, 2)], 3.0)],
            vec![step(&[(0, 3)], 4.0)],
        ]],
    };
    let storage = Storage {
        tensor: 0,
        values: vec![1.0, 3.0, 2.0, 4.0],
        offsets: vec![0, 2, 1, 3],
        strides: vec![1, 2],
    };
    let focus = Focus::Gather { tensor: 1, flat: 1 };
    let traced = Traced {
        storage: Some(storage),
        ..traced
    };
    let figure = draw(&traced, focus, Combine::Sum);
    let stored = &figure.grids[0];
    assert_eq!(stored.cells, ["1", "3", "2", "4"]);
    assert_eq!((stored.marks[0].col, stored.marks[0].number), (2, Some(1)));
    assert_eq!(
        figure.sentence,
        "`out[0, 1]` = `x[0, 1]` = 2. `x[0, 1]` is stored at offset 2 of its storage (first grid)."
    );
}

#[test]
fn an_average_says_what_it_divides_by() {
    assert_eq!(super::divisor(-1.0, -0.0625), Some(16));
    assert_eq!(super::divisor(9.0, 3.0), Some(3));
    assert_eq!(super::divisor(27.0, 0.0), None);
    assert_eq!(super::divisor(5.0, 5.0), None);
    assert_eq!(super::divisor(1.0, 0.3), None);
}
