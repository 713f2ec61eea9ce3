//! The ranking stage through the real binaries: a definition outranks files that only use
//! the name, and source outranks tests and docs that repeat the query's words (also when a
//! pasted issue quotes its failing test), and a rare word's only chunks come before what
//! the vectors found by meaning alone, and a query naming the project's own language finds no
//! file by that word; a pasted issue's links and HTML find none either; a stop word
//! called as a function (`xr.where(`) is searched for, and a pasted issue's title searches
//! the forms code uses (`mocked` -> `mock`).

use amanmcp_tests::{Shim, TestEnv, result_paths as paths};
use serde_json::{Value, json};

const DE_RS: &str = "/// A data structure that can be deserialized.
pub trait Deserialize: Sized {
    fn deserialize(input: &str) -> Self;
}
";

fn uses(i: usize) -> String {
    format!(
        "use crate::de::Deserialize;\n\npub fn load_{i}() -> Config {{\n    let a = Deserialize::deserialize(\"a\");\n    let b = Deserialize::deserialize(\"b\");\n    let c = Deserialize::deserialize(\"c\");\n    Config::from(a, b, c)\n}}\n"
    )
}

const BROADCAST_RS: &str = "/// A broadcast channel: every value sent reaches all receivers.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T: Clone> Sender<T> {
    /// Send a value to all active receivers.
    pub fn send(&self, value: T) -> usize {
        self.shared.push(value)
    }
}
";

const BROADCAST_TEST_RS: &str = "// Tests of the broadcast channel and its receivers.
#[test]
fn every_receiver_gets_each_value() {
    let (tx, rx1, rx2) = channel();
    tx.send(1);
    assert_eq!(rx1.recv(), 1);
    assert_eq!(rx2.recv(), 1);
}
";

const GUIDE_MD: &str = "# Broadcast channel

A broadcast channel delivers each value to all receivers. Broadcast channel receivers
lag when they are slow; broadcast channel receivers may miss values.
";

/// The project's changelog: prose about the code, in a file with no extension.
const CHANGES: &str = "Release 1.2

* Broadcast channel receivers no longer miss values when the broadcast channel lags.
* Broadcast channel receivers are woken in order; slow broadcast channel receivers lag.
";

/// Six files using `Deserialize`, its definition, a broadcast channel with its test, its
/// guide and the changelog.
fn ranked_project(env: &TestEnv) -> std::path::PathBuf {
    let mut files: Vec<(String, String)> = (0..6)
        .map(|i| (format!("src/loaders/load_{i}.rs"), uses(i)))
        .collect();
    files.push(("src/de.rs".into(), DE_RS.into()));
    files.push(("src/sync/broadcast.rs".into(), BROADCAST_RS.into()));
    files.push(("tests/broadcast_test.rs".into(), BROADCAST_TEST_RS.into()));
    files.push(("docs/guide.md".into(), GUIDE_MD.into()));
    files.push(("CHANGES".into(), CHANGES.into()));
    env.project("proj", &files)
}

/// A shim (with `vars`) on [`ranked_project`], once it is searchable.
fn ranked_shim(env: &TestEnv, vars: &[(&str, &std::ffi::OsStr)]) -> Shim {
    let root = ranked_project(env);
    let mut shim = Shim::start_with(env, &root, vars);
    shim.initialize();
    shim.search_until("Deserialize", "src/de.rs");
    shim
}

/// A shim on a new project of `files`, once a search for `word` finds `path`.
fn shim_on<P: AsRef<str>, C: AsRef<[u8]>>(
    env: &TestEnv,
    files: &[(P, C)],
    word: &str,
    path: &str,
) -> Shim {
    let root = env.project("proj", files);
    let mut shim = Shim::start(env, &root);
    shim.initialize();
    shim.search_until(word, path);
    shim
}

/// The structured result for `path` in a search reply, if listed.
fn result_for<'a>(reply: &'a Value, path: &str) -> Option<&'a Value> {
    reply["result"]["structuredContent"]["results"]
        .as_array()
        .expect("structured results")
        .iter()
        .find(|r| r["path"] == path)
}

#[test]
fn the_ranking_stage_puts_definitions_and_source_first() {
    let env = TestEnv::new();
    let mut shim = ranked_shim(&env, &[]);

    for mode in ["lexical", "hybrid"] {
        let reply = shim.call_tool("search", json!({"query": "Deserialize", "mode": mode}));
        assert_eq!(paths(&reply)[0], "src/de.rs", "{mode}: {reply}");
        // The answer says why: the evidence the ranking stage used.
        let first = &reply["result"]["structuredContent"]["results"][0];
        assert!(
            first["why"]
                .as_array()
                .is_some_and(|w| w.iter().any(|r| r == "defines a name the query asks for")),
            "{first}"
        );
        let reply = shim.call_tool(
            "search",
            json!({"query": "broadcast channel receivers", "mode": mode}),
        );
        assert_eq!(paths(&reply)[0], "src/sync/broadcast.rs", "{mode}: {reply}");
        // Tests and the changelog rank lower, as docs do.
        for lower in ["tests/broadcast_test.rs", "CHANGES"] {
            let found = result_for(&reply, lower);
            assert!(
                found.is_none_or(|t| t["why"].to_string().contains("(lower)")),
                "{mode}: {reply}"
            );
        }
    }
    // Asking for tests ranks the tests above the code they test.
    let reply = shim.call_tool(
        "search",
        json!({"query": "tests of the broadcast channel receivers", "mode": "lexical"}),
    );
    let ranked = paths(&reply);
    let position = |path: &str| ranked.iter().position(|p| p == path).unwrap();
    assert!(
        position("tests/broadcast_test.rs") < position("src/sync/broadcast.rs"),
        "{reply}"
    );
}

#[test]
fn without_vectors_the_default_mode_still_ranks() {
    let env = TestEnv::new();
    let off = std::ffi::OsStr::new("off");
    let mut shim = ranked_shim(&env, &[("AMANMCP_EMBEDDER", off)]);
    // BM25 alone puts the guide first: it repeats the words most.
    let reply = shim.call_tool("search", json!({"query": "broadcast channel receivers"}));
    assert_eq!(paths(&reply)[0], "src/sync/broadcast.rs", "{reply}");
    let first = &reply["result"]["structuredContent"]["results"][0];
    assert!(
        first["why"].to_string().contains("file named by"),
        "{first}"
    );
    assert!(reply.to_string().contains("keyword results"), "{reply}");
}

const SCHEDULER_RS: &str = "/// Puts a task on the run queue of the least busy worker thread.
pub fn schedule(task: Task, workers: &[Worker]) {
    let worker = workers.iter().min_by_key(|w| w.queue.len()).unwrap();
    worker.queue.push(task);
}
";

const CONFIG_RS: &str = "pub struct Config {
    pub workers: usize,
}
";

#[test]
fn prose_finds_the_forms_code_uses() {
    let env = TestEnv::new();
    let files = vec![
        (
            "src/runtime/scheduler.rs".to_string(),
            SCHEDULER_RS.to_string(),
        ),
        ("src/config.rs".to_string(), CONFIG_RS.to_string()),
    ];
    let mut shim = shim_on(&env, &files, "schedule", "src/runtime/scheduler.rs");
    // None of `tasks`, `scheduled`, `threads` is in the code; `task`, `schedule` and
    // `thread` are.
    let reply = shim.call_tool(
        "search",
        json!({"query": "how tasks are scheduled onto threads", "mode": "lexical"}),
    );
    assert_eq!(paths(&reply), ["src/runtime/scheduler.rs"], "{reply}");
}

/// A pasted issue (title, then over 40 words) that quotes its failing test and points at
/// the guide.
const ISSUE: &str = "Broadcast Sender::send loses values for slow receivers

When a receiver is slow, `Sender::send` reports it delivered the value but the receiver
never sees it. Our test below fails about one time in ten on CI, and the docs guide says
receivers may lag but not that values are lost without an error.

```
#[test]
fn every_receiver_gets_each_value() {
    let (tx, rx1, rx2) = channel();
    tx.send(1);
    assert_eq!(rx1.recv(), 1);
    assert_eq!(rx2.recv(), 1);
}
```

Seen on version 1.4 and on main.
";

#[test]
fn a_pasted_issue_finds_the_code_not_the_test_it_quotes() {
    let env = TestEnv::new();
    let mut shim = ranked_shim(&env, &[]);
    for mode in ["lexical", "hybrid"] {
        let reply = shim.call_tool("search", json!({"query": ISSUE, "mode": mode}));
        assert_eq!(paths(&reply)[0], "src/sync/broadcast.rs", "{mode}: {reply}");
        let test =
            result_for(&reply, "tests/broadcast_test.rs").expect("the quoted test is still found");
        assert!(
            test["why"].to_string().contains("(lower)"),
            "{mode}: {test}"
        );
    }
}

/// A pasted issue's screenshot, links and list of installed versions are not words of the
/// question: the image's address (`….png`) names no file, nor do its tag's attributes, nor
/// a package's name in the versions (`zarr: 2.13.3`).
#[test]
fn a_pasted_issue_s_links_and_html_find_no_file() {
    let env = TestEnv::new();
    let png_py =
        "def write_png(width, alt):\n    \"\"\"PNG encoder.\"\"\"\n    return encode(width, alt)\n";
    let zarr_py =
        "def open_zarr(store):\n    \"\"\"Open a zarr store.\"\"\"\n    return read(store)\n";
    let mut shim = shim_on(
        &env,
        &[
            ("src/sync/broadcast.rs", BROADCAST_RS),
            ("tests/broadcast_test.rs", BROADCAST_TEST_RS),
            ("util/png.py", png_py),
            ("backends/zarr.py", zarr_py),
        ],
        "write_png",
        "util/png.py",
    );
    let screenshot = "Result:\n<img width=\"148\" alt=\"Screenshot\" \
        src=\"https://user-images.githubusercontent.com/748828/83331159-4eab.png\">\n\
        ![trace](https://example.com/shots/trace.png)\n";
    // The versions installed, as `show_versions()` prints them: no word of the question.
    let versions = "<details>\nINSTALLED VERSIONS\ncommit: None\npython-bits: 64\n\
        zarr: 2.13.3\ndask: 2022.10.0\nrasterio: 1.3.3\n</details>\n";
    let issue = format!("{ISSUE}\n{screenshot}{versions}");
    let reply = shim.call_tool("search", json!({"query": issue, "mode": "lexical"}));
    assert_eq!(paths(&reply)[0], "src/sync/broadcast.rs", "{reply}");
    for (file, found_by) in [
        ("util/png.py", "the screenshot's address"),
        ("backends/zarr.py", "the list of installed versions"),
    ] {
        assert!(
            result_for(&reply, file).is_none(),
            "{found_by} found {file}: {reply}"
        );
    }
}

#[test]
fn a_module_file_answers_before_the_files_it_gathers() {
    // `command` names too many files below to name any; `command.rb` beside `command/` is the
    // module the question is about, though each subcommand repeats the words more.
    let env = TestEnv::new();
    let mut files: Vec<(String, String)> = ["routes", "server", "console", "runner", "test"]
        .iter()
        .map(|name| {
            (
                format!("lib/rails/commands/{name}/{name}_command.rb"),
                format!(
                    "module Rails\n  module Command\n    # The {name} command dispatch.\n    class {name}Command < Base\n      def perform(*args)\n        run(args)\n      end\n    end\n  end\nend\n"
                ),
            )
        })
        .collect();
    files.push((
        "lib/rails/command.rb".into(),
        "module Rails\n  module Command\n    # Command dispatch: find one by name and invoke it.\n    def self.invoke(full_namespace, args = [])\n      found = find_by_namespace(full_namespace)\n      found.perform(args)\n    end\n  end\nend\n".into(),
    ));
    files.push((
        "lib/rails/command/base.rb".into(),
        "module Rails\n  module Command\n    class Base\n      def self.perform(args)\n      end\n    end\n  end\nend\n".into(),
    ));
    let mut shim = shim_on(&env, &files, "invoke", "lib/rails/command.rb");
    let reply = shim.call_tool(
        "search",
        json!({"query": "command dispatch", "mode": "lexical"}),
    );
    let found = paths(&reply);
    assert_eq!(
        found.first().map(String::as_str),
        Some("lib/rails/command.rb"),
        "{reply}"
    );
    let why = result_for(&reply, "lib/rails/command.rb").unwrap()["why"].to_string();
    assert!(why.contains("module `command`"), "{why}");
}

#[test]
fn a_rare_word_finds_its_only_chunk_before_what_meaning_alone_found() {
    let env = TestEnv::new();
    // The only chunk holding the word is a re-export file; a file of many chunks, none
    // holding it, gathers file evidence from the vectors' neighbours.
    let mut body = String::new();
    for i in 0..12 {
        body.push_str(&format!(
            "def connection_step_{i}(pool, host):\n    sock = pool.acquire(host)\n    sock.send(b'step {i}')\n    return sock.recv(1024)\n\n\n"
        ));
    }
    let mut files = vec![("gen/m0.py", body.as_str())];
    files.push((
        "web/index.ts",
        "export * from \"./client\";\nexport * from \"./server\";\n// zorblattquux\n",
    ));
    let mut shim = shim_on(&env, &files, "zorblattquux", "web/index.ts");
    env.wait_ready();
    let reply = shim.call_tool("search", json!({"query": "zorblattquux", "limit": 10}));
    let hybrid = reply["result"]["structuredContent"].clone();
    assert_eq!(
        paths(&reply).first().map(String::as_str),
        Some("web/index.ts"),
        "{reply}"
    );
    let why = hybrid["results"][0]["why"].to_string();
    assert!(why.contains("holding the query's words"), "{hybrid}");
    // And how fusion saw it: its rank in each leg.
    assert!(why.contains("BM25 #1"), "{hybrid}");
    // What meaning alone found still follows.
    assert!(hybrid["results"].as_array().unwrap().len() > 1, "{hybrid}");
}

const TAIL_PY: &str = "def last(items):
    \"\"\"The last item of items, or None when there is none.\"\"\"
    return items[-1] if items else None
";

const COMPAT_PY: &str =
    "\"\"\"Python 2 and Python 3 compatibility: what differs between Python versions.\"\"\"

def at_index(seq, i):
    \"\"\"seq[i] on every Python: Python 2 sequences, Python 3 views.\"\"\"
    return list(seq)[i]
";

/// Asked of a project written in Python, "in python" tells no file apart: the one file that
/// spells the language's name is not found by it.
#[test]
fn the_project_s_own_language_finds_no_file() {
    let env = TestEnv::new();
    let mut files: Vec<(String, String)> = (0..4)
        .map(|i| {
            (
                format!("app/step_{i}.py"),
                format!("def step_{i}(state):\n    return state + {i}\n"),
            )
        })
        .collect();
    files.push(("app/tail.py".into(), TAIL_PY.into()));
    files.push(("app/compat.py".into(), COMPAT_PY.into()));
    let root = env.project("proj", &files);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("last", "app/tail.py");
    let reply = shim.call_tool(
        "search",
        json!({"query": "the last item in python", "mode": "lexical"}),
    );
    assert_eq!(paths(&reply), ["app/tail.py"], "{reply}");
    // The answer says which word was left out, and why.
    let set_aside = &reply["result"]["structuredContent"]["set_aside"];
    assert_eq!(set_aside[0]["word"], "python", "{reply}");
    assert!(
        set_aside[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("own language")),
        "{reply}"
    );
    let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("Not searched for: python"), "{reply}");
    // `amanctl search` says so too, in its JSON and as a note.
    let query = "the last item in python";
    let ran = env.amanctl_on(&root, &["search", "--json", "--mode", "lexical", query]);
    let out: Value = serde_json::from_str(&ran.stdout).unwrap_or_default();
    assert_eq!(out["set_aside"][0]["word"], "python", "{}", ran.text());
    let ran = env.amanctl_on(&root, &["search", "--mode", "lexical", query]);
    assert!(
        ran.stderr.contains("not searched for: python"),
        "{}",
        ran.text()
    );
    // A query with no such word sets nothing aside.
    let plain = shim.call_tool("search", json!({"query": "the last item"}));
    assert!(
        plain["result"]["structuredContent"]
            .get("set_aside")
            .is_none(),
        "{plain}"
    );
}

/// Where no file or directory is named by the question, both legs judged the chunks' text
/// alone: hybrid keeps each chunk at least as near as the vectors put it (its semantic
/// mode score) and says so. A question naming a file leaves fusion as it was.
#[test]
fn where_no_path_is_named_hybrid_keeps_what_the_vectors_found_near() {
    let env = TestEnv::new();
    let shrink = "from PIL import Image\n\n\ndef shrink_picture(path, width, height):\n    picture = Image.open(path)\n    picture.thumbnail((width, height))\n    picture.save(path)\n";
    let digest = "import hashlib\n\n\ndef file_digest(path):\n    digest = hashlib.sha256()\n    with open(path, \"rb\") as handle:\n        digest.update(handle.read())\n    return digest.hexdigest()\n";
    let mail = "import smtplib\n\n\ndef deliver_newsletter(server, sender, recipients, body):\n    with smtplib.SMTP(server) as connection:\n        for recipient in recipients:\n            connection.sendmail(sender, recipient, body)\n";
    // Near the question in meaning, with none of its words.
    let rotate =
        "from PIL import Image\n\n\ndef rotate_picture(image):\n    return image.rotate(90)\n";
    let dates = "from datetime import datetime\n\n\ndef parse_birthday(text):\n    return datetime.strptime(text, \"%Y-%m-%d\").date()\n";
    let files = [
        ("media/images.py", shrink),
        ("lib/f1.py", digest),
        ("lib/f2.py", mail),
        ("lib/f3.py", dates),
        ("lib/f4.py", rotate),
    ];
    let mut shim = shim_on(&env, &files, "shrink_picture", "media/images.py");
    env.wait_ready();
    let kept = |reply: &Value| {
        reply["result"]["structuredContent"]["results"]
            .as_array()
            .expect("results")
            .iter()
            .filter(|r| {
                r["why"]
                    .to_string()
                    .contains("as near as the vectors put it")
            })
            .count()
    };
    // `path` is a word of two files' code; no word names a file or a directory.
    let reply = shim.call_tool("search", json!({"query": "make a photo at a path smaller"}));
    assert_eq!(paths(&reply)[0], "media/images.py", "{reply}");
    assert!(kept(&reply) > 0, "{reply}");
    // `images` names `media/images.py`: the names decide, and fusion stands.
    let reply = shim.call_tool("search", json!({"query": "make images at a path smaller"}));
    assert_eq!(paths(&reply)[0], "media/images.py", "{reply}");
    assert_eq!(kept(&reply), 0, "{reply}");
    // Lexical mode has no vectors to keep.
    let reply = shim.call_tool(
        "search",
        json!({"query": "make a photo at a path smaller", "mode": "lexical"}),
    );
    assert_eq!(kept(&reply), 0, "{reply}");
}

/// A stop word the query calls (`xr.where(`) is the name it asks for; the same word in a
/// sentence is no term.
#[test]
fn a_called_stop_word_is_searched_for() {
    let env = TestEnv::new();
    let computation = "def where(cond, left, right):\n    \"\"\"Choose elements from left or right.\"\"\"\n    return select(cond, left, right)\n";
    let merge = "def merge_attrs(variable_attrs):\n    \"\"\"Merge the variable's attributes.\"\"\"\n    return dict(variable_attrs)\n";
    let mut shim = shim_on(
        &env,
        &[
            ("core/computation.py", computation),
            ("core/merge.py", merge),
        ],
        "merge_attrs",
        "core/merge.py",
    );
    let called = "`xr.where(...)` loses the variable's attributes";
    let reply = shim.call_tool("search", json!({"query": called, "mode": "lexical"}));
    assert_eq!(paths(&reply)[0], "core/computation.py", "{reply}");
    let asked = "where are the variable's attributes lost";
    let reply = shim.call_tool("search", json!({"query": asked, "mode": "lexical"}));
    assert!(
        result_for(&reply, "core/computation.py").is_none(),
        "{reply}"
    );
}

/// A pasted issue's title is its short question: its words search the forms code uses
/// (`mocked` -> `mock`) as a short query's do, while the long body's do not.
#[test]
fn a_pasted_issue_s_title_finds_the_forms_code_uses() {
    let env = TestEnv::new();
    let mock = "def mock(modnames):\n    \"\"\"Insert fake modules while the block runs.\"\"\"\n    return Finder(modnames)\n";
    let coverage = "def report(classes):\n    \"\"\"Report the classes left undocumented.\"\"\"\n    return [c for c in classes if not c.__doc__]\n";
    let mut shim = shim_on(
        &env,
        &[("ext/autodoc/mock.py", mock), ("ext/coverage.py", coverage)],
        "undocumented",
        "ext/coverage.py",
    );
    let issue = "Inherited classes are listed wrongly when mocked\n\n\
        We document classes that inherit from classes of a package we do not install. \
        Since version four the section that lists each base shows a truncated name, the \
        module path without the class name, instead of the full name, although classes \
        that inherit from our own package are listed right. The report is attached below \
        and the build log shows no warning at all.";
    let reply = shim.call_tool("search", json!({"query": issue, "mode": "lexical"}));
    assert!(
        result_for(&reply, "ext/autodoc/mock.py").is_some(),
        "{reply}"
    );
}
