//! `Text`: a string param shared with the value it was decoded from.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A string param as a running resource keeps it: the language value's own `Arc<str>` (no
/// copy is made when decoding), or nothing for the empty string, which then costs no
/// allocation. It reads as a `&str` (`""` when empty), in 16 bytes where a `String` takes 24
/// plus its own copy of the text.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Text(Option<Arc<str>>);

impl Text {
    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }

    /// The shared text, without a copy (`None` when empty).
    pub fn shared(&self) -> Option<&Arc<str>> {
        self.0.as_ref()
    }
}

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<std::path::Path> for Text {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(self.as_str())
    }
}

impl AsRef<std::ffi::OsStr> for Text {
    fn as_ref(&self) -> &std::ffi::OsStr {
        std::ffi::OsStr::new(self.as_str())
    }
}

impl From<Arc<str>> for Text {
    fn from(text: Arc<str>) -> Text {
        Text((!text.is_empty()).then_some(text))
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Text {
        Text((!text.is_empty()).then(|| Arc::from(text)))
    }
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        Text((!text.is_empty()).then(|| Arc::from(text)))
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_holds_nothing_and_reads_as_empty() {
        assert_eq!(Text::from("").shared(), None);
        assert_eq!(Text::default(), Text::from(String::new()));
        assert_eq!(&*Text::default(), "");
        assert_eq!(std::mem::size_of::<Text>(), 16);
    }

    #[test]
    fn text_shares_the_values_string() {
        let value: Arc<str> = Arc::from("0644");
        let text = Text::from(value.clone());
        assert!(Arc::ptr_eq(text.shared().unwrap(), &value));
        assert_eq!(text, "0644");
        assert_eq!(text.to_string(), "0644");
    }
}
