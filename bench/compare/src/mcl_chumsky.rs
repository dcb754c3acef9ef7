//! A chumsky 0.13 prototype of mcl's grammar, for measurement only: expressions (the
//! operator table by Pratt parsing, postfix indexing and field access, calls, lambdas,
//! if-expressions, lists, maps, structs), types, and the statements the generated programs
//! and the corpus's syntax-error cases use (import, bind, func, class, include, if,
//! resources). It reads the tokens of tend's own lexer, so the parsers compare, not lexers.
//!
//! mcl's comma rule is mgmt's: a trailing comma is allowed only when a line break follows
//! it (`[1, 2,]` is an error, `[1,\n2,\n]` is not).

use chumsky::input::ValueInput;
use chumsky::pratt::{infix, left, none, postfix, prefix};
use chumsky::prelude::*;
use lang::span::FileId;
use lang::syntax::token::{self, Tok};

/// A token with its text; equal when the kinds are (so `just` matches a kind).
#[derive(Clone, Copy, Debug)]
pub struct Tk<'s> {
    pub tok: Tok,
    pub text: &'s str,
}

impl PartialEq for Tk<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.tok == other.tok
    }
}

impl std::fmt::Display for Tk<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&token::describe(self.tok, self.text))
    }
}

fn tk(tok: Tok) -> Tk<'static> {
    Tk { tok, text: "" }
}

pub type Sp<T> = (T, SimpleSpan);

#[derive(Clone, Debug)]
pub enum Type {
    Bool,
    Str,
    Int,
    Float,
    Variant,
    Named(String),
    List(Box<Type>),
    Map(Box<Type>, Box<Type>),
    Struct(Vec<(String, Type)>),
    Func(Vec<Type>, Box<Type>),
}

#[derive(Debug)]
pub struct Param {
    pub name: String,
    pub ty: Option<Type>,
}

#[derive(Debug)]
pub enum Expr {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Var(String),
    Call { name: String, args: Vec<Sp<Expr>> },
    Named { name: String, value: Box<Sp<Expr>> },
    List(Vec<Sp<Expr>>),
    Map(Vec<(Sp<Expr>, Sp<Expr>)>),
    Struct(Vec<(String, Sp<Expr>)>),
    Lambda { params: Vec<Param>, ret: Option<Type>, body: Box<Sp<Expr>> },
    If { cond: Box<Sp<Expr>>, then: Box<Sp<Expr>>, els: Box<Sp<Expr>> },
    Binary { op: Tok, lhs: Box<Sp<Expr>>, rhs: Box<Sp<Expr>> },
    Not(Box<Sp<Expr>>),
    Index { base: Box<Sp<Expr>>, index: Box<Sp<Expr>> },
    Field { base: Box<Sp<Expr>>, field: String },
}

#[derive(Debug)]
pub enum Stmt {
    Import { path: String, alias: Option<String> },
    Bind { name: String, ty: Option<Type>, value: Sp<Expr> },
    Func { name: String, params: Vec<Param>, ret: Option<Type>, body: Sp<Expr> },
    Class { name: String, params: Vec<Param>, body: Vec<Sp<Stmt>> },
    Include { name: String, args: Vec<Sp<Expr>> },
    If { cond: Sp<Expr>, then: Vec<Sp<Stmt>>, els: Vec<Sp<Stmt>> },
    Resource { kind: String, name: Sp<Expr>, fields: Vec<(String, Sp<Expr>)> },
}

type Extra<'t, 's> = extra::Err<Rich<'t, Tk<'s>>>;

/// `open item {"," NL* item} ["," NL+] close` with line breaks allowed after `open`.
fn comma_list<'t, 's: 't, I, O>(
    open: Tok,
    item: impl Parser<'t, I, O, Extra<'t, 's>> + Clone + 't,
    close: Tok,
) -> impl Parser<'t, I, Vec<O>, Extra<'t, 's>> + Clone + 't
where
    I: ValueInput<'t, Token = Tk<'s>, Span = SimpleSpan>,
    O: 't,
{
    let nl = just(tk(Tok::Newline));
    let sep = just(tk(Tok::Comma)).then(nl.repeated());
    let trailing = just(tk(Tok::Comma)).then(nl.repeated().at_least(1));
    just(tk(open))
        .then(nl.repeated())
        .ignore_then(item.separated_by(sep).collect::<Vec<O>>())
        .then_ignore(trailing.or_not())
        .then_ignore(just(tk(close)))
}

fn word<'t, 's: 't, I>() -> impl Parser<'t, I, String, Extra<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Tk<'s>, Span = SimpleSpan>,
{
    select! { Tk { tok: Tok::Ident | Tok::Map | Tok::Collect, text } => text.to_string() }.labelled("a name")
}

/// `NAME {"." NAME}`.
fn dotted<'t, 's: 't, I>() -> impl Parser<'t, I, String, Extra<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Tk<'s>, Span = SimpleSpan>,
{
    word().separated_by(just(tk(Tok::Dot))).at_least(1).collect::<Vec<_>>().map(|parts| parts.join("."))
}

fn type_ann<'t, 's: 't, I>() -> impl Parser<'t, I, Type, Extra<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Tk<'s>, Span = SimpleSpan>,
{
    recursive(|ty| {
        let field = word().then(ty.clone());
        let struct_ty = just(tk(Tok::Struct))
            .ignore_then(just(tk(Tok::LBrace)))
            .ignore_then(field.separated_by(just(tk(Tok::Semicolon))).collect::<Vec<_>>())
            .then_ignore(just(tk(Tok::RBrace)))
            .map(Type::Struct);
        let func_arg = just(tk(Tok::Dollar)).ignore_then(word()).or_not().ignore_then(ty.clone());
        let func_ty = just(tk(Tok::Func))
            .ignore_then(comma_list(Tok::LParen, func_arg, Tok::RParen))
            .then(ty.clone())
            .map(|(args, ret)| Type::Func(args, Box::new(ret)));
        choice((
            just(tk(Tok::BoolKw)).to(Type::Bool),
            just(tk(Tok::StrKw)).to(Type::Str),
            just(tk(Tok::IntKw)).to(Type::Int),
            just(tk(Tok::FloatKw)).to(Type::Float),
            just(tk(Tok::Variant)).to(Type::Variant),
            just(tk(Tok::LBrack)).then(just(tk(Tok::RBrack))).ignore_then(ty.clone()).map(|t| Type::List(Box::new(t))),
            just(tk(Tok::Map))
                .ignore_then(just(tk(Tok::LBrace)))
                .ignore_then(ty.clone())
                .then_ignore(just(tk(Tok::Colon)))
                .then(ty.clone())
                .then_ignore(just(tk(Tok::RBrace)))
                .map(|(k, v)| Type::Map(Box::new(k), Box::new(v))),
            struct_ty,
            func_ty,
            dotted().map(Type::Named),
        ))
        .labelled("a type")
        .boxed()
    })
}

fn params<'t, 's: 't, I>() -> impl Parser<'t, I, Vec<Param>, Extra<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Tk<'s>, Span = SimpleSpan>,
{
    let param =
        just(tk(Tok::Dollar)).ignore_then(word()).then(type_ann().or_not()).map(|(name, ty)| Param { name, ty });
    comma_list(Tok::LParen, param, Tok::RParen)
}

fn expr<'t, 's: 't, I>() -> impl Parser<'t, I, Sp<Expr>, Extra<'t, 's>> + Clone
where
    I: ValueInput<'t, Token = Tk<'s>, Span = SimpleSpan>,
{
    recursive(|expr| {
        let nl = just(tk(Tok::Newline)).repeated();
        let body = just(tk(Tok::LBrace))
            .ignore_then(nl)
            .ignore_then(expr.clone())
            .then_ignore(nl)
            .then_ignore(just(tk(Tok::RBrace)));
        let named = word()
            .then_ignore(just(tk(Tok::Rocket)))
            .then(expr.clone())
            .map_with(|(name, value), e| (Expr::Named { name, value: Box::new(value) }, e.span()));
        let args = comma_list(Tok::LParen, named.or(expr.clone()), Tok::RParen);
        let literal = select! {
            Tk { tok: Tok::True, .. } => Expr::Bool(true),
            Tk { tok: Tok::False, .. } => Expr::Bool(false),
            Tk { tok: Tok::Int, text } => Expr::Int(token::int_value(text)),
            Tk { tok: Tok::Float, text } => Expr::Float(token::float_value(text)),
            Tk { tok: Tok::Str, text } => Expr::Str(token::str_body(text).to_string()),
        };
        let list = comma_list(Tok::LBrack, expr.clone(), Tok::RBrack).map(Expr::List);
        let entry = expr.clone().then_ignore(just(tk(Tok::Rocket))).then(expr.clone());
        let map = comma_list(Tok::LBrace, entry, Tok::RBrace).map(Expr::Map);
        let field = word().then_ignore(just(tk(Tok::Rocket))).then(expr.clone());
        let strukt = just(tk(Tok::Struct)).ignore_then(comma_list(Tok::LBrace, field, Tok::RBrace)).map(Expr::Struct);
        let var =
            just(tk(Tok::Dollar)).ignore_then(dotted()).then(args.clone().or_not()).map(|(name, args)| match args {
                Some(args) => Expr::Call { name: format!("${name}"), args },
                None => Expr::Var(name),
            });
        let call = dotted().then(args.clone()).map(|(name, args)| Expr::Call { name, args });
        let lambda = just(tk(Tok::Func))
            .ignore_then(params())
            .then(type_ann().or_not())
            .then(body.clone())
            .map(|((params, ret), body)| Expr::Lambda { params, ret, body: Box::new(body) });
        let if_expr = just(tk(Tok::If))
            .ignore_then(expr.clone())
            .then(body.clone())
            .then_ignore(just(tk(Tok::Else)))
            .then(body)
            .map(|((cond, then), els)| Expr::If { cond: Box::new(cond), then: Box::new(then), els: Box::new(els) });
        let atom = choice((literal, list, map, strukt, var, lambda, if_expr, call))
            .map_with(|x, e| (x, e.span()))
            .or(expr.clone().delimited_by(just(tk(Tok::LParen)), just(tk(Tok::RParen))))
            .labelled("an expression")
            .boxed();
        let bin = |l: Sp<Expr>, op: Tk<'s>, r: Sp<Expr>, span: SimpleSpan| {
            (Expr::Binary { op: op.tok, lhs: Box::new(l), rhs: Box::new(r) }, span)
        };
        let index = expr.clone().delimited_by(just(tk(Tok::LBrack)), just(tk(Tok::RBrack)));
        let arrow = just(tk(Tok::Arrow)).ignore_then(word());
        let compare = choice((
            just(tk(Tok::Lt)),
            just(tk(Tok::Gt)),
            just(tk(Tok::Le)),
            just(tk(Tok::Ge)),
            just(tk(Tok::EqEq)),
            just(tk(Tok::NotEq)),
            just(tk(Tok::In)),
        ));
        atom.pratt((
            postfix(10, index, |base, index, e| {
                (Expr::Index { base: Box::new(base), index: Box::new(index) }, e.span())
            }),
            postfix(10, arrow, |base, field, e| (Expr::Field { base: Box::new(base), field }, e.span())),
            prefix(9, just(tk(Tok::Not)), |_, operand, e| (Expr::Not(Box::new(operand)), e.span())),
            infix(left(7), just(tk(Tok::Star)).or(just(tk(Tok::Slash))), move |l, op, r, e| bin(l, op, r, e.span())),
            infix(left(6), just(tk(Tok::Plus)).or(just(tk(Tok::Minus))), move |l, op, r, e| bin(l, op, r, e.span())),
            infix(none(5), compare, move |l, op, r, e| bin(l, op, r, e.span())),
            infix(left(4), just(tk(Tok::And)), move |l, op, r, e| bin(l, op, r, e.span())),
            infix(left(3), just(tk(Tok::Or)), move |l, op, r, e| bin(l, op, r, e.span())),
            infix(left(2), just(tk(Tok::Except)), move |l, op, r, e| bin(l, op, r, e.span())),
        ))
        .boxed()
    })
}

fn program<'t, 's: 't, I>() -> impl Parser<'t, I, Vec<Sp<Stmt>>, Extra<'t, 's>>
where
    I: ValueInput<'t, Token = Tk<'s>, Span = SimpleSpan>,
{
    let nl = || just(tk(Tok::Newline));
    let stmts = recursive(|stmts| {
        let block = just(tk(Tok::LBrace))
            .ignore_then(nl().repeated())
            .ignore_then(stmts)
            .then_ignore(nl().repeated())
            .then_ignore(just(tk(Tok::RBrace)));
        let import = just(tk(Tok::Import))
            .ignore_then(select! { Tk { tok: Tok::Str, text } => token::str_body(text).to_string() })
            .then(just(tk(Tok::As)).ignore_then(word().or(just(tk(Tok::Star)).to("*".to_string()))).or_not())
            .map(|(path, alias)| Stmt::Import { path, alias });
        let bind = just(tk(Tok::Dollar))
            .ignore_then(word())
            .then(type_ann().or_not())
            .then_ignore(just(tk(Tok::Equals)))
            .then(expr())
            .map(|((name, ty), value)| Stmt::Bind { name, ty, value });
        let func = just(tk(Tok::Func))
            .ignore_then(word())
            .then(params())
            .then(type_ann().or_not())
            .then(
                just(tk(Tok::LBrace))
                    .ignore_then(nl().repeated())
                    .ignore_then(expr())
                    .then_ignore(nl().repeated())
                    .then_ignore(just(tk(Tok::RBrace))),
            )
            .map(|(((name, params), ret), body)| Stmt::Func { name, params, ret, body });
        let class = just(tk(Tok::Class))
            .ignore_then(dotted())
            .then(params().or_not())
            .then(block.clone())
            .map(|((name, params), body)| Stmt::Class { name, params: params.unwrap_or_default(), body });
        let include = just(tk(Tok::Include))
            .ignore_then(dotted())
            .then(comma_list(Tok::LParen, expr(), Tok::RParen).or_not())
            .map(|(name, args)| Stmt::Include { name, args: args.unwrap_or_default() });
        let if_stmt = just(tk(Tok::If))
            .ignore_then(expr())
            .then(block.clone())
            .then(just(tk(Tok::Else)).ignore_then(block).or_not())
            .map(|((cond, then), els)| Stmt::If { cond, then, els: els.unwrap_or_default() });
        let field_name = select! { Tk { tok: Tok::Ident | Tok::Cap, text } => text.to_string() }
            .then(just(tk(Tok::Colon)).ignore_then(word()).repeated().collect::<Vec<_>>())
            .map(|(head, tail)| if tail.is_empty() { head } else { format!("{head}:{}", tail.join(":")) });
        let field = field_name
            .then_ignore(just(tk(Tok::Rocket)))
            .then(expr())
            .then_ignore(just(tk(Tok::Comma)))
            .then_ignore(nl().repeated().at_least(1));
        let fields = just(tk(Tok::LBrace))
            .ignore_then(nl().repeated())
            .ignore_then(field.repeated().collect::<Vec<_>>())
            .then_ignore(just(tk(Tok::RBrace)));
        let kind = word().separated_by(just(tk(Tok::Colon))).at_least(1).collect::<Vec<_>>().map(|p| p.join(":"));
        let resource =
            kind.then(expr()).then(fields).map(|((kind, name), fields)| Stmt::Resource { kind, name, fields });
        let stmt =
            choice((import, bind, func, class, include, if_stmt, resource)).map_with(|s, e| (s, e.span())).boxed();
        stmt.separated_by(nl().repeated().at_least(1)).collect::<Vec<_>>().boxed()
    });
    nl().repeated().ignore_then(stmts).then_ignore(nl().repeated()).then_ignore(end())
}

/// One syntax error: its byte range and message.
pub struct SyntaxError {
    pub span: std::ops::Range<usize>,
    pub message: String,
}

/// Lexes `text` with tend's lexer and parses it with the prototype: the statements (none
/// when it failed) and the errors (lexer errors first, as tend reports them).
pub fn parse(text: &str) -> (Option<Vec<Sp<Stmt>>>, Vec<SyntaxError>) {
    let lexed = token::lex(FileId(0), text);
    let mut errors: Vec<SyntaxError> = lexed
        .diags
        .iter()
        .map(|d| SyntaxError { span: d.span.map_or(0..0, |s| s.range()), message: d.message.clone() })
        .collect();
    let tokens: Vec<(Tk, SimpleSpan)> = lexed
        .tokens
        .iter()
        .filter(|(t, _)| *t != Tok::Eof)
        .map(|(t, s)| (Tk { tok: *t, text: &text[s.range()] }, SimpleSpan::from(s.range())))
        .collect();
    drop(lexed);
    let eoi = SimpleSpan::from(text.len()..text.len());
    let (stmts, errs) = program().parse(tokens.as_slice().split_token_span(eoi)).into_output_errors();
    errors.extend(errs.into_iter().map(|e| SyntaxError { span: e.span().into_range(), message: e.to_string() }));
    (stmts, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prototype_reads_what_tend_reads() {
        let text = "import \"fmt\"\n$x = [1, 2,\n]\n$y int = 1 + 2 * 3 < 4 or not true\n\
                    func f($a, $b str) str {\n\t$a + $b\n}\nfile \"/tmp/a\" {\n\tcontent => fmt.printf(\"%d\", $x[0]),\n\tMeta:noop => true,\n}\n";
        let (stmts, errors) = parse(text);
        assert!(errors.is_empty(), "{:?}", errors.iter().map(|e| &e.message).collect::<Vec<_>>());
        assert_eq!(stmts.map(|s| s.len()), Some(5));
    }

    #[test]
    fn a_single_line_trailing_comma_is_an_error() {
        let (_, errors) = parse("$x = [1, 2,]\n");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].span, 11..12);
    }
}
