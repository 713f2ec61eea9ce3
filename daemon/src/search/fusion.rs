//! Hybrid ranking: BM25 and vector candidates fused into one ranking.
//!
//! Two rankings are fused by reciprocal rank fusion (Cormack et al., k = 60): `score(chunk) =
//! w_lexical / (k + rank_lexical) + w_semantic / (k + rank_semantic)`, ranks from 1, a missing
//! rank contributing nothing. A single ranking (semantic mode, or no chunk holding any of
//! the query's words) keeps its own scores, each over the best: RRF's `1/61, 1/62, ...` would
//! tell the ranking stage that the fortieth vector is as near as the first.

use std::collections::HashMap;

use crate::index::lexical::LexicalHit;

/// Which rankers a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchMode {
    /// BM25 and vectors, fused.
    #[default]
    Hybrid,
    /// BM25 only.
    Lexical,
    /// Vectors only.
    Semantic,
}

impl SearchMode {
    /// Parse `hybrid`, `lexical` or `semantic`.
    pub fn parse(text: &str) -> Option<SearchMode> {
        match text.trim().to_ascii_lowercase().as_str() {
            "" | "hybrid" => Some(SearchMode::Hybrid),
            "lexical" | "bm25" | "keyword" => Some(SearchMode::Lexical),
            "semantic" | "vector" => Some(SearchMode::Semantic),
            _ => None,
        }
    }
}

/// Queries with more distinct terms than this count as long (see [`Fusion::for_query`]).
pub const LONG_QUERY_TERMS: usize = 16;

/// The least share of its weight the semantic ranking keeps for a long query
/// (`AMANMCP_RANK_LONG_QUERY_FLOOR`).
const LONG_QUERY_FLOOR: f32 = 0.25;

/// The share of its weight the semantic ranking keeps for a one-identifier query
/// (`AMANMCP_RANK_IDENTIFIER_SEMANTIC_WEIGHT`). semble's 90 symbol queries, default mode:
/// 1 -> .984, 0.25 -> .986, 0 -> .990 (a trace replay, `bench/fit-rank.py`'s).
const IDENTIFIER_SEMANTIC_WEIGHT: f32 = 0.0;

/// How much more the vectors' first candidate counts at a full lead over their second
/// (`AMANMCP_RANK_VECTOR_LEAD`), and the lead below which it counts no more
/// (`AMANMCP_RANK_VECTOR_LEAD_FROM`); see [`Fusion::fuse`]. Replayed on semble's 540 queries
/// (NDCG@10), CoSQA (MRR) and SWE-bench: none .8947 / .357; .5 from .1 .8958 / .366, chosen
/// in all 27 leave-one-repository-out folds (CV .8958); SWE-bench unchanged.
const VECTOR_LEAD: f32 = 0.5;
const VECTOR_LEAD_FROM: f32 = 0.1;

/// Fusion parameters (`AMANMCP_RRF_K`, `AMANMCP_WEIGHT_LEXICAL`, `AMANMCP_WEIGHT_SEMANTIC`).
#[derive(Debug, Clone, Copy)]
pub struct Fusion {
    /// RRF's k.
    pub k: f32,
    /// Weight of the BM25 ranking.
    pub lexical_weight: f32,
    /// Weight of the vector ranking.
    pub semantic_weight: f32,
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion {
            k: 60.0,
            lexical_weight: 1.0,
            semantic_weight: 1.0,
        }
    }
}

impl Fusion {
    /// From the environment, defaults where unset or unparsable.
    pub fn from_env() -> Fusion {
        let var = |name: &str, default: f32| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<f32>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .unwrap_or(default)
        };
        let default = Fusion::default();
        Fusion {
            k: var("AMANMCP_RRF_K", default.k).max(1.0),
            lexical_weight: var("AMANMCP_WEIGHT_LEXICAL", default.lexical_weight),
            semantic_weight: var("AMANMCP_WEIGHT_SEMANTIC", default.semantic_weight),
        }
    }

    /// The weights for a query of `n_terms` distinct terms; `identifier`: the query is one
    /// identifier (`JoinSet`, `Session.request`). Long queries (pasted issues, tracebacks)
    /// lean on words: the vectors see only their start (the built-in model reads 128 tokens)
    /// while BM25 weighs every identifier in them. Past [`LONG_QUERY_TERMS`] terms the
    /// semantic weight shrinks in proportion, to no less than a quarter. An identifier is
    /// asked for by its spelling: the vector of one word says less than where it is written,
    /// so the vectors weigh [`IDENTIFIER_SEMANTIC_WEIGHT`] (their chunks still follow BM25's).
    pub fn for_query(&self, n_terms: usize, identifier: bool) -> Fusion {
        let scale = if identifier {
            super::rank::tuned("IDENTIFIER_SEMANTIC_WEIGHT", IDENTIFIER_SEMANTIC_WEIGHT)
        } else if n_terms > LONG_QUERY_TERMS {
            (LONG_QUERY_TERMS as f32 / n_terms as f32)
                .max(super::rank::tuned("LONG_QUERY_FLOOR", LONG_QUERY_FLOOR))
        } else {
            1.0
        };
        Fusion {
            semantic_weight: self.semantic_weight * scale,
            ..*self
        }
    }

    /// The weights while the vectors have seen only `seen` (0 to 1) of the project's chunks
    /// (a first index, or a large change, still being embedded): the vectors' weight scaled
    /// by that share. Their nearest chunks are the nearest among those embedded so far, a
    /// sample that misses the rest; at equal weight they drown BM25, which sees every chunk.
    /// A replay of semble's 540 queries with a random share of chunks left out of the
    /// vectors (`bench/fit-rank.py --embedded-shares`, default mode, NDCG@10): a quarter /
    /// half / three quarters embedded give .856 / .874 / .884 at equal weight, .878 / .880 /
    /// .885 so scaled (vectors off: .881).
    pub fn seen(&self, seen: f32) -> Fusion {
        Fusion {
            semantic_weight: self.semantic_weight * seen.clamp(0.0, 1.0),
            ..*self
        }
    }

    /// Semantic mode's score of each of the vectors' candidates, its similarity over the
    /// best (never below 0), times the vectors' weight: what the ranking stage keeps a
    /// hybrid candidate's score at least at when no candidate's file or directory is named
    /// by the query ([`super::rank::rank`]).
    pub fn nearness(&self, semantic: &[(u64, f32)]) -> HashMap<u64, f32> {
        let best = semantic
            .iter()
            .map(|(_, s)| *s)
            .fold(f32::EPSILON, f32::max);
        // 1 as built; 0 turns the floor off (`AMANMCP_RANK_NEAR_FLOOR`, for the CV sweep).
        let weight = self.semantic_weight * super::rank::tuned("NEAR_FLOOR", 1.0);
        (semantic.iter())
            .map(|(id, s)| (*id, weight * (s / best).max(0.0)))
            .collect()
    }

    /// Fuse two rankings of (chunk id, score), best first (BM25 scores; similarities, larger
    /// is nearer), into one, best first, with fused scores and each chunk's rank in each.
    pub fn fuse(&self, lexical: &[(u64, f32)], semantic: &[(u64, f32)]) -> Vec<Fused> {
        let single = lexical.is_empty() || semantic.is_empty();
        let mut fused: HashMap<u64, Fused> = HashMap::new();
        for (ranking, weight, is_lexical) in [
            (lexical, self.lexical_weight, true),
            (semantic, self.semantic_weight, false),
        ] {
            let best = ranking.iter().map(|(_, s)| *s).fold(f32::EPSILON, f32::max);
            for (rank, (id, score)) in ranking.iter().enumerate() {
                let entry = fused.entry(*id).or_insert(Fused {
                    id: *id,
                    score: 0.0,
                    lexical_rank: None,
                    semantic_rank: None,
                });
                let leg_rank = if is_lexical {
                    &mut entry.lexical_rank
                } else {
                    &mut entry.semantic_rank
                };
                let first = leg_rank.is_none();
                leg_rank.get_or_insert(rank);
                if !single {
                    entry.score += weight / (self.k + rank as f32 + 1.0);
                } else if first {
                    entry.score = (score / best).max(0.0);
                }
            }
        }
        // RRF keeps ranks alone. Where the vectors' first is far nearer than their second
        // (its gap to the second over its gap to the last), that lead is evidence semantic
        // mode keeps and rank fusion would lose: the first counts more, in proportion to
        // the vectors' weight.
        if let ([(first, s1), (_, s2), .., (_, last)], false) = (semantic, single) {
            let lead = (s1 - s2) / (s1 - last).max(f32::EPSILON);
            let from = super::rank::tuned("VECTOR_LEAD_FROM", VECTOR_LEAD_FROM).min(0.99);
            let ahead = ((lead - from) / (1.0 - from)).max(0.0);
            if let Some(entry) = fused.get_mut(first) {
                entry.score *= 1.0
                    + super::rank::tuned("VECTOR_LEAD", VECTOR_LEAD) * self.semantic_weight * ahead;
            }
        }
        let mut fused: Vec<Fused> = fused.into_values().collect();
        // Ties: the better lexical rank, then the better semantic rank (every id has one
        // or the other), never the id, which says only when a chunk was indexed.
        let rank = |rank: Option<usize>| rank.unwrap_or(usize::MAX);
        fused.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| rank(a.lexical_rank).cmp(&rank(b.lexical_rank)))
                .then_with(|| rank(a.semantic_rank).cmp(&rank(b.semantic_rank)))
        });
        fused
    }
}

/// A chunk of a fused ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fused {
    /// Its id.
    pub id: u64,
    /// Its fused score.
    pub score: f32,
    /// Its rank (from 0) among BM25's candidates, if there.
    pub lexical_rank: Option<usize>,
    /// Its rank (from 0) among the vectors' candidates, if there.
    pub semantic_rank: Option<usize>,
}

/// How fusion saw a hit, for its `why`: its rank in each leg (from 0; `None`: not among
/// that leg's candidates) and, when the legs were not weighed alike, their weights. `fused`:
/// whether both legs ran (semantic mode has only the vectors).
pub fn legs_why(
    fusion: &Fusion,
    lexical: Option<usize>,
    semantic: Option<usize>,
    fused: bool,
) -> String {
    if !fused {
        return match (lexical, semantic) {
            (Some(l), _) => format!("BM25 #{}", l + 1),
            (None, Some(s)) => format!("vectors #{}", s + 1),
            (None, None) => String::new(),
        };
    }
    let mut why = match (lexical, semantic) {
        (Some(l), Some(s)) => format!("BM25 #{}, vectors #{}", l + 1, s + 1),
        (Some(l), None) => format!("BM25 #{} (not among the nearest vectors)", l + 1),
        (None, Some(s)) => format!("vectors #{} (no BM25 match ranked)", s + 1),
        (None, None) => return String::new(),
    };
    if lexical.is_some()
        && semantic.is_some()
        && (fusion.lexical_weight - fusion.semantic_weight).abs() > 1e-3
    {
        why.push_str(&format!(
            "; weighed BM25 {:.2}, vectors {:.2}",
            fusion.lexical_weight, fusion.semantic_weight
        ));
    }
    why
}

/// Order a pasted issue's `hits` by their BM25 scores over the best (`bm25`: chunk id ->
/// score), each times one plus its fused score over the best fused score: BM25's gaps lead,
/// and the legs' agreement at most doubles a score. A chunk holding none of the query's words
/// (or missing from `bm25`) scores next to nothing, its fused order kept among such. See
/// `Searcher::search`.
pub fn order_by_bm25(hits: &mut [LexicalHit], bm25: &HashMap<u64, f32>) {
    let best = bm25.values().copied().fold(f32::EPSILON, f32::max);
    let fused_best = hits.iter().map(|h| h.score).fold(f32::EPSILON, f32::max);
    for hit in hits.iter_mut() {
        let ratio = bm25.get(&hit.chunk_id).map_or(0.0, |s| (s / best).max(0.0));
        hit.score = ratio.max(1e-6) * (1.0 + hit.score / fused_best);
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
}

/// Drop every hit that overlaps (same path, intersecting lines) a better one. `hits` are
/// `(path, start, end)` best first; returns the indexes kept.
pub fn without_overlaps<'a>(hits: impl Iterator<Item = (&'a str, u32, u32)>) -> Vec<usize> {
    let mut kept: HashMap<&str, Vec<(u32, u32)>> = HashMap::new();
    let mut out = Vec::new();
    for (i, (path, start, end)) in hits.enumerate() {
        let ranges = kept.entry(path).or_default();
        if ranges.iter().any(|(s, e)| *s <= end && start <= *e) {
            continue;
        }
        ranges.push((start, end));
        out.push(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The (id, score) pairs of a fused ranking.
    fn scored(fused: &[Fused]) -> Vec<(u64, f32)> {
        fused.iter().map(|f| (f.id, f.score)).collect()
    }

    /// A ranking of `ids` with falling scores.
    fn ranked(ids: &[u64]) -> Vec<(u64, f32)> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| (*id, 10.0 - i as f32))
            .collect()
    }

    #[test]
    fn rrf_rewards_agreement() {
        // The vectors' first barely nearer than their second: no lead to count.
        let near = [(3, 0.80), (4, 0.79), (1, 0.60)];
        let fused = scored(&Fusion::default().fuse(&ranked(&[1, 2, 3]), &near));
        let order: Vec<u64> = fused.iter().map(|(id, _)| *id).collect();
        // 1 and 3 tie at 1/61 + 1/63 (1 has the better lexical rank); 2 and 4 tie at 1/62.
        assert_eq!(order, vec![1, 3, 2, 4]);
        let expected = 1.0 / 61.0 + 1.0 / 63.0;
        assert!((fused[0].1 - expected).abs() < 1e-6);
    }

    #[test]
    fn the_vectors_first_counts_more_by_its_lead_over_their_second() {
        let bm25 = ranked(&[1, 2, 3]);
        // 3 is far nearer than the rest: its lead is (.9 - .5) / (.9 - .4) = .8, so it
        // counts 1 + .5 x (.8 - .1) / .9 times its RRF score, and passes 1.
        let near = [(3, 0.9), (4, 0.5), (5, 0.45), (1, 0.4)];
        let fused = Fusion::default().fuse(&bm25, &near);
        assert_eq!(fused[0].id, 3);
        let rrf = 1.0 / 63.0 + 1.0 / 61.0;
        let factor = 1.0 + 0.5 * (0.8 - 0.1) / 0.9;
        assert!((fused[0].score - rrf * factor).abs() < 1e-6);
        // A small lead counts nothing, nor does any lead where the vectors weigh nothing (a
        // one-identifier query).
        let close = [(3, 0.9), (4, 0.89), (5, 0.45), (1, 0.4)];
        let fused = Fusion::default().fuse(&bm25, &close);
        assert!((fused.iter().find(|f| f.id == 3).unwrap().score - rrf).abs() < 1e-6);
        let identifier = Fusion::default().for_query(1, true);
        let fused = identifier.fuse(&bm25, &near);
        assert_eq!(fused[0].id, 1);
        assert!((fused.iter().find(|f| f.id == 3).unwrap().score - 1.0 / 63.0).abs() < 1e-6);
    }

    #[test]
    fn a_single_ranking_keeps_its_scores_gaps() {
        // Semantic mode: the second vector is half as near as the first, not 60/61 as close.
        let fused = Fusion::default().fuse(&[], &[(7, 0.8), (8, 0.4), (9, -0.2)]);
        assert_eq!(scored(&fused), vec![(7, 1.0), (8, 0.5), (9, 0.0)]);
        assert_eq!(
            (fused[1].lexical_rank, fused[1].semantic_rank),
            (None, Some(1))
        );
        // BM25's candidates alone (no vector candidate): their scores, the same way.
        let fused = Fusion::default().fuse(&[(3, 12.0), (4, 3.0)], &[]);
        assert_eq!(scored(&fused), vec![(3, 1.0), (4, 0.25)]);
    }

    #[test]
    fn the_why_names_each_legs_rank_and_uneven_weights() {
        let even = Fusion::default();
        assert_eq!(
            legs_why(&even, Some(1), Some(6), true),
            "BM25 #2, vectors #7"
        );
        assert_eq!(
            legs_why(&even, None, Some(0), true),
            "vectors #1 (no BM25 match ranked)"
        );
        assert_eq!(
            legs_why(&even.for_query(32, false), Some(0), Some(2), true),
            "BM25 #1, vectors #3; weighed BM25 1.00, vectors 0.50"
        );
        assert_eq!(legs_why(&even, None, Some(4), false), "vectors #5");
    }

    #[test]
    fn weights_shift_the_order() {
        let fusion = Fusion {
            k: 60.0,
            lexical_weight: 0.0,
            semantic_weight: 1.0,
        };
        let order: Vec<u64> = fusion
            .fuse(&ranked(&[1, 2]), &ranked(&[2, 1]))
            .iter()
            .map(|f| f.id)
            .collect();
        assert_eq!(order, vec![2, 1]);
    }

    #[test]
    fn long_queries_lean_on_words() {
        let fusion = Fusion::default();
        assert_eq!(fusion.for_query(5, false).semantic_weight, 1.0);
        assert_eq!(fusion.for_query(16, false).semantic_weight, 1.0);
        assert_eq!(fusion.for_query(32, false).semantic_weight, 0.5);
        assert_eq!(fusion.for_query(400, false).semantic_weight, 0.25);
        assert_eq!(fusion.for_query(400, false).lexical_weight, 1.0);
        // Half the chunks embedded: the vectors weigh half.
        assert_eq!(fusion.seen(0.5).semantic_weight, 0.5);
        assert_eq!(fusion.seen(1.0).semantic_weight, 1.0);
        assert_eq!(fusion.for_query(32, false).seen(0.5).semantic_weight, 0.25);
        // One identifier: BM25 alone orders the candidates; the vectors' own come after.
        let identifier = fusion.for_query(1, true);
        assert_eq!(identifier.semantic_weight, 0.0);
        let order: Vec<u64> = identifier
            .fuse(&[(1, 5.0), (2, 4.0)], &[(3, 0.9), (2, 0.8), (1, 0.7)])
            .iter()
            .map(|f| f.id)
            .collect();
        assert_eq!(order, vec![1, 2, 3]);
    }

    #[test]
    fn overlapping_hits_keep_the_better_one() {
        let hits = [
            ("a.rs", 1, 10),
            ("a.rs", 5, 12),
            ("b.rs", 5, 12),
            ("a.rs", 11, 20),
        ];
        assert_eq!(without_overlaps(hits.iter().copied()), vec![0, 2, 3]);
    }

    #[test]
    fn a_pasted_issue_is_ordered_by_bm25_over_both_legs_candidates() {
        let hit = |id: u64, score: f32| LexicalHit {
            chunk_id: id,
            path: format!("f{id}.py"),
            start_line: 1,
            end_line: 2,
            language: "python".into(),
            score,
            ..LexicalHit::default()
        };
        // BM25's own candidates 1 to 3; 4 and 5 only the vectors found, 4 scored by BM25
        // for the same query (below its candidates), 5 holding none of its words. The
        // vectors put 3 first: fused, 3 leads; BM25's lead (30 against 6) holds, while the
        // legs' agreement lifts 3 over 2 (5 against 6, but ranked by both).
        let bm25: HashMap<u64, f32> = [(1, 30.0), (2, 6.0), (3, 5.0), (4, 4.5)].into();
        let fused = Fusion::default().fuse(&ranked(&[1, 2, 3]), &ranked(&[3, 5, 4, 1]));
        assert_eq!(fused[0].id, 3);
        let fused_best = fused[0].score;
        let mut hits: Vec<LexicalHit> = fused.iter().map(|f| hit(f.id, f.score)).collect();
        let fused_of = |id: u64| fused.iter().find(|f| f.id == id).unwrap().score / fused_best;
        order_by_bm25(&mut hits, &bm25);
        let order: Vec<u64> = hits.iter().map(|h| h.chunk_id).collect();
        assert_eq!(order, vec![1, 3, 2, 4, 5]);
        assert!((hits[0].score - (1.0 + fused_of(1))).abs() < 1e-6);
        assert!((hits[3].score - 4.5 / 30.0 * (1.0 + fused_of(4))).abs() < 1e-6);
        assert!(hits[4].score > 0.0 && hits[4].score < 1e-5);
    }

    #[test]
    fn modes_parse() {
        assert_eq!(SearchMode::parse("Semantic"), Some(SearchMode::Semantic));
        assert_eq!(SearchMode::parse(""), Some(SearchMode::Hybrid));
        assert_eq!(SearchMode::parse("fuzzy"), None);
    }

    #[test]
    fn nearness_is_semantic_modes_score_times_the_vectors_weight() {
        let near = Fusion::default().nearness(&[(1, 0.8), (2, 0.4), (3, -0.2)]);
        assert_eq!(near[&1], 1.0);
        assert_eq!(near[&2], 0.5);
        assert_eq!(near[&3], 0.0);
        // A long query's vectors weigh less, and so does what they keep.
        let near = Fusion::default()
            .for_query(32, false)
            .nearness(&[(1, 0.8), (2, 0.4)]);
        assert_eq!((near[&1], near[&2]), (0.5, 0.25));
    }
}
