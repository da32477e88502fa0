"""Moving memories between stores: export and import (JSON Lines, see ``zenbrain.pipeline.portability``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from ..cli_support import (
    EMBEDDER_ENV,
    EXIT_OK,
    command,
    make_scope,
    open_store,
    print_json,
    spec_for_name,
    status,
    store_path,
)
from ..errors import ValidationError


def register(subs: Any) -> None:
    p = command(subs, "export", cmd_export, "write everything stored for the user and agent as JSON Lines "
                "(memories with state and vectors, relations, history, records)")
    p.add_argument("--out", "-o", metavar="FILE", help="write to FILE (replaced only once the export is whole; "
                   "default: standard output)")
    p = command(subs, "import", cmd_import, "read an export into the user and agent, all or nothing")
    p.add_argument("file", nargs="?", default="-", metavar="FILE", help="the export ('-' or none: standard input)")
    p.add_argument("--new-ids", action="store_true", help="give every memory a fresh id (to import a copy beside "
                   "the original, e.g. for another user of the same store)")
    p.add_argument("--json", action="store_true", help="print what was imported as JSON")


def _write_lines(lines: Iterator[dict[str, Any]], out: IO[str]) -> int:
    n = 0
    for line in lines:
        out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        n += line.get("type") == "memory"
    return n


def cmd_export(args: argparse.Namespace) -> int:
    scope = make_scope(args)
    with open_store(args) as mem:
        lines = mem.export_memories(scope)
        if not args.out or args.out == "-":
            n = _write_lines(lines, sys.stdout)
            sys.stdout.flush()
            status(f"exported {n} memories of user {scope.user_id}, agent {scope.agent_id}")
            return EXIT_OK
        target = os.path.abspath(os.path.expanduser(args.out))
        fd, temp = tempfile.mkstemp(prefix=".export-", suffix=".jsonl", dir=os.path.dirname(target))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                n = _write_lines(lines, fh)
            os.replace(temp, target)
        except BaseException:
            os.unlink(temp)
            raise
    print(f"exported {n} memories of user {scope.user_id}, agent {scope.agent_id} to {args.out}")
    return EXIT_OK


def _read_lines(fh: IO[str], name: str) -> list[dict[str, Any]]:
    lines = []
    for n, text in enumerate(fh, start=1):
        if not text.strip():
            continue
        try:
            lines.append(json.loads(text))
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{name} line {n} is not JSON: {exc.msg} at column {exc.colno}; nothing was "
                                  "imported") from None
    return lines


def cmd_import(args: argparse.Namespace) -> int:
    if args.file == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise ValidationError("import reads standard input, but none is piped in: give a FILE or pipe an export")
        lines = _read_lines(sys.stdin, "standard input")
    else:
        with open(os.path.expanduser(args.file), encoding="utf-8") as fh:
            lines = _read_lines(fh, args.file)
    if not lines:
        raise ValidationError("the export is empty: nothing to import")
    header = lines[0] if isinstance(lines[0], dict) else {}
    if not args.embedder and not os.environ.get(EMBEDDER_ENV) and not os.path.exists(store_path(args)):
        # A new store embeds with the export's embedder, so that its vectors can be kept.
        spec = spec_for_name(str(header.get("embedder", "")))
        if spec:
            args = argparse.Namespace(**{**vars(args), "embedder": spec})
    scope = make_scope(args)
    with open_store(args, create=True) as mem:
        receipt = mem.import_memories(lines, scope, new_ids=args.new_ids)
    if args.json:
        print_json({"memories": receipt.memories, "edges": receipt.edges, "events": receipt.events,
                    "records": receipt.records, "id_map": receipt.id_map})
        return EXIT_OK
    print(f"imported {receipt.memories} memories, {receipt.edges} relations, {receipt.events} history events and "
          f"{receipt.records} records into user {scope.user_id}, agent {scope.agent_id}"
          + (f" ({len(receipt.id_map)} new ids)" if args.new_ids else ""))
    return EXIT_OK
