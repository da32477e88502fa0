"""Store upkeep and inspection commands: stats, check, sleep, decay, review-queue, mechanisms."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..cli_support import (
    EXIT_FAILURE,
    EXIT_OK,
    bounded_int,
    command,
    iso,
    make_config,
    make_scope,
    one_line,
    open_store,
    print_json,
    store_path,
)
from ..errors import ConfigError, StorageError
from .memory import MAX_LIST


def register(subs: Any) -> None:
    p = command(subs, "stats", cmd_stats, "counts by layer and context, file size, embedder "
                "(with --user or --agent: that scope's counts and size)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = command(subs, "check", cmd_check, "check a store file's integrity (read-only; exit status 1 if damaged)",
                scope=False)
    p.add_argument("file", nargs="?", metavar="PATH",
                   help="the store file (default: --path, $ZENBRAIN_PATH or ~/.zenbrain/memory.db)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    for name, func, text in (
        ("sleep", cmd_sleep, "offline consolidation: every enabled sleep-time mechanism"),
        ("decay", cmd_decay, "apply forgetting: archive memories whose retrievability fell below threshold"),
    ):
        p = command(subs, name, func, text)
        p.add_argument("--json", action="store_true", help="print the full report as JSON (every change)")
    p = command(subs, "review-queue", cmd_review_queue, "memories due for review, most overdue first")
    p.add_argument("--limit", type=bounded_int(1, MAX_LIST), default=20, metavar="N", help=f"at most N (1-{MAX_LIST})")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = command(subs, "mechanisms", cmd_mechanisms, "every mechanism by name, on or off", scope=False)
    p.add_argument("--json", action="store_true", help="print JSON")


def cmd_stats(args: argparse.Namespace) -> int:
    scoped = args.user is not None or args.agent is not None
    with open_store(args) as mem:
        s = mem.stats(make_scope(args) if scoped else None)
    s = {"path": store_path(args), **s}
    if args.json:
        print_json(s)
        return EXIT_OK
    if scoped:  # a scope's own figures: the bytes of its memories, never the whole file's size
        scope = make_scope(args)
        print(f"store:      {s['path']}")
        print(f"scope:      user {scope.user_id}, agent {scope.agent_id} ({s['stored_bytes'] / 1e6:.2f} MB stored)")
    else:
        print(f"store:      {s['path']} ({s['file_bytes'] / 1e6:.2f} MB)")
    print(f"embedder:   {s['embedder']} ({s['cached_embeddings']} vectors)")
    print(f"memories:   {s['memories']} ({s['archived']} archived), edges: {s['edges']}")
    if s["by_layer"]:
        print("by layer:   " + ", ".join(f"{k}={v}" for k, v in sorted(s["by_layer"].items())))
    if s["by_context"]:
        print("by context: " + ", ".join(f"{k}={v}" for k, v in sorted(s["by_context"].items())))
    print("mechanisms off: " + (", ".join(s["mechanisms_off"]) or "none"))
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    """Every integrity check on the file, read-only and without an embedder, so that it also
    runs on a file the store refuses to open."""
    from ..storage.sqlite.health import check_file
    from ..storage.sqlite.opening import FileKind, identify, refusal

    path = os.path.expanduser(args.file) if args.file else store_path(args)
    if args.file and args.path and os.path.abspath(path) != os.path.abspath(store_path(args)):
        raise ConfigError(f"two store files given: PATH {args.file} and --path {args.path}")
    if path.startswith(("postgresql://", "postgres://")):
        return _check_postgres(path, args.json)
    if not os.path.exists(path):
        raise StorageError(f"no memory store at {path}")
    found = identify(path)
    if found.kind in (FileKind.EMPTY, FileKind.FOREIGN, FileKind.NOT_SQLITE):  # not a store, rather than a damaged one
        raise refusal(path, found, create=False) or StorageError(f"{path} is not a zenbrain store")
    report = check_file(path)
    if args.json:
        print_json(report.as_dict())
        return EXIT_OK if report.ok else EXIT_FAILURE
    print(f"store:    {path}")
    print(f"checks:   {len(report.checks)} in {report.seconds:.2f} s ({', '.join(report.checks) or 'none could run'})")
    if report.ok:
        print(f"memories: {report.memories}")
        if report.scrub_pending:
            print("erasure:  pending: erased text may still be in the file until the store's next write, "
                  "open or close finishes it")
        print("result:   ok")
        return EXIT_OK
    print(f"result:   DAMAGED ({len(report.problems)} problem(s))")
    for problem in report.problems:
        print(f"  - {one_line(problem, 200)}")
    print(f"what to do: restore the newest backup, or salvage what is readable with "
          f"`sqlite3 {path} .recover | sqlite3 recovered.db`")
    return EXIT_FAILURE


def _check_postgres(url: str, as_json: bool) -> int:
    """A PostgreSQL store: the database answers, the store's migrations are this zenbrain's.
    The pages themselves are PostgreSQL's to check (amcheck, pg_amcheck)."""
    from ..storage.postgres.health import check_database
    from ..storage.postgres.store import _safe

    report = check_database(url)
    if as_json:
        print_json(report.as_dict())
        return EXIT_OK if report.ok else EXIT_FAILURE
    print(f"store:      {_safe(url)}")
    if report.reachable:
        print(f"database:   PostgreSQL {report.server_version}, pgvector {report.pgvector_version or 'missing'} "
              f"({report.latency_ms} ms to connect and read)")
        print(f"migrations: {report.migration_version} of {report.migrations_expected}"
              + (f" ({report.migration_name})" if report.migration_name else ""))
        if report.scrubs_pending:
            print(f"erasure:    pending for {report.scrubs_pending} user(s): erased text may still be in the data "
                  "files until the store's next write, open or close finishes it")
    if report.ok:
        print("result:     ok (the pages themselves: PostgreSQL's amcheck / pg_amcheck)")
        return EXIT_OK
    print(f"result:     NOT READY: {report.problem}")
    return EXIT_FAILURE


def _print_report(report: Any, as_json: bool) -> None:
    """A lifecycle report as short sentences (what changed and why); --json prints it whole."""
    from ..report_text import summarize

    d = report.as_dict()
    if as_json:
        print_json(d)
        return
    print(f"{d['operation']} at {iso(d['at'])}:")
    for line in summarize(d):
        print(f"  - {line}")


def cmd_sleep(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        report = mem.sleep(make_scope(args), detail=bool(args.json))
    _print_report(report, args.json)
    return EXIT_OK


def cmd_decay(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        report = mem.decay(make_scope(args))
    _print_report(report, args.json)
    return EXIT_OK


def cmd_review_queue(args: argparse.Namespace) -> int:
    from ..serialize import item_dict

    with open_store(args) as mem:
        items = mem.review_queue(make_scope(args), limit=args.limit)
    if args.json:
        print_json([item_dict(i) for i in items])
        return EXIT_OK
    if not items:
        print("nothing is due for review")
        return EXIT_OK
    for i in items:
        print(f"{i.id}  {i.layer.value:<10} {one_line(i.content, 80)}")
    return EXIT_OK


def cmd_mechanisms(args: argparse.Namespace) -> int:
    from ..registry import ADDITIONAL, FOUNDATIONAL, PMA

    on = make_config(args).mechanisms.as_dict()
    group: dict[str, str] = {**{n: "foundational" for n in FOUNDATIONAL}, **{n: "pma" for n in PMA}, **{n: "additional" for n in ADDITIONAL}}
    if args.json:
        print_json([{"name": n, "group": group[n], "on": v} for n, v in on.items()])
        return EXIT_OK
    w = max(len(n) for n in on)
    print(f"{'mechanism':<{w}}  {'group':<12}  state")
    for name, state in on.items():
        print(f"{name:<{w}}  {group[name]:<12}  {'on' if state else 'off'}")
    n_off = sum(1 for v in on.values() if not v)
    print(f"\n{len(on) - n_off} on, {n_off} off")
    return EXIT_OK
