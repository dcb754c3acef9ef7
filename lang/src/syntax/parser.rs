//! The mcl parser: a hand-written recursive-descent parser over the token vector, with
//! precedence climbing for operators (spec 1.8) and the line-oriented rules of 1.9.
//!
//! Why not chumsky: mcl's grammar is newline-sensitive in ways that depend on the
//! construct (single- vs multi-line bracket forms, statements ending in a newline,
//! `} else {`), comparisons are non-associative, and every syntax error of a file must
//! be reported with mgmt-like "unexpected X, expected Y" texts. Plain recursive descent
//! states each of those rules in one obvious place, bounds recursion with an explicit
//! depth counter, and keeps compile times small.
//!
//! Error handling: a parse function returns `Err(Fail)` after pushing its diagnostic;
//! statement lists and resource bodies catch it, skip to the next statement (or entry)
//! boundary while keeping track of open delimiters, and carry on.

mod expr;
mod stmt;
mod typedecl;
mod types;

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::span::{FileId, Span};
use crate::syntax::ast::{Block, ResEntry, Stmt};
use crate::syntax::token::{self, Tok};

/// How deep expressions, types and blocks may nest before the parser gives up on them
/// (instead of overflowing the stack).
const MAX_DEPTH: u32 = 100;

/// How many syntax errors a file gets before the rest of it is not read: past a few, they
/// are echoes of the first, and a file of garbage would otherwise hold one per line.
const MAX_ERRORS: usize = 100;

/// How tall an expression tree may get, counting the links of left-to-right chains
/// (`a + b + ...`) as well as nesting: later stages walk the tree recursively.
const MAX_HEIGHT: u32 = 400;

/// Marker: parsing failed and the diagnostic has already been pushed.
#[derive(Debug)]
pub(crate) struct Fail;

pub(crate) type PResult<T> = Result<T, Fail>;

/// Parses a whole file's tokens (which end with [`Tok::Eof`]).
pub(crate) fn parse_tokens(file: FileId, text: &str, tokens: &[(Tok, Span)]) -> (Vec<Stmt>, Diagnostics) {
    let eof = tokens.last().copied().unwrap_or((Tok::Eof, Span::new(file, 0, 0)));
    let (mut stmts, diags) = Parser::new(file, text, tokens, eof).all(0);
    stmts.shrink_to_fit();
    (stmts, diags)
}

/// How many tokens a file has before [`parse_tokens_split`] parses its halves on two
/// threads (a few thousand lines: below that a thread costs more than it saves).
const SPLIT_TOKENS: usize = 1 << 16;

/// [`parse_tokens`] for tokens the lexer found no error in: a large file's two halves, cut
/// at a top-level statement boundary, are parsed at once on two threads. A half with any
/// diagnostic has the whole file parsed again in one piece, so errors, and recovery from
/// them, read exactly as without the split. The statements come in pieces, in order, for
/// [`joined`] once the tokens are gone (both lists and the tokens are never all whole at
/// once).
pub(crate) fn parse_tokens_split(file: FileId, text: &str, tokens: &[(Tok, Span)]) -> (Vec<Vec<Stmt>>, Diagnostics) {
    let Some(Cut { at, head_room, tail_room }) = tokens.len().checked_sub(SPLIT_TOKENS).and_then(|_| cut(tokens))
    else {
        let (stmts, diags) = parse_tokens(file, text, tokens);
        return (vec![stmts], diags);
    };
    let (head, tail) = tokens.split_at(at);
    // The head ends where the tail's first statement starts, as the whole file ends.
    let start = tail[0].1.start as usize;
    let head_eof = (Tok::Eof, Span::new(file, start, start));
    let tail_eof = tokens.last().copied().unwrap_or(head_eof);
    let ((head, head_diags), (tail, tail_diags)) = crate::halves::both(
        || Parser::new(file, text, head, head_eof).all(head_room),
        || Parser::new(file, text, tail, tail_eof).all(tail_room),
    );
    if !head_diags.is_empty() || !tail_diags.is_empty() {
        let (stmts, diags) = parse_tokens(file, text, tokens);
        return (vec![stmts], diags);
    }
    (vec![head, tail], Diagnostics::new())
}

/// The statements of [`parse_tokens_split`]'s pieces in one list of exactly their number.
pub(crate) fn joined(mut pieces: Vec<Vec<Stmt>>) -> Vec<Stmt> {
    if pieces.len() == 1 {
        // A file parsed in one piece (the common case): its list as it is, not moved again.
        return pieces.pop().unwrap_or_default();
    }
    let mut all = Vec::with_capacity(pieces.iter().map(Vec::len).sum());
    for piece in pieces {
        all.extend(piece);
    }
    all
}

/// Where [`parse_tokens_split`] cuts a file, and how many statements each side can hold at
/// most (its lines that end outside every bracket).
#[derive(Debug, PartialEq)]
struct Cut {
    at: usize,
    head_room: usize,
    tail_room: usize,
}

/// A token index near the middle of `tokens` where a top-level statement certainly starts:
/// outside every bracket, after a line that closed a brace, and at a word followed by a
/// string (a resource, `node` or `class` header). No construct continues a statement
/// across such a line break, so parsing either side alone gives the statements parsing the
/// whole does.
fn cut(tokens: &[(Tok, Span)]) -> Option<Cut> {
    let mut depth = 0u32;
    let half = tokens.len() / 2;
    let mut at = None;
    // Lines ending outside every bracket, before the cut and in all.
    let (mut head_room, mut room) = (0, 0);
    let mut prev = Tok::Newline;
    for (i, (tok, _)) in tokens.iter().enumerate() {
        match tok {
            Tok::LParen | Tok::LBrack | Tok::LBrace => depth += 1,
            Tok::RParen | Tok::RBrack | Tok::RBrace => depth = depth.checked_sub(1)?,
            Tok::Newline if depth == 0 && prev != Tok::Newline => room += 1,
            Tok::Ident if at.is_none() && i >= half && depth == 0 => {
                let after = tokens.get(i + 1).map(|(t, _)| *t);
                let before = || tokens[..i].iter().rev().map(|(t, _)| *t).find(|t| *t != Tok::Newline);
                if after == Some(Tok::Str) && prev == Tok::Newline && before() == Some(Tok::RBrace) {
                    at = Some(i);
                    head_room = room;
                }
            }
            Tok::Eof => break,
            _ => {}
        }
        prev = *tok;
    }
    // The last statement may end at the end of the file instead of a line.
    Some(Cut { at: at?, head_room, tail_room: room - head_room + 1 })
}

pub(crate) struct Parser<'t> {
    /// The source the tokens' spans point into: a token's text is its slice.
    text: &'t str,
    tokens: &'t [(Tok, Span)],
    /// What reading past the last token gives: the file's end, or where the other half of a
    /// split file starts ([`parse_tokens_split`]).
    eof: (Tok, Span),
    pos: usize,
    file: FileId,
    diags: Diagnostics,
    /// Opening delimiters not closed yet (for recovery and "unclosed" labels).
    delims: Vec<(Tok, Span)>,
    /// The entries of the resource bodies being parsed, innermost last: each body is
    /// gathered here and then moved out into a vector of exactly its size (grown one push
    /// at a time, a body of three entries would keep room for four, and the allocator
    /// keeps a block shrunk by less than half as it is).
    entries: Vec<ResEntry>,
    /// Current nesting depth of expressions, types and blocks.
    depth: u32,
    /// Height of the tree being built at this point (nesting plus chain links).
    height: u32,
}

impl<'t> Parser<'t> {
    fn new(file: FileId, text: &'t str, tokens: &'t [(Tok, Span)], eof: (Tok, Span)) -> Parser<'t> {
        Parser {
            text,
            tokens,
            eof,
            pos: 0,
            file,
            diags: Diagnostics::new(),
            delims: Vec::new(),
            entries: Vec::new(),
            depth: 0,
            height: 0,
        }
    }

    /// Every statement up to the end, and what went wrong; `room` is how many statements
    /// there can be at most (a hint: the list is made that large at once).
    fn all(mut self, room: usize) -> (Vec<Stmt>, Diagnostics) {
        let stmts = self.stmts_into(false, Vec::with_capacity(room));
        (stmts, self.diags)
    }

    // ---- token access ----

    /// The token at index `i`, or the end past the last.
    fn token(&self, i: usize) -> &(Tok, Span) {
        self.tokens.get(i).unwrap_or(&self.eof)
    }

    fn peek(&self) -> &Tok {
        &self.token(self.pos).0
    }

    fn peek_at(&self, n: usize) -> &Tok {
        &self.token(self.pos + n).0
    }

    fn span_at(&self, n: usize) -> Span {
        self.token(self.pos + n).1
    }

    fn span(&self) -> Span {
        self.token(self.pos).1
    }

    /// The source text of the token `n` ahead (a word, a literal with its quotes).
    fn text_at(&self, n: usize) -> &'t str {
        self.text.get(self.span_at(n).range()).unwrap_or_default()
    }

    /// The source text of the current token.
    fn word(&self) -> &'t str {
        self.text_at(0)
    }

    /// Whether the current token is the identifier `word` (a contextual keyword such as
    /// `type`, `inherits`, `realize`).
    fn at_word(&self, word: &str) -> bool {
        self.at_word_at(0, word)
    }

    fn at_word_at(&self, n: usize, word: &str) -> bool {
        *self.peek_at(n) == Tok::Ident && self.text_at(n) == word
    }

    /// The span of the last consumed token.
    fn prev_span(&self) -> Span {
        if self.pos == 0 { Span::new(self.file, 0, 0) } else { self.tokens[self.pos - 1].1 }
    }

    fn bump(&mut self) -> (Tok, Span) {
        let (tok, span) = *self.token(self.pos);
        if tok != Tok::Eof {
            self.pos += 1;
        }
        (tok, span)
    }

    fn at(&self, tok: &Tok) -> bool {
        self.peek() == tok
    }

    fn eat(&mut self, tok: &Tok) -> Option<Span> {
        if self.at(tok) { Some(self.bump().1) } else { None }
    }

    /// Consumes `tok` or reports "unexpected ..., expected `expected`".
    fn expect(&mut self, tok: &Tok, expected: &str) -> PResult<Span> {
        match self.eat(tok) {
            Some(span) => Ok(span),
            None => Err(self.unexpected(expected)),
        }
    }

    fn skip_newlines(&mut self) {
        while self.at(&Tok::Newline) {
            self.bump();
        }
    }

    // ---- delimiters ----

    /// Consumes an opening delimiter and remembers it.
    fn open(&mut self, tok: &Tok) -> PResult<Span> {
        let expected = format!("`{}`", tok.text().unwrap_or("?"));
        let span = self.expect(tok, &expected)?;
        self.delims.push((*tok, span));
        Ok(span)
    }

    /// Consumes the closing delimiter matching the innermost open one.
    fn close(&mut self, tok: &Tok, expected: &str) -> PResult<Span> {
        let span = self.expect(tok, expected)?;
        self.delims.pop();
        Ok(span)
    }

    // ---- errors ----

    /// Reports a syntax error at the current token and returns the failure marker.
    /// Tokens the lexer rejected were reported already, so they add nothing.
    fn unexpected(&mut self, expected: &str) -> Fail {
        self.unexpected_note(expected, None)
    }

    /// [`Parser::unexpected`] with a note explaining the rule that was broken.
    fn unexpected_note(&mut self, expected: &str, note: Option<&str>) -> Fail {
        if let Some(diag) = self.unexpected_diag(expected, note) {
            self.diags.push(diag);
        }
        Fail
    }

    /// The "unexpected ..., expected ..." diagnostic for the current token, or `None` when
    /// the token is one the lexer already reported.
    fn unexpected_diag(&self, expected: &str, note: Option<&str>) -> Option<Diagnostic> {
        let found = self.peek();
        if matches!(found, Tok::Error) {
            return None;
        }
        let message = format!("syntax error: unexpected {}, expected {expected}", token::describe(*found, self.word()));
        let mut diag = Diagnostic::new(Stage::LexParse, message, self.span()).with_code(Code::Syntax);
        if matches!(found, Tok::Eof | Tok::RParen | Tok::RBrack | Tok::RBrace)
            && let Some((open, open_span)) = self.delims.last()
        {
            let text = open.text().unwrap_or("?");
            diag = diag.with_label(*open_span, format!("unclosed `{text}` opened here"));
        }
        if let Some(note) = note {
            diag = diag.with_note(note);
        }
        Some(diag)
    }

    /// Stops reading after [`MAX_ERRORS`]: says so once, and skips to the end.
    fn give_up(&mut self) {
        if self.pos < self.tokens.len() {
            let message = format!("too many syntax errors: the rest of the file is not read (after {MAX_ERRORS})");
            self.diags.push(Diagnostic::new(Stage::LexParse, message, self.span()).with_code(Code::Syntax));
            self.pos = self.tokens.len();
        }
    }

    /// Reports an error with a custom message at `span`.
    fn error(&mut self, message: impl Into<String>, span: Span) -> Fail {
        self.diags.push(Diagnostic::new(Stage::LexParse, message, span).with_code(Code::Syntax));
        Fail
    }

    fn error_note(&mut self, message: impl Into<String>, span: Span, note: &str) -> Fail {
        self.diags.push(Diagnostic::new(Stage::LexParse, message, span).with_code(Code::Syntax).with_note(note));
        Fail
    }

    /// Runs `f` one nesting level deeper, refusing to go past [`MAX_DEPTH`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_DEPTH {
            let span = self.span();
            return Err(self.error(format!("syntax error: nesting is too deep (more than {MAX_DEPTH} levels)"), span));
        }
        self.chain_link()?;
        let height = self.height - 1;
        self.depth += 1;
        let out = f(self);
        self.depth -= 1;
        self.height = height;
        out
    }

    /// Counts one more link of a left-to-right chain (`a + b + ...`, `x[0][1]...`): such
    /// chains build trees as deep as they are long, and later stages walk trees
    /// recursively, so links count against the same depth limit as nesting. The caller
    /// restores `height` when the chain ends.
    fn chain_link(&mut self) -> PResult<()> {
        if self.height >= MAX_HEIGHT {
            let span = self.span();
            let message = format!(
                "syntax error: expression is too deep (more than {MAX_HEIGHT} levels); split it into several binds"
            );
            return Err(self.error(message, span));
        }
        self.height += 1;
        Ok(())
    }

    // ---- recovery ----

    /// Skips to the end of the current statement after an error: the next newline outside
    /// any bracket opened since `base`, or just before a `}` that closes the enclosing block.
    fn recover_stmt(&mut self, base: usize) {
        self.skip_past_error(base, false);
    }

    /// Skips to the end of a resource body entry: past the next `,` or newline outside
    /// brackets, or just before the `}` that closes the body.
    fn recover_entry(&mut self, base: usize) {
        self.skip_past_error(base, true);
    }

    /// Skips tokens while tracking the brackets still open since `base`. A closing bracket
    /// that matches no open one is stray and skipped, except `}`, which belongs to the
    /// enclosing block (so an unclosed `(` does not swallow the rest of the block).
    fn skip_past_error(&mut self, base: usize, stop_at_comma: bool) {
        let mut open: Vec<Tok> = self.delims.get(base..).unwrap_or_default().iter().map(|(t, _)| *t).collect();
        self.delims.truncate(base);
        loop {
            let tok = self.peek();
            match tok {
                Tok::Eof => return,
                Tok::Newline if open.is_empty() => {
                    self.bump();
                    return;
                }
                Tok::Comma if stop_at_comma && open.is_empty() => {
                    self.bump();
                    return;
                }
                Tok::LParen | Tok::LBrack | Tok::LBrace => open.push(*tok),
                Tok::RParen | Tok::RBrack | Tok::RBrace => {
                    let opener = match tok {
                        Tok::RParen => Tok::LParen,
                        Tok::RBrack => Tok::LBrack,
                        _ => Tok::LBrace,
                    };
                    if let Some(at) = open.iter().rposition(|t| *t == opener) {
                        open.truncate(at);
                    } else if opener == Tok::LBrace {
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    // ---- statement lists ----

    /// `program = { NL | stmt NL }`; inside a block it stops before the closing `}`.
    fn stmts(&mut self, in_block: bool) -> Vec<Stmt> {
        let mut stmts = self.stmts_into(in_block, Vec::new());
        // Exactly its size: a large program's statement list lives through the compile's
        // peak, and doubling leaves up to half of it unused.
        stmts.shrink_to_fit();
        stmts
    }

    /// [`Parser::stmts`] pushed onto `stmts` (room made ahead for a whole file's, which
    /// the caller trims).
    fn stmts_into(&mut self, in_block: bool, mut stmts: Vec<Stmt>) -> Vec<Stmt> {
        loop {
            if self.diags.len() >= MAX_ERRORS {
                self.give_up();
                break;
            }
            match self.peek() {
                Tok::Newline => {
                    self.bump();
                    continue;
                }
                Tok::Eof => break,
                Tok::RBrace if in_block => break,
                _ => {}
            }
            let base = self.delims.len();
            let start = self.pos;
            match self.stmt() {
                Ok(stmt) => match self.peek() {
                    Tok::Newline => {
                        self.bump();
                        stmts.push(stmt);
                    }
                    _ => {
                        stmts.push(stmt);
                        let _ = self.unexpected("a newline after the statement");
                        self.recover_stmt(base);
                    }
                },
                Err(Fail) => self.recover_stmt(base),
            }
            if self.pos == start {
                // Nothing consumed (e.g. a stray `}` at top level): skip the token.
                self.bump();
            }
        }
        stmts
    }

    /// `block = "{" program "}"`.
    fn block(&mut self) -> PResult<Block> {
        self.nested(|p| {
            let open = p.open(&Tok::LBrace)?;
            let stmts = p.stmts(true);
            let close = p.close(&Tok::RBrace, "`}` or a statement")?;
            Ok(Block { stmts, span: open.to(close) })
        })
    }

    /// A comma-separated list between `open` and `close` in either shape of spec 1.9:
    /// single line without a trailing comma, or an opening bracket followed by a newline
    /// and one element per line, each followed by a comma. Returns the items and the span
    /// from the opening to the closing delimiter.
    fn comma_list<T>(
        &mut self,
        open: &Tok,
        close: &Tok,
        what: &str,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<(Vec<T>, Span)> {
        let open_span = self.open(open)?;
        let close_text = format!("`{}`", close.text().unwrap_or("?"));
        let mut items = Vec::new();
        if self.at(&Tok::Newline) {
            loop {
                self.skip_newlines();
                if self.at(close) {
                    break;
                }
                if self.at(&Tok::Comma) {
                    return Err(self.unexpected(&format!("{what} or {close_text}")));
                }
                items.push(item(self)?);
                if !self.at(&Tok::Comma) {
                    let note = "in a multi-line list every element ends with a comma, the last one too";
                    return Err(self.unexpected_note("a trailing comma", Some(note)));
                }
                self.bump();
                if !self.at(&Tok::Newline) {
                    let note = "a multi-line list has one element per line";
                    return Err(self.unexpected_note("a newline", Some(note)));
                }
            }
        } else if !self.at(close) {
            loop {
                if self.at(&Tok::Comma) {
                    let expected = if items.is_empty() { format!("{what} or {close_text}") } else { what.to_string() };
                    return Err(self.unexpected(&expected));
                }
                items.push(item(self)?);
                if self.eat(&Tok::Comma).is_none() {
                    break;
                }
                if self.at(close) {
                    let note = "a single-line list takes no trailing comma; \
                                to use one, start a new line after the opening bracket";
                    return Err(self.unexpected_note(what, Some(note)));
                }
            }
        }
        if self.at(&Tok::Newline) && !items.is_empty() {
            let note = "a list that starts on the line of its opening bracket must end on that line too";
            if let Some(diag) = self.unexpected_diag(&format!("`,` or {close_text}"), Some(note)) {
                let label = format!("this `{}` is not closed on its line", open.text().unwrap_or("?"));
                self.diags.push(diag.with_label(open_span, label));
            }
            return Err(Fail);
        }
        let close_span = self.close(close, &format!("`,` or {close_text}"))?;
        Ok((items, open_span.to(close_span)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::token::lex;

    /// A program of `blocks` repeats of shapes that end a line with `}` at top level:
    /// resources, an edge statement, a map, a class, an `if`/`else`, a func.
    fn program(blocks: usize) -> String {
        let mut s = String::new();
        for i in 0..blocks {
            s.push_str(&format!(
                "file \"/r/a{i}\" {{\n\tmode => \"0644\",\n}}\nfile \"/r/b{i}\" {{\n}}\n\
                 File[\"/r/b{i}\"] -> File[\"/r/a{i}\"]\nfile \"/r/c{i}\" {{\n\tcontent => \"c\",\n}}\n$m{i} = {{\n\t\"k\" => {i},\n}}\n\n\
                 class k{i}($x) {{\n\tprint \"p{i}\" {{\n\t\tmsg => $x,\n\t}}\n}}\n\
                 if {i} > 3 {{\n\tinclude k{i}(\"y\")\n}} else {{\n\t$e{i} = 1\n}}\n\
                 func f{i}($v) {{\n\t$v + 1\n}}\n"
            ));
        }
        s
    }

    #[test]
    fn a_large_file_parsed_in_two_halves_gives_the_whole_files_statements() {
        let text = program(1_000);
        let lexed = lex(FileId(0), &text);
        assert!(lexed.diags.is_empty());
        assert!(lexed.tokens.len() > SPLIT_TOKENS, "large enough to be split");
        let Cut { at, head_room, tail_room } = cut(&lexed.tokens).expect("a statement boundary past the middle");
        assert!(at >= lexed.tokens.len() / 2);
        assert_eq!((lexed.tokens[at].0, lexed.tokens[at + 1].0), (Tok::Ident, Tok::Str));
        let whole = parse_tokens(FileId(0), &text, &lexed.tokens);
        let (pieces, split_diags) = parse_tokens_split(FileId(0), &text, &lexed.tokens);
        assert_eq!(pieces.len(), 2);
        let split = (joined(pieces), split_diags);
        assert_eq!(whole.1.len(), 0, "the test's program parses");
        // The room is a bound, and a close one: one statement a line outside brackets.
        assert!(head_room + tail_room >= whole.0.len());
        assert!(head_room + tail_room <= whole.0.len() + 1);
        assert_eq!(split.0.len(), whole.0.len());
        assert_eq!(split.0, whole.0);
    }

    #[test]
    fn a_syntax_error_in_a_split_file_reads_as_in_the_unsplit_one() {
        // One error in each half: both are reported, once each, as a one-piece parse would.
        let mut text = program(1_000);
        text.insert_str(100, "$bad = = 1\n");
        text.push_str("file \"/r/z\" {\n\tmode => ,\n}\n");
        let lexed = lex(FileId(0), &text);
        assert!(cut(&lexed.tokens).is_some());
        let whole = parse_tokens(FileId(0), &text, &lexed.tokens);
        let (pieces, split_diags) = parse_tokens_split(FileId(0), &text, &lexed.tokens);
        let split = (joined(pieces), split_diags);
        assert_eq!(whole.1.len(), 2);
        assert_eq!(format!("{:?}", split.1), format!("{:?}", whole.1));
        assert_eq!(split.0, whole.0);
    }

    #[test]
    fn no_split_inside_brackets_or_after_an_open_line() {
        // The only `}` line past the middle is inside a list, and the line after an arrow
        // continues its statement: nowhere to cut.
        let mut text = String::from("$l = [\n");
        for i in 0..20_000 {
            text.push_str(&format!("\tstruct {{\n\t\ta => {i},\n\t}},\n"));
        }
        text.push_str("]\nfile \"/a\" {\n} ->\nfile \"/b\" {\n}\n");
        let lexed = lex(FileId(0), &text);
        assert!(lexed.diags.is_empty());
        assert!(lexed.tokens.len() > SPLIT_TOKENS);
        assert_eq!(cut(&lexed.tokens), None);
    }
}
