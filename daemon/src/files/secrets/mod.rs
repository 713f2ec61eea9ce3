//! What is never indexed or served because it holds credentials: secrets files by name and
//! place ([`is_secret`]), and credentials inside ordinary files ([`redact`], `content`).
//!
//! `is_secret` decides by the root-relative path alone, so the scanner (nothing indexed) and
//! the read path (nothing served) apply the same rule. `redact` blanks credentials that sit in
//! code or configuration (a rule set in the shapes secret scanners share: private keys,
//! passwords in URLs and assignments, tokens of some forty services) in the text that is
//! indexed and in every read, keeping the lines where they are so line numbers still match
//! the file.

use std::path::{Component, Path};

mod content;
pub use content::{REDACTED, redact};

/// Directories whose contents are credentials or a repository's internals: anything under
/// them is a secret, whatever its name.
const SECRET_DIRS: &[&str] = &[".git", ".ssh", ".gnupg", ".aws", ".azure", ".gcloud"];

/// Files (exact lower-case names) that hold credentials.
const SECRET_NAMES: &[&str] = &[
    ".netrc",
    "_netrc",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".gitcredentials",
    ".htpasswd",
    ".vault-token",
    ".s3cfg",
    ".boto",
    ".dockercfg",
    ".my.cnf",
    ".terraformrc",
    "terraform.rc",
    "credentials",
    "kubeconfig",
    "htpasswd",
    // Composer's and rclone's credential stores.
    "auth.json",
    "rclone.conf",
    // kubeadm's kubeconfigs (/etc/kubernetes/*.conf) with their client keys.
    "admin.conf",
    "super-admin.conf",
    "kubelet.conf",
    "controller-manager.conf",
    "scheduler.conf",
];

/// Name prefixes (lower case) of files that hold credentials: `kube-config.yaml`,
/// `kubeconfig-prod`.
const SECRET_PREFIXES: &[&str] = &["kubeconfig", "kube-config", "kube_config"];

/// Parts of names that make a file a secret wherever they appear: Terraform state and its
/// timestamped backups (`terraform.tfstate.1700000000.backup`).
const SECRET_INFIXES: &[&str] = &[".tfstate"];

/// Suffixes (lower case) of files that hold keys, keystores or credentials.
const SECRET_SUFFIXES: &[&str] = &[
    ".pem",
    ".key",
    ".p12",
    ".pfx",
    ".keystore",
    ".jks",
    ".ppk",
    ".kdbx",
    ".ovpn",
    ".tfvars",
    ".tfvars.json",
    ".tfstate",
    ".tfstate.backup",
    ".kubeconfig",
    ".env",
    ".secret",
    ".secrets",
];

/// Private-key file name prefixes (`id_rsa`, `id_ed25519.pub`, ...).
const KEY_PREFIXES: &[&str] = &["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"];

/// Stems that are credentials when the file is configuration (`secrets.yaml`), but may be
/// ordinary code otherwise (`secrets.py`, google-auth's `credentials.py`).
const SECRET_CONFIG_STEMS: &[&str] = &["secret", "secrets", "credential", "credentials"];
const CONFIG_EXTENSIONS: &[&str] = &[
    "yaml",
    "yml",
    "json",
    "toml",
    "ini",
    "cfg",
    "conf",
    "properties",
    "env",
    "txt",
    "xml",
];

/// Whether the root-relative `path` names a file that holds secrets (`.env*`, private keys,
/// credential stores, Terraform variables and state, anything under `.git/` or `.ssh/`, ...).
/// Such files are neither indexed nor served.
pub fn is_secret(path: &Path) -> bool {
    let components: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    let Some((name, dirs)) = components.split_last() else {
        return false;
    };
    if dirs.iter().any(|d| SECRET_DIRS.contains(&d.as_str())) {
        return true;
    }
    let parent = dirs.last().map(String::as_str);
    // Per-tool config files that carry login tokens.
    if matches!(
        (parent, name.as_str()),
        (Some(".docker"), "config.json")
            | (Some(".kube"), "config")
            | (Some(".cargo"), "credentials")
            | (Some(".cargo"), "credentials.toml")
            | (Some(".config"), "hub")
            | (Some("gh"), "hosts.yml")
    ) {
        return true;
    }
    if name.starts_with(".env") || SECRET_NAMES.contains(&name.as_str()) {
        return true;
    }
    if KEY_PREFIXES
        .iter()
        .chain(SECRET_PREFIXES)
        .any(|p| name.starts_with(p))
    {
        return true;
    }
    if SECRET_INFIXES.iter().any(|i| name.contains(i)) {
        return true;
    }
    if SECRET_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return true;
    }
    if let Some((stem, ext)) = name.rsplit_once('.') {
        let stem = stem.trim_start_matches('.');
        // `secrets`, `secrets.prod`, `app-secrets`, `db_credentials`: the stem's first or
        // last `.`/`-`/`_`-separated part.
        let mut parts = stem.split(['.', '-', '_']);
        let first = parts.next().unwrap_or("");
        let last = parts.next_back().unwrap_or(first);
        if CONFIG_EXTENSIONS.contains(&ext)
            && SECRET_CONFIG_STEMS
                .iter()
                .any(|s| first == *s || last == *s)
        {
            return true;
        }
        if stem.starts_with("client_secret") && ext == "json" {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_files_are_recognised() {
        for path in [
            ".env",
            ".env.local",
            ".env-prod",
            ".envrc",
            "config/.env.production",
            "prod.env",
            "id_rsa",
            "id_ed25519.pub",
            "server.pem",
            "tls.key",
            ".git/config",
            ".git/hooks/pre-commit",
            "sub/.git/config",
            ".git-credentials",
            ".pgpass",
            ".netrc",
            ".npmrc",
            ".pypirc",
            ".htpasswd",
            ".docker/config.json",
            ".kube/config",
            ".aws/credentials",
            ".ssh/known_hosts",
            ".cargo/credentials.toml",
            "credentials",
            "credentials.json",
            "secrets.yaml",
            "deploy/secrets.yml",
            "app-secrets.json",
            "db_credentials.ini",
            "secret.toml",
            "prod.tfvars",
            "terraform.tfvars.json",
            "terraform.tfstate",
            "terraform.tfstate.backup",
            "client_secret_1234.json",
            "vault.kdbx",
            "putty.ppk",
            "office.ovpn",
            "cluster.kubeconfig",
            "kube-config.yaml",
            "deploy/kubeconfig-prod",
            "etc/kubernetes/admin.conf",
            "htpasswd",
            "auth.json",
            "rclone.conf",
            "terraform.tfstate.1700000000.backup",
        ] {
            assert!(is_secret(Path::new(path)), "{path} should be a secret");
        }
        for path in [
            "env.rs",
            "keys.py",
            "environment.md",
            "secrets.py",
            "src/credentials.py",
            "src/secrets.rs",
            "docs/secrets.md",
            "src/git/config.rs",
            "docker/config.json",
            "kube/config.go",
            "keyboard.c",
            "monkey.py",
            "tfvars.go",
        ] {
            assert!(!is_secret(Path::new(path)), "{path} should not be a secret");
        }
    }
}
