//! The resource graph one evaluation of a program describes: vertices (resources with
//! their parameter values and meta params) and edges (ordering, notification, send/recv).
//! Plain data built by [`crate::interpret`]; the app turns it into engine resources.
//!
//! Order is deterministic: vertices in program order of their first declaration, edges
//! sorted by (from, to).

use crate::params::ParamMap;
use crate::span::Span;
use crate::value::Value;
use std::fmt;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResGraph {
    pub vertices: Vec<ResVertex>,
    pub edges: Vec<Edge>,
    /// Autogrouping's result: the resources grouped into vertex `i` (taken out of
    /// `vertices`, their edges moved to `i`), in the order they were grouped. Empty until
    /// the resources crate groups the graph.
    pub members: std::collections::BTreeMap<usize, Vec<ResVertex>>,
}

/// One resource.
#[derive(Clone, Debug, PartialEq)]
pub struct ResVertex {
    pub kind: String,
    pub name: String,
    /// The parameters that were set (omitted ones keep the kind's default).
    pub params: ParamMap,
    /// Where each parameter was set (`field => value,`), in the order of `params`' keys
    /// (see [`ResVertex::param_span`]), for errors found later, e.g. when a value does not fit
    /// the kind's field. A slice, not a second map keyed by copies of the names: at 100,000
    /// resources the map weighed tens of megabytes at the run's peak.
    pub param_spans: Box<[Span]>,
    /// Shared: nearly every resource has the default metaparams, which all of them then
    /// hold as one value (see [`Meta::shared_default`]).
    pub meta: std::sync::Arc<Meta>,
    /// Rebuilt by `collect` from exported data.
    pub collected: bool,
    /// The resource statement.
    pub span: Span,
}

impl ResVertex {
    /// Where param `name` was set, when known.
    pub fn param_span(&self, name: &str) -> Option<Span> {
        let at = self.params.keys().position(|k| k == name)?;
        self.param_spans.get(at).copied()
    }

    /// `kind[name]`, the notation of mgmt users.
    pub fn key(&self) -> String {
        format!("{}[{}]", self.kind, self.name)
    }
    pub fn hidden(&self) -> bool {
        self.meta.hidden
    }
    pub fn export(&self) -> &[String] {
        &self.meta.export
    }
    /// Equal parameters and meta params: duplicates that may be merged.
    pub fn same_as(&self, other: &ResVertex) -> bool {
        self.kind == other.kind && self.name == other.name && self.params == other.params && self.meta == other.meta
    }
}

/// The meta parameters of a resource (spec 3.5.4), with the engine's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    pub noop: bool,
    /// Retries after a failure; -1 is forever.
    pub retry: i16,
    pub retryreset: bool,
    /// Milliseconds between retries.
    pub delay: u64,
    /// Milliseconds per check-apply; 0 is none.
    pub timeout: u64,
    /// Seconds; > 0 polls instead of watching, < 0 is a one-shot start event.
    pub poll: i32,
    /// Events per second; infinite by default.
    pub limit: f64,
    pub burst: i64,
    pub reset: bool,
    pub sema: Vec<String>,
    pub rewatch: bool,
    pub realize: bool,
    pub dollar: bool,
    pub hidden: bool,
    /// Hosts (or `*`) to export the resource to.
    pub export: Vec<String>,
    pub reverse: bool,
    pub autoedge: bool,
    pub autogroup: bool,
    /// `Meta:autogroup => true` was written: a kind whose grouping saves nothing (`print`)
    /// groups only then, while one that gains by it (`pkg`) groups unless told not to.
    pub autogroup_asked: bool,
    /// Puppet's tags (`Meta:tags`), for collectors; only set one by one.
    pub tags: Vec<String>,
}

impl Meta {
    /// The default metaparams, one value for the whole process.
    pub fn shared_default() -> std::sync::Arc<Meta> {
        static DEFAULT: std::sync::OnceLock<std::sync::Arc<Meta>> = std::sync::OnceLock::new();
        DEFAULT.get_or_init(|| std::sync::Arc::new(Meta::default())).clone()
    }
}

impl Default for Meta {
    fn default() -> Meta {
        Meta {
            noop: false,
            retry: 0,
            retryreset: false,
            delay: 0,
            timeout: 0,
            poll: 0,
            limit: f64::INFINITY,
            burst: 0,
            reset: false,
            sema: Vec::new(),
            rewatch: false,
            realize: false,
            dollar: false,
            hidden: false,
            export: Vec::new(),
            reverse: false,
            autoedge: true,
            autogroup: true,
            autogroup_asked: false,
            tags: Vec::new(),
        }
    }
}

impl Meta {
    /// Every field as `(name, value)` in the order of spec 3.5.4, for comparisons and
    /// messages.
    pub fn entries(&self) -> [(&'static str, Value); 19] {
        let strs = |l: &[String]| Value::list(l.iter().map(Value::str).collect());
        [
            ("noop", Value::Bool(self.noop)),
            ("retry", Value::Int(self.retry.into())),
            ("retryreset", Value::Bool(self.retryreset)),
            ("delay", Value::Int(self.delay as i64)),
            ("timeout", Value::Int(self.timeout as i64)),
            ("poll", Value::Int(self.poll.into())),
            ("limit", Value::Float(self.limit)),
            ("burst", Value::Int(self.burst)),
            ("reset", Value::Bool(self.reset)),
            ("sema", strs(&self.sema)),
            ("rewatch", Value::Bool(self.rewatch)),
            ("realize", Value::Bool(self.realize)),
            ("dollar", Value::Bool(self.dollar)),
            ("hidden", Value::Bool(self.hidden)),
            ("export", strs(&self.export)),
            ("reverse", Value::Bool(self.reverse)),
            ("autoedge", Value::Bool(self.autoedge)),
            ("autogroup", Value::Bool(self.autogroup)),
            ("tags", strs(&self.tags)),
        ]
    }
}

/// A directed edge: `from` runs before `to`.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    /// Index into [`ResGraph::vertices`].
    pub from: usize,
    pub to: usize,
    /// `to` is notified (refreshed) when `from` changed something.
    pub notify: bool,
    /// Send/recv field pairs carried by this edge (usually none or one), sorted.
    pub send_recv: Vec<SendRecv>,
    /// The statement or body entry that first declared the edge.
    pub span: Span,
}

/// `Kind[a].send -> Kind[b].recv`: the value `from` sends on `send` is copied into the
/// `recv` parameter of `to`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SendRecv {
    pub send: String,
    pub recv: String,
}

impl ResGraph {
    /// The conformance format (spec 8.3): `Vertex: kind[name]` and
    /// `Edge: k1[n1] -> k2[n2] # k1[n1] -> k2[n2]` lines, sorted.
    pub fn to_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.vertices.iter().map(|v| format!("Vertex: {}", v.key())).collect();
        for (at, members) in &self.members {
            let group = self.vertices[*at].key();
            lines.extend(members.iter().map(|m| format!("Group: {group}: Vertex: {}", m.key())));
        }
        for e in &self.edges {
            let (a, b) = (self.vertices[e.from].key(), self.vertices[e.to].key());
            lines.push(format!("Edge: {a} -> {b} # {a} -> {b}"));
        }
        lines.sort();
        lines
    }
}

impl fmt::Display for ResGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in self.to_lines() {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}
