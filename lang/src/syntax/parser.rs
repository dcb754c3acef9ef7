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

/// How tall an expression tree may get, counting the links of left-to-right chains
/// (`a + b + ...`) as well as nesting: later stages walk the tree recursively.
const MAX_HEIGHT: u32 = 400;

/// Marker: parsing failed and the diagnostic has already been pushed.
#[derive(Debug)]
pub(crate) struct Fail;

pub(crate) type PResult<T> = Result<T, Fail>;

/// Parses a whole file's tokens (which end with [`Tok::Eof`]).
pub(crate) fn parse_tokens(file: FileId, text: &str, tokens: &[(Tok, Span)]) -> (Vec<Stmt>, Diagnostics) {
    let mut p = Parser {
        text,
        tokens,
        pos: 0,
        file,
        diags: Diagnostics::new(),
        delims: Vec::new(),
        entries: Vec::new(),
        depth: 0,
        height: 0,
    };
    let stmts = p.stmts(false);
    (stmts, p.diags)
}

pub(crate) struct Parser<'t> {
    /// The source the tokens' spans point into: a token's text is its slice.
    text: &'t str,
    tokens: &'t [(Tok, Span)],
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
    // ---- token access ----

    fn peek(&self) -> &'t Tok {
        &self.tokens[self.pos.min(self.tokens.len() - 1)].0
    }

    fn peek_at(&self, n: usize) -> &'t Tok {
        &self.tokens[(self.pos + n).min(self.tokens.len() - 1)].0
    }

    fn span_at(&self, n: usize) -> Span {
        self.tokens[(self.pos + n).min(self.tokens.len() - 1)].1
    }

    fn span(&self) -> Span {
        self.tokens[self.pos.min(self.tokens.len() - 1)].1
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

    fn bump(&mut self) -> (&'t Tok, Span) {
        let i = self.pos.min(self.tokens.len() - 1);
        if !matches!(self.tokens[i].0, Tok::Eof) {
            self.pos += 1;
        }
        (&self.tokens[i].0, self.tokens[i].1)
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
        let mut stmts = Vec::new();
        loop {
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
        // Exactly its size: a large program's statement list lives through the compile's
        // peak, and doubling leaves up to half of it unused.
        stmts.shrink_to_fit();
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
