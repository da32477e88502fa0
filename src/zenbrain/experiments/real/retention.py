"""Retention curves: 1,000 facts stored at t = 0, read at 1 h, 6 h, 1 d, 3 d, 7 d, 14 d, 30 d.

Four strategies, each a configuration of the real coordinator (default parameters:
the Ebbinghaus initial stability S0 = 1 day, as in the paper's curves):

* ``no_decay`` - both forgetting curves (``ebbinghaus_decay``, ``triple_copy``) off:
  nothing fades.
* ``ebbinghaus`` - only ``ebbinghaus_decay`` on.
* ``fsrs_only`` - ``ebbinghaus_decay`` and ``fsrs`` on; at every checkpoint from 1 day on,
  a reviewer works through up to ``REVIEWS_PER_STEP`` memories of ``review_queue``
  (remembered with probability equal to their retrievability).
* ``full`` - every mechanism on; the same reviews, then ``sleep()``.

Nothing is recalled: the curves show what the forgetting machinery itself does with
unused memories (plus reviews where the strategy has them). At each checkpoint the
curve is read before that checkpoint's reviews and sleep. Two readings: mean
retrievability over the 1,000 facts (the paper's y axis) and retention (share
retained, see the harness).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from zenbrain.config import Config
from zenbrain.registry import Mechanisms

from .harness import deterministic_ids, open_run, retention_of, review_due
from .synthetic import SyntheticEmbedder, make_workload

__all__ = ["CHECKPOINT_HOURS", "REVIEWS_PER_STEP", "STRATEGIES", "jobs", "run_one", "summarize"]

CHECKPOINT_HOURS = (1, 6, 24, 72, 168, 336, 720)
REVIEWS_PER_STEP = 50
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
    curve_r, curve_kept, reviews = [], [], 0
    with deterministic_ids(seed):
        run = open_run(emb, _config(strategy, seed))
        try:
            run.store_facts(work.fact_texts)
            t0 = run.clock.now()
            for h in CHECKPOINT_HOURS:
                run.advance_to(t0 + h * 3600.0)
                r = retention_of(run)
                curve_r.append(r["mean_r"])
                curve_kept.append(r["retention"])
                if h >= 24 and strategy in ("fsrs_only", "full"):
                    reviews += review_due(run, rng, REVIEWS_PER_STEP)["reviewed"]
                if h >= 24 and strategy == "full":
                    run.coord.sleep(run.scope)
        finally:
            run.close()
    return {"mean_retrievability": curve_r, "retention": curve_kept, "reviews": reviews}


def jobs(seeds: Sequence[int], quick: bool = False) -> list:
    from .pool import Job

    n = QUICK_FACTS if quick else 1000
    cost = {"no_decay": 0.1, "ebbinghaus": 0.1, "fsrs_only": 0.5, "full": 1.0}
    return [Job(("retention", st, int(s)), f"{__name__}:run_one", dict(strategy=st, seed=int(s), n_facts=n),
                cost=cost[st] * n * 20) for st in STRATEGIES for s in seeds]


def summarize(results: dict, seeds: Sequence[int], quick: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"hours": list(CHECKPOINT_HOURS), "n_facts": QUICK_FACTS if quick else 1000,
                           "reviews_per_step": REVIEWS_PER_STEP, "seeds": [int(s) for s in seeds], "strategies": {}}
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
