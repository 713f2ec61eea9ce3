//! The stand-in for a real embedding server, which cannot be installed here.

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use serde_json::{Value, json};

/// A loopback HTTP server speaking Ollama's `POST /api/embed` and the OpenAI-compatible
/// `POST /v1/embeddings`: the stand-in for a real embedding server, which cannot be
/// installed here. Vectors are bags of hashed words (so texts sharing words are near).
/// Records every request; knows only the models it was given.
pub struct FakeEmbedServer {
    addr: std::net::SocketAddr,
    state: std::sync::Arc<FakeEmbedState>,
}

/// What a [`FakeEmbedServer`] saw and how it behaves.
#[derive(Default)]
pub struct FakeEmbedState {
    /// Texts per request, in arrival order.
    pub batches: std::sync::Mutex<Vec<usize>>,
    /// Models asked for, in arrival order.
    pub models: std::sync::Mutex<Vec<String>>,
    /// Authorization headers seen.
    pub auth: std::sync::Mutex<Vec<String>>,
    /// Every text embedded, in arrival order.
    pub texts: std::sync::Mutex<Vec<String>>,
    /// Models the server has.
    known: std::sync::Mutex<Vec<String>>,
    /// Delay before each answer.
    delay_ms: std::sync::atomic::AtomicU64,
    /// Dimensions of the vectors served, when not [`FAKE_DIMS`].
    dims: std::sync::atomic::AtomicUsize,
    stop: std::sync::atomic::AtomicBool,
}

/// Dimensions of the fake vectors.
pub const FAKE_DIMS: usize = 64;

/// The fake embedding of `text`.
pub fn fake_embedding(text: &str) -> Vec<f32> {
    fake_embedding_of_width(text, FAKE_DIMS)
}

/// The fake embedding of `text` in `dims` dimensions.
fn fake_embedding_of_width(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0f32; dims];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let mut h: u64 = 0xcbf29ce484222325;
        for b in word.to_lowercase().bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
        }
        v[(h % dims as u64) as usize] += 1.0;
    }
    v[0] += 0.01;
    v
}

impl FakeEmbedServer {
    /// Start on 127.0.0.1 (a free port), knowing `models`.
    pub fn start(models: &[&str]) -> FakeEmbedServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().unwrap();
        let state = std::sync::Arc::new(FakeEmbedState::default());
        *state.known.lock().unwrap() = models.iter().map(|m| m.to_string()).collect();
        let served = state.clone();
        std::thread::spawn(move || {
            while !served.stop.load(std::sync::atomic::Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let state = served.clone();
                        std::thread::spawn(move || {
                            let _ = serve_embed(stream, &state);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeEmbedServer { addr, state }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What the server saw.
    pub fn state(&self) -> &FakeEmbedState {
        &self.state
    }

    /// Texts embedded so far.
    pub fn texts(&self) -> usize {
        self.state.batches.lock().unwrap().iter().sum()
    }

    /// Documents (chunks) embedded so far: texts of more than one line (queries are one).
    pub fn documents(&self) -> usize {
        self.state
            .texts
            .lock()
            .unwrap()
            .iter()
            .filter(|t| t.contains('\n'))
            .count()
    }

    /// Serve vectors of `dims` dimensions (wide models: 4,096 and more).
    pub fn set_dims(&self, dims: usize) {
        self.state
            .dims
            .store(dims, std::sync::atomic::Ordering::SeqCst);
    }

    /// Wait this long before each answer.
    pub fn set_delay(&self, ms: u64) {
        self.state
            .delay_ms
            .store(ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for FakeEmbedServer {
    fn drop(&mut self) {
        self.state
            .stop
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn serve_embed(stream: std::net::TcpStream, state: &FakeEmbedState) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut content_length = 0usize;
    let mut auth = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            content_length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("authorization:") {
            auth = line["authorization:".len()..].trim().to_string();
        }
    }
    let mut body = vec![0u8; content_length];
    std::io::Read::read_exact(&mut reader, &mut body)?;
    state.auth.lock().unwrap().push(auth);
    let delay = state.delay_ms.load(std::sync::atomic::Ordering::SeqCst);
    if delay > 0 {
        std::thread::sleep(Duration::from_millis(delay));
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("");
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = request["model"].as_str().unwrap_or("").to_string();
    let texts: Vec<String> = request["input"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let (status, answer) = if path != "/api/embed" && path != "/v1/embeddings" {
        ("404 Not Found", json!({"error": "no such endpoint"}))
    } else if !state.known.lock().unwrap().contains(&model) {
        (
            "404 Not Found",
            json!({"error": format!("model \"{model}\" not found, try pulling it first")}),
        )
    } else {
        state.models.lock().unwrap().push(model.clone());
        state.batches.lock().unwrap().push(texts.len());
        state.texts.lock().unwrap().extend(texts.iter().cloned());
        let dims = match state.dims.load(std::sync::atomic::Ordering::SeqCst) {
            0 => FAKE_DIMS,
            dims => dims,
        };
        let vectors: Vec<Vec<f32>> = texts
            .iter()
            .map(|t| fake_embedding_of_width(t, dims))
            .collect();
        let answer = if path == "/api/embed" {
            json!({"model": model, "embeddings": vectors})
        } else {
            let data: Vec<Value> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
                .collect();
            json!({"object": "list", "model": model, "data": data})
        };
        ("200 OK", answer)
    };
    let payload = answer.to_string();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{payload}",
        payload.len()
    )?;
    stream.flush()
}
