//! The init system as the service kinds see it: [`ServiceManager`], the `systemctl`
//! backend used when no D-Bus is reachable (the real one is [`crate::services::systemd::Systemd`]),
//! and an in-memory fake.

#[cfg(any(test, feature = "fakes"))]
use std::collections::BTreeSet;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
use engine::ResError;

use super::{run, run_ok};

/// The init system, by unit name (`nginx.service`, `backup.timer`).
#[async_trait]
pub trait ServiceManager: Send + Sync {
    async fn exists(&self, unit: &str, session: bool) -> Result<bool, ResError>;
    async fn is_active(&self, unit: &str, session: bool) -> Result<bool, ResError>;
    async fn is_enabled(&self, unit: &str, session: bool) -> Result<bool, ResError>;
    async fn start(&self, unit: &str, session: bool) -> Result<(), ResError>;
    async fn stop(&self, unit: &str, session: bool) -> Result<(), ResError>;
    async fn enable(&self, unit: &str, session: bool) -> Result<(), ResError>;
    async fn disable(&self, unit: &str, session: bool) -> Result<(), ResError>;
    async fn reload_or_try_restart(&self, unit: &str, session: bool) -> Result<(), ResError>;
    async fn daemon_reload(&self, session: bool) -> Result<(), ResError>;

    /// Enables `enable` and disables `disable` at once, with one daemon reload where the
    /// backend can (a group of `svc`s); by default one unit at a time.
    async fn set_startup(&self, enable: &[&str], disable: &[&str], session: bool) -> Result<(), ResError> {
        for unit in enable {
            self.enable(unit, session).await?;
        }
        for unit in disable {
            self.disable(unit, session).await?;
        }
        Ok(())
    }

    /// Follows `unit`: the stream yields whenever its state may have changed. It is live
    /// when this returns, so a change made after the call is never missed; its end means
    /// the subscription was lost. `Ok(None)`: this backend cannot follow units (callers
    /// poll instead).
    async fn changes(&self, unit: &str, session: bool) -> Result<Option<UnitChanges>, ResError> {
        let _ = (unit, session);
        Ok(None)
    }
}

/// Wake-ups for one unit (see [`ServiceManager::changes`]).
pub type UnitChanges = futures::stream::BoxStream<'static, ()>;

/// systemd through `systemctl`: what [`crate::services::systemd::Systemd`] falls back to when no bus
/// is reachable (as root, `systemctl` still reaches PID 1 through systemd's private socket).
pub struct Systemctl;

fn systemctl<'a>(session: bool, args: &[&'a str]) -> Vec<&'a str> {
    let mut argv = vec!["systemctl"];
    if session {
        argv.push("--user");
    }
    argv.extend_from_slice(args);
    argv
}

#[async_trait]
impl ServiceManager for Systemctl {
    async fn exists(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        let out = run(&systemctl(session, &["show", "--property=LoadState", "--value", unit])).await?;
        Ok(out.success() && out.stdout.trim() == "loaded")
    }
    async fn is_active(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        Ok(run(&systemctl(session, &["is-active", "--quiet", unit])).await?.success())
    }
    async fn is_enabled(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        Ok(run(&systemctl(session, &["is-enabled", "--quiet", unit])).await?.success())
    }
    async fn start(&self, unit: &str, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["start", unit])).await.map(drop)
    }
    async fn stop(&self, unit: &str, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["stop", unit])).await.map(drop)
    }
    async fn enable(&self, unit: &str, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["enable", unit])).await.map(drop)
    }
    async fn disable(&self, unit: &str, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["disable", unit])).await.map(drop)
    }
    async fn reload_or_try_restart(&self, unit: &str, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["reload-or-try-restart", unit])).await.map(drop)
    }
    async fn daemon_reload(&self, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["daemon-reload"])).await.map(drop)
    }
}

/// An in-memory init system for tests. Units must be added with [`FakeServices::add`]
/// before they exist; every call is recorded.
#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeServices {
    state: Mutex<FakeServiceState>,
}

#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
struct FakeServiceState {
    units: BTreeSet<String>,
    active: BTreeSet<String>,
    enabled: BTreeSet<String>,
    calls: Vec<String>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakeServices {
    pub fn add(&self, unit: &str) {
        self.lock().units.insert(unit.to_string());
    }
    pub fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }
    pub fn active(&self, unit: &str) -> bool {
        self.lock().active.contains(unit)
    }
    pub fn enabled(&self, unit: &str) -> bool {
        self.lock().enabled.contains(unit)
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, FakeServiceState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn call(&self, what: &str, unit: &str) -> Result<std::sync::MutexGuard<'_, FakeServiceState>, ResError> {
        let mut state = self.lock();
        state.calls.push(format!("{what} {unit}"));
        if !unit.is_empty() && !state.units.contains(unit) {
            return Err(ResError::new(format!("unit {unit} not found")));
        }
        Ok(state)
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl ServiceManager for FakeServices {
    async fn exists(&self, unit: &str, _: bool) -> Result<bool, ResError> {
        Ok(self.lock().units.contains(unit))
    }
    async fn is_active(&self, unit: &str, _: bool) -> Result<bool, ResError> {
        Ok(self.lock().active.contains(unit))
    }
    async fn is_enabled(&self, unit: &str, _: bool) -> Result<bool, ResError> {
        Ok(self.lock().enabled.contains(unit))
    }
    async fn start(&self, unit: &str, _: bool) -> Result<(), ResError> {
        self.call("start", unit)?.active.insert(unit.to_string());
        Ok(())
    }
    async fn stop(&self, unit: &str, _: bool) -> Result<(), ResError> {
        self.call("stop", unit)?.active.remove(unit);
        Ok(())
    }
    async fn enable(&self, unit: &str, _: bool) -> Result<(), ResError> {
        self.call("enable", unit)?.enabled.insert(unit.to_string());
        Ok(())
    }
    async fn disable(&self, unit: &str, _: bool) -> Result<(), ResError> {
        self.call("disable", unit)?.enabled.remove(unit);
        Ok(())
    }
    async fn reload_or_try_restart(&self, unit: &str, _: bool) -> Result<(), ResError> {
        self.call("reload-or-try-restart", unit).map(drop)
    }
    async fn daemon_reload(&self, _: bool) -> Result<(), ResError> {
        self.call("daemon-reload", "").map(drop)
    }
}
