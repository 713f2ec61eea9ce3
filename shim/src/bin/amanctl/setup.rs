//! `amanctl setup [CLIENT] [PATH] [--global] [--all] [--dry-run] [--json]`: register amanmcp
//! in AI clients' configurations (see `amanmcp::setup`), or list the clients found.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use amanmcp::setup::{self, Client, Places, Plan, Scope};
use serde_json::json;

/// What `amanctl setup` was asked.
#[derive(clap::Args)]
pub struct SetupArgs {
    /// The client; none: list the clients found on this machine.
    #[arg(value_enum)]
    client: Option<Client>,
    /// Project root (default: the current directory's project).
    path: Option<PathBuf>,
    /// The user's configuration instead of the project's.
    #[arg(long)]
    global: bool,
    /// Every client found on this machine.
    #[arg(long, conflicts_with = "client")]
    all: bool,
    /// Show what would change instead of writing it.
    #[arg(long, alias = "print")]
    dry_run: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn setup(args: SetupArgs) -> ExitCode {
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("amanctl: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &SetupArgs) -> Result<ExitCode, String> {
    let places = Places::from_env().ok_or("HOME is not set")?;
    let clients: Vec<Client> = match args.client {
        Some(client) => vec![client],
        None => setup::ALL
            .into_iter()
            .filter(|c| c.detected(&places))
            .collect(),
    };
    // A project's file goes to the project every other entry point uses; outside a
    // project, a listing or `--all` falls back to the user's files.
    let root = match args.global {
        true => None,
        false => match super::project_root(args.path.as_deref()) {
            Ok(root) => Some(root),
            Err(e) if args.client.is_none() => {
                eprintln!("amanctl: {e}; using each client's user-wide file");
                None
            }
            Err(e) => return Err(e),
        },
    };
    let installed = amanmcp::link::installed_beside(setup::NAME);
    let mut plans = Vec::new();
    for client in &clients {
        let (file, scope) = match &root {
            Some(root) => client.config_file(root, false, &places),
            None => client.config_file(Path::new(""), true, &places),
        };
        let command = setup::command_for(scope, installed.as_deref());
        if scope == Scope::Project && command != setup::NAME && !args.json {
            eprintln!(
                "amanctl: amanmcp is not on PATH, so {} names {command}; with amanmcp on PATH \
                 the project's file names just `amanmcp` and can be committed",
                client.label()
            );
        }
        plans.push(setup::plan(*client, &file, scope, &command).map_err(|e| e.to_string()));
    }
    let write = !args.dry_run && (args.client.is_some() || args.all);
    let mut failed = false;
    let mut report = Vec::new();
    for plan in plans {
        let outcome = plan.and_then(|plan| {
            let written = write && !plan.unchanged;
            if written {
                setup::write(&plan).map_err(|e| e.to_string())?;
            }
            Ok((plan, written))
        });
        failed |= outcome.is_err();
        report.push(outcome);
    }
    if args.json {
        let items: Vec<_> = report
            .iter()
            .map(|outcome| match outcome {
                Ok((plan, written)) => json!({
                    "client": plan.client.name(), "path": plan.path,
                    "scope": if plan.scope == Scope::Project { "project" } else { "user" },
                    "key": plan.key, "entry": plan.entry,
                    "written": written, "unchanged": plan.unchanged,
                }),
                Err(e) => json!({"error": e}),
            })
            .collect();
        println!("{}", serde_json::Value::Array(items));
    } else if args.client.is_none() && !args.all {
        list(&report, &places.home);
    } else {
        for outcome in &report {
            match outcome {
                Ok((plan, written)) => say(plan, *written, &places.home),
                Err(e) => eprintln!("amanctl: {e}"),
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// One client's outcome, in words: only what changes.
fn say(plan: &Plan, written: bool, home: &Path) {
    let file = tilde(&plan.path, home);
    if plan.unchanged {
        println!("{}: {file} already registers amanmcp", plan.client.label());
    } else if written {
        println!(
            "{}: amanmcp registered in {file} ({})",
            plan.client.label(),
            plan.key
        );
    } else {
        println!(
            "{}: would set {} in {file} to {}",
            plan.client.label(),
            plan.key,
            setup::shown(&plan.entry)
        );
    }
}

/// The clients found, each with its file and whether amanmcp is there, and what to run.
fn list(report: &[Result<(Plan, bool), String>], home: &Path) {
    if report.is_empty() {
        let names: Vec<String> = setup::ALL.iter().map(|c| c.name()).collect();
        println!(
            "No AI clients found on this machine. Name one: amanctl setup {}",
            names.join("|")
        );
        return;
    }
    println!("AI clients found on this machine:");
    let mut pending = 0;
    for outcome in report {
        match outcome {
            Ok((plan, _)) => {
                pending += usize::from(!plan.unchanged);
                println!(
                    "  {:<15} {:<15} {}  {}",
                    plan.client.name(),
                    plan.client.label(),
                    tilde(&plan.path, home),
                    if plan.unchanged {
                        "registered"
                    } else {
                        "not registered"
                    }
                );
            }
            Err(e) => println!("  {e}"),
        }
    }
    if pending > 0 {
        println!(
            "Register amanmcp in {}: amanctl setup --all (one: amanctl setup NAME; preview: --dry-run)",
            if pending == 1 { "it" } else { "each" }
        );
    }
}

/// `path` with the home directory `home` as `~`.
fn tilde(path: &Path, home: &Path) -> String {
    match path.strip_prefix(home).ok() {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}
