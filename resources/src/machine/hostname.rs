//! The transient hostname as `hostname` sees it: [`HostnameSetter`], `sethostname`, and an in-memory fake.

#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use engine::ResError;

pub trait HostnameSetter: Send + Sync {
    fn transient(&self) -> Result<String, ResError>;
    fn set_transient(&self, name: &str) -> Result<(), ResError>;
}

/// The kernel hostname (`gethostname`/`sethostname`).
pub struct Uname;

impl HostnameSetter for Uname {
    fn transient(&self) -> Result<String, ResError> {
        nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .map_err(|e| ResError::new(format!("gethostname: {e}")))
    }
    fn set_transient(&self, name: &str) -> Result<(), ResError> {
        nix::unistd::sethostname(name).map_err(|e| ResError::new(format!("sethostname: {e}")))
    }
}

#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeHostname {
    pub name: Mutex<String>,
}

#[cfg(any(test, feature = "fakes"))]
impl HostnameSetter for FakeHostname {
    fn transient(&self) -> Result<String, ResError> {
        Ok(self.name.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }
    fn set_transient(&self, name: &str) -> Result<(), ResError> {
        *self.name.lock().unwrap_or_else(|e| e.into_inner()) = name.to_string();
        Ok(())
    }
}
