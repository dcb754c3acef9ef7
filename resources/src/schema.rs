//! The declared shape of every resource kind: settable params, send fields and whether the
//! kind can receive, as the type checker sees them (`lang::catalog::ResourceDecl`).
//!
//! Go widths collapse the mgmt way: every int/uint width is `int`, float32/64 is `float`,
//! pointers are transparent, `interface{}` is `variant`.

use lang::catalog::{Catalog, ParamDecl, ResourceDecl};
use lang::types::{Type, parse_type};

/// One kind's declaration as plain text: `(kind, params, sends, can_recv)`, each field
/// `(name, type-text)`.
struct KindSpec {
    kind: &'static str,
    params: &'static [(&'static str, &'static str)],
    sends: &'static [(&'static str, &'static str)],
    can_recv: bool,
}

const FILE: KindSpec = KindSpec {
    kind: "file",
    params: &[
        ("path", "str"),
        ("dirname", "str"),
        ("basename", "str"),
        ("state", "str"),
        ("content", "str"),
        ("source", "str"),
        ("fragments", "[]str"),
        ("owner", "str"),
        ("group", "str"),
        ("mode", "str"),
        ("recurse", "bool"),
        ("force", "bool"),
        ("purge", "bool"),
        ("symlink", "bool"),
        ("selinux", "str"),
    ],
    sends: &[],
    can_recv: true,
};

const EXEC: KindSpec = KindSpec {
    kind: "exec",
    params: &[
        ("cmd", "str"),
        ("args", "[]str"),
        ("cwd", "str"),
        ("shell", "str"),
        ("env", "map{str: str}"),
        ("sig", "str"),
        ("timeout", "int"),
        ("watchcmd", "str"),
        ("watchcwd", "str"),
        ("watchshell", "str"),
        ("watchfiles", "[]str"),
        ("ifcmd", "str"),
        ("ifcwd", "str"),
        ("ifshell", "str"),
        ("ifequals", "str"),
        ("ifequals_stdout", "str"),
        ("nifcmd", "str"),
        ("nifcwd", "str"),
        ("nifshell", "str"),
        ("creates", "str"),
        ("mtimes", "[]str"),
        ("donecmd", "str"),
        ("donecwd", "str"),
        ("doneshell", "str"),
        ("user", "str"),
        ("group", "str"),
        ("send_output", "str"),
        ("send_stdout", "str"),
        ("send_stderr", "str"),
    ],
    sends: &[("output", "str"), ("stdout", "str"), ("stderr", "str"), ("exitcode", "int")],
    can_recv: false,
};

const PRINT: KindSpec =
    KindSpec { kind: "print", params: &[("msg", "str"), ("refresh_only", "bool")], sends: &[], can_recv: true };

const TEST: KindSpec = KindSpec {
    kind: "test",
    params: &[
        ("bool", "bool"),
        ("str", "str"),
        ("int", "int"),
        ("int8", "int"),
        ("int16", "int"),
        ("int32", "int"),
        ("int64", "int"),
        ("uint", "int"),
        ("uint8", "int"),
        ("uint16", "int"),
        ("uint32", "int"),
        ("uint64", "int"),
        ("byte", "int"),
        ("rune", "int"),
        ("float32", "float"),
        ("float64", "float"),
        ("boolptr", "bool"),
        ("stringptr", "str"),
        ("int64ptr", "int"),
        ("int8ptr", "int"),
        ("uint8ptr", "int"),
        ("int8ptrptrptr", "int"),
        ("slicestring", "[]str"),
        ("mapintfloat", "map{int: float}"),
        ("mixedstruct", "struct{somebool bool; somestr str; someint int; somefloat float}"),
        ("interface", "variant"),
        ("anotherstr", "str"),
        ("func1", "func(int) str"),
        ("validatebool", "bool"),
        ("validateerror", "str"),
        ("alwaysgroup", "bool"),
        ("comparefail", "bool"),
        ("sendvalue", "str"),
        ("expectrecv", "[]str"),
        ("onlyshow", "[]str"),
        ("waitforerror", "int"),
        ("comment", "str"),
    ],
    sends: &[("hello", "str"), ("answer", "int")],
    can_recv: true,
};

const NOOP: KindSpec = KindSpec { kind: "noop", params: &[("comment", "str")], sends: &[], can_recv: false };

const VALUE: KindSpec =
    KindSpec { kind: "value", params: &[("any", "variant")], sends: &[("any", "variant")], can_recv: true };

const MSG: KindSpec = KindSpec {
    kind: "msg",
    params: &[
        ("body", "str"),
        ("priority", "str"),
        ("fields", "map{str: str}"),
        ("journal", "bool"),
        ("syslog", "bool"),
    ],
    sends: &[],
    can_recv: false,
};

const TIMER: KindSpec = KindSpec { kind: "timer", params: &[("interval", "int")], sends: &[], can_recv: false };

const KV: KindSpec = KindSpec {
    kind: "kv",
    params: &[("key", "str"), ("value", "str"), ("mapped", "bool"), ("skiplessthan", "bool"), ("skipcmpstyle", "int")],
    sends: &[],
    can_recv: true,
};

const HOSTNAME: KindSpec = KindSpec {
    kind: "hostname",
    params: &[
        ("hostname", "str"),
        ("pretty_hostname", "str"),
        ("static_hostname", "str"),
        ("transient_hostname", "str"),
    ],
    sends: &[],
    can_recv: false,
};

const USER: KindSpec = KindSpec {
    kind: "user",
    params: &[
        ("state", "str"),
        ("uid", "int"),
        ("gid", "int"),
        ("group", "str"),
        ("groups", "[]str"),
        ("homedir", "str"),
        ("shell", "str"),
        ("allowduplicateuid", "bool"),
    ],
    sends: &[],
    can_recv: false,
};

const GROUP: KindSpec =
    KindSpec { kind: "group", params: &[("state", "str"), ("gid", "int")], sends: &[], can_recv: false };

const LINE: KindSpec = KindSpec {
    kind: "line",
    params: &[("file", "str"), ("state", "str"), ("content", "str"), ("trim", "bool")],
    sends: &[],
    can_recv: false,
};

const SYSCTL: KindSpec = KindSpec {
    kind: "sysctl",
    params: &[("value", "str"), ("runtime", "bool"), ("persist", "bool"), ("path", "str")],
    sends: &[],
    can_recv: false,
};

const CRON: KindSpec = KindSpec {
    kind: "cron",
    params: &[
        ("unit", "str"),
        ("state", "str"),
        ("startup", "str"),
        ("session", "bool"),
        ("trigger", "str"),
        ("time", "str"),
        ("accuracysec", "str"),
        ("randomizeddelaysec", "str"),
        ("persistent", "bool"),
        ("wakesystem", "bool"),
        ("remainafterelapse", "bool"),
        ("description", "str"),
    ],
    sends: &[],
    can_recv: true,
};

const MOUNT: KindSpec = KindSpec {
    kind: "mount",
    params: &[
        ("state", "str"),
        ("device", "str"),
        ("type", "str"),
        ("options", "map{str: str}"),
        ("freq", "int"),
        ("passno", "int"),
    ],
    sends: &[],
    can_recv: false,
};

const PKG: KindSpec = KindSpec {
    kind: "pkg",
    params: &[
        ("state", "str"),
        ("allowdowngrade", "bool"),
        ("allowuntrusted", "bool"),
        ("allownonfree", "bool"),
        ("allowunsupported", "bool"),
    ],
    sends: &[],
    can_recv: false,
};

const SVC: KindSpec = KindSpec {
    kind: "svc",
    params: &[("state", "str"), ("startup", "str"), ("session", "bool")],
    sends: &[],
    can_recv: false,
};

const NET: KindSpec = KindSpec {
    kind: "net",
    params: &[("state", "str"), ("addrs", "[]str"), ("gateway", "str"), ("ip_forward", "bool")],
    sends: &[],
    can_recv: false,
};

const GSETTINGS: KindSpec = KindSpec {
    kind: "gsettings",
    params: &[
        ("schema", "str"),
        ("key", "str"),
        ("type", "str"),
        ("value", "variant"),
        ("user", "str"),
        ("group", "str"),
    ],
    sends: &[],
    can_recv: false,
};

const FIREWALLD: KindSpec = KindSpec {
    kind: "firewalld",
    params: &[("zone", "str"), ("state", "str"), ("services", "[]str"), ("ports", "[]str")],
    sends: &[],
    can_recv: false,
};

const CONSUL_KV: KindSpec = KindSpec {
    kind: "consul:kv",
    params: &[("key", "str"), ("value", "str"), ("scheme", "str"), ("address", "str"), ("token", "str")],
    sends: &[],
    can_recv: false,
};

const VIRT_AUTH: &str = "struct{username str; password str}";

const VIRT: KindSpec = KindSpec {
    kind: "virt",
    params: &[
        ("uri", "str"),
        ("state", "str"),
        ("transient", "bool"),
        ("cpus", "int"),
        ("maxcpus", "int"),
        ("hotcpus", "bool"),
        ("memory", "int"),
        ("osinit", "str"),
        ("boot", "[]str"),
        ("disk", "[]struct{source str; type str}"),
        ("cdrom", "[]struct{source str; type str}"),
        ("network", "[]struct{name str; mac str}"),
        ("filesystem", "[]struct{access str; source str; target str; read_only bool}"),
        ("auth", VIRT_AUTH),
        ("restartondiverge", "str"),
        ("restartonrefresh", "bool"),
    ],
    sends: &[],
    can_recv: false,
};

const VIRT_NETWORK: KindSpec = KindSpec {
    kind: "virt:network",
    params: &[
        ("uri", "str"),
        ("state", "str"),
        ("transient", "bool"),
        ("startup", "str"),
        ("uuid", "str"),
        ("device", "str"),
        ("mode", "str"),
        ("mac", "str"),
        ("ip", "str"),
        ("purge_hosts", "bool"),
        ("purge_ranges", "bool"),
        ("auth", VIRT_AUTH),
    ],
    sends: &[],
    can_recv: false,
};

const VIRT_NETWORK_HOST: KindSpec = KindSpec {
    kind: "virt:network:host",
    params: &[("network", "str"), ("hostname", "str"), ("mac", "str"), ("ip", "str")],
    sends: &[],
    can_recv: false,
};

const VIRT_NETWORK_RANGE: KindSpec = KindSpec {
    kind: "virt:network:range",
    params: &[("network", "str"), ("start", "str"), ("end", "str")],
    sends: &[],
    can_recv: false,
};

const VIRT_BUILDER: KindSpec = KindSpec {
    kind: "virt:builder",
    params: &[
        ("output", "str"),
        ("os_version", "str"),
        ("arch", "str"),
        ("hostname", "str"),
        ("format", "str"),
        ("size", "int"),
        ("packages", "[]str"),
        ("update", "bool"),
        ("selinux_relabel", "bool"),
        ("no_setup", "bool"),
        ("ssh_keys", "[]struct{user str; type str; key str; comment str}"),
        ("root_ssh_inject", "bool"),
        ("root_password_selector", "str"),
        ("bootstrap", "bool"),
        ("seeds", "[]str"),
        ("mkdir", "[]str"),
        ("copy_in", "[]struct{path str; dest str}"),
        ("run_cmd", "[]str"),
        ("firstboot_cmd", "[]str"),
        ("log_output", "bool"),
        ("tweaks", "bool"),
    ],
    sends: &[],
    can_recv: false,
};

const NSPAWN: KindSpec = KindSpec { kind: "nspawn", params: &[("state", "str")], sends: &[], can_recv: false };

const DOCKER_IMAGE: KindSpec =
    KindSpec { kind: "docker:image", params: &[("state", "str"), ("apiversion", "str")], sends: &[], can_recv: false };

const PASSWORD: KindSpec = KindSpec {
    kind: "password",
    params: &[("length", "int"), ("saved", "bool"), ("check_recovery", "bool")],
    sends: &[("password", "str")],
    can_recv: false,
};

const JSON_EDIT: KindSpec =
    KindSpec { kind: "json:edit", params: &[("store", "str"), ("edits", "[]str")], sends: &[], can_recv: false };

const GZIP: KindSpec = KindSpec {
    kind: "gzip",
    params: &[("path", "str"), ("input", "str"), ("content", "str"), ("level", "int")],
    sends: &[],
    can_recv: false,
};

const TAR: KindSpec = KindSpec {
    kind: "tar",
    params: &[("path", "str"), ("inputs", "[]str"), ("format", "int")],
    sends: &[],
    can_recv: false,
};

const SSH_AUTHORIZED_KEY: KindSpec = KindSpec {
    kind: "ssh:authorized_key",
    params: &[
        ("state", "str"),
        ("file", "str"),
        ("user", "str"),
        ("content", "str"),
        ("options", "[]str"),
        ("type", "str"),
        ("key", "str"),
        ("comment", "str"),
        ("mkdir", "bool"),
    ],
    sends: &[],
    can_recv: false,
};

const SCHEDULE: KindSpec = KindSpec {
    kind: "schedule",
    params: &[
        ("namespace", "str"),
        ("strategy", "str"),
        ("max", "int"),
        ("persist", "bool"),
        ("ttl", "int"),
        ("withdraw", "bool"),
    ],
    sends: &[],
    can_recv: false,
};

const EXIT: KindSpec = KindSpec { kind: "exit", params: &[("code", "int")], sends: &[], can_recv: false };

const PANIC: KindSpec = KindSpec { kind: "_panic", params: &[], sends: &[], can_recv: false };

const HTTP_SERVER: KindSpec = KindSpec {
    kind: "http:server",
    params: &[
        ("address", "str"),
        ("timeout", "int"),
        ("read_timeout", "int"),
        ("write_timeout", "int"),
        ("shutdown_timeout", "int"),
        ("root", "str"),
    ],
    sends: &[],
    can_recv: false,
};

const HTTP_SERVER_FILE: KindSpec = KindSpec {
    kind: "http:server:file",
    params: &[("server", "str"), ("filename", "str"), ("path", "str"), ("data", "str"), ("longpoll", "bool")],
    sends: &[],
    can_recv: true,
};

const HTTP_SERVER_FLAG: KindSpec = KindSpec {
    kind: "http:server:flag",
    params: &[("server", "str"), ("path", "str"), ("key", "str")],
    sends: &[("value", "str")],
    can_recv: false,
};

const HTTP_SERVER_PROXY: KindSpec = KindSpec {
    kind: "http:server:proxy",
    params: &[("server", "str"), ("path", "str"), ("sub", "str"), ("head", "str"), ("cache", "str")],
    sends: &[],
    can_recv: false,
};

const HTTP_SERVER_UI: KindSpec = KindSpec {
    kind: "http:server:ui",
    params: &[("server", "str"), ("path", "str"), ("data", "struct{title str; head str}")],
    sends: &[],
    can_recv: false,
};

const HTTP_SERVER_UI_INPUT: KindSpec = KindSpec {
    kind: "http:server:ui:input",
    params: &[("path", "str"), ("id", "str"), ("value", "str"), ("store", "str"), ("type", "str"), ("sort", "str")],
    sends: &[("value", "str")],
    can_recv: false,
};

const TFTP_SERVER: KindSpec = KindSpec {
    kind: "tftp:server",
    params: &[("address", "str"), ("timeout", "int"), ("root", "str")],
    sends: &[],
    can_recv: false,
};

const TFTP_FILE: KindSpec = KindSpec {
    kind: "tftp:file",
    params: &[("server", "str"), ("filename", "str"), ("path", "str"), ("data", "str")],
    sends: &[],
    can_recv: false,
};

/// Every kind tend supports, in registration order (`grep KINDS` shows what exists).
const KINDS: &[KindSpec] = &[
    FILE,
    EXEC,
    PRINT,
    TEST,
    NOOP,
    VALUE,
    MSG,
    TIMER,
    KV,
    HOSTNAME,
    USER,
    GROUP,
    LINE,
    SYSCTL,
    CRON,
    MOUNT,
    PKG,
    SVC,
    VIRT,
    VIRT_NETWORK,
    VIRT_NETWORK_HOST,
    VIRT_NETWORK_RANGE,
    VIRT_BUILDER,
    NSPAWN,
    DOCKER_IMAGE,
    NET,
    GSETTINGS,
    FIREWALLD,
    CONSUL_KV,
    PASSWORD,
    JSON_EDIT,
    GZIP,
    TAR,
    SSH_AUTHORIZED_KEY,
    SCHEDULE,
    EXIT,
    PANIC,
    HTTP_SERVER,
    HTTP_SERVER_FILE,
    HTTP_SERVER_FLAG,
    HTTP_SERVER_PROXY,
    HTTP_SERVER_UI,
    HTTP_SERVER_UI_INPUT,
    TFTP_SERVER,
    TFTP_FILE,
];

/// Registers a [`ResourceDecl`] for every supported kind.
pub fn declare(catalog: &mut Catalog) {
    for decl in decls() {
        catalog.add_resource(decl);
    }
}

/// The declarations of every supported kind, in registration order.
pub fn decls() -> Vec<ResourceDecl> {
    all().to_vec()
}

/// The declaration of one kind.
pub fn decl(kind: &str) -> Option<&'static ResourceDecl> {
    all().iter().find(|d| d.kind == kind)
}

/// Built once: every resource of a graph looks its kind up here.
fn all() -> &'static [ResourceDecl] {
    static ALL: std::sync::OnceLock<Vec<ResourceDecl>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        KINDS
            .iter()
            .map(|spec| ResourceDecl {
                kind: spec.kind.to_string(),
                params: fields(spec.params),
                sends: fields(spec.sends),
                can_recv: spec.can_recv,
            })
            .collect()
    })
}

fn fields(list: &[(&str, &str)]) -> Vec<ParamDecl> {
    list.iter().map(|(name, ty)| ParamDecl { name: (*name).to_string(), ty: ty_of(ty) }).collect()
}

/// The type texts above are constants written in this file; a parse failure is a bug
/// here, caught by `every_declared_type_parses` below.
fn ty_of(text: &str) -> Type {
    parse_type(text).unwrap_or_else(|e| panic!("bad type text in resources::schema: {}", e.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_type_parses() {
        for spec in KINDS {
            for (name, ty) in spec.params.iter().chain(spec.sends) {
                assert!(parse_type(ty).is_ok(), "{}.{name}: {ty}", spec.kind);
            }
        }
    }

    #[test]
    fn test_kind_has_the_conformance_fields() {
        let mut catalog = Catalog::new();
        declare(&mut catalog);
        let test = catalog.resource("test").expect("test declared");
        assert_eq!(test.param("uint64").map(|p| &p.ty), Some(&Type::Int));
        assert_eq!(test.param("float32").map(|p| &p.ty), Some(&Type::Float));
        assert_eq!(test.param("interface").map(|p| &p.ty), Some(&Type::Variant));
        assert_eq!(test.param("func1").map(|p| p.ty.to_string()), Some("func(int) str".to_string()));
        assert_eq!(test.param("slicestring").map(|p| p.ty.to_string()), Some("[]str".to_string()));
        assert_eq!(test.send("hello").map(|p| &p.ty), Some(&Type::Str));
        assert_eq!(test.send("answer").map(|p| &p.ty), Some(&Type::Int));
        assert!(test.can_recv);
        let exec = catalog.resource("exec").expect("exec declared");
        assert!(!exec.can_recv);
        assert!(exec.send("stdout").is_some());
        assert!(catalog.resource("file").is_some_and(|f| f.sends.is_empty() && f.can_recv));
        assert!(catalog.resource("_panic").is_some());
    }

    #[test]
    fn server_kinds_have_mgmt_fields() {
        let mut catalog = Catalog::new();
        declare(&mut catalog);
        let ui = catalog.resource("http:server:ui").expect("declared");
        assert_eq!(ui.param("data").map(|p| p.ty.to_string()), Some("struct{title str; head str}".to_string()));
        let flag = catalog.resource("http:server:flag").expect("declared");
        assert_eq!(flag.send("value").map(|p| &p.ty), Some(&Type::Str));
        assert!(catalog.resource("http:server:file").is_some_and(|f| f.can_recv && f.param("longpoll").is_some()));
        assert_eq!(catalog.resource("tftp:server").and_then(|t| t.param("timeout")).map(|p| &p.ty), Some(&Type::Int));
    }

    #[test]
    fn no_kind_declares_a_field_twice() {
        for spec in KINDS {
            let mut names: Vec<_> = spec.params.iter().map(|(n, _)| n).collect();
            names.sort();
            let before = names.len();
            names.dedup();
            assert_eq!(before, names.len(), "{}", spec.kind);
        }
    }
}
