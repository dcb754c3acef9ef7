//! `golang/strconv`, `golang/os`, `golang/os/exec`, `golang/runtime` and `golang/html`
//! (`math` and the paths have modules of their own).

use super::convert::{go_parse_bool, go_parse_float, go_parse_int};
use super::typed;
use crate::api::{FuncError, FuncResult};
use crate::builtin;
use crate::registry::Registry;
use lang::value::{Value, quote_str};
use rand::Rng;

pub fn register(r: &mut Registry) {
    strconv(r);
    os(r);
    typed(r, "golang/os/exec.look_path", os_exec_look_path::DEF);
    runtime(r);
    typed(r, "golang/html.escape_string", html_escape_string::DEF);
    typed(r, "golang/html.unescape_string", html_unescape_string::DEF);
}

fn strconv(r: &mut Registry) {
    typed(r, "golang/strconv.atoi", strconv_atoi::DEF);
    typed(r, "golang/strconv.itoa", strconv_itoa::DEF);
    typed(r, "golang/strconv.format_bool", strconv_format_bool::DEF);
    typed(r, "golang/strconv.parse_bool", strconv_parse_bool::DEF);
    typed(r, "golang/strconv.format_int", strconv_format_int::DEF);
    typed(r, "golang/strconv.parse_int", strconv_parse_int::DEF);
    typed(r, "golang/strconv.parse_float", strconv_parse_float::DEF);
    typed(r, "golang/strconv.quote", strconv_quote::DEF);
    typed(r, "golang/strconv.unquote", strconv_unquote::DEF);
    typed(r, "golang/strconv.quote_to_ascii", strconv_quote_to_ascii::DEF);
    typed(r, "golang/strconv.quote_to_graphic", strconv_quote_to_graphic::DEF);
    typed(r, "golang/strconv.quoted_prefix", strconv_quoted_prefix::DEF);
    typed(r, "golang/strconv.can_backquote", strconv_can_backquote::DEF);
    typed(r, "golang/strconv.append_bool", strconv_append_bool::DEF);
    typed(r, "golang/strconv.append_int", strconv_append_int::DEF);
    typed(r, "golang/strconv.append_quote", strconv_append_quote::DEF);
    typed(r, "golang/strconv.append_quote_to_ascii", strconv_append_quote_to_ascii::DEF);
    typed(r, "golang/strconv.append_quote_to_graphic", strconv_append_quote_to_graphic::DEF);
}

pub fn format_int(n: i64, base: i64) -> FuncResult {
    if !(2..=36).contains(&base) {
        return Err(FuncError::fatal(format!("strconv: illegal AppendInt/FormatInt base {base}")));
    }
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut v = n.unsigned_abs();
    let mut out = Vec::new();
    loop {
        out.push(digits[(v % base as u64) as usize]);
        v /= base as u64;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.reverse();
    Ok(Value::str(String::from_utf8_lossy(&out)))
}

/// Go's `strconv.Unquote` for `"..."`, `` `...` `` and `'c'`.
pub fn unquote(s: &str) -> Result<String, FuncError> {
    let bad = || FuncError::catchable("invalid syntax");
    if s.len() >= 2 && s.starts_with('`') && s.ends_with('`') {
        return Ok(s[1..s.len() - 1].replace('\r', ""));
    }
    let (q, inner) = match (s.chars().next(), s.chars().last()) {
        (Some(q @ ('"' | '\'')), Some(e)) if e == q && s.len() >= 2 => (q, &s[1..s.len() - 1]),
        _ => return Err(bad()),
    };
    let mut out = String::new();
    let mut it = inner.chars().peekable();
    while let Some(c) = it.next() {
        if c == q || c == '\n' {
            return Err(bad());
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = it.next().ok_or_else(bad)?;
        let hex = |it: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| -> Result<u32, FuncError> {
            let h: String = (0..n).filter_map(|_| it.next()).collect();
            if h.len() != n {
                return Err(bad());
            }
            u32::from_str_radix(&h, 16).map_err(|_| bad())
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' => out.push('\\'),
            '"' | '\'' if e == q => out.push(e),
            'x' => out.push(char::from_u32(hex(&mut it, 2)?).ok_or_else(bad)?),
            'u' => out.push(char::from_u32(hex(&mut it, 4)?).ok_or_else(bad)?),
            'U' => out.push(char::from_u32(hex(&mut it, 8)?).ok_or_else(bad)?),
            '0'..='7' => {
                let o: String = std::iter::once(e).chain((0..2).filter_map(|_| it.next())).collect();
                let v = u32::from_str_radix(&o, 8).map_err(|_| bad())?;
                out.push(char::from_u32(v).filter(|_| v < 256).ok_or_else(bad)?);
            }
            _ => return Err(bad()),
        }
    }
    if q == '\'' && out.chars().count() != 1 {
        return Err(bad());
    }
    Ok(out)
}

/// Go's `os.Expand` with `$NAME`/`${NAME}` from the environment.
pub fn expand_env(s: &str, lookup: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' || i + 1 >= b.len() {
            let c = s[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        let rest = &s[i + 1..];
        if let Some(inner) = rest.strip_prefix('{') {
            match inner.find('}') {
                Some(end) if end > 0 => {
                    out.push_str(&lookup(&inner[..end]));
                    i += 2 + end + 1;
                }
                _ => {
                    // Bad syntax: Go eats the `${`.
                    i += 2;
                }
            }
            continue;
        }
        let special = rest.chars().next().filter(|c| "*#$@!?-0123456789".contains(*c));
        let len = match special {
            Some(_) => 1,
            None => rest.bytes().take_while(|c| c.is_ascii_alphanumeric() || *c == b'_').count(),
        };
        if len == 0 {
            // `$` followed by nothing usable: Go drops the `$`... and keeps going.
            i += 1;
            continue;
        }
        out.push_str(&lookup(&rest[..len]));
        i += 1 + len;
    }
    out
}

fn home_dir() -> Result<String, FuncError> {
    std::env::var("HOME").ok().filter(|h| !h.is_empty()).ok_or_else(|| FuncError::catchable("$HOME is not defined"))
}

fn os(r: &mut Registry) {
    typed(r, "golang/os.getenv", os_getenv::DEF);
    typed(r, "golang/os.expand_env", os_expand_env::DEF);
    typed(r, "golang/os.hostname", os_hostname::DEF);
    typed(r, "golang/os.executable", os_executable::DEF);
    typed(r, "golang/os.getpid", os_getpid::DEF);
    typed(r, "golang/os.getppid", os_getppid::DEF);
    typed(r, "golang/os.getuid", os_getuid::DEF);
    typed(r, "golang/os.getgid", os_getgid::DEF);
    typed(r, "golang/os.getwd", os_getwd::DEF);
    typed(r, "golang/os.temp_dir", os_temp_dir::DEF);
    typed(r, "golang/os.user_home_dir", os_user_home_dir::DEF);
    typed(r, "golang/os.user_cache_dir", os_user_cache_dir::DEF);
    typed(r, "golang/os.user_config_dir", os_user_config_dir::DEF);
    typed(r, "golang/os.readlink", os_readlink::DEF);
    typed(r, "golang/os.getegid", os_getegid::DEF);
    typed(r, "golang/os.geteuid", os_geteuid::DEF);
    typed(r, "golang/os.getpagesize", os_getpagesize::DEF);
    typed(r, "golang/os.mkdir_temp", os_mkdir_temp::DEF);
    typed(r, "golang/os.read_file", os_read_file::DEF);
}

fn runtime(r: &mut Registry) {
    typed(r, "golang/runtime.version", runtime_version::DEF);
    typed(r, "golang/runtime.goroot", runtime_goroot::DEF);
    typed(r, "golang/runtime.num_cpu", runtime_num_cpu::DEF);
    typed(r, "golang/runtime.gomaxprocs", runtime_gomaxprocs::DEF);
    typed(r, "golang/runtime.num_cgo_call", runtime_num_cgo_call::DEF);
    typed(r, "golang/runtime.num_goroutine", runtime_num_goroutine::DEF);
    typed(r, "golang/runtime.read_trace", runtime_read_trace::DEF);
    typed(r, "golang/runtime.set_mutex_profile_fraction", runtime_set_mutex_profile_fraction::DEF);
    typed(r, "golang/runtime.stack", runtime_stack::DEF);
}

/// Go's `os.MkdirTemp`: a new directory `dir/PREFIX<random>SUFFIX` (the pattern split at
/// its last `*`, else the random part appended), mode 0700; `dir` "" is the temp dir.
pub fn mkdir_temp(dir: &str, pattern: &str) -> Result<String, FuncError> {
    use std::os::unix::fs::DirBuilderExt;
    if pattern.contains('/') {
        return Err(FuncError::catchable(format!("mkdirtemp {pattern}: pattern contains path separator")));
    }
    let dir = if dir.is_empty() { std::env::temp_dir().display().to_string() } else { dir.to_string() };
    let (prefix, suffix) = pattern.rsplit_once('*').unwrap_or((pattern, ""));
    let mut rng = rand::rng();
    for _ in 0..10_000 {
        let path = format!("{}/{prefix}{}{suffix}", dir.trim_end_matches('/'), rng.random::<u32>());
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(FuncError::catchable(format!("mkdirtemp {path}: {e}"))),
        }
    }
    Err(FuncError::catchable(format!("mkdirtemp {dir}/{pattern}: too many names taken")))
}

/// How [`go_quote`] treats characters beyond ASCII.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum QuoteMode {
    /// `strconv.Quote`: printable characters kept, the rest escaped.
    Printable,
    /// `strconv.QuoteToGraphic`: also keeps Unicode spaces (U+00A0, U+3000 …).
    Graphic,
    /// `strconv.QuoteToASCII`: every non-ASCII character escaped.
    Ascii,
}

/// Unicode space separators: graphic, but not printable in Go's sense.
fn is_space_separator(c: char) -> bool {
    matches!(c, '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
}

/// Characters Go's `unicode.IsGraphic` rejects beyond controls: format characters, line and
/// paragraph separators, private use, surrogates and non-characters.
fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}' | '\u{180e}'
            | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
            | '\u{feff}' | '\u{fff9}'..='\u{fffb}' | '\u{e000}'..='\u{f8ff}'
            | '\u{f0000}'..='\u{10ffff}' | '\u{e0001}'..='\u{e007f}')
        || (c as u32 & 0xfffe) == 0xfffe
}

/// Go's `strconv.Quote` family.
pub fn go_quote(s: &str, mode: QuoteMode) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_ascii() => out.push(c),
            c if mode == QuoteMode::Ascii
                || is_invisible(c)
                || (mode == QuoteMode::Printable && is_space_separator(c)) =>
            {
                match c as u32 {
                    v @ ..0x10000 => out.push_str(&format!("\\u{v:04x}")),
                    v => out.push_str(&format!("\\U{v:08x}")),
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.CanBackquote`: whether `s` can be written as one raw string literal.
fn can_backquote(s: &str) -> bool {
    !s.chars().any(|c| c == '`' || c == '\u{feff}' || (c.is_ascii_control() && c != '\t'))
}

/// Go's `strconv.QuotedPrefix`: the quoted string literal `s` begins with.
pub fn quoted_prefix(s: &str) -> Result<String, FuncError> {
    let bad = || FuncError::catchable("invalid syntax");
    let q = s.chars().next().filter(|c| matches!(c, '"' | '\'' | '`')).ok_or_else(bad)?;
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if q == '`' {
            if c == '`' {
                return Ok(s[..=i].to_string());
            }
            continue;
        }
        match c {
            '\n' => return Err(bad()),
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            c if c == q => {
                let prefix = &s[..=i];
                unquote(prefix)?;
                return Ok(prefix.to_string());
            }
            _ => {}
        }
    }
    Err(bad())
}

pub fn look_path(file: &str) -> FuncResult {
    use std::os::unix::fs::PermissionsExt;
    let is_exec =
        |p: &std::path::Path| p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false);
    if file.contains('/') {
        return if is_exec(std::path::Path::new(file)) {
            Ok(Value::str(file))
        } else {
            Err(FuncError::catchable(format!("exec: {file:?}: not an executable file")))
        };
    }
    let path = std::env::var("PATH").unwrap_or_default();
    for dir in path.split(':') {
        let dir = if dir.is_empty() { "." } else { dir };
        let cand = std::path::Path::new(dir).join(file);
        if is_exec(&cand) {
            return Ok(Value::str(cand.display().to_string()));
        }
    }
    Err(FuncError::catchable(format!("exec: {file:?}: executable file not found in $PATH")))
}

pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            c => out.push(c),
        }
    }
    out
}

/// Decodes numeric entities and the common named ones.
pub fn html_unescape(s: &str) -> String {
    const NAMED: &[(&str, char)] = &[
        ("lt", '<'),
        ("gt", '>'),
        ("amp", '&'),
        ("quot", '"'),
        ("apos", '\''),
        ("nbsp", '\u{a0}'),
        ("copy", '©'),
        ("reg", '®'),
        ("trade", '™'),
        ("hellip", '…'),
        ("mdash", '—'),
        ("ndash", '–'),
        ("laquo", '«'),
        ("raquo", '»'),
        ("euro", '€'),
    ];
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let end = after.find(';').filter(|e| *e <= 32);
        let decoded = end.and_then(|e| {
            let ent = &after[..e];
            let c = if let Some(num) = ent.strip_prefix('#') {
                let v = match num.strip_prefix(['x', 'X']) {
                    Some(h) => u32::from_str_radix(h, 16).ok(),
                    None => num.parse().ok(),
                };
                v.map(|v| char::from_u32(v).unwrap_or('\u{fffd}'))
            } else {
                NAMED.iter().find(|(n, _)| *n == ent).map(|(_, c)| *c)
            };
            c.map(|c| (c, e))
        });
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &after[e + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

builtin! {
    /// the path of an executable in $PATH
    fn os_exec_look_path(file: &str) -> FuncResult as "str" {
        look_path(file)
    }
}

builtin! {
    /// escapes < > & ' "
    fn html_escape_string(s: &str) -> String {
        html_escape(s)
    }
}

builtin! {
    /// decodes HTML entities
    fn html_unescape_string(s: &str) -> String {
        html_unescape(s)
    }
}

builtin! {
    /// parses a base-10 int
    fn strconv_atoi(s: &str) -> FuncResult as "int" {
        go_parse_int(s, 10).map(Value::Int)
    }
}

builtin! {
    /// an int in base 10
    fn strconv_itoa(i: i64) -> String {
        i.to_string()
    }
}

builtin! {
    /// "true" or "false"
    fn strconv_format_bool(b: bool) -> String {
        b.to_string()
    }
}

builtin! {
    /// parses a bool
    fn strconv_parse_bool(s: &str) -> FuncResult as "bool" {
        go_parse_bool(s).map(Value::Bool)
    }
}

builtin! {
    /// an int in a base 2..36
    fn strconv_format_int(i: i64, base: i64) -> FuncResult as "str" {
        format_int(i, base)
    }
}

builtin! {
    /// parses an int in a base
    fn strconv_parse_int(s: &str, base: i64, bit_size: i64) -> FuncResult as "int" {
        let n = go_parse_int(s, base)?;
        let bits = bit_size;
        let bits = if bits == 0 { 64 } else { bits };
        if !(1..=64).contains(&bits) {
            return Err(FuncError::catchable(format!("invalid bit size {bits}")));
        }
        if bits < 64 && (n < -(1i64 << (bits - 1)) || n >= 1i64 << (bits - 1)) {
            return Err(FuncError::catchable(format!("parsing {}: value out of range", quote_str(s))));
        }
        Ok(Value::Int(n))
    }
}

builtin! {
    /// parses a float
    fn strconv_parse_float(s: &str, bit_size: i64) -> FuncResult as "float" {
        go_parse_float(s).map(Value::Float)
    }
}

builtin! {
    /// a Go-quoted string
    fn strconv_quote(s: &str) -> String {
        go_quote(s, QuoteMode::Printable)
    }
}

builtin! {
    /// the value of a quoted string
    fn strconv_unquote(s: &str) -> FuncResult as "str" {
        unquote(s).map(Value::str)
    }
}

builtin! {
    /// an environment variable or ""
    fn os_getenv(key: &str) -> String {
        std::env::var(key).unwrap_or_default()
    }
}

builtin! {
    /// replaces $VAR and ${VAR}
    fn os_expand_env(s: &str) -> String {
        expand_env(s, |k| std::env::var(k).unwrap_or_default())
    }
}

builtin! {
    /// the target of a symbolic link
    fn os_readlink(name: &str) -> FuncResult as "str" {
        let n = name;
        std::fs::read_link(n)
            .map(|p| Value::str(p.display().to_string()))
            .map_err(|e| FuncError::catchable(format!("readlink {n}: {e}")))
    }
}

builtin! {
    /// the runtime's version
    fn runtime_version() -> String {
        String::from(concat!("tend-", env!("CARGO_PKG_VERSION")))
    }
}

builtin! {
    /// $GOROOT (tend is not a Go program)
    fn runtime_goroot() -> String {
        std::env::var("GOROOT").unwrap_or_default()
    }
}

builtin! {
    /// the number of usable CPUs
    fn runtime_num_cpu() -> i64 {
        std::thread::available_parallelism().map(|n| n.get() as i64).unwrap_or(1)
    }
}

builtin! {
    /// the host name
    fn os_hostname() -> String {
        crate::core::sys::machine_hostname()
    }
}

builtin! {
    /// the path of the running binary
    fn os_executable() -> FuncResult as "str" {
        std::env::current_exe()
            .map(|p| Value::str(p.display().to_string()))
            .map_err(|e| FuncError::catchable(e.to_string()))
    }
}

builtin! {
    /// the process id
    fn os_getpid() -> i64 {
        std::process::id() as i64
    }
}

builtin! {
    /// the parent process id
    fn os_getppid() -> i64 {
        nix::unistd::getppid().as_raw() as i64
    }
}

builtin! {
    /// the user id
    fn os_getuid() -> i64 {
        nix::unistd::getuid().as_raw() as i64
    }
}

builtin! {
    /// the group id
    fn os_getgid() -> i64 {
        nix::unistd::getgid().as_raw() as i64
    }
}

builtin! {
    /// the working directory
    fn os_getwd() -> FuncResult as "str" {
        std::env::current_dir()
            .map(|p| Value::str(p.display().to_string()))
            .map_err(|e| FuncError::catchable(e.to_string()))
    }
}

builtin! {
    /// the temporary directory
    fn os_temp_dir() -> String {
        std::env::temp_dir().display().to_string()
    }
}

builtin! {
    /// the user's home directory
    fn os_user_home_dir() -> FuncResult as "str" {
        home_dir().map(Value::str)
    }
}

builtin! {
    /// the user's cache directory
    fn os_user_cache_dir() -> FuncResult as "str" {
        match std::env::var("XDG_CACHE_HOME").ok().filter(|d| !d.is_empty()) {
            Some(d) => Ok(Value::str(d)),
            None => home_dir().map(|h| Value::str(format!("{h}/.cache"))),
        }
    }
}

builtin! {
    /// the user's config directory
    fn os_user_config_dir() -> FuncResult as "str" {
        match std::env::var("XDG_CONFIG_HOME").ok().filter(|d| !d.is_empty()) {
            Some(d) => Ok(Value::str(d)),
            None => home_dir().map(|h| Value::str(format!("{h}/.config"))),
        }
    }
}

builtin! {
    /// a Go-quoted string with every non-ASCII character escaped
    fn strconv_quote_to_ascii(s: &str) -> String {
        go_quote(s, QuoteMode::Ascii)
    }
}

builtin! {
    /// a Go-quoted string keeping Unicode graphic characters, spaces included
    fn strconv_quote_to_graphic(s: &str) -> String {
        go_quote(s, QuoteMode::Graphic)
    }
}

builtin! {
    /// the quoted string literal s begins with
    fn strconv_quoted_prefix(s: &str) -> FuncResult as "str" {
        quoted_prefix(s).map(Value::str)
    }
}

builtin! {
    /// whether s can be a raw (backquoted) string without change
    fn strconv_can_backquote(s: &str) -> bool {
        can_backquote(s)
    }
}

builtin! {
    /// dst followed by "true" or "false"
    fn strconv_append_bool(dst: &str, b: bool) -> String {
        format!("{dst}{b}")
    }
}

builtin! {
    /// dst followed by i in a base 2..36
    fn strconv_append_int(dst: &str, i: i64, base: i64) -> FuncResult as "str" {
        let digits = format_int(i, base)?;
        Ok(Value::str(format!("{dst}{}", digits.as_str().unwrap_or_default())))
    }
}

builtin! {
    /// dst followed by s Go-quoted
    fn strconv_append_quote(dst: &str, s: &str) -> String {
        format!("{dst}{}", go_quote(s, QuoteMode::Printable))
    }
}

builtin! {
    /// dst followed by s Go-quoted in ASCII
    fn strconv_append_quote_to_ascii(dst: &str, s: &str) -> String {
        format!("{dst}{}", go_quote(s, QuoteMode::Ascii))
    }
}

builtin! {
    /// dst followed by s Go-quoted, graphic characters kept
    fn strconv_append_quote_to_graphic(dst: &str, s: &str) -> String {
        format!("{dst}{}", go_quote(s, QuoteMode::Graphic))
    }
}

builtin! {
    /// the effective group id
    fn os_getegid() -> i64 {
        nix::unistd::getegid().as_raw() as i64
    }
}

builtin! {
    /// the effective user id
    fn os_geteuid() -> i64 {
        nix::unistd::geteuid().as_raw() as i64
    }
}

builtin! {
    /// the memory page size in bytes
    fn os_getpagesize() -> i64 {
        nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE).ok().flatten().unwrap_or(4096)
    }
}

builtin! {
    /// creates a new temporary directory (mode 0700) and returns its path
    fn os_mkdir_temp(dir: &str, pattern: &str) -> FuncResult as "str" {
        mkdir_temp(dir, pattern).map(Value::str)
    }
}

builtin! {
    /// a file's contents
    fn os_read_file(name: &str) -> FuncResult as "str" {
        std::fs::read(name)
            .map(|b| Value::str(String::from_utf8_lossy(&b)))
            .map_err(|e| FuncError::catchable(format!("open {name}: {e}")))
    }
}

builtin! {
    /// the number of CPUs the runtime uses (tend sizes its own threads: n changes nothing)
    fn runtime_gomaxprocs(n: i64) -> i64 {
        std::thread::available_parallelism().map(|n| n.get() as i64).unwrap_or(1)
    }
}

builtin! {
    /// the number of calls into C: tend makes none through cgo
    fn runtime_num_cgo_call() -> i64 {
        0
    }
}

builtin! {
    /// the number of threads of this process (tend's counterpart of goroutines)
    fn runtime_num_goroutine() -> i64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Threads:").and_then(|n| n.trim().parse().ok())))
            .unwrap_or(1)
    }
}

builtin! {
    /// the next chunk of an execution trace: empty, as no trace is running
    fn runtime_read_trace() -> String {
        String::new()
    }
}

builtin! {
    /// sets the mutex profiling rate and returns the previous one: tend has none, so 0
    fn runtime_set_mutex_profile_fraction(rate: i64) -> i64 {
        0
    }
}

builtin! {
    /// how many bytes of this thread's stack trace fit in buf
    fn runtime_stack(buf: &str, all: bool) -> i64 {
        let trace = std::backtrace::Backtrace::force_capture().to_string();
        trace.len().min(buf.len()) as i64
    }
}
