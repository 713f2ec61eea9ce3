//! Unit tests of the ranking stage: one behaviour (one query kind, one prior) each.

use super::*;
use paths::{module_directory, spelled_by};
use text::defines_in_text;

mod near;
mod path_priors;

struct Symbols(Vec<(&'static str, &'static str)>);

impl IndexView for Symbols {
    fn defined_in(&self, hit: &LexicalHit) -> Vec<String> {
        self.0
            .iter()
            .filter(|(p, _)| *p == hit.path)
            .map(|(_, n)| n.to_lowercase())
            .collect()
    }

    fn doc_share(&self, _word: &str) -> f32 {
        0.0
    }

    fn has_directory(&self, _dir: &str) -> bool {
        false
    }

    fn has_file(&self, _path: &str) -> bool {
        false
    }
}

/// A project seen through the stage: how common each word is, which directories exist.
#[derive(Default)]
pub(super) struct Project {
    pub(super) shares: Vec<(&'static str, f32)>,
    pub(super) dirs: Vec<&'static str>,
    pub(super) files: Vec<&'static str>,
}

impl IndexView for Project {
    fn defined_in(&self, _hit: &LexicalHit) -> Vec<String> {
        Vec::new()
    }

    fn doc_share(&self, word: &str) -> f32 {
        self.shares
            .iter()
            .find(|(w, _)| *w == word)
            .map_or(0.0, |(_, s)| *s)
    }

    fn has_directory(&self, dir: &str) -> bool {
        self.dirs.contains(&dir)
    }

    fn has_file(&self, path: &str) -> bool {
        self.files.contains(&path)
    }
}

fn order_in(project: &Project, query: &str, hits: Vec<LexicalHit>) -> Vec<String> {
    rank(&Profile::new(query), hits, project, None)
        .into_iter()
        .map(|h| h.path)
        .collect()
}

pub(super) fn hit(path: &str, score: f32) -> LexicalHit {
    LexicalHit {
        chunk_id: 0,
        path: path.into(),
        start_line: 1,
        end_line: 10,
        language: "rust".into(),
        symbol: None,
        kind: None,
        score,
        body: "fn body() { work(); }".into(),
        why: Vec::new(),
        defines: Vec::new(),
    }
}

fn order(query: &str, hits: Vec<LexicalHit>, symbols: Symbols) -> Vec<String> {
    rank(&Profile::new(query), hits, &symbols, None)
        .into_iter()
        .map(|h| h.path)
        .collect()
}

/// [`defines_in_text`] as the ranking stage calls it: on the body lowercased.
fn defines(body: &str, name: &str) -> bool {
    defines_in_text(&body.to_lowercase(), name)
}

#[test]
fn definitions_are_read_from_text_where_there_are_no_symbols() {
    assert!(defines("local function pick(x)\n  return x\nend", "pick"));
    assert!(defines(
        "withDisplay :: (Display -> X a) -> X a",
        "withdisplay"
    ));
    assert!(defines("TelescopeGlobalState = {}", "telescopeglobalstate"));
    assert!(defines("pub const Parser = struct {", "parser"));
    assert!(defines("data StackSet i l a = StackSet", "stackset"));
    assert!(!defines("  return pick(x)", "pick"));
    assert!(!defines(
        "if state == TelescopeGlobalState then",
        "telescopeglobalstate"
    ));
    assert!(!defines("local picker = pickers.new()", "pick"));
    // A path at a line's start calls what it names.
    assert!(!defines(
        "        Deserialize::deserialize(deserializer).map(Wrapping)",
        "deserialize"
    ));
    assert!(defines(
        "withDisplay ::\n  (Display -> X a) -> X a",
        "withdisplay"
    ));
    // An indented assignment changes a local: `args = args[1:]` in a function's body.
    assert!(!defines(
        "func strip(args []string) {\n\targs = args[1:]\n}",
        "args"
    ));
}

#[test]
fn members_assigned_at_top_level_define_and_locals_and_imports_do_not() {
    // A module's members: Lua's `function M.pick`, JavaScript's `res.send = function`.
    assert!(defines("function M.pick(opts)", "pick"));
    assert!(defines("res.send = function send(body) {", "send"));
    assert!(defines("var view = exports = module.exports = {}", "view"));
    // A local variable inside a body, an alias and an import name other code.
    assert!(!defines(
        "app.render = function render(name) {\n  var view;\n}",
        "view"
    ));
    assert!(!defines("exports.response = res;", "response"));
    assert!(!defines("  this.send = function () {}", "send"));
    assert!(!defines("var send = require('send');", "send"));
    assert!(!defines(
        "local pickers = require \"telescope.pickers\"",
        "pickers"
    ));
}

#[test]
fn query_kinds() {
    assert_eq!(Profile::new("JoinSet").kind, QueryKind::Identifier);
    assert_eq!(Profile::new("Session.request").names, ["request"]);
    let prose = Profile::new("how does JoinSet spawn_blocking work");
    assert_eq!(prose.kind, QueryKind::Prose);
    assert_eq!(prose.names, ["joinset", "spawn_blocking"]);
    assert_eq!(Profile::new(&"word ".repeat(50)).kind, QueryKind::Issue);
    assert!(Profile::new("tests for the parser").wants_secondary);
    assert!(!Profile::new("the parser").wants_secondary);
}

#[test]
fn a_pasted_issue_naming_its_failing_test_still_asks_for_code() {
    let issue = format!(
        "Parsing a header with a trailing comma crashes. {} The test test_parse_header fails \
         and the docs example shows the same.",
        "It used to work before the last release. ".repeat(6)
    );
    let profile = Profile::new(&issue);
    assert_eq!(profile.kind, QueryKind::Issue);
    assert!(!profile.wants_secondary);
    let hits = vec![
        hit("tests/test_parse.py", 1.0),
        hit("docs/example.rst", 0.9),
        hit("src/parse.py", 0.6),
    ];
    assert_eq!(order(&issue, hits, Symbols(vec![]))[0], "src/parse.py");
}

#[test]
fn an_identifier_query_puts_its_definition_first() {
    let hits = vec![hit("src/user.rs", 1.0), hit("src/de.rs", 0.5)];
    let symbols = Symbols(vec![("src/de.rs", "Deserialize")]);
    assert_eq!(
        order("Deserialize", hits, symbols),
        ["src/de.rs", "src/user.rs"]
    );
}

#[test]
fn a_code_word_in_a_sentence_favours_its_definition() {
    let hits = vec![hit("a.rs", 1.0), hit("b.rs", 0.7)];
    let symbols = Symbols(vec![("b.rs", "JoinSet")]);
    assert_eq!(
        order("how does JoinSet track tasks", hits, symbols),
        ["b.rs", "a.rs"]
    );
}

#[test]
fn a_name_spelled_out_in_words_favours_its_definition() {
    let hits = vec![hit("a.java", 1.0), hit("b.java", 0.85)];
    let symbols = Symbols(vec![("b.java", "TypeAdapter")]);
    assert_eq!(
        order("how a type adapter is chosen", hits, symbols),
        ["b.java", "a.java"]
    );
    assert!(
        Profile::new("type adapters")
            .spelled
            .contains(&"typeadapter".to_string())
    );
}

#[test]
fn a_file_named_by_a_query_word_ranks_higher() {
    let hits = vec![
        hit("src/sync/mpsc.rs", 1.0),
        hit("src/sync/broadcast.rs", 0.8),
    ];
    assert_eq!(
        order("broadcast channel receivers", hits, Symbols(vec![])),
        ["src/sync/broadcast.rs", "src/sync/mpsc.rs"]
    );
    let named = |word: &str, path: &str| {
        let (_, stem) = path_parts(path);
        names_file(word, &stem, &stem_words(path), true)
    };
    assert!(named("serializers", "src/serializer.rs"));
    assert!(named("thread", "rt/multi_thread.rs"));
    assert!(!named("io", "iolib.c"));
    assert!(named("timeouts", "plugins/HttpTimeout.kt"));
    assert!(named("watching", "sync/watch.rs"));
    assert!(named("spawned", "task/spawn.rs"));
    assert!(named("scheduled", "runtime/schedule.rs"));
    assert!(named("validator", "HttpCallValidator.kt"));
    assert_eq!(
        stem_words("a/HTTPServerError.java"),
        ["http", "server", "error"]
    );
    // "How X works" asks how, not for `worker.py`.
    let hits = vec![hit("aiohttp/client.py", 1.0), hit("aiohttp/worker.py", 0.8)];
    assert_eq!(
        order("how the async session works", hits, Symbols(vec![])),
        ["aiohttp/client.py", "aiohttp/worker.py"]
    );
}

#[test]
fn a_reexport_hub_keeps_its_place() {
    // A hub answers questions about what it gathers: no rule ranks it down.
    let mut reexport = hit("src/index.ts", 1.0);
    reexport.body = "export * from './parse';\nexport { a, b } from './c';\n".into();
    let hits = vec![reexport, hit("src/parse.ts", 0.8)];
    assert_eq!(
        order("schema validation", hits, Symbols(vec![])),
        ["src/index.ts", "src/parse.ts"]
    );
}

#[test]
fn several_matching_chunks_make_a_file_likely() {
    let hits = vec![
        hit("one.rs", 1.0),
        hit("many.rs", 0.9),
        hit("many.rs", 0.8),
        hit("many.rs", 0.7),
    ];
    assert_eq!(order("timer wheel", hits, Symbols(vec![]))[0], "many.rs");
}

#[test]
fn one_file_does_not_fill_the_page() {
    let mut hits: Vec<LexicalHit> = (0..5)
        .map(|i| hit("big.rs", 1.0 - i as f32 * 0.01))
        .collect();
    hits.push(hit("other.rs", 0.7));
    let ranked = order("scheduler", hits, Symbols(vec![]));
    let other = ranked.iter().position(|p| p == "other.rs").unwrap();
    assert!(other <= 3, "{ranked:?}");
}

#[test]
fn a_word_found_everywhere_names_no_file() {
    let hits = vec![hit("lib/curl_share.c", 1.0), hit("lib/url.c", 0.8)];
    let query = "how curl reuses a connection url";
    // `curl` is in nearly every chunk of curl: it does not single out `curl_share.c`.
    let curl = Project {
        shares: vec![("curl", 0.9), ("url", 0.1)],
        ..Project::default()
    };
    assert_eq!(
        order_in(&curl, query, hits.clone()),
        ["lib/url.c", "lib/curl_share.c"]
    );
    // Where it is rare it does.
    let elsewhere = Project {
        shares: vec![("curl", 0.01), ("url", 0.1)],
        ..Project::default()
    };
    assert_eq!(
        order_in(&elsewhere, query, hits),
        ["lib/curl_share.c", "lib/url.c"]
    );
}

#[test]
fn initials_of_three_words_name_a_file() {
    let hits = vec![
        hit("plugins/sse/builders.kt", 1.0),
        hit("plugins/sse/SSE.kt", 0.7),
    ];
    let ranked = order_in(
        &Project::default(),
        "how server-sent events are parsed",
        hits,
    );
    assert_eq!(ranked, ["plugins/sse/SSE.kt", "plugins/sse/builders.kt"]);
}

#[test]
fn a_file_whose_whole_name_the_query_spells_ranks_higher() {
    let hits = vec![
        hit("Handler/SyslogUdpHandler.php", 1.0),
        hit("Handler/SyslogHandler.php", 0.9),
    ];
    assert_eq!(
        order_in(
            &Project::default(),
            "syslog handler for system logging",
            hits
        ),
        ["Handler/SyslogHandler.php", "Handler/SyslogUdpHandler.php"]
    );
    let words = |q: &str| Profile::new(q).words;
    let spelled = |q: &str, path: &str| spelled_by(&words(q), &stem_words(path));
    assert!(spelled(
        "JSON streaming readers",
        "stream/JsonStreamReader.java"
    ));
    assert!(spelled(
        "how HTTP redirects are followed",
        "HttpRedirect.kt"
    ));
    assert!(!spelled("JSON stream reader", "JsonReader.java"));
    assert!(!spelled("a reader of JSON", "JsonReader.java"));
    // One word is a file named by a query word, not spelled.
    assert!(!spelled("reader", "reader.rs"));
}

#[test]
fn a_directory_named_by_another_word_tells_same_named_files_apart() {
    let hits = vec![hit("render/json.go", 1.0), hit("binding/json.go", 0.9)];
    assert_eq!(
        order_in(&Project::default(), "JSON request binding", hits),
        ["binding/json.go", "render/json.go"]
    );
}

#[test]
fn a_directory_named_by_a_common_word_counts_for_little() {
    // `handler` is in a third of the project's chunks: naming `handler/` says little, and
    // the better retrieval score keeps its place.
    let hits = vec![hit("src/lib.rs", 1.0), hit("handler/mod.rs", 0.9)];
    let common = Project {
        shares: vec![("handler", 0.35)],
        ..Project::default()
    };
    assert_eq!(
        order_in(
            &common,
            "dispatch each request to its handler",
            hits.clone()
        ),
        ["src/lib.rs", "handler/mod.rs"]
    );
    // The same word in few chunks names the place.
    let rare = Project {
        shares: vec![("handler", 0.01)],
        ..Project::default()
    };
    assert_eq!(
        order_in(&rare, "dispatch each request to its handler", hits),
        ["handler/mod.rs", "src/lib.rs"]
    );
}

#[test]
fn a_private_file_prefix_is_not_part_of_its_name() {
    let hits = vec![
        hit("lua/entry_display.lua", 1.0),
        hit("lua/builtin/__diagnostics.lua", 0.8),
    ];
    assert_eq!(
        order_in(&Project::default(), "how diagnostic entries show", hits),
        ["lua/builtin/__diagnostics.lua", "lua/entry_display.lua"]
    );
}

#[test]
fn an_older_version_beside_a_newer_one_ranks_lower() {
    let project = Project {
        dirs: vec!["src/v3", "src/v4"],
        ..Project::default()
    };
    let hits = vec![hit("src/v3/types.ts", 1.0), hit("src/v4/core/api.ts", 0.7)];
    assert_eq!(
        order_in(&project, "optional schema wrappers", hits.clone()),
        ["src/v4/core/api.ts", "src/v3/types.ts"]
    );
    // Unless the query asks for that version.
    assert_eq!(
        order_in(&project, "v3 optional schema wrappers", hits.clone()),
        ["src/v3/types.ts", "src/v4/core/api.ts"]
    );
    // The newest version is not lowered.
    let only = Project {
        dirs: vec!["src/v3"],
        ..Project::default()
    };
    assert_eq!(
        order_in(&only, "optional schema wrappers", hits),
        ["src/v3/types.ts", "src/v4/core/api.ts"]
    );
}

#[test]
fn a_legacy_copy_beside_the_current_file_ranks_lower() {
    let project = Project {
        files: vec!["pkg/fields.py", "pkg/decorator.py"],
        ..Project::default()
    };
    let hits = vec![
        hit("pkg/v1/fields.py", 1.0),
        hit("pkg/deprecated/decorator.py", 0.95),
        hit("pkg/fields.py", 0.7),
        hit("pkg/decorator.py", 0.65),
    ];
    let order = order_in(&project, "how fields are declared", hits.clone());
    let at = |path: &str| order.iter().position(|p| p == path).unwrap();
    assert!(at("pkg/fields.py") < at("pkg/v1/fields.py"), "{order:?}");
    assert!(
        at("pkg/decorator.py") < at("pkg/deprecated/decorator.py"),
        "{order:?}"
    );
    // Unless the query names the directory.
    assert_eq!(
        order_in(&project, "how fields are declared in v1", hits.clone())[0],
        "pkg/v1/fields.py"
    );
    // A version directory holding the only copy is current code.
    assert_eq!(
        order_in(&Project::default(), "how fields are declared", hits)[0],
        "pkg/v1/fields.py"
    );
}

#[test]
fn a_file_holding_every_word_of_the_question_ranks_higher() {
    let mut repeats = hit("src/pool.rs", 1.0);
    repeats.body = "fn blocking() { blocking(); blocking(); }".into();
    let mut covers = hit("src/task.rs", 0.8);
    covers.body = "/// Runs blocking code on a thread the runtime keeps.\nfn spawn() {}".into();
    let ranked = order_in(
        &Project::default(),
        "running blocking code inside the runtime",
        vec![repeats, covers],
    );
    assert_eq!(ranked, ["src/task.rs", "src/pool.rs"]);
}

#[test]
fn an_identifier_defined_as_typed_comes_before_other_cases() {
    struct Cased;
    impl IndexView for Cased {
        fn defined_in(&self, hit: &LexicalHit) -> Vec<String> {
            match hit.path.as_str() {
                "mix/tasks.ex" => vec!["router".into()],
                _ => vec!["Router".into()],
            }
        }
        fn doc_share(&self, _word: &str) -> f32 {
            0.0
        }
        fn has_directory(&self, _dir: &str) -> bool {
            false
        }
        fn has_file(&self, _path: &str) -> bool {
            false
        }
    }
    let hits = vec![hit("mix/tasks.ex", 1.0), hit("lib/web.ex", 0.9)];
    let ranked: Vec<String> = rank(&Profile::new("Router"), hits.clone(), &Cased, None)
        .into_iter()
        .map(|h| h.path)
        .collect();
    assert_eq!(ranked, ["lib/web.ex", "mix/tasks.ex"]);
    let ranked: Vec<String> = rank(&Profile::new("router"), hits, &Cased, None)
        .into_iter()
        .map(|h| h.path)
        .collect();
    assert_eq!(ranked, ["mix/tasks.ex", "lib/web.ex"]);
}

#[test]
fn a_module_file_beside_its_directory_answers_for_the_module() {
    // `command` names many files below (`commands/*_command.rb`), too many to name any; the
    // module's own file beside `command/` is still the one the question is about.
    let project = Project {
        dirs: vec!["lib/rails/command"],
        ..Project::default()
    };
    let hits = vec![
        hit("lib/rails/commands/routes/routes_command.rb", 1.0),
        hit("lib/rails/commands/server/server_command.rb", 0.95),
        hit("lib/rails/commands/console/console_command.rb", 0.95),
        hit("lib/rails/command.rb", 0.85),
    ];
    let ranked = rank(
        &Profile::new("command dispatch"),
        hits.clone(),
        &project,
        None,
    );
    assert_eq!(ranked[0].path, "lib/rails/command.rb", "{ranked:?}");
    assert!(
        ranked[0].why.iter().any(|w| w.contains("module")),
        "{:?}",
        ranked[0].why
    );
    // Without the directory beside it, it is one file among others.
    let flat = order_in(&Project::default(), "command dispatch", hits);
    assert_eq!(flat[0], "lib/rails/commands/routes/routes_command.rb");
}

#[test]
fn module_directories_are_the_path_without_its_extension() {
    assert_eq!(
        module_directory("lib/rails/command.rb"),
        "lib/rails/command"
    );
    assert_eq!(
        module_directory("src/Data/Aeson/Encoding.hs"),
        "src/Data/Aeson/Encoding"
    );
    assert_eq!(module_directory("de.rs"), "de");
    assert_eq!(module_directory("src/.hidden"), "src/.hidden");
}
