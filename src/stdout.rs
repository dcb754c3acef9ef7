//! Writing the command's output to stdout without dying when the reader is gone:
//! `tend graph | head` closes the pipe early, and `println!` panics on a closed pipe.

use std::fmt::Display;
use std::io::Write;

/// Writes `text` to stdout as it is; a closed pipe loses the rest of the output, nothing
/// else.
pub fn print(text: impl Display) {
    let mut out = std::io::stdout().lock();
    let _lost = write!(out, "{text}").and_then(|()| out.flush());
}

/// Writes one line to stdout; see [`print`].
pub fn line(text: impl Display) {
    print(format_args!("{text}\n"));
}
