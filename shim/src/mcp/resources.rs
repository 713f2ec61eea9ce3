//! `file://` resources: the project's indexed files, listed in pages and read whole through
//! the daemon (which serves only indexed files, confined to the root).

use amanmcp_proto::pb;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, MetaObject, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
use serde_json::json;

use super::AmanServer;
use super::budget;
use crate::link::LinkError;

/// Files per `resources/list` page.
const RESOURCE_PAGE: u32 = 200;

/// `file://` URI of an absolute path (RFC 8089; bytes outside the unreserved set encoded).
pub fn file_uri(path: &std::path::Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => {
                uri.push(*byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

/// The path of a `file://` URI, if it is one.
pub fn uri_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn mime_type(language: &str) -> &'static str {
    match language {
        "markdown" => "text/markdown",
        "json" => "application/json",
        "yaml" => "application/yaml",
        "toml" => "application/toml",
        "html" => "text/html",
        "css" => "text/css",
        "xml" => "application/xml",
        "rust" => "text/x-rust",
        "python" => "text/x-python",
        "javascript" => "text/javascript",
        "typescript" | "tsx" => "text/x-typescript",
        "go" => "text/x-go",
        "java" => "text/x-java",
        "c" => "text/x-c",
        "cpp" => "text/x-c++",
        "csharp" => "text/x-csharp",
        "ruby" => "text/x-ruby",
        "php" => "text/x-php",
        "bash" => "text/x-shellscript",
        _ => "text/plain",
    }
}

impl AmanServer {
    /// One page of `resources/list`, from the `cursor` of the previous page.
    pub(super) async fn resource_page(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, McpError> {
        let offset = match cursor {
            Some(cursor) => cursor.parse::<u32>().map_err(|_| {
                McpError::invalid_params(format!("invalid cursor {cursor:?}"), None)
            })?,
            None => 0,
        };
        let root_path = self.root_path().await;
        let root = root_path.to_string_lossy().into_owned();
        let reply = self
            .link
            .call(|mut client| {
                let root = root.clone();
                async move {
                    client
                        .list_files(pb::ListFilesRequest {
                            root,
                            offset,
                            limit: RESOURCE_PAGE,
                        })
                        .await
                        .map(|r| r.into_inner())
                }
            })
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let next = offset as u64 + reply.files.len() as u64;
        let resources = reply
            .files
            .iter()
            .map(|f| {
                Resource::new(file_uri(&root_path.join(&f.path)), f.path.clone())
                    .with_mime_type(mime_type(&f.language))
                    .with_size(f.size)
            })
            .collect();
        Ok(ListResourcesResult {
            resources,
            next_cursor: (next < reply.total).then(|| next.to_string()),
            ..ListResourcesResult::default()
        })
    }

    /// The template that names any file of the project.
    pub(super) async fn resource_templates(&self) -> ListResourceTemplatesResult {
        let template = format!("{}/{{path}}", file_uri(&self.root_path().await));
        ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(template, "project-file")
                .with_title("A file of this project")
                .with_description("Any indexed file of the project, by its relative path."),
        ])
    }

    /// `resources/read` of `uri`: the whole file, or "not found" with the daemon's reason.
    pub(super) async fn read_uri(&self, uri: String) -> Result<ReadResourceResponse, McpError> {
        let not_found = |why: String| McpError::resource_not_found(why, Some(json!({"uri": uri})));
        let Some(path) = uri_path(&uri) else {
            return Err(not_found(format!(
                "not a file:// URI of this project: {uri}"
            )));
        };
        let lookup = pb::LookupRequest {
            root: self.root().await,
            path: Some(path),
            whole_file: true,
            ..Default::default()
        };
        let reply = self
            .link
            .call(|mut client| {
                let lookup = lookup.clone();
                async move { client.lookup(lookup).await.map(|r| r.into_inner()) }
            })
            .await;
        match reply {
            Ok(reply) => match reply.matches.into_iter().next() {
                Some(found) => {
                    let (text, meta) = fit_resource(found.code, &found.path, found.total_lines);
                    let contents = ResourceContents::TextResourceContents {
                        uri: uri.clone(),
                        mime_type: Some(mime_type(&found.language).to_string()),
                        text,
                        meta,
                    };
                    Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
                        vec![contents],
                    )))
                }
                None => Err(not_found(format!("no such resource: {uri}"))),
            },
            Err(LinkError::Rejected(why)) => Err(not_found(why)),
            Err(e) => Err(McpError::internal_error(e.to_string(), None)),
        }
    }
}

/// A file read as a resource is cut to this many tokens (bytes / 4), at a line end: well
/// under the ~25,000 a client accepts from one answer.
pub const RESOURCE_MAX_TOKENS: usize = 20_000;

/// `code` within [`RESOURCE_MAX_TOKENS`]: cut at a line end, with a last line saying where it
/// was cut and how to read on, and `_meta` saying the same for programs
/// (`truncated`, `next_start_line`, `total_lines`).
fn fit_resource(code: String, path: &str, total_lines: u32) -> (String, Option<MetaObject>) {
    if budget::tokens(&code) <= RESOURCE_MAX_TOKENS {
        return (code, None);
    }
    let (kept, lines) = budget::cut_at_lines(&code, RESOURCE_MAX_TOKENS - 100);
    let next = lines as u32 + 1;
    let mut text = kept.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "[amanmcp: cut after line {lines} of {total_lines} to stay under {RESOURCE_MAX_TOKENS} \
         tokens; read on with the `lookup` tool: path \"{path}\", start_line {next}]\n"
    ));
    let mut meta = MetaObject::new();
    meta.0.insert("truncated".into(), json!(true));
    meta.0.insert("next_start_line".into(), json!(next));
    meta.0.insert("total_lines".into(), json!(total_lines));
    (text, Some(meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_files_are_cut_at_a_line_end_and_say_how_to_read_on() {
        let small = "fn main() {}\n".to_string();
        assert_eq!(fit_resource(small.clone(), "a.rs", 1), (small, None));
        let line = "x".repeat(99) + "\n";
        let big = line.repeat(2_000);
        let (text, meta) = fit_resource(big, "big.txt", 2_000);
        assert!(
            budget::tokens(&text) <= RESOURCE_MAX_TOKENS,
            "{}",
            text.len()
        );
        let body: Vec<&str> = text.lines().collect();
        assert!(body[..body.len() - 1].iter().all(|l| *l == line.trim_end()));
        let kept = body.len() - 1;
        assert!(
            body.last().unwrap().contains(&format!(
                "cut after line {kept} of 2000 to stay under 20000 tokens; read on with the `lookup` tool: path \"big.txt\", start_line {}",
                kept + 1
            )),
            "{}",
            body.last().unwrap()
        );
        let meta = meta.unwrap();
        assert_eq!(meta.0["next_start_line"], json!(kept + 1));
        assert_eq!(meta.0["truncated"], json!(true));
    }

    #[test]
    fn file_uris_round_trip() {
        for path in ["/tmp/a b/c#d.rs", "/home/x/ünï.py", "/plain/path.rs"] {
            let uri = file_uri(std::path::Path::new(path));
            assert!(uri.starts_with("file:///"), "{uri}");
            assert!(!uri.contains(' ') && !uri.contains('#'), "{uri}");
            assert_eq!(uri_path(&uri).as_deref(), Some(path));
        }
        assert_eq!(uri_path("file://localhost/x/y").as_deref(), Some("/x/y"));
        assert_eq!(uri_path("https://example.com/x"), None);
        assert_eq!(uri_path("file://relative"), None);
        assert_eq!(uri_path("file:///bad%zz"), None);
    }
}
