//! Error recovery: every syntax error of a file is reported in one run, and no input makes
//! the parser panic or hang (property test over random token sequences).

use crate::syntax_support;

use lang::span::FileId;
use lang::syntax::parse;
use proptest::prelude::*;
use syntax_support::{line_of, parse_err};

#[test]
fn three_separate_errors_give_three_diagnostics() {
    let text = "$a = [1, 2,]\n$ok = 1\ntest \"t\" {\n\tfield => 1\n}\n$b = 1 2\nfile \"f\" {}\n";
    let diags = parse_err(text);
    let lines: Vec<usize> = diags.iter().map(|d| line_of(text, d)).collect();
    assert_eq!(lines, [1, 4, 6], "{diags:#?}");
}

#[test]
fn errors_inside_blocks_do_not_hide_later_errors() {
    let text = "class c {\n\t$x = )\n\t$y = 1\n\t$z = (\n}\nif true {\n\t$w = ]\n}\n$v = 1 +\n";
    let diags = parse_err(text);
    let lines: Vec<usize> = diags.iter().map(|d| line_of(text, d)).collect();
    assert_eq!(lines, [2, 4, 7, 9], "{diags:#?}");
}

#[test]
fn errors_in_resource_entries_recover_at_the_next_entry() {
    let text = "test \"t\" {\n\ta => ,\n\tb => 1,\n\tc => 2 3,\n\td => 4,\n}\n$after = ]\n";
    let (file, diags) = parse(FileId(0), text);
    let lines: Vec<usize> = diags.iter().map(|d| line_of(text, d)).collect();
    assert_eq!(lines, [2, 4, 7], "{diags:#?}");
    let lang::syntax::ast::StmtKind::Resource(res) = &file.stmts[0].kind else { panic!("{file:#?}") };
    assert_eq!(res.entries.len(), 2, "the good entries are kept");
}

#[test]
fn lexer_and_parser_errors_are_both_reported() {
    let text = "$a = 1 % 2\n$b = 99999999999999999999\n$c = [\n";
    let diags = parse_err(text);
    let messages: Vec<&str> = diags.iter().map(|d| d.message.as_str()).collect();
    assert!(messages.contains(&"unrecognized: `%`"), "{messages:#?}");
    assert!(messages.contains(&"integer: overflow: `99999999999999999999`"), "{messages:#?}");
    assert!(messages.iter().any(|m| m.contains("end of file")), "{messages:#?}");
}

#[test]
fn stray_closing_delimiters_do_not_loop() {
    for text in ["}\n", ")))\n]]]\n}}}\n", "}", "$x = 1 }\n", "else\n", "\n}\n$y = 2\n"] {
        parse_err(text);
    }
}

/// Spellings drawn from the whole token set, plus a few error characters.
const TOKENS: &[&str] = &[
    "\n", "\n", "\n", "$", "$", "x", "y", "fmt", ".", "printf", "File", "Meta", "Before", "1", "-2", "3.5", "\"s\"",
    "\"${x}\"", "if", "else", "for", "forkv", "in", "and", "or", "not", "true", "false", "func", "class", "include",
    "import", "as", "panic", "collect", "bool", "str", "int", "float", "map", "struct", "variant", "=", "=>", "?:",
    "<|>", "->", ":", ";", ",", "+", "-", "*", "/", "==", "!=", "<", ">", "<=", ">=", "(", ")", "[", "]", "{", "}",
    "{", "}", "%", "# c", "\r", "test",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_token_sequences_never_panic(picks in proptest::collection::vec(0..TOKENS.len(), 0..80)) {
        let text: String = picks.iter().map(|&i| TOKENS[i]).collect::<Vec<_>>().join(" ");
        let (file, diags) = parse(FileId(0), &text);
        if diags.is_empty() {
            let init = lang::init::check(&file);
            if init.is_empty() {
                let _ = lang::interpolate::run(file);
            }
        }
    }

    #[test]
    fn random_text_never_panics(text in "[ -~\n\t]{0,200}") {
        let (file, _) = parse(FileId(0), &text);
        let _ = lang::init::check(&file);
        let _ = lang::interpolate::run(file);
    }
}
