"""Which fusion, index text and ranking steps find LoCoMo evidence turns: one run, all systems.

    PYTHONPATH=src OMP_NUM_THREADS=1 python scripts/study_locomo_recall.py \
        [--data ../shared/data] [--embedder minilm] [--no-zenbrain] [--json results/study_locomo_recall.json]

Per conversation (every system sees one conversation's turns, as ``zenbrain bench locomo``
does), every question with evidence is ranked by each system; reported are
evidence_recall@5, evidence_recall@10 and hit@5 overall (mean over questions, 95% bootstrap
interval), the paired difference to today's fusion (bootstrap over questions), per
category and per conversation. Dense vectors come from the embedding cache
(``$ZENBRAIN_CACHE_DIR``/embeddings.db, as the benchmark uses), so only texts never seen
before are embedded; BM25 is bm25s with stemming and English stopwords
(``zenbrain.bench.baselines.BM25System``).

Systems are :class:`zenbrain.retrieval.fusion.FusionRecipe` values (the registered ones
plus study variants), and three references: dense alone, BM25 alone, and zenbrain's full
recall (``ZenBrainSystem``, every mechanism on), unless ``--no-zenbrain``.

No constant is fitted here: weights are equal (0.5 / 0.5), the neighbour weight is one
half, the speaker bonus a tenth of the spread, the time bonus the 0.25 recall already
uses; neighbouring values are printed as a sensitivity check, not to pick the best.
Question windows are read with :func:`zenbrain.retrieval.dates.query_window` against the
conversation's last session date; a turn's times are its session day and the windows of
the time expressions it contains, resolved against that day.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from zenbrain.bench.base import Doc
from zenbrain.bench.baselines import BM25System
from zenbrain.bench.locomo import CATEGORY_NAMES, LocomoConversation, load_locomo
from zenbrain.bench.metrics import bootstrap_ci, evidence_recall_at_k, hit_at_k
from zenbrain.cli_support import CACHE_FILE, cache_dir
from zenbrain.providers.base import embed_queries, normalize_rows
from zenbrain.providers.cache import CachedEmbedder
from zenbrain.providers.factory import make_embedder
from zenbrain.retrieval.dates import TimeWindow, query_window, resolve
from zenbrain.retrieval.fusion import (
    RECIPES,
    FusionRecipe,
    candidate_union,
    rank_pool,
)
from zenbrain.retrieval.turn_context import (
    Turn,
    contextual_texts,
    mean_vectors,
    named_speakers,
)

KS = (5, 10)
METRICS = ("R@5", "R@10", "hit@5")


# --------------------------------------------------------------------------- systems


def study_recipes() -> list[FusionRecipe]:
    """Registered recipes, one change at a time from a calibrated fusion, then the chosen
    recipe with each of its parts taken out, then its constants halved and doubled."""
    conv = RECIPES["conversation"]
    base = RECIPES["minmax"].with_(name="minmax+spk", speaker_in_text=True)
    out = [RECIPES[n] for n in ("today", "rrf", "minmax", "dbsf", "zscore")]
    out += [
        RECIPES["today"].with_(name="today-nospk", speaker_in_text=False),
        base,
        # one change at a time (index text = previous turn + the turn)
        base.with_(name="minmax+spk ctx1/dense-own", index_window=1, dense_view="own"),
        base.with_(name="minmax+spk ctx1/dense-ctx", index_window=1, dense_view="context"),
        base.with_(name="minmax+spk ctx1/dense-max", index_window=1, dense_view="max"),
        base.with_(name="minmax+spk ctx1/dense-mean", index_window=1, dense_view="mean"),
        base.with_(name="minmax+spk nb0.5", neighbour_weight=0.5),
        base.with_(name="minmax+spk spkpref0.1", speaker_bonus=0.1),
        base.with_(name="minmax+spk time0.25", time_bonus=0.25),
        RECIPES["today"].with_(name="today ctx1/dense-mean", index_window=1, dense_view="mean"),
        RECIPES["today"].with_(name="today time0.25", time_bonus=0.25),
        # the chosen recipe, and without each of its parts
        conv,
        conv.with_(name="conversation -ctx", index_window=0, dense_view="own"),
        conv.with_(name="conversation -neighbours", neighbour_weight=0.0),
        conv.with_(name="conversation -speaker pref", speaker_bonus=0.0),
        conv.with_(name="conversation +speaker in text", speaker_in_text=True),
        conv.with_(name="conversation -time", time_bonus=0.0),
        conv.with_(name="conversation dense-max", dense_view="max"),
        conv.with_(name="conversation dense-ctx", dense_view="context"),
        conv.with_(name="conversation ctx2", index_window=2),
        conv.with_(name="conversation dbsf", normalization="dbsf"),
        conv.with_(name="conversation zscore", normalization="zscore"),
        conv.with_(name="conversation max (today's scale)", normalization="max"),
        conv.with_(name="conversation rrf", normalization="rrf", lexical_normalization=None),
        # sensitivity of its constants (printed, not used to choose them)
        conv.with_(name="conversation nb0.25", neighbour_weight=0.25),
        conv.with_(name="conversation nb1.0", neighbour_weight=1.0),
        conv.with_(name="conversation r2", neighbour_radius=2),
        conv.with_(name="conversation lexical-minmax", lexical_normalization="minmax"),
        conv.with_(name="conversation ratio", normalization="ratio"),
        conv.with_(name="conversation spk0.05", speaker_bonus=0.05),
        conv.with_(name="conversation spk0.2", speaker_bonus=0.2),
        conv.with_(name="conversation time0.1", time_bonus=0.1),
        conv.with_(name="conversation time0.5", time_bonus=0.5),
        conv.with_(name="conversation time1.0", time_bonus=1.0),
    ]
    return out


# --------------------------------------------------------------------------- indexes


@dataclass
class ConversationIndex:
    """One conversation's turns, their index texts, vectors and BM25 indexes."""

    conv: LocomoConversation
    turns: list[Turn]
    texts: dict[str, list[str]]  # variant -> index text per turn
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    bm25: dict[str, BM25System] = field(default_factory=dict)
    sessions: list[str] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    lex_cache: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    times: list[list[TimeWindow]] = field(default_factory=list)  # when said, and the times mentioned

    def lexical(self, variant: str, query: str) -> np.ndarray:
        key = (variant, query)
        if key not in self.lex_cache:
            self.lex_cache[key] = np.asarray(self.bm25[variant].scores(query), dtype=np.float64)
        return self.lex_cache[key]


def text_variant(recipe: FusionRecipe) -> str:
    return f"{'spk' if recipe.speaker_in_text else 'plain'}/w{recipe.index_window}"


def build_index(conv: LocomoConversation, windows: Sequence[int]) -> ConversationIndex:
    turns = [Turn(d.text, d.speaker, d.session) for d in conv.docs]
    prefixed = [Turn(f"{t.speaker}: {t.text}" if t.speaker else t.text, t.speaker, t.session) for t in turns]
    texts: dict[str, list[str]] = {}
    for w in windows:
        texts[f"plain/w{w}"] = contextual_texts(turns, w)
        texts[f"spk/w{w}"] = contextual_texts(prefixed, w)
    idx = ConversationIndex(conv, turns, texts)
    idx.sessions = [d.session or "" for d in conv.docs]
    idx.positions = [int(d.metadata.get("turn_index", i)) for i, d in enumerate(conv.docs)]
    for d in conv.docs:
        said = [] if d.time is None else [TimeWindow(d.time - d.time % 86400, d.time - d.time % 86400 + 86399)]
        idx.times.append(said + [m.window for m in resolve(d.text, d.time)])
    for variant, tx in texts.items():
        bm = BM25System(name=variant)
        bm.add([Doc(id=str(i), text=t) for i, t in enumerate(tx)])
        idx.bm25[variant] = bm
    return idx


def dense_scores(idx: ConversationIndex, recipe: FusionRecipe, qvec: np.ndarray) -> np.ndarray:
    spk = "spk" if recipe.speaker_in_text else "plain"
    own = idx.vectors[f"{spk}/w0"] @ qvec
    if recipe.index_window == 0 or recipe.dense_view == "own":
        return own.astype(np.float64)
    ctx_key = f"{spk}/w{recipe.index_window}"
    ctx = idx.vectors[ctx_key] @ qvec
    if recipe.dense_view == "context":
        return ctx.astype(np.float64)
    if recipe.dense_view == "max":
        return np.maximum(own, ctx).astype(np.float64)
    return (mean_vectors(idx.vectors[f"{spk}/w0"], idx.vectors[ctx_key]) @ qvec).astype(np.float64)


def rank_recipe(idx: ConversationIndex, recipe: FusionRecipe, question: str, qvec: np.ndarray, k: int) -> list[int]:
    d = dense_scores(idx, recipe, qvec)
    lx = idx.lexical(text_variant(recipe), question)
    cand = candidate_union(d, lx, recipe)
    if recipe.neighbour_weight > 0:
        # The neighbours of every candidate join the pool, so a strong hit can lift them.
        pos = {(idx.sessions[i], idx.positions[i]): i for i in range(len(idx.turns))}
        extra = []
        for c in cand.tolist():
            for o in range(-recipe.neighbour_radius, recipe.neighbour_radius + 1):
                j = pos.get((idx.sessions[c], idx.positions[c] + o))
                if j is not None:
                    extra.append(j)
        cand = np.asarray(list(dict.fromkeys([*cand.tolist(), *extra])), dtype=np.int64)
    named = None
    if recipe.speaker_bonus > 0:
        names = named_speakers(question, idx.conv.speakers)
        named = np.array([idx.turns[i].speaker in names for i in cand])
    inside = None
    if recipe.time_bonus > 0:
        window = query_window(question, idx.conv.last_time)
        if window is not None:
            inside = np.array([any(window.overlaps(w) for w in idx.times[i]) for i in cand])
    order, _ = rank_pool(
        recipe, d[cand], lx[cand],
        sessions=[idx.sessions[i] for i in cand], positions=[idx.positions[i] for i in cand],
        speaker_named=named, in_window=inside,
    )
    order = order[:k]
    return cand[order].tolist()


# --------------------------------------------------------------------------- run


def question_record(q: Any, ranked_ids: list[str]) -> dict[str, float]:
    gold = set(q.evidence)
    return {
        "R@5": evidence_recall_at_k(ranked_ids, gold, 5),
        "R@10": evidence_recall_at_k(ranked_ids, gold, 10),
        "hit@5": hit_at_k(ranked_ids, gold, 5),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    t_start = time.perf_counter()
    convs = load_locomo(data_dir=args.data, include_speaker=False)
    recipes = study_recipes()
    if args.systems:
        wanted = {n.strip() for n in args.systems.split(",")}
        recipes = [r for r in recipes if r.name in wanted or r.name == "today"]
    windows = sorted({0, *(r.index_window for r in recipes)})
    emb = CachedEmbedder(make_embedder(args.embedder), Path(cache_dir()) / CACHE_FILE, memory_items=1 << 17)
    indexes = [build_index(c, windows) for c in convs]
    # the variants the recipes read: own text (w0) and index text, with or without speakers
    used = {"spk/w0"} | {f"{text_variant(r).split('/')[0]}/w0" for r in recipes} | {text_variant(r) for r in recipes}
    all_texts = list(dict.fromkeys(t for ix in indexes for v in sorted(used) for t in ix.texts[v]))
    questions = [(ix, q) for ix in indexes for q in ix.conv.questions if q.evidence]
    question_texts = list(dict.fromkeys(q.question for _, q in questions))
    t0 = time.perf_counter()
    lookup = dict(zip(all_texts, emb.embed(all_texts)))
    query_vecs = dict(zip(question_texts, embed_queries(emb, question_texts)))  # e5: as queries
    embed_s = time.perf_counter() - t0
    for ix in indexes:
        for variant in used:
            ix.vectors[variant] = normalize_rows(np.stack([lookup[t] for t in ix.texts[variant]]))
    print(f"{len(convs)} conversations, {sum(len(ix.turns) for ix in indexes)} turns, {len(questions)} questions; "
          f"{len(all_texts) + len(question_texts)} distinct texts, {emb.stats.misses} embedded in {embed_s:.1f} s",
          file=sys.stderr)

    records: dict[str, list[dict[str, Any]]] = defaultdict(list)
    k = max(KS)
    for ix, q in questions:
        qvec = normalize_rows(query_vecs[q.question][None, :])[0]
        ids = [d.id for d in ix.conv.docs]
        base = {"qid": q.qid, "conv": ix.conv.sample_id, "category": q.category}
        d = dense_scores(ix, RECIPES["today"].with_(speaker_in_text=True), qvec)
        records["dense"].append({**base, **question_record(q, [ids[i] for i in np.argsort(-d, kind="stable")[:k]])})
        lx = ix.lexical("spk/w0", q.question)
        top = [i for i in np.argsort(-lx, kind="stable")[:k] if lx[i] > 0]
        records["bm25"].append({**base, **question_record(q, [ids[i] for i in top])})
        for r in recipes:
            ranked = rank_recipe(ix, r, q.question, qvec, k)
            records[r.name].append({**base, **question_record(q, [ids[i] for i in ranked])})

    if not args.no_zenbrain:
        from zenbrain.bench.locomo import parse_locomo_datetime  # noqa: F401 - same loader path as the benchmark
        from zenbrain.bench.zenbrain_system import ZenBrainSystem

        system = ZenBrainSystem(emb, name="zenbrain")
        try:
            for c_spk in load_locomo(data_dir=args.data):
                system.reset()
                system.add(c_spk.docs)
                for q in c_spk.questions:
                    if not q.evidence:
                        continue
                    found = system.search(q.question, k, query_time=q.query_time)
                    base = {"qid": q.qid, "conv": c_spk.sample_id, "category": q.category}
                    records["zenbrain (full recall)"].append({**base, **question_record(q, found)})
        finally:
            system.close()
    emb.close()
    return summarize(records, seconds=time.perf_counter() - t_start, embedder=args.embedder,
                     recipes={r.name: r.as_dict() for r in recipes})


def summarize(records: dict[str, list[dict[str, Any]]], **meta: Any) -> dict[str, Any]:
    ref = {r["qid"]: r for r in records["today"]}
    out: dict[str, Any] = {"meta": meta, "systems": {}}
    for name, rows in records.items():
        s: dict[str, Any] = {"overall": {}, "vs_today": {}, "category": {}, "conversation": {}}
        for m in METRICS:
            vals = np.array([r[m] for r in rows])
            s["overall"][m] = bootstrap_ci(vals).as_dict()
            diff = vals - np.array([ref[r["qid"]][m] for r in rows])
            s["vs_today"][m] = bootstrap_ci(diff).as_dict()
        for key, group in (("category", "category"), ("conversation", "conv")):
            buckets: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for r in rows:
                buckets[str(r[group])].append(r)
            for g, rs in sorted(buckets.items()):
                s[key][g] = {m: float(np.mean([r[m] for r in rs])) for m in METRICS} | {"n": len(rs)}
                if key == "category":
                    diff = np.array([r["R@5"] - ref[r["qid"]]["R@5"] for r in rs])
                    s[key][g]["R@5_vs_today"] = bootstrap_ci(diff).as_dict()
        s["macro_conversation_R@5"] = float(np.mean([v["R@5"] for v in s["conversation"].values()]))
        out["systems"][name] = s
    return out


def _ci(c: dict[str, Any], signed: bool = False) -> str:
    fmt = "{:+.3f}" if signed else "{:.3f}"
    lo = "?" if c["low"] is None else fmt.format(c["low"])
    hi = "?" if c["high"] is None else fmt.format(c["high"])
    return f"{fmt.format(c['mean'])} [{lo}, {hi}]"


def markdown(result: dict[str, Any]) -> str:
    systems = result["systems"]
    lines = ["| system | R@5 | R@10 | hit@5 | ΔR@5 vs today | Δhit@5 vs today |", "|---|---|---|---|---|---|"]
    for name, s in systems.items():
        o, v = s["overall"], s["vs_today"]
        lines.append(f"| {name} | {_ci(o['R@5'])} | {o['R@10']['mean']:.3f} | {o['hit@5']['mean']:.3f} | "
                     f"{_ci(v['R@5'], True)} | {_ci(v['hit@5'], True)} |")
    cats = sorted({c for s in systems.values() for c in s["category"]}, key=int)
    convs = sorted({c for s in systems.values() for c in s["conversation"]})
    lines += ["", "R@5 per category and per conversation (macro = mean over conversations):", "",
              "| system | " + " | ".join(CATEGORY_NAMES.get(int(c), c) for c in cats) + " | "
              + " | ".join(convs) + " | macro |",
              "|---" * (1 + len(cats) + len(convs) + 1) + "|"]
    for name, s in systems.items():
        cells = [f"{s['category'][c]['R@5']:.3f}" for c in cats] + [f"{s['conversation'][c]['R@5']:.3f}" for c in convs]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {s['macro_conversation_R@5']:.3f} |")
    shown = [n for n in ("conversation", "zenbrain (full recall)") if n in systems]
    lines += ["", "ΔR@5 vs today per category, paired 95% bootstrap interval:", "",
              "| system | " + " | ".join(CATEGORY_NAMES.get(int(c), c) for c in cats) + " |",
              "|---" * (1 + len(cats)) + "|"]
    for name in shown:
        cells = [_ci(systems[name]["category"][c]["R@5_vs_today"], True) for c in cats]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None, help="data folder (default: $ZENBRAIN_DATA or ../shared/data)")
    p.add_argument("--embedder", default="minilm", help="embedder spec (default: minilm, as the benchmark table)")
    p.add_argument("--no-zenbrain", action="store_true", help="leave out zenbrain's full recall")
    p.add_argument("--systems", default=None, help="only these recipes (comma-separated names; dense, bm25 and today always run)")
    p.add_argument("--json", default=os.path.join("results", "study_locomo_recall.json"))
    args = p.parse_args(argv)
    result = run(args)
    print(markdown(result))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1))
    print(f"\nwrote {args.json}; {result['meta']['seconds']:.0f} s; load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
