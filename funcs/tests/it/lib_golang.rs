//! `golang/*` wrappers and `golang.template`.

use crate::common;
use common::*;
use funcs::template::{NoFuncs, go_float, go_print, go_sprintf, render};
use lang::value::Value;

#[test]
fn golang_strings() {
    let g = |n: &str| format!("golang/strings.{n}");
    assert_eq!(ok(&g("join"), vec![strs(&["a", "b", "c"]), s("-")]), s("a-b-c"));
    assert_eq!(ok(&g("trim_space"), vec![s("  x \n")]), s("x"));
    assert_eq!(ok(&g("has_prefix"), vec![s("abc"), s("ab")]), b(true));
    assert_eq!(ok(&g("has_suffix"), vec![s("abc"), s("ab")]), b(false));
    assert_eq!(ok(&g("contains"), vec![s("abc"), s("bc")]), b(true));
    assert_eq!(ok(&g("contains_any"), vec![s("abc"), s("xyc")]), b(true));
    assert_eq!(ok(&g("count"), vec![s("cheese"), s("e")]), i(3));
    assert_eq!(ok(&g("count"), vec![s("five"), s("")]), i(5));
    assert_eq!(ok(&g("fields"), vec![s("  a b\tc  ")]), strs(&["a", "b", "c"]));
    assert_eq!(ok(&g("index"), vec![s("chicken"), s("ken")]), i(4));
    assert_eq!(ok(&g("index"), vec![s("chicken"), s("dmr")]), i(-1));
    assert_eq!(ok(&g("last_index"), vec![s("go gopher"), s("go")]), i(3));
    assert_eq!(ok(&g("repeat"), vec![s("na"), i(3)]), s("nanana"));
    fatal(&g("repeat"), vec![s("na"), i(-1)]);
    assert_eq!(ok(&g("replace"), vec![s("oink oink oink"), s("k"), s("ky"), i(2)]), s("oinky oinky oink"));
    assert_eq!(ok(&g("replace_all"), vec![s("ab"), s(""), s("-")]), s("-a-b-"));
    assert_eq!(ok(&g("split"), vec![s("a,b"), s(",")]), strs(&["a", "b"]));
    assert_eq!(ok(&g("split_n"), vec![s("a,b,c,d"), s(","), i(2)]), strs(&["a", "b,c,d"]));
    assert_eq!(ok(&g("split_after"), vec![s("a,b,c"), s(",")]), strs(&["a,", "b,", "c"]));
    assert_eq!(ok(&g("title"), vec![s("her royal highness")]), s("Her Royal Highness"));
    assert_eq!(ok(&g("to_upper"), vec![s("Go")]), s("GO"));
    assert_eq!(ok(&g("to_lower"), vec![s("Go")]), s("go"));
    assert_eq!(ok(&g("trim"), vec![s("¡¡¡Hello, Gophers!!!"), s("!¡")]), s("Hello, Gophers"));
    assert_eq!(ok(&g("trim_left"), vec![s("xxhixx"), s("x")]), s("hixx"));
    assert_eq!(ok(&g("trim_right"), vec![s("xxhixx"), s("x")]), s("xxhi"));
    assert_eq!(ok(&g("trim_prefix"), vec![s("prefix-x"), s("prefix-")]), s("x"));
    assert_eq!(ok(&g("trim_suffix"), vec![s("x.go"), s(".go")]), s("x"));
    assert_eq!(ok(&g("equal_fold"), vec![s("Go"), s("GO")]), b(true));
    assert_eq!(ok(&g("compare"), vec![s("a"), s("b")]), i(-1));
}

#[test]
fn golang_std_packages() {
    assert_eq!(ok("golang/strconv.itoa", vec![i(-5)]), s("-5"));
    assert_eq!(ok("golang/strconv.atoi", vec![s("17")]), i(17));
    catchable("golang/strconv.atoi", vec![s("x")]);
    assert_eq!(ok("golang/strconv.format_int", vec![i(-255), i(16)]), s("-ff"));
    assert_eq!(ok("golang/strconv.parse_int", vec![s("0x1f"), i(0), i(64)]), i(31));
    assert_eq!(ok("golang/strconv.parse_int", vec![s("-101"), i(2), i(8)]), i(-5));
    catchable("golang/strconv.parse_int", vec![s("300"), i(10), i(8)]);
    assert_eq!(ok("golang/strconv.quote", vec![s("a\"b\n")]), s("\"a\\\"b\\n\""));
    assert_eq!(ok("golang/strconv.unquote", vec![s("\"a\\tb\\u00e9\"")]), s("a\tbé"));
    assert_eq!(ok("golang/strconv.unquote", vec![s("`raw\\n`")]), s("raw\\n"));
    catchable("golang/strconv.unquote", vec![s("\"open")]);
    for pkg in ["golang/path", "golang/path/filepath"] {
        assert_eq!(ok(&format!("{pkg}.base"), vec![s("/a/b.txt/")]), s("b.txt"));
        assert_eq!(ok(&format!("{pkg}.base"), vec![s("")]), s("."));
        assert_eq!(ok(&format!("{pkg}.clean"), vec![s("a//b/./../c/")]), s("a/c"));
        assert_eq!(ok(&format!("{pkg}.clean"), vec![s("/../x")]), s("/x"));
        assert_eq!(ok(&format!("{pkg}.clean"), vec![s("../../x")]), s("../../x"));
        assert_eq!(ok(&format!("{pkg}.dir"), vec![s("/a/b/c")]), s("/a/b"));
        assert_eq!(ok(&format!("{pkg}.dir"), vec![s("c")]), s("."));
        assert_eq!(ok(&format!("{pkg}.ext"), vec![s("x/y.tar.gz")]), s(".gz"));
        assert_eq!(ok(&format!("{pkg}.is_abs"), vec![s("/x")]), b(true));
        assert_eq!(ok(&format!("{pkg}.join"), vec![strs(&["a", "", "b/", "../c"])]), s("a/c"));
    }
    assert_eq!(ok("golang/math.floor", vec![f(-1.5)]), f(-2.0));
    assert_eq!(ok("golang/math.round", vec![f(2.5)]), f(3.0));
    assert_eq!(ok("golang/math.max", vec![f(1.0), f(2.0)]), f(2.0));
    assert_eq!(ok("golang/math.is_inf", vec![f(f64::INFINITY), i(1)]), b(true));
    assert_eq!(ok("golang/os.expand_env", vec![s("a${TEND_SURELY_UNSET}b")]), s("ab"));
    assert!(ok("golang/os.temp_dir", vec![]).as_str().unwrap().starts_with('/'));
    assert_eq!(
        ok("golang/os.readlink", vec![s("/proc/self/cwd")]).as_str().unwrap(),
        std::env::current_dir().unwrap().to_str().unwrap()
    );
    catchable("golang/os.readlink", vec![s("/surely/not/here")]);
    assert!(ok("golang/os/exec.look_path", vec![s("sh")]).as_str().unwrap().ends_with("/sh"));
    catchable("golang/os/exec.look_path", vec![s("surely-not-a-command-tend")]);
    assert_eq!(
        ok("golang/html.escape_string", vec![s("Test & Re-Test <'\">")]),
        s("Test &amp; Re-Test &lt;&#39;&#34;&gt;")
    );
    assert_eq!(
        ok("golang/html.unescape_string", vec![s("&lt;h1&gt;MGMT!&lt;/h1&gt; &#65;&#x42; &bogus; &")]),
        s("<h1>MGMT!</h1> AB &bogus; &")
    );
    assert!(ok("golang/runtime.version", vec![]).as_str().unwrap().starts_with("tend-"));
}

#[test]
fn expand_env_follows_go() {
    use funcs::core::golang_std::expand_env;
    let look = |k: &str| match k {
        "HOME" => "/home/me".to_string(),
        "1" => "one".to_string(),
        _ => String::new(),
    };
    assert_eq!(expand_env("$HOME sweet ${HOME}\n", look), "/home/me sweet /home/me\n");
    assert_eq!(expand_env("$1-$NOPE-$", look), "one--$");
}

#[test]
fn go_value_printing() {
    assert_eq!(go_print(&strs(&["a", "b", "c"])), "[a b c]");
    assert_eq!(go_print(&ints(&[])), "[]");
    assert_eq!(go_print(&m(vec![(s("b"), i(2)), (s("a"), i(1))])), "map[a:1 b:2]");
    assert_eq!(go_print(&st(vec![("x1", f(0.5)), ("x5", f(1.25)), ("x15", f(2.0))])), "{0.5 1.25 2}");
    assert_eq!(go_float(31536042.0), "3.1536042e+07");
    assert_eq!(go_float(1e6), "1e+06");
    assert_eq!(go_float(123456.0), "123456");
    assert_eq!(go_float(0.0001), "0.0001");
    assert_eq!(go_float(0.00001), "1e-05");
    assert_eq!(
        go_sprintf(
            "%d|%5s|%-4d|%05.1f|%x|%v|%q|%d",
            &[i(3), s("ab"), i(7), f(3.0625), i(255), strs(&["x"]), s("y"), s("bad")]
        ),
        "3|   ab|7   |003.1|ff|[x]|\"y\"|%!d(string=bad)"
    );
    assert_eq!(go_sprintf("%d %d", &[i(1)]), "1 %!d(MISSING)");
}

fn tpl(src: &str, dot: Value) -> Result<String, String> {
    render(src, &dot, &NoFuncs).map_err(|e| e.message)
}

/// One external function, `fails`, whose error is catchable.
struct Failing;

impl funcs::template::Funcs for Failing {
    fn call(&self, name: &str, _: Vec<Value>) -> Option<Result<Value, funcs::api::FuncError>> {
        (name == "fails").then(|| Err(funcs::api::FuncError::catchable("no such key")))
    }
    fn has(&self, name: &str) -> bool {
        name == "fails"
    }
}

/// One external function, `later`, whose value is not ready yet.
struct NotReady;

impl funcs::template::Funcs for NotReady {
    fn call(&self, _: &str, _: Vec<Value>) -> Option<Result<Value, funcs::api::FuncError>> {
        Some(Err(funcs::api::FuncError::NotReady))
    }
    fn has(&self, _: &str) -> bool {
        true
    }
}

#[test]
fn a_called_function_error_is_kept_as_the_cause() {
    let err = render("a{{ fails }}b", &s(""), &Failing).unwrap_err();
    assert!(err.message.starts_with("template: execution error") && err.message.contains("no such key"), "{err}");
    assert_eq!(err.cause, Some(funcs::api::FuncError::catchable("no such key")));
    // A template execution error stops the program (errStream)...
    assert!(matches!(funcs::api::FuncError::from(err), funcs::api::FuncError::Fatal(m) if m.contains("no such key")));
    // ...but a value not ready yet is no failure: the call is made again once it comes.
    let err = render("{{ later }}", &s(""), &NotReady).unwrap_err();
    assert_eq!(funcs::api::FuncError::from(err), funcs::api::FuncError::NotReady);
    let err = render("{{ nope }}", &s(""), &NoFuncs).unwrap_err();
    assert_eq!(err.cause, None);
}

#[test]
fn template_fields_range_and_index() {
    let values = l(vec![
        st(vec![("name", s("one")), ("value", s("alpha"))]),
        st(vec![("name", s("two")), ("value", s("beta"))]),
    ]);
    assert_eq!(tpl("{{ range . }}{{ .Name }}={{ .Value }};{{ end }}", values).unwrap(), "one=alpha;two=beta;");
    let mm = m(vec![(s("first"), st(vec![("name", s("one"))])), (s("second"), st(vec![("name", s("two"))]))]);
    assert_eq!(tpl("{{ .first.Name }},{{ .second.Name }}", mm).unwrap(), "one,two");
    assert_eq!(
        tpl("{{ range . }}{{ index . 42 }}{{ end }}", l(vec![m(vec![(i(42), s("answer"))])])).unwrap(),
        "answer"
    );
    assert_eq!(tpl("out: {{ . }}", ints(&[10, 8])).unwrap(), "out: [10 8]");
    assert_eq!(tpl("hello", i(42)).unwrap(), "hello");
    assert_eq!(tpl("{{ .Raw_query }}", st(vec![("raw_query", s("q=1"))])).unwrap(), "q=1");
    assert_eq!(tpl("{{ range $i, $e := . }}{{ $i }}:{{ $e }} {{ end }}", strs(&["a", "b"])).unwrap(), "0:a 1:b ");
    assert_eq!(
        tpl("{{ range $k, $v := . }}{{ $k }}={{ $v }},{{ end }}", m(vec![(s("b"), i(2)), (s("a"), i(1))])).unwrap(),
        "a=1,b=2,"
    );
    assert_eq!(tpl("{{ range . }}x{{ else }}empty{{ end }}", ints(&[])).unwrap(), "empty");
    assert_eq!(
        tpl("{{ range . }}{{ if eq . 3 }}{{ break }}{{ end }}{{ . }}{{ end }}", ints(&[1, 2, 3, 4])).unwrap(),
        "12"
    );
}

#[test]
fn template_conditionals_and_builtins() {
    let d = st(vec![("n", i(3)), ("s", s("")), ("l", strs(&["a", "b"]))]);
    assert_eq!(tpl("{{ if .S }}yes{{ else if gt .N 2 }}big{{ else }}small{{ end }}", d.clone()).unwrap(), "big");
    assert_eq!(tpl("{{ with .L }}{{ len . }}{{ end }}", d.clone()).unwrap(), "2");
    assert_eq!(tpl("{{ with .S }}x{{ else }}none{{ end }}", d.clone()).unwrap(), "none");
    assert_eq!(tpl("{{ and .N .S }}|{{ or .S .N }}|{{ not .S }}", d.clone()).unwrap(), "|3|true");
    assert_eq!(tpl("{{ printf \"%03d-%s\" .N \"x\" }}", d.clone()).unwrap(), "003-x");
    assert_eq!(tpl("{{ .N | printf \"%d!\" }}", d.clone()).unwrap(), "3!");
    assert_eq!(tpl("{{ $x := .N }}{{ $x }}{{ $x = 5 }}{{ $x }}", d.clone()).unwrap(), "35");
    assert_eq!(
        tpl("{{ index .L 1 }} {{ eq .N 1 2 3 }} {{ ne .N 3 }} {{ le 2 .N }}", d.clone()).unwrap(),
        "b true false true"
    );
    assert_eq!(tpl("a  {{- /* c */ -}}  b {{- \" c\" }}", d.clone()).unwrap(), "ab c");
    assert_eq!(
        tpl("{{ print 1 2 \"x\" }} {{ html \"<a>\" }} {{ urlquery \"a b&c\" }}", d.clone()).unwrap(),
        "1 2x &lt;a&gt; a+b%26c"
    );
    assert_eq!(tpl("{{ $ }}", i(7)).unwrap(), "7");
}

#[test]
fn template_errors() {
    let e = tpl("{{ .Missing }}", m(vec![(s("present"), s("hello"))])).unwrap_err();
    assert_eq!(
        e,
        "template: execution error: template: template:1:3: executing \"template\" at <.Missing>: map has no entry for key \"Missing\""
    );
    assert!(tpl("{{ .name }}", st(vec![("name", s("x"))])).unwrap_err().contains("can't evaluate field name"));
    assert!(tpl("{{ if . }}x", b(true)).unwrap_err().starts_with("template: parse error"));
    assert!(tpl("{{ end }}", b(true)).unwrap_err().starts_with("template: parse error"));
    assert!(tpl("{{ nosuchfunc 1 }}", b(true)).unwrap_err().contains("not defined"));
    assert!(tpl("{{ index . 5 }}", ints(&[1])).unwrap_err().contains("out of range"));
    assert_eq!(tpl("[{{ index . \"x\" }}]", m(vec![(s("a"), i(1))])).unwrap(), "[0]");
    assert!(tpl("{{ .X", b(true)).unwrap_err().contains("unclosed action"));
    assert!(tpl("{{ range . }}{{ end }}", b(true)).unwrap_err().contains("can't iterate"));
}

#[test]
fn golang_template_calls_core_functions() {
    let out = ok(
        "golang.template",
        vec![s(
            "{{ (net_url_parser \"https://www.example.com/search?q=mgmt\").Scheme }} {{ (net_url_parser \"https://www.example.com/search?q=mgmt\").Raw_query }}",
        )],
    );
    assert_eq!(out, s("https q=mgmt"));
    assert_eq!(ok("golang.template", vec![s("{{ golang_strings_join . \",\" }}"), strs(&["a", "b"])]), s("a,b"));
    assert_eq!(ok("golang.template", vec![s("{{ . | strings_to_upper }}"), s("abc")]), s("ABC"));
    assert_eq!(ok("golang.template", vec![s("{{ len . }}"), strs(&["a"])]), s("1"));
    // Unambiguous short names work too; ambiguous ones (trim_space) do not.
    assert_eq!(ok("golang.template", vec![s("an str is: {{ int2str . }}"), i(42)]), s("an str is: 42"));
    assert!(fatal("golang.template", vec![s("{{ trim_space . }}"), s(" x ")]).contains("not defined"));
    let printed = ok("golang.template", vec![s("{{ datetime_print . }}"), i(0)]);
    assert!(printed.as_str().unwrap().starts_with("19"), "{printed}");
    // Wrong argument types and failures of the called function are fatal.
    assert!(fatal("golang.template", vec![s("{{ datetime_print \"x\" }}"), i(0)]).contains("expected int"));
    assert!(fatal("golang.template", vec![s("{{ convert_str_to_int \"x\" }}"), i(0)]).contains("invalid syntax"));
    assert!(
        fatal("golang.template", vec![s("{{ .Missing }}"), m(vec![(s("a"), s("b"))])])
            .starts_with("template: execution error")
    );
}

/// Every `golang/*` function mgmt generates exists under mgmt's name; the only other
/// `golang/*` names are the few list-returning `strings` helpers tend adds.
#[test]
fn the_golang_library_is_mgmts_under_mgmts_names() {
    let listed = include_str!("../data/mgmt_golang_functions.txt");
    let mgmt: std::collections::BTreeSet<&str> =
        listed.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    assert!(mgmt.len() > 150, "the list is read");
    let reg = funcs::registry::Registry::core();
    let ours: std::collections::BTreeSet<&str> =
        reg.iter().map(|b| b.decl.name.as_str()).filter(|n| n.starts_with("golang/")).collect();
    let missing: Vec<_> = mgmt.difference(&ours).collect();
    assert!(missing.is_empty(), "mgmt has these and tend does not: {missing:?}");
    let extra: Vec<_> = ours.difference(&mgmt).copied().collect();
    let tends_own = [
        "golang/strings.fields",
        "golang/strings.split",
        "golang/strings.split_after",
        "golang/strings.split_after_n",
        "golang/strings.split_n",
    ];
    assert_eq!(extra, tends_own, "golang/* names that are not mgmt's");
    for old in
        ["golang/math.log10", "golang/math.log2", "golang/math.nan", "golang/math.is_nan", "golang/math/rand.float64"]
    {
        assert!(reg.get(old).is_none(), "{old} is spelled as mgmt spells it now");
    }
}

#[test]
fn the_math_functions_answer_as_go_does() {
    let m = |n: &str| format!("golang/math.{n}");
    assert_eq!(ok(&m("log_10"), vec![f(1000.0)]), f(3.0));
    assert_eq!(ok(&m("log_2"), vec![f(8.0)]), f(3.0));
    assert!(ok(&m("na_n"), vec![]).as_float().unwrap().is_nan());
    assert_eq!(ok(&m("is_na_n"), vec![f(f64::NAN)]), b(true));
    assert_eq!(ok(&m("atan_2"), vec![f(1.0), f(1.0)]), f(std::f64::consts::FRAC_PI_4));
    assert_eq!(ok(&m("pow_10"), vec![i(3)]), f(1000.0));
    assert_eq!(ok(&m("pow_10"), vec![i(400)]), f(f64::INFINITY));
    assert_eq!(ok(&m("pow_10"), vec![i(-400)]), f(0.0));
    assert_eq!(ok(&m("ilogb"), vec![f(1024.0)]), i(10));
    assert_eq!(ok(&m("ldexp"), vec![f(0.5), i(4)]), f(8.0));
    assert_eq!(ok(&m("gamma"), vec![f(5.0)]), f(24.0));
    assert_eq!(ok(&m("fma"), vec![f(2.0), f(3.0), f(4.0)]), f(10.0));
    assert_eq!(ok(&m("dim"), vec![f(2.0), f(5.0)]), f(0.0));
    assert_eq!(ok(&m("copysign"), vec![f(3.0), f(-1.0)]), f(-3.0));
    assert_eq!(ok(&m("nextafter"), vec![f(1.0), f(2.0)]), f(1.0 + f64::EPSILON));
    assert_eq!(ok(&m("j_0"), vec![f(0.0)]), f(1.0));
    assert_eq!(ok(&m("erf"), vec![f(0.0)]), f(0.0));
    let x = ok(&m("erfinv"), vec![f(0.5)]).as_float().unwrap();
    assert!((x - 0.476_936_276_204_469_9).abs() < 1e-15, "erfinv(0.5) = {x}");
    let r = |n: &str| format!("golang/math/rand.{n}");
    let u = ok(&r("float_64"), vec![]).as_float().unwrap();
    assert!((0.0..1.0).contains(&u));
    assert!(ok(&r("int_63_n"), vec![i(10)]).as_int().unwrap() < 10);
    fatal(&r("int_63_n"), vec![i(0)]);
    assert!(ok(&r("exp_float_64"), vec![]).as_float().unwrap() > 0.0);
    assert_eq!(ok(&r("read"), vec![s("four")]), i(4));
}

#[test]
fn the_strconv_and_path_functions_answer_as_go_does() {
    let c = |n: &str| format!("golang/strconv.{n}");
    assert_eq!(ok(&c("quote"), vec![s("☺\u{a0}\n")]), s("\"☺\\u00a0\\n\""));
    assert_eq!(ok(&c("quote_to_ascii"), vec![s("☺x")]), s("\"\\u263ax\""));
    assert_eq!(ok(&c("quote_to_graphic"), vec![s("☺\u{a0}\n")]), s("\"☺\u{a0}\\n\""));
    assert_eq!(ok(&c("append_int"), vec![s("n="), i(-255), i(16)]), s("n=-ff"));
    assert_eq!(ok(&c("append_bool"), vec![s("b:"), b(true)]), s("b:true"));
    assert_eq!(ok(&c("append_quote"), vec![s("q:"), s("a\"b")]), s("q:\"a\\\"b\""));
    assert_eq!(ok(&c("can_backquote"), vec![s("Fran & Freddie's Diner ☺")]), b(true));
    assert_eq!(ok(&c("can_backquote"), vec![s("`can't backquote this`")]), b(false));
    assert_eq!(
        ok(&c("quoted_prefix"), vec![s("\"double-quoted string\" with trailing text")]),
        s("\"double-quoted string\"")
    );
    assert_eq!(ok(&c("quoted_prefix"), vec![s("`or backquoted` with more")]), s("`or backquoted`"));
    catchable(&c("quoted_prefix"), vec![s("not a quoted string")]);
    let fp = |n: &str| format!("golang/path/filepath.{n}");
    assert_eq!(ok(&fp("rel"), vec![s("/a"), s("/a/b/c")]), s("b/c"));
    catchable(&fp("rel"), vec![s("/a"), s("b")]);
    assert_eq!(ok(&fp("match"), vec![s("/home/*/x"), s("/home/me/x")]), b(true));
    assert_eq!(ok("golang/path.match", vec![s("*"), s("a/b")]), b(false));
    catchable("golang/path.match", vec![s("[a"), s("a")]);
    assert_eq!(ok(&fp("is_local"), vec![s("a/../../b")]), b(false));
    assert_eq!(ok(&fp("localize"), vec![s("a/b")]), s("a/b"));
    catchable(&fp("localize"), vec![s("../a")]);
    assert_eq!(ok(&fp("volume_name"), vec![s("/x")]), s(""));
    assert_eq!(ok(&fp("eval_symlinks"), vec![s("/proc/self/root/")]), s("/"));
    let o = |n: &str| format!("golang/os.{n}");
    assert!(ok(&o("getpagesize"), vec![]).as_int().unwrap() >= 4096);
    let made = ok(&o("mkdir_temp"), vec![s(""), s("tend-*-test")]);
    let made = made.as_str().unwrap();
    assert!(std::path::Path::new(made).is_dir() && made.ends_with("-test"), "{made}");
    std::fs::write(format!("{made}/f"), "contents").unwrap();
    assert_eq!(ok(&o("read_file"), vec![s(&format!("{made}/f"))]), s("contents"));
    std::fs::remove_dir_all(made).unwrap();
    catchable(&o("read_file"), vec![s("/surely/not/here")]);
    catchable(&o("mkdir_temp"), vec![s(""), s("a/b")]);
    assert!(ok("golang/runtime.num_goroutine", vec![]).as_int().unwrap() >= 1);
    assert_eq!(ok("golang/strings.to_valid_utf_8", vec![s("ok"), s("?")]), s("ok"));
}
