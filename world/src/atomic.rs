//! Files the world keeps (the local store's values, a cluster agent's session and cached
//! views) are written whole or not at all.

use std::path::Path;

/// Writes `path` whole or not at all: a synced file beside it, renamed over it.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(bytes)?;
    // As any file the agent writes without a mode: readable by all, as the state directory allows.
    std::fs::set_permissions(file.path(), std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_is_replaced_whole_and_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("value");
        super::replace_file(&path, b"one").unwrap();
        super::replace_file(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o644);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file is left");
    }
}
