#!/usr/bin/env bash
# Gold caller edges for `amanmcp-bench graph`, from compiler-grade indexers run on the
# semble benchmark's checkouts (../shared/eval/semble/materialize.sh puts them in
# ~/.cache/amanmcp-semble): scip-python (pyright) for Python, scip-typescript (the
# TypeScript compiler) for TypeScript, rust-analyzer's `scip` for Rust (built once from
# crates.io into ~/.cache/amanmcp-tools, ~10 min). Only the derived edge lists are written
# (bench/graph/gold/<repo>.tsv); no indexed code is kept.
#
# Usage: bench/graph/make-gold.sh [CHECKOUTS] [REPO...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
checkouts="${1:-$HOME/.cache/amanmcp-semble}"
shift || true
repos=("$@")
if [ ${#repos[@]} -eq 0 ]; then
  repos=(fastapi aiohttp zod trpc serde)
fi
(cd "$here" && npm install --no-audit --no-fund --silent)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo '[]' > "$work/env.json"
for repo in "${repos[@]}"; do
  src="$checkouts/$repo"
  [ -d "$src" ] || { echo "missing $src" >&2; exit 1; }
  copy="$work/$repo"
  rm -rf "$copy"
  cp -r "$src" "$copy"
  rm -rf "$copy/.git"
  if [ -f "$copy/Cargo.toml" ]; then
    language=rust
    ra="${RUST_ANALYZER:-$HOME/.cache/amanmcp-tools/bin/rust-analyzer}"
    if [ ! -x "$ra" ]; then
      # The last release that builds on stable 1.95 (later ones use unstable library APIs).
      cargo install ra_ap_rust-analyzer --version 0.0.330 --locked \
        --root "$HOME/.cache/amanmcp-tools" >&2
    fi
    (cd "$copy" && "$ra" scip . --output "$work/$repo.scip" > "$work/$repo.log" 2>&1)
  elif find "$copy" -name '*.py' -not -path '*/node_modules/*' | grep -q .; then
    language=python
    (cd "$copy" && node "$here/node_modules/@sourcegraph/scip-python/index.js" index \
      --project-name "$repo" --project-version 0 --environment "$work/env.json" \
      --output "$work/$repo.scip" . > "$work/$repo.log" 2>&1)
  else
    language=typescript
    (cd "$copy" && node "$here/node_modules/@sourcegraph/scip-typescript/dist/src/main.js" index \
      --infer-tsconfig --output "$work/$repo.scip" > "$work/$repo.log" 2>&1)
  fi
  node "$here/scip_dump.cjs" "$work/$repo.scip" > "$work/$repo.jsonl"
  python3 "$here/gold.py" "$work/$repo.jsonl" "$copy" > "${GOLD_DIR:-$here/gold}/$repo.tsv"
  echo "$repo ($language): $(wc -l < "${GOLD_DIR:-$here/gold}/$repo.tsv") edges"
done
