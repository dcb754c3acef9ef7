//! The `sys` package: environment and machine facts.

use super::streams::poll;
use super::{strukt, typed};
use crate::api::{FuncError, FuncResult};
use crate::builtin;
use crate::registry::Registry;
use crate::streaming;
use lang::value::Value;
use std::collections::BTreeMap;
use std::time::Duration;

pub fn register(r: &mut Registry) {
    typed(r, "sys.getenv", getenv::DEF);
    typed(r, "sys.hasenv", hasenv::DEF);
    typed(r, "sys.env", env::DEF);
    typed(r, "sys.hostname", hostname::DEF);
    typed(r, "sys.cpu_count", cpu_count::DEF);
    typed(r, "sys.load", load::DEF);
    typed(r, "sys.uptime", uptime::DEF);
}

builtin! {
    /// an environment variable (unset is an error)
    fn getenv(name: &str) -> Result<String, FuncError> {
        match std::env::var_os(name) {
            Some(v) => Ok(v.to_string_lossy().into_owned()),
            None => Err(FuncError::catchable(format!("environment variable {name} is not set"))),
        }
    }
}

builtin! {
    /// whether an environment variable is set
    fn hasenv(name: &str) -> bool {
        std::env::var_os(name).is_some()
    }
}

builtin! {
    /// the whole environment
    fn env() -> FuncResult as "map{str: str}" {
        let m: BTreeMap<Value, Value> =
            std::env::vars_os().map(|(k, v)| (Value::str(k.to_string_lossy()), Value::str(v.to_string_lossy()))).collect();
        Ok(Value::map(m))
    }
}

/// The machine's host name (empty if it can't be read).
pub fn machine_hostname() -> String {
    nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default()
}

streaming! {
    /// the machine's host name (or the one `--hostname` gives)
    fn hostname(em) -> "str" {
        match em.host().hostname.clone() {
            Some(name) => {
                em.value(Value::str(name)).await;
            }
            None => poll(em, Duration::from_secs(10), || Ok(Value::str(machine_hostname()))).await,
        }
    }
}

/// Counts the CPUs of a `/sys/devices/system/cpu/online` list like `0-3,5`.
pub fn count_cpu_list(list: &str) -> Option<i64> {
    let mut n = 0;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<i64>().ok()? - a.parse::<i64>().ok()? + 1,
            None => {
                part.parse::<i64>().ok()?;
                1
            }
        };
    }
    Some(n)
}

fn read_cpu_count() -> FuncResult {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| count_cpu_list(&s))
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get() as i64))
        .map(Value::Int)
        .ok_or_else(|| FuncError::catchable("can't count the CPUs"))
}

streaming! {
    /// the number of online CPUs, updated on change
    fn cpu_count(em) -> "int" {
        poll(em, Duration::from_secs(1), read_cpu_count).await
    }
}

/// Parses `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Option<(f64, f64, f64)> {
    let mut it = text.split_whitespace().map(|s| s.parse::<f64>());
    Some((it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?))
}

fn read_load() -> FuncResult {
    let text = std::fs::read_to_string("/proc/loadavg")
        .map_err(|e| FuncError::catchable(format!("can't read the load average: {e}")))?;
    let (a, b, c) = parse_loadavg(&text).ok_or_else(|| FuncError::catchable("can't parse /proc/loadavg"))?;
    Ok(strukt([("x1", Value::Float(a)), ("x5", Value::Float(b)), ("x15", Value::Float(c))]))
}

streaming! {
    /// the load averages, every second
    fn load(em) -> "struct{x1 float; x5 float; x15 float}" {
        poll(em, Duration::from_secs(1), read_load).await
    }
}

fn read_uptime() -> FuncResult {
    let text = std::fs::read_to_string("/proc/uptime")
        .map_err(|e| FuncError::catchable(format!("can't read the uptime: {e}")))?;
    text.split_whitespace()
        .next()
        .and_then(|s| s.parse::<f64>().ok())
        .map(|f| Value::Int(f as i64))
        .ok_or_else(|| FuncError::catchable("can't parse /proc/uptime"))
}

streaming! {
    /// seconds since boot, every second
    fn uptime(em) -> "int" {
        poll(em, Duration::from_secs(1), read_uptime).await
    }
}
