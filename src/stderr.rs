//! Writing to stderr without dying when it is gone: a daemon outlives the terminal or the
//! journal connection it started with, and `eprintln!` panics on a closed pipe (and so does
//! tracing's own fallback report), which would kill whichever task was logging.

use std::fmt::Display;
use std::io::Write;

/// Whether what goes to stderr may carry ANSI colours: it is a terminal, `NO_COLOR` is
/// unset (<https://no-color.org>) and the terminal is not `dumb`. A service's journal or a
/// redirected file gets plain text.
pub fn color() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// Writes `text` to stderr as it is; see [`line`].
pub fn print(text: impl Display) {
    let _lost = write!(std::io::stderr().lock(), "{text}");
}

/// Writes one line to stderr; a closed or full stderr loses the line, nothing else.
pub fn line(text: impl Display) {
    let _lost = writeln!(std::io::stderr().lock(), "{text}");
}

/// The log writer: stderr, with write errors swallowed (reported as success so the
/// subscriber does not fall back to a panicking `eprintln!`).
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _lost = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _lost = std::io::stderr().flush();
        Ok(())
    }
}
