"""The experiment runner: one worker per CPU by default, results independent of the
number of workers."""

import os

from zenbrain.experiments.real import ablation
from zenbrain.experiments.real.ablation import Condition
from zenbrain.experiments.real.pool import Job, default_workers, run_jobs

TINY = Condition("tiny", 30, 8, 10, 0.2)


def _jobs() -> list[Job]:
    cfgs = dict(ablation.configurations())
    return [Job(("tiny", cfg, seed), f"{ablation.__name__}:run_one", {"cond": TINY, "disabled": cfgs[cfg], "seed": seed},
                cost=1.0 + i)
            for i, (cfg, seed) in enumerate([("full", 1), ("bare", 1), ("-triple_copy", 2), ("full", 2)])]


def test_default_is_one_worker_per_cpu_of_this_process():
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert default_workers() == expected >= 1


def test_results_do_not_depend_on_the_number_of_workers():
    one, _ = run_jobs(_jobs(), workers=1, progress=False)
    three, seconds = run_jobs(_jobs(), workers=3, progress=False)  # more workers than this machine's cores
    assert one == three
    assert set(seconds) == set(one) and all(s > 0 for s in seconds.values())


def test_more_workers_than_jobs_is_fine():
    res, _ = run_jobs(_jobs()[:1], workers=16, progress=False)
    assert list(res) == [("tiny", "full", 1)]
