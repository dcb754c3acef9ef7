//! The one place functions start processes (`os.system`, `net`'s interface lookups): each
//! with no input and killed when the function drops it (its input changed, or shutdown).
//! Resources have their own wrapper, `resources::util::command`, with process groups,
//! signals and timeouts; a tidy test keeps every other spawn out of the product's code.

/// A command for `program` with stdin closed and kill-on-drop set; the caller adds its
/// arguments and output streams.
pub fn new(program: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    cmd
}
