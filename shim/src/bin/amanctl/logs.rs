//! `amanctl logs`: the end of the daemon's log, and with `--follow` what it writes next.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use amanmcp_proto::endpoint;

/// The running daemon's data directory, else the one it would use.
async fn data_dir() -> Result<PathBuf, String> {
    if let Ok(socket) = endpoint::socket_path()
        && let Ok(reply) = super::daemon_status(&socket).await
    {
        return Ok(PathBuf::from(reply.data_dir));
    }
    endpoint::data_dir().map_err(|e| e.to_string())
}

/// Print the last `lines` lines of the daemon's log; with `follow`, keep printing what is
/// appended until interrupted.
pub async fn logs(lines: usize, follow: bool) -> ExitCode {
    let dir = match data_dir().await {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let path = dir.join("amanmcpd.log");
    let mut file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(e) => {
            eprintln!(
                "amanctl: no daemon log at {} ({e}). The daemon writes one when amanmcp or amanctl \
                 starts it; as a service it logs to the journal (`journalctl --user -u amanmcpd`) \
                 or, on macOS, to the file its launchd agent names.",
                path.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let mut text = Vec::new();
    if let Err(e) = file.read_to_end(&mut text) {
        eprintln!("amanctl: cannot read {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    let text = String::from_utf8_lossy(&text);
    let all: Vec<&str> = text.lines().collect();
    let mut out = std::io::stdout().lock();
    for line in &all[all.len().saturating_sub(lines)..] {
        if writeln!(out, "{line}").is_err() {
            return ExitCode::SUCCESS;
        }
    }
    drop(out);
    if !follow {
        return ExitCode::SUCCESS;
    }
    let mut offset = file.stream_position().unwrap_or(0);
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        if len < offset {
            // Truncated or replaced: start again from its beginning.
            offset = 0;
            if let Ok(reopened) = std::fs::File::open(&path) {
                file = reopened;
            }
        }
        if len > offset && file.seek(SeekFrom::Start(offset)).is_ok() {
            let mut more = Vec::new();
            if file.read_to_end(&mut more).is_ok() {
                offset += more.len() as u64;
                let mut out = std::io::stdout().lock();
                if out.write_all(&more).and_then(|()| out.flush()).is_err() {
                    return ExitCode::SUCCESS;
                }
            }
        }
    }
}
