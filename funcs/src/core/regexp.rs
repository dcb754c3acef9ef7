//! The `regexp` package.

use super::typed;
use crate::api::FuncError;
use crate::builtin;
use crate::registry::Registry;

pub fn register(r: &mut Registry) {
    typed(r, "regexp.match", matches::DEF);
}

builtin! {
    /// whether s matches a RE2 pattern
    fn matches(pattern: &str, s: &str) -> Result<bool, FuncError> {
        let re = regex::Regex::new(pattern).map_err(|e| FuncError::fatal(format!("bad regexp {pattern:?}: {e}")))?;
        Ok(re.is_match(s))
    }
}
