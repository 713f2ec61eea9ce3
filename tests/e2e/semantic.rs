//! Semantic search end to end: the built-in embedder offline, Ollama and OpenAI-compatible
//! servers (loopback stand-ins speaking their APIs), failures, model switches, the embedding
//! cache, restarts mid-embedding, and `similar` on vectors.

use std::ffi::OsStr;
use std::time::Duration;

use amanmcp_tests::{FakeEmbedServer, Shim, TestEnv};
use serde_json::{Value, json};

const MAIL_PY: &str = r#"import smtplib


def deliver_newsletter(server, sender, recipients, body):
    with smtplib.SMTP(server) as connection:
        for recipient in recipients:
            connection.sendmail(sender, recipient, body)
"#;

const DATES_PY: &str = r#"from datetime import datetime


def parse_birthday(text):
    return datetime.strptime(text, "%Y-%m-%d").date()
"#;

const IMAGES_PY: &str = r#"from PIL import Image


def shrink_picture(path, width, height):
    picture = Image.open(path)
    picture.thumbnail((width, height))
    picture.save(path)
"#;

const CHECKSUM_PY: &str = r#"import hashlib


def file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(65536), b""):
            digest.update(block)
    return digest.hexdigest()
"#;

fn project_files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("mail/newsletter.py", MAIL_PY),
        ("util/dates.py", DATES_PY),
        ("media/images.py", IMAGES_PY),
        ("util/checksum.py", CHECKSUM_PY),
    ]
}

/// The project's files and `n` more, `gen/m{i}.py`, each holding `body(i)`.
fn with_generated(n: usize, body: impl Fn(usize) -> String) -> Vec<(&'static str, &'static str)> {
    let mut files = project_files();
    for i in 0..n {
        files.push((
            Box::leak(format!("gen/m{i}.py").into_boxed_str()),
            Box::leak(body(i).into_boxed_str()),
        ));
    }
    files
}

fn search(shim: &mut Shim, args: Value) -> Value {
    let reply = shim.call_tool("search", args.clone());
    assert_ne!(reply["result"]["isError"], json!(true), "{args} -> {reply}");
    reply["result"]["structuredContent"].clone()
}

fn first_path(content: &Value) -> String {
    content["results"][0]["path"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> Vec<(&'a str, &'a OsStr)> {
    pairs.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect()
}

#[test]
fn the_builtin_embedder_finds_code_by_paraphrase_offline() {
    let env = TestEnv::new();
    let files = project_files();
    let root = env.project("proj", &files);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("deliver_newsletter", "mail/newsletter.py");
    env.wait_ready();

    let status = env.project_status();
    let embedding = &status["embedding"];
    assert!(
        embedding["model"].as_str().unwrap().starts_with("builtin:"),
        "{status}"
    );
    assert_eq!(embedding["pending"], 0, "{status}");
    assert_eq!(embedding["embedded"], status["chunks"], "{status}");
    assert_eq!(embedding["health"], "ok", "{status}");

    // No word of these queries occurs in the code they should find, in any form (`send`
    // would: the lexical search also tries `sender`).
    for (query, want) in [
        ("email the subscribers", "mail/newsletter.py"),
        ("resize a photo", "media/images.py"),
    ] {
        let content = search(&mut shim, json!({"query": query, "mode": "semantic"}));
        assert_eq!(first_path(&content), want, "{query}: {content}");
        assert_eq!(content["semantic"], true, "{content}");
        // The answer says how it was found: its rank among the nearest vectors.
        let why = content["results"][0]["why"].to_string();
        assert!(why.contains("vectors #"), "{content}");
        assert_eq!(content["vectors_complete"], true, "{content}");
        assert_eq!(content["index"]["state"], "ready", "{content}");
        assert_eq!(content["index"]["embedded"], content["index"]["chunks"]);
        let lexical = search(&mut shim, json!({"query": query, "mode": "lexical"}));
        assert!(
            lexical["results"]
                .as_array()
                .unwrap()
                .iter()
                .all(|h| h["path"] != want),
            "lexical search should not find {want} for {query:?}: {lexical}"
        );
        let hybrid = search(&mut shim, json!({"query": query}));
        assert_eq!(first_path(&hybrid), want, "hybrid {query}: {hybrid}");
        let why = hybrid["results"][0]["why"].to_string();
        assert!(why.contains("vectors #"), "{hybrid}");
    }

    // Pagination: pages do not overlap and add up to the first two results.
    let two = search(&mut shim, json!({"query": "resize a photo", "limit": 2}));
    let second = search(
        &mut shim,
        json!({"query": "resize a photo", "limit": 1, "offset": 1}),
    );
    assert_eq!(second["results"][0]["path"], two["results"][1]["path"]);
    // Filters apply to vectors too.
    let filtered = search(
        &mut shim,
        json!({"query": "resize a photo", "mode": "semantic", "path": "util/"}),
    );
    assert!(
        filtered["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["path"].as_str().unwrap().starts_with("util/")),
        "{filtered}"
    );
    // A bad mode is named.
    let reply = shim.call_tool("search", json!({"query": "x", "mode": "fuzzy"}));
    assert_eq!(reply["result"]["isError"], json!(true));
    assert!(reply.to_string().contains("mode"), "{reply}");

    // index-status tells the embedder and its progress.
    let reply = shim.call_tool("index-status", json!({}));
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("chunks embedded"), "{text}");
    assert!(text.contains("builtin"), "{text}");
}

#[test]
fn similar_uses_vectors_for_a_location_a_symbol_and_a_snippet() {
    let env = TestEnv::new();
    let mut files = project_files();
    files.push((
        "mail/digest.py",
        "import smtplib\n\n\ndef mail_weekly_digest(host, author, readers, text):\n    with smtplib.SMTP(host) as smtp:\n        for reader in readers:\n            smtp.sendmail(author, reader, text)\n",
    ));
    let root = env.project("proj", &files);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("deliver_newsletter", "mail/newsletter.py");
    env.wait_ready();
    for args in [
        json!({"path": "mail/newsletter.py", "line": 5, "mode": "semantic"}),
        json!({"symbol": "deliver_newsletter", "mode": "semantic"}),
        json!({"snippet": "def notify(users):\n    for user in users:\n        send_mail(user)", "mode": "semantic"}),
        json!({"symbol": "deliver_newsletter"}),
    ] {
        let reply = shim.call_tool("similar", args.clone());
        assert_ne!(reply["result"]["isError"], json!(true), "{args} -> {reply}");
        let content = &reply["result"]["structuredContent"];
        assert_eq!(content["semantic"], true, "{args} -> {content}");
        let paths: Vec<&str> = content["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["path"].as_str().unwrap())
            .collect();
        if args.get("snippet").is_none() {
            assert!(
                !paths.contains(&"mail/newsletter.py"),
                "{args} -> {paths:?}"
            );
            assert_eq!(
                paths.first(),
                Some(&"mail/digest.py"),
                "{args} -> {paths:?}"
            );
        } else {
            assert!(
                paths[..2].iter().any(|p| p.starts_with("mail/")),
                "{args} -> {paths:?}"
            );
        }
    }
}

#[test]
fn ollama_embeds_in_batches_and_the_cache_spares_renames_and_unchanged_text() {
    let server = FakeEmbedServer::start(&["fake-embed"]);
    let env = TestEnv::new();
    let files = with_generated(40, |i| {
        format!(
            "def generated_{i}(value):\n    return value * {i} + {}\n",
            i * 7
        )
    });
    let root = env.project("proj", &files);
    let url = server.url();
    let settings = [
        ("AMANMCP_EMBEDDER", "ollama"),
        ("AMANMCP_EMBED_URL", url.as_str()),
        ("AMANMCP_EMBED_MODEL", "fake-embed"),
        ("AMANMCP_EMBED_BATCH", "16"),
    ];
    let mut shim = Shim::start_with(&env, &root, &vars(&settings));
    shim.initialize();
    shim.search_until("deliver_newsletter", "mail/newsletter.py");
    env.wait_ready();
    let status = env.project_status();
    let chunks = status["chunks"].as_u64().unwrap();
    assert_eq!(
        status["embedding"]["model"], "ollama:fake-embed",
        "{status}"
    );
    assert_eq!(status["embedding"]["embedded"], chunks, "{status}");
    assert_eq!(status["embedding"]["health"], "ok", "{status}");
    assert!(
        status["embedding"]["embedder"]
            .as_str()
            .unwrap()
            .contains(&url),
        "{status}"
    );
    let batches = server.state().batches.lock().unwrap().clone();
    assert!(batches.iter().all(|n| (1..=16).contains(n)), "{batches:?}");
    assert!(batches.iter().any(|n| *n > 1), "never batched: {batches:?}");
    let embedded = server.documents() as u64;
    assert!(embedded >= chunks, "{embedded} texts for {chunks} chunks");

    let content = search(
        &mut shim,
        json!({"query": "shrink picture thumbnail", "mode": "semantic"}),
    );
    assert_eq!(first_path(&content), "media/images.py", "{content}");
    assert_eq!(content["semantic"], true);

    // A rename and a copy of unchanged text: nothing new to embed.
    std::fs::rename(root.join("util/dates.py"), root.join("util/calendar.py")).unwrap();
    std::fs::copy(
        root.join("util/checksum.py"),
        root.join("util/checksum_copy.py"),
    )
    .unwrap();
    shim.search_until("parse_birthday", "util/calendar.py");
    shim.search_until("file_digest", "util/checksum_copy.py");
    env.wait_ready();
    assert_eq!(
        server.documents() as u64,
        embedded,
        "the cache should have served these"
    );
    // Changed text is embedded, and only that.
    std::fs::write(
        root.join("util/dates.py"),
        "def fresh_helper_function(x):\n    return x\n",
    )
    .unwrap();
    shim.search_until("fresh_helper_function", "util/dates.py");
    env.wait_ready();
    let after = server.documents() as u64;
    assert!(
        after > embedded && after <= embedded + 2,
        "{embedded} -> {after}"
    );
    let verify = env
        .command("amanctl")
        .arg("verify")
        .arg(&root)
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn openai_compatible_servers_get_the_model_the_key_and_batches() {
    let server = FakeEmbedServer::start(&["text-embed-small"]);
    let env = TestEnv::new();
    let root = env.project("proj", &project_files());
    let base = format!("{}/v1", server.url());
    let settings = [
        ("AMANMCP_EMBEDDER", "openai"),
        ("AMANMCP_EMBED_URL", base.as_str()),
        ("AMANMCP_EMBED_MODEL", "text-embed-small"),
        ("AMANMCP_EMBED_API_KEY", "sk-local-test"),
    ];
    let mut shim = Shim::start_with(&env, &root, &vars(&settings));
    shim.initialize();
    shim.search_until("parse_birthday", "util/dates.py");
    env.wait_ready();
    let status = env.project_status();
    assert_eq!(
        status["embedding"]["model"], "openai:text-embed-small",
        "{status}"
    );
    assert!(
        server
            .state()
            .auth
            .lock()
            .unwrap()
            .iter()
            .all(|a| a == "Bearer sk-local-test")
    );
    let content = search(
        &mut shim,
        json!({"query": "sha256 digest of a file", "mode": "semantic"}),
    );
    assert_eq!(first_path(&content), "util/checksum.py", "{content}");
}

#[test]
fn a_down_server_or_a_missing_model_is_reported_and_search_stays_lexical() {
    // Nothing listens on this port (bound, then closed).
    let dead = format!("http://{}", amanmcp_tests::free_loopback_addr());
    let env = TestEnv::new();
    let root = env.project("proj", &project_files());
    let settings = [
        ("AMANMCP_EMBEDDER", "ollama"),
        ("AMANMCP_EMBED_URL", dead.as_str()),
        ("AMANMCP_EMBED_MODEL", "fake-embed"),
        ("AMANMCP_EMBED_TIMEOUT_SECS", "2"),
    ];
    let mut shim = Shim::start_with(&env, &root, &vars(&settings));
    shim.initialize();
    shim.search_until("deliver_newsletter", "mail/newsletter.py");
    env.wait_for(Duration::from_secs(30), "the embedder error", || {
        env.project_status()["embedding"]["health"]
            .as_str()
            .is_some_and(|h| h.contains("unreachable"))
    });
    let status = env.project_status();
    assert_eq!(status["state"], "indexing", "vectors are missing: {status}");
    assert_eq!(status["embedding"]["embedded"], 0, "{status}");
    let content = search(&mut shim, json!({"query": "deliver_newsletter"}));
    assert_eq!(first_path(&content), "mail/newsletter.py", "{content}");
    assert_eq!(content["semantic"], false, "{content}");
    let notice = content["notice"].as_str().unwrap_or_default();
    assert!(notice.contains("Semantic search unavailable"), "{content}");
    let reply = shim.call_tool("index-status", json!({}));
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("unreachable"), "{text}");
    drop(shim);
    let _ = env.command("amanctl").arg("stop").output();

    // A server without the model: named, with the fix.
    let server = FakeEmbedServer::start(&["other-model"]);
    let env = TestEnv::new();
    let root = env.project("proj", &project_files());
    let url = server.url();
    let settings = [
        ("AMANMCP_EMBEDDER", "ollama"),
        ("AMANMCP_EMBED_URL", url.as_str()),
        ("AMANMCP_EMBED_MODEL", "fake-embed"),
    ];
    let mut shim = Shim::start_with(&env, &root, &vars(&settings));
    shim.initialize();
    shim.search_until("deliver_newsletter", "mail/newsletter.py");
    env.wait_for(Duration::from_secs(30), "the missing-model error", || {
        env.project_status()["embedding"]["health"]
            .as_str()
            .is_some_and(|h| h.contains("not available") && h.contains("ollama pull fake-embed"))
    });
    let content = search(&mut shim, json!({"query": "x", "mode": "semantic"}));
    assert!(
        content["notice"]
            .as_str()
            .unwrap_or_default()
            .contains("not available"),
        "{content}"
    );
}

#[test]
fn switching_models_re_embeds_and_a_restart_mid_embedding_resumes() {
    let server = FakeEmbedServer::start(&["model-a", "model-b"]);
    let env = TestEnv::new();
    let files = with_generated(60, |i| {
        format!("def generated_{i}(v):\n    return v + {i}\n")
    });
    let root = env.project("proj", &files);
    let url: &'static str = server.url().leak();
    let with_model = |model: &'static str| {
        [
            ("AMANMCP_EMBEDDER", "ollama"),
            ("AMANMCP_EMBED_URL", url),
            ("AMANMCP_EMBED_MODEL", model),
            ("AMANMCP_EMBED_BATCH", "4"),
        ]
    };
    // Slow answers, so the daemon is killed with most chunks still waiting.
    server.set_delay(150);
    let mut daemon = env.start_daemon_with(&with_model("model-a"));
    let status = env
        .command("amanctl")
        .arg("index")
        .arg(&root)
        .arg("--no-wait")
        .output();
    drop(status);
    env.wait_for(Duration::from_secs(30), "some vectors", || {
        env.project_status()["embedding"]["embedded"]
            .as_u64()
            .is_some_and(|n| n >= 4)
    });
    let _ = daemon.kill();
    let _ = daemon.wait();
    server.set_delay(0);
    let mut daemon = env.start_daemon_with(&with_model("model-a"));
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("generated_59", "gen/m59.py");
    env.wait_ready();
    let chunks = env.project_status()["chunks"].as_u64().unwrap();
    assert_eq!(env.project_status()["embedding"]["embedded"], chunks);
    drop(shim);
    let _ = daemon.kill();
    let _ = daemon.wait();

    // Another model: every chunk is embedded again, by it.
    let before_b = server
        .state()
        .models
        .lock()
        .unwrap()
        .iter()
        .filter(|m| *m == "model-b")
        .count();
    assert_eq!(before_b, 0);
    let mut daemon = env.start_daemon_with(&with_model("model-b"));
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("generated_1", "gen/m1.py");
    env.wait_ready();
    let status = env.project_status();
    assert_eq!(status["embedding"]["model"], "ollama:model-b", "{status}");
    assert_eq!(status["embedding"]["embedded"], chunks, "{status}");
    let texts_b: usize = {
        let models = server.state().models.lock().unwrap().clone();
        let batches = server.state().batches.lock().unwrap().clone();
        models
            .iter()
            .zip(batches)
            .filter(|(m, _)| *m == "model-b")
            .map(|(_, n)| n)
            .sum()
    };
    assert!(
        texts_b as u64 >= chunks,
        "{texts_b} texts for {chunks} chunks"
    );
    let verify = env
        .command("amanctl")
        .arg("verify")
        .arg(&root)
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    drop(shim);
    let _ = daemon.kill();
    let _ = daemon.wait();
}

#[test]
fn an_issue_naming_a_file_ranks_that_file_first() {
    let env = TestEnv::new();
    let mut files = project_files();
    // Two files with the same path words; the one the issue does not name is the better
    // match for its words, so only the named path can put the other first.
    let named = "def load_settings(path):\n    text = open(path).read()\n    return parse_settings_text(text)\n";
    let other = "def load_settings(path):\n    # load settings: read the settings text, parse settings\n    text = open(path).read()\n    return parse_settings_text(text)\n";
    files.push(("util/core/loader.py", named));
    files.push(("core/util/loader.py", other));
    let root = env.project("proj", &files);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("load_settings", "util/core/loader.py");
    let words = "load_settings fails to read the settings text";
    let plain = search(&mut shim, json!({"query": words, "mode": "lexical"}));
    assert_eq!(first_path(&plain), "core/util/loader.py", "{plain}");
    let issue = format!(
        "{words}\n\nTraceback (most recent call last):\n  File \"/home/me/venv/lib/python3.11/site-packages/util/core/loader.py\", line 2, in load_settings\nValueError: bad settings"
    );
    for mode in ["lexical", "hybrid"] {
        let content = search(&mut shim, json!({"query": issue, "mode": mode}));
        assert_eq!(
            first_path(&content),
            "util/core/loader.py",
            "{mode}: {content}"
        );
    }
}

#[test]
fn a_second_checkout_takes_its_vectors_from_the_shared_cache() {
    let server = FakeEmbedServer::start(&["fake-embed"]);
    let env = TestEnv::new();
    let files = with_generated(30, |i| {
        format!("def generated_{i}(value):\n    return value + {i}\n")
    });
    let url = server.url();
    let settings = [
        ("AMANMCP_EMBEDDER", "ollama"),
        ("AMANMCP_EMBED_URL", url.as_str()),
        ("AMANMCP_EMBED_MODEL", "fake-embed"),
    ];
    // The first checkout embeds every chunk.
    let first = env.project("first", &files);
    let mut shim = Shim::start_with(&env, &first, &vars(&settings));
    shim.initialize();
    shim.search_until("deliver_newsletter", "mail/newsletter.py");
    env.wait_ready();
    let chunks = env.project_status()["chunks"].as_u64().unwrap();
    let embedded_first = server.documents();
    assert!(
        embedded_first as u64 >= chunks,
        "{embedded_first} for {chunks}"
    );

    // A second checkout of the same files (another clone, a worktree) in the same daemon:
    // its vectors come from the shared cache; it embeds (almost) nothing.
    let mut second_files = files.clone();
    second_files.push(("extra/new.py", "def brand_new_function(x):\n    return x\n"));
    let second = env.project("second", &second_files);
    let mut shim2 = Shim::start_with(&env, &second, &vars(&settings));
    shim2.initialize();
    shim2.search_until("brand_new_function", "extra/new.py");
    env.wait_ready();
    let (_, status) = env.status();
    let second_status = status["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["root"].as_str().is_some_and(|r| r.ends_with("second")))
        .cloned()
        .unwrap_or_else(|| panic!("no second project: {status}"));
    let embedded_second = server.documents() - embedded_first;
    assert_eq!(
        embedded_second, 1,
        "only the new file's chunk: {second_status}"
    );
    let shared = second_status["embedding"]["from_shared_cache"]
        .as_u64()
        .unwrap();
    assert_eq!(shared, chunks, "{second_status}");
    assert_eq!(
        second_status["embedding"]["embedded"], second_status["chunks"],
        "{second_status}"
    );
    // And its search works on those vectors.
    let content = search(
        &mut shim2,
        json!({"query": "shrink picture thumbnail", "mode": "semantic"}),
    );
    assert_eq!(first_path(&content), "media/images.py", "{content}");
    env.verify_ok(&second, "after taking vectors from the shared cache");
}
