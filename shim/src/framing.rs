//! Stdio framing in front of rmcp. rmcp drops unparsable lines silently; JSON-RPC wants a
//! `-32700 Parse error` reply. Every stdin line is checked here: well-formed JSON goes on to
//! rmcp, anything else is answered with a parse error. One task owns stdout, so replies never
//! interleave.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The JSON-RPC parse-error reply for an unparsable line.
pub fn parse_error_reply(error: &serde_json::Error) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {error}")}
    })
    .to_string()
}

/// Pipe `input` to `to_server` (checking each line) and `from_server` to `output`.
/// Returns when `input` reaches EOF and the server's output has drained.
pub async fn pump<I, O, SW, SR>(input: I, output: O, to_server: SW, from_server: SR)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
    SW: AsyncWrite + Unpin + Send + 'static,
    SR: AsyncRead + Unpin + Send + 'static,
{
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<String>();

    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = out_rx.recv().await {
            if output.write_all(line.as_bytes()).await.is_err()
                || output.write_all(b"\n").await.is_err()
                || output.flush().await.is_err()
            {
                break;
            }
        }
    });

    let server_out = out_tx.clone();
    let from_server_task = tokio::spawn(async move {
        let mut lines = BufReader::new(from_server).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if server_out.send(line).is_err() {
                break;
            }
        }
    });

    let mut to_server = to_server;
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = trim_line(&line);
        if text.is_empty() {
            continue;
        }
        match serde_json::from_slice::<serde::de::IgnoredAny>(text) {
            Ok(_) => {
                if to_server.write_all(text).await.is_err()
                    || to_server.write_all(b"\n").await.is_err()
                    || to_server.flush().await.is_err()
                {
                    break;
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "unparsable line on stdin");
                let _ = out_tx.send(parse_error_reply(&e));
            }
        }
    }
    // EOF: let the server see it, drain what it still has to say, then stop writing.
    let _ = to_server.shutdown().await;
    drop(to_server);
    drop(out_tx);
    let _ = from_server_task.await;
    let _ = writer.await;
}

fn trim_line(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r' | b' ' | b'\t') {
        end -= 1;
    }
    let mut start = 0;
    while start < end && matches!(line[start], b' ' | b'\t') {
        start += 1;
    }
    &line[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_error_is_a_jsonrpc_error() {
        let err = serde_json::from_str::<serde_json::Value>("{oops").unwrap_err();
        let reply: serde_json::Value = serde_json::from_str(&parse_error_reply(&err)).unwrap();
        assert_eq!(reply["error"]["code"], -32700);
        assert!(reply["id"].is_null());
    }

    #[test]
    fn trims_line_endings() {
        assert_eq!(trim_line(b"  {} \r\n"), b"{}");
        assert_eq!(trim_line(b"\n"), b"");
    }
}
