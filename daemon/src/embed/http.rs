//! Embedding servers over HTTP: Ollama (`POST /api/embed`) and OpenAI-compatible
//! (`POST /v1/embeddings`: MLX servers, LM Studio, llama.cpp, vLLM, OpenAI).
//!
//! Requests are batched, time out, and are retried with backoff when the server is
//! unreachable or answers 5xx/429. A missing model is reported as such, not retried.

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};

use super::{EmbedConfig, EmbedError, Embedder, Purpose, normalize};

/// Which API the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpApi {
    /// `POST {url}/api/embed` with `{"model", "input": [..]}` -> `{"embeddings": [[..]]}`.
    Ollama,
    /// `POST {url}/embeddings` (url ending in `/v1`) with `{"model", "input": [..]}` ->
    /// `{"data": [{"index", "embedding"}]}`.
    OpenAi,
}

/// Attempts per request (the first try and the retries).
const ATTEMPTS: u32 = 3;
/// Backoff before the first retry; doubles each time.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// An embedding server.
pub struct HttpEmbedder {
    api: HttpApi,
    base: String,
    endpoint: String,
    model: String,
    api_key: Option<String>,
    requested_dimensions: Option<usize>,
    batch_size: usize,
    client: reqwest::blocking::Client,
    dimensions: OnceLock<usize>,
}

impl HttpEmbedder {
    /// A client for `config` (URL and model defaulted per API).
    pub fn new(api: HttpApi, config: &EmbedConfig) -> Result<HttpEmbedder, EmbedError> {
        let base = config
            .url
            .clone()
            .unwrap_or_else(|| match api {
                HttpApi::Ollama => "http://127.0.0.1:11434".into(),
                HttpApi::OpenAi => "http://127.0.0.1:8080/v1".into(),
            })
            .trim_end_matches('/')
            .to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(EmbedError::Config(format!(
                "AMANMCP_EMBED_URL={base:?} must start with http:// or https://"
            )));
        }
        let model = match (&config.model, api) {
            (Some(model), _) => model.clone(),
            (None, HttpApi::Ollama) => "nomic-embed-text".into(),
            (None, HttpApi::OpenAi) => {
                return Err(EmbedError::Config(
                    "AMANMCP_EMBEDDER=openai needs AMANMCP_EMBED_MODEL (the model name the server knows)"
                        .into(),
                ));
            }
        };
        let endpoint = match api {
            HttpApi::Ollama => format!("{base}/api/embed"),
            HttpApi::OpenAi if base.ends_with("/v1") => format!("{base}/embeddings"),
            HttpApi::OpenAi => format!("{base}/v1/embeddings"),
        };
        let client = reqwest::blocking::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| EmbedError::Config(format!("HTTP client: {e}")))?;
        Ok(HttpEmbedder {
            api,
            base,
            endpoint,
            model,
            api_key: config.api_key.clone(),
            requested_dimensions: config.dimensions,
            batch_size: config.batch_size.unwrap_or(32),
            client,
            dimensions: OnceLock::new(),
        })
    }

    fn request_body(&self, texts: &[String]) -> Value {
        let mut body = json!({"model": self.model, "input": texts});
        match self.api {
            HttpApi::Ollama => body["truncate"] = json!(true),
            HttpApi::OpenAi => {
                body["encoding_format"] = json!("float");
                if let Some(dimensions) = self.requested_dimensions {
                    body["dimensions"] = json!(dimensions);
                }
            }
        }
        body
    }

    /// One attempt: `Err((error, retry))`.
    fn attempt(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, (EmbedError, bool)> {
        let mut request = self
            .client
            .post(&self.endpoint)
            .json(&self.request_body(texts));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().map_err(|e| {
            (
                EmbedError::Unreachable {
                    url: self.endpoint.clone(),
                    reason: error_chain(&e),
                },
                true,
            )
        })?;
        let status = response.status();
        let text = response.text().map_err(|e| {
            (
                EmbedError::Unreachable {
                    url: self.endpoint.clone(),
                    reason: error_chain(&e),
                },
                true,
            )
        })?;
        if !status.is_success() {
            let message = server_message(&text);
            let lowered = message.to_lowercase();
            if status.as_u16() == 404
                || (lowered.contains("model") && lowered.contains("not found"))
                || lowered.contains("does not exist")
            {
                let hint = match self.api {
                    HttpApi::Ollama => format!(" (run `ollama pull {}`)", self.model),
                    HttpApi::OpenAi => String::new(),
                };
                return Err((
                    EmbedError::ModelMissing {
                        model: self.model.clone(),
                        url: self.base.clone(),
                        reason: format!("HTTP {status}: {message}{hint}"),
                    },
                    false,
                ));
            }
            let retry = status.is_server_error() || status.as_u16() == 429;
            return Err((
                EmbedError::BadResponse {
                    url: self.endpoint.clone(),
                    reason: format!("HTTP {status}: {message}"),
                },
                retry,
            ));
        }
        let bad = |reason: String| {
            (
                EmbedError::BadResponse {
                    url: self.endpoint.clone(),
                    reason,
                },
                false,
            )
        };
        // Read straight into floats: as `serde_json::Value` each number took ~32 bytes.
        let raw = match self.api {
            HttpApi::Ollama => parse_ollama(&text),
            HttpApi::OpenAi => parse_openai(&text),
        }
        .map_err(bad)?;
        if raw.len() != texts.len() {
            return Err(bad(format!(
                "asked for {} embeddings, got {}",
                texts.len(),
                raw.len()
            )));
        }
        let expected = *self.dimensions.get_or_init(|| raw[0].len());
        let mut out = Vec::with_capacity(raw.len());
        for vector in raw {
            if vector.len() != expected {
                return Err(bad(format!(
                    "embedding has {} dimensions, expected {expected}",
                    vector.len()
                )));
            }
            out.push(
                normalize(vector).ok_or_else(|| bad("a zero or non-finite embedding".into()))?,
            );
        }
        Ok(out)
    }
}

impl Embedder for HttpEmbedder {
    fn model_id(&self) -> String {
        let api = match self.api {
            HttpApi::Ollama => "ollama",
            HttpApi::OpenAi => "openai",
        };
        match self.requested_dimensions {
            Some(d) => format!("{api}:{}:{d}", self.model),
            None => format!("{api}:{}", self.model),
        }
    }

    fn dimensions(&self) -> Option<usize> {
        self.dimensions.get().copied()
    }

    fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn embed(&self, texts: &[String], _purpose: Purpose) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            match self.attempt(texts) {
                Ok(vectors) => return Ok(vectors),
                Err((error, retry)) if retry && attempt < ATTEMPTS => {
                    tracing::debug!(%error, attempt, "embedding request failed; retrying");
                    std::thread::sleep(backoff);
                    backoff *= 2;
                    attempt += 1;
                }
                Err((error, _)) => return Err(error),
            }
        }
    }

    fn describe(&self) -> String {
        let api = match self.api {
            HttpApi::Ollama => "ollama",
            HttpApi::OpenAi => "openai-compatible",
        };
        format!("{api} {} model {}", self.base, self.model)
    }
}

/// Ollama's answer: `{"embeddings": [[...], ...]}`.
#[derive(serde::Deserialize)]
struct OllamaAnswer {
    embeddings: Vec<Vec<f32>>,
}

/// An OpenAI-compatible answer: `{"data": [{"index": 0, "embedding": [...]}, ...]}`.
#[derive(serde::Deserialize)]
struct OpenAiAnswer {
    data: Vec<OpenAiItem>,
}

#[derive(serde::Deserialize)]
struct OpenAiItem {
    index: Option<usize>,
    embedding: Vec<f32>,
}

fn parse_ollama(text: &str) -> Result<Vec<Vec<f32>>, String> {
    serde_json::from_str::<OllamaAnswer>(text)
        .map(|answer| answer.embeddings)
        .map_err(|e| format!("the answer is not an `embeddings` array of number arrays ({e})"))
}

fn parse_openai(text: &str) -> Result<Vec<Vec<f32>>, String> {
    let answer = serde_json::from_str::<OpenAiAnswer>(text)
        .map_err(|e| format!("the answer is not a `data` array of numeric `embedding`s ({e})"))?;
    let mut indexed: Vec<(usize, Vec<f32>)> = answer
        .data
        .into_iter()
        .enumerate()
        .map(|(position, item)| (item.index.unwrap_or(position), item.embedding))
        .collect();
    indexed.sort_by_key(|(index, _)| *index);
    Ok(indexed.into_iter().map(|(_, v)| v).collect())
}

/// The server's error text: `{"error": "..."}`, `{"error": {"message": "..."}}` or the body.
fn server_message(text: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let message = parsed.as_ref().and_then(|v| {
        let error = v.get("error")?;
        error
            .as_str()
            .map(str::to_string)
            .or_else(|| error.get("message")?.as_str().map(str::to_string))
    });
    let mut message = message.unwrap_or_else(|| text.trim().to_string());
    if message.len() > 300 {
        let mut cut = 300;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_items_are_put_back_in_order() {
        let body = json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]}
        ]});
        assert_eq!(
            parse_openai(&body.to_string()).unwrap(),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
    }

    #[test]
    fn server_messages_are_extracted() {
        assert_eq!(
            server_message(r#"{"error":"model \"x\" not found"}"#),
            "model \"x\" not found"
        );
        assert_eq!(server_message(r#"{"error":{"message":"nope"}}"#), "nope");
        assert_eq!(server_message("  plain  "), "plain");
    }

    #[test]
    fn ollama_answers_are_read_as_floats_and_anything_else_is_an_error() {
        let parse = |body: Value| parse_ollama(&body.to_string());
        assert!(parse(json!({"embedding": [1.0]})).is_err());
        assert!(parse(json!({"embeddings": [["x"]]})).is_err());
        assert!(parse(json!({"embeddings": [[1.0, null]]})).is_err());
        assert!(parse_ollama("not json").is_err());
        assert_eq!(
            parse(json!({"model": "m", "embeddings": [[1, 0.5]]})).unwrap(),
            vec![vec![1.0, 0.5]]
        );
    }
}
