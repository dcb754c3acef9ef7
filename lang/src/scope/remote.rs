//! Imports by URL (`import "git://example.com/me/mgmt-web/"`): the clone URL, the ref the
//! import names, and the directory the module has in a module path.

/// A parsed import by URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RemoteImport {
    /// What git clones: the import without its ref.
    pub(crate) url: String,
    /// The branch, tag or commit the import names (`#v2` or `?ref=v2`); `None`: the
    /// repository's default branch.
    pub(crate) reference: Option<String>,
    /// The module's directory in a module path, relative, ending `/`: the host and the
    /// URL's path (`example.com/me/mgmt-web/`), as mgmt places it; a named ref adds
    /// `@REF` so that two refs of one module can sit side by side.
    pub(crate) dir: String,
}

impl RemoteImport {
    pub(crate) fn parse(import: &str) -> Result<RemoteImport, String> {
        let (scheme, rest) = import.split_once("://").ok_or("it is not a URL")?;
        if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
            return Err(format!("`{scheme}` is not a URL scheme"));
        }
        let (base, reference) = split_ref(rest)?;
        let (authority, path) = match base.find('/') {
            Some(i) => (&base[..i], &base[i..]),
            None => (base, ""),
        };
        // `user@host:port` as a URL's authority: the module's directory is named by the host.
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let host = host.split(':').next().unwrap_or(host);
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        if segments.is_empty() {
            return Err("the URL has no path".into());
        }
        if segments.iter().any(|s| *s == "." || *s == "..") || path.contains("//") {
            return Err(format!("the URL's path `{path}` is not clean"));
        }
        let mut dir = String::new();
        if !host.is_empty() {
            dir.push_str(host);
            dir.push('/');
        }
        dir.push_str(&segments.join("/"));
        if let Some(r) = &reference {
            // A ref like `release/1.0` stays one directory.
            dir.push('@');
            dir.push_str(&r.replace('%', "%25").replace('/', "%2F"));
        }
        dir.push('/');
        Ok(RemoteImport { url: format!("{scheme}://{base}"), reference, dir })
    }
}

/// Splits `#REF` or `?ref=REF` off the URL.
fn split_ref(rest: &str) -> Result<(&str, Option<String>), String> {
    let (base, reference) = if let Some((base, frag)) = rest.split_once('#') {
        (base, Some(frag.to_string()))
    } else if let Some((base, query)) = rest.split_once('?') {
        let value = query.split('&').find_map(|kv| kv.strip_prefix("ref=")).ok_or("its query names no `ref=`")?;
        (base, Some(value.to_string()))
    } else {
        (rest, None)
    };
    match reference {
        Some(r) if r.is_empty() || r.starts_with('-') || r.contains("..") || r.chars().any(char::is_whitespace) => {
            Err(format!("`{r}` is not a ref (a branch, a tag or a commit)"))
        }
        r => Ok((base, r)),
    }
}

/// The import without its ref, for naming its namespace.
pub(crate) fn without_ref(import: &str) -> &str {
    match import.find(['#', '?']) {
        Some(i) if import.contains("://") => &import[..i],
        _ => import,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_mgmts_directories_and_refs_their_own() {
        let r = RemoteImport::parse("git://github.com/purpleidea/mgmt-example1/").unwrap();
        assert_eq!(r.url, "git://github.com/purpleidea/mgmt-example1/");
        assert_eq!(r.dir, "github.com/purpleidea/mgmt-example1/");
        assert_eq!(r.reference, None);
        let r = RemoteImport::parse("git://127.0.0.1:9418/mod1#v2").unwrap();
        assert_eq!(
            (r.url.as_str(), r.dir.as_str(), r.reference.as_deref()),
            ("git://127.0.0.1:9418/mod1", "127.0.0.1/mod1@v2/", Some("v2"))
        );
        let r = RemoteImport::parse("file:///srv/git/web/?ref=release/1.0").unwrap();
        assert_eq!(r.url, "file:///srv/git/web/");
        assert_eq!(r.dir, "srv/git/web@release%2F1.0/");
        assert!(RemoteImport::parse("git:////home/x/").is_err());
        assert!(RemoteImport::parse("git://host/a/../b/").is_err());
        assert!(RemoteImport::parse("git://host/").is_err());
        assert!(RemoteImport::parse("git://host/x#").is_err());
        assert!(RemoteImport::parse("git://host/x#--upload-pack=evil").is_err());
        assert_eq!(without_ref("git://h/mgmt-web/#v2"), "git://h/mgmt-web/");
    }
}
