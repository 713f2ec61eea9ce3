//! The weights and the forward pass: BERT with 3 layers, 12 heads, GELU (erf), as
//! `pocket-encoder` runs it (its CPU path, kept to the same operation order), with the texts
//! of a call packed as rows of one matrix.

use std::collections::HashMap;

use crate::Error;

/// Coordinates of a vector.
pub const DIMENSIONS: usize = HIDDEN;

const HIDDEN: usize = 384;
const HEADS: usize = 12;
const HEAD: usize = HIDDEN / HEADS;
const INTERMEDIATE: usize = 1536;
const LAYERS: usize = 3;
const VOCAB: usize = 30522;
const POSITIONS: usize = 512;

/// `y = x W^T + b`, `W` stored `[outputs, inputs]` as in the file.
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct Norm {
    scale: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value stacked: one product gives all three (`[3 * HIDDEN, HIDDEN]`).
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

/// A matrix kept as the file stores it, 4-bit in groups of 32 with a scale each, its rows
/// unpacked when read: the word embeddings (30,522 rows, of which a pass reads a few) held
/// this way take 6.6 MB where unpacked they took 47 MB of the daemon's memory for as long
/// as it runs. A row reads the same values unpacking all of it would give.
struct Packed {
    nibbles: Vec<u8>,
    scales: Vec<f32>,
    width: usize,
}

impl Packed {
    /// Row `row`'s values, into `out` (`width` long).
    fn row(&self, row: usize, out: &mut [f32]) {
        let start = row * self.width;
        for (j, out) in out.iter_mut().enumerate() {
            let i = start + j;
            let nibble = (self.nibbles[i / 2] >> ((i % 2) * 4)) & 15;
            *out = (nibble as i16 - 8) as f32 * self.scales[i / 32];
        }
    }
}

pub(crate) struct Bert {
    words: Packed,
    positions: Vec<f32>,
    /// Token type 0's row (every text here is one segment).
    segment: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

/// The weights as the file stores them: matrices 4-bit in groups of 32 with an f16 scale
/// each (`NAME.q4`, `NAME.scales`), vectors as f32.
struct Weights<'a> {
    file: safetensors::SafeTensors<'a>,
    shapes: HashMap<String, Vec<usize>>,
}

fn load_error(e: impl std::fmt::Display) -> Error {
    Error::Load(e.to_string())
}

impl Weights<'_> {
    fn shape(&self, name: &str, expected: &[usize]) -> Result<usize, Error> {
        let shape = self
            .shapes
            .get(name)
            .ok_or_else(|| load_error(format!("no weight {name}")))?;
        if shape != expected {
            return Err(load_error(format!("{name} is {shape:?}, not {expected:?}")));
        }
        Ok(shape.iter().product())
    }

    /// A matrix, left packed.
    fn packed(&self, name: &str, rows: usize, width: usize) -> Result<Packed, Error> {
        let count = self.shape(name, &[rows, width])?;
        let nibbles = self
            .file
            .tensor(&format!("{name}.q4"))
            .map_err(load_error)?
            .data()
            .to_vec();
        let scales: Vec<f32> = self
            .file
            .tensor(&format!("{name}.scales"))
            .map_err(load_error)?
            .data()
            .chunks_exact(2)
            .map(|b| half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
            .collect();
        if nibbles.len() * 2 < count || scales.len() * 32 < count {
            return Err(load_error(format!("{name} is shorter than its shape")));
        }
        Ok(Packed {
            nibbles,
            scales,
            width,
        })
    }

    fn take(&self, name: &str, expected: &[usize]) -> Result<Vec<f32>, Error> {
        let count = self.shape(name, expected)?;
        let values: Vec<f32> = if expected.len() < 2 {
            self.file
                .tensor(name)
                .map_err(load_error)?
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        } else {
            let packed = self.packed(name, expected[0], expected[1])?;
            let mut values = vec![0f32; count];
            for (row, out) in values.chunks_exact_mut(expected[1]).enumerate() {
                packed.row(row, out);
            }
            values
        };
        if values.len() != count {
            return Err(load_error(format!("{name} has {} values", values.len())));
        }
        Ok(values)
    }

    fn linear(&self, name: &str, inputs: usize, outputs: usize) -> Result<Linear, Error> {
        Ok(Linear {
            weight: self.take(&format!("{name}.weight"), &[outputs, inputs])?,
            bias: self.take(&format!("{name}.bias"), &[outputs])?,
            inputs,
            outputs,
        })
    }

    fn norm(&self, name: &str) -> Result<Norm, Error> {
        Ok(Norm {
            scale: self.take(&format!("{name}.weight"), &[HIDDEN])?,
            bias: self.take(&format!("{name}.bias"), &[HIDDEN])?,
        })
    }
}

impl Bert {
    pub(crate) fn load(safetensors: &[u8], shapes: &str) -> Result<Bert, Error> {
        let weights = Weights {
            file: safetensors::SafeTensors::deserialize(safetensors).map_err(load_error)?,
            shapes: serde_json::from_str(shapes).map_err(load_error)?,
        };
        let mut layers = Vec::with_capacity(LAYERS);
        for layer in 0..LAYERS {
            let at = |part: &str| format!("encoder.layer.{layer}.{part}");
            let [query, key, value] = ["query", "key", "value"]
                .map(|part| weights.linear(&at(&format!("attention.self.{part}")), HIDDEN, HIDDEN));
            let (query, key, value) = (query?, key?, value?);
            layers.push(Layer {
                qkv: Linear {
                    weight: [query.weight, key.weight, value.weight].concat(),
                    bias: [query.bias, key.bias, value.bias].concat(),
                    inputs: HIDDEN,
                    outputs: 3 * HIDDEN,
                },
                attention_out: weights.linear(&at("attention.output.dense"), HIDDEN, HIDDEN)?,
                attention_norm: weights.norm(&at("attention.output.LayerNorm"))?,
                intermediate: weights.linear(&at("intermediate.dense"), HIDDEN, INTERMEDIATE)?,
                output: weights.linear(&at("output.dense"), INTERMEDIATE, HIDDEN)?,
                output_norm: weights.norm(&at("output.LayerNorm"))?,
            });
        }
        let segments = weights.take("embeddings.token_type_embeddings.weight", &[2, HIDDEN])?;
        Ok(Bert {
            words: weights.packed("embeddings.word_embeddings.weight", VOCAB, HIDDEN)?,
            positions: weights.take(
                "embeddings.position_embeddings.weight",
                &[POSITIONS, HIDDEN],
            )?,
            segment: segments[..HIDDEN].to_vec(),
            embedding_norm: weights.norm("embeddings.LayerNorm")?,
            layers,
        })
    }

    /// Each sequence's last hidden states summed over its tokens (the mean's direction).
    /// Ids past the vocabulary and positions past the table are clamped (the tokenizer
    /// gives neither).
    pub(crate) fn pooled(&self, sequences: &[&[u32]]) -> Vec<Vec<f32>> {
        let rows: usize = sequences.iter().map(|s| s.len()).sum();
        let mut hidden = vec![0f32; rows * HIDDEN];
        let mut row = hidden.chunks_exact_mut(HIDDEN);
        let mut word = [0f32; HIDDEN];
        for sequence in sequences {
            for (position, &id) in sequence.iter().enumerate() {
                let id = (id as usize).min(VOCAB - 1);
                let position = position.min(POSITIONS - 1);
                self.words.row(id, &mut word);
                let place = &self.positions[position * HIDDEN..][..HIDDEN];
                let out = row.next().expect("one row per token");
                for (j, out) in out.iter_mut().enumerate() {
                    *out = (word[j] + self.segment[j]) + place[j];
                }
            }
        }
        norm(&mut hidden, &self.embedding_norm);
        for layer in &self.layers {
            let qkv = linear(&hidden, rows, &layer.qkv);
            let context = attention(&qkv, sequences);
            let mut attended = linear(&context, rows, &layer.attention_out);
            for (a, h) in attended.iter_mut().zip(&hidden) {
                *a += h;
            }
            norm(&mut attended, &layer.attention_norm);
            let mut intermediate = linear(&attended, rows, &layer.intermediate);
            for v in &mut intermediate {
                *v = (erf(*v * std::f32::consts::FRAC_1_SQRT_2) + 1.0) * 0.5 * *v;
            }
            hidden = linear(&intermediate, rows, &layer.output);
            for (h, a) in hidden.iter_mut().zip(&attended) {
                *h += a;
            }
            norm(&mut hidden, &layer.output_norm);
        }
        let mut rows = hidden.chunks_exact(HIDDEN);
        sequences
            .iter()
            .map(|sequence| {
                let mut pooled = vec![0f32; HIDDEN];
                for row in rows.by_ref().take(sequence.len()) {
                    for (p, v) in pooled.iter_mut().zip(row) {
                        *p += v;
                    }
                }
                pooled
            })
            .collect()
    }
}

/// Self-attention within each sequence: for every head, softmax(q k^T / sqrt(d)) v over the
/// sequence's own rows of the stacked query, key and value.
fn attention(qkv: &[f32], sequences: &[&[u32]]) -> Vec<f32> {
    let rows: usize = sequences.iter().map(|s| s.len()).sum();
    let mut context = vec![0f32; rows * HIDDEN];
    let scale = (HEAD as f64).sqrt();
    let row = |r: usize, part: usize, head: usize| {
        &qkv[r * 3 * HIDDEN + part * HIDDEN + head * HEAD..][..HEAD]
    };
    let mut scores = Vec::new();
    let mut start = 0;
    for sequence in sequences {
        let n = sequence.len();
        for head in 0..HEADS {
            for a in start..start + n {
                let query = row(a, 0, head);
                scores.clear();
                scores.extend((start..start + n).map(|b| {
                    let dot: f32 = query.iter().zip(row(b, 1, head)).map(|(x, y)| x * y).sum();
                    (dot as f64 / scale) as f32
                }));
                let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0.0;
                for s in scores.iter_mut() {
                    *s = (*s - max).exp();
                    sum += *s;
                }
                let out = &mut context[a * HIDDEN + head * HEAD..][..HEAD];
                for (b, weight) in (start..start + n).zip(&scores) {
                    let weight = weight / sum;
                    for (o, v) in out.iter_mut().zip(row(b, 2, head)) {
                        *o += weight * v;
                    }
                }
            }
        }
        start += n;
    }
    context
}

/// The error function as a rational polynomial on [-4, 4] (Eigen's and XLA's float `erf`,
/// within a few ulp of libm's; ±1 beyond, as in single precision): no exponential and no
/// branch, so the compiler vectorizes GELU over a row (libm's `erff` took an eighth of a
/// forward pass).
fn erf(x: f32) -> f32 {
    const ALPHA: [f32; 7] = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_600_1e-3,
        -1.609_603_3e-2,
    ];
    const BETA: [f32; 5] = [
        -1.456_607_2e-5,
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329_2e-3,
        -1.426_474e-2,
    ];
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = ALPHA.iter().fold(0.0, |acc, a| acc * x2 + a) * x;
    let q = BETA.iter().fold(0.0, |acc, b| acc * x2 + b);
    p / q
}

/// Layer norm of each row, with the reduction and epsilon the reference uses.
fn norm(values: &mut [f32], norm: &Norm) {
    for row in values.chunks_exact_mut(HIDDEN) {
        let (mut sum, mut squares) = (0f32, 0f32);
        for &v in row.iter() {
            sum += v;
            squares += v * v;
        }
        let mean = sum / HIDDEN as f32;
        let inverse = (squares / HIDDEN as f32 - mean * mean + 1e-12)
            .sqrt()
            .recip();
        for ((v, scale), bias) in row.iter_mut().zip(&norm.scale).zip(&norm.bias) {
            *v = (*v - mean) * inverse * scale + bias;
        }
    }
}

fn linear(input: &[f32], rows: usize, layer: &Linear) -> Vec<f32> {
    let (width, cols) = (layer.inputs, layer.outputs);
    assert_eq!(input.len(), rows * width, "input rows of the layer's width");
    assert_eq!(
        layer.weight.len(),
        width * cols,
        "a weight of the layer's shape"
    );
    let mut output = vec![0f32; rows * cols];
    // SAFETY: every matrix is an owned, contiguous f32 slice whose length is checked above
    // against the strides given; the output is fresh, so it aliases neither input. The
    // weight is read transposed by its strides only.
    unsafe {
        gemm::gemm(
            rows,
            cols,
            width,
            output.as_mut_ptr(),
            1,
            cols as isize,
            false,
            input.as_ptr(),
            1,
            width as isize,
            layer.weight.as_ptr(),
            width as isize,
            1,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
    for row in output.chunks_exact_mut(cols) {
        for (v, b) in row.iter_mut().zip(&layer.bias) {
            *v += b;
        }
    }
    output
}

#[cfg(test)]
mod tests {
    #[test]
    fn erf_follows_libm() {
        let mut worst = 0f32;
        for i in -6000..=6000 {
            let x = i as f32 / 1000.0;
            worst = worst.max((super::erf(x) - libm::erff(x)).abs());
        }
        assert!(worst < 1e-6, "erf drifts {worst} from libm");
    }
}
