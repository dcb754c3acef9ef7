//! `tend fmt`: a program in mgmt's canonical layout. In mcl newlines are grammar, so the
//! lines of a program are its structure: the formatter keeps every token and every line
//! break as written and decides only the whitespace around them (indentation by bracket
//! nesting, one space around operators and `=>`, none inside a one-line list, one blank
//! line at most), and keeps every comment on its line. Tokens are printed from the source,
//! so strings and numbers stay exactly as written; the token stream of the result is the
//! original's, which is why formatting never changes what a program means.

use std::collections::HashSet;

use crate::diag::Diagnostics;
use crate::span::{FileId, Span};
use crate::syntax::ast::ExprKind;
use crate::syntax::token::Tok;

/// `text` in canonical layout, or the errors that stop it from parsing (then nothing is
/// formatted).
pub fn format(file: FileId, text: &str) -> Result<String, Diagnostics> {
    let (mut ast, tokens, diags) = crate::syntax::parse_with_tokens(file, text);
    if !diags.is_empty() {
        return Err(diags);
    }
    // Where a declared type's name ends before its construction's `{` (`vhost{…}`), which
    // the tokens alone do not tell from a block after a name.
    let mut constructs = HashSet::new();
    crate::syntax::visit::exprs_mut(&mut ast.stmts, &mut |e| {
        if let ExprKind::Construct { ty, .. } = &e.kind {
            constructs.insert(ty.span.end);
        }
    });
    let lines = lines(text, tokens);
    Ok(Printer { constructs, ..Printer::default() }.print(text, &lines))
}

/// One token as the printer sees it: its kind and where its text is in the source (`<`
/// and `-` written together, Puppet's `<-`, are one token).
struct Token {
    tok: Tok,
    span: Span,
}

/// One line of the source: its tokens and the comment that ends it (either may be
/// missing; both missing is a blank line).
#[derive(Default)]
struct Line {
    tokens: Vec<Token>,
    comment: Option<String>,
}

/// Splits the token stream at its newlines, finding each line's comment in the gap the
/// lexer skipped before the newline.
fn lines(text: &str, tokens: Vec<(Tok, Span)>) -> Vec<Line> {
    let mut out = Vec::new();
    let mut line = Line::default();
    let mut gap_start = 0usize;
    let mut tokens = tokens.into_iter().peekable();
    while let Some((tok, span)) = tokens.next() {
        let gap = &text[gap_start..span.start as usize];
        if let Some(at) = gap.find('#') {
            line.comment = Some(gap[at..].trim_end().to_string());
        }
        gap_start = span.end as usize;
        match tok {
            Tok::Newline => out.push(std::mem::take(&mut line)),
            Tok::Eof => {
                if !line.tokens.is_empty() || line.comment.is_some() {
                    out.push(std::mem::take(&mut line));
                }
            }
            Tok::Lt if matches!(tokens.peek(), Some((Tok::Minus, next)) if next.start == span.end) => {
                let (_, minus) = tokens.next().expect("peeked");
                gap_start = minus.end as usize;
                line.tokens.push(Token { tok, span: Span { end: minus.end, ..span } });
            }
            // After `$` or `.`, a keyword is a name (`$map`, `iter.map`).
            tok => {
                let named = matches!(line.tokens.last(), Some(Token { tok: Tok::Dollar | Tok::Dot, .. }));
                let tok = if named && !matches!(tok, Tok::Ident | Tok::Cap | Tok::Dot) { Tok::Ident } else { tok };
                line.tokens.push(Token { tok, span });
            }
        }
    }
    out
}

/// An open bracket and the indentation of the line that opened it.
struct Open {
    /// A `{` of a block of statements or a body, spaced inside on one line (`{ 42 }`); any
    /// other bracket (a map or struct literal or type, `{"a" => 1}`, a list, a call) is not.
    block: bool,
    indent: usize,
}

#[derive(Default)]
struct Printer {
    out: String,
    open: Vec<Open>,
    /// The end offsets of the type names of constructions.
    constructs: HashSet<u32>,
}

impl Printer {
    fn print(mut self, text: &str, lines: &[Line]) -> String {
        let mut blank = false;
        let mut started = false;
        for line in lines {
            if line.tokens.is_empty() && line.comment.is_none() {
                blank = started;
                continue;
            }
            let closes_first = line.tokens.first().is_some_and(|t| is_closer(&t.tok));
            let indent = match (self.open.last(), closes_first) {
                (Some(open), true) => open.indent,
                (Some(open), false) => open.indent + 1,
                (None, _) => 0,
            };
            // Runs of blank lines become one; none is kept at the start or the end.
            if blank {
                self.out.push('\n');
            }
            blank = false;
            started = true;
            self.out.extend(std::iter::repeat_n('\t', indent));
            self.tokens(text, &line.tokens, indent);
            if let Some(comment) = &line.comment {
                if !line.tokens.is_empty() {
                    self.out.push(' ');
                }
                self.out.push_str(comment);
            }
            self.out.push('\n');
        }
        self.out
    }

    fn tokens(&mut self, text: &str, tokens: &[Token], indent: usize) {
        for (i, token) in tokens.iter().enumerate() {
            let prev = i.checked_sub(1).map(|p| &tokens[p]);
            if i > 0 && self.spaced(text, tokens, i - 1, i) {
                self.out.push(' ');
            }
            self.out.push_str(&text[token.span.range()]);
            match token.tok {
                Tok::LParen | Tok::LBrack => self.open.push(Open { block: false, indent }),
                Tok::LBrace => {
                    let block = prev.is_some_and(|p| opens_block(&p.tok) && !self.constructs.contains(&p.span.end));
                    self.open.push(Open { block, indent });
                }
                Tok::RParen | Tok::RBrack | Tok::RBrace => {
                    self.open.pop();
                }
                _ => {}
            }
        }
    }

    /// Whether a space goes between `tokens[a]` and the next one, `tokens[b]`.
    fn spaced(&self, text: &str, tokens: &[Token], a: usize, b: usize) -> bool {
        let (left, right) = (&tokens[a].tok, &tokens[b].tok);
        let in_block = self.open.last().is_some_and(|o| o.block);
        // `[]` sticks to its element type.
        if *left == Tok::RBrack && a > 0 && tokens[a - 1].tok == Tok::LBrack && starts_type(right) {
            return false;
        }
        // `$rest ...int`: a repeated param's dots stand apart from its name.
        let dots = |at: usize| (at..at + 3).all(|i| tokens.get(i).is_some_and(|t| t.tok == Tok::Dot));
        if *right == Tok::Dot && *left == Tok::Ident && a > 0 && tokens[a - 1].tok == Tok::Dollar && dots(b) {
            return true;
        }
        match right {
            Tok::Comma | Tok::Semicolon | Tok::Dot | Tok::Colon | Tok::RParen | Tok::RBrack => return false,
            Tok::RBrace => return in_block && *left != Tok::LBrace,
            _ => {}
        }
        match left {
            Tok::LParen | Tok::LBrack | Tok::Dot | Tok::Dollar | Tok::At | Tok::AtAt => return false,
            Tok::LBrace => return in_block,
            Tok::Colon => return starts_type(right),
            Tok::Comma | Tok::Semicolon => return true,
            _ => {}
        }
        let is_var = |at: usize| matches!(tokens[at].tok, Tok::Ident) && at > 0 && tokens[at - 1].tok == Tok::Dollar;
        match right {
            Tok::LParen => !matches!(left, Tok::Ident | Tok::Cap | Tok::Func | Tok::Panic | Tok::RParen | Tok::RBrace),
            // Indexing sticks to what it indexes; `$x []str` is a type annotation.
            Tok::LBrack => {
                let type_follows = tokens.get(b + 1).is_some_and(|t| t.tok == Tok::RBrack);
                let enum_list = *left == Tok::Ident && &text[tokens[a].span.range()] == "enum";
                let indexable = matches!(left, Tok::RBrack | Tok::RParen | Tok::Cap) || is_var(a) || enum_list;
                !indexable || (type_follows && is_var(a))
            }
            Tok::LBrace => !matches!(left, Tok::Map | Tok::Struct) && !self.constructs.contains(&tokens[a].span.end),
            // `$s->field` is a field; `A -> B` an edge.
            Tok::Arrow => !matches!(tokens.get(b + 1).map(|t| &t.tok), Some(Tok::Ident)),
            _ if *left == Tok::Arrow => !matches!(right, Tok::Ident),
            _ => true,
        }
    }
}

fn is_closer(tok: &Tok) -> bool {
    matches!(tok, Tok::RParen | Tok::RBrack | Tok::RBrace)
}

/// Whether a `{` after `tok` opens a block (statements, a body, a branch) rather than a
/// map or struct literal or a type.
fn opens_block(tok: &Tok) -> bool {
    matches!(
        tok,
        Tok::RParen
            | Tok::RBrack
            | Tok::RBrace
            | Tok::Str
            | Tok::Ident
            | Tok::Cap
            | Tok::Else
            | Tok::True
            | Tok::False
            | Tok::Int
            | Tok::Float
            | Tok::Regex
            | Tok::CollectClose
            | Tok::ExportClose
            | Tok::StrKw
            | Tok::IntKw
            | Tok::FloatKw
            | Tok::BoolKw
            | Tok::Variant
    )
}

/// Whether `tok` starts a type (after `name:` in a `map{K: V}` type).
fn starts_type(tok: &Tok) -> bool {
    matches!(
        tok,
        Tok::StrKw
            | Tok::IntKw
            | Tok::FloatKw
            | Tok::BoolKw
            | Tok::Map
            | Tok::Struct
            | Tok::Func
            | Tok::Variant
            | Tok::LBrack
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(text: &str) -> String {
        format(FileId(0), text).unwrap_or_else(|d| panic!("{text}: {:?}", d.iter().next()))
    }

    #[test]
    fn spacing_is_normalized_and_lines_are_kept() {
        assert_eq!(fmt("$x=42 # c\n"), "$x = 42 # c\n");
        assert_eq!(fmt("$l=[1,2 ,3]\n$m={\"a\"=>1}\n"), "$l = [1, 2, 3]\n$m = {\"a\" => 1}\n");
        assert_eq!(fmt("$h=$s->a\n$i = $l[0]\n"), "$h = $s->a\n$i = $l[0]\n");
        assert_eq!(fmt("File[\"/a\"]->File[\"/b\"]\n"), "File[\"/a\"] -> File[\"/b\"]\n");
        assert_eq!(fmt("$f = func($x){ $x }(42)\n"), "$f = func($x) { $x }(42)\n");
    }

    #[test]
    fn indentation_follows_nesting_and_blank_lines_collapse() {
        let text = "\n\nif true {\n\n\n\t\t$a = [\n1,\n\n\n2,\n]\n}\n\n\n";
        assert_eq!(fmt(text), "if true {\n\n\t$a = [\n\t\t1,\n\n\t\t2,\n\t]\n}\n");
        assert_eq!(
            fmt("$m = $map[\"a\"]\n$l = iter.map ($a, $f)\n$t [][] int = []\n"),
            "$m = $map[\"a\"]\n$l = iter.map($a, $f)\n$t [][]int = []\n"
        );
    }

    #[test]
    fn formatting_is_idempotent_and_keeps_strings() {
        let text = "$s = \"a  b\n   c\"   # keep\n$t=\"${s}\"\n";
        let once = fmt(text);
        assert_eq!(once, "$s = \"a  b\n   c\" # keep\n$t = \"${s}\"\n");
        assert_eq!(fmt(&once), once);
    }

    #[test]
    fn declared_types_keep_their_compact_forms() {
        let text = "type vhost {\n\tattr state enum [\"a\", \"b\"] { default => \"a\", }\n}\n$v = vhost { state => \"b\" }\nif $x {\n\t$y = 1\n}\n";
        let want = "type vhost {\n\tattr state enum[\"a\", \"b\"] { default => \"a\", }\n}\n$v = vhost{state => \"b\"}\nif $x {\n\t$y = 1\n}\n";
        assert_eq!(fmt(text), want);
    }

    #[test]
    fn a_repeated_param_keeps_its_dots_apart_from_its_name() {
        let want = "func f($a int, $rest ...int) int { $a }\n";
        assert_eq!(fmt("func f($a int,$rest...int) int { $a }\n"), want);
        assert_eq!(fmt(want), want);
    }

    #[test]
    fn a_program_that_does_not_parse_is_not_formatted() {
        assert!(format(FileId(0), "$x = = 1\n").is_err());
    }
}
