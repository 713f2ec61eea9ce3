//! `amanmcp-bench graph`: the code graph's callers against compiler-grade gold edges.
//!
//! Gold (`bench/graph/gold/<repo>.tsv`, made by `bench/graph/make-gold.sh` from scip-python
//! or scip-typescript): for each definition, the innermost enclosing definition of every
//! reference to it. Each repository is indexed by the real daemon; for each gold callee the
//! daemon's `callers` answer (over gRPC) is compared with the gold callers:
//!
//! - precision: resolved callers that are gold callers (by any reference);
//! - recall: gold callers by a call (`f(...)`) found resolved; and found at all (resolved
//!   or ambiguous);
//! - ambiguous share; false-safe rate: callees with gold call-callers for which the answer
//!   has no link and no unexplained call (a "nobody calls this" that is wrong);
//! - latency of the `callers` call.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use amanmcp_proto::pb;
use anyhow::{Context, bail};

use crate::world::{start_daemon, summary, wait_for_pass};

#[derive(clap::Args)]
pub struct Options {
    /// The gold edge lists.
    #[arg(long, default_value = "bench/graph/gold")]
    pub gold: PathBuf,
    /// Where the checkouts are (`<dir>/<repo>`; default: the semble benchmark's).
    #[arg(long)]
    pub checkouts: Option<PathBuf>,
    /// Only these repositories, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub repos: Vec<String>,
    /// Print each wrong resolved caller, missed gold caller and false-safe answer.
    #[arg(long)]
    pub show: bool,
    /// Instead of the gold: latency on a copy of DIR (a git repository's checkout):
    /// `callers` and `callees` of its Python functions, and `impact` of a 300-line diff.
    #[arg(long, value_name = "DIR")]
    pub latency: Option<PathBuf>,
}

/// One gold caller: (path, line of its name, bare name).
type Caller = (String, u32, String);

struct Callee {
    path: String,
    qualified: String,
    /// Callers by any reference, and by a call.
    any: BTreeSet<Caller>,
    calls: BTreeSet<Caller>,
}

fn load_gold(path: &std::path::Path) -> anyhow::Result<Vec<Callee>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let mut by: BTreeMap<(String, u32, String), Callee> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 7 {
            bail!("{}: bad row {line:?}", path.display());
        }
        let key = (f[0].to_string(), f[1].parse()?, f[2].to_string());
        let callee = by.entry(key).or_insert_with(|| Callee {
            path: f[0].into(),
            qualified: f[2].into(),
            any: BTreeSet::new(),
            calls: BTreeSet::new(),
        });
        let caller = (f[3].to_string(), f[4].parse()?, f[5].to_string());
        if f[6] == "1" {
            callee.calls.insert(caller.clone());
        }
        callee.any.insert(caller);
    }
    Ok(by.into_values().collect())
}

/// Whether our caller `def` stands for the gold caller `gold`: the same file, its extent
/// holding the gold's name line. The index's definitions are classes, their members and
/// top-level functions, so a call inside a nested function is its outer definition's.
fn same(def: &pb::GraphDef, gold: &Caller) -> bool {
    def.path == gold.0 && def.start_line <= gold.1 && gold.1 <= def.end_line
}

#[derive(Default)]
struct Tally {
    callees: usize,
    skipped: usize,
    resolved: usize,
    resolved_right: usize,
    gold_calls: usize,
    found_resolved: usize,
    found_any: usize,
    ambiguous: usize,
    links: usize,
    with_gold: usize,
    false_safe: usize,
    latencies: Vec<f64>,
}

pub async fn run(options: Options) -> anyhow::Result<()> {
    if let Some(dir) = &options.latency {
        return latency(dir).await;
    }
    let checkouts = match options.checkouts.clone() {
        Some(dir) => dir,
        None => PathBuf::from(std::env::var("HOME").context("HOME")?).join(".cache/amanmcp-semble"),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&options.gold)
        .with_context(|| format!("{}", options.gold.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    files.sort();
    let (daemon, mut client) = start_daemon().await?;
    let mut total = Tally::default();
    println!(
        "repository      callees  precision  recall(calls)  found(calls)  ambiguous  false-safe  p50 ms"
    );
    for file in files {
        let repo = file
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if !options.repos.is_empty() && !options.repos.contains(&repo) {
            continue;
        }
        let root = checkouts.join(&repo);
        if !root.exists() {
            bail!(
                "{} is missing (see bench/README.md, code graph)",
                root.display()
            );
        }
        let root = root.canonicalize()?.to_string_lossy().into_owned();
        client
            .open_project(pb::OpenProjectRequest {
                root: root.clone(),
                ..Default::default()
            })
            .await?;
        wait_for_pass(&mut client, &root, 1).await?;
        let mut tally = Tally::default();
        for callee in load_gold(&file)? {
            let started = Instant::now();
            let reply = client
                .graph(pb::GraphRequest {
                    root: root.clone(),
                    kind: "callers".into(),
                    symbols: vec![callee.qualified.clone()],
                    path: Some(callee.path.clone()),
                    depth: 1,
                    ..Default::default()
                })
                .await;
            tally.latencies.push(started.elapsed().as_secs_f64() * 1e3);
            // A definition our index names otherwise (or not at all) is not scored.
            let Ok(reply) = reply.map(|r| r.into_inner()) else {
                tally.skipped += 1;
                continue;
            };
            if !reply.choices.is_empty() || reply.targets.len() != 1 {
                tally.skipped += 1;
                continue;
            }
            tally.callees += 1;
            let ours: Vec<(&pb::GraphDef, bool)> = reply
                .links
                .iter()
                .filter_map(|l| Some((l.from.as_ref()?, l.label == "resolved")))
                // Code at a file's top level has no enclosing definition in the gold.
                .filter(|(d, _)| d.kind != "file")
                .collect();
            let mut resolved: Vec<&pb::GraphDef> =
                ours.iter().filter(|o| o.1).map(|o| o.0).collect();
            resolved.sort_by_key(|d| (&d.path, d.start_line));
            resolved.dedup_by_key(|d| (d.path.clone(), d.start_line));
            tally.resolved += resolved.len();
            tally.resolved_right += resolved
                .iter()
                .filter(|d| callee.any.iter().any(|g| same(d, g)))
                .count();
            if options.show {
                for d in resolved
                    .iter()
                    .filter(|d| !callee.any.iter().any(|g| same(d, g)))
                {
                    println!(
                        "  wrong  {} <- {}:{} {}",
                        callee.qualified, d.path, d.start_line, d.qualified
                    );
                }
                for g in callee
                    .calls
                    .iter()
                    .filter(|g| !resolved.iter().any(|d| same(d, g)))
                {
                    let why = reply
                        .links
                        .iter()
                        .find(|l| l.from.as_ref().is_some_and(|d| same(d, g)))
                        .map_or("not found".to_string(), |l| {
                            format!("{} ({})", l.label, l.rule)
                        });
                    println!(
                        "  missed {} <- {}:{} {}  {why}",
                        callee.qualified, g.0, g.1, g.2
                    );
                }
                if !callee.calls.is_empty() && reply.links.is_empty() && reply.unexplained == 0 {
                    println!("  false-safe {} ({})", callee.qualified, callee.path);
                }
            }
            tally.links += reply.links.len();
            tally.ambiguous += reply
                .links
                .iter()
                .filter(|l| l.label == "ambiguous")
                .count();
            tally.gold_calls += callee.calls.len();
            for gold in &callee.calls {
                if resolved.iter().any(|d| same(d, gold)) {
                    tally.found_resolved += 1;
                }
                if ours.iter().any(|(d, _)| same(d, gold)) {
                    tally.found_any += 1;
                }
            }
            if !callee.calls.is_empty() {
                tally.with_gold += 1;
                if reply.links.is_empty() && reply.unexplained == 0 {
                    tally.false_safe += 1;
                }
            }
        }
        print_row(&repo, &tally);
        total.callees += tally.callees;
        total.skipped += tally.skipped;
        total.resolved += tally.resolved;
        total.resolved_right += tally.resolved_right;
        total.gold_calls += tally.gold_calls;
        total.found_resolved += tally.found_resolved;
        total.found_any += tally.found_any;
        total.ambiguous += tally.ambiguous;
        total.links += tally.links;
        total.with_gold += tally.with_gold;
        total.false_safe += tally.false_safe;
        total.latencies.extend(tally.latencies);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    print_row("all", &total);
    println!(
        "callers latency (ms): {}; callees scored {}, skipped {} (name not found as one definition)",
        summary(total.latencies.clone()),
        total.callees,
        total.skipped
    );
    drop(daemon);
    Ok(())
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}

fn print_row(name: &str, t: &Tally) {
    let mut sorted = t.latencies.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "{name:<15} {:>7}  {:>9.3}  {:>13.3}  {:>12.3}  {:>9.3}  {:>10.3}  {:>6.2}",
        t.callees,
        ratio(t.resolved_right, t.resolved),
        ratio(t.found_resolved, t.gold_calls),
        ratio(t.found_any, t.gold_calls),
        ratio(t.ambiguous, t.links),
        ratio(t.false_safe, t.with_gold),
        crate::world::percentile(&sorted, 0.5),
    );
}

/// Function names defined in the Python files under `root` (`def name(`), every `step`th.
fn sample_functions(root: &std::path::Path, step: usize) -> Vec<String> {
    let mut names = Vec::new();
    for file in crate::world::source_files(root) {
        if file.extension().is_none_or(|e| e != "py") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for line in text.lines() {
            if let Some(rest) = line.trim_start().strip_prefix("def ")
                && let Some(name) = rest.split('(').next()
                && !name.is_empty()
            {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    names.dedup();
    names.into_iter().step_by(step.max(1)).collect()
}

/// `git` in `dir`, failing loudly.
fn git(dir: &std::path::Path, args: &[&str]) -> anyhow::Result<()> {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()?;
    if !out.status.success() {
        bail!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// The page of links the MCP tools ask for by default (the shim's `limit`).
const TOOL_PAGE: u32 = 100;

/// Latency of the graph tools on a copy of `dir`, each call asking for the page the MCP
/// tools ask for.
async fn latency(dir: &std::path::Path) -> anyhow::Result<()> {
    let copy = tempfile::Builder::new()
        .prefix("amanmcp-graph-")
        .tempdir_in("/tmp")?;
    let root = copy.path().join("repo");
    crate::world::copy_tree(dir, &root)?;
    // A fresh history: the copy's own `.git` (a directory, or a worktree's pointer) goes.
    let _ = std::fs::remove_dir_all(root.join(".git"));
    let _ = std::fs::remove_file(root.join(".git"));
    git(&root, &["init", "-q"])?;
    git(&root, &["add", "-A"])?;
    git(&root, &["commit", "-q", "-m", "base"])?;
    // The files were written in the second the index was, so git cannot trust their stat
    // data ("racily clean") and every `git diff` would hash the whole tree (100 ms on
    // sympy). A user's checkout is older than its index; make this one so.
    std::thread::sleep(Duration::from_millis(1100));
    git(&root, &["update-index", "-q", "--refresh"])?;
    let root_str = root.canonicalize()?.to_string_lossy().into_owned();
    let (daemon, mut client) = start_daemon().await?;
    let started = Instant::now();
    client
        .open_project(pb::OpenProjectRequest {
            root: root_str.clone(),
            ..Default::default()
        })
        .await?;
    let status = wait_for_pass(&mut client, &root_str, 1).await?;
    println!(
        "indexed {} files, {} chunks in {:.1} s",
        status.files,
        status.chunks,
        started.elapsed().as_secs_f64()
    );
    // Timed on a quiet daemon: the embedding worker done.
    crate::world::wait_for_vectors(&mut client, &root_str, Duration::from_secs(3600)).await?;
    let names = sample_functions(&root, 7);
    let mut timed: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for kind in ["callers", "callees"] {
        for name in &names {
            let t = Instant::now();
            let _ = client
                .graph(pb::GraphRequest {
                    root: root_str.clone(),
                    kind: kind.into(),
                    symbols: vec![name.clone()],
                    depth: 1,
                    limit: Some(TOOL_PAGE),
                    ..Default::default()
                })
                .await;
            timed
                .entry(kind)
                .or_default()
                .push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    // A 300-line diff: one changed line at the top of each of 300 functions' bodies.
    let mut changed = 0;
    let mut edited_files = Vec::new();
    'files: for file in crate::world::source_files(&root) {
        if file.extension().is_none_or(|e| e != "py") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let mut out = Vec::new();
        let mut edited = false;
        for line in text.lines() {
            out.push(line.to_string());
            let trimmed = line.trim_start();
            if changed < 300 && trimmed.starts_with("def ") && line.ends_with(':') {
                let indent = &line[..line.len() - trimmed.len()];
                out.push(format!("{indent}    _touched = {changed}"));
                changed += 1;
                edited = true;
            }
        }
        if edited {
            std::fs::write(&file, out.join("\n") + "\n")?;
            edited_files.push(file.clone());
        }
        if changed >= 300 {
            break 'files;
        }
    }
    settle(&mut client, &root_str).await?;
    let mut git_diff = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        amanmcpd::search::graph::diff::git_diff(&root, &["HEAD".to_string()], &[]).output()?;
        git_diff.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let impact_request = pb::GraphRequest {
        root: root_str.clone(),
        kind: "impact".into(),
        depth: 2,
        limit: Some(TOOL_PAGE),
        ..Default::default()
    };
    let mut impact = Vec::new();
    let mut reached = 0;
    let mut total_links = 0;
    let mut complete = true;
    for _ in 0..20 {
        let t = Instant::now();
        let reply = client.graph(impact_request.clone()).await?.into_inner();
        impact.push(t.elapsed().as_secs_f64() * 1e3);
        reached = reply.impacted.len();
        total_links = reply.total_links;
        complete = reply.complete;
    }
    // As an agent works: save one more line in a file of the change, then ask again.
    let mut after_edit = Vec::new();
    for (k, file) in edited_files.iter().take(5).enumerate() {
        let text = std::fs::read_to_string(file)?;
        let Some(at) = text.find("\n    _touched = ") else {
            continue;
        };
        let edited = format!("{}\n    _touched_again = {k}{}", &text[..at], &text[at..]);
        std::fs::write(file, edited)?;
        settle(&mut client, &root_str).await?;
        let t = Instant::now();
        client.graph(impact_request.clone()).await?;
        after_edit.push(t.elapsed().as_secs_f64() * 1e3);
    }
    for (kind, samples) in timed {
        println!("{kind:<8} {} ", summary(samples));
    }
    let first = impact.first().copied().unwrap_or_default();
    println!(
        "impact of a {changed}-line diff (depth 2, {reached} definitions reached, {total_links} links{}): {}; the first call {first:.2} ms",
        if complete { "" } else { ", marked incomplete" },
        summary(impact)
    );
    println!(
        "  after one more line saved in a file of the change: {}",
        summary(after_edit)
    );
    println!("  of which `git diff` alone: {}", summary(git_diff));
    drop(daemon);
    Ok(())
}

/// Let the watcher take edits in (until the pass count holds still for a second), then
/// the edited functions' vectors: timings are taken on a quiet daemon.
async fn settle(
    client: &mut amanmcp_proto::DaemonClient<tonic::transport::Channel>,
    root: &str,
) -> anyhow::Result<()> {
    let mut last = u64::MAX;
    for _ in 0..120 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let status = crate::world::project_status(client, root).await?;
        if status.passes == last && status.state == pb::IndexState::Ready as i32 {
            break;
        }
        last = status.passes;
    }
    crate::world::wait_for_vectors(client, root, Duration::from_secs(3600)).await?;
    Ok(())
}
