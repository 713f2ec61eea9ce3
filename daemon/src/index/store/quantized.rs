//! How vectors are kept: f16 in the daemon's shared cache, one signed byte a dimension (and a
//! scale) in a project's `embed_cache`; and the cosine distance from a query to the latter,
//! read in place.

/// A cached vector as stored: f16, little-endian (half the bytes of f32; cosine scores move
/// by well under 0.001).
pub(crate) fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector
        .iter()
        .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
        .collect()
}

pub(crate) fn bytes_vector(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
        .collect()
}

/// A chunk's vector as the project keeps it in `embed_cache`: one signed byte a dimension
/// and the scale that maps 127 back to the largest component (a little-endian f32 first).
/// Half the size of f16, and re-scoring with it ranks as with the exact vector: a unit
/// vector's components err by at most 1/254 of the largest.
pub(crate) fn quantized_bytes(vector: &[f32]) -> Vec<u8> {
    let largest = vector.iter().fold(0f32, |m, v| m.max(v.abs()));
    let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
    let mut out = Vec::with_capacity(4 + vector.len());
    out.extend_from_slice(&scale.to_le_bytes());
    out.extend(
        vector
            .iter()
            .map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8 as u8),
    );
    out
}

/// The vector [`quantized_bytes`] stored (empty for fewer than 4 bytes).
pub(crate) fn dequantized_vector(bytes: &[u8]) -> Vec<f32> {
    let Some((scale, values)) = bytes.split_first_chunk::<4>() else {
        return Vec::new();
    };
    let scale = f32::from_le_bytes(*scale);
    values.iter().map(|b| f32::from(*b as i8) * scale).collect()
}

/// Cosine distance (1 - cosine similarity) of two vectors (tests: the reference).
#[cfg(test)]
pub(super) fn cosine_distance(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    let norm = (na * nb).sqrt();
    if norm > 0.0 { 1.0 - dot / norm } else { 1.0 }
}

/// Sums of products kept in this many lanes, so the compiler can hold each in one vector
/// register (a single running float sum cannot be reordered, so it is not vectorized).
const LANES: usize = 8;

/// A query vector made ready for [`Probe::distance`] to many stored vectors: its squared norm
/// is summed once, not once per candidate.
pub(super) struct Probe<'a> {
    query: &'a [f32],
    norm_squared: f32,
}

impl<'a> Probe<'a> {
    pub(super) fn new(query: &'a [f32]) -> Probe<'a> {
        let mut lanes = [0f32; LANES];
        let (chunks, rest) = query.as_chunks::<LANES>();
        for q in chunks {
            for i in 0..LANES {
                lanes[i] += q[i] * q[i];
            }
        }
        let mut norm_squared: f32 = lanes.iter().sum();
        for q in rest {
            norm_squared += q * q;
        }
        Probe {
            query,
            norm_squared,
        }
    }

    /// [`cosine_distance`] from the query to the vector [`quantized_bytes`] stored, read in
    /// place (the scale cancels out). `None` if the dimensions differ.
    pub(super) fn distance(&self, bytes: &[u8]) -> Option<f32> {
        let values = bytes.get(4..)?;
        if values.len() != self.query.len() {
            return None;
        }
        let (mut dot, mut nv) = ([0f32; LANES], [0f32; LANES]);
        let (q_lanes, q_rest) = self.query.as_chunks::<LANES>();
        let (v_lanes, v_rest) = values.as_chunks::<LANES>();
        for (q, b) in q_lanes.iter().zip(v_lanes) {
            for i in 0..LANES {
                let v = f32::from(b[i] as i8);
                dot[i] += q[i] * v;
                nv[i] += v * v;
            }
        }
        let (mut dot, mut nv): (f32, f32) = (dot.iter().sum(), nv.iter().sum());
        for (q, b) in q_rest.iter().zip(v_rest) {
            let v = f32::from(*b as i8);
            dot += q * v;
            nv += v * v;
        }
        let norm = (self.norm_squared * nv).sqrt();
        Some(if norm > 0.0 { 1.0 - dot / norm } else { 1.0 })
    }
}

/// Products of signed bytes summed in this many lanes (the compiler widens and multiplies
/// them a register at a time).
const BYTE_LANES: usize = 32;

/// The dot product of two int8 vectors, the second as stored (bytes read as `i8`). Exact:
/// 127² × 133,000 dimensions still fits an `i32`. With AVX2 where the CPU has it (the
/// portable build's SSE2 widens bytes in several steps).
pub(super) fn int8_dot(a: &[i8], b: &[u8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { int8_dot_avx2(a, b) };
    }
    int8_dot_portable(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn int8_dot_avx2(a: &[i8], b: &[u8]) -> i32 {
    int8_dot_portable(a, b)
}

#[inline(always)]
fn int8_dot_portable(a: &[i8], b: &[u8]) -> i32 {
    let mut lanes = [0i32; BYTE_LANES];
    let (a_lanes, a_rest) = a.as_chunks::<BYTE_LANES>();
    let (b_lanes, b_rest) = b.as_chunks::<BYTE_LANES>();
    for (x, y) in a_lanes.iter().zip(b_lanes) {
        for i in 0..BYTE_LANES {
            lanes[i] += i32::from(x[i]) * i32::from(y[i] as i8);
        }
    }
    let mut sum: i32 = lanes.iter().sum();
    for (x, y) in a_rest.iter().zip(b_rest) {
        sum += i32::from(*x) * i32::from(*y as i8);
    }
    sum
}

/// The int8 values of a vector [`quantized_bytes`] stored (its scale left out).
pub(super) fn int8_values(bytes: &[u8]) -> &[u8] {
    bytes.get(4..).unwrap_or(&[])
}

/// A query quantized as stored vectors are, for a first pass over many of them in integers
/// ([`int8_dot`]): its cosines err by about 1/254 of the largest component, so the pass
/// keeps a margin of candidates and [`Probe::distance`] orders them.
pub(super) struct Int8Probe {
    values: Vec<i8>,
    norm: f32,
}

impl Int8Probe {
    pub(super) fn new(query: &[f32]) -> Int8Probe {
        let bytes = quantized_bytes(query);
        let values: Vec<i8> = int8_values(&bytes).iter().map(|b| *b as i8).collect();
        let norm = int8_norm(int8_values(&bytes));
        Int8Probe { values, norm }
    }

    /// Approximate cosine distance to stored int8 `values` whose [`int8_norm`] is `norm`.
    pub(super) fn distance(&self, values: &[u8], norm: f32) -> f32 {
        let denominator = self.norm * norm;
        if denominator > 0.0 {
            1.0 - int8_dot(&self.values, values) as f32 / denominator
        } else {
            1.0
        }
    }
}

/// The sign bits of int8 values as stored ([`int8_values`]), one bit a dimension (set where
/// the value is above 0), 64 to a word: what a scan too large for int8 rows keeps in memory.
pub(super) fn sign_words(values: &[u8]) -> impl Iterator<Item = u64> + '_ {
    values.chunks(64).map(|lane| {
        lane.iter().enumerate().fold(0u64, |word, (bit, b)| {
            word | (u64::from(*b as i8 > 0) << bit)
        })
    })
}

/// A query's sign bits laid out as [`sign_words`] lays out a stored vector's.
pub(super) fn query_sign_words(query: &[f32]) -> Vec<u64> {
    query
        .chunks(64)
        .map(|lane| {
            lane.iter()
                .enumerate()
                .fold(0u64, |word, (bit, v)| word | (u64::from(*v > 0.0) << bit))
        })
        .collect()
}

/// How many sign bits differ between two rows of [`sign_words`]: the coarse distance a sign
/// scan orders by (the sign bits of two unit vectors agree more the nearer they are).
#[inline(always)]
pub(super) fn sign_distance(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// The query's dot product with stored vectors known only by their sign bits (each
/// dimension +1 or -1): finer than [`sign_distance`], as the query keeps its magnitudes;
/// larger is nearer. A table of the query's sums over every byte of bits makes a row's dot
/// product one look-up a byte.
pub(super) struct SignDot {
    /// For byte `j` of a row and its value `b`: the sum of the query's components whose
    /// bits `b` sets, less those it leaves clear.
    table: Vec<[f32; 256]>,
}

impl SignDot {
    pub(super) fn new(query: &[f32]) -> SignDot {
        let table = query
            .chunks(8)
            .map(|lane| {
                let total: f32 = lane.iter().sum();
                // Set bits' sum, built from the byte with its lowest bit cleared.
                let mut set = [0f32; 256];
                for b in 1..256usize {
                    set[b] =
                        set[b & (b - 1)] + lane.get(b.trailing_zeros() as usize).unwrap_or(&0.0);
                }
                set.map(|sum| 2.0 * sum - total)
            })
            .collect();
        SignDot { table }
    }

    /// The dot product with a row of [`sign_words`].
    pub(super) fn dot(&self, row: &[u64]) -> f32 {
        row.iter()
            .flat_map(|word| word.to_le_bytes())
            .zip(&self.table)
            .map(|(b, sums)| sums[usize::from(b)])
            .sum()
    }
}

/// The length of an int8 vector as stored.
pub(super) fn int8_norm(values: &[u8]) -> f32 {
    let squares: i64 = values
        .iter()
        .map(|b| i64::from(*b as i8) * i64::from(*b as i8))
        .sum();
    (squares as f32).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_bits_of_a_stored_vector_are_its_query_s_and_count_what_differs() {
        let vector: Vec<f32> = (0..70).map(|i| ((i * 7 % 11) as f32 - 5.0) / 5.0).collect();
        let stored: Vec<u64> = sign_words(int8_values(&quantized_bytes(&vector))).collect();
        assert_eq!(stored, query_sign_words(&vector));
        assert_eq!(stored.len(), 2);
        assert_eq!(sign_distance(&stored, &stored), 0);
        let opposite: Vec<f32> = vector.iter().map(|v| -v).collect();
        let zeros = vector.iter().filter(|v| **v == 0.0).count() as u32;
        assert_eq!(
            sign_distance(&stored, &query_sign_words(&opposite)),
            70 - zeros
        );
        // Against its own signs the dot product is the sum of the magnitudes.
        let magnitudes: f32 = vector.iter().map(|v| v.abs()).sum();
        assert!((SignDot::new(&vector).dot(&stored) - magnitudes).abs() < 1e-4);
        assert!((SignDot::new(&opposite).dot(&stored) + magnitudes).abs() < 1e-4);
    }

    #[test]
    fn quantized_vectors_keep_their_cosines() {
        let mut next = super::super::ann::tests::values(11);
        let mut vector = || -> Vec<f32> {
            let v: Vec<f32> = (0..384).map(|_| next()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / norm).collect()
        };
        for _ in 0..20 {
            let (a, b) = (vector(), vector());
            let stored = dequantized_vector(&quantized_bytes(&a));
            assert_eq!(quantized_bytes(&a).len(), 4 + 384);
            let exact = cosine_distance(&a, &b);
            let kept = cosine_distance(&stored, &b);
            assert!((exact - kept).abs() < 2e-3, "{exact} vs {kept}");
            // Read in place, the same distance as the decoded vector's.
            let in_place = Probe::new(&b).distance(&quantized_bytes(&a)).unwrap();
            assert!((in_place - kept).abs() < 1e-5, "{in_place} vs {kept}");
        }
        assert_eq!(
            dequantized_vector(&quantized_bytes(&[0.0; 8])),
            vec![0.0; 8]
        );
        assert!(dequantized_vector(&[1, 2]).is_empty());
        // The integer first pass: the exact integer dot, and cosines near the true ones.
        let a: Vec<i8> = (0..100).map(|i| (i % 255 - 127) as i8).collect();
        let b: Vec<u8> = (0..100).map(|i| (i * 7 % 256) as u8).collect();
        let slow: i32 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y as i8))
            .sum();
        assert_eq!(int8_dot(&a, &b), slow);
        assert_eq!(int8_dot_portable(&a, &b), slow);
        for _ in 0..20 {
            let (a, b) = (vector(), vector());
            let stored = quantized_bytes(&a);
            let values = int8_values(&stored);
            let approximate = Int8Probe::new(&b).distance(values, int8_norm(values));
            let exact = cosine_distance(&a, &b);
            assert!(
                (approximate - exact).abs() < 5e-3,
                "{approximate} vs {exact}"
            );
        }
        assert_eq!(
            Probe::new(&[1.0; 3]).distance(&quantized_bytes(&[1.0; 4])),
            None
        );
    }
}
