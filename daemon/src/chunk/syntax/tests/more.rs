//! Chunk invariants and symbols for the languages added after the first: apps (Kotlin,
//! Scala, Swift, Dart, Objective-C), functional (Haskell, Elixir, Erlang, OCaml), scripts
//! (Lua, R, Julia, Zig) and formats (JSON, YAML, TOML, HCL, protobuf, GraphQL, SQL, CSS).

use super::check;
use crate::chunk::syntax::chunk_file;

#[test]
fn kotlin() {
    let text = r#"package demo

/** An engine. */
class Engine(val name: String) : Base() {
    fun start(x: Int): Int {
        return x
    }

    companion object {
        fun create() = Engine("a")
    }
}

interface Plugin {
    fun install()
}

object Registry {
    val items = 1
}

enum class Color { RED, GREEN }
typealias Handler = (Int) -> Unit
fun topLevel() = 1
"#;
    let chunked = check(
        "kotlin",
        text,
        &[
            ("Engine", "class"),
            ("Engine.start", "method"),
            ("Engine.Companion", "object"),
            ("Engine.Companion.create", "method"),
            ("Plugin", "interface"),
            ("Plugin.install", "method"),
            ("Registry", "object"),
            ("Color", "class"),
            ("Handler", "type"),
            ("topLevel", "function"),
        ],
    );
    let engine = chunked.symbols.iter().find(|s| s.name == "Engine").unwrap();
    assert_eq!(engine.start_line, 3, "the doc comment belongs to the class");
}

#[test]
fn scala() {
    let text = r#"package demo

/** An engine. */
class Engine(name: String) extends Base {
  def start(x: Int): Int = x
}
object Registry { def apply(): Int = 1 }
trait Plugin { def install(): Unit }
case class Point(x: Int)
def top(): Unit = ()
"#;
    check(
        "scala",
        text,
        &[
            ("Engine", "class"),
            ("Engine.start", "method"),
            ("Registry", "object"),
            ("Registry.apply", "method"),
            ("Plugin", "trait"),
            ("Plugin.install", "method"),
            ("Point", "class"),
            ("top", "function"),
        ],
    );
}

#[test]
fn swift() {
    let text = r#"import Foundation

/// A session.
public class Session: NSObject {
    func request(_ url: String) -> Int { return 1 }
    init() {}
}
struct Point { var x: Int }
protocol Shape { func area() -> Double }
extension Session { func extra() {} }
enum Mode { case a, b }
func topLevel() {}
"#;
    check(
        "swift",
        text,
        &[
            ("Session", "class"),
            ("Session.request", "method"),
            ("Session.init", "constructor"),
            ("Point", "struct"),
            ("Shape", "protocol"),
            ("Shape.area", "method"),
            ("Session", "extension"),
            ("Session.extra", "method"),
            ("Mode", "enum"),
            ("topLevel", "function"),
        ],
    );
}

#[test]
fn dart() {
    let text = r#"/// An engine.
class Engine extends Base {
  int start(int x) { return x; }
}
mixin Fly on Bird { void fly() {} }
enum Color { red }
extension Ext on String { int get n => 1; }
int topLevel(int a) => a;
typedef Cb = void Function();
"#;
    check(
        "dart",
        text,
        &[
            ("Engine", "class"),
            ("Engine.start", "method"),
            ("Fly", "mixin"),
            ("Fly.fly", "method"),
            ("Color", "enum"),
            ("Ext", "extension"),
            ("topLevel", "function"),
            ("Cb", "type"),
        ],
    );
}

#[test]
fn objc() {
    let text = r#"@interface Engine : NSObject
- (void)start;
@end

@implementation Engine
- (void)start { }
+ (instancetype)shared { return nil; }
@end

void helper(void) {}
"#;
    check(
        "objc",
        text,
        &[
            ("Engine", "interface"),
            ("Engine.start", "method"),
            ("Engine", "class"),
            ("Engine.shared", "method"),
            ("helper", "function"),
        ],
    );
}

#[test]
fn haskell() {
    let text = r#"module XMonad.Core (X, runX) where

import Data.Maybe

-- | The state.
data XState = XState { windowset :: !Int }
newtype X a = X (IO a)

class Monad m => Layout m where
  doLayout :: m Int

instance Show XState where
  show _ = "x"

-- | Run it.
runX :: Int -> IO ()
runX 0 = return ()
runX x = return ()

type WindowSet = Int
"#;
    let chunked = check(
        "haskell",
        text,
        &[
            ("XState", "type"),
            ("X", "type"),
            ("Layout", "class"),
            ("Show", "instance"),
            ("Show.show", "method"),
            ("runX", "function"),
            ("WindowSet", "type"),
        ],
    );
    let run: Vec<_> = chunked
        .symbols
        .iter()
        .filter(|s| s.name == "runX")
        .collect();
    assert_eq!(run.len(), 1, "clauses are one function: {run:?}");
    assert_eq!(
        (run[0].start_line, run[0].end_line),
        (15, 18),
        "haddock, signature and both clauses"
    );
}

#[test]
fn elixir() {
    let text = r#"defmodule Phoenix.Router do
  @moduledoc "Routes."

  @doc "A scope."
  defmacro scope(path, do: block) do
    block
  end

  def match(%{a: 1} = conn), do: conn
  def match(conn), do: conn

  defp helper(x) when is_integer(x) do
    x
  end
end
"#;
    let chunked = check(
        "elixir",
        text,
        &[
            ("Phoenix.Router", "module"),
            ("Phoenix.Router.scope", "macro"),
            ("Phoenix.Router.match", "function"),
            ("Phoenix.Router.helper", "function"),
        ],
    );
    let scope = chunked.symbols.iter().find(|s| s.name == "scope").unwrap();
    assert_eq!(scope.start_line, 4, "@doc belongs to the macro");
    let clauses = chunked.symbols.iter().filter(|s| s.name == "match").count();
    assert_eq!(clauses, 1, "clauses are one function");
}

#[test]
fn erlang() {
    let text = r#"-module(router).
-export([start/1]).
-record(state, {x}).

%% Starts it.
-spec start(term()) -> term().
start(X) ->
    X.

stop(_) -> ok.
-type t() :: integer().
"#;
    let chunked = check(
        "erlang",
        text,
        &[
            ("start", "function"),
            ("stop", "function"),
            ("state", "record"),
            ("t", "type"),
        ],
    );
    let start = chunked.symbols.iter().find(|s| s.name == "start").unwrap();
    assert_eq!(
        start.start_line, 5,
        "comment and spec belong to the function"
    );
}

#[test]
fn ocaml() {
    let text = r#"(** Parses. *)
let parse s = String.length s
type t = { x : int }
module Engine = struct
  let start x = x
end
module type S = sig val f : int -> int end
exception Bad of string
let () = print_endline "x"
"#;
    let chunked = check(
        "ocaml",
        text,
        &[
            ("parse", "function"),
            ("t", "type"),
            ("Engine", "module"),
            ("Engine.start", "function"),
            ("S", "module type"),
            ("S.f", "function"),
            ("Bad", "exception"),
        ],
    );
    assert!(chunked.symbols.iter().all(|s| !s.name.is_empty()));
    check(
        "ocaml-interface",
        "val parse : string -> int\ntype t\n",
        &[("parse", "function"), ("t", "type")],
    );
}

#[test]
fn lua() {
    let text = r#"local M = {}

-- Sets up.
function M.setup(opts)
  return opts
end

local function helper(x) return x end
M.pick = function(a) return a end
function M:method() end
local count = 3
return M
"#;
    let chunked = check(
        "lua",
        text,
        &[
            ("M.setup", "function"),
            ("helper", "function"),
            ("M.pick", "function"),
            ("M.method", "function"),
        ],
    );
    assert!(!chunked.symbols.iter().any(|s| s.name == "count"));
    let setup = chunked.symbols.iter().find(|s| s.name == "setup").unwrap();
    assert_eq!(setup.start_line, 3);
}

#[test]
fn r() {
    let text = "# Parses.\nparse <- function(x) {\n  x\n}\nhelper = function(y) y\nn <- 3\n";
    let chunked = check("r", text, &[("parse", "function"), ("helper", "function")]);
    assert_eq!(chunked.symbols.len(), 2, "{:?}", chunked.symbols);
}

#[test]
fn julia() {
    let text = r#"module Demo
"Parses."
function parse(x::Int)
    x
end
struct Point{T} <: Shape
    x::T
end
abstract type Shape end
macro m(x) x end
end
"#;
    let chunked = check(
        "julia",
        text,
        &[
            ("Demo", "module"),
            ("Demo.parse", "function"),
            ("Demo.Point", "struct"),
            ("Demo.Shape", "type"),
            ("Demo.m", "macro"),
        ],
    );
    let parse = chunked.symbols.iter().find(|s| s.name == "parse").unwrap();
    assert_eq!(parse.start_line, 2, "the docstring belongs to the function");
}

#[test]
fn zig() {
    let text = r#"const std = @import("std");

/// Parses.
pub fn parse(comptime T: type) !T {
    return undefined;
}

pub const Parser = struct {
    x: u8,
    pub fn init() Parser {
        return .{ .x = 0 };
    }
};

const Mode = enum { a, b };

test "parse works" {
    _ = parse;
}
"#;
    let chunked = check(
        "zig",
        text,
        &[
            ("parse", "function"),
            ("Parser", "struct"),
            ("Parser.init", "method"),
            ("Mode", "enum"),
        ],
    );
    assert!(
        !chunked
            .symbols
            .iter()
            .any(|s| s.name == "std" || s.name.contains("works"))
    );
}

#[test]
fn json_yaml_toml_by_top_level_keys() {
    let json = "{\n  \"name\": \"x\",\n  \"scripts\": {\n    \"build\": \"tsc\"\n  },\n  \"deps\": [1, 2]\n}\n";
    let chunked = check(
        "json",
        json,
        &[("name", "key"), ("scripts", "key"), ("deps", "key")],
    );
    assert_eq!(chunked.symbols.len(), 3, "top-level keys only");
    let yaml = "# CI\nname: demo\non:\n  push:\n    branches: [main]\njobs:\n  build:\n    runs-on: ubuntu\n---\nkind: Service\n";
    let chunked = check(
        "yaml",
        yaml,
        &[
            ("name", "key"),
            ("on", "key"),
            ("jobs", "key"),
            ("kind", "key"),
        ],
    );
    assert_eq!(chunked.symbols.len(), 4, "top-level keys only");
    let toml = "# Doc\nname = \"x\"\n[package]\nversion = \"1\"\n[dependencies.serde]\nversion = \"1\"\n[[bin]]\nname = \"a\"\n";
    check(
        "toml",
        toml,
        &[
            ("name", "key"),
            ("package", "table"),
            ("dependencies.serde", "table"),
            ("bin", "table"),
        ],
    );
}

#[test]
fn hcl_protobuf_graphql_sql_css() {
    let hcl = "variable \"region\" {\n  default = \"us\"\n}\n\nresource \"aws_s3_bucket\" \"logs\" {\n  bucket = \"x\"\n}\nlocals {\n  a = 1\n}\n";
    check(
        "hcl",
        hcl,
        &[
            ("region", "variable"),
            ("aws_s3_bucket.logs", "resource"),
            ("locals", "locals"),
        ],
    );
    let proto = "syntax = \"proto3\";\n// A request.\nmessage Request {\n  string q = 1;\n  message Inner { int32 a = 1; }\n}\nservice Search {\n  rpc Find(Request) returns (Request);\n}\nenum Mode { A = 0; }\n";
    check(
        "protobuf",
        proto,
        &[
            ("Request", "message"),
            ("Request.Inner", "message"),
            ("Search", "service"),
            ("Search.Find", "rpc"),
            ("Mode", "enum"),
        ],
    );
    let graphql = "\"The root.\"\ntype Query { user(id: ID!): User }\ninput NewUser { name: String }\nenum Role { ADMIN }\ninterface Node { id: ID! }\nquery GetUser { user(id: 1) { name } }\n";
    check(
        "graphql",
        graphql,
        &[
            ("Query", "type"),
            ("NewUser", "input"),
            ("Role", "enum"),
            ("Node", "interface"),
            ("GetUser", "operation"),
        ],
    );
    let sql = "-- Users.\nCREATE TABLE users (id INT PRIMARY KEY, name TEXT);\nCREATE VIEW v AS SELECT * FROM users;\nCREATE INDEX idx ON users (name);\nSELECT * FROM users;\n";
    check(
        "sql",
        sql,
        &[("users", "table"), ("v", "view"), ("idx", "index")],
    );
    let css = "/* Buttons. */\n.btn, .btn-primary { color: red; }\n@media (max-width: 10px) {\n  .a { x: y; }\n}\n@keyframes spin { from { x: 0; } }\n";
    check(
        "css",
        css,
        &[(".btn, .btn-primary", "rule"), ("spin", "keyframes")],
    );
}

#[test]
fn every_language_survives_broken_input() {
    for spec in crate::chunk::syntax::languages::all() {
        for text in [
            "",
            "\n\n",
            "{{{{ ((( \"\"\" end end\n)))",
            "\u{feff}é\0x\n  \t\n}",
        ] {
            let chunked = chunk_file(spec.name, text);
            crate::chunk::check_chunk_invariants(text, &chunked.chunks);
        }
    }
}
