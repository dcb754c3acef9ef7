//! `tend completions SHELL` and `tend manpage`: generated from the CLI definition, so
//! every subcommand and option appears, and bash accepts the script.

use std::process::Command;

const TEND: &str = env!("CARGO_BIN_EXE_tend");

fn out(args: &[&str]) -> String {
    let out = Command::new(TEND).args(args).output().expect("tend runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("text")
}

#[test]
fn completions_name_every_subcommand_and_bash_accepts_them() {
    let bash = out(&["completions", "bash"]);
    for word in ["check", "graph", "why", "deploy", "status", "run", "--detailed-exitcodes", "--converged-timeout"] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("tend.bash");
    std::fs::write(&script, &bash).unwrap();
    let syntax = Command::new("bash").arg("-n").arg(&script).output().unwrap();
    assert!(syntax.status.success(), "bash -n: {}", String::from_utf8_lossy(&syntax.stderr));
    assert!(out(&["completions", "zsh"]).starts_with("#compdef tend"));
    assert!(out(&["completions", "fish"]).contains("complete -c tend"));
}

#[test]
fn the_manual_page_lists_the_commands() {
    let man = out(&["manpage"]);
    assert!(man.contains(".TH tend 1"), "{}", &man[..man.len().min(200)]);
    assert!(man.contains(".SH NAME\ntend \\- A reactive configuration engine"), "{man}");
    for sub in ["check", "graph", "why", "deploy", "status", "run", "completions", "manpage"] {
        assert!(man.contains(&format!("tend\\-{sub}(1)")), "the subcommand {sub} is listed:\n{man}");
    }
}
