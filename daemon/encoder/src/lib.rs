//! The bundled sentence encoder, run many texts at a time.
//!
//! sentence-transformers/paraphrase-MiniLM-L3-v2 (3 layers, 384 dimensions, Apache-2.0), as
//! the `pocket-encoder` crate bundles it (4-bit weights with f16 scales, dequantized to f32
//! once at load; its tokenizer). That crate runs one text per forward pass through candle;
//! a short text then costs what the weights cost to stream through the cache (a word alone:
//! ~4.7 ms on one core). Here the texts of a call are packed into the rows of one matrix, so
//! each weight matrix is read once per batch (~0.55 ms a word at 64 words a batch), with
//! attention kept within each text. Same coordinates as `pocket-encoder` (tested), so the
//! model id and every stored vector stay valid.
//!
//! Built optimised even in debug builds (the workspace's profile), like the rest of the
//! embedder's math.

mod bert;

use std::sync::OnceLock;

use tokenizers::{Tokenizer, TruncationParams};

pub use bert::DIMENSIONS;

/// Tokens a text is cut to, its special tokens included.
pub const MAX_TOKENS: usize = 128;

/// Why the model could not load or run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the bundled model cannot load: {0}")]
    Load(String),
    #[error("the bundled tokenizer failed: {0}")]
    Tokenizer(String),
}

/// The model and its tokenizer, loaded once per process.
pub struct Encoder {
    model: bert::Bert,
    tokenizer: Tokenizer,
}

/// The model's identity, as `pocket-encoder` states it (its id and weights' hash).
pub fn model_info() -> pocket_encoder::ModelInfo {
    pocket_encoder::model_info()
}

impl Encoder {
    /// The process's encoder, loading it on first use (~0.2 s).
    pub fn shared() -> Result<&'static Encoder, Error> {
        static ENCODER: OnceLock<Result<Encoder, String>> = OnceLock::new();
        ENCODER
            .get_or_init(|| Encoder::load().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| Error::Load(e.clone()))
    }

    fn load() -> Result<Encoder, Error> {
        let model = bert::Bert::load(
            include_bytes!(concat!(
                env!("AMANMCP_ENCODER_ASSETS"),
                "/model.safetensors"
            )),
            include_str!(concat!(env!("AMANMCP_ENCODER_ASSETS"), "/shapes.json")),
        )?;
        let mut tokenizer = Tokenizer::from_bytes(include_bytes!(concat!(
            env!("AMANMCP_ENCODER_ASSETS"),
            "/tokenizer.json"
        )))
        .map_err(|e| Error::Load(e.to_string()))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(|e| Error::Load(e.to_string()))?;
        Ok(Encoder { model, tokenizer })
    }

    /// The token ids of `text`, special tokens included, cut at [`MAX_TOKENS`].
    pub fn tokens(&self, text: &str) -> Result<Vec<u32>, Error> {
        let encoded = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        Ok(encoded.get_ids().to_vec())
    }

    /// The tokenizer's whole words (not `##` continuations or special tokens), sorted.
    pub fn vocabulary(&self) -> Vec<String> {
        let mut words: Vec<String> = self
            .tokenizer
            .get_vocab(false)
            .into_keys()
            // Letters only: no `##` continuation, no `[CLS]`-like special token.
            .filter(|w| w.chars().all(char::is_alphabetic))
            .collect();
        words.sort();
        words
    }

    /// The wordpieces the tokenizer splits `word` into (`sym`, `##py`), no special token.
    pub fn pieces(&self, word: &str) -> Result<Vec<String>, Error> {
        let encoded = self
            .tokenizer
            .encode(word, false)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        Ok(encoded.get_tokens().to_vec())
    }

    /// The tokenizer's `##` continuations (pieces that only follow another), sorted.
    pub fn continuations(&self) -> Vec<String> {
        let mut pieces: Vec<String> = self
            .tokenizer
            .get_vocab(false)
            .into_keys()
            .filter(|w| w.starts_with("##") && w.len() > 2)
            .collect();
        pieces.sort();
        pieces
    }

    /// The token ids of one piece alone between the special tokens: a `##` continuation
    /// as the single token it names (its text would be split as punctuation and letters),
    /// any other text as [`Encoder::tokens`] splits it.
    pub fn piece_tokens(&self, piece: &str) -> Result<Vec<u32>, Error> {
        let special = |t: &str| {
            self.tokenizer
                .token_to_id(t)
                .ok_or_else(|| Error::Tokenizer(format!("no {t} token")))
        };
        match piece
            .strip_prefix("##")
            .and(self.tokenizer.token_to_id(piece))
        {
            Some(id) => Ok(vec![special("[CLS]")?, id, special("[SEP]")?]),
            None => self.tokens(piece),
        }
    }

    /// Unit vectors of the texts, in order; all in one forward pass on the calling thread
    /// (callers spread batches over threads). An empty text (no tokens but the special
    /// ones) still gets a vector, as the model gives one.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Error> {
        let tokens = texts
            .iter()
            .map(|t| self.tokens(t))
            .collect::<Result<Vec<_>, _>>()?;
        let sequences: Vec<&[u32]> = tokens.iter().map(Vec::as_slice).collect();
        Ok(self.embed_tokens(&sequences))
    }

    /// [`Encoder::embed`] of texts already tokenized by [`Encoder::tokens`].
    pub fn embed_tokens(&self, sequences: &[&[u32]]) -> Vec<Vec<f32>> {
        self.model
            .pooled(sequences)
            .into_iter()
            .map(|mut v| {
                let norm = v.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
                if norm.is_finite() && norm > 0.0 {
                    for x in &mut v {
                        *x = (*x as f64 / norm) as f32;
                    }
                }
                v
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts' vectors from `pocket-encoder` itself, one forward pass each.
    fn reference(texts: &[&str]) -> Vec<Vec<f32>> {
        pocket_encoder::Encoder::new()
            .unwrap()
            .embed(texts)
            .unwrap()
    }

    fn worst_difference(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .flat_map(|(x, y)| {
                assert_eq!(x.len(), y.len());
                x.iter().zip(y).map(|(p, q)| (p - q).abs())
            })
            .fold(0.0, f32::max)
    }

    #[test]
    fn batches_give_pocket_encoders_coordinates() {
        let long = "word ".repeat(200);
        let texts = [
            "parse",
            "response",
            "tokenizer",
            "fn schedule_task(worker: &Worker) -> Queue",
            "How are spawned tasks scheduled onto threads?",
            "日本語 中文 مرحبا café 🦀",
            long.as_str(),
        ];
        let encoder = Encoder::shared().unwrap();
        let batched = encoder.embed(&texts).unwrap();
        let alone: Vec<Vec<f32>> = texts
            .iter()
            .map(|t| encoder.embed(&[t]).unwrap().pop().unwrap())
            .collect();
        let expected = reference(&texts);
        let drift = worst_difference(&batched, &expected);
        assert!(drift < 2e-5, "batched coordinates drift {drift}");
        assert!(worst_difference(&alone, &batched) < 2e-5);
        for v in &batched {
            assert_eq!(v.len(), DIMENSIONS);
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4);
        }
    }

    #[test]
    fn the_vocabulary_holds_whole_words_only() {
        let words = Encoder::shared().unwrap().vocabulary();
        assert!(words.len() > 20_000, "{} words", words.len());
        assert!(words.iter().any(|w| w == "error"));
        assert!(
            words
                .iter()
                .all(|w| !w.starts_with("##") && !w.contains('['))
        );
    }

    #[test]
    fn words_split_into_pieces_and_a_continuation_is_one_token() {
        let encoder = Encoder::shared().unwrap();
        let pieces = encoder.pieces("sympify").unwrap();
        assert!(pieces.len() > 1, "{pieces:?}");
        assert!(
            pieces[1..].iter().all(|p| p.starts_with("##")),
            "{pieces:?}"
        );
        assert_eq!(encoder.pieces("error").unwrap(), ["error"]);
        let continuation = &pieces[1];
        let tokens = encoder.piece_tokens(continuation).unwrap();
        assert_eq!(tokens.len(), 3, "[CLS], the piece, [SEP]");
        assert_eq!(
            encoder.piece_tokens("error").unwrap(),
            encoder.tokens("error").unwrap()
        );
        let continuations = encoder.continuations();
        assert!(continuations.contains(continuation));
        assert!(continuations.len() > 4_000, "{}", continuations.len());
    }

    #[test]
    fn texts_are_cut_at_the_models_limit() {
        let encoder = Encoder::shared().unwrap();
        let tokens = encoder.tokens(&"token ".repeat(500)).unwrap();
        assert_eq!(tokens.len(), MAX_TOKENS);
        assert_eq!(encoder.tokens("").unwrap().len(), 2, "[CLS] and [SEP]");
        assert_eq!(encoder.embed(&[""]).unwrap()[0].len(), DIMENSIONS);
    }
}
