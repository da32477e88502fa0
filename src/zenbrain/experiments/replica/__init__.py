"""A replica of **the paper's simulation protocol, not zenbrain**.

This package re-implements, independently and draw for draw, the toy simulations with
which the ZenBrain paper produced its ablation tables, integration cascade, long-horizon
"archetype" comparison and PMA benchmark suite (shared/REFERENCE.md section 3). In those
simulations every mechanism is a hand-set multiplier on a scalar "strength"; none of
zenbrain's own mechanisms runs here, and nothing in this package says anything about
how zenbrain performs. It exists to show where the published numbers come from and to
give the experiment CLI a "replica" column next to the "published" and "real" ones.

Entry point: :func:`run_replica`; command line: ``python -m zenbrain.experiments.replica``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from .ablation import CONDITIONS, SEEDS, run_condition
from .cascade import run_cascade
from .competitive import run_competitive
from .pma_suite import run_pma_suite
from .simulation import PAPER_LABELS, PROTOCOL_IDS

__all__ = ["LABEL", "NAMES", "PAPER_LABELS", "PROTOCOL_IDS", "SEEDS", "run_replica"]

LABEL = "the paper's simulation protocol, not zenbrain"

NAMES: tuple[str, ...] = ("all", "ablation", "moderate", "challenging", "stress", "cascade", "competitive", "pma_suite")


def run_replica(name: str = "all", seeds: Sequence[int] = SEEDS) -> dict:
    """Run (part of) the replica and return plain JSON-able results.

    ``name`` is one of :data:`NAMES`: ``"all"``; ``"ablation"`` (the three conditions);
    one condition ``"moderate"`` / ``"challenging"`` / ``"stress"``; ``"cascade"``;
    ``"competitive"`` (long-horizon archetypes); ``"pma_suite"``. ``seeds`` defaults to
    the protocol's ten seeds; the published figures need exactly those.

    The result always carries ``"label"`` (:data:`LABEL`), ``"seeds"`` and
    ``"seconds"``, plus ``"ablation": {condition: ...}``, ``"cascade"``,
    ``"competitive"`` and/or ``"pma_suite"`` as requested.
    """
    if name == "pma":
        name = "pma_suite"
    if name not in NAMES:
        raise ValueError(f"unknown replica part {name!r}; choose one of {', '.join(NAMES)}")
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise ValueError("at least one seed is needed")
    start = time.perf_counter()
    out: dict = {"label": LABEL, "seeds": list(seeds)}
    conditions = [c for c in CONDITIONS if name in ("all", "ablation", c)]
    if conditions:
        out["ablation"] = {c: run_condition(c, seeds) for c in conditions}
    if name in ("all", "cascade"):
        out["cascade"] = run_cascade(seeds)
    if name in ("all", "competitive"):
        out["competitive"] = run_competitive(seeds)
    if name in ("all", "pma_suite"):
        out["pma_suite"] = run_pma_suite(seeds)
    out["seconds"] = time.perf_counter() - start
    return out
