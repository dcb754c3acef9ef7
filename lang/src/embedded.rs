//! Modules built into tend: `import "embedded/NAME"` loads the module whose files are
//! compiled into the binary, as if they were in the deploy directory `/.embedded/NAME/`,
//! so such a program needs nothing on disk besides itself.

use crate::loader::Loader;

/// The deploy directory under which the embedded modules appear.
pub const ROOT: &str = "/.embedded/";

/// Every embedded file, by deploy path.
static FILES: &[(&str, &str)] = &[
    ("/.embedded/provisioner/metadata.yaml", include_str!("../embedded/provisioner/metadata.yaml")),
    ("/.embedded/provisioner/main.mcl", include_str!("../embedded/provisioner/main.mcl")),
    ("/.embedded/provisioner/files/bios-menu.tmpl", include_str!("../embedded/provisioner/files/bios-menu.tmpl")),
    ("/.embedded/provisioner/files/uefi-menu.tmpl", include_str!("../embedded/provisioner/files/uefi-menu.tmpl")),
    ("/.embedded/provisioner/files/ipxe-menu.tmpl", include_str!("../embedded/provisioner/files/ipxe-menu.tmpl")),
    (
        "/.embedded/provisioner/files/ipxe-autoexec.tmpl",
        include_str!("../embedded/provisioner/files/ipxe-autoexec.tmpl"),
    ),
    ("/.embedded/provisioner/files/kickstart.ks.tmpl", include_str!("../embedded/provisioner/files/kickstart.ks.tmpl")),
];

/// The program `tend provisioner` runs: it includes the embedded provisioner's classes
/// with the values of its command line (`provisioner.cli_*`).
pub const PROVISIONER_TOP: &str = include_str!("../embedded/provisioner-top.mcl");

/// The deploy directory (`/.embedded/NAME/`) of import `embedded/NAME`, when tend has it.
pub fn module_dir(import: &str) -> Option<String> {
    let name = import.strip_prefix("embedded/")?.trim_end_matches('/');
    let dir = format!("{ROOT}{name}/");
    (!name.is_empty() && FILES.iter().any(|(p, _)| p.starts_with(&dir))).then_some(dir)
}

/// The text of embedded file `path` (a deploy path under [`ROOT`]).
pub fn file(path: &str) -> Option<&'static str> {
    FILES.iter().find(|(p, _)| *p == path).map(|(_, text)| *text)
}

/// Whether `path` is an embedded directory.
pub fn is_dir(path: &str) -> bool {
    let dir = if path.ends_with('/') { path.to_string() } else { format!("{path}/") };
    dir.starts_with(ROOT) && FILES.iter().any(|(p, _)| p.starts_with(&dir))
}

/// How people are shown embedded file `path` (a deploy path under [`ROOT`]): as its
/// import names it. `None` for any other path.
pub fn shown(path: &str) -> Option<String> {
    path.strip_prefix(ROOT).map(|rest| format!("embedded/{rest} (built into tend)"))
}

/// A loader that serves the embedded modules under [`ROOT`] and leaves every other path
/// to the loader it wraps.
pub struct WithEmbedded<'l>(pub &'l dyn Loader);

impl Loader for WithEmbedded<'_> {
    fn read(&self, path: &str) -> Option<String> {
        match path.starts_with(ROOT) {
            true => file(path).map(str::to_string),
            false => self.0.read(path),
        }
    }
    fn is_dir(&self, path: &str) -> bool {
        is_dir(path) || (!path.starts_with(ROOT) && self.0.is_dir(path))
    }
    fn why_unreadable(&self, path: &str) -> Option<String> {
        (!path.starts_with(ROOT)).then(|| self.0.why_unreadable(path)).flatten()
    }
    fn subdirs(&self, dir: &str) -> Vec<String> {
        self.0.subdirs(dir)
    }
    fn shown(&self, path: &str) -> String {
        shown(path).unwrap_or_else(|| self.0.shown(path))
    }
    fn module_path(&self) -> Option<String> {
        self.0.module_path()
    }
    fn download(&self, url: &str, reference: Option<&str>, dir: &str) -> Option<Result<(), String>> {
        self.0.download(url, reference, dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_modules_tend_has_are_embedded_imports() {
        assert_eq!(module_dir("embedded/provisioner").as_deref(), Some("/.embedded/provisioner/"));
        assert_eq!(module_dir("embedded/provisioner/").as_deref(), Some("/.embedded/provisioner/"));
        assert_eq!(module_dir("embedded/nothing"), None);
        assert_eq!(module_dir("embedded/"), None);
        assert_eq!(module_dir("provisioner"), None);
        assert!(file("/.embedded/provisioner/main.mcl").is_some_and(|t| t.contains("class base(")));
        assert!(is_dir("/.embedded/provisioner/files"));
        assert!(!is_dir("/.embedded/provision"));
    }

    #[test]
    fn the_wrapper_serves_embedded_paths_and_nothing_else_from_the_binary() {
        let disk = crate::loader::MemLoader::new()
            .with("/main.mcl", "x")
            .with("/.embedded/provisioner/main.mcl", "a file on disk never shadows the binary's");
        let l = WithEmbedded(&disk);
        assert_eq!(l.read("/main.mcl").as_deref(), Some("x"));
        assert_eq!(l.read("/.embedded/provisioner/main.mcl").as_deref(), file("/.embedded/provisioner/main.mcl"));
        assert_eq!(l.read("/.embedded/other/main.mcl"), None);
    }
}
