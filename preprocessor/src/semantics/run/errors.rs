//! The errors a run reports, located in the pseudo-code: index arithmetic that overflows, an
//! absent input used, an element read before it is written, an output element never written.

use super::super::error::SemanticsError;
use crate::expr::Span;

/// A step of a run that may fail (boxed: the error path is cold, the success path hot).
pub(super) type Fallible<T> = Result<T, Box<SemanticsError>>;

pub(super) fn overflow(span: Span) -> Box<SemanticsError> {
    Box::new(SemanticsError::run(
        span,
        "index arithmetic overflows 64 bits",
        "keep index arithmetic within the tensors' sizes",
    ))
}

pub(super) fn absent(name: &str, span: Span) -> Box<SemanticsError> {
    Box::new(SemanticsError::run(
        span,
        format!("`{name}` is absent on this sample"),
        format!("guard its use with `if present({name}):`"),
    ))
}

pub(super) fn read_before_write(span: Span, what: &str) -> Box<SemanticsError> {
    Box::new(SemanticsError::run(
        span,
        format!("{what} is read before it is written"),
        "give it a first value with `=` before reading it or updating it with `+=`",
    ))
}

pub(super) fn never_written(name: &str, dims: &[usize], flat: usize) -> SemanticsError {
    let mut index = vec![0; dims.len()];
    let mut rest = flat;
    for (axis, dim) in dims.iter().enumerate().rev() {
        index[axis] = rest % dim.max(&1);
        rest /= dim.max(&1);
    }
    let index: Vec<String> = index.iter().map(ToString::to_string).collect();
    SemanticsError::run(
        Span::default(),
        format!("`{name}[{}]` is never written", index.join(", ")),
        "every output element must be written: loop over all of the output's indices",
    )
}
