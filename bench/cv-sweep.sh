#!/usr/bin/env bash
# Leave-one-repository-out cross-validation of the ranking's fitted strengths on the visible
# semble repositories (bench/README.md, "Cross-validation").
#
# Runs `amanmcp-bench semble` once per setting below (the daemon reads each from its
# environment; indexes and vectors are kept in $AMANMCP_BENCH_DATA_DIR between runs), then
# `amanmcp-bench cv` over all the runs: each held-out repository is scored with the setting
# that was best on the other 26. Usage, from the repository root after
# `cargo build --release` and `bash ../shared/eval/semble/materialize.sh`:
#
#     bash bench/cv-sweep.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-/tmp/amanmcp-cv}"
mkdir -p "$out"
export AMANMCP_BENCH_DATA_DIR="${AMANMCP_BENCH_DATA_DIR:-$out/data}"
mkdir -p "$AMANMCP_BENCH_DATA_DIR"
chmod 700 "$AMANMCP_BENCH_DATA_DIR"
bench=target/release/amanmcp-bench
eval_dir=../shared/eval/semble

# label and the environment of each setting; "defaults" also gives the two legs alone.
settings=(
    "defaults="
    "semantic-0.5=AMANMCP_WEIGHT_SEMANTIC=0.5"
    "semantic-0.75=AMANMCP_WEIGHT_SEMANTIC=0.75"
    "semantic-1.5=AMANMCP_WEIGHT_SEMANTIC=1.5"
    "semantic-2.0=AMANMCP_WEIGHT_SEMANTIC=2.0"
    "rrf-k-20=AMANMCP_RRF_K=20"
    "rrf-k-120=AMANMCP_RRF_K=120"
    "prior-0.5=AMANMCP_RANK_PRIOR=0.5"
    "prior-0.75=AMANMCP_RANK_PRIOR=0.75"
    "prior-1.25=AMANMCP_RANK_PRIOR=1.25"
    "prior-1.5=AMANMCP_RANK_PRIOR=1.5"
    "coverage-0.2=AMANMCP_RANK_COVERAGE_POWER=0.2"
    "coverage-0.6=AMANMCP_RANK_COVERAGE_POWER=0.6"
    "file-evidence-0.25=AMANMCP_RANK_FILE_EVIDENCE=0.25"
    "file-evidence-0.75=AMANMCP_RANK_FILE_EVIDENCE=0.75"
)
# Each rule's constant (daemon/src/search/rank/mod.rs; the vectors' lead and the floor of
# their similarities, search/fusion.rs)
# below and above its value.
for spec in FILE_NAMED=1.0 FILE_NAMED=1.3 FILE_NAMED=2.0 DIRECTORY_NAMED=1.15 \
    DIRECTORY_NAMED=1.5 FILE_SPELLED=1.0 FILE_SPELLED=1.4 SECONDARY_PATH=0.15 \
    SECONDARY_PATH=0.5 DEFINES_IDENTIFIER=2.0 \
    DEFINES_IDENTIFIER=4.0 DEFINES_MENTIONED=1.3 DEFINES_MENTIONED=2.0 DEFINES_WORDS=1.0 \
    DEFINES_WORDS=1.5 NAMING_SHARE=0.1 NAMING_SHARE=0.25 REPEAT_DAMPING=0.4 \
    REPEAT_DAMPING=0.8 OLD_VERSION=0.3 OLD_VERSION=0.8 COVERAGE_FLOOR=0.1 COVERAGE_FLOOR=0.5 \
    IDENTIFIER_SEMANTIC_WEIGHT=0.25 IDENTIFIER_SEMANTIC_WEIGHT=1.0 VECTOR_LEAD=0 \
    VECTOR_LEAD=1.0 VECTOR_LEAD_FROM=0.2 NEAR_FLOOR=0 NEAR_FLOOR=0.5; do
    name="$(echo "${spec%%=*}" | tr 'A-Z_' 'a-z-')-${spec#*=}"
    settings+=("$name=AMANMCP_RANK_$spec")
done
runs=()
for setting in "${settings[@]}"; do
    label="${setting%%=*}"
    vars="${setting#*=}"
    modes=hybrid
    if [ "$label" = defaults ]; then modes=lexical,semantic,hybrid; fi
    echo "== $label ${vars:-(defaults)}"
    env $vars "$bench" semble --eval "$eval_dir" --modes "$modes" \
        --dump "$out/$label.jsonl" > "$out/$label.txt"
    runs+=("$label=$out/$label.jsonl")
done
"$bench" cv --eval "$eval_dir" "${runs[@]}" | tee "$out/cv.txt"
