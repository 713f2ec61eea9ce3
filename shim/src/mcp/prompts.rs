//! Prompt templates: ready-made requests that teach a model to use the tools together.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Prompt, PromptArgument,
    PromptMessage, Role,
};
use serde_json::Value;

/// The prompt templates this server offers.
pub fn prompts() -> Vec<Prompt> {
    let symbol = || {
        vec![
            PromptArgument::new("symbol")
                .with_description(
                    "A function, method, class or other symbol, e.g. `Session.request`.",
                )
                .with_required(true),
        ]
    };
    vec![
        Prompt::new(
            "explain-symbol",
            Some("Explain what a function, method or type does, with its definition and uses."),
            Some(symbol()),
        ),
        Prompt::new(
            "find-usages",
            Some("List every place a symbol is used, as path:line."),
            Some(symbol()),
        ),
        Prompt::new(
            "review-change",
            Some("Review a change (a diff or a description) against similar code in the project."),
            Some(vec![
                PromptArgument::new("change")
                    .with_description("The diff or description of the change.")
                    .with_required(true),
            ]),
        ),
    ]
}

/// `prompts/get`: the prompt's text with its arguments filled in.
pub fn get(request: GetPromptRequestParams) -> Result<GetPromptResponse, McpError> {
    let args = request.arguments.unwrap_or_default();
    let arg = |name: &str| -> Result<String, McpError> {
        match args.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            _ => Err(McpError::invalid_params(
                format!("prompt `{}` needs the argument `{name}`", request.name),
                None,
            )),
        }
    };
    let (description, text) = match request.name.as_str() {
        "explain-symbol" => {
            let symbol = arg("symbol")?;
            (
                format!("Explain {symbol}"),
                format!(
                    "Explain `{symbol}` in this project. First call the `lookup` tool with symbol \"{symbol}\" to read its definition (and its enclosing type). Then describe what it does, its inputs and outputs, the errors it can produce, and anything surprising. Call `search` with \"{symbol}\" to show two or three places that use it, citing path:line."
                ),
            )
        }
        "find-usages" => {
            let symbol = arg("symbol")?;
            (
                format!("Find usages of {symbol}"),
                format!(
                    "Find every place in this project that uses `{symbol}`. Call the `usages` tool with name \"{symbol}\": it lists the definitions first, then every line using the name with its enclosing symbol (follow `next_offset` for more; narrow with `path`). Read the uses that matter with `lookup`, and list the call sites as path:line with one line on what each does with it."
                ),
            )
        }
        "review-change" => {
            let change = arg("change")?;
            (
                "Review a change against similar code".to_string(),
                format!(
                    "Review this change for consistency with the rest of the project:\n\n{change}\n\nUse `search` with the identifiers and phrases it touches to find similar code, and `lookup` to read the definitions it calls. Point out duplicated logic, conventions it breaks, and callers it may affect, citing path:line."
                ),
            )
        }
        other => {
            return Err(McpError::invalid_params(
                format!(
                    "unknown prompt `{other}`; available: explain-symbol, find-usages, review-change"
                ),
                None,
            ));
        }
    };
    Ok(GetPromptResponse::Complete(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(description),
    ))
}
