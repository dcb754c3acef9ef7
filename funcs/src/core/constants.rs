//! Global constants: resource state names, compression levels, `$hostname`,
//! `$purpleidea`.

use crate::registry::Registry;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    for kind in ["file", "net", "firewalld"] {
        let (exists, absent) = if kind == "net" { ("up", "down") } else { ("exists", "absent") };
        r.constant(&format!("const.res.{kind}.state.{exists}"), Value::str(exists));
        r.constant(&format!("const.res.{kind}.state.{absent}"), Value::str(absent));
        r.constant(&format!("const.res.{kind}.state.undefined"), Value::str(""));
    }
    for (n, v) in [("unknown", 0), ("ustar", 2), ("pax", 4), ("gnu", 8)] {
        r.constant(&format!("const.res.tar.format.{n}"), Value::Int(v));
    }
    for (n, v) in [
        ("no_compression", 0),
        ("best_speed", 1),
        ("best_compression", 9),
        ("default_compression", -1),
        ("huffman_only", -2),
    ] {
        r.constant(&format!("const.res.gzip.level.{n}"), Value::Int(v));
    }
    r.constant("hostname", Value::str(super::sys::machine_hostname()));
    r.constant("purpleidea", Value::str("hello world!"));
}
