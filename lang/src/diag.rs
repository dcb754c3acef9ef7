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
/// JSON output as `"code"`. Only some diagnostics carry one so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// Binds, functions or classes that refer to themselves (`not a dag`), statically.
    ScopeRecursion,
    /// The resource graph's edges form a cycle.
    ResourceCycle,
}

impl Code {
    /// The stable text of the code.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::ScopeRecursion => "scope-recursion",
            Code::ResourceCycle => "resource-cycle",
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
        }
    }

    pub fn without_span(stage: Stage, message: impl Into<String>) -> Diagnostic {
        Diagnostic { stage, message: message.into(), span: None, labels: Vec::new(), notes: Vec::new(), code: None }
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
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Diagnostics {
        Diagnostics { items: vec![d] }
    }
}
