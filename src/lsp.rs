//! `tend lsp`: a language server over stdio. Each open document is compiled as a
//! program's entry file (its directory is the program's root; open documents shadow the
//! files on disk), after edits settle for [`DEBOUNCE`]; every error and warning of the
//! document is published. Requests are answered from `lang::ide` on the current text.

mod convert;
mod handlers;
pub mod transport;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use lang::catalog::Catalog;
use lang::ide::Analysis;
use lang::loader::Loader;
use lsp_server::{Connection, Message, Notification, Request, Response};
use lsp_types::PublishDiagnosticsParams;
use lsp_types::notification::Notification as _;

use crate::loader::FsLoader;

/// How long edits must pause before a document is compiled again.
pub const DEBOUNCE: Duration = Duration::from_millis(40);

/// Serves one client on stdin and stdout until it exits.
pub fn run() -> ExitCode {
    let (connection, io) = transport::stdio();
    let result = serve(&connection);
    drop(connection);
    let joined = io.join();
    match (result, joined) {
        (Ok(()), Ok(())) => ExitCode::SUCCESS,
        (Err(e), _) => {
            crate::stderr::line(format_args!("error: tend lsp: {e}"));
            ExitCode::from(1)
        }
        (_, Err(e)) => {
            crate::stderr::line(format_args!("error: tend lsp: {e}"));
            ExitCode::from(1)
        }
    }
}

/// The handshake, then the main loop until `shutdown` and `exit`.
pub fn serve(connection: &Connection) -> Result<(), String> {
    let (id, _params) = connection.initialize_start().map_err(|e| e.to_string())?;
    let result = lsp_types::InitializeResult {
        capabilities: handlers::capabilities(),
        server_info: Some(lsp_types::ServerInfo {
            name: "tend".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
    };
    let result = serde_json::to_value(result).map_err(|e| e.to_string())?;
    connection.initialize_finish(id, result).map_err(|e| e.to_string())?;
    let (_, catalog) = crate::compile::catalog(None);
    Server { sender: connection.sender.clone(), catalog, docs: BTreeMap::new(), dirty: BTreeSet::new(), due: None }
        .main_loop(connection)
}

/// One open document.
struct Doc {
    /// Where it lives on disk (an unsaved buffer still has a path).
    path: PathBuf,
    text: String,
    /// The analysis of `text` (`None` until its first compile).
    analysis: Option<Rc<Analysis>>,
    /// The last analysis that had types, for completion while the text does not compile.
    typed: Option<Rc<Analysis>>,
    /// The other files its last diagnostics were published for (URIs).
    published: BTreeSet<String>,
}

struct Server {
    sender: crossbeam_channel::Sender<Message>,
    catalog: Catalog,
    /// By URI (the text: `Uri` has interior mutability, which a map key must not).
    docs: BTreeMap<String, Doc>,
    /// Documents edited since their last compile, and when to compile them.
    dirty: BTreeSet<String>,
    due: Option<Instant>,
}

impl Server {
    fn main_loop(mut self, connection: &Connection) -> Result<(), String> {
        loop {
            let msg = match self.due {
                Some(due) => match connection.receiver.recv_timeout(due.saturating_duration_since(Instant::now())) {
                    Ok(msg) => Some(msg),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return Ok(()),
                },
                None => match connection.receiver.recv() {
                    Ok(msg) => Some(msg),
                    Err(_) => return Ok(()),
                },
            };
            match msg {
                None => self.flush(),
                Some(Message::Request(req)) => {
                    if connection.handle_shutdown(&req).map_err(|e| e.to_string())? {
                        return Ok(());
                    }
                    // Answers are about the text as it is now.
                    self.flush();
                    let response = self.guarded(&req);
                    let _ = self.sender.send(response.into());
                }
                Some(Message::Notification(note)) => self.notification(note),
                Some(Message::Response(_)) => {}
            }
        }
    }

    /// Answers a request; a bug in a handler is an error response, never a dead server.
    fn guarded(&self, req: &Request) -> Response {
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handlers::request(self, req)));
        answer.unwrap_or_else(|_| {
            Response::new_err(
                req.id.clone(),
                lsp_server::ErrorCode::InternalError as i32,
                format!("tend lsp failed on {}", req.method),
            )
        })
    }

    fn notification(&mut self, note: Notification) {
        use lsp_types::notification::{
            DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
            DidSaveTextDocument,
        };
        match note.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(note.params) else { return };
                let doc = p.text_document;
                let Some(path) = convert::path_of(&doc.uri) else { return };
                let fresh = Doc { path, text: doc.text, analysis: None, typed: None, published: BTreeSet::new() };
                self.docs.insert(doc.uri.to_string(), fresh);
                // Opening shows the diagnostics at once.
                self.dirty.insert(doc.uri.to_string());
                self.flush();
            }
            DidChangeTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(note.params) else {
                    return;
                };
                let Some(doc) = self.docs.get_mut(p.text_document.uri.as_str()) else { return };
                for change in p.content_changes {
                    match change.range {
                        Some(range) => {
                            let lines = convert::Lines::new(&doc.text);
                            let (from, to) = (lines.offset(range.start) as usize, lines.offset(range.end) as usize);
                            doc.text.replace_range(from..to.max(from), &change.text);
                        }
                        None => doc.text = change.text,
                    }
                }
                self.dirty.insert(p.text_document.uri.to_string());
                self.due = Some(Instant::now() + DEBOUNCE);
            }
            DidCloseTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(note.params) else {
                    return;
                };
                let uri = p.text_document.uri.to_string();
                if let Some(doc) = self.docs.remove(&uri) {
                    for uri in doc.published.into_iter().chain([uri.clone()]) {
                        self.publish(&uri, Vec::new());
                    }
                }
                self.dirty.remove(&uri);
            }
            // A file saved or changed on disk may be imported by any open document.
            DidSaveTextDocument::METHOD | DidChangeWatchedFiles::METHOD => {
                self.dirty.extend(self.docs.keys().cloned());
                self.due = Some(Instant::now() + DEBOUNCE);
            }
            _ => {}
        }
    }

    /// Compiles every edited document and publishes its diagnostics.
    fn flush(&mut self) {
        self.due = None;
        for uri in std::mem::take(&mut self.dirty) {
            let Some(doc) = self.docs.get(&uri) else { continue };
            let analysis = self.analyze(doc);
            let by_uri = handlers::diagnostics(&uri, &analysis, &self.docs);
            let Some(doc) = self.docs.get_mut(&uri) else { continue };
            let others: BTreeSet<String> = by_uri.keys().filter(|u| **u != uri).cloned().collect();
            let stale: Vec<String> = doc.published.difference(&others).cloned().collect();
            doc.published = others;
            let analysis = Rc::new(analysis);
            if analysis.graph.as_ref().is_some_and(|g| !g.types.is_empty()) {
                doc.typed = Some(analysis.clone());
            }
            doc.analysis = Some(analysis);
            for uri in stale {
                self.publish(&uri, Vec::new());
            }
            // The document's own (maybe none, which clears what it showed) and its imports'.
            for (uri, diags) in by_uri {
                self.publish(&uri, diags);
            }
        }
    }

    fn analyze(&self, doc: &Doc) -> Analysis {
        let root = doc.path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let name = doc.path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let program = crate::loader::ProgramPath::deployed(root.clone(), format!("/{name}"));
        let program = crate::loader::ProgramPath { modules: crate::modules::chosen(), ..program };
        let loader = Overlay { fs: FsLoader::of(&program), root: &root, docs: &self.docs };
        let mut analysis = lang::ide::analyze(&program.entry, &loader, &self.catalog);
        crate::loader::name_files(&mut analysis.sources, &program);
        analysis
    }

    fn publish(&self, uri: &str, diagnostics: Vec<lsp_types::Diagnostic>) {
        let Ok(uri) = uri.parse() else { return };
        let params = PublishDiagnosticsParams { uri, diagnostics, version: None };
        let note = Notification::new(lsp_types::notification::PublishDiagnostics::METHOD.to_string(), params);
        let _ = self.sender.send(note.into());
    }
}

/// The files on disk, with the open documents' unsaved text in place of theirs.
struct Overlay<'a> {
    fs: FsLoader,
    root: &'a Path,
    docs: &'a BTreeMap<String, Doc>,
}

impl Loader for Overlay<'_> {
    fn read(&self, path: &str) -> Option<String> {
        let real = self.root.join(path.trim_start_matches('/'));
        match self.docs.values().find(|d| d.path == real) {
            Some(doc) => Some(doc.text.clone()),
            None => self.fs.read(path),
        }
    }
    fn is_dir(&self, path: &str) -> bool {
        self.fs.is_dir(path)
    }
    fn why_unreadable(&self, path: &str) -> Option<String> {
        self.fs.why_unreadable(path)
    }
    fn subdirs(&self, dir: &str) -> Vec<String> {
        self.fs.subdirs(dir)
    }
    fn shown(&self, path: &str) -> String {
        self.fs.shown(path)
    }
    fn module_path(&self) -> Option<String> {
        self.fs.module_path()
    }
}
