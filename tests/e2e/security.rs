//! Reads never leak: only indexed files are served (not `.git/`, ignored or secret-like
//! files), credentials inside indexed files are redacted, generated traversal attempts are
//! refused, and swapping a directory for a symlink while reading never reaches outside.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use amanmcp_tests::{Shim, TestEnv};
use serde_json::{Value, json};

/// A marker that must never appear in anything the shim answers.
const OUTSIDE_MARKER: &str = "OUTSIDE-MARKER-7f3a";
const GIT_TOKEN: &str = "ghp_leakedTOKENleakedTOKENleakedTOKEN1234";

/// Files that hold credentials and must be neither searchable nor served.
const SECRET_FILES: &[&str] = &[
    ".git/config",
    ".git-credentials",
    ".envrc",
    ".env",
    ".env-prod",
    ".env.local",
    ".pgpass",
    ".netrc",
    ".npmrc",
    ".docker/config.json",
    ".aws/credentials",
    ".kube/config",
    "secrets.yaml",
    "config/secrets.yml",
    "prod.tfvars",
    "infra/terraform.tfstate",
    "deploy/credentials.json",
    "certs/server.pem",
    "certs/tls.key",
    "id_rsa",
];

const DEPLOY_PY: &str = "\
REMOTE = \"https://deployer:hunter2pass@git.example.com/org/app.git\"
GITHUB_TOKEN = \"ghp_0123456789abcdefghijABCDEFGHIJ012345\"
KEY = '''
-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ
AAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACBbbbb
-----END OPENSSH PRIVATE KEY-----
'''


def deploy_release(tag):
    return push(REMOTE, tag)
";

fn secret_content(path: &str) -> String {
    format!(
        "url = https://user:{GIT_TOKEN}@github.com/org/repo.git\n{}_value = {OUTSIDE_MARKER}\n",
        path.replace(['/', '.', '-'], "_")
    )
}

fn leak_project(env: &TestEnv) -> std::path::PathBuf {
    let mut files: Vec<(String, String)> = SECRET_FILES
        .iter()
        .map(|p| (p.to_string(), secret_content(p)))
        .collect();
    files.push(("src/deploy.py".into(), DEPLOY_PY.into()));
    files.push((".gitignore".into(), "build/\n".into()));
    files.push(("build/out.txt".into(), format!("{OUTSIDE_MARKER}\n")));
    files.push(("racedir/race.txt".into(), "inside the project\n".into()));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let root = env.project("proj", &files);
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("race.txt"), format!("{OUTSIDE_MARKER}\n")).unwrap();
    std::fs::write(
        env.path().join("outside.txt"),
        format!("{OUTSIDE_MARKER}\n"),
    )
    .unwrap();
    root
}

fn is_error(reply: &Value) -> bool {
    reply.get("error").is_some() || reply["result"]["isError"] == json!(true)
}

fn read_resource(shim: &mut Shim, root: &Path, rel: &str) -> Value {
    let uri = format!("file://{}/{rel}", root.display());
    shim.request("resources/read", json!({"uri": uri}))
}

fn assert_no_leak(what: &str, reply: &Value) {
    let text = reply.to_string();
    for needle in [OUTSIDE_MARKER, GIT_TOKEN, "hunter2pass", "b3BlbnNzaC1rZXkt"] {
        assert!(!text.contains(needle), "{what} leaked {needle}: {text}");
    }
}

#[test]
fn only_indexed_files_are_served_and_credentials_are_redacted() {
    let env = TestEnv::new();
    let root = leak_project(&env);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("deploy_release", "src/deploy.py");

    for rel in SECRET_FILES.iter().chain(&["build/out.txt"]) {
        let reply = shim.call_tool("lookup", json!({"path": rel}));
        assert!(is_error(&reply), "lookup {rel} was served: {reply}");
        assert_no_leak(rel, &reply);
        let reply = read_resource(&mut shim, &root, rel);
        assert!(is_error(&reply), "resources/read {rel} was served: {reply}");
        assert_no_leak(rel, &reply);
    }
    // Nothing of theirs is searchable or listed.
    for query in [OUTSIDE_MARKER, "url user github", "prod_tfvars_value"] {
        let reply = shim.call_tool("search", json!({"query": query, "limit": 50}));
        let hits = reply["result"]["structuredContent"]["results"]
            .as_array()
            .unwrap();
        assert_no_leak(query, &json!(hits));
        for hit in hits {
            let path = hit["path"].as_str().unwrap();
            assert!(
                !SECRET_FILES.contains(&path) && path != "build/out.txt",
                "{query} found {path}: {reply}"
            );
        }
    }
    let listed = shim.request("resources/list", json!({}));
    for rel in SECRET_FILES {
        assert!(
            !listed.to_string().contains(&format!("/{rel}\"")),
            "{rel} listed: {listed}"
        );
    }

    // An indexed file with credentials inside: served, with the credentials blanked and the
    // lines where they were.
    let reply = shim.call_tool("lookup", json!({"path": "src/deploy.py"}));
    assert!(!is_error(&reply), "{reply}");
    assert_no_leak("src/deploy.py", &reply);
    let code = reply["result"]["structuredContent"]["matches"][0]["code"]
        .as_str()
        .unwrap();
    assert!(
        code.contains("https://deployer:[REDACTED]@git.example.com"),
        "{code}"
    );
    assert_eq!(code.lines().count(), DEPLOY_PY.lines().count(), "{code}");
    assert_eq!(
        code.lines()
            .position(|l| l.starts_with("def deploy_release")),
        DEPLOY_PY
            .lines()
            .position(|l| l.starts_with("def deploy_release"))
    );
    let reply = read_resource(&mut shim, &root, "src/deploy.py");
    assert!(!is_error(&reply), "{reply}");
    assert_no_leak("resource src/deploy.py", &reply);
    for query in ["deploy_release REMOTE", "hunter2pass", "GITHUB_TOKEN"] {
        let reply = shim.call_tool("search", json!({"query": query}));
        assert_no_leak(query, &reply["result"]["structuredContent"]["results"]);
    }
}

/// Paths that try to leave the root, generated from prefixes, climbs and targets.
fn traversal_attempts(root: &Path, outside: &Path) -> Vec<String> {
    let root = root.display().to_string();
    let prefixes = [
        String::new(),
        "./".into(),
        "src/".into(),
        "src/./".into(),
        "racedir/".into(),
        format!("{root}/"),
        format!("{root}/src/"),
    ];
    let targets = [
        "outside.txt".to_string(),
        "outside/race.txt".into(),
        "etc/passwd".into(),
        ".git/config".into(),
        "proj/.git/config".into(),
        "projects/proj/.env".into(),
        outside.join("race.txt").display().to_string(),
    ];
    let mut out = Vec::new();
    for prefix in &prefixes {
        for climbs in 1..=6 {
            for target in &targets {
                let up = "../".repeat(climbs);
                out.push(format!("{prefix}{up}{target}"));
                out.push(format!("{prefix}{}{target}", "..//".repeat(climbs)));
            }
        }
    }
    for target in &targets {
        out.push(format!("/{target}"));
        out.push(format!("{target}\0.rs"));
    }
    out
}

#[test]
fn generated_traversals_never_leave_the_root() {
    let env = TestEnv::new();
    let root = leak_project(&env);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("deploy_release", "src/deploy.py");
    let attempts = traversal_attempts(&root, &env.path().join("outside"));
    assert!(attempts.len() >= 500, "{}", attempts.len());
    for path in &attempts {
        let reply = shim.call_tool("lookup", json!({"path": path}));
        assert!(is_error(&reply), "lookup {path:?} was served: {reply}");
        assert_no_leak(path, &reply);
        let reply = shim.call_tool("similar", json!({"path": path, "line": 1}));
        assert!(is_error(&reply), "similar {path:?} was served: {reply}");
        assert_no_leak(path, &reply);
        let reply = read_resource(&mut shim, &root, path);
        assert!(
            is_error(&reply),
            "resources/read {path:?} was served: {reply}"
        );
        assert_no_leak(path, &reply);
        let reply = shim.call_tool("reindex", json!({"path": path}));
        assert!(is_error(&reply), "reindex {path:?} was accepted: {reply}");
        assert_no_leak(path, &reply);
    }
    // Nothing from outside reached the index either.
    for query in [OUTSIDE_MARKER, GIT_TOKEN] {
        let reply = shim.call_tool("search", json!({"query": query, "mode": "lexical"}));
        let results = &reply["result"]["structuredContent"]["results"];
        assert_eq!(results, &json!([]), "{query} is in the index: {reply}");
    }
    env.verify_ok(&root, "after the traversals");
}

#[test]
fn swapping_a_directory_for_a_symlink_while_reading_never_leaks() {
    let env = TestEnv::new();
    let root = leak_project(&env);
    let mut shim = Shim::start_with(&env, &root, &[("AMANMCP_WATCH", "0".as_ref())]);
    shim.initialize();
    shim.search_until("inside the project", "racedir/race.txt");

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let dir = root.join("racedir");
        let parked = root.join("racedir_parked");
        let outside = env.path().join("outside");
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&dir, &parked).unwrap();
                // A new mtime each time, so every pass reads the file again.
                let file = std::fs::File::options()
                    .write(true)
                    .open(parked.join("race.txt"))
                    .unwrap();
                let now = std::time::SystemTime::now();
                file.set_modified(now - std::time::Duration::from_secs(swaps % 1000))
                    .unwrap();
                std::os::unix::fs::symlink(&outside, &dir).unwrap();
                std::thread::yield_now();
                std::fs::remove_file(&dir).unwrap();
                std::fs::rename(&parked, &dir).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let mut served = 0;
    for round in 0..600 {
        let reply = match round % 5 {
            0 => shim.call_tool("lookup", json!({"path": "racedir/race.txt"})),
            1 => read_resource(&mut shim, &root, "racedir/race.txt"),
            // Nothing a pass read through the symlink is ever searchable.
            4 => {
                let reply = shim.call_tool(
                    "search",
                    json!({"query": OUTSIDE_MARKER, "mode": "lexical", "limit": 50}),
                );
                let results = &reply["result"]["structuredContent"]["results"];
                assert_no_leak("search mid-race", results);
                continue;
            }
            // Re-indexing mid-swap, one path or the whole project, must never index what
            // the symlink points at.
            2 => shim.call_tool("reindex", json!({"path": "racedir/race.txt"})),
            _ => shim.call_tool("reindex", json!({})),
        };
        assert_no_leak("racedir/race.txt", &reply);
        if !is_error(&reply) {
            served += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the race barely ran: {swaps} swaps");
    assert!(served > 0, "no read succeeded, so the race proved nothing");
    let reply = shim.call_tool(
        "search",
        json!({"query": OUTSIDE_MARKER, "mode": "lexical"}),
    );
    let results = &reply["result"]["structuredContent"]["results"];
    assert_eq!(results, &json!([]), "the outside file was indexed: {reply}");
    // And a full pass leaves the index as the files are.
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.verify_ok(&root, "after the race");
}

/// Credentials of the shapes secret scanners know, inline in ordinary files, with the part
/// that must never be answered.
const SHAPES: &[(&str, &str)] = &[
    (
        "CACHE_URL = \"redis://:redisPw4417x@cache:6379/0\"",
        "redisPw4417x",
    ),
    (
        "SLACK_APP = \"xapp-1-A0123456789-1234567890123-abcdef0123456789\"",
        "xapp-1-A0123456789",
    ),
    (
        "HOOK = \"https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/q8Zr4Tn7Xw2Lm5Kp9Vb3Yc6H\"",
        "q8Zr4Tn7Xw2Lm5Kp9Vb3Yc6H",
    ),
    (
        "JWT = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\"",
        "dozjgNryP4J3jVmNHl0w5N",
    ),
    (
        "aws_secret_access_key = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9QKEY12\"",
        "wJalrXUtnFEMI",
    ),
    (
        "FEED = \"https://api.example.com/feed?limit=5&access_token=Zx81kQp0LmN2vB7tR\"",
        "Zx81kQp0LmN2vB7tR",
    ),
    (
        "SENDGRID = \"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\"",
        "TwL2iGABf9DHoTf",
    ),
    (
        "AZURE = \"AccountName=a;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==\"",
        "Eby8vdM02xNOcqFlqUwJ",
    ),
    (
        "DOCKER = \"dckr_pat_2b3e36beeb386dfdaacb9b46004\"",
        "dckr_pat_2b3e36beeb",
    ),
    (
        "VAULT = \"hvs.CAESIJlU9JMYEhOPYv4iGeX4kkJhN0x5dGVzdHRva2Vu\"",
        "hvs.CAESIJlU9JMYEhOPYv4i",
    ),
    (
        "STRIPE = \"sk_test_4eC39HqLyjWDarjtT1zdp7dc\"",
        "4eC39HqLyjWDarjtT1zdp7dc",
    ),
    (
        "PYPI = \"pypi-AgEIcHlwaS5vcmcCJGI4YmNhMDA1LTM0MjQtNGQ1Ni1hMjNhLTRmMDM5ZWRkMTExMw\"",
        "CJGI4YmNhMDA1LTM0MjQt",
    ),
    (
        "SECRET_KEY = 'd7f8a9s0df8a7sd6f5x2'",
        "d7f8a9s0df8a7sd6f5x2",
    ),
    ("DATABASE_PASSWORD = \"hunter7Kq2pass\"", "hunter7Kq2pass"),
];

#[test]
fn every_secret_shape_stays_out_of_every_answer() {
    let env = TestEnv::new();
    let mut settings = String::from("def load_settings():\n    return SETTINGS_MARKER\n\n");
    for (line, _) in SHAPES {
        settings.push_str(line);
        settings.push('\n');
    }
    let pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGB2pgpSecretBody77\n=Ab12\n-----END PGP PRIVATE KEY BLOCK-----\n";
    let fixture = format!(
        "def key_fixture():\n    return KEY\n\nKEY = '''\n{pgp}'''\nOPEN = '''\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowOpenPemBody99\n"
    );
    let named = [
        "kube-config.yaml",
        "etc/kubernetes/admin.conf",
        "htpasswd",
        "auth.json",
        "rclone.conf",
        "terraform.tfstate.1700000000.backup",
    ];
    let mut files: Vec<(String, String)> = vec![
        ("src/settings.py".into(), settings),
        ("src/fixture.py".into(), fixture),
        ("keys/release.asc".into(), pgp.to_string()),
    ];
    for name in named {
        files.push((name.into(), format!("named_secret_marker = {name}\n")));
    }
    let root = env.project("shapes", &files);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("load_settings", "src/settings.py");
    let secrets: Vec<&str> = SHAPES
        .iter()
        .map(|(_, s)| *s)
        .chain([
            "lQOYBGB2pgpSecretBody77",
            "MIIEowOpenPemBody99",
            "named_secret_marker",
        ])
        .collect();
    let check = |what: &str, reply: &Value| {
        let text = reply.to_string();
        for secret in &secrets {
            assert!(!text.contains(secret), "{what} answered {secret}: {text}");
        }
    };
    for query in secrets
        .iter()
        .copied()
        .chain(["load_settings SECRET_KEY", "key_fixture"])
    {
        for mode in ["lexical", "hybrid"] {
            let reply =
                shim.call_tool("search", json!({"query": query, "mode": mode, "limit": 50}));
            // The answer names the query it answers; everything else must hold no secret.
            let echo = format!("for {}", json!(query));
            let text = reply["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .replace(&echo, "");
            let results = &reply["result"]["structuredContent"]["results"];
            check(&format!("search {query} ({mode})"), &json!([text, results]));
        }
    }
    for rel in ["src/settings.py", "src/fixture.py", "keys/release.asc"] {
        check(rel, &shim.call_tool("lookup", json!({"path": rel})));
        check(rel, &read_resource(&mut shim, &root, rel));
    }
    for rel in named {
        let reply = shim.call_tool("lookup", json!({"path": rel}));
        assert!(is_error(&reply), "{rel} served: {reply}");
    }
    for name in ["load_settings", "key_fixture", "KEY", "SECRET_KEY"] {
        check(name, &shim.call_tool("usages", json!({"symbol": name})));
    }
}
