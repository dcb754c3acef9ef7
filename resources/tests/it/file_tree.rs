//! Recursive `file` resources with `source` and `purge` next to symlinks (issue 44, defect
//! 2): a link in the target tree is compared, replaced or purged as a link and never
//! followed; a link in the source tree is copied as a link. A property test checks, for
//! random trees, that nothing outside the resource's path is ever created, changed or
//! removed.

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use lang::value::Value;
use proptest::prelude::*;
use resources::files::file::File;
use support::{check, params, s};

fn tree(dst: &Path, src: &Path, force: bool) -> File {
    let mut pairs = vec![
        ("state", s("exists")),
        ("source", s(src.to_str().unwrap())),
        ("recurse", Value::Bool(true)),
        ("purge", Value::Bool(true)),
    ];
    if force {
        pairs.push(("force", Value::Bool(true)));
    }
    File::build(&format!("{}/", dst.display()), &params(&pairs)).expect("builds")
}

/// Everything under `root` (not following links): path -> what it is and holds.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(path.clone(), format!("link {}", fs::read_link(&path).unwrap().display()));
            } else if meta.is_dir() {
                out.insert(path.clone(), "dir".into());
                walk(&path, out);
            } else {
                out.insert(path.clone(), format!("file {}", fs::read_to_string(&path).unwrap_or_default()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, &mut out);
    out
}

/// Defect 2: `dst/sub -> /elsewhere` was followed: tend wrote into `elsewhere` and purged
/// what it found there (and `--noop` listed "would purge …/dst/sub/precious").
#[tokio::test]
async fn a_symlink_in_the_target_tree_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst, elsewhere) = (dir.path().join("src"), dir.path().join("dst"), dir.path().join("elsewhere"));
    fs::create_dir_all(src.join("sub")).unwrap();
    fs::write(src.join("sub/new"), "new").unwrap();
    fs::create_dir_all(&dst).unwrap();
    fs::create_dir_all(&elsewhere).unwrap();
    fs::write(elsewhere.join("precious"), "precious").unwrap();
    symlink(&elsewhere, dst.join("sub")).unwrap();
    let outside = snapshot(&elsewhere);

    // Noop: says nothing about what is behind the link.
    let (ok, reports) = check(&mut tree(&dst, &src, false), false).await.unwrap_err_or_reports();
    assert!(!ok);
    assert!(!reports.join("\n").contains("precious"), "{reports:?}");

    // Without force: the link is an entry of the wrong type, and is left alone.
    let err = check(&mut tree(&dst, &src, false), true).await.unwrap_err();
    assert!(err.contains("is a symlink") && err.contains("force"), "{err}");
    assert_eq!(snapshot(&elsewhere), outside);
    assert!(fs::symlink_metadata(dst.join("sub")).unwrap().file_type().is_symlink());

    // With force: the link itself is replaced by the directory, its target untouched.
    let mut forced = tree(&dst, &src, true);
    check(&mut forced, true).await.unwrap();
    assert_eq!(snapshot(&elsewhere), outside);
    assert!(fs::symlink_metadata(dst.join("sub")).unwrap().is_dir());
    assert_eq!(fs::read_to_string(dst.join("sub/new")).unwrap(), "new");
    assert!(check(&mut forced, true).await.unwrap().0, "converged");
}

/// Defect 2: a purged stray symlink is removed as a link; its target stays.
#[tokio::test]
async fn a_stray_symlink_is_purged_as_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst, elsewhere) = (dir.path().join("src"), dir.path().join("dst"), dir.path().join("elsewhere"));
    fs::create_dir_all(&src).unwrap();
    fs::create_dir_all(&dst).unwrap();
    fs::create_dir_all(elsewhere.join("inner")).unwrap();
    fs::write(elsewhere.join("inner/precious"), "precious").unwrap();
    symlink(&elsewhere, dst.join("stray")).unwrap();
    let outside = snapshot(&elsewhere);
    check(&mut tree(&dst, &src, false), true).await.unwrap();
    assert!(fs::symlink_metadata(dst.join("stray")).is_err(), "the link is gone");
    assert_eq!(snapshot(&elsewhere), outside);
}

/// Defect 2: symlinks in the source are copied as symlinks (they were skipped), and a
/// link pointing elsewhere is repointed.
#[tokio::test]
async fn source_symlinks_are_copied_as_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    fs::create_dir_all(&src).unwrap();
    symlink("../relative/target", src.join("rel")).unwrap();
    symlink("/etc/hostname", src.join("abs")).unwrap();
    let mut f = tree(&dst, &src, false);
    check(&mut f, true).await.unwrap();
    assert_eq!(fs::read_link(dst.join("rel")).unwrap(), Path::new("../relative/target"));
    assert_eq!(fs::read_link(dst.join("abs")).unwrap(), Path::new("/etc/hostname"));
    assert!(check(&mut f, true).await.unwrap().0, "converged");
    fs::remove_file(dst.join("abs")).unwrap();
    symlink("/etc/passwd", dst.join("abs")).unwrap();
    assert!(!check(&mut f, true).await.unwrap().0);
    assert_eq!(fs::read_link(dst.join("abs")).unwrap(), Path::new("/etc/hostname"));
}

/// Reports of a check that may fail, flattened for the noop case.
trait Reports {
    fn unwrap_err_or_reports(self) -> (bool, Vec<String>);
}

impl Reports for Result<(bool, Vec<String>), String> {
    fn unwrap_err_or_reports(self) -> (bool, Vec<String>) {
        match self {
            Ok(x) => x,
            Err(e) => (false, vec![e]),
        }
    }
}

/// One entry of a generated tree.
#[derive(Clone, Debug)]
enum Entry {
    File(String),
    Dir(Vec<(u8, Entry)>),
    /// A link to the outside directory (`true`) or to a file in it.
    LinkOut(bool),
    /// A link to a sibling name (may dangle).
    LinkIn(u8),
}

fn entry() -> impl Strategy<Value = Entry> {
    let leaf = prop_oneof![
        "[a-z]{0,4}".prop_map(Entry::File),
        any::<bool>().prop_map(Entry::LinkOut),
        (0u8..4).prop_map(Entry::LinkIn),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| prop::collection::vec((0u8..4, inner), 0..4).prop_map(Entry::Dir))
}

fn make(dir: &Path, entries: &[(u8, Entry)], outside: &Path) {
    fs::create_dir_all(dir).unwrap();
    for (name, entry) in entries {
        let path = dir.join(format!("n{name}"));
        if fs::symlink_metadata(&path).is_ok() {
            continue; // A repeated name: the first one stands.
        }
        match entry {
            Entry::File(text) => fs::write(&path, text).unwrap(),
            Entry::Dir(children) => make(&path, children, outside),
            Entry::LinkOut(to_dir) => {
                symlink(if *to_dir { outside.to_path_buf() } else { outside.join("victim") }, &path).unwrap()
            }
            Entry::LinkIn(other) => symlink(format!("n{other}"), &path).unwrap(),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// For random source and target trees holding files, directories and symlinks (some
    /// pointing outside), a recursive purging `file` (with and without force, noop and
    /// apply) never creates, changes or removes anything outside its path.
    #[test]
    fn nothing_outside_the_resource_is_touched(
        source in prop::collection::vec((0u8..4, entry()), 0..5),
        target in prop::collection::vec((0u8..4, entry()), 0..5),
        force in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst, outside) = (dir.path().join("src"), dir.path().join("dst"), dir.path().join("outside"));
        fs::create_dir_all(outside.join("deep")).unwrap();
        fs::write(outside.join("victim"), "victim").unwrap();
        fs::write(outside.join("deep/file"), "deep").unwrap();
        make(&src, &source, &outside);
        make(&dst, &target, &outside);
        let before = (snapshot(&outside), snapshot(&src));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let second = rt.block_on(async {
            let mut f = tree(&dst, &src, force);
            let _noop = check(&mut f, false).await;
            let _first = check(&mut f, true).await;
            check(&mut f, true).await
        });
        prop_assert_eq!(before, (snapshot(&outside), snapshot(&src)));
        // With force every entry can be made what the source has: one apply converges.
        if force {
            prop_assert_eq!(second.map(|(ok, _)| ok), Ok(true));
        }
    }
}

/// Defect 1, through send/recv: a path received at run time is refused like a written one,
/// and the file keeps the path it had.
#[test]
fn a_received_dotdot_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let name = dir.path().join("a").display().to_string();
    let mut f = File::build(&name, &params(&[("state", s("exists")), ("content", s("x"))])).unwrap();
    let bad = resources::payload(s(&format!("{}/victim/..", dir.path().display())));
    let err = engine::Resource::recv(&mut f, "path", &bad).unwrap_err();
    assert!(err.message.contains("has a `..` component"), "{}", err.message);
    assert_eq!(f.params().path.as_str(), name);
}
