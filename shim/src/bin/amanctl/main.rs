//! `amanctl`: diagnostics and set-up for amanmcp. `amanctl status [--json]`, `amanctl stop`,
//! `amanctl search QUERY [PATH]`, `amanctl logs [-n N] [--follow]`,
//! `amanctl setup [CLIENT|--all]`, `amanctl doctor`, `amanctl service`,
//! `amanctl projects [forget ROOT...]`, `amanctl gc`, `amanctl http enable|disable|status|token`.

mod doctor;
mod graph;
mod http;
mod logs;
mod mcp;
mod progress;
mod projects;
mod search;
mod service;
mod setup;

use std::process::ExitCode;
use std::time::Duration;

use amanmcp::link::state_name;
use amanmcp::status::{self, human_bytes};
use amanmcp_proto::{endpoint, pb};
use clap::{Parser, Subcommand};
use serde_json::json;

/// amanmcp diagnostics.
#[derive(Parser)]
#[command(
    name = "amanctl",
    version,
    about = "amanctl: status, indexing, search, setup and diagnostics for amanmcp."
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show whether the daemon runs, and every project it serves. Exit 1 if it is down.
    Status {
        /// Every project in full (files skipped, last pass, watching, embedder).
        #[arg(long, short = 'v')]
        verbose: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Index a project (default: the current directory), starting the daemon if needed, and
    /// wait until the index is ready.
    Index {
        /// Project root.
        path: Option<std::path::PathBuf>,
        /// Return at once instead of waiting for the index to be ready.
        #[arg(long)]
        no_wait: bool,
        /// Machine-readable output (the project's status once the wait ends).
        #[arg(long)]
        json: bool,
    },
    /// Wait for a project's indexing pass, then check that its index agrees with itself and
    /// with the files on disk. Exit 1 on any problem.
    Verify {
        /// Project root.
        path: Option<std::path::PathBuf>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Search a project (default: the current directory's) as an agent would, with
    /// ripgrep-like output; `--json` for scripts.
    Search(search::SearchArgs),
    /// Who calls a definition (resolved by scope; ambiguous calls labelled).
    Callers(graph::GraphArgs),
    /// What a definition calls.
    Callees(graph::GraphArgs),
    /// What a change reaches: the given definitions, or the working tree's git diff.
    Impact(graph::GraphArgs),
    /// Call paths from one definition to another (`--to`).
    Trace(graph::GraphArgs),
    /// Ask the daemon to stop.
    Stop,
    /// Print the end of the daemon's log (`--follow` to keep printing what it writes).
    Logs {
        /// How many lines from the end.
        #[arg(short = 'n', long, default_value_t = 50)]
        lines: usize,
        /// Keep printing new lines until interrupted.
        #[arg(short, long)]
        follow: bool,
    },
    /// Run the daemon as a systemd user service (Linux) or a launchd agent (macOS).
    Service {
        #[command(subcommand)]
        command: service::ServiceCommand,
    },
    /// Check what amanmcp needs (socket, daemon and its version, shim, open files, file
    /// watches, embedder, disk) and explain what is wrong. Exit 1 on a failure.
    Doctor {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Register amanmcp in AI clients' MCP configurations (the project's file, or the
    /// user's with `--global` or where the client has none), edited in place. Without a
    /// client: list the clients found on this machine; `--all` registers in each.
    Setup(setup::SetupArgs),
    /// List the projects the daemon has indexed, with their sizes; `forget ROOT` drops one.
    Projects {
        #[command(subcommand)]
        command: Option<projects::ProjectsCommand>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Drop the indexes of projects whose root directory no longer exists.
    Gc {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// The daemon's MCP-over-HTTP endpoint (off by default): enable, disable, status, token.
    Http {
        #[command(subcommand)]
        command: http::HttpCommand,
    },
    /// Check or use the MCP servers a project configures for Claude Code (`.mcp.json`) and
    /// Cursor (`.cursor/mcp.json`).
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
}

#[derive(Subcommand)]
enum McpCommand {
    /// Start every configured server, list its tools, close it. Exit 1 if any fails.
    Check {
        /// Project root (default: the current directory's project).
        path: Option<std::path::PathBuf>,
        /// Seconds to wait for each server.
        #[arg(long, default_value_t = 20)]
        timeout: u64,
    },
    /// Call TOOL on the configured server SERVER with JSON arguments; print the result.
    Call {
        /// The server's name in the config.
        server: String,
        /// The tool.
        tool: String,
        /// Arguments as a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
        /// Project root (default: the current directory's project).
        #[arg(long)]
        project: Option<std::path::PathBuf>,
        /// Print the whole result as JSON.
        #[arg(long)]
        json: bool,
        /// Seconds to wait.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
}

fn main() -> ExitCode {
    // Like other command-line tools, end quietly when the reader of our output goes away
    // (`amanctl verify | head`) instead of panicking on the broken pipe. Not by restoring
    // SIGPIPE's default: that signal also comes from the daemon's socket when the daemon
    // closes it mid-request (it is stopping), and must be an error amanctl reports.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        report(info)
    }));
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        match args.command {
            Command::Status { verbose, json } => status(verbose, json).await,
            Command::Index {
                path,
                no_wait,
                json,
            } => index(path, no_wait, json).await,
            Command::Verify { path, json } => verify(path, json).await,
            Command::Stop => stop().await,
            Command::Logs { lines, follow } => logs::logs(lines, follow).await,
            Command::Search(args) => search::search(args).await,
            Command::Callers(args) => graph::graph("callers", args).await,
            Command::Callees(args) => graph::graph("callees", args).await,
            Command::Impact(args) => graph::graph("impact", args).await,
            Command::Trace(args) => graph::graph("trace", args).await,
            Command::Doctor { json } => doctor::doctor(json).await,
            Command::Service { command } => service::service(command),
            Command::Setup(args) => setup::setup(args),
            Command::Projects { command, json } => match command {
                None => projects::list(json).await,
                Some(projects::ProjectsCommand::Forget { roots, json: j }) => {
                    projects::forget(roots, false, json || j).await
                }
            },
            Command::Http { command } => http::http(command).await,
            Command::Gc { json } => projects::forget(Vec::new(), true, json).await,
            Command::Mcp { command } => match command {
                McpCommand::Check { path, timeout } => mcp::mcp_check(path, timeout).await,
                McpCommand::Call {
                    server,
                    tool,
                    arguments,
                    project,
                    json,
                    timeout,
                } => mcp::mcp_call(project, &server, &tool, &arguments, json, timeout).await,
            },
        }
    })
}

/// The daemon's status reply, or why there is none (down, an error, no answer in 10 s).
async fn daemon_status(socket: &std::path::Path) -> Result<pb::StatusReply, String> {
    let mut client = endpoint::connect(socket).await.map_err(|e| e.to_string())?;
    match tokio::time::timeout(Duration::from_secs(10), client.status(pb::StatusRequest {})).await {
        Ok(Ok(reply)) => Ok(reply.into_inner()),
        Ok(Err(status)) => Err(status.message().to_string()),
        Err(_) => Err("no answer within 10 s".to_string()),
    }
}

async fn status(verbose: bool, as_json: bool) -> ExitCode {
    let socket = match endpoint::socket_path() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let reply = match daemon_status(&socket).await {
        Ok(reply) => reply,
        Err(error) => {
            if as_json {
                println!(
                    "{}",
                    json!({"running": false, "socket": socket.display().to_string(), "error": error})
                );
            } else {
                println!("amanmcpd: not running (socket {})", socket.display());
                println!("  {error}");
            }
            return ExitCode::FAILURE;
        }
    };
    if as_json {
        let projects: Vec<_> = reply.projects.iter().map(status::project_json).collect();
        println!(
            "{}",
            json!({
                "running": true,
                "version": reply.version,
                "pid": reply.pid,
                "uptime_ms": reply.uptime_ms,
                "socket": reply.socket_path,
                "data_dir": reply.data_dir,
                "projects": projects,
            })
        );
    } else {
        println!(
            "amanmcpd {}: running (pid {}, uptime {})",
            reply.version,
            reply.pid,
            status::human_duration(reply.uptime_ms / 1000)
        );
        println!("  socket {}, data {}", reply.socket_path, reply.data_dir);
        println!("{}:", counted(reply.projects.len(), "project"));
        for p in &reply.projects {
            let text = if verbose {
                status::project_text(p)
            } else {
                status::project_line(p)
            };
            for line in text.lines() {
                println!("  {line}");
            }
        }
    }
    ExitCode::SUCCESS
}

/// `n` `noun`s, the noun plural unless `n` is one: `1 project`, `2 projects`.
fn counted(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// The project a command serves (`project::command_root`), said on stderr when not named.
fn project_root(path: Option<&std::path::Path>) -> Result<std::path::PathBuf, String> {
    let (root, source) = amanmcp::project::command_root(path)?;
    if source != amanmcp::project::RootSource::Explicit {
        eprintln!(
            "amanctl: project {} ({})",
            root.display(),
            source.describe()
        );
    }
    Ok(root)
}

/// The project root and a link to the daemon (started if needed).
fn project_link(
    path: Option<&std::path::Path>,
) -> Result<(String, amanmcp::link::DaemonLink), String> {
    let root = project_root(path)?;
    let socket = endpoint::socket_path().map_err(|e| e.to_string())?;
    Ok((
        root.to_string_lossy().into_owned(),
        amanmcp::link::DaemonLink::new(socket),
    ))
}

/// [`project_link`], with the project opened (indexing starts if it must): what a
/// command that asks a project a question starts with.
async fn opened_project(
    path: Option<&std::path::Path>,
) -> Result<(String, amanmcp::link::DaemonLink), String> {
    let (root, link) = project_link(path)?;
    link.project_status(&root)
        .await
        .map_err(|e| e.to_string())?;
    Ok((root, link))
}

async fn verify(path: Option<std::path::PathBuf>, as_json: bool) -> ExitCode {
    let (root, link) = match project_link(path.as_deref()) {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let reply = link
        .call(|mut client| {
            let root = root.clone();
            async move {
                client
                    .verify(pb::VerifyRequest { root })
                    .await
                    .map(|r| r.into_inner())
            }
        })
        .await;
    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    if as_json {
        println!(
            "{}",
            json!({"root": root, "ok": reply.ok, "files": reply.files, "chunks": reply.chunks,
                   "documents": reply.docs, "problems": reply.problems})
        );
    } else {
        println!(
            "{}: {} files, {} chunks, {} documents",
            if reply.ok { "ok" } else { "INCONSISTENT" },
            reply.files,
            reply.chunks,
            reply.docs
        );
        for problem in &reply.problems {
            println!("  {problem}");
        }
    }
    if reply.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn index(path: Option<std::path::PathBuf>, no_wait: bool, as_json: bool) -> ExitCode {
    let (root, link) = match project_link(path.as_deref()) {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };

    let started = std::time::Instant::now();
    // Every file is read and its content compared: what a person asks for when they index.
    let status = match link.reread_project(&root).await {
        Ok(status) => status,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    if !as_json {
        println!("indexing {root}");
    }
    let started_passes = status.passes;
    // An embedder that keeps failing does not hold the command forever: keyword search is
    // ready, and the vectors come once the embedder answers.
    let failing_since = std::cell::Cell::new(None::<std::time::Instant>);
    let progress = std::cell::RefCell::new(progress::Progress::new());
    let following = status::follow(
        &link,
        status,
        Duration::from_millis(200),
        // The pass asked for has ended (an index that matched the disk may stay `ready`
        // throughout it).
        |s| no_wait || (s.passes > started_passes && state_name(s.state) != "indexing"),
        |s| {
            progress.borrow_mut().show(&s);
            let failing = s.passes > 0
                && s.vectors
                    .as_ref()
                    .is_some_and(|v| v.health.starts_with("error"));
            let go_on = match (failing, failing_since.get()) {
                (true, None) => {
                    failing_since.set(Some(std::time::Instant::now()));
                    true
                }
                (true, Some(since)) => since.elapsed() < Duration::from_secs(10),
                (false, _) => {
                    failing_since.set(None);
                    true
                }
            };
            std::future::ready(go_on)
        },
    );
    // Ctrl-C stops the waiting, not the indexing: say so.
    let followed = tokio::select! {
        followed = following => followed,
        _ = tokio::signal::ctrl_c() => {
            progress.borrow().finish();
            eprintln!(
                "amanctl: stopped waiting; indexing goes on in the daemon (`amanctl status` shows it)"
            );
            return ExitCode::from(130);
        }
    };
    let status = match followed {
        Ok(status) => status,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    progress.borrow().finish();
    if as_json {
        let mut out = status::project_json(&status);
        out["seconds"] = json!(started.elapsed().as_secs_f64());
        println!("{out}");
        return match status.last_error {
            Some(_) => ExitCode::FAILURE,
            None => ExitCode::SUCCESS,
        };
    }
    println!(
        "{}: {}, {}, index {} (source {}) in {:.1}s",
        state_name(status.state),
        counted(status.files as usize, "file"),
        counted(status.chunks as usize, "chunk"),
        human_bytes(status.index_bytes),
        human_bytes(status.source_bytes),
        started.elapsed().as_secs_f64()
    );
    if let Some(v) = &status.vectors {
        println!(
            "semantic: {}/{} chunks embedded by {} [{}]",
            v.embedded,
            v.embedded + v.pending,
            v.embedder,
            v.health
        );
    }
    if let Some(error) = &status.last_error {
        println!("last error: {error}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

async fn stop() -> ExitCode {
    let socket = match endpoint::socket_path() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A daemon busy indexing may be slow to answer: try again while its socket exists.
    let mut client = None;
    for _ in 0..5 {
        match endpoint::connect(&socket).await {
            Ok(c) => {
                client = Some(c);
                break;
            }
            Err(_) if socket.exists() => tokio::time::sleep(Duration::from_millis(300)).await,
            Err(_) => break,
        }
    }
    // Stopping a daemon that is not running is done already.
    let Some(mut client) = client else {
        println!("amanmcpd: not running (socket {})", socket.display());
        return ExitCode::SUCCESS;
    };
    match client.shutdown(pb::ShutdownRequest {}).await {
        Ok(_) => {
            // Return once it has ended (writers joined, indexes closed: its lock beside the
            // socket is free), not while it stops.
            let lock = endpoint::socket_lock_path(&socket);
            let held = || std::fs::File::open(&lock).is_ok_and(|file| file.try_lock().is_err());
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while held() && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if held() {
                eprintln!("amanctl: amanmcpd is still stopping after 60 s");
                return ExitCode::FAILURE;
            }
            println!("amanmcpd: stopped");
            ExitCode::SUCCESS
        }
        // The connection can close under the reply as the daemon stops; it stopped if its
        // socket goes away.
        Err(status) => {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while socket.exists() && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if socket.exists() {
                eprintln!("amanctl: {}", status.message());
                ExitCode::FAILURE
            } else {
                println!("amanmcpd: stopped");
                ExitCode::SUCCESS
            }
        }
    }
}
