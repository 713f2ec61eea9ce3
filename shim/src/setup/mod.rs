//! `amanctl setup`: register amanmcp in AI clients' MCP configurations. Each client's file
//! (the project's, or the user's where the client has no project file or `--global` asks)
//! is edited in place ([`edit`]): other servers, settings, comments and key order kept, the
//! file left alone when it cannot be read. Clients are detected by their configuration
//! directories and commands, so `amanctl setup` with no name can offer the installed ones.

mod edit;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub use edit::{NAME, shown};

/// The clients `amanctl setup` knows, each in its documented format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: `.mcp.json` in the project; `--global`: `~/.claude.json`.
    Claude,
    /// Claude Desktop: its `claude_desktop_config.json` (user-wide only).
    ClaudeDesktop,
    /// Cursor: `.cursor/mcp.json`; `--global`: `~/.cursor/mcp.json`.
    Cursor,
    /// VS Code (Copilot agent mode): `.vscode/mcp.json`; `--global`: the user's `mcp.json`.
    Vscode,
    /// Windsurf: `~/.codeium/windsurf/mcp_config.json` (user-wide only).
    Windsurf,
    /// Zed: `.zed/settings.json`; `--global`: `~/.config/zed/settings.json`.
    Zed,
    /// Gemini CLI: `.gemini/settings.json`; `--global`: `~/.gemini/settings.json`.
    Gemini,
    /// Codex: `~/.codex/config.toml` (user-wide only).
    Codex,
    /// OpenCode: `opencode.json`; `--global`: `~/.config/opencode/opencode.json`.
    Opencode,
    /// Kiro: `.kiro/settings/mcp.json`; `--global`: `~/.kiro/settings/mcp.json`.
    Kiro,
    /// GitHub Copilot CLI: `~/.copilot/mcp-config.json` (user-wide only).
    Copilot,
}

/// Every client, in the order they are listed.
pub const ALL: [Client; 11] = [
    Client::Claude,
    Client::ClaudeDesktop,
    Client::Cursor,
    Client::Vscode,
    Client::Windsurf,
    Client::Zed,
    Client::Gemini,
    Client::Codex,
    Client::Opencode,
    Client::Kiro,
    Client::Copilot,
];

/// Why a configuration cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The existing file is not one we can edit.
    #[error("{path} cannot be edited ({reason}); fix or move it, then run again")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
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

/// Where the user's files are: the home directory and the platform's configuration
/// directory (`$XDG_CONFIG_HOME` or `~/.config`; `~/Library/Application Support` on macOS).
#[derive(Debug, Clone)]
pub struct Places {
    /// The home directory.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub config: PathBuf,
    /// Where desktop applications keep settings (macOS: `~/Library/Application Support`;
    /// elsewhere the same as `config`).
    pub app_config: PathBuf,
}

impl Places {
    /// From `$HOME` and `$XDG_CONFIG_HOME`.
    pub fn from_env() -> Option<Places> {
        let home = PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?);
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|c| !c.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"));
        let app_config = if cfg!(target_os = "macos") {
            home.join("Library/Application Support")
        } else {
            config.clone()
        };
        Some(Places {
            home,
            config,
            app_config,
        })
    }
}

/// Which file of a client: the project's or the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// In the project (meant to be committed).
    Project,
    /// The user's (this machine only).
    User,
}

impl Client {
    /// The name people know it by.
    pub fn label(self) -> &'static str {
        match self {
            Client::Claude => "Claude Code",
            Client::ClaudeDesktop => "Claude Desktop",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
            Client::Windsurf => "Windsurf",
            Client::Zed => "Zed",
            Client::Gemini => "Gemini CLI",
            Client::Codex => "Codex",
            Client::Opencode => "OpenCode",
            Client::Kiro => "Kiro",
            Client::Copilot => "Copilot CLI",
        }
    }

    /// The name `amanctl setup` takes.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }

    /// The client's file in the project, if it reads one.
    fn project_file(self, root: &Path) -> Option<PathBuf> {
        Some(match self {
            Client::Claude => root.join(".mcp.json"),
            Client::Cursor => root.join(".cursor/mcp.json"),
            Client::Vscode => root.join(".vscode/mcp.json"),
            Client::Zed => root.join(".zed/settings.json"),
            Client::Gemini => root.join(".gemini/settings.json"),
            Client::Opencode => root.join("opencode.json"),
            Client::Kiro => root.join(".kiro/settings/mcp.json"),
            Client::ClaudeDesktop | Client::Windsurf | Client::Codex | Client::Copilot => {
                return None;
            }
        })
    }

    /// The user's file.
    fn user_file(self, places: &Places) -> PathBuf {
        let home = &places.home;
        match self {
            Client::Claude => home.join(".claude.json"),
            Client::ClaudeDesktop => places.app_config.join("Claude/claude_desktop_config.json"),
            Client::Cursor => home.join(".cursor/mcp.json"),
            Client::Vscode => places.app_config.join("Code/User/mcp.json"),
            Client::Windsurf => home.join(".codeium/windsurf/mcp_config.json"),
            Client::Zed => places.config.join("zed/settings.json"),
            Client::Gemini => home.join(".gemini/settings.json"),
            Client::Codex => std::env::var_os("CODEX_HOME")
                .filter(|c| !c.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".codex"))
                .join("config.toml"),
            Client::Opencode => places.config.join("opencode/opencode.json"),
            Client::Kiro => home.join(".kiro/settings/mcp.json"),
            Client::Copilot => home.join(".copilot/mcp-config.json"),
        }
    }

    /// The file and scope `setup` writes: the project's unless `global` or the client
    /// reads none.
    pub fn config_file(self, root: &Path, global: bool, places: &Places) -> (PathBuf, Scope) {
        match self.project_file(root).filter(|_| !global) {
            Some(file) => (file, Scope::Project),
            None => (self.user_file(places), Scope::User),
        }
    }

    /// Whether the client looks installed: its settings directory exists or its command is
    /// on `PATH`.
    pub fn detected(self, places: &Places) -> bool {
        let home = &places.home;
        let (dirs, commands): (Vec<PathBuf>, &[&str]) = match self {
            Client::Claude => (
                vec![home.join(".claude"), home.join(".claude.json")],
                &["claude"],
            ),
            Client::ClaudeDesktop => (vec![places.app_config.join("Claude")], &[]),
            Client::Cursor => (vec![home.join(".cursor")], &["cursor"]),
            Client::Vscode => (vec![places.app_config.join("Code")], &["code"]),
            Client::Windsurf => (vec![home.join(".codeium/windsurf")], &["windsurf"]),
            Client::Zed => (vec![places.config.join("zed")], &["zed", "zeditor"]),
            Client::Gemini => (vec![home.join(".gemini")], &["gemini"]),
            Client::Codex => (vec![home.join(".codex")], &["codex"]),
            Client::Opencode => (vec![places.config.join("opencode")], &["opencode"]),
            Client::Kiro => (vec![home.join(".kiro")], &["kiro"]),
            Client::Copilot => (vec![home.join(".copilot")], &["copilot"]),
        };
        dirs.iter().any(|d| d.exists()) || commands.iter().any(|c| on_path(c).is_some())
    }

    /// Where the entry goes (nested object keys) and the entry launching `command`.
    fn entry(self, command: &str) -> (&'static [&'static str], Value) {
        let plain = json!({"command": command, "args": ["serve"]});
        match self {
            Client::Vscode => (
                &["servers"],
                json!({"type": "stdio", "command": command, "args": ["serve"]}),
            ),
            Client::Zed => (&["context_servers"], plain),
            Client::Opencode => (
                &["mcp"],
                json!({"type": "local", "command": [command, "serve"], "enabled": true}),
            ),
            Client::Copilot => (
                &["mcpServers"],
                json!({"type": "local", "command": command, "args": ["serve"], "tools": ["*"]}),
            ),
            // Codex's TOML has the same fields (see `edit::toml`).
            Client::Codex => (&["mcp_servers"], plain),
            Client::Claude
            | Client::ClaudeDesktop
            | Client::Cursor
            | Client::Windsurf
            | Client::Gemini
            | Client::Kiro => (&["mcpServers"], plain),
        }
    }
}

/// `name` found on `PATH`, as an executable file.
pub fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The command a configuration names: in a project's file (committed, read on other
/// machines) plain `amanmcp` when that is on `PATH`; in the user's file, or when `amanmcp`
/// is not on `PATH`, the shim installed beside this program (`installed`).
pub fn command_for(scope: Scope, installed: Option<&Path>) -> String {
    let plain = || NAME.to_string();
    if scope == Scope::Project && on_path(NAME).is_some() {
        return plain();
    }
    installed.map_or_else(plain, |path| path.to_string_lossy().into_owned())
}

/// What `setup` will write.
#[derive(Debug)]
pub struct Plan {
    /// The client.
    pub client: Client,
    /// The configuration file.
    pub path: PathBuf,
    /// Project or user file.
    pub scope: Scope,
    /// Where the entry goes, e.g. `mcpServers.amanmcp`.
    pub key: String,
    /// The entry.
    pub entry: Value,
    /// The file's content after the edit.
    pub content: String,
    /// Whether the file already said exactly this.
    pub unchanged: bool,
}

/// The edit registering amanmcp (launched as `command`) in `client`'s file `path`.
pub fn plan(client: Client, path: &Path, scope: Scope, command: &str) -> Result<Plan, SetupError> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(SetupError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let (keys, entry) = client.entry(command);
    let content = if client == Client::Codex {
        edit::toml(&existing, keys, command, &["serve"])
    } else {
        edit::json(&existing, keys, &entry)
    }
    .map_err(|reason| SetupError::Unreadable {
        path: path.to_path_buf(),
        reason,
    })?;
    Ok(Plan {
        client,
        path: path.to_path_buf(),
        scope,
        key: format!("{}.{NAME}", keys.join(".")),
        entry,
        unchanged: content == existing,
        content,
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

    fn places(dir: &Path) -> Places {
        Places {
            home: dir.join("home"),
            config: dir.join("home/.config"),
            app_config: dir.join("home/.config"),
        }
    }

    #[test]
    fn each_client_has_its_file_and_shape() {
        let dir = tempfile::tempdir().unwrap();
        let places = places(dir.path());
        let root = dir.path().join("proj");
        // Detected by their directories.
        assert!(!Client::Windsurf.detected(&places) || on_path("windsurf").is_some());
        std::fs::create_dir_all(places.home.join(".codeium/windsurf")).unwrap();
        assert!(Client::Windsurf.detected(&places));
        for client in ALL {
            let (file, scope) = client.config_file(&root, false, &places);
            let (user, user_scope) = client.config_file(&root, true, &places);
            assert_eq!(user_scope, Scope::User);
            assert!(
                user.starts_with(&places.home),
                "{client:?}: {}",
                user.display()
            );
            match scope {
                Scope::Project => assert!(file.starts_with(&root), "{client:?}"),
                Scope::User => assert_eq!(file, user, "{client:?}"),
            }
            let plan = plan(client, &file, scope, "/b/amanmcp").unwrap();
            assert!(!plan.unchanged);
            write(&plan).unwrap();
            assert!(
                super::plan(client, &file, scope, "/b/amanmcp")
                    .unwrap()
                    .unchanged
            );
            if client != Client::Codex {
                let written: Value = serde_json::from_str(&plan.content).unwrap();
                let mut at = &written;
                for key in plan.key.split('.') {
                    at = &at[key];
                }
                assert_eq!(at, &plan.entry, "{client:?}");
            }
        }
    }

    #[test]
    fn a_file_that_cannot_be_edited_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, "{ broken").unwrap();
        let err = plan(Client::Cursor, &path, Scope::Project, NAME).unwrap_err();
        assert!(err.to_string().contains("cannot be edited"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ broken");
    }
}
