//! What is never indexed or served because it holds credentials: secrets files by name and
//! place ([`is_secret`]), and credentials inside ordinary files ([`redact`]).
//!
//! `is_secret` decides by the root-relative path alone, so the scanner (nothing indexed) and
//! the read path (nothing served) apply the same rule. `redact` blanks credentials that sit in
//! code or configuration (URLs with a password, private-key blocks, well-known token shapes)
//! in the text that is indexed and in every read, keeping the lines where they are so line
//! numbers still match the file.

use std::borrow::Cow;
use std::path::{Component, Path};
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// What a redacted credential is replaced with.
pub const REDACTED: &str = "[REDACTED]";

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
];

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
    if KEY_PREFIXES.iter().any(|p| name.starts_with(p)) {
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

/// Credentials in a URL (`scheme://user:password@host`): the password goes.
static URL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@'\x22`]+:)([^/\s@'\x22`]+)@")
        .expect("URL credentials pattern")
});

/// A PEM private-key block, from its BEGIN line to its END line.
static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?s)(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(.*?)(-----END [A-Z0-9 ]*PRIVATE KEY-----)",
    )
    .expect("private key pattern")
});

/// Tokens whose shape names them: GitHub, GitLab, Slack, AWS access keys, OpenAI and
/// Anthropic keys, Google API keys, npm, Stripe live keys, Hugging Face.
static TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?-u)\b(?:",
        r"gh[pousr]_[A-Za-z0-9]{36,}",
        r"|github_pat_[A-Za-z0-9_]{40,}",
        r"|glpat-[A-Za-z0-9_\-]{20,}",
        r"|xox[abprs]-[A-Za-z0-9\-]{10,}",
        r"|(?:AKIA|ASIA)[0-9A-Z]{16}",
        r"|sk-(?:proj-|ant-[a-z0-9]+-)?[A-Za-z0-9_\-]{32,}",
        r"|AIza[0-9A-Za-z_\-]{35}",
        r"|npm_[A-Za-z0-9]{36}",
        r"|[sr]k_live_[0-9A-Za-z]{24,}",
        r"|hf_[A-Za-z0-9]{34,}",
        r")\b"
    ))
    .expect("token pattern")
});

/// `text` with its credentials replaced by [`REDACTED`]: passwords in URLs, the bodies of
/// private-key blocks and well-known token shapes. Lines stay where they are (a key block
/// keeps its line count), so line numbers still match the file. Borrowed when nothing matched,
/// which is nearly always.
pub fn redact(text: &str) -> Cow<'_, str> {
    // Cheap checks first: most text has none of these.
    let maybe_url = text.contains("://");
    let maybe_key = text.contains("PRIVATE KEY-----");
    let maybe_token = TOKENS.is_match(text);
    if !(maybe_url || maybe_key || maybe_token) {
        return Cow::Borrowed(text);
    }
    let mut out = Cow::Borrowed(text);
    if maybe_key {
        out = replace(out, &PRIVATE_KEY, |caps: &Captures| {
            let body = &caps[2];
            let newlines = body.matches('\n').count();
            let inner = match newlines {
                0 => REDACTED.to_string(),
                n => format!("\n{REDACTED}{}", "\n".repeat(n - 1)),
            };
            format!("{}{inner}{}", &caps[1], &caps[3])
        });
    }
    if maybe_url {
        out = replace(out, &URL_PASSWORD, |caps: &Captures| {
            format!("{}{REDACTED}@", &caps[1])
        });
    }
    if maybe_token {
        out = replace(out, &TOKENS, |_: &Captures| REDACTED.to_string());
    }
    out
}

fn replace<'t>(
    text: Cow<'t, str>,
    pattern: &Regex,
    with: impl FnMut(&Captures) -> String,
) -> Cow<'t, str> {
    match text {
        Cow::Borrowed(s) => pattern.replace_all(s, with),
        Cow::Owned(s) => Cow::Owned(pattern.replace_all(&s, with).into_owned()),
    }
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

    #[test]
    fn url_passwords_are_redacted() {
        let text =
            "url = https://alice:s3cr3t@github.com/org/repo.git\nplain https://example.com/a:b\n";
        let out = redact(text);
        assert_eq!(
            out,
            "url = https://alice:[REDACTED]@github.com/org/repo.git\nplain https://example.com/a:b\n"
        );
        assert!(matches!(
            redact("see https://example.com/x and mailto:a@b"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn private_key_blocks_keep_their_lines() {
        let text = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\nBBBB\n-----END RSA PRIVATE KEY-----\nb\n";
        let out = redact(text);
        assert!(!out.contains("MIIEow") && !out.contains("BBBB"), "{out}");
        assert!(out.contains(REDACTED));
        assert_eq!(out.lines().count(), text.lines().count());
        assert_eq!(out.lines().last(), Some("b"));
    }

    #[test]
    fn token_shapes_are_redacted() {
        for token in [
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "AKIAIOSFODNN7EXAMPLE",
            "glpat-abcdefghij0123456789",
            "xoxb-1234567890-abcdefghij",
            "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
            "AIzaSyA-0123456789abcdefghijklmnopqrstu",
        ] {
            let text = format!("TOKEN = \"{token}\"\n");
            let out = redact(&text);
            assert_eq!(out, format!("TOKEN = \"{REDACTED}\"\n"), "{token}");
        }
        for code in [
            "let task_id = 42;",
            "fn sk_learn() {}",
            "AKIA is a prefix",
            "ghp_short",
        ] {
            assert!(matches!(redact(code), Cow::Borrowed(_)), "{code}");
        }
    }
}
