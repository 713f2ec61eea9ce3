//! `amanctl http enable|disable|status|token`: the daemon's Streamable HTTP endpoint. The
//! setting lives in the configuration directory's `amanmcp.toml`; the daemon reads it when
//! it starts, so a change applies from the next start.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use amanmcp::http::settings;
use amanmcp_proto::endpoint;
use serde_json::json;

/// What `amanctl http` does.
#[derive(clap::Subcommand)]
pub enum HttpCommand {
    /// Serve MCP over HTTP from the next daemon start (loopback only).
    Enable {
        /// The port.
        #[arg(long, default_value_t = settings::DEFAULT_PORT)]
        port: u16,
        /// The loopback address to bind.
        #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
        address: IpAddr,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Stop serving HTTP from the next daemon start.
    Disable {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Whether HTTP is enabled, its address, and whether something answers there.
    Status {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Print the bearer token HTTP clients must send (made on first use).
    Token,
}

/// Run one `amanctl http` command.
pub async fn http(command: HttpCommand) -> ExitCode {
    match run(command).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("amanctl: {e}");
            ExitCode::FAILURE
        }
    }
}

const APPLY: &str = "applies when the daemon next starts: `amanctl stop` (a client or \
`amanctl index` starts it again), or `systemctl --user restart amanmcpd` under systemd";

async fn run(command: HttpCommand) -> anyhow::Result<ExitCode> {
    let config_dir = endpoint::config_dir()?;
    match command {
        HttpCommand::Enable {
            port,
            address,
            json,
        } => {
            let listen = SocketAddr::new(address, port);
            if !address.is_loopback() {
                anyhow::bail!(
                    "{address} is not a loopback address; for other machines start the daemon \
                     with `amanmcpd --http ADDR --http-allow-remote` yourself"
                );
            }
            let file = settings::set_listen(&config_dir, Some(listen))?;
            let token = settings::token(&config_dir)?;
            let url = format!("http://{listen}/mcp?project=/path/to/project");
            if json {
                println!(
                    "{}",
                    json!({"enabled": true, "listen": listen.to_string(), "url": url,
                           "settings": file, "token_file": config_dir.join(settings::TOKEN_FILE)})
                );
            } else {
                println!("HTTP enabled on {listen} ({})", file.display());
                println!("  MCP:     {url}");
                println!("  header:  Authorization: Bearer {token}");
                println!("  status:  http://{listen}/status?token={token}");
                println!("  {APPLY}");
            }
        }
        HttpCommand::Disable { json } => {
            let file = settings::set_listen(&config_dir, None)?;
            if json {
                println!("{}", json!({"enabled": false, "settings": file}));
            } else {
                println!("HTTP disabled ({}); {APPLY}", file.display());
            }
        }
        HttpCommand::Status { json } => {
            let listen = settings::configured_listen(&config_dir)?;
            let serving = match listen {
                Some(addr) => tokio::time::timeout(
                    std::time::Duration::from_secs(2),
                    tokio::net::TcpStream::connect(addr),
                )
                .await
                .is_ok_and(|c| c.is_ok()),
                None => false,
            };
            if json {
                println!(
                    "{}",
                    json!({"enabled": listen.is_some(),
                           "listen": listen.map(|a| a.to_string()),
                           "serving": serving,
                           "token_file": config_dir.join(settings::TOKEN_FILE)})
                );
            } else {
                match listen {
                    Some(addr) => println!(
                        "HTTP enabled on {addr}: {}",
                        if serving {
                            "answering"
                        } else {
                            "nothing answers there (is the daemon running, started after `enable`?)"
                        }
                    ),
                    None => println!("HTTP disabled (`amanctl http enable` turns it on)"),
                }
            }
        }
        HttpCommand::Token => println!("{}", settings::token(&config_dir)?),
    }
    Ok(ExitCode::SUCCESS)
}
