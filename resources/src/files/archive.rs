//! `gzip` and `tar`: produce a compressed file or an archive at `path` (default the
//! name) from inputs on disk.
//!
//! Both are idempotent by construction: check-apply produces the output it would write
//! into a SHA-256 hasher (streamed, nothing held in memory) and compares it with the file
//! at `path`; only a difference rewrites the file, atomically (a temporary file next to it,
//! renamed into place). The outputs are deterministic: the gzip header carries no name and
//! a zero mtime, and tar entries come in name order with the inputs' own metadata. Both
//! watch their output and their inputs (directories recursively).
//!
//! `gzip` compresses the file `input`, or the string `content` when no input is given, at
//! `level` (Go's levels: -1 default, 0 none .. 9 best, -2 Huffman only). `tar` archives
//! `inputs`: a file as its base name; a directory's contents recursively, under the
//! directory's base name when the input has no trailing slash (rsync style). Only regular
//! files and directories can be archived. `format` is Go's header format: 2 ustar, 8 GNU
//! (long names through GNU long-name entries), 4 pax and 0 (automatic) both write ustar
//! headers with a pax record for names that do not fit.

use lang::params::ParamMap;
use std::collections::HashMap;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use flate2::Compression;
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use crate::contract::autoedge::{Edges, Index, list_param, str_param};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::fs::atomic_write_with;
use crate::util::watch::watch_loop;

/// A writer that only hashes.
struct HashSink(Sha256);

impl Write for HashSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The SHA-256 of what `produce` writes.
fn digest_of(produce: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<[u8; 32]> {
    let mut sink = HashSink(Sha256::new());
    produce(&mut sink)?;
    Ok(sink.0.finalize().into())
}

/// The SHA-256 of the regular file at `path`; `None` when nothing is there.
fn digest_of_file(path: &Path) -> io::Result<Option<[u8; 32]>> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
        Ok(m) if !m.is_file() => {
            return Err(io::Error::other(format!("{} exists and is not a regular file", path.display())));
        }
        Ok(_) => {}
    }
    let mut file = fs::File::open(path)?;
    digest_of(|w| io::copy(&mut file, w).map(drop)).map(Some)
}

/// Common checks of an output path.
pub(crate) fn check_output_path(path: &str) -> Result<(), String> {
    crate::util::path::check(path)?;
    if path.ends_with('/') {
        return Err("names a file and must not end with a slash".into());
    }
    Ok(())
}

/// Compares the would-be output with the file and rewrites it when they differ.
pub(crate) fn converge_output(
    key: &str,
    path: &Path,
    ctx: &mut ApplyCtx,
    apply: bool,
    produce: &dyn Fn(&mut dyn Write) -> io::Result<()>,
) -> Result<bool, ResError> {
    let fail = |what: &str, e: io::Error| ResError::new(format!("{key}: {what}: {e}"));
    let want = digest_of(produce).map_err(|e| fail("cannot produce the output", e))?;
    let have = digest_of_file(path).map_err(|e| fail("cannot read the output", e))?;
    if have == Some(want) {
        return Ok(true);
    }
    if !apply {
        ctx.report(format!("{key}: would write {}", path.display()));
        return Ok(false);
    }
    atomic_write_with(path, None, |file| {
        let mut out = io::BufWriter::new(file);
        produce(&mut out)?;
        out.flush()
    })
    .map_err(|e| fail(&format!("cannot write {}", path.display()), e))?;
    Ok(false)
}

// ---------------------------------------------------------------------------------------
// gzip

crate::params! {
    /// `gzip`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct GzipParams {
        /// The file written; defaults to the name.
        pub path: String,
        pub input: Option<String>,
        pub content: String,
        /// -1 is the library's default.
        pub level: i64 = -1,
    }
}

pub struct Gzip {
    raw: Raw,
    params: GzipParams,
}

impl Gzip {
    pub fn build(name: &str, values: &ParamMap) -> Result<Gzip, BuildError> {
        let (raw, params) = Raw::decoded("gzip", name, values, GzipParams::decode)?;
        Ok(Gzip { raw, params })
    }

    fn path(&self) -> &str {
        if self.params.path.is_empty() { &self.raw.name } else { &self.params.path }
    }
}

#[async_trait]
impl Resource for Gzip {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: &str, message: String| self.raw.invalid(Some(field), message);
        check_output_path(self.path()).map_err(|m| err("path", m))?;
        if let Some(input) = &self.params.input {
            check_output_path(input).map_err(|m| err("input", m))?;
            if input == self.path() {
                return Err(err("input", "must differ from the output path".into()));
            }
        }
        if !(-2..=9).contains(&self.params.level) {
            return Err(err("level", format!("{} is not a gzip level (-2 to 9)", self.params.level)));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let mut targets = vec![PathBuf::from(self.path())];
        targets.extend(self.params.input.iter().map(PathBuf::from));
        watch_loop(targets, false, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("gzip[{}]", self.raw.name);
        if let Some(input) = &self.params.input
            && !fs::metadata(input).is_ok_and(|m| m.is_file())
        {
            return Err(ResError::new(format!("{key}: input {input} is not an existing regular file")));
        }
        let (input, content, level) = (self.params.input.clone(), self.params.content.clone(), self.params.level);
        let produce = move |out: &mut dyn Write| -> io::Result<()> {
            match &input {
                Some(path) => gzip_into(&mut fs::File::open(path)?, level, out),
                None => gzip_into(&mut content.as_bytes(), level, out),
            }
        };
        converge_output(&key, Path::new(self.path()), ctx, apply, &produce)
    }

    crate::fingerprint_by_params!();
}

/// Gzips `input` into `out` at a Go compression level (checked by validate).
pub fn gzip_into(input: &mut dyn Read, level: i64, out: &mut dyn Write) -> io::Result<()> {
    if level == -2 {
        return huffman_only_gzip(input, out);
    }
    let compression = u32::try_from(level).map(Compression::new).unwrap_or_default();
    let mut encoder = flate2::GzBuilder::new().mtime(0).write(out, compression);
    io::copy(input, &mut encoder)?;
    encoder.finish().map(drop)
}

/// Gzip with Huffman coding only (no match search), which flate2 does not expose: the
/// deflate stream comes from miniz_oxide with that strategy, framed by hand (RFC 1952).
fn huffman_only_gzip(input: &mut dyn Read, out: &mut dyn Write) -> io::Result<()> {
    use miniz_oxide::deflate::core::{
        CompressionStrategy, CompressorOxide, TDEFLFlush, TDEFLStatus, compress_to_output,
        create_comp_flags_from_zip_params,
    };
    // Magic, deflate, no flags, mtime 0, no extra flags, OS unknown.
    out.write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255])?;
    let flags = create_comp_flags_from_zip_params(6, -15, CompressionStrategy::HuffmanOnly as i32);
    let mut compressor = Box::new(CompressorOxide::new(flags));
    let mut crc = flate2::Crc::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = input.read(&mut buf)?;
        let flush = if n == 0 { TDEFLFlush::Finish } else { TDEFLFlush::None };
        crc.update(&buf[..n]);
        let mut failed = None;
        let (status, used) =
            compress_to_output(&mut compressor, &buf[..n], flush, |bytes| match out.write_all(bytes) {
                Ok(()) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            });
        if let Some(e) = failed {
            return Err(e);
        }
        match status {
            TDEFLStatus::Done => break,
            TDEFLStatus::Okay if used == n && n > 0 => {}
            other => return Err(io::Error::other(format!("deflate failed: {other:?}"))),
        }
    }
    out.write_all(&crc.sum().to_le_bytes())?;
    out.write_all(&crc.amount().to_le_bytes())
}

// ---------------------------------------------------------------------------------------
// tar

crate::params! {
    /// `tar`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct TarParams {
        /// The file written; defaults to the name.
        pub path: String,
        pub inputs: Vec<String>,
        pub format: i64,
    }
}

pub struct Tar {
    raw: Raw,
    params: TarParams,
}

/// How entry names are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TarFormat {
    /// ustar headers; a name that does not fit is an error.
    Ustar,
    /// ustar headers, plus a pax `path` record for a name that does not fit.
    Pax,
    /// GNU headers, plus a GNU long-name entry for a name that does not fit.
    Gnu,
}

impl TarFormat {
    /// Go's `archive/tar` format numbers.
    pub fn from_go(n: i64) -> Option<TarFormat> {
        match n {
            0 | 4 => Some(TarFormat::Pax),
            2 => Some(TarFormat::Ustar),
            8 => Some(TarFormat::Gnu),
            _ => None,
        }
    }
}

impl Tar {
    pub fn build(name: &str, values: &ParamMap) -> Result<Tar, BuildError> {
        let (raw, params) = Raw::decoded("tar", name, values, TarParams::decode)?;
        Ok(Tar { raw, params })
    }

    fn path(&self) -> &str {
        if self.params.path.is_empty() { &self.raw.name } else { &self.params.path }
    }
}

#[async_trait]
impl Resource for Tar {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: &str, message: String| self.raw.invalid(Some(field), message);
        check_output_path(self.path()).map_err(|m| err("path", m))?;
        let out = Path::new(self.path());
        for (i, input) in self.params.inputs.iter().enumerate() {
            crate::util::path::check(input).map_err(|m| err("inputs", format!("input #{i}: {m}")))?;
            if out.starts_with(input) {
                return Err(err("inputs", format!("input #{i} `{input}` contains the archive itself")));
            }
        }
        if TarFormat::from_go(self.params.format).is_none() {
            return Err(err(
                "format",
                format!("{} is not a tar format (0 unknown, 2 ustar, 4 pax, 8 gnu)", self.params.format),
            ));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let mut targets = vec![PathBuf::from(self.path())];
        targets.extend(self.params.inputs.iter().map(PathBuf::from));
        watch_loop(targets, true, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("tar[{}]", self.raw.name);
        let format = TarFormat::from_go(self.params.format)
            .ok_or_else(|| ResError::new(format!("{key}: invalid format {}", self.params.format)))?;
        let inputs = self.params.inputs.clone();
        let produce = move |out: &mut dyn Write| tar_into(&inputs, format, out);
        converge_output(&key, Path::new(self.path()), ctx, apply, &produce)
    }

    crate::fingerprint_by_params!();
}

/// One archive member before it is written.
struct Member {
    name: String,
    source: PathBuf,
    meta: fs::Metadata,
}

/// Lists what `inputs` contribute, in archive order.
fn members(inputs: &[String]) -> io::Result<Vec<Member>> {
    let mut out = Vec::new();
    for input in inputs {
        let meta = fs::metadata(input).map_err(|e| io::Error::new(e.kind(), format!("input {input}: {e}")))?;
        let base = Path::new(input).file_name().map(|b| b.to_string_lossy().into_owned()).unwrap_or_default();
        if meta.is_dir() {
            let prefix = if input.ends_with('/') || base.is_empty() { String::new() } else { format!("{base}/") };
            walk(Path::new(input), &prefix, &mut out)?;
        } else if meta.is_file() {
            out.push(Member { name: base, source: PathBuf::from(input), meta });
        } else {
            return Err(io::Error::other(format!("input {input} is not a regular file or a directory")));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<Member>) -> io::Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let meta = fs::symlink_metadata(&path)?;
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if meta.is_dir() {
            let dir_name = format!("{name}/");
            out.push(Member { name: dir_name.clone(), source: path.clone(), meta });
            walk(&path, &dir_name, out)?;
        } else if meta.is_file() {
            out.push(Member { name, source: path, meta });
        } else {
            return Err(io::Error::other(format!(
                "cannot archive {}: not a regular file or a directory",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Writes the tar archive of `inputs` into `out`.
pub fn tar_into(inputs: &[String], format: TarFormat, out: &mut dyn Write) -> io::Result<()> {
    let members = members(inputs)?;
    let mut names = Names::default();
    let mut builder = tar::Builder::new(out);
    for m in &members {
        let mut header = if format == TarFormat::Gnu { tar::Header::new_gnu() } else { tar::Header::new_ustar() };
        header.set_mode(m.meta.mode() & 0o7777);
        header.set_uid(u64::from(m.meta.uid()));
        header.set_gid(u64::from(m.meta.gid()));
        header.set_mtime(u64::try_from(m.meta.mtime()).unwrap_or(0));
        // Names longer than the fields are simply left out, as other tools do.
        if let Some(user) = names.user(m.meta.uid()) {
            let _too_long = header.set_username(&user);
        }
        if let Some(group) = names.group(m.meta.gid()) {
            let _too_long = header.set_groupname(&group);
        }
        if m.meta.is_dir() {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_size(0);
            write_member(&mut builder, header, &m.name, format, io::empty())?;
        } else {
            header.set_entry_type(tar::EntryType::Regular);
            let file = fs::File::open(&m.source)?;
            let size = file.metadata()?.len();
            header.set_size(size);
            let data = ExactReader { inner: file.take(size), left: size, path: &m.source };
            write_member(&mut builder, header, &m.name, format, data)?;
        }
    }
    builder.into_inner().map(drop)
}

/// Reads exactly `left` bytes, failing if the file shrank meanwhile (a short member would
/// corrupt the archive).
struct ExactReader<'a, R> {
    inner: R,
    left: u64,
    path: &'a Path,
}

impl<R: Read> Read for ExactReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            return Err(io::Error::other(format!("{} changed while being archived", self.path.display())));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Stores `name` in the header (splitting it into ustar's prefix and name when needed, or
/// preceding the member with a long-name entry), then appends header and data.
fn write_member<W: Write>(
    builder: &mut tar::Builder<W>,
    mut header: tar::Header,
    name: &str,
    format: TarFormat,
    data: impl Read,
) -> io::Result<()> {
    let bytes = name.as_bytes();
    if bytes.len() <= 100 {
        header.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
    } else if let (TarFormat::Ustar | TarFormat::Pax, Some((prefix, rest))) = (format, split_ustar(bytes)) {
        header.as_old_mut().name[..rest.len()].copy_from_slice(rest);
        if let Some(ustar) = header.as_ustar_mut() {
            ustar.prefix[..prefix.len()].copy_from_slice(prefix);
        }
    } else {
        let mut ext = match format {
            TarFormat::Ustar => {
                return Err(io::Error::other(format!("`{name}` is too long for the ustar format (use pax or gnu)")));
            }
            TarFormat::Gnu => tar::Header::new_gnu(),
            TarFormat::Pax => tar::Header::new_ustar(),
        };
        let payload = if format == TarFormat::Gnu {
            ext.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
            ext.set_entry_type(tar::EntryType::GNULongName);
            let mut p = bytes.to_vec();
            p.push(0);
            p
        } else {
            ext.as_old_mut().name[..14].copy_from_slice(b"PaxHeaders.0/x");
            ext.set_entry_type(tar::EntryType::XHeader);
            pax_record("path", bytes)
        };
        ext.set_mode(0o644);
        ext.set_size(payload.len() as u64);
        ext.set_cksum();
        builder.append(&ext, payload.as_slice())?;
        header.as_old_mut().name.copy_from_slice(&bytes[..100]);
    }
    header.set_cksum();
    builder.append(&header, data)
}

/// Splits a long name at a `/` into ustar's prefix (at most 155 bytes) and name (at most
/// 100 bytes, not empty).
fn split_ustar(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let body = bytes.strip_suffix(b"/").unwrap_or(bytes);
    (0..body.len())
        .filter(|&i| body[i] == b'/')
        .map(|i| (&bytes[..i], &bytes[i + 1..]))
        .find(|(prefix, rest)| prefix.len() <= 155 && rest.len() <= 100 && !rest.is_empty())
}

/// One pax extended-header record: `LEN KEY=VALUE\n`, LEN counting the whole record.
fn pax_record(key: &str, value: &[u8]) -> Vec<u8> {
    let body = key.len() + value.len() + 3; // space, `=`, newline
    let mut len = body + 1;
    while len != body + len.to_string().len() {
        len = body + len.to_string().len();
    }
    let mut out = format!("{len} {key}=").into_bytes();
    out.extend_from_slice(value);
    out.push(b'\n');
    out
}

/// User and group names by id, looked up once per archive.
#[derive(Default)]
struct Names {
    users: HashMap<u32, Option<String>>,
    groups: HashMap<u32, Option<String>>,
}

impl Names {
    fn user(&mut self, uid: u32) -> Option<String> {
        self.users
            .entry(uid)
            .or_insert_with(|| {
                nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok().flatten().map(|u| u.name)
            })
            .clone()
    }
    fn group(&mut self, gid: u32) -> Option<String> {
        self.groups
            .entry(gid)
            .or_insert_with(|| {
                nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid)).ok().flatten().map(|g| g.name)
            })
            .clone()
    }
}

/// The file a `gzip` or `tar` resource writes: `path`, default the name.
fn output_path<'a>(name: &'a str, params: &'a ParamMap) -> &'a str {
    str_param(params, "path").filter(|p| !p.is_empty()).unwrap_or(name)
}

/// An archive provides the file it writes.
fn provides(index: &mut Index<'_>, idx: usize, name: &str, params: &ParamMap) {
    index.add_archive(output_path(name, params).to_string(), idx);
}

/// A `gzip` comes after what produces its input (a `file` or another archive).
fn gzip_requires(index: &Index<'_>, idx: usize, _name: &str, params: &ParamMap, edges: &mut Edges) {
    if let Some(input) = str_param(params, "input") {
        edges.extend(index.file(input).or_else(|| index.archive(input)).map(|p| (p, idx)));
    }
}

/// A `tar` comes after what produces each input, and anything managed inside an input
/// directory.
fn tar_requires(index: &Index<'_>, idx: usize, _name: &str, params: &ParamMap, edges: &mut Edges) {
    for input in list_param(params, "inputs").filter(|i| i.starts_with('/')) {
        edges.extend(index.producers_within(input).map(|p| (p, idx)));
    }
}

/// The `gzip` kind: its params and send fields as the type checker sees them, and its constructor.
pub const GZIP: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("gzip", GzipParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Gzip::build(name, params)?))
    })
    .autoedges(crate::contract::autoedge::Rules {
        provides: Some(provides),
        requires: Some(gzip_requires),
        reads: &["path", "input"],
    });

/// The `tar` kind: its params and send fields as the type checker sees them, and its constructor.
pub const TAR: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("tar", TarParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Tar::build(name, params)?))
    })
    .autoedges(crate::contract::autoedge::Rules {
        provides: Some(provides),
        requires: Some(tar_requires),
        reads: &["path", "inputs"],
    });

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn gunzip(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(data).read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn every_level_round_trips_and_is_deterministic() {
        let text = "hello world from tend! ".repeat(200);
        let mut sizes = BTreeMap::new();
        for level in -2..=9 {
            let mut a = Vec::new();
            gzip_into(&mut text.as_bytes(), level, &mut a).unwrap();
            let mut b = Vec::new();
            gzip_into(&mut text.as_bytes(), level, &mut b).unwrap();
            assert_eq!(a, b, "level {level} is deterministic");
            assert_eq!(gunzip(&a), text.as_bytes(), "level {level} round-trips");
            sizes.insert(level, a.len());
        }
        assert!(sizes[&0] > text.len(), "level 0 stores");
        assert!(sizes[&9] < sizes[&-2], "matches beat Huffman-only on repetitive text");
        assert!(sizes[&-2] < sizes[&0], "Huffman-only still compresses");
        let mut empty = Vec::new();
        gzip_into(&mut io::empty(), -2, &mut empty).unwrap();
        assert!(gunzip(&empty).is_empty());
    }

    #[test]
    fn long_names_split_or_get_an_extension_record() {
        let name = format!("{}/{}", "d".repeat(120), "f".repeat(90));
        let (prefix, rest) = split_ustar(name.as_bytes()).unwrap();
        assert_eq!((prefix.len(), rest.len()), (120, 90));
        assert!(split_ustar("x".repeat(150).as_bytes()).is_none());
        assert!(split_ustar(format!("{}/", "d".repeat(120)).as_bytes()).is_none(), "the name part must not be empty");
        let record = pax_record("path", b"abc");
        assert_eq!(record, b"12 path=abc\n");
        let long = vec![b'x'; 95];
        assert_eq!(pax_record("path", &long).len(), 105, "the length counts its own digits");
    }

    #[test]
    fn formats_follow_go_numbers() {
        assert_eq!(TarFormat::from_go(8), Some(TarFormat::Gnu));
        assert_eq!(TarFormat::from_go(2), Some(TarFormat::Ustar));
        assert_eq!(TarFormat::from_go(0), Some(TarFormat::Pax));
        assert_eq!(TarFormat::from_go(4), Some(TarFormat::Pax));
        assert_eq!(TarFormat::from_go(3), None);
    }
}
