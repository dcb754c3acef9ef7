//! Type declarations (`type vhost { attr … invariant … }`, `type port = int`) and the
//! construction of a declared type's value (`vhost{name => "a"}`).

use super::{PResult, Parser};
use crate::syntax::ast::{Attr, Expr, ExprKind, Ident, Invariant, Record, StmtKind, TypeDecl, TypeDef};
use crate::syntax::token::{self, Tok};

const MEMBER_START: &str = "`attr`, `invariant`, `abstract` or `}`";

/// The options an attribute takes, for the error that names an unknown one.
const OPTIONS: &str = "`default`, `check`, `min`, `max`, `derived`, `set` or `unsettable`";

impl Parser<'_> {
    /// Whether the statement here is a type declaration: `type NAME` followed by `=`,
    /// `{` or `inherits` (`type` is no keyword: `type "x" { … }` stays a resource).
    pub(super) fn at_type_decl(&self) -> bool {
        self.at_word("type")
            && matches!(self.peek_at(1), Tok::Ident)
            && (matches!(self.peek_at(2), Tok::Equals | Tok::LBrace) || self.at_word_at(2, "inherits"))
    }

    /// `type_decl = "type" IDENT ( "=" type | [ "inherits" dotted ] "{" { NL | member NL } "}" )`.
    pub(super) fn type_decl(&mut self) -> PResult<StmtKind> {
        self.bump();
        let name = self.plain_ident("a type name")?;
        if self.eat(&Tok::Equals).is_some() {
            let ann = self.type_ann()?;
            return Ok(StmtKind::Type(TypeDecl { name, def: TypeDef::Alias(ann) }));
        }
        let parent = if self.at_word("inherits") {
            self.bump();
            Some(self.dotted("the parent type's name")?)
        } else {
            None
        };
        self.open(&Tok::LBrace)?;
        let mut record = Record { parent, abstract_at: None, attrs: Vec::new(), invariants: Vec::new() };
        loop {
            match self.peek() {
                Tok::Newline => {
                    self.bump();
                }
                Tok::RBrace => break,
                Tok::Ident if self.at_word("attr") => {
                    record.attrs.push(self.attr()?);
                    self.end_member()?;
                }
                Tok::Ident if self.at_word("abstract") => {
                    let at = self.bump().1;
                    if record.abstract_at.is_some() {
                        return Err(self.error("syntax error: `abstract` is given twice", at));
                    }
                    record.abstract_at = Some(at);
                    self.end_member()?;
                }
                Tok::Ident if self.at_word("invariant") => {
                    let start = self.bump().1;
                    let message = match self.peek() {
                        Tok::Str => {
                            let text = token::str_body(self.word()).to_string();
                            self.bump();
                            Some(text)
                        }
                        Tok::LBrace => None,
                        _ => return Err(self.unexpected("the invariant's message as a string, or `{`")),
                    };
                    let (expr, close) = self.expr_body()?;
                    record.invariants.push(Invariant { message, expr, span: start.to(close) });
                    self.end_member()?;
                }
                _ => {
                    let note = "a type declares `attr NAME TYPE [{ default => …, check => … }]`, \
                                `invariant [\"MESSAGE\"] { EXPR }` and `abstract`, one per line";
                    return Err(self.unexpected_note(MEMBER_START, Some(note)));
                }
            }
        }
        self.close(&Tok::RBrace, MEMBER_START)?;
        Ok(StmtKind::Type(TypeDecl { name, def: TypeDef::Record(record) }))
    }

    fn end_member(&mut self) -> PResult<()> {
        if !matches!(self.peek(), Tok::Newline | Tok::RBrace) {
            return Err(self.unexpected("a newline after the member"));
        }
        Ok(())
    }

    /// `attr = "attr" IDENT type [ "{" opts "}" ]`.
    fn attr(&mut self) -> PResult<Attr> {
        let start = self.bump().1;
        let name = self.plain_ident("the attribute's name")?;
        let ann = self.type_ann()?;
        let mut attr = Attr {
            name,
            ann,
            default: None,
            check: None,
            min: None,
            max: None,
            derived: None,
            set: None,
            unsettable: false,
            span: start,
        };
        if self.at(&Tok::LBrace) {
            let mut seen: Vec<String> = Vec::new();
            for (key, value) in self.attr_options()? {
                if seen.contains(&key.name) {
                    let message = format!("syntax error: `{}` is given twice", key.name);
                    return Err(self.error(message, key.span));
                }
                seen.push(key.name.clone());
                let slot = match key.name.as_str() {
                    "default" => &mut attr.default,
                    "check" => &mut attr.check,
                    "min" => &mut attr.min,
                    "max" => &mut attr.max,
                    "derived" => &mut attr.derived,
                    "set" => &mut attr.set,
                    "unsettable" => {
                        attr.unsettable = match &value.kind {
                            ExprKind::Bool(b) => *b,
                            _ => {
                                let message = "syntax error: `unsettable` takes `true` or `false`";
                                return Err(self.error(message, value.span));
                            }
                        };
                        continue;
                    }
                    other => {
                        let message = format!("syntax error: unknown attribute option `{other}`, expected {OPTIONS}");
                        return Err(self.error(message, key.span));
                    }
                };
                *slot = Some(value);
            }
        }
        attr.span = start.to(self.prev_span());
        Ok(attr)
    }

    /// `"{" { NL } [ opt { "," { NL } opt } [ "," ] ] { NL } "}"` with
    /// `opt = IDENT "=>" expr`: the options of an attribute, on one line or several, a
    /// trailing comma allowed (as in a resource body).
    fn attr_options(&mut self) -> PResult<Vec<(Ident, Expr)>> {
        self.open(&Tok::LBrace)?;
        let mut out = Vec::new();
        loop {
            self.skip_newlines();
            if self.at(&Tok::RBrace) {
                break;
            }
            let key = self.plain_ident("an attribute option (`default`, `check`, …) or `}`")?;
            self.expect(&Tok::Rocket, "`=>`")?;
            out.push((key, self.expr()?));
            if self.eat(&Tok::Comma).is_none() {
                self.skip_newlines();
                break;
            }
        }
        self.close(&Tok::RBrace, "`,` or `}`")?;
        Ok(out)
    }

    /// Whether `NAME {` here starts a construction: the brace is followed by `}` or by
    /// `IDENT =>` (on the same line or the next).
    pub(super) fn at_construct_body(&self) -> bool {
        if !self.at(&Tok::LBrace) {
            return false;
        }
        let field_at =
            |p: &Self, i: usize| matches!(p.peek_at(i), Tok::Ident) && matches!(p.peek_at(i + 1), Tok::Rocket);
        matches!(self.peek_at(1), Tok::RBrace)
            || field_at(self, 1)
            || (matches!(self.peek_at(1), Tok::Newline) && field_at(self, 2))
    }

    /// `construct = dotted "{" [ IDENT "=>" expr { "," IDENT "=>" expr } ] "}"`, the name
    /// already read.
    pub(super) fn construct(&mut self, ty: Ident) -> PResult<Expr> {
        let (fields, close) = self.comma_list(&Tok::LBrace, &Tok::RBrace, "an attribute name", |p| {
            let name = p.plain_ident("an attribute name")?;
            p.expect(&Tok::Rocket, "`=>` after the attribute name")?;
            Ok((name, p.expr()?))
        })?;
        let span = ty.span.to(close);
        Ok(Expr { kind: ExprKind::Construct { ty, fields }, span })
    }
}
