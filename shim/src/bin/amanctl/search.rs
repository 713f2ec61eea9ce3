//! `amanctl search QUERY [PATH]`: the agents' search for humans. ripgrep-like lines
//! (`path:start-end  symbol  kind`, then the first lines of the snippet), coloured on a
//! terminal; `--json` prints the results for scripts.

use std::io::IsTerminal;
use std::process::ExitCode;

use amanmcp::preview;
use amanmcp::status::{indexing_notice, set_aside_json};
use amanmcp_proto::pb;
use serde_json::json;

/// What `amanctl search` was asked.
#[derive(clap::Args)]
pub struct SearchArgs {
    /// What to look for: words, a question, an identifier.
    query: String,
    /// Project root (default: the current directory's project).
    path: Option<std::path::PathBuf>,
    /// How many results.
    #[arg(long, short = 'n', default_value_t = 10)]
    limit: u32,
    /// Keywords and meaning fused (hybrid, the default), keywords only (BM25) or meaning only
    /// (vectors).
    #[arg(long, value_enum)]
    mode: Option<Mode>,
    /// Only files of this language (a name or an extension: `rust`, `kt`).
    #[arg(long, short = 't')]
    language: Option<String>,
    /// Only paths matching this glob (`src/**/*.rs`).
    #[arg(long, short = 'g')]
    glob: Option<String>,
    /// Search other indexed projects too: `all`, or a root (repeatable).
    #[arg(long = "project", value_name = "ROOT|all")]
    projects: Vec<String>,
    /// Lines of each snippet to show: its first line and those that best match (0: none).
    #[arg(long, short = 'C', default_value_t = 4)]
    context: usize,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// How `amanctl search` retrieves.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Mode {
    Hybrid,
    Lexical,
    Semantic,
}

pub async fn search(args: SearchArgs) -> ExitCode {
    let (root, link) = match super::opened_project(args.path.as_deref()).await {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let request = pb::SearchRequest {
        root: root.clone(),
        query: args.query.clone(),
        limit: args.limit.clamp(1, 200),
        offset: 0,
        path_glob: args.glob.clone(),
        language: args.language.clone(),
        mode: args
            .mode
            .and_then(|mode| clap::ValueEnum::to_possible_value(&mode))
            .map(|value| value.get_name().to_string())
            .unwrap_or_default(),
        projects: args.projects.clone(),
        path: None,
    };
    let reply = match link
        .call(|mut client| {
            let request = request.clone();
            async move { client.search(request).await.map(|r| r.into_inner()) }
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
        let results: Vec<_> = reply
            .results
            .iter()
            .map(|hit| {
                json!({
                    "project": hit.project,
                    "path": hit.path,
                    "start_line": hit.start_line,
                    "end_line": hit.end_line,
                    "language": hit.language,
                    "symbol": hit.symbol,
                    "kind": hit.kind,
                    "score": hit.score,
                    "why": hit.why,
                    "defines": hit.defines,
                    "snippet": hit.snippet,
                })
            })
            .collect();
        let out = json!({
            "root": root,
            "results": results,
            "total": reply.total,
            "semantic_used": reply.semantic_used,
            "semantic_unavailable": reply.semantic_unavailable,
            "set_aside": set_aside_json(&reply),
        });
        println!("{out:#}");
        return ExitCode::SUCCESS;
    }
    let paint = Paint(std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    let matcher = preview::Matcher::new(&args.query);
    if let Some(notice) = reply.index.as_ref().and_then(indexing_notice) {
        eprintln!("note: {notice}");
    }
    if let Some(why) = &reply.semantic_unavailable {
        eprintln!("note: keyword search only ({why})");
    }
    for aside in &reply.set_aside {
        eprintln!("note: not searched for: {} ({})", aside.word, aside.reason);
    }
    if reply.results.is_empty() {
        eprintln!("no results for {:?}", args.query);
        return ExitCode::FAILURE;
    }
    for hit in &reply.results {
        let mut head = hit
            .project
            .as_ref()
            .map(|p| format!("{p}: "))
            .unwrap_or_default();
        head.push_str(&format!(
            "{}:{}-{}",
            paint.magenta(&hit.path),
            paint.green(&hit.start_line.to_string()),
            paint.green(&hit.end_line.to_string())
        ));
        if let Some(symbol) = &hit.symbol {
            head.push_str(&format!("  {}", paint.bold(symbol)));
        }
        if let Some(kind) = &hit.kind {
            head.push_str(&format!(" ({kind})"));
        }
        if !hit.defines.is_empty() {
            head.push_str(&format!(", also {}", hit.defines.join(", ")));
        }
        if !hit.why.is_empty() {
            head.push_str(&format!("  {}", paint.dim(&hit.why.join(", "))));
        }
        println!("{head}");
        if args.context > 0 {
            // The chunk's first line and the lines that best match the query.
            for part in matcher.preview(&hit.snippet, hit.start_line, args.context) {
                match part {
                    preview::Part::Line(number, line) => {
                        println!("{}  {line}", paint.green(&format!("{number:>6}")))
                    }
                    preview::Part::Gap(..) => println!("{}", paint.dim(&format!("{:>6}", "⋮"))),
                }
            }
            println!();
        }
    }
    ExitCode::SUCCESS
}

/// ANSI colours, or none when the output is not a terminal.
struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    fn magenta(&self, text: &str) -> String {
        self.wrap("35", text)
    }
    fn green(&self, text: &str) -> String {
        self.wrap("32", text)
    }
    fn bold(&self, text: &str) -> String {
        self.wrap("1", text)
    }
    fn dim(&self, text: &str) -> String {
        self.wrap("2", text)
    }
}
