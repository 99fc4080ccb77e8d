//! The catalogue of diagnostic codes. Codes are stable: a code is never reused for another
//! meaning. Each has a one-line title and a long explanation (`mdbook-fkc explain FKCnnnn`); the
//! book's diagnostics index shows a contract that triggers each one.

macro_rules! codes {
    ($( $variant:ident = $code:literal, $title:literal, $explanation:literal; )*) => {
        /// A stable diagnostic code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code { $( $variant, )* }

        impl Code {
            /// Every code, in catalogue order.
            pub const ALL: &'static [Code] = &[ $( Code::$variant, )* ];

            /// The code as written: `FKC0104`.
            pub fn as_str(self) -> &'static str {
                match self { $( Code::$variant => $code, )* }
            }

            /// A one-line title.
            pub fn title(self) -> &'static str {
                match self { $( Code::$variant => $title, )* }
            }

            /// The long explanation shown by `mdbook-fkc explain`.
            pub fn explanation(self) -> &'static str {
                match self { $( Code::$variant => $explanation, )* }
            }
        }
    };
}

codes! {
    MissingFrontMatter = "FKC0001", "a chapter with contracts has no FKC front matter",
        "Every chapter that holds ```fkc fences starts with a YAML front matter between two `---` lines:\n\n    ---\n    fkc_version: 1\n    provider:\n      name: my-backend\n      backend: Cpu\n      kernel_source: \"my-source\"\n      link_registry: my_crate::fkc::ENTRY_POINTS\n      revision_base: \"git:0123abcd\"\n    ---\n\nThe provider names the crate whose link registry the contracts resolve against.";
    UnsupportedVersion = "FKC0002", "unsupported fkc_version",
        "The front matter's `fkc_version` must be 1, the only version this preprocessor understands. A document written for a later version needs a later mdbook-fkc.";
    UnknownFenceAttribute = "FKC0003", "unknown fence attribute",
        "A contract fence's info string may carry `should_fail=CODE` (or several codes joined by `+`), which marks a contract that must fail with exactly those codes. Any other attribute is an error, so a typo cannot silently turn a check off.";
    ExpectationNotMet = "FKC0004", "a fence marked should_fail did not fail as expected",
        "A fence written ```fkc,should_fail=FKC0104 must produce exactly the listed codes (as rustdoc's compile_fail). It passed, or it failed with other codes. Fix the example or the list of codes.";
    YamlSyntax = "FKC0101", "the YAML is not well-formed",
        "The fence body (or the front matter) is not valid YAML. Common causes: a tab used for indentation (YAML allows spaces only), a missing space after `:`, an unclosed quote or bracket, or nesting that lost its indentation. The caret points where the YAML parser stopped.";
    YamlBudget = "FKC0102", "the YAML exceeds a resource budget",
        "Contracts are small. To keep `mdbook serve` responsive on hostile or accidental input, parsing stops at fixed budgets: alias expansion (billion-laughs), nesting depth, node count and total scalar size. Split or simplify the document.";
    NotAMapping = "FKC0103", "a contract must be a YAML mapping",
        "The body of a ```fkc fence is a YAML mapping of contract fields (`kernel:`, `op_kind:`, …). An empty fence, a scalar or a sequence at the top is not a contract.";
    UnknownField = "FKC0104", "unknown field",
        "Every field of the FKC format is listed in the format reference. An unknown field is an error (not ignored) because a misspelt field would otherwise silently make a claim go unchecked. The help line suggests the closest known field.";
    MissingField = "FKC0105", "a required field is missing",
        "Some fields must always be authored (for example `kernel`, `accept.inputs`, `return.outputs`). Write `~` for a field you deliberately leave unauthored where the format allows it.";
    WrongType = "FKC0106", "a field has the wrong type",
        "The field's value has the wrong YAML type: for example a list where a mapping is expected, or a string where an integer is expected.";
    InvalidValue = "FKC0107", "a field has a value outside its allowed set",
        "The value has the right type but is not one of the values the format allows, for example a dtype `F8` (allowed: F32, F64, BF16, F16, F8E5M2, I8, U8, I32, I64, Bool) or a layout flag `maybe` (allowed: required, accepted, rejected).";
    DuplicateName = "FKC0108", "a name is declared twice",
        "Input, output and op-param names must be unique within a contract, because expressions refer to them by name; an input lists each of its dtypes once.";
    ExprSyntax = "FKC0201", "the expression does not parse",
        "Constraints, rules, cost and memory formulas are written in the FKC expression language: integers, names (`groups`, `stride[0]`, `x.dim[1]`, `dtype_bytes`), `+ - * / %` (floor division), comparisons, `&& || !`, parentheses, tuples and the functions `divisible`, `min`, `max`. The caret points at the column inside the expression where parsing stopped.";
    ExprUnknownName = "FKC0202", "a name in an expression does not bind",
        "Every name in an expression must bind to an op-param field of the contract (`groups`, `stride`), an input or output (`x.dim[1]`, `out.dim[2]`), `dtype_bytes`, or a named predicate (`depthwise`). The help line suggests the closest name in scope.";
    ExprType = "FKC0203", "an expression has the wrong type",
        "Arithmetic needs integers, `&&`/`||`/`!` need booleans, a constraint or `when` must be a boolean and a formula an integer. Tuples (such as `stride`) are indexed: `stride[0]`.";
    ExprIndex = "FKC0204", "an index is out of range",
        "`x.dim[i]` needs `i` below the operand's declared rank, and a tuple field such as `stride` has two elements (`stride[0]`, `stride[1]`).";
    ExprBudget = "FKC0205", "an expression exceeds a size or nesting budget",
        "Expressions are bounded in length and nesting depth so that hostile input cannot exhaust the stack or the build's time. Simplify the expression.";
    AmbiguousSameAs = "FKC0206", "`same_as=` is ambiguous on an operand of rank greater than 1",
        "`same_as=EXPR` is shorthand for `OPERAND.dim[0] == EXPR` and is only defined on rank-1 operands. On a rank-4 operand it is ambiguous: the seed's conv_transpose2d means `weight.dim[0] == x.dim[1]` while conv2d_simple means `kernel.dim[1] == x.dim[1]`. Write the comparison out, naming the dimension.";
    BadRule = "FKC0207", "a rule is not one the format defines",
        "`dtype_rule` is `passthrough(INPUT)`; `shape_rule` is `conv2d(params)`, `conv_transpose2d(params)` (whose variant must match `op_params.variant`), or `from_params(NAME=EXPR, …)` with one integer expression per output dimension (as many as the output's rank, when it is declared).";
    ExprArithmetic = "FKC0208", "an expression's arithmetic fails",
        "Expressions use checked 64-bit integer arithmetic: an overflow or a division by zero is an error, never a wrap-around. `/` and `%` are floor division and modulo.";
    UnknownOpKind = "FKC0301", "op_kind is not a real OpKind",
        "A registrable contract's `op_kind` must name a variant of the provider's `OpKind` dispatch enum. A kernel with no dispatch carrier yet is documented with `registrable: false` (describe-only) until its carrier lands.";
    BadOpParamsVariant = "FKC0302", "op_params.variant is not a real OpParams variant",
        "A registrable contract's `op_params.variant` must name a variant of the provider's `OpParams` carrier (the importer's BadOpParamsVariant error). Mark the contract `registrable: false` until the variant exists.";
    OpParamsMismatch = "FKC0303", "the declared op-param fields differ from the variant's real fields",
        "The fields under `op_params.fields` must be exactly the fields of the real OpParams variant, each with the same kind (`usize`, `(usize, usize)`, `[usize; 4]`, `i64`, `f32`, `f64`, `bool`, `enum` with the same `values`, `Vec<usize>`, `Vec<i64>`). A missing, extra or differently typed field means the contract documents a different ABI from the one dispatched.";
    EntryPointUnresolved = "FKC0304", "an entry point does not resolve in the link registry",
        "`entry_point` names the symbol for the first declared dtype's suffix (`…_f32`); the importer derives one symbol per declared dtype by replacing the suffix (`…_f64`, `…_bf16`, `…_f16`) and looks each up in the provider's link registry. A declared dtype without a symbol is a dtype the backend does not ship.";
    ProviderMismatch = "FKC0305", "the contract disagrees with its provider",
        "A contract's `backend` and `kernel_source` must equal the front matter provider's, and its entry points must live in the provider's crate.";
    UnknownRegistry = "FKC0306", "the provider's link registry is not known",
        "`provider.link_registry` must name the built-in registry (`fuel_reference_backend::fkc::ENTRY_POINTS`, run in process) or the registry of a provider configured in book.toml: `[preprocessor.fkc.provider.NAME]` with `command = \"cargo run -q --release -p my-backend --bin fkc-provider\"`, matched by the front matter's `provider.name: NAME`.";
    DuplicateKernel = "FKC0307", "a kernel name is used by two contracts",
        "Kernel names are unique per provider: the registry, the inventory and cross-references find a contract by its provider and name. Two providers may each document a kernel of the same name; one provider documents each kernel once.";
    RevisionHashMismatch = "FKC0308", "kernel_revision_hash differs from the computed hash",
        "`kernel_revision_hash: auto` is computed from the provider's `revision_base`, the kernel name and the canonical contract. An authored hash must equal that computed value; write `auto` to let the preprocessor compute it.";
    OpKindVariantMismatch = "FKC0309", "op_kind and op_params.variant name different carriers",
        "A registrable contract's `op_kind` and `op_params.variant` must belong together: the OpParams variant is the carrier of that OpKind.";
    DescribeOnly = "FKC0310", "describe-only contract: the importer refuses to register it",
        "A `registrable: false` contract is parsed and validated but not registered. The importer's refusal (unknown OpKind or BadOpParamsVariant) is shown beside it; this is a note, not an error.";
    NotRegistrableWithoutCarrier = "FKC0311", "a registrable contract has no dispatch carrier",
        "A contract without `registrable: false` is registrable and needs `op_kind` and `op_params.variant`. Declare them, or mark the contract describe-only.";
    ProviderStart = "FKC0312", "the provider command cannot start or does not answer",
        "A configured provider's command is run through the shell in the book's directory; it must answer the protocol's handshake on stdout (its `main` is `fkc_provider::serve(&REGISTRY)`; a `describe` that fails afterwards is FKC0316). A command that cannot be run, exits, prints something else or does not answer within `start-timeout-ms` is this error, located at the chapter's `provider.name`.";
    ProviderProtocol = "FKC0313", "the provider speaks another protocol version",
        "The handshake carries the provider protocol's version. A provider built against another fkc-provider version answers with its own (a provider of protocol 1, fkc-provider 0.1, whose messages have no ids, gets this error); rebuild it against the version this mdbook-fkc speaks (the format reference specifies the protocol).";
    ProviderRegistryMismatch = "FKC0314", "the provider serves another registry",
        "The front matter's `provider.link_registry` must be the registry the named provider serves (its handshake says which). Correct the path, or the provider's command.";
    ProviderDescription = "FKC0316", "the provider's description cannot be read",
        "After the handshake the host asks `describe`; the answer must be a `description` object as the format reference specifies it (`entry_points`, `op_kinds`, `variants` with their `fields`, `executor`). An answer of another shape, or none, is this error, located at the chapter's `provider.name`; the message says which field did not read. The provider's contracts are then not verified (FKC0320).";
    ProviderProtocolFault = "FKC0317", "the provider broke the protocol",
        "Every request carries an `id` and every answer must repeat it, one answer per request, one JSON object per line, nothing else on stdout. A line that is not an answer, an answer to a request that was never sent, a second answer to a request, or an answer of the wrong kind is a protocol fault of the provider at the call that caused it (never blamed on another contract). A second answer is found when the next request is answered, or when the build settles each provider before it reports; after a line that is not an answer, or answers a request never sent, the provider is restarted.";
    FrameLimit = "FKC0318", "an answer is larger than the host accepts",
        "An answer line may be at most `max-line-bytes` long (the provider's table in book.toml; 4 MiB by default), and an output may have at most as many elements as the contract's own shape rule gives for the sample, or 65536, whichever is more. A larger answer is not read (nor decoded): the call fails with this error naming the limit, and the provider is restarted, so a flooding provider cannot exhaust the build's memory.";
    EntryPointHung = "FKC0319", "an entry point that hung is not called again",
        "After a call to an entry point runs out of `call-timeout-ms` (FKC0414), the entry point is marked hung for the rest of the build: every later check of it fails at once with this error instead of waiting for the time limit again.";
    ProviderUnverified = "FKC0320", "the contract is not verified: its provider failed",
        "A contract whose provider could not be started, did not answer the handshake, speaks another protocol or could not describe itself (FKC0312, FKC0313, FKC0314, FKC0316 at the chapter's front matter) was not run at all. It fails, in every output format, until its provider serves again.";
    UnderConstrained = "FKC0401", "the contract admits a sample the kernel rejects",
        "The gate draws deterministic samples from the contract's domain: declared dtypes and ranks, contiguous operands, every constraint true and every output dimension defined. The kernel must accept each one. A rejection means the contract is under-constrained: it promises inputs the kernel refuses. The counterexample is shrunk and printed; add the constraint the kernel enforces.";
    OverPromise = "FKC0402", "a sample breaking a constraint is accepted",
        "For each constraint, samples that break exactly that one (all others true) must be rejected by the kernel with an error. An accepted one means the constraint is not needed, or the kernel lacks validation.";
    ShapeRuleViolated = "FKC0403", "an output's shape differs from the shape rule",
        "On every accepted sample, each output's shape must equal what its `shape_rule` computes.";
    DtypeRuleViolated = "FKC0404", "an output's dtype differs from the dtype rule",
        "On every accepted sample, each output's dtype must be what its `dtype_rule` says (`passthrough(x)`: the dtype of `x`).";
    Nondeterministic = "FKC0405", "repeated runs differ",
        "A contract whose `determinism` promises bitwise results is run twice on the same operands; the outputs must be bit-identical.";
    DtypeMismatch = "FKC0406", "a dtype runs that the contract does not declare",
        "The declared dtypes must be exactly the ones that work: each undeclared one of F32, F64, BF16 and F16 must be refused by every entry point and by the executor (as PyTorch's test_dtypes checks). A dtype that works but is not declared is a mismatch too.";
    CostFormula = "FKC0407", "a cost or memory formula is wrong on an accepted sample",
        "Every cost and memory formula must evaluate to a non-negative integer on every sample the kernel accepts, and `memory.host_bytes` must equal the bytes of the outputs the kernel really allocated.";
    WrongValue = "FKC0409", "a value differs from the independent oracle",
        "Each kernel's results are compared with an independent definitional oracle (gather form, in f64): exactly where `precision.max_ulp: 0` is claimed or the operation is exact (max pooling), otherwise within Higham's bound for summation in the dtype, `|out - exact| <= gamma_K * sum|w*x|` with `gamma_K = (1 + u)^K - 1` (the exact worst case of K roundings, below Higham's `K*u / (1 - K*u)` and finite for every K), and within `max_absolute` / `max_relative` when those are authored.";
    LayoutClaim = "FKC0410", "a layout claim does not hold",
        "Each input's layout flags are tested with real views of the same values: strided, with a start offset, with reversed strides and through a stride-0 broadcast. A `rejected` layout must be refused with an error; an `accepted` one must give the contiguous result bit for bit. With `awkward_layout_strategy: requires_contiguous`, the planner's Contiguize kernel makes each view contiguous, and the kernel's result must then be bitwise the contiguous one.";
    FastPathUnreachable = "FKC0411", "a fast path is never taken",
        "Every `caps.fast_paths[].when` must evaluate on the contract's samples and hold for at least one admitted sample; a fast path nothing in the contract's domain can take is dead documentation.";
    EmptyDomain = "FKC0412", "no sample satisfies the contract",
        "The gate draws small samples (dims 1 to 6, op-params 0 to 4) and keeps those the contract admits. When none is admitted (or when a dimension of a `from_params` shape rule, or a constraint, rules out every such sample, which the gate shows without drawing), nothing can be verified; a green page would then mean nothing, so this is an error. Check that the shape rule and the constraints together admit small inputs.";
    KernelCrashed = "FKC0413", "the kernel crashed",
        "A kernel that panics, aborts, overflows its stack or exits the provider process fails the gate on that sample: a crash is never counted as a rejection. The provider is restarted and the gate goes on; the sample is reported with the provider's last words.";
    KernelTimedOut = "FKC0414", "the kernel did not return within the time limit",
        "Every call has a time limit (`call-timeout-ms` of the provider's table in book.toml; 10 s by default). A kernel that does not return in time is killed with its provider process, which is restarted; the sample is reported.";
    AbiClaim = "FKC0415", "a claim the provider boundary cannot make true",
        "Entry points receive immutable operand views and return new, owned, packed tensors. So `in_place: false`, `aliasing: none` and `layout_guarantee: contiguous` hold by construction (the page says so), and `in_place: true` cannot hold for any kernel behind this boundary.";
    PathUnreached = "FKC0416", "a named code path is never reached",
        "Each path in `caps.paths` names a branch the kernel reports taking (`fkc_provider::call::took`): a vectorised tile, a masked tail, a threaded split. The gate grows its samples (innermost extents across several vector widths with every tail residue, channel counts past the register tiles, batch above 1) until every named path is reached in every dtype it is named for; a path no admitted sample reaches is this error, with the paths the calls did report. A path named for instruction-set levels (`levels: [x86-v4]`) is required only on a machine that runs one of them, and a level the provider does not list is this error too.";
    LevelsDiffer = "FKC0417", "two instruction-set levels disagree",
        "A provider that lists its instruction-set levels (`levels` in its description; the reference backend: AVX-512, AVX2 and scalar) has every call run at each level this machine runs. Where the contract claims bits (an `order`, `max_ulp: 0` or bitwise determinism), every level must give the main level's bits; otherwise each must be within the contract's precision (FKC0409). A level that refuses or crashes where the main one ran is this error too. The levels the machine cannot run are listed on the page as not verified.";
    ParamChangesBits = "FKC0418", "the outputs depend on a parameter they are promised not to",
        "`precision.independent_of` lists op-params the outputs' bits do not depend on, such as a thread count: every admitted sample whose value of one is not 1 runs again with it 1, and every output must be bit for bit the same. A difference means the work is split in a way that changes the arithmetic (a reduction split across threads, a tile size that changes the order). A name that is not a sampled op-param is this error too.";
    ProviderBudget = "FKC0420", "the provider's time budget is spent",
        "Calls to one provider may take at most `budget-ms` in all (the provider's table in book.toml; 2 minutes by default). Once that is spent, its kernels are not called again in the build: each contract still waiting fails with this error, which names the slowest kernels. Make them faster, give the provider `jobs`, or raise the budget.";
    BuildBudget = "FKC0421", "the build's time budget is spent",
        "Kernel calls stop once the build has run for `build-budget-ms` (`[preprocessor.fkc]` in book.toml; 10 minutes by default): each contract still waiting fails with this error, which names the slowest kernels, so a build that would crawl ends instead.";
    UnverifiedDenied = "FKC0005", "an unverified contract where every contract must be proven",
        "A fence written ```fkc,unverified is a spec-first contract: parsed and resolved, shown with a \"not verified\" badge, but not run. `mdbook-fkc check --deny unverified` makes each one an error, for CI that wants every contract proven.";
    PlaceholderUnfilled = "FKC0006", "a counterexample placeholder has nothing to quote",
        "An erratum quotes the gate with `{{#fkc-counterexample}}` (or `{{#fkc-counterexample FKC0407}}` for one code's sample): the build replaces it with the sample the gate printed for the nearest ```fkc,should_fail fence above it in the same chapter, so the prose never quotes a counterexample the build did not find. The placeholder is an error when no such fence comes before it, or when that fence's errors name no sample (a YAML or expression error is about the text, not a run). Write `\\{{#fkc-counterexample}}` to show the placeholder itself.";
    UncheckedDenied = "FKC0007", "a claim no check could decide, where every claim must be checked",
        "The page of a verified contract lists the claims the gate could not check (no semantics to compare values with, an alignment the provider boundary cannot observe, a NaN policy no window exercised) under a \"verified, N claims unchecked\" badge. `mdbook-fkc check --deny unchecked` makes each one an error, for CI that wants every claim proven.";
    OperandsMismatch = "FKC0408", "the contract's inputs are not the kernel's operands",
        "To run a kernel, the gate passes each contract input as the kernel operand of the same name. The inputs must be exactly the entry point's operands, with the same ranks.";
    SemanticsSyntax = "FKC0501", "the semantics do not parse",
        "`semantics` is pseudo-code the gate runs: `for` loops over ranges (`for i in 0..n:`) or a tensor's indices (`for n, c, h, w in out:`), `if`/`elif`/`else` on indices, and assignments (`=`, `+=`, `-=`, `*=`), one per line, blocks by indentation (spaces). The caret points where parsing stopped; the format reference has the grammar.";
    SemanticsName = "FKC0502", "a name in the semantics does not bind",
        "Every name in the semantics must be one of the contract's inputs or outputs, an op-param field, a loop variable, a local assigned earlier in the same or an enclosing block, or `true`, `false`, `inf`, `nan`; every function one the language defines. The help suggests the closest.";
    SemanticsType = "FKC0503", "the semantics use a value of the wrong kind",
        "Indices (loop variables, dims, parameters and their integer arithmetic) and element values (tensor elements, numbers, locals with a dtype) are apart: an index is where an index is expected (`x[n, c, h, w]`, `lo..hi`), a value where a value is; an `if` tests indices (choose between values with `select`, `max`, `min`); a tensor element takes one index per axis; inputs are only read.";
    SemanticsRun = "FKC0504", "the semantics fail on a sample",
        "On a sample the contract admits, the semantics read an index outside its tensor, read an element or local before writing it, leave an output element unwritten, read an absent optional input, or divide an index by zero. The semantics must define every output element of every admitted sample; the note names the sample.";
    SemanticsBudget = "FKC0505", "the semantics exceed a budget",
        "The semantics are bounded so that hostile text cannot stall a build: 16 KiB of text, 8192 tokens, 48 levels of nesting, 200 million steps and about a million (2^20) elements per local tensor on one sample (filling a local costs a step per element), and 16 million steps per sample drawn (`samples`, counted as at least the default 24: the grown samples, attacks and worked example run whatever it says) over all of a contract's runs.";
    NoSemantics = "FKC0506", "values unchecked: the contract has no semantics",
        "The gate checks a kernel's values against its contract's `semantics` (or its op kind's standard semantics). A contract with neither has its transport, shapes, costs and layouts checked, but not its numbers: its page says so, and `mdbook-fkc check --deny unchecked` makes it an error.";
}

impl Code {
    /// Looks a code up by its written form (case-insensitive).
    pub fn parse(text: &str) -> Option<Code> {
        Code::ALL
            .iter()
            .copied()
            .find(|code| code.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for code in Code::ALL {
            let text = code.as_str();
            assert!(seen.insert(text), "{text} is used twice");
            assert!(text.starts_with("FKC") && text.len() == 7, "{text}");
            assert!(!code.title().is_empty() && !code.explanation().is_empty());
            assert_eq!(Code::parse(text), Some(*code));
        }
        assert_eq!(Code::parse("fkc0104"), Some(Code::UnknownField));
        assert_eq!(Code::parse("FKC9999"), None);
    }
}
