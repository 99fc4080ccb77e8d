//! The rule-level forms of an output: `dtype_rule: passthrough(INPUT)`, and the shape rules
//! `conv2d(params)`, `conv_transpose2d(params)`, `same(x)`, `broadcast(a, b, …)`, `reduce(x,
//! axes, keepdim)`, `permuted(x, perm)` and `from_params(…)`.

use super::{Keep, ResolvedOutput, Resolver, SHAPE_FUNCTION_CARRIERS, ShapeRule, type_words};
use crate::contract::raw::{RawContract, RawOutput};
use crate::contract::schema::Located;
use crate::diag::Code;
use crate::expr::{self, Expr, ExprError, ExprErrorKind, ExprKind, Span, Type};
use fkc_provider::ParamKind;

impl Resolver<'_> {
    pub(super) fn output(&mut self, raw: &RawContract, output: &RawOutput) -> ResolvedOutput {
        ResolvedOutput {
            name: output.name.value.clone(),
            dtype_from: output
                .dtype_rule
                .as_ref()
                .and_then(|rule| self.dtype_rule(raw, rule)),
            shape: output
                .shape_rule
                .as_ref()
                .and_then(|rule| self.shape_rule(raw, rule)),
        }
    }

    fn dtype_rule(&mut self, raw: &RawContract, rule: &Located<String>) -> Option<String> {
        let expr = self.parse_at(rule, 0)?;
        if let ExprKind::Call { name, args, .. } = &expr.kind
            && name == "passthrough"
            && let [arg] = args.as_slice()
            && arg.name.is_none()
            && let ExprKind::Name(input) = &arg.value.kind
        {
            if raw.inputs.iter().any(|i| &i.name.value == input) {
                return Some(input.clone());
            }
            let error = ExprError {
                span: arg.value.span,
                kind: ExprErrorKind::UnknownName,
                message: format!("`{input}` is not an input of this contract"),
                help: Some(format!("the inputs are: {}", input_names(raw))),
            };
            self.report(rule, 0, &error);
            return None;
        }
        self.bad_rule(
            rule,
            &expr,
            "`dtype_rule` is `passthrough(INPUT)`",
            format!("write `passthrough({})`", first_input(raw)),
        );
        None
    }

    fn shape_rule(&mut self, raw: &RawContract, rule: &Located<String>) -> Option<ShapeRule> {
        let expr = self.parse_at(rule, 0)?;
        match &expr.kind {
            ExprKind::Call {
                name,
                args,
                name_span,
            } if name == "conv2d" || name == "conv_transpose2d" => {
                self.geometry_rule(raw, rule, name, args, *name_span)
            }
            ExprKind::Call { name, args, .. } if name == "from_params" => {
                self.params_rule(rule, args)
            }
            ExprKind::Call { name, args, .. } if name == "broadcast" => {
                self.broadcast_rule(raw, rule, &expr, args)
            }
            ExprKind::Call { name, args, .. } if name == "reduce" => {
                self.reduce_rule(raw, rule, &expr, args)
            }
            ExprKind::Call { name, args, .. } if name == "permuted" => {
                self.permuted_rule(raw, rule, &expr, args)
            }
            ExprKind::Call { name, args, .. } if name == "same" => {
                self.same_rule(raw, rule, &expr, args)
            }
            _ => {
                self.bad_rule(
                    rule,
                    &expr,
                    "a shape rule is `conv2d(params)`, `conv_transpose2d(params)`, `same(x)`, `broadcast(a, b)`, `reduce(x, axes, keepdim)`, `permuted(x, perm)` or `from_params(…)`",
                    "write `from_params(N=…, C=…, …)` with one expression per dimension".to_owned(),
                );
                None
            }
        }
    }

    /// `conv2d(params)` / `conv_transpose2d(params)`: the geometry of the declared variant.
    fn geometry_rule(
        &mut self,
        raw: &RawContract,
        rule: &Located<String>,
        name: &str,
        args: &[expr::Arg],
        name_span: Span,
    ) -> Option<ShapeRule> {
        let (shape, wanted) = if name == "conv2d" {
            (ShapeRule::Conv2d, "Conv2D")
        } else {
            (ShapeRule::ConvTranspose2d, "ConvTranspose2D")
        };
        let variant = raw
            .op_params
            .as_ref()
            .and_then(|p| p.variant.as_ref())
            .map(|v| v.value.as_str());
        let params_arg = matches!(args, [arg] if arg.name.is_none() && matches!(&arg.value.kind, ExprKind::Name(n) if n == "params"));
        // A variant the shape-function catalogue does not know is the importer's to judge
        // against the provider (FKC0302); do not repeat it.
        let variant_is_unknown = variant.is_some_and(|v| !SHAPE_FUNCTION_CARRIERS.contains(&v));
        let registrable = raw.registrable.as_ref().is_none_or(|r| r.value);
        if params_arg && (variant == Some(wanted) || (variant_is_unknown && registrable)) {
            return Some(shape);
        }
        let error = ExprError {
            span: name_span,
            kind: ExprErrorKind::Function,
            message: format!("`{name}(params)` needs `op_params.variant: {wanted}`"),
            help: Some(format!(
                "declare `variant: {wanted}`, or write the shape with `from_params(…)`"
            )),
        };
        self.report_code(rule, 0, &error, Code::BadRule);
        None
    }

    /// `from_params(N=…, …)`: one integer expression per output dimension.
    fn params_rule(&mut self, rule: &Located<String>, args: &[expr::Arg]) -> Option<ShapeRule> {
        let mut dims = Vec::new();
        for (index, arg) in args.iter().enumerate() {
            let label = arg
                .name
                .as_ref()
                .map_or_else(|| format!("dim{index}"), |(n, _)| n.clone());
            let ok = match expr::check(&arg.value, &self.scope) {
                Ok(Type::Int | Type::Any) => true,
                Ok(found) => {
                    let error = ExprError {
                        span: arg.value.span,
                        kind: ExprErrorKind::Type,
                        message: format!(
                            "dimension `{label}` must be an integer, but this is {}",
                            type_words(&found)
                        ),
                        help: None,
                    };
                    self.report(rule, 0, &error);
                    false
                }
                Err(errors) => {
                    for error in &errors {
                        self.report(rule, 0, error);
                    }
                    false
                }
            };
            if ok {
                dims.push((label, arg.value.clone()));
            }
        }
        (dims.len() == args.len() && !dims.is_empty()).then_some(ShapeRule::FromParams(dims))
    }

    /// `broadcast(a, b, …)`: two or more of the contract's inputs, by name.
    fn broadcast_rule(
        &mut self,
        raw: &RawContract,
        rule: &Located<String>,
        expr: &Expr,
        args: &[expr::Arg],
    ) -> Option<ShapeRule> {
        let mut inputs = Vec::new();
        for arg in args {
            let Some(input) = named_input(raw, arg) else {
                let error = ExprError {
                    span: arg.value.span,
                    kind: ExprErrorKind::UnknownName,
                    message: format!("`{}` is not an input of this contract", arg.value),
                    help: Some(format!("broadcast inputs by name: {}", input_names(raw))),
                };
                self.report_code(rule, 0, &error, Code::BadRule);
                return None;
            };
            inputs.push(input);
        }
        if inputs.len() < 2 {
            self.bad_rule(
                rule,
                expr,
                "`broadcast` takes two or more inputs",
                format!("write `broadcast({}, …)`", input_names(raw).replace('`', "")),
            );
            return None;
        }
        Some(ShapeRule::Broadcast { inputs })
    }

    /// `reduce(x, axes, keepdim)`: an input, a list parameter and a boolean parameter (or
    /// `true` / `false`), by name.
    fn reduce_rule(
        &mut self,
        raw: &RawContract,
        rule: &Located<String>,
        expr: &Expr,
        args: &[expr::Arg],
    ) -> Option<ShapeRule> {
        let field = |name: &str| {
            let fields = raw.op_params.iter().flat_map(|p| &p.fields);
            let field = fields.into_iter().find(|f| f.name.value == name)?;
            ParamKind::parse(&field.kind.value)
        };
        let usage = "write `reduce(x, axes, keepdim)`: an input, a `Vec<i64>` or `Vec<usize>` field, and a `bool` field (or `true` / `false`)";
        let [x, axes, keepdim] = args else {
            self.bad_rule(rule, expr, "`reduce` takes three arguments", usage.to_owned());
            return None;
        };
        let input = named_input(raw, x);
        let list = named(axes).filter(|n| list_field(raw, n));
        let keep = match (&keepdim.value.kind, named(keepdim)) {
            (ExprKind::Bool(fixed), _) => Some(Keep::Fixed(*fixed)),
            (_, Some(n)) if field(&n) == Some(ParamKind::Bool) => Some(Keep::Param(n)),
            _ => None,
        };
        let wrong = [
            (input.is_none(), x, "an input of this contract"),
            (list.is_none(), axes, "a list op-param field"),
            (keep.is_none(), keepdim, "a `bool` op-param field, `true` or `false`"),
        ];
        let (Some(input), Some(axes), Some(keepdim)) = (input, list, keep) else {
            self.not_an_argument(rule, &wrong, usage);
            return None;
        };
        Some(ShapeRule::Reduce {
            input,
            axes,
            keepdim,
        })
    }

    /// `same(x)`: an input's shape (the broadcast of that one shape).
    fn same_rule(
        &mut self,
        raw: &RawContract,
        rule: &Located<String>,
        expr: &Expr,
        args: &[expr::Arg],
    ) -> Option<ShapeRule> {
        let input = match args {
            [x] => named_input(raw, x),
            _ => None,
        };
        let Some(input) = input else {
            let help = format!("write `same({})`", first_input(raw));
            self.bad_rule(rule, expr, "`same` takes one input, by name", help);
            return None;
        };
        Some(ShapeRule::Broadcast {
            inputs: vec![input],
        })
    }

    /// `permuted(x, perm)`: an input and a list parameter, by name.
    fn permuted_rule(
        &mut self,
        raw: &RawContract,
        rule: &Located<String>,
        expr: &Expr,
        args: &[expr::Arg],
    ) -> Option<ShapeRule> {
        let usage = "write `permuted(x, perm)`: an input and a `Vec<usize>` or `Vec<i64>` field";
        let [x, perm] = args else {
            self.bad_rule(rule, expr, "`permuted` takes two arguments", usage.to_owned());
            return None;
        };
        let input = named_input(raw, x);
        let list = named(perm).filter(|n| list_field(raw, n));
        let wrong = [
            (input.is_none(), x, "an input of this contract"),
            (list.is_none(), perm, "a list op-param field"),
        ];
        let (Some(input), Some(perm)) = (input, list) else {
            self.not_an_argument(rule, &wrong, usage);
            return None;
        };
        Some(ShapeRule::Permute { input, perm })
    }

    /// Reports the first argument of a rule that is not what it must be.
    fn not_an_argument(&mut self, rule: &Located<String>, wrong: &[(bool, &expr::Arg, &str)], usage: &str) {
        if let Some((_, arg, wanted)) = wrong.iter().find(|(bad, _, _)| *bad) {
            let error = ExprError {
                span: arg.value.span,
                kind: ExprErrorKind::UnknownName,
                message: format!("`{}` is not {wanted}", arg.value),
                help: Some(usage.to_owned()),
            };
            self.report_code(rule, 0, &error, Code::BadRule);
        }
    }

    fn bad_rule(&mut self, rule: &Located<String>, expr: &Expr, message: &str, help: String) {
        let error = ExprError {
            span: expr.span,
            kind: ExprErrorKind::Function,
            message: message.to_owned(),
            help: Some(help),
        };
        self.report_code(rule, 0, &error, Code::BadRule);
    }
}

/// The name an argument is, when it is a bare name (`x`, not `x + 1` or `k=x`).
fn named(arg: &expr::Arg) -> Option<String> {
    match &arg.value.kind {
        ExprKind::Name(name) if arg.name.is_none() => Some(name.clone()),
        _ => None,
    }
}

/// The input an argument names.
fn named_input(raw: &RawContract, arg: &expr::Arg) -> Option<String> {
    named(arg).filter(|n| raw.inputs.iter().any(|i| &i.name.value == n))
}

/// Whether the op-param field `name` is a list (`Vec<usize>`, `Vec<i64>`).
fn list_field(raw: &RawContract, name: &str) -> bool {
    let mut fields = raw.op_params.iter().flat_map(|p| &p.fields);
    let field = fields.find(|f| f.name.value == name);
    field.and_then(|f| ParamKind::parse(&f.kind.value))
        .is_some_and(|kind| matches!(kind, ParamKind::I64List | ParamKind::UsizeList))
}

fn input_names(raw: &RawContract) -> String {
    raw.inputs
        .iter()
        .map(|i| format!("`{}`", i.name.value))
        .collect::<Vec<_>>()
        .join(", ")
}

fn first_input(raw: &RawContract) -> String {
    raw.inputs
        .first()
        .map_or_else(|| "x".to_owned(), |i| i.name.value.clone())
}
