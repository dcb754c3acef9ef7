//! Type annotations in source code (spec 2.2).

use super::{PResult, Parser};
use crate::syntax::ast::TypeAnn;
use crate::syntax::token::Tok;
use crate::types::Type;

const TYPE_START: &str = "a type (`bool`, `str`, `int`, `float`, `[]T`, `map{K: V}`, `struct{...}`, `func(...) T`, `enum[...]`, a declared type)";

impl Parser<'_> {
    /// True when the current token can start a type.
    pub(super) fn at_type_start(&self) -> bool {
        matches!(
            self.peek(),
            Tok::BoolKw
                | Tok::StrKw
                | Tok::IntKw
                | Tok::FloatKw
                | Tok::Variant
                | Tok::LBrack
                | Tok::Map
                | Tok::Struct
                | Tok::Func
                | Tok::Ident
        )
    }

    /// `type := bool | str | int | float | variant | "[]" type | "map" "{" type ":" type "}"
    ///        | "struct" "{" [field {";" field}] "}" | "func" "(" targs ")" type`
    pub(super) fn type_ann(&mut self) -> PResult<TypeAnn> {
        self.nested(|p| {
            let start = p.span();
            let ty = match p.peek() {
                Tok::BoolKw => {
                    p.bump();
                    Type::Bool
                }
                Tok::StrKw => {
                    p.bump();
                    Type::Str
                }
                Tok::IntKw => {
                    p.bump();
                    Type::Int
                }
                Tok::FloatKw => {
                    p.bump();
                    Type::Float
                }
                Tok::Variant => {
                    p.bump();
                    Type::Variant
                }
                Tok::LBrack => {
                    p.open(&Tok::LBrack)?;
                    p.close(&Tok::RBrack, "`]` (list types are written `[]T`)")?;
                    Type::list(p.type_ann()?.ty)
                }
                Tok::Map => {
                    p.bump();
                    p.open(&Tok::LBrace)?;
                    let key = p.type_ann()?.ty;
                    p.expect(&Tok::Colon, "`:` between the key and value types")?;
                    let value = p.type_ann()?.ty;
                    p.close(&Tok::RBrace, "`}`")?;
                    Type::map(key, value)
                }
                Tok::Struct => p.struct_type()?,
                Tok::Func => p.func_type()?,
                Tok::Ident if p.at_word("enum") && matches!(p.peek_at(1), Tok::LBrack) => p.enum_type()?,
                Tok::Ident => Type::Named(p.dotted("a type name")?.name),
                _ => return Err(p.unexpected(TYPE_START)),
            };
            Ok(TypeAnn { ty, span: start.to(p.prev_span()) })
        })
    }

    /// `"enum" "[" STRING { "," STRING } [","] "]"`: the strings a `str` may be.
    fn enum_type(&mut self) -> PResult<Type> {
        self.bump();
        let (items, close) = self.comma_list(&Tok::LBrack, &Tok::RBrack, "a string", |p| match p.peek() {
            Tok::Str => {
                let text = crate::syntax::token::str_body(p.word()).to_string();
                Ok((text, p.bump().1))
            }
            _ => Err(p.unexpected("a string (an enum lists the strings it accepts)")),
        })?;
        let mut choices: Vec<String> = Vec::with_capacity(items.len());
        for (text, span) in items {
            if choices.contains(&text) {
                return Err(self.error(format!("syntax error: {text:?} is listed twice in the enum"), span));
            }
            choices.push(text);
        }
        if choices.is_empty() {
            return Err(self.error("syntax error: an enum lists at least one string", close));
        }
        Ok(Type::Enum(choices))
    }

    /// `"struct" "{" [ IDENT type { ";" IDENT type } ] "}"`; duplicate field names are
    /// an error right away.
    fn struct_type(&mut self) -> PResult<Type> {
        self.bump();
        self.open(&Tok::LBrace)?;
        let mut fields: Vec<(String, Type)> = Vec::new();
        if !self.at(&Tok::RBrace) {
            loop {
                let name_span = self.span();
                let name = match self.peek() {
                    Tok::Ident => self.word().to_string(),
                    _ => {
                        let expected = if fields.is_empty() { "`}` or a field name" } else { "a field name" };
                        return Err(self.unexpected(expected));
                    }
                };
                self.bump();
                let ty = self.type_ann()?.ty;
                if fields.iter().any(|(n, _)| *n == name) {
                    let message = format!("can't set return type in parser: duplicate struct field of `{name} {ty}`");
                    return Err(self.error(message, name_span));
                }
                fields.push((name, ty));
                if self.eat(&Tok::Semicolon).is_none() {
                    break;
                }
            }
        }
        self.close(&Tok::RBrace, "`;` or `}`")?;
        Ok(Type::Struct(fields))
    }

    /// `"func" "(" targs ")" type` where `targ := type | "$" NAME type`.
    fn func_type(&mut self) -> PResult<Type> {
        self.bump();
        let (args, _) = self.comma_list(&Tok::LParen, &Tok::RParen, "an argument type", |p| {
            if p.at(&Tok::Dollar) {
                let dollar = p.bump().1;
                let name = p.binding_name(dollar)?;
                let ty = p.type_ann()?.ty;
                Ok((Some(name), ty))
            } else {
                Ok((None, p.type_ann()?.ty))
            }
        })?;
        let mut named: Vec<(String, Type)> = Vec::new();
        for (i, (name, ty)) in args.into_iter().enumerate() {
            match name {
                Some(name) => {
                    if named.iter().any(|(n, _)| *n == name.name) {
                        let message =
                            format!("syntax error: duplicate argument name `${}` in function type", name.name);
                        return Err(self.error(message, name.span));
                    }
                    named.push((name.name, ty));
                }
                None => named.push((i.to_string(), ty)),
            }
        }
        if !self.at_type_start() {
            let note = "function types always declare their return type: `func(str) int`";
            return Err(self.unexpected_note("the function's return type", Some(note)));
        }
        let ret = self.type_ann()?.ty;
        Ok(Type::Func(named, Box::new(ret)))
    }
}
