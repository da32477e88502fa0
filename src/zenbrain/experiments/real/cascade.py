"""The integration cascade on the real coordinator.

The paper's cascade (REFERENCE.md 3.6; 200 facts in the authors' harness, 300 in the
caption) asks how much of the memory survives 60 days at a base decay of 0.30/day for
the full system, the foundational mechanisms only (the six PMA mechanisms off), the bare
system (all fifteen off) and the full system without sleep; how emotional and neutral
memories diverge; and whether sleep raises the algebraic connectivity (Fiedler value) of
the memory graph.

Here: 200 facts and 100 queries, S0 = 1 / 0.30 days, the ablation's usage protocol
(``ablation.simulate``), retention read at days 1, 3, 7, 14, 21, 30, 45 and 60, emotional
(affect words in the text) and neutral facts separately, and lambda_2 of the memory
graph (all association edges among active memories) just before and just after the last
sleep of the full system.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from zenbrain.registry import PAPER_FIFTEEN, PMA

from .ablation import PROTOCOL, Condition, simulate

__all__ = ["CHECKPOINTS", "CONFIGS", "cascade_condition", "jobs", "run_one", "summarize"]

CHECKPOINTS = (1, 3, 7, 14, 21, 30, 45, 60)
CONFIGS: dict[str, tuple[str, ...]] = {
    "full": (),
    "foundational_only": tuple(PMA),
    "bare": tuple(PAPER_FIFTEEN),
    "no_sleep": ("simulation_selection_sleep",),
}


def cascade_condition(quick: bool = False) -> Condition:
    return Condition("cascade", 40 if quick else 200, 20 if quick else 100, 60, 0.30)


def run_one(config: str, seed: int, quick: bool = False) -> dict[str, Any]:
    cond = cascade_condition(quick)
    out = simulate(cond, CONFIGS[config], seed, PROTOCOL, checkpoints=CHECKPOINTS, eval_days=(),
                   fiedler=(config == "full"))
    return {"timeline": out["timeline"], "graph": out["graph"], "sleep": out["sleep"]}


def jobs(seeds: Sequence[int], quick: bool = False) -> list:
    from .pool import Job

    cond = cascade_condition(quick)
    return [Job(("cascade", cfg, int(s)), f"{__name__}:run_one", dict(config=cfg, seed=int(s), quick=quick),
                cost=cond.n_facts * cond.aging_days) for cfg in CONFIGS for s in seeds]


def summarize(results: dict, seeds: Sequence[int], quick: bool = False) -> dict[str, Any]:
    from ..stats import bootstrap_ci, compare_paired, describe

    def at(cfg: str, day: int, key: str = "retention") -> list[float]:
        vals = []
        for s in seeds:
            tl = results[("cascade", cfg, int(s))]["timeline"]
            vals.append(next(p[key] for p in tl if p["day"] == day))
        return vals

    last = CHECKPOINTS[-1]
    full, bare, found, nosleep = at("full", last), at("bare", last), at("foundational_only", last), at("no_sleep", last)
    mf, mb, mn = float(np.mean(full)), float(np.mean(bare)), float(np.mean(nosleep))
    gap = [e - n for e, n in zip(at("full", last, "emotional"), at("full", last, "neutral"))]
    gap1 = [e - n for e, n in zip(at("full", 1, "emotional"), at("full", 1, "neutral"))]
    before = [results[("cascade", "full", int(s))]["graph"]["before"]["fiedler"] for s in seeds]
    after = [results[("cascade", "full", int(s))]["graph"]["after"]["fiedler"] for s in seeds]
    cond = cascade_condition(quick)
    return {
        "condition": {"n_facts": cond.n_facts, "n_queries": cond.n_queries, "aging_days": cond.aging_days,
                      "base_decay": cond.base_decay, "stability_days": 1 / cond.base_decay},
        "seeds": [int(s) for s in seeds],
        "full_retention": {**describe(full), "ci95": bootstrap_ci(full, seed=11)},
        "bare_retention": describe(bare),
        "foundational_only_retention": describe(found),
        "no_sleep_retention": describe(nosleep),
        "full_to_bare_ratio": (mf / mb) if mb > 0 else None,
        "full_vs_bare": compare_paired(full, bare, seed=12),
        "full_vs_foundational_only": compare_paired(full, found, seed=13),
        "sleep_ratio": (mf / mn) if mn > 0 else None,
        "full_vs_no_sleep": compare_paired(full, nosleep, seed=14),
        "emotional_gap_day60": {**describe(gap), "ci95": bootstrap_ci(gap, seed=15)},
        "emotional_gap_day1": describe(gap1),
        "timeline": {
            "days": list(CHECKPOINTS),
            **{cfg: [float(np.mean(at(cfg, d))) for d in CHECKPOINTS] for cfg in CONFIGS},
            "full_emotional": [float(np.mean(at("full", d, "emotional"))) for d in CHECKPOINTS],
            "full_neutral": [float(np.mean(at("full", d, "neutral"))) for d in CHECKPOINTS],
        },
        "fiedler": {
            "before": describe(before),
            "after": describe(after),
            "after_vs_before": compare_paired(after, before, seed=16),
            "relative_change": (float(np.mean(after)) - float(np.mean(before))) / float(np.mean(before))
            if float(np.mean(before)) > 0 else None,
        },
    }
