"""The ``zenbrain`` command line.

Memory commands work on one store (``--path``: a SQLite file, default ``$ZENBRAIN_PATH`` or
``~/.zenbrain/memory.db``, or a PostgreSQL URL ``postgresql://user@host/db``) and one scope (``--user``/``--agent``/``--session``/``--context``)::

    zenbrain init --embedder hashing:384
    zenbrain add "Caroline went to a support group on 7 May 2023" --event-time 2023-05-07
    zenbrain recall "when did Caroline go to the support group?" --why
    zenbrain get ID | forget ID | history ID | stats | sleep | decay | review-queue
    zenbrain check PATH                             # integrity of a store file (exit 1: damaged)
    zenbrain export --out alice.jsonl --user alice  # everything of a user as JSON Lines; import reads it back
    zenbrain serve --workers 2 --durability process  # REST from two processes
    zenbrain migrate memory.db postgresql://me@db/zenbrain  # copy a store to another backend
    zenbrain mechanisms --off bm25_hybrid,two_factor_hebbian

More commands come from plugins: installed packages that declare an entry point in the
``zenbrain.commands`` group, a function ``register(subparsers)`` that adds commands to the
parser (see ``zenbrain.cli_support`` for the building blocks). zenbrain's own benchmark
and experiment commands are such plugins (``zenbrain.bench.commands``,
``zenbrain.experiments.commands``)::

    zenbrain demo                                   # one conversation: zenbrain, BM25, dense
    zenbrain bench locomo --systems zenbrain,bm25,dense --ablate bm25_hybrid layer:core
    zenbrain experiments synthetic --quick

Global options (``--path``, ``--embedder``, ``--off``, ``--verbose``) may be given before
or after the command. Every error zenbrain raises on purpose is printed as one line
``error: ...`` on stderr with exit status 2; ``--verbose`` adds the traceback.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from ..cli_support import (
    EXIT_FAILURE,
    EXIT_USAGE,
    Parser,
    add_global_options,
    merge_globals,
)
from ..errors import ZenBrainError
from . import memory, migrate, relations, server, transfer, upkeep
from .server import load_api_keys

__all__ = ["PLUGIN_GROUP", "build_parser", "load_api_keys", "load_plugins", "main"]

PLUGIN_GROUP = "zenbrain.commands"  # entry point group of command plugins


def build_parser(*, verbose: bool = False) -> argparse.ArgumentParser:
    """The parser of every command: the core's, then each plugin's (``verbose``: say which were skipped)."""
    from .. import __version__

    parser = Parser(
        prog="zenbrain",
        description="zenbrain: long-term memory for LLM agents. Store, recall and benchmark memories.",
    )
    parser.add_argument("--version", action="version", version=f"zenbrain {__version__}")
    add_global_options(parser, top=True)
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (memory, relations, transfer, upkeep, server, migrate):
        module.register(subs)
    load_plugins(subs, verbose=verbose)
    if "demo" in subs.choices:
        parser.epilog = "Run 'zenbrain demo' for a one-minute benchmark on a LoCoMo conversation."
    return parser


def load_plugins(subs: Any, *, verbose: bool = False) -> list[str]:
    """Let every installed command plugin add its commands to ``subs``; returns the names loaded.

    A plugin that cannot be imported (its optional dependencies are missing) is skipped, with
    a one-line note when ``verbose``; one that fails otherwise is skipped with a warning, so
    that a broken plugin never takes the memory commands down with it.
    """
    from importlib.metadata import entry_points

    loaded = []
    for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        try:
            register = ep.load()
            register(subs)
        except ImportError as exc:
            if verbose:
                print(f"note: commands of plugin {ep.name!r} ({ep.value}) skipped: {exc}", file=sys.stderr)
            continue
        except Exception as exc:  # noqa: BLE001 - a third-party plugin's bug must not break the CLI
            print(f"warning: commands of plugin {ep.name!r} ({ep.value}) skipped: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            continue
        loaded.append(ep.name)
    return loaded


def _wants_verbose(argv: Sequence[str]) -> bool:
    return any(a in ("--verbose", "-v") for a in argv)


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(argv) if argv is not None else sys.argv[1:]
    parser = build_parser(verbose=_wants_verbose(args_list))
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    args = merge_globals(args)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except ZenBrainError as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_FAILURE
    except OSError as exc:  # unreadable or unwritable paths: an input problem, not a bug
        if args.verbose:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - a bug or an environment failure: say so in one line
        if args.verbose:
            traceback.print_exc()
        print(f"error: unexpected {type(exc).__name__}: {exc} (run with --verbose for the traceback)", file=sys.stderr)
        return EXIT_FAILURE
