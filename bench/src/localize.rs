//! Issue -> code localization through the real daemon (SWE-bench Lite/Verified, the Rust
//! set). Each repository is cloned once (sharing the bare directory's objects) and checked
//! out at each base commit in commit-date order, so the daemon re-indexes, and re-embeds,
//! only what changed between neighbouring commits (as it would for a developer).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use amanmcp_proto::pb;
use anyhow::{Context, bail};
use serde_json::Value;

use crate::world::{percentile, project_status, start_daemon_with, wait_for_vectors};

/// What to run.
#[derive(clap::Args)]
pub struct Options {
    /// The `visible.jsonl` of a set.
    #[arg(long, default_value = "../shared/eval/swebench_loc/visible.jsonl")]
    pub data: PathBuf,
    /// Where the bare repositories are: `DIR/OWNER+NAME/repo`.
    #[arg(long, default_value = "/work/.mirror")]
    pub mirrors: PathBuf,
    /// Only issues of repositories whose name contains this.
    #[arg(long)]
    pub repo: Option<String>,
    /// Only these issues (ids, comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub ids: Vec<String>,
    /// Print, for each answer, its top 5 results' symbols and the files one hop reaches.
    #[arg(long)]
    pub show_hops: bool,
    /// Per repository, only the N issues whose base commits are closest together.
    #[arg(long)]
    pub per_repo: Option<usize>,
    /// Modes to run, comma-separated.
    #[arg(long, default_value = "lexical,semantic,hybrid", value_delimiter = ',')]
    pub modes: Vec<String>,
    /// Score only gold files with this extension (the Rust set: `rs`).
    #[arg(long)]
    pub only_ext: Option<String>,
    /// Where to check the repositories out (default: a temporary directory).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Write each answer (issue, query form, mode, gold files, top 20 files) as a JSON line.
    #[arg(long)]
    pub dump: Option<PathBuf>,
}

struct Issue {
    id: String,
    repo: String,
    commit: String,
    queries: [(&'static str, String); 2],
    gold_files: Vec<String>,
    gold_lines: HashMap<String, Vec<u32>>,
}

/// Sums over issues for one (query form, mode).
#[derive(Default, Clone)]
struct Tally {
    n: f64,
    recall: [f64; 3],
    rr: f64,
    chunk_hit: [f64; 3],
    /// Issues with a gold file among the top 5 files or one call away (callers or
    /// callees) from a definition in the top 5 results.
    reach: f64,
    /// The same, one link away by a call, a base class or an import (`impact` at depth 1,
    /// and callees).
    reach_links: f64,
    /// Issues with a gold file among the top 5 files or one call away from a definition in
    /// the top 5 results or in the first result of each of the top 5 files.
    reach_files: f64,
    latencies: Vec<f64>,
}

const KS: [usize; 3] = [1, 5, 10];
/// Chunks asked for: enough to fill ten distinct files almost always.
const DEPTH: u32 = 60;

fn git(args: &[&str], dir: Option<&Path>) -> anyhow::Result<String> {
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let out = command.args(args).output()?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Check out `commit`. Snapshots may lack their largest blobs (data files the indexer would
/// skip anyway): each missing one is left out with a sparse-checkout rule and the checkout
/// retried.
fn checkout_at(checkout: &Path, commit: &str) -> anyhow::Result<()> {
    let sparse = checkout.join(".git/info/sparse-checkout");
    for _ in 0..200 {
        match git(&["checkout", "--quiet", "--force", commit], Some(checkout)) {
            Ok(_) => {
                git(&["clean", "--quiet", "-fdx"], Some(checkout))?;
                return Ok(());
            }
            Err(e) => {
                let message = e.to_string();
                let Some(path) = message
                    .split(" for '")
                    .nth(1)
                    .and_then(|rest| rest.split('\'').next())
                else {
                    return Err(e);
                };
                if !sparse.exists() {
                    git(&["config", "core.sparseCheckout", "true"], Some(checkout))?;
                    std::fs::create_dir_all(sparse.parent().context("sparse dir")?)?;
                    std::fs::write(&sparse, "/*\n")?;
                }
                let mut rules = std::fs::read_to_string(&sparse)?;
                let rule = format!("!/{path}\n");
                if rules.contains(&rule) {
                    return Err(e);
                }
                eprintln!("  (blob of {path} absent from the snapshot: left out)");
                rules.push_str(&rule);
                std::fs::write(&sparse, rules)?;
            }
        }
    }
    bail!("too many absent blobs at {commit}")
}

fn load(options: &Options) -> anyhow::Result<Vec<Issue>> {
    let text = std::fs::read_to_string(&options.data)
        .with_context(|| format!("reading {}", options.data.display()))?;
    let mut issues = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)?;
        let repo = v["repo"].as_str().context("repo")?.to_string();
        let id = v["instance_id"].as_str().unwrap_or_default();
        if !options.ids.is_empty() && !options.ids.iter().any(|i| i == id) {
            continue;
        }
        if options
            .repo
            .as_ref()
            .is_some_and(|r| !repo.contains(r.as_str()))
        {
            continue;
        }
        let keep = |path: &str| {
            options
                .only_ext
                .as_ref()
                .is_none_or(|ext| path.ends_with(&format!(".{ext}")))
        };
        let gold_files: Vec<String> = v["gold_files"]
            .as_array()
            .context("gold_files")?
            .iter()
            .filter_map(|f| f.as_str())
            .filter(|f| keep(f))
            .map(String::from)
            .collect();
        if gold_files.is_empty() {
            continue;
        }
        let gold_lines = v["gold_lines"]
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(path, lines)| {
                        let lines = lines
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(|n| n.as_u64())
                                    .map(|n| n as u32)
                                    .collect()
                            })
                            .unwrap_or_default();
                        (path.clone(), lines)
                    })
                    .collect()
            })
            .unwrap_or_default();
        issues.push(Issue {
            id: v["instance_id"].as_str().unwrap_or("?").to_string(),
            repo,
            commit: v["base_commit"]
                .as_str()
                .context("base_commit")?
                .to_string(),
            queries: [
                ("query", v["query"].as_str().context("query")?.to_string()),
                (
                    "query_title",
                    v["query_title"]
                        .as_str()
                        .context("query_title")?
                        .to_string(),
                ),
            ],
            gold_files,
            gold_lines,
        });
    }
    Ok(issues)
}

/// Run the localization benchmark and print its table.
pub async fn run(options: Options) -> anyhow::Result<()> {
    let issues = load(&options)?;
    if issues.is_empty() {
        bail!("no issues selected");
    }
    let scratch = tempfile::Builder::new()
        .prefix("amanmcp-localize-")
        .tempdir_in("/tmp")?;
    let workdir = options
        .workdir
        .clone()
        .unwrap_or_else(|| scratch.path().to_path_buf());
    let (daemon, mut client) = start_daemon_with(&[("AMANMCP_WATCH", "0")]).await?;
    let mut by_repo: BTreeMap<String, Vec<&Issue>> = BTreeMap::new();
    for issue in &issues {
        by_repo.entry(issue.repo.clone()).or_default().push(issue);
    }
    let mut tallies: BTreeMap<(String, String), Tally> = BTreeMap::new();
    let mut dump = match &options.dump {
        Some(path) => Some(std::io::BufWriter::new(std::fs::File::create(path)?)),
        None => None,
    };
    let started = Instant::now();
    let mut n_run = 0;
    for (repo, mut repo_issues) in by_repo {
        let bare = options.mirrors.join(repo.replace('/', "+")).join("repo");
        if !bare.is_dir() {
            bail!("{} not found: fetch github:{repo} first", bare.display());
        }
        let checkout = workdir.join(repo.replace('/', "+"));
        if !checkout.join(".git").is_dir() {
            let _ = std::fs::remove_dir_all(&checkout);
            git(
                &[
                    "clone",
                    "--quiet",
                    "--shared",
                    "--no-checkout",
                    &bare.to_string_lossy(),
                    &checkout.to_string_lossy(),
                ],
                None,
            )?;
        }
        // Oldest first: neighbouring commits share most of their files.
        let mut dated = Vec::new();
        for issue in repo_issues.drain(..) {
            let date: i64 = git(
                &["log", "-1", "--format=%ct", &issue.commit],
                Some(&checkout),
            )?
            .trim()
            .parse()
            .unwrap_or(0);
            dated.push((date, issue));
        }
        dated.sort_by_key(|(date, _)| *date);
        // A sample: the `per_repo` issues whose base commits lie closest together (so the
        // sample costs one index and few re-embeddings per repository).
        if let Some(n) = options.per_repo.filter(|n| *n > 0 && *n < dated.len()) {
            let best = (0..=dated.len() - n)
                .min_by_key(|&i| dated[i + n - 1].0 - dated[i].0)
                .unwrap_or(0);
            dated = dated.drain(best..best + n).collect();
        }
        let root = checkout.canonicalize()?.to_string_lossy().into_owned();
        for (_, issue) in dated {
            n_run += 1;
            let t = Instant::now();
            checkout_at(&checkout, &issue.commit)?;
            let passes = match project_status(&mut client, &root).await {
                Ok(status) => status.passes,
                Err(_) => 0,
            };
            client
                .reindex(pb::ReindexRequest {
                    root: root.clone(),
                    path: None,
                })
                .await?;
            loop {
                let status = project_status(&mut client, &root).await?;
                if status.passes > passes {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let lexical_s = t.elapsed().as_secs_f64();
            let status = wait_for_vectors(&mut client, &root, Duration::from_secs(3600)).await?;
            eprintln!(
                "{}: {} files, {} chunks; indexed in {lexical_s:.1} s, vectors after {:.1} s (last pass changed {} files)",
                issue.id,
                status.files,
                status.chunks,
                t.elapsed().as_secs_f64(),
                status.last_pass_changed
            );
            for (form, query) in &issue.queries {
                for mode in &options.modes {
                    let t = Instant::now();
                    let reply = client
                        .search(pb::SearchRequest {
                            root: root.clone(),
                            query: query.clone(),
                            limit: DEPTH,
                            mode: mode.clone(),
                            ..Default::default()
                        })
                        .await?
                        .into_inner();
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    let tally = tallies.entry((form.to_string(), mode.clone())).or_default();
                    let files = score(tally, issue, &reply, options.only_ext.as_deref());
                    tally.latencies.push(ms);
                    let show = options
                        .show_hops
                        .then(|| format!("{} {form} {mode}", issue.id));
                    let gold = &issue.gold_files;
                    let reach = one_hop(&mut client, &root, &reply, &files, gold, show).await?;
                    tally.reach += f64::from(u8::from(reach.calls));
                    tally.reach_links += f64::from(u8::from(reach.links));
                    tally.reach_files += f64::from(u8::from(reach.files_calls));
                    if let Some(out) = dump.as_mut() {
                        let line = serde_json::json!({
                            "id": issue.id, "form": form, "mode": mode,
                            "gold": issue.gold_files, "files": files,
                        });
                        writeln!(out, "{line}")?;
                    }
                }
            }
        }
    }
    if let Some(mut out) = dump {
        out.flush()?;
    }
    drop(daemon);
    println!(
        "localization: {n_run} of {} issues from {} in {:.0} s",
        issues.len(),
        options.data.display(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "{:<12} {:<9} {:>6} {:>6} {:>6} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>10} {:>9}",
        "query",
        "mode",
        "R@1",
        "R@5",
        "R@10",
        "MRR",
        "hit@1",
        "hit@5",
        "hit@10",
        "5+1hop",
        "+imports",
        "files+1hop",
        "p50 ms"
    );
    for ((form, mode), tally) in &tallies {
        let n = tally.n.max(1.0);
        let mut latencies = tally.latencies.clone();
        latencies.sort_by(f64::total_cmp);
        println!(
            "{form:<12} {mode:<9} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>10.3} {:>9.1}",
            tally.recall[0] / n,
            tally.recall[1] / n,
            tally.recall[2] / n,
            tally.rr / n,
            tally.chunk_hit[0] / n,
            tally.chunk_hit[1] / n,
            tally.chunk_hit[2] / n,
            tally.reach / n,
            tally.reach_links / n,
            tally.reach_files / n,
            percentile(&latencies, 0.5),
        );
    }
    Ok(())
}

/// Adds one answer to `tally`; returns its first 20 distinct files.
fn score(
    tally: &mut Tally,
    issue: &Issue,
    reply: &pb::SearchReply,
    only_ext: Option<&str>,
) -> Vec<String> {
    let keep = |path: &str| only_ext.is_none_or(|ext| path.ends_with(&format!(".{ext}")));
    let mut files: Vec<&str> = Vec::new();
    for hit in reply.results.iter().filter(|h| keep(&h.path)) {
        if !files.contains(&hit.path.as_str()) {
            files.push(&hit.path);
        }
    }
    tally.n += 1.0;
    let gold = &issue.gold_files;
    for (i, k) in KS.iter().enumerate() {
        let found = gold
            .iter()
            .filter(|g| files.iter().take(*k).any(|f| f == g))
            .count();
        tally.recall[i] += found as f64 / gold.len() as f64;
    }
    if let Some(rank) = files.iter().position(|f| gold.iter().any(|g| g == f)) {
        tally.rr += 1.0 / (rank + 1) as f64;
    }
    let chunks: Vec<&pb::SearchHit> = reply.results.iter().filter(|h| keep(&h.path)).collect();
    let hits_gold = |hit: &pb::SearchHit| {
        issue.gold_lines.get(&hit.path).is_some_and(|lines| {
            lines
                .iter()
                .any(|l| hit.start_line <= *l && *l <= hit.end_line)
        })
    };
    for (i, k) in KS.iter().enumerate() {
        if chunks.iter().take(*k).any(|h| hits_gold(h)) {
            tally.chunk_hit[i] += 1.0;
        }
    }
    files.iter().take(20).map(|f| f.to_string()).collect()
}

/// Which answers reach a gold file: among the answer's top 5 files, or one call away from a
/// definition in its top 5 results (their callers and callees: resolved, or ambiguous among
/// at most three candidates); one link away, counting also the classes deriving from such a
/// definition and the files importing it (`impact` at depth 1); and one call away from the
/// top 5 results or the first result of each of the top 5 files (a long definition's chunks
/// can fill the top 5 results with one symbol), or from each top file's own top level (what
/// it imports from the project and runs when loaded: `callees` of its path).
#[derive(Default)]
struct Reach {
    calls: bool,
    links: bool,
    files_calls: bool,
}

/// The files at either end of each link a one-level graph request of `kind` about `symbol`
/// (in `path`) answers, and an ambiguous link's candidates when there are few: an agent
/// follows an ambiguous call only then. None when the request fails (a name the index
/// defines otherwise).
async fn hop(
    client: &mut amanmcp_proto::DaemonClient<tonic::transport::Channel>,
    root: &str,
    kind: &str,
    symbol: &str,
    path: &str,
) -> Vec<String> {
    let Ok(answer) = client
        .graph(pb::GraphRequest {
            root: root.to_string(),
            kind: kind.into(),
            symbols: vec![symbol.to_string()],
            path: Some(path.to_string()),
            depth: 1,
            ..Default::default()
        })
        .await
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for link in answer.into_inner().links {
        let few = if link.candidates_total <= 3 {
            &link.candidates[..]
        } else {
            &[]
        };
        let ends = link.from.iter().chain(link.to.iter()).chain(few.iter());
        out.extend(ends.map(|d| d.path.clone()));
    }
    out
}

async fn one_hop(
    client: &mut amanmcp_proto::DaemonClient<tonic::transport::Channel>,
    root: &str,
    reply: &pb::SearchReply,
    files: &[String],
    gold: &[String],
    show: Option<String>,
) -> anyhow::Result<Reach> {
    let top: Vec<String> = files.iter().take(5).cloned().collect();
    let mut by_calls = top.clone();
    let mut by_links = top.clone();
    let mut by_files_calls = top.clone();
    let mut from: Vec<(&pb::SearchHit, bool)> =
        reply.results.iter().take(5).map(|h| (h, true)).collect();
    for path in &top {
        if let Some(hit) = reply.results.iter().find(|h| &h.path == path) {
            from.push((hit, false));
        }
    }
    let mut asked: Vec<(&str, &str)> = Vec::new();
    for (hit, in_top) in from {
        // Code outside any definition is its file's top level, asked for by path.
        let symbol = hit.symbol.as_ref().unwrap_or(&hit.path);
        if !in_top && asked.contains(&(hit.path.as_str(), symbol.as_str())) {
            continue;
        }
        asked.push((hit.path.as_str(), symbol.as_str()));
        for kind in ["callers", "callees", "impact"] {
            let paths = hop(client, root, kind, symbol, &hit.path).await;
            if kind == "impact" {
                if in_top {
                    by_links.extend(paths);
                }
            } else {
                by_files_calls.extend(paths.iter().cloned());
                if in_top {
                    by_calls.extend(paths.iter().cloned());
                    by_links.extend(paths);
                }
            }
        }
    }
    // Each top file's own top level: what it imports and runs when loaded.
    for path in &top {
        by_files_calls.extend(hop(client, root, "callees", path, path).await);
    }
    let calls = gold.iter().any(|g| by_calls.contains(g));
    let links = gold.iter().any(|g| by_links.contains(g));
    let files_calls = gold.iter().any(|g| by_files_calls.contains(g));
    if let Some(label) = show {
        let top: Vec<String> = (reply.results.iter().take(5))
            .map(|h| format!("{}:{}", h.path, h.symbol.as_deref().unwrap_or("-")))
            .collect();
        by_links.sort();
        by_links.dedup();
        let mut by_calls = by_calls.clone();
        by_calls.sort();
        by_calls.dedup();
        by_files_calls.sort();
        by_files_calls.dedup();
        eprintln!(
            "{label}: reached gold {calls} (by any link {links}, from the files {files_calls}); gold {gold:?}\n  top 5 {top:?}\n  reached {by_links:?}\n  files reached: {} by calls, {} from the files",
            by_calls.len(),
            by_files_calls.len()
        );
    }
    Ok(Reach {
        calls,
        links,
        files_calls,
    })
}
