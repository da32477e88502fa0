"""Wall time of the synthetic experiment suite on the real zenbrain, and where it goes.

    .venv/bin/python scripts/bench_experiments.py                 # median of 3 runs, 10 seeds, one worker per CPU
    .venv/bin/python scripts/bench_experiments.py --repeats 1 --json /tmp/bench.json
    .venv/bin/python scripts/bench_experiments.py --profile       # cProfile of one run of each kind
    .venv/bin/python scripts/bench_experiments.py --floor         # the ablation as run, and with every row bare

"Synthetic suite" = every experiment except the LoCoMo rows (``run_real("synthetic")``):
the three ablation conditions (18 configurations x 10 seeds each), the cascade, the
retention curves, sleep impact, Two-Factor KG and Bayesian propagation, the PMA suite and
the long-horizon archetypes. Wall time is measured around ``run_real`` (worker start-up
included); the machine's load average is printed with it, because other processes on a
2-core machine change the result by a factor.

``--floor`` times the ablation part of the suite (540 runs) twice in one process: as it runs,
and with every configuration replaced by the bare one (all fifteen mechanisms off). The
second figure is what the ablation would cost if the fifteen mechanisms cost nothing: a
lower bound of this protocol on the rest of the engine (store, recall, FSRS, sleep's
skeleton), printed with the ratio of the two.

``--profile`` runs one representative job of every kind in this process under cProfile
and prints (a) the share of time per library area and (b) the top functions by own time
and by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from zenbrain.experiments.real import SEEDS, run_real
from zenbrain.experiments.real.harness import limit_threads
from zenbrain.experiments.real.pool import default_workers


def _load() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def bench(repeats: int, seeds: list[int], workers: int | None, quick: bool) -> dict:
    times, loads, runs = [], [], 0
    by_exp: list[dict] = []
    for i in range(repeats):
        before = _load()
        t = time.perf_counter()
        res = run_real("synthetic", seeds, quick=quick, workers=workers, progress=False)
        wall = time.perf_counter() - t
        times.append(wall)
        loads.append(before[0])
        runs = res["runs"]
        by_exp.append(res["seconds_by_experiment"])
        print(f"run {i + 1}/{repeats}: {wall:.1f} s wall ({runs} runs, load average before {before[0]:.2f})", flush=True)
    agg = {k: statistics.median(d[k] for d in by_exp) for k in by_exp[0]}
    return {
        "wall_seconds": times,
        "median_wall_seconds": statistics.median(times),
        "runs": runs,
        "seeds": seeds,
        "workers": workers or default_workers(),
        "cpu_count": os.cpu_count(),
        "load_average_before": loads,
        "job_seconds_by_experiment_median": agg,
        "quick": quick,
    }


AREAS = (
    ("sqlite execute/fetch", ("sqlite3.", "{method 'execute'", "{method 'executemany'", "{method 'fetchall'", "{method 'fetchone'")),
    ("json encode/decode", ("json/",)),
    ("storage/sqlite.py (python)", ("storage/sqlite.py",)),
    ("index/ (search indexes)", ("zenbrain/index/",)),
    ("coordinator.py (recall etc.)", ("zenbrain/coordinator.py",)),
    ("reinforcement.py (after_recall, boosts)", ("zenbrain/reinforcement.py",)),
    ("lifecycle (sleep/decay/consolidate)", ("zenbrain/lifecycle",)),
    ("mechanisms/*", ("zenbrain/mechanisms/",)),
    ("pma/*", ("zenbrain/pma/",)),
    ("encoding.py (store)", ("zenbrain/encoding.py",)),
    ("dynamics.py", ("zenbrain/dynamics.py",)),
    ("experiments (this harness)", ("zenbrain/experiments/",)),
    ("numpy/scipy", ("numpy/", "scipy/", "{built-in method numpy", "{method 'reduce' of 'numpy")),
    ("dataclasses", ("dataclasses.py",)),
)


def floor(seeds: list[int], workers: int | None, quick: bool) -> dict:
    """Wall time of the ablation jobs as configured and with every row bare, in this run."""
    from zenbrain.experiments.real import ablation
    from zenbrain.experiments.real.pool import Job, run_jobs
    from zenbrain.registry import PAPER_FIFTEEN

    as_run = ablation.jobs(seeds, quick)
    bare = [Job(j.key, j.fn, {**j.kwargs, "disabled": tuple(PAPER_FIFTEEN)}, j.cost) for j in as_run]
    out: dict = {"runs": len(as_run), "seeds": seeds, "workers": workers or default_workers()}
    for name, jobs in (("as_run", as_run), ("all_bare", bare)):
        before = _load()[0]
        t = time.perf_counter()
        _, seconds = run_jobs(jobs, workers=workers, progress=False)
        wall = time.perf_counter() - t
        out[name] = {"wall_seconds": wall, "job_seconds": sum(seconds.values()), "load_average_before": before}
        print(f"ablation {name}: {wall:.1f} s wall, {sum(seconds.values()):.1f} job seconds "
              f"(load average before {before:.2f})", flush=True)
    out["bare_over_as_run"] = out["all_bare"]["wall_seconds"] / out["as_run"]["wall_seconds"]
    return out


def _area(filename: str, fn: str) -> str:
    key = f"{filename}:{fn}"
    for name, marks in AREAS:
        if any(m in key for m in marks):
            return name
    return "other"


def profile(quick: bool) -> dict:
    from zenbrain.experiments.real import (
        ablation,
        archetypes,
        cascade,
        kg,
        pma,
        retention,
        sleep_impact,
    )

    limit_threads()
    jobs = [
        ("ablation stress, full, seed 42", lambda: ablation.run_one(ablation.condition_for("stress", quick), (), 42)),
        ("ablation moderate, full, seed 42", lambda: ablation.run_one(ablation.condition_for("moderate", quick), (), 42)),
        ("cascade full", lambda: cascade.run_one("full", 42, quick)),
        ("retention full", lambda: retention.run_one("full", 42, 200 if quick else 1000)),
        ("sleep impact", lambda: sleep_impact.run_one("sleep", 42)),
        ("two-factor KG", lambda: kg.kg_run(42)),
        ("archetypes full", lambda: archetypes.run_one("full", 42)),
        ("pma suite", lambda: pma.run_seed(42)),
    ]
    # warm imports (the lifecycle modules are imported on first sleep)
    ablation.run_one(ablation.Condition("warm", 20, 5, 5, 0.2), (), 1)
    prof = cProfile.Profile()
    seconds = {}
    for name, fn in jobs:
        t = time.perf_counter()
        prof.enable()
        fn()
        prof.disable()
        seconds[name] = time.perf_counter() - t
        print(f"profiled {name}: {seconds[name]:.2f} s", flush=True)
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())  # own time
    areas: dict[str, float] = {}
    for (filename, _line, fn), (_cc, _nc, tt, _ct, _callers) in st.stats.items():
        a = _area(filename, fn)
        areas[a] = areas.get(a, 0.0) + tt
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(25)
    buf.write("\n")
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(r"zenbrain/(?!experiments)", 40)
    return {"seconds": seconds, "own_time_total": total,
            "areas": dict(sorted(((k, v) for k, v in areas.items()), key=lambda kv: -kv[1])),
            "text": buf.getvalue()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="small workloads instead of the paper's sizes")
    ap.add_argument("--profile", action="store_true", help="profile one job of every kind instead of timing the suite")
    ap.add_argument("--floor", action="store_true",
                    help="time the ablation as run and with every configuration bare (a lower bound)")
    ap.add_argument("--json", metavar="PATH", help="write the numbers here")
    args = ap.parse_args()
    limit_threads()
    if args.profile:
        out = profile(args.quick)
        print(f"\nown time by area (s, of {out['own_time_total']:.1f}):")
        for k, v in out["areas"].items():
            print(f"  {k:45s} {v:7.2f}  {100 * v / out['own_time_total']:5.1f} %")
        print(out["text"])
    elif args.floor:
        out = floor(args.seeds, args.workers, args.quick)
        print(f"\nall-bare ablation / ablation as run: {out['bare_over_as_run']:.2f}")
    else:
        out = bench(args.repeats, args.seeds, args.workers, args.quick)
        print(f"\nsynthetic suite: median wall time {out['median_wall_seconds']:.1f} s over {args.repeats} run(s) "
              f"({out['runs']} runs, {out['workers']} workers, {out['cpu_count']} CPUs); "
              f"job seconds by experiment: {json.dumps({k: round(v, 1) for k, v in out['job_seconds_by_experiment_median'].items()})}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
