//! Search over one project's index, top to bottom: validate the filters, analyse the query
//! ([`query`]: weighted terms, files it names), retrieve BM25 candidates
//! ([`crate::index::lexical`]) and vector candidates ([`semantic`]), fuse them by reciprocal
//! rank ([`fusion`]), drop overlaps, reorder by the ranking stage ([`rank`]), and cut the page.
//! [`similar`] does the same from a reference instead of a query; [`lookup`] serves code by
//! path or symbol; [`usages`] lists where a name is defined and used.

pub(crate) mod beside;
pub mod fusion;
pub mod graph;
pub mod label;
pub mod lookup;
pub mod pasted;
pub mod query;
pub mod rank;
pub mod semantic;
pub mod similar;
pub mod usages;
mod view;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use globset::GlobBuilder;

use crate::embed::Embedding;
use crate::error::{Error, UserError};
use crate::index::ProjectIndex;
use crate::index::lexical::{LexicalHit, LexicalQuery};
use fusion::{Fusion, SearchMode};
use view::StoreView;

/// Largest page a search may ask for.
pub const MAX_LIMIT: usize = 1000;

/// A file name matching more files than this says too little to boost them.
const MAX_MENTIONED_MATCHES: usize = 3;

/// Candidates each ranker contributes to a fused ranking (at least: more when a page
/// reaches deeper).
const FUSION_DEPTH: usize = 100;

/// At most this many chunks holding any of the query's words (a page) come before the
/// chunks found by meaning alone.
const FEW_MATCHES: usize = 10;

/// What searches need beyond the index: the embedder (if any) and fusion settings.
#[derive(Clone, Default)]
pub struct SearchConfig {
    /// The daemon's embedder; `None`: lexical only.
    pub embedding: Option<Arc<Embedding>>,
    /// Fusion parameters.
    pub fusion: Fusion,
    /// The ANN search effort (HNSW `ef`; 0: the default, 200).
    pub ann_effort: usize,
}

impl std::fmt::Debug for SearchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchConfig")
            .field(
                "embedder",
                &self.embedding.as_ref().map(|e| e.embedder.model_id()),
            )
            .field("fusion", &self.fusion)
            .field("ann_effort", &self.ann_effort)
            .finish()
    }
}

/// A search request.
#[derive(Debug, Clone)]
pub struct SearchParams {
    /// Free-text query.
    pub query: String,
    /// Page size.
    pub limit: usize,
    /// Results to skip.
    pub offset: usize,
    /// Only paths matching this glob.
    pub path_glob: Option<String>,
    /// Only this file, or the files under this directory (see [`Searcher::scope`]).
    pub within: Option<String>,
    /// Only this language.
    pub language: Option<String>,
    /// Which rankers to use.
    pub mode: SearchMode,
}

/// Whether a search could use vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Semantic {
    /// Not asked for (lexical mode).
    NotUsed,
    /// Used; `complete` says whether every chunk had its vector.
    Used {
        /// Every chunk had a vector when the search ran.
        complete: bool,
    },
    /// Asked for but unavailable (no embedder, or it failed): lexical results only.
    Unavailable(String),
}

/// A page of results.
pub struct Found {
    /// The hits, best first (`score`: BM25 in lexical mode, the fused score otherwise).
    pub hits: Vec<LexicalHit>,
    /// Total matching chunks.
    pub total: u64,
    /// Whether more results exist beyond this page.
    pub truncated: bool,
    /// Whether vectors took part.
    pub semantic: Semantic,
    /// Query words not searched for, each with the reason.
    pub set_aside: Vec<(String, &'static str)>,
}

impl Found {
    fn page(hits: Vec<LexicalHit>, total: u64, offset: usize, semantic: Semantic) -> Found {
        Found {
            truncated: total > (offset + hits.len()) as u64,
            hits,
            total,
            semantic,
            set_aside: Vec::new(),
        }
    }

    /// The same page, noting the query words left out as the project's own language.
    fn own_language(mut self, words: &[String]) -> Found {
        self.set_aside = words
            .iter()
            .map(|w| (w.clone(), OWN_LANGUAGE_REASON))
            .collect();
        self
    }
}

/// Why a query word naming the project's language was not searched for.
const OWN_LANGUAGE_REASON: &str =
    "the project's own language: most of its files are in it, so it tells none apart";

/// The path and language filters of a request, validated (the glob expanded to paths).
struct Filters {
    paths: Option<Vec<String>>,
    language: Option<String>,
}

/// Searches one project's index.
pub struct Searcher<'a> {
    /// The project's canonical root.
    pub root: &'a Path,
    /// Its storage.
    pub index: &'a ProjectIndex,
    /// The embedder and fusion settings.
    pub config: &'a SearchConfig,
    /// The code graph's mentions kept across requests.
    pub graph_memo: &'a graph::memo::Memo,
}

impl Searcher<'_> {
    /// Run a search. Answers from whatever is committed, even mid-pass.
    pub fn search(&self, params: &SearchParams) -> Result<Found, Error> {
        if params.query.trim().is_empty() {
            return Err(UserError::InvalidArgument {
                name: "query",
                reason: "must not be empty".into(),
            }
            .into());
        }
        let filters = self.filters(params)?;
        let mut profile = rank::Profile::new(&params.query);
        // A pasted issue is searched for without its links and HTML ([`pasted`]).
        let text = match profile.kind {
            rank::QueryKind::Issue => pasted::without_markup(&params.query),
            _ => std::borrow::Cow::Borrowed(params.query.as_str()),
        };
        if text != params.query {
            profile = rank::Profile::new(&text);
            profile.kind = rank::QueryKind::Issue;
        }
        let mentioned = self.mentioned_files(&text)?;
        let mut terms = query::weighted_terms(&text);
        // "... in python", asked of a Python project, tells no file apart.
        let own_language = query::project_language_terms(&terms, |language| {
            self.index.lexical.language_share(language)
        });
        terms.retain(|(term, _)| !own_language.contains(term));
        // A pasted issue's title terms weigh more, and get the forms code uses below.
        let title_terms =
            (profile.kind == rank::QueryKind::Issue).then(|| query::title_terms(&text));
        if let Some(title) = &title_terms {
            query::weight_title(&mut terms, title);
        }
        // Prose says `threads`, `scheduled`; code says `thread`, `scheduler`. Of a long
        // query, only a pasted issue's title, its short question, gets the forms.
        let exists = |form: &str| self.index.lexical.doc_share(form) > 0.0;
        if terms.len() <= fusion::LONG_QUERY_TERMS {
            query::add_variants(&mut terms, |_| true, exists);
        } else if let Some(title) = &title_terms {
            query::add_variants(&mut terms, |term| title.contains(term), exists);
        }
        let lexical_query = |offset, limit| LexicalQuery {
            text: &text,
            terms: &terms,
            paths: filters.paths.as_deref(),
            language: filters.language.as_deref(),
            offset,
            limit,
            more_like_this: false,
            mentioned: &mentioned,
            chunks: None,
        };
        let depth = (params.offset + params.limit).max(FUSION_DEPTH);
        // BM25's candidates through the ranking stage, paged.
        let ranked_page = |hits: Vec<LexicalHit>, total: usize, semantic: Semantic| {
            let page = self.page(&profile, hits, params, None, None);
            Found::page(page, total as u64, params.offset, semantic).own_language(&own_language)
        };
        if params.mode == SearchMode::Lexical {
            let (hits, total) = self.index.lexical.search(&lexical_query(0, depth))?;
            return Ok(ranked_page(hits, total, Semantic::NotUsed));
        }
        // A pasted issue's vectors come from its title: the model reads its first 128
        // tokens, and the start of an issue's body is a template or a traceback as often as
        // it is the subject.
        let meaning = match profile.kind {
            rank::QueryKind::Issue => query::title(&text),
            _ => &text,
        };
        let meaning = query::without_words(meaning, &own_language);
        // The query's embedding and nearest neighbours (the slower half) run on a search
        // thread while this one searches BM25.
        let (semantic, lexical) = beside::run(
            || self.semantic_ranking(|embedding| embedding.embed_query(&meaning), depth, &filters),
            || Err("the vector search failed".into()),
            || match params.mode {
                SearchMode::Semantic => Ok((Vec::new(), 0)),
                _ => self.index.lexical.search(&lexical_query(0, depth)),
            },
        );
        let (ranking, embedded) = match semantic {
            Ok(found) => found,
            Err(reason) => {
                // No vectors to be had: answer lexically, and say so.
                let (hits, total) = match params.mode {
                    SearchMode::Semantic => self.index.lexical.search(&lexical_query(0, depth))?,
                    _ => lexical?,
                };
                return Ok(ranked_page(hits, total, Semantic::Unavailable(reason)));
            }
        };
        let (lexical_hits, lexical_total) = lexical?;
        let fusion = self
            .config
            .fusion
            .for_query(terms.len(), profile.kind == rank::QueryKind::Identifier)
            .seen(embedded.share());
        // A pasted issue is ordered by BM25's scores over both legs' candidates (those only
        // the vectors found scored for the same query): its vectors come from the title
        // alone, and RRF's scores fall by rank alone (1/61, 1/62, ...), so the ranking
        // stage's priors would reorder a long query's confident BM25 answer as freely as a
        // tie. The vectors add candidates, not order.
        let issue_bm25: Option<HashMap<u64, f32>> = (profile.kind == rank::QueryKind::Issue
            && params.mode == SearchMode::Hybrid)
            .then(|| {
                let known: std::collections::HashSet<u64> =
                    lexical_hits.iter().map(|h| h.chunk_id).collect();
                let others: Vec<u64> = (ranking.iter().map(|(id, _)| *id))
                    .filter(|id| !known.contains(id))
                    .collect();
                let mut query = lexical_query(0, others.len());
                query.chunks = Some(&others);
                let (scored, _) = self.index.lexical.search(&query)?;
                Ok::<_, Error>(
                    (lexical_hits.iter().chain(&scored))
                        .map(|h| (h.chunk_id, h.score))
                        .collect(),
                )
            })
            .transpose()?;
        // When only a handful of chunks hold any of the query's words (a rare identifier),
        // those are the answer before anything found by meaning alone: the vectors' nearest
        // chunks share no word with the query, and priors over their files (several hits,
        // definitions) must not lift them over the only exact matches.
        let exact_first: Option<std::collections::HashSet<u64>> = (params.mode
            == SearchMode::Hybrid
            && (1..=FEW_MATCHES).contains(&lexical_total)
            && lexical_hits.len() >= lexical_total)
            .then(|| lexical_hits.iter().map(|h| h.chunk_id).collect());
        if rank::trace::enabled() {
            // Each leg as fusion got it, so a replay can fuse them otherwise; a pasted
            // issue's BM25 scores of every candidate.
            let lexical: Vec<(u64, f32)> =
                lexical_hits.iter().map(|h| (h.chunk_id, h.score)).collect();
            let issue_bm25: Option<Vec<(u64, f32)>> = issue_bm25
                .as_ref()
                .map(|s| s.iter().map(|(id, v)| (*id, *v)).collect());
            rank::trace::write(&serde_json::json!({
                "legs": { "lexical": lexical, "semantic": ranking,
                          "lexical_total": lexical_total, "n_terms": terms.len(),
                          "lexical_weight": fusion.lexical_weight,
                          "semantic_weight": fusion.semantic_weight, "k": fusion.k,
                          "issue_bm25": issue_bm25 },
            }));
        }
        // Each vector candidate's score in semantic mode, which the ranking stage keeps a
        // candidate at when no file or directory is named by the query (`rank::rank`).
        // Not for a pasted issue, ordered by BM25 above.
        let near = (params.mode == SearchMode::Hybrid
            && profile.kind != rank::QueryKind::Issue
            && !lexical_hits.is_empty())
        .then(|| fusion.nearness(&ranking));
        let (mut hits, total) =
            self.fused(lexical_hits, lexical_total as u64, &ranking, &fusion, None)?;
        if let Some(bm25) = &issue_bm25 {
            fusion::order_by_bm25(&mut hits, bm25);
        }
        Ok(Found::page(
            self.page(&profile, hits, params, exact_first.as_ref(), near.as_ref()),
            total,
            params.offset,
            embedded.used(),
        )
        .own_language(&own_language))
    }

    /// The candidates reordered by the ranking stage ([`rank`]), cut to the page asked for
    /// and labelled ([`label`]); each file's symbols are read once for both. The chunks in
    /// `exact` (the only ones holding the query's words) come first, each group in the
    /// ranking stage's order; `near`: each vector candidate's score in semantic mode, the
    /// least a candidate keeps when no file or directory is named ([`rank::rank`]).
    fn page(
        &self,
        profile: &rank::Profile,
        hits: Vec<LexicalHit>,
        params: &SearchParams,
        exact: Option<&std::collections::HashSet<u64>>,
        near: Option<&HashMap<u64, f32>>,
    ) -> Vec<LexicalHit> {
        let view = StoreView::new(self.index);
        if rank::trace::enabled() {
            let exact: Vec<u64> = exact.map_or(Vec::new(), |e| e.iter().copied().collect());
            let mode = format!("{:?}", params.mode).to_lowercase();
            rank::trace::write(&serde_json::json!({ "mode": mode, "exact": exact }));
        }
        let mut ranked = rank::rank(profile, hits, &view, near);
        if let Some(exact) = exact {
            let (mut first, rest): (Vec<LexicalHit>, Vec<LexicalHit>) = ranked
                .into_iter()
                .partition(|h| exact.contains(&h.chunk_id));
            for hit in &mut first {
                hit.why.push(format!(
                    "one of the {} chunks holding the query's words",
                    exact.len()
                ));
            }
            first.extend(rest);
            ranked = first;
        }
        let mut page: Vec<LexicalHit> = ranked
            .into_iter()
            .skip(params.offset)
            .take(params.limit)
            .collect();
        label::label(&params.query, &mut page, |hit| view.defined(hit));
        page
    }

    /// Indexed files the query names: by path (a suffix of an indexed path, so absolute and
    /// site-packages paths match too) or by a file name that only a few files have.
    fn mentioned_files(&self, query: &str) -> Result<Vec<String>, Error> {
        let mentions = query::path_mentions(query);
        if mentions.is_empty() {
            return Ok(Vec::new());
        }
        let paths = self.index.store.all_paths()?;
        let mut out = Vec::new();
        for mention in &mentions {
            // The longest suffix of the mention that is an indexed path, else the paths that
            // end with it.
            let parts: Vec<&str> = mention.split('/').collect();
            let found: Vec<&String> = (0..parts.len())
                .map(|i| parts[i..].join("/"))
                .find_map(|suffix| {
                    let slashed = format!("/{suffix}");
                    let hits: Vec<&String> = paths
                        .iter()
                        .filter(|p| **p == suffix || p.ends_with(&slashed))
                        .collect();
                    (!hits.is_empty()).then_some(hits)
                })
                .unwrap_or_default();
            if found.len() <= MAX_MENTIONED_MATCHES {
                out.extend(found.into_iter().cloned());
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Fuse a lexical page (from rank 0) with a semantic ranking, fetch the hits only the
    /// vectors found, drop overlapping and `excluded` hits. Returns every fused hit, best
    /// first, and the total number of matches.
    fn fused(
        &self,
        lexical_hits: Vec<LexicalHit>,
        lexical_total: u64,
        semantic: &[(u64, f32)],
        fusion: &Fusion,
        excluded: Option<&dyn Fn(&LexicalHit) -> bool>,
    ) -> Result<(Vec<LexicalHit>, u64), Error> {
        let lexical: Vec<(u64, f32)> = lexical_hits.iter().map(|h| (h.chunk_id, h.score)).collect();
        let fused = fusion.fuse(&lexical, semantic);
        let both = !lexical.is_empty() && !semantic.is_empty();
        let mut by_id: HashMap<u64, LexicalHit> =
            lexical_hits.into_iter().map(|h| (h.chunk_id, h)).collect();
        let missing: Vec<u64> = fused
            .iter()
            .map(|f| f.id)
            .filter(|id| !by_id.contains_key(id))
            .collect();
        let semantic_only = missing.len() as u64;
        by_id.extend(self.index.lexical.chunks_by_id(&missing)?);
        let hits: Vec<LexicalHit> = fused
            .into_iter()
            .filter_map(|f| {
                by_id.remove(&f.id).map(|mut hit| {
                    hit.score = f.score;
                    let why = fusion::legs_why(fusion, f.lexical_rank, f.semantic_rank, both);
                    if !why.is_empty() {
                        hit.why.insert(0, why);
                    }
                    hit
                })
            })
            .filter(|hit| excluded.is_none_or(|excluded| !excluded(hit)))
            .collect();
        let keep = fusion::without_overlaps(
            hits.iter()
                .map(|h| (h.path.as_str(), h.start_line, h.end_line)),
        );
        let n_found = hits.len();
        let mut keep = keep.into_iter().peekable();
        let hits: Vec<LexicalHit> = hits
            .into_iter()
            .enumerate()
            .filter_map(|(i, hit)| (keep.next_if_eq(&i).is_some()).then_some(hit))
            .collect();
        let dropped = (n_found - hits.len()) as u64;
        let total = (lexical_total + semantic_only)
            .saturating_sub(dropped)
            .max(hits.len() as u64);
        Ok((hits, total))
    }

    /// The page size, path filter (the glob expanded to indexed paths) and language filter
    /// shared by every search-shaped request, validated.
    fn filters(&self, params: &SearchParams) -> Result<Filters, Error> {
        if params.limit == 0 || params.limit > MAX_LIMIT {
            return Err(UserError::InvalidArgument {
                name: "limit",
                reason: format!("must be between 1 and {MAX_LIMIT}, got {}", params.limit),
            }
            .into());
        }
        let paths = self.scope(params.path_glob.as_deref(), params.within.as_deref())?;
        let language = match params.language.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(given) => Some(
                crate::files::lang::resolve_language(given)
                    .ok_or_else(|| UserError::InvalidArgument {
                        name: "language",
                        reason: format!(
                            "unknown language {given:?}; one of: {}",
                            crate::files::lang::language_names().join(", ")
                        ),
                    })?
                    .to_string(),
            ),
        };
        Ok(Filters { paths, language })
    }

    /// The indexed paths a request may answer from: those matching `glob`, and `within`
    /// (a file, or a directory: the files under it; checked to stay inside the root). `None`
    /// when neither is given.
    fn scope(
        &self,
        glob: Option<&str>,
        within: Option<&str>,
    ) -> Result<Option<Vec<String>>, Error> {
        let glob = glob.filter(|g| !g.is_empty());
        let within = match within.filter(|w| !w.trim().is_empty()) {
            Some(path) => Some(lookup::normalized(lookup::relative_inside(
                self.root, path,
            )?)),
            None => None,
        };
        if glob.is_none() && within.is_none() {
            return Ok(None);
        }
        let files = self.index.store.all_files()?;
        let inside = |path: &str| match within.as_deref() {
            None | Some("") => true,
            Some(scope) => path
                .strip_prefix(scope)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
        };
        let matcher = match glob {
            Some(glob) => Some(Self::glob(glob)?),
            None => None,
        };
        Ok(Some(
            files
                .into_keys()
                .filter(|path| inside(path))
                .filter(|path| matcher.as_ref().is_none_or(|m| m.is_match(path)))
                .collect(),
        ))
    }

    /// `glob` compiled (`dir/` standing for `dir/**`).
    fn glob(glob: &str) -> Result<globset::GlobMatcher, Error> {
        let pattern = if glob.ends_with('/') {
            format!("{glob}**")
        } else {
            glob.to_string()
        };
        let matcher = GlobBuilder::new(&pattern)
            .literal_separator(false)
            .build()
            .map_err(|e| UserError::InvalidArgument {
                name: "path",
                reason: format!("bad glob {glob:?}: {e}"),
            })?
            .compile_matcher();
        Ok(matcher)
    }
}
