//! Edits in place: the `amanmcp` entry set inside a JSON (with comments, as VS Code, Zed and
//! OpenCode accept) or TOML file, every other byte (order, comments, formatting) kept.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

/// The server's name in every configuration.
pub const NAME: &str = "amanmcp";

/// `text` (a JSON object, comments and trailing commas allowed; empty: a new file) with
/// `NAME` set to `entry` inside the object at `keys` (created when missing). `Err`: why the
/// file cannot be edited. Unchanged text when the entry is already there as given.
pub fn json(text: &str, keys: &[&str], entry: &Value) -> Result<String, String> {
    let source = if text.trim().is_empty() { "{}\n" } else { text };
    let root = CstRootNode::parse(source, &ParseOptions::default()).map_err(|e| e.to_string())?;
    let mut object: CstObject = match root.value() {
        None => root.object_value_or_set(),
        Some(_) => root.object_value().ok_or("not an object")?,
    };
    for key in keys {
        object = object
            .object_value_or_create(key)
            .ok_or_else(|| format!("`{key}` is not an object"))?;
    }
    match object.get(NAME) {
        Some(prop) if prop.value().and_then(|v| v.to_serde_value()).as_ref() == Some(entry) => {
            return Ok(text.to_string());
        }
        Some(prop) => prop.set_value(input(entry)),
        None => {
            object.append(NAME, input(entry));
        }
    }
    let mut out = root.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// `value` as [`json`] writes it (fields in the usual order).
pub fn shown(value: &Value) -> String {
    let root = CstRootNode::parse("null", &ParseOptions::default()).expect("null parses");
    root.set_value(input(value));
    root.to_string()
}

fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        // In the order people write them: `type`, `command`, `args`, then the rest.
        Value::Object(map) => {
            let mut fields: Vec<(&String, &Value)> = map.iter().collect();
            let rank = |k: &str| ["type", "command", "args"].iter().position(|f| *f == k);
            fields.sort_by_key(|(k, _)| rank(k).unwrap_or(usize::MAX));
            CstInputValue::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.clone(), input(v)))
                    .collect(),
            )
        }
    }
}

/// `text` (TOML) with `NAME` set to `command` and `args` in the table at `keys`
/// (`[mcp_servers.amanmcp]`; tables created when missing), everything else (comments
/// included) kept, as [`json`] does for JSON.
pub fn toml(text: &str, keys: &[&str], command: &str, args: &[&str]) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    let mut servers = doc.as_table_mut();
    for key in keys {
        servers = servers
            .entry(key)
            .or_insert_with(|| {
                let mut table = toml_edit::Table::new();
                table.set_implicit(true);
                toml_edit::Item::Table(table)
            })
            .as_table_mut()
            .ok_or_else(|| format!("`{key}` is not a table"))?;
    }
    let same = servers
        .get(NAME)
        .and_then(|server| server.as_table())
        .is_some_and(|server| {
            server.get("command").and_then(|c| c.as_str()) == Some(command)
                && server
                    .get("args")
                    .and_then(|a| a.as_array())
                    .is_some_and(|a| {
                        a.iter()
                            .map(|v| v.as_str())
                            .eq(args.iter().map(|s| Some(*s)))
                    })
        });
    if same {
        return Ok(text.to_string());
    }
    let mut server = toml_edit::Table::new();
    server["command"] = toml_edit::value(command);
    server["args"] = toml_edit::value(args.iter().copied().collect::<toml_edit::Array>());
    servers.insert(NAME, toml_edit::Item::Table(server));
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_order_and_formatting_are_kept() {
        let text = "{\n  // my servers\n  \"zeta\": 1,\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}, // keep\n  },\n  \"alpha\": [1,2],\n}\n";
        let entry = json!({"command": "amanmcp", "args": ["serve"]});
        let out = json(text, &["mcpServers"], &entry).unwrap();
        assert!(
            out.starts_with("{\n  // my servers\n  \"zeta\": 1,\n"),
            "{out}"
        );
        assert!(
            out.contains("\"other\": {\"command\": \"x\"}, // keep"),
            "{out}"
        );
        assert!(out.contains("\"alpha\": [1,2],\n}"), "{out}");
        assert!(out.find("zeta").unwrap() < out.find("alpha").unwrap());
        let root = CstRootNode::parse(&out, &ParseOptions::default()).unwrap();
        let value = root.value().unwrap().to_serde_value().unwrap();
        assert_eq!(value["mcpServers"][NAME], entry);
        // Set again: the very same text.
        assert_eq!(json(&out, &["mcpServers"], &entry).unwrap(), out);
        // A changed entry replaces the old one in place.
        let moved = json!({"command": "/opt/amanmcp", "args": ["serve"]});
        let again = json(&out, &["mcpServers"], &moved).unwrap();
        assert_eq!(again.matches("\"amanmcp\":").count(), 1, "{again}");
        assert!(again.contains("/opt/amanmcp"), "{again}");
    }

    #[test]
    fn new_files_nested_keys_and_what_cannot_be_edited() {
        let entry = json!({"command": "amanmcp"});
        let out = json("", &["mcp"], &entry).unwrap();
        let parsed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed["mcp"][NAME], entry);
        assert!(
            json("[1]", &["mcp"], &entry)
                .unwrap_err()
                .contains("not an object")
        );
        assert!(
            json("{\"mcp\": 3}", &["mcp"], &entry)
                .unwrap_err()
                .contains("`mcp`")
        );
        assert!(json("{ nope", &["mcp"], &entry).is_err());
    }

    #[test]
    fn toml_keeps_comments_and_other_servers() {
        let text = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let out = toml(text, &["mcp_servers"], "/b/amanmcp", &["serve"]).unwrap();
        assert!(out.starts_with("# my settings\nmodel = \"o3\""), "{out}");
        let doc: toml_edit::DocumentMut = out.parse().unwrap();
        assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        assert_eq!(
            doc["mcp_servers"][NAME]["command"].as_str(),
            Some("/b/amanmcp")
        );
        assert_eq!(
            toml(&out, &["mcp_servers"], "/b/amanmcp", &["serve"]).unwrap(),
            out
        );
        assert!(toml("[[broken", &["mcp_servers"], "a", &[]).is_err());
    }
}
