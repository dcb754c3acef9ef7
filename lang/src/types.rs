//! mcl types: the concrete types of values and the polymorphic types of signatures.

use std::fmt;

use crate::value::Value;

/// A type. Concrete types never contain [`Type::Var`]; signature types in the catalog
/// use `Var(n)` (written `?n`) for per-call-site type variables.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Type {
    Bool,
    Str,
    Int,
    Float,
    List(Box<Type>),
    Map(Box<Type>, Box<Type>),
    /// Ordered fields.
    Struct(Vec<(String, Type)>),
    /// Argument names are kept for printing but ignored by equality in unification.
    Func(Vec<(String, Type)>, Box<Type>),
    Variant,
    Var(u32),
    /// A declared type or alias by name (`vhost`, `mod.port`), as an annotation is written:
    /// the scope stage replaces it by what the declaration means, so unification and
    /// everything after it never see one.
    Named(String),
    /// `enum["a", "b"]` as written: a `str` that must be one of these. Like [`Type::Named`]
    /// it lives only until the scope stage, which types it as `str` and turns the choices
    /// into a check on the values.
    Enum(Vec<String>),
}

/// The first character of a declared type's tag field. A value of a declared type is a
/// struct; inside unification its struct type also carries one tag field per declared
/// type it is (its own last, its parents' before), which makes declared types nominal.
/// Tags never reach a value: unification erases them from the types it returns.
pub const TAG: char = '\u{0}';

impl Type {
    pub fn list(t: Type) -> Type {
        Type::List(Box::new(t))
    }
    pub fn map(k: Type, v: Type) -> Type {
        Type::Map(Box::new(k), Box::new(v))
    }
    pub fn func(args: Vec<Type>, ret: Type) -> Type {
        Type::Func(args.into_iter().enumerate().map(|(i, t)| (i.to_string(), t)).collect(), Box::new(ret))
    }

    /// The kind name used in conflict messages (`type error: str != list`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Type::Bool => "bool",
            Type::Str => "str",
            Type::Int => "int",
            Type::Float => "float",
            Type::List(_) => "list",
            Type::Map(..) => "map",
            Type::Struct(_) => "struct",
            Type::Func(..) => "func",
            Type::Variant => "variant",
            Type::Var(_) => "?",
            Type::Named(_) => "named",
            Type::Enum(_) => "enum",
        }
    }

    /// The declared type a tagged struct type is (its own tag's name), if it is one.
    pub fn declared_name(&self) -> Option<&str> {
        match self {
            Type::Struct(fields) => fields.iter().rev().find_map(|(n, _)| tag_name(n)),
            _ => None,
        }
    }

    /// The type with every tag field removed (recursively): the type values have.
    pub fn erase_tags(&mut self) {
        match self {
            Type::Struct(fields) => {
                fields.retain(|(n, _)| !n.starts_with(TAG));
                fields.iter_mut().for_each(|(_, t)| t.erase_tags());
            }
            Type::List(t) => t.erase_tags(),
            Type::Map(k, v) => {
                k.erase_tags();
                v.erase_tags();
            }
            Type::Func(args, r) => {
                args.iter_mut().for_each(|(_, t)| t.erase_tags());
                r.erase_tags();
            }
            _ => {}
        }
    }

    /// Whether a [`Type::Enum`] occurs in it.
    pub fn has_enum(&self) -> bool {
        match self {
            Type::Enum(_) => true,
            Type::List(t) => t.has_enum(),
            Type::Map(k, v) => k.has_enum() || v.has_enum(),
            Type::Struct(fs) => fs.iter().any(|(_, t)| t.has_enum()),
            Type::Func(args, r) => args.iter().any(|(_, t)| t.has_enum()) || r.has_enum(),
            _ => false,
        }
    }

    /// The type values have: every [`Type::Enum`] a `str`.
    pub fn without_enums(&self) -> Type {
        match self {
            Type::Enum(_) => Type::Str,
            Type::List(t) => Type::list(t.without_enums()),
            Type::Map(k, v) => Type::map(k.without_enums(), v.without_enums()),
            Type::Struct(fs) => Type::Struct(fs.iter().map(|(n, t)| (n.clone(), t.without_enums())).collect()),
            Type::Func(args, r) => Type::Func(
                args.iter().map(|(n, t)| (n.clone(), t.without_enums())).collect(),
                Box::new(r.without_enums()),
            ),
            other => other.clone(),
        }
    }

    /// Where `value` leaves an enum of this type, if it does: the path to the string
    /// (`""` for the value itself, `[1]`, `["k"]`, `->port`), the string, and the enum's
    /// choices. Functions are not looked into.
    pub fn stray<'v>(&self, value: &'v Value) -> Option<(String, &'v Value, &[String])> {
        match (self, value) {
            (Type::Enum(choices), Value::Str(s)) => {
                (!choices.iter().any(|c| **c == **s)).then(|| (String::new(), value, choices.as_slice()))
            }
            (Type::List(t), Value::List(items)) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| t.stray(item).map(|(path, v, c)| (format!("[{i}]{path}"), v, c))),
            (Type::Map(k, v), Value::Map(entries)) => entries.iter().find_map(|(key, val)| {
                let at = |path: String| format!("[{key}]{path}");
                k.stray(key).or_else(|| v.stray(val)).map(|(path, bad, c)| (at(path), bad, c))
            }),
            (Type::Struct(fs), Value::Struct(values)) => fs.iter().find_map(|(name, t)| {
                let (_, field) = values.iter().find(|(n, _)| n == name)?;
                t.stray(field).map(|(path, v, c)| (format!("->{name}{path}"), v, c))
            }),
            _ => None,
        }
    }

    /// Whether a [`Type::Named`] occurs in it.
    pub fn has_named(&self) -> bool {
        match self {
            Type::Named(_) => true,
            Type::List(t) => t.has_named(),
            Type::Map(k, v) => k.has_named() || v.has_named(),
            Type::Struct(fs) => fs.iter().any(|(_, t)| t.has_named()),
            Type::Func(args, r) => args.iter().any(|(_, t)| t.has_named()) || r.has_named(),
            _ => false,
        }
    }

    /// True when no type variable occurs in it.
    pub fn is_concrete(&self) -> bool {
        match self {
            Type::Var(_) => false,
            Type::List(t) => t.is_concrete(),
            Type::Map(k, v) => k.is_concrete() && v.is_concrete(),
            Type::Struct(fs) => fs.iter().all(|(_, t)| t.is_concrete()),
            Type::Func(args, r) => args.iter().all(|(_, t)| t.is_concrete()) && r.is_concrete(),
            _ => true,
        }
    }

    /// Usable as a map key: scalars and structs of hashable fields.
    pub fn is_hashable(&self) -> bool {
        match self {
            Type::Bool | Type::Str | Type::Int | Type::Float => true,
            Type::Struct(fs) => fs.iter().all(|(_, t)| t.is_hashable()),
            _ => false,
        }
    }

    /// Usable with `==`: everything but functions (recursively).
    pub fn is_comparable(&self) -> bool {
        match self {
            Type::Func(..) => false,
            Type::List(t) => t.is_comparable(),
            Type::Map(k, v) => k.is_comparable() && v.is_comparable(),
            Type::Struct(fs) => fs.iter().all(|(_, t)| t.is_comparable()),
            _ => true,
        }
    }
}

/// The canonical printed form: `[]int`, `map{str: int}`, `struct{a str; b int}`,
/// `func(a str, b int) float`, `variant`, `?1`.
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Bool => f.write_str("bool"),
            Type::Str => f.write_str("str"),
            Type::Int => f.write_str("int"),
            Type::Float => f.write_str("float"),
            Type::Variant => f.write_str("variant"),
            Type::Var(n) => write!(f, "?{n}"),
            Type::List(t) => write!(f, "[]{t}"),
            Type::Map(k, v) => write!(f, "map{{{k}: {v}}}"),
            Type::Struct(_) if self.declared_name().is_some() => f.write_str(self.declared_name().unwrap_or("")),
            Type::Named(name) => f.write_str(name),
            Type::Enum(choices) => {
                f.write_str("enum[")?;
                for (i, c) in choices.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(&crate::value::quote_str(c))?;
                }
                f.write_str("]")
            }
            Type::Struct(fields) => {
                f.write_str("struct{")?;
                for (i, (name, t)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{name} {t}")?;
                }
                f.write_str("}")
            }
            Type::Func(args, ret) => {
                f.write_str("func(")?;
                for (i, (name, t)) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if name.is_empty() || name.chars().all(|c| c.is_ascii_digit()) {
                        write!(f, "{t}")?;
                    } else {
                        write!(f, "{name} {t}")?;
                    }
                }
                write!(f, ") {ret}")
            }
        }
    }
}

/// The declared type's name in a tag field's name (`\0vhost#12`), if it is a tag.
pub fn tag_name(field: &str) -> Option<&str> {
    let rest = field.strip_prefix(TAG)?;
    Some(rest.split_once('#').map_or(rest, |(name, _)| name))
}

/// Error from [`parse_type`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeParseError(pub String);

/// How deeply [`parse_type`] lets types nest: the same cap as the source parser's, so a
/// type string from a program (`encoding.decode_json`'s) can never exhaust the stack.
pub const MAX_TYPE_DEPTH: u32 = 100;

/// Parses the permissive signature form of section 2.3 of the spec:
/// `func(inputs []?1, function func(?1) ?2) []?2`, `map{str: int}`,
/// `struct{a str; b int}` (trailing `;` tolerated), bare or `$`-prefixed argument names.
/// Types nested more than [`MAX_TYPE_DEPTH`] levels deep are an error.
pub fn parse_type(text: &str) -> Result<Type, TypeParseError> {
    let mut p = TypeParser { s: text.as_bytes(), i: 0, depth: 0 };
    let t = p.ty()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(t)
}

struct TypeParser<'a> {
    s: &'a [u8],
    i: usize,
    /// How many types enclose the one being parsed.
    depth: u32,
}

impl TypeParser<'_> {
    fn err(&self, what: &str) -> TypeParseError {
        const SHOWN: usize = 80;
        let text = String::from_utf8_lossy(self.s);
        let shown = match text.char_indices().nth(SHOWN) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text.into_owned(),
        };
        TypeParseError(format!("{what} at offset {} in `{shown}`", self.i))
    }
    fn ws(&mut self) {
        while self.i < self.s.len() && (self.s[self.i] as char).is_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, tok: &str) -> bool {
        self.ws();
        if self.s[self.i..].starts_with(tok.as_bytes()) {
            self.i += tok.len();
            true
        } else {
            false
        }
    }
    fn expect(&mut self, tok: &str) -> Result<(), TypeParseError> {
        if self.eat(tok) { Ok(()) } else { Err(self.err(&format!("expected `{tok}`"))) }
    }
    fn word(&mut self) -> String {
        self.ws();
        let start = self.i;
        while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_') {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }
    /// One type, at most [`MAX_TYPE_DEPTH`] levels deep.
    fn ty(&mut self) -> Result<Type, TypeParseError> {
        if self.depth >= MAX_TYPE_DEPTH {
            return Err(self.err(&format!("types nest too deeply (more than {MAX_TYPE_DEPTH} levels)")));
        }
        self.depth += 1;
        let t = self.ty_inner();
        self.depth -= 1;
        t
    }
    fn ty_inner(&mut self) -> Result<Type, TypeParseError> {
        self.ws();
        if self.eat("[]") {
            return Ok(Type::list(self.ty()?));
        }
        if self.eat("?") {
            let w = self.word();
            return w.parse().map(Type::Var).map_err(|_| self.err("bad type variable"));
        }
        let save = self.i;
        let w = self.word();
        match w.as_str() {
            "bool" => Ok(Type::Bool),
            "str" => Ok(Type::Str),
            "int" => Ok(Type::Int),
            "float" => Ok(Type::Float),
            "variant" => Ok(Type::Variant),
            "map" => {
                self.expect("{")?;
                let k = self.ty()?;
                self.expect(":")?;
                let v = self.ty()?;
                self.expect("}")?;
                Ok(Type::map(k, v))
            }
            "struct" => {
                self.expect("{")?;
                let mut fields = Vec::new();
                loop {
                    if self.eat("}") {
                        break;
                    }
                    let name = self.word();
                    if name.is_empty() {
                        return Err(self.err("expected a field name"));
                    }
                    let t = self.ty()?;
                    if fields.iter().any(|(n, _)| n == &name) {
                        return Err(TypeParseError(format!("duplicate struct field of `{name} {t}`")));
                    }
                    fields.push((name, t));
                    if !self.eat(";") {
                        self.expect("}")?;
                        break;
                    }
                }
                Ok(Type::Struct(fields))
            }
            "func" => {
                self.expect("(")?;
                let mut args = Vec::new();
                if !self.eat(")") {
                    loop {
                        let index = args.len();
                        self.eat("$");
                        let save = self.i;
                        let w = self.word();
                        let is_type_word = matches!(
                            w.as_str(),
                            "bool" | "str" | "int" | "float" | "variant" | "map" | "struct" | "func"
                        );
                        let (name, t) = if !w.is_empty() && !is_type_word {
                            (w, self.ty()?)
                        } else {
                            self.i = save;
                            (index.to_string(), self.ty()?)
                        };
                        args.push((name, t));
                        if self.eat(")") {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                let ret = self.ty()?;
                Ok(Type::Func(args, Box::new(ret)))
            }
            _ => {
                self.i = save;
                Err(self.err("expected a type"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_signature_types() {
        for s in [
            "[]int",
            "map{str: int}",
            "struct{a str; b []int}",
            "func(inputs []?1, function func(?1) ?2) []?2",
            "func(str, int) bool",
            "variant",
        ] {
            assert_eq!(parse_type(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn refuses_deep_nesting_instead_of_overflowing() {
        let deep = format!("{}int", "[]".repeat(20_000));
        let err = parse_type(&deep).unwrap_err().0;
        assert!(err.contains("nest too deeply"), "{err}");
        assert!(err.len() < 300, "the message quotes a bounded excerpt: {err}");
        let deep_maps = format!("{}int{}", "map{str: ".repeat(20_000), "}".repeat(20_000));
        assert!(parse_type(&deep_maps).unwrap_err().0.contains("nest too deeply"));
        let ok = format!("{}int", "[]".repeat(MAX_TYPE_DEPTH as usize - 1));
        assert!(parse_type(&ok).is_ok());
    }

    proptest::proptest! {
        /// What the `type_string` fuzz target checks, over strings made of the type syntax's
        /// own pieces: no panic, and a parsed type prints to text that parses back to it.
        #[test]
        fn any_type_string_parses_or_errs_and_round_trips(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "[]", "map{", "}", ":", "struct{", ";", "func(", ")", ",", "$", "?1", "?2",
                "int", "str", "bool", "float", "variant", " ", "a", "b", "é",
            ]), 0..40)
        ) {
            let text: String = pieces.concat();
            if let Ok(ty) = parse_type(&text) {
                let printed = ty.to_string();
                proptest::prop_assert_eq!(parse_type(&printed), Ok(ty), "{:?} printed as {:?}", text, printed);
            }
        }
    }

    #[test]
    fn rejects_duplicate_struct_fields() {
        assert!(parse_type("struct{x int; x int}").unwrap_err().0.contains("duplicate struct field of `x int`"));
    }
}
