//! A language-server client for tests and benchmarks: spawns a server process and speaks
//! JSON-RPC to it over its stdin and stdout, as an editor does.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// How long any one answer may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

pub struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: mpsc::Receiver<Value>,
    /// Notifications received while waiting for something else, oldest first.
    backlog: Vec<Value>,
    next_id: i64,
}

impl Client {
    /// Starts `program args…` and completes the handshake; returns the client and the
    /// server's `initialize` result.
    pub fn start(program: &str, args: &[&str], root: &std::path::Path) -> (Client, Value) {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, incoming) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(msg) = read_message(&mut reader) {
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        let mut client = Client { child, stdin, incoming, backlog: Vec::new(), next_id: 1 };
        let root_uri = format!("file://{}", root.display());
        let init = client.request(
            "initialize",
            json!({"processId": null, "rootUri": root_uri, "capabilities": {}, "workspaceFolders": null}),
        );
        client.notify("initialized", json!({}));
        (client, init)
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its response; the result, or the error object as
    /// `Err`.
    pub fn try_request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let msg = self.next();
            if msg.get("id") == Some(&json!(id)) && msg.get("method").is_none() {
                return match msg.get("error") {
                    Some(e) => Err(e.clone()),
                    None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                };
            }
            self.backlog.push(msg);
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.try_request(method, params).unwrap_or_else(|e| panic!("{method} failed: {e}"))
    }

    /// The next diagnostics published for `uri` (taken from the backlog first).
    pub fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let wanted = |m: &Value| {
            m.get("method") == Some(&json!("textDocument/publishDiagnostics")) && m["params"]["uri"] == json!(uri)
        };
        if let Some(at) = self.backlog.iter().position(wanted) {
            let msg = self.backlog.remove(at);
            return msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default();
        }
        loop {
            let msg = self.next();
            if wanted(&msg) {
                return msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default();
            }
            self.backlog.push(msg);
        }
    }

    /// Drops the notifications received so far.
    pub fn clear_backlog(&mut self) {
        self.backlog.clear();
        while self.incoming.try_recv().is_ok() {}
    }

    /// `shutdown`, then `exit`; the server's exit status.
    pub fn shutdown(mut self) -> ExitStatus {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        drop(self.stdin);
        self.child.wait().expect("the server exits")
    }

    fn next(&mut self) -> Value {
        self.incoming.recv_timeout(PATIENCE).expect("the server answers in time")
    }

    /// Writes `bytes` to the server as they are (a malformed frame, for hostile tests).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("the server reads");
        self.stdin.flush().expect("flush");
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the server process still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn send(&mut self, msg: &Value) {
        let body = msg.to_string();
        let framed = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.stdin.write_all(framed.as_bytes()).expect("the server reads");
        self.stdin.flush().expect("flush");
    }
}

/// One framed message, or `None` at the end of the stream.
fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length:") {
            length = n.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}
