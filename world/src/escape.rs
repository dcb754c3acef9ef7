//! Names as one path segment of a key or a file: the local store names its files this way,
//! the etcd backend its key segments.

/// A key as one path segment: bytes outside `[A-Za-z0-9._-]` become `%xx`. The local store
/// names files this way, the etcd backend its key segments.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

/// The inverse of [`escape`] (invalid escapes are kept as they are).
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_and_leaves_no_slash() {
        for s in ["plain", "a/b", "h 2", "%41", "ünï", ""] {
            assert!(!escape(s).contains('/'));
            assert_eq!(unescape(&escape(s)), s);
        }
        assert_eq!(escape("a/b"), "a%2fb");
    }
}
