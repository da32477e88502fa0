"""Command line: ``python -m zenbrain.experiments.replica [part] [--seeds ...] [--json PATH]``.

Runs the replica of *the paper's simulation protocol, not zenbrain* and prints the
replica next to the paper's published figures.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import LABEL, NAMES, SEEDS, run_replica
from .report import comparison_rows, format_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zenbrain.experiments.replica",
        description=f"Replica of {LABEL}: ablation tables, integration cascade, long-horizon archetypes, PMA suite.",
    )
    parser.add_argument("part", nargs="?", default="all", choices=NAMES + ("pma",), help="which part to run (default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS), help="seeds (default: the protocol's ten)")
    parser.add_argument("--json", metavar="PATH", help="also write the full results (and comparisons) as JSON; '-' for stdout")
    args = parser.parse_args(argv)

    results = run_replica(args.part, args.seeds)
    if args.json == "-":
        json.dump({"results": results, "comparison": comparison_rows(results)}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(format_report(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"results": results, "comparison": comparison_rows(results)}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
