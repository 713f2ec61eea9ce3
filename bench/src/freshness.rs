//! `amanmcp-bench freshness`: how long a saved edit takes to become searchable.

use std::path::Path;
use std::time::{Duration, Instant};

use amanmcp_proto::DaemonClient;
use amanmcp_proto::pb;
use anyhow::{Context, bail};
use tonic::transport::Channel;

use crate::world::*;

/// Poll `query` (a new word) until a hit in `path` holding it appears; returns the elapsed
/// time since `since`. Lexical mode, and the hit must hold the word: in default mode the
/// vectors of the markers saved before it (the same file, words of the same pieces) put the
/// file in the top five before the new one was indexed.
pub(crate) async fn until_found(
    client: &mut DaemonClient<Channel>,
    root: &str,
    query: &str,
    path: &str,
    since: Instant,
) -> anyhow::Result<f64> {
    let deadline = since + Duration::from_secs(60);
    loop {
        let reply = client
            .search(pb::SearchRequest {
                root: root.to_string(),
                query: query.to_string(),
                limit: 5,
                mode: "lexical".into(),
                ..Default::default()
            })
            .await?
            .into_inner();
        if reply
            .results
            .iter()
            .any(|h| h.path == path && h.snippet.contains(query))
        {
            return Ok(since.elapsed().as_secs_f64() * 1e3);
        }
        if Instant::now() > deadline {
            let found: Vec<String> = reply
                .results
                .iter()
                .map(|h| format!("{}:{}", h.path, h.start_line))
                .collect();
            bail!("{query} never became searchable in {path} (search gives {found:?})");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

pub async fn bench_freshness(dir: &Path, edits: usize) -> anyhow::Result<()> {
    let copy = tempfile::Builder::new()
        .prefix("amanmcp-bench-tree-")
        .tempdir_in("/tmp")?;
    copy_tree(dir, copy.path()).with_context(|| format!("copying {}", dir.display()))?;
    let root = copy.path().canonicalize()?;
    let root_str = root.to_string_lossy().into_owned();
    let (daemon, mut client) = start_daemon().await?;
    println!(
        "amanmcp-bench freshness {} (copy of {})",
        root_str,
        dir.display()
    );
    open_project(&mut client, &root_str).await?;
    let status = wait_for_pass(&mut client, &root_str, 1).await?;
    println!("indexed {} files; watch: {}", status.files, status.watch);

    // Saved files: append a fresh identifier to an existing file, time until searchable.
    let target = first_source_file(&root).context("no file to edit")?;
    let rel = target.strip_prefix(&root)?.to_string_lossy().into_owned();
    let mut samples = Vec::new();
    for i in 0..edits {
        let marker = format!("amanmcpfreshmarker{i}");
        let mut text = std::fs::read_to_string(&target)?;
        text.push_str(&format!("\n# {marker}\n"));
        let started = Instant::now();
        std::fs::write(&target, text)?;
        samples.push(until_found(&mut client, &root_str, &marker, &rel, started).await?);
    }
    println!(
        "saved file -> searchable (lexical): {}",
        summary_p95(samples)
    );

    // A storm: 2,000 new files at once (like a branch switch), until all are searchable.
    let before = project_status(&mut client, &root_str).await?.files;
    let started = Instant::now();
    for i in 0..2000 {
        let dir = root.join(format!("amanmcp_storm/d{}", i % 50));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join(format!("f{i}.py")),
            format!("def storm_{i}():\n    return 'stormmarker{i}'\n"),
        )?;
    }
    let written = started.elapsed().as_secs_f64() * 1e3;
    let last = until_found(
        &mut client,
        &root_str,
        "stormmarker1999",
        "amanmcp_storm/d49/f1999.py",
        started,
    )
    .await?;
    loop {
        let status = project_status(&mut client, &root_str).await?;
        if status.files >= before + 2000 {
            break;
        }
        if started.elapsed() > Duration::from_secs(120) {
            bail!("storm never settled: {} files", status.files);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!(
        "2,000-file storm: written in {written:.0} ms, last file searchable after {last:.0} ms, all {} files indexed after {:.0} ms",
        before + 2000,
        started.elapsed().as_secs_f64() * 1e3
    );
    drop(daemon);
    Ok(())
}
