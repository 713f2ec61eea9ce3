//! `amanmcp-bench stress`: many shims at once on one daemon (every answer checked), then
//! rounds of `kill -9` at random moments of indexing and embedding, each restart checked with
//! `verify`. Figures for the hardening notes; the e2e tests run the same with small counts.

use std::time::{Duration, Instant};

use amanmcp_proto::pb;
use anyhow::Context;
use serde_json::json;

use crate::world::*;

/// Options of a run.
#[derive(clap::Args)]
pub struct Options {
    /// The repository to copy and index.
    pub dir: std::path::PathBuf,
    /// Shims at once.
    #[arg(long, default_value_t = 50)]
    pub shims: usize,
    /// Searches per shim.
    #[arg(long, default_value_t = 1000)]
    pub queries: usize,
    /// Kill rounds.
    #[arg(long, default_value_t = 100)]
    pub kills: usize,
}

pub async fn run(options: Options) -> anyhow::Result<()> {
    let copy = tempfile::Builder::new()
        .prefix("amanmcp-bench-tree-")
        .tempdir_in("/tmp")?;
    copy_tree(&options.dir, copy.path())
        .with_context(|| format!("copying {}", options.dir.display()))?;
    let root = copy.path().canonicalize()?;
    let root_str = root.to_string_lossy().into_owned();

    // Many shims at once.
    let (daemon, mut client) = start_daemon().await?;
    client
        .open_project(pb::OpenProjectRequest {
            root: root_str.clone(),
            ..Default::default()
        })
        .await?;
    wait_for_pass(&mut client, &root_str, 1).await?;
    // Every chunk embedded first, so an empty semantic answer is a fault, not a wait.
    let status = wait_for_vectors(&mut client, &root_str, Duration::from_secs(3600)).await?;
    let started = Instant::now();
    let threads: Vec<_> = (0..options.shims)
        .map(|s| {
            let socket = daemon.socket.clone();
            let root = root.clone();
            let queries = options.queries;
            std::thread::spawn(move || {
                let mut shim = spawn_shim(&socket, &root);
                shim.initialize();
                let (mut latencies, mut errors, mut empty) = (Vec::new(), 0usize, 0usize);
                for i in 0..queries {
                    let query = crate::index::QUERIES[(s + i) % crate::index::QUERIES.len()];
                    let mode = ["lexical", "hybrid", "semantic"][i % 3];
                    let t = Instant::now();
                    let reply = shim
                        .call_tool("search", json!({"query": query, "limit": 10, "mode": mode}));
                    latencies.push(t.elapsed().as_secs_f64() * 1e3);
                    if reply.get("error").is_some() || reply["result"]["isError"] == true {
                        errors += 1;
                    } else if mode == "semantic"
                        && reply["result"]["structuredContent"]["results"]
                            .as_array()
                            .is_none_or(Vec::is_empty)
                    {
                        empty += 1;
                    }
                }
                (latencies, errors, empty)
            })
        })
        .collect();
    let (mut latencies, mut errors, mut empty) = (Vec::new(), 0, 0);
    for thread in threads {
        let (l, e, m) = thread
            .join()
            .map_err(|_| anyhow::anyhow!("a shim thread panicked"))?;
        latencies.extend(l);
        errors += e;
        empty += m;
    }
    let seconds = started.elapsed().as_secs_f64();
    let total = latencies.len();
    println!(
        "stress: {} shims x {} searches on {} files: {total} answered, {errors} errors, {empty} semantic answers empty; {:.0} searches/s; {}",
        options.shims,
        options.queries,
        status.files,
        total as f64 / seconds,
        summary(latencies)
    );
    if let Some(rss) = peak_rss_mb(daemon.child.id()) {
        println!("stress: daemon peak RSS {rss:.1} MB");
    }
    drop(daemon);

    // kill -9 at random moments; every restart must verify clean.
    let data = private_dir("amanmcp-bench-kills-")?;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut clean = 0;
    let mut files = source_files(&root);
    files.sort();
    for round in 0..options.kills {
        let (mut daemon, mut client) = start_daemon_on(Some(data.path()), &[]).await?;
        client
            .open_project(pb::OpenProjectRequest {
                root: root_str.clone(),
                ..Default::default()
            })
            .await?;
        wait_for_pass(&mut client, &root_str, 1).await?;
        let report = client
            .verify(pb::VerifyRequest {
                root: root_str.clone(),
            })
            .await?
            .into_inner();
        if report.ok {
            clean += 1;
        } else {
            println!(
                "round {round}: verify failed after restart: {:?}",
                report.problems
            );
        }
        // Change some files, then kill at a random moment of the update and embedding.
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        for k in 0..20.min(files.len()) {
            let file = &files[(seed as usize / 7 + k * 13) % files.len()];
            let mut text = std::fs::read_to_string(file).unwrap_or_default();
            text.push_str(&format!("\n// amanmcp stress round {round}\n"));
            std::fs::write(file, text)?;
        }
        let wait = Duration::from_millis((seed >> 33) % 400);
        tokio::time::sleep(wait).await;
        let _ = daemon.child.kill();
        let _ = daemon.child.wait();
    }
    // The last restart, checked too.
    let (_daemon, mut client) = start_daemon_on(Some(data.path()), &[]).await?;
    client
        .open_project(pb::OpenProjectRequest {
            root: root_str.clone(),
            ..Default::default()
        })
        .await?;
    wait_for_pass(&mut client, &root_str, 1).await?;
    let last = client
        .verify(pb::VerifyRequest { root: root_str })
        .await?
        .into_inner();
    println!(
        "stress: {} kill -9 rounds during updates and embedding: {} of {} restarts verified clean",
        options.kills,
        clean + usize::from(last.ok),
        options.kills + 1
    );
    Ok(())
}
