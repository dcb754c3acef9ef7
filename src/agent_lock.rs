//! One agent per state directory: `tend run` takes an exclusive lock on `PREFIX/agent.lock`
//! (holding its PID) for as long as it runs, so a second agent on the same prefix refuses
//! to start, naming the first, instead of fighting it over the machine and the state.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// The lock, held until dropped (the kernel lets go of it when the process dies, however).
pub struct AgentLock {
    _file: Flock<File>,
}

/// The lock file in a state directory.
pub fn lock_path(state_dir: &Path) -> PathBuf {
    state_dir.join("agent.lock")
}

impl AgentLock {
    /// Takes the lock on `state_dir` (creating the directory), or says who holds it.
    pub fn take(state_dir: &Path) -> Result<AgentLock, String> {
        std::fs::create_dir_all(state_dir)
            .map_err(|e| format!("cannot create the state directory {}: {e}", state_dir.display()))?;
        let path = lock_path(state_dir);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                let mut pid = String::new();
                let _partial = file.read_to_string(&mut pid);
                let holder = match pid.trim() {
                    "" => "another tend agent".to_string(),
                    pid => format!("another tend agent (PID {pid})"),
                };
                return Err(format!(
                    "{holder} is already running on the state directory {}: stop it, or give this run a \
                     --prefix of its own (two agents managing one machine would undo each other's changes)",
                    state_dir.display()
                ));
            }
            Err((_, e)) => return Err(format!("cannot lock {}: {e}", path.display())),
        };
        let pid = std::process::id().to_string();
        let written = file.set_len(0).and_then(|()| file.rewind()).and_then(|()| file.write_all(pid.as_bytes()));
        written.map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(AgentLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 44, defect 6: a second lock on one state directory is refused, naming the
    /// holder's PID; once the first is let go, the next one is taken.
    #[test]
    fn a_second_lock_on_one_prefix_is_refused_and_names_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = AgentLock::take(dir.path()).expect("the first lock");
        let err = AgentLock::take(dir.path()).err().expect("a second lock is refused");
        assert!(err.contains(&format!("PID {}", std::process::id())), "{err}");
        drop(first);
        AgentLock::take(dir.path()).expect("taken again once let go");
    }
}
