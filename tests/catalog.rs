//! Puppet's catalog expressions in mcl, end to end through the real binary: relationship
//! operators (`->`, `~>`, `<-`, `<~`) in `tend graph --format json` and in `tend run`.

use std::path::Path;
use std::process::{Command, Output};

const TEND: &str = env!("CARGO_BIN_EXE_tend");

fn tend(dir: &Path, cmd: &str, args: &[&str]) -> Output {
    let mut c = Command::new(TEND);
    c.arg(cmd).arg(dir.join("main.mcl"));
    if cmd == "run" {
        c.args(["--prefix", &dir.join("state").display().to_string(), "--converged-timeout", "0"]);
    }
    c.args(args).output().expect("tend runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A config file and a `refreshonly` exec that logs each run, related by `link` (the exec
/// on the side `link` names: `~>` writes the file first, `<~` the exec first).
fn notify_program(root: &Path, content: &str, link: &str) -> String {
    let r = root.display();
    let (left, right) = match link {
        "<~" | "<-" => ("Exec[\"reload\"]", format!("File[\"{r}/app.conf\"]")),
        _ => ("", String::new()),
    };
    let relation = if left.is_empty() {
        format!("File[\"{r}/app.conf\"] {link} Exec[\"reload\"]")
    } else {
        format!("{left} {link} {right}")
    };
    format!(
        "file \"{r}/app.conf\" {{\n\tstate => \"exists\",\n\tcontent => \"{content}\",\n}}\n\
         exec \"reload\" {{\n\tcmd => \"echo reloaded >> {r}/reloads\",\n\tshell => \"/bin/sh\",\n\trefreshonly => true,\n}}\n\
         {relation}\n"
    )
}

fn reloads(root: &Path) -> usize {
    std::fs::read_to_string(root.join("reloads")).unwrap_or_default().lines().count()
}

#[test]
fn a_notifying_relationship_refreshes_a_refreshonly_exec_only_when_the_file_changes() {
    for link in ["~>", "<~"] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let run = |content: &str| {
            std::fs::write(root.join("main.mcl"), notify_program(root, content, link)).unwrap();
            let out = tend(root, "run", &[]);
            assert!(out.status.success(), "{link}: stderr: {}", text(&out.stderr));
        };
        run("v1");
        assert_eq!(reloads(root), 1, "{link}: the file was created, so the exec ran once");
        run("v1");
        assert_eq!(reloads(root), 1, "{link}: nothing changed, so nothing was notified");
        run("v2");
        assert_eq!(reloads(root), 2, "{link}: the content changed, so the exec ran again");
        assert_eq!(std::fs::read_to_string(root.join("app.conf")).unwrap(), "v2");
    }
}

#[test]
fn an_ordering_relationship_does_not_refresh() {
    for link in ["->", "<-"] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("main.mcl"), notify_program(root, "v1", link)).unwrap();
        let out = tend(root, "run", &[]);
        assert!(out.status.success(), "{link}: stderr: {}", text(&out.stderr));
        assert_eq!(reloads(root), 0, "{link}: a refreshonly exec runs only when notified");
    }
}

#[test]
fn the_json_graph_marks_notify_edges_and_follows_the_arrows() {
    let dir = tempfile::tempdir().unwrap();
    let program = "test \"a\" {}\ntest \"b\" {}\ntest \"c\" {}\ntest \"d\" {}\n\
                   Test[\"a\"] ~> Test[\"b\"] <- Test[\"c\"]\n[Test[\"a\"], Test[\"c\"],] <~ Test[\"d\"]\n";
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = tend(dir.path(), "graph", &["--format", "json"]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let graph: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let mut edges: Vec<(String, String, bool)> = graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["from"].as_str().unwrap().into(), e["to"].as_str().unwrap().into(), e["notify"] == true))
        .collect();
    edges.sort();
    let e = |from: &str, to: &str, notify| (format!("test[{from}]"), format!("test[{to}]"), notify);
    assert_eq!(edges, vec![e("a", "b", true), e("c", "b", false), e("d", "a", true), e("d", "c", true)]);
}

#[test]
fn a_relationship_to_a_missing_resource_points_at_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.mcl"), "test \"a\" {}\nTest[\"a\"] ~> [Test[\"a\"], Test[\"nope\"]]\n")
        .unwrap();
    let out = tend(dir.path(), "graph", &[]);
    assert!(!out.status.success());
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.trim(),
        "# err: errInterpret: edge cannot find resource kind: test named: `nope`: /main.mcl @ 2:26-2:38",
        "stderr: {}",
        text(&out.stderr)
    );
}

/// The params of each vertex of `tend graph --format json`, by name.
fn params_by_name(dir: &Path) -> std::collections::BTreeMap<String, serde_json::Value> {
    let out = tend(dir, "graph", &["--format", "json"]);
    assert!(out.status.success(), "stdout: {}\nstderr: {}", text(&out.stdout), text(&out.stderr));
    let graph: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    graph["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap().into(), v["params"].clone()))
        .collect()
}

#[test]
fn defaults_are_lexical_and_overrides_fill_in_or_replace_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let program = r#"File {
	mode => "0600",
	owner => "root",
}
file "/a" {
	content => "one",
}
file "/b" {
	mode => "0644",
}
if true {
	File {
		mode => "0640",
	}
	file "/c" {}
}
class web() {
	file "/d" {}
}
include web
File["/a"] {
	mode => "0444",
	group => "root",
}
File[["/b", "/c"]] {
	fragments +> ["/f1"],
}
File["/c"] {
	fragments +> ["/f2"],
}
"#;
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let params = params_by_name(dir.path());
    let p = |name: &str, key: &str| params[name].get(key).cloned().unwrap_or(serde_json::Value::Null);
    // The body wins over a default, an inner default over an outer one, and a class
    // defined in the block sees the block's defaults.
    assert_eq!(
        (p("/a", "owner"), p("/b", "mode"), p("/c", "mode"), p("/d", "mode")),
        ("root".into(), "0644".into(), "0640".into(), "0600".into())
    );
    // An override replaces what a default gave and fills in what nothing set.
    assert_eq!((p("/a", "mode"), p("/a", "group"), p("/a", "content")), ("0444".into(), "root".into(), "one".into()));
    // `+>` appends, in statement order; a list of names overrides each.
    assert_eq!(p("/b", "fragments"), serde_json::json!(["/f1"]));
    assert_eq!(p("/c", "fragments"), serde_json::json!(["/f1", "/f2"]));
}

#[test]
fn defaults_inside_a_class_apply_when_run() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().display();
    let program = format!(
        "class site($root) {{\n\tFile {{\n\t\tstate => \"exists\",\n\t\tmode => \"0640\",\n\t}}\n\tfile \"${{root}}/a\" {{\n\t\tcontent => \"a\",\n\t}}\n\tfile \"${{root}}/b\" {{\n\t\tcontent => \"b\",\n\t\tmode => \"0600\",\n\t}}\n}}\ninclude site(\"{r}\")\n"
    );
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = tend(dir.path(), "run", &[]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    use std::os::unix::fs::PermissionsExt;
    let mode = |f: &str| std::fs::metadata(dir.path().join(f)).unwrap().permissions().mode() & 0o777;
    assert_eq!(std::fs::read_to_string(dir.path().join("a")).unwrap(), "a");
    assert_eq!((mode("a"), mode("b")), (0o640, 0o600));
}

#[test]
fn collectors_realize_virtual_resources_and_override_what_they_match() {
    let dir = tempfile::tempdir().unwrap();
    let program = r#"$role = "web"
@file "/v1" {
	content => "one",
	Meta:tags => ["web"],
}
@file "/v2" {
	content => "two",
}
@file "/v3" {}
@file "/never" {}
@@file "/exported" {}
file "/real" {
	content => "two",
}
File <| tag == $role or (content == "two" and title != "/real") |> {
	mode => "0600",
}
realize(File["/v3"], File["/v3"])
exec "x" {
	cmd => "true",
}
File <| title == "/real" |> ~> Exec["x"]
Exec["x"] -> File <| title == "/nothing" |>
File <<| |>>
"#;
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = tend(dir.path(), "graph", &["--format", "json"]);
    assert!(out.status.success(), "stdout: {}\nstderr: {}", text(&out.stdout), text(&out.stderr));
    let graph: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let vertices: Vec<(String, serde_json::Value, serde_json::Value)> = graph["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap().to_string(), v["params"]["mode"].clone(), v["meta"]["export"].clone()))
        .collect();
    let names: Vec<&str> = vertices.iter().map(|(n, ..)| n.as_str()).collect();
    // Realized by the collector (by tag, by param), by `realize` (twice is once), and by the
    // exported collector; `/never` is silently absent.
    assert_eq!(names, vec!["/v1", "/v2", "/v3", "/exported", "/real", "x"]);
    let mode = |n: &str| vertices.iter().find(|(name, ..)| name == n).unwrap().1.clone();
    assert_eq!(
        (mode("/v1"), mode("/v2"), mode("/v3"), mode("/real")),
        ("0600".into(), "0600".into(), serde_json::Value::Null, serde_json::Value::Null)
    );
    assert_eq!(vertices[3].2, serde_json::json!(["*"]), "@@ exports to every host");
    // A collector side relates every match; one that matches nothing is no edge.
    let edges = graph["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 1, "{edges:?}");
    assert_eq!(
        (edges[0]["from"].as_str(), edges[0]["to"].as_str(), &edges[0]["notify"]),
        (Some("file[/real]"), Some("exec[x]"), &serde_json::json!(true))
    );
}

#[test]
fn a_collector_realizes_virtual_files_when_run() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().display();
    let program = format!(
        "for $i, $n in [\"a\", \"b\", \"c\"] {{\n\t@file \"{r}/${{n}}\" {{\n\t\tstate => \"exists\",\n\t\tcontent => $n,\n\t\tMeta:tags => [$n],\n\t}}\n}}\nFile <| tag == \"a\" or tag == \"c\" |> {{\n\tmode => \"0600\",\n}}\n"
    );
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = tend(dir.path(), "run", &[]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::read_to_string(dir.path().join("a")).unwrap(), "a");
    assert_eq!(std::fs::metadata(dir.path().join("c")).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(!dir.path().join("b").exists(), "a virtual file nothing realized is not made");
}

#[test]
fn node_definitions_choose_by_hostname_exact_then_regex_then_default() {
    let dir = tempfile::tempdir().unwrap();
    let program = "import \"sys\"\n\
        node \"web1\", \"db1\" {\n\ttest \"exact\" {}\n}\n\
        node /^db\\d+$/ {\n\ttest \"db\" {}\n}\n\
        node /^db/ {\n\ttest \"db-later\" {}\n}\n\
        node default {\n\ttest \"default\" {}\n}\n\
        $h = sys.hostname()\ntest \"host-${h}\" {}\n";
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let graph = |host: &str| {
        let out = tend(dir.path(), "graph", &["--hostname", host]);
        assert!(out.status.success(), "{host}: stderr: {}", text(&out.stderr));
        text(&out.stdout)
    };
    // An exact name wins over an earlier regex; then the first matching regex; then default.
    assert_eq!(graph("db1"), "Vertex: test[exact]\nVertex: test[host-db1]\n");
    assert_eq!(graph("db22"), "Vertex: test[db]\nVertex: test[host-db22]\n");
    assert_eq!(graph("dbx"), "Vertex: test[db-later]\nVertex: test[host-dbx]\n");
    assert_eq!(graph("mail"), "Vertex: test[default]\nVertex: test[host-mail]\n");
}

#[test]
fn a_host_no_node_matches_is_an_error_naming_it_and_run_selects_by_hostname() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().display();
    let program = format!("node \"web1\" {{\n\tfile \"{r}/web\" {{\n\t\tstate => \"exists\",\n\t}}\n}}\n");
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = tend(dir.path(), "graph", &["--hostname", "mail"]);
    assert!(!out.status.success());
    assert!(text(&out.stdout).contains("no node definition matches host mail"), "{}", text(&out.stdout));
    let out = tend(dir.path(), "run", &["--hostname", "web1"]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(dir.path().join("web").exists());
}

/// `examples/puppet-style` as a user runs it, on a temporary root.
fn run_example(root: &Path, state: &Path, host: &str) {
    run_named_example("puppet-style", root, state, host);
}

/// `examples/NAME` as a user runs it, on a temporary root.
fn run_named_example(name: &str, root: &Path, state: &Path, host: &str) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name);
    let out = Command::new(TEND)
        .args(["run", "--converged-timeout", "0", "--hostname", host, "--prefix"])
        .arg(state)
        .arg(&example)
        .env("TEND_EXAMPLE_ROOT", root)
        .output()
        .expect("tend runs");
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
}

#[test]
fn the_puppet_style_example_converges_and_reloads_only_on_change() {
    let dir = tempfile::tempdir().unwrap();
    let (root, state) = (dir.path().join("www"), dir.path().join("state"));
    run_example(&root, &state, "web7");
    use std::os::unix::fs::PermissionsExt;
    let mode = |f: &str| std::fs::metadata(root.join(f)).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        std::fs::read_to_string(root.join("web.conf")).unwrap(),
        format!("listen 8080\ninclude {}/sites/\n", root.display())
    );
    assert_eq!((mode("web.conf"), mode("sites/shop.conf"), mode("motd")), (0o640, 0o640, 0o644));
    assert!(!root.join("sites/old.conf").exists(), "a site that is not enabled stays virtual");
    // The defined type's instances: the override, then the class's default for the rest.
    let page = |site: &str| std::fs::read_to_string(root.join(format!("www/{site}/index.html"))).unwrap();
    assert_eq!((page("shop"), page("blog")), ("welcome to the shop\n".to_string(), "hello\n".to_string()));
    assert_eq!(mode("www/shop/"), 0o755);
    assert_eq!(reloads_in(&root), 1);
    run_example(&root, &state, "web7");
    assert_eq!(reloads_in(&root), 1, "nothing changed, nothing reloaded");
    run_example(&root, &state, "db1");
    assert!(std::fs::read_to_string(root.join("web.conf")).unwrap().starts_with("listen 5432\n"));
    assert_eq!(reloads_in(&root), 2, "the config changed: one reload");
    // Drift in a file of the `shop` instance is repaired and, through `Docroot["shop"]`,
    // reloads the server.
    std::fs::write(root.join("www/shop/index.html"), "defaced\n").unwrap();
    run_example(&root, &state, "db1");
    assert_eq!(page("shop"), "welcome to the shop\n");
    assert_eq!(reloads_in(&root), 3, "a change in the instance notifies through Docroot[\"shop\"]");
    std::fs::write(root.join("www/blog/index.html"), "defaced\n").unwrap();
    run_example(&root, &state, "db1");
    assert_eq!((page("blog"), reloads_in(&root)), ("hello\n".to_string(), 3), "blog notifies nothing");
}

#[test]
fn the_puppet_style_example_s_inherited_class_changes_what_its_base_set() {
    let dir = tempfile::tempdir().unwrap();
    let (root, state) = (dir.path().join("www"), dir.path().join("state"));
    run_example(&root, &state, "secure1");
    use std::os::unix::fs::PermissionsExt;
    let mode = |f: &str| std::fs::metadata(root.join(f)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("web.conf"), 0o600, "the derived class's override wins over the base's mode");
    // The derived body sees the base's params with the base's defaults.
    assert_eq!(
        std::fs::read_to_string(root.join("hardened")).unwrap(),
        "listen 8080, config readable by its owner only\n"
    );
    assert!(root.join("www/shop/index.html").exists(), "the base's resources are all there");
    assert_eq!(reloads_in(&root), 1);
    run_example(&root, &state, "secure1");
    assert_eq!(reloads_in(&root), 1, "a second run changes nothing");
}

fn reloads_in(root: &Path) -> usize {
    std::fs::read_to_string(root.join("reloads.log")).unwrap_or_default().lines().count()
}

#[test]
fn why_names_the_default_the_collector_and_the_override_behind_a_param() {
    let dir = tempfile::tempdir().unwrap();
    let program = "File {\n\tmode => \"0600\",\n}\n@file \"/a\" {\n\tcontent => \"x\",\n}\nFile <| content == \"x\" |> {\n\towner => \"root\",\n}\nFile[\"/a\"] {\n\tgroup => \"root\",\n}\n";
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = Command::new(TEND).arg("why").arg(dir.path().join("main.mcl")).arg("file[/a]").output().unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let why = text(&out.stdout);
    assert!(why.contains("mode  set by the default at /main.mcl:2:2"), "{why}");
    assert!(why.contains("realized by the collector at /main.mcl:7:1"), "{why}");
    assert!(why.contains("owner = \"root\", set by the collector at /main.mcl:8:2"), "{why}");
    assert!(why.contains("group = \"root\", set by the override at /main.mcl:11:2"), "{why}");
}

#[test]
fn an_exported_resource_collected_in_the_same_program_runs_with_its_params() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().display();
    // mgmt's form: the exporting host keeps its copy hidden; `collect` makes the one that
    // runs (the exported meta params are its base: the body un-hides it).
    let program = format!(
        "file \"{r}/x\" {{\n\tstate => \"exists\",\n\tcontent => \"exported\",\n\tMeta:export => [\"*\"],\n\tMeta:hidden => true,\n}}\n\
         collect file [struct{{name => \"{r}/x\", host => \"h1\"}}] {{\n\tmode => \"0600\",\n\tMeta:hidden => false,\n}}\n\
         file \"{r}/y\" {{\n\tstate => \"exists\",\n\tcontent => \"normal\",\n}}\n\
         file \"{r}/y\" {{\n\tstate => \"exists\",\n\tcontent => \"hidden twin\",\n\tMeta:hidden => true,\n}}\n"
    );
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = tend(dir.path(), "run", &["--hostname", "h1"]);
    assert!(out.status.success(), "a hidden twin is no duplicate: stderr: {}", text(&out.stderr));
    use std::os::unix::fs::PermissionsExt;
    // The collected copy has the exported params with the collect body's on top.
    assert_eq!(std::fs::read_to_string(dir.path().join("x")).unwrap(), "exported");
    assert_eq!(std::fs::metadata(dir.path().join("x")).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(dir.path().join("y")).unwrap(), "normal", "hidden resources do not run");
}

#[test]
fn check_v_lists_the_virtual_resources_nothing_realizes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.mcl"), "@file \"/a\" {}\n@file \"/b\" {}\nrealize(File[\"/a\"])\n").unwrap();
    let out = tend(dir.path(), "check", &["-v"]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("virtual resource file[/b] (/main.mcl:2:1) is realized by nothing"), "{stderr}");
    assert!(!stderr.contains("file[/a]"), "{stderr}");
    let quiet = tend(dir.path(), "check", &[]);
    assert!(!text(&quiet.stderr).contains("realized by nothing"), "only with -v");
}

/// `examples/typed`: declared types with defaults, checks and an invariant, inheritance
/// from an abstract type, an enum alias, bounds, a derived attribute (the config file's
/// name), an overloaded function, a class with a param default and named arguments, and a
/// private type, converging a small service's config files.
#[test]
fn the_typed_example_converges_and_then_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (root, state) = (dir.path().join("srv"), dir.path().join("state"));
    std::fs::create_dir_all(root.join("sites")).unwrap();
    std::fs::write(root.join("sites/old.conf"), "stale\n").unwrap();
    run_named_example("typed", &root, &state, "h");
    let read = |f: &str| std::fs::read_to_string(root.join(f)).unwrap();
    assert_eq!(read("sites/shop.conf"), "server shop\n\tlisten 127.0.0.1:8443\n\ttls false\n");
    let blog = read("sites/blog.conf");
    assert!(blog.contains("\tlisten 127.0.0.1:443\n\ttls true\n\tcert "), "{blog}");
    assert!(blog.ends_with("\tciphers 2\n"), "the TLS overload renders it: {blog}");
    assert!(!root.join("sites/old.conf").exists(), "a vhost with state absent is removed");
    use std::os::unix::fs::PermissionsExt;
    let mode = |f: &str| std::fs::metadata(root.join(f)).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode("sites/shop.conf"), mode("sites/blog.conf")), (0o644, 0o600), "the named `mode` argument");
    let before = std::fs::metadata(root.join("sites/blog.conf")).unwrap().modified().unwrap();
    run_named_example("typed", &root, &state, "h");
    let after = std::fs::metadata(root.join("sites/blog.conf")).unwrap().modified().unwrap();
    assert_eq!(before, after, "a second run changes nothing");
}

#[test]
fn why_names_the_instance_of_a_defined_type_and_its_param() {
    let dir = tempfile::tempdir().unwrap();
    let program = "define site($dir str = \"/srv/${name}\") {\n\tfile \"${dir}/index.html\" {\n\t\tcontent => \"x\",\n\t}\n}\nsite [\"a\", \"b\"] {\n}\n";
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out =
        Command::new(TEND).arg("why").arg(dir.path().join("main.mcl")).arg("file[/srv/b/index.html]").output().unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let why = text(&out.stdout);
    assert!(why.contains("in instance site[b]  (/main.mcl:6:1)"), "{why}");
    assert!(why.contains("param `$dir` of the defined type's instance"), "{why}");
    assert!(!why.contains("site[a]"), "only the instance that declared it: {why}");
    // The instance itself: where it is, its params, the resources its body declared.
    let out = Command::new(TEND).arg("why").arg(dir.path().join("main.mcl")).arg("Site[b]").output().unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let why = text(&out.stdout);
    assert!(why.starts_with("site[b]: an instance of defined type `site`"), "{why}");
    assert!(why.contains("/main.mcl:6:1"), "{why}");
    assert!(why.contains("$dir = \"/srv/b\""), "{why}");
    assert!(why.contains("resources it declared (1):\n  file[/srv/b/index.html]\n"), "{why}");
    assert!(!why.contains("/srv/a"), "{why}");
}

#[test]
fn an_appending_default_adds_to_the_default_around_it() {
    let dir = tempfile::tempdir().unwrap();
    let program = "File {\n\tfragments => [\"/f/base\"],\n}\nfile \"/outer\" {\n\tstate => \"exists\",\n}\nif true {\n\tFile {\n\t\tfragments +> [\"/f/inner\"],\n\t}\n\tfile \"/both\" {\n\t\tstate => \"exists\",\n\t}\n\tif true {\n\t\tFile {\n\t\t\tfragments +> [\"/f/innermost\"],\n\t\t}\n\t\tfile \"/all\" {\n\t\t\tstate => \"exists\",\n\t\t}\n\t}\n\tfile \"/own\" {\n\t\tstate => \"exists\",\n\t\tfragments => [\"/f/mine\"],\n\t}\n}\nTest {\n\tslicestring +> [\"b\"],\n}\ntest \"alone\" {\n}\n";
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let params = params_by_name(dir.path());
    let fragments = |name: &str| params[name]["fragments"].clone();
    assert_eq!(fragments("/outer"), serde_json::json!(["/f/base"]));
    assert_eq!(fragments("/both"), serde_json::json!(["/f/base", "/f/inner"]));
    assert_eq!(fragments("/all"), serde_json::json!(["/f/base", "/f/inner", "/f/innermost"]));
    assert_eq!(fragments("/own"), serde_json::json!(["/f/mine"]), "the resource's own value wins");
    // With no default around it, an append is the value itself.
    assert_eq!(params["alone"]["slicestring"], serde_json::json!(["b"]));
}

#[test]
fn a_splat_sets_its_entries_in_bodies_defaults_and_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let program = "$common = struct{\n\tstate => \"exists\",\n\tmode => \"0640\",\n}\nfile \"/a\" {\n\t* => $common,\n}\nFile {\n\t* => {\"owner\" => \"root\", \"mode\" => \"0644\"},\n}\nfile \"/b\" {\n\tstate => \"exists\",\n}\nFile[\"/b\"] {\n\t* => struct{group => \"adm\"},\n}\n";
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let params = params_by_name(dir.path());
    // The body's own splat wins over the default's; the default fills in the rest.
    assert_eq!(params["/a"]["mode"], "0640");
    assert_eq!(params["/a"]["owner"], "root");
    assert_eq!((params["/b"]["mode"].clone(), params["/b"]["group"].clone()), ("0644".into(), "adm".into()));
}
