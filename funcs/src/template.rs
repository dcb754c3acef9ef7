//! A Go `text/template` subset for `golang.template`: text, `{{ pipeline }}`, `if`/`else
//! if`/`else`, `range` (with `$i, $e :=` and `else`), `with`, variables, comments, trim
//! markers, parenthesised pipelines, `.Field` access (Title-cased struct fields, map
//! keys), the Go built-ins (`and or not len index print printf println eq ne lt le gt
//! ge html urlquery`) and external functions supplied by the caller. Values print the
//! way Go's `fmt` prints them (`[a b]`, `map[k:v]`, `{1 2}`, `3.1536042e+07`).

use crate::api::FuncError;
use crate::gofmt::Piece;
use lang::value::Value;
use std::collections::BTreeMap;

/// Looks up and calls a function that is not a template built-in. `None`: no such
/// function.
pub trait Funcs {
    fn call(&self, name: &str, args: Vec<Value>) -> Option<Result<Value, FuncError>>;
    fn has(&self, name: &str) -> bool;
}

/// Why a template did not render: its message (Go's wording, with the template's
/// position), and the error of the function it called when that is the cause.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderError {
    pub message: String,
    pub cause: Option<FuncError>,
}

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A template execution error stops the program (mcl's errStream), whatever the called
/// function's error was, except a value that is not ready yet: that is no failure, and the
/// runtime calls again once it comes.
impl From<RenderError> for FuncError {
    fn from(e: RenderError) -> FuncError {
        match e.cause {
            Some(FuncError::NotReady) => FuncError::NotReady,
            _ => FuncError::Fatal(e.message),
        }
    }
}

/// No external functions.
pub struct NoFuncs;
impl Funcs for NoFuncs {
    fn call(&self, _: &str, _: Vec<Value>) -> Option<Result<Value, FuncError>> {
        None
    }
    fn has(&self, _: &str) -> bool {
        false
    }
}

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    name: String,
    src: String,
    root: Vec<Node>,
}

#[derive(Debug, Clone)]
enum Node {
    Text(String),
    Action(Pipe),
    If(Pipe, Vec<Node>, Vec<Node>),
    With(Pipe, Vec<Node>, Vec<Node>),
    Range(Pipe, Vec<Node>, Vec<Node>),
    Break,
    Continue,
}

#[derive(Debug, Clone)]
struct Pipe {
    /// Variables declared (`:=`) or assigned (`=`).
    vars: Vec<String>,
    declare: bool,
    cmds: Vec<Cmd>,
    /// Byte offset of the action in the source, for error positions.
    pos: usize,
}

#[derive(Debug, Clone)]
struct Cmd {
    args: Vec<Operand>,
    pos: usize,
    text: String,
}

#[derive(Debug, Clone)]
enum Operand {
    Dot,
    /// `.A.B` (relative to dot).
    Field(Vec<String>),
    /// `$x.A.B`.
    Var(String, Vec<String>),
    Ident(String),
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Nil,
    /// `(pipeline).A.B`.
    Sub(Box<Pipe>, Vec<String>),
}

// ---------------------------------------------------------------------------------------
// Lexing

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Dot,
    Field(Vec<String>),
    Var(String, Vec<String>),
    Ident(String),
    Str(String),
    Int(i64),
    Float(f64),
    LParen,
    /// `)` followed by an optional field chain.
    RParen(Vec<String>),
    Pipe,
    Declare,
    Assign,
    Comma,
}

/// A `{{ ... }}` action or a text run.
enum Chunk {
    Text(String),
    Action(Vec<(Tok, usize)>, usize),
}

fn line_col(src: &str, pos: usize) -> (usize, usize) {
    let before = &src[..pos.min(src.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map(|i| pos - i - 1).unwrap_or(pos);
    (line, col)
}

fn split_chunks(src: &str, name: &str) -> Result<Vec<Chunk>, String> {
    let perr = |pos: usize, msg: &str| {
        let (l, _) = line_col(src, pos);
        format!("template: {name}:{l}: {msg}")
    };
    let mut chunks = Vec::new();
    let mut i = 0;
    let mut trim_next = false;
    while i < src.len() {
        let open = src[i..].find("{{").map(|o| i + o);
        let text_end = open.unwrap_or(src.len());
        let mut text = &src[i..text_end];
        if trim_next {
            text = text.trim_start_matches([' ', '\t', '\r', '\n']);
        }
        let Some(open) = open else {
            if !text.is_empty() {
                chunks.push(Chunk::Text(text.to_string()));
            }
            break;
        };
        let mut start = open + 2;
        let bytes = src.as_bytes();
        if src[start..].starts_with('-') && matches!(bytes.get(start + 1), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            text = text.trim_end_matches([' ', '\t', '\r', '\n']);
            start += 1;
        }
        if !text.is_empty() {
            chunks.push(Chunk::Text(text.to_string()));
        }
        // Comments.
        let inner_start = start + src[start..].len() - src[start..].trim_start().len();
        if src[inner_start..].starts_with("/*") {
            let Some(c) = src[inner_start..].find("*/") else { return Err(perr(open, "unclosed comment")) };
            let after = inner_start + c + 2;
            let rest = src[after..].trim_start();
            let skipped = src[after..].len() - rest.len();
            let (close, trim) = if rest.starts_with("-}}") && skipped > 0 {
                (after + skipped + 3, true)
            } else if rest.starts_with("}}") {
                (after + skipped + 2, false)
            } else {
                return Err(perr(open, "comment ends before closing delimiter"));
            };
            trim_next = trim;
            i = close;
            continue;
        }
        let (toks, end, trim) = lex_action(src, start, name)?;
        chunks.push(Chunk::Action(toks, open));
        trim_next = trim;
        i = end;
    }
    Ok(chunks)
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Lexes from `start` to the closing `}}`; returns the tokens, the offset after the
/// delimiter and whether it was `-}}`.
/// Tokens of one action with their byte offsets.
type Toks = Vec<(Tok, usize)>;

fn lex_action(src: &str, start: usize, name: &str) -> Result<(Toks, usize, bool), String> {
    let err = |pos: usize, msg: String| {
        let (l, _) = line_col(src, pos);
        format!("template: {name}:{l}: {msg}")
    };
    let b = src.as_bytes();
    let mut toks = Vec::new();
    let mut i = start;
    let field_chain = |i: &mut usize| -> Vec<String> {
        let mut chain = Vec::new();
        while *i < b.len() && b[*i] == b'.' {
            let s = *i + 1;
            let mut e = s;
            while e < b.len() && src[e..].chars().next().is_some_and(is_ident_char) {
                e += src[e..].chars().next().map_or(1, char::len_utf8);
            }
            if e == s {
                break;
            }
            chain.push(src[s..e].to_string());
            *i = e;
        }
        chain
    };
    loop {
        if i >= b.len() {
            return Err(err(start, "unclosed action".into()));
        }
        let c = src[i..].chars().next().unwrap_or(' ');
        if c.is_whitespace() {
            // ` -}}`
            let rest = src[i..].trim_start();
            let ws = src[i..].len() - rest.len();
            if rest.starts_with("-}}") {
                return Ok((toks, i + ws + 3, true));
            }
            i += ws;
            continue;
        }
        if src[i..].starts_with("}}") {
            return Ok((toks, i + 2, false));
        }
        let pos = i;
        match c {
            '|' => {
                toks.push((Tok::Pipe, pos));
                i += 1;
            }
            ',' => {
                toks.push((Tok::Comma, pos));
                i += 1;
            }
            '(' => {
                toks.push((Tok::LParen, pos));
                i += 1;
            }
            ')' => {
                i += 1;
                let chain = field_chain(&mut i);
                toks.push((Tok::RParen(chain), pos));
            }
            ':' if src[i..].starts_with(":=") => {
                toks.push((Tok::Declare, pos));
                i += 2;
            }
            '=' => {
                toks.push((Tok::Assign, pos));
                i += 1;
            }
            '"' => {
                let mut j = i + 1;
                let mut raw_end = None;
                while j < b.len() {
                    match b[j] {
                        b'\\' => j += 2,
                        b'"' => {
                            raw_end = Some(j);
                            break;
                        }
                        b'\n' => break,
                        _ => j += 1,
                    }
                }
                let Some(e) = raw_end else { return Err(err(pos, "unterminated quoted string".into())) };
                let s = crate::core::golang_std::unquote(&src[i..=e])
                    .map_err(|_| err(pos, format!("invalid syntax in string {}", &src[i..=e])))?;
                toks.push((Tok::Str(s), pos));
                i = e + 1;
            }
            '`' => {
                let Some(e) = src[i + 1..].find('`') else {
                    return Err(err(pos, "unterminated raw quoted string".into()));
                };
                toks.push((Tok::Str(src[i + 1..i + 1 + e].to_string()), pos));
                i += e + 2;
            }
            '.' => {
                let next = src[i + 1..].chars().next();
                if next.is_some_and(|n| n.is_ascii_digit()) {
                    let (t, n) = lex_number(&src[i..]).ok_or_else(|| err(pos, "bad number".into()))?;
                    toks.push((t, pos));
                    i += n;
                } else if next.is_some_and(is_ident_char) {
                    let chain = field_chain(&mut i);
                    toks.push((Tok::Field(chain), pos));
                } else {
                    toks.push((Tok::Dot, pos));
                    i += 1;
                }
            }
            '$' => {
                let mut e = i + 1;
                while e < b.len() && src[e..].chars().next().is_some_and(is_ident_char) {
                    e += src[e..].chars().next().map_or(1, char::len_utf8);
                }
                let name = src[i..e].to_string();
                i = e;
                let chain = field_chain(&mut i);
                toks.push((Tok::Var(name, chain), pos));
            }
            c if c.is_ascii_digit()
                || ((c == '-' || c == '+') && src[i + 1..].starts_with(|d: char| d.is_ascii_digit() || d == '.')) =>
            {
                let (t, n) = lex_number(&src[i..]).ok_or_else(|| err(pos, "bad number syntax".into()))?;
                toks.push((t, pos));
                i += n;
            }
            c if is_ident_char(c) => {
                let mut e = i;
                while e < b.len() && src[e..].chars().next().is_some_and(is_ident_char) {
                    e += src[e..].chars().next().map_or(1, char::len_utf8);
                }
                toks.push((Tok::Ident(src[i..e].to_string()), pos));
                i = e;
            }
            other => return Err(err(pos, format!("unexpected {other:?} in command"))),
        }
    }
}

fn lex_number(s: &str) -> Option<(Tok, usize)> {
    let n = s
        .char_indices()
        .take_while(|(i, c)| {
            c.is_ascii_alphanumeric()
                || *c == '.'
                || *c == '_'
                || ((*c == '-' || *c == '+') && (*i == 0 || matches!(s.as_bytes()[i - 1], b'e' | b'E')))
        })
        .count();
    let text: String = s[..n].chars().filter(|c| *c != '_').collect();
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b.to_string()),
        None => (false, text.trim_start_matches('+').to_string()),
    };
    let lower = body.to_ascii_lowercase();
    let int = if let Some(h) = lower.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(o) = lower.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()
    } else if let Some(bn) = lower.strip_prefix("0b") {
        i64::from_str_radix(bn, 2).ok()
    } else {
        lower.parse::<i64>().ok()
    };
    if let Some(v) = int {
        return Some((Tok::Int(if neg { -v } else { v }), n));
    }
    let f: f64 = lower.parse().ok()?;
    Some((Tok::Float(if neg { -f } else { f }), n))
}

// ---------------------------------------------------------------------------------------
// Parsing

struct Parser<'a> {
    chunks: std::iter::Peekable<std::vec::IntoIter<Chunk>>,
    src: &'a str,
    name: &'a str,
}

/// How a list of nodes ended.
enum ListEnd {
    Eof,
    End,
    Else(Vec<(Tok, usize)>, usize),
}

impl Parser<'_> {
    fn err(&self, pos: usize, msg: impl std::fmt::Display) -> String {
        let (l, _) = line_col(self.src, pos);
        format!("template: {}:{l}: {msg}", self.name)
    }

    fn list(&mut self) -> Result<(Vec<Node>, ListEnd), String> {
        let mut nodes = Vec::new();
        while let Some(chunk) = self.chunks.next() {
            match chunk {
                Chunk::Text(t) => nodes.push(Node::Text(t)),
                Chunk::Action(toks, pos) => {
                    let kw = match toks.first() {
                        Some((Tok::Ident(k), _)) => k.as_str(),
                        _ => "",
                    };
                    match kw {
                        "end" => return Ok((nodes, ListEnd::End)),
                        "else" => return Ok((nodes, ListEnd::Else(toks[1..].to_vec(), pos))),
                        "if" | "with" | "range" => nodes.push(self.block(kw, &toks[1..], pos)?),
                        "break" => nodes.push(Node::Break),
                        "continue" => nodes.push(Node::Continue),
                        "define" | "template" | "block" => {
                            return Err(self.err(pos, format!("{kw} is not supported by golang.template")));
                        }
                        _ => {
                            if toks.is_empty() {
                                return Err(self.err(pos, "missing value for command"));
                            }
                            nodes.push(Node::Action(self.pipe(&toks, pos, true)?));
                        }
                    }
                }
            }
        }
        Ok((nodes, ListEnd::Eof))
    }

    fn block(&mut self, kw: &str, toks: &[(Tok, usize)], pos: usize) -> Result<Node, String> {
        let pipe = self.pipe(toks, pos, kw == "range" || kw == "with" || kw == "if")?;
        if pipe.cmds.is_empty() {
            return Err(self.err(pos, format!("missing value for {kw}")));
        }
        let (then, end) = self.list()?;
        let els = match end {
            ListEnd::Eof => return Err(self.err(pos, format!("unexpected EOF in {kw}"))),
            ListEnd::End => Vec::new(),
            ListEnd::Else(rest, epos) => {
                if let Some((Tok::Ident(k), _)) = rest.first()
                    && (k == "if" || k == "with")
                {
                    // `else if` / `else with`: a nested block sharing our `end`.
                    vec![self.block(&k.clone(), &rest[1..], epos)?]
                } else {
                    if !rest.is_empty() {
                        return Err(self.err(epos, "unexpected tokens after else"));
                    }
                    let (els, end) = self.list()?;
                    if !matches!(end, ListEnd::End) {
                        return Err(self.err(
                            pos,
                            format!("expected end; found {}", if matches!(end, ListEnd::Eof) { "EOF" } else { "else" }),
                        ));
                    }
                    els
                }
            }
        };
        Ok(match kw {
            "if" => Node::If(pipe, then, els),
            "with" => Node::With(pipe, then, els),
            _ => Node::Range(pipe, then, els),
        })
    }

    fn pipe(&self, toks: &[(Tok, usize)], pos: usize, allow_decl: bool) -> Result<Pipe, String> {
        let mut vars = Vec::new();
        let mut declare = false;
        let mut rest = toks;
        // `$x :=`, `$x =`, `$i, $e :=`
        let decl_end = toks.iter().position(|(t, _)| matches!(t, Tok::Declare | Tok::Assign));
        if let Some(d) = decl_end {
            let head = &toks[..d];
            let names: Vec<Option<String>> = head
                .iter()
                .filter(|(t, _)| *t != Tok::Comma)
                .map(|(t, _)| match t {
                    Tok::Var(n, c) if c.is_empty() => Some(n.clone()),
                    _ => None,
                })
                .collect();
            if !names.is_empty() && names.iter().all(Option::is_some) && allow_decl {
                vars = names.into_iter().flatten().collect();
                declare = toks[d].0 == Tok::Declare;
                rest = &toks[d + 1..];
                if vars.len() > 2 {
                    return Err(self.err(pos, "too many declarations"));
                }
            }
        }
        let mut cmds = Vec::new();
        let mut i = 0;
        while i < rest.len() {
            let (cmd, next) = self.cmd(rest, i)?;
            cmds.push(cmd);
            i = next;
            if i < rest.len() {
                if rest[i].0 != Tok::Pipe {
                    return Err(self.err(rest[i].1, "unexpected token in pipeline"));
                }
                i += 1;
                if i >= rest.len() {
                    return Err(self.err(pos, "missing command after |"));
                }
            }
        }
        Ok(Pipe { vars, declare, cmds, pos })
    }

    /// A command: operands up to `|`, `)` or the end.
    fn cmd(&self, toks: &[(Tok, usize)], mut i: usize) -> Result<(Cmd, usize), String> {
        let start = toks.get(i).map(|t| t.1).unwrap_or(0);
        let mut args = Vec::new();
        while i < toks.len() {
            let (t, p) = &toks[i];
            let op = match t {
                Tok::Pipe | Tok::RParen(_) => break,
                Tok::Dot => Operand::Dot,
                Tok::Field(c) => Operand::Field(c.clone()),
                Tok::Var(n, c) => Operand::Var(n.clone(), c.clone()),
                Tok::Ident(n) => match n.as_str() {
                    "true" => Operand::Bool(true),
                    "false" => Operand::Bool(false),
                    "nil" => Operand::Nil,
                    _ => Operand::Ident(n.clone()),
                },
                Tok::Str(s) => Operand::Str(s.clone()),
                Tok::Int(n) => Operand::Int(*n),
                Tok::Float(f) => Operand::Float(*f),
                Tok::LParen => {
                    // Find the matching `)`.
                    let mut depth = 0;
                    let mut j = i;
                    let close = loop {
                        match toks.get(j) {
                            Some((Tok::LParen, _)) => depth += 1,
                            Some((Tok::RParen(_), _)) => {
                                depth -= 1;
                                if depth == 0 {
                                    break j;
                                }
                            }
                            Some(_) => {}
                            None => return Err(self.err(*p, "unclosed left paren")),
                        }
                        j += 1;
                    };
                    let inner = self.pipe(&toks[i + 1..close], *p, false)?;
                    let chain = match &toks[close].0 {
                        Tok::RParen(c) => c.clone(),
                        _ => Vec::new(),
                    };
                    i = close;
                    Operand::Sub(Box::new(inner), chain)
                }
                Tok::Declare | Tok::Assign | Tok::Comma => return Err(self.err(*p, "unexpected token in operand")),
            };
            args.push(op);
            i += 1;
        }
        if args.is_empty() {
            return Err(self.err(start, "missing value for command"));
        }
        let text = args.iter().map(operand_text).collect::<Vec<_>>().join(" ");
        Ok((Cmd { args, pos: start, text }, i))
    }
}

fn chain_text(chain: &[String]) -> String {
    chain.iter().map(|f| format!(".{f}")).collect()
}

/// The source-like text of an operand, for error messages (`<.Missing>`).
fn operand_text(op: &Operand) -> String {
    match op {
        Operand::Dot => ".".into(),
        Operand::Field(c) => chain_text(c),
        Operand::Var(n, c) => format!("{n}{}", chain_text(c)),
        Operand::Ident(n) => n.clone(),
        Operand::Str(s) => lang::value::quote_str(s),
        Operand::Int(i) => i.to_string(),
        Operand::Float(f) => go_float(*f),
        Operand::Bool(b) => b.to_string(),
        Operand::Nil => "nil".into(),
        Operand::Sub(p, c) => {
            let cmds: Vec<&str> = p.cmds.iter().map(|c| c.text.as_str()).collect();
            format!("({}){}", cmds.join(" | "), chain_text(c))
        }
    }
}

impl Template {
    /// Parses a template named `name` (used in error messages).
    pub fn parse(name: &str, src: &str) -> Result<Template, String> {
        let chunks = split_chunks(src, name)?;
        let mut p = Parser { chunks: chunks.into_iter().peekable(), src, name };
        let (root, end) = p.list()?;
        match end {
            ListEnd::Eof => Ok(Template { name: name.to_string(), src: src.to_string(), root }),
            ListEnd::End => Err(format!("template: {name}: unexpected {{{{end}}}}")),
            ListEnd::Else(_, pos) => Err(p.err(pos, "unexpected {{else}}")),
        }
    }

    /// Runs the template with `dot` as `.`.
    pub fn execute(&self, dot: &Value, funcs: &dyn Funcs) -> Result<String, RenderError> {
        let mut ex =
            Exec { t: self, funcs, vars: vec![("$".to_string(), dot.clone())], out: String::new(), failed_call: None };
        match ex.walk(&self.root, dot) {
            Ok(Flow::Normal) => Ok(ex.out),
            Ok(_) => Err(RenderError { message: "break or continue outside range".into(), cause: None }),
            Err(message) => Err(RenderError { message, cause: ex.failed_call }),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Execution

/// The longest `range` over an int.
const RANGE_LIMIT: i64 = 10_000_000;

enum Flow {
    Normal,
    Break,
    Continue,
}

struct Exec<'a> {
    t: &'a Template,
    funcs: &'a dyn Funcs,
    vars: Vec<(String, Value)>,
    out: String,
    /// The error of the external function whose failure stopped the execution.
    failed_call: Option<FuncError>,
}

/// Go's notion of truth.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Str(s) => !s.is_empty(),
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::List(l) => !l.is_empty(),
        Value::Map(m) => !m.is_empty(),
        Value::Struct(_) | Value::Func(_) => true,
    }
}

/// mcl struct field `raw_query` is `Raw_query` in templates.
fn title(name: &str) -> String {
    let mut c = name.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Str(_) => "string",
        Value::Int(_) => "int64",
        Value::Float(_) => "float64",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        Value::Struct(_) => "struct",
        Value::Func(_) => "func",
    }
}

impl Exec<'_> {
    fn err(&self, pos: usize, at: &str, msg: impl std::fmt::Display) -> String {
        let (l, c) = line_col(&self.t.src, pos);
        format!("template: {}:{l}:{c}: executing \"{}\" at <{at}>: {msg}", self.t.name, self.t.name)
    }

    fn walk(&mut self, nodes: &[Node], dot: &Value) -> Result<Flow, String> {
        for n in nodes {
            match n {
                Node::Text(t) => self.out.push_str(t),
                Node::Action(p) => {
                    let v = self.pipe(p, dot)?;
                    if p.vars.is_empty() {
                        self.out.push_str(&go_print(&v));
                    }
                }
                Node::If(p, then, els) => {
                    let mark = self.vars.len();
                    let v = self.pipe(p, dot)?;
                    let flow = if truthy(&v) { self.walk(then, dot)? } else { self.walk(els, dot)? };
                    self.vars.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::With(p, then, els) => {
                    let mark = self.vars.len();
                    let v = self.pipe(p, dot)?;
                    let flow = if truthy(&v) { self.walk(then, &v)? } else { self.walk(els, dot)? };
                    self.vars.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::Range(p, body, els) => {
                    let mark = self.vars.len();
                    let mut plain = p.clone();
                    plain.vars.clear();
                    let v = self.pipe(&plain, dot)?;
                    let items: Vec<(Value, Value)> = match &v {
                        Value::List(l) => {
                            l.iter().enumerate().map(|(i, e)| (Value::Int(i as i64), e.clone())).collect()
                        }
                        Value::Map(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                        Value::Int(n) if *n > RANGE_LIMIT => {
                            let at = p.cmds.first().map(|c| c.text.as_str()).unwrap_or("");
                            return Err(self.err(
                                p.pos,
                                at,
                                format!("range over {n} is too long (the limit is {RANGE_LIMIT})"),
                            ));
                        }
                        Value::Int(n) => (0..*n).map(|i| (Value::Int(i), Value::Int(i))).collect(),
                        other => {
                            let at = p.cmds.first().map(|c| c.text.as_str()).unwrap_or("");
                            return Err(self.err(p.pos, at, format!("range can't iterate over {}", go_print(other))));
                        }
                    };
                    if items.is_empty() {
                        self.walk(els, dot)?;
                    }
                    for (k, e) in items {
                        let inner = self.vars.len();
                        match p.vars.as_slice() {
                            [one] => self.vars.push((one.clone(), e.clone())),
                            [a, b] => {
                                self.vars.push((a.clone(), k));
                                self.vars.push((b.clone(), e.clone()));
                            }
                            _ => {}
                        }
                        let flow = self.walk(body, &e)?;
                        self.vars.truncate(inner);
                        if matches!(flow, Flow::Break) {
                            break;
                        }
                    }
                    self.vars.truncate(mark);
                }
                Node::Break => return Ok(Flow::Break),
                Node::Continue => return Ok(Flow::Continue),
            }
        }
        Ok(Flow::Normal)
    }

    fn pipe(&mut self, p: &Pipe, dot: &Value) -> Result<Value, String> {
        let mut prev: Option<Value> = None;
        for c in &p.cmds {
            prev = Some(self.cmd(c, dot, prev)?);
        }
        let v = prev.unwrap_or(Value::str(""));
        for name in &p.vars {
            if p.declare {
                self.vars.push((name.clone(), v.clone()));
            } else {
                match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                    Some(slot) => slot.1 = v.clone(),
                    None => return Err(self.err(p.pos, name, format!("undefined variable: {name}"))),
                }
            }
        }
        Ok(v)
    }

    fn field(&self, c: &Cmd, base: Value, chain: &[String]) -> Result<Value, String> {
        let mut v = base;
        for f in chain {
            v = match &v {
                Value::Struct(fields) => match fields.iter().find(|(n, _)| title(n) == *f) {
                    Some((_, x)) => x.clone(),
                    None => {
                        let names: Vec<String> = fields.iter().map(|(n, _)| title(n)).collect();
                        return Err(self.err(
                            c.pos,
                            &c.text,
                            format!("can't evaluate field {f} in type struct (fields: {})", names.join(", ")),
                        ));
                    }
                },
                Value::Map(m) => match m.get(&Value::str(f)) {
                    Some(x) => x.clone(),
                    None if m.keys().next().is_some_and(|k| !matches!(k, Value::Str(_))) => {
                        return Err(self.err(
                            c.pos,
                            &c.text,
                            format!("can't evaluate field {f} in a map with non-string keys"),
                        ));
                    }
                    None => {
                        return Err(self.err(
                            c.pos,
                            &c.text,
                            format!("map has no entry for key {}", lang::value::quote_str(f)),
                        ));
                    }
                },
                other => {
                    return Err(self.err(
                        c.pos,
                        &c.text,
                        format!("can't evaluate field {f} in type {}", go_type(other)),
                    ));
                }
            };
        }
        Ok(v)
    }

    fn operand(&mut self, c: &Cmd, op: &Operand, dot: &Value) -> Result<Value, String> {
        match op {
            Operand::Dot => Ok(dot.clone()),
            Operand::Field(chain) => self.field(c, dot.clone(), chain),
            Operand::Var(n, chain) => {
                let base = match self.vars.iter().rev().find(|(x, _)| x == n) {
                    Some((_, v)) => v.clone(),
                    None => return Err(self.err(c.pos, &c.text, format!("undefined variable: {n}"))),
                };
                self.field(c, base, chain)
            }
            Operand::Str(s) => Ok(Value::str(s)),
            Operand::Int(i) => Ok(Value::Int(*i)),
            Operand::Float(f) => Ok(Value::Float(*f)),
            Operand::Bool(b) => Ok(Value::Bool(*b)),
            Operand::Nil => Err(self.err(c.pos, &c.text, "nil is not a command")),
            Operand::Sub(p, chain) => {
                let v = self.pipe(p, dot)?;
                self.field(c, v, chain)
            }
            Operand::Ident(name) => self.call(c, name, Vec::new()),
        }
    }

    fn cmd(&mut self, c: &Cmd, dot: &Value, piped: Option<Value>) -> Result<Value, String> {
        if let Some(Operand::Ident(name)) = c.args.first() {
            // Short-circuiting `and`/`or` evaluate lazily.
            if (name == "and" || name == "or") && piped.is_none() {
                if c.args.len() < 2 {
                    return Err(self.err(
                        c.pos,
                        &c.text,
                        format!("wrong number of args for {name}: want at least 1 got 0"),
                    ));
                }
                let mut last = Value::Bool(false);
                for a in &c.args[1..] {
                    last = self.operand(c, a, dot)?;
                    if (name == "and") != truthy(&last) {
                        return Ok(last);
                    }
                }
                return Ok(last);
            }
            let mut args = Vec::new();
            for a in &c.args[1..] {
                args.push(self.operand(c, a, dot)?);
            }
            args.extend(piped);
            return self.call(c, name, args);
        }
        if c.args.len() > 1 || piped.is_some() {
            return Err(self.err(c.pos, &c.text, "can't give argument to non-function"));
        }
        self.operand(c, &c.args[0], dot)
    }

    fn call(&mut self, c: &Cmd, name: &str, args: Vec<Value>) -> Result<Value, String> {
        let e = |ex: &Self, m: String| ex.err(c.pos, &c.text, format!("error calling {name}: {m}"));
        let want = |ex: &Self, n: usize| -> Result<(), String> {
            if args.len() != n {
                return Err(ex.err(
                    c.pos,
                    &c.text,
                    format!("wrong number of args for {name}: want {n} got {}", args.len()),
                ));
            }
            Ok(())
        };
        match name {
            "and" | "or" => {
                let mut last = Value::Bool(false);
                for a in args {
                    last = a;
                    if (name == "and") != truthy(&last) {
                        break;
                    }
                }
                Ok(last)
            }
            "not" => {
                want(self, 1)?;
                Ok(Value::Bool(!truthy(&args[0])))
            }
            "len" => {
                want(self, 1)?;
                match &args[0] {
                    Value::Str(s) => Ok(Value::Int(s.len() as i64)),
                    Value::List(l) => Ok(Value::Int(l.len() as i64)),
                    Value::Map(m) => Ok(Value::Int(m.len() as i64)),
                    other => Err(e(self, format!("len of type {}", go_type(other)))),
                }
            }
            "index" => {
                let Some((first, keys)) = args.split_first() else {
                    return Err(self.err(c.pos, &c.text, "wrong number of args for index: want at least 1 got 0"));
                };
                let mut v = first.clone();
                for k in keys {
                    v = match (&v, k) {
                        (Value::List(l), Value::Int(i)) => match usize::try_from(*i).ok().and_then(|i| l.get(i)) {
                            Some(x) => x.clone(),
                            None => return Err(e(self, format!("index out of range: {i}"))),
                        },
                        (Value::Str(s), Value::Int(i)) => {
                            match usize::try_from(*i).ok().and_then(|i| s.as_bytes().get(i)) {
                                Some(b) => Value::Int(*b as i64),
                                None => return Err(e(self, format!("index out of range: {i}"))),
                            }
                        }
                        // Like Go, a missing key gives the zero value of the element type.
                        (Value::Map(m), k) => match m.get(k) {
                            Some(x) => x.clone(),
                            None => match m.values().next() {
                                Some(any) => Value::zero(&crate::printf::value_type(any)),
                                None => Value::str(""),
                            },
                        },
                        (other, _) => return Err(e(self, format!("can't index item of type {}", go_type(other)))),
                    };
                }
                Ok(v)
            }
            "print" => Ok(Value::str(go_sprint(&args))),
            "println" => Ok(Value::str(format!("{}\n", args.iter().map(go_print).collect::<Vec<_>>().join(" ")))),
            "printf" => {
                let Some((Value::Str(f), rest)) = args.split_first() else {
                    return Err(e(self, "printf needs a format string".into()));
                };
                Ok(Value::str(go_sprintf(f, rest)))
            }
            "eq" | "ne" | "lt" | "le" | "gt" | "ge" => {
                if args.len() < 2 {
                    return Err(self.err(
                        c.pos,
                        &c.text,
                        format!("wrong number of args for {name}: want 2 got {}", args.len()),
                    ));
                }
                if name == "eq" {
                    for b in &args[1..] {
                        if basic_cmp(&args[0], b).map_err(|m| e(self, m))? == std::cmp::Ordering::Equal {
                            return Ok(Value::Bool(true));
                        }
                    }
                    return Ok(Value::Bool(false));
                }
                want(self, 2)?;
                let o = basic_cmp(&args[0], &args[1]).map_err(|m| e(self, m))?;
                use std::cmp::Ordering::*;
                Ok(Value::Bool(match name {
                    "ne" => o != Equal,
                    "lt" => o == Less,
                    "le" => o != Greater,
                    "gt" => o == Greater,
                    _ => o != Less,
                }))
            }
            "html" => Ok(Value::str(crate::core::golang_std::html_escape(&go_sprint(&args)))),
            "urlquery" => Ok(Value::str(url_query_escape(&go_sprint(&args)))),
            _ => match self.funcs.call(name, args) {
                Some(r) => r.map_err(|err| {
                    let message = e(self, err.message().to_string());
                    self.failed_call = Some(err);
                    message
                }),
                None => Err(self.err(c.pos, &c.text, format!("function {name:?} not defined"))),
            },
        }
    }
}

fn basic_cmp(a: &Value, b: &Value) -> Result<std::cmp::Ordering, String> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).ok_or_else(|| "can't compare NaN".to_string()),
        (Value::Int(x), Value::Float(y)) => (*x as f64).partial_cmp(y).ok_or_else(|| "can't compare NaN".to_string()),
        (Value::Float(x), Value::Int(y)) => x.partial_cmp(&(*y as f64)).ok_or_else(|| "can't compare NaN".to_string()),
        (Value::Str(x), Value::Str(y)) => Ok(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Ok(x.cmp(y)),
        (x, y) => Err(format!("incompatible types for comparison: {} and {}", go_type(x), go_type(y))),
    }
}

fn url_query_escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Go value printing

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // Shortest `%g` switches to an exponent below 1e-4 and from 1e6 (Go uses a
    // precision of 6 for this decision).
    if !(-4..6).contains(&exp) {
        return format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    format!("{f}")
}

/// Go's `fmt` `%v` of the Go value mgmt builds from an mcl value.
pub fn go_print(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => go_float(*f),
        Value::List(l) => format!("[{}]", l.iter().map(go_print).collect::<Vec<_>>().join(" ")),
        Value::Map(m) => {
            format!(
                "map[{}]",
                m.iter().map(|(k, v)| format!("{}:{}", go_print(k), go_print(v))).collect::<Vec<_>>().join(" ")
            )
        }
        Value::Struct(fs) => format!("{{{}}}", fs.iter().map(|(_, v)| go_print(v)).collect::<Vec<_>>().join(" ")),
        Value::Func(_) => "func".into(),
    }
}

/// Go's `fmt.Sprint`: spaces only between operands when neither is a string.
pub fn go_sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !matches!(a, Value::Str(_)) && !matches!(args[i - 1], Value::Str(_)) {
            out.push(' ');
        }
        out.push_str(&go_print(a));
    }
    out
}

/// Go's `fmt.Sprintf` for the common verbs (`%v %s %d %f %e %g %t %q %x %X %o %b %c %%`)
/// with flags `-+ 0#`, width and precision. Errors print inline the Go way
/// (`%!d(string=x)`, `%!v(MISSING)`).
pub fn go_sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut argi = 0;
    for piece in crate::gofmt::pieces(format) {
        let d = match piece {
            Piece::Lit(text) => {
                out.push_str(text);
                continue;
            }
            Piece::Percent => {
                out.push('%');
                continue;
            }
            Piece::NoVerb => {
                out.push_str("%!(NOVERB)");
                break;
            }
            Piece::Verb(d) if d.verb == '%' => {
                out.push('%');
                continue;
            }
            Piece::Verb(d) => d,
        };
        let (verb, prec, plus, space) = (d.verb, d.precision, d.plus, d.space);
        let Some(a) = args.get(argi) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        argi += 1;
        let bad = || format!("%!{verb}({}={})", go_type(a), go_print(a));
        let body = match (verb, a) {
            ('v', _) => match (a, prec) {
                (Value::Float(f), Some(p)) => format!("{f:.p$}"),
                _ => go_print(a),
            },
            ('s', Value::Str(s)) => match prec {
                Some(p) => s.chars().take(p).collect(),
                None => s.to_string(),
            },
            ('s', _) => go_print(a),
            ('q', Value::Str(s)) => lang::value::quote_str(s),
            ('t', Value::Bool(b)) => b.to_string(),
            ('d', Value::Int(i)) => {
                let s = i.to_string();
                if plus && *i >= 0 {
                    format!("+{s}")
                } else if space && *i >= 0 {
                    format!(" {s}")
                } else {
                    s
                }
            }
            ('x', Value::Int(i)) => format!("{}{:x}", if *i < 0 { "-" } else { "" }, i.unsigned_abs()),
            ('X', Value::Int(i)) => format!("{}{:X}", if *i < 0 { "-" } else { "" }, i.unsigned_abs()),
            ('o', Value::Int(i)) => format!("{}{:o}", if *i < 0 { "-" } else { "" }, i.unsigned_abs()),
            ('b', Value::Int(i)) => format!("{}{:b}", if *i < 0 { "-" } else { "" }, i.unsigned_abs()),
            ('c', Value::Int(i)) => char::from_u32(*i as u32).map(String::from).unwrap_or_else(|| "\u{fffd}".into()),
            ('x', Value::Str(s)) => s.bytes().map(|b| format!("{b:02x}")).collect(),
            ('f' | 'F', Value::Float(f)) => {
                let p = prec.unwrap_or(6);
                let s = format!("{f:.p$}");
                if plus && *f >= 0.0 { format!("+{s}") } else { s }
            }
            ('e', Value::Float(f)) => go_exp(*f, prec.unwrap_or(6)),
            ('g', Value::Float(f)) => go_float(*f),
            _ => bad(),
        };
        let (w, n) = (d.width, body.chars().count());
        if n >= w {
            out.push_str(&body);
        } else if d.minus {
            out.push_str(&body);
            out.push_str(&" ".repeat(w - n));
        } else if d.zero && matches!(a, Value::Int(_) | Value::Float(_)) {
            let (sign, digits) = match body.strip_prefix(['-', '+']) {
                Some(d) => (&body[..1], d),
                None => ("", body.as_str()),
            };
            out.push_str(sign);
            out.push_str(&"0".repeat(w - n));
            out.push_str(digits);
        } else {
            out.push_str(&" ".repeat(w - n));
            out.push_str(&body);
        }
    }
    if argi < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[argi..].iter().map(|a| format!("{}={}", go_type(a), go_print(a))).collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}

fn go_exp(f: f64, prec: usize) -> String {
    let s = format!("{f:.prec$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// Renders `src` with `dot`, in one step.
pub fn render(src: &str, dot: &Value, funcs: &dyn Funcs) -> Result<String, RenderError> {
    let t = Template::parse("template", src)
        .map_err(|e| RenderError { message: format!("template: parse error: {e}"), cause: None })?;
    t.execute(dot, funcs).map_err(|e| RenderError { message: format!("template: execution error: {e}"), ..e })
}

/// A map of string keys, for tests and callers building `.`.
pub fn str_map(entries: &[(&str, Value)]) -> Value {
    Value::map(entries.iter().map(|(k, v)| (Value::str(k), v.clone())).collect::<BTreeMap<_, _>>())
}
