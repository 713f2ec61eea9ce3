//! `amanmcp-bench cosqa`: MRR of natural-language queries over CoSQA's code snippets, in
//! every mode, with floors that fail the run.

use std::path::Path;
use std::time::{Duration, Instant};

use amanmcp_proto::pb;
use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::world::*;

pub const MODES: [&str; 3] = ["lexical", "semantic", "hybrid"];

pub async fn bench_cosqa(
    eval: &Path,
    floors: [Option<f64>; 3],
    dump: Option<&Path>,
) -> anyhow::Result<()> {
    let mut rankings: Vec<serde_json::Map<String, Value>> = Vec::new();
    let map_text = std::fs::read_to_string(eval.join("code_idx_map.txt"))
        .with_context(|| format!("reading {}", eval.join("code_idx_map.txt").display()))?;
    let code_map: serde_json::Map<String, Value> = serde_json::from_str(&map_text)?;
    let queries: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(
        eval.join("cosqa-retrieval-dev-500.json"),
    )?)?;
    let corpus = tempfile::Builder::new()
        .prefix("amanmcp-cosqa-")
        .tempdir_in("/tmp")?;
    for (code, idx) in &code_map {
        let idx = idx.as_u64().context("code index")?;
        std::fs::write(corpus.path().join(format!("f{idx:05}.py")), code)?;
    }
    let root = corpus.path().canonicalize()?.to_string_lossy().into_owned();
    let (daemon, mut client) = start_daemon().await?;
    let started = Instant::now();
    client
        .open_project(pb::OpenProjectRequest {
            root: root.clone(),
            ..Default::default()
        })
        .await?;
    let status = wait_for_pass(&mut client, &root, 1).await?;
    let lexical_s = started.elapsed().as_secs_f64();
    println!(
        "cosqa: {} functions indexed ({} chunks) in {lexical_s:.1} s; {} queries",
        status.files,
        status.chunks,
        queries.len()
    );
    let status = wait_for_vectors(&mut client, &root, Duration::from_secs(1800)).await?;
    if let Some(v) = &status.vectors {
        let embed_s = started.elapsed().as_secs_f64() - lexical_s;
        println!(
            "cosqa: {} chunks embedded {embed_s:.1} s after the lexical pass ({:.1} chunks/s); model {}",
            v.embedded,
            v.embedded as f64 / embed_s.max(1e-3),
            v.model
        );
    }
    let mut failures = Vec::new();
    for (mode, floor) in MODES.iter().zip(floors) {
        if *mode != "lexical" && status.vectors.is_none() {
            println!("cosqa {mode}: skipped (no embedder)");
            continue;
        }
        let (mut rr, mut r1, mut r5, mut r10) = (0.0, 0.0, 0.0, 0.0);
        let mut latencies = Vec::new();
        for (query_idx, query) in queries.iter().enumerate() {
            let text = query["doc"].as_str().context("doc")?;
            let want = query["retrieval_idx"].as_u64().context("retrieval_idx")?;
            let want_path = format!("f{want:05}.py");
            let t = Instant::now();
            let reply = client
                .search(pb::SearchRequest {
                    root: root.clone(),
                    query: text.to_string(),
                    limit: 100,
                    mode: mode.to_string(),
                    ..Default::default()
                })
                .await?
                .into_inner();
            latencies.push(t.elapsed().as_secs_f64() * 1e3);
            let mut files: Vec<&str> = Vec::new();
            for hit in &reply.results {
                if !files.contains(&hit.path.as_str()) {
                    files.push(&hit.path);
                }
            }
            if let Some(rank) = files.iter().position(|p| *p == want_path) {
                rr += 1.0 / (rank + 1) as f64;
                r1 += f64::from(rank < 1);
                r5 += f64::from(rank < 5);
                r10 += f64::from(rank < 10);
            }
            if dump.is_some() {
                if rankings.len() <= query_idx {
                    rankings.push(serde_json::Map::new());
                }
                let entry = &mut rankings[query_idx];
                entry.insert("query".into(), json!(text));
                entry.insert("want".into(), json!(want_path));
                entry.insert((*mode).into(), json!(files));
            }
        }
        let n = queries.len().max(1) as f64;
        let mrr = rr / n;
        println!(
            "cosqa {mode}: MRR {mrr:.3}  R@1 {:.3}  R@5 {:.3}  R@10 {:.3}  (search {})",
            r1 / n,
            r5 / n,
            r10 / n,
            summary(latencies)
        );
        if let Some(floor) = floor
            && mrr < floor
        {
            failures.push(format!("{mode} MRR {mrr:.3} is below the floor {floor:.3}"));
        }
    }
    drop(daemon);
    if let Some(path) = dump {
        let lines: Vec<String> = rankings
            .into_iter()
            .map(|r| Value::Object(r).to_string())
            .collect();
        std::fs::write(path, lines.join("\n") + "\n")?;
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(())
}
