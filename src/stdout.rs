//! Writing the command's output to stdout without dying when the reader is gone:
//! `tend graph | head` closes the pipe early, and `println!` panics on a closed pipe.
//! Any other failed write (a full disk, `> /dev/full`, an I/O error) is said once on stderr,
//! later output is dropped, and the command exits 1 ([`exit_code`]): output a script saves
//! is never cut short with a success.

use std::fmt::Display;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};

/// What became of the writes so far.
static STATE: AtomicU8 = AtomicU8::new(WRITING);
const WRITING: u8 = 0;
/// The reader closed the pipe: the rest is not wanted (a quiet exit).
const CLOSED: u8 = 1;
/// A write failed otherwise: the output is incomplete.
const FAILED: u8 = 2;

/// Writes `text` to stdout as it is; see the module's documentation for failures.
pub fn print(text: impl Display) {
    if STATE.load(Ordering::Relaxed) != WRITING {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = write!(out, "{text}").and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            STATE.store(CLOSED, Ordering::Relaxed);
        } else if STATE.swap(FAILED, Ordering::Relaxed) != FAILED {
            crate::stderr::line(format_args!("error: cannot write the output: {e}"));
        }
    }
}

/// Writes one line to stdout; see [`print`].
pub fn line(text: impl Display) {
    print(format_args!("{text}\n"));
}

/// The command's exit code, made 1 when its output could not be written whole.
pub fn exit_code(code: ExitCode) -> ExitCode {
    if STATE.load(Ordering::Relaxed) == FAILED && code == ExitCode::SUCCESS { ExitCode::from(1) } else { code }
}
