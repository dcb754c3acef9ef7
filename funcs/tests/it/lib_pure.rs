//! Pure core functions: results and error kinds (catchable vs fatal).

use crate::common;
use common::*;
use lang::types::Type;
use lang::value::Value;

#[test]
fn top_level() {
    assert_eq!(ok("len", vec![s("héllo")]), i(6));
    assert_eq!(ok("len", vec![ints(&[1, 2, 3])]), i(3));
    assert_eq!(ok("len", vec![m(vec![(s("a"), i(1))])]), i(1));
    assert_eq!(ok("contains", vec![i(2), ints(&[1, 2])]), b(true));
    assert_eq!(ok("contains", vec![i(5), ints(&[1, 2])]), b(false));
    assert_eq!(ok("concat", vec![s("ab"), s("cd")]), s("abcd"));
    assert_eq!(ok("list_lookup", vec![strs(&["a", "b"]), i(1)]), s("b"));
    assert_eq!(
        catchable("list_lookup", vec![strs(&["a"]), i(42)]),
        r#"list index not present, got: 42, len is: 1, in: ["a"]"#
    );
    assert_eq!(catchable("list_lookup", vec![strs(&["a"]), i(-1)]), "list index negative, got: -1");
    assert_eq!(ok("map_lookup", vec![m(vec![(i(42), s("x"))]), i(42)]), s("x"));
    assert_eq!(
        catchable("map_lookup", vec![m(vec![(i(42), s("hello1"))]), i(13)]),
        r#"map key not present, want: 13 in {42: "hello1"}"#
    );
    assert_eq!(ok("panic", vec![b(false)]), b(false));
    assert_eq!(ok("panic", vec![s("")]), b(false));
    assert_eq!(fatal("panic", vec![b(true)]), "bool panic occurred");
    assert_eq!(fatal("panic", vec![s("please panic")]), "str panic occurred: please panic");
    assert_eq!(ok("panic_debug", vec![b(false), s("why")]), b(false));
    assert_eq!(fatal("panic_debug", vec![b(true), s("why")]), "bool panic occurred: why");
}

#[test]
fn printf_formats_with_mcl_types() {
    let args =
        vec![s("%s=%d %v %T %q %t %f"), s("a"), i(1), strs(&["x"]), m(vec![(s("k"), i(1))]), s("q"), b(true), f(2.5)];
    assert_eq!(ok("fmt.printf", args), s(r#"a=1 ["x"] map{str: int} "q" true 2.5"#));
    assert!(fatal("fmt.printf", vec![s("%d"), s("x")]).contains("%d"));
    assert!(fatal("fmt.printf", vec![s("%d %d"), i(1)]).contains("verb count"));
}

#[test]
fn strings_package() {
    assert_eq!(ok("strings.contains", vec![s("hello"), s("ell")]), b(true));
    assert_eq!(ok("strings.has_prefix", vec![s("hello"), s("he")]), b(true));
    assert_eq!(ok("strings.has_suffix", vec![s("hello"), s("he")]), b(false));
    assert_eq!(ok("strings.join_nonempty", vec![strs(&["a", "", "b"]), s(",")]), s("a,b"));
    assert_eq!(ok("strings.left_pad", vec![s("7"), s("0"), i(3)]), s("007"));
    assert_eq!(ok("strings.right_pad", vec![s("a"), s("xy"), i(4)]), s("axyxy"));
    assert_eq!(ok("strings.left_pad", vec![s("abcd"), s("0"), i(2)]), s("abcd"));
    assert_eq!(ok("strings.replace_all", vec![s("a-b-c"), s("-"), s("+")]), s("a+b+c"));
    assert_eq!(ok("strings.split", vec![s("a,b,,c"), s(",")]), strs(&["a", "b", "", "c"]));
    assert_eq!(ok("strings.split", vec![s("ab"), s("")]), strs(&["a", "b"]));
    assert_eq!(ok("strings.substr", vec![s("hello"), i(1), i(3)]), s("el"));
    assert!(catchable("strings.substr", vec![s("hello"), i(3), i(9)]).contains("out of bounds"));
    assert!(catchable("strings.substr", vec![s("hello"), i(-1), i(2)]).contains("out of bounds"));
    assert_eq!(ok("strings.to_lower", vec![s("HeLLo")]), s("hello"));
    assert_eq!(ok("strings.to_upper", vec![s("HeLLo")]), s("HELLO"));
    assert_eq!(ok("strings.trim_space", vec![s(" \t x y\n")]), s("x y"));
}

#[test]
fn math_package() {
    assert_eq!(call_ret("math.fortytwo", vec![], Type::Int).unwrap(), i(42));
    assert_eq!(call_ret("math.fortytwo", vec![], Type::Float).unwrap(), f(42.0));
    assert_eq!(ok("math.minus1", vec![i(5)]), i(4));
    assert_eq!(ok("math.mod", vec![i(7), i(3)]), i(1));
    assert_eq!(ok("math.mod", vec![i(-7), i(3)]), i(-1));
    assert_eq!(ok("math.mod", vec![f(7.5), f(2.0)]), f(1.5));
    assert!(catchable("math.mod", vec![i(1), i(0)]).contains("zero"));
    catchable("math.mod", vec![f(1.0), f(0.0)]);
    assert_eq!(ok("math.pow", vec![f(2.0), f(10.0)]), f(1024.0));
    catchable("math.pow", vec![f(-8.0), f(0.5)]);
    catchable("math.pow", vec![f(10.0), f(400.0)]);
    assert_eq!(ok("math.sqrt", vec![f(9.0)]), f(3.0));
    assert!(catchable("math.sqrt", vec![f(-1.0)]).contains("negative"));
}

#[test]
fn convert_package() {
    assert_eq!(ok("convert.format_bool", vec![b(true)]), s("true"));
    assert_eq!(ok("convert.parse_bool", vec![s("T")]), b(true));
    assert_eq!(ok("convert.parse_bool", vec![s("0")]), b(false));
    catchable("convert.parse_bool", vec![s("yes")]);
    assert_eq!(ok("convert.str_to_float", vec![s("3.25")]), f(3.25));
    assert_eq!(ok("convert.str_to_float", vec![s("-1e3")]), f(-1000.0));
    catchable("convert.str_to_float", vec![s("abc")]);
    catchable("convert.str_to_float", vec![s("")]);
    assert_eq!(ok("convert.str_to_int", vec![s("-42")]), i(-42));
    assert!(catchable("convert.str_to_int", vec![s("4x")]).contains("invalid syntax"));
    assert!(catchable("convert.str_to_int", vec![s("99999999999999999999")]).contains("out of range"));
    assert_eq!(ok("convert.to_float", vec![i(3)]), f(3.0));
    assert_eq!(ok("convert.to_int", vec![f(-3.9)]), i(-3));
    assert_eq!(ok("convert.int_to_str", vec![i(-12)]), s("-12"));
}

#[test]
fn datetime_pure_functions_in_a_fixed_zone() {
    use funcs::core::datetime::{go_format, go_string, zoned};
    let utc = jiff::tz::TimeZone::UTC;
    // 2009-02-13 23:31:30 UTC, a Friday.
    let z = zoned(1_234_567_890, &utc).unwrap();
    assert_eq!(go_format(&z, "2006-01-02 15:04:05"), "2009-02-13 23:31:30");
    assert_eq!(go_format(&z, "Mon Jan _2 3:04PM MST 06"), "Fri Feb 13 11:31PM UTC 09");
    assert_eq!(go_format(&z, "Monday, January 2 -0700 Z07:00 .000"), "Friday, February 13 +0000 Z .000");
    assert_eq!(go_string(&z), "2009-02-13 23:31:30 +0000 UTC");
    let plus2 = jiff::tz::TimeZone::fixed(jiff::tz::offset(2));
    let z2 = zoned(1_234_567_890, &plus2).unwrap();
    assert_eq!(go_format(&z2, "15:04 -07:00 002"), "01:31 +02:00 045");
    assert!(zoned(-1, &utc).is_err());
    // The registered functions use the local zone; check what does not depend on it.
    assert!(catchable("datetime.print", vec![i(-5)]).contains("negative"));
    let h = ok("datetime.hour", vec![i(1_234_567_890)]).as_int().unwrap();
    assert!((0..24).contains(&h));
    let wd = ok("datetime.weekday", vec![i(1_234_567_890)]);
    assert!(["thursday", "friday", "saturday"].contains(&wd.as_str().unwrap()));
    assert_eq!(ok("datetime.format", vec![i(0), s("2006")]).as_str().unwrap().len(), 4);
}

#[test]
fn encoding_package() {
    assert_eq!(ok("encoding.base64_encode", vec![s("hello")]), s("aGVsbG8="));
    assert_eq!(ok("encoding.base64_decode", vec![s("aGVsbG8=")]), s("hello"));
    fatal("encoding.base64_decode", vec![s("!!!")]);
    let t = lang::types::parse_type("struct{hello int; goodbye bool}").unwrap();
    let r = call_ret("encoding.decode_json", vec![s(r#"{"hello": 42, "goodbye": true}"#), s("")], t.clone()).unwrap();
    assert_eq!(r, st(vec![("hello", i(42)), ("goodbye", b(true))]));
    assert!(call_ret("encoding.decode_json", vec![s(r#"{"hello": 42}"#)], t.clone()).is_err());
    let flex = call_ret("encoding.decode_json_flexible", vec![s(r#"{"hello": 42}"#)], t).unwrap();
    assert_eq!(flex, st(vec![("hello", i(42)), ("goodbye", b(false))]));
    let mt = lang::types::parse_type("map{str: []int}").unwrap();
    assert_eq!(
        call_ret("encoding.decode_json", vec![s(r#"{"a": [1, 2]}"#)], mt).unwrap(),
        m(vec![(s("a"), ints(&[1, 2]))])
    );
    assert!(call_ret("encoding.decode_json", vec![s("1.5")], Type::Int).is_err());
    assert!(call_ret("encoding.decode_json", vec![s("{")], Type::Int).is_err());
    assert_eq!(call_ret("encoding.decode_json", vec![s("true")], Type::Bool).unwrap(), b(true));
}

#[test]
fn iter_package_calls_lambdas() {
    assert_eq!(ok("iter.map", vec![ints(&[1, 2, 3]), lambda(0)]), ints(&[2, 4, 6]));
    assert_eq!(ok("iter.map", vec![strs(&["a"]), lambda(0)]), strs(&["aa"]));
    assert_eq!(ok("iter.filter", vec![ints(&[1, 2, 3, 4]), lambda(2)]), ints(&[2, 4]));
    assert_eq!(ok("iter.reduce", vec![ints(&[-1, 0, 1, 2, 3, 4, 5, -1]), lambda(1)]), i(13));
    assert_eq!(ok("iter.reduce", vec![i(-1), ints(&[-1, 0, 1, 2, 3, 4, 5, -1]), lambda(1)]), i(12));
    assert_eq!(ok("iter.reduce", vec![i(42), ints(&[]), lambda(1)]), i(42));
    assert_eq!(ok("iter.reduce", vec![ints(&[7]), lambda(1)]), i(7));
    fatal("iter.reduce", vec![ints(&[]), lambda(1)]);
    assert_eq!(
        ok("iter.zip", vec![ints(&[1, 2, 3, 4, 5]), strs(&["a", "b", "c"]), lambda(3)]),
        strs(&["1:a", "2:b", "3:c"])
    );
    assert_eq!(ok("iter.flatten", vec![l(vec![strs(&[]), strs(&["a", "b"]), strs(&["c"])])]), strs(&["a", "b", "c"]));
    // Errors of the lambda propagate with their kind.
    assert_eq!(catchable("iter.map", vec![ints(&[1]), lambda(4)]), "lambda failed");
    assert_eq!(ok("iter.map", vec![ints(&[]), lambda(4)]), ints(&[]));
}

#[test]
fn iter_range() {
    assert_eq!(ok("iter.range", vec![i(4)]), ints(&[0, 1, 2, 3]));
    assert_eq!(ok("iter.range", vec![i(2), i(5)]), ints(&[2, 3, 4]));
    assert_eq!(ok("iter.range", vec![i(0), i(10), i(3)]), ints(&[0, 3, 6, 9]));
    assert_eq!(ok("iter.range", vec![i(5), i(0), i(-2)]), ints(&[5, 3, 1]));
    assert_eq!(ok("iter.range", vec![i(5), i(0)]), ints(&[]));
    assert_eq!(ok("iter.range", vec![i(-3)]), ints(&[]));
    assert!(fatal("iter.range", vec![i(0), i(5), i(0)]).contains("zero"));
    fatal("iter.range", vec![i(0), i(i64::MAX)]);
}

#[test]
fn list_and_map_packages() {
    assert_eq!(ok("list.concat", vec![strs(&["a"]), strs(&[]), strs(&["b", "c"])]), strs(&["a", "b", "c"]));
    assert_eq!(ok("list.concat", vec![strs(&["a"])]), strs(&["a"]));
    assert_eq!(ok("list.lookup", vec![ints(&[5, 6]), i(0)]), i(5));
    catchable("list.lookup", vec![ints(&[5, 6]), i(2)]);
    let mm = m(vec![(s("b"), i(2)), (s("a"), i(1))]);
    assert_eq!(ok("map.keys", vec![mm.clone()]), strs(&["a", "b"]));
    assert_eq!(ok("map.values", vec![mm.clone()]), ints(&[1, 2]));
    assert_eq!(ok("map.lookup", vec![mm.clone(), s("b")]), i(2));
    catchable("map.lookup", vec![mm, s("z")]);
}

#[test]
fn net_parsers() {
    assert_eq!(ok("net.cidr_to_ip", vec![s("192.168.1.10/24")]), s("192.168.1.10"));
    assert_eq!(ok("net.cidr_to_prefix", vec![s("192.168.1.10/24")]), s("24"));
    assert_eq!(ok("net.cidr_to_mask", vec![s("192.168.1.10/20")]), s("255.255.240.0"));
    // mgmt's answers: the network keeps its prefix, "first" is the address after the one
    // given (inside the prefix), "last" is the broadcast address.
    assert_eq!(ok("net.cidr_to_network", vec![s("192.168.1.10/24")]), s("192.168.1.0/24"));
    assert_eq!(ok("net.cidr_to_first", vec![s("192.168.1.0/24")]), s("192.168.1.1"));
    assert_eq!(ok("net.cidr_to_first", vec![s("192.168.1.10/24")]), s("192.168.1.11"));
    assert_eq!(ok("net.cidr_to_last", vec![s("192.168.1.10/24")]), s("192.168.1.255"));
    catchable("net.cidr_to_first", vec![s("10.0.0.7/32")]);
    catchable("net.cidr_to_first", vec![s("10.0.0.255/24")]);
    assert_eq!(ok("net.cidr_to_network", vec![s("fd00::1/64")]), s("fd00::/64"));
    // Spaces around a CIDR are ignored, as mgmt's TrimSpace does.
    for f in ["ip", "prefix", "mask", "network", "first", "last"] {
        ok(&format!("net.cidr_to_{f}"), vec![s("  192.168.42.13/24  ")]);
    }
    assert_eq!(ok("net.cidr_to_ip", vec![s("  192.168.42.13/24  ")]), s("192.168.42.13"));
    assert_eq!(ok("net.cidr_to_mask", vec![s("  192.168.42.13/24  ")]), s("255.255.255.0"));
    assert_eq!(ok("net.cidr_to_mask", vec![s("fd00::1/64")]), s("ffff:ffff:ffff:ffff::"));
    for bad in ["192.168.1.10", "300.1.1.1/24", "10.0.0.1/33", "x/8"] {
        catchable("net.cidr_to_ip", vec![s(bad)]);
    }
    assert_eq!(ok("net.ip_in_cidr", vec![s("10.1.2.3"), s("10.0.0.0/8")]), b(true));
    assert_eq!(ok("net.ip_in_cidr", vec![s("11.1.2.3"), s("10.0.0.0/8")]), b(false));
    assert_eq!(ok("net.ip_in_cidr", vec![s("::1"), s("10.0.0.0/8")]), b(false));
    catchable("net.ip_in_cidr", vec![s("nope"), s("10.0.0.0/8")]);
    assert_eq!(ok("net.is_mac", vec![s("00:11:22:aa:BB:cc")]), b(true));
    assert_eq!(ok("net.is_mac", vec![s("00:11:22:aa:BB")]), b(false));
    assert_eq!(ok("net.macfmt", vec![s("00-11-22-AA-BB-CC")]), s("00:11:22:aa:bb:cc"));
    assert_eq!(ok("net.oldmacfmt", vec![s("00:11:22:aa:bb:cc")]), s("00-11-22-aa-bb-cc"));
    catchable("net.macfmt", vec![s("zz")]);
    assert_eq!(
        ok("net.split_hostport", vec![s("example.com:80")]),
        st(vec![("host", s("example.com")), ("port", s("80"))])
    );
    assert_eq!(ok("net.split_hostport", vec![s("[::1]:443")]), st(vec![("host", s("::1")), ("port", s("443"))]));
    catchable("net.split_hostport", vec![s("example.com")]);
    catchable("net.split_hostport", vec![s("a:b:c")]);
    assert_eq!(
        ok("net.url_parser", vec![s("https://user@www.example.com:8080/se%20arch?q=mgmt#frag")]),
        st(vec![
            ("scheme", s("https")),
            ("host", s("www.example.com:8080")),
            ("path", s("/se arch")),
            ("raw_query", s("q=mgmt"))
        ])
    );
    catchable("net.url_parser", vec![s("http://x/%zz")]);
    catchable("net.url_parser", vec![s(":nope")]);
}

#[test]
fn regexp_and_sys_env() {
    assert_eq!(ok("regexp.match", vec![s("^a+b$"), s("aaab")]), b(true));
    assert_eq!(ok("regexp.match", vec![s("^a+b$"), s("aaa")]), b(false));
    fatal("regexp.match", vec![s("(")]);
    assert_eq!(ok("sys.hasenv", vec![s("PATH")]), b(true));
    assert_eq!(ok("sys.getenv", vec![s("PATH")]), s(&std::env::var("PATH").unwrap()));
    catchable("sys.getenv", vec![s("TEND_SURELY_UNSET_VARIABLE")]);
    assert_eq!(ok("sys.hasenv", vec![s("TEND_SURELY_UNSET_VARIABLE")]), b(false));
    let env = ok("sys.env", vec![]);
    assert_eq!(env.as_map().unwrap().get(&s("PATH")), Some(&s(&std::env::var("PATH").unwrap())));
}

#[test]
fn os_pure_functions() {
    let host =
        funcs::api::Host { root: "/".into(), args: vec!["tend".into(), "run".into()], ..funcs::api::Host::default() };
    assert_eq!(call_host("os.args", vec![], Type::list(Type::Str), &host).unwrap(), strs(&["tend", "run"]));
    assert_eq!(ok("os.expand_home", vec![s("/abs")]), s("/abs"));
    let home = std::env::var("HOME").unwrap_or_default();
    if !home.is_empty() {
        assert_eq!(ok("os.expand_home", vec![s("~/x")]), s(&format!("{home}/x")));
    }
    assert_eq!(ok("os.home", vec![s("root")]).as_str().unwrap(), "/root");
    assert_eq!(ok("os.uid", vec![s("root")]), s("0"));
    fatal("os.home", vec![s("no-such-user-tend")]);
    assert_eq!(
        ok("os.parse_distro_uid", vec![s("fedora39-x86_64")]),
        st(vec![("distro", s("fedora")), ("version", s("39")), ("arch", s("x86_64"))])
    );
    assert_eq!(
        ok("os.parse_distro_uid", vec![s("garbage")]),
        st(vec![("distro", s("")), ("version", s("")), ("arch", s(""))])
    );
    let fam = ok("os.family", vec![]);
    assert!(["redhat", "debian", "archlinux", ""].contains(&fam.as_str().unwrap()));
    assert_eq!(ok("os.is_family_debian", vec![]), b(fam.as_str() == Some("debian")));
    let rel = ok("os.release", vec![]);
    assert!(rel.field("id").is_some() && rel.field("version_id").is_some());
    assert!(ok("os.is_virtual", vec![]).as_bool().is_some());
}

#[test]
fn os_release_parsing_and_families() {
    use funcs::core::os::{family_of, parse_os_release};
    let rel = parse_os_release("NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\n# c\nVERSION_ID=\"22.04\"\n");
    assert_eq!(family_of(&rel), "debian");
    assert!(rel.contains(&("VERSION_ID".to_string(), "22.04".to_string())));
    assert_eq!(family_of(&parse_os_release("ID=rocky\nID_LIKE=\"rhel centos fedora\"")), "redhat");
    assert_eq!(family_of(&parse_os_release("ID=arch")), "archlinux");
    assert_eq!(family_of(&parse_os_release("ID=alpine")), "");
}

#[test]
fn util_and_local() {
    use funcs::core::local::{pool_in, vardir_in};
    use funcs::core::util::map_hostname;
    let mac = |x: &str| funcs::core::net::parse_mac(x).unwrap();
    let mm = m(vec![(s("00:11:22:33:44:55"), s("h1")), (s("66:77:88:99:aa:bb"), s("h2"))]);
    let mp = mm.as_map().unwrap();
    assert_eq!(map_hostname(mp, &[mac("66:77:88:99:aa:bb")]).unwrap(), s("h2"));
    assert_eq!(map_hostname(mp, &[mac("de:ad:be:ef:00:00")]).unwrap(), s(""));
    assert!(map_hostname(mp, &[mac("00:11:22:33:44:55"), mac("66:77:88:99:aa:bb")]).is_err());
    ok("util.hostname_mapper", vec![m(vec![])]);

    let dir = tempfile::tempdir().unwrap();
    assert_eq!(pool_in(dir.path(), "ns", "a").unwrap(), i(1));
    assert_eq!(pool_in(dir.path(), "ns", "b").unwrap(), i(2));
    assert_eq!(pool_in(dir.path(), "ns", "a").unwrap(), i(1));
    assert_eq!(pool_in(dir.path(), "other", "b").unwrap(), i(1));
    let v = vardir_in(dir.path(), "x/y").unwrap();
    assert!(std::path::Path::new(v.as_str().unwrap()).is_dir());
    assert!(v.as_str().unwrap().ends_with("/local/x/y/"));
    assert!(vardir_in(dir.path(), "../escape").is_err());
}

#[test]
fn deploy_package_reads_relative_to_the_root() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("files/foo/nested")).unwrap();
    std::fs::write(dir.path().join("files/file1"), "one\n").unwrap();
    std::fs::write(dir.path().join("files/foo/a"), "A").unwrap();
    std::fs::write(dir.path().join("files/foo/nested/b"), "B").unwrap();
    let host = funcs::api::Host::new(dir.path(), dir.path().join(".state"));
    let c = |n: &str, a: Vec<lang::value::Value>| call_host(n, a, Type::Str, &host);
    assert_eq!(c("deploy.abspath", vec![s("/files/file1")]).unwrap(), s("/files/file1"));
    use funcs::core::deploy::module_path;
    assert_eq!(module_path("/mod1/", "/files/file3").unwrap(), "/mod1/files/file3");
    assert_eq!(module_path("/", "files/x/").unwrap(), "/files/x/");
    assert!(module_path("/mod1/", "/../../x").is_err());
    let wrapped = c("_deploy_module_path", vec![s("/mod1/"), s("/files/file3")]).unwrap();
    assert_eq!(wrapped, s("/mod1/files/file3"));
    // A root-relative path stays as it is when resolved again from the root.
    assert_eq!(c("deploy.abspath", vec![wrapped]).unwrap(), s("/mod1/files/file3"));
    assert_eq!(c("deploy.abspath", vec![s("files/../files/file1")]).unwrap(), s("/files/file1"));
    assert_eq!(c("deploy.readfile", vec![s("/files/file1")]).unwrap(), s("one\n"));
    assert_eq!(c("deploy.readfileabs", vec![s("/files/file1")]).unwrap(), s("one\n"));
    assert!(c("deploy.readfile", vec![s("/files/missing")]).is_err());
    assert!(c("deploy.readfile", vec![s("/../etc/passwd")]).is_err());
    assert_eq!(c("deploy.file_exists", vec![s("/files/file1")]).unwrap(), b(true));
    assert_eq!(c("deploy.file_exists", vec![s("/files/nope")]).unwrap(), b(false));
    let d = c("deploy.directory", vec![s("/files/foo/")]).unwrap();
    let d = d.as_str().unwrap();
    assert!(d.ends_with('/'));
    assert_eq!(std::fs::read_to_string(format!("{d}a")).unwrap(), "A");
    assert_eq!(std::fs::read_to_string(format!("{d}nested/b")).unwrap(), "B");
    assert!(!c("deploy.binary_path", vec![]).unwrap().as_str().unwrap().is_empty());
    assert_eq!(c("deploy.bootstrap_packages", vec![s("fedora")]).unwrap(), strs(&[]));
    assert!(matches!(c("deploy.bootstrap_packages", vec![s("beos")]), Err(funcs::api::FuncError::Catchable(_))));
}

#[test]
fn test_and_example_packages() {
    assert_eq!(ok("test.one_instance_a", vec![]), s("hello"));
    assert_eq!(ok("test.one_instance_h", vec![]), s("hello"));
    assert_eq!(ok("test.one_stream", vec![i(3)]), s("xxx"));
    fatal("test.one_stream", vec![i(-3)]);
    assert_eq!(ok("example.answer", vec![]), i(42));
    assert_eq!(ok("example.int2str", vec![i(42)]), s("42"));
    assert_eq!(ok("example.str2int", vec![s("42")]), i(42));
    assert_eq!(ok("example.str2int", vec![s("x")]), i(0));
    assert_eq!(ok("example.plus", vec![s("a"), s("b")]), s("ab"));
    assert_eq!(ok("example.errorbool", vec![b(false)]), s("set false"));
    fatal("example.errorbool", vec![b(true)]);
    assert_eq!(ok("example/nested.hello", vec![]), s("Hello!"));
}

#[test]
fn huge_outputs_are_refused() {
    fatal("strings.left_pad", vec![s("x"), s("y"), i(1 << 40)]);
    fatal("golang/strings.repeat", vec![s("xy"), i(1 << 26)]);
    let out = funcs::template::go_sprintf("%99999999999d", &[i(1)]);
    assert!(out.len() <= 10_000);
    assert!(funcs::template::render("{{ range 100000000000 }}{{ end }}", &i(0), &funcs::template::NoFuncs).is_err());
}

/// Hostile strings for [`no_pure_function_panics_on_hostile_arguments`]: multi-byte
/// characters right after `%`, `\`, `$` and friends (a byte-range slice cuts them), empty,
/// lone delimiters, huge numbers, a long run.
fn hostile_strs() -> Vec<String> {
    let mut out: Vec<String> = [
        "",
        "a",
        "€",
        "%",
        "%€b",
        "a%",
        "%%",
        "%z€",
        "http://h/a%€b",
        "é%",
        "€€€",
        "\0",
        "ab€cd",
        "${",
        "${€",
        "%v%",
        "%€",
        "🎉🎉",
        "\\",
        "\\€",
        "[",
        "(",
        "*",
        "?",
        "{{",
        "{{€",
        "}}",
        "0",
        "-1",
        "1e400",
        "99999999999999999999999",
        "0x",
        "0x€",
        "/",
        "..",
        "a/b/c",
        " ",
        "\n",
        "\u{fffd}",
        "::",
        "€:€",
        "1.2.3.4/€",
        "[::1]:€",
        "a=b&€",
        "%C3",
        "\u{301}",
        "x\u{301}y",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    out.push("x€".repeat(5000));
    out
}

/// A value of type `t` from the hostile pool, chosen by `pick`; `None` for types the pool
/// does not cover.
fn hostile_value(t: &Type, pick: usize) -> Option<Value> {
    let strs = hostile_strs();
    let ints = [0, 1, -1, 2, 7, 1000, i64::MAX, i64::MIN, -1000];
    let floats = [0.0, -1.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, -0.0];
    Some(match t {
        Type::Str | Type::Var(_) | Type::Variant => Value::str(&strs[pick % strs.len()]),
        Type::Int => Value::Int(ints[pick % ints.len()]),
        Type::Float => Value::Float(floats[pick % floats.len()]),
        Type::Bool => Value::Bool(pick.is_multiple_of(2)),
        Type::List(e) if matches!(**e, Type::Str | Type::Var(_)) => match pick % 4 {
            0 => Value::list(vec![]),
            1 => Value::list(vec![Value::str("€"), Value::str("%")]),
            2 => Value::list(vec![Value::str("")]),
            _ => Value::list(strs.iter().take(20).map(Value::str).collect()),
        },
        Type::List(e) if **e == Type::Int => match pick % 3 {
            0 => Value::list(vec![]),
            1 => Value::list(vec![Value::Int(i64::MAX), Value::Int(1)]),
            _ => Value::list(vec![Value::Int(-1), Value::Int(i64::MIN)]),
        },
        _ => return None,
    })
}

/// Every pure built-in whose parameters are scalars or lists of them, called with many
/// combinations of hostile arguments: it returns a value or an error, never panics (a
/// panic in a built-in is a bug even though the runtime turns it into an error).
#[test]
fn no_pure_function_panics_on_hostile_arguments() {
    // Functions that would touch the machine outside the test's directory.
    const SKIP: &[&str] = &["os.system", "sys.exit", "golang/os.mkdir_temp"];
    let dir = tempfile::tempdir().unwrap();
    let host = funcs::api::Host::new(dir.path(), dir.path().join(".state"));
    let mut panics = Vec::new();
    let mut calls = 0usize;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for b in registry().iter() {
        let funcs::api::FuncImpl::Pure(f) = b.imp else { continue };
        if SKIP.contains(&b.decl.name.as_str()) {
            continue;
        }
        for sig in &b.decl.sigs {
            let Type::Func(params, ret) = sig else { continue };
            let arg_types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
            if arg_types.iter().any(|t| hostile_value(t, 0).is_none()) {
                continue;
            }
            let ret = if ret.is_concrete() { (**ret).clone() } else { Type::Str };
            // Every value of the pool in every position, the others varied pseudo-randomly.
            for position in 0..arg_types.len().max(1) {
                for pick in 0..hostile_strs().len() {
                    let args: Vec<Value> = arg_types
                        .iter()
                        .enumerate()
                        .map(|(k, t)| {
                            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                            let choice = if k == position { pick } else { (seed >> 33) as usize };
                            hostile_value(t, choice).expect("covered")
                        })
                        .collect();
                    let types: Vec<Type> = args.iter().map(funcs::printf::value_type).collect();
                    let ctx =
                        funcs::api::CallCtx { arg_types: &types, ret_type: &ret, caller: &TestCaller, host: &host };
                    calls += 1;
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&ctx, &args))).is_err() {
                        panics.push(format!(
                            "{}({})",
                            b.decl.name,
                            args.iter()
                                .map(|a| format!("{a}").chars().take(40).collect::<String>())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
            }
        }
    }
    assert!(calls > 1000, "the pool reached only {calls} calls");
    assert!(panics.is_empty(), "{} of {calls} calls panicked:\n{}", panics.len(), panics.join("\n"));
}

#[test]
fn url_parser_quotes_a_bad_escape_by_characters() {
    let msg = catchable("net.url_parser", vec![s("http://h/a%€b")]);
    assert!(msg.contains(r#"invalid URL escape "%€b""#), "{msg}");
}
