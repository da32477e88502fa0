"""zenbrain migrate SRC DST: copy a store to another backend (SQLite <-> PostgreSQL)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..cli_support import EXIT_FAILURE, EXIT_OK, bounded_int, command


def register(subs: Any) -> None:
    p = command(subs, "migrate", cmd_migrate,
                "copy a store to another backend (SQLite <-> PostgreSQL), resumable, then verify the copy",
                scope=False)
    p.add_argument("src", metavar="SRC", help="the store to copy: a SQLite file or a postgresql:// URL")
    p.add_argument("dst", metavar="DST", help="where to copy it (created when new)")
    p.add_argument("--queries", type=bounded_int(0, 100), default=3, metavar="N",
                   help="sample queries per partition for the recall comparison (default 3)")


def _shown(location: str) -> str:
    """A location without a URL's query string (which may carry a password)."""
    from ..storage.locations import is_postgres

    return location.split("?", 1)[0] if is_postgres(location) else location


def cmd_migrate(args: argparse.Namespace) -> int:
    """Copy SRC into DST partition by partition (resuming a copy that stopped), then compare
    the two stores: counts per partition, and dense and lexical top-10 for sample queries."""
    from ..storage.transfer import migrate, open_pair, source_key, verify

    with open_pair(args.src, args.dst) as (src, dst):
        parts = src.partitions()
        print(f"copying {_shown(args.src)} -> {_shown(args.dst)}: {len(parts)} partition(s), "
              f"embedder {src.embedder_name}", flush=True)

        def progress(part: tuple[str, str], counts: Any) -> None:
            if counts is None:
                print(f"  {part[0]}/{part[1]}: copied before, skipped", flush=True)
            else:
                print(f"  {part[0]}/{part[1]}: {counts.memories} memories, {counts.vectors} vectors, "
                      f"{counts.edges} edges, {counts.events} history events, {counts.records} records", flush=True)

        report = migrate(src, dst, source_key(args.src), on_partition=progress)
        print(f"copied {len(report.copied)} partition(s), {len(report.skipped)} copied before; verifying", flush=True)
        v = verify(src, dst, queries_per_partition=args.queries)
    a, b = v.totals
    print(f"{'':10s} {'memories':>9s} {'vectors':>9s} {'edges':>9s} {'events':>9s} {'records':>9s}")
    for name, c in (("source", a), ("copy", b)):
        print(f"{name:10s} " + " ".join(f"{n:9d}" for n in c.row()))
    if v.queries:
        print(f"recall comparison, {v.queries} sample queries: dense top-10 identical {v.dense_same}/{v.queries} "
              f"(mean overlap {v.dense_overlap:.3f}), lexical top-10 identical {v.lexical_same}/{v.queries} "
              f"(mean overlap {v.lexical_overlap:.3f})")
    if not v.ok:
        for part, (x, y) in sorted(v.mismatched.items()):
            print(f"MISMATCH {part[0]}/{part[1]}: source {x.row()} copy {y.row()}", file=sys.stderr)
        return EXIT_FAILURE
    print("the copy holds everything the source holds")
    return EXIT_OK
