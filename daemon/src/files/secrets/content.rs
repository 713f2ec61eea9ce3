//! Credentials inside ordinary files, found by a rule set in the form secret scanners share:
//! each rule names the service it is for, the keywords one of which must appear for it to be
//! tried, a pattern whose `secret` group (or whole match) is blanked, and for shapes that
//! also match ordinary text, the Shannon entropy the secret must reach. The shapes follow
//! gitleaks' default rules (MIT, github.com/gitleaks/gitleaks, `config/gitleaks.toml`),
//! written for Rust's regex crate and kept to what a code index meets; the generic
//! assignment rules use its `generic-api-key` idea (a credential-like name, a high-entropy
//! value). One pass of an Aho-Corasick automaton over the keywords picks the rules a text
//! needs, so text without any keyword costs one scan.

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use regex::Regex;

/// What a redacted credential is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// One shape of credential.
struct Rule {
    /// What it finds (gitleaks' rule id where there is one).
    id: &'static str,
    /// Lower-case words one of which the text holds when the rule can match.
    keywords: &'static [&'static str],
    /// The shape; a `secret` group, when present, is the part blanked.
    pattern: &'static str,
    /// Bits per character the secret must reach (0: any).
    entropy: f32,
    /// The secret must hold a digit (unquoted values, where names like `self.password` are
    /// code, not credentials).
    digit: bool,
}

const fn rule(id: &'static str, keywords: &'static [&'static str], pattern: &'static str) -> Rule {
    Rule {
        id,
        keywords,
        pattern,
        entropy: 0.0,
        digit: false,
    }
}

/// The keywords of the rules over `credential_names!`: one of them is in every such name.
const CREDENTIAL_KEYWORDS: &[&str] = &[
    "secret",
    "password",
    "passwd",
    "pwd",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "accesskey",
    "private_key",
    "privatekey",
    "auth_key",
    "authkey",
    "credential",
];

/// Names under which configuration and code keep credentials.
macro_rules! credential_names {
    () => {
        r"(?:secret|password|passwd|pwd|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?key|credentials?)(?:[_\-]?(?:key|value|token))?"
    };
}

const RULES: &[Rule] = &[
    // A PEM or PGP private key, to its END line, or to the end of the text when it has none.
    rule(
        "private-key",
        &["private key"],
        r"(?s)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?P<secret>.*?)(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\z)",
    ),
    rule(
        "putty-private-key",
        &["private-lines"],
        r"(?m)^Private-Lines: *\d+\r?\n(?P<secret>(?:[A-Za-z0-9+/=]+\r?\n?)+)",
    ),
    rule(
        "kubernetes-client-key",
        &["client-key-data"],
        r"client-key-data:\s*(?P<secret>[A-Za-z0-9+/=]{20,})",
    ),
    // `scheme://user:password@host`, the user possibly empty (`redis://:pw@host`).
    rule(
        "url-password",
        &["://"],
        r#"[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@'"`]*:(?P<secret>[^/\s@'"`]+)@"#,
    ),
    Rule {
        entropy: 3.0,
        ..rule(
            "url-query-token",
            &[
                "token=",
                "key=",
                "secret=",
                "password=",
                "sig=",
                "signature=",
                "auth=",
            ],
            r##"(?i)[?&](?:access_?token|auth_?token|token|api_?key|apikey|key|client_?secret|secret|password|passwd|pwd|sig|signature|auth)=(?P<secret>[^&\s'"#<>]{8,})"##,
        )
    },
    rule(
        "github-token",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{40,255})\b",
    ),
    rule("gitlab-pat", &["glpat-"], r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    rule(
        "slack-token",
        &["xox"],
        r"\bxox[abposre]-[A-Za-z0-9\-]{10,}",
    ),
    rule("slack-app-token", &["xapp-"], r"\bxapp-[A-Za-z0-9\-]{10,}"),
    rule(
        "slack-webhook-url",
        &["hooks.slack.com"],
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/_\-]{8,}(?:/[A-Za-z0-9+/_\-]+)*)",
    ),
    rule(
        "aws-access-key-id",
        &["akia", "asia", "abia", "acca", "a3t"],
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    ),
    Rule {
        entropy: 3.0,
        ..rule(
            "aws-secret-access-key",
            &["aws"],
            r#"(?i)aws_?(?:secret_?access_?key|secret_?key|secret)["']?\s*(?:=|:|=>|:=)\s*["']?(?P<secret>[A-Za-z0-9/+=]{40})\b"#,
        )
    },
    rule(
        "aws-session-token",
        &["session_token", "sessiontoken"],
        r#"(?i)(?:aws_?)?session_?token["']?\s*(?:=|:|=>|:=)\s*["']?(?P<secret>[A-Za-z0-9/+=]{100,})"#,
    ),
    rule(
        "openai-anthropic-key",
        &["sk-"],
        r"\bsk-(?:proj-|ant-[a-z0-9]+-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}",
    ),
    rule("gcp-api-key", &["aiza"], r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    rule("npm-access-token", &["npm_"], r"\bnpm_[A-Za-z0-9]{36}\b"),
    rule(
        "stripe-secret-key",
        &[
            "sk_live", "sk_test", "sk_prod", "rk_live", "rk_test", "rk_prod",
        ],
        r"\b[sr]k_(?:live|test|prod)_[0-9A-Za-z]{10,99}\b",
    ),
    rule("huggingface-token", &["hf_"], r"\bhf_[A-Za-z0-9]{34,}\b"),
    rule(
        "sendgrid-api-key",
        &["sg."],
        r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b",
    ),
    rule(
        "pypi-upload-token",
        &["pypi-ageichlwas5vcmc"],
        r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}",
    ),
    rule(
        "dockerhub-pat",
        &["dckr_pat_"],
        r"\bdckr_pat_[A-Za-z0-9_\-]{27,}",
    ),
    rule(
        "vault-token",
        &["hvs.", "hvb."],
        r"\bhv[sb]\.[A-Za-z0-9_\-]{24,}",
    ),
    rule(
        "vault-legacy-token",
        &["vault"],
        r#"(?i)vault[A-Za-z_]*token["']?\s*(?:=|:)\s*["']?(?P<secret>s\.[A-Za-z0-9]{24})\b"#,
    ),
    rule(
        "jwt",
        &["eyj"],
        r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}={0,2}",
    ),
    rule(
        "azure-storage-key",
        &["accountkey=", "sharedaccesskey="],
        r"(?i)(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})",
    ),
    rule("twilio-api-key", &["sk"], r"\bSK[0-9a-fA-F]{32}\b"),
    rule(
        "shopify-token",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
        r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
    ),
    rule(
        "digitalocean-token",
        &["_v1_"],
        r"\bdo[opr]_v1_[a-f0-9]{64}\b",
    ),
    rule(
        "age-secret-key",
        &["age-secret-key-1"],
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    ),
    rule(
        "telegram-bot-token",
        &[":aa"],
        r"\b\d{8,10}:AA[0-9A-Za-z_\-]{33}\b",
    ),
    rule(
        "htpasswd-hash",
        &[
            "$apr1$", "$2y$", "$2a$", "$2b$", "$6$", "$5$", "$1$", "{sha}",
        ],
        r"(?m)^[A-Za-z0-9._@\-]+:(?P<secret>\$(?:apr1|2[aby]|5|6|1)\$[./A-Za-z0-9$]{20,}|\{SHA\}[A-Za-z0-9+/=]{27,})",
    ),
    // `password = "hunter2pass"`, `SECRET_KEY: 'x7...'`, `apiKey => "..."`: a
    // credential-like name given a quoted, high-entropy value (not `${VAR}` or `<...>`).
    Rule {
        entropy: 3.0,
        ..rule(
            "generic-credential-assignment",
            CREDENTIAL_KEYWORDS,
            concat!(
                r#"(?i)(?:^|[^a-z])"#,
                credential_names!(),
                r#"["']?\s*(?:=|:|:=|=>|\|\|=)\s*(?:[A-Za-z_]+\()?["'`](?P<secret>[^"'`\s$<{%][^"'`\s]{7,199})["'`]"#
            ),
        )
    },
    // `DB_PASSWORD=hunter2pass`, `password: s3cr3tValue` in .env-like, YAML and INI text:
    // an unquoted value alone on its line, with a digit.
    Rule {
        entropy: 3.0,
        digit: true,
        ..rule(
            "generic-credential-line",
            CREDENTIAL_KEYWORDS,
            concat!(
                r#"(?mi)^[ \t]*(?:export[ \t]+)?(?:[a-z0-9]+[_.\-])*"#,
                credential_names!(),
                r#"[ \t]*[=:][ \t]*(?P<secret>[^\s"'`$<{%#(\[][^\s"'`#(),;\[\]]{7,199})[ \t]*\r?$"#
            ),
        )
    },
];

/// The rules compiled, and the automaton over their keywords (pattern `i` is keyword `i` of
/// `owner[i]`'s rule).
struct Compiled {
    patterns: Vec<Regex>,
    keywords: AhoCorasick,
    owner: Vec<usize>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let patterns = RULES
        .iter()
        .map(|r| Regex::new(r.pattern).unwrap_or_else(|e| panic!("secret rule {}: {e}", r.id)))
        .collect();
    let mut words = Vec::new();
    let mut owner = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        for word in rule.keywords {
            words.push(*word);
            owner.push(i);
        }
    }
    let keywords = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(words)
        .expect("secret rule keywords");
    Compiled {
        patterns,
        keywords,
        owner,
    }
});

/// `text` with its credentials replaced by [`REDACTED`] (see the module doc). Lines stay
/// where they are (a secret spanning lines keeps its line breaks), so line numbers still
/// match the file. Borrowed when nothing matched, which is nearly always.
pub fn redact(text: &str) -> Cow<'_, str> {
    let compiled = &*COMPILED;
    let mut wanted = vec![false; RULES.len()];
    for found in compiled.keywords.find_overlapping_iter(text) {
        wanted[compiled.owner[found.pattern().as_usize()]] = true;
    }
    let mut out = Cow::Borrowed(text);
    for (i, rule) in RULES.iter().enumerate() {
        if wanted[i] {
            out = apply(out, rule, &compiled.patterns[i]);
        }
    }
    out
}

/// Blank what `rule` finds in `text`.
fn apply<'t>(text: Cow<'t, str>, rule: &Rule, pattern: &Regex) -> Cow<'t, str> {
    let mut spans = Vec::new();
    for caps in pattern.captures_iter(&text) {
        let Some(secret) = caps.name("secret").or_else(|| caps.get(0)) else {
            continue;
        };
        let value = secret.as_str();
        if value.is_empty()
            || value.starts_with(REDACTED)
            || entropy(value) < rule.entropy
            || (rule.digit && !value.bytes().any(|b| b.is_ascii_digit()))
        {
            continue;
        }
        spans.push(secret.range());
    }
    if spans.is_empty() {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        out.push_str(&text[at..span.start]);
        out.push_str(&blanked(&text[span.clone()]));
        at = span.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// [`REDACTED`] in place of `secret`, keeping its line breaks.
fn blanked(secret: &str) -> String {
    match secret.matches('\n').count() {
        0 => REDACTED.to_string(),
        n if secret.starts_with('\n') => format!("\n{REDACTED}{}", "\n".repeat(n - 1)),
        n => format!("{REDACTED}{}", "\n".repeat(n)),
    }
}

/// Shannon entropy of `text`'s characters, in bits per character.
fn entropy(text: &str) -> f32 {
    let mut counts = std::collections::HashMap::new();
    let mut total = 0usize;
    for c in text.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
        total += 1;
    }
    let total = total as f32;
    counts
        .values()
        .map(|&n| {
            let p = n as f32 / total;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests;
