"""Record, or compare against, the raw results of the synthetic experiments for a few seeds.

An optimisation of the engine should leave every experiment result as it was; this is the
check. It runs every synthetic job (the paper's sizes, not ``--quick``) for the given seeds
and writes each run's raw result, keyed by job, as JSON; ``--compare`` runs them again and
reports every number that moved by more than ``--tol`` (relative), and every other change.

    .venv/bin/python scripts/experiment_fingerprint.py --out /tmp/before.json
    .venv/bin/python scripts/experiment_fingerprint.py --compare /tmp/before.json
    .venv/bin/python scripts/experiment_fingerprint.py --only ablation --seeds 42 123 --out /tmp/a.json

Exit status 1 when ``--compare`` finds a difference.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from zenbrain.experiments.real import _MODULES as MODULES
from zenbrain.experiments.real import SYNTHETIC, ablation
from zenbrain.experiments.real.harness import limit_threads
from zenbrain.experiments.real.pool import run_jobs


def _plain(x: Any) -> Any:
    """JSON-able copy: numpy scalars and arrays as Python numbers and lists."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if hasattr(x, "tolist"):
        return _plain(x.tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    return x


def collect(seeds: list[int], only: list[str], workers: int) -> dict[str, Any]:
    jobs = []
    for name in only:
        jobs += ablation.jobs(seeds) if name == "ablation" else MODULES[name].jobs(seeds, False)
    results, _seconds = run_jobs(jobs, workers=workers, progress=True, desc="fingerprint")
    return {json.dumps(list(k), default=str): _plain(v) for k, v in results.items()}


def diff(a: Any, b: Any, tol: float, path: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'new' if k in b else 'old'}")
            else:
                diff(a[k], b[k], tol, f"{path}/{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: length {len(a)} -> {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, tol, f"{path}[{i}]", out)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if abs(a - b) > tol * max(1.0, abs(a), abs(b)):
            out.append(f"{path}: {a!r} -> {b!r}")
    elif a != b:
        out.append(f"{path}: {a!r} -> {b!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[42])
    ap.add_argument("--only", nargs="+", choices=SYNTHETIC, default=list(SYNTHETIC))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", help="write the fingerprint here")
    ap.add_argument("--compare", help="compare with this fingerprint")
    ap.add_argument("--tol", type=float, default=1e-9, help="relative tolerance for numbers")
    args = ap.parse_args()
    if not args.out and not args.compare:
        ap.error("give --out, --compare or both")
    limit_threads()
    t = time.perf_counter()
    new = collect(args.seeds, args.only, args.workers)
    print(f"{len(new)} runs in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    if args.out:
        Path(args.out).write_text(json.dumps(new, indent=0, sort_keys=True))
    if args.compare:
        old = json.loads(Path(args.compare).read_text())
        old = {k: v for k, v in old.items() if k in new} if set(new) < set(old) else old
        found: list[str] = []
        diff(old, new, args.tol, "", found)
        for line in found[:200]:
            print(line)
        print(f"{len(found)} difference(s)" + (" (first 200 shown)" if len(found) > 200 else ""))
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
