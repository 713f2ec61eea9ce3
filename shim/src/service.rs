//! `amanctl service`: run the daemon as a systemd user service (Linux) or a launchd agent
//! (macOS), so it starts at login instead of on a client's first call. The unit points at
//! the `amanmcpd` installed beside `amanctl`.

use std::path::{Path, PathBuf};

/// What the platform's service manager needs: where the definition goes, what it says, and
/// the commands that load, unload and query it.
#[derive(Debug)]
pub struct Service {
    /// The unit or agent file.
    pub path: PathBuf,
    /// Its content.
    pub content: String,
    /// A socket unit beside it, where the platform offers socket activation (systemd): the
    /// manager listens on the daemon's socket and starts the daemon on the first connection.
    pub socket_unit: Option<(PathBuf, String)>,
    /// Commands that enable and start it.
    pub install: Vec<Vec<String>>,
    /// Commands that stop and disable it.
    pub uninstall: Vec<Vec<String>>,
    /// The command that tells whether it runs.
    pub status: Vec<String>,
}

fn words(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The service definition for `daemon` (the `amanmcpd` binary), under `home`.
pub fn service(daemon: &Path, home: &Path) -> Service {
    let daemon = daemon.display();
    if cfg!(target_os = "macos") {
        let label = "dev.amanmcp.amanmcpd";
        let path = home.join(format!("Library/LaunchAgents/{label}.plist"));
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let domain = format!("gui/{uid}");
        Service {
            content: format!(
                r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>{label}</string>
  <key>ProgramArguments</key><array><string>{daemon}</string></array>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
</dict>
</plist>
"#
            ),
            socket_unit: None,
            install: vec![vec![
                "launchctl".into(),
                "bootstrap".into(),
                domain.clone(),
                path.display().to_string(),
            ]],
            uninstall: vec![vec![
                "launchctl".into(),
                "bootout".into(),
                format!("{domain}/{label}"),
            ]],
            status: vec![
                "launchctl".into(),
                "print".into(),
                format!("{domain}/{label}"),
            ],
            path,
        }
    } else {
        let units = home.join(".config/systemd/user");
        Service {
            path: units.join("amanmcpd.service"),
            content: format!(
                "# Written by `amanctl service install`; `amanctl service uninstall` removes it.\n\
                 [Unit]\n\
                 Description=amanmcp code search daemon\n\
                 Requires=amanmcpd.socket\n\
                 After=amanmcpd.socket\n\
                 \n\
                 [Service]\n\
                 ExecStart={daemon}\n\
                 Restart=on-failure\n\
                 RestartSec=2\n\
                 \n\
                 [Install]\n\
                 WantedBy=default.target\n"
            ),
            // The daemon's default socket (`$XDG_RUNTIME_DIR/amanmcp/amanmcpd.sock`), in a
            // private directory, owner only, as the daemon would make it.
            socket_unit: Some((
                units.join("amanmcpd.socket"),
                "# Written by `amanctl service install`; `amanctl service uninstall` removes it.\n\
                 [Unit]\n\
                 Description=amanmcp code search daemon socket\n\
                 \n\
                 [Socket]\n\
                 ListenStream=%t/amanmcp/amanmcpd.sock\n\
                 SocketMode=0600\n\
                 DirectoryMode=0700\n\
                 \n\
                 [Install]\n\
                 WantedBy=sockets.target\n"
                    .to_string(),
            )),
            install: vec![
                words(&["systemctl", "--user", "daemon-reload"]),
                words(&["systemctl", "--user", "enable", "--now", "amanmcpd.socket"]),
                words(&["systemctl", "--user", "enable", "--now", "amanmcpd.service"]),
            ],
            uninstall: vec![
                words(&[
                    "systemctl",
                    "--user",
                    "disable",
                    "--now",
                    "amanmcpd.service",
                    "amanmcpd.socket",
                ]),
                words(&["systemctl", "--user", "daemon-reload"]),
            ],
            status: words(&["systemctl", "--user", "is-active", "amanmcpd.service"]),
        }
    }
}

/// Run one service-manager command; `Err` carries what it printed.
pub fn run(command: &[String]) -> Result<String, String> {
    let out = std::process::Command::new(&command[0])
        .args(&command[1..])
        .output()
        .map_err(|e| format!("`{}`: {e}", command.join(" ")))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("`{}` failed: {}", command.join(" "), text.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_points_at_the_daemon_and_lives_in_the_users_config() {
        let s = service(Path::new("/opt/amanmcp/bin/amanmcpd"), Path::new("/home/u"));
        assert!(s.content.contains("/opt/amanmcp/bin/amanmcpd"));
        assert!(s.path.starts_with("/home/u"));
        assert!(!s.install.is_empty() && !s.uninstall.is_empty());
    }
}
