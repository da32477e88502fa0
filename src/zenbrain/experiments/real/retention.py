"""Retention curves: 1,000 facts stored at t = 0, read at 1 h, 6 h, 1 d, 3 d, 7 d, 14 d, 30 d.

Four strategies, each a configuration of the real coordinator (default parameters:
the Ebbinghaus initial stability S0 = 1 day, as in the paper's curves):

* ``no_decay`` - both forgetting curves (``ebbinghaus_decay``, ``triple_copy``) off:
  nothing fades.
* ``ebbinghaus`` - only ``ebbinghaus_decay`` on.
* ``fsrs_only`` - ``ebbinghaus_decay`` and ``fsrs`` on; once a day a reviewer works through
  every memory FSRS has made due (``review_queue``), remembering each with probability
  equal to its retrievability (grade "good", else "again").
* ``full`` - every mechanism on; the same daily reviews, and ``sleep()`` on the checkpoint
  days (1, 3, 7, 14 and 30; not every night, to keep the run short).

Nothing is recalled: the curves show what the forgetting machinery itself does with
unused memories (plus reviews where the strategy has them). At each checkpoint the
curve is read before that day's reviews and sleep. Two readings: mean
retrievability over the 1,000 facts (the paper's y axis) and retention (share
retained, see the harness).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zenbrain.config import Config
from zenbrain.ids import seeded_ids
from zenbrain.registry import Mechanisms

from .harness import open_run, retention_of, review_due
from .synthetic import SyntheticEmbedder, make_workload

__all__ = ["CHECKPOINT_HOURS", "REVIEWS_PER_SESSION", "STRATEGIES", "jobs", "run_one", "summarize"]

CHECKPOINT_HOURS = (1, 6, 24, 72, 168, 336, 720)
REVIEWS_PER_SESSION = 0  # 0: every memory that is due
QUICK_FACTS = 200  # --quick
STRATEGIES = ("no_decay", "ebbinghaus", "fsrs_only", "full")


def _config(strategy: str, seed: int) -> Config:
    if strategy == "no_decay":
        mech = Mechanisms(disabled=frozenset({"ebbinghaus_decay", "triple_copy"}))
    elif strategy == "ebbinghaus":
        mech = Mechanisms.only(["ebbinghaus_decay"])
    elif strategy == "fsrs_only":
        mech = Mechanisms.only(["ebbinghaus_decay", "fsrs"])
    elif strategy == "full":
        mech = Mechanisms()
    else:
        raise ValueError(f"unknown strategy {strategy!r}")
    return Config(mechanisms=mech, seed=int(seed))


def run_one(strategy: str, seed: int, n_facts: int = 1000) -> dict[str, Any]:
    work = make_workload(seed, n_facts, 0)
    emb = SyntheticEmbedder(work.table())
    rng = np.random.default_rng([int(seed), 3])
    reviews_on = strategy in ("fsrs_only", "full")
    horizon_days = math.ceil(CHECKPOINT_HOURS[-1] / 24)
    # (hours, order, kind): readings come before the day's reviews and sleep
    events = [(float(h), 0, "read") for h in CHECKPOINT_HOURS]
    if reviews_on:
        events += [(24.0 * d, 1, "review") for d in range(1, horizon_days + 1)]
    if strategy == "full":
        events += [(float(h), 2, "sleep") for h in CHECKPOINT_HOURS if h >= 24]
    events.sort()
    curve_r, curve_kept, reviews = [], [], 0
    with seeded_ids(seed):
        run = open_run(emb, _config(strategy, seed))
        try:
            run.store_facts(work.fact_texts)
            t0 = run.clock.now()
            for h, _, kind in events:
                run.advance_to(t0 + h * 3600.0)
                if kind == "read":
                    r = retention_of(run)
                    curve_r.append(r["mean_r"])
                    curve_kept.append(r["retention"])
                elif kind == "review":
                    reviews += review_due(run, rng, REVIEWS_PER_SESSION or n_facts)["reviewed"]
                else:
                    run.coord.sleep(run.scope)
        finally:
            run.close()
    return {"mean_retrievability": curve_r, "retention": curve_kept, "reviews": reviews}


def jobs(seeds: Sequence[int], quick: bool = False) -> list:
    from .pool import Job

    n = QUICK_FACTS if quick else 1000
    cost = {"no_decay": 0.1, "ebbinghaus": 0.1, "fsrs_only": 3.0, "full": 2.5}  # daily reviews make these the longest jobs
    return [Job(("retention", st, int(s)), f"{__name__}:run_one", dict(strategy=st, seed=int(s), n_facts=n),
                cost=cost[st] * n * 20) for st in STRATEGIES for s in seeds]


def summarize(results: dict, seeds: Sequence[int], quick: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"hours": list(CHECKPOINT_HOURS), "n_facts": QUICK_FACTS if quick else 1000,
                           "reviews_per_session": REVIEWS_PER_SESSION or "all due", "seeds": [int(s) for s in seeds], "strategies": {}}
    for st in STRATEGIES:
        r = np.array([results[("retention", st, int(s))]["mean_retrievability"] for s in seeds])
        k = np.array([results[("retention", st, int(s))]["retention"] for s in seeds])
        out["strategies"][st] = {
            "mean_retrievability": r.mean(axis=0).tolist(),
            "mean_retrievability_std": (r.std(axis=0, ddof=1) if len(seeds) > 1 else np.zeros(r.shape[1])).tolist(),
            "retention": k.mean(axis=0).tolist(),
            # mean of the curve over the seven checkpoints (a simple area under the curve)
            "curve_mean": float(r.mean()),
            "reviews": float(np.mean([results[("retention", st, int(s))]["reviews"] for s in seeds])),
        }
    return out
