//! The `net/http` package: `http.response(NAME)`, what the `http:client` resource called
//! NAME last got, as `struct{status int; output str}` (status 0 before anything, -1 for a
//! failure without an HTTP status; output the downloaded body), updated on each outcome.

use super::typed;
use crate::api::FuncError;
use crate::registry::Registry;
use crate::streaming;
use lang::value::Value;

/// The namespace `http:client` publishes under (see `resources::http::client`).
const RESPONSES: &str = "http:client";

pub fn register(r: &mut Registry) {
    typed(r, "net/http.response", response::DEF);
}

/// The response struct for what was published under `uid`.
fn read(published: Option<Value>, uid: &str) -> Result<Value, FuncError> {
    let (status, path) = match &published {
        Some(v) => (
            v.field("status").and_then(Value::as_int).unwrap_or(0),
            v.field("path").and_then(Value::as_str).unwrap_or_default().to_string(),
        ),
        None => (0, String::new()),
    };
    let output = if path.is_empty() {
        String::new()
    } else {
        let bytes = std::fs::read(&path)
            .map_err(|e| FuncError::catchable(format!("could not read the http output of `{uid}` ({path}): {e}")))?;
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Ok(Value::strukt(vec![("status".into(), Value::Int(status)), ("output".into(), Value::str(output))]))
}

streaming! {
    /// what the http:client resource of this name last got: struct{status int; output str}
    fn response(em, uid: String) -> "struct{status int; output str}" {
        if uid.is_empty() {
            em.send(Err(FuncError::catchable("http.response: can't use an empty uid"))).await;
            return;
        }
        crate::core::value::follow_store(em, move |src| read(src.get_in(RESPONSES, &uid), &uid)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_published_response_reads_its_file() {
        assert_eq!(read(None, "x").unwrap().field("status"), Some(&Value::Int(0)));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("body");
        std::fs::write(&file, "hello").unwrap();
        let published = Value::strukt(vec![
            ("status".into(), Value::Int(200)),
            ("path".into(), Value::str(file.display().to_string())),
        ]);
        let r = read(Some(published), "x").unwrap();
        assert_eq!(r.field("output"), Some(&Value::str("hello")));
        let failed = Value::strukt(vec![("status".into(), Value::Int(-1)), ("path".into(), Value::str(""))]);
        assert_eq!(read(Some(failed), "x").unwrap().field("output"), Some(&Value::str("")));
    }
}
