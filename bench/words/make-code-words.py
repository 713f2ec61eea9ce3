#!/usr/bin/env python3
"""Writes daemon/src/embed/code-words.txt: the words code uses most, for the built-in
embedder's word table (daemon/src/embed/table.rs), which computes their vectors once per
machine so a new project runs the model only for its rarer words.

A word counts once per file it appears in; the most widespread are kept. Words are split as
daemon/src/embed/words.rs splits them (non-alphanumerics, camelCase, digits; 2 to 24
letters; lowercased).

Corpora used for the committed list (none of them a benchmark repository): the Rust crates
in cargo's registry sources, CPython's standard library, and the TypeScript compiler and
the other npm packages under bench/graph/node_modules:

    python3 bench/words/make-code-words.py 40000 ~/.cargo/registry/src/*/ \
        "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')" \
        bench/graph/node_modules > daemon/src/embed/code-words.txt
"""
import os
import re
import sys
from collections import Counter

EXTENSIONS = {
    ".rs", ".py", ".ts", ".js", ".go", ".java", ".c", ".h", ".cc", ".cpp", ".hpp", ".rb",
    ".php", ".kt", ".swift", ".cs", ".md", ".ex", ".lua", ".hs", ".zig", ".sh",
}
CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def words(text):
    out = set()
    for token in re.split(r"[^\w]|_", text):
        for part in CAMEL.split(token):
            for piece in re.split(r"\d", part):
                if 2 <= len(piece) <= 24 and piece.isalpha():
                    out.add(piece.lower())
    return out


def main():
    keep = int(sys.argv[1])
    counts = Counter()
    for root in sys.argv[2:]:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                if os.path.splitext(name)[1] not in EXTENSIONS:
                    continue
                try:
                    with open(os.path.join(folder, name), encoding="utf-8") as f:
                        text = f.read(500_000)
                except (OSError, UnicodeDecodeError):
                    continue
                counts.update(words(text))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    for word in sorted(w for w, n in ranked[:keep] if n >= 3):
        print(word)


if __name__ == "__main__":
    main()
