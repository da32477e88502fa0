"""Independent runs over worker processes, with one progress bar.

A job names a module-level function by ``"module:function"`` and its keyword arguments;
every job seeds itself from its own arguments, so results do not depend on which worker
ran it or in which order. Jobs are submitted most expensive first (by the job's cost
estimate) so the workers finish together.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from .harness import limit_threads, paused_gc

__all__ = ["Job", "default_workers", "run_jobs"]


@dataclass(frozen=True)
class Job:
    key: Hashable
    fn: str  # "package.module:function"
    kwargs: dict[str, Any] = field(default_factory=dict)
    cost: float = 1.0


def _resolve(path: str) -> Callable[..., Any]:
    mod, _, name = path.partition(":")
    return getattr(importlib.import_module(mod), name)


def _call(fn: str, kwargs: dict[str, Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    with paused_gc():
        out = _resolve(fn)(**kwargs)
    return out, time.perf_counter() - t


def _init_worker() -> None:
    limit_threads()


def default_workers() -> int:
    """One worker per CPU this process may run on (runs are single-threaded and
    independent, so the suite's wall time divides by the number of cores)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity API (macOS, Windows)
        return max(1, os.cpu_count() or 1)


def run_jobs(
    jobs: Sequence[Job],
    *,
    workers: int | None = None,
    progress: bool = True,
    desc: str = "experiments",
    on_result: Callable[[Hashable, Any, float], None] | None = None,
) -> tuple[dict[Hashable, Any], dict[Hashable, float]]:
    """Run every job; returns (results by key, seconds by key). ``on_result(key, result,
    seconds)`` is called in this process as each job finishes (to save results as they come)."""
    keys = [j.key for j in jobs]
    if len(set(keys)) != len(keys):
        raise ValueError("job keys must be unique")
    workers = default_workers() if workers is None else max(1, int(workers))
    workers = min(workers, max(1, len(jobs)))  # never more processes than jobs
    order = sorted(jobs, key=lambda j: -j.cost)
    results: dict[Hashable, Any] = {}
    seconds: dict[Hashable, float] = {}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(order), desc=desc, unit="run", smoothing=0.05)
    try:
        if workers == 1 or len(order) <= 1:
            limit_threads()
            for j in order:
                results[j.key], seconds[j.key] = _call(j.fn, j.kwargs)
                if on_result is not None:
                    on_result(j.key, results[j.key], seconds[j.key])
                if bar is not None:
                    bar.update(1)
        else:
            ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker) as ex:
                pending = {ex.submit(_call, j.fn, j.kwargs): j.key for j in order}
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        key = pending.pop(fut)
                        results[key], seconds[key] = fut.result()
                        if on_result is not None:
                            on_result(key, results[key], seconds[key])
                        if bar is not None:
                            bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return results, seconds
