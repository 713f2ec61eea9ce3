#!/usr/bin/env python3
"""Gold caller edges from a SCIP dump (scip_dump.cjs) and the checkout it was made from.

A gold caller of a definition is the innermost enclosing definition of each reference to
the definition's symbol (functions, methods and classes defined in the project; references
at a file's top level have none). Definitions' extents come from the language's own parser
(Python: `ast`; JavaScript/TypeScript: the TypeScript compiler's parser, `ts_extents.cjs`;
Rust: the extents rust-analyzer gives its definitions in the SCIP index itself);
SCIP gives where each symbol is defined and referenced. A reference to a class's
constructor (`new C()`) counts as one to the class.

Prints TSV rows: callee_path callee_line callee_qualified caller_path caller_line
caller_name is_call (lines 1-based, at the definition's name; is_call: the reference is
followed by `(`).

Usage: gold.py DUMP.jsonl CHECKOUT > gold.tsv
"""
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT_SUFFIXES = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


def qualified(symbol):
    """`scip-python python pkg 0 `a.b`/Class#method().` -> `Class.method`."""
    descriptors = symbol.split(" ", 4)[-1]
    # The namespaces (module, file) end with `/`; backticks quote names holding specials.
    quoted, last = False, -1
    for i, c in enumerate(descriptors):
        if c == "`":
            quoted = not quoted
        elif c == "/" and not quoted:
            last = i
    inner = descriptors[last + 1:]
    names = [n for n in re.split(r"[#.]|\(\)", inner) if n and n != "__init__:"]
    return ".".join(n.strip("`") for n in names)


def rust_descriptor(symbol):
    """The descriptors after the last namespace (`/`), outside brackets and backticks."""
    descriptors = symbol.split(" ", 4)[-1]
    quoted, depth, last = False, 0, -1
    for i, c in enumerate(descriptors):
        if c == "`":
            quoted = not quoted
        elif quoted:
            continue
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "/" and depth == 0:
            last = i
    return descriptors[last + 1:]


def rust_qualified(symbol):
    """rust-analyzer's `impl#[`Type<T>`][Trait]name().` -> `Type.name`; `Trait#name().` ->
    `Trait.name`; `name().` -> `name`; `Type#` -> `Type`."""
    inner = rust_descriptor(symbol)
    m = re.match(r"impl#\[`?([^\]`<]+)[^\]]*\](?:\[[^\]]*\])*(.*)$", inner)
    if m:
        inner = m.group(1).strip() + "#" + m.group(2)
    names = [n for n in re.split(r"[#.]|\(\)", inner) if n]
    return ".".join(n.strip("`") for n in names)


def rust_definition(symbol):
    """A function, a method, a type that is not inside another (not an enum's variant nor
    an impl's associated type), or a module-level `const` or `static`: what can enclose a
    reference."""
    inner = rust_descriptor(symbol)
    if inner.endswith("()."):
        return True
    plain = re.sub(r"\[[^\]]*\]", "", re.sub(r"`[^`]*`", "", inner))
    if plain.endswith(".") and "#" not in plain:
        return True
    return plain.endswith("#") and plain.count("#") == 1 and not plain.startswith("impl#")


def callable_symbol(symbol):
    return symbol.endswith("().") or symbol.endswith("#")


def python_defs(text):
    """(name, name line, first line, last line) of each function and class."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out.append((node.name, node.lineno, first, node.end_lineno))
    return out


def script_defs(checkout, paths):
    """Extents of JS/TS definitions, from the TypeScript compiler (ts_extents.cjs)."""
    found = {}
    paths = sorted(paths)
    for start in range(0, len(paths), 200):
        out = subprocess.run(
            ["node", str(HERE / "ts_extents.cjs"), checkout, *paths[start:start + 200]],
            check=True, capture_output=True, text=True,
        ).stdout
        found.update({p: [tuple(d) for d in defs] for p, defs in json.loads(out).items()})
    return found


def main(dump, checkout):
    occurrences = [json.loads(line) for line in open(dump) if line.strip()]
    for o in occurrences:
        # `new C()` refers to C's constructor: count it as a reference to C (scip-typescript
        # quotes the name: `` #`<constructor>`(). ``).
        for tail in ("<constructor>().", "`<constructor>`()."):
            if o["symbol"].endswith("#" + tail):
                o["symbol"] = o["symbol"][: -len(tail)]
    definitions = {}
    defined_in = {}
    for o in occurrences:
        if o["def"] and callable_symbol(o["symbol"]):
            defined_in.setdefault(o["symbol"], set()).add(o["path"])
            if o["symbol"] not in definitions:
                definitions[o["symbol"]] = (o["path"], o["line"] + 1)
    # rust-analyzer names the items of a package's test crates alike (`tests/a.rs` and
    # `tests/b.rs` each defining `enum Enum` share one symbol): such a symbol means no one
    # definition, and is left out.
    for symbol, paths in defined_in.items():
        if len(paths) > 1 and all(p.endswith(".rs") for p in paths):
            del definitions[symbol]
    scripts = script_defs(checkout, {o["path"] for o in occurrences if o["path"].endswith(SCRIPT_SUFFIXES)})
    # Rust: rust-analyzer gives each definition's extent.
    for o in occurrences:
        if o["def"] and o["enc"] and o["path"].endswith(".rs") and rust_definition(o["symbol"]):
            name = rust_qualified(o["symbol"]).rsplit(".", 1)[-1]
            scripts.setdefault(o["path"], []).append((name, o["line"] + 1, o["enc"][0] + 1, o["enc"][1] + 1))
    extents = {}
    lines = {}
    rows = set()
    for o in occurrences:
        if o["def"] or o["symbol"] not in definitions:
            continue
        path = o["path"]
        # A symlink is the file it points to (and is never indexed twice by amanmcp).
        if (Path(checkout) / path).is_symlink():
            continue
        if path not in extents:
            text = (Path(checkout) / path).read_text(errors="replace")
            lines[path] = text.splitlines()
            extents[path] = python_defs(text) if path.endswith(".py") else scripts.get(path, [])
        line = o["line"] + 1
        # A JS/TS method written in an object literal that implements an interface (`{
        # output(p) { ... } }`) is a reference to the interface's member at its own name:
        # a definition, not a use.
        if path.endswith(SCRIPT_SUFFIXES):
            member = qualified(o["symbol"]).rsplit(".", 1)[-1]
            if any(d[0] == member and d[1] == line for d in extents[path]):
                continue
        # (A reference on a Python definition's own line is its header's: decorators,
        # defaults, bases. A Rust definition's line is its own: `const A: T = T(..)`.)
        around = [d for d in extents[path]
                  if d[2] <= line <= d[3] and (d[1] != line or path.endswith(".rs"))]
        if not around:
            continue
        caller = min(around, key=lambda d: d[3] - d[2])
        after = lines[path][o["line"]][o["end"]:] if o["line"] < len(lines[path]) else ""
        is_call = after.lstrip().startswith("(")
        callee_path, callee_line = definitions[o["symbol"]]
        name = rust_qualified(o["symbol"]) if callee_path.endswith(".rs") else qualified(o["symbol"])
        rows.add((callee_path, callee_line, name, path, caller[1], caller[0], int(is_call)))
    for row in sorted(rows):
        print("\t".join(str(v) for v in row))


if __name__ == "__main__":
    main(*sys.argv[1:])
