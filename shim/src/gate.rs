//! The gate in front of rmcp: every message from the client is checked here, so each request
//! gets an answer with its own id, whatever it holds. rmcp alone drops messages it cannot
//! read (bad UTF-8, deep nesting), answers some without their id, and ends the session on a
//! notification sent before `initialize`.
//!
//! Rules (JSON-RPC 2.0 and MCP 2025-11-25):
//! - unparsable JSON, bad UTF-8 or nesting deeper than 128: `-32700`, with the id if it can be
//!   read from the text;
//! - not an object, an id that is neither a string nor an integer, a `jsonrpc` member that
//!   is not `"2.0"`: `-32600`;
//! - `params` that is not an object, or a parameter of the wrong type for the methods whose
//!   parameters rmcp types strictly (`_meta` on every method, `cursor` on the list methods):
//!   `-32602` naming the parameter;
//! - an id is echoed as the client wrote it, even a number no 64-bit type holds.
//! - before `initialize`: a notification or a response is dropped, `ping` is answered, any
//!   other request gets `-32002`.

use serde_json::{Map, Value, json};

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Hand it to rmcp unchanged.
    Forward,
    /// Answer the client with this message instead.
    Reply(Value),
    /// Answer with this text (when the id must be echoed exactly as written, which a JSON
    /// value would normalize: `2e3` would become `2000.0`).
    ReplyText(String),
    /// Drop it (a notification or response that may not arrive yet), saying why in the log.
    Drop(&'static str),
}

/// Longest message accepted, in bytes. Tool arguments have their own, smaller limits.
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// A JSON-RPC error reply.
pub fn error_reply(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// The reply to a message over [`MAX_MESSAGE_BYTES`] (its id is not read).
pub fn too_large_reply() -> Value {
    error_reply(
        Value::Null,
        -32600,
        format!("message over {MAX_MESSAGE_BYTES} bytes: not read"),
    )
}

/// Tracks the session's state across messages.
#[derive(Debug, Default)]
pub struct Gate {
    initialize_seen: bool,
}

impl Gate {
    /// Judge one line (without its line ending).
    pub fn check(&mut self, line: &[u8]) -> Verdict {
        let message: Value = match serde_json::from_slice(line) {
            Ok(message) => message,
            Err(e) => {
                let reason = if std::str::from_utf8(line).is_err() {
                    "invalid UTF-8 in the message".to_string()
                } else {
                    format!("Parse error: {e}")
                };
                let id = readable_id(line);
                if id.is_null()
                    && let Some(raw) = raw_number_id(line)
                {
                    return Verdict::ReplyText(raw_error(raw, -32700, &reason));
                }
                return Verdict::Reply(error_reply(id, -32700, reason));
            }
        };
        let Value::Object(message) = message else {
            return Verdict::Reply(error_reply(
                Value::Null,
                -32600,
                "a message must be a JSON-RPC object (batches are not part of MCP)",
            ));
        };
        let id = message.get("id").cloned();
        if let Some(id) = &id
            && !(id.is_string() || id.is_i64() || id.is_u64())
        {
            let message = "`id` must be a string or an integer";
            return match raw_number_id(line) {
                Some(raw) => Verdict::ReplyText(raw_error(raw, -32600, message)),
                None => Verdict::Reply(error_reply(id.clone(), -32600, message)),
            };
        }
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            let problem = "`jsonrpc` must be \"2.0\"";
            // Without an id, the id could not be told: null, as JSON-RPC says.
            return Verdict::Reply(error_reply(id.unwrap_or(Value::Null), -32600, problem));
        }
        let Some(method) = message.get("method") else {
            // A response to one of our requests (roots/list).
            return if self.initialize_seen {
                Verdict::Forward
            } else {
                Verdict::Drop("a response before initialize")
            };
        };
        let Some(method) = method.as_str() else {
            return match id {
                Some(id) => Verdict::Reply(error_reply(id, -32600, "`method` must be a string")),
                None => Verdict::Drop("a notification whose method is not a string"),
            };
        };
        let Some(id) = id else {
            return if self.initialize_seen {
                Verdict::Forward
            } else {
                Verdict::Drop("a notification before initialize")
            };
        };
        if let Err(problem) = check_params(method, message.get("params")) {
            return Verdict::Reply(error_reply(id, -32602, problem));
        }
        if !self.initialize_seen {
            match method {
                "initialize" => self.initialize_seen = true,
                "ping" => return Verdict::Reply(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
                _ => {
                    return Verdict::Reply(error_reply(
                        id,
                        -32002,
                        format!("`{method}` before `initialize`: initialize the session first"),
                    ));
                }
            }
        }
        Verdict::Forward
    }
}

/// The id of a message that did not parse, if the text shows one plainly.
fn readable_id(line: &[u8]) -> Value {
    let text = String::from_utf8_lossy(line);
    let Some(rest) = top_level_id(&text) else {
        return Value::Null;
    };
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    match stream.next() {
        Some(Ok(id)) if id.is_string() || id.is_i64() || id.is_u64() => id,
        _ => Value::Null,
    }
}

/// An error reply carrying `raw`, a numeric id, exactly as the client wrote it.
fn raw_error(raw: &str, code: i64, message: &str) -> String {
    let message = Value::String(message.to_string());
    format!(r#"{{"jsonrpc":"2.0","id":{raw},"error":{{"code":{code},"message":{message}}}}}"#)
}

/// The text of a numeric top-level id exactly as the client wrote it (`-0.0`, `2e3`).
fn raw_number_id(line: &[u8]) -> Option<&str> {
    let rest = top_level_id(std::str::from_utf8(line).ok()?)?;
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
        .unwrap_or(rest.len());
    let raw = &rest[..end];
    is_json_number(raw).then_some(raw)
}

/// Whether `text` is a number as JSON writes one (`-0.5e+3`, not `-`, `1.`, `+1` or `01`).
fn is_json_number(text: &str) -> bool {
    let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let rest = text.strip_prefix('-').unwrap_or(text);
    let int = digits(rest);
    if int == 0 || (int > 1 && rest.starts_with('0')) {
        return false;
    }
    let mut rest = &rest[int..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let n = digits(fraction);
        if n == 0 {
            return false;
        }
        rest = &fraction[n..];
    }
    if let Some(exponent) = rest.strip_prefix(['e', 'E']) {
        let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        let n = digits(exponent);
        if n == 0 {
            return false;
        }
        rest = &exponent[n..];
    }
    rest.is_empty()
}

/// The text from the top-level `"id"` member's value on, found without parsing (the text
/// may not parse): a key `"id"` directly inside the outer object, never one nested deeper
/// or a string value that happens to read `"id"`.
fn top_level_id(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                if depth == 1
                    && text[i..].starts_with("\"id\"")
                    && let Some(rest) = text[i + 4..].trim_start().strip_prefix(':')
                {
                    return Some(rest.trim_start());
                }
                in_string = true;
            }
            _ => {}
        }
    }
    None
}

/// `params` must be an object; the parameters rmcp types strictly must have their types.
fn check_params(method: &str, params: Option<&Value>) -> Result<(), String> {
    let params = match params {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(params)) => params,
        Some(_) => return Err("`params` must be an object".into()),
    };
    Kind::Object.check(params, "_meta")?;
    let rules: &[(&str, Kind)] = match method {
        "tools/call" | "prompts/get" => &[("name", Kind::String), ("arguments", Kind::Object)],
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            &[("uri", Kind::String)]
        }
        "logging/setLevel" => &[("level", Kind::String)],
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            &[("cursor", Kind::String)]
        }
        "initialize" => &[
            ("protocolVersion", Kind::String),
            ("capabilities", Kind::Object),
            ("clientInfo", Kind::Object),
        ],
        _ => &[],
    };
    for (name, kind) in rules {
        kind.check(params, name)?;
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Kind {
    String,
    Object,
}

impl Kind {
    /// An absent or null parameter passes: rmcp reports missing required ones itself.
    fn check(self, params: &Map<String, Value>, name: &str) -> Result<(), String> {
        let ok = match params.get(name) {
            None | Some(Value::Null) => true,
            Some(value) => match self {
                Kind::String => value.is_string(),
                Kind::Object => value.is_object(),
            },
        };
        if ok {
            Ok(())
        } else {
            let what = match self {
                Kind::String => "a string",
                Kind::Object => "an object",
            };
            Err(format!("parameter `{name}` must be {what}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started() -> Gate {
        let mut gate = Gate::default();
        let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
        assert_eq!(gate.check(init), Verdict::Forward);
        gate
    }

    fn code(verdict: Verdict) -> (i64, Value) {
        match verdict {
            Verdict::Reply(reply) => (
                reply["error"]["code"].as_i64().unwrap(),
                reply["id"].clone(),
            ),
            other => panic!("expected an error reply, got {other:?}"),
        }
    }

    #[test]
    fn before_initialize_notifications_are_dropped_and_requests_refused() {
        let mut gate = Gate::default();
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(matches!(gate.check(note), Verdict::Drop(_)));
        let list = br#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#;
        assert_eq!(code(gate.check(list)), (-32002, json!("a")));
        let ping = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        assert_eq!(
            gate.check(ping),
            Verdict::Reply(json!({"jsonrpc": "2.0", "id": 7, "result": {}}))
        );
        let mut gate = started();
        assert_eq!(gate.check(note), Verdict::Forward);
        assert_eq!(gate.check(list), Verdict::Forward);
    }

    #[test]
    fn unreadable_messages_get_a_parse_error_with_their_id_when_it_shows() {
        let mut gate = started();
        let mut bad_utf8 = br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"#.to_vec();
        bad_utf8.extend_from_slice(&[0xff, 0xfe]);
        bad_utf8.extend_from_slice(br#""}}}"#);
        assert_eq!(code(gate.check(&bad_utf8)), (-32700, json!(12)));
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":"deep","method":"ping","params":{{"x":{}{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(code(gate.check(deep.as_bytes())), (-32700, json!("deep")));
        assert_eq!(code(gate.check(b"{oops")), (-32700, Value::Null));
        // The id is the outer object's, not one nested in params or a value reading "id".
        let mut nested = br#"{"jsonrpc":"2.0","method":"id","params":{"id":5,"q":""#.to_vec();
        nested.extend_from_slice(&[0xff]);
        nested.extend_from_slice(br#""},"id":9}"#);
        assert_eq!(code(gate.check(&nested)), (-32700, json!(9)));
    }

    #[test]
    fn every_readable_id_is_answered_as_written() {
        let mut gate = started();
        for jsonrpc in ["2", "\"2.00\"", "\"1.0\"", "null"] {
            let line = format!(r#"{{"jsonrpc":{jsonrpc},"id":11,"method":"ping"}}"#);
            assert_eq!(
                code(gate.check(line.as_bytes())),
                (-32600, json!(11)),
                "{line}"
            );
        }
        let missing = br#"{"id":"m","method":"tools/list"}"#;
        assert_eq!(code(gate.check(missing)), (-32600, json!("m")));
        for params in [
            r#"{"_meta":"x"}"#,
            r#"{"_meta":5}"#,
            r#"{"cursor":1e308}"#,
            r#"{"cursor":{"a":1}}"#,
        ] {
            for method in ["tools/list", "prompts/list", "resources/templates/list"] {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":"p","method":"{method}","params":{params}}}"#
                );
                assert_eq!(
                    code(gate.check(line.as_bytes())),
                    (-32602, json!("p")),
                    "{line}"
                );
            }
        }
        let astral = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"𝄞"}}"#;
        assert_eq!(gate.check(astral.as_bytes()), Verdict::Forward);
        // Numbers no 64-bit type holds: echoed exactly, as the text wrote them.
        let huge = br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#;
        assert_eq!(
            gate.check(huge),
            Verdict::ReplyText(
                r#"{"jsonrpc":"2.0","id":1e400,"error":{"code":-32700,"message":"Parse error: number out of range at line 1 column 27"}}"#
                    .into()
            )
        );
        let wide = br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#;
        let Verdict::ReplyText(text) = gate.check(wide) else {
            panic!("a raw reply");
        };
        assert!(
            text.contains(r#""id":123456789012345678901234567890,"#),
            "{text}"
        );
        for bad in ["-", "1.", "+1", "01", "1e", "--1"] {
            assert!(!is_json_number(bad), "{bad}");
        }
        for good in ["0", "-0.0", "2e3", "1E+30", "12.5e-3"] {
            assert!(is_json_number(good), "{good}");
        }
    }

    /// A small deterministic generator for the seeded fuzz below.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n.max(1)
        }
    }

    /// Seeded fuzz (the stable stand-in for a `cargo fuzz` target, which needs a nightly
    /// toolchain CI does not have): 200,000 mutations of real messages. The gate never
    /// panics, and every answer it gives is a JSON-RPC error (or ping's result) with an id.
    #[test]
    fn mutated_messages_never_panic_and_every_answer_is_well_formed() {
        let seeds: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x","limit":5}}}"#,
            br#"{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"file:///tmp/x.rs"}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":{"roots":[{"uri":"file:///p"}]}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"explain-symbol","arguments":{"symbol":"A.b"}}}"#,
        ];
        let noise: &[&[u8]] = &[
            b"\xff",
            b"\"",
            b"{",
            b"}",
            b"[",
            b"]",
            b",",
            b":",
            b"-0.0",
            b"1e999",
            b"null",
            b"\\u0000",
            b"\\ud800",
            b"[[[[[[[[",
            b"\"id\":",
            b"\xc3\x28",
            b" ",
        ];
        let mut rng = Lcg(0xF0F0);
        for round in 0..200_000 {
            let mut gate = if round % 2 == 0 {
                started()
            } else {
                Gate::default()
            };
            let mut line = seeds[rng.below(seeds.len())].to_vec();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(line.len() + 1);
                match rng.below(4) {
                    0 => line.truncate(at),
                    1 => {
                        let piece = noise[rng.below(noise.len())];
                        line.splice(at..at, piece.iter().copied());
                    }
                    2 if at < line.len() => line[at] = rng.below(256) as u8,
                    _ => {
                        let end = (at + rng.below(8)).min(line.len());
                        line.drain(at..end);
                    }
                }
            }
            let answer = match gate.check(&line) {
                Verdict::Reply(reply) => reply,
                Verdict::ReplyText(text) => match serde_json::from_str(&text) {
                    Ok(reply) => reply,
                    // An id no f64 holds (`1e999`) is JSON that serde_json will not read.
                    Err(_) => {
                        let raw = text
                            .strip_prefix(r#"{"jsonrpc":"2.0","id":"#)
                            .and_then(|rest| rest.split(',').next())
                            .unwrap_or_default();
                        assert!(is_json_number(raw), "{text}");
                        continue;
                    }
                },
                Verdict::Forward | Verdict::Drop(_) => continue,
            };
            assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
            assert!(answer.get("id").is_some(), "{answer}");
            let code = answer["error"]["code"].as_i64();
            assert!(
                matches!(code, Some(-32700 | -32600 | -32602 | -32002))
                    || answer["result"] == json!({}),
                "{answer}"
            );
        }
    }

    #[test]
    fn wrong_shapes_get_their_codes_and_ids() {
        let mut gate = started();
        assert_eq!(code(gate.check(b"[1,2]")), (-32600, Value::Null));
        assert_eq!(code(gate.check(b"42")), (-32600, Value::Null));
        for raw in ["-0.0", "2e3", "1.50"] {
            let line =
                format!(r#"{{"jsonrpc":"2.0","method":"ping","params":{{"id":1}},"id":{raw}}}"#);
            match gate.check(line.as_bytes()) {
                Verdict::ReplyText(text) => {
                    assert!(text.contains(&format!(r#""id":{raw},"#)), "{text}");
                    let reply: Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(reply["error"]["code"], -32600);
                }
                other => panic!("{raw}: {other:?}"),
            }
        }
        for (params, id) in [
            (r#"[1]"#, 1),
            (r#"{"name":5}"#, 2),
            (r#"{"name":"search","arguments":"q"}"#, 3),
        ] {
            let line =
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#);
            assert_eq!(
                code(gate.check(line.as_bytes())),
                (-32602, json!(id)),
                "{line}"
            );
        }
        let uri = br#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":["x"]}}"#;
        assert_eq!(code(gate.check(uri)), (-32602, json!(4)));
        let fine = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}"#;
        assert_eq!(gate.check(fine), Verdict::Forward);
    }
}
