//! Expressions (spec section 4): literals, names, calls, lambdas, if-expressions and the
//! operator table of 1.8, parsed by precedence climbing.

use super::{PResult, Parser};
use crate::span::Span;
use crate::syntax::ast::{BinOp, Expr, ExprKind, Ident, Lambda, Param};
use crate::syntax::token::{self, Tok};

/// Precedence levels of spec 1.8 (higher binds tighter).
const LEVEL_EXCEPT: u8 = 2;
const LEVEL_COMPARE: u8 = 5;

/// The binary operator a token stands for, with its precedence level. All binary
/// operators are left-associative except the comparisons, which do not associate.
fn binop(tok: &Tok) -> Option<(BinOp, u8)> {
    Some(match tok {
        Tok::Except => (BinOp::Except, LEVEL_EXCEPT),
        Tok::Or => (BinOp::Or, 3),
        Tok::And => (BinOp::And, 4),
        Tok::Lt => (BinOp::Lt, LEVEL_COMPARE),
        Tok::Gt => (BinOp::Gt, LEVEL_COMPARE),
        Tok::Le => (BinOp::Le, LEVEL_COMPARE),
        Tok::Ge => (BinOp::Ge, LEVEL_COMPARE),
        Tok::EqEq => (BinOp::Eq, LEVEL_COMPARE),
        Tok::NotEq => (BinOp::Ne, LEVEL_COMPARE),
        Tok::In => (BinOp::In, LEVEL_COMPARE),
        Tok::Plus => (BinOp::Add, 6),
        Tok::Minus => (BinOp::Sub, 6),
        Tok::Star => (BinOp::Mul, 7),
        Tok::Slash => (BinOp::Div, 7),
        _ => return None,
    })
}

fn expr(kind: ExprKind, span: Span) -> Expr {
    Expr { kind, span }
}

impl Parser<'_> {
    /// Any expression.
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        self.nested(|p| p.expr_bp(0))
    }

    /// Binary operators of level `min` or tighter.
    fn expr_bp(&mut self, min: u8) -> PResult<Expr> {
        let height = self.height;
        let out = self.expr_chain(min);
        self.height = height;
        out
    }

    fn expr_chain(&mut self, min: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut last_level = 0;
        while let Some((op, level)) = binop(self.peek()) {
            if level < min {
                break;
            }
            if level == LEVEL_COMPARE && last_level == LEVEL_COMPARE {
                let span = self.span();
                let note = "comparisons and `in` do not chain: add parentheses, or combine them with `and`";
                return Err(self.error_note(
                    format!("syntax error: unexpected `{}` after a comparison", op.as_str()),
                    span,
                    note,
                ));
            }
            self.bump();
            self.chain_link()?;
            let rhs = self.nested(|p| p.expr_bp(level + 1))?;
            let span = lhs.span.to(rhs.span);
            lhs = expr(ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, span);
            last_level = level;
        }
        Ok(lhs)
    }

    /// `"not" unary | postfix` (`not` binds tighter than every binary operator).
    pub(super) fn unary(&mut self) -> PResult<Expr> {
        if self.at(&Tok::Not) {
            return self.nested(|p| {
                let start = p.bump().1;
                let operand = p.unary()?;
                let span = start.to(operand.span);
                Ok(expr(ExprKind::Not(Box::new(operand)), span))
            });
        }
        self.postfix()
    }

    /// A primary followed by any number of `[index]` and `->field` suffixes; `->field`
    /// directly followed by `<|>` is the static optional lookup `s->f <|> d`.
    fn postfix(&mut self) -> PResult<Expr> {
        let height = self.height;
        let out = self.postfix_chain();
        self.height = height;
        out
    }

    fn postfix_chain(&mut self) -> PResult<Expr> {
        let mut base = self.primary()?;
        loop {
            match self.peek() {
                Tok::LBrack => {
                    self.open(&Tok::LBrack)?;
                    let index = self.expr()?;
                    let close = self.close(&Tok::RBrack, "`]`")?;
                    let span = base.span.to(close);
                    base = expr(ExprKind::Index { base: Box::new(base), index: Box::new(index) }, span);
                }
                Tok::Arrow => {
                    self.bump();
                    let field = self.plain_ident("a struct field name")?;
                    if self.eat(&Tok::Except).is_some() {
                        let default = self.nested(|p| p.expr_bp(LEVEL_EXCEPT + 1))?;
                        let span = base.span.to(default.span);
                        let kind = ExprKind::FieldOr { base: Box::new(base), field, default: Box::new(default) };
                        base = expr(kind, span);
                    } else {
                        let span = base.span.to(field.span);
                        base = expr(ExprKind::Field { base: Box::new(base), field }, span);
                    }
                }
                _ => return Ok(base),
            }
            self.chain_link()?;
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let span = self.span();
        match self.peek() {
            Tok::True => Ok(expr(ExprKind::Bool(true), self.bump().1)),
            Tok::False => Ok(expr(ExprKind::Bool(false), self.bump().1)),
            Tok::Int => Ok(expr(ExprKind::Int(token::int_value(self.word())), self.bump().1)),
            Tok::Float => Ok(expr(ExprKind::Float(token::float_value(self.word())), self.bump().1)),
            Tok::Str => Ok(expr(ExprKind::RawStr(token::str_body(self.word()).to_string()), self.bump().1)),
            Tok::LBrack => {
                let (items, span) = self.comma_list(&Tok::LBrack, &Tok::RBrack, "a list element", |p| p.expr())?;
                Ok(expr(ExprKind::List(items), span))
            }
            Tok::LBrace => {
                let (entries, span) = self.comma_list(&Tok::LBrace, &Tok::RBrace, "a map entry", |p| {
                    let key = p.expr()?;
                    p.expect(&Tok::Rocket, "`=>` after the map key")?;
                    let value = p.expr()?;
                    Ok((key, value))
                })?;
                Ok(expr(ExprKind::Map(entries), span))
            }
            Tok::Struct => {
                self.bump();
                let (fields, body) = self.comma_list(&Tok::LBrace, &Tok::RBrace, "a struct field name", |p| {
                    let name = p.plain_ident("a struct field name")?;
                    p.expect(&Tok::Rocket, "`=>` after the struct field name")?;
                    let value = p.expr()?;
                    Ok((name, value))
                })?;
                Ok(expr(ExprKind::Struct(fields), span.to(body)))
            }
            // `File["/x"]` (or `Resource["file", "/x"]`) as a value: a reference, the struct
            // `struct{kind => "file", name => "/x"}`, which a relationship side takes.
            Tok::Cap if matches!(self.peek_at(1), Tok::LBrack) => {
                let half = self.edge_half(false)?;
                let kind = Expr { kind: ExprKind::RawStr(half.kind.name.clone()), span: half.kind.span };
                let fields = vec![
                    (Ident { name: "kind".into(), span: half.kind.span }, kind),
                    (Ident { name: "name".into(), span: half.name.span }, half.name),
                ];
                Ok(expr(ExprKind::Struct(fields), half.span))
            }
            Tok::Dollar => {
                let dollar = self.bump().1;
                let name = self.dotted("a variable name")?;
                let name = Ident { name: name.name, span: dollar.to(name.span) };
                if self.at(&Tok::LParen) {
                    let (args, args_span) = self.args()?;
                    return Ok(expr(ExprKind::CallVar { name, args }, span.to(args_span)));
                }
                let span = name.span;
                Ok(expr(ExprKind::Var(name), span))
            }
            Tok::Ident | Tok::Map | Tok::Collect => {
                let name = self.dotted("a function name")?;
                if self.at_construct_body() {
                    return self.construct(name);
                }
                if !self.at(&Tok::LParen) {
                    let note = "variables are written with a `$`, and a named function must be called with `(...)`";
                    return Err(self.unexpected_note("`(`", Some(note)));
                }
                let (args, args_span) = self.args()?;
                Ok(expr(ExprKind::Call { name, args }, span.to(args_span)))
            }
            Tok::Func => {
                let lambda = self.lambda()?;
                if self.at(&Tok::LParen) {
                    let (args, args_span) = self.args()?;
                    let span = lambda.span.to(args_span);
                    return Ok(expr(ExprKind::CallLambda { lambda: Box::new(lambda), args }, span));
                }
                let span = lambda.span;
                Ok(expr(ExprKind::Lambda(Box::new(lambda)), span))
            }
            Tok::If => self.if_expr(),
            Tok::LParen => {
                self.open(&Tok::LParen)?;
                let mut inner = self.expr()?;
                let close = self.close(&Tok::RParen, "`)`")?;
                inner.span = span.to(close);
                Ok(inner)
            }
            Tok::Minus => {
                let note = "there is no unary minus; write `0 - $x`, or a negative literal like `-1` without a space";
                Err(self.unexpected_note("an expression", Some(note)))
            }
            _ => Err(self.unexpected("an expression")),
        }
    }

    /// `"if" expr body "else" body` (both branches required).
    fn if_expr(&mut self) -> PResult<Expr> {
        let start = self.bump().1;
        let cond = self.expr()?;
        let then = self.expr_body()?;
        if !self.at(&Tok::Else) {
            let note = "an if-expression needs an `else` branch, on the same line as the `}`";
            return Err(self.unexpected_note("`else`", Some(note)));
        }
        self.bump();
        let els = self.expr_body()?;
        let span = start.to(els.1);
        Ok(expr(ExprKind::If { cond: Box::new(cond), then: Box::new(then.0), els: Box::new(els.0) }, span))
    }

    /// `body = "{" { NL } expr { NL } "}"`; returns the expression and the span of the
    /// closing brace.
    pub(super) fn expr_body(&mut self) -> PResult<(Expr, Span)> {
        self.open(&Tok::LBrace)?;
        self.skip_newlines();
        let body = self.expr()?;
        self.skip_newlines();
        let close = self.close(&Tok::RBrace, "`}` (a body holds exactly one expression)")?;
        Ok((body, close))
    }

    /// `"func" "(" params ")" [ type ] body`, the current token being `func`.
    pub(super) fn lambda(&mut self) -> PResult<Lambda> {
        let start = self.bump().1;
        let params = self.params()?;
        let ret = if self.at(&Tok::LBrace) { None } else { Some(self.type_ann()?) };
        let (body, close) = self.expr_body()?;
        Ok(Lambda { params, ret, body: Box::new(body), span: start.to(close) })
    }

    /// `"(" params ")"` with `param = "$" NAME [ type ]`.
    pub(super) fn params(&mut self) -> PResult<Vec<Param>> {
        let (params, _) = self.comma_list(&Tok::LParen, &Tok::RParen, "`$` and a parameter name", |p| {
            let dollar = p.expect(&Tok::Dollar, "`$` and a parameter name")?;
            let name = p.binding_name(dollar)?;
            let repeated = match (p.peek(), p.peek_at(1), p.peek_at(2)) {
                (Tok::Dot, Tok::Dot, Tok::Dot) => {
                    let first = p.bump().1;
                    p.bump();
                    let last = p.bump().1;
                    if !p.at_type_start() {
                        let note = "a repeated param says what it repeats: `$rest ...int`";
                        return Err(p.unexpected_note("the type of each repeated argument", Some(note)));
                    }
                    Some(first.to(last))
                }
                _ => None,
            };
            let ann = if p.at_type_start() { Some(p.type_ann()?) } else { None };
            let default = if p.eat(&Tok::Equals).is_some() { Some(p.expr()?) } else { None };
            Ok(Param { name, ann, default, repeated })
        })?;
        Ok(params)
    }

    /// `"(" args ")"` with `arg = expr | IDENT "=>" expr` (named arguments after the
    /// positional ones); returns them and the span of the parentheses.
    pub(super) fn args(&mut self) -> PResult<(Vec<Expr>, Span)> {
        let mut named_seen = false;
        self.comma_list(&Tok::LParen, &Tok::RParen, "an argument", |p| {
            if let (Tok::Ident, Tok::Rocket) = (p.peek(), p.peek_at(1)) {
                let name = Ident { name: p.word().to_string(), span: p.bump().1 };
                p.bump();
                let value = p.expr()?;
                named_seen = true;
                let span = name.span.to(value.span);
                return Ok(expr(ExprKind::Named { name, value: Box::new(value) }, span));
            }
            if named_seen {
                let note = "named arguments (`name => value`) come after the positional ones";
                return Err(p.unexpected_note("a named argument (`name => value`)", Some(note)));
            }
            p.expr()
        })
    }

    /// The undotted name after a `$` that is being bound (`$x = ...`, parameters, loop
    /// variables). The returned span covers the `$` too.
    pub(super) fn binding_name(&mut self, dollar: Span) -> PResult<Ident> {
        match self.peek() {
            Tok::Ident => {
                let name = self.word().to_string();
                let span = self.bump().1;
                Ok(Ident { name, span: dollar.to(span) })
            }
            Tok::Map | Tok::Collect => {
                let (tok, span) = self.bump();
                Ok(Ident { name: tok.text().unwrap_or_default().to_string(), span: dollar.to(span) })
            }
            tok if tok.text().is_some_and(|t| t.chars().all(|c| c.is_ascii_lowercase())) => {
                let note = format!("`{}` is a keyword and can't be used as a variable name", tok.text().unwrap_or(""));
                Err(self.unexpected_note("a variable name", Some(&note)))
            }
            _ => Err(self.unexpected("a variable name")),
        }
    }

    /// `dotted = NAME { "." NAME }` with `NAME = IDENT | map | collect`.
    pub(super) fn dotted(&mut self, what: &str) -> PResult<Ident> {
        let mut name = String::new();
        let start = self.span();
        loop {
            match self.peek() {
                Tok::Ident => name.push_str(self.word()),
                Tok::Map => name.push_str("map"),
                Tok::Collect => name.push_str("collect"),
                _ => return Err(self.unexpected(what)),
            }
            self.bump();
            if !self.at(&Tok::Dot) {
                break;
            }
            self.bump();
            name.push('.');
        }
        Ok(Ident { name, span: start.to(self.prev_span()) })
    }

    /// A plain lowercase identifier (struct field, resource field, function name, alias).
    pub(super) fn plain_ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek() {
            Tok::Ident => {
                let name = self.word().to_string();
                Ok(Ident { name, span: self.bump().1 })
            }
            _ => Err(self.unexpected(what)),
        }
    }
}
