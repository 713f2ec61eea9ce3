//! A small MCP client for stdio servers, on rmcp's client side.
//!
//! [`Client`] spawns one server (command, args, env), initializes it (rmcp sends
//! `notifications/initialized`), lists and caches its tools, calls them, and closes it (stdin
//! closed, process reaped). Request ids, responses and cancellation are rmcp's. [`Manager`]
//! holds many named servers, aggregates their tools with per-server deny lists, finds which
//! server provides a tool and calls it there. `amanctl mcp` is built on it.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};

/// How to start a stdio MCP server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSpec {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// Working directory, if not inherited.
    pub cwd: Option<PathBuf>,
}

/// What went wrong talking to a server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The process could not be started.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The server did not complete `initialize`.
    #[error("server `{server}` did not initialize: {message}")]
    Initialize {
        /// The server's name.
        server: String,
        /// Why.
        message: String,
    },
    /// The client was closed.
    #[error("server `{0}` is not running (closed)")]
    NotInitialized(String),
    /// The server answered with a JSON-RPC error (or the connection failed).
    #[error("server `{server}`: {message}")]
    Rpc {
        /// The server's name.
        server: String,
        /// The error, with its code when the server sent one.
        message: String,
    },
    /// The tool ran and reported an error (`isError: true`).
    #[error("tool `{tool}` on `{server}` failed: {message}")]
    Tool {
        /// The server's name.
        server: String,
        /// The tool.
        tool: String,
        /// The tool's error text.
        message: String,
    },
    /// No server of that name.
    #[error("no server named `{0}`")]
    UnknownServer(String),
    /// No server offers that tool (or it is denied).
    #[error("no server offers the tool `{0}`")]
    UnknownTool(String),
    /// Waited too long.
    #[error("server `{server}` did not answer {what} within {seconds}s")]
    Timeout {
        /// The server's name.
        server: String,
        /// What was asked.
        what: &'static str,
        /// The limit.
        seconds: u64,
    },
}

/// The text of a tool result's text content blocks.
pub fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One running stdio MCP server.
pub struct Client {
    name: String,
    service: Option<RunningService<RoleClient, ()>>,
    tools: Option<Vec<Tool>>,
    timeout: Duration,
}

impl Client {
    /// Spawn the server and initialize it, waiting at most `timeout` for each request.
    pub async fn start(
        name: &str,
        spec: &ServerSpec,
        timeout: Duration,
    ) -> Result<Client, ClientError> {
        let mut command = tokio::process::Command::new(&spec.command);
        command.args(&spec.args).envs(&spec.env);
        if let Some(cwd) = &spec.cwd {
            command.current_dir(cwd);
        }
        let (transport, _stderr) = TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|source| ClientError::Spawn {
                command: spec.command.clone(),
                source,
            })?;
        let service = match tokio::time::timeout(timeout, ().serve(transport)).await {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                return Err(ClientError::Initialize {
                    server: name.to_string(),
                    message: e.to_string(),
                });
            }
            Err(_) => {
                return Err(ClientError::Timeout {
                    server: name.to_string(),
                    what: "initialize",
                    seconds: timeout.as_secs(),
                });
            }
        };
        Ok(Client {
            name: name.to_string(),
            service: Some(service),
            tools: None,
            timeout,
        })
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn service(&self) -> Result<&RunningService<RoleClient, ()>, ClientError> {
        self.service
            .as_ref()
            .ok_or_else(|| ClientError::NotInitialized(self.name.clone()))
    }

    /// The server's name and version, as it announced them.
    pub fn server_info(&self) -> Option<(String, String)> {
        let info = self.service.as_ref()?.peer_info()?;
        let implementation = info.server_info.as_ref()?;
        Some((implementation.name.clone(), implementation.version.clone()))
    }

    /// Await one request within the client's timeout, naming the server in any error.
    async fn request<T>(
        &self,
        what: &'static str,
        request: impl Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, ClientError> {
        tokio::time::timeout(self.timeout, request)
            .await
            .map_err(|_| ClientError::Timeout {
                server: self.name.clone(),
                what,
                seconds: self.timeout.as_secs(),
            })?
            .map_err(|e| ClientError::Rpc {
                server: self.name.clone(),
                message: e.to_string(),
            })
    }

    /// The server's tools (every page), fetched once and cached.
    pub async fn tools(&mut self) -> Result<&[Tool], ClientError> {
        if self.tools.is_none() {
            let service = self.service()?;
            let tools = self.request("tools/list", service.list_all_tools()).await?;
            self.tools = Some(tools);
        }
        Ok(self.tools.as_deref().unwrap_or_default())
    }

    /// Call `tool`; a result with `isError: true` becomes [`ClientError::Tool`].
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ClientError> {
        let service = self.service()?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = Some(arguments);
        let result = self
            .request("tools/call", service.call_tool(params))
            .await?;
        if result.is_error == Some(true) {
            return Err(ClientError::Tool {
                server: self.name.clone(),
                tool: tool.to_string(),
                message: result_text(&result),
            });
        }
        Ok(result)
    }

    /// Close stdin and reap the process.
    pub async fn close(mut self) {
        if let Some(service) = self.service.take() {
            let _ = service.cancel().await;
        }
    }
}

/// Many named servers.
#[derive(Default)]
pub struct Manager {
    clients: BTreeMap<String, Client>,
    denied: BTreeMap<String, HashSet<String>>,
}

impl Manager {
    /// An empty manager.
    pub fn new() -> Manager {
        Manager::default()
    }

    /// Start `spec` as `name`.
    pub async fn add(
        &mut self,
        name: &str,
        spec: &ServerSpec,
        timeout: Duration,
    ) -> Result<(), ClientError> {
        let client = Client::start(name, spec, timeout).await?;
        if let Some(old) = self.clients.insert(name.to_string(), client) {
            old.close().await;
        }
        Ok(())
    }

    /// Hide `tool` of `server` from [`Manager::tools`], [`Manager::find`] and [`Manager::call`].
    pub fn deny(&mut self, server: &str, tool: &str) {
        self.denied
            .entry(server.to_string())
            .or_default()
            .insert(tool.to_string());
    }

    fn allowed(&self, server: &str, tool: &str) -> bool {
        !self.denied.get(server).is_some_and(|d| d.contains(tool))
    }

    /// Every allowed tool of every server, as (server, tool).
    pub async fn tools(&mut self) -> Result<Vec<(String, Tool)>, ClientError> {
        let mut out = Vec::new();
        let names: Vec<String> = self.clients.keys().cloned().collect();
        for name in names {
            let tools = match self.clients.get_mut(&name) {
                Some(client) => client.tools().await?.to_vec(),
                None => continue,
            };
            for tool in tools {
                if self.allowed(&name, &tool.name) {
                    out.push((name.clone(), tool));
                }
            }
        }
        Ok(out)
    }

    /// The first server (by name) that offers `tool` and does not deny it.
    pub async fn find(&mut self, tool: &str) -> Result<Option<String>, ClientError> {
        Ok(self
            .tools()
            .await?
            .into_iter()
            .find(|(_, t)| t.name == tool)
            .map(|(server, _)| server))
    }

    /// Call `tool` on `server`, or on whichever server offers it when `server` is `None`.
    pub async fn call(
        &mut self,
        server: Option<&str>,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ClientError> {
        let server = match server {
            Some(server) => server.to_string(),
            None => self
                .find(tool)
                .await?
                .ok_or_else(|| ClientError::UnknownTool(tool.to_string()))?,
        };
        if !self.allowed(&server, tool) {
            return Err(ClientError::UnknownTool(tool.to_string()));
        }
        let client = self
            .clients
            .get(&server)
            .ok_or_else(|| ClientError::UnknownServer(server.clone()))?;
        client.call(tool, arguments).await
    }

    /// Close every server.
    pub async fn close_all(self) {
        for (_, client) in self.clients {
            client.close().await;
        }
    }
}

/// The MCP configuration files a project may carry: Claude Code's and Cursor's.
pub const PROJECT_CONFIGS: &[&str] = &[".mcp.json", ".cursor/mcp.json"];

/// One configured server: how to start it, or why it cannot be started from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredServer {
    /// Its name in the config.
    pub name: String,
    /// A stdio server's spec, or why there is none (remote server, malformed entry).
    pub spec: Result<ServerSpec, String>,
}

/// Read the `mcpServers` of one config file. Servers run in `project` (as clients start them).
pub fn read_config(
    path: &std::path::Path,
    project: &std::path::Path,
) -> Result<Vec<ConfiguredServer>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
    let Some(servers) = json.get("mcpServers").and_then(|s| s.as_object()) else {
        return Err(format!("{} has no `mcpServers` object", path.display()));
    };
    let mut out = Vec::new();
    for (name, entry) in servers {
        let spec = (|| {
            if let Some(url) = entry.get("url").and_then(|u| u.as_str()) {
                return Err(format!(
                    "remote server at {url} (only stdio servers are started)"
                ));
            }
            let command = entry
                .get("command")
                .and_then(|c| c.as_str())
                .ok_or("no `command`")?
                .to_string();
            let args = match entry.get("args") {
                None => Vec::new(),
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .map(|a| {
                        a.as_str()
                            .map(str::to_string)
                            .ok_or("`args` must be strings")
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("`args` must be an array".into()),
            };
            let mut env = BTreeMap::new();
            if let Some(vars) = entry.get("env").and_then(|e| e.as_object()) {
                for (key, value) in vars {
                    let value = value.as_str().ok_or("`env` values must be strings")?;
                    env.insert(key.clone(), value.to_string());
                }
            }
            let cwd = entry
                .get("cwd")
                .and_then(|c| c.as_str())
                .map(|c| project.join(c))
                .or_else(|| Some(project.to_path_buf()));
            Ok(ServerSpec {
                command,
                args,
                env,
                cwd,
            })
        })();
        out.push(ConfiguredServer {
            name: name.clone(),
            spec: spec.map_err(|e: String| e),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_claude_and_cursor_configs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {
                "code": {"command": "amanmcp", "args": ["serve"], "env": {"A": "1"}},
                "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
                "broken": {"args": ["x"]}
            }}"#,
        )
        .unwrap();
        let servers = read_config(&path, dir.path()).unwrap();
        let by_name: BTreeMap<_, _> = servers.iter().map(|s| (s.name.as_str(), &s.spec)).collect();
        let code = by_name["code"].as_ref().unwrap();
        assert_eq!(code.command, "amanmcp");
        assert_eq!(code.args, ["serve"]);
        assert_eq!(code.env["A"], "1");
        assert_eq!(code.cwd.as_deref(), Some(dir.path()));
        assert!(by_name["remote"].as_ref().unwrap_err().contains("remote"));
        assert!(by_name["broken"].as_ref().unwrap_err().contains("command"));
        std::fs::write(&path, "{oops").unwrap();
        assert!(
            read_config(&path, dir.path())
                .unwrap_err()
                .contains("not valid JSON")
        );
    }
}
