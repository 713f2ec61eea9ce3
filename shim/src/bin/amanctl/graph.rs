//! `amanctl callers|callees|impact|trace`: the code graph for people. One line per link
//! (`path:line  caller -> callee  [label: rule]`), grouped by depth; `--json` for scripts.

use std::process::ExitCode;

use amanmcp_proto::pb;
use serde_json::json;

/// What a graph command was asked.
#[derive(clap::Args)]
pub struct GraphArgs {
    /// The definition (bare or qualified; `callees`: or a file's path, for its top level);
    /// `impact`: any number, or none to read the working tree's changes from git; `trace`:
    /// where the paths start.
    symbols: Vec<String>,
    /// `trace`: where the paths end.
    #[arg(long)]
    to: Option<String>,
    /// Levels to walk (1-5).
    #[arg(long, short = 'd')]
    depth: Option<u32>,
    /// `impact`: `git diff` revisions (`--diff=--staged`, `--diff main..HEAD`).
    #[arg(long, allow_hyphen_values = true)]
    diff: Option<String>,
    /// Only definitions in this file or directory (relative to the project root).
    #[arg(long = "in")]
    within: Option<String>,
    /// Project root (default: the current directory's project).
    #[arg(long)]
    root: Option<std::path::PathBuf>,
    /// `callers`: also other indexed projects' calls of the name they do not define
    /// (`all`, or a root; repeatable).
    #[arg(long = "project", value_name = "ROOT|all")]
    projects: Vec<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

fn place(d: &pb::GraphDef) -> String {
    format!("{}:{} {}", d.path, d.start_line, d.qualified)
}

pub async fn graph(kind: &str, args: GraphArgs) -> ExitCode {
    let (root, link) = match super::opened_project(args.root.as_deref()).await {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let request = pb::GraphRequest {
        root,
        kind: kind.into(),
        symbols: args.symbols.clone(),
        to: args.to.clone(),
        path: args.within.clone(),
        depth: args.depth.unwrap_or(0).min(5),
        diff: args.diff.clone(),
        projects: args.projects.clone(),
        ..Default::default()
    };
    let reply = match link
        .call(|mut client| {
            let request = request.clone();
            async move { client.graph(request).await.map(|r| r.into_inner()) }
        })
        .await
    {
        Ok(reply) => reply,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.json {
        let def = |d: &pb::GraphDef| json!({"symbol": d.qualified, "path": d.path, "lines": [d.start_line, d.end_line], "kind": d.kind});
        let links: Vec<_> = reply
            .links
            .iter()
            .map(|l| {
                json!({
                    "from": l.from.as_ref().map(def),
                    "to": l.to.as_ref().map(def),
                    "name": l.name, "path": l.path, "line": l.line,
                    "label": l.label, "rule": l.rule, "depth": l.depth,
                    "candidates": l.candidates.iter().map(def).collect::<Vec<_>>(),
                    "project": l.project,
                    "inherits": l.inherits, "imports": l.imports,
                })
            })
            .collect();
        let out = json!({
            "targets": reply.targets.iter().map(def).collect::<Vec<_>>(),
            "choices": reply.choices.iter().map(def).collect::<Vec<_>>(),
            "links": links,
            "unexplained": reply.unexplained,
            "impacted": reply.impacted.iter().map(|i| json!({"def": i.def.as_ref().map(def), "distance": i.distance, "fan_in": i.fan_in, "test": i.test, "label": i.label})).collect::<Vec<_>>(),
            "paths": reply.paths.iter().map(|p| p.links.clone()).collect::<Vec<_>>(),
            "complete": reply.complete,
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    if !reply.choices.is_empty() {
        println!(
            "{} definitions carry this name; ask for one (qualified, or --in PATH):",
            reply.choices.len()
        );
        for choice in &reply.choices {
            println!("  {}", place(choice));
        }
        return ExitCode::FAILURE;
    }
    for target in &reply.targets {
        println!("{}", place(target));
    }
    let line = |l: &pb::GraphLink| {
        let from = l
            .from
            .as_ref()
            .map(|d| d.qualified.clone())
            .unwrap_or_default();
        let to = match (&l.to, l.candidates.is_empty()) {
            (Some(to), _) => to.qualified.clone(),
            (None, false) => format!("{} (one of {})", l.name, l.candidates_total),
            (None, true) => l.name.clone(),
        };
        let project = l
            .project
            .as_ref()
            .map(|p| format!("{p}: "))
            .unwrap_or_default();
        format!(
            "{project}{}:{}  {from} -> {to}  [{}: {}]",
            l.path, l.line, l.label, l.rule
        )
    };
    match kind {
        "trace" => {
            if reply.paths.is_empty() {
                println!("no call path found within the depth");
            }
            for (n, path) in reply.paths.iter().enumerate() {
                println!("path {}:", n + 1);
                for index in &path.links {
                    if let Some(l) = reply.links.get(*index as usize) {
                        println!("  {}", line(l));
                    }
                }
            }
        }
        "impact" => {
            for i in &reply.impacted {
                if let Some(d) = &i.def {
                    let test = if i.test { "  test" } else { "" };
                    println!(
                        "  {}  distance {}, fan-in {} [{}]{test}",
                        place(d),
                        i.distance,
                        i.fan_in,
                        i.label
                    );
                }
            }
        }
        _ => {
            let mut depth = 0;
            for l in &reply.links {
                if l.depth != depth {
                    depth = l.depth;
                    println!("depth {depth}:");
                }
                println!("  {}", line(l));
            }
            if reply.links.is_empty() {
                println!("  none found");
            }
        }
    }
    if reply.unexplained > 0 {
        println!(
            "{} call(s) of the name resolve to nothing in the project (external or dynamic), e.g.:",
            reply.unexplained
        );
        for u in &reply.unexplained_examples {
            println!("  {}:{}  {}", u.path, u.line, u.why);
        }
    }
    if !reply.complete {
        println!("(incomplete: the walk stopped at its bound)");
    }
    ExitCode::SUCCESS
}
