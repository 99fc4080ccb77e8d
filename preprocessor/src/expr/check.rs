//! The static checker: proves, before any evaluation, that every name binds, every field
//! exists, every index is a constant within its tuple and every operation is well-typed.
//!
//! [`check`] walks the tree once and collects **all** errors (an ill-typed subexpression gets
//! [`Type::Any`] so that one mistake does not cascade). The typing rules and their messages
//! (in `rules.rs`) are shared with the evaluator, so a runtime error reads exactly like the
//! static one. Every closed subexpression (no names, no calls) is also evaluated, so constant
//! overflow and division by a constant zero are caught statically.

use std::collections::BTreeMap;

use super::ast::{Arg, BinOp, Expr, ExprKind};
use super::error::{ExprError, ExprErrorKind};
use super::eval::{Bindings, eval};
use super::parser::MAX_HEIGHT;
use super::rules::{
    Builtin, arity, bad_index_type, binary_type, division_by_zero, index_out_of_range, member_type,
    no_keywords, not_indexable, too_deep, unary_type, unknown_function, unknown_name,
};
use super::span::Span;
use super::value::{Type, Value};

/// The names (and caller-defined functions) an expression may use, with their types.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    names: BTreeMap<String, Type>,
    functions: BTreeMap<String, FunctionSig>,
}

/// The signature of a caller-defined pure function: positional parameters only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSig {
    /// Parameter types, in order (use [`Type::Any`] to accept anything).
    pub params: Vec<Type>,
    /// Result type.
    pub returns: Type,
}

impl FunctionSig {
    /// A signature.
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn new(params: Vec<Type>, returns: Type) -> FunctionSig {
        FunctionSig { params, returns }
    }
}

impl Scope {
    /// An empty scope (the built-in functions are always available).
    /// A scope giving each name `bindings` binds the type of its value (functions not
    /// included: their signatures are unknown there).
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn of(bindings: &Bindings) -> Scope {
        let mut scope = Scope::new();
        for (name, ty) in bindings.typed_names() {
            scope.insert(name, ty);
        }
        scope
    }

    pub fn new() -> Scope {
        Scope::default()
    }

    /// Binds (or rebinds) a root name.
    pub fn insert(&mut self, name: impl Into<String>, ty: Type) -> &mut Scope {
        self.names.insert(name.into(), ty);
        self
    }

    /// Registers a caller-defined function; it shadows a built-in of the same name.
    #[cfg(any(test, feature = "internals"))] // the tests and fuzzers use it
    pub fn insert_function(&mut self, name: impl Into<String>, sig: FunctionSig) -> &mut Scope {
        self.functions.insert(name.into(), sig);
        self
    }

    /// The type of a root name.
    pub fn get(&self, name: &str) -> Option<&Type> {
        self.names.get(name)
    }

    /// The signature of a caller-defined function.
    pub fn function(&self, name: &str) -> Option<&FunctionSig> {
        self.functions.get(name)
    }

    /// The root names in scope, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.names.keys().map(String::as_str).collect()
    }

    /// The functions callable in this scope (caller-defined and built-in), sorted.
    pub fn function_names(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self
            .functions
            .keys()
            .map(String::as_str)
            .chain(Builtin::NAMES)
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// Type-checks `expr` in `scope`, returning its type or every error found.
pub fn check(expr: &Expr, scope: &Scope) -> Result<Type, Vec<ExprError>> {
    let mut checker = Checker {
        scope,
        errors: Vec::new(),
    };
    let ty = checker.ty(expr, 0);
    if checker.errors.is_empty() {
        checker.errors = constant_errors(expr);
    }
    if checker.errors.is_empty() {
        Ok(ty)
    } else {
        Err(checker.errors)
    }
}

/// Evaluates every maximal closed (constant) subexpression and returns the errors.
fn constant_errors(expr: &Expr) -> Vec<ExprError> {
    let mut errors = Vec::new();
    let mut stack = vec![expr];
    while let Some(node) = stack.pop() {
        if !node.is_closed() {
            stack.extend(node.children().into_iter().rev());
        } else if let Err(err) = eval(node, &Bindings::new()) {
            errors.push(err);
        }
    }
    errors
}

struct Checker<'s> {
    scope: &'s Scope,
    errors: Vec<ExprError>,
}

impl Checker<'_> {
    /// The type of `e`, recording errors; an erroneous node has type [`Type::Any`].
    fn ty(&mut self, e: &Expr, depth: usize) -> Type {
        if depth > MAX_HEIGHT {
            self.errors.push(too_deep(e.span));
            return Type::Any;
        }
        let result = match &e.kind {
            ExprKind::Int(_) => Ok(Type::Int),
            ExprKind::Float(_) => Ok(Type::Float),
            ExprKind::Text(_) => Ok(Type::Text),
            ExprKind::Bool(_) => Ok(Type::Bool),
            ExprKind::Name(name) => self.name(name, e.span),
            ExprKind::Tuple(items) => Ok(Type::Tuple(
                items.iter().map(|i| self.ty(i, depth + 1)).collect(),
            )),
            ExprKind::Unary { op, operand } => {
                let t = self.ty(operand, depth + 1);
                unary_type(*op, &t, operand.span)
            }
            ExprKind::Binary { op, lhs, rhs, .. } => self.binary(*op, lhs, rhs, e.span, depth),
            ExprKind::Member {
                base,
                field,
                field_span,
            } => {
                let t = self.ty(base, depth + 1);
                member_type(&t, base, field, *field_span)
            }
            ExprKind::Index { base, index } => self.index(base, index, depth),
            ExprKind::Call {
                name,
                name_span,
                args,
            } => self.call(name, *name_span, args, e.span, depth),
        };
        result.unwrap_or_else(|err| {
            self.errors.push(err);
            Type::Any
        })
    }

    fn name(&self, name: &str, span: Span) -> Result<Type, ExprError> {
        match self.scope.get(name) {
            Some(t) => Ok(t.clone()),
            None => Err(unknown_name(
                name,
                span,
                self.scope.names(),
                &self.scope.function_names(),
            )),
        }
    }

    fn binary(
        &mut self,
        op: BinOp,
        lhs: &Expr,
        rhs: &Expr,
        span: Span,
        depth: usize,
    ) -> Result<Type, ExprError> {
        let lt = self.ty(lhs, depth + 1);
        let rt = self.ty(rhs, depth + 1);
        let result = binary_type(op, (&lt, lhs.span), (&rt, rhs.span), span)?;
        if matches!(op, BinOp::Div | BinOp::Rem)
            && rhs.is_closed()
            && let Ok(Value::Int(0)) = eval(rhs, &Bindings::new())
        {
            return Err(division_by_zero(op, rhs));
        }
        Ok(result)
    }

    fn index(&mut self, base: &Expr, index: &Expr, depth: usize) -> Result<Type, ExprError> {
        let bt = self.ty(base, depth + 1);
        let it = self.ty(index, depth + 1);
        if !it.compatible(&Type::Int) {
            return Err(bad_index_type(&it, index.span));
        }
        let items = match &bt {
            Type::Any => return Ok(Type::Any),
            // A list's length is the sample's: an index out of range fails when evaluated.
            Type::List(item) => return Ok((**item).clone()),
            Type::Tuple(items) => items,
            _ => return Err(not_indexable(&bt, base, index.span)),
        };
        // `x.dim[axis]`: an index known only on a sample, into a tuple of one element type,
        // is checked against the tuple's length when evaluated.
        let uniform = items.first().filter(|first| items.iter().all(|t| t == *first));
        if !index.is_closed()
            && let Some(element) = uniform
        {
            return Ok(element.clone());
        }
        if !index.is_closed() {
            return Err(ExprError::new(
                ExprErrorKind::IndexOutOfRange,
                index.span,
                format!(
                    "cannot prove that `{index}` is within `{base}` (length {})",
                    items.len()
                ),
            )
            .with_help("tuple indices must be constant, e.g. `stride[0]`"));
        }
        let i = match eval(index, &Bindings::new())? {
            Value::Int(i) => i,
            other => return Err(bad_index_type(&other.type_of(), index.span)),
        };
        let element = usize::try_from(i).ok().and_then(|i| items.get(i));
        element
            .cloned()
            .ok_or_else(|| index_out_of_range(i, items.len(), base, index.span))
    }

    fn call(
        &mut self,
        name: &str,
        name_span: Span,
        args: &[Arg],
        span: Span,
        depth: usize,
    ) -> Result<Type, ExprError> {
        let types: Vec<(Type, Span)> = args
            .iter()
            .map(|a| (self.ty(&a.value, depth + 1), a.value.span))
            .collect();
        if let Some(sig) = self.scope.function(name) {
            no_keywords(name, args)?;
            check_sig(name, sig, &types, span)?;
            return Ok(sig.returns.clone());
        }
        match Builtin::lookup(name) {
            Some(builtin) => {
                no_keywords(name, args)?;
                builtin.check(&types, span)
            }
            None => Err(unknown_function(
                name,
                name_span,
                &self.scope.function_names(),
                self.scope.get(name).is_some(),
            )),
        }
    }
}

fn check_sig(
    name: &str,
    sig: &FunctionSig,
    args: &[(Type, Span)],
    span: Span,
) -> Result<(), ExprError> {
    if args.len() != sig.params.len() {
        return Err(arity(name, &sig.params.len().to_string(), args.len(), span));
    }
    for (i, ((t, arg_span), want)) in args.iter().zip(&sig.params).enumerate() {
        if !t.compatible(want) {
            return Err(ExprError::new(
                ExprErrorKind::Type,
                *arg_span,
                format!("argument {} of `{name}` must be {want}, found {t}", i + 1),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::super::fixtures::{SEED, bindings, deep_negation};
    use super::super::parse;
    use super::*;

    fn conv2d_scope() -> Scope {
        let mut scope = Scope::of(&bindings("conv2d"));
        scope.insert("params", Type::Any);
        scope
    }

    fn ty(src: &str) -> Type {
        check(&parse(src).unwrap(), &conv2d_scope()).unwrap_or_else(|e| panic!("{src}: {e:?}"))
    }

    fn errors(src: &str) -> Vec<ExprError> {
        check(&parse(src).unwrap(), &conv2d_scope()).expect_err(src)
    }

    /// The single error of `src`: `(kind, start, end)`.
    fn one(src: &str) -> (ExprErrorKind, usize, usize) {
        let errors = errors(src);
        assert_eq!(errors.len(), 1, "{src}: {errors:?}");
        (errors[0].kind, errors[0].span.start, errors[0].span.end)
    }

    #[test]
    fn seed_expressions_type_check() {
        for (contract, field, src, _) in SEED {
            let expr = parse(src).unwrap();
            let mut scope = Scope::of(&bindings(contract));
            scope.insert("params", Type::Any);
            if let ExprKind::Call { name, args, .. } = &expr.kind
                && matches!(
                    name.as_str(),
                    "passthrough" | "conv2d" | "conv_transpose2d" | "from_params"
                )
            {
                for arg in args {
                    check(&arg.value, &scope)
                        .unwrap_or_else(|e| panic!("{contract}.{field}: {e:?}"));
                }
                continue;
            }
            let t = check(&expr, &scope).unwrap_or_else(|e| panic!("{contract}.{field}: {e:?}"));
            let want = if field.contains("constraint") || field.contains("when") {
                Type::Bool
            } else {
                Type::Int
            };
            assert_eq!(t, want, "{contract}.{field}");
        }
    }

    #[test]
    fn types_of_forms() {
        assert_eq!(ty("x.dim"), Type::ints(4));
        assert_eq!(ty("x"), Type::operand(4));
        assert_eq!(ty("bias.rank"), Type::Int);
        assert_eq!(ty("(1, true)"), Type::Tuple(vec![Type::Int, Type::Bool]));
        assert_eq!(ty("(1, true)[1]"), Type::Bool);
        assert_eq!(ty("stride == (1, 1)"), Type::Bool);
        assert_eq!(ty("min(groups, 3, x.dim[0])"), Type::Int);
        assert_eq!(ty("divisible(groups, 0)"), Type::Bool);
        assert_eq!(ty("x.dim[1 + 2]"), Type::Int);
        assert_eq!(ty("params.anything[7]"), Type::Any);
        assert_eq!(ty("!depthwise || groups >= 1"), Type::Bool);
    }

    #[test]
    fn unknown_names_with_suggestions() {
        let e = &errors("grups + 1")[0];
        assert_eq!(
            (e.kind, e.span),
            (ExprErrorKind::UnknownName, Span::new(0, 5))
        );
        assert_eq!(e.message, "unknown name `grups`");
        assert!(
            e.help
                .as_deref()
                .unwrap()
                .starts_with("did you mean `groups`?"),
            "{:?}",
            e.help
        );
        let e = &errors("x.dims[0]")[0];
        assert_eq!(
            (e.kind, e.span),
            (ExprErrorKind::UnknownName, Span::new(2, 6))
        );
        assert_eq!(
            e.help.as_deref(),
            Some("did you mean `dim`? (fields of `x`: `dim`, `rank`)")
        );
        let e = &errors("divisible")[0];
        assert_eq!(
            e.help.as_deref(),
            Some("`divisible` is a function; call it: `divisible(...)`")
        );
        assert_eq!(one("groups.dim"), (ExprErrorKind::Type, 7, 10));
    }

    #[test]
    fn all_errors_are_collected() {
        let errors = errors("a + b * true + x.dim[9]");
        let found: Vec<(ExprErrorKind, usize, usize)> = errors
            .iter()
            .map(|e| (e.kind, e.span.start, e.span.end))
            .collect();
        assert_eq!(
            found,
            [
                (ExprErrorKind::UnknownName, 0, 1),
                (ExprErrorKind::UnknownName, 4, 5),
                (ExprErrorKind::Type, 8, 12),
                (ExprErrorKind::IndexOutOfRange, 21, 22),
            ]
        );
    }

    #[test]
    fn type_errors_are_located() {
        let e = &errors("groups + true")[0];
        assert_eq!(
            (e.kind, e.span, e.message.as_str()),
            (
                ExprErrorKind::Type,
                Span::new(9, 13),
                "cannot add int and bool"
            )
        );
        assert_eq!(one("depthwise * 2"), (ExprErrorKind::Type, 0, 9));
        assert_eq!(one("groups && depthwise"), (ExprErrorKind::Type, 0, 6));
        assert_eq!(one("stride == 1"), (ExprErrorKind::Type, 0, 11));
        assert_eq!(one("stride == (1, 1, 1)"), (ExprErrorKind::Type, 0, 19));
        assert_eq!(one("x == x"), (ExprErrorKind::Type, 0, 6));
        assert_eq!(one("-depthwise"), (ExprErrorKind::Type, 1, 10));
        let e = &errors("!groups")[0];
        assert_eq!(
            (e.span, e.help.as_deref()),
            (
                Span::new(1, 7),
                Some("to test an int, compare it: `n == 0`")
            )
        );
        assert_eq!(one("stride[true]"), (ExprErrorKind::Type, 7, 11));
        assert_eq!(one("groups[0]"), (ExprErrorKind::Type, 7, 8));
        let e = &errors("x[1]")[0];
        assert_eq!(
            e.help.as_deref(),
            Some("operand dims are indexed as `x.dim[i]`")
        );
        assert_eq!(
            one("(1, true)[groups]"),
            (ExprErrorKind::IndexOutOfRange, 10, 16)
        );
    }

    #[test]
    fn indices_are_proven_in_range() {
        let e = &errors("x.dim[4]")[0];
        assert_eq!(
            (e.kind, e.span),
            (ExprErrorKind::IndexOutOfRange, Span::new(6, 7))
        );
        assert_eq!(e.message, "index 4 is out of range for `x.dim` of length 4");
        assert_eq!(e.help.as_deref(), Some("valid indices are 0 to 3"));
        assert_eq!(one("stride[-1]"), (ExprErrorKind::IndexOutOfRange, 7, 9));
        assert_eq!(one("bias.dim[1]"), (ExprErrorKind::IndexOutOfRange, 9, 10));
        assert_eq!(one("()[0]"), (ExprErrorKind::IndexOutOfRange, 3, 4));
        // An index known only on a sample (`x.dim[axis]`) is checked when evaluated.
        assert_eq!(ty("x.dim[groups]"), Type::Int);
        let mut bindings = Bindings::new();
        bindings.insert("x", Value::operand(&[1, 2, 3, 4]));
        bindings.insert("groups", Value::Int(4));
        let e = eval(&parse("x.dim[groups]").unwrap(), &bindings).unwrap_err();
        assert_eq!(
            (e.kind, e.span),
            (ExprErrorKind::IndexOutOfRange, Span::new(6, 12))
        );
        // A tuple of mixed element types still needs a constant index.
        let e = &errors("(1, true)[groups]")[0];
        assert!(e.message.starts_with("cannot prove"), "{}", e.message);
        assert_eq!(
            one("x.dim[9223372036854775807 + 1]"),
            (ExprErrorKind::Overflow, 6, 29)
        );
    }

    #[test]
    fn calls_and_arity() {
        let e = &errors("divisible(groups)")[0];
        assert_eq!((e.kind, e.span), (ExprErrorKind::Arity, Span::new(0, 17)));
        assert_eq!(e.message, "`divisible` takes 2 arguments, but 1 given");
        assert_eq!(one("min(1)"), (ExprErrorKind::Arity, 0, 6));
        assert_eq!(one("max(1, true)"), (ExprErrorKind::Type, 7, 11));
        assert_eq!(one("min(a=1, b=2)"), (ExprErrorKind::Arity, 4, 5));
        let e = &errors("passthrough(x)")[0];
        assert_eq!(
            (e.kind, e.span),
            (ExprErrorKind::UnknownFunction, Span::new(0, 11))
        );
        let e = &errors("mn(1, 2)")[0];
        assert!(
            e.help
                .as_deref()
                .unwrap()
                .starts_with("did you mean `max`?")
                || e.help
                    .as_deref()
                    .unwrap()
                    .starts_with("did you mean `min`?")
        );
        assert_eq!(
            errors("groups(1)")[0].help.as_deref(),
            Some("`groups` is a value, not a function")
        );
    }

    #[test]
    fn caller_functions() {
        let mut scope = conv2d_scope();
        scope.insert_function(
            "out_size",
            FunctionSig::new(vec![Type::Int, Type::Int], Type::Int),
        );
        scope.insert_function("passthrough", FunctionSig::new(vec![Type::Any], Type::Any));
        let t = |src: &str| check(&parse(src).unwrap(), &scope);
        assert_eq!(t("out_size(x.dim[2], 3) + 1"), Ok(Type::Int));
        assert_eq!(t("passthrough(x)"), Ok(Type::Any));
        let e = t("out_size(1)").unwrap_err();
        assert_eq!(
            (e[0].kind, e[0].message.as_str()),
            (
                ExprErrorKind::Arity,
                "`out_size` takes 2 arguments, but 1 given"
            )
        );
        let e = t("out_size(1, depthwise)").unwrap_err();
        assert_eq!(
            (e[0].kind, e[0].span),
            (ExprErrorKind::Type, Span::new(12, 21))
        );
        let e = t("out_size(N=1, K=2)").unwrap_err();
        assert_eq!(
            (e[0].kind, e[0].span),
            (ExprErrorKind::Arity, Span::new(9, 10))
        );
        assert!(
            scope.function_names().contains(&"out_size") && scope.function_names().contains(&"min")
        );
        assert_eq!(scope.function("out_size").map(|s| s.params.len()), Some(2));
        assert!(scope.names().contains(&"groups"));
    }

    #[test]
    fn constants_are_evaluated_statically() {
        assert_eq!(one("groups / 0"), (ExprErrorKind::DivisionByZero, 9, 10));
        assert_eq!(
            one("groups % (1 - 1)"),
            (ExprErrorKind::DivisionByZero, 10, 15)
        );
        assert_eq!(
            one("groups + 9223372036854775807 * 2"),
            (ExprErrorKind::Overflow, 9, 32)
        );
        assert_eq!(one("1 / 0 == 1"), (ExprErrorKind::DivisionByZero, 4, 5));
        assert_eq!(ty("groups / (0 + 1)"), Type::Int);
    }

    #[test]
    fn hand_built_deep_trees_are_refused_not_overflowed() {
        let e = deep_negation(MAX_HEIGHT + 10);
        let errors = check(&e, &Scope::new()).unwrap_err();
        assert_eq!(errors[0].kind, ExprErrorKind::Budget);
    }
}
