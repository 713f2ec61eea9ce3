//! A seeded protocol fuzz over the real shim: thousands of hostile messages of every kind the
//! reliability probe found mishandled, each with the answer it must get (code and id), then
//! the session must still serve and the shim's memory stay near its baseline.

use std::collections::HashMap;
use std::time::Duration;

use amanmcp_tests::{Lcg, Shim, TestEnv};
use serde_json::{Value, json};

/// Messages sent (the issue asks for at least 10,000).
const MESSAGES: usize = 10_000;

/// One hostile message and the error code its answer must carry (`None`: a success).
struct Case {
    line: Vec<u8>,
    /// The id the answer must carry, as JSON text (`null` when it cannot be read).
    id: String,
    code: Option<i64>,
}

fn pick<'a>(rng: &mut Lcg, items: &'a [&'a str]) -> &'a str {
    items[rng.below(items.len() as u64) as usize]
}

/// The `n`-th hostile message.
fn case(rng: &mut Lcg, n: usize) -> Case {
    let id = n as i64 + 1;
    let methods = [
        "tools/list",
        "tools/call",
        "resources/read",
        "prompts/get",
        "ping",
    ];
    let wrong_names = ["1", "[1,2]", "true", "{\"a\":1}"];
    let text = |line: String, code: Option<i64>| Case {
        line: line.into_bytes(),
        id: id.to_string(),
        code,
    };
    match rng.below(13) {
        // Invalid UTF-8 inside a string: a parse error that still names the id.
        0 => {
            let mut line =
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"search","arguments":{{"query":""#)
                    .into_bytes();
            // 0xFF never occurs in UTF-8; the rest may or may not form a valid sequence.
            line.push(0xFF);
            for _ in 0..rng.below(4) {
                line.push([0xFF, 0xC3, 0x80, 0xFE][rng.below(4) as usize]);
            }
            line.extend_from_slice(br#""}}}"#);
            line.retain(|&b| b != b'\n');
            Case {
                line,
                id: id.to_string(),
                code: Some(-32700),
            }
        }
        // Nesting deeper than the parser's limit.
        1 => {
            let depth = 129 + rng.below(300) as usize;
            text(
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"x":{}0{}}}}}"#,
                    "[".repeat(depth),
                    "]".repeat(depth)
                ),
                Some(-32700),
            )
        }
        // `params` that is not an object.
        2 => text(
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"{}","params":{}}}"#,
                pick(rng, &methods),
                pick(rng, &["[1]", "7", "\"p\"", "true"])
            ),
            Some(-32602),
        ),
        // A tool name, arguments or resource uri of the wrong type.
        3 => text(
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{}}}}}"#,
                pick(rng, &wrong_names)
            ),
            Some(-32602),
        ),
        4 => text(
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"search","arguments":{}}}}}"#,
                pick(rng, &["1", "\"q\"", "[1]", "true"])
            ),
            Some(-32602),
        ),
        5 => text(
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":{}}}}}"#,
                pick(rng, &["1", "[\"u\"]", "{\"a\":1}", "false"])
            ),
            Some(-32602),
        ),
        // An id that is neither a string nor an integer: echoed exactly, refused.
        6 => {
            let raw = pick(rng, &["-0.0", "1.5", "2e3", "-7.25"]);
            Case {
                line: format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"ping"}}"#).into_bytes(),
                id: raw.to_string(),
                code: Some(-32600),
            }
        }
        // Not an object at all.
        7 => Case {
            line: pick(rng, &["[1,2,3]", "42", "\"hello\"", "null", "true", "[]"])
                .as_bytes()
                .to_vec(),
            id: "null".into(),
            code: Some(-32600),
        },
        // Unknown methods get rmcp's own answer, with their id.
        8 => text(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"no/such/method{n}"}}"#),
            Some(-32601),
        ),
        // A `jsonrpc` member that is not "2.0" (or none): refused, with the id.
        9 => {
            let member = pick(
                rng,
                &[
                    r#""jsonrpc":2,"#,
                    r#""jsonrpc":"2.00","#,
                    r#""jsonrpc":"1.0","#,
                    r#""jsonrpc":null,"#,
                    "",
                ],
            );
            text(
                format!(
                    r#"{{{member}"id":{id},"method":"{}"}}"#,
                    pick(rng, &methods)
                ),
                Some(-32600),
            )
        }
        // A list method's `_meta` or `cursor` of the wrong type.
        10 => text(
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"{}","params":{}}}"#,
                pick(
                    rng,
                    &[
                        "tools/list",
                        "prompts/list",
                        "resources/list",
                        "resources/templates/list"
                    ]
                ),
                pick(
                    rng,
                    &[
                        r#"{"_meta":"x"}"#,
                        r#"{"_meta":5}"#,
                        r#"{"_meta":1e308}"#,
                        r#"{"cursor":1e308}"#,
                        r#"{"cursor":[1]}"#
                    ]
                )
            ),
            Some(-32602),
        ),
        // An integer id no 64-bit type holds: echoed as written, refused.
        11 => {
            let raw = format!(
                "{}{id:06}",
                pick(rng, &["123456789012345678901234", "-98765432109876543210"])
            );
            Case {
                line: format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"ping"}}"#).into_bytes(),
                id: raw,
                code: Some(-32600),
            }
        }
        // Plain requests keep working in between.
        _ => text(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
            None,
        ),
    }
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn ten_thousand_hostile_messages_each_get_their_code_and_id() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("a.py", "def fuzzmarker():\n    pass\n")]);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("fuzzmarker", "a.py");
    let baseline = rss_kib(shim.pid());

    let mut rng = Lcg(0xF022_5EED);
    let mut wrong = Vec::new();
    let mut answered = 0;
    for batch in 0..MESSAGES / 250 {
        let mut expected: HashMap<String, Vec<Option<i64>>> = HashMap::new();
        for i in 0..250 {
            let case = case(&mut rng, batch * 250 + i);
            shim.send_bytes(&case.line);
            expected.entry(case.id).or_default().push(case.code);
        }
        let mut left: usize = expected.values().map(Vec::len).sum();
        while left > 0 {
            let line = shim.recv_line(Duration::from_secs(20));
            let reply: Value = serde_json::from_str(&line).expect("the shim writes JSON");
            // A fractional id must come back exactly as written, so it is read from the text.
            let id = match &reply["id"] {
                Value::Number(n) if !(n.is_i64() || n.is_u64()) => line
                    .split("\"id\":")
                    .nth(1)
                    .and_then(|rest| rest.split([',', '}']).next())
                    .unwrap_or_default()
                    .to_string(),
                id => id.to_string(),
            };
            let Some(codes) = expected.get_mut(&id) else {
                wrong.push(format!("answer with an unexpected id: {reply}"));
                left -= 1;
                continue;
            };
            let code = reply["error"]["code"].as_i64();
            match codes.iter().position(|c| *c == code) {
                Some(at) => {
                    codes.swap_remove(at);
                    answered += 1;
                }
                None => {
                    wrong.push(format!("id {id}: expected one of {codes:?}, got {reply}"));
                    codes.pop();
                }
            }
            left -= 1;
        }
    }
    // Arguments far over their limits get an error naming them, never a broken connection
    // (a 16 KB path used to be echoed into a gRPC header: "h2 protocol error").
    let long = "d/".repeat(10_000);
    let reply = shim.call_tool("lookup", json!({"path": long}));
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("argument `path`"), "{reply}");
    let uri = format!("file://{}/{long}x.py", root.display());
    let reply = shim.request("resources/read", json!({"uri": uri}));
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.len() < 2048 && !message.contains("h2"), "{message}");
    let reply = shim.call_tool(
        "search",
        json!({"query": "q", "in_path": format!("{long}*")}),
    );
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    // Messages too large to read: discarded as they stream in, never held.
    for _ in 0..3 {
        let huge = format!(
            r#"{{"jsonrpc":"2.0","id":"big","method":"ping","params":{{"x":"{}"}}}}"#,
            "y".repeat(5 << 20)
        );
        shim.send_raw(&huge);
        let reply = shim.recv(Duration::from_secs(20));
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
    }
    assert!(
        wrong.is_empty(),
        "{} of {MESSAGES} answered wrongly, e.g.:\n{}",
        wrong.len(),
        wrong[..wrong.len().min(10)].join("\n")
    );
    assert_eq!(answered, MESSAGES);
    // Still serving, and memory near where it started.
    shim.search_until("fuzzmarker", "a.py");
    let after = rss_kib(shim.pid());
    assert!(
        after <= 2 * baseline,
        "shim RSS {baseline} KiB -> {after} KiB after the fuzz"
    );
    println!(
        "{MESSAGES} hostile messages, {answered} answered as required; shim RSS {baseline} -> {after} KiB"
    );
    let reply = shim.request("ping", json!({}));
    assert_eq!(
        reply["result"],
        Value::Object(Default::default()),
        "{reply}"
    );
}
