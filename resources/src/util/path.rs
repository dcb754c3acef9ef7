//! Paths a resource may name: absolute and in normal form (no `.`, `..` or empty
//! component), so each place on disk has one spelling and a path never reaches outside
//! what it names (`/srv/x/..` is `/srv/`, which a forced replace would empty).

/// What comes between a refused path and its normal form in the message (`tend check`
/// turns the rest into a note).
pub const NORMAL_FORM: &str = "; paths must be in normal form, and its normal form is ";

/// Why `path` is refused, or `Ok` when it is absolute and in normal form. One trailing
/// `/` is allowed (it marks a directory); `/` itself is in normal form.
pub fn check(path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!("path `{}` must be absolute", quote(path)));
    }
    let body = path.strip_suffix('/').unwrap_or(path);
    let bad = body.split('/').skip(1).find(|part| matches!(*part, "" | "." | ".."));
    match bad {
        None => Ok(()),
        Some(part) => {
            let what =
                if part.is_empty() { "an empty component (`//`)".to_string() } else { format!("a `{part}` component") };
            Err(format!("path `{}` has {what}{NORMAL_FORM}`{}`", quote(path), quote(&normalize(path))))
        }
    }
}

/// [`check`] for a param other than the path, named in the message.
pub fn check_param(field: &str, path: &str) -> Result<(), String> {
    check(path).map_err(|e| format!("{field}: {e}"))
}

/// The lexical normal form of an absolute path: empty and `.` components dropped, each
/// `..` taking the component before it (`/..` is `/`). A path that named a directory
/// (trailing `/`, or ending in `.` or `..`) keeps one trailing `/`.
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let dir = matches!(path.rsplit('/').next(), Some("" | "." | ".."));
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            name => parts.push(name),
        }
    }
    let mut out = String::with_capacity(path.len());
    for part in &parts {
        out.push('/');
        out.push_str(part);
    }
    if dir || out.is_empty() {
        out.push('/');
    }
    out
}

/// At most 200 bytes of `text` (cut at a character boundary), for messages.
fn quote(text: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 200;
    if text.len() <= MAX {
        return text.into();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_paths_pass() {
        for path in ["/", "/x", "/x/", "/srv/a.conf", "/srv/dir/", "/a/.hidden", "/a/..b", "/a/b.."] {
            assert_eq!(check(path), Ok(()), "{path}");
        }
    }

    /// Defect 1 and 5 of issue 44: a `..`, `.` or empty component is refused, with the
    /// normal form in the message.
    #[test]
    fn dotted_and_doubled_paths_are_refused_with_their_normal_form() {
        for (path, normal) in [
            ("/srv/sb/victim/..", "/srv/sb/"),
            ("/./x", "/x"),
            ("//x", "/x"),
            ("/x//", "/x/"),
            ("/a/./b/", "/a/b/"),
            ("/a/b/.", "/a/b/"),
            ("/..", "/"),
            ("/a/../../b", "/b"),
        ] {
            let err = check(path).expect_err(path);
            assert!(err.ends_with(&format!("{NORMAL_FORM}`{normal}`")), "{path}: {err}");
            assert_eq!(normalize(path), normal, "{path}");
        }
        assert!(check("relative/x").unwrap_err().contains("absolute"));
        assert!(check("").unwrap_err().contains("absolute"));
    }

    #[test]
    fn a_huge_path_is_quoted_by_a_prefix() {
        let path = format!("/{}/../x", "a".repeat(100_000));
        let err = check(&path).unwrap_err();
        assert!(err.len() < 600, "{} bytes", err.len());
    }
}
