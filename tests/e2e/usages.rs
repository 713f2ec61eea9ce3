//! `usages` through the real shim and daemon, over Rust, Python, TypeScript and Go.

use amanmcp_tests::{Shim, TestEnv};
use serde_json::{Value, json};

const CONFIG_RS: &str = "/// Settings read at start-up.
pub struct Config {
    pub workers: usize,
}

impl Config {
    pub fn load() -> Config {
        Config { workers: 4 }
    }
}

pub struct ConfigLoader;
";

const MAIN_RS: &str = "use crate::config::Config;

fn main() {
    let config = Config::load();
    run(config);
}
";

const PARSER_PY: &str = "def parse_header(line):
    \"\"\"Split a header line.\"\"\"
    return line.split(\":\", 1)


class Reader:
    def read(self, lines):
        return [parse_header(l) for l in lines]
";

const CLIENT_TS: &str = "import { parse_header } from './parser';

export class Client {
  headers(lines: string[]) {
    return lines.map(parse_header);
  }
}
";

const SERVER_GO: &str = "package server

func parse_header(line string) string {
\treturn line
}

func Handle(line string) string {
\treturn parse_header(line)
}
";

fn usages(shim: &mut Shim, args: Value) -> Value {
    let reply = shim.call_tool("usages", args.clone());
    assert_ne!(reply["result"]["isError"], json!(true), "{args} -> {reply}");
    reply["result"].clone()
}

fn places(result: &Value) -> Vec<(String, u64, bool)> {
    result["structuredContent"]["usages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["path"].as_str().unwrap().to_string(),
                u["line"].as_u64().unwrap(),
                u["definition"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn usages_lists_definitions_then_uses_with_their_enclosing_symbols() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("src/config.rs", CONFIG_RS),
            ("src/main.rs", MAIN_RS),
            ("py/parser.py", PARSER_PY),
            ("web/client.ts", CLIENT_TS),
            ("go/server.go", SERVER_GO),
        ],
    );
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("parse_header", "go/server.go");

    // Rust: the struct's declaration (not its doc comment, not the impl block) is the
    // definition; `ConfigLoader` and `config` are other names.
    let result = usages(&mut shim, json!({"name": "crate::config::Config"}));
    let found = places(&result);
    assert_eq!(found[0], ("src/config.rs".into(), 2, true), "{result}");
    assert_eq!(
        found[1..],
        [
            ("src/config.rs".into(), 6, false),
            ("src/config.rs".into(), 7, false),
            ("src/config.rs".into(), 8, false),
            ("src/main.rs".into(), 1, false),
            ("src/main.rs".into(), 4, false),
        ],
        "{result}"
    );
    let structured = &result["structuredContent"];
    assert_eq!(structured["name"], "Config");
    assert_eq!(structured["total"], 6);
    assert_eq!(structured["files"], 2);
    assert_eq!(structured["definitions"], 1);
    let in_main = &structured["usages"][5];
    assert_eq!(in_main["enclosing"], "main", "{in_main}");
    assert_eq!(in_main["column"], 18, "{in_main}");
    assert_eq!(in_main["text"], "let config = Config::load();", "{in_main}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(
            "\nsrc/main.rs\n  1:20  use crate::config::Config;\n  4:18 (in main)  let config"
        ),
        "{text}"
    );

    // Three languages define or use `parse_header`: both definitions first, then each use
    // inside its function or method.
    let result = usages(&mut shim, json!({"name": "parse_header"}));
    let found = places(&result);
    let definitions: Vec<_> = found.iter().filter(|u| u.2).cloned().collect();
    assert_eq!(
        definitions,
        [
            ("go/server.go".into(), 3, true),
            ("py/parser.py".into(), 1, true)
        ],
        "{result}"
    );
    assert!(found[..2].iter().all(|u| u.2), "{result}");
    let enclosing: Vec<(&str, &str)> = result["structuredContent"]["usages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["definition"] == false)
        .map(|u| {
            (
                u["path"].as_str().unwrap(),
                u["enclosing"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(enclosing.contains(&("go/server.go", "Handle")), "{result}");
    assert!(
        enclosing
            .iter()
            .any(|(p, e)| *p == "py/parser.py" && e.ends_with("read")),
        "{result}"
    );
    assert!(
        enclosing
            .iter()
            .any(|(p, e)| *p == "web/client.ts" && e.ends_with("headers")),
        "{result}"
    );

    // Pages: `limit`, then `next_offset`; a path glob narrows.
    let first = usages(&mut shim, json!({"name": "parse_header", "limit": 2}));
    assert_eq!(first["structuredContent"]["next_offset"], 2, "{first}");
    let rest = usages(&mut shim, json!({"name": "parse_header", "offset": 2}));
    assert_eq!(
        places(&first).len() + places(&rest).len(),
        found.len(),
        "{rest}"
    );
    assert_eq!(places(&rest), found[2..], "{rest}");
    // `in_path` is a glob; `path` a file or directory, as in every tool.
    for scope in [json!({"in_path": "web/**"}), json!({"path": "web"})] {
        let mut args = json!({"name": "parse_header"});
        args.as_object_mut()
            .unwrap()
            .extend(scope.as_object().unwrap().clone());
        let narrowed = usages(&mut shim, args);
        assert!(
            places(&narrowed).iter().all(|u| u.0 == "web/client.ts"),
            "{narrowed}"
        );
        assert_eq!(narrowed["structuredContent"]["total"], 2, "{narrowed}");
    }

    // A name found nowhere, and arguments that are not names.
    let none = usages(&mut shim, json!({"name": "no_such_name"}));
    assert_eq!(none["structuredContent"]["total"], 0, "{none}");
    for bad in [json!({"name": "two words"}), json!({"name": 7}), json!({})] {
        let reply = shim.call_tool("usages", bad.clone());
        assert_eq!(reply["result"]["isError"], json!(true), "{bad} -> {reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("name"), "{bad} -> {text}");
    }
}

#[test]
fn usages_stay_within_max_tokens_and_say_how_to_go_on() {
    let env = TestEnv::new();
    // 300 calls of `tick`, one per line, over three files.
    let calls = |n: usize| -> String {
        let mut body = String::from("pub fn caller() {\n");
        for i in 0..n {
            body.push_str(&format!(
                "    tick({i}); // a comment long enough to weigh\n"
            ));
        }
        body.push_str("}\n");
        body
    };
    let root = env.project(
        "proj",
        &[
            ("src/tick.rs", "pub fn tick(n: u32) {}\n".to_string()),
            ("src/a.rs", calls(100)),
            ("src/b.rs", calls(100)),
            ("src/c.rs", calls(100)),
        ],
    );
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("tick", "src/tick.rs");
    let result = usages(
        &mut shim,
        json!({"name": "tick", "limit": 500, "max_tokens": 1000}),
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.len() / 4 <= 1000, "{} tokens", text.len() / 4);
    let structured = &result["structuredContent"];
    assert_eq!(structured["total"], 301, "{structured}");
    let shown = places(&result).len() as u64;
    assert!(shown > 10 && shown < 301, "{shown}");
    assert_eq!(structured["next_offset"], shown, "{structured}");
    assert!(text.contains(&format!("pass offset: {shown}")), "{text}");
    assert_eq!(places(&result)[0], ("src/tick.rs".into(), 1, true));
}
