//! Embedders: text -> unit vectors, for semantic search.
//!
//! One [`Embedder`] serves the whole daemon (every project), chosen at start-up by
//! [`EmbedConfig::from_env`]:
//! - `builtin` (default, [`words`]): paraphrase-MiniLM-L3-v2, compiled into the binary
//!   (4-bit weights from the `pocket-encoder` crate, run by `amanmcp-encoder` in pure Rust), embeds each
//!   word once; a text's vector is the sum of its words', each weighed by the square root of
//!   its count. Offline, no set-up, thousands of chunks a second once the words are known.
//! - `minilm` ([`minilm`]): the same model run over each whole text: contextual, ~100
//!   chunks/s on 2 cores.
//! - `ollama`: an Ollama server's `/api/embed`, batched.
//! - `openai`: any OpenAI-compatible `/v1/embeddings` (MLX servers, LM Studio, llama.cpp,
//!   vLLM, OpenAI itself).
//! - `off`: no vectors; search is lexical only.
//!
//! Every vector an embedder returns has unit length, so cosine similarity is a dot product.

pub mod cache;
mod http;
mod minilm;
mod table;
mod terms;
pub mod words;
pub mod worker;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub use http::{HttpApi, HttpEmbedder};
pub use minilm::MiniLm;
pub use words::Words;

/// Why an embedding request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    /// The server could not be reached (down, wrong URL, timed out).
    #[error("embedding server unreachable at {url}: {reason}")]
    Unreachable {
        /// Where we tried.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The server does not have the model.
    #[error("model {model:?} is not available on {url}: {reason}")]
    ModelMissing {
        /// Model name.
        model: String,
        /// Server.
        url: String,
        /// The server's words.
        reason: String,
    },
    /// The server answered with an error or a body we cannot use.
    #[error("embedding server at {url} failed: {reason}")]
    BadResponse {
        /// Server.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// The local model failed.
    #[error("built-in embedder failed: {0}")]
    Model(String),
    /// Configuration is incomplete or contradictory.
    #[error("embedder configuration: {0}")]
    Config(String),
}

impl EmbedError {
    /// Whether trying again later may help (a server that is down may come up; a missing
    /// model may be pulled). Configuration errors never heal.
    pub fn is_transient(&self) -> bool {
        !matches!(self, EmbedError::Config(_))
    }
}

/// What the embedding is for: some models embed queries and documents differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A chunk of code being indexed.
    Document,
    /// A search query.
    Query,
}

/// Turns texts into unit vectors.
pub trait Embedder: Send + Sync {
    /// Identity of the vector space: vectors from two different ids are never mixed.
    fn model_id(&self) -> String;
    /// Vector length, once known (HTTP backends learn it from their first answer).
    fn dimensions(&self) -> Option<usize>;
    /// How many texts one call should carry.
    fn batch_size(&self) -> usize;
    /// Embed `texts`, one unit vector each, in order.
    fn embed(&self, texts: &[String], purpose: Purpose) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// Where the backend is (for status), e.g. `builtin` or `ollama http://127.0.0.1:11434`.
    fn describe(&self) -> String;
    /// The daemon's shared cache, for a backend that keeps parts of its own there (the
    /// built-in one's word vectors). Most ignore it.
    fn attach_cache(&self, _cache: Arc<cache::SharedCache>) {}
    /// Start what the backend does in the background while the daemon is otherwise idle
    /// (the built-in one: filling its word table into the attached cache). Most do nothing.
    fn start_idle_work(&self) {}
}

/// Which backend, from `AMANMCP_EMBEDDER`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The compiled-in model's word vectors ([`Words`]).
    Builtin,
    /// The compiled-in model over whole texts ([`MiniLm`]).
    MiniLm,
    /// Ollama's `/api/embed`.
    Ollama,
    /// OpenAI-compatible `/v1/embeddings`.
    OpenAi,
    /// No semantic search.
    Off,
}

/// Embedder settings (environment variables, see README).
#[derive(Debug, Clone)]
pub struct EmbedConfig {
    /// Backend.
    pub backend: Backend,
    /// Server base URL (HTTP backends).
    pub url: Option<String>,
    /// Model name (HTTP backends).
    pub model: Option<String>,
    /// Bearer token (OpenAI-compatible servers that want one).
    pub api_key: Option<String>,
    /// Requested output dimensions (OpenAI-compatible servers that support it).
    pub dimensions: Option<usize>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Texts per request.
    pub batch_size: Option<usize>,
    /// The built-in model reads this many bytes of a chunk (its start: signature, doc
    /// comment, first lines); its cost grows with the length.
    pub max_bytes: Option<usize>,
}

impl EmbedConfig {
    /// Read `AMANMCP_EMBEDDER`, `AMANMCP_EMBED_URL`, `AMANMCP_EMBED_MODEL`,
    /// `AMANMCP_EMBED_API_KEY`, `AMANMCP_EMBED_DIMENSIONS`, `AMANMCP_EMBED_TIMEOUT_SECS` and
    /// `AMANMCP_EMBED_BATCH` and `AMANMCP_EMBED_MAX_BYTES`.
    pub fn from_env() -> Result<EmbedConfig, EmbedError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let backend = match var("AMANMCP_EMBEDDER").as_deref().map(str::trim) {
            None | Some("builtin") | Some("default") => Backend::Builtin,
            Some("ollama") => Backend::Ollama,
            Some("openai") | Some("openai-compatible") => Backend::OpenAi,
            Some("off") | Some("none") => Backend::Off,
            Some("minilm") => Backend::MiniLm,
            Some(other) => {
                return Err(EmbedError::Config(format!(
                    "AMANMCP_EMBEDDER={other:?}: use builtin, minilm, ollama, openai or off"
                )));
            }
        };
        let number = |name: &str| -> Result<Option<u64>, EmbedError> {
            var(name)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| EmbedError::Config(format!("{name}={v:?} is not a number")))
                })
                .transpose()
        };
        Ok(EmbedConfig {
            backend,
            url: var("AMANMCP_EMBED_URL"),
            model: var("AMANMCP_EMBED_MODEL"),
            api_key: var("AMANMCP_EMBED_API_KEY"),
            dimensions: number("AMANMCP_EMBED_DIMENSIONS")?.map(|n| n as usize),
            timeout: Duration::from_secs(number("AMANMCP_EMBED_TIMEOUT_SECS")?.unwrap_or(60)),
            batch_size: number("AMANMCP_EMBED_BATCH")?.map(|n| (n as usize).clamp(1, 2048)),
            max_bytes: number("AMANMCP_EMBED_MAX_BYTES")?.map(|n| (n as usize).clamp(16, 65536)),
        })
    }

    /// Build the configured embedder (`None` for `off`).
    pub fn build(&self) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
        Ok(match self.backend {
            Backend::Off => None,
            Backend::Builtin => Some(Arc::new(Words::new(self.batch_size)?)),
            Backend::MiniLm => Some(Arc::new(MiniLm::new(self.batch_size, self.max_bytes)?)),
            Backend::Ollama => Some(Arc::new(HttpEmbedder::new(HttpApi::Ollama, self)?)),
            Backend::OpenAi => Some(Arc::new(HttpEmbedder::new(HttpApi::OpenAi, self)?)),
        })
    }
}

/// Health of the daemon's embedder, shared by every project's embedding worker and search.
#[derive(Default)]
pub struct Health {
    inner: Mutex<HealthInner>,
}

#[derive(Default, Clone)]
struct HealthInner {
    last_ok: Option<SystemTime>,
    last_error: Option<String>,
}

impl Health {
    /// A request succeeded.
    pub fn ok(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.last_ok = Some(SystemTime::now());
        inner.last_error = None;
    }

    /// A request failed.
    pub fn failed(&self, error: &EmbedError) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.last_error = Some(error.to_string());
    }

    /// `"ok"`, `"unknown"` (nothing asked yet) or `"error: ..."`.
    pub fn summary(&self) -> String {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match (&inner.last_error, inner.last_ok) {
            (Some(error), _) => format!("error: {error}"),
            (None, Some(_)) => "ok".into(),
            (None, None) => "unknown".into(),
        }
    }
}

/// The daemon's embedder with its health.
pub struct Embedding {
    /// The backend.
    pub embedder: Arc<dyn Embedder>,
    /// Its health.
    pub health: Health,
    /// Query vectors recently computed (queries repeat: pagination, retries).
    query_cache: Mutex<std::collections::VecDeque<(String, Arc<Vec<f32>>)>>,
    /// The daemon's cache shared by all projects, and this model's key in it (attached once
    /// the daemon holds its data directory's lock).
    shared: std::sync::OnceLock<(Arc<cache::SharedCache>, u64)>,
}

/// Query vectors kept.
const QUERY_CACHE: usize = 64;

impl Embedding {
    /// Wrap an embedder.
    pub fn new(embedder: Arc<dyn Embedder>) -> Embedding {
        Embedding {
            embedder,
            health: Health::default(),
            query_cache: Mutex::new(Default::default()),
            shared: std::sync::OnceLock::new(),
        }
    }

    /// Share vectors between projects through `cache` (the first one attached stays).
    pub fn attach_shared_cache(&self, cache: cache::SharedCache) {
        let cache = Arc::new(cache);
        let model = cache::model_key(&self.embedder.model_id());
        self.embedder.attach_cache(cache.clone());
        self.embedder.start_idle_work();
        let _ = self.shared.set((cache, model));
    }

    /// The vectors the shared cache holds for `hashes` (chunk text hashes) of this model.
    pub fn shared_vectors(&self, hashes: &[u64]) -> std::collections::HashMap<u64, Vec<f32>> {
        match self.shared.get() {
            Some((cache, model)) => cache.get(*model, hashes),
            None => Default::default(),
        }
    }

    /// Give back the resident pages of the shared cache's map (`memory::release_mapped_pages`).
    pub fn release_mapped_pages(&self) {
        if let Some((cache, _)) = self.shared.get() {
            cache.release_mapped_pages();
        }
    }

    /// Offer vectors (text hash, vector) to the shared cache.
    pub fn share_vectors(&self, items: &[(u64, &[f32])]) {
        if let Some((cache, model)) = self.shared.get() {
            cache.put(*model, items);
        }
    }

    /// Embed documents, recording health.
    pub fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let outcome = self.embedder.embed(texts, Purpose::Document);
        self.record(&outcome);
        outcome
    }

    /// Embed a query (cached), recording health.
    pub fn embed_query(&self, query: &str) -> Result<Arc<Vec<f32>>, EmbedError> {
        {
            let cache = self.query_cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, vector)) = cache.iter().find(|(q, _)| q == query) {
                return Ok(vector.clone());
            }
        }
        let outcome = self
            .embedder
            .embed(&[query.to_string()], Purpose::Query)
            .and_then(|mut v| {
                v.pop()
                    .ok_or_else(|| EmbedError::Model("no vector returned".into()))
            });
        self.record(&outcome);
        let vector = Arc::new(outcome?);
        let mut cache = self.query_cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= QUERY_CACHE {
            cache.pop_front();
        }
        cache.push_back((query.to_string(), vector.clone()));
        Ok(vector)
    }

    fn record<T>(&self, outcome: &Result<T, EmbedError>) {
        match outcome {
            Ok(_) => self.health.ok(),
            Err(e) => self.health.failed(e),
        }
    }
}

/// Scale `vector` to unit length; `None` if it is zero or not finite.
pub fn normalize(mut vector: Vec<f32>) -> Option<Vec<f32>> {
    let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
    if !norm.is_finite() || norm <= 0.0 {
        return None;
    }
    for v in &mut vector {
        *v /= norm;
    }
    Some(vector)
}
