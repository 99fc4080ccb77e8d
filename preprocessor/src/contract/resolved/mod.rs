//! The resolved contract: every expression of a contract parsed and type-checked against the
//! names the contract declares (op-param fields, operands with their ranks, outputs,
//! `dtype_bytes`, named predicates), with the rule-level forms (`same_as=`, `passthrough`,
//! `conv2d(params)`, `from_params(…)`) interpreted. Errors point at the column inside the
//! expression, in the author's file.

use super::raw::{Rank, RawContract};
use super::schema::Located;
use crate::diag::{Code, Diagnostic};
use crate::expr::{self, BinOp, Expr, ExprError, ExprErrorKind, ExprKind, Scope, Type};
use crate::source::SourceFile;
use fkc_provider::{DType, ParamKind};
use std::ops::RangeInclusive;
use std::sync::Arc;

mod output_rules;
mod ranks;
mod same_as;

/// A parsed, type-checked expression with the text it came from.
#[derive(Debug, Clone)]
pub struct ResolvedExpr {
    pub source: Located<String>,
    pub expr: Expr,
}

/// How an output's shape is computed.
#[derive(Debug, Clone)]
pub enum ShapeRule {
    /// `conv2d(params)`: the OpParams::Conv2D geometry.
    Conv2d,
    /// `conv_transpose2d(params)`: the OpParams::ConvTranspose2D geometry.
    ConvTranspose2d,
    /// `from_params(N=…, C=…, …)`: one integer expression per dimension.
    FromParams(Vec<(String, Expr)>),
    /// `broadcast(a, b, …)`: NumPy's broadcast of these inputs' shapes (trailing axes aligned,
    /// each pair equal or one of them 1), of the largest of their ranks.
    Broadcast { inputs: Vec<String> },
    /// `reduce(x, axes, keepdim)`: `x`'s shape with the axes the list parameter `axes` names
    /// (negative from the end) removed, or kept as 1 where `keepdim` holds: a rank that
    /// follows the parameters.
    Reduce {
        input: String,
        axes: String,
        keepdim: Keep,
    },
    /// `permuted(x, perm)`: `x`'s shape with its axes permuted, `out.dim[k] = x.dim[perm[k]]`.
    Permute { input: String, perm: String },
}

/// Whether a reduction keeps its reduced axes: a boolean parameter's value, or fixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    Param(String),
    Fixed(bool),
}

impl ShapeRule {
    /// The ranks the output can have when each input has the rank `rank_of` gives.
    pub fn ranks(&self, rank_of: impl Fn(&str) -> usize) -> RangeInclusive<usize> {
        match self {
            ShapeRule::Conv2d | ShapeRule::ConvTranspose2d => 4..=4,
            ShapeRule::FromParams(dims) => dims.len()..=dims.len(),
            ShapeRule::Broadcast { inputs } => {
                let rank = inputs.iter().map(|i| rank_of(i)).max().unwrap_or(0);
                rank..=rank
            }
            ShapeRule::Reduce { input, keepdim, .. } => {
                let rank = rank_of(input);
                match keepdim {
                    Keep::Fixed(true) => rank..=rank,
                    _ => 0..=rank,
                }
            }
            ShapeRule::Permute { input, .. } => rank_of(input)..=rank_of(input),
        }
    }

    /// Whether the rule is defined only on valid operands — shapes that broadcast, distinct
    /// axes, a permutation — which the contract's constraints must then require.
    pub fn is_partial(&self) -> bool {
        matches!(
            self,
            ShapeRule::Broadcast { .. } | ShapeRule::Reduce { .. } | ShapeRule::Permute { .. }
        )
    }

    /// The ranks the output can have over every rank the contract's inputs declare.
    pub fn declared_ranks(&self, raw: &RawContract) -> RangeInclusive<usize> {
        let declared = |name: &str| {
            let input = raw.inputs.iter().find(|i| i.name.value == name);
            input
                .and_then(|i| i.rank.as_ref())
                .map_or(Rank::fixed(0), |r| r.value)
        };
        let low = self.ranks(|name| declared(name).min);
        let high = self.ranks(|name| declared(name).max);
        *low.start().min(high.start())..=*low.end().max(high.end())
    }
}

/// One output's resolved rules.
#[derive(Debug, Clone)]
pub struct ResolvedOutput {
    pub name: String,
    /// The input whose dtype the output takes (`passthrough(x)`).
    pub dtype_from: Option<String>,
    pub shape: Option<ShapeRule>,
}

/// The carriers whose shape functions the format defines (`conv2d(params)`,
/// `conv_transpose2d(params)`), plus `Contiguize`, whose shape is its operand's.
pub const SHAPE_FUNCTION_CARRIERS: &[&str] = &["Conv2D", "ConvTranspose2D", "Contiguize"];

/// Named predicates the language offers, defined in the language itself. A predicate is in
/// scope when its definition type-checks against the contract's names.
pub const PREDICATES: &[(&str, &str)] = &[("depthwise", "groups == x.dim[1]")];

/// Every expression of a contract, resolved.
#[derive(Debug, Clone, Default)]
pub struct Contract {
    /// (input name, constraint) — `same_as=` desugared to `NAME.dim[0] == EXPR`. A constraint
    /// joined by top-level `&&` is one entry per part (each with its own text and location), so
    /// the gate breaks, and locates, each part alone.
    pub input_constraints: Vec<(String, ResolvedExpr)>,
    /// (op-param name, constraint), split at top-level `&&` the same way.
    pub param_constraints: Vec<(String, ResolvedExpr)>,
    pub outputs: Vec<ResolvedOutput>,
    /// (formula name, expression) for flops, bytes_moved, overhead_ns and memory.*.
    pub formulas: Vec<(String, ResolvedExpr)>,
    pub fast_paths: Vec<ResolvedExpr>,
    /// (input name, smallest, largest) element value an input's `values` admits.
    pub value_bounds: Vec<(String, ResolvedExpr, ResolvedExpr)>,
    /// (predicate name, definition) for the predicates in scope.
    pub predicates: Vec<(String, Expr)>,
    /// Every root name the expressions may use, each with its slot; every expression above
    /// has its names resolved to these slots.
    pub slots: Arc<expr::Slots>,
    /// What the kernel computes: the contract's `semantics`, or its op kind's standard ones.
    pub semantics: Option<Arc<super::semantic::Semantics>>,
}

impl Contract {
    /// Resolves every expression's names to slots of a table of `names`, once.
    fn resolve_slots<'n>(&mut self, names: impl IntoIterator<Item = &'n str>) {
        let slots = expr::Slots::new(names);
        let constraints = self.input_constraints.iter_mut();
        let constraints = constraints.chain(self.param_constraints.iter_mut());
        let formulas = self.formulas.iter_mut().map(|(_, f)| &mut f.expr);
        let shapes = self
            .outputs
            .iter_mut()
            .flat_map(|output| match &mut output.shape {
                Some(ShapeRule::FromParams(dims)) => dims.iter_mut().map(|(_, e)| e).collect(),
                _ => Vec::new(),
            });
        constraints
            .map(|(_, c)| &mut c.expr)
            .chain(formulas)
            .chain(self.fast_paths.iter_mut().map(|p| &mut p.expr))
            .chain(
                self.value_bounds
                    .iter_mut()
                    .flat_map(|(_, min, max)| [&mut min.expr, &mut max.expr]),
            )
            .chain(self.predicates.iter_mut().map(|(_, d)| d))
            .chain(shapes)
            .for_each(|e| slots.resolve(e));
        self.slots = slots;
    }
}

/// Resolves every expression of a contract.
pub fn resolve_expressions(
    raw: &RawContract,
    source: &Arc<SourceFile>,
) -> (Contract, Vec<Diagnostic>) {
    let mut resolver = Resolver {
        source,
        diagnostics: Vec::new(),
        scope: base_scope(raw),
    };
    let mut contract = Contract::default();
    resolver.duplicate_names(raw);
    resolver.add_predicates(&mut contract);
    contract.outputs = raw
        .outputs
        .iter()
        .map(|output| resolver.output(raw, output))
        .collect();
    for output in &contract.outputs {
        let ranks = output
            .shape
            .as_ref()
            .map_or(4..=4, |shape| shape.declared_ranks(raw));
        let ty = operand_type(*ranks.start(), *ranks.end());
        resolver.scope.insert(output.name.clone(), ty);
    }
    for input in &raw.inputs {
        if let Some(constraint) = &input.shape_constraint
            && let Some(resolved) = resolver.input_constraint(input, constraint)
        {
            for part in resolver.conjuncts(resolved) {
                contract
                    .input_constraints
                    .push((input.name.value.clone(), part));
            }
        }
    }
    for field in raw.op_params.iter().flat_map(|p| &p.fields) {
        if let Some(constraint) = &field.constraint
            && let Some(resolved) = resolver.typed(constraint, Type::Bool, "a constraint")
        {
            for part in resolver.conjuncts(resolved) {
                contract
                    .param_constraints
                    .push((field.name.value.clone(), part));
            }
        }
    }
    resolver.formulas(raw, &mut contract);
    for path in raw.caps.iter().flat_map(|c| &c.fast_paths) {
        contract
            .fast_paths
            .extend(resolver.typed(&path.when, Type::Bool, "a fast path's `when`"));
    }
    for input in &raw.inputs {
        if let Some(values) = &input.values
            && let Some(min) = resolver.typed(&values.min, Type::Int, "`values.min`")
            && let Some(max) = resolver.typed(&values.max, Type::Int, "`values.max`")
        {
            contract
                .value_bounds
                .push((input.name.value.clone(), min, max));
        }
    }
    contract.resolve_slots(resolver.scope.names());
    let shapes = super::semantic::Shapes {
        outputs: contract.outputs.iter().map(|o| o.name.clone()).collect(),
        combinations: ranks::rank_combinations(raw, &contract.outputs),
    };
    let (semantics, problems) = super::semantic::resolve(raw, &shapes, source);
    contract.semantics = semantics;
    resolver.diagnostics.extend(problems);
    (contract, resolver.diagnostics)
}

fn param_type(kind: &str) -> Type {
    match ParamKind::parse(kind) {
        Some(ParamKind::Usize) => Type::Int,
        Some(ParamKind::UsizePair) => Type::ints(2),
        Some(ParamKind::UsizeArray4) => Type::ints(4),
        Some(ParamKind::I64) => Type::Int,
        Some(ParamKind::F32 | ParamKind::F64) => Type::Float,
        Some(ParamKind::Bool) => Type::Bool,
        Some(ParamKind::Enum) => Type::Text,
        Some(ParamKind::UsizeList | ParamKind::I64List) => Type::List(Box::new(Type::Int)),
        None => Type::Any,
    }
}

/// An operand of one rank (its `dim` a tuple of that length), or of several (its `dim` a list,
/// each `x.dim[k]` checked on the sample).
fn operand_type(min: usize, max: usize) -> Type {
    if min == max {
        Type::operand(min)
    } else {
        Type::operand_of_any_rank()
    }
}

fn base_scope(raw: &RawContract) -> Scope {
    let mut scope = Scope::new();
    scope.insert("dtype_bytes", Type::Int);
    for input in &raw.inputs {
        // Without a readable rank the operand's dimensions are unknown: any index is accepted
        // here (the rank's own diagnostic says what is wrong), so errors do not cascade.
        let ty = match &input.rank {
            Some(rank) => operand_type(rank.value.min, rank.value.max),
            None => Type::Any,
        };
        scope.insert(input.name.value.clone(), ty);
    }
    for field in raw.op_params.iter().flat_map(|p| &p.fields) {
        scope.insert(field.name.value.clone(), param_type(&field.kind.value));
    }
    scope
}

struct Resolver<'a> {
    source: &'a Arc<SourceFile>,
    diagnostics: Vec<Diagnostic>,
    scope: Scope,
}

impl Resolver<'_> {
    /// Inputs and outputs share one namespace (expressions name them); each name once.
    fn duplicate_names(&mut self, raw: &RawContract) {
        let names = raw
            .inputs
            .iter()
            .map(|i| &i.name)
            .chain(raw.outputs.iter().map(|o| &o.name));
        let mut seen: Vec<&Located<String>> = Vec::new();
        for name in names {
            if let Some(first) = seen.iter().find(|s| s.value == name.value) {
                let diagnostic = Diagnostic::error(
                    Code::DuplicateName,
                    self.source,
                    name.span.clone(),
                    format!("`{}` is declared twice", name.value),
                )
                .with_secondary(first.span.clone(), "first declared here")
                .with_help("give each input and output its own name");
                self.diagnostics.push(diagnostic);
            } else {
                seen.push(name);
            }
        }
        for input in &raw.inputs {
            self.duplicate_dtypes(&input.name.value, &input.dtypes);
        }
    }

    /// An input lists each dtype once: a repeated one is a slip (a dtype meant and not
    /// written, most often), and the gate would run it twice.
    fn duplicate_dtypes(&mut self, input: &str, dtypes: &[Located<DType>]) {
        for (index, dtype) in dtypes.iter().enumerate() {
            let earlier = dtypes.iter().take(index);
            if let Some(first) = earlier.into_iter().find(|d| d.value == dtype.value) {
                let diagnostic = Diagnostic::error(
                    Code::DuplicateName,
                    self.source,
                    dtype.span.clone(),
                    format!("`{}` is listed twice in `{input}`'s dtypes", dtype.value.name()),
                )
                .with_secondary(first.span.clone(), "first listed here")
                .with_help("list each dtype the kernel accepts once");
                self.diagnostics.push(diagnostic);
            }
        }
    }

    fn add_predicates(&mut self, contract: &mut Contract) {
        for (name, definition) in PREDICATES {
            if let Ok(expr) = expr::parse(definition)
                && expr::check(&expr, &self.scope) == Ok(Type::Bool)
            {
                contract.predicates.push(((*name).to_owned(), expr));
            }
        }
        for (name, _) in &contract.predicates {
            self.scope.insert(name.clone(), Type::Bool);
        }
    }

    /// Parses `text[offset..]` of a located value; errors are located in the file.
    fn parse_at(&mut self, located: &Located<String>, offset: usize) -> Option<Expr> {
        let text = located.value.get(offset..).unwrap_or("");
        match expr::parse(text) {
            Ok(expr) => Some(expr),
            Err(error) => {
                self.report(located, offset, &error);
                None
            }
        }
    }

    /// Parses and checks an expression that must have type `expected`.
    fn typed(
        &mut self,
        located: &Located<String>,
        expected: Type,
        what: &str,
    ) -> Option<ResolvedExpr> {
        let expr = self.parse_at(located, 0)?;
        self.check(located, 0, &expr, expected, what)?;
        if expr.names().is_empty()
            && let Err(error) = expr::eval(&expr, &expr::Bindings::new())
        {
            // A constant expression is evaluated now, so `1 / 0` fails at import.
            self.report(located, 0, &error);
            return None;
        }
        Some(ResolvedExpr {
            source: located.clone(),
            expr,
        })
    }

    fn check(
        &mut self,
        located: &Located<String>,
        offset: usize,
        expr: &Expr,
        expected: Type,
        what: &str,
    ) -> Option<()> {
        match expr::check(expr, &self.scope) {
            Ok(found) if found == expected || found == Type::Any => Some(()),
            Ok(found) => {
                let error = ExprError {
                    span: expr.span,
                    kind: ExprErrorKind::Type,
                    message: format!(
                        "{what} must be {}, but this is {}",
                        type_words(&expected),
                        type_words(&found)
                    ),
                    help: Some(match expected {
                        Type::Bool => {
                            "compare it: `… == …`, `… > 0`, or `divisible(a, b)`".to_owned()
                        }
                        _ => "a formula computes an integer".to_owned(),
                    }),
                };
                self.report(located, offset, &error);
                None
            }
            Err(errors) => {
                for error in &errors {
                    self.report(located, offset, error);
                }
                None
            }
        }
    }

    fn formulas(&mut self, raw: &RawContract, contract: &mut Contract) {
        let Some(cost) = &raw.cost else { return };
        let mut all = vec![
            ("flops", &cost.flops),
            ("bytes_moved", &cost.bytes_moved),
            ("overhead_ns", &cost.overhead_ns),
        ];
        if let Some(memory) = &cost.memory {
            all.extend([
                ("memory.device_bytes", &memory.device_bytes),
                ("memory.host_bytes", &memory.host_bytes),
                ("memory.disk_bytes", &memory.disk_bytes),
            ]);
        }
        for (name, value) in all {
            let Some(located) = value else { continue };
            let Some(text) = &located.value else { continue };
            let text = Located {
                value: text.clone(),
                span: located.span.clone(),
                comment: located.comment.clone(),
            };
            if let Some(resolved) = self.typed(&text, Type::Int, &format!("`{name}`")) {
                contract.formulas.push((name.to_owned(), resolved));
            }
        }
    }

    /// The file span of `[start, end)` bytes of an expression written at `offset` in a value.
    /// The top-level `&&` parts of a constraint, each with its own text and file location; the
    /// constraint itself when it is no conjunction (or was desugared, like `same_as=`).
    fn conjuncts(&self, resolved: ResolvedExpr) -> Vec<ResolvedExpr> {
        let mut parts = Vec::new();
        collect_conjuncts(&resolved.expr, &mut parts);
        let texts: Option<Vec<String>> = parts
            .iter()
            .map(|part| {
                resolved
                    .source
                    .value
                    .get(part.span.start..part.span.end)
                    .map(str::to_owned)
            })
            .collect();
        match texts {
            Some(texts) if parts.len() > 1 => parts
                .iter()
                .zip(texts)
                .map(|(part, text)| ResolvedExpr {
                    source: Located {
                        span: self.value_span(&resolved.source, part.span.start, part.span.end),
                        value: text,
                        comment: resolved.source.comment.clone(),
                    },
                    expr: (*part).clone(),
                })
                .collect(),
            _ => vec![resolved],
        }
    }

    fn value_span(
        &self,
        located: &Located<String>,
        start: usize,
        end: usize,
    ) -> std::ops::Range<usize> {
        let written = self.source.slice(located.span.clone());
        let quote = usize::from(written.starts_with('"') || written.starts_with('\''));
        let inner_start = located.span.start + quote;
        let exact = self
            .source
            .slice(inner_start..inner_start + located.value.len())
            == located.value;
        if exact {
            (inner_start + start)..(inner_start + end.max(start))
        } else {
            located.span.clone()
        }
    }

    fn report(&mut self, located: &Located<String>, offset: usize, error: &ExprError) {
        let code = match error.kind {
            ExprErrorKind::Syntax => Code::ExprSyntax,
            ExprErrorKind::Budget => Code::ExprBudget,
            ExprErrorKind::UnknownName | ExprErrorKind::UnknownFunction => Code::ExprUnknownName,
            ExprErrorKind::Type | ExprErrorKind::Arity => Code::ExprType,
            ExprErrorKind::IndexOutOfRange => Code::ExprIndex,
            ExprErrorKind::Overflow | ExprErrorKind::DivisionByZero => Code::ExprArithmetic,
            ExprErrorKind::Function => Code::BadRule,
        };
        self.report_code(located, offset, error, code);
    }

    fn report_code(
        &mut self,
        located: &Located<String>,
        offset: usize,
        error: &ExprError,
        code: Code,
    ) {
        let span = self.value_span(located, offset + error.span.start, offset + error.span.end);
        let mut diagnostic = Diagnostic::error(code, self.source, span, error.message.clone())
            .with_label(format!("in `{}`", shorten(&located.value)));
        if let Some(help) = &error.help {
            diagnostic.help.push(help.clone());
        }
        self.diagnostics.push(diagnostic);
    }
}

/// Pushes the operands of every top-level `&&` of `expr`, left to right.
fn collect_conjuncts<'e>(expr: &'e Expr, parts: &mut Vec<&'e Expr>) {
    match &expr.kind {
        ExprKind::Binary {
            op: BinOp::And,
            lhs,
            rhs,
            ..
        } => {
            collect_conjuncts(lhs, parts);
            collect_conjuncts(rhs, parts);
        }
        _ => parts.push(expr),
    }
}

fn type_words(ty: &Type) -> &'static str {
    match ty {
        Type::Int => "an integer",
        Type::Float => "a number",
        Type::Text => "a name",
        Type::List(_) => "a list",
        Type::Bool => "a boolean",
        Type::Tuple(_) => "a tuple",
        Type::Record(_) => "an operand",
        Type::Any => "a value",
    }
}

fn shorten(text: &str) -> String {
    const LIMIT: usize = 60;
    if text.chars().count() <= LIMIT {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(LIMIT).collect::<String>())
    }
}
