//! `amanctl doctor`: checks what amanmcp needs and explains what is wrong: the socket and its
//! directory, the daemon and its version, the shim beside amanctl, the open-files limit, file
//! watches against the projects' directories, the embedder, and the data directory's disk.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use amanmcp_proto::{endpoint, pb};
use serde_json::{Value, json};

/// One finding: `ok`, `warn` or `fail`, what was checked, and what was seen or what to do.
struct Finding {
    level: &'static str,
    check: &'static str,
    detail: String,
}

fn finding(level: &'static str, check: &'static str, detail: impl Into<String>) -> Finding {
    Finding {
        level,
        check,
        detail: detail.into(),
    }
}

/// A number from a `/proc` file.
fn proc_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The soft open-files limit of process `pid`.
fn open_files_limit(pid: u32) -> Option<u64> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Free bytes on the file system holding `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs is plain data, for which all-zero bytes are a valid value.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a struct the call fills.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) };
    (rc == 0).then(|| stat.f_bavail as u64 * stat.f_frsize as u64)
}

async fn daemon_findings(out: &mut Vec<Finding>) {
    let socket = match endpoint::socket_path() {
        Ok(socket) => socket,
        Err(e) => {
            out.push(finding("fail", "socket", e.to_string()));
            return;
        }
    };
    if let Some(dir) = socket.parent() {
        match std::fs::metadata(dir) {
            // SAFETY: getuid has no preconditions.
            Ok(meta) if meta.uid() == unsafe { libc::getuid() } && meta.mode() & 0o077 == 0 => {
                out.push(finding("ok", "socket directory", format!("{} (0700, yours)", dir.display())))
            }
            Ok(meta) => out.push(finding(
                "fail",
                "socket directory",
                format!(
                    "{} has mode {:o}, owner {}: it must be yours and 0700; remove it or set AMANMCP_SOCKET",
                    dir.display(),
                    meta.mode() & 0o777,
                    meta.uid()
                ),
            )),
            Err(_) => out.push(finding(
                "ok",
                "socket directory",
                format!("{} (made when the daemon starts)", dir.display()),
            )),
        }
    }
    let status = match endpoint::connect(&socket).await {
        Ok(mut client) => {
            match tokio::time::timeout(Duration::from_secs(10), client.status(pb::StatusRequest {}))
                .await
            {
                Ok(Ok(reply)) => reply.into_inner(),
                Ok(Err(status)) => {
                    out.push(finding(
                        "fail",
                        "daemon",
                        format!("answers with an error: {}", status.message()),
                    ));
                    return;
                }
                Err(_) => {
                    out.push(finding("fail", "daemon", "no answer within 10 s: it may be overloaded or stuck; `amanctl stop`, then retry"));
                    return;
                }
            }
        }
        Err(_) => {
            out.push(finding(
                "warn",
                "daemon",
                format!("not running on {} (a client's shim starts it on demand; `amanctl index` starts it now)", socket.display()),
            ));
            return;
        }
    };
    let ours = env!("CARGO_PKG_VERSION");
    if status.version == ours {
        out.push(finding(
            "ok",
            "daemon",
            format!("running, pid {}, version {ours}", status.pid),
        ));
    } else {
        out.push(finding(
            "fail",
            "daemon version",
            format!(
                "the daemon is {} but amanctl is {ours}: `amanctl stop` so the new one starts",
                status.version
            ),
        ));
    }
    match open_files_limit(status.pid) {
        Some(limit) if limit < 1024 => out.push(finding(
            "warn",
            "open files",
            format!("the daemon may open only {limit} files: raise the hard limit (ulimit -Hn) before starting it"),
        )),
        Some(limit) => out.push(finding("ok", "open files", format!("limit {limit}"))),
        None => {}
    }
    let watched: u64 = status
        .projects
        .iter()
        .filter_map(|p| {
            let rest = p.watch.strip_prefix("events (")?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum();
    if let Some(max) = proc_number("/proc/sys/fs/inotify/max_user_watches") {
        let polling: Vec<&str> = status
            .projects
            .iter()
            .filter(|p| p.watch.starts_with("polling"))
            .map(|p| p.root.as_str())
            .collect();
        if !polling.is_empty() {
            out.push(finding(
                "warn",
                "file watches",
                format!(
                    "{} fall back to polling ({}); raise fs.inotify.max_user_watches (now {max})",
                    super::counted(polling.len(), "project"),
                    polling.join(", ")
                ),
            ));
        } else if watched * 5 > max * 4 {
            out.push(finding(
                "warn",
                "file watches",
                format!("{watched} of {max} watches in use: raise fs.inotify.max_user_watches"),
            ));
        } else {
            out.push(finding(
                "ok",
                "file watches",
                format!("{watched} directories watched of {max}"),
            ));
        }
    }
    for project in &status.projects {
        if let Some(vectors) = &project.vectors {
            let level = if vectors.health.starts_with("error") {
                "fail"
            } else {
                "ok"
            };
            out.push(finding(
                level,
                "embedder",
                format!(
                    "{}: {} ({})",
                    project.root, vectors.embedder, vectors.health
                ),
            ));
            break;
        }
    }
    for project in &status.projects {
        if let Some(error) = &project.last_error {
            out.push(finding(
                "fail",
                "project",
                format!("{}: {error}", project.root),
            ));
        }
    }
    let data = Path::new(&status.data_dir);
    match free_bytes(data) {
        Some(free) if free < 1 << 30 => out.push(finding(
            "warn",
            "disk",
            format!(
                "{} MiB free for {}: indexes may stop growing",
                free >> 20,
                data.display()
            ),
        )),
        Some(free) => out.push(finding(
            "ok",
            "disk",
            format!(
                "{:.1} GiB free for {}",
                free as f64 / (1u64 << 30) as f64,
                data.display()
            ),
        )),
        None => {}
    }
}

pub async fn doctor(as_json: bool) -> ExitCode {
    let mut findings = Vec::new();
    match amanmcp::link::installed_beside("amanmcp") {
        Some(path) => findings.push(finding("ok", "shim", path.display().to_string())),
        None => findings.push(finding(
            "fail",
            "shim",
            "no `amanmcp` beside amanctl: reinstall (packaging/install.sh) so clients can launch it",
        )),
    }
    daemon_findings(&mut findings).await;
    let failed = findings.iter().any(|f| f.level == "fail");
    if as_json {
        let items: Vec<Value> = findings
            .iter()
            .map(|f| json!({"level": f.level, "check": f.check, "detail": f.detail}))
            .collect();
        println!("{}", json!({"ok": !failed, "findings": items}));
    } else {
        for f in &findings {
            println!("{:<4} {:<17} {}", f.level, f.check, f.detail);
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
