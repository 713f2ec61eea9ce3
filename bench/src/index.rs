//! `amanmcp-bench index`: cold and no-change index time, size, search latency through gRPC
//! and through the shim, ANN recall against exact search.

use std::path::Path;
use std::time::{Duration, Instant};

use amanmcp_proto::pb;
use anyhow::{Context, bail};
use serde_json::json;

use crate::world::*;

/// Queries typical of an agent looking around an unfamiliar repository.
pub const QUERIES: &[&str] = &[
    "error handling",
    "parse configuration file",
    "read file contents",
    "http request timeout",
    "thread pool spawn",
    "unit test fixture",
    "cache invalidation",
    "serialize to json",
    "command line arguments",
    "logging setup",
    "matrix determinant",
    "simplify expression",
    "async runtime block_on",
    "retry with backoff",
    "permission denied",
    "TODO",
    "__init__",
    "fn main",
    "def test_",
    "where is authentication handled",
];

pub async fn bench_index(
    dir: &Path,
    rounds: usize,
    queries: &[String],
    in_place: bool,
    word_table: bool,
) -> anyhow::Result<()> {
    // Work on a private copy unless told otherwise, so the change figures never touch the
    // user's tree.
    let copy = if in_place {
        None
    } else {
        let copy = tempfile::Builder::new()
            .prefix("amanmcp-bench-tree-")
            .tempdir_in("/tmp")?;
        copy_tree(dir, copy.path()).with_context(|| format!("copying {}", dir.display()))?;
        Some(copy)
    };
    let dir = copy.as_ref().map_or(dir, |c| c.path());
    let root = dir
        .canonicalize()
        .with_context(|| format!("{}", dir.display()))?;
    let root_str = root.to_string_lossy().into_owned();
    // The daemon's data: as `start_daemon` makes it, or one holding the word table a daemon
    // fills once per machine.
    let with_table = if word_table {
        let started = Instant::now();
        let (data, computed) = private_data_dir(true)?;
        println!(
            "word table:        {computed} words computed in {:.1} s (on one core, before the daemon starts)",
            started.elapsed().as_secs_f64()
        );
        Some(data)
    } else {
        None
    };
    let (daemon, mut client) =
        start_daemon_on(with_table.as_ref().map(|data| data.path()), &[]).await?;
    println!("amanmcp-bench index {root_str}");

    // Cold index.
    let started = Instant::now();
    client
        .open_project(pb::OpenProjectRequest {
            root: root_str.clone(),
            ..Default::default()
        })
        .await?;
    let mut first_searchable = None;
    let status = loop {
        let status = project_status(&mut client, &root_str).await?;
        if first_searchable.is_none() && status.chunks > 0 {
            first_searchable = Some(started.elapsed());
        }
        if status.passes >= 1 {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let cold = started.elapsed().as_secs_f64();
    let mb = status.source_bytes as f64 / 1e6;
    println!(
        "cold index:        {cold:.2} s wall ({} ms in the daemon's pass)",
        status.last_pass_ms
    );
    if let Some(t) = first_searchable {
        println!("first searchable:  {:.2} s", t.as_secs_f64());
    }
    println!(
        "files:             {} indexed, {} skipped",
        status.files, status.skipped_files
    );
    println!("chunks:            {}", status.chunks);
    println!("source:            {mb:.2} MB");
    println!(
        "throughput:        {:.0} files/s, {:.2} MB/s",
        status.files as f64 / cold,
        mb / cold
    );
    println!(
        "index size:        {:.2} MB ({:.2}x source)",
        status.index_bytes as f64 / 1e6,
        status.index_bytes as f64 / status.source_bytes.max(1) as f64
    );
    if let Some(error) = &status.last_error {
        println!("last error:        {error}");
    }
    // A quick first pass made every file searchable by lines; the pass after it parses them.
    let status = if status.provisional_files > 0 {
        println!(
            "provisional:       {} files chunked by lines, parsed by the next pass",
            status.provisional_files
        );
        let parsed = wait_for_pass(&mut client, &root_str, 2).await?;
        println!(
            "every file parsed: {:.2} s wall ({} ms in the second pass); {} chunks, index {:.2} MB",
            started.elapsed().as_secs_f64(),
            parsed.last_pass_ms,
            parsed.chunks,
            parsed.index_bytes as f64 / 1e6
        );
        parsed
    } else {
        status
    };

    // Vectors, computed in the background after the lexical pass.
    let embed_started = Instant::now();
    // New semantic queries while the chunks are being embedded: each must embed its query
    // beside the embedding worker.
    let mut during = Vec::new();
    for query in queries.iter().take(20) {
        let t = Instant::now();
        client
            .search(pb::SearchRequest {
                root: root_str.clone(),
                query: format!("{query} (while embedding)"),
                limit: 10,
                mode: "semantic".into(),
                ..Default::default()
            })
            .await?;
        during.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let still_embedding = project_status(&mut client, &root_str)
        .await?
        .vectors
        .is_some_and(|v| v.pending > 0);
    println!(
        "search via gRPC, semantic new query while embedding{}: {}",
        if still_embedding {
            ""
        } else {
            " (ended before the last)"
        },
        summary(during)
    );
    let with_vectors = wait_for_vectors(&mut client, &root_str, Duration::from_secs(7200)).await?;
    if let Some(v) = &with_vectors.vectors {
        let s = embed_started.elapsed().as_secs_f64();
        println!(
            "vectors:           {} chunks embedded {s:.1} s after the lexical pass ({:.1} chunks/s; {})",
            v.embedded,
            v.embedded as f64 / s.max(1e-3),
            v.embedder
        );
        println!(
            "index size:        {:.2} MB with vectors ({:.2}x source)",
            with_vectors.index_bytes as f64 / 1e6,
            with_vectors.index_bytes as f64 / with_vectors.source_bytes.max(1) as f64
        );
    }
    // Left alone, the daemon reopens a complete project to compact its LMDB file (after
    // 10 s unused, on the janitor's next tick): the size the index keeps.
    let fresh = with_vectors.index_bytes;
    let settle_started = Instant::now();
    let mut settled = None;
    while settle_started.elapsed() < Duration::from_secs(90) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        // A reopened project is a new one: its figures start over, its size is the new file's.
        if let Ok(now) = project_status(&mut client, &root_str).await
            && now.passes > 0
            && now.index_bytes < fresh
        {
            settled = Some(now);
            break;
        }
    }
    // A reopened project counts its passes anew.
    let passes = settled.as_ref().map_or(status.passes, |now| now.passes);
    match settled {
        Some(now) => println!(
            "index size settled: {:.2} MB ({:.2}x source; {:.2} MB right after embedding), {:.0} s later",
            now.index_bytes as f64 / 1e6,
            now.index_bytes as f64 / now.source_bytes.max(1) as f64,
            fresh as f64 / 1e6,
            settle_started.elapsed().as_secs_f64()
        ),
        None => println!("index size settled: not compacted within 90 s"),
    }

    // No-change re-index.
    let started = Instant::now();
    client
        .open_project(pb::OpenProjectRequest {
            root: root_str.clone(),
            ..Default::default()
        })
        .await?;
    let again = wait_for_pass(&mut client, &root_str, passes + 1).await?;
    println!(
        "no-change reindex: {:.3} s wall ({} ms in the daemon's pass)",
        started.elapsed().as_secs_f64(),
        again.last_pass_ms
    );

    // Single-file change: append a new identifier to one file (of a private copy) and time
    // until a search finds it.
    if let Some(copy) = &copy {
        let target = first_source_file(copy.path()).context("no file to change")?;
        let mut samples = Vec::new();
        for round in 0..5 {
            let marker = format!("amanmcpbenchmarker{round}");
            let mut text = std::fs::read_to_string(&target)?;
            text.push_str(&format!("\n# {marker}\n"));
            let passes = project_status(&mut client, &root_str).await?.passes;
            let started = Instant::now();
            std::fs::write(&target, text)?;
            client
                .open_project(pb::OpenProjectRequest {
                    root: root_str.clone(),
                    ..Default::default()
                })
                .await?;
            wait_for_pass(&mut client, &root_str, passes + 1).await?;
            let reply = client
                .search(pb::SearchRequest {
                    root: root_str.clone(),
                    query: marker.clone(),
                    limit: 1,
                    mode: "lexical".into(),
                    ..Default::default()
                })
                .await?
                .into_inner();
            if reply.results.is_empty() {
                bail!("{marker} not searchable after the pass");
            }
            samples.push(started.elapsed().as_secs_f64() * 1e3);
        }
        println!("single-file change -> searchable: {}", summary(samples));
    }

    // Search latency over gRPC, per mode. The first round embeds each query (the daemon
    // keeps recent query vectors), so it is reported apart.
    let mut hits = 0usize;
    // Names of the symbols search found: the names `usages` is timed on below.
    let mut names: Vec<String> = Vec::new();
    let modes: &[&str] = if with_vectors.vectors.is_some() {
        &["lexical", "semantic", "hybrid"]
    } else {
        &["lexical"]
    };
    for (mode_idx, mode) in modes.iter().enumerate() {
        let mut first = Vec::new();
        let mut again = Vec::new();
        for round in 0..rounds.max(2) {
            for query in queries {
                // Trailing spaces change nothing but the query-vector cache key: each mode
                // meets each query new in round 0, then repeated.
                let query = format!("{query}{}", " ".repeat(mode_idx));
                let t = Instant::now();
                let reply = client
                    .search(pb::SearchRequest {
                        root: root_str.clone(),
                        query,
                        limit: 10,
                        mode: mode.to_string(),
                        ..Default::default()
                    })
                    .await?
                    .into_inner();
                let ms = t.elapsed().as_secs_f64() * 1e3;
                if round == 0 {
                    first.push(ms);
                } else {
                    again.push(ms);
                }
                hits += reply.results.len();
                for symbol in reply.results.iter().filter_map(|r| r.symbol.as_deref()) {
                    let bare = symbol.rsplit(['.', ':']).next().unwrap_or(symbol);
                    if !bare.is_empty()
                        && bare.chars().all(|c| c.is_alphanumeric() || c == '_')
                        && !names.iter().any(|n| n == bare)
                    {
                        names.push(bare.to_string());
                    }
                }
            }
        }
        println!("search via gRPC, {mode:<8} new query: {}", summary(first));
        println!("search via gRPC, {mode:<8} repeated:  {}", summary(again));
    }
    let mut latencies = Vec::new();
    let mut occurrences = 0u64;
    for name in names.iter().take(40) {
        let t = Instant::now();
        let reply = client
            .usages(pb::UsagesRequest {
                root: root_str.clone(),
                name: name.clone(),
                limit: 50,
                ..Default::default()
            })
            .await?
            .into_inner();
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        occurrences += reply.total;
    }
    if !latencies.is_empty() {
        println!(
            "usages via gRPC (names of symbols found, limit 50, mean {:.0} occurrences): {}",
            occurrences as f64 / latencies.len() as f64,
            summary(latencies)
        );
    }

    // Search latency through the real shim (MCP over stdio).
    let (spawn_to_init, shim) = shim_latencies(&daemon.socket, &root, rounds, queries)?;
    println!("search via shim:   {}", summary(shim));
    println!("shim spawn->initialize: {}", summary(spawn_to_init));
    println!(
        "(mean results per query: {:.1})",
        hits as f64 / (rounds.max(2) * queries.len() * modes.len()).max(1) as f64
    );
    let kept = daemon.stop_keeping_data();
    if let (Some(kept), Some(_)) = (&kept, &with_vectors.vectors) {
        ann_recall(&kept.path().join("data"), &root, queries)?;
    }
    Ok(())
}

/// The ANN graph's recall@10 against exact search over the project's real vectors, asking for
/// 100 neighbours as search does, at the default search effort and larger ones; queries are
/// the bench queries (embedded by the configured embedder) and a sample of chunk vectors.
fn ann_recall(data_dir: &Path, root: &Path, queries: &[String]) -> anyhow::Result<()> {
    let dir = amanmcpd::index::project_dir(data_dir, root).join("lmdb");
    let store = amanmcpd::index::store::Store::open(&dir)?;
    store_recall(&store, queries, 200)
}

/// [`ann_recall`] over any store: `samples` of its own vectors as probes besides `queries`.
pub fn store_recall(
    store: &amanmcpd::index::store::Store,
    queries: &[String],
    samples: usize,
) -> anyhow::Result<()> {
    let vectors = store.all_vectors()?;
    if vectors.len() < 20 {
        return Ok(());
    }
    let Some(embedder) = amanmcpd::embed::EmbedConfig::from_env()?.build()? else {
        return Ok(());
    };
    let mut probes: Vec<Vec<f32>> = embedder.embed(queries, amanmcpd::embed::Purpose::Query)?;
    if probes
        .first()
        .is_some_and(|p| p.len() != vectors[0].1.len())
    {
        probes.clear();
    }
    let stride = (vectors.len() / samples).max(1);
    probes.extend(
        vectors
            .iter()
            .step_by(stride)
            .take(samples)
            .map(|(_, v)| v.clone()),
    );
    let exact = |probe: &[f32]| -> Vec<u64> {
        let mut scored: Vec<(f32, u64)> = vectors
            .iter()
            .map(|(id, v)| (v.iter().zip(probe).map(|(a, b)| a * b).sum::<f32>(), *id))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().take(10).map(|(_, id)| id).collect()
    };
    let truth: Vec<Vec<u64>> = probes.iter().map(|p| exact(p)).collect();
    for effort in [0usize, 500, 1000, 2000] {
        let mut found = 0usize;
        let mut latencies = Vec::new();
        for (probe, truth) in probes.iter().zip(&truth) {
            let t = Instant::now();
            // As search asks: 100 neighbours.
            let ann = store.nearest(probe, 100, None, effort)?;
            latencies.push(t.elapsed().as_secs_f64() * 1e3);
            found += ann
                .iter()
                .take(10)
                .filter(|(id, _)| truth.contains(id))
                .count();
        }
        println!(
            "ANN recall@10 (hannoy, ef {}): {:.3} over {} probes, {} vectors; query {}",
            if effort == 0 {
                "default".to_string()
            } else {
                effort.to_string()
            },
            found as f64 / (10 * probes.len()) as f64,
            probes.len(),
            vectors.len(),
            summary(latencies)
        );
    }
    Ok(())
}

fn shim_latencies(
    socket: &Path,
    root: &Path,
    rounds: usize,
    queries: &[String],
) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let mut spawn_to_init = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let mut shim = spawn_shim(socket, root);
        shim.initialize();
        spawn_to_init.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut shim = spawn_shim(socket, root);
    shim.initialize();
    let after_init = peak_rss_mb(shim.pid());
    let mut samples = Vec::new();
    for _ in 0..rounds {
        for query in queries {
            let t = Instant::now();
            let reply = shim.request(
                "tools/call",
                json!({"name": "search", "arguments": {"query": query, "limit": 10}}),
            );
            samples.push(t.elapsed().as_secs_f64() * 1e3);
            if reply["result"]["isError"] == json!(true) {
                bail!("search {query:?} failed: {reply}");
            }
        }
    }
    if let (Some(init), Some(end)) = (after_init, peak_rss_mb(shim.pid())) {
        println!(
            "shim peak RSS:     {init:.1} MB after initialize, {end:.1} MB after the searches"
        );
    }
    Ok((spawn_to_init, samples))
}
