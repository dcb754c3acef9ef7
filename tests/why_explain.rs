//! End-to-end tests of `tend why`: the explanation names the right source lines,
//! functions and values for binds, printf, a class include, a for loop and a file fact.

use std::path::Path;
use std::process::Command;

const PROGRAM: &str = r#"import "fmt"
import "os"

$base = "BASE"
$greeting = fmt.printf("hello %s", "world")
$msg = "${greeting}!"
$data = os.readfile("BASE/in.txt")

func wrap($s) {
	"[" + $s + "]"
}

class motd($who) {
	file "${base}/motd" {
		content => fmt.printf("hi %s: %s", $who, wrap($msg)),
		mode => "0644",
	}
}

include motd("alice")

$names = ["a", "b", "c"]
for $i, $n in $names {
	if $i > 0 {
		file "${base}/out-${n}" {
			content => $data,
			Meta:noop => true,
		}
	}
}
"#;

fn program() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = dir.path().to_string_lossy().to_string();
    std::fs::write(dir.path().join("in.txt"), "from the file\n").expect("write input");
    std::fs::write(dir.path().join("main.mcl"), PROGRAM.replace("BASE", &base)).expect("write program");
    dir
}

fn why(dir: &Path, resource: &str, json: bool) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tend"));
    cmd.arg("why").arg(dir.join("main.mcl")).arg(resource);
    if json {
        cmd.args(["--format", "json"]);
    }
    let out = cmd.output().expect("run tend");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn explains_a_class_resource_through_binds_printf_and_an_inlined_func() {
    let dir = program();
    let target = format!("File[{}/motd]", dir.path().display());
    let (code, out, err) = why(dir.path(), &target, false);
    assert_eq!(code, 0, "stderr: {err}");
    // The statement inside the class, and the include that produced it.
    assert!(out.contains("/main.mcl:14:2"), "{out}");
    assert!(out.contains("in class `motd`") && out.contains("include motd(\"alice\")"), "{out}");
    // The field line and its value.
    assert!(out.contains("content  /main.mcl:15:3  content => fmt.printf("), "{out}");
    assert!(out.contains("= \"hi alice: [hello world!]\""), "{out}");
    // Built-in, inlined func, the bind chain with values.
    assert!(out.contains("call of built-in `fmt.printf`"), "{out}");
    assert!(out.contains("call of func `wrap` (inlined)  /main.mcl:15:44"), "{out}");
    assert!(out.contains("via `$msg` (bound at /main.mcl:6:1)"), "{out}");
    assert!(out.contains("via `$greeting` (bound at /main.mcl:5:1)"), "{out}");
    assert!(out.contains("= \"hello world\""), "{out}");
    assert!(out.contains("via `$who`"), "the class argument is named: {out}");
    assert!(out.contains("mode  /main.mcl:16:3"), "{out}");
}

#[test]
fn explains_a_loop_resource_per_element_with_its_gate_and_fact() {
    let dir = program();
    let target = format!("file[{}/out-c]", dir.path().display());
    let (code, out, err) = why(dir.path(), &target, false);
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("element $i = 2, $n = \"c\""), "{out}");
    assert!(out.contains("gated by if $i > 0  (/main.mcl:24:2)  = true, then branch"), "{out}");
    assert!(out.contains("fact `os.readfile`"), "{out}");
    assert!(out.contains("via `$data` (bound at /main.mcl:7:1)"), "{out}");
    assert!(out.contains("= \"from the file\\n\""), "{out}");
    assert!(out.contains("meta Meta:noop  /main.mcl:27:4"), "{out}");
    assert!(out.contains("loop variable `$n`") && out.contains("= \"c\""), "{out}");
}

#[test]
fn json_gives_the_same_tree() {
    let dir = program();
    let target = format!("file[{}/out-b]", dir.path().display());
    let (code, out, err) = why(dir.path(), &target, true);
    assert_eq!(code, 0, "stderr: {err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    let st = &doc["statements"][0];
    assert_eq!(st["gated_by"][0]["kind"], "for");
    assert_eq!(st["gated_by"][0]["element"]["n"]["json"], "b");
    assert_eq!(st["gated_by"][0]["element"]["i"]["text"], "1");
    assert_eq!(st["gated_by"][1]["value"]["json"], true);
    let content = &st["params"][0];
    assert_eq!(content["name"], "content");
    assert_eq!(content["provenance"]["kind"], "fact");
    assert_eq!(content["provenance"]["bind"]["name"], "$data");
    assert_eq!(content["value"]["json"], "from the file\n");
    assert_eq!(content["provenance"]["children"][0]["kind"], "literal");
}

#[test]
fn a_missing_resource_suggests_near_names() {
    let dir = program();
    let target = format!("file[{}/out-a]", dir.path().display());
    let (code, _, err) = why(dir.path(), &target, false);
    assert_eq!(code, 1);
    assert!(err.contains("is not in the graph"), "{err}");
    assert!(err.contains(&format!("did you mean `file[{}/out-b]`", dir.path().display())), "{err}");
}

#[test]
fn marks_fallbacks_untaken_branches_and_lambda_bodies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = r#"import "fmt"
$m = {"a" => "1"}
$on = 1 > 0
$f = func($x) { $x + "!" }
file "/tmp/why-test-x" {
	content => fmt.printf("%s %s %s", $m["zz"] <|> "dflt", if $on { "yes" } else { "no" }, $f("z")),
}
"#;
    std::fs::write(dir.path().join("main.mcl"), program).expect("write program");
    let (code, out, err) = why(dir.path(), "file[/tmp/why-test-x]", false);
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("= \"dflt yes z!\""), "{out}");
    assert!(out.contains("`$m[\"zz\"]`  = <error, caught by <|>>"), "{out}");
    assert!(out.contains("else: literal  /main.mcl:6:81  `\"no\"`  = (branch not taken)"), "{out}");
    assert!(out.contains("lambda parameter `$x`") && out.contains("= (per call)"), "{out}");
    assert!(out.contains("(see above)") || out.contains("via `$f`"), "{out}");
}

#[test]
fn a_bind_chain_names_every_bind_and_copy() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = "$a = \"one\"\n$b = \"${a}-two\"\n$c = $b\n$d = $c\nfile \"/tmp/why-chain\" {\n\tcontent => $d,\n}\n";
    std::fs::write(dir.path().join("main.mcl"), program).expect("write program");
    let (code, out, err) = why(dir.path(), "file[/tmp/why-chain]", false);
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("content  /main.mcl:6:2  content => $d,"), "{out}");
    assert!(
        out.contains(
            "via `$b` (bound at /main.mcl:2:1, copied to `$c` at /main.mcl:3:1, copied to `$d` at /main.mcl:4:1)"
        ),
        "{out}"
    );
    assert!(out.contains("via `$a` (bound at /main.mcl:1:1)") && out.contains("= \"one-two\""), "{out}");
}

#[test]
fn a_func_argument_is_named_by_its_parameter() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = "func shout($s) {\n\t$s + \"!\"\n}\nfile \"/tmp/why-func\" {\n\tcontent => shout(\"hey\"),\n}\n";
    std::fs::write(dir.path().join("main.mcl"), program).expect("write program");
    let (code, out, err) = why(dir.path(), "file[/tmp/why-func]", false);
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("call of func `shout` (inlined)  /main.mcl:5:13"), "{out}");
    assert!(out.contains("body: operator `+`  /main.mcl:2:2"), "{out}");
    assert!(out.contains("literal via `$s` (bound at /main.mcl:5:13)  /main.mcl:5:19  `\"hey\"`"), "{out}");
    assert!(out.contains("= \"hey!\""), "{out}");
}

#[test]
fn values_from_defaults_and_named_arguments_say_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = "import \"fmt\"\n\
                   type vhost {\n\tattr name str\n\tattr port int { default => 80, }\n}\n\
                   class site($name str, $mode str = \"0644\", $owner str = \"root\") {\n\
                   \t$v = vhost{name => $name}\n\
                   \tfile \"/tmp/why-${name}\" {\n\t\tcontent => fmt.printf(\"%d\", $v->port),\n\t\tmode => $mode,\n\t\towner => $owner,\n\t}\n}\n\
                   include site(\"a\", owner => \"nobody\")\n";
    std::fs::write(dir.path().join("main.mcl"), program).expect("write program");
    let (code, out, err) = why(dir.path(), "file[/tmp/why-a]", false);
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("literal via `$mode` (the default at /main.mcl:6:23)"), "a param's default: {out}");
    assert!(out.contains("literal via `$owner` (named argument at /main.mcl:14:19)"), "a named argument: {out}");
    assert!(out.contains("literal via `$port` (the default at /main.mcl:4:2)"), "an attribute's default: {out}");
    assert!(out.contains("value of type `vhost`"), "{out}");
}

#[test]
fn a_call_of_an_overloaded_func_names_the_overload_chosen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = "func min($a int, $b int) int { if $a < $b { $a } else { $b } }\n\
                   func min($s1 str, $s2 str) str { if len($s1) < len($s2) { $s1 } else { $s2 } }\n\
                   file \"/tmp/why-min\" {\n\tcontent => min(\"bb\", \"a\"),\n}\n";
    std::fs::write(dir.path().join("main.mcl"), program).expect("write program");
    let (code, out, err) = why(dir.path(), "file[/tmp/why-min]", false);
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("call of func `min`, the overload `min(s1 str, s2 str) str`  /main.mcl:4:13"), "{out}");
    assert!(out.contains("= \"a\""), "{out}");
}
