//! The `util` package.

use super::net::{local_macs, parse_mac};
use super::{arg_map, pure};
use crate::api::{CallCtx, FuncError, FuncResult};
use crate::registry::Registry;
use lang::value::Value;
use std::collections::BTreeMap;

pub fn register(r: &mut Registry) {
    pure(
        r,
        "util.hostname_mapper",
        "func(macs map{str: str}) str",
        hostname_mapper,
        "the host name mapped to a local MAC",
    );
}

/// The host name a MAC -> host name map gives this machine: `""` when none of the
/// local MACs is listed, an error when they map to different names.
pub fn map_hostname(map: &BTreeMap<Value, Value>, local: &[[u8; 6]]) -> FuncResult {
    let mut found: Option<&str> = None;
    for (k, v) in map {
        let (Some(mac), Some(host)) = (k.as_str(), v.as_str()) else { continue };
        let Some(bytes) = parse_mac(mac) else {
            return Err(FuncError::fatal(format!("hostname_mapper: invalid MAC address {mac:?}")));
        };
        if local.contains(&bytes) {
            match found {
                Some(h) if h != host => {
                    return Err(FuncError::fatal(format!(
                        "hostname_mapper: local MACs map to different host names ({h:?} and {host:?})"
                    )));
                }
                _ => found = Some(host),
            }
        }
    }
    Ok(Value::str(found.unwrap_or("")))
}

fn hostname_mapper(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let local: Vec<[u8; 6]> = local_macs().iter().filter_map(|(_, m)| parse_mac(m)).collect();
    map_hostname(arg_map(a, 0)?, &local)
}
