//! `json:edit`, `gzip`, `tar` and `ssh:authorized_key` against real files in temporary
//! directories (the ssh key through a sandboxed host), directly and through the engine.

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use engine::{Graph, InitCtx, Meta, ResKey, Resource};
use lang::value::Value;
use resources::machine::{Machine, UserInfo};
use resources::{build, build_with};
use support::{WAIT, check, converge, engine, eventually, params, s, strs};

fn init_ctx(dir: &Path, kind: &str, name: &str) -> InitCtx {
    InitCtx { key: ResKey::new(kind, name), var_dir: Some(dir.join("var")), state_dir: dir.to_path_buf() }
}

fn gunzip(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(fs::File::open(path).unwrap()).read_to_end(&mut out).unwrap();
    out
}

/// Name -> (is dir, content) of every member of a tar file.
fn tar_members(path: &Path) -> BTreeMap<String, (bool, String)> {
    let mut archive = tar::Archive::new(fs::File::open(path).unwrap());
    let mut out = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
        let is_dir = entry.header().entry_type().is_dir();
        let mut content = String::new();
        entry.read_to_string(&mut content).unwrap();
        out.insert(name, (is_dir, content));
    }
    out
}

async fn run_one(dir: &Path, kind: &str, name: &str, res: Box<dyn Resource>) -> engine::Engine {
    let engine = engine(&dir.join("state"));
    let mut g = Graph::new();
    g.add_vertex(ResKey::new(kind, name), Meta::default(), res);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    engine
}

// ---------------------------------------------------------------------------------------
// json:edit

const DOC: &str = r#"{"team \"blue\"":{"status":"pending","members":["james","purple"]},"release":{"build_id":1,"optional":"legacy"},"generation":7}"#;

#[tokio::test]
async fn json_edit_changes_only_the_edited_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.json");
    fs::write(&path, format!("{DOC}\n")).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    let edits = strs(&[
        r#".["team \"blue\""].status = "ready""#,
        ".release.build_id = 9007199254740993",
        ".release.optional = null",
        ".new.nested = {\"a\": [1, 2.50]}",
        "del(.generation)",
    ]);
    let store = format!("file://{}", path.display());
    let mut res = build("json:edit", "values", &params(&[("store", s(&store)), ("edits", edits)])).unwrap();
    res.init(&init_ctx(dir.path(), "json:edit", "values")).await.unwrap();

    let before = fs::read_to_string(&path).unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && reports.iter().any(|r| r.contains("+\t\t\"status\": \"ready\"")), "{reports:?}");
    assert_eq!(fs::read_to_string(&path).unwrap(), before, "noop mode changes nothing");

    converge(res.as_mut()).await;
    let expected = "{\n\t\"team \\\"blue\\\"\": {\n\t\t\"status\": \"ready\",\n\t\t\"members\": [\n\t\t\t\"james\",\n\t\t\t\"purple\"\n\t\t]\n\t},\n\t\"release\": {\n\t\t\"build_id\": 9007199254740993,\n\t\t\"optional\": null\n\t},\n\t\"new\": {\n\t\t\"nested\": {\n\t\t\t\"a\": [\n\t\t\t\t1,\n\t\t\t\t2.50\n\t\t\t]\n\t\t}\n\t}\n}\n";
    assert_eq!(fs::read_to_string(&path).unwrap(), expected);
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640, "mode kept");

    // A compact document that already holds the edits is left as it is.
    let compact = r#"{"team \"blue\"":{"status":"ready"},"release":{"build_id":9007199254740993,"optional":null},"new":{"nested":{"a":[1,2.50]}}}"#;
    fs::write(&path, compact).unwrap();
    assert!(check(res.as_mut(), true).await.unwrap().0);
    assert_eq!(fs::read_to_string(&path).unwrap(), compact);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_edit_keeps_a_world_key_starting_from_an_empty_object() {
    let dir = tempfile::tempdir().unwrap();
    let world = std::sync::Arc::new(resources::cluster::world::local(dir.path(), "h1"));
    let host = resources::machine::Machine { world, ..resources::machine::Machine::sandbox(dir.path()) };
    let edits = strs(&[".a.b = 1"]);
    let mut res = resources::build_with(
        &host,
        "json:edit",
        "k",
        &params(&[("store", s("etcd:///magic/hosts")), ("edits", edits)]),
    )
    .unwrap();
    res.init(&init_ctx(dir.path(), "json:edit", "k")).await.unwrap();
    converge(res.as_mut()).await;
    let key = dir.path().join("kv/magic%2fhosts/value");
    assert_eq!(fs::read_to_string(&key).unwrap(), "{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}\n");
    // Someone else's change to the key (written whole, as the store's writers do) is
    // edited again.
    let tmp = dir.path().join("doc.tmp");
    fs::write(&tmp, r#"{"a": {"b": 2}, "c": 3}"#).unwrap();
    fs::rename(&tmp, &key).unwrap();
    // Seen through the store's watch, well before its 5 s re-read.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while check(res.as_mut(), false).await.unwrap().0 {
        assert!(std::time::Instant::now() < deadline, "the change was not seen in time");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    converge(res.as_mut()).await;
    assert_eq!(fs::read_to_string(&key).unwrap(), "{\n\t\"a\": {\n\t\t\"b\": 1\n\t},\n\t\"c\": 3\n}\n");
}

#[tokio::test]
async fn json_edit_refuses_bad_params_documents_and_paths() {
    let dir = tempfile::tempdir().unwrap();
    let bad_edit = build("json:edit", "/x.json", &params(&[("edits", strs(&[".a = ", ".b = 1"]))])).unwrap();
    let err = bad_edit.validate().unwrap_err().message;
    assert!(err.starts_with("json:edit[/x.json]: field `edits`: edit #0"), "{err}");
    let no_edits = build("json:edit", "/x.json", &params(&[])).unwrap();
    assert!(no_edits.validate().unwrap_err().message.contains("field `edits`"));
    let bad_store =
        build("json:edit", "x", &params(&[("store", s("ftp:///x")), ("edits", strs(&[".a = 1"]))])).unwrap();
    assert!(bad_store.validate().unwrap_err().message.contains("field `store`: unknown store scheme `ftp`"));

    let path = dir.path().join("doc.json");
    let name = path.to_str().unwrap();
    let mut res = build("json:edit", name, &params(&[("edits", strs(&[".a.b = 1"]))])).unwrap();
    res.validate().unwrap();
    res.init(&init_ctx(dir.path(), "json:edit", name)).await.unwrap();
    assert!(check(res.as_mut(), true).await.unwrap_err().contains("cannot read"), "a missing file is an error");
    fs::write(&path, "[1]").unwrap();
    assert!(check(res.as_mut(), true).await.unwrap_err().contains("not a JSON object"));
    fs::write(&path, r#"{"a": 3}"#).unwrap();
    assert!(check(res.as_mut(), true).await.unwrap_err().contains("`a` is not a JSON object"));
    assert_eq!(fs::read_to_string(&path).unwrap(), r#"{"a": 3}"#, "nothing written on error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_edit_repairs_drift_through_its_watch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.json");
    fs::write(&path, r#"{"labels":{"tier":"edge","legacy":"remove"},"generation":7}"#).unwrap();
    let name = path.to_str().unwrap().to_string();
    let res = build("json:edit", &name, &params(&[("edits", strs(&["del(.labels.legacy)"]))])).unwrap();
    let engine = run_one(dir.path(), "json:edit", &name, res).await;
    assert!(!fs::read_to_string(&path).unwrap().contains("legacy"));
    fs::write(&path, r#"{"labels":{"legacy":"back"},"generation":8}"#).unwrap();
    let fixed = || fs::read_to_string(&path).is_ok_and(|t| !t.contains("legacy") && t.contains("\"generation\": 8"));
    assert!(eventually(fixed).await, "the re-added entry is deleted again");
    engine.shutdown(WAIT).await;
}

// ---------------------------------------------------------------------------------------
// gzip

#[tokio::test]
async fn gzip_compresses_content_or_an_input_only_when_needed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("data.gz");
    let name = out.to_str().unwrap();
    let mut res = build("gzip", name, &params(&[("content", s("hello world\n")), ("level", Value::Int(9))])).unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && !reports.is_empty() && !out.exists());
    converge(res.as_mut()).await;
    assert_eq!(gunzip(&out), b"hello world\n");

    let input = dir.path().join("input");
    fs::write(&input, "from a file\n".repeat(50)).unwrap();
    let from_file = |level: i64| {
        build("gzip", name, &params(&[("input", s(input.to_str().unwrap())), ("level", Value::Int(level))])).unwrap()
    };
    let mut res = from_file(0);
    converge(res.as_mut()).await;
    assert_eq!(gunzip(&out), "from a file\n".repeat(50).as_bytes());
    let stored_size = fs::metadata(&out).unwrap().len();
    let mut res = from_file(9);
    converge(res.as_mut()).await;
    assert!(fs::metadata(&out).unwrap().len() < stored_size, "a new level recompresses");
    fs::write(&input, "changed\n").unwrap();
    converge(res.as_mut()).await;
    assert_eq!(gunzip(&out), b"changed\n");

    fs::remove_file(&input).unwrap();
    assert!(check(res.as_mut(), true).await.unwrap_err().contains("not an existing regular file"));
    let bad = build("gzip", "relative.gz", &params(&[("level", Value::Int(10))])).unwrap();
    assert!(bad.validate().unwrap_err().message.contains("field `path`"));
    let bad = build("gzip", "/x.gz", &params(&[("level", Value::Int(10))])).unwrap();
    assert!(bad.validate().unwrap_err().message.contains("field `level`: 10 is not a gzip level"));
    let bad = build("gzip", "/x.gz", &params(&[("input", s("/in/"))])).unwrap();
    assert!(bad.validate().unwrap_err().message.contains("field `input`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_follows_its_input_and_repairs_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input");
    fs::write(&input, "one\n").unwrap();
    let out = dir.path().join("input.gz");
    let name = out.to_str().unwrap().to_string();
    let res = build("gzip", &name, &params(&[("input", s(input.to_str().unwrap()))])).unwrap();
    let engine = run_one(dir.path(), "gzip", &name, res).await;
    assert_eq!(gunzip(&out), b"one\n");
    fs::write(&input, "two\n").unwrap();
    assert!(eventually(|| fs::read(&out).is_ok() && gunzip(&out) == b"two\n").await, "input change followed");
    fs::write(&out, "garbage").unwrap();
    assert!(
        eventually(|| fs::read(&out).is_ok_and(|b| b.starts_with(&[0x1f, 0x8b])) && gunzip(&out) == b"two\n").await
    );
    engine.shutdown(WAIT).await;
}

// ---------------------------------------------------------------------------------------
// tar

fn tree(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("tree");
    fs::create_dir_all(root.join("dir/empty")).unwrap();
    fs::write(root.join("b"), "bee\n").unwrap();
    fs::write(root.join("a"), "ay\n").unwrap();
    fs::write(root.join("dir/deep_file"), "deep\n").unwrap();
    fs::write(dir.join("standalone"), "alone\n").unwrap();
    root
}

#[tokio::test]
async fn tar_archives_directories_and_files_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path());
    let out = dir.path().join("out.tar");
    let name = out.to_str().unwrap();
    let inputs = [format!("{}/", root.display()), dir.path().join("standalone").display().to_string()];
    let input_refs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let mut res = build("tar", name, &params(&[("inputs", strs(&input_refs)), ("format", Value::Int(8))])).unwrap();
    converge(res.as_mut()).await;
    let members = tar_members(&out);
    let names: Vec<&str> = members.keys().map(String::as_str).collect();
    assert_eq!(names, ["a", "b", "dir/", "dir/deep_file", "dir/empty/", "standalone"]);
    assert_eq!(members["dir/deep_file"], (false, "deep\n".to_string()));
    assert!(members["dir/"].0);

    // Without the trailing slash the directory's name prefixes its entries.
    let mut res = build("tar", name, &params(&[("inputs", strs(&[root.to_str().unwrap()]))])).unwrap();
    converge(res.as_mut()).await;
    assert!(tar_members(&out).contains_key("tree/dir/deep_file"));
    // A changed input rewrites the archive; an unchanged one leaves it alone.
    fs::write(root.join("a"), "changed\n").unwrap();
    converge(res.as_mut()).await;
    assert_eq!(tar_members(&out)["tree/a"].1, "changed\n");

    std::os::unix::fs::symlink("a", root.join("link")).unwrap();
    assert!(check(res.as_mut(), true).await.unwrap_err().contains("not a regular file or a directory"));
}

#[tokio::test]
async fn tar_long_names_follow_the_format() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("src");
    let long_dir = "d".repeat(120);
    fs::create_dir_all(root.join(&long_dir)).unwrap();
    let long_file = "f".repeat(110);
    fs::write(root.join(&long_dir).join(&long_file), "x").unwrap();
    let input = format!("{}/", root.display());
    let out = dir.path().join("long.tar");
    let name = out.to_str().unwrap();
    let expected = format!("{long_dir}/{long_file}");
    for format in [0, 4, 8] {
        let mut res =
            build("tar", name, &params(&[("inputs", strs(&[&input])), ("format", Value::Int(format))])).unwrap();
        res.validate().unwrap();
        check(res.as_mut(), true).await.unwrap();
        assert_eq!(tar_members(&out).get(&expected).map(|m| m.1.as_str()), Some("x"), "format {format}");
    }
    let mut ustar = build("tar", name, &params(&[("inputs", strs(&[&input])), ("format", Value::Int(2))])).unwrap();
    assert!(check(ustar.as_mut(), true).await.unwrap_err().contains("too long for the ustar format"));

    let bad = build("tar", name, &params(&[("format", Value::Int(3))])).unwrap();
    assert!(bad.validate().unwrap_err().message.contains("field `format`"));
    let inside = build("tar", name, &params(&[("inputs", strs(&[dir.path().to_str().unwrap()]))])).unwrap();
    assert!(inside.validate().unwrap_err().message.contains("contains the archive itself"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tar_follows_files_deep_in_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path());
    let out = dir.path().join("out.tar");
    let name = out.to_str().unwrap().to_string();
    let res = build("tar", &name, &params(&[("inputs", strs(&[&format!("{}/", root.display())]))])).unwrap();
    let engine = run_one(dir.path(), "tar", &name, res).await;
    fs::write(root.join("dir/deep_file"), "deeper\n").unwrap();
    let updated = || fs::metadata(&out).is_ok() && tar_members(&out)["dir/deep_file"].1 == "deeper\n";
    assert!(eventually(updated).await, "a change two levels down rewrites the archive");
    engine.shutdown(WAIT).await;
}

// ---------------------------------------------------------------------------------------
// ssh:authorized_key

const KEY: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOLlHSZU/zoD54fGacCI1wAFEdRmoBYFKG1PMDhhJBFX";

fn sandbox_with_alice(root: &Path) -> Machine {
    let host = Machine::sandbox(root);
    fs::create_dir_all(root.join("home/alice")).unwrap();
    let (uid, gid) = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    let alice = UserInfo { uid, gid, home: "/home/alice".into(), shell: "/bin/sh".into(), ..UserInfo::default() };
    let accounts = resources::machine::FakeAccounts::default();
    accounts.users.lock().unwrap().insert("alice".into(), alice);
    Machine { accounts: std::sync::Arc::new(accounts), ..host }
}

#[tokio::test]
async fn ssh_key_lands_in_the_users_file_under_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let host = sandbox_with_alice(dir.path());
    let options = strs(&["command=\"echo 'Port forwarding only'; exit\"", "no-pty", "permitopen=\"127.0.0.1:2379\""]);
    let pairs = [
        ("user", s("alice")),
        ("state", s("exists")),
        ("options", options),
        ("type", s("ssh-ed25519")),
        ("key", s(KEY)),
        ("comment", s("root@computer")),
    ];
    let mut res = build_with(&host, "ssh:authorized_key", "test", &params(&pairs)).unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && reports.iter().any(|r| r.contains("would create")), "{reports:?}");
    converge(res.as_mut()).await;
    let ssh = dir.path().join("home/alice/.ssh");
    assert_eq!(fs::metadata(&ssh).unwrap().permissions().mode() & 0o777, 0o700);
    let file = ssh.join("authorized_keys");
    assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let line = format!(
        "command=\"echo 'Port forwarding only'; exit\",no-pty,permitopen=\"127.0.0.1:2379\" ssh-ed25519 {KEY} root@computer\n"
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), line);

    // Other lines stay; absent removes only this key.
    fs::write(&file, format!("ssh-rsa AAAA other\n{line}")).unwrap();
    let absent: Vec<_> = pairs.iter().map(|(k, v)| (*k, if *k == "state" { s("absent") } else { v.clone() })).collect();
    let mut gone = build_with(&host, "ssh:authorized_key", "test", &params(&absent)).unwrap();
    converge(gone.as_mut()).await;
    assert_eq!(fs::read_to_string(&file).unwrap(), "ssh-rsa AAAA other\n");
}

#[tokio::test]
async fn ssh_key_content_file_and_validation() {
    let dir = tempfile::tempdir().unwrap();
    let host = sandbox_with_alice(dir.path());
    let pairs = [
        ("file", s("/tmp/ssh_authorized_keys")),
        ("state", s("exists")),
        ("content", s(&format!("ssh-ed25519 {KEY}"))),
    ];
    let mut res = build_with(&host, "ssh:authorized_key", "k", &params(&pairs)).unwrap();
    fs::create_dir_all(dir.path().join("tmp")).unwrap();
    converge(res.as_mut()).await;
    assert_eq!(fs::read_to_string(dir.path().join("tmp/ssh_authorized_keys")).unwrap(), format!("ssh-ed25519 {KEY}\n"));

    let name_only =
        build_with(&host, "ssh:authorized_key", &format!("ssh-ed25519 {KEY} me"), &params(&[("state", s("exists"))]));
    name_only.unwrap().validate().unwrap();
    let cases: [(&[(&str, Value)], &str); 6] = [
        (&[("state", s("exists")), ("content", s("foo"))], "field `content`"),
        (
            &[("state", s("present")), ("content", s(&format!("ssh-ed25519 {KEY}")))],
            "field `state`: `present` is not one of `exists` or `absent`, or unset (did you mean `exists`?)",
        ),
        (&[("state", s("exists")), ("type", s("ssh-ed25519"))], "field `key`"),
        (&[("state", s("exists")), ("type", s("ssh-rsa")), ("key", s(KEY))], "not `ssh-rsa`"),
        (
            &[("state", s("exists")), ("content", s(&format!("ssh-ed25519 {KEY}"))), ("comment", s("c"))],
            "field `comment`",
        ),
        (
            &[("state", s("exists")), ("user", s("bad name")), ("content", s(&format!("ssh-ed25519 {KEY}")))],
            "field `user`",
        ),
    ];
    for (pairs, expected) in cases {
        // A value outside a closed set fails at build; the rest in validation.
        let err = match build_with(&host, "ssh:authorized_key", "k", &params(pairs)) {
            Ok(res) => res.validate().unwrap_err().message,
            Err(e) => e.to_string(),
        };
        assert!(err.starts_with("ssh:authorized_key[k]") && err.contains(expected), "{err} lacks {expected}");
    }
    let nobody = [("user", s("bob")), ("state", s("exists")), ("content", s(&format!("ssh-ed25519 {KEY}")))];
    let mut res = build_with(&host, "ssh:authorized_key", "k", &params(&nobody)).unwrap();
    assert!(check(res.as_mut(), true).await.unwrap_err().contains("user `bob` does not exist"));
}

// ---------------------------------------------------------------------------------------
// deploy:tar

/// The running program's files are archived; an edit, a new deploy and a removed archive
/// each bring the archive up to date, and an archive inside the program is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_tar_archives_the_running_program_and_follows_it() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("deploys/1");
    fs::create_dir_all(program.join("mod")).unwrap();
    fs::write(program.join("main.mcl"), "import \"mod/\"\n").unwrap();
    fs::write(program.join("mod/main.mcl"), "$x = 1\n").unwrap();
    let host = Machine::sandbox(dir.path().join("host"));
    host.program.set(&program);
    let out = dir.path().join("deploy.tar");
    let name = out.to_str().unwrap();

    let mut noop = build_with(&host, "deploy:tar", name, &params(&[])).unwrap();
    assert!(!check(noop.as_mut(), false).await.unwrap().0 && !out.exists(), "noop writes nothing");

    let res = build_with(&host, "deploy:tar", name, &params(&[("format", Value::Int(4))])).unwrap();
    let engine = run_one(dir.path(), "deploy:tar", name, res).await;
    let members = tar_members(&out);
    assert_eq!(members.get("main.mcl").map(|m| m.1.as_str()), Some("import \"mod/\"\n"), "{members:?}");
    assert_eq!(members.get("mod/main.mcl").map(|m| m.1.as_str()), Some("$x = 1\n"));

    fs::write(program.join("mod/main.mcl"), "$x = 2\n").unwrap();
    assert!(eventually(|| tar_members(&out).get("mod/main.mcl").is_some_and(|m| m.1 == "$x = 2\n")).await);

    let next = dir.path().join("deploys/2");
    fs::create_dir_all(&next).unwrap();
    fs::write(next.join("main.mcl"), "# the second deploy\n").unwrap();
    host.program.set(&next);
    assert!(
        eventually(|| {
            let m = tar_members(&out);
            m.get("main.mcl").is_some_and(|m| m.1 == "# the second deploy\n") && !m.contains_key("mod/main.mcl")
        })
        .await,
        "a new deploy is archived"
    );
    fs::remove_file(&out).unwrap();
    assert!(
        eventually(|| out.exists() && tar_members(&out).contains_key("main.mcl")).await,
        "a removed archive is made again"
    );
    engine.shutdown(WAIT).await;

    let inside = next.join("self.tar");
    let mut res = build_with(&host, "deploy:tar", inside.to_str().unwrap(), &params(&[])).unwrap();
    assert!(check(res.as_mut(), true).await.unwrap_err().contains("inside the program"));
    let bad = build_with(&host, "deploy:tar", name, &params(&[("format", Value::Int(3))])).unwrap();
    assert!(bad.validate().unwrap_err().message.contains("field `format`"));
}
