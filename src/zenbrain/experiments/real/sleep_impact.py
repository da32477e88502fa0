"""Sleep impact: seven days of 50 new facts a day, with and without nightly sleep.

Both arms run on the real coordinator with default parameters and the same usage:
each morning the day's 50 facts are stored (``store_many``) and every query whose
relevant facts have all been stored is asked once (``recall(touch=True)``). At night the
*sleep* arm runs ``sleep()``; the *no-sleep* arm runs ``decay()`` (forgetting and
archiving without any sleep-time mechanism), so the difference is sleep's own stages.
Read the morning of day 8: mean Ebbinghaus stability and mean strength of the active
facts, mean retrievability, retention, active memories and their size in whitespace
tokens (the paper's "storage"), and, from the sleep reports, LTP and LTD counts, replay
candidates, counterfactuals and edges created (the paper's "new associations").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from zenbrain.config import Config
from zenbrain.ids import seeded_ids
from zenbrain.pipeline.retrievability import retrievability as lc_retrievability
from zenbrain.storage.base import Filter

from .harness import DAY, K, open_run, retention_of
from .synthetic import SyntheticEmbedder, make_workload

__all__ = ["ARMS", "jobs", "run_one", "summarize"]

ARMS = ("sleep", "no_sleep")


def run_one(arm: str, seed: int, days: int = 7, per_day: int = 50, n_queries: int = 140) -> dict[str, Any]:
    n = days * per_day
    work = make_workload(seed, n, n_queries)
    emb = SyntheticEmbedder(work.table())
    ready_day = [max(r) // per_day for r in work.relevant]  # day index (0-based) when all its facts exist
    acc = {"ltp": 0, "ltd": 0, "candidates": 0, "counterfactuals": 0, "edges_created": 0, "edges_pruned": 0,
           "schemas": 0, "archived_by_night": 0}
    with seeded_ids(seed):
        run = open_run(emb, Config(seed=int(seed)))
        try:
            t0 = run.clock.now()
            for d in range(days):
                run.advance_to(t0 + d * DAY + 9 * 3600.0)
                run.store_facts(work.fact_texts[d * per_day:(d + 1) * per_day])
                run.advance_to(t0 + d * DAY + 14 * 3600.0)
                for q in (q for q, rd in enumerate(ready_day) if rd == d):
                    run.coord.recall(work.query_texts[q], run.scope, k=K, touch=True)
                run.advance_to(t0 + d * DAY + 23 * 3600.0)
                if arm == "sleep":
                    st = run.coord.sleep(run.scope).stages
                    summ = (st.get("simulation_selection_sleep") or {}).get("summary") or {}
                    acc["ltp"] += int(summ.get("ltp", 0))
                    acc["ltd"] += int(summ.get("ltd", 0))
                    acc["candidates"] += int(summ.get("candidates", 0))
                    acc["counterfactuals"] += int(summ.get("counterfactuals", 0))
                    acc["edges_created"] += int(summ.get("edges_created", 0)) + len((st.get("spectral_kg_health") or {}).get("bridges", []) or [])
                    acc["edges_pruned"] += int(summ.get("edges_pruned", 0)) + len((st.get("two_factor_hebbian") or {}).get("pruned", []) or [])
                    acc["schemas"] += len((st.get("dual_process_cot") or {}).get("schemas_created", []) or [])
                else:
                    st = run.coord.decay(run.scope).stages
                acc["archived_by_night"] += int((st.get("archive") or {}).get("count", 0))
            run.advance_to(t0 + days * DAY + 9 * 3600.0)
            ret = retention_of(run)
            facts = run.coord.storage.get(run.part, run.fact_ids)
            active = [f for f in facts if not f.archived]
            everything = run.coord.storage.query(run.part, Filter(contexts=None, session_id=None))  # active only
            tokens = int(sum(len(i.content.split()) for i in everything))
            r_all = lc_retrievability(run.coord.engine, facts, run.clock.now())
        finally:
            run.close()
    return {
        "avg_stability": float(np.mean([f.stability for f in active])) if active else float("nan"),
        "avg_stability_all": float(np.mean([f.stability for f in facts])),
        "avg_strength": float(np.mean([f.strength for f in active])) if active else float("nan"),
        "mean_retrievability": float(np.mean(r_all)),
        "retention": ret["retention"],
        "active_memories": len(everything),
        "storage_tokens": tokens,
        **acc,
    }


def jobs(seeds: Sequence[int], quick: bool = False) -> list:
    from .pool import Job

    per_day = 15 if quick else 50
    return [Job(("sleep_impact", arm, int(s)), f"{__name__}:run_one",
                dict(arm=arm, seed=int(s), per_day=per_day, n_queries=40 if quick else 140),
                cost=per_day * 7 * (8 if arm == "sleep" else 3)) for arm in ARMS for s in seeds]


def summarize(results: dict, seeds: Sequence[int], quick: bool = False) -> dict[str, Any]:
    from ..stats import compare_paired, describe

    def col(arm: str, key: str) -> list[float]:
        return [float(results[("sleep_impact", arm, int(s))][key]) for s in seeds]

    keys = ("avg_stability", "avg_stability_all", "avg_strength", "mean_retrievability", "retention",
            "active_memories", "storage_tokens")
    out: dict[str, Any] = {"seeds": [int(s) for s in seeds], "days": 7, "per_day": 15 if quick else 50, "metrics": {}}
    for i, k in enumerate(keys):
        a, b = col("sleep", k), col("no_sleep", k)
        out["metrics"][k] = {"sleep": describe(a), "no_sleep": describe(b), "sleep_vs_no_sleep": compare_paired(a, b, seed=20 + i)}
    tok_s, tok_n = np.mean(col("sleep", "storage_tokens")), np.mean(col("no_sleep", "storage_tokens"))
    out["storage_reduction"] = float(1 - tok_s / tok_n) if tok_n > 0 else None
    for k in ("ltp", "ltd", "candidates", "counterfactuals", "edges_created", "edges_pruned", "schemas"):
        out[k] = describe(col("sleep", k))
    out["archived_by_night"] = {"sleep": describe(col("sleep", "archived_by_night")),
                                "no_sleep": describe(col("no_sleep", "archived_by_night"))}
    return out
