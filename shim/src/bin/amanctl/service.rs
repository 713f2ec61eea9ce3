//! `amanctl service install|uninstall|status`: the daemon as a systemd user service or a
//! launchd agent (see `amanmcp::service`).

use std::process::ExitCode;

use amanmcp::service::{self, Service};
use clap::Subcommand;
use serde_json::json;

#[derive(Subcommand)]
pub enum ServiceCommand {
    /// Write the unit (or agent) and enable and start it.
    Install {
        /// Print the unit and the commands instead of running them.
        #[arg(long)]
        dry_run: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Stop and disable it, and remove the unit.
    Uninstall {
        /// Print the commands instead of running them.
        #[arg(long)]
        dry_run: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Whether the unit is installed and running.
    Status {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

fn definition() -> Result<Service, String> {
    let home = std::env::var_os("HOME").ok_or("HOME is not set")?;
    let daemon = amanmcp::link::installed_beside("amanmcpd")
        .ok_or("no `amanmcpd` beside amanctl: install both (packaging/install.sh)")?;
    let config_home = std::env::var_os("XDG_CONFIG_HOME").map(std::path::PathBuf::from);
    Ok(service::service(
        &daemon,
        std::path::Path::new(&home),
        config_home.as_deref(),
    ))
}

pub fn service(command: ServiceCommand) -> ExitCode {
    let svc = match definition() {
        Ok(svc) => svc,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let shown = |commands: &[Vec<String>]| -> Vec<String> {
        commands.iter().map(|c| c.join(" ")).collect()
    };
    let (outcome, as_json, report) = match command {
        ServiceCommand::Install { dry_run, json } => {
            let outcome = if dry_run { Ok(()) } else { install(&svc) };
            let socket = svc.socket_unit.as_ref().map(|(path, _)| path);
            let report = json!({"unit": svc.path, "content": svc.content, "socket_unit": socket,
                                "commands": shown(&svc.install), "dry_run": dry_run});
            if !json {
                if dry_run {
                    println!("# {}\n{}", svc.path.display(), svc.content);
                    if let Some((path, content)) = &svc.socket_unit {
                        println!("# {}\n{}", path.display(), content);
                    }
                    for c in shown(&svc.install) {
                        println!("$ {c}");
                    }
                } else if outcome.is_ok() {
                    println!("amanmcpd installed as a service: {}", svc.path.display());
                }
            }
            (outcome, json, report)
        }
        ServiceCommand::Uninstall { dry_run, json } => {
            let outcome = if dry_run { Ok(()) } else { uninstall(&svc) };
            let report =
                json!({"unit": svc.path, "commands": shown(&svc.uninstall), "dry_run": dry_run});
            if !json {
                if dry_run {
                    for c in shown(&svc.uninstall) {
                        println!("$ {c}");
                    }
                    println!("$ rm {}", svc.path.display());
                    if let Some((path, _)) = &svc.socket_unit {
                        println!("$ rm {}", path.display());
                    }
                } else if outcome.is_ok() {
                    println!("amanmcpd service removed");
                }
            }
            (outcome, json, report)
        }
        ServiceCommand::Status { json } => {
            let installed = svc.path.is_file();
            let running = service::run(&svc.status).is_ok();
            if !json {
                println!(
                    "unit {}: {}; {}",
                    svc.path.display(),
                    if installed {
                        "installed"
                    } else {
                        "not installed"
                    },
                    if running {
                        "running"
                    } else {
                        "not running under the service manager"
                    }
                );
            }
            (
                Ok(()),
                json,
                json!({"unit": svc.path, "installed": installed, "running": running}),
            )
        }
    };
    let ok = outcome.is_ok();
    if as_json {
        let mut report = report;
        report["ok"] = json!(ok);
        if let Err(e) = &outcome {
            report["error"] = json!(e);
        }
        println!("{report}");
    } else if let Err(e) = &outcome {
        eprintln!("amanctl: {e}");
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Write the unit, then load it. The unit stays written when loading fails, so the error
/// names the manager's own message.
fn install(svc: &Service) -> Result<(), String> {
    if let Some(dir) = svc.path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&svc.path, &svc.content).map_err(|e| format!("{}: {e}", svc.path.display()))?;
    if let Some((path, content)) = &svc.socket_unit {
        std::fs::write(path, content).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    for command in &svc.install {
        service::run(command).map_err(|e| {
            format!(
                "{e}\n(the unit is written at {}; enable it by hand once the service manager runs)",
                svc.path.display()
            )
        })?;
    }
    Ok(())
}

fn uninstall(svc: &Service) -> Result<(), String> {
    // Stopping fails when it was never started; removing the file is what matters.
    let stopped = svc
        .uninstall
        .iter()
        .map(|c| service::run(c))
        .collect::<Vec<_>>();
    if let Some((path, _)) = &svc.socket_unit {
        let _ = std::fs::remove_file(path);
    }
    match std::fs::remove_file(&svc.path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match stopped.into_iter().find_map(Result::err) {
                Some(e) => Err(format!("no unit at {}; {e}", svc.path.display())),
                None => Ok(()),
            }
        }
        Err(e) => Err(format!("{}: {e}", svc.path.display())),
    }
}
