//! `amanctl mcp check|call`: the MCP servers a project configures, started with amanmcp's
//! own client.

use std::process::ExitCode;
use std::time::Duration;

use amanmcp::mcp_client;

/// Each MCP config file found in a project, with its servers or why it cannot be read.
type ConfigFiles = Vec<(String, Result<Vec<mcp_client::ConfiguredServer>, String>)>;

fn configured_servers(
    path: Option<&std::path::Path>,
) -> Result<(std::path::PathBuf, ConfigFiles), String> {
    let (root, _) = amanmcp::project::command_root(path)?;
    let mut files = Vec::new();
    for name in mcp_client::PROJECT_CONFIGS {
        let config = root.join(name);
        if config.is_file() {
            files.push((name.to_string(), mcp_client::read_config(&config, &root)));
        }
    }
    Ok((root, files))
}

pub async fn mcp_check(path: Option<std::path::PathBuf>, timeout: u64) -> ExitCode {
    let (root, files) = match configured_servers(path.as_deref()) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    if files.is_empty() {
        println!(
            "no MCP configuration in {} (looked for {})",
            root.display(),
            mcp_client::PROJECT_CONFIGS.join(", ")
        );
        return ExitCode::FAILURE;
    }
    let mut failed = false;
    for (file, servers) in files {
        let servers = match servers {
            Ok(servers) => servers,
            Err(e) => {
                println!("{file}: {e}");
                failed = true;
                continue;
            }
        };
        println!("{file}: {}", super::counted(servers.len(), "server"));
        for server in servers {
            let spec = match &server.spec {
                Ok(spec) => spec,
                Err(why) => {
                    println!("  SKIP {}: {why}", server.name);
                    continue;
                }
            };
            let started = std::time::Instant::now();
            match mcp_client::Client::start(&server.name, spec, Duration::from_secs(timeout)).await
            {
                Ok(mut client) => {
                    let info = client
                        .server_info()
                        .map(|(n, v)| format!(" ({n} {v})"))
                        .unwrap_or_default();
                    match client.tools().await {
                        Ok(tools) => {
                            let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
                            println!(
                                "  ok   {}{info}: started in {} ms, {} tool(s): {}",
                                server.name,
                                started.elapsed().as_millis(),
                                names.len(),
                                names.join(", ")
                            );
                        }
                        Err(e) => {
                            println!("  FAIL {}: {e}", server.name);
                            failed = true;
                        }
                    }
                    client.close().await;
                }
                Err(e) => {
                    println!("  FAIL {}: {e}", server.name);
                    failed = true;
                }
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

pub async fn mcp_call(
    project: Option<std::path::PathBuf>,
    server: &str,
    tool: &str,
    arguments: &str,
    as_json: bool,
    timeout: u64,
) -> ExitCode {
    let arguments: serde_json::Map<String, serde_json::Value> =
        match serde_json::from_str(arguments) {
            Ok(serde_json::Value::Object(map)) => map,
            Ok(_) => {
                eprintln!("amanctl: the arguments must be a JSON object");
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("amanctl: the arguments are not valid JSON: {e}");
                return ExitCode::FAILURE;
            }
        };
    let (root, files) = match configured_servers(project.as_deref()) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("amanctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let spec = files
        .into_iter()
        .filter_map(|(_, servers)| servers.ok())
        .flatten()
        .find(|s| s.name == server)
        .map(|s| s.spec);
    let spec = match spec {
        Some(Ok(spec)) => spec,
        Some(Err(why)) => {
            eprintln!("amanctl: server `{server}` cannot be started: {why}");
            return ExitCode::FAILURE;
        }
        None => {
            eprintln!(
                "amanctl: no server named `{server}` in the MCP configuration of {}",
                root.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let mut manager = mcp_client::Manager::new();
    if let Err(e) = manager
        .add(server, &spec, Duration::from_secs(timeout))
        .await
    {
        eprintln!("amanctl: {e}");
        return ExitCode::FAILURE;
    }
    let outcome = manager.call(Some(server), tool, arguments).await;
    manager.close_all().await;
    match outcome {
        Ok(result) => {
            if as_json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&result).unwrap_or_default()
                );
            } else {
                println!("{}", mcp_client::result_text(&result));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("amanctl: {e}");
            ExitCode::FAILURE
        }
    }
}
