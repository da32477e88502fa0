"""``zenbrain experiments``: the paper's experiments on the real zenbrain, a plugin of the
``zenbrain`` command line (entry point ``experiments`` of the ``zenbrain.commands`` group).

::

    zenbrain experiments                       # everything, 10 seeds, into results/experiments
    zenbrain experiments synthetic             # everything except the LoCoMo rows
    zenbrain experiments stress --seeds 42 123 --out /tmp/stress
    zenbrain experiments pma --quick           # small workloads, for a first look
    zenbrain experiments ablation --only triple_copy   # full against full without TripleCopy

Writes ``raw.pkl`` (every run's raw result, as soon as the runs are done), ``results.json``
(real and replica results), ``report.md`` (published, replica and
real side by side) and PNG plots (retention curves, criticality, TripleCopy, cascade).
Progress bars and plots need the ``bench`` extra (tqdm, matplotlib).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

__all__ = ["register", "run"]

NAMES = ("all", "synthetic", "ablation", "moderate", "challenging", "stress", "cascade", "retention", "sleep", "kg",
         "pma", "archetypes", "locomo")
_REPLICA_PART = {"all": "all", "synthetic": "all", "ablation": "ablation", "moderate": "moderate",
                 "challenging": "challenging", "stress": "stress", "cascade": "cascade", "pma": "pma_suite",
                 "archetypes": "competitive"}


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``experiments`` command to the ``zenbrain`` parser's subcommands."""
    p = subparsers.add_parser(
        "experiments",
        help="run the paper's experiments on the real zenbrain (JSON, markdown, plots)",
        description="Run the paper's experiments on the real zenbrain and write JSON, a markdown report "
                    "(published, replica and real columns) and PNG plots.",
    )
    p.add_argument("name", nargs="?", default="all", choices=NAMES, metavar="NAME",
                   help="all (default), synthetic (all but LoCoMo), ablation, moderate, challenging, stress, "
                        "cascade, retention, sleep, kg, pma, archetypes, locomo")
    p.add_argument("--out", metavar="DIR", default=os.path.join("results", "experiments"),
                   help="output folder (default: results/experiments)")
    p.add_argument("--seeds", metavar="S", type=int, nargs="+", default=None,
                   help="seeds (default: 42 123 456 789 1024 2048 3072 4096 5120 6144)")
    p.add_argument("--quick", action="store_true", help="small workloads (a first look; not the paper's sizes)")
    p.add_argument("--workers", metavar="N", type=int, default=None, help="worker processes (default: one per CPU)")
    p.add_argument("--only", metavar="ROW", nargs="+", default=None,
                   help="ablation: run only these rows besides full (mechanism names such as triple_copy, "
                        "no_pma, bare); e.g. --only triple_copy for full against full without TripleCopy")
    p.add_argument("--no-replica", action="store_true", help="skip the replica column")
    p.add_argument("--no-plots", action="store_true", help="JSON and markdown only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--from-raw", metavar="PATH", default=None,
                   help="summarise the raw runs saved by an earlier call (its raw.pkl) instead of running")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..cli_support import require_extra

    require_extra("bench", [*(() if args.no_progress else ("tqdm",)), *(() if args.no_plots else ("matplotlib",))],
                  "'zenbrain experiments' (progress bars and plots)")
    from .real import SEEDS, run_real
    from .real.report import write_outputs

    seeds = list(args.seeds) if args.seeds else list(SEEDS)
    if args.workers is not None and args.workers < 1:
        from ..errors import ConfigError

        raise ConfigError("--workers must be at least 1")
    t0 = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    raw = None
    if args.from_raw:
        import pickle

        with open(args.from_raw, "rb") as fh:
            raw = pickle.load(fh)
    real = run_real(args.name, seeds, quick=args.quick, workers=args.workers, progress=not args.no_progress,
                    raw_path=None if raw is not None else os.path.join(args.out, "raw.pkl"), raw=raw,
                    only=args.only)
    replica = None
    part = _REPLICA_PART.get(args.name)
    if part and not args.no_replica:
        from .replica import run_replica

        replica = run_replica(part, seeds)
    paths = write_outputs(real, replica, args.out, plots=not args.no_plots)
    print(f"experiments {args.name}: {real['runs']} runs in {real['seconds']:.1f} s "
          f"({real['workers']} worker(s)); wrote {', '.join(str(p) for p in paths.values())}")
    print(f"done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0
