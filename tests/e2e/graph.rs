//! The code graph through the real shim, daemon and amanctl: callers told apart by imports,
//! ambiguous calls labelled, callees, a trace, impact of a git diff, and an edit to a caller
//! seen by the next answer.

use std::process::Command;
use std::time::{Duration, Instant};

use amanmcp_tests::{Shim, TestEnv, write_file};
use serde_json::{Value, json};

const UTIL_PY: &str = "def load(path):
    return open(path).read()


def save(path, text):
    return open(path, 'w').write(text)
";

const NET_PY: &str = "def load(url):
    return fetch(url)
";

const APP_PY: &str = "from pkg.util import load, save as store
from pkg import net


class Reader:
    def close(self):
        pass

    def read_all(self, paths):
        return [self.read_one(p) for p in paths]

    def read_one(self, path):
        return load(path)


class Writer:
    def close(self):
        pass


def export(paths):
    text = Reader().read_all(paths)
    store('out.txt', text)
    return net.load('http://x')


def shutdown(handle):
    handle.close()
";

const TEST_PY: &str = "from pkg.app import export


def test_export():
    assert export([]) is not None
";

fn graph(shim: &mut Shim, tool: &str, args: Value) -> Value {
    let reply = shim.call_tool(tool, args.clone());
    assert_ne!(
        reply["result"]["isError"],
        json!(true),
        "{tool} {args} -> {reply}"
    );
    reply["result"]["structuredContent"].clone()
}

/// `from -> to [label]` of each link.
fn links(answer: &Value) -> Vec<String> {
    answer["links"]
        .as_array()
        .unwrap_or_else(|| panic!("no links: {answer}"))
        .iter()
        .map(|l| {
            let to = l["to"].as_str().unwrap_or("?");
            format!(
                "{} -> {} [{}]",
                l["from"].as_str().unwrap(),
                to,
                l["label"].as_str().unwrap()
            )
        })
        .collect()
}

fn git(root: &std::path::Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(root)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn callers_callees_trace_and_impact_resolve_by_scope() {
    let env = TestEnv::new();
    let root = env.project(
        "graph",
        &[
            ("pkg/__init__.py", ""),
            ("pkg/util.py", UTIL_PY),
            ("pkg/net.py", NET_PY),
            ("pkg/app.py", APP_PY),
            ("tests/test_app.py", TEST_PY),
        ],
    );
    git(&root, &["init", "-q"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "one"]);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("read_one", "pkg/app.py");

    // Two `load`s: the one asked for must be chosen, and each has its own callers.
    let answer = graph(&mut shim, "callers", json!({"symbol": "load"}));
    assert_eq!(
        answer["choices"].as_array().map(Vec::len),
        Some(2),
        "{answer}"
    );
    let answer = graph(
        &mut shim,
        "callers",
        json!({"symbol": "load", "path": "pkg/util.py"}),
    );
    assert_eq!(
        links(&answer),
        ["pkg/app.py:12 Reader.read_one -> pkg/util.py:1 load [resolved]"],
        "{answer}"
    );
    assert_eq!(answer["links"][0]["rule"], "import", "{answer}");
    let answer = graph(&mut shim, "callers", json!({"symbol": "net.load"}));
    assert_eq!(
        links(&answer),
        ["pkg/app.py:21 export -> pkg/net.py:1 load [resolved]"],
        "{answer}"
    );
    // An alias is a call of what it names.
    let answer = graph(&mut shim, "callers", json!({"symbol": "save"}));
    assert_eq!(
        links(&answer),
        ["pkg/app.py:21 export -> pkg/util.py:5 save [resolved]"]
    );
    // `search` with `context: graph`: a definition found comes with its neighbourhood.
    let reply = shim.call_tool("search", json!({"query": "read_one", "context": "graph"}));
    let results = reply["result"]["structuredContent"]["results"].clone();
    let hit = results
        .as_array()
        .and_then(|r| r.iter().find(|h| h["symbol"] == "Reader.read_one"))
        .unwrap_or_else(|| panic!("no Reader.read_one in {reply}"));
    assert_eq!(
        hit["graph"],
        json!({
            "callers": ["pkg/app.py:9 Reader.read_all"],
            "callers_total": 1,
            "callees": ["pkg/util.py:1 load"],
            "callees_total": 1
        }),
        "{reply}"
    );
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("(called by pkg/app.py:9 Reader.read_all; calls pkg/util.py:1 load)"),
        "{text}"
    );
    let bad = shim.call_tool("search", json!({"query": "read_one", "context": "callers"}));
    assert_eq!(bad["result"]["isError"], json!(true), "{bad}");
    // A receiver of unknown type: both closes are possible, neither is claimed.
    let answer = graph(&mut shim, "callers", json!({"symbol": "Writer.close"}));
    assert_eq!(
        links(&answer),
        ["pkg/app.py:27 shutdown -> pkg/app.py:17 Writer.close [ambiguous]"],
        "{answer}"
    );
    assert_eq!(
        answer["links"][0]["candidates"].as_array().unwrap().len(),
        2
    );
    // Two levels, through `self`.
    let answer = graph(
        &mut shim,
        "callers",
        json!({"symbol": "Reader.read_one", "depth": 3}),
    );
    assert_eq!(
        links(&answer),
        [
            "pkg/app.py:9 Reader.read_all -> pkg/app.py:12 Reader.read_one [resolved]",
            "pkg/app.py:21 export -> pkg/app.py:9 Reader.read_all [resolved]",
            "tests/test_app.py:4 test_export -> pkg/app.py:21 export [resolved]",
        ],
        "{answer}"
    );

    // Callees, with what the project does not define labelled unresolved.
    let answer = graph(&mut shim, "callees", json!({"symbol": "export"}));
    let labels: Vec<(String, String)> = answer["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap().into(),
                l["label"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        // `Reader().read_all`: the receiver is a `Reader` made on the spot.
        ("read_all", "resolved"),
        ("Reader", "resolved"),
        ("store", "resolved"),
        ("load", "resolved"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(labels, expected, "{answer}");

    // A file's path asks for its top level: what it imports from the project.
    let answer = graph(&mut shim, "callees", json!({"symbol": "pkg/app.py"}));
    let mut imported: Vec<String> = links(&answer);
    imported.sort();
    assert_eq!(
        imported,
        [
            "pkg/app.py:1 pkg/app.py -> pkg/util.py:1 load [resolved]",
            "pkg/app.py:1 pkg/app.py -> pkg/util.py:5 save [resolved]",
        ],
        "{answer}"
    );
    // Nothing calls a file: asked for its callers, the answer says so, never "none".
    let reply = shim.call_tool("callers", json!({"symbol": "pkg/app.py"}));
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    assert!(reply.to_string().contains("is a file"), "{reply}");

    let answer = graph(
        &mut shim,
        "trace",
        json!({"from": "test_export", "to": "Reader.read_one"}),
    );
    let hops: Vec<&str> = answer["paths"][0]
        .as_array()
        .unwrap_or_else(|| panic!("no path: {answer}"))
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(hops, ["export", "read_all", "read_one"], "{answer}");

    // Impact of the working tree's change to `util.load`: its caller chain, the test last
    // and listed apart.
    let changed = UTIL_PY.replace("open(path).read()", "open(path).read().strip()");
    write_file(&root, "pkg/util.py", &changed);
    let answer = graph(&mut shim, "impact", json!({}));
    assert_eq!(answer["targets"][0]["symbol"], "load", "{answer}");
    let reached: Vec<(&str, u64)> = answer["impacted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["symbol"].as_str().unwrap(),
                i["distance"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reached,
        [
            ("Reader.read_one", 1),
            ("Reader.read_all", 2),
            ("export", 3)
        ],
        "{answer}"
    );
    let answer = graph(&mut shim, "impact", json!({"depth": 4}));
    assert_eq!(
        answer["tests"],
        json!(["tests/test_app.py:4 test_export"]),
        "{answer}"
    );
    // Paged: the daemon sends the asked page; totals and `impacted` count every link.
    let all = links(&answer);
    assert!(all.len() >= 4, "{answer}");
    for offset in [0, 1, all.len() - 1] {
        let page = graph(
            &mut shim,
            "impact",
            json!({"depth": 4, "offset": offset, "limit": 1}),
        );
        assert_eq!(links(&page), [all[offset].clone()], "{page}");
        assert_eq!(page["total_links"], all.len(), "{page}");
        assert_eq!(page["impacted"], answer["impacted"], "{page}");
        let next = (offset + 1 < all.len()).then_some(offset + 1);
        assert_eq!(page["next_offset"], json!(next), "{page}");
    }
    let bad = shim.call_tool("impact", json!({"diff": "--output=/tmp/x"}));
    assert_eq!(bad["result"]["isError"], json!(true), "{bad}");

    // An edit that adds a caller is in the next answer once the index has it.
    write_file(
        &root,
        "pkg/cli.py",
        "from pkg.util import save\n\n\ndef main():\n    save('a', 'b')\n",
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let answer = graph(&mut shim, "callers", json!({"symbol": "save"}));
        if links(&answer)
            .contains(&"pkg/cli.py:4 main -> pkg/util.py:5 save [resolved]".to_string())
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new caller never appeared: {answer}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // amanctl says the same for people.
    let ran = env.amanctl(&["callers", "save", "--root", root.to_str().unwrap()]);
    assert!(ran.ok(), "{}", ran.text());
    assert!(
        ran.stdout
            .contains("pkg/cli.py:5  main -> save  [resolved: import]"),
        "{}",
        ran.stdout
    );
    let ran = env.amanctl(&["callers", "load", "--root", root.to_str().unwrap()]);
    assert!(
        !ran.ok() && ran.stdout.contains("2 definitions"),
        "{}",
        ran.text()
    );

    // A file importing a class it never calls (a type named) is what `impact` reaches by
    // the import; `callers` lists calls only. Asked once before the file exists, so the
    // daemon's kept answer for the name must take the new import in.
    let before = graph(
        &mut shim,
        "impact",
        json!({"symbols": ["Writer"], "depth": 1}),
    );
    write_file(
        &root,
        "pkg/checks.py",
        "from pkg.app import Writer\n\n\ndef check(w: Writer):\n    return w\n",
    );
    let imported = |answer: &Value| {
        answer["links"].as_array().is_some_and(|links| {
            links.iter().any(|l| {
                l["at"] == "pkg/checks.py:1"
                    && l["imports"] == json!(true)
                    && l["rule"]
                        .as_str()
                        .is_some_and(|r| r.starts_with("imports it"))
            })
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let answer = graph(
            &mut shim,
            "impact",
            json!({"symbols": ["Writer"], "depth": 1}),
        );
        if imported(&answer) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the importing file never appeared: {answer}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!imported(&before), "{before}");
    let answer = graph(&mut shim, "callers", json!({"symbol": "Writer"}));
    assert!(!imported(&answer), "{answer}");
}
