//! `augeas` against the real libaugeas and its shipped lenses (Debian's `libaugeas0` and
//! `augeas-lenses`): a hosts-style file under a temporary directory is edited through
//! `Hosts.lns`, drift made by hand is repaired by the watch, a file the lens cannot parse
//! and a bad lens name are errors that say so, and the values of a private file are never
//! reported. Skipped when libaugeas is missing, unless `TEND_REQUIRE_AUGEAS=1`.

use crate::support;

use std::path::Path;

use engine::{Graph, Meta, ResKey};
use lang::value::Value;
use resources::{Machine, build_with};
use support::{check, engine, eventually, params, s};

#[allow(clippy::print_stderr, reason = "a skipped test says why")]
fn here() -> bool {
    match resources::util::augeas::available() {
        Ok(()) => true,
        Err(e) if std::env::var("TEND_REQUIRE_AUGEAS").is_ok_and(|v| v == "1") => panic!("{e}"),
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

fn sets(pairs: &[(&str, &str)]) -> Value {
    Value::list(pairs.iter().map(|(p, v)| Value::strukt(vec![("path".into(), s(p)), ("value".into(), s(v))])).collect())
}

fn hosts_params(file: &Path, lens: &str, pairs: &[(&str, &str)]) -> lang::params::ParamMap {
    params(&[("file", s(file.to_str().unwrap())), ("lens", s(lens)), ("sets", sets(pairs))])
}

const HOSTS: &str = "# managed in part\n127.0.0.1\tlocalhost\n192.168.0.10\tdb\n";

const WANTED: [(&str, &str); 3] =
    [("2/canonical", "db.example.org"), ("3/ipaddr", "10.0.0.3"), ("3/canonical", "cache")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_file_is_edited_through_its_lens_and_kept() {
    if !here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, HOSTS).unwrap();
    let host = Machine::sandbox(dir.path().join("host"));

    // noop: each difference reported, nothing written.
    let mut res = build_with(&host, "augeas", "hosts", &hosts_params(&hosts, "Hosts.lns", &WANTED)).unwrap();
    res.validate().unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok);
    assert_eq!(reports.len(), 3, "{reports:?}");
    assert!(
        reports[0].contains("would set") && reports[0].contains("\"db.example.org\"") && reports[0].contains("\"db\"")
    );
    assert!(reports[1].contains("no node"), "{reports:?}");
    assert_eq!(std::fs::read_to_string(&hosts).unwrap(), HOSTS);

    // Through the engine: set, and kept against an edit by hand.
    let engine = engine(&dir.path().join("state"));
    let mut g = Graph::new();
    g.add_vertex(ResKey::new("augeas", "hosts"), Meta::default(), res);
    engine.apply(g).await.unwrap();
    let want = "# managed in part\n127.0.0.1\tlocalhost\n192.168.0.10\tdb.example.org\n10.0.0.3\tcache\n";
    let read = || std::fs::read_to_string(&hosts).unwrap_or_default();
    assert!(eventually(|| read() == want).await, "the lens wrote the values and kept the rest: {:?}", read());
    std::fs::write(&hosts, HOSTS.replace("192.168.0.10", "192.168.0.11")).unwrap();
    let repaired = want.replace("192.168.0.10", "192.168.0.11");
    assert!(eventually(|| read() == repaired).await, "the drift is repaired by the watch: {:?}", read());
    engine.shutdown(support::WAIT).await;

    // Converged: a second check finds nothing to do.
    let mut again = build_with(&host, "augeas", "hosts", &hosts_params(&hosts, "Hosts.lns", &WANTED)).unwrap();
    assert!(check(again.as_mut(), true).await.unwrap().0);

    // With no lens, augeas's autoload table has none for this path: said so.
    let mut bare = build_with(&host, "augeas", "bare", &hosts_params(&hosts, "", &WANTED)).unwrap();
    let err = check(bare.as_mut(), true).await.unwrap_err();
    assert!(err.contains("no lens") && err.contains("name one with `lens`"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_the_lens_cannot_read_and_bad_params_are_errors() {
    if !here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path().join("host"));
    let broken = dir.path().join("broken");
    std::fs::write(&broken, "127.0.0.1\n").unwrap();
    let mut res = build_with(&host, "augeas", "b", &hosts_params(&broken, "Hosts.lns", &WANTED)).unwrap();
    let err = check(res.as_mut(), true).await.unwrap_err();
    assert!(err.contains("does not parse with Hosts.lns"), "{err}");
    assert_eq!(std::fs::read_to_string(&broken).unwrap(), "127.0.0.1\n", "nothing written");

    // A path that matches several nodes is named, not guessed.
    let two = dir.path().join("two");
    std::fs::write(&two, "10.0.0.1\ta x y\n").unwrap();
    let mut res = build_with(&host, "augeas", "t", &hosts_params(&two, "Hosts.lns", &[("1/alias", "z")])).unwrap();
    let err = check(res.as_mut(), true).await.unwrap_err();
    assert!(err.contains("matches more than one node"), "{err}");

    // A FIFO (or any file that is not a regular one) is refused, not read.
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let mut res = build_with(&host, "augeas", "f", &hosts_params(&fifo, "Hosts.lns", &WANTED)).unwrap();
    let err = check(res.as_mut(), true).await.unwrap_err();
    assert!(err.contains("is not a regular file"), "{err}");

    // A lens that does not exist.
    let mut res = build_with(&host, "augeas", "n", &hosts_params(&two, "Nosuch.lns", &WANTED)).unwrap();
    let err = check(res.as_mut(), true).await.unwrap_err();
    assert!(err.contains("Nosuch"), "{err}");

    for (pairs, param) in [
        (hosts_params(Path::new("relative/hosts"), "Hosts.lns", &WANTED), "file"),
        (hosts_params(&two, "Hosts", &WANTED), "lens"),
        (hosts_params(&two, "Hosts.lns", &[("", "x")]), "sets"),
    ] {
        let res = build_with(&host, "augeas", "bad", &pairs).unwrap();
        let err = res.validate().unwrap_err();
        assert!(err.message.contains(param), "{param}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_values_of_a_private_file_are_never_reported() {
    use std::os::unix::fs::PermissionsExt;
    if !here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path().join("host"));
    let private = dir.path().join("private");
    std::fs::write(&private, "10.9.9.9\tsecret-old-name\n").unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    let pairs = [("1/canonical", "secret-new-name")];
    let mut res = build_with(&host, "augeas", "p", &hosts_params(&private, "Hosts.lns", &pairs)).unwrap();
    let (ok, reports) = check(res.as_mut(), true).await.unwrap();
    assert!(!ok);
    let text = reports.join("\n");
    assert!(!text.contains("secret-"), "{text}");
    assert!(text.contains("<secret:"), "{text}");
    assert_eq!(std::fs::read_to_string(&private).unwrap(), "10.9.9.9\tsecret-new-name\n");
}
