//! Diagnostics: every user mistake becomes one of these, tagged with the pipeline stage.

use crate::span::{SourceMap, Span};
use std::fmt;

/// The compile/run stage an error belongs to (mcl spec section 6.1). The order is the
/// pipeline order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    LexParse,
    Init,
    Interpolate,
    SetScope,
    Unify,
    Graph,
    Stream,
    Interpret,
    AutoEdge,
}

impl Stage {
    /// The name used in `# err: errSTAGE: ...` lines.
    pub fn code(self) -> &'static str {
        match self {
            Stage::LexParse => "errLexParse",
            Stage::Init => "errInit",
            Stage::Interpolate => "errInterpolate",
            Stage::SetScope => "errSetScope",
            Stage::Unify => "errUnify",
            Stage::Graph => "errGraph",
            Stage::Stream => "errStream",
            Stage::Interpret => "errInterpret",
            Stage::AutoEdge => "errAutoEdge",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A stable name for a kind of error, beside its stage: tests, tools and the language
/// server match on it, never on the message's wording (which may improve). Printed in
/// JSON output as `"code"`. Every diagnostic of the front end carries one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// A character, number or string the lexer cannot read.
    Lex,
    /// A token where the grammar wants another.
    Syntax,
    /// The program's entry file cannot be read.
    EntryUnreadable,
    /// A string literal with a bad escape or interpolation.
    BadString,
    /// Two classes with one name.
    DuplicateClass,
    /// A statement the init pass rejects.
    InvalidStatement,
    /// An edge or meta property that does not exist.
    InvalidProperty,
    /// A variable name mcl does not allow.
    InvalidName,
    /// Binds, functions or classes that refer to themselves (`not a dag`), statically.
    ScopeRecursion,
    /// Calls of `func` statements and class includes nested past what elaboration allows
    /// ([`crate::scope::MAX_NESTING`]).
    TooDeep,
    /// A variable, function or class that does not exist in scope.
    UnknownName,
    /// An import that cannot be resolved or loaded.
    ImportFailed,
    /// A module file with statements a module may not hold.
    ModuleStatement,
    /// An import made twice in one scope.
    DuplicateImport,
    /// A name bound twice in one scope.
    DuplicateAssignment,
    /// An `include` with the wrong number of arguments.
    ClassArity,
    /// Two types that must be equal and are not.
    TypeMismatch,
    /// Another type error (an operator, a check of a built-in, a map key).
    TypeError,
    /// An expression whose type nothing determines.
    AmbiguousType,
    /// A struct field that the struct does not have.
    UnknownStructField,
    /// A call of a function that does not exist.
    UnknownFunction,
    /// A call with a number of arguments no signature takes.
    CallArity,
    /// A resource kind that does not exist.
    UnknownKind,
    /// A resource field the kind does not have.
    UnknownField,
    /// A send/recv edge that cannot carry a value.
    SendRecv,
    /// An edge to a resource the graph does not have.
    UnknownResource,
    /// One resource declared twice, differently.
    DuplicateResource,
    /// A resource its kind's validation rejects.
    InvalidResource,
    /// A meta parameter set twice.
    DuplicateMeta,
    /// The resource graph's edges form a cycle.
    ResourceCycle,
    /// One param given two defaults in one block.
    DuplicateDefault,
    /// An override that sets a param the resource already has, differently.
    ConflictingOverride,
    /// A param default where none may be (a lambda value), or one that uses a param to its
    /// right.
    ParamDefault,
    /// Call or include arguments that do not fit the params (missing, unknown, given
    /// twice, too many).
    CallArgs,
    /// A use of another module's `private` name.
    PrivateName,
    /// A value of a declared type that its checks or invariants reject.
    CheckFailed,
    /// A streaming function failed (a fact's file vanished, its command failed): the
    /// program goes on with the last good values and resumes when the function produces
    /// again.
    StreamFailed,
    /// A collected resource that hosts export differently: it is left out, the rest of the
    /// graph applies.
    CollectConflict,
    /// A bug in tend.
    Internal,
    /// A warning: a bind nothing uses (it is not even type-checked).
    UnusedBind,
    /// A warning: an import nothing uses.
    UnusedImport,
    /// A warning: a param of a func or class its body never reads.
    UnusedParam,
    /// A warning: a bind that hides an outer variable of the same name.
    ShadowedBind,
    /// A warning: an `include` (without `as`) of a class that adds nothing.
    EmptyInclude,
    /// A warning: a resource field set to the value leaving it out means.
    DefaultValue,
    /// A warning: a duration far outside what its unit makes sensible (`Meta:timeout`
    /// counts milliseconds, exec's `timeout` seconds).
    ImplausibleUnit,
}

impl Code {
    /// A failure of one value at run time, after which the dataflow goes on: the resources
    /// it feeds keep their last good declarations until a good value comes.
    pub fn is_recoverable(self) -> bool {
        matches!(self, Code::CheckFailed | Code::StreamFailed)
    }

    /// Every code, for documentation and tests.
    pub const ALL: &'static [Code] = &[
        Code::Lex,
        Code::Syntax,
        Code::EntryUnreadable,
        Code::BadString,
        Code::DuplicateClass,
        Code::InvalidStatement,
        Code::InvalidProperty,
        Code::InvalidName,
        Code::ScopeRecursion,
        Code::TooDeep,
        Code::UnknownName,
        Code::ImportFailed,
        Code::ModuleStatement,
        Code::DuplicateImport,
        Code::DuplicateAssignment,
        Code::ClassArity,
        Code::TypeMismatch,
        Code::TypeError,
        Code::AmbiguousType,
        Code::UnknownStructField,
        Code::UnknownFunction,
        Code::CallArity,
        Code::UnknownKind,
        Code::UnknownField,
        Code::SendRecv,
        Code::UnknownResource,
        Code::DuplicateResource,
        Code::InvalidResource,
        Code::DuplicateMeta,
        Code::ResourceCycle,
        Code::DuplicateDefault,
        Code::ConflictingOverride,
        Code::ParamDefault,
        Code::CallArgs,
        Code::PrivateName,
        Code::CheckFailed,
        Code::StreamFailed,
        Code::CollectConflict,
        Code::Internal,
        Code::UnusedBind,
        Code::UnusedImport,
        Code::UnusedParam,
        Code::ShadowedBind,
        Code::EmptyInclude,
        Code::DefaultValue,
        Code::ImplausibleUnit,
    ];

    /// The stable text of the code.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Lex => "lex",
            Code::Syntax => "syntax",
            Code::EntryUnreadable => "entry-unreadable",
            Code::BadString => "bad-string",
            Code::DuplicateClass => "duplicate-class",
            Code::InvalidStatement => "invalid-statement",
            Code::InvalidProperty => "invalid-property",
            Code::InvalidName => "invalid-name",
            Code::ScopeRecursion => "scope-recursion",
            Code::TooDeep => "too-deep",
            Code::UnknownName => "unknown-name",
            Code::ImportFailed => "import-failed",
            Code::ModuleStatement => "module-statement",
            Code::DuplicateImport => "duplicate-import",
            Code::DuplicateAssignment => "duplicate-assignment",
            Code::ClassArity => "class-arity",
            Code::TypeMismatch => "type-mismatch",
            Code::TypeError => "type-error",
            Code::AmbiguousType => "ambiguous-type",
            Code::UnknownStructField => "unknown-struct-field",
            Code::UnknownFunction => "unknown-function",
            Code::CallArity => "call-arity",
            Code::UnknownKind => "unknown-kind",
            Code::UnknownField => "unknown-field",
            Code::SendRecv => "send-recv",
            Code::UnknownResource => "unknown-resource",
            Code::DuplicateResource => "duplicate-resource",
            Code::InvalidResource => "invalid-resource",
            Code::DuplicateMeta => "duplicate-meta",
            Code::ResourceCycle => "resource-cycle",
            Code::DuplicateDefault => "duplicate-default",
            Code::ConflictingOverride => "conflicting-override",
            Code::ParamDefault => "param-default",
            Code::CallArgs => "call-args",
            Code::PrivateName => "private-name",
            Code::CheckFailed => "check-failed",
            Code::StreamFailed => "stream-failed",
            Code::CollectConflict => "collect-conflict",
            Code::Internal => "internal",
            Code::UnusedBind => "unused-bind",
            Code::UnusedImport => "unused-import",
            Code::UnusedParam => "unused-param",
            Code::ShadowedBind => "shadowed-bind",
            Code::EmptyInclude => "empty-include",
            Code::DefaultValue => "default-value",
            Code::ImplausibleUnit => "implausible-unit",
        }
    }
}

/// A secondary location with its own message ("expected int because of this").
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// One error found in a program.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub stage: Stage,
    /// One line, no trailing position; the position is rendered from `span`.
    pub message: String,
    /// The primary location. `None` only for errors with no source position.
    pub span: Option<Span>,
    /// Secondary locations.
    pub labels: Vec<Label>,
    /// Free-form notes ("expected one of: ...", "did you mean `$name`?").
    pub notes: Vec<String>,
    /// The kind of error, when it has a stable code.
    pub code: Option<Code>,
    /// A warning points at likely wrong code that still compiles; it never stops a program.
    pub warning: bool,
}

impl Diagnostic {
    pub fn new(stage: Stage, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            stage,
            message: message.into(),
            span: Some(span),
            labels: Vec::new(),
            notes: Vec::new(),
            code: None,
            warning: false,
        }
    }

    /// A warning (see [`Diagnostic::warning`]).
    pub fn warn(stage: Stage, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic { warning: true, ..Diagnostic::new(stage, message, span) }
    }

    pub fn without_span(stage: Stage, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            stage,
            message: message.into(),
            span: None,
            labels: Vec::new(),
            notes: Vec::new(),
            code: None,
            warning: false,
        }
    }

    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label { span, message: message.into() });
        self
    }

    pub fn with_code(mut self, code: Code) -> Diagnostic {
        self.code = Some(code);
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// The one-line form `errSTAGE: message: /file @ l:c-l:c` used on stdout.
    pub fn one_line(&self, sources: &SourceMap) -> String {
        match self.span {
            Some(span) => format!("{}: {}: {}", self.stage, self.message, sources.byline(span)),
            None => format!("{}: {}", self.stage, self.message),
        }
    }
}

/// Diagnostics collected by a phase. Phases return their output plus this, and only the
/// driver decides whether to continue.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new() -> Diagnostics {
        Diagnostics::default()
    }
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }
    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// Keeps the first `n` (the rest freed).
    pub fn truncate(&mut self, n: usize) {
        self.items.truncate(n);
        self.items.shrink_to_fit();
    }
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }
    /// The first error of the earliest stage, which is the one reported on stdout.
    pub fn first(&self) -> Option<&Diagnostic> {
        self.items.iter().min_by_key(|d| d.stage)
    }
    /// Like [`Diagnostics::first`], passing over warnings: `None` means the phase may go on.
    pub fn first_error(&self) -> Option<&Diagnostic> {
        self.items.iter().filter(|d| !d.warning).min_by_key(|d| d.stage)
    }
}

impl FromIterator<Diagnostic> for Diagnostics {
    fn from_iter<I: IntoIterator<Item = Diagnostic>>(items: I) -> Diagnostics {
        Diagnostics { items: items.into_iter().collect() }
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Diagnostics {
        Diagnostics { items: vec![d] }
    }
}
