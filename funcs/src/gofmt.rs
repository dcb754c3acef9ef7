//! Go's format strings, read once for both of their users: `fmt.printf` (mcl's strict
//! subset, checked against the argument types) and the templates' `printf` (Go's own
//! rules, errors inline). Each renders the directives its own way; what a directive is
//! (flags, width, precision, verb) is decided here.

/// Widths and precisions are capped here: a format string must not make a huge allocation.
pub const WIDTH_LIMIT: usize = 10_000;

/// One `%` directive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Directive {
    /// `-`: pad on the right.
    pub minus: bool,
    /// `+`: always a sign.
    pub plus: bool,
    /// `0`: pad numbers with zeros.
    pub zero: bool,
    /// ` `: a space where a plus sign would go.
    pub space: bool,
    /// `#`: the alternate form.
    pub sharp: bool,
    /// The width, 0 when not given.
    pub width: usize,
    /// The precision, when given (`%.f` is 0).
    pub precision: Option<usize>,
    pub verb: char,
}

impl Directive {
    /// Whether it is a bare verb, without flags, width or precision.
    pub fn is_bare(&self) -> bool {
        *self == Directive { verb: self.verb, ..Directive::default() }
    }
}

/// One piece of a format string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Text as it is.
    Lit(&'a str),
    /// `%%`.
    Percent,
    Verb(Directive),
    /// A `%` (with its flags) at the end, without a verb.
    NoVerb,
}

/// The pieces of `format`, in order; every string reads as something.
pub fn pieces(format: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = format;
    while !rest.is_empty() {
        let Some(at) = rest.find('%') else {
            out.push(Piece::Lit(rest));
            break;
        };
        if at > 0 {
            out.push(Piece::Lit(&rest[..at]));
        }
        let (piece, after) = directive(&rest[at + 1..]);
        out.push(piece);
        rest = after;
    }
    out
}

/// The directive after a `%`, and what follows it.
fn directive(s: &str) -> (Piece<'_>, &str) {
    let mut d = Directive::default();
    let mut chars = s.char_indices().peekable();
    while let Some(&(_, c)) = chars.peek() {
        match c {
            '-' => d.minus = true,
            '+' => d.plus = true,
            '0' => d.zero = true,
            ' ' => d.space = true,
            '#' => d.sharp = true,
            _ => break,
        }
        chars.next();
    }
    let number = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        let mut n: usize = 0;
        while let Some(&(_, c)) = chars.peek() {
            let Some(digit) = c.to_digit(10) else { break };
            n = n.saturating_mul(10).saturating_add(digit as usize).min(WIDTH_LIMIT);
            chars.next();
        }
        n
    };
    d.width = number(&mut chars);
    if chars.peek().is_some_and(|&(_, c)| c == '.') {
        chars.next();
        d.precision = Some(number(&mut chars));
    }
    match chars.next() {
        None => (Piece::NoVerb, ""),
        Some((i, '%')) if d.is_bare() => (Piece::Percent, &s[i + 1..]),
        Some((i, verb)) => {
            d.verb = verb;
            (Piece::Verb(d), &s[i + verb.len_utf8()..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verb(verb: char) -> Piece<'static> {
        Piece::Verb(Directive { verb, ..Directive::default() })
    }

    #[test]
    fn literals_verbs_and_percent_signs() {
        assert_eq!(
            pieces("a %d b %% c%s"),
            [Piece::Lit("a "), verb('d'), Piece::Lit(" b "), Piece::Percent, Piece::Lit(" c"), verb('s')]
        );
        assert_eq!(pieces("100%"), [Piece::Lit("100"), Piece::NoVerb]);
        assert_eq!(pieces(""), []);
        assert_eq!(pieces("é%vü"), [Piece::Lit("é"), verb('v'), Piece::Lit("ü")]);
    }

    #[test]
    fn flags_width_and_precision() {
        let [Piece::Verb(d)] = pieces("%-+08.3f")[..] else { panic!() };
        assert!(d.minus && d.plus && d.zero && !d.space);
        assert_eq!((d.width, d.precision, d.verb), (8, Some(3), 'f'));
        let [Piece::Verb(d)] = pieces("%.f")[..] else { panic!() };
        assert_eq!(d.precision, Some(0));
        assert!(!d.is_bare());
    }

    #[test]
    fn huge_widths_are_capped() {
        let [Piece::Verb(d)] = pieces("%99999999999999999999999d")[..] else { panic!() };
        assert_eq!(d.width, WIDTH_LIMIT);
    }
}
