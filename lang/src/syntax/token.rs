//! Tokens of mcl and the lexer (logos) that produces them (spec section 1).
//!
//! The lexer never fails: characters that match no rule, integer/float overflow, a carriage
//! return outside a string and an unterminated string become a [`Tok::Error`] token plus a
//! diagnostic, so the parser can carry on and report later syntax errors too.

use logos::Logos;

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::span::{FileId, Span};

/// A token as the parser sees it. Tokens carry no text: a word's, a literal's or a
/// number's is its span's slice of the source, read through [`str_body`], [`cap_name`],
/// [`int_value`] and friends when the parser needs it. (A large program has millions of
/// tokens: a byte each, instead of a string each.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tok {
    Newline,
    /// A lowercase identifier (`foo`, `a_b1`).
    Ident,
    /// A capitalized identifier (`File`); its name is lower-cased ([`cap_name`]: `file`).
    Cap,
    /// An integer that fits 64 bits ([`int_value`]).
    Int,
    /// A finite float ([`float_value`]).
    Float,
    /// A string literal, quotes included; [`str_body`] is its raw text between them.
    Str,
    /// A regular expression between slashes, only in a node definition's header
    /// (`node /^db\d+$/ {`); [`str_body`] is the text between the slashes.
    Regex,

    If,
    Else,
    For,
    ForKv,
    In,
    And,
    Or,
    Not,
    True,
    False,
    Func,
    Class,
    Include,
    Import,
    As,
    Panic,
    Collect,
    BoolKw,
    StrKw,
    IntKw,
    FloatKw,
    Map,
    Struct,
    Variant,

    /// `=`
    Equals,
    /// `=>`
    Rocket,
    /// `?:`
    Elvis,
    /// `<|>`
    Except,
    /// `->`
    Arrow,
    /// `~>`: a notifying edge (Puppet's relationship operator).
    NotifyArrow,
    /// `<~`: a notifying edge written right to left. (`<-` is `<` and `-` side by side,
    /// so `$a<-1` keeps meaning `$a < -1`.)
    NotifyBack,
    /// `+>`: appends to a list param in an override.
    Append,
    /// `@`: a virtual resource.
    At,
    /// `@@`: an exported resource.
    AtAt,
    /// `<|` and `|>`: a collector's query.
    CollectOpen,
    CollectClose,
    /// `<<|` and `|>>`: an exported-resource collector's query.
    ExportOpen,
    ExportClose,
    Dot,
    Colon,
    Semicolon,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    EqEq,
    NotEq,
    Lt,
    Gt,
    Le,
    Ge,
    LParen,
    RParen,
    LBrack,
    RBrack,
    LBrace,
    RBrace,
    Dollar,

    /// Something the lexer rejected; it already reported a diagnostic for it.
    Error,
    /// End of input (always the last token).
    Eof,
}

impl Tok {
    /// The fixed spelling of keyword and punctuation tokens.
    pub fn text(&self) -> Option<&'static str> {
        Some(match self {
            Tok::If => "if",
            Tok::Else => "else",
            Tok::For => "for",
            Tok::ForKv => "forkv",
            Tok::In => "in",
            Tok::And => "and",
            Tok::Or => "or",
            Tok::Not => "not",
            Tok::True => "true",
            Tok::False => "false",
            Tok::Func => "func",
            Tok::Class => "class",
            Tok::Include => "include",
            Tok::Import => "import",
            Tok::As => "as",
            Tok::Panic => "panic",
            Tok::Collect => "collect",
            Tok::BoolKw => "bool",
            Tok::StrKw => "str",
            Tok::IntKw => "int",
            Tok::FloatKw => "float",
            Tok::Map => "map",
            Tok::Struct => "struct",
            Tok::Variant => "variant",
            Tok::Equals => "=",
            Tok::Rocket => "=>",
            Tok::Elvis => "?:",
            Tok::Except => "<|>",
            Tok::Arrow => "->",
            Tok::NotifyArrow => "~>",
            Tok::NotifyBack => "<~",
            Tok::Append => "+>",
            Tok::At => "@",
            Tok::AtAt => "@@",
            Tok::CollectOpen => "<|",
            Tok::CollectClose => "|>",
            Tok::ExportOpen => "<<|",
            Tok::ExportClose => "|>>",
            Tok::Dot => ".",
            Tok::Colon => ":",
            Tok::Semicolon => ";",
            Tok::Comma => ",",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::Lt => "<",
            Tok::Gt => ">",
            Tok::Le => "<=",
            Tok::Ge => ">=",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBrack => "[",
            Tok::RBrack => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Dollar => "$",
            _ => return None,
        })
    }
}

/// The text of a string literal or a regular expression between its delimiters, from the
/// token's slice of the source (a string's quotes, a regex's slashes).
pub fn str_body(slice: &str) -> &str {
    slice.get(1..slice.len().saturating_sub(1)).unwrap_or_default()
}

/// A capitalized identifier's name, lower-cased (`File` is `file`, `Meta` is `meta`).
pub fn cap_name(slice: &str) -> String {
    slice.to_lowercase()
}

/// The value of a [`Tok::Int`] token's slice (which the lexer checked).
pub fn int_value(slice: &str) -> i64 {
    slice.parse().unwrap_or_default()
}

/// The value of a [`Tok::Float`] token's slice (which the lexer checked).
pub fn float_value(slice: &str) -> f64 {
    slice.parse().unwrap_or_default()
}

/// How a token whose source text is `slice` is named in "unexpected ..." messages.
pub fn describe(tok: Tok, slice: &str) -> String {
    if let Some(text) = tok.text() {
        return format!("`{text}`");
    }
    match tok {
        Tok::Newline => "newline".into(),
        Tok::Ident => format!("identifier `{slice}`"),
        Tok::Cap => format!("capitalized identifier `{}`", cap_name(slice)),
        Tok::Int => format!("integer `{}`", int_value(slice)),
        Tok::Float => format!("float `{}`", float_value(slice)),
        Tok::Str => "string".into(),
        Tok::Regex => "regular expression".into(),
        Tok::Error => "invalid token".into(),
        Tok::Eof => "end of file".into(),
        _ => "token".into(),
    }
}

/// The logos token rules. Converted to [`Tok`] by [`lex`].
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(skip r"[ \t]+")]
#[logos(skip(r"#[^\n]*", allow_greedy = true))]
enum Raw {
    #[token("\n")]
    Newline,
    #[token("\r")]
    CarriageReturn,
    #[regex(r"[a-z]([a-z0-9_]*[a-z0-9])?")]
    Ident,
    #[regex(r"[A-Z]([a-z0-9_]*[a-z0-9])?")]
    Cap,
    #[regex(r"-?[0-9]+")]
    Int,
    #[regex(r"-?[0-9]+\.[0-9]+")]
    Float,
    #[regex(r#""([^"\\]|\\(.|\n))*""#)]
    Str,
    #[regex(r#""([^"\\]|\\(.|\n))*"#, allow_greedy = true)]
    UnterminatedStr,
    /// `'text'` on one line: Puppet's and the shell's quoting, read as a string after one
    /// error so that the rest of the file parses as meant.
    #[regex(r"'([^'\\\n]|\\.)*'")]
    SingleQuoted,
    /// `||` and `&&`: read as `or` and `and` after one error.
    #[token("||")]
    OrOr,
    #[token("&&")]
    AndAnd,

    #[token("if")]
    If,
    #[token("else")]
    Else,
    #[token("for")]
    For,
    #[token("forkv")]
    ForKv,
    #[token("in")]
    In,
    #[token("and")]
    And,
    #[token("or")]
    Or,
    #[token("not")]
    Not,
    #[token("true")]
    True,
    #[token("false")]
    False,
    #[token("func")]
    Func,
    #[token("class")]
    Class,
    #[token("include")]
    Include,
    #[token("import")]
    Import,
    #[token("as")]
    As,
    #[token("panic")]
    Panic,
    #[token("collect")]
    Collect,
    #[token("bool")]
    BoolKw,
    #[token("str")]
    StrKw,
    #[token("int")]
    IntKw,
    #[token("float")]
    FloatKw,
    #[token("map")]
    Map,
    #[token("struct")]
    Struct,
    #[token("variant")]
    Variant,

    #[token("=")]
    Equals,
    #[token("=>")]
    Rocket,
    #[token("?:")]
    Elvis,
    #[token("<|>")]
    Except,
    #[token("->")]
    Arrow,
    #[token("~>")]
    NotifyArrow,
    #[token("<~")]
    NotifyBack,
    #[token("+>")]
    Append,
    #[token("@")]
    At,
    #[token("@@")]
    AtAt,
    #[token("<|")]
    CollectOpen,
    #[token("|>")]
    CollectClose,
    #[token("<<|")]
    ExportOpen,
    #[token("|>>")]
    ExportClose,
    #[token(".")]
    Dot,
    #[token(":")]
    Colon,
    #[token(";")]
    Semicolon,
    #[token(",")]
    Comma,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBrack,
    #[token("]")]
    RBrack,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("$")]
    Dollar,
}

/// What [`lex`] makes of one file.
pub struct Lexed {
    /// The tokens with their spans; the last is always [`Tok::Eof`] (with an empty span at
    /// the end of the text).
    pub tokens: Vec<(Tok, Span)>,
    pub diags: Diagnostics,
    /// When a string never ends: the earlier string that most likely lost its closing
    /// quote (it spans lines), after which every quote is off by one. Syntax errors past
    /// its start are consequences, not causes.
    pub misquoted: Option<Span>,
}

/// Splits `text` into tokens with their spans. Lexer errors are reported as diagnostics
/// and leave a [`Tok::Error`] in the stream, or the token that was evidently meant (`||`
/// is read as `or` after its error).
pub fn lex(file: FileId, text: &str) -> Lexed {
    // Sized once for typical code (a token per 5 bytes or more), instead of doubling and
    // copying its way up to hundreds of thousands of tokens for a large program; pages
    // never written stay unmapped.
    let mut tokens = Vec::with_capacity(text.len() / 5 + 16);
    let mut diags: Vec<Diagnostic> = Vec::new();
    let mut lexer = Raw::lexer(text);
    let mut carriage_returns = 0;
    let mut first_carriage_return = 0;
    // In a node definition's header (`node` at a statement's start, up to its `{`), a `/`
    // starts a regular expression; anywhere else `/` divides.
    let mut node_header = false;
    let mut unterminated = None;
    while let Some(raw) = lexer.next() {
        let range = lexer.span();
        let span = Span::new(file, range.start, range.end);
        let slice = lexer.slice();
        if node_header && raw == Ok(Raw::Slash) {
            let rest = &text[range.end..];
            let mut escaped = false;
            let close = rest.char_indices().find(|&(_, c)| {
                let end = !escaped && (c == '/' || c == '\n');
                escaped = !escaped && c == '\\';
                end
            });
            match close {
                Some((at, '/')) => {
                    lexer.bump(at + 1);
                    let span = Span::new(file, range.start, range.end + at + 1);
                    tokens.push((Tok::Regex, span));
                }
                _ => {
                    diags.push(
                        Diagnostic::new(Stage::LexParse, "unterminated regular expression", span)
                            .with_code(Code::Lex)
                            .with_note("a node's regular expression is written between slashes on one line: `node /^db\\d+$/ {`"),
                    );
                    tokens.push((Tok::Error, span));
                }
            }
            continue;
        }
        match &raw {
            Ok(Raw::Ident) if slice == "node" => {
                node_header = matches!(tokens.last(), None | Some((Tok::Newline, _)));
            }
            Ok(Raw::LBrace | Raw::Newline) => node_header = false,
            _ => {}
        }
        if raw == Ok(Raw::CarriageReturn) {
            // Reported once (below); skipped like a space so that the rest of a file with
            // Windows line endings still parses and its real errors are found.
            carriage_returns += 1;
            if carriage_returns == 1 {
                first_carriage_return = diags.len();
                diags.push(
                    Diagnostic::new(Stage::LexParse, "unrecognized carriage return", span)
                        .with_code(Code::Lex)
                        .with_note("mcl files must use `\\n` line endings, without `\\r`"),
                );
            }
            continue;
        }
        if raw == Ok(Raw::UnterminatedStr) {
            unterminated = Some((diags.len(), span));
        }
        let tok = match raw {
            Ok(raw) => convert(raw, slice, span, &mut diags),
            Err(()) => {
                let ch = text[range.start..].chars().next().unwrap_or('?');
                let mut diag = Diagnostic::new(Stage::LexParse, format!("unrecognized: `{}`", ch.escape_debug()), span)
                    .with_code(Code::Lex);
                if let Some(note) = unrecognized_note(ch) {
                    diag = diag.with_note(note);
                }
                diags.push(diag);
                Tok::Error
            }
        };
        tokens.push((tok, span));
    }
    if carriage_returns > 1 {
        let note = format!("the file has {carriage_returns} carriage returns (Windows line endings?)");
        if let Some(d) = diags.get_mut(first_carriage_return) {
            d.notes.push(note);
        }
    }
    let mut misquoted = None;
    if let Some((at, span)) = unterminated {
        misquoted = misquoted_before(&tokens, text, span.start);
        diags.insert(at, unterminated_string(text, span, misquoted));
    }
    tokens.push((Tok::Eof, Span::new(file, text.len(), text.len())));
    Lexed { tokens, diags: diags.into_iter().collect(), misquoted }
}

/// The error of a string that runs to the end of the file, placed on its opening quote.
fn unterminated_string(text: &str, span: Span, misquoted: Option<Span>) -> Diagnostic {
    let line_at = |offset: u32| 1 + text.as_bytes()[..offset as usize].iter().filter(|&&b| b == b'\n').count();
    let last = line_at(span.end.max(span.start + 1) - 1);
    let opened = Span { end: span.start + 1, ..span };
    let mut diag = Diagnostic::new(Stage::LexParse, "unterminated string literal", opened)
        .with_code(Code::Lex)
        .with_label(span, format!("the string opened here runs to line {last}, the end of the file"));
    if let Some(earlier) = misquoted {
        let (from, to) = (line_at(earlier.start), line_at(earlier.end));
        diag = diag
            .with_label(
                Span { end: earlier.start + 1, ..earlier },
                format!("this string runs from line {from} to line {to}: is its closing quote missing?"),
            )
            .with_note(format!(
                "a string missing its closing quote on line {from} would take the next quote as its end, and every quote after as the start of a string"
            ));
    }
    diag
}

/// The string before `before` most likely missing its closing quote: one that spans lines
/// and whose "closing" quote is followed by what starts a string's text (a letter, a digit,
/// a path's `/`), the quote that really opened the next string. A string that spans lines
/// and ends cleanly is taken as meant.
fn misquoted_before(tokens: &[(Tok, Span)], text: &str, before: u32) -> Option<Span> {
    let starts_text = |c: char| c.is_alphanumeric() || "/_$%~.*@".contains(c);
    let glued = |span: &Span| text[span.end as usize..].chars().next().is_some_and(starts_text);
    tokens
        .iter()
        .filter(|(tok, span)| span.end <= before && *tok == Tok::Str && text[span.range()].contains('\n'))
        .map(|&(_, span)| span)
        .find(glued)
}

/// A hint for characters that people coming from other languages often type.
fn unrecognized_note(ch: char) -> Option<&'static str> {
    Some(match ch {
        '!' => "negation is written `not`; inequality is `!=`",
        '&' => "logical and is written `and`",
        '|' => "logical or is written `or`; `<|>` is the fallback operator",
        '%' => "there is no modulo operator; use `math.mod`",
        '\'' => "strings use double quotes",
        '?' => "`?:` is only used in resource bodies (`field => $cond ?: value,`)",
        '_' => "names start with a letter and do not end with `_`",
        '@' | '~' | '^' | '`' => "this character has no meaning in mcl",
        _ => return None,
    })
}

fn convert(raw: Raw, slice: &str, span: Span, diags: &mut Vec<Diagnostic>) -> Tok {
    match raw {
        Raw::Newline => Tok::Newline,
        // Handled in `lex`.
        Raw::CarriageReturn => Tok::Error,
        Raw::Ident => Tok::Ident,
        Raw::Cap => Tok::Cap,
        Raw::Int => match slice.parse::<i64>() {
            Ok(_) => Tok::Int,
            Err(_) => {
                diags.push(
                    Diagnostic::new(Stage::LexParse, format!("integer: overflow: `{slice}`"), span)
                        .with_code(Code::Lex)
                        .with_note("integers are signed 64-bit"),
                );
                Tok::Error
            }
        },
        Raw::Float => match slice.parse::<f64>() {
            Ok(x) if x.is_finite() => Tok::Float,
            _ => {
                diags.push(
                    Diagnostic::new(Stage::LexParse, format!("float: overflow: `{slice}`"), span).with_code(Code::Lex),
                );
                Tok::Error
            }
        },
        Raw::Str => Tok::Str,
        Raw::SingleQuoted => {
            let inner = &slice[1..slice.len() - 1];
            diags.push(
                Diagnostic::new(Stage::LexParse, "strings use double quotes", span)
                    .with_code(Code::Lex)
                    .with_note(format!("write \"{inner}\"")),
            );
            Tok::Str
        }
        Raw::OrOr | Raw::AndAnd => {
            let (word, tok) = if raw == Raw::OrOr { ("or", Tok::Or) } else { ("and", Tok::And) };
            diags.push(
                Diagnostic::new(Stage::LexParse, format!("unrecognized: `{slice}`"), span)
                    .with_code(Code::Lex)
                    .with_note(format!("logical {word} is written `{word}`")),
            );
            tok
        }
        // Reported by `lex`, which knows the line the string runs to.
        Raw::UnterminatedStr => Tok::Error,
        Raw::If => Tok::If,
        Raw::Else => Tok::Else,
        Raw::For => Tok::For,
        Raw::ForKv => Tok::ForKv,
        Raw::In => Tok::In,
        Raw::And => Tok::And,
        Raw::Or => Tok::Or,
        Raw::Not => Tok::Not,
        Raw::True => Tok::True,
        Raw::False => Tok::False,
        Raw::Func => Tok::Func,
        Raw::Class => Tok::Class,
        Raw::Include => Tok::Include,
        Raw::Import => Tok::Import,
        Raw::As => Tok::As,
        Raw::Panic => Tok::Panic,
        Raw::Collect => Tok::Collect,
        Raw::BoolKw => Tok::BoolKw,
        Raw::StrKw => Tok::StrKw,
        Raw::IntKw => Tok::IntKw,
        Raw::FloatKw => Tok::FloatKw,
        Raw::Map => Tok::Map,
        Raw::Struct => Tok::Struct,
        Raw::Variant => Tok::Variant,
        Raw::Equals => Tok::Equals,
        Raw::Rocket => Tok::Rocket,
        Raw::Elvis => Tok::Elvis,
        Raw::Except => Tok::Except,
        Raw::Arrow => Tok::Arrow,
        Raw::NotifyArrow => Tok::NotifyArrow,
        Raw::NotifyBack => Tok::NotifyBack,
        Raw::Append => Tok::Append,
        Raw::At => Tok::At,
        Raw::AtAt => Tok::AtAt,
        Raw::CollectOpen => Tok::CollectOpen,
        Raw::CollectClose => Tok::CollectClose,
        Raw::ExportOpen => Tok::ExportOpen,
        Raw::ExportClose => Tok::ExportClose,
        Raw::Dot => Tok::Dot,
        Raw::Colon => Tok::Colon,
        Raw::Semicolon => Tok::Semicolon,
        Raw::Comma => Tok::Comma,
        Raw::Plus => Tok::Plus,
        Raw::Minus => Tok::Minus,
        Raw::Star => Tok::Star,
        Raw::Slash => Tok::Slash,
        Raw::EqEq => Tok::EqEq,
        Raw::NotEq => Tok::NotEq,
        Raw::Lt => Tok::Lt,
        Raw::Gt => Tok::Gt,
        Raw::Le => Tok::Le,
        Raw::Ge => Tok::Ge,
        Raw::LParen => Tok::LParen,
        Raw::RParen => Tok::RParen,
        Raw::LBrack => Tok::LBrack,
        Raw::RBrack => Tok::RBrack,
        Raw::LBrace => Tok::LBrace,
        Raw::RBrace => Tok::RBrace,
        Raw::Dollar => Tok::Dollar,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        lex(FileId(0), text).tokens.into_iter().map(|(t, _)| t).collect()
    }

    /// Each token with its slice of `text`.
    fn sliced(text: &str) -> Vec<(Tok, &str)> {
        lex(FileId(0), text).tokens.into_iter().map(|(t, span)| (t, &text[span.range()])).collect()
    }

    fn errors(text: &str) -> Vec<String> {
        lex(FileId(0), text).diags.iter().map(|d| d.message.clone()).collect()
    }

    #[test]
    fn keywords_win_only_on_exact_spelling() {
        assert_eq!(
            sliced("in index map mapping"),
            [(Tok::In, "in"), (Tok::Ident, "index"), (Tok::Map, "map"), (Tok::Ident, "mapping"), (Tok::Eof, "")]
        );
    }

    #[test]
    fn capitalized_words_are_lower_cased_and_split_at_inner_capitals() {
        assert_eq!(sliced("File"), [(Tok::Cap, "File"), (Tok::Eof, "")]);
        assert_eq!(cap_name("File"), "file");
        assert_eq!(sliced("fooBar"), [(Tok::Ident, "foo"), (Tok::Cap, "Bar"), (Tok::Eof, "")]);
        assert_eq!(sliced("HT"), [(Tok::Cap, "H"), (Tok::Cap, "T"), (Tok::Eof, "")]);
    }

    #[test]
    fn identifiers_do_not_end_with_an_underscore() {
        assert_eq!(sliced("a_b"), [(Tok::Ident, "a_b"), (Tok::Eof, "")]);
        assert_eq!(sliced("a_"), [(Tok::Ident, "a"), (Tok::Error, "_"), (Tok::Eof, "")]);
        assert_eq!(errors("a_"), vec!["unrecognized: `_`"]);
    }

    #[test]
    fn minus_is_part_of_number_literals() {
        assert_eq!(toks("$x-1"), [Tok::Dollar, Tok::Ident, Tok::Int, Tok::Eof]);
        assert_eq!(int_value(sliced("$x-1")[2].1), -1);
        assert_eq!(toks("$x - 1"), [Tok::Dollar, Tok::Ident, Tok::Minus, Tok::Int, Tok::Eof]);
        assert_eq!(sliced("-1.5 1."), [(Tok::Float, "-1.5"), (Tok::Int, "1"), (Tok::Dot, "."), (Tok::Eof, "")]);
        assert_eq!(float_value("-1.5"), -1.5);
    }

    #[test]
    fn overflowing_numbers_are_lexer_errors() {
        assert_eq!(errors("18446744073709551615"), vec!["integer: overflow: `18446744073709551615`"]);
        assert_eq!(toks("9223372036854775807 -9223372036854775808").len(), 3);
        let huge = format!("1{}.0", "0".repeat(400));
        assert_eq!(errors(&huge), vec![format!("float: overflow: `{huge}`")]);
    }

    #[test]
    fn strings_keep_raw_text_and_may_span_lines() {
        let text = r#""a\"b${x}""#;
        assert_eq!(toks(text), [Tok::Str, Tok::Eof]);
        assert_eq!(str_body(sliced(text)[0].1), r#"a\"b${x}"#);
        assert_eq!(str_body(sliced("\"a\nb\"")[0].1), "a\nb");
        assert_eq!(errors("\"abc"), vec!["unterminated string literal"]);
    }

    #[test]
    fn an_unterminated_string_says_where_it_opened_and_how_far_it_runs() {
        let lexed = lex(FileId(0), "$a = 1\n$x = \"abc\n}\n");
        let diag = lexed.diags.iter().next().unwrap();
        assert_eq!(diag.span.map(|s| (s.start, s.end)), Some((12, 13)));
        assert_eq!(diag.labels[0].message, "the string opened here runs to line 3, the end of the file");
        assert_eq!(lexed.misquoted, None);
    }

    #[test]
    fn a_string_that_swallowed_the_next_quote_is_named() {
        // Line 1 lacks its closing quote: its string ends at line 2's opening one.
        let text = "$x = \"abc\n$y = \"def\"\n$z = \"ok\"\n";
        let lexed = lex(FileId(0), text);
        let messages: Vec<_> = lexed.diags.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, ["unterminated string literal"]);
        assert_eq!(lexed.misquoted.map(|s| s.start), Some(5));
        let label = &lexed.diags.iter().next().unwrap().labels[1];
        assert_eq!(
            (label.span.start, label.message.as_str()),
            (5, "this string runs from line 1 to line 2: is its closing quote missing?")
        );
        // A path's `/` after the "closing" quote also gives it away, even when a later
        // string is glued to a word too: the earliest suspect is named.
        let text = "$x = \"hello\nfile \"/tmp/x\" {\n\tstate => \"exists\",\n}\n";
        let lexed = lex(FileId(0), text);
        assert_eq!(lexed.misquoted.map(|s| s.start), Some(5));
        // A string that spans lines and ends cleanly is not suspected.
        assert_eq!(lex(FileId(0), "$y = \"a\nb\"\n$w = \"x\n").misquoted, None);
    }

    #[test]
    fn other_languages_operators_and_quotes_are_one_error_each_and_read_as_meant() {
        assert_eq!(
            sliced("$a || $b && 'c'")[2..],
            [
                (Tok::Or, "||"),
                (Tok::Dollar, "$"),
                (Tok::Ident, "b"),
                (Tok::And, "&&"),
                (Tok::Str, "'c'"),
                (Tok::Eof, "")
            ]
        );
        assert_eq!(errors("$a || $b"), vec!["unrecognized: `||`"]);
        assert_eq!(errors("$a && $b"), vec!["unrecognized: `&&`"]);
        assert_eq!(errors("'it'"), vec!["strings use double quotes"]);
    }

    #[test]
    fn comments_vanish_but_newlines_stay() {
        assert_eq!(toks("$x # c\n# d\n"), vec![Tok::Dollar, Tok::Ident, Tok::Newline, Tok::Newline, Tok::Eof]);
    }

    #[test]
    fn carriage_return_outside_strings_is_an_error() {
        assert_eq!(errors("$x = 1\r\n"), vec!["unrecognized carriage return"]);
        assert_eq!(errors("$x = 1\r\n$y = 2\r\n$z = 3\r\n"), vec!["unrecognized carriage return"]);
        assert_eq!(toks("$x\r\n"), vec![Tok::Dollar, Tok::Ident, Tok::Newline, Tok::Eof]);
        assert!(errors("$x = \"a\r\"\n").is_empty());
    }

    #[test]
    fn operators_use_longest_match() {
        assert_eq!(
            toks("<|> <= < => = == != ?: ->"),
            vec![
                Tok::Except,
                Tok::Le,
                Tok::Lt,
                Tok::Rocket,
                Tok::Equals,
                Tok::EqEq,
                Tok::NotEq,
                Tok::Elvis,
                Tok::Arrow,
                Tok::Eof
            ]
        );
        assert_eq!(
            errors("! & | % ? ' x"),
            vec![
                "unrecognized: `!`",
                "unrecognized: `&`",
                "unrecognized: `|`",
                "unrecognized: `%`",
                "unrecognized: `?`",
                "unrecognized: `\\'`"
            ]
        );
    }
}
