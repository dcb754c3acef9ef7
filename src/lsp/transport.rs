//! The language server's stdio transport: LSP's framing (`Content-Length` headers, then a
//! JSON-RPC body) read by a thread of our own, so that a malformed frame (a bad or missing
//! length, a body that is not JSON or not UTF-8) is skipped with a line on stderr instead of
//! ending the session, and no message larger than [`MAX_MESSAGE`] is ever held: a length
//! over it is read past in small pieces.

use std::io::{self, BufRead, Read, Write};
use std::thread::JoinHandle;

use crossbeam_channel::bounded;
use lsp_server::{Connection, Message};

/// The largest message read (a document of this size is far past what an editor sends).
pub const MAX_MESSAGE: usize = 64 << 20;

/// The longest header line kept; a longer one is read past.
const MAX_HEADER_LINE: u64 = 4096;

/// What one frame held.
#[derive(Debug)]
pub enum Frame {
    Message(Message),
    /// A frame that could not be read as a message, and why.
    Skipped(String),
    /// The end of the input.
    End,
}

/// Reads one frame from `input`.
pub fn read_frame(input: &mut impl BufRead) -> io::Result<Frame> {
    let mut length: Option<Result<usize, String>> = None;
    let mut any = false;
    loop {
        let mut line = Vec::new();
        let n = input.by_ref().take(MAX_HEADER_LINE).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(if any {
                Frame::Skipped("the input ended inside a frame's headers".into())
            } else {
                Frame::End
            });
        }
        if line.last() != Some(&b'\n') && n as u64 == MAX_HEADER_LINE {
            // Read past the rest of an overlong line.
            skip_line(input)?;
            any = true;
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if !any {
                // Blank lines between frames.
                continue;
            }
            break;
        }
        any = true;
        // Found anywhere in the line: after a body that was not framed right, the next
        // header may follow its last byte on the same line.
        if let Some(at) = text.to_ascii_lowercase().find("content-length:") {
            let value = text[at + "content-length:".len()..].trim();
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| format!("a bad Content-Length `{}`", crate::cmd::why::shorten(value, 40))),
            );
        }
    }
    let length = match length {
        None => return Ok(Frame::Skipped("a frame without a Content-Length".into())),
        Some(Err(why)) => return Ok(Frame::Skipped(why)),
        Some(Ok(n)) => n,
    };
    if length > MAX_MESSAGE {
        let skipped = io::copy(&mut input.by_ref().take(length as u64), &mut io::sink())?;
        return Ok(Frame::Skipped(format!(
            "a message of {length} bytes, over the limit of {} MiB ({skipped} bytes read past)",
            MAX_MESSAGE >> 20
        )));
    }
    let mut body = vec![0; length];
    if let Err(e) = input.read_exact(&mut body) {
        return if e.kind() == io::ErrorKind::UnexpectedEof {
            Ok(Frame::Skipped("the input ended inside a message".into()))
        } else {
            Err(e)
        };
    }
    Ok(match serde_json::from_slice::<Message>(&body) {
        Ok(message) => Frame::Message(message),
        Err(e) => Frame::Skipped(format!("a body that is not a JSON-RPC message ({e})")),
    })
}

fn skip_line(input: &mut impl BufRead) -> io::Result<()> {
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(at) => {
                input.consume(at + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}

/// The reader and writer threads of [`stdio`].
pub struct Io {
    reader: JoinHandle<io::Result<()>>,
    writer: JoinHandle<io::Result<()>>,
}

impl Io {
    /// Waits for both threads; the first error either met.
    pub fn join(self) -> io::Result<()> {
        let reader = self.reader.join().unwrap_or_else(|_| Err(io::Error::other("the reader panicked")));
        let writer = self.writer.join().unwrap_or_else(|_| Err(io::Error::other("the writer panicked")));
        reader.and(writer)
    }
}

/// A connection over stdin and stdout.
pub fn stdio() -> (Connection, Io) {
    let (to_writer, writes) = bounded::<Message>(0);
    let writer = std::thread::Builder::new()
        .name("tend-lsp-writer".into())
        .spawn(move || {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            for message in writes {
                message.write(&mut out)?;
                out.flush()?;
            }
            Ok(())
        })
        .expect("a thread for the LSP writer");
    let (to_server, reads) = bounded::<Message>(0);
    let reader = std::thread::Builder::new()
        .name("tend-lsp-reader".into())
        .spawn(move || {
            let stdin = io::stdin();
            let mut input = stdin.lock();
            loop {
                match read_frame(&mut input)? {
                    Frame::End => return Ok(()),
                    Frame::Skipped(why) => crate::stderr::line(format_args!("warning: tend lsp: skipped {why}")),
                    Frame::Message(message) => {
                        let exit = matches!(&message, Message::Notification(n) if n.method == "exit");
                        if to_server.send(message).is_err() || exit {
                            return Ok(());
                        }
                    }
                }
            }
        })
        .expect("a thread for the LSP reader");
    (Connection { sender: to_writer, receiver: reads }, Io { reader, writer })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8]) -> Vec<String> {
        let mut input = io::BufReader::new(input);
        let mut out = Vec::new();
        loop {
            match read_frame(&mut input).unwrap() {
                Frame::End => return out,
                Frame::Skipped(why) => out.push(format!("skipped: {why}")),
                Frame::Message(Message::Notification(n)) => out.push(n.method),
                Frame::Message(m) => out.push(format!("{m:?}")),
            }
        }
    }

    fn framed(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    /// Issue 45, defect 9: each malformed frame is skipped and the next one is read.
    #[test]
    fn malformed_frames_are_skipped_and_the_next_is_read() {
        let good = framed(r#"{"jsonrpc":"2.0","method":"ok"}"#);
        let mut input = Vec::new();
        input.extend(framed("{not json").as_bytes());
        input.extend(good.as_bytes());
        input.extend(b"Content-Length: 5\r\n\r\n\xff\xfe\xfd\xfc\xfb");
        input.extend(good.as_bytes());
        input.extend(b"Content-Length: lots\r\n\r\n");
        input.extend(good.as_bytes());
        input.extend(b"X-Other: 1\r\n\r\n");
        input.extend(good.as_bytes());
        input.extend(format!("Content-Length: {}\r\n\r\n", 3 * MAX_MESSAGE).as_bytes());
        let got = frames(&input);
        assert_eq!(got[0], "skipped: a body that is not a JSON-RPC message (key must be a string at line 1 column 2)");
        assert_eq!(got[1], "ok");
        assert!(got[2].starts_with("skipped: a body that is not a JSON-RPC message"), "{got:?}");
        assert_eq!(got[3], "ok");
        assert_eq!(got[4], "skipped: a bad Content-Length `lots`");
        assert_eq!(got[5], "ok");
        assert_eq!(got[6], "skipped: a frame without a Content-Length");
        assert_eq!(got[7], "ok");
        assert!(
            got[8].starts_with("skipped: a message of 201326592 bytes, over the limit of 64 MiB (0 bytes"),
            "{got:?}"
        );
        assert_eq!(got.len(), 9);
    }
}
