"""The paper's experiments run on **the real zenbrain**: the MemoryCoordinator and its
mechanisms, on SQLite stores, with a simulated clock.

Every experiment maps the paper's protocol onto the real system deliberately (each
module's docstring; docs/experiments.md): the same workloads and conditions, but what is
measured is what zenbrain does - its forgetting curves, archiving, recall ranking, sleep
and consolidation - not hand-set multipliers. Compare the ``replica`` package, which
re-runs the paper's toy simulation, and ``experiments.published``, the printed figures.

Entry point: :func:`run_real`; command line: ``zenbrain experiments``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from . import ablation, archetypes, cascade, kg, locomo, pma, retention, sleep_impact
from .harness import limit_threads
from .pool import default_workers, run_jobs

__all__ = ["LABEL", "NAMES", "SEEDS", "SYNTHETIC", "run_real"]

LABEL = "the real zenbrain (MemoryCoordinator and its mechanisms, simulated clock)"
SEEDS: tuple[int, ...] = (42, 123, 456, 789, 1024, 2048, 3072, 4096, 5120, 6144)
SYNTHETIC: tuple[str, ...] = ("ablation", "cascade", "retention", "sleep", "kg", "pma", "archetypes")
NAMES: tuple[str, ...] = ("all", "synthetic", *SYNTHETIC, "moderate", "challenging", "stress", "locomo")

_MODULES = {"cascade": cascade, "retention": retention, "sleep": sleep_impact, "kg": kg, "pma": pma,
            "archetypes": archetypes, "locomo": locomo}


def _parts(name: str) -> tuple[list[str], list[str]]:
    """(experiments, ablation conditions) selected by ``name``."""
    if name not in NAMES:
        raise ValueError(f"unknown experiment {name!r}; choose one of {', '.join(NAMES)}")
    if name == "all":
        return [*SYNTHETIC, "locomo"], list(ablation.CONDITIONS)
    if name == "synthetic":
        return list(SYNTHETIC), list(ablation.CONDITIONS)
    if name in ablation.CONDITIONS:
        return ["ablation"], [name]
    if name == "ablation":
        return ["ablation"], list(ablation.CONDITIONS)
    return [name], []


def run_real(
    name: str = "all",
    seeds: Sequence[int] = SEEDS,
    *,
    quick: bool = False,
    workers: int | None = None,
    progress: bool = True,
    raw_path: str | None = None,
    raw: dict | None = None,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run (part of) the experiments and return plain, JSON-able results.

    ``name``: one of :data:`NAMES`. ``seeds``: the protocol's ten by default. ``quick``:
    smaller workloads (for a first look and for tests). ``workers``: processes (default:
    one per CPU). ``raw_path``: also pickle every run's raw result there before summarising;
    ``raw``: such a pickle's content, summarised instead of running. ``only``: the ablation
    rows to run besides ``full`` (mechanism names, ``no_pma``, ``bare``; default all). The result carries ``label``, ``seeds``, ``quick``, ``seconds`` (wall time
    of the runs) and one entry per experiment.
    """
    parts, conditions = _parts(name)
    if only is not None:
        if "ablation" not in parts:
            from zenbrain.errors import ConfigError

            raise ConfigError(f"--only selects ablation rows, and {name!r} runs no ablation")
        ablation.configurations(only)  # unknown names fail here, before anything runs
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("at least one seed is needed")
    limit_threads()
    jobs = []
    for p in parts:
        if p == "ablation":
            jobs += ablation.jobs(seeds, quick, conditions, only)
        else:
            jobs += _MODULES[p].jobs(seeds, quick)
    start = time.perf_counter()
    if raw is not None:  # summarise earlier runs again (same name, seeds and size)
        missing = [j.key for j in jobs if j.key not in raw["results"]]
        if missing:
            raise ValueError(f"the raw results lack {len(missing)} run(s), e.g. {missing[0]!r}")
        results, seconds = raw["results"], raw["seconds"]
        wall = float(raw.get("wall", 0.0))
    else:
        results, seconds = run_jobs(jobs, workers=workers, progress=progress)
        wall = time.perf_counter() - start
        if raw_path:
            import pickle

            with open(raw_path, "wb") as fh:
                pickle.dump({"results": results, "seconds": seconds, "wall": wall, "name": name, "seeds": seeds,
                             "quick": quick}, fh)
    out: dict[str, Any] = {"label": LABEL, "seeds": seeds, "quick": bool(quick), "name": name,
                           "workers": workers or default_workers()}
    for p in parts:
        if p == "ablation":
            out["ablation"] = ablation.summarize(results, seeds, quick, conditions, only)
        else:
            out[p] = _MODULES[p].summarize(results, seeds, quick)
    cpu: dict[str, float] = {}
    for key, s in seconds.items():
        cpu[str(key[0])] = cpu.get(str(key[0]), 0.0) + s
    out["seconds"] = wall
    out["seconds_by_experiment"] = cpu  # summed over workers (CPU-ish time per experiment)
    out["runs"] = len(jobs)
    return out
