//! Stdio framing in front of rmcp: reads the client's lines (at most
//! [`gate::MAX_MESSAGE_BYTES`] each, longer ones are discarded as they stream in, never held
//! whole), lets [`gate::Gate`] judge each one, and forwards, answers or drops it. One task
//! owns stdout, so replies never interleave.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::gate::{self, Gate, Verdict};

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
        while let Some(mut line) = out_rx.recv().await {
            // One write per message: stdout's writes go through a blocking thread each, and
            // the client reads nothing before the newline.
            line.push('\n');
            if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
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
    let mut gate = Gate::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut input, &mut line, gate::MAX_MESSAGE_BYTES).await {
            Ok(Line::End) | Err(_) => break,
            Ok(Line::TooLong) => {
                tracing::warn!(max = gate::MAX_MESSAGE_BYTES, "oversized message discarded");
                let _ = out_tx.send(gate::too_large_reply().to_string());
                continue;
            }
            Ok(Line::Read) => {}
        }
        let text = trim_line(&line);
        if text.is_empty() {
            continue;
        }
        match gate.check(text) {
            Verdict::Forward => {
                if to_server.write_all(text).await.is_err()
                    || to_server.write_all(b"\n").await.is_err()
                    || to_server.flush().await.is_err()
                {
                    break;
                }
            }
            Verdict::Reply(reply) => {
                let _ = out_tx.send(reply.to_string());
            }
            Verdict::ReplyText(reply) => {
                let _ = out_tx.send(reply);
            }
            Verdict::Drop(why) => tracing::debug!(why, "message dropped"),
        }
        if line.capacity() > 64 << 10 {
            // Give a large message's memory back rather than keep it for the session.
            line = Vec::new();
        }
    }
    let _ = to_server.shutdown().await;
    drop(to_server);
    drop(out_tx);
    let _ = from_server_task.await;
    let _ = writer.await;
}

/// How reading one line ended.
enum Line {
    /// A line (possibly the last one, without a newline) is in the buffer.
    Read,
    /// The line was longer than the limit; it was read and thrown away.
    TooLong,
    /// No more input.
    End,
}

/// Read one line into `line`, keeping at most `max` bytes: a longer line is consumed up to
/// its newline without being stored.
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Read,
            });
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        if !too_long {
            if line.len() + take > max + 2 {
                too_long = true;
                *line = Vec::new();
            } else {
                line.extend_from_slice(&buf[..take]);
            }
        }
        input.consume(take);
        if done {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
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

    #[tokio::test]
    async fn long_lines_are_discarded_without_being_kept() {
        let input = format!("{}\n{{}}\nlast", "x".repeat(100));
        let mut input = BufReader::with_capacity(16, input.as_bytes());
        let mut line = Vec::new();
        assert!(matches!(
            read_line(&mut input, &mut line, 50).await.unwrap(),
            Line::TooLong
        ));
        assert!(line.capacity() < 50);
        line.clear();
        assert!(matches!(
            read_line(&mut input, &mut line, 50).await.unwrap(),
            Line::Read
        ));
        assert_eq!(trim_line(&line), b"{}");
        line.clear();
        assert!(matches!(
            read_line(&mut input, &mut line, 50).await.unwrap(),
            Line::Read
        ));
        assert_eq!(line, b"last");
        line.clear();
        assert!(matches!(
            read_line(&mut input, &mut line, 50).await.unwrap(),
            Line::End
        ));
    }

    #[test]
    fn trims_line_endings() {
        assert_eq!(trim_line(b"  {} \r\n"), b"{}");
        assert_eq!(trim_line(b"\n"), b"");
    }
}
