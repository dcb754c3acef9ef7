//! Text the kinds write: markup escaped once for HTML and XML (the `http:server:ui`
//! pages, libvirt's definitions), and a file's text edited by whole lines (`line`,
//! `ssh:authorized_key`).

/// `s` escaped for an HTML or XML element or attribute (quoted either way): the numeric
/// forms of the quotes, which both languages read.
pub fn escape_markup(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` with `lines` added at its end, each ending in a newline (and the last line of
/// `text` ended first if it was not).
pub fn with_lines_added<'a>(text: &str, lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// The text of the lines `kept`, each ending in a newline (empty when none is).
pub fn of_lines(kept: &[&str]) -> String {
    let mut out = kept.join("\n");
    if !kept.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_for_both_quotes() {
        assert_eq!(escape_markup(r#"<a href="x">'&'</a>"#), "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn lines_are_added_after_a_final_newline() {
        assert_eq!(with_lines_added("a", ["b", "c"]), "a\nb\nc\n");
        assert_eq!(with_lines_added("a\n", ["b"]), "a\nb\n");
        assert_eq!(with_lines_added("", ["b"]), "b\n");
        assert_eq!(of_lines(&["a", "b"]), "a\nb\n");
        assert_eq!(of_lines(&[]), "");
    }
}
