//! The outputs' shapes on a sample under the contract's shape rules, and where a `broadcast`
//! or `reduce` rule is undefined or a `from_params` rule cannot be computed.

use super::super::geometry;
use super::super::sample::{Param, Sample};
use super::Domain;
use crate::contract::resolved::{Keep, ResolvedOutput, ShapeRule};
use crate::expr::{self, Bindings, Value};
use fkc_provider::DType;

impl Domain<'_> {
    /// Every output's dims under the shape rules, when all are defined (see
    /// [`Domain::outputs_of`]).
    pub fn outputs(&self, sample: &Sample, bindings: &Bindings) -> Option<Vec<Vec<i64>>> {
        self.contract
            .outputs
            .iter()
            .map(|output| self.outputs_of(sample, bindings, output))
            .collect()
    }

    /// One output's dims under its shape rule, when defined: each at least 1, or 0 where it
    /// is an input's dim passed on (a 0 computed from inputs — a window count — is a window
    /// that does not fit).
    fn outputs_of(
        &self,
        sample: &Sample,
        bindings: &Bindings,
        output: &ResolvedOutput,
    ) -> Option<Vec<i64>> {
        // Each dim with whether it is an input's dim passed on (which may be 0: an empty input
        // makes an empty output) or computed (a window count, which must be at least 1).
        let computed = [true, true, false, false];
        let (dims, passed) = match output.shape.as_ref()? {
            ShapeRule::Conv2d => (geometry::conv2d(sample)?, computed.to_vec()),
            ShapeRule::ConvTranspose2d => (geometry::conv_transpose2d(sample)?, computed.to_vec()),
            // Stops at the first dimension that is undefined.
            ShapeRule::FromParams(dims) => (
                dims.iter()
                    .map(|(_, e)| expr::eval(e, bindings).ok()?.as_int())
                    .collect::<Option<Vec<i64>>>()?,
                dims.iter().map(|(_, e)| is_input_dim(e)).collect(),
            ),
            ShapeRule::Broadcast { inputs } => {
                let shapes: Option<Vec<&[i64]>> =
                    inputs.iter().map(|name| sample.dims(name)).collect();
                passed_on(geometry::broadcast(&shapes?)?)
            }
            ShapeRule::Reduce {
                input,
                axes,
                keepdim,
            } => {
                let keep = match keepdim {
                    Keep::Fixed(keep) => *keep,
                    Keep::Param(name) => match sample.param(name)? {
                        Param::Bool(keep) => *keep,
                        _ => return None,
                    },
                };
                let axes = sample.param(axes)?.ints();
                passed_on(geometry::reduce(sample.dims(input)?, axes, keep)?)
            }
            ShapeRule::Permute { input, perm } => passed_on(geometry::permuted(
                sample.dims(input)?,
                sample.param(perm)?.ints(),
            )?),
        };
        let defined = (dims.iter().zip(&passed)).all(|(d, passed)| *d >= 1 || (*passed && *d == 0));
        defined.then_some(dims)
    }

    /// Adds the outputs (and the fields that carry their shape) to the bindings.
    pub fn bind_outputs(&self, bindings: &mut Bindings, outputs: &[Vec<i64>]) {
        let slots = self.layout.outputs.iter();
        for ((output, dims), slot) in self.contract.outputs.iter().zip(outputs).zip(slots) {
            bindings.insert_at(*slot, &output.name, Value::operand(dims));
            for &(field, slot, of) in &self.layout.shaped {
                if of == output.name {
                    bindings.insert_at(slot, field, Value::ints(dims));
                }
            }
        }
    }

    /// On a sample every constraint admits (its values possible), the first output whose
    /// `broadcast` or `reduce` rule is undefined (shapes that do not broadcast, axes that are
    /// not distinct axes of the input), or whose `from_params` dims cannot be computed (a
    /// division by a field of 0, the dims of an absent optional input): the constraints admit
    /// what the shape rule cannot shape. (A computed dim below 1 is a window that does not
    /// fit: the rule says the sample has no output, which is not this.)
    pub fn undefined_shape(&self, sample: &Sample, dtype: DType) -> Option<usize> {
        let bindings = self.bindings(sample, dtype);
        if self.broken_constraint(sample, &bindings) != Some(None)
            || !self.values_possible(sample, &bindings)
        {
            return None;
        }
        self.undefined_with(sample, &bindings)
    }

    /// [`Domain::undefined_shape`] on a sample already known admitted, with its bindings.
    fn undefined_with(&self, sample: &Sample, bindings: &Bindings) -> Option<usize> {
        if self.outputs(sample, bindings).is_some() {
            return None;
        }
        self.contract
            .outputs
            .iter()
            .position(|output| match &output.shape {
                Some(ShapeRule::FromParams(dims)) => dims.iter().any(|(_, e)| {
                    expr::eval(e, bindings)
                        .ok()
                        .and_then(|v| v.as_int())
                        .is_none()
                }),
                Some(rule) => {
                    rule.is_partial() && self.outputs_of(sample, bindings, output).is_none()
                }
                None => false,
            })
    }

    /// On a sample every constraint admits (its values possible) and every rule can be computed
    /// on, the first output the rule gives a computed dim below 1 (a window that does not fit):
    /// the contract says the kernel has no output there, so it must refuse the sample.
    pub fn unshaped(&self, sample: &Sample, dtype: DType) -> Option<usize> {
        let bindings = self.bindings(sample, dtype);
        if self.broken_constraint(sample, &bindings) != Some(None)
            || !self.values_possible(sample, &bindings)
            || self.undefined_with(sample, &bindings).is_some()
        {
            return None;
        }
        (self.contract.outputs.iter())
            .position(|output| self.outputs_of(sample, &bindings, output).is_none())
    }

    /// Whether every output whose shape rule is undefined on `sample` has a `broadcast` or
    /// `reduce` rule (which are undefined exactly where shapes or axes are invalid).
    pub(super) fn only_shaping_rules_undefined(
        &self,
        sample: &Sample,
        bindings: &Bindings,
    ) -> bool {
        self.contract.outputs.iter().all(|output| {
            output.shape.as_ref().is_some_and(ShapeRule::is_partial)
                || self.outputs_of(sample, bindings, output).is_some()
        })
    }
}

/// Dims every one of which is an input's dim passed on.
fn passed_on(dims: Vec<i64>) -> (Vec<i64>, Vec<bool>) {
    let passed = vec![true; dims.len()];
    (dims, passed)
}

/// Whether `e` is `name.dim[k]`: an input's dim passed on as it is.
fn is_input_dim(e: &expr::Expr) -> bool {
    let expr::ExprKind::Index { base, .. } = &e.kind else {
        return false;
    };
    let expr::ExprKind::Member { base, .. } = &base.kind else {
        return false;
    };
    matches!(&base.kind, expr::ExprKind::Name(name) if super::dim_of(e, name).is_some())
}
