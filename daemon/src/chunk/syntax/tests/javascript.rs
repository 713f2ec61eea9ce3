//! JavaScript and TypeScript definitions beyond declarations: object literals' methods,
//! functions assigned to properties, functions declared in callbacks.

use super::check;

#[test]
fn an_object_literals_methods_are_its_members() {
    let text = r#"const handler: Handler = {
  isMatch(req) {
    return true;
  },
  async parse(opts) {
    return read(opts);
  },
  toResult: async (response) => convert(response),
  routes: {
    list: () => all(),
  },
  limit: 10,
};

export const config = { retries: 3 } satisfies Config;
const plain = 3;
"#;
    let chunked = check(
        "typescript",
        text,
        &[
            ("handler", "object"),
            ("handler.isMatch", "method"),
            ("handler.parse", "method"),
            ("handler.toResult", "method"),
            ("handler.routes", "object"),
            ("handler.routes.list", "method"),
            ("config", "object"),
        ],
    );
    let names: Vec<&str> = chunked.symbols.iter().map(|s| s.name.as_str()).collect();
    assert!(
        !names.contains(&"limit") && !names.contains(&"plain"),
        "{names:?}"
    );
    let parse = chunked.symbols.iter().find(|s| s.name == "parse").unwrap();
    assert_eq!((parse.start_line, parse.end_line), (5, 7));
    check(
        "javascript",
        "module.exports.h = 1;\nconst h = {\n  run() { go(); },\n};\n",
        &[("h", "object"), ("h.run", "method")],
    );
}

#[test]
fn functions_assigned_to_properties_are_symbols() {
    let text = r#"var app = exports = module.exports = {};

app.use = function use(fn) {
  return this.handle(fn);
};

Router.prototype.route = function route(path) {
  return new Route(path);
};

exports.compile = (text) => parse(text);

module.exports = function createApplication() {
  return app;
};

app.settings = {};

app.helpers = {
  format(value) {
    return String(value);
  },
};
"#;
    let chunked = check(
        "javascript",
        text,
        &[
            ("app.use", "method"),
            ("Router.route", "method"),
            ("compile", "function"),
            ("app.settings", "object"),
            ("app.helpers.format", "method"),
        ],
    );
    let names: Vec<&str> = chunked.symbols.iter().map(|s| s.name.as_str()).collect();
    assert!(
        !names.contains(&"exports") && !names.contains(&"app"),
        "{names:?}"
    );
    let route = chunked.symbols.iter().find(|s| s.name == "route").unwrap();
    assert_eq!((route.start_line, route.end_line), (7, 9));
    let chunked = check(
        "typescript",
        "Foo.prototype.bar = function (): void {\n  baz();\n};\n\nfunction wire(el: El) {\n  el.onclick = () => go();\n}\n",
        &[("Foo.bar", "method"), ("wire", "function")],
    );
    // A handler handed over inside a function is no definition.
    assert!(!chunked.symbols.iter().any(|s| s.name == "onclick"));
}

#[test]
fn functions_declared_in_a_callback_passed_to_a_statement_call_are_symbols() {
    let text = r#"describe("router", () => {
  test("library", async () => {
    function createLib() {
      return initTRPC.create();
    }
    const lib = createLib();
  });
});

await run(function () {
  const helper = () => 1;
});
"#;
    let chunked = check(
        "typescript",
        text,
        &[("createLib", "function"), ("helper", "function")],
    );
    let lib = chunked
        .symbols
        .iter()
        .find(|s| s.name == "createLib")
        .unwrap();
    assert_eq!((lib.start_line, lib.end_line), (3, 5));
    assert!(!chunked.symbols.iter().any(|s| s.name == "lib"));
    // Symbols alone: the file is chunked as before.
    assert_eq!(chunked.chunks.len(), 1);
}
