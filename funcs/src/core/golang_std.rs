//! The other `golang/*` packages the corpus uses: `strconv`, `path`,
//! `path/filepath`, `math`, `math/rand`, `os`, `os/exec`, `runtime`, `html`.

use super::convert::{go_parse_bool, go_parse_float, go_parse_int};
use super::typed;
use crate::api::{FuncError, FuncResult};
use crate::builtin;
use crate::registry::Registry;
use lang::value::{Value, quote_str};
use rand::Rng;

pub fn register(r: &mut Registry) {
    strconv(r);
    for pkg in ["path", "path/filepath"] {
        paths(r, pkg);
    }
    typed(r, "golang/path/filepath.abs", path_filepath_abs::DEF);
    typed(r, "golang/path/filepath.to_slash", path_filepath_to_slash::DEF);
    typed(r, "golang/path/filepath.from_slash", path_filepath_from_slash::DEF);
    math(r);
    os(r);
    typed(r, "golang/os/exec.look_path", os_exec_look_path::DEF);
    typed(r, "golang/runtime.version", runtime_version::DEF);
    typed(r, "golang/runtime.goroot", runtime_goroot::DEF);
    typed(r, "golang/runtime.num_cpu", runtime_num_cpu::DEF);
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

/// Go's `path.Clean`.
pub fn go_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

pub fn go_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

pub fn go_dir(p: &str) -> String {
    let i = p.rfind('/').map(|i| i + 1).unwrap_or(0);
    go_clean(&p[..i])
}

pub fn go_ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        match c {
            '/' => break,
            '.' => return p[i..].to_string(),
            _ => {}
        }
    }
    String::new()
}

fn paths(r: &mut Registry, pkg: &str) {
    typed(r, format!("golang/{pkg}.base"), paths_base::DEF);
    typed(r, format!("golang/{pkg}.clean"), paths_clean::DEF);
    typed(r, format!("golang/{pkg}.dir"), paths_dir::DEF);
    typed(r, format!("golang/{pkg}.ext"), paths_ext::DEF);
    typed(r, format!("golang/{pkg}.is_abs"), paths_is_abs::DEF);
    typed(r, format!("golang/{pkg}.join"), paths_join::DEF);
}

fn math(r: &mut Registry) {
    float_fns(r);
    typed(r, "golang/math.inf", math_inf::DEF);
    typed(r, "golang/math.nan", math_nan::DEF);
    typed(r, "golang/math.is_nan", math_is_nan::DEF);
    typed(r, "golang/math.is_inf", math_is_inf::DEF);
    typed(r, "golang/math.signbit", math_signbit::DEF);
    typed(r, "golang/math/rand.int", math_rand_int::DEF);
    typed(r, "golang/math/rand.intn", math_rand_intn::DEF);
    typed(r, "golang/math/rand.float64", math_rand_float64::DEF);
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
    /// an absolute, cleaned path
    fn path_filepath_abs(path: &str) -> FuncResult as "str" {
        let p = path;
        if p.starts_with('/') {
            return Ok(Value::str(go_clean(p)));
        }
        let wd = std::env::current_dir().map_err(|e| FuncError::catchable(e.to_string()))?;
        Ok(Value::str(go_clean(&format!("{}/{p}", wd.display()))))
    }
}

builtin! {
    /// the path with / separators
    fn path_filepath_to_slash(path: &str) -> String {
        String::from(path)
    }
}

builtin! {
    /// the path with OS separators
    fn path_filepath_from_slash(path: &str) -> String {
        String::from(path)
    }
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
        quote_str(s)
    }
}

builtin! {
    /// the value of a quoted string
    fn strconv_unquote(s: &str) -> FuncResult as "str" {
        unquote(s).map(Value::str)
    }
}

builtin! {
    /// the last element of a path
    fn paths_base(path: &str) -> String {
        go_base(path)
    }
}

builtin! {
    /// the shortest equivalent path
    fn paths_clean(path: &str) -> String {
        go_clean(path)
    }
}

builtin! {
    /// all but the last element
    fn paths_dir(path: &str) -> String {
        go_dir(path)
    }
}

builtin! {
    /// the file name extension
    fn paths_ext(path: &str) -> String {
        go_ext(path)
    }
}

builtin! {
    /// whether the path is absolute
    fn paths_is_abs(path: &str) -> bool {
        path.starts_with('/')
    }
}

builtin! {
    /// joins and cleans path elements
    fn paths_join(elem: Vec<&str>) -> FuncResult as "str" {
        let parts: Vec<&str> = elem.into_iter().filter(|s| !s.is_empty()).collect();
        Ok(Value::str(if parts.is_empty() { String::new() } else { go_clean(&parts.join("/")) }))
    }
}

builtin! {
    /// +Inf or -Inf
    fn math_inf(sign: i64) -> f64 {
        if sign >= 0 { f64::INFINITY } else { f64::NEG_INFINITY }
    }
}

builtin! {
    /// whether f is NaN
    fn math_is_nan(f: f64) -> bool {
        f.is_nan()
    }
}

builtin! {
    /// whether f is an infinity of the sign
    fn math_is_inf(f: f64, sign: i64) -> FuncResult as "bool" {
        let (f, s) = (f, sign);
        Ok(Value::Bool((s >= 0 && f == f64::INFINITY) || (s <= 0 && f == f64::NEG_INFINITY)))
    }
}

builtin! {
    /// whether x is negative or -0
    fn math_signbit(x: f64) -> bool {
        x.is_sign_negative()
    }
}

builtin! {
    /// a random int in [0, n)
    fn math_rand_intn(n: i64) -> FuncResult as "int" {
        if n <= 0 {
            return Err(FuncError::fatal("invalid argument to Intn"));
        }
        Ok(Value::Int(rand::rng().random_range(0..n)))
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
    /// not-a-number
    fn math_nan() -> f64 {
        f64::NAN
    }
}

builtin! {
    /// a non-negative random int
    fn math_rand_int() -> i64 {
        rand::rng().random_range(0..i64::MAX)
    }
}

builtin! {
    /// a random float in [0, 1)
    fn math_rand_float64() -> f64 {
        rand::rng().random::<f64>()
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

/// The float functions of Go's `math`: each a typed built-in, registered together.
macro_rules! float_fns {
    ($($name:literal => $module:ident($($x:ident),+) = $e:expr, $doc:literal;)*) => {
        $(
            builtin! {
                #[doc = $doc]
                fn $module($($x: f64),+) -> f64 {
                    ($e)($($x),+)
                }
            }
        )*

        fn float_fns(r: &mut Registry) {
            $(typed(r, concat!("golang/math.", $name), $module::DEF);)*
        }
    };
}

float_fns! {
    "abs" => math_abs(x) = f64::abs, "absolute value";
    "cbrt" => math_cbrt(x) = f64::cbrt, "cube root";
    "ceil" => math_ceil(x) = f64::ceil, "rounds up";
    "floor" => math_floor(x) = f64::floor, "rounds down";
    "trunc" => math_trunc(x) = f64::trunc, "rounds toward zero";
    "round" => math_round(x) = f64::round, "rounds half away from zero";
    "round_to_even" => math_round_to_even(x) = f64::round_ties_even, "rounds half to even";
    "sqrt" => math_sqrt(x) = f64::sqrt, "square root (NaN for negatives)";
    "exp" => math_exp(x) = f64::exp, "e**x";
    "log" => math_log(x) = f64::ln, "natural logarithm";
    "log2" => math_log2(x) = f64::log2, "base-2 logarithm";
    "log10" => math_log10(x) = f64::log10, "base-10 logarithm";
    "sin" => math_sin(x) = f64::sin, "sine";
    "cos" => math_cos(x) = f64::cos, "cosine";
    "tan" => math_tan(x) = f64::tan, "tangent";
    "pow" => math_pow(x, y) = f64::powf, "x**y";
    "mod" => math_mod(x, y) = |x: f64, y: f64| x % y, "remainder of x/y with the sign of x";
    "max" => math_max(x, y) = |x: f64, y: f64| if x.is_nan() || y.is_nan() { f64::NAN } else { x.max(y) }, "the larger";
    "min" => math_min(x, y) = |x: f64, y: f64| if x.is_nan() || y.is_nan() { f64::NAN } else { x.min(y) }, "the smaller";
    "hypot" => math_hypot(x, y) = f64::hypot, "sqrt(x*x + y*y)";
    "remainder" => math_remainder(x, y) = |x: f64, y: f64| x - (x / y).round_ties_even() * y, "IEEE 754 remainder";
}
