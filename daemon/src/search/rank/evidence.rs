//! What the ranking stage's rules see in one candidate ([`Evidence`]), and the factor they
//! make of it. Reading the evidence and weighing it are kept apart so each can be traced
//! (`trace.rs`) and fitted.

use super::paths::{
    is_secondary_path, module_directory, names_file, path_parts, singular, spelled_by, stem_of,
    stem_words, superseded,
};
use super::text::defines_in_text;
use super::{
    DEFINES_AS_TYPED, DEFINES_IDENTIFIER, DEFINES_MENTIONED, DEFINES_WORDS, DIRECTORY_NAMED,
    FILE_NAMED, FILE_SPELLED, IndexView, OLD_VERSION, Profile, QueryKind, SECONDARY_PATH, tuned,
};
use rustc_hash::FxHashMap;

use crate::index::lexical::LexicalHit;

/// How a candidate defines what the query asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Defines {
    /// It defines none of the query's names.
    #[default]
    None,
    /// The identifier the query is; `typed`: spelled as typed (`Router`, not `router`).
    Identifier { typed: bool },
    /// A code word used inside a sentence.
    Mentioned,
    /// A name spelled out by two adjacent query words (`join sets` -> `JoinSet`).
    Words,
}

/// Why a file is named by the query.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Named {
    /// It is not.
    #[default]
    No,
    /// Its stem is this query word, of this rarity weight (0 to 1).
    Word(Weighed),
    /// Its stem is these initials of three query words.
    Acronym(String),
    /// It is this module's own file, beside its directory.
    Module(String),
}

/// A query word and its rarity weight in the project (0 to 1).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Weighed {
    pub word: String,
    pub weight: f32,
}

/// What the rules see in one candidate.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Evidence {
    /// Its definitions of the query's names.
    pub defines: Defines,
    /// Its file's name against the query's words.
    pub named: Named,
    /// Words after the first of a file name the query spells in a row (0: not spelled).
    pub spelled: u32,
    /// The query word naming its directory, if one does.
    pub directory: Option<Weighed>,
    /// An older version beside a newer one.
    pub old_version: bool,
    /// Tests, examples, docs, generated code, not asked for.
    pub secondary: bool,
}

impl Evidence {
    /// Whether the candidate's path says something about the query: its file or directory
    /// named by a query word, or its file name spelled by them.
    pub fn names_the_path(&self) -> bool {
        self.named != Named::No || self.spelled > 0 || self.directory.is_some()
    }

    /// Read `hit` for `profile`. `file_words`: the query words that tell files apart by name,
    /// with their weights; `rarity`: each query word's. `of_path` keeps what a file's path
    /// says for the query (the same for each of its chunks) through one ranking.
    pub fn read(
        profile: &Profile,
        file_words: &[(&str, f32)],
        rarity: &[f32],
        hit: &LexicalHit,
        view: &dyn IndexView,
        of_path: &mut FxHashMap<String, Evidence>,
    ) -> Evidence {
        let mut out = match of_path.get(&hit.path) {
            Some(known) => known.clone(),
            None => {
                let read = Self::of_path(profile, file_words, rarity, &hit.path, view);
                of_path.insert(hit.path.clone(), read.clone());
                read
            }
        };
        out.defines = Self::defines(profile, hit, view);
        out
    }

    /// How `hit` defines the query's names.
    fn defines(profile: &Profile, hit: &LexicalHit, view: &dyn IndexView) -> Defines {
        // The index is read only when a rule below can use what it says.
        let defined_as_written = if !profile.names.is_empty() || profile.kind == QueryKind::Prose {
            view.defined_in(hit)
        } else {
            Vec::new()
        };
        let defined: Vec<String> = defined_as_written
            .iter()
            .map(|d| d.to_lowercase())
            .collect();
        if !profile.names.is_empty()
            && (defined.iter().any(|d| profile.names.contains(d)) || {
                let lower = hit.body.to_lowercase();
                profile.names.iter().any(|n| defines_in_text(&lower, n))
            })
        {
            match profile.kind {
                // `Router` asks for the module `Router` before the function `router`.
                QueryKind::Identifier => Defines::Identifier {
                    typed: defined_as_written.iter().any(|d| profile.typed.contains(d)),
                },
                _ => Defines::Mentioned,
            }
        } else if profile.kind == QueryKind::Prose
            && defined
                .iter()
                .any(|d| profile.spelled.iter().any(|s| singular(d) == s))
        {
            Defines::Words
        } else {
            Defines::None
        }
    }

    /// What the file's `path` says for the query: its name, its directory, whether it is
    /// an older copy or secondary.
    fn of_path(
        profile: &Profile,
        file_words: &[(&str, f32)],
        rarity: &[f32],
        path: &str,
        view: &dyn IndexView,
    ) -> Evidence {
        let mut out = Evidence::default();
        let (dirs, stem) = path_parts(path);
        let words = stem_words(path);
        let named = file_words
            .iter()
            .filter(|(w, _)| names_file(w, &stem, &words, profile.names_by_prefix(w)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let file_word = named.map(|(w, _)| *w);
        if let Some((word, weight)) = named {
            out.named = Named::Word(Weighed {
                word: word.to_string(),
                weight: *weight,
            });
        } else if let Some(acronym) = profile
            .acronyms
            .iter()
            .find(|a| stem == **a || words.iter().any(|w| w == *a))
        {
            out.named = Named::Acronym(acronym.clone());
        } else if profile
            .words
            .iter()
            .any(|w| singular(w) == singular(&stem) || stem_of(w) == singular(&stem))
            && view.has_directory(module_directory(path))
        {
            // A module's own file beside its directory (`command.rb` beside `command/`,
            // `de.rs` beside `de/`, `Encoding.hs` beside `Encoding/`) is named by its word
            // however many files the word names below: the module answers before what it
            // gathers.
            out.named = Named::Module(stem.clone());
        }
        // A file whose whole name the query spells, word by word (`syslog handler` ->
        // `SyslogHandler.php`), more so the more words it takes (`HttpClientEngine` over
        // `HttpClient`).
        if profile.kind == QueryKind::Prose && spelled_by(&profile.words, &words) {
            out.spelled = words.len().saturating_sub(1) as u32;
        }
        // A directory named by another word tells apart files of one name (`binding/json.go`
        // from `render/json.go` for "JSON request binding"), as much as the word is specific
        // to a part of the project.
        if let Some((word, weight)) = profile.words.iter().zip(rarity).find(|(w, _)| {
            Some(w.as_str()) != file_word
                && dirs.iter().any(|d| d == *w || singular(d) == singular(w))
        }) {
            out.directory = Some(Weighed {
                word: word.clone(),
                weight: *weight,
            });
        }
        out.old_version = superseded(path, &profile.words, view);
        out.secondary = !profile.wants_secondary && is_secondary_path(path);
        out
    }

    /// The product of the factors the evidence earns, and each rule that applied, in words.
    pub fn factor(&self) -> (f32, Vec<String>) {
        let mut factor = 1.0;
        let mut why = Vec::new();
        match self.defines {
            Defines::None => {}
            Defines::Identifier { typed } => {
                factor *= tuned("DEFINES_IDENTIFIER", DEFINES_IDENTIFIER);
                if typed {
                    factor *= tuned("DEFINES_AS_TYPED", DEFINES_AS_TYPED);
                }
                why.push("defines a name the query asks for".to_string());
            }
            Defines::Mentioned => {
                factor *= tuned("DEFINES_MENTIONED", DEFINES_MENTIONED);
                why.push("defines a name the query asks for".to_string());
            }
            Defines::Words => {
                factor *= tuned("DEFINES_WORDS", DEFINES_WORDS);
                why.push("defines a name the query's words spell".to_string());
            }
        }
        match &self.named {
            Named::No => {}
            Named::Word(Weighed { word, weight }) => {
                factor *= 1.0 + (tuned("FILE_NAMED", FILE_NAMED) - 1.0) * weight;
                why.push(format!("file named by `{word}`"));
            }
            Named::Acronym(acronym) => {
                factor *= tuned("FILE_NAMED", FILE_NAMED);
                why.push(format!("file named by `{acronym}`"));
            }
            Named::Module(stem) => {
                factor *= tuned("FILE_NAMED", FILE_NAMED);
                why.push(format!("the module `{stem}` beside its directory"));
            }
        }
        if self.spelled > 0 {
            factor *= tuned("FILE_SPELLED", FILE_SPELLED).powi(self.spelled as i32);
            why.push("file named by the query's words in a row".to_string());
        }
        if let Some(Weighed { word, weight }) = &self.directory {
            factor *= 1.0 + (tuned("DIRECTORY_NAMED", DIRECTORY_NAMED) - 1.0) * weight;
            why.push(format!("directory named by `{word}`"));
        }
        if self.old_version {
            factor *= tuned("OLD_VERSION", OLD_VERSION);
            why.push("an older version beside a newer one (lower)".to_string());
        }
        if self.secondary {
            factor *= tuned("SECONDARY_PATH", SECONDARY_PATH);
            why.push("test, doc, example or generated path (lower)".to_string());
        }
        (factor, why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::rank::tests::{Project, hit};

    #[test]
    fn evidence_is_read_apart_from_its_weighing_and_traced_as_the_fit_reads_it() {
        let project = Project {
            shares: vec![("broadcast", 0.01)],
            dirs: vec!["sync"],
            ..Project::default()
        };
        let profile = Profile::new("broadcast channel in sync");
        let hits = vec![
            hit("sync/broadcast.rs", 1.0),
            hit("tests/broadcast.rs", 1.0),
        ];
        let shares: Vec<f32> = profile.words.iter().map(|w| project.doc_share(w)).collect();
        let words = crate::search::rank::naming_words(&profile, &shares, &hits);
        let rarity: Vec<f32> = shares
            .iter()
            .map(|s| crate::search::rank::rarity(*s).max(0.0))
            .collect();
        let mut of_path = FxHashMap::default();
        let main = Evidence::read(&profile, &words, &rarity, &hits[0], &project, &mut of_path);
        let test = Evidence::read(&profile, &words, &rarity, &hits[1], &project, &mut of_path);
        // A second chunk of a file reads what its path says from the first.
        let again = Evidence::read(&profile, &words, &rarity, &hits[0], &project, &mut of_path);
        assert_eq!(of_path.len(), 2);
        assert_eq!(again.named, main.named);
        assert!(matches!(&main.named, Named::Word(w) if w.word == "broadcast" && w.weight > 0.9));
        assert!(main.directory.as_ref().is_some_and(|d| d.word == "sync") && !main.secondary);
        assert!(test.secondary && test.directory.is_none());
        let (main_factor, why) = main.factor();
        let (test_factor, _) = test.factor();
        assert!(main_factor > 1.5 && test_factor < main_factor * SECONDARY_PATH + 1e-6);
        assert!(why.iter().any(|w| w == "file named by `broadcast`"));
        // bench/fit-rank.py reads these fields by name.
        let traced = serde_json::to_value(&test).unwrap();
        for field in [
            "defines",
            "named",
            "spelled",
            "directory",
            "old_version",
            "secondary",
        ] {
            assert!(traced.get(field).is_some(), "{field} missing from {traced}");
        }
        assert_eq!(traced["defines"], "none");
        assert_eq!(traced["named"]["word"]["word"], "broadcast");
        assert!(traced["named"]["word"]["weight"].as_f64().unwrap() > 0.9);
    }
}
