//! Statements (spec section 3): binds, if/for/forkv, func, class, include, import, panic,
//! resources with their bodies, and edge statements.

use super::{Fail, PResult, Parser};
use crate::diag::{Code, Diagnostic, Stage};
use crate::span::Span;
use crate::syntax::ast::{
    Collector, EdgeHalf, EdgeLink, EdgeSide, Expr, ExprKind, Ident, ImportAlias, Lambda, NodeMatch, Query, ResEntry,
    ResEntryKind, Resource, Stmt, StmtKind, TypeAnn, Virtuality,
};
use crate::syntax::token::{self, Tok};
use crate::types::Type;

const STMT_START: &str = "a statement";
const ENTRY_START: &str =
    "a field name, an edge property (`Before`, `Depend`, `Notify`, `Listen`), `Meta`, `* =>` or `}`";

impl Parser<'_> {
    /// One statement, without its terminating newline.
    pub(super) fn stmt(&mut self) -> PResult<Stmt> {
        if self.at_private() {
            let private = self.bump().1;
            let mut stmt = self.stmt()?;
            stmt.span = private.to(stmt.span);
            stmt.private = Some(private);
            return Ok(stmt);
        }
        let start = self.span();
        let kind = match self.peek() {
            Tok::Dollar if self.at_var_link() => self.edge_stmt()?,
            Tok::Str if self.at_link_after(1) => self.edge_stmt()?,
            Tok::Dollar => self.bind()?,
            Tok::If => self.if_stmt()?,
            Tok::For | Tok::ForKv => self.for_stmt()?,
            Tok::Func => self.func_stmt()?,
            Tok::Class => self.class_stmt()?,
            Tok::Include => self.include()?,
            Tok::Import => self.import()?,
            Tok::Panic => self.panic_stmt()?,
            Tok::Collect => {
                self.bump();
                if !matches!(self.peek(), Tok::Ident) {
                    let note = "`collect` starts a collect resource statement: `collect file $names { ... }`";
                    return Err(self.unexpected_note("a resource kind", Some(note)));
                }
                StmtKind::Resource(self.resource(true)?)
            }
            Tok::Ident if self.at_word("realize") && matches!(self.peek_at(1), Tok::LParen) => self.realize()?,
            Tok::Ident if self.at_type_decl() => self.type_decl()?,
            Tok::Ident
                if self.at_word("define")
                    && matches!(self.peek_at(1), Tok::Ident)
                    && matches!(self.peek_at(2), Tok::LParen | Tok::LBrace | Tok::Colon) =>
            {
                self.define_stmt()?
            }
            Tok::Ident
                if self.at_word("node")
                    && (matches!(self.peek_at(1), Tok::Str | Tok::Regex)
                        || (self.at_word_at(1, "default") && matches!(self.peek_at(2), Tok::LBrace | Tok::Comma))) =>
            {
                self.node_stmt()?
            }
            Tok::Ident => StmtKind::Resource(self.resource(false)?),
            Tok::At | Tok::AtAt => {
                let virtuality = if self.bump().0 == Tok::At { Virtuality::Virtual } else { Virtuality::Exported };
                if !matches!(self.peek(), Tok::Ident) {
                    let note =
                        "a virtual resource is written `@file \"/x\" { … }`, an exported one `@@file \"/x\" { … }`";
                    return Err(self.unexpected_note("a resource kind", Some(note)));
                }
                let mut res = self.resource(false)?;
                res.virtuality = virtuality;
                StmtKind::Resource(res)
            }
            Tok::Cap => self.cap_stmt()?,
            Tok::LBrack => self.edge_stmt()?,
            Tok::Else => {
                let note = "`else` must be on the same line as the `}` that closes the if branch: `} else {`";
                return Err(self.unexpected_note(STMT_START, Some(note)));
            }
            _ => return Err(self.unexpected(STMT_START)),
        };
        Ok(Stmt { kind, span: start.to(self.prev_span()), private: None })
    }

    /// `private` before `class`, `func` or a bind (`private $x = …`, `private $x T = …`).
    /// Only there is it a keyword: `private $x { … }` stays a resource of kind `private`.
    fn at_private(&self) -> bool {
        self.at_word("private")
            && match self.peek_at(1) {
                Tok::Class | Tok::Func => true,
                Tok::Ident if self.at_word_at(1, "type") => true,
                Tok::Dollar => !matches!(self.peek_at(3), Tok::LBrace),
                _ => false,
            }
    }

    /// `bind = "$" NAME [ type ] "=" expr`.
    fn bind(&mut self) -> PResult<StmtKind> {
        let dollar = self.bump().1;
        let name = self.binding_name(dollar)?;
        let ann = if self.at_type_start() { Some(self.type_ann()?) } else { None };
        if !self.at(&Tok::Equals) {
            let note = match (self.peek(), &ann) {
                (Tok::Dot, None) => Some("only undotted names can be bound"),
                (Tok::Equals | Tok::Rocket, _) => None,
                _ if ann.is_none() => Some("a bind is written `$name = value` or `$name type = value`"),
                _ => None,
            };
            return Err(self.unexpected_note("`=`", note));
        }
        self.bump();
        if self.at(&Tok::Equals) {
            let span = self.span();
            return Err(self.error("syntax error: additional equals in bind statement", span));
        }
        let value = self.expr()?;
        if let Some(ann) = &ann {
            self.check_literal_type(&value, ann)?;
        }
        Ok(StmtKind::Bind { name, ann, value })
    }

    /// An annotation on a scalar literal of another type is rejected right away
    /// (spec 2.2); other expressions are checked by unification.
    fn check_literal_type(&mut self, value: &Expr, ann: &TypeAnn) -> PResult<()> {
        let literal = match value.kind {
            ExprKind::Bool(_) => Type::Bool,
            ExprKind::Int(_) => Type::Int,
            ExprKind::Float(_) => Type::Float,
            ExprKind::RawStr(_) => Type::Str,
            _ => return Ok(()),
        };
        if ann.ty == literal || ann.ty == Type::Variant || matches!(ann.ty, Type::Named(_)) {
            return Ok(());
        }
        let message =
            format!("can't set return type in parser: a {literal} literal can't have the declared type `{}`", ann.ty);
        self.diags.push(
            Diagnostic::new(Stage::LexParse, message, value.span)
                .with_code(Code::Syntax)
                .with_label(ann.span, "type declared here"),
        );
        Err(Fail)
    }

    /// `if_stmt = "if" expr block [ "else" block ]`.
    fn if_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let cond = self.expr()?;
        let then = self.block()?;
        let els = if self.eat(&Tok::Else).is_some() { Some(self.block()?) } else { None };
        Ok(StmtKind::If { cond, then, els })
    }

    /// `("for" | "forkv") "$" NAME "," "$" NAME "in" expr block`.
    fn for_stmt(&mut self) -> PResult<StmtKind> {
        let (keyword, _) = self.bump();
        let kv = matches!(keyword, Tok::ForKv);
        let dollar = self.expect(&Tok::Dollar, "`$` and a loop variable")?;
        let first = self.binding_name(dollar)?;
        self.expect(&Tok::Comma, "`,` (both loop variables are required)")?;
        let dollar = self.expect(&Tok::Dollar, "`$` and a loop variable")?;
        let value = self.binding_name(dollar)?;
        self.expect(&Tok::In, "`in`")?;
        let iter = self.expr()?;
        let body = self.block()?;
        Ok(if kv {
            StmtKind::ForKv { key: first, value, iter, body }
        } else {
            StmtKind::For { index: first, value, iter, body }
        })
    }

    /// `func_stmt = "func" IDENT "(" params ")" [ type ] body`.
    fn func_stmt(&mut self) -> PResult<StmtKind> {
        let start = self.span();
        if matches!(self.peek_at(1), Tok::LParen) {
            self.bump();
            let note = "a lambda is an expression: bind it (`$f = func(...) {...}`) or name it (`func f(...) {...}`)";
            return Err(self.unexpected_note("a function name", Some(note)));
        }
        self.bump();
        let name = self.plain_ident("a function name")?;
        let params = self.params()?;
        let ret = if self.at(&Tok::LBrace) { None } else { Some(self.type_ann()?) };
        let (body, close) = self.func_body()?;
        Ok(StmtKind::Func { name, func: Lambda { params, ret, body: Box::new(body), span: start.to(close) } })
    }

    fn func_body(&mut self) -> PResult<(Expr, Span)> {
        self.open(&Tok::LBrace)?;
        self.skip_newlines();
        let body = self.expr()?;
        self.skip_newlines();
        let close = self.close(&Tok::RBrace, "`}` (a function body holds exactly one expression)")?;
        Ok((body, close))
    }

    /// `class_stmt = "class" colon_name [ "(" params ")" ] [ "inherits" colon_name ] block`.
    fn class_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let name = self.colon_name()?;
        let params = if self.at(&Tok::LParen) { Some(self.params()?) } else { None };
        let inherits = if self.at_word("inherits") {
            self.bump();
            Some(self.colon_name()?)
        } else {
            None
        };
        let body = self.block()?;
        Ok(StmtKind::Class { name, params, body, define: None, inherits })
    }

    /// `define_stmt = "define" colon_name [ "(" params ")" ] block`: a defined resource
    /// type. `define` is a keyword only when a name and `(` or `{` follow it, where mgmt's
    /// grammar has nothing valid (a resource of kind `define` would need a name expression).
    fn define_stmt(&mut self) -> PResult<StmtKind> {
        let keyword = self.bump().1;
        let name = self.colon_name()?;
        let params = if self.at(&Tok::LParen) { Some(self.params()?) } else { None };
        if self.at_word("inherits") {
            let note = "a defined type inherits nothing; put what two of them share in a class or another define";
            return Err(self.unexpected_note("`{` to start the define's body", Some(note)));
        }
        let body = self.block()?;
        Ok(StmtKind::Class { name, params, body, define: Some(keyword), inherits: None })
    }

    /// `include = "include" dotted [ "(" args ")" ] [ "as" IDENT ]`.
    fn include(&mut self) -> PResult<StmtKind> {
        self.bump();
        let name = self.dotted("a class name")?;
        let args = if self.at(&Tok::LParen) { Some(self.args()?.0) } else { None };
        let alias = if self.eat(&Tok::As).is_some() {
            if self.at(&Tok::Star) {
                let span = self.span();
                let fail = self.error("syntax error: `include ... as *` is not supported", span);
                return Err(fail);
            }
            Some(self.plain_ident("an alias name")?)
        } else {
            None
        };
        Ok(StmtKind::Include { name, args, alias })
    }

    /// `import = "import" STRING [ "as" ( IDENT | "*" ) ]`.
    fn import(&mut self) -> PResult<StmtKind> {
        self.bump();
        let (path, path_span) = match self.peek() {
            Tok::Str => (token::str_body(self.word()).to_string(), self.bump().1),
            _ => return Err(self.unexpected("the import path as a string")),
        };
        let alias = if self.eat(&Tok::As).is_some() {
            match self.eat(&Tok::Star) {
                Some(span) => Some(ImportAlias::Star(span)),
                None => Some(ImportAlias::Name(self.plain_ident("an alias name or `*`")?)),
            }
        } else {
            None
        };
        Ok(StmtKind::Import { path, path_span, alias })
    }

    /// `panic_stmt = "panic" "(" args ")"` with one or two arguments.
    fn panic_stmt(&mut self) -> PResult<StmtKind> {
        let start = self.bump().1;
        if !self.at(&Tok::LParen) {
            return Err(self.unexpected("`(`"));
        }
        let (args, span) = self.args()?;
        if args.is_empty() || args.len() > 2 {
            let message = format!("syntax error: panic takes one or two arguments, got {}", args.len());
            return Err(self.error(message, start.to(span)));
        }
        Ok(StmtKind::Panic { args })
    }

    /// `colon_name = IDENT { ":" IDENT }`, joined with `:`.
    fn colon_name(&mut self) -> PResult<Ident> {
        let first = self.plain_ident("a name")?;
        let mut name = first.name;
        let mut span = first.span;
        while self.eat(&Tok::Colon).is_some() {
            let part = self.plain_ident("a name after `:`")?;
            name.push(':');
            name.push_str(&part.name);
            span = span.to(part.span);
        }
        Ok(Ident { name, span })
    }

    /// `cap_name = CAP { ":" CAP }`, lower-cased and joined with `:`.
    fn cap_name(&mut self) -> PResult<Ident> {
        let mut name = String::new();
        let start = self.span();
        loop {
            match self.peek() {
                Tok::Cap => name.push_str(&token::cap_name(self.word())),
                _ => return Err(self.unexpected("a capitalized resource kind (`File`, `Test`, ...)")),
            }
            self.bump();
            if self.eat(&Tok::Colon).is_none() {
                break;
            }
            name.push(':');
        }
        Ok(Ident { name, span: start.to(self.prev_span()) })
    }

    // ---- resources ----

    /// `resource = colon_name expr "{" { NL | entry } "}"`.
    fn resource(&mut self, collect: bool) -> PResult<Resource> {
        let kind = self.colon_name()?;
        let note = match self.peek() {
            Tok::LParen | Tok::Dot => {
                Some("a function call is an expression, not a statement: bind its value with `$x = ...`")
            }
            Tok::Equals => Some("variables are written with a `$`: `$x = ...`"),
            _ => None,
        };
        if note.is_some() {
            return Err(self.unexpected_note("a resource name after the resource kind", note));
        }
        if self.at(&Tok::LBrace) {
            let note = "a resource needs a name: `file \"/tmp/x\" { ... }`";
            return Err(self.unexpected_note("the resource name", Some(note)));
        }
        let name = self.expr()?;
        if !self.at(&Tok::LBrace) {
            return Err(self.unexpected("`{` to start the resource body"));
        }
        let entries = self.res_body()?;
        Ok(Resource { kind, name, entries, collect, virtuality: Virtuality::Real })
    }

    /// `"{" { NL | entry } "}"`: the body of a resource, defaults, an override or a collector.
    fn res_body(&mut self) -> PResult<Vec<ResEntry>> {
        self.open(&Tok::LBrace)?;
        let first = self.entries.len();
        loop {
            self.skip_newlines();
            if self.at(&Tok::RBrace) || self.at(&Tok::Eof) {
                break;
            }
            let base = self.delims.len();
            let before = self.pos;
            match self.res_entry() {
                Ok(entry) => self.entries.push(entry),
                Err(_) => {
                    self.recover_entry(base);
                    if self.pos == before {
                        self.bump();
                    }
                }
            }
        }
        let entries: Vec<ResEntry> = self.entries.drain(first..).collect();
        self.close(&Tok::RBrace, "`}` or a resource field")?;
        Ok(entries)
    }

    /// A statement that starts with a capitalised kind: defaults (`File { … }`), an
    /// override (`File["/a"] { … }`) or a relationship (`File["/a"] -> …`).
    fn cap_stmt(&mut self) -> PResult<StmtKind> {
        let start = self.pos;
        let kind = self.cap_name()?;
        if self.at(&Tok::LBrace) {
            let entries = self.res_body()?;
            return Ok(StmtKind::Defaults { kind, entries });
        }
        self.pos = start;
        self.edge_stmt()
    }

    /// One `... ,` entry of a resource body.
    fn res_entry(&mut self) -> PResult<ResEntry> {
        let start = self.span();
        let kind = match self.peek() {
            Tok::Ident => {
                let name = self.plain_ident("a field name")?;
                if self.eat(&Tok::Append).is_some() {
                    let value = self.expr()?;
                    ResEntryKind::Append { name, value }
                } else {
                    self.expect(&Tok::Rocket, "`=>` after the field name")?;
                    let (cond, value) = self.maybe_elvis()?;
                    ResEntryKind::Field { name, cond: cond.map(Box::new), value }
                }
            }
            Tok::Star => {
                self.bump();
                self.expect(&Tok::Rocket, "`=>` after `*`")?;
                ResEntryKind::Splat { value: self.expr()? }
            }
            Tok::Cap if self.word().eq_ignore_ascii_case("meta") => {
                self.bump();
                let name = if self.eat(&Tok::Colon).is_some() {
                    Some(self.plain_ident("a meta parameter name")?)
                } else {
                    None
                };
                self.expect(&Tok::Rocket, "`=>`")?;
                let (cond, value) = self.maybe_elvis()?;
                ResEntryKind::Meta { name, cond: cond.map(Box::new), value }
            }
            Tok::Cap => {
                let prop = Ident { name: token::cap_name(self.word()), span: self.bump().1 };
                if self.at(&Tok::Colon) {
                    let message = format!("can't use unknown resource field: {}", prop.name);
                    return Err(self.error(message, prop.span));
                }
                self.expect(&Tok::Rocket, "`=>` after the edge property")?;
                let cond = if matches!(self.peek(), Tok::Cap) {
                    None
                } else {
                    let cond = self.expr()?;
                    if !self.at(&Tok::Elvis) {
                        let message = format!("can't use unknown resource field: {}", prop.name);
                        let note = "an edge property takes a resource reference like `File[\"/tmp/x\"]`, \
                                    optionally behind a condition: `$cond ?: File[\"/tmp/x\"]`";
                        return Err(self.error_note(message, prop.span, note));
                    }
                    self.bump();
                    Some(cond)
                };
                let target = self.edge_half(false)?;
                ResEntryKind::Edge { prop, cond: cond.map(Box::new), target: Box::new(target) }
            }
            _ => return Err(self.unexpected(ENTRY_START)),
        };
        if !self.at(&Tok::Comma) {
            let note = "every entry of a resource body ends with a comma, the last one too";
            return Err(self.unexpected_note("a trailing comma", Some(note)));
        }
        let comma = self.bump().1;
        Ok(ResEntry { kind, span: start.to(comma) })
    }

    /// `expr [ "?:" expr ]`: returns the condition (if any) and the value.
    fn maybe_elvis(&mut self) -> PResult<(Option<Expr>, Expr)> {
        let first = self.expr()?;
        if self.eat(&Tok::Elvis).is_some() {
            let value = self.expr()?;
            Ok((Some(first), value))
        } else {
            Ok((None, first))
        }
    }

    // ---- edges ----

    /// `edge_half = cap_name "[" expr "]"`, with an optional `.field` for send/recv; or
    /// `Resource "[" STRING "," expr "]"`, the kind given as a string.
    pub(super) fn edge_half(&mut self, allow_field: bool) -> PResult<EdgeHalf> {
        let mut kind = self.cap_name()?;
        if !self.at(&Tok::LBrack) {
            return Err(self.unexpected("`[` and the resource name"));
        }
        self.open(&Tok::LBrack)?;
        let mut name = self.expr()?;
        if kind.name == "resource" && self.eat(&Tok::Comma).is_some() {
            let ExprKind::RawStr(written) = &name.kind else {
                let note = "`Resource[\"file\", \"/x\"]` names the kind with a string literal";
                return Err(self.error_note(
                    "syntax error: the kind of `Resource[…]` must be a string",
                    name.span,
                    note,
                ));
            };
            kind = Ident { name: written.replace("::", ":").to_lowercase(), span: name.span };
            name = self.expr()?;
        }
        let close = self.close(&Tok::RBrack, "`]`")?;
        let field = if allow_field && self.eat(&Tok::Dot).is_some() {
            Some(self.plain_ident("a field name to send or receive")?)
        } else {
            None
        };
        let end = field.as_ref().map_or(close, |f| f.span);
        Ok(EdgeHalf { span: kind.span.to(end), kind, name, field })
    }

    /// `edge = side { link side }` with `link = "->" | "~>" | "<-" | "<~"`, or a send/recv
    /// pair `edge_half "." IDENT "->" edge_half "." IDENT`.
    fn edge_stmt(&mut self) -> PResult<StmtKind> {
        let mut sides = vec![self.edge_side()?];
        if sides[0].collector.is_some() && self.peek_link().is_none() {
            let collector = sides.pop().and_then(|side| side.collector).expect("a collector side");
            return Ok(StmtKind::Collect(*collector));
        }
        if self.at(&Tok::LBrace) && sides[0].refs.len() == 1 && sides[0].refs[0].field.is_none() {
            let target = sides.pop().and_then(|side| side.refs.into_iter().next()).expect("one reference");
            let entries = self.res_body()?;
            return Ok(StmtKind::Override { target, entries });
        }
        let mut links = Vec::new();
        while let Some(link) = self.edge_link() {
            links.push(link);
            sides.push(self.edge_side()?);
        }
        let refs = || sides.iter().flat_map(|side| &side.refs);
        let with_field = refs().filter(|h| h.field.is_some()).count();
        if with_field > 0 {
            let plain_pair = sides.len() == 2 && sides.iter().all(|s| s.refs.len() == 1) && with_field == 2;
            let span = sides[0].span.to(sides[sides.len() - 1].span);
            if !plain_pair {
                let note = "send/recv is written `Kind1[name1].field1 -> Kind2[name2].field2`";
                return Err(self.error_note(
                    "syntax error: a send/recv edge needs exactly two halves, each with a `.field`",
                    span,
                    note,
                ));
            }
            if links[0].notify || links[0].backward {
                let note = "send/recv flows left to right: `Kind1[name1].field1 -> Kind2[name2].field2`";
                let message = format!("syntax error: a send/recv edge is written with `->`, not `{}`", links[0].text());
                return Err(self.error_note(message, links[0].span, note));
            }
        }
        Ok(StmtKind::Edge { sides, links })
    }

    /// One side of a relationship: `edge_half`, a collector, or
    /// `"[" edge_half { "," edge_half } [","] "]"`.
    fn edge_side(&mut self) -> PResult<EdgeSide> {
        if self.at(&Tok::Dollar) {
            let half = self.var_half()?;
            return Ok(EdgeSide { span: half.span, refs: vec![half], collector: None });
        }
        if self.at(&Tok::Str) {
            let half = self.class_half();
            return Ok(EdgeSide { span: half.span, refs: vec![half], collector: None });
        }
        if !self.at(&Tok::LBrack) {
            let start = self.pos;
            let kind = self.cap_name()?;
            if matches!(self.peek(), Tok::CollectOpen | Tok::ExportOpen) {
                let collector = self.collector(kind)?;
                return Ok(EdgeSide { span: collector.span, refs: Vec::new(), collector: Some(Box::new(collector)) });
            }
            self.pos = start;
            let half = self.edge_half(true)?;
            return Ok(EdgeSide { span: half.span, refs: vec![half], collector: None });
        }
        let open = self.open(&Tok::LBrack)?;
        let refs = self.ref_list(&Tok::RBrack)?;
        let close = self.close(&Tok::RBrack, "`,` or `]`")?;
        Ok(EdgeSide { refs, collector: None, span: open.to(close) })
    }

    /// `[ edge_half { "," edge_half } [","] ]` up to (not past) `close`, newlines allowed.
    fn ref_list(&mut self, close: &Tok) -> PResult<Vec<EdgeHalf>> {
        let mut refs = Vec::new();
        loop {
            self.skip_newlines();
            if self.at(close) {
                break;
            }
            refs.push(match self.peek() {
                Tok::Dollar => self.var_half()?,
                Tok::Str => self.class_half(),
                _ => self.edge_half(false)?,
            });
            self.skip_newlines();
            if self.eat(&Tok::Comma).is_none() {
                self.skip_newlines();
                break;
            }
        }
        Ok(refs)
    }

    /// `"$" dotted`: a variable holding a resource reference (`$r = File["/x"]`) or a list of
    /// them, as a relationship side: a half whose kind is empty.
    fn var_half(&mut self) -> PResult<EdgeHalf> {
        let dollar = self.bump().1;
        let name = self.dotted("a variable name")?;
        let span = dollar.to(name.span);
        let var = Expr { kind: ExprKind::Var(Ident { name: name.name, span }), span };
        Ok(EdgeHalf { kind: Ident { name: String::new(), span }, name: var, field: None, span })
    }

    /// A string as a relationship side: Puppet's shorthand for `Class["name"]`.
    fn class_half(&mut self) -> EdgeHalf {
        let text = token::str_body(self.word()).to_string();
        let span = self.bump().1;
        let name = Expr { kind: ExprKind::RawStr(text), span };
        EdgeHalf { kind: Ident { name: "class".to_string(), span }, name, field: None, span }
    }

    /// Whether a statement starting with `$name` is a relationship (`$r -> Exec["y"]`).
    fn at_var_link(&self) -> bool {
        matches!(self.peek_at(1), Tok::Ident) && self.at_link_after(2)
    }

    /// Whether the token `i` ahead starts a relationship operator.
    fn at_link_after(&self, i: usize) -> bool {
        match self.peek_at(i) {
            Tok::Arrow | Tok::NotifyArrow | Tok::NotifyBack => true,
            Tok::Lt => matches!(self.peek_at(i + 1), Tok::Minus) && self.span_at(i + 1).start == self.span_at(i).end,
            _ => false,
        }
    }

    /// The relationship operator that comes next, if any, without consuming it: whether it
    /// notifies, whether it points backward, and how many tokens it takes (`<-` is `<` and
    /// `-` side by side).
    fn peek_link(&self) -> Option<(bool, bool, usize)> {
        match self.peek() {
            Tok::Arrow => Some((false, false, 1)),
            Tok::NotifyArrow => Some((true, false, 1)),
            Tok::NotifyBack => Some((true, true, 1)),
            Tok::Lt if matches!(self.peek_at(1), Tok::Minus) && self.span_at(1).start == self.span().end => {
                Some((false, true, 2))
            }
            _ => None,
        }
    }

    /// `collector = cap_name ("<|" [query] "|>" | "<<|" [query] "|>>") [body]`, the kind
    /// already read.
    fn collector(&mut self, kind: Ident) -> PResult<Collector> {
        let exported = self.bump().0 == Tok::ExportOpen;
        let (close, text) = if exported { (Tok::ExportClose, "`|>>`") } else { (Tok::CollectClose, "`|>`") };
        let query = if self.at(&close) { None } else { Some(self.query_or()?) };
        let end = self.expect(&close, &format!("{text}, `and` or `or`"))?;
        let entries = if self.at(&Tok::LBrace) { self.res_body()? } else { Vec::new() };
        Ok(Collector { span: kind.span.to(self.prev_span()).to(end), kind, exported, query, entries })
    }

    fn query_or(&mut self) -> PResult<Query> {
        let mut q = self.query_and()?;
        while self.eat(&Tok::Or).is_some() {
            let rhs = self.query_and()?;
            q = Query::Or(Box::new(q), Box::new(rhs));
        }
        Ok(q)
    }

    fn query_and(&mut self) -> PResult<Query> {
        let mut q = self.query_atom()?;
        while self.eat(&Tok::And).is_some() {
            let rhs = self.query_atom()?;
            q = Query::And(Box::new(q), Box::new(rhs));
        }
        Ok(q)
    }

    /// `"(" query ")"` or `attr ("==" | "!=") value`, the value a literal or a variable.
    fn query_atom(&mut self) -> PResult<Query> {
        if self.at(&Tok::LParen) {
            self.open(&Tok::LParen)?;
            let q = self.nested(|p| p.query_or())?;
            self.close(&Tok::RParen, "`)`, `and` or `or`")?;
            return Ok(q);
        }
        let attr = self.plain_ident("a param name, `title` or `tag` to compare")?;
        let equal = match self.peek() {
            Tok::EqEq => true,
            Tok::NotEq => false,
            _ => return Err(self.unexpected("`==` or `!=`")),
        };
        self.bump();
        let value = self.unary()?;
        let plain = matches!(
            value.kind,
            ExprKind::Bool(_)
                | ExprKind::Int(_)
                | ExprKind::Float(_)
                | ExprKind::RawStr(_)
                | ExprKind::Str(_)
                | ExprKind::Interp(_)
                | ExprKind::Var(_)
        );
        if !plain {
            let note = "as in Puppet, a query compares with a literal or a variable: bind anything else first";
            return Err(self.error_note(
                "syntax error: a collector query compares with a literal or a variable",
                value.span,
                note,
            ));
        }
        Ok(Query::Compare { span: attr.span.to(value.span), attr, equal, value })
    }

    /// `node = "node" matcher { "," matcher } block` with `matcher = STRING | REGEX | "default"`.
    fn node_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let mut matchers = Vec::new();
        loop {
            let (tok, span) = (*self.peek(), self.span());
            let body = token::str_body(self.word());
            let m = match tok {
                Tok::Str if !body.contains('\\') && !body.contains("${") => {
                    NodeMatch::Name { name: body.to_string(), span }
                }
                Tok::Str => {
                    return Err(self
                        .error("syntax error: a node's host name is a plain string, without escapes or `${}`", span));
                }
                Tok::Regex => NodeMatch::Regex { pattern: body.to_string(), span },
                Tok::Ident if self.at_word("default") => NodeMatch::Default(span),
                _ => {
                    return Err(
                        self.unexpected("a host name (\"web1\"), a regular expression (/^db\\d+$/) or `default`")
                    );
                }
            };
            self.bump();
            matchers.push(m);
            if self.eat(&Tok::Comma).is_none() {
                break;
            }
        }
        if self.at_word("inherits") {
            let span = self.span();
            let note = "put what several nodes share in a class, and include it in each";
            return Err(self.error_note("syntax error: node inheritance (`inherits`) is not supported", span, note));
        }
        if !self.at(&Tok::LBrace) {
            return Err(self.unexpected("`,` or `{` to start the node's body"));
        }
        let body = self.block()?;
        Ok(StmtKind::Node { matchers, body })
    }

    /// `realize "(" edge_half { "," edge_half } [","] ")"`.
    fn realize(&mut self) -> PResult<StmtKind> {
        self.bump();
        self.open(&Tok::LParen)?;
        if self.at(&Tok::Str) {
            let note = "the string shorthand for `Class[\"name\"]` is for relationships; realize names resources";
            return Err(
                self.unexpected_note("a resource reference (`File[\"/x\"]`) or a variable holding one", Some(note))
            );
        }
        let refs = self.ref_list(&Tok::RParen)?;
        self.close(&Tok::RParen, "`,` or `)`")?;
        if refs.is_empty() {
            let span = self.prev_span();
            return Err(
                self.error("syntax error: `realize` needs at least one reference: `realize(File[\"/x\"])`", span)
            );
        }
        Ok(StmtKind::Realize { refs })
    }

    /// A relationship operator, if one comes next. `<-` is two tokens, `<` and `-`, written
    /// side by side.
    fn edge_link(&mut self) -> Option<EdgeLink> {
        let (notify, backward, tokens) = self.peek_link()?;
        let mut span = self.bump().1;
        for _ in 1..tokens {
            span = span.to(self.bump().1);
        }
        Some(EdgeLink { notify, backward, span })
    }
}
