//! `amanmcp-bench semble`: the semble code-search benchmark (`../shared/eval/semble`) through
//! the real daemon and the real shim, every mode, scored as its README says: NDCG@10 over
//! distinct files in order of first appearance, `relevant` + `secondary` each with gain 1, a
//! result matching a target when the paths are equal or either ends with `/` + the other.
//! Prints per repository (with the peers' published figures), per category and per language,
//! with index time and query p50 through the shim.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use amanmcp_proto::pb;
use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::tokens;
use crate::world::{percentile, spawn_shim, start_daemon, wait_for_pass, wait_for_vectors};

/// Options of a run.
#[derive(clap::Args)]
pub struct Options {
    /// The `semble` folder of the shared eval data.
    #[arg(long, default_value = "../shared/eval/semble")]
    pub eval: PathBuf,
    /// Where `materialize.sh` put the checkouts (default: its own, `~/.cache/amanmcp-semble`).
    #[arg(long)]
    pub checkouts: Option<PathBuf>,
    /// Only these repositories, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub repos: Vec<String>,
    /// Modes to run, comma-separated.
    #[arg(long, default_value = "lexical,semantic,hybrid", value_delimiter = ',')]
    pub modes: Vec<String>,
    /// Results asked of each search.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Write every query's top files per mode to this JSON-lines file.
    #[arg(long)]
    pub dump: Option<PathBuf>,
    /// Fail when a mode's mean falls below a floor: `hybrid=0.8` (repeatable).
    #[arg(long = "floor", value_parser = parse_floor)]
    pub floors: Vec<(String, f64)>,
}

/// `mode=value` of `--floor`.
fn parse_floor(text: &str) -> Result<(String, f64), String> {
    let (mode, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected MODE=VALUE, got {text:?}"))?;
    let value: f64 = value
        .parse()
        .map_err(|e| format!("bad floor {value:?}: {e}"))?;
    Ok((mode.to_string(), value))
}

/// The peers shown beside our figures, in this order.
const PEERS: &[&str] = &["semble", "cre-hybrid", "semble-bm25", "bm25-raw", "colgrep"];

struct Query {
    repo: String,
    language: String,
    category: String,
    text: String,
    targets: Vec<String>,
}

/// Whether a result's path is the target file (either may carry a leading directory the
/// other lacks).
pub fn is_target(path: &str, target: &str) -> bool {
    path == target || path.ends_with(&format!("/{target}")) || target.ends_with(&format!("/{path}"))
}

/// NDCG@10 of a ranked list of paths against `targets` (see the module docs).
pub fn ndcg_at_10(ranked: &[String], targets: &[String]) -> f64 {
    let mut files: Vec<&str> = Vec::new();
    for path in ranked {
        if !files.contains(&path.as_str()) {
            files.push(path);
        }
        if files.len() == 10 {
            break;
        }
    }
    let dcg: f64 = files
        .iter()
        .enumerate()
        .filter(|(_, f)| targets.iter().any(|t| is_target(f, t)))
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..targets.len().min(10))
        .map(|i| 1.0 / ((i + 2) as f64).log2())
        .sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

fn load_queries(eval: &Path, repo: &Value) -> anyhow::Result<Vec<Query>> {
    let name = repo["name"].as_str().context("name")?;
    let path = eval.join("annotations").join(format!("{name}.json"));
    let items: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
    )?;
    // A target is a path, or `{path, start_line, end_line}` (scored by its path).
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().or_else(|| t["path"].as_str()))
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(items
        .iter()
        .map(|item| {
            let mut targets = strings(&item["relevant"]);
            targets.extend(strings(&item["secondary"]));
            Query {
                repo: name.to_string(),
                language: repo["language"].as_str().unwrap_or("?").to_string(),
                category: item["category"].as_str().unwrap_or("?").to_string(),
                text: item["query"].as_str().unwrap_or_default().to_string(),
                targets,
            }
        })
        .collect())
}

/// One score row: (mode, repo, language, category, NDCG@10).
type Score = (String, String, String, String, f64);

/// The scores of `mode`, of one repository or all.
fn scores_of(scores: &[Score], mode: &str, repo: Option<&str>) -> Vec<f64> {
    scores
        .iter()
        .filter(|s| s.0 == mode && repo.is_none_or(|r| s.1 == r))
        .map(|s| s.4)
        .collect()
}

/// The mean of `rows` (0 when empty).
fn mean(rows: &[f64]) -> f64 {
    rows.iter().sum::<f64>() / rows.len().max(1) as f64
}

/// Mean of `scores` per key.
fn means(rows: &[(String, f64)]) -> BTreeMap<String, (f64, usize)> {
    let mut out: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for (key, score) in rows {
        let entry = out.entry(key.clone()).or_default();
        entry.0 += score;
        entry.1 += 1;
    }
    for entry in out.values_mut() {
        entry.0 /= entry.1.max(1) as f64;
    }
    out
}

/// Run the benchmark.
pub async fn run(options: Options) -> anyhow::Result<()> {
    let checkouts = match &options.checkouts {
        Some(dir) => dir.clone(),
        None => PathBuf::from(std::env::var("HOME").context("HOME")?).join(".cache/amanmcp-semble"),
    };
    let repos: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(options.eval.join("repos.json"))?)?;
    let peers: Value =
        serde_json::from_str(&std::fs::read_to_string(options.eval.join("peers.json"))?)?;
    let (daemon, mut client) = start_daemon().await?;
    let mut scores: Vec<Score> = Vec::new();
    let mut latencies: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut costs: Vec<tokens::Cost> = Vec::new();
    let mut dump_lines = Vec::new();
    let mut index_times = Vec::new();
    for repo in &repos {
        let name = repo["name"].as_str().context("name")?;
        if !options.repos.is_empty() && !options.repos.iter().any(|r| r == name) {
            continue;
        }
        let prefix = repo["benchmark_root"].as_str().unwrap_or("");
        let checkout = checkouts.join(name);
        let root = checkout.join(prefix);
        if !root.is_dir() {
            bail!(
                "{} is missing: run ../shared/eval/semble/materialize.sh {} first",
                root.display(),
                checkouts.display()
            );
        }
        let root = root.canonicalize()?;
        let root_str = root.to_string_lossy().into_owned();
        let queries = load_queries(&options.eval, repo)?;
        let started = Instant::now();
        client
            .open_project(pb::OpenProjectRequest {
                root: root_str.clone(),
                ..Default::default()
            })
            .await?;
        let status = wait_for_pass(&mut client, &root_str, 1).await?;
        let lexical_s = started.elapsed().as_secs_f64();
        let wants_vectors = options.modes.iter().any(|m| m != "lexical");
        if wants_vectors {
            wait_for_vectors(&mut client, &root_str, Duration::from_secs(3600)).await?;
        }
        let ready_s = started.elapsed().as_secs_f64();
        index_times.push((name.to_string(), lexical_s, ready_s, status.files));
        let mut shim = spawn_shim(&daemon.socket, &root);
        shim.initialize();
        for query in &queries {
            let mut entry = serde_json::Map::new();
            entry.insert("repo".into(), json!(name));
            entry.insert("category".into(), json!(query.category));
            entry.insert("query".into(), json!(query.text));
            entry.insert("targets".into(), json!(query.targets));
            for mode in &options.modes {
                let t = Instant::now();
                let reply = shim.request(
                    "tools/call",
                    json!({"name": "search", "arguments": {
                        "query": query.text, "limit": options.limit, "mode": mode,
                        "max_tokens": 100_000}}),
                );
                latencies
                    .entry(mode.clone())
                    .or_default()
                    .push(t.elapsed().as_secs_f64() * 1e3);
                if reply["result"]["isError"] == json!(true) {
                    bail!("{name}: search {:?} failed: {reply}", query.text);
                }
                let ranked: Vec<String> = reply["result"]["structuredContent"]["results"]
                    .as_array()
                    .map(|hits| {
                        hits.iter()
                            .filter_map(|h| h["path"].as_str())
                            .map(|p| {
                                if prefix.is_empty() || prefix == "." {
                                    p.to_string()
                                } else {
                                    format!("{prefix}/{p}")
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let score = ndcg_at_10(&ranked, &query.targets);
                if mode == "hybrid" {
                    let result = &reply["result"];
                    let shown: Vec<tokens::Shown> = result["structuredContent"]["results"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .zip(&ranked)
                        .map(|(hit, path)| tokens::Shown {
                            header: format!(
                                "{}:{}-{}",
                                hit["path"].as_str().unwrap_or_default(),
                                hit["start_line"],
                                hit["end_line"]
                            ),
                            path: path.clone(),
                        })
                        .collect();
                    let text = result["content"][0]["text"].as_str().unwrap_or_default();
                    let cost = tokens::cost(text, &shown, &query.targets, is_target);
                    entry.insert("tokens_to_first".into(), json!(cost.to_first));
                    costs.push(cost);
                }
                scores.push((
                    mode.clone(),
                    query.repo.clone(),
                    query.language.clone(),
                    query.category.clone(),
                    score,
                ));
                let mut files: Vec<String> = Vec::new();
                for path in ranked {
                    if !files.contains(&path) {
                        files.push(path);
                    }
                }
                files.truncate(10);
                entry.insert(mode.clone(), json!({"ndcg": score, "files": files}));
            }
            dump_lines.push(Value::Object(entry).to_string());
        }
        let line: Vec<String> = options
            .modes
            .iter()
            .map(|mode| {
                let rows = scores_of(&scores, mode, Some(name));
                format!("{mode} {:.3}", mean(&rows))
            })
            .collect();
        eprintln!(
            "{name}: {} files, lexical {lexical_s:.1} s, ready {ready_s:.1} s; {}",
            status.files,
            line.join(", ")
        );
    }
    drop(daemon);

    // Per repository, with the peers.
    let header_modes: Vec<String> = options.modes.clone();
    println!(
        "\n| repo | language | queries | {} | {} |",
        header_modes.join(" | "),
        PEERS.join(" | ")
    );
    println!(
        "|---|---|---|{}{}",
        "---|".repeat(header_modes.len()),
        "---|".repeat(PEERS.len())
    );
    let mut peer_rows: BTreeMap<&str, Vec<(f64, usize)>> = BTreeMap::new();
    for repo in &repos {
        let name = repo["name"].as_str().unwrap_or_default();
        let per_mode: Vec<(String, f64, usize)> = header_modes
            .iter()
            .map(|mode| {
                let rows = scores_of(&scores, mode, Some(name));
                (mode.clone(), mean(&rows), rows.len())
            })
            .collect();
        let n = per_mode.first().map_or(0, |m| m.2);
        if n == 0 {
            continue;
        }
        let peer_cells: Vec<String> = PEERS
            .iter()
            .map(|peer| match peers[name][*peer].as_f64() {
                Some(v) => {
                    peer_rows.entry(peer).or_default().push((v, n));
                    format!("{v:.3}")
                }
                None => "-".into(),
            })
            .collect();
        println!(
            "| {name} | {} | {n} | {} | {} |",
            repo["language"].as_str().unwrap_or("?"),
            per_mode
                .iter()
                .map(|m| format!("{:.3}", m.1))
                .collect::<Vec<_>>()
                .join(" | "),
            peer_cells.join(" | ")
        );
    }
    let overall: Vec<String> = header_modes
        .iter()
        .map(|mode| {
            let rows = scores_of(&scores, mode, None);
            format!("**{:.3}**", mean(&rows))
        })
        .collect();
    let peer_overall: Vec<String> = PEERS
        .iter()
        .map(|peer| {
            let rows = peer_rows.get(peer).cloned().unwrap_or_default();
            let n: usize = rows.iter().map(|r| r.1).sum();
            let sum: f64 = rows.iter().map(|r| r.0 * r.1 as f64).sum();
            format!("{:.3}", sum / n.max(1) as f64)
        })
        .collect();
    let n_queries = scores
        .iter()
        .filter(|s| Some(&s.0) == header_modes.first())
        .count();
    println!(
        "| **mean over queries** | | {n_queries} | {} | {} |",
        overall.join(" | "),
        peer_overall.join(" | ")
    );

    for (title, key) in [("category", 3usize), ("language", 2)] {
        println!("\n| {title} | {} |", header_modes.join(" | "));
        println!("|---|{}", "---|".repeat(header_modes.len()));
        let mut table: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for mode in &header_modes {
            let rows: Vec<(String, f64)> = scores
                .iter()
                .filter(|s| &s.0 == mode)
                .map(|s| (if key == 3 { s.3.clone() } else { s.2.clone() }, s.4))
                .collect();
            for (group, (mean, n)) in means(&rows) {
                table
                    .entry(format!("{group} ({n})"))
                    .or_default()
                    .push(format!("{mean:.3}"));
            }
        }
        for (group, cells) in table {
            println!("| {group} | {} |", cells.join(" | "));
        }
    }

    if !costs.is_empty() {
        let mut to_first: Vec<f64> = costs
            .iter()
            .filter_map(|c| c.to_first.map(|t| t as f64))
            .collect();
        to_first.sort_by(f64::total_cmp);
        let n = costs.len() as f64;
        println!(
            "\ntoken cost of the hybrid (default) answer, bytes/4: median {:.0} tokens to the first relevant result (one in {} of {} answers); recall within 500 tokens {:.3}, within 2,000 {:.3}",
            percentile(&to_first, 0.5),
            to_first.len(),
            costs.len(),
            costs.iter().map(|c| c.recall_500).sum::<f64>() / n,
            costs.iter().map(|c| c.recall_2000).sum::<f64>() / n,
        );
    }
    println!(
        "\nquery latency through the shim (limit {}):",
        options.limit
    );
    for (mode, mut samples) in latencies {
        samples.sort_by(f64::total_cmp);
        println!(
            "  {mode}: p50 {:.1} ms, p95 {:.1} ms (n={})",
            percentile(&samples, 0.5),
            percentile(&samples, 0.95),
            samples.len()
        );
    }
    let mut lexical: Vec<f64> = index_times.iter().map(|t| t.1).collect();
    let mut ready: Vec<f64> = index_times.iter().map(|t| t.2).collect();
    lexical.sort_by(f64::total_cmp);
    ready.sort_by(f64::total_cmp);
    println!(
        "index time per repository: lexical median {:.2} s (max {:.2} s), ready median {:.2} s (max {:.2} s)",
        percentile(&lexical, 0.5),
        lexical.last().copied().unwrap_or(f64::NAN),
        percentile(&ready, 0.5),
        ready.last().copied().unwrap_or(f64::NAN),
    );
    if let Some(path) = &options.dump {
        std::fs::write(path, dump_lines.join("\n") + "\n")?;
    }
    let mut failures = Vec::new();
    for (mode, floor) in &options.floors {
        let rows = scores_of(&scores, mode, None);
        let mean = mean(&rows);
        if mean < *floor {
            failures.push(format!(
                "{mode} NDCG@10 {mean:.3} is below the floor {floor:.3}"
            ));
        }
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::ndcg_at_10;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn ndcg_counts_distinct_files_and_suffix_matches() {
        assert_eq!(ndcg_at_10(&s(&["a/b.rs"]), &s(&["a/b.rs"])), 1.0);
        // A duplicate file does not take a rank.
        let ranked = s(&["x.rs", "x.rs", "src/a/b.rs"]);
        let expected = (1.0 / 3f64.log2()) / 1.0;
        assert!((ndcg_at_10(&ranked, &s(&["a/b.rs"])) - expected).abs() < 1e-9);
        // Two targets, one found first.
        let ideal = 1.0 + 1.0 / 3f64.log2();
        assert!((ndcg_at_10(&s(&["t1"]), &s(&["t1", "t2"])) - 1.0 / ideal).abs() < 1e-9);
        assert_eq!(ndcg_at_10(&s(&["nope.rs"]), &s(&["a.rs"])), 0.0);
        assert_eq!(ndcg_at_10(&s(&["a.rs"]), &s(&[])), 0.0);
    }
}
