//! `tend lsp` spoken to as an editor does, over JSON-RPC on its stdin and stdout: the
//! handshake, diagnostics on open and after each edit (a type error, then its fix),
//! hover, definition, references, completion, symbols, formatting, highlighting, and a
//! clean shutdown.

use serde_json::{Value, json};
use testkit::lsp::Client;

const TEND: &str = env!("CARGO_BIN_EXE_tend");

const PROGRAM: &str = "import \"strings\"\n\n$greeting = \"hello\"\nfile \"/tmp/tend-lsp-test\" {\n\tcontent => strings.to_upper($greeting),\n}\n";

/// The position of the first `needle` in `text` (UTF-16 columns; the texts here are ASCII).
fn pos(text: &str, needle: &str) -> Value {
    let at = text.find(needle).unwrap_or_else(|| panic!("{needle:?} in the text"));
    let line = text[..at].matches('\n').count();
    let col = at - text[..at].rfind('\n').map_or(0, |n| n + 1);
    json!({"line": line, "character": col})
}

fn doc_pos(uri: &str, text: &str, needle: &str) -> Value {
    json!({"textDocument": {"uri": uri}, "position": pos(text, needle)})
}

#[test]
fn an_editor_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("main.mcl");
    std::fs::write(&path, PROGRAM).unwrap();
    let uri = format!("file://{}", path.display());
    let (mut client, init) = Client::start(TEND, &["lsp"], dir.path());
    let caps = &init["capabilities"];
    assert_eq!(init["serverInfo"]["name"], "tend");
    for cap in ["hoverProvider", "definitionProvider", "referencesProvider", "documentFormattingProvider"] {
        assert_eq!(caps[cap], true, "{cap} in {caps}");
    }
    assert!(caps["semanticTokensProvider"]["legend"]["tokenTypes"].as_array().is_some_and(|t| !t.is_empty()));

    // Opening a program that compiles: no diagnostics.
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "mcl", "version": 1, "text": PROGRAM}}),
    );
    assert_eq!(client.diagnostics(&uri), Vec::<Value>::new());

    // An edit that makes a type error: one error, on the call, with its code.
    let hello = pos(PROGRAM, "\"hello\"");
    let change = json!({
        "range": {"start": hello, "end": {"line": hello["line"], "character": hello["character"].as_u64().unwrap() + 7}},
        "text": "42",
    });
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]}),
    );
    let diags = client.diagnostics(&uri);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0]["severity"], 1);
    assert_eq!(diags[0]["source"], "tend");
    assert!(diags[0]["message"].as_str().unwrap().contains("int"), "{}", diags[0]);
    let line = diags[0]["range"]["start"]["line"].as_u64().unwrap();
    assert!(line == 2 || line == 4, "the error is on the bind or the call: {}", diags[0]);

    // The fix (a whole-text change): the error goes away.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": PROGRAM}]}),
    );
    assert_eq!(client.diagnostics(&uri), Vec::<Value>::new());

    // Hover on a use of `$greeting`: its type and declaration.
    let hover = client.request("textDocument/hover", doc_pos(&uri, PROGRAM, "greeting)"));
    let shown = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(shown.contains("`str`") && shown.contains("$greeting = \"hello\""), "{hover}");
    // On a built-in: its signature.
    let hover = client.request("textDocument/hover", doc_pos(&uri, PROGRAM, "to_upper"));
    assert!(hover["contents"]["value"].as_str().unwrap_or_default().contains("strings.to_upper: func("), "{hover}");
    // On the resource kind: its params.
    let hover = client.request("textDocument/hover", doc_pos(&uri, PROGRAM, "file \""));
    assert!(hover["contents"]["value"].as_str().unwrap_or_default().contains("`content` str"), "{hover}");

    // Definition: the bind's name, on line 2.
    let def = client.request("textDocument/definition", doc_pos(&uri, PROGRAM, "greeting)"));
    assert_eq!(def["uri"], json!(uri));
    assert_eq!(def["range"]["start"], json!({"line": 2, "character": 0}), "{def}");
    let refs = client.request(
        "textDocument/references",
        json!({"textDocument": {"uri": uri}, "position": pos(PROGRAM, "greeting)"), "context": {"includeDeclaration": true}}),
    );
    assert_eq!(refs.as_array().map(Vec::len), Some(2), "{refs}");

    // Completion in the resource body: the params not yet set.
    let with_blank = PROGRAM.replace("\tcontent", "\t\n\tcontent");
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": with_blank}]}),
    );
    let at = pos(&with_blank, "\t\n\tcontent");
    let items = client.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": uri}, "position": {"line": at["line"], "character": 1}}),
    );
    let labels: Vec<&str> = items.as_array().unwrap().iter().filter_map(|i| i["label"].as_str()).collect();
    assert!(labels.contains(&"mode") && labels.contains(&"state") && labels.contains(&"Meta:noop"), "{labels:?}");
    assert!(!labels.contains(&"content"), "content is set already: {labels:?}");

    // Symbols: the resource.
    let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    let names: Vec<&str> = symbols.as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
    assert!(names.contains(&"file \"/tmp/tend-lsp-test\""), "{names:?}");

    // Formatting a mangled layout: one edit back to the canonical text.
    let mangled = PROGRAM.replace("$greeting = \"hello\"", "$greeting=\"hello\"").replace('\t', "    ");
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 5}, "contentChanges": [{"text": mangled}]}),
    );
    let edits = client.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 8, "insertSpaces": false}}),
    );
    assert_eq!(edits.as_array().map(Vec::len), Some(1), "{edits}");
    assert_eq!(edits[0]["newText"], PROGRAM);

    // Highlighting: five numbers per token, and some tokens.
    let tokens = client.request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": uri}}));
    let data = tokens["data"].as_array().unwrap();
    assert!(data.len() >= 5 * 8 && data.len() % 5 == 0, "{tokens}");

    // Half-typed code never takes the server down: every request still answers.
    let half = "file \"/a\" {\n\tcontent => strings.\n$x = [1, \n";
    client.clear_backlog();
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 6}, "contentChanges": [{"text": half}]}),
    );
    for (method, needle) in
        [("textDocument/hover", "strings"), ("textDocument/completion", "[1"), ("textDocument/definition", "x")]
    {
        client.request(method, doc_pos(&uri, half, needle));
    }
    client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    client.request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": uri}}));
    assert!(!client.diagnostics(&uri).is_empty(), "half-typed code has errors");

    // An unknown request is an error response, not a hang.
    assert!(client.try_request("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).is_err());

    assert!(client.shutdown().success());
}

/// The Lua that drives neovim's built-in LSP client (0.7's API, Debian 12's neovim): start
/// `tend lsp`, attach it to the file, wait for diagnostics, write them out, format the
/// buffer through the server, write it out, quit.
const NVIM_SCRIPT: &str = r#"
local out = os.getenv("TEND_NVIM_OUT")
local id = vim.lsp.start_client({ name = "tend", cmd = { os.getenv("TEND_BIN"), "lsp" }, root_dir = vim.fn.getcwd() })
vim.cmd("edit " .. os.getenv("TEND_NVIM_FILE"))
local buf = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(buf, id)
vim.wait(20000, function() return #vim.diagnostic.get(buf) > 0 end, 20)
local lines = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  table.insert(lines, string.format("%d:%d:%d:%s", d.lnum, d.col, d.severity, (d.message:gsub("\n", " "))))
end
vim.fn.writefile(lines, out)
vim.lsp.buf.formatting_sync(nil, 10000)
vim.fn.writefile(vim.api.nvim_buf_get_lines(buf, 0, -1, false), out .. ".formatted")
vim.cmd("qa!")
"#;

/// A real editor: Debian's neovim, headless, with its own LSP client. Skipped when nvim is
/// not installed, unless `TEND_REQUIRE_NEOVIM` is set (CI installs it).
#[test]
fn neovim_shows_the_error_and_formats_through_tend_lsp() {
    let has_nvim = std::process::Command::new("nvim").arg("--version").output().is_ok_and(|o| o.status.success());
    if !has_nvim {
        assert!(std::env::var_os("TEND_REQUIRE_NEOVIM").is_none(), "TEND_REQUIRE_NEOVIM is set but nvim is missing");
        println!("skipping: neovim (nvim) is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("main.mcl");
    // A type error on line 2 (0-based), laid out badly.
    std::fs::write(&file, "$n = 1\n$s=\"x\"\n$bad = $s + $n\nfile \"/tmp/tend-nvim\" {\n    content => $bad,\n}\n")
        .unwrap();
    let script = dir.path().join("init.lua");
    std::fs::write(&script, NVIM_SCRIPT).unwrap();
    let out = dir.path().join("diagnostics.txt");
    let status = std::process::Command::new("nvim")
        .args(["--headless", "--clean", "-n", "-u"])
        .arg(&script)
        .current_dir(dir.path())
        .env("TEND_BIN", TEND)
        .env("TEND_NVIM_FILE", &file)
        .env("TEND_NVIM_OUT", &out)
        .env("HOME", dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("nvim runs");
    let got = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(status.status.success(), "nvim: {status:?}");
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines.len(), 1, "one diagnostic: {got:?}");
    // Line 2, an error (severity 1), about the types of `+`.
    assert!(lines[0].starts_with("2:") && lines[0].split(':').nth(2) == Some("1"), "{got:?}");
    assert!(lines[0].contains("str") || lines[0].contains("int"), "{got:?}");
    let formatted = std::fs::read_to_string(out.with_extension("txt.formatted")).unwrap_or_default();
    assert!(formatted.contains("$s = \"x\"\n") && formatted.contains("\n\tcontent => $bad,\n"), "{formatted:?}");
}

/// Issue 45, defect 9: `tend lsp` exited on any malformed frame (bad JSON, a bad
/// `Content-Length`, a body that is not UTF-8), and allocated whatever length a frame
/// announced. Each is skipped and the session goes on; a 2 GB announcement is read past
/// without being held.
#[test]
fn the_session_survives_malformed_frames() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("main.mcl");
    std::fs::write(&path, PROGRAM).unwrap();
    let uri = format!("file://{}", path.display());
    let (mut client, _) = Client::start(TEND, &["lsp"], dir.path());
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "mcl", "version": 1, "text": PROGRAM}}),
    );
    assert_eq!(client.diagnostics(&uri), Vec::<Value>::new());
    let malformed: [&[u8]; 5] = [
        b"Content-Length: 9\r\n\r\n{not json",
        b"Content-Length: 4\r\n\r\n\xff\xfe\xfd\xfc",
        b"Content-Length: many\r\n\r\n",
        b"X-Unknown: header\r\n\r\n",
        b"Content-Length: 2\r\n\r\n[]",
    ];
    for frame in malformed {
        client.raw(frame);
        let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
        assert!(
            symbols.as_array().is_some_and(|s| !s.is_empty()),
            "answers after {:?}",
            String::from_utf8_lossy(frame)
        );
    }
    // Announced 2 GB, sent a little: nothing of that size is held, and the server lives.
    client.raw(b"Content-Length: 2000000000\r\n\r\n{\"jsonrpc\":");
    client.raw(&vec![b' '; 1 << 20]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(client.alive(), "still serving");
    let pid = client.pid();
    assert!(testkit::daemon::rss_kib(pid) < 200 * 1024, "{} KiB held", testkit::daemon::rss_kib(pid));
}
