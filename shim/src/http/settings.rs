//! The HTTP endpoint's settings and secret, both in the per-user configuration directory
//! (0700): `amanmcp.toml`'s `[http]` table (`listen = "127.0.0.1:8765"`), written by
//! `amanctl http enable|disable` and read by the daemon at start, and `http-token` (0600), the
//! bearer token every request must carry, generated on first use.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, Table, value};

/// The settings file's name inside the configuration directory.
pub const SETTINGS_FILE: &str = "amanmcp.toml";
/// The token file's name inside the configuration directory.
pub const TOKEN_FILE: &str = "http-token";
/// The port `amanctl http enable` picks when none is given.
pub const DEFAULT_PORT: u16 = 8765;

/// Why the settings or the token could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The settings file is not valid TOML, or `http.listen` is not an address.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SettingsError {
    let path = path.to_path_buf();
    move |source| SettingsError::Io { path, source }
}

fn read_document(path: &Path) -> Result<DocumentMut, SettingsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => text.parse().map_err(|e| SettingsError::Invalid {
            path: path.to_path_buf(),
            message: format!("not valid TOML: {e}"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DocumentMut::new()),
        Err(e) => Err(io(path)(e)),
    }
}

/// The address the HTTP endpoint is configured to listen on, if it is enabled.
pub fn configured_listen(config_dir: &Path) -> Result<Option<SocketAddr>, SettingsError> {
    let path = config_dir.join(SETTINGS_FILE);
    let document = read_document(&path)?;
    let Some(listen) = document.get("http").and_then(|http| http.get("listen")) else {
        return Ok(None);
    };
    let invalid = |message: String| SettingsError::Invalid {
        path: path.clone(),
        message,
    };
    let text = listen
        .as_str()
        .ok_or_else(|| invalid("http.listen must be a string such as \"127.0.0.1:8765\"".into()))?;
    text.parse()
        .map(Some)
        .map_err(|e| invalid(format!("http.listen `{text}` is not an address: {e}")))
}

/// Enable the endpoint on `listen` (`Some`) or disable it (`None`), keeping the rest of the
/// file as it was.
pub fn set_listen(config_dir: &Path, listen: Option<SocketAddr>) -> Result<PathBuf, SettingsError> {
    amanmcp_proto::endpoint::create_private_dir(config_dir).map_err(io(config_dir))?;
    let path = config_dir.join(SETTINGS_FILE);
    let mut document = read_document(&path)?;
    match listen {
        Some(addr) => {
            if !document.contains_table("http") {
                document.insert("http", Item::Table(Table::new()));
            }
            document["http"]["listen"] = value(addr.to_string());
        }
        None => {
            if let Some(http) = document.get_mut("http").and_then(Item::as_table_mut) {
                http.remove("listen");
            }
        }
    }
    let temp = path.with_extension("toml.tmp");
    std::fs::write(&temp, document.to_string()).map_err(io(&temp))?;
    std::fs::rename(&temp, &path).map_err(io(&path))?;
    Ok(path)
}

/// The bearer token, created (64 hex digits from the system's random source, readable by
/// the owner only) if there is none yet.
///
/// A token file others could read (group or world bits set, or owned by another user) may
/// have leaked: it is replaced by a new token in a private file, and the daemon's log says
/// so.
pub fn token(config_dir: &Path) -> Result<String, SettingsError> {
    use std::os::unix::fs::MetadataExt;
    let path = config_dir.join(TOKEN_FILE);
    let private = std::fs::symlink_metadata(&path).map(|meta| {
        // SAFETY: getuid has no preconditions.
        let me = unsafe { libc::getuid() };
        meta.is_file() && meta.mode() & 0o077 == 0 && meta.uid() == me
    });
    match std::fs::read_to_string(&path) {
        Ok(_) if matches!(private, Ok(false)) => {
            tracing::warn!(path = %path.display(), "the HTTP token file could be read by others; it was replaced by a new token (see `amanctl http token`)");
        }
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&path)(e)),
    }
    amanmcp_proto::endpoint::create_private_dir(config_dir).map_err(io(config_dir))?;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(io(Path::new("/dev/urandom")))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let temp = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)
        .map_err(io(&temp))?;
    file.write_all(token.as_bytes()).map_err(io(&temp))?;
    std::fs::rename(&temp, &path).map_err(io(&path))?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_round_trips_and_keeps_other_settings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SETTINGS_FILE), "# mine\n[other]\nkey = 1\n").unwrap();
        assert_eq!(configured_listen(dir.path()).unwrap(), None);
        let addr: SocketAddr = "127.0.0.1:9123".parse().unwrap();
        set_listen(dir.path(), Some(addr)).unwrap();
        assert_eq!(configured_listen(dir.path()).unwrap(), Some(addr));
        let text = std::fs::read_to_string(dir.path().join(SETTINGS_FILE)).unwrap();
        assert!(
            text.contains("# mine") && text.contains("key = 1"),
            "{text}"
        );
        set_listen(dir.path(), None).unwrap();
        assert_eq!(configured_listen(dir.path()).unwrap(), None);
    }

    #[test]
    fn a_bad_address_is_an_error_that_names_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(SETTINGS_FILE),
            "[http]\nlisten = \"here\"\n",
        )
        .unwrap();
        let err = configured_listen(dir.path()).unwrap_err().to_string();
        assert!(err.contains("http.listen"), "{err}");
    }

    #[test]
    fn the_token_is_made_once_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        let first = token(&config).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(token(&config).unwrap(), first);
        let mode = std::fs::metadata(config.join(TOKEN_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "token file mode {mode:o}");
        let dir_mode = std::fs::metadata(&config).unwrap().permissions().mode();
        assert_eq!(dir_mode & 0o077, 0, "config dir mode {dir_mode:o}");
    }

    #[test]
    fn a_token_others_could_read_is_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        let first = token(&config).unwrap();
        let file = config.join(TOKEN_FILE);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let second = token(&config).unwrap();
        assert_ne!(second, first, "a token others could read is not used");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "token file mode {mode:o}");
        assert_eq!(token(&config).unwrap(), second);
    }
}
