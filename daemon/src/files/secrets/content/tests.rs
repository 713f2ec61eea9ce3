//! The secret rules' tests: a sample of every rule's shape, blanked; code that only looks
//! like credentials, untouched.

use super::*;

/// One credential of every rule's shape (made up, well formed): the rule, the text, and the
/// part that must not survive.
const SAMPLES: &[(&str, &str, &str)] = &[
    (
        "private-key",
        "KEY = '''\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACBb\n-----END OPENSSH PRIVATE KEY-----\n'''\n",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    ),
    (
        "putty-private-key",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIOb\nPrivate-Lines: 1\nAAAAIGq8cT0xV2mZ9pK4rL7sN1wB3yD5fH6jQ\nPrivate-MAC: 0a1b2c\n",
        "AAAAIGq8cT0xV2mZ9pK4rL7sN1wB3yD5fH6jQ",
    ),
    (
        "kubernetes-client-key",
        "users:\n- name: admin\n  user:\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB\n",
        "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB",
    ),
    (
        "url-password",
        "CACHE = \"redis://:Sup3rS3cretPw@cache.internal:6379/0\"\n",
        "Sup3rS3cretPw",
    ),
    (
        "url-query-token",
        "fetch(\"https://api.example.com/v1/items?limit=5&access_token=Zx81kQp0LmN2vB7tR\")\n",
        "Zx81kQp0LmN2vB7tR",
    ),
    (
        "github-token",
        "GITHUB_TOKEN = \"ghp_0123456789abcdefghijABCDEFGHIJ012345\"\n",
        "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    ),
    (
        "gitlab-pat",
        "token: glpat-abcdefghij0123456789\n",
        "glpat-abcdefghij0123456789",
    ),
    (
        "slack-token",
        "SLACK = 'xoxb-1234567890-abcdefghij'\n",
        "xoxb-1234567890-abcdefghij",
    ),
    (
        "slack-app-token",
        "app_token = \"xapp-1-A0123456789-1234567890123-abcdef0123456789\"\n",
        "xapp-1-A0123456789-1234567890123-abcdef0123456789",
    ),
    (
        "slack-webhook-url",
        "hook = \"https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/q8Zr4Tn7Xw2Lm5Kp9Vb3Yc6H\"\n",
        "q8Zr4Tn7Xw2Lm5Kp9Vb3Yc6H",
    ),
    (
        "aws-access-key-id",
        "key_id = AKIAIOSFODNN7EXAMPLE\n",
        "AKIAIOSFODNN7EXAMPLE",
    ),
    (
        "aws-secret-access-key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "aws-session-token",
        "aws_session_token = FwoGZXIvYXdzEBYaDHqa0AP1R2Kt0cmJliLBAbW9kZWwvc2Vzc2lvbi10b2tlbi1zaGFwZWQtZm9yLXRlc3RzLW9ubHktbm90LWEtcmVhbC1vbmUtYXQtYWxs\n",
        "FwoGZXIvYXdzEBYaDHqa0AP1R2Kt0cmJliLBAbW9kZWwvc2Vzc2lvbi10b2tlbi1zaGFwZWQtZm9yLXRlc3RzLW9ubHktbm90LWEtcmVhbC1vbmUtYXQtYWxs",
    ),
    (
        "openai-anthropic-key",
        "client = OpenAI(api_key=\"sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD\")\n",
        "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    ),
    (
        "gcp-api-key",
        "MAPS_KEY = \"AIzaSyA-0123456789abcdefghijklmnopqrstu\"\n",
        "AIzaSyA-0123456789abcdefghijklmnopqrstu",
    ),
    (
        "npm-access-token",
        "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    (
        "stripe-secret-key",
        "stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc'\n",
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    ),
    (
        "huggingface-token",
        "HF = \"hf_abcdefghijklmnopqrstuvwxyzABCDEFGH\"\n",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
    ),
    (
        "sendgrid-api-key",
        "SENDGRID = \"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\"\n",
        "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",
    ),
    (
        "pypi-upload-token",
        "password = pypi-AgEIcHlwaS5vcmcCJGI4YmNhMDA1LTM0MjQtNGQ1Ni1hMjNhLTRmMDM5ZWRkMTExMwACJXsicGVybWlzc2lvbnMiOiAidXNlciJ9\n",
        "pypi-AgEIcHlwaS5vcmcCJGI4YmNhMDA1LTM0MjQtNGQ1Ni1hMjNhLTRmMDM5ZWRkMTExMwACJXsicGVybWlzc2lvbnMiOiAidXNlciJ9",
    ),
    (
        "dockerhub-pat",
        "DOCKER = \"dckr_pat_2b3e36beeb386dfdaacb9b46004\"\n",
        "dckr_pat_2b3e36beeb386dfdaacb9b46004",
    ),
    (
        "vault-token",
        "VAULT = \"hvs.CAESIJlU9JMYEhOPYv4iGeX4kkJhN0x5dGVzdHRva2Vu\"\n",
        "hvs.CAESIJlU9JMYEhOPYv4iGeX4kkJhN0x5dGVzdHRva2Vu",
    ),
    (
        "vault-legacy-token",
        "VAULT_TOKEN=s.Qf1s5zigZ4yH6mJ8aR2wX0eT\n",
        "s.Qf1s5zigZ4yH6mJ8aR2wX0eT",
    ),
    (
        "jwt",
        "headers = {\"Authorization\": \"Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\"}\n",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "azure-storage-key",
        "conn = \"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net\"\n",
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw",
    ),
    (
        "twilio-api-key",
        "TWILIO_KEY = \"SK0123456789abcdef0123456789abcdef\"\n",
        "SK0123456789abcdef0123456789abcdef",
    ),
    (
        "shopify-token",
        "SHOPIFY = 'shpat_0123456789abcdef0123456789abcdef'\n",
        "shpat_0123456789abcdef0123456789abcdef",
    ),
    (
        "digitalocean-token",
        "DO = \"dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n",
        "dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ),
    (
        "age-secret-key",
        "# identity\nAGE-SECRET-KEY-1QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF\n",
        "AGE-SECRET-KEY-1QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF",
    ),
    (
        "telegram-bot-token",
        "bot = Bot(\"123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0\")\n",
        "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    ),
    (
        "htpasswd-hash",
        "alice:$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/\n",
        "$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/",
    ),
    (
        "generic-credential-assignment",
        "SECRET_KEY = 'd7f8a9s0df8a7sd6f5x2'\nDATABASES = {'password': \"hunter2pass\"}\n",
        "d7f8a9s0df8a7sd6f5x2",
    ),
    (
        "generic-credential-line",
        "DB_HOST=db\nDB_PASSWORD=hunter2pass9\n",
        "hunter2pass9",
    ),
];

#[test]
fn every_rule_has_a_sample_and_blanks_it() {
    for rule in RULES {
        assert!(
            SAMPLES.iter().any(|(id, _, _)| *id == rule.id),
            "rule {} has no sample",
            rule.id
        );
    }
    for (id, text, secret) in SAMPLES {
        assert!(RULES.iter().any(|r| r.id == *id), "no rule {id}");
        let out = redact(text);
        assert!(!out.contains(secret), "{id}: {out}");
        assert!(out.contains(REDACTED), "{id}: {out}");
        assert_eq!(
            out.lines().count(),
            text.lines().count(),
            "{id}: lines kept"
        );
        // The rule alone finds it (not only another rule).
        let rule = RULES.iter().position(|r| r.id == *id).unwrap();
        let alone = apply(Cow::Borrowed(text), &RULES[rule], &COMPILED.patterns[rule]);
        assert!(!alone.contains(secret), "{id} alone: {alone}");
    }
}

#[test]
fn private_keys_go_with_or_without_their_end_line() {
    let pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: x\n\nlQOYBGB2sI0BCAC7\n=Ab12\n-----END PGP PRIVATE KEY BLOCK-----\nafter\n";
    let out = redact(pgp);
    assert!(!out.contains("lQOYBGB2sI0BCAC7"), "{out}");
    assert_eq!(out.lines().count(), pgp.lines().count());
    assert_eq!(out.lines().last(), Some("after"));
    let open = "x = 1\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3\nAAAA\n";
    let out = redact(open);
    assert!(!out.contains("MIIEowIBAAKCAQEA0Z3"), "{out}");
    assert!(out.starts_with("x = 1\n"), "{out}");
    assert_eq!(out.lines().count(), open.lines().count());
}

#[test]
fn code_that_only_looks_like_credentials_is_left_alone() {
    for code in [
        "let task_id = 42;",
        "fn sk_learn() {}",
        "AKIA is a prefix",
        "ghp_short",
        "tokenizer = \"whitespace_tokenizer\"",
        "password = self.password",
        "token = request.headers.get('x-token')",
        "password: ${DB_PASSWORD}",
        "api_key = os.environ['API_KEY']",
        "def password_reset(token):\n    return token",
        "see https://example.com/x and mailto:a@b",
        "url = \"https://example.com/search?q=rust&page=2\"",
        "const TOKEN_KEY = 'auth'",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",
        "password = \"password\"",
        "SECRET_KEY = os.getenv(\"SECRET_KEY\")",
    ] {
        assert!(
            matches!(redact(code), Cow::Borrowed(_)),
            "{code}: {}",
            redact(code)
        );
    }
}

#[test]
fn url_passwords_are_redacted_with_or_without_a_user() {
    let text =
        "url = https://alice:s3cr3t@github.com/org/repo.git\nplain https://example.com/a:b\n";
    assert_eq!(
        redact(text),
        "url = https://alice:[REDACTED]@github.com/org/repo.git\nplain https://example.com/a:b\n"
    );
    assert_eq!(
        redact("REDIS_URL = redis://:pw@host:6379"),
        "REDIS_URL = redis://:[REDACTED]@host:6379"
    );
}
