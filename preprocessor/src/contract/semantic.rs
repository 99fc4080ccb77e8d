//! The contract's semantics, resolved: its own `semantics` pseudo-code, or its op kind's
//! standard semantics ([`crate::semantics::standard`]), parsed once and checked against the
//! contract's signature — its inputs with their ranks, its outputs with the ranks of their shape
//! rules, its op-param fields — for every dtype its inputs declare and every combination of
//! ranks its inputs and outputs can have (an input of `rank: any`, a reduction's output whose
//! rank follows `keepdim`): one checked program each. Problems are
//! diagnostics at the exact place in the pseudo-code (in the author's file, or in the standard
//! semantics chapter for an op kind's).

use super::raw::RawContract;
use crate::diag::{Code, Diagnostic};
use crate::expr::Span;
use crate::fast_hash::FastMap;
use crate::semantics::{self, SemanticsError, SemanticsErrorKind, SigTensor, Signature, ir};
use crate::source::SourceFile;
use fkc_provider::{DType, ParamKind};
use std::ops::Range;
use std::sync::Arc;

/// Where a contract's semantics come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Its own `semantics` field.
    Own,
    /// Its op kind's standard semantics.
    Standard(String),
}

/// A contract's semantics, checked.
#[derive(Debug, Clone)]
pub struct Semantics {
    pub text: String,
    pub origin: Origin,
    /// The signature at the first combination of ranks (names, optionality and dtypes are the
    /// same at every one).
    pub signature: Signature,
    /// The checked program for each dtype some input declares and each combination of ranks.
    pub programs: Vec<Checked>,
    /// Where the text sits in the author's file (its own semantics).
    map: TextMap,
}

/// One checked program: for a dtype, with the signature's tensors (inputs, then outputs) of
/// these ranks (shared by every contract whose pseudo-code and signature are the same:
/// [`checked`]).
#[derive(Debug, Clone)]
pub struct Checked {
    pub dtype: DType,
    pub ranks: Vec<usize>,
    pub program: Arc<ir::Program>,
}

/// The most combinations of ranks a contract's semantics are checked at (per dtype).
/// Three inputs of `rank: any` (ranks 0 to 8: 729 combinations, an elementwise `where` or
/// `clamp`) fit; four do not.
pub const MAX_RANK_COMBINATIONS: usize = 1024;

/// The contract's outputs, by name, and every combination of ranks the signature's tensors can
/// have (inputs, then outputs) — `None` when there are more than [`MAX_RANK_COMBINATIONS`].
#[derive(Debug, Clone)]
pub struct Shapes {
    pub outputs: Vec<String>,
    pub combinations: Option<Vec<Vec<usize>>>,
}

impl Semantics {
    /// The checked program for `dtype` with the signature's tensors of `ranks` (inputs, then
    /// outputs; `None` for an absent input, whose rank does not matter), when the contract
    /// declares them.
    pub fn program(&self, dtype: DType, ranks: &[Option<usize>]) -> Option<&ir::Program> {
        let fits = |checked: &&Checked| {
            checked.dtype == dtype
                && checked.ranks.len() == ranks.len()
                && (checked.ranks.iter().zip(ranks)).all(|(r, want)| want.is_none_or(|w| w == *r))
        };
        self.programs.iter().find(fits).map(|c| c.program.as_ref())
    }

    /// The checked program for `dtype` at the highest ranks (the last combination), where
    /// every whole index has components: for what every program shares (its tensors' names
    /// and origins, the functions it calls, how it stores).
    pub fn widest_program(&self, dtype: DType) -> Option<&ir::Program> {
        let checked = self.programs.iter().rfind(|c| c.dtype == dtype);
        checked.map(|c| c.program.as_ref())
    }

    /// A diagnostic for an error of the semantics (parse, check or run), located in the
    /// author's file for the contract's own semantics, and at `op_kind` (with the line of the
    /// standard semantics quoted) for an op kind's.
    pub fn diagnostic(
        &self,
        error: &SemanticsError,
        raw: &RawContract,
        source: &Arc<SourceFile>,
    ) -> Diagnostic {
        diagnostic(error, &self.text, &self.origin, &self.map, raw, source)
    }
}

/// Where each line of a text is in the file: (offset in the text, offset in the file).
#[derive(Debug, Clone, Default)]
struct TextMap {
    lines: Vec<(usize, usize)>,
    /// The whole field, when the lines could not be found.
    fallback: Range<usize>,
}

impl TextMap {
    /// Finds each line of `text` at the end of a line of the file after `span.start` (a block
    /// scalar's lines are indented, perhaps inside a block quote), or the whole of a one-line
    /// scalar.
    fn of(file: &str, span: &Range<usize>, text: &str) -> TextMap {
        let fallback = span.clone();
        let written = file.get(span.clone()).unwrap_or("");
        let quote = usize::from(written.starts_with('"') || written.starts_with('\''));
        if !text.contains('\n') && written.get(quote..).is_some_and(|w| w.starts_with(text)) {
            return TextMap {
                lines: vec![(0, span.start + quote)],
                fallback,
            };
        }
        let mut lines = Vec::new();
        // From the line the field's value starts on (a `|` or `>` indicator line matches no
        // line of the text).
        let line_start = file
            .get(..span.start.min(file.len()))
            .and_then(|before| before.rfind('\n'))
            .map_or(0, |newline| newline + 1);
        let mut file_lines = file
            .get(line_start..)
            .unwrap_or("")
            .split_inclusive('\n')
            .scan(line_start, |at, line| {
                let start = *at;
                *at += line.len();
                Some((start, line))
            });
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let content = line.trim_end_matches('\n');
            if !content.trim().is_empty() {
                let found = file_lines
                    .by_ref()
                    .find(|(_, l)| l.trim_end_matches(['\n', '\r']).ends_with(content));
                let Some((start, file_line)) = found else {
                    return TextMap {
                        lines: Vec::new(),
                        fallback,
                    };
                };
                let end = file_line.trim_end_matches(['\n', '\r']).len();
                lines.push((at, start + end - content.len()));
            }
            at += line.len();
        }
        TextMap { lines, fallback }
    }

    /// The file span of a span of the text.
    fn file_span(&self, span: Span) -> Range<usize> {
        let index = self.lines.partition_point(|(text, _)| *text <= span.start);
        match index.checked_sub(1).and_then(|i| self.lines.get(i)) {
            Some(&(text, file)) => {
                let start = file + (span.start - text);
                start..start + span.len().max(1)
            }
            None => self.fallback.clone(),
        }
    }
}

/// The contract's signature, as the semantics see it, with its inputs and then its outputs
/// of `ranks` (`standard`: an op kind's semantics, which may name optional inputs the contract
/// does not declare).
fn signature(raw: &RawContract, outputs: &[String], ranks: &[usize], standard: bool) -> Signature {
    let mut ranks = ranks.iter().copied();
    let inputs = raw
        .inputs
        .iter()
        .map(|input| SigTensor {
            name: input.name.value.clone(),
            rank: ranks.next().unwrap_or(0),
            optional: input.is_optional(),
            dtype: input.dtype.as_ref().map(|d| d.value),
        })
        .collect();
    let outputs = outputs
        .iter()
        .map(|output| SigTensor {
            name: output.clone(),
            rank: ranks.next().unwrap_or(0),
            optional: false,
            dtype: None,
        })
        .collect();
    let params = raw
        .op_params
        .iter()
        .flat_map(|p| &p.fields)
        .filter_map(|field| {
            let form = match ParamKind::parse(&field.kind.value)? {
                ParamKind::Usize | ParamKind::I64 => ir::ParamForm::Int,
                ParamKind::UsizePair => ir::ParamForm::Tuple(2),
                ParamKind::UsizeArray4 => ir::ParamForm::Tuple(4),
                ParamKind::UsizeList | ParamKind::I64List => ir::ParamForm::List,
                ParamKind::F32 | ParamKind::F64 => ir::ParamForm::Float,
                ParamKind::Bool => ir::ParamForm::Bool,
                ParamKind::Enum => ir::ParamForm::Enum(
                    field.values.iter().map(|v| v.value.clone()).collect(),
                ),
            };
            Some(ir::Param {
                name: field.name.value.clone(),
                form,
            })
        })
        .collect();
    Signature {
        inputs,
        outputs,
        params,
        undeclared_absent: standard,
    }
}

/// Resolves a contract's semantics (its own, or its op kind's standard ones) against its
/// outputs and the ranks its tensors can have; `None` when it has neither, or they do not
/// check (the diagnostics say why).
pub fn resolve(
    raw: &RawContract,
    shapes: &Shapes,
    source: &Arc<SourceFile>,
) -> (Option<Arc<Semantics>>, Vec<Diagnostic>) {
    let outputs = shapes.outputs.as_slice();
    let (text, origin, map) = match &raw.semantics {
        Some(own) => (
            own.value.clone(),
            Origin::Own,
            TextMap::of(&source.text, &own.span, &own.value),
        ),
        None => {
            let Some(kind) = raw.op_kind.as_ref().map(|k| k.value.as_str()) else {
                return (None, Vec::new());
            };
            let Some(standard) = semantics::standard::of(kind) else {
                return (None, Vec::new());
            };
            (
                standard.text.clone(),
                Origin::Standard(kind.to_owned()),
                TextMap::default(),
            )
        }
    };
    let report = |error: &SemanticsError| diagnostic(error, &text, &origin, &map, raw, source);
    let ast = match semantics::parse(&text) {
        Ok(ast) => ast,
        Err(error) => return (None, vec![report(&error)]),
    };
    let standard = matches!(origin, Origin::Standard(_));
    let Some(combinations) = &shapes.combinations else {
        return (None, vec![too_many_ranks(raw, source)]);
    };
    // Every dtype some input declares: the gate runs each of them.
    let mut dtypes: Vec<DType> = Vec::new();
    for dtype in raw.inputs.iter().flat_map(|i| &i.dtypes) {
        if !dtypes.contains(&dtype.value) {
            dtypes.push(dtype.value);
        }
    }
    if dtypes.is_empty() {
        dtypes.push(DType::F32);
    }
    let mut programs = Vec::new();
    for dtype in dtypes {
        for ranks in combinations {
            let signature = signature(raw, outputs, ranks, standard);
            match checked(&ast, &text, &signature, dtype) {
                Ok(program) => programs.push(Checked {
                    dtype,
                    ranks: ranks.clone(),
                    program,
                }),
                Err(errors) => {
                    let mut problems: Vec<Diagnostic> = match &origin {
                        Origin::Own => errors.iter().map(report).collect(),
                        Origin::Standard(kind) => misfit(kind, &errors, raw, source),
                    };
                    if combinations.len() > 1 {
                        let at = ranks_note(&signature);
                        problems.iter_mut().for_each(|p| p.notes.push(at.clone()));
                    }
                    return (None, problems);
                }
            }
        }
    }
    let first = combinations.first().map_or(&[][..], Vec::as_slice);
    let signature = signature(raw, outputs, first, standard);
    let resolved = Semantics {
        text,
        origin,
        signature,
        programs,
        map,
    };
    (Some(Arc::new(resolved)), Vec::new())
}

/// The programs checked so far in this process, by what decides them: the pseudo-code, the
/// signature and `T` (a book's contracts of one op kind share its standard semantics, checked
/// and kept once; their lowered forms too, which depend on nothing else). Bounded: a book of
/// more distinct programs starts the memo again.
static CHECKED: std::sync::Mutex<Option<FastMap<String, Arc<ir::Program>>>> =
    std::sync::Mutex::new(None);
const MAX_CHECKED: usize = 512;

/// `ast` (parsed from `text`) checked against `signature` with `T` = `dtype`, from the memo
/// when the same was checked before (errors are never kept: each contract reports its own).
fn checked(
    ast: &semantics::ast::Program,
    text: &str,
    signature: &Signature,
    dtype: DType,
) -> Result<Arc<ir::Program>, Vec<SemanticsError>> {
    let key = format!("{dtype:?}\u{0}{signature:?}\u{0}{text}");
    let found = (CHECKED.lock().ok()).and_then(|memo| memo.as_ref()?.get(&key).cloned());
    if let Some(program) = found {
        return Ok(program);
    }
    let program = Arc::new(semantics::check(ast, signature, dtype)?);
    if let Ok(mut memo) = CHECKED.lock() {
        let memo = memo.get_or_insert_with(FastMap::default);
        if memo.len() >= MAX_CHECKED {
            memo.clear();
        }
        memo.insert(key, Arc::clone(&program));
    }
    Ok(program)
}

/// Which ranks a check failed at: `checked with x of rank 2, out of rank 0`.
fn ranks_note(signature: &Signature) -> String {
    let tensors = signature.inputs.iter().chain(&signature.outputs);
    let ranks: Vec<String> = tensors
        .map(|t| format!("`{}` of rank {}", t.name, t.rank))
        .collect();
    format!("checked with {}", ranks.join(", "))
}

/// More combinations of ranks than the semantics are checked at.
fn too_many_ranks(raw: &RawContract, source: &Arc<SourceFile>) -> Diagnostic {
    let span = raw.semantics.as_ref().map_or(raw.kernel.span.clone(), |s| s.span.clone());
    Diagnostic::error(
        Code::SemanticsBudget,
        source,
        span,
        format!(
            "the inputs' and outputs' ranks combine in more than {MAX_RANK_COMBINATIONS} ways; the semantics are checked at each"
        ),
    )
    .with_help("narrow the inputs' `rank` ranges (`rank: { min: 1, max: 3 }` instead of `any`)")
}

/// An op kind's standard semantics that do not fit a contract (which declares other inputs or
/// fields): not an error of the contract — the importer says what differs from the carrier —
/// but its values go unchecked, which a note says (and `check --deny unchecked` refuses).
fn misfit(
    kind: &str,
    errors: &[SemanticsError],
    raw: &RawContract,
    source: &Arc<SourceFile>,
) -> Vec<Diagnostic> {
    let span = raw
        .op_kind
        .as_ref()
        .map_or(raw.kernel.span.clone(), |k| k.span.clone());
    let first = errors.first().map_or(String::new(), |e| e.message.clone());
    vec![
        Diagnostic::note(
            Code::NoSemantics,
            source,
            span,
            format!(
                "values unchecked: the standard semantics of `{kind}` do not fit this contract ({first})"
            ),
        )
        .with_help(format!(
            "declare the inputs and op-param fields `{kind}`'s semantics name, or give the contract `semantics` of its own"
        )),
    ]
}

fn code(kind: SemanticsErrorKind) -> Code {
    match kind {
        SemanticsErrorKind::Syntax => Code::SemanticsSyntax,
        SemanticsErrorKind::UnknownName => Code::SemanticsName,
        SemanticsErrorKind::Type => Code::SemanticsType,
        SemanticsErrorKind::Run => Code::SemanticsRun,
        SemanticsErrorKind::Budget => Code::SemanticsBudget,
    }
}

fn diagnostic(
    error: &SemanticsError,
    text: &str,
    origin: &Origin,
    map: &TextMap,
    raw: &RawContract,
    source: &Arc<SourceFile>,
) -> Diagnostic {
    let (span, message, line) = match origin {
        Origin::Own => (map.file_span(error.span), error.message.clone(), None),
        Origin::Standard(kind) => {
            let span = raw
                .op_kind
                .as_ref()
                .map_or(raw.kernel.span.clone(), |k| k.span.clone());
            let line = text
                .get(..error.span.start.min(text.len()))
                .map_or(0, |before| before.matches('\n').count());
            let quoted = text.lines().nth(line).unwrap_or("").trim();
            (
                span,
                format!("in the standard semantics of `{kind}`: {}", error.message),
                Some(format!(
                    "{}, line {}: `{quoted}`",
                    semantics::standard::CHAPTER_PATH,
                    line + 1
                )),
            )
        }
    };
    let mut diagnostic = Diagnostic::error(code(error.kind), source, span, message);
    diagnostic.notes.extend(line);
    if let Some(help) = &error.help {
        diagnostic.help.push(help.clone());
    }
    if matches!(origin, Origin::Standard(_)) && error.kind != SemanticsErrorKind::Run {
        diagnostic.help.push(
            "the contract's inputs, outputs and op-param fields must be the ones its op kind's semantics name, or the contract gives `semantics` of its own".to_owned(),
        );
    }
    diagnostic
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_block_scalar_maps_back_to_its_lines_in_the_file() {
        let file = "x:\n  semantics: |\n    for i in out:\n      out[i] = x[i]\n";
        let start = file.find('|').unwrap();
        let text = "for i in out:\n  out[i] = x[i]\n";
        let map = TextMap::of(file, &(start..file.len()), text);
        let at = text.find("x[i]").unwrap();
        let span = map.file_span(Span::new(at, at + 4));
        assert_eq!(&file[span], "x[i]");
        let quoted = "k: \"out[0] = 1\"\n";
        let map = TextMap::of(quoted, &(3..quoted.len() - 1), "out[0] = 1");
        assert_eq!(&quoted[map.file_span(Span::new(9, 10))], "1");
    }

    #[test]
    fn the_same_pseudo_code_and_signature_are_checked_once_and_shared() {
        let text = "for i in out:\n  out[i] = x[i]\n";
        let ast = semantics::parse(text).unwrap();
        let tensor = |name: &str| SigTensor {
            name: name.to_owned(),
            rank: 1,
            optional: false,
            dtype: None,
        };
        let signature = Signature {
            inputs: vec![tensor("x")],
            outputs: vec![tensor("out")],
            ..Signature::default()
        };
        let first = checked(&ast, text, &signature, DType::F32).unwrap();
        let again = checked(&ast, text, &signature, DType::F32).unwrap();
        let other = checked(&ast, text, &signature, DType::F64).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert!(!Arc::ptr_eq(&first, &other));
        let wrong = Signature {
            inputs: vec![tensor("y")],
            ..signature
        };
        assert!(checked(&ast, text, &wrong, DType::F32).is_err());
    }
}
