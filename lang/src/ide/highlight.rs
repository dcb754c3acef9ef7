//! Highlighting from the lexer's tokens (and the comments in the gaps between them):
//! what each piece of text is, for an editor's semantic tokens.

use crate::span::{FileId, Span};
use crate::syntax::token::{Tok, lex};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Highlight {
    Keyword,
    /// Type words, resource kinds, capitalized names (`File[…]`, `Meta`).
    Type,
    Variable,
    Function,
    /// A package or module alias before `.`.
    Namespace,
    /// A resource field, struct field or named argument.
    Property,
    String,
    Regexp,
    Number,
    Comment,
    Operator,
}

/// The highlighted pieces of `text`, in order and not overlapping.
pub fn highlight(file: FileId, text: &str) -> Vec<(Span, Highlight)> {
    let tokens = lex(file, text).tokens;
    let mut out = Vec::with_capacity(tokens.len());
    let mut gap_from = 0usize;
    for (i, (tok, span)) in tokens.iter().enumerate() {
        comments(file, text, gap_from, span.start as usize, &mut out);
        gap_from = span.end as usize;
        let next = tokens.get(i + 1).map(|(t, _)| t);
        let prev = i.checked_sub(1).map(|p| &tokens[p].0);
        let kind = match tok {
            Tok::Ident if prev == Some(&Tok::Dollar) => continue,
            Tok::Dollar => {
                let end = match tokens.get(i + 1) {
                    Some((Tok::Ident, s)) => s.end,
                    _ => span.end,
                };
                out.push((Span { end, ..*span }, Highlight::Variable));
                continue;
            }
            Tok::Ident => match next {
                Some(Tok::LParen) => Highlight::Function,
                Some(Tok::Dot) => Highlight::Namespace,
                Some(Tok::Rocket | Tok::Append) => Highlight::Property,
                _ if prev == Some(&Tok::Arrow) => Highlight::Property,
                Some(Tok::Str | Tok::LBrack | Tok::Colon) | Some(Tok::Dollar)
                    if starts_statement(prev) || prev == Some(&Tok::Colon) =>
                {
                    Highlight::Type
                }
                _ if matches!(prev, Some(Tok::Colon)) => Highlight::Type,
                _ => continue,
            },
            Tok::Cap => Highlight::Type,
            Tok::Str => Highlight::String,
            Tok::Regex => Highlight::Regexp,
            Tok::Int | Tok::Float => Highlight::Number,
            Tok::BoolKw | Tok::StrKw | Tok::IntKw | Tok::FloatKw | Tok::Map | Tok::Struct | Tok::Variant => {
                Highlight::Type
            }
            Tok::Newline | Tok::Error | Tok::Eof => continue,
            Tok::LParen | Tok::RParen | Tok::LBrack | Tok::RBrack | Tok::LBrace | Tok::RBrace => continue,
            Tok::Comma | Tok::Semicolon | Tok::Dot | Tok::Colon => continue,
            t if t.text().is_some_and(|s| s.chars().all(|c| c.is_ascii_alphabetic())) => Highlight::Keyword,
            _ => Highlight::Operator,
        };
        out.push((*span, kind));
    }
    out
}

fn starts_statement(prev: Option<&Tok>) -> bool {
    matches!(prev, None | Some(Tok::Newline | Tok::LBrace | Tok::At | Tok::AtAt | Tok::Collect))
}

/// The comments in `text[from..to]`, a gap the lexer skipped: from each `#` to its line's end.
fn comments(file: FileId, text: &str, from: usize, to: usize, out: &mut Vec<(Span, Highlight)>) {
    let Some(gap) = text.get(from..to) else { return };
    let mut at = 0;
    while let Some(hash) = gap[at..].find('#') {
        let start = at + hash;
        let end = gap[start..].find('\n').map_or(gap.len(), |n| start + n);
        out.push((Span::new(file, from + start, from + end), Highlight::Comment));
        at = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_piece_gets_its_kind() {
        let text =
            "# header\nimport \"fmt\"\n$x = fmt.printf(\"%d\", 42) # trailing\nfile \"/a\" {\n\tcontent => $x,\n}\n";
        let got: Vec<(&str, Highlight)> =
            highlight(FileId(0), text).into_iter().map(|(s, h)| (&text[s.range()], h)).collect();
        for want in [
            ("# header", Highlight::Comment),
            ("import", Highlight::Keyword),
            ("$x", Highlight::Variable),
            ("fmt", Highlight::Namespace),
            ("printf", Highlight::Function),
            ("42", Highlight::Number),
            ("# trailing", Highlight::Comment),
            ("file", Highlight::Type),
            ("content", Highlight::Property),
            ("=>", Highlight::Operator),
        ] {
            assert!(got.contains(&want), "{want:?} not in {got:?}");
        }
        let starts: Vec<u32> = highlight(FileId(0), text).iter().map(|(s, _)| s.start).collect();
        assert!(starts.windows(2).all(|w| w[0] < w[1]), "in order");
    }
}
