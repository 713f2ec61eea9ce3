#!/usr/bin/env python3
"""Fit the ranking stage's strengths on a trace of the semble benchmark, by leave-one-repository-out
cross-validation (bench/README.md, "Fitting the ranking stage from a trace").

The daemon, run with AMANMCP_RANK_TRACE=FILE, writes what the ranking stage saw for every search
(each candidate's retrieval score, the evidence each rule read, each file's coverage). This script
replays the stage over that trace (daemon/src/search/rank/mod.rs, in numpy), checks that the replay
gives the benchmark's own figure, then fits the stage's constants: coordinate ascent over a grid
around each constant on 26 repositories, scored on the 27th, for each repository in turn. It prints
the in-sample and the cross-validated NDCG@10, what each fold chose, and the constants of a fit on
all repositories as `AMANMCP_RANK_<NAME>=value` settings that `amanmcp-bench semble` can run.

    AMANMCP_RANK_TRACE=/tmp/rank-trace.jsonl target/release/amanmcp-bench semble \\
        --eval ../shared/eval/semble --dump /tmp/semble.jsonl
    python3 bench/fit-rank.py /tmp/rank-trace.jsonl /tmp/semble.jsonl [--mode hybrid]

Needs numpy. The constants' values as built are read from the Rust source, so the fit always
starts from what the daemon does.
"""

import argparse
import json
import math
import re
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

RANK_SOURCE = Path(__file__).resolve().parent.parent / "daemon/src/search/rank/mod.rs"

# The constants fitted, with the multipliers of their logarithm tried (0: the rule off). A file's
# other chunks (FILE_EVIDENCE) and coverage (COVERAGE_POWER, COVERAGE_FLOOR) take values.
RULES = [
    "DEFINES_IDENTIFIER", "DEFINES_AS_TYPED", "DEFINES_MENTIONED", "DEFINES_WORDS", "FILE_NAMED",
    "FILE_SPELLED", "DIRECTORY_NAMED", "SECONDARY_PATH", "OLD_VERSION",
]
LOG_MULTIPLIERS = [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3]
VALUES = {
    "FILE_EVIDENCE": [0, 0.25, 0.5, 0.75, 1],
    "COVERAGE_POWER": [0, 0.2, 0.4, 0.6, 0.8],
    "COVERAGE_FLOOR": [0.1, 0.25, 0.5],
    "PRIOR": [0.5, 0.75, 1, 1.25, 1.5],
}


def constants():
    """The stage's constants as built: `const NAME: f32 = value;` in its source."""
    found = dict(re.findall(r"const ([A-Z_]+): f32 = ([0-9.]+);", RANK_SOURCE.read_text()))
    out = {name: float(found[name]) for name in RULES + ["FILE_EVIDENCE", "COVERAGE_POWER",
                                                           "COVERAGE_FLOOR"]}
    out["PRIOR"] = 1.0
    return out


def grid(name, built):
    if name in VALUES:
        return VALUES[name]
    return [round(math.exp(m * math.log(built[name])), 4) for m in LOG_MULTIPLIERS]


def is_target(path, target):
    return path == target or path.endswith("/" + target) or target.endswith("/" + path)


def rankings(trace_path, mode):
    """The rankings a trace holds for `mode`, each with its `exact` chunks and the two legs
    fusion got (`legs`; None where there was one leg)."""
    out, exact, legs = [], None, None
    for line in open(trace_path):
        record = json.loads(line)
        if "legs" in record:
            legs = record["legs"]
        elif "exact" in record:
            exact, record["legs"], legs = record, legs, None
        elif exact is not None and exact["mode"] == mode:
            record["exact"], record["legs"] = set(exact["exact"]), exact["legs"]
            out.append(record)
    return out


def load(trace_path, dump_path, mode):
    """The benchmark's queries (from its dump) with the ranking each had in `mode`."""
    dump = [json.loads(line) for line in open(dump_path)]
    traced = rankings(trace_path, mode)
    if len(traced) != len(dump):
        raise SystemExit(f"{len(traced)} {mode} rankings traced for {len(dump)} queries: "
                         "trace one `semble` run into an empty file")
    for ranking, query in zip(traced, dump):
        if ranking["query"] != query["query"].strip():
            raise SystemExit(f"trace and dump disagree at {query['query']!r}")
        query["ranking"] = ranking
    return dump


class Candidates:
    """Every traced candidate of every query, as arrays."""

    def __init__(self, queries):
        cols = defaultdict(list)
        self.repo = np.array([q["repo"] for q in queries])
        files = 0
        for i, q in enumerate(queries):
            ranking = q["ranking"]
            file_ids = {}
            for hit in ranking["candidates"]:
                e = hit["evidence"]
                if hit["path"] not in file_ids:
                    file_ids[hit["path"]] = files
                    files += 1
                defines, named = e["defines"], e["named"]
                coverage = ranking["coverage"].get(hit["path"])
                lexical_rank, vector_rank = leg_ranks(hit.get("retrieval"))
                for key, value in [
                    ("query", i), ("file", file_ids[hit["path"]]), ("id", hit["id"]),
                    ("lexical_rank", lexical_rank), ("vector_rank", vector_rank),
                    ("one_identifier", ranking["kind"] == "Identifier"),
                    ("relevant", any(is_target(hit["path"], t) for t in q["targets"])),
                    ("exact", hit["id"] in ranking["exact"]),
                    ("coverage", np.nan if coverage is None else coverage), ("base", hit["base"]),
                    ("identifier", isinstance(defines, dict)),
                    ("typed", isinstance(defines, dict) and defines["identifier"]["typed"]),
                    ("mentioned", defines == "mentioned"), ("words", defines == "words"),
                    ("named", named != "no"),
                    ("named_weight", named["word"]["weight"]
                     if isinstance(named, dict) and "word" in named else 1.0),
                    ("spelled", e["spelled"]), ("directory", e["directory"] is not None),
                    ("directory_weight", e["directory"]["weight"] if e["directory"] else 0.0),
                    ("old_version", e["old_version"]), ("secondary", e["secondary"]),
                ]:
                    cols[key].append(value)
        for key, values in cols.items():
            setattr(self, key, np.array(values))
        self.n_queries = len(queries)
        self.n_files = files
        self.file_query = np.zeros(files, int)
        self.file_query[self.file] = self.query
        self.file_relevant = np.zeros(files, bool)
        self.file_relevant[self.file] = self.relevant
        self.discount = 1 / np.log2(np.arange(2, 12))
        self.ideal = np.array([self.discount[:min(10, len(q["targets"]))].sum() for q in queries])

    def factors(self, c):
        """The product of the rule factors, per candidate (`Evidence::factor`)."""
        f = np.ones(len(self.base))
        f *= np.where(self.identifier, c["DEFINES_IDENTIFIER"], 1.0)
        f *= np.where(self.typed, c["DEFINES_AS_TYPED"], 1.0)
        f *= np.where(self.mentioned, c["DEFINES_MENTIONED"], 1.0)
        f *= np.where(self.words, c["DEFINES_WORDS"], 1.0)
        f *= np.where(self.named, 1 + (c["FILE_NAMED"] - 1) * self.named_weight, 1.0)
        f *= c["FILE_SPELLED"] ** self.spelled
        f *= np.where(self.directory, 1 + (c["DIRECTORY_NAMED"] - 1) * self.directory_weight, 1.0)
        f *= np.where(self.old_version, c["OLD_VERSION"], 1.0)
        f *= np.where(self.secondary, c["SECONDARY_PATH"], 1.0)
        return f

    def with_file_evidence(self, s, share):
        """Each score plus `share` of its file's other chunks' (the best fully, then halves)."""
        order = np.lexsort((-s, self.file))
        files, sorted_s = self.file[order], s[order]
        starts = np.r_[0, np.flatnonzero(files[1:] != files[:-1]) + 1]
        sizes = np.diff(np.r_[starts, len(files)])
        start_of = np.repeat(starts, sizes)
        end_of = np.repeat(starts + sizes - 1, sizes)
        weighted = 0.5 ** (np.arange(len(files)) - start_of) * sorted_s
        cumulative = np.cumsum(weighted)
        before_file = np.where(start_of > 0, cumulative[start_of - 1], 0.0)
        above = cumulative - weighted - before_file
        below = cumulative[end_of] - before_file - above - weighted
        out = np.empty_like(s)
        out[order] = sorted_s + share * (above + 2 * below)
        return out

    def file_ranks(self, s):
        """Files ranked by their best chunk's score `s`, the `exact` chunks first: each
        ranked file's query, rank (from 0) and whether it is relevant."""
        s = s + np.where(self.exact, 1e6, 0.0)
        best = np.full(self.n_files, -np.inf)
        np.maximum.at(best, self.file, s)
        order = np.lexsort((-best, self.file_query))
        queries = self.file_query[order]
        starts = np.r_[0, np.flatnonzero(queries[1:] != queries[:-1]) + 1]
        rank = np.arange(len(queries)) - np.repeat(starts, np.diff(np.r_[starts, len(queries)]))
        return queries, rank, self.file_relevant[order]

    def ndcg(self, s):
        """Per query NDCG@10 over files ranked by their best chunk, the `exact` chunks first."""
        queries, rank, relevant = self.file_ranks(s)
        hit = relevant & (rank < 10)
        dcg = np.zeros(self.n_queries)
        np.add.at(dcg, queries[hit], self.discount[rank[hit]])
        return np.where(self.ideal > 0, dcg / np.maximum(self.ideal, 1e-9), 0.0)

    def stage(self, c, base=None):
        """The ranking stage's score of each candidate from its retrieval score `base`
        (the traced one unless given)."""
        s = (self.base if base is None else base) * self.factors(c) ** c["PRIOR"]
        s = self.with_file_evidence(s, c["FILE_EVIDENCE"])
        coverage = np.maximum(np.nan_to_num(self.coverage, nan=1.0), c["COVERAGE_FLOOR"])
        return s * np.where(np.isnan(self.coverage), 1.0, coverage ** c["COVERAGE_POWER"])

    def score(self, c):
        return self.ndcg(self.stage(c))


def leg_ranks(retrieval):
    """A candidate's rank (from 0; -1: absent) in each leg, from the `why` fusion wrote
    (`BM25 #3, vectors #12`)."""
    found = [re.search(pattern + r" #(\d+)", retrieval or "") for pattern in ("BM25", "vectors")]
    return [int(m.group(1)) - 1 if m else -1 for m in found]


def partly_embedded(data, built, shares, seeds=3, k=60.0):
    """Default mode while only a share of the chunks has its vector: each seed leaves a
    random part of the candidates out of the vectors' ranking, and fusion (RRF, as
    `fusion.rs`) runs again with the vectors weighted 1, by the share, or 0. Queries with no
    BM25 candidate keep their traced scores."""
    has_lexical = np.zeros(data.n_queries, bool)
    np.logical_or.at(has_lexical, data.query, data.lexical_rank >= 0)
    fused = has_lexical[data.query]
    ids = np.unique(data.id)
    traced = data.base
    for share in shares:
        means = {}
        for seed in range(seeds):
            embedded = set(ids[np.random.default_rng(seed).random(len(ids)) < share])
            kept = (data.vector_rank >= 0) & np.array([i in embedded for i in data.id])
            # Ranks among the vectors still there.
            order = np.lexsort((np.where(kept, data.vector_rank, 1 << 30), data.query))
            first = np.r_[0, np.flatnonzero(data.query[order][1:] != data.query[order][:-1]) + 1]
            rank = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
            vector_rank = np.full(len(order), -1)
            vector_rank[order] = np.where(kept[order], rank, -1)
            for label, weight in [("equal weight", 1.0), ("weighted by the share", share),
                                  ("vectors off", 0.0)]:
                w = np.where(data.one_identifier, 0.0, weight)
                rrf = (np.where(data.lexical_rank >= 0, 1 / (k + data.lexical_rank + 1), 0)
                       + w * np.where(vector_rank >= 0, 1 / (k + vector_rank + 1), 0))
                best = np.zeros(data.n_queries)
                np.maximum.at(best, data.query, rrf)
                data.base = np.where(fused, rrf / np.maximum(best[data.query], 1e-12), traced)
                means.setdefault(label, []).append(data.score(built).mean())
                data.base = traced
        print(f"  {share:.2f} of the chunks embedded: " + ", ".join(
            f"{label} {np.mean(v):.4f}" for label, v in means.items()))


def fit(data, mask, built, min_gain, passes=3):
    """Coordinate ascent on the mean NDCG@10 of the queries in `mask`; a constant moves only
    for a gain of at least `min_gain`."""
    c = dict(built)
    current = data.score(c)[mask].mean()
    for _ in range(passes):
        moved = False
        for name in RULES + list(VALUES):
            best_value, best = c[name], current
            for value in grid(name, built):
                trial = dict(c, **{name: value})
                score = data.score(trial)[mask].mean()
                if score > best + min_gain:
                    best_value, best = value, score
            if best_value != c[name]:
                c[name], current, moved = best_value, best, True
        if not moved:
            break
    return c, current


def changed(c, built):
    return {k: v for k, v in c.items() if abs(v - built[k]) > 1e-9}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("dump")
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--min-gain", type=float, default=0.001,
                        help="least gain in mean NDCG@10 for which a constant moves")
    parser.add_argument("--embedded-shares", type=float, nargs="*",
                        help="instead of fitting, replay default mode with only these shares "
                             "of the chunks embedded (e.g. 0.25 0.5 0.75)")
    args = parser.parse_args()
    queries = load(args.trace, args.dump, args.mode)
    data = Candidates(queries)
    built = constants()
    as_built = data.score(built)
    measured = np.mean([q[args.mode]["ndcg"] for q in queries])
    print(f"{args.mode}, {len(queries)} queries: replay of the stage as built {as_built.mean():.4f} "
          f"(the benchmark measured {measured:.4f})")
    if args.embedded_shares:
        partly_embedded(data, built, args.embedded_shares)
        return
    fitted, in_sample = fit(data, np.ones(data.n_queries, bool), built, args.min_gain)
    print(f"fit on all repositories: {in_sample:.4f}, moving {changed(fitted, built) or 'nothing'}")
    held_out = np.zeros(data.n_queries)
    chosen = Counter()
    for repo in sorted(set(data.repo)):
        test = data.repo == repo
        c, _ = fit(data, ~test, built, args.min_gain)
        held_out[test] = data.score(c)[test]
        chosen.update(changed(c, built).items())
        print(f"  {repo:16s} as built {as_built[test].mean():.3f}, held out {held_out[test].mean():.3f}")
    print(f"leave-one-repository-out CV: {held_out.mean():.4f} (as built {as_built.mean():.4f})")
    print("moves chosen by the folds:",
          ", ".join(f"{k} {v} ({n})" for (k, v), n in chosen.most_common()) or "none")
    print("to run the fit on all: " + " ".join(
        f"AMANMCP_RANK_{k}={v}" for k, v in changed(fitted, built).items()))


if __name__ == "__main__":
    main()
