//! `amanctl projects [forget ROOT...]` and `amanctl gc`: the projects the daemon has indexed,
//! with their sizes, and dropping the indexes no longer wanted (through the daemon, which
//! unloads a project before its files go).

use std::process::ExitCode;

use amanmcp::status::human_bytes;
use amanmcp_proto::{endpoint, pb};
use serde_json::json;

/// What `amanctl projects` may do besides listing.
#[derive(clap::Subcommand)]
pub enum ProjectsCommand {
    /// Drop the index of each ROOT (the project is indexed again if it is used again).
    Forget {
        /// Project roots, as `amanctl projects` lists them.
        #[arg(required = true)]
        roots: Vec<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

async fn client() -> Result<pb::daemon_client::DaemonClient<tonic::transport::Channel>, String> {
    let socket = endpoint::socket_path().map_err(|e| e.to_string())?;
    endpoint::connect(&socket)
        .await
        .map_err(|e| format!("the daemon is not running ({e}); start it with `amanctl index`"))
}

/// List every indexed project: root, size, whether loaded, whether its root still exists.
pub async fn list(as_json: bool) -> ExitCode {
    let reply = match client().await {
        Ok(mut client) => client.projects(pb::ProjectsRequest {}).await,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let projects = match reply {
        Ok(reply) => reply.into_inner().projects,
        Err(status) => {
            eprintln!("amanctl: {}", status.message());
            return ExitCode::FAILURE;
        }
    };
    if as_json {
        let items: Vec<_> = projects
            .iter()
            .map(|p| {
                json!({"root": p.root, "bytes": p.bytes, "loaded": p.loaded, "root_exists": p.root_exists})
            })
            .collect();
        println!("{:#}", json!({ "projects": items }));
        return ExitCode::SUCCESS;
    }
    if projects.is_empty() {
        println!("no indexed projects");
    }
    for p in &projects {
        let mut notes = Vec::new();
        if p.loaded {
            notes.push("loaded");
        }
        if !p.root_exists {
            notes.push("root missing: `amanctl gc` drops it");
        }
        println!(
            "{:>10}  {}{}",
            human_bytes(p.bytes),
            p.root,
            if notes.is_empty() {
                String::new()
            } else {
                format!("  ({})", notes.join(", "))
            }
        );
    }
    ExitCode::SUCCESS
}

/// Drop the given projects' indexes, or (`missing`) those whose root is gone.
pub async fn forget(roots: Vec<String>, missing: bool, as_json: bool) -> ExitCode {
    let reply = match client().await {
        Ok(mut client) => client.forget(pb::ForgetRequest { roots, missing }).await,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let reply = match reply {
        Ok(reply) => reply.into_inner(),
        Err(status) => {
            eprintln!("amanctl: {}", status.message());
            return ExitCode::FAILURE;
        }
    };
    if as_json {
        println!(
            "{:#}",
            json!({"forgotten": reply.forgotten, "bytes_freed": reply.bytes_freed})
        );
        return ExitCode::SUCCESS;
    }
    for root in &reply.forgotten {
        println!("forgot {root}");
    }
    println!(
        "{}, {} freed",
        super::counted(reply.forgotten.len(), "project"),
        human_bytes(reply.bytes_freed)
    );
    ExitCode::SUCCESS
}
