//! `amanmcp`: the MCP stdio shim. `amanmcp serve [--project PATH]` (or just `amanmcp`).

use std::path::PathBuf;
use std::sync::Arc;

use amanmcp::link::DaemonLink;
use amanmcp::mcp::AmanServer;
use amanmcp::{framing, project};
use anyhow::Context;
use clap::{Parser, Subcommand};
use rmcp::ServiceExt;

/// amanmcp: local code search for AI coding agents (MCP over stdio).
#[derive(Parser)]
#[command(
    name = "amanmcp",
    version,
    about = "amanmcp: the MCP server an AI client launches (stdio); it serves the project from amanmcpd."
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Project root (default: the git repository containing the working directory).
    #[arg(long, global = true)]
    project: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP over stdin/stdout (the default).
    Serve,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    match args.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(args.project),
    }
}

fn serve(project: Option<PathBuf>) -> anyhow::Result<()> {
    // Logs go to stderr: stdout carries the protocol.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AMANMCP_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let (root, source) = project::resolve_root_with_source(project.as_deref())
        .context("cannot resolve the project root")?;
    let explicit_root = source == project::RootSource::Explicit;
    // A working directory that is no project (home, a system directory: where desktop
    // clients start servers) is never indexed: the session has no project until the
    // client's roots name one.
    let root = match project::refused(&root, source) {
        Some(reason) => {
            tracing::info!(%reason, "no project until the client's roots name one");
            PathBuf::new()
        }
        None => root,
    };
    // A bare working directory (often `/` or the home directory for desktop clients) is not
    // indexed before a tool call or the client's roots ask for it.
    let warm_up_now = source != project::RootSource::WorkingDir;
    let socket = amanmcp_proto::endpoint::socket_path()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let link = Arc::new(DaemonLink::new(socket));
        let server = AmanServer::new(link, root, explicit_root);
        if warm_up_now {
            let warm = server.clone();
            tokio::spawn(async move { warm.warm_up().await });
        }

        let (server_side, shim_side) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_side);
        let (shim_read, shim_write) = tokio::io::split(shim_side);
        let pump = tokio::spawn(framing::pump(
            tokio::io::stdin(),
            tokio::io::stdout(),
            shim_write,
            shim_read,
        ));
        match server.serve((server_read, server_write)).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(e) => tracing::debug!(error = %e, "session ended before initialization"),
        }
        let _ = pump.await;
    });
    // Do not wait for background work (e.g. a daemon start in flight): stdin is closed.
    std::process::exit(0)
}
