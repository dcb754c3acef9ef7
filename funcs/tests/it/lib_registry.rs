//! The core library's registrations: every spec function is present with a sane
//! signature, and the catalog carries functions and constants.

use funcs::registry::Registry;
use lang::catalog::CallSite;
use lang::types::Type;
use lang::value::Value;
use std::collections::BTreeSet;

const SPEC_FUNCS: &[&str] = &[
    "len",
    "contains",
    "concat",
    "list_lookup",
    "map_lookup",
    "history",
    "random1",
    "panic",
    "panic_debug",
    "fmt.printf",
    "strings.contains",
    "strings.has_prefix",
    "strings.has_suffix",
    "strings.join_nonempty",
    "strings.left_pad",
    "strings.right_pad",
    "strings.replace_all",
    "strings.split",
    "strings.substr",
    "strings.to_lower",
    "strings.to_upper",
    "strings.trim_space",
    "math.fortytwo",
    "math.minus1",
    "math.mod",
    "math.pow",
    "math.sqrt",
    "convert.format_bool",
    "convert.parse_bool",
    "convert.str_to_float",
    "convert.str_to_int",
    "convert.to_float",
    "convert.to_int",
    "convert.int_to_str",
    "datetime.now",
    "datetime.str_now",
    "datetime.weekday_fast",
    "datetime.format",
    "datetime.hour",
    "datetime.print",
    "datetime.weekday",
    "deploy.abspath",
    "deploy.readfile",
    "deploy.readfileabs",
    "deploy.file_exists",
    "deploy.directory",
    "deploy.binary_path",
    "deploy.bootstrap_packages",
    "encoding.base64_encode",
    "encoding.base64_decode",
    "encoding.decode_json",
    "encoding.decode_json_flexible",
    "iter.map",
    "iter.filter",
    "iter.reduce",
    "iter.zip",
    "iter.flatten",
    "iter.range",
    "list.concat",
    "list.lookup",
    "map.keys",
    "map.values",
    "map.lookup",
    "os.args",
    "os.expand_home",
    "os.home",
    "os.uid",
    "os.family",
    "os.is_family_redhat",
    "os.is_family_debian",
    "os.is_family_archlinux",
    "os.is_virtual",
    "os.release",
    "os.parse_distro_uid",
    "os.readfile",
    "os.file_exists",
    "os.user_exists",
    "os.modinfo_loaded",
    "os.system",
    "sys.getenv",
    "sys.hasenv",
    "sys.env",
    "sys.hostname",
    "sys.cpu_count",
    "sys.load",
    "sys.uptime",
    "net.cidr_to_ip",
    "net.cidr_to_prefix",
    "net.cidr_to_mask",
    "net.cidr_to_network",
    "net.cidr_to_first",
    "net.cidr_to_last",
    "net.ip_in_cidr",
    "net.is_mac",
    "net.macfmt",
    "net.oldmacfmt",
    "net.split_hostport",
    "net.url_parser",
    "net.macs",
    "net.wired_interface",
    "net.interface_cidr",
    "regexp.match",
    "util.hostname_mapper",
    "local.pool",
    "local.vardir",
    "golang.template",
    "golang/strings.join",
    "golang/strings.trim_space",
    "golang/strings.has_prefix",
    "golang/strings.split",
    "golang/os.temp_dir",
    "golang/os.executable",
    "golang/os.getenv",
    "golang/os.expand_env",
    "golang/os.readlink",
    "golang/os.user_cache_dir",
    "golang/os.user_home_dir",
    "golang/os/exec.look_path",
    "golang/runtime.version",
    "golang/runtime.goroot",
    "golang/html.escape_string",
    "golang/html.unescape_string",
    "value.get",
    "value.get_bool",
    "value.get_str",
    "value.get_int",
    "value.get_float",
    "test.fastcount",
    "test.forloop",
    "test.forkvloop",
    "test.one_instance_a",
    "test.one_instance_h",
    "test.one_stream",
    "test.slow_string",
    "example.answer",
    "example.errorbool",
    "example.int2str",
    "example.str2int",
    "example.plus",
    "example.flipflop",
    "example/nested.hello",
];

#[test]
fn every_spec_function_is_registered() {
    let r = Registry::core();
    let missing: Vec<&str> = SPEC_FUNCS.iter().copied().filter(|n| r.get(n).is_none()).collect();
    assert!(missing.is_empty(), "missing: {missing:?}");
    let cat = r.catalog();
    for n in SPEC_FUNCS {
        assert!(cat.func(n).is_some(), "{n} not in the catalog");
    }
    assert!(cat.has_package("golang/strings"));
    assert!(cat.has_package("golang/path/filepath"));
}

#[test]
fn signatures_are_functions_with_one_per_arity() {
    let r = Registry::core();
    for b in r.iter() {
        assert!(b.decl.sigs.is_empty() == b.decl.infer.is_some(), "{}: sigs xor infer", b.decl.name);
        let mut arities = BTreeSet::new();
        for s in &b.decl.sigs {
            let Type::Func(args, _) = s else { panic!("{}: not a func type: {s}", b.decl.name) };
            assert!(arities.insert(args.len()), "{}: two signatures of arity {}", b.decl.name, args.len());
        }
    }
    let arities = |n: &str| {
        r.get(n)
            .unwrap()
            .decl
            .sigs
            .iter()
            .map(|s| match s {
                Type::Func(a, _) => a.len(),
                _ => 0,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(arities("iter.range"), vec![1, 2, 3]);
    assert_eq!(arities("iter.reduce"), vec![2, 3]);
    assert_eq!(arities("golang.template"), vec![1, 2]);
}

#[test]
fn check_hooks_restrict_polymorphism() {
    let r = Registry::core();
    let check = |n: &str, sig: &str| (r.get(n).unwrap().decl.check.unwrap())(&lang::types::parse_type(sig).unwrap());
    assert!(check("len", "func(str) int").is_ok());
    assert!(check("len", "func([]int) int").is_ok());
    assert!(check("len", "func(map{str: int}) int").is_ok());
    assert!(check("len", "func(int) int").is_err());
    assert!(check("panic", "func(bool) bool").is_ok());
    assert!(check("panic", "func(str) bool").is_ok());
    assert!(check("panic", "func(int) bool").is_err());
    assert!(check("math.mod", "func(int, int) int").is_ok());
    assert!(check("math.mod", "func(float, float) float").is_ok());
    assert!(check("math.mod", "func(str, str) str").is_err());
    assert!(check("math.fortytwo", "func() float").is_ok());
    assert!(check("math.fortytwo", "func() str").is_err());
}

#[test]
fn infer_hooks_build_call_site_signatures() {
    let r = Registry::core();
    let infer = |n: &str, args: Vec<Option<Value>>| (r.get(n).unwrap().decl.infer.unwrap())(&CallSite { args });
    assert_eq!(
        infer("fmt.printf", vec![Some(Value::str("%s is %d")), None, None]).unwrap().to_string(),
        "func(format str, a str, b int) str"
    );
    assert_eq!(
        infer("fmt.printf", vec![Some(Value::str("%s %s")), None]).unwrap_err(),
        "number of args (1) doesn't match format string verb count (2)"
    );
    assert_eq!(
        infer("list.concat", vec![None, None, None]).unwrap().to_string(),
        "func(a0 []?1, a1 []?1, a2 []?1) []?1"
    );
    assert!(infer("list.concat", vec![]).is_err());
    assert_eq!(
        infer("encoding.decode_json", vec![None, Some(Value::str("struct{hello int;}"))]).unwrap().to_string(),
        "func(data str, type str) struct{hello int}"
    );
    assert_eq!(infer("encoding.decode_json", vec![None]).unwrap().to_string(), "func(data str) ?1");
    assert!(infer("encoding.decode_json", vec![None, None]).is_err());
    assert!(infer("encoding.decode_json", vec![None, Some(Value::str("map{"))]).is_err());
}

#[test]
fn constants_are_registered() {
    let cat = Registry::core().catalog();
    assert_eq!(cat.constant("const.res.file.state.exists"), Some(&Value::str("exists")));
    assert_eq!(cat.constant("const.res.file.state.absent"), Some(&Value::str("absent")));
    assert_eq!(cat.constant("const.res.file.state.undefined"), Some(&Value::str("")));
    assert_eq!(cat.constant("const.res.net.state.up"), Some(&Value::str("up")));
    assert_eq!(cat.constant("const.res.net.state.down"), Some(&Value::str("down")));
    assert_eq!(cat.constant("const.res.firewalld.state.exists"), Some(&Value::str("exists")));
    assert_eq!(cat.constant("const.res.tar.format.gnu"), Some(&Value::Int(8)));
    assert_eq!(cat.constant("const.res.gzip.level.huffman_only"), Some(&Value::Int(-2)));
    assert_eq!(cat.constant("const.res.gzip.level.best_compression"), Some(&Value::Int(9)));
    assert_eq!(cat.constant("purpleidea"), Some(&Value::str("hello world!")));
    assert!(cat.constant("hostname").is_some());
    assert_eq!(cat.constant("os.family_debian"), Some(&Value::str("debian")));
}

#[test]
fn no_function_is_a_stub() {
    use funcs::api::{CallCtx, Caller, FuncImpl, FuncResult, Host};
    struct NoCalls;
    impl Caller for NoCalls {
        fn call(&self, _: &lang::value::Closure, _: Vec<Value>) -> FuncResult {
            unreachable!("zero-argument functions call no lambdas")
        }
    }
    let r = Registry::core();
    let mut called = 0;
    for b in r.iter() {
        let FuncImpl::Pure(f) = b.imp else { continue };
        let Some(Type::Func(_, ret)) = b.decl.sigs.iter().find(|s| matches!(s, Type::Func(a, _) if a.is_empty()))
        else {
            continue;
        };
        let ret = if ret.is_concrete() { (**ret).clone() } else { Type::Int };
        let ctx = CallCtx { arg_types: &[], ret_type: &ret, caller: &NoCalls, host: &Host::default() };
        if let Err(e) = f(&ctx, &[]) {
            assert!(!e.message().contains("not implemented"), "{} is a stub", b.decl.name);
        }
        called += 1;
    }
    assert!(called > 20, "only {called} zero-argument functions");
}
