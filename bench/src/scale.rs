//! `amanmcp-bench scale`: one monorepo built from the checkouts at hand, indexed at several
//! sizes by a fresh daemon each, so growth is visible: lexical ready, vectors complete,
//! peak memory, memory as the vectors complete and once serving (steady), idle memory, index
//! size, query latency (lexical and hybrid, gRPC and through the shim), and how soon a saved
//! file is searchable.
//!
//! The monorepo takes source files round-robin from the given checkouts (each under its
//! checkout's name); past the files they hold, copies follow under `copy-K/` (a vendored
//! copy: the same words, other paths, so their chunks are new texts all the same).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use amanmcp_proto::pb;
use anyhow::{Context, bail};
use serde_json::json;

use crate::freshness::until_found;
use crate::index::QUERIES;
use crate::world::*;

/// What one size measured.
struct Row {
    files: usize,
    chunks: u64,
    lexical_s: f64,
    /// After lexical ready, until every file was parsed (by the second pass after a quick
    /// first one); `vectors_s` too counts from lexical ready.
    parsed_s: f64,
    vectors_s: f64,
    peak_mb: f64,
    /// The moment the vectors complete (the writer's last commits still resident).
    done_mb: f64,
    done_anon_mb: f64,
    /// Serving: after the searches that follow, the writer quiet for 2 s.
    steady_mb: f64,
    steady_anon_mb: f64,
    idle_mb: f64,
    idle_anon_mb: f64,
    index_mb: f64,
    lexical_ms: Vec<f64>,
    hybrid_ms: Vec<f64>,
    shim_hybrid_ms: Vec<f64>,
    fresh_ms: Vec<f64>,
}

pub async fn bench_scale(
    sources: &[PathBuf],
    sizes: &[usize],
    word_table: bool,
) -> anyhow::Result<()> {
    let pool = file_pool(sources)?;
    println!(
        "amanmcp-bench scale: {} source files in {} checkouts; sizes {sizes:?}",
        pool.len(),
        sources.len()
    );
    println!(
        "| files | chunks | lexical ready | every file parsed | vectors complete | peak RSS | RSS as vectors complete (own) | steady RSS, serving (own) | idle RSS (own) | index | lexical p50/p99 | hybrid p50/p99 | shim hybrid p50 | saved -> searchable p95 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    for &size in sizes {
        let tree = tempfile::Builder::new()
            .prefix("amanmcp-bench-mono-")
            .tempdir_in("/tmp")?;
        build_monorepo(&pool, size, tree.path())?;
        let row = measure(tree.path(), word_table).await?;
        print_row(&row);
        rows.push(row);
    }
    // Linear growth shows as flat costs per thousand files.
    println!();
    for row in &rows {
        let k = row.files as f64 / 1000.0;
        println!(
            "per 1,000 files at {}: lexical {:.2} s, vectors {:.2} s, peak {:.0} MB, index {:.1} MB",
            row.files,
            row.lexical_s / k,
            row.vectors_s / k,
            row.peak_mb / k,
            row.index_mb / k
        );
    }
    Ok(())
}

/// Every source file of each checkout, interleaved one checkout at a time, with the path
/// it gets in the monorepo.
fn file_pool(sources: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, PathBuf)>> {
    let mut lists = Vec::new();
    for source in sources {
        let name = source
            .file_name()
            .context("a checkout needs a name")?
            .to_string_lossy()
            .into_owned();
        let files: Vec<(PathBuf, PathBuf)> = source_files(source)
            .into_iter()
            .filter_map(|file| {
                let relative = file.strip_prefix(source).ok()?.to_path_buf();
                Some((file, Path::new(&name).join(relative)))
            })
            .collect();
        lists.push(files.into_iter());
    }
    let mut pool = Vec::new();
    loop {
        let before = pool.len();
        for list in &mut lists {
            pool.extend(list.next());
        }
        if pool.len() == before {
            break;
        }
    }
    if pool.is_empty() {
        bail!("no source files in {sources:?}");
    }
    Ok(pool)
}

/// The first `size` files of the pool (again under `copy-K/` once it runs out) in `to`.
fn build_monorepo(pool: &[(PathBuf, PathBuf)], size: usize, to: &Path) -> anyhow::Result<()> {
    for i in 0..size {
        let (from, relative) = &pool[i % pool.len()];
        let copy = i / pool.len();
        let target = if copy == 0 {
            to.join(relative)
        } else {
            to.join(format!("copy-{copy}")).join(relative)
        };
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(from, &target).with_context(|| format!("copying {}", from.display()))?;
    }
    Ok(())
}

async fn measure(root: &Path, word_table: bool) -> anyhow::Result<Row> {
    let root = root.canonicalize()?;
    let root_str = root.to_string_lossy().into_owned();
    let (data, _) = private_data_dir(word_table)?;
    let (daemon, mut client) = start_daemon_on(Some(data.path()), &[]).await?;
    let pid = daemon.child.id();
    let started = Instant::now();
    open_project(&mut client, &root_str).await?;
    let status = wait_for_pass(&mut client, &root_str, 1).await?;
    let lexical_s = started.elapsed().as_secs_f64();
    if status.provisional_files > 0 {
        wait_for_pass(&mut client, &root_str, 2).await?;
    }
    let parsed_s = started.elapsed().as_secs_f64() - lexical_s;
    let with_vectors = wait_for_vectors(&mut client, &root_str, Duration::from_secs(7200)).await?;
    let vectors_s = started.elapsed().as_secs_f64() - lexical_s;
    let done_mb = rss_mb(pid).unwrap_or(f64::NAN);
    let done_anon_mb = anon_rss_mb(pid).unwrap_or(f64::NAN);

    let mut lexical_ms = Vec::new();
    let mut hybrid_ms = Vec::new();
    for (mode, out) in [("lexical", &mut lexical_ms), ("hybrid", &mut hybrid_ms)] {
        for query in QUERIES {
            let t = Instant::now();
            client
                .search(pb::SearchRequest {
                    root: root_str.clone(),
                    query: format!("{query} {mode}"),
                    limit: 10,
                    mode: mode.into(),
                    ..Default::default()
                })
                .await?;
            out.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    // The writer gives its map's pages back once quiet for a second.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let steady_mb = rss_mb(pid).unwrap_or(f64::NAN);
    let steady_anon_mb = anon_rss_mb(pid).unwrap_or(f64::NAN);
    let passes_before_shim = project_status(&mut client, &root_str).await?.passes;
    let mut shim = spawn_shim(&daemon.socket, &root);
    shim.initialize();
    let mut shim_hybrid_ms = Vec::new();
    for query in QUERIES {
        let t = Instant::now();
        let reply = shim.request(
            "tools/call",
            json!({"name": "search", "arguments": {"query": format!("{query} shim"), "limit": 10}}),
        );
        shim_hybrid_ms.push(t.elapsed().as_secs_f64() * 1e3);
        if reply["result"]["isError"] == json!(true) {
            bail!("shim search failed: {reply}");
        }
    }
    drop(shim);
    // A shim's session start has the daemon check the project against the disk (a
    // reconcile pass, 0.6-1.5 s at 55,000 files, during which the project stays `ready`: a
    // save then waits for it). The saves below measure the watcher, after it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while project_status(&mut client, &root_str).await?.passes <= passes_before_shim
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // A saved file: a new word appended, until search finds it there.
    let target = first_source_file(&root).context("no file to edit")?;
    let relative = target.strip_prefix(&root)?.to_string_lossy().into_owned();
    let mut fresh_ms = Vec::new();
    for i in 0..10 {
        let marker = format!("amanmcpscalemarker{i}");
        let mut text = std::fs::read_to_string(&target)?;
        text.push_str(&format!("\n// {marker}\n"));
        let since = Instant::now();
        std::fs::write(&target, text)?;
        fresh_ms.push(until_found(&mut client, &root_str, &marker, &relative, since).await?);
    }
    let peak_mb = peak_rss_mb(pid).unwrap_or(f64::NAN);
    // Idle: once the idle work is done. The daemon lets go of the word vectors it holds
    // after 30-60 s, and compacts a settled project's LMDB file at a janitor's tick once
    // nobody has used it for 10 s (the copy reads the whole map, then the project is
    // reopened and checked against the disk): read at 40 s, a run caught that copy resident.
    tokio::time::sleep(Duration::from_secs(120)).await;
    let idle_mb = rss_mb(pid).unwrap_or(f64::NAN);
    let idle_anon_mb = anon_rss_mb(pid).unwrap_or(f64::NAN);
    let row = Row {
        files: status.files as usize,
        chunks: with_vectors.chunks,
        lexical_s,
        parsed_s,
        vectors_s,
        peak_mb,
        done_mb,
        done_anon_mb,
        steady_mb,
        steady_anon_mb,
        idle_mb,
        idle_anon_mb,
        index_mb: with_vectors.index_bytes as f64 / 1e6,
        lexical_ms,
        hybrid_ms,
        shim_hybrid_ms,
        fresh_ms,
    };
    drop(daemon);
    Ok(row)
}

fn p50_p99(samples: &[f64]) -> (f64, f64) {
    (percentile_of(samples, 0.5), percentile_of(samples, 0.99))
}

fn percentile_of(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    percentile(&sorted, p)
}

fn print_row(row: &Row) {
    let (l50, l99) = p50_p99(&row.lexical_ms);
    let (h50, h99) = p50_p99(&row.hybrid_ms);
    let (s50, _) = p50_p99(&row.shim_hybrid_ms);
    println!(
        "| {} | {} | {:.1} s | +{:.1} s | +{:.1} s | {:.0} MB | {:.0} MB ({:.0}) | {:.0} MB ({:.0}) | {:.0} MB ({:.0}) | {:.0} MB | {l50:.1}/{l99:.1} ms | {h50:.1}/{h99:.1} ms | {s50:.1} ms | {:.0} ms |",
        row.files,
        row.chunks,
        row.lexical_s,
        row.parsed_s,
        row.vectors_s,
        row.peak_mb,
        row.done_mb,
        row.done_anon_mb,
        row.steady_mb,
        row.steady_anon_mb,
        row.idle_mb,
        row.idle_anon_mb,
        row.index_mb,
        percentile_of(&row.fresh_ms, 0.95),
    );
}
