//! `amanctl setup`: register amanmcp in an AI client's MCP configuration, merging into the
//! file that is there (other servers and settings kept, the file left alone when it cannot
//! be read): JSON for Claude Code, Cursor and VS Code, TOML (comments kept) for Codex.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// The clients `amanctl setup` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: `.mcp.json` in the project; `--global`: `~/.claude.json`.
    Claude,
    /// Cursor: `.cursor/mcp.json` in the project; `--global`: `~/.cursor/mcp.json`.
    Cursor,
    /// VS Code: `.vscode/mcp.json` in the project.
    Vscode,
    /// Codex: `~/.codex/config.toml` (Codex reads only the user's file).
    Codex,
}

/// Why a configuration cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The existing file is not JSON we can merge into.
    #[error("{path} is not a JSON object ({reason}); fix or move it, then run again")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The client has no such scope.
    #[error("{0}")]
    Scope(String),
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// What `setup` will write: the file, its new content, and whether it changes anything.
#[derive(Debug)]
pub struct Plan {
    /// The configuration file.
    pub path: PathBuf,
    /// Its content after the merge.
    pub content: String,
    /// Whether the file already said exactly this.
    pub unchanged: bool,
}

/// The configuration file of `client` for the project at `root` (or the user's, `global`).
pub fn config_path(
    client: Client,
    root: &Path,
    global: bool,
    home: &Path,
) -> Result<PathBuf, SetupError> {
    Ok(match (client, global) {
        (Client::Claude, false) => root.join(".mcp.json"),
        (Client::Claude, true) => home.join(".claude.json"),
        (Client::Cursor, false) => root.join(".cursor/mcp.json"),
        (Client::Cursor, true) => home.join(".cursor/mcp.json"),
        (Client::Vscode, false) => root.join(".vscode/mcp.json"),
        (Client::Codex, _) => home.join(".codex/config.toml"),
        (Client::Vscode, true) => {
            return Err(SetupError::Scope(
                "VS Code keeps user-wide servers in its settings; use the project's .vscode/mcp.json (without --global)".into(),
            ));
        }
    })
}

/// The server entry for `client`, launching `amanmcp` at `binary`.
fn entry(client: Client, binary: &Path) -> (&'static str, Value) {
    let command = binary.to_string_lossy();
    match client {
        Client::Vscode => (
            "servers",
            json!({"type": "stdio", "command": command, "args": ["serve"]}),
        ),
        // Codex's TOML is written apart (see `plan_toml`); the JSON shape is the same.
        Client::Claude | Client::Cursor | Client::Codex => {
            ("mcpServers", json!({"command": command, "args": ["serve"]}))
        }
    }
}

/// Merge the `amanmcp` server into `client`'s configuration at `path`, as it will be written.
pub fn plan(client: Client, path: &Path, binary: &Path) -> Result<Plan, SetupError> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(SetupError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if client == Client::Codex {
        return plan_toml(path, existing, binary);
    }
    let mut config: Map<String, Value> = match existing.as_deref().map(str::trim) {
        None | Some("") => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(SetupError::Unreadable {
                    path: path.to_path_buf(),
                    reason: "not an object".into(),
                });
            }
            Err(e) => {
                return Err(SetupError::Unreadable {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                });
            }
        },
    };
    let (key, server) = entry(client, binary);
    let servers = config
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(SetupError::Unreadable {
            path: path.to_path_buf(),
            reason: format!("`{key}` is not an object"),
        });
    };
    servers.insert("amanmcp".into(), server);
    let content = format!(
        "{}\n",
        serde_json::to_string_pretty(&Value::Object(config)).expect("JSON serializes")
    );
    let unchanged = existing.as_deref() == Some(content.as_str());
    Ok(Plan {
        path: path.to_path_buf(),
        content,
        unchanged,
    })
}

/// Codex's TOML: `[mcp_servers.amanmcp]` set, everything else (comments included) kept.
fn plan_toml(path: &Path, existing: Option<String>, binary: &Path) -> Result<Plan, SetupError> {
    let mut doc: toml_edit::DocumentMut =
        existing
            .as_deref()
            .unwrap_or("")
            .parse()
            .map_err(|e: toml_edit::TomlError| SetupError::Unreadable {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            table.set_implicit(true);
            toml_edit::Item::Table(table)
        })
        .as_table_mut()
        .ok_or_else(|| SetupError::Unreadable {
            path: path.to_path_buf(),
            reason: "`mcp_servers` is not a table".into(),
        })?;
    let mut server = toml_edit::Table::new();
    server["command"] = toml_edit::value(binary.to_string_lossy().as_ref());
    let mut args = toml_edit::Array::new();
    args.push("serve");
    server["args"] = toml_edit::value(args);
    servers.insert("amanmcp", toml_edit::Item::Table(server));
    let content = doc.to_string();
    let unchanged = existing.as_deref() == Some(content.as_str());
    Ok(Plan {
        path: path.to_path_buf(),
        content,
        unchanged,
    })
}

/// Write a plan (creating the directory), atomically: a temporary file renamed over it.
pub fn write(plan: &Plan) -> Result<(), SetupError> {
    let io = |source| SetupError::Io {
        path: plan.path.clone(),
        source,
    };
    if let Some(dir) = plan.path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut temp = plan.path.clone().into_os_string();
    temp.push(".amanmcp-tmp");
    let temp = PathBuf::from(temp);
    std::fs::write(&temp, &plan.content).map_err(io)?;
    std::fs::rename(&temp, &plan.path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_servers_and_settings_are_kept_and_a_second_run_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}"#,
        )
        .unwrap();
        let binary = Path::new("/opt/bin/amanmcp");
        let plan = plan(Client::Claude, &path, binary).unwrap();
        let merged: Value = serde_json::from_str(&plan.content).unwrap();
        assert_eq!(merged["mcpServers"]["other"]["command"], "x");
        assert_eq!(merged["theme"], "dark");
        assert_eq!(
            merged["mcpServers"]["amanmcp"]["command"],
            "/opt/bin/amanmcp"
        );
        assert!(!plan.unchanged);
        write(&plan).unwrap();
        assert!(
            super::plan(Client::Claude, &path, binary)
                .unwrap()
                .unchanged
        );
    }

    #[test]
    fn a_file_that_is_not_json_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, "{ broken").unwrap();
        let err = plan(Client::Cursor, &path, Path::new("amanmcp")).unwrap_err();
        assert!(err.to_string().contains("not a JSON object"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ broken");
    }

    #[test]
    fn codex_toml_keeps_comments_and_other_servers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(
            &path,
            "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n",
        )
        .unwrap();
        let plan = plan(Client::Codex, &path, Path::new("/b/amanmcp")).unwrap();
        assert!(
            plan.content.starts_with("# my settings\nmodel = \"o3\""),
            "{}",
            plan.content
        );
        let doc: toml_edit::DocumentMut = plan.content.parse().unwrap();
        assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        assert_eq!(
            doc["mcp_servers"]["amanmcp"]["command"].as_str(),
            Some("/b/amanmcp")
        );
        write(&plan).unwrap();
        assert!(
            super::plan(Client::Codex, &path, Path::new("/b/amanmcp"))
                .unwrap()
                .unchanged
        );
        std::fs::write(&path, "[[broken").unwrap();
        assert!(super::plan(Client::Codex, &path, Path::new("/b/amanmcp")).is_err());
    }

    #[test]
    fn vscode_uses_its_own_shape() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        let plan = plan(Client::Vscode, &path, Path::new("/b/amanmcp")).unwrap();
        let merged: Value = serde_json::from_str(&plan.content).unwrap();
        assert_eq!(merged["servers"]["amanmcp"]["type"], "stdio");
        assert!(config_path(Client::Vscode, dir.path(), true, dir.path()).is_err());
    }
}
