//! Tool arguments: each read with its type and range checked, and a message that names the
//! argument when it is wrong (a tool error the model can act on, not a protocol error).

use rmcp::model::JsonObject;
use serde_json::Value;

use crate::link::LinkError;

/// A tool call that failed in a way the model should see.
#[derive(Debug)]
pub enum ToolError {
    /// A bad argument: names the parameter and the problem.
    Argument(String),
    /// The daemon could not serve the call.
    Link(LinkError),
}

impl From<LinkError> for ToolError {
    fn from(e: LinkError) -> Self {
        ToolError::Link(e)
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Longest string argument, in bytes: `query` 8 KiB, `snippet` 32 KiB, others 4 KiB.
/// Checked here, before anything reaches the daemon.
pub fn max_string_bytes(name: &str) -> usize {
    match name {
        "query" => 8 << 10,
        "snippet" => 32 << 10,
        _ => 4 << 10,
    }
}

fn within_limit(name: &str, value: &str) -> Result<(), ToolError> {
    let max = max_string_bytes(name);
    if value.len() > max {
        return Err(ToolError::Argument(format!(
            "argument `{name}` is {} bytes; at most {max} are accepted",
            value.len()
        )));
    }
    Ok(())
}

pub fn required_string(args: &JsonObject, name: &str) -> Result<String, ToolError> {
    if let Some(Value::String(s)) = args.get(name) {
        within_limit(name, s)?;
    }
    match args.get(name) {
        None | Some(Value::Null) => Err(ToolError::Argument(format!(
            "missing required argument `{name}` (a non-empty string)"
        ))),
        Some(Value::String(s)) if s.trim().is_empty() => Err(ToolError::Argument(format!(
            "argument `{name}` must not be empty"
        ))),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(ToolError::Argument(format!(
            "argument `{name}` must be a string, got {}",
            type_name(other)
        ))),
    }
}

pub fn optional_string(args: &JsonObject, name: &str) -> Result<Option<String>, ToolError> {
    if let Some(Value::String(s)) = args.get(name) {
        within_limit(name, s)?;
    }
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ToolError::Argument(format!(
            "argument `{name}` must be a string, got {}",
            type_name(other)
        ))),
    }
}

/// `path` (a file or directory: never a pattern) and `in_path` (a glob), as every tool
/// names them: `(path, glob)`.
pub fn optional_scope(args: &JsonObject) -> Result<(Option<String>, Option<String>), ToolError> {
    let path = optional_string(args, "path")?;
    if let Some(path) = &path
        && path.contains(['*', '?', '[', '{'])
    {
        return Err(ToolError::Argument(format!(
            "argument `path` names a file or directory, not a pattern; for the glob {path:?} use `in_path`"
        )));
    }
    Ok((path, optional_string(args, "in_path")?))
}

pub fn optional_integer(
    args: &JsonObject,
    name: &str,
    min: u64,
    max: u64,
) -> Result<Option<u64>, ToolError> {
    let value = match args.get(name) {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => value,
    };
    let number = value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0)
            .map(|f| f as i64)
    });
    match number {
        Some(n) if n >= min as i64 && n <= max as i64 => Ok(Some(n as u64)),
        Some(n) => Err(ToolError::Argument(format!(
            "argument `{name}` must be between {min} and {max}, got {n}"
        ))),
        None => Err(ToolError::Argument(format!(
            "argument `{name}` must be an integer, got {}",
            match value {
                Value::Number(n) => n.to_string(),
                other => type_name(other).to_string(),
            }
        ))),
    }
}

/// Most entries of `projects`.
const MAX_PROJECTS: usize = 64;

/// The `projects` argument: `["all"]` or project roots (absent: none).
pub fn optional_projects(args: &JsonObject) -> Result<Vec<String>, ToolError> {
    let bad = || {
        ToolError::Argument(format!(
            "argument `projects` must be an array of at most {MAX_PROJECTS} strings: [\"all\"] or project roots"
        ))
    };
    match args.get("projects") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) if items.len() <= MAX_PROJECTS => items
            .iter()
            .map(|item| match item {
                Value::String(s) if !s.trim().is_empty() => {
                    within_limit("projects", s)?;
                    Ok(s.clone())
                }
                _ => Err(bad()),
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// The `mode` argument as given (`""` when absent). Which modes exist is the daemon's rule,
/// checked there once; its refusal comes back naming `mode`.
pub fn optional_mode(args: &JsonObject) -> Result<String, ToolError> {
    Ok(optional_string(args, "mode")?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Seeded fuzz of argument parsing (the stable stand-in for a `cargo fuzz` target): any
    /// JSON value in any argument is either accepted or refused with a message naming that
    /// argument; nothing panics.
    #[test]
    fn any_value_is_accepted_or_refused_by_name() {
        let values = [
            json!(null),
            json!(true),
            json!(0),
            json!(-1),
            json!(1.5),
            json!(-0.0),
            json!(1e300),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(""),
            json!("   "),
            json!("x".repeat(40_000)),
            json!("\u{0}\u{feff}é"),
            json!([]),
            json!([1, "a"]),
            json!({}),
            json!({"a": {"b": []}}),
        ];
        let mut state = 0x1234_5678u64;
        for _ in 0..20_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let value = values[(state >> 33) as usize % values.len()].clone();
            let name = ["query", "path", "limit", "mode", "snippet"][(state >> 20) as usize % 5];
            let mut args = JsonObject::new();
            args.insert(name.to_string(), value);
            let outcomes = [
                required_string(&args, name).map(|_| ()),
                optional_string(&args, name).map(|_| ()),
                optional_integer(&args, name, 1, 100).map(|_| ()),
                optional_mode(&args).map(|_| ()),
            ];
            for outcome in outcomes {
                match outcome {
                    Ok(()) => {}
                    Err(ToolError::Argument(message)) => {
                        assert!(
                            message.contains(name) || message.contains("mode"),
                            "{message}"
                        )
                    }
                    Err(other) => panic!("{other:?}"),
                }
            }
        }
    }
}
