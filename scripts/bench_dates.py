"""Time expressions on every stored turn: zenbrain's resolver against dateparser and parsedatetime.

    PYTHONPATH=src python scripts/bench_dates.py [--data ../shared/data] [--rounds 3]

Runs each parser over all LoCoMo dev turns with the turn's session date as the reference
(median of ``--rounds`` passes; the libraries only if installed, they are no dependency)
and prints microseconds per turn, the ratio to zenbrain, and how many expressions each
found. dateparser runs on the first 300 turns only (it is the slowest by far).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

from zenbrain.bench.locomo import load_locomo
from zenbrain.retrieval.dates import resolve


def timed(fn: Callable[[str, float], int], turns: list[tuple[str, float]], rounds: int) -> tuple[float, int]:
    times, found = [], 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        found = sum(fn(text, ref) for text, ref in turns)
        times.append(time.perf_counter() - t0)
    return 1e6 * statistics.median(times) / len(turns), found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    turns = [(d.text, d.time or 0.0) for c in load_locomo(data_dir=args.data, include_speaker=False) for d in c.docs]
    rows: list[tuple[str, int, float, int]] = []
    us, n = timed(lambda t, r: len(resolve(t, r)), turns, args.rounds)
    rows.append(("zenbrain.retrieval.dates", len(turns), us, n))
    try:
        import parsedatetime

        cal = parsedatetime.Calendar(version=parsedatetime.VERSION_CONTEXT_STYLE)
        us, n = timed(lambda t, r: len(cal.nlp(t, sourceTime=datetime.fromtimestamp(r, UTC)) or ()), turns, args.rounds)
        rows.append((f"parsedatetime {parsedatetime.__version__}", len(turns), us, n))
    except ImportError:
        pass
    try:
        import dateparser
        from dateparser.search import search_dates

        def dp(t: str, r: float) -> int:
            s = {"RELATIVE_BASE": datetime.fromtimestamp(r, UTC).replace(tzinfo=None), "PREFER_DATES_FROM": "past"}
            return len(search_dates(t, settings=s, languages=["en"]) or ())

        us, n = timed(dp, turns[:300], 1)
        rows.append((f"dateparser {dateparser.__version__} (300 turns)", 300, us, n))
    except ImportError:
        pass
    base = rows[0][2]
    print(f"LoCoMo dev turns; load average {os.getloadavg()[0]:.1f}\n")
    print("| parser | turns | µs per turn | × zenbrain | expressions found |")
    print("|---|---|---|---|---|")
    for name, count, us, n in rows:
        print(f"| {name} | {count} | {us:.1f} | {us / base:.1f} | {n} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
