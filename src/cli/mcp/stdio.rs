//! The line transport between the process streams and `rmcp`.
//!
//! `rmcp` drops input that is not JSON and lines over its length cap without a word. JSON-RPC
//! 2.0 asks for an answer, so this bridge screens each incoming line first: a line that is not
//! JSON gets a Parse error (-32700), a line over [`MAX_MESSAGE_BYTES`] an Invalid Request
//! (-32600), both with `id: null`; everything else goes to `rmcp` unchanged (which answers a
//! well-formed message of the wrong shape with Invalid Request itself). All output lines, the
//! SDK's and the bridge's, go through one writer so they never interleave.

use rmcp::RoleServer;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The largest message the server reads (bytes, newline excluded): twice the CLI's request cap,
/// so tool arguments past that cap still arrive whole and are refused by the command itself
/// (`too_large`, a tool result the caller can read); only a line past this one is answered by
/// the bridge.
pub const MAX_MESSAGE_BYTES: usize = 2 * crate::cli::common::MAX_REQUEST_BYTES as usize;

/// The running bridge tasks.
pub struct Bridge {
    reader: JoinHandle<()>,
    relay: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Bridge {
    /// Wait until every answer is written; stop reading input.
    pub async fn finish(self) {
        let _ = self.relay.await;
        self.reader.abort();
        let _ = self.reader.await;
        let _ = self.writer.await;
    }
}

/// The `rmcp` transport over the bridge's streams.
pub type SdkTransport = AsyncRwTransport<RoleServer, DuplexStream, DuplexStream>;

/// Start the bridge: returns the transport to hand to `rmcp` and the task handles.
pub fn bridge<R, W>(input: R, output: W) -> (SdkTransport, Bridge)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_sdk, sdk_in) = tokio::io::duplex(1 << 16);
    let (sdk_out, from_sdk) = tokio::io::duplex(1 << 16);
    let (tx, rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let reader = tokio::spawn(read_input(input, to_sdk, tx.clone()));
    let relay = tokio::spawn(relay_output(from_sdk, tx));
    let writer = tokio::spawn(write_output(output, rx));
    // The SDK's own line cap (16 MiB by default) would drop what the bridge let through.
    let transport =
        AsyncRwTransport::new(sdk_in, sdk_out).with_max_line_length(MAX_MESSAGE_BYTES + 1);
    (
        transport,
        Bridge {
            reader,
            relay,
            writer,
        },
    )
}

enum Line {
    Eof,
    Complete,
    TooLong,
}

/// Read one line into `line` (without its newline), at most `max` bytes; a longer line is
/// consumed to its end and reported as [`Line::TooLong`].
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    line.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match (any, too_long) {
                (false, _) => Line::Eof,
                (true, true) => Line::TooLong,
                (true, false) => Line::Complete,
            });
        }
        any = true;
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(at) => (&buf[..at], at + 1),
            None => (buf, buf.len()),
        };
        let newline = done > chunk.len();
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        reader.consume(done);
        if newline {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

fn error_line(code: i64, message: String) -> Vec<u8> {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

async fn read_input<R: AsyncRead + Unpin>(
    input: R,
    mut to_sdk: DuplexStream,
    answers: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut reader = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::new();
    loop {
        match read_line(&mut reader, &mut line, MAX_MESSAGE_BYTES).await {
            Ok(Line::Eof) => break,
            Ok(Line::TooLong) => {
                eprintln!("pi-context mcp: message over {MAX_MESSAGE_BYTES} bytes refused");
                let _ = answers.send(error_line(
                    -32600,
                    format!("Invalid Request: message larger than {MAX_MESSAGE_BYTES} bytes"),
                ));
            }
            Ok(Line::Complete) => {
                let text = line.strip_suffix(b"\r").unwrap_or(&line);
                if text.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(text) {
                    eprintln!("pi-context mcp: unparsable message refused: {e}");
                    let _ = answers.send(error_line(-32700, format!("Parse error: {e}")));
                    continue;
                }
                if to_sdk.write_all(text).await.is_err() || to_sdk.write_all(b"\n").await.is_err() {
                    break;
                }
            }
            Err(e) => {
                eprintln!("pi-context mcp: reading stdin failed: {e}");
                break;
            }
        }
    }
    let _ = to_sdk.shutdown().await;
}

async fn relay_output(from_sdk: DuplexStream, answers: mpsc::UnboundedSender<Vec<u8>>) {
    let mut reader = BufReader::new(from_sdk);
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                if answers.send(line).is_err() {
                    break;
                }
            }
        }
    }
}

async fn write_output<W: AsyncWrite + Unpin>(
    mut output: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = lines.recv().await {
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
}
