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

/// The service definition for `daemon` (the `amanmcpd` binary), under `home`; systemd units
/// go to `config_home` (`$XDG_CONFIG_HOME`, when set and absolute) or `~/.config`.
pub fn service(daemon: &Path, home: &Path, config_home: Option<&Path>) -> Service {
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
        let units = config_home
            .filter(|c| c.is_absolute())
            .map_or_else(|| home.join(".config"), Path::to_path_buf)
            .join("systemd/user");
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
                 RestartSec=2\n"
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
                // Socket activation: the socket is enabled; the daemon starts on the first
                // connection, not at login.
                words(&["systemctl", "--user", "enable", "--now", "amanmcpd.socket"]),
            ],
            uninstall: vec![
                words(&["systemctl", "--user", "disable", "--now", "amanmcpd.socket"]),
                words(&["systemctl", "--user", "stop", "amanmcpd.service"]),
                words(&["systemctl", "--user", "daemon-reload"]),
            ],
            status: words(&["systemctl", "--user", "is-active", "amanmcpd.socket"]),
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
        let s = service(
            Path::new("/opt/amanmcp/bin/amanmcpd"),
            Path::new("/home/u"),
            None,
        );
        assert!(s.content.contains("/opt/amanmcp/bin/amanmcpd"));
        assert!(s.path.starts_with("/home/u"));
        assert!(!s.install.is_empty() && !s.uninstall.is_empty());
        if cfg!(target_os = "linux") {
            let elsewhere = Path::new("/cfg");
            let s = service(
                Path::new("/bin/amanmcpd"),
                Path::new("/home/u"),
                Some(elsewhere),
            );
            assert!(
                s.path.starts_with("/cfg/systemd/user"),
                "{}",
                s.path.display()
            );
            let relative = service(
                Path::new("/bin/amanmcpd"),
                Path::new("/home/u"),
                Some(Path::new("cfg")),
            );
            assert!(relative.path.starts_with("/home/u/.config"));
            // Started by its socket on the first connection, never at login.
            assert!(!s.content.contains("WantedBy=default.target"));
            assert!(
                !s.install
                    .iter()
                    .any(|c| c.contains(&"amanmcpd.service".to_string()))
            );
        }
    }
}
