//! `amanmcp-bench cv`: leave-one-repository-out cross-validation over semble runs.
//!
//! Each run is a `semble --dump` file made with one setting of the ranking's parameters
//! (environment variables of the daemon, or a build); each (run, mode) pair is a candidate
//! ranker. For every repository in turn, the candidate with the best mean NDCG@10 over the
//! *other* repositories' queries is chosen and scored on the held-out repository's queries.
//! The mean of those held-out scores is the cross-validated figure: what the tuning would
//! give on a repository it never saw. Printed beside the in-sample figure (the best
//! candidate scored on the queries it was chosen on), per category and per language, with
//! the candidate each fold chose.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::{Context, bail};
use serde_json::Value;

/// Options of `cv`.
#[derive(clap::Args)]
pub struct Options {
    /// The `semble` folder of the shared eval data (for each repository's language).
    #[arg(long, default_value = "../shared/eval/semble")]
    pub eval: PathBuf,
    /// Only candidates of these modes (default: every mode in the dumps).
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<String>,
    /// The runs: `LABEL=DUMP.jsonl`, one per parameter setting.
    #[arg(required = true)]
    pub runs: Vec<String>,
}

/// One query's score under every candidate.
struct Row {
    repo: String,
    category: String,
    scores: Vec<f64>,
}

fn mean<'a>(values: impl Iterator<Item = &'a f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// Run the cross-validation.
pub fn run(options: Options) -> anyhow::Result<()> {
    let repos: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(options.eval.join("repos.json"))?)?;
    let language: BTreeMap<String, String> = repos
        .iter()
        .filter_map(|r| Some((r["name"].as_str()?.into(), r["language"].as_str()?.into())))
        .collect();
    let mut candidates: Vec<String> = Vec::new();
    // (repo, query) -> row, built run by run.
    let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
    for run in &options.runs {
        let (label, path) = run
            .split_once('=')
            .with_context(|| format!("expected LABEL=DUMP, got {run:?}"))?;
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
        let entries: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()
            .with_context(|| format!("parsing {path}"))?;
        // A mode is a key holding a scored answer (`{"ndcg": ..}`), not the query's fields
        // (`repo`, `targets`, `tokens_to_first`, ...).
        let modes: BTreeSet<String> = entries
            .iter()
            .flat_map(|e| e.as_object().into_iter().flatten())
            .filter(|(_, v)| v.get("ndcg").is_some())
            .map(|(k, _)| k.clone())
            .filter(|m| options.modes.is_empty() || options.modes.contains(m))
            .collect();
        for mode in &modes {
            let column = candidates.len();
            candidates.push(format!("{label}:{mode}"));
            // A repository may ask the same question twice: the n-th asking is its own row.
            let mut asked: BTreeMap<(String, String), usize> = BTreeMap::new();
            for entry in &entries {
                let text = (
                    entry["repo"].as_str().unwrap_or_default().to_string(),
                    entry["query"].as_str().unwrap_or_default().to_string(),
                );
                let nth = asked.entry(text.clone()).or_default();
                *nth += 1;
                let key = (text.0, format!("{}#{nth}", text.1));
                let row = rows.entry(key.clone()).or_insert_with(|| Row {
                    repo: key.0.clone(),
                    category: entry["category"].as_str().unwrap_or("?").to_string(),
                    scores: Vec::new(),
                });
                row.scores.resize(column, f64::NAN);
                row.scores
                    .push(entry[mode]["ndcg"].as_f64().unwrap_or(f64::NAN));
            }
        }
    }
    let rows: Vec<Row> = rows
        .into_values()
        .filter(|r| r.scores.len() == candidates.len() && r.scores.iter().all(|s| s.is_finite()))
        .collect();
    if rows.is_empty() || candidates.is_empty() {
        bail!("no query is scored by every candidate");
    }
    let folds: BTreeSet<&str> = rows.iter().map(|r| r.repo.as_str()).collect();
    let best_on = |keep: &dyn Fn(&Row) -> bool| -> usize {
        (0..candidates.len())
            .max_by(|&a, &b| {
                let score = |c: usize| mean(rows.iter().filter(|r| keep(r)).map(|r| &r.scores[c]));
                score(a).total_cmp(&score(b)).then(b.cmp(&a))
            })
            .unwrap_or(0)
    };

    println!(
        "candidates ({} queries, {} repositories):",
        rows.len(),
        folds.len()
    );
    for (c, name) in candidates.iter().enumerate() {
        println!("  {name:40} {:.3}", mean(rows.iter().map(|r| &r.scores[c])));
    }
    let in_sample = best_on(&|_| true);
    // Each fold: chosen on the other repositories, scored on its own.
    let mut held_out: Vec<(&Row, f64)> = Vec::new();
    println!(
        "\n| held-out repository | language | chosen on the other {} | held-out NDCG@10 |",
        folds.len() - 1
    );
    println!("|---|---|---|---|");
    for fold in &folds {
        let chosen = best_on(&|r: &Row| r.repo != *fold);
        let own: Vec<&Row> = rows.iter().filter(|r| r.repo == *fold).collect();
        for row in &own {
            held_out.push((row, row.scores[chosen]));
        }
        println!(
            "| {fold} | {} | {} | {:.3} |",
            language.get(*fold).map_or("?", String::as_str),
            candidates[chosen],
            mean(own.iter().map(|r| &r.scores[chosen]))
        );
    }
    let cv = mean(held_out.iter().map(|(_, s)| s));
    let fitted = mean(rows.iter().map(|r| &r.scores[in_sample]));
    println!(
        "\nleave-one-repository-out CV NDCG@10: {cv:.3}; in-sample (best candidate, {}): {fitted:.3}; gap {:.3}",
        candidates[in_sample],
        fitted - cv
    );
    for (what, key) in [
        (
            "category",
            &(|r: &Row| r.category.clone()) as &dyn Fn(&Row) -> String,
        ),
        ("language", &|r: &Row| {
            language.get(&r.repo).cloned().unwrap_or_default()
        }),
    ] {
        let mut groups: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
        for (row, score) in &held_out {
            let group = groups.entry(key(row)).or_default();
            group.0.push(*score);
            group.1.push(row.scores[in_sample]);
        }
        println!("\n| {what} | queries | CV | in-sample |\n|---|---|---|---|");
        for (name, (cv, fit)) in groups {
            println!(
                "| {name} | {} | {:.3} | {:.3} |",
                cv.len(),
                mean(cv.iter()),
                mean(fit.iter())
            );
        }
    }
    Ok(())
}
