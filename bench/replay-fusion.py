#!/usr/bin/env python3
"""Replay hybrid fusion from a rank trace, on semble, CoSQA and SWE-bench together
(bench/README.md, "Replaying fusion on three sets at once").

With AMANMCP_RANK_TRACE set, the daemon writes each hybrid search's two legs as fusion got
them (BM25's chunk ids and scores, the vectors' ids and similarities, the weights) before the
ranking stage's record. This script fuses the legs again in other ways, runs the ranking stage
over the result (bench/fit-rank.py's replay), and prints each way's figures on every set given,
beside fusion as built (checked to give the traced scores):

    AMANMCP_RANK_TRACE=/tmp/s.trace target/release/amanmcp-bench semble \\
        --eval ../shared/eval/semble --dump /tmp/s.jsonl
    AMANMCP_RANK_TRACE=/tmp/c.trace target/release/amanmcp-bench cosqa \\
        --eval ../shared/eval/cosqa --dump /tmp/c.jsonl
    AMANMCP_RANK_TRACE=/tmp/w.trace target/release/amanmcp-bench localize \\
        --data ../shared/eval/swebench_loc/visible.jsonl --dump /tmp/w.jsonl ...
    python3 bench/replay-fusion.py --semble /tmp/s.trace /tmp/s.jsonl \\
        --cosqa /tmp/c.trace /tmp/c.jsonl --swe /tmp/w.trace /tmp/w.jsonl

Figures: semble NDCG@10 (hybrid), CoSQA MRR, SWE-bench whole-issue R@10 and MRR and
title MRR. Each alternative is one line; none is fitted per set, so a line that gains on one
set and loses on another says the families below cannot tell those sets' queries apart.
Needs numpy.
"""

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np

spec = importlib.util.spec_from_file_location("fit_rank", Path(__file__).with_name("fit-rank.py"))
fit_rank = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fit_rank)


def cosqa_queries(trace_path, dump_path):
    dump = [json.loads(line) for line in open(dump_path)]
    records = fit_rank.rankings(trace_path, "hybrid")
    assert len(records) == len(dump), "trace one `cosqa` run into an empty file"
    return [dict(repo="cosqa", query=q["query"], targets=[q["want"]], ranking=r)
            for q, r in zip(dump, records)]


def swe_queries(trace_path, dump_path):
    dump = [json.loads(line) for line in open(dump_path)]
    hybrid = [q for q in dump if q["mode"] == "hybrid"]
    records = fit_rank.rankings(trace_path, "hybrid")
    assert len(records) == len(hybrid), "trace one `localize` run into an empty file"
    return [dict(repo=q["id"].split("__")[0], form=q["form"], targets=q["gold"], ranking=r)
            for q, r in zip(hybrid, records)]


class Replay:
    """A set's candidates (fit-rank's arrays) with each one's raw leg scores."""

    def __init__(self, queries):
        self.queries = queries
        self.data = fit_rank.Candidates(queries)
        self.built = fit_rank.constants()
        lexical, vector = [], []
        for q in queries:
            legs = q["ranking"]["legs"]
            bm25, near = dict(map(tuple, legs["lexical"])), dict(map(tuple, legs["semantic"]))
            for hit in q["ranking"]["candidates"]:
                lexical.append(bm25.get(hit["id"], np.nan))
                vector.append(near.get(hit["id"], np.nan))
        self.lexical, self.vector = np.array(lexical), np.array(vector)
        self.traced = self.data.base.copy()
        per = lambda f: np.array([f(q["ranking"]) for q in queries])
        self.weights = per(lambda r: (r["legs"]["lexical_weight"], r["legs"]["semantic_weight"]))
        self.issue = per(lambda r: r["kind"] == "Issue")[self.data.query]
        self.single = per(lambda r: not r["legs"]["lexical"] or not r["legs"]["semantic"])
        self.lead = self.vector_lead()
        d = self.data
        self.named = np.zeros(d.n_queries, bool)
        np.logical_or.at(self.named, d.query, d.named | d.directory | (d.spelled > 0))

    def per_query_max(self, values):
        best = np.full(self.data.n_queries, -np.inf)
        np.maximum.at(best, self.data.query, values)
        return best[self.data.query]

    def normalised(self, scores):
        return scores / np.maximum(self.per_query_max(scores), 1e-12)

    def ratio(self, scores, missing):
        """Each score over the query's best; candidates the leg lacks get `missing`."""
        filled = np.where(np.isnan(scores), -np.inf, scores)
        return np.where(np.isnan(scores), missing,
                        np.maximum(filled, 0) / np.maximum(self.per_query_max(filled), 1e-9))

    def issue_order(self):
        """A pasted issue's candidates' BM25 scores over the best (those only the vectors
        found scored for the same query; none: 0); `fused` applies fusion::order_by_bm25."""
        scores = []
        for q in self.queries:
            bm25 = dict(map(tuple, q["ranking"]["legs"].get("issue_bm25") or []))
            scores.extend(bm25.get(hit["id"], 0.0) for hit in q["ranking"]["candidates"])
        return self.normalised(np.array(scores))

    def vector_lead(self):
        """Per candidate: the vectors' lead when it is their first (fusion::vector_lead: its
        similarity's gap to the second over its gap to the last), else 0."""
        lead = []
        for q in self.queries:
            near = (q["ranking"]["legs"] or {}).get("semantic") or []
            sims = [v for _, v in near]
            first, gap = None, 0.0
            if len(sims) >= 3:
                first = near[0][0]
                gap = (sims[0] - sims[1]) / max(sims[0] - sims[-1], 1e-9)
            lead.extend(gap if hit["id"] == first else 0.0 for hit in q["ranking"]["candidates"])
        return np.array(lead)

    def fused(self, k=60.0, semantic=1.0, vector_gap=0.0, vector_power=2.0, issue_rrf=False,
              lead=0.5, lead_from=0.1, near=1.0):
        """Fusion as built (`fusion.rs`, `Searcher::search`) with these changes: the vectors'
        RRF weight times `semantic`; `vector_gap` times the vector's similarity over the best,
        to `vector_power`, added (RRF's scores fall by rank alone); the vectors' first counted
        `lead` more at a full lead (from a lead of `lead_from`); where no candidate's file or
        directory is named, each candidate's score at least `near` times its semantic mode
        score (`rank::rank`)."""
        d = self.data
        wl, ws = self.weights[d.query, 0], self.weights[d.query, 1] * semantic
        rrf = (np.where(d.lexical_rank >= 0, wl / (k + d.lexical_rank + 1), 0)
               + np.where(d.vector_rank >= 0, ws / (k + d.vector_rank + 1), 0))
        if lead:
            ahead = np.maximum(self.lead - lead_from, 0) / (1 - lead_from)
            rrf = rrf * (1 + lead * ws * ahead)
        base = self.normalised(rrf)
        if vector_gap:
            gap = self.ratio(self.vector, 0.0) ** vector_power
            base = self.normalised(base + vector_gap * self.weights[d.query, 1] * gap)
        if near:
            floor = near * self.weights[d.query, 1] * self.ratio(self.vector, 0.0)
            keep = ~self.named[d.query] & ~self.issue
            base = np.where(keep, np.maximum(base, floor), base)
        base = np.where(self.single[d.query], self.traced, base)
        if not issue_rrf:
            by_bm25 = np.maximum(self.issue_order(), 1e-6) * (1 + self.normalised(base))
            base = np.where(self.issue & ~self.single[d.query], by_bm25, base)
        return self.normalised(base)

    def files_ranked(self, base):
        """Per query: the relevant files' ranks (from 0) by the ranking stage's order."""
        d = self.data
        queries, rank, relevant = d.file_ranks(d.stage(self.built, base))
        return queries[relevant], rank[relevant]

    def ndcg(self, base):
        """Per query NDCG@10 (fit-rank's replay of the ranking stage)."""
        return self.data.ndcg(self.data.stage(self.built, base))

    def mrr(self, base):
        queries, rank = self.files_ranked(base)
        first = np.full(self.data.n_queries, np.inf)
        np.minimum.at(first, queries, rank)
        return 1 / (first + 1)

    def recall(self, base, n=10):
        queries, rank = self.files_ranked(base)
        hits = np.zeros(self.data.n_queries)
        np.add.at(hits, queries[rank < n], 1)
        return hits / np.array([len(q["targets"]) for q in self.queries])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--semble", nargs=2, metavar=("TRACE", "DUMP"))
    parser.add_argument("--cosqa", nargs=2, metavar=("TRACE", "DUMP"))
    parser.add_argument("--swe", nargs=2, metavar=("TRACE", "DUMP"))
    args = parser.parse_args()
    sets = {}
    if args.semble:
        sets["semble"] = Replay(fit_rank.load(*args.semble, "hybrid"))
    if args.cosqa:
        sets["cosqa"] = Replay(cosqa_queries(*args.cosqa))
    if args.swe:
        sets["swe"] = Replay(swe_queries(*args.swe))
    for name, s in sets.items():
        drift = np.abs(s.fused() - s.traced).max()
        print(f"{name}: {s.data.n_queries} queries; fusion as built replayed within {drift:.1e}")

    def figures(**fusion):
        out = []
        for name, s in sets.items():
            base = s.fused(**fusion)
            if name == "semble":
                out.append(f"semble {s.ndcg(base).mean():.4f}")
            elif name == "cosqa":
                out.append(f"cosqa MRR {s.mrr(base).mean():.4f}")
            else:
                whole = np.array([q["form"] == "query" for q in s.queries])
                recall, mrr = s.recall(base), s.mrr(base)
                out.append(f"swe R@10 {recall[whole].mean():.3f} MRR {mrr[whole].mean():.3f} "
                           f"title MRR {mrr[~whole].mean():.3f}")
        return ", ".join(out)

    print(f"{'as built':32s} {figures()}")
    print(f"{'no floor at the vectors score':32s} {figures(near=0.0)}")
    print(f"{'no lead for the vectors first':32s} {figures(lead=0.0)}")
    for lead, start in ((0.25, 0.1), (1.0, 0.1), (0.5, 0.05), (0.5, 0.2)):
        print(f"{f'lead {lead} from {start}':32s} {figures(lead=lead, lead_from=start)}")
    for k in (20, 120):
        print(f"{f'RRF k={k}':32s} {figures(k=k)}")
    for w in (0.5, 1.5, 2.0):
        print(f"{f'vectors weighed x{w}':32s} {figures(semantic=w)}")
    for gap in (0.25, 0.5, 1.0):
        for power in (2, 4):
            label = f"+ {gap} x (vector/best)^{power}"
            print(f"{label:32s} {figures(vector_gap=gap, vector_power=power)}")
    print(f"{'a pasted issue fused by RRF':32s} {figures(issue_rrf=True)}")


if __name__ == "__main__":
    main()
