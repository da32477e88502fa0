"""The ``zenbrain`` command line.

Memory commands work on one store (``--path``: a SQLite file, default ``$ZENBRAIN_PATH`` or
``~/.zenbrain/memory.db``, or a PostgreSQL URL ``postgresql://user@host/db``) and one scope (``--user``/``--agent``/``--session``/``--context``)::

    zenbrain init --embedder hashing:384
    zenbrain add "Caroline went to a support group on 7 May 2023" --event-time 2023-05-07
    zenbrain recall "when did Caroline go to the support group?" --why
    zenbrain get ID | forget ID | history ID | stats | sleep | decay | review-queue
    zenbrain mechanisms --off bm25_hybrid,two_factor_hebbian

Benchmarks on LoCoMo (data folder from ``--data``, ``$ZENBRAIN_DATA`` or ``../shared/data``)::

    zenbrain demo                                   # one conversation: zenbrain, BM25, dense
    zenbrain bench locomo --systems zenbrain,bm25,dense --ablate bm25_hybrid layer:core
    zenbrain bench longmemeval --data longmemeval_s.json --systems zenbrain,bm25,mem0 --limit 50

Global options (``--path``, ``--embedder``, ``--off``, ``--verbose``) may be given before
or after the command. Every error zenbrain raises on purpose is printed as one line
``error: ...`` on stderr with exit status 2; ``--verbose`` adds the traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from .errors import ConfigError, StorageError, ValidationError, ZenBrainError
from .serialize import edge_dict, hit_dict, item_dict, parse_time

DEFAULT_EMBEDDER_SPEC = "minilm-onnx"  # chosen by measurement: see the README
EMBEDDER_ENV = "ZENBRAIN_EMBEDDER"
PATH_ENV = "ZENBRAIN_PATH"
USER_ENV = "ZENBRAIN_USER"
CACHE_ENV = "ZENBRAIN_CACHE_DIR"
CACHE_FILE = "embeddings.db"
BENCH_SYSTEMS = ("zenbrain", "bm25", "dense", "hybrid", "no-memory")
DEMO_SYSTEMS = ("zenbrain", "bm25", "dense")
DEMO_CONVERSATION = "conv-26"

WORKER_HEALTHCHECK_S = 60  # seconds a serving worker may take to answer uvicorn's health check
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


# --------------------------------------------------------------------------- argument parsing


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (see '{self.prog} --help')\n")


MAX_LIST = 10_000  # the most memories one list, episodes or review-queue call prints


def bounded_int(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: an integer in [lo, hi], else a one-line range error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be an integer in [{lo}, {hi}], got {text}")
        return value

    return parse


def _add_global_options(p: argparse.ArgumentParser, *, top: bool) -> None:
    """The options every command accepts; under a command they land in ``sub_*``."""
    pre = "" if top else "sub_"
    default = None if top else argparse.SUPPRESS
    g = p.add_argument_group("global options")
    g.add_argument("--path", dest=pre + "path", metavar="P", default=default,
                   help=f"memory store: a SQLite file or a postgresql:// URL (default: ${PATH_ENV} or "
                        "~/.zenbrain/memory.db)")
    g.add_argument("--embedder", dest=pre + "embedder", metavar="SPEC", default=default,
                   help=f"embedder spec: minilm, onnx, hashing:384, openai:MODEL[@URL], ollama:MODEL "
                        f"(default: ${EMBEDDER_ENV}, else the store's own embedder, else {DEFAULT_EMBEDDER_SPEC})")
    g.add_argument("--off", dest=pre + "off", metavar="NAME[,NAME]", action="append", default=default,
                   help="switch mechanisms off by name (repeatable; see 'zenbrain mechanisms')")
    g.add_argument("--verbose", "-v", dest=pre + "verbose", action="store_true", default=default,
                   help="show tracebacks of errors")


def _add_scope_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scope")
    g.add_argument("--user", metavar="U", default=None, help=f"user id (default: ${USER_ENV} or 'default')")
    g.add_argument("--agent", metavar="A", default=None, help="agent id (default: 'default')")
    g.add_argument("--session", metavar="S", default=None, help="session id (default: none)")
    g.add_argument("--context", metavar="C", default=None, help="context (default: 'default')")


def _command(
    subs: Any, name: str, func: Callable[[argparse.Namespace], int], help: str, *, scope: bool = True, **kw: Any
) -> argparse.ArgumentParser:
    p = subs.add_parser(name, help=help, description=help, **kw)
    if scope:
        _add_scope_options(p)
    _add_global_options(p, top=False)
    p.set_defaults(func=func)
    return p


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="zenbrain",
        description="zenbrain: long-term memory for LLM agents. Store, recall and benchmark memories.",
        epilog="Run 'zenbrain demo' for a one-minute benchmark on a LoCoMo conversation.",
    )
    parser.add_argument("--version", action="version", version=f"zenbrain {__version__}")
    _add_global_options(parser, top=True)
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")

    _command(subs, "init", cmd_init, "create a memory store (or show an existing one)", scope=False)

    p = _command(subs, "add", cmd_add, "store one memory and print its id and layer")
    p.add_argument("text", metavar="TEXT", help="the memory's content ('-' reads it from standard input)")
    p.add_argument("--kind", metavar="K", help="fact, episode, skill, identity, preference, note or schema (default: classified)")
    p.add_argument("--layer", metavar="L", help="force a layer: working, short_term, episodic, semantic, procedural, core, cross_context")
    p.add_argument("--meta", metavar="JSON", help='metadata as a JSON object, e.g. \'{"source": "chat"}\'')
    p.add_argument("--event-time", metavar="TIME", help="when it happened: ISO 8601 (2023-05-08T13:56Z; no zone = UTC) or seconds since the epoch")
    p.add_argument("--importance", metavar="X", type=float, help="importance in [0, 1] (default 0.5)")
    p.add_argument("--json", action="store_true", help="print the stored memory as JSON")

    p = _command(subs, "recall", cmd_recall, "the memories that best answer a query")
    p.add_argument("query", metavar="QUERY")
    p.add_argument("-k", "--k", type=bounded_int(1, 1000), default=5, metavar="N", help="number of hits, 1-1000 (default 5)")
    p.add_argument("--layers", metavar="L[,L]", help="only these layers")
    p.add_argument("--why", action="store_true", help="show each hit's score breakdown")
    p.add_argument("--json", action="store_true", help="print the hits as JSON")
    p.add_argument("--no-touch", action="store_true", help="read-only recall: no access counts, no learning")

    for name, func, text in (
        ("get", cmd_get, "show one memory"),
        ("forget", cmd_forget, "erase one memory (and what was derived from it)"),
        ("history", cmd_history, "the change history of one memory"),
    ):
        p = _command(subs, name, func, text)
        p.add_argument("id", metavar="ID")
        if name != "forget":
            p.add_argument("--json", action="store_true", help="print JSON")

    p = _command(subs, "list", cmd_list, "the scope's memories, oldest first, a page at a time")
    p.add_argument("--layer", metavar="L", help="only this layer")
    p.add_argument("--archived", action="store_true", help="also list archived memories")
    p.add_argument("--limit", type=bounded_int(1, MAX_LIST), default=50, metavar="N", help=f"at most N (1-{MAX_LIST}; default 50)")
    p.add_argument("--offset", type=bounded_int(0, 1_000_000), default=0, metavar="N", help="skip the first N")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _command(subs, "episodes", cmd_episodes, "episodic memories whose event time lies in [START, END], oldest first")
    p.add_argument("--start", metavar="TIME", help="from this time: ISO 8601 or seconds since the epoch")
    p.add_argument("--end", metavar="TIME", help="up to this time")
    p.add_argument("--limit", type=bounded_int(1, MAX_LIST), default=None, metavar="N", help=f"at most N (1-{MAX_LIST})")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _command(subs, "update", cmd_update, "edit a memory directly (the old version stays in its history)")
    p.add_argument("id", metavar="ID")
    p.add_argument("--text", metavar="TEXT", help="new content ('-' reads it from standard input)")
    p.add_argument("--meta", metavar="JSON", help="new metadata as a JSON object (replaces the old)")
    p.add_argument("--importance", metavar="X", type=float, help="new importance in [0, 1]")
    p.add_argument("--layer", metavar="L", help="move it to this layer")
    p.add_argument("--json", action="store_true", help="print the memory as JSON")

    p = _command(subs, "revise", cmd_revise, "new information about a memory, gated by reconsolidation")
    p.add_argument("id", metavar="ID")
    p.add_argument("text", metavar="TEXT", help="the new information ('-' reads it from standard input)")
    p.add_argument("--correction", action="store_true", help="this corrects the memory rather than adding detail")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")

    p = _command(subs, "rollback", cmd_rollback, "restore the content a memory had before its last update or revision")
    p.add_argument("id", metavar="ID")
    p.add_argument("--json", action="store_true", help="print the memory as JSON")

    p = _command(subs, "relate", cmd_relate, "declare a typed relation SRC -> DST (supports, contradicts, causes, ...)")
    p.add_argument("src", metavar="SRC", help="id of the source memory")
    p.add_argument("relation", metavar="RELATION", help="supports, contradicts, causes, requires, part_of, similar_to or a name of your own")
    p.add_argument("dst", metavar="DST", help="id of the target memory")
    p.add_argument("--weight", type=float, default=1.0, metavar="W", help="edge weight (default 1.0)")
    p.add_argument("--remove", action="store_true", help="remove the relation instead")
    p = _command(subs, "relations", cmd_relations, "the relations from and to one memory, strongest first")
    p.add_argument("id", metavar="ID")
    p.add_argument("--relation", metavar="NAME", help="only this relation")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _command(subs, "evidence", cmd_evidence, "record evidence for or against a memory being true")
    p.add_argument("id", metavar="ID")
    p.add_argument("direction", choices=("for", "against"), help="whether the evidence supports the memory")
    p.add_argument("--strength", type=float, default=1.0, metavar="S", help="worth in observations (default 1)")

    p = _command(subs, "stats", cmd_stats, "counts by layer and context, file size, embedder")
    p.add_argument("--json", action="store_true", help="print JSON")
    for name, func, text in (
        ("sleep", cmd_sleep, "offline consolidation: every enabled sleep-time mechanism"),
        ("decay", cmd_decay, "apply forgetting: archive memories whose retrievability fell below threshold"),
    ):
        p = _command(subs, name, func, text)
        p.add_argument("--json", action="store_true", help="print the full report as JSON (every change)")
    p = _command(subs, "review-queue", cmd_review_queue, "memories due for review, most overdue first")
    p.add_argument("--limit", type=bounded_int(1, MAX_LIST), default=20, metavar="N", help=f"at most N (1-{MAX_LIST})")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _command(subs, "mechanisms", cmd_mechanisms, "every mechanism by name, on or off", scope=False)
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _command(subs, "serve", cmd_serve, "serve the memory store over HTTP: a REST API, OpenAPI docs at /docs",
                 scope=False)
    p.add_argument("--host", default="127.0.0.1", metavar="H", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, metavar="N", help="port (default 8765)")
    p.add_argument("--api-keys", metavar="FILE",
                   help=f'JSON object of API key -> user id, e.g. {{"k1": "alice"}} (default: ${API_KEYS_ENV} '
                        "as key1:alice,key2:bob; none: the API is open)")
    p.add_argument("--insecure", action="store_true", help="allow a non-loopback host without API keys")
    p.add_argument("--workers", type=bounded_int(1, 64), default=1, metavar="N",
                   help="worker processes (default 1); several suit a PostgreSQL store (--path postgresql://...)")

    p = _command(subs, "migrate", cmd_migrate,
                 "copy a store to another backend (SQLite <-> PostgreSQL), resumable, then verify the copy",
                 scope=False)
    p.add_argument("src", metavar="SRC", help="the store to copy: a SQLite file or a postgresql:// URL")
    p.add_argument("dst", metavar="DST", help="where to copy it (created when new)")
    p.add_argument("--queries", type=bounded_int(0, 100), default=3, metavar="N",
                   help="sample queries per partition for the recall comparison (default 3)")

    _command(subs, "mcp", cmd_mcp,
             "serve this scope's memory to MCP clients over stdio (needs: pip install \"zenbrain[server]\")")

    bench = subs.add_parser("bench", help="retrieval benchmarks", description="Retrieval benchmarks.")
    bench_subs = bench.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    bench.set_defaults(func=lambda args: _missing_subcommand(bench))
    p = _command(
        bench_subs, "locomo", cmd_bench_locomo, "LoCoMo turn-level evidence retrieval", scope=False,
        epilog="Systems: " + ", ".join(BENCH_SYSTEMS) + ". Each '--ablate NAME' adds 'zenbrain-NAME' with that "
               "mechanism off; '--ablate layer:episodic' switches a layer off.",
    )
    _add_bench_data_options(p)
    p.add_argument("--systems", metavar="S[,S]", default="zenbrain,bm25,dense",
                   help="systems to compare (default: zenbrain,bm25,dense; also hybrid, no-memory)")
    p.add_argument("--conversations", metavar="N|all|ID[,ID]", default="all",
                   help="the first N conversations, all of them (default), or sample ids")
    p.add_argument("--mode", choices=("per_conversation", "pooled"), default="per_conversation",
                   help="one store per conversation (default) or all conversations in one store")
    p.add_argument("--ablate", metavar="NAME", nargs="+", action="extend", default=[],
                   help="add zenbrain with mechanism NAME off (or layer:LAYER off); repeatable")
    p.add_argument("--out", metavar="DIR", default=os.path.join("results", "locomo"),
                   help="where JSON, markdown and plots go (default: results/locomo)")
    p.add_argument("--no-plots", action="store_true", help="write JSON and markdown only")
    from .bench.cli_ext import (
        register_bench_commands,  # bench longmemeval, peer systems, answer quality
    )

    register_bench_commands(bench_subs, locomo=p, command=_command)

    p = _command(
        subs, "demo", cmd_demo,
        "ingest one LoCoMo conversation, answer its questions from memory, compare with BM25 and dense cosine",
        scope=False,
    )
    _add_bench_data_options(p)
    p.add_argument("--conversation", metavar="ID", default=DEMO_CONVERSATION,
                   help=f"LoCoMo sample id (default: {DEMO_CONVERSATION})")
    p.add_argument("--examples", type=int, default=3, metavar="N", help="example questions to show (default 3)")
    p.add_argument("--out", metavar="DIR", default=None, help="also write JSON, markdown and plots here")
    from .experiments.cli import (
        register as register_experiments,  # the paper's experiments on the real system
    )

    register_experiments(subs)
    return parser


def _add_bench_data_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", metavar="PATH",
                   help="LoCoMo JSON file or data folder (default: $ZENBRAIN_DATA or ../shared/data)")
    p.add_argument("--ks", metavar="K[,K]", default="5,10", help="cut-offs (default 5,10)")
    p.add_argument("--categories", metavar="C[,C]", help="only these QA categories (1-5)")
    p.add_argument("--ci", action="store_true", help="show bootstrap intervals in the table")
    p.add_argument("--no-cache", action="store_true", help=f"do not use the on-disk embedding cache (${CACHE_ENV})")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--store", metavar="URL",
                   help="where zenbrain systems keep their memories: temporary SQLite files (default) or a "
                        "postgresql:// URL (each conversation in a fresh schema, dropped afterwards)")


def _missing_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def _merge_globals(args: argparse.Namespace) -> argparse.Namespace:
    """One value per global option, whether it came before or after the command."""
    for name in ("path", "embedder"):
        sub = getattr(args, "sub_" + name, None)
        if sub is not None:
            setattr(args, name, sub)
    args.off = list(args.off or []) + list(getattr(args, "sub_off", None) or [])
    args.verbose = bool(args.verbose or getattr(args, "sub_verbose", False))
    return args


# --------------------------------------------------------------------------- resolution helpers


def store_path(args: argparse.Namespace) -> str:
    """``--path``: a SQLite file or a PostgreSQL URL."""
    from .api import default_path
    from .storage.locations import is_postgres

    if args.path and is_postgres(args.path):
        return str(args.path)
    return os.path.expanduser(args.path) if args.path else default_path()


def _off_names(args: argparse.Namespace) -> frozenset[str]:
    from .registry import check_names

    names = [n.strip() for item in args.off for n in item.split(",") if n.strip()]
    return check_names(names)


def make_config(args: argparse.Namespace):  # -> Config
    from .config import Config
    from .registry import Mechanisms

    return Config(mechanisms=Mechanisms(disabled=_off_names(args)))


def _spec_for_name(name: str) -> str | None:
    """The embedder spec that reproduces an embedder name recorded in a store."""
    provider, _, model = name.partition(":")
    if provider == "hashing":
        return name
    if provider == "minilm":
        return "minilm"
    if provider == "minilm-onnx-int8":
        return "minilm-onnx"
    if provider == "minilm-onnx":
        return "minilm-onnx:fp32"
    if provider == "e5-small-q4" and model:
        return f"e5:{model}"
    if provider in ("openai", "ollama") and model:
        return name
    return None


def _store_embedder_name(path: str) -> str | None:
    """The embedder a store was created with (read from its meta table), or None."""
    from .storage.locations import recorded_embedder

    return recorded_embedder(path)


def _store_exists(path: str) -> bool:
    from .storage.locations import exists

    return exists(path)


def embedder_spec(args: argparse.Namespace, store: str | None = None) -> str:
    """``--embedder``, else ``$ZENBRAIN_EMBEDDER``, else the existing store's embedder, else the default."""
    if args.embedder:
        return args.embedder
    env = os.environ.get(EMBEDDER_ENV)
    if env:
        return env
    if store is not None:
        name = _store_embedder_name(store)
        spec = _spec_for_name(name) if name else None
        if spec:
            return spec
    return DEFAULT_EMBEDDER_SPEC


def make_scope(args: argparse.Namespace):  # -> Scope
    from .model import Scope

    return Scope(
        user_id=args.user or os.environ.get(USER_ENV) or "default",
        agent_id=args.agent or "default",
        session_id=args.session,
        context=args.context or "default",
    )


def open_store(args: argparse.Namespace, *, create: bool = False):  # -> MemoryCoordinator
    from .api import open_memory

    path = store_path(args)
    if not create and not _store_exists(path):
        raise StorageError(f"no memory store at {path}; create one with: zenbrain init --path {path}")
    spec = embedder_spec(args, path)
    return open_memory(path, embedder=spec, config=make_config(args))


def cache_dir() -> Path:
    """Where the embedding cache lives: ``$ZENBRAIN_CACHE_DIR``, else the user cache dir."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "zenbrain"


def parse_meta(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"--meta is not valid JSON: {exc.msg} at position {exc.pos}") from None
    if not isinstance(value, dict):
        raise ValidationError(f"--meta must be a JSON object, got {type(value).__name__}")
    return value


def _iso(t: float | None) -> str:
    if t is None:
        return "-"
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    if width < 4 or len(flat) <= width:
        return flat
    return flat[: width - 3] + "..."


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


# --------------------------------------------------------------------------- memory commands


def cmd_init(args: argparse.Namespace) -> int:
    path = store_path(args)
    if _store_exists(path):
        return _show_existing_store(args, path)
    with open_store(args, create=True) as mem:
        s = mem.stats()
        print(f"created store at {path}")
        print(f"embedder: {mem.embedder.name} (dim {mem.embedder.dim}); memories: {s['memories']}")
    return EXIT_OK


def _show_existing_store(args: argparse.Namespace, path: str) -> int:
    """``init`` on a store that exists changes nothing: it says what is there."""
    name = _store_embedder_name(path)
    spec = _spec_for_name(name) if name else None
    print(f"store exists at {path}; nothing to do")
    if name is None or spec is None:
        print(f"embedder: {name or 'unknown'}")
        return EXIT_OK
    from .api import open_memory

    with open_memory(path, embedder=spec, config=make_config(args)) as mem:
        print(f"embedder: {mem.embedder.name} (dim {mem.embedder.dim}); memories: {mem.stats()['memories']}")
    if args.embedder and _spec_for_name(args.embedder) != spec and args.embedder != spec:
        print(f"(--embedder {args.embedder} not applied: the store keeps the embedder it was created with)")
    return EXIT_OK


def _text_arg(text: str, what: str) -> str:
    """A text argument; '-' reads it from standard input."""
    if text != "-":
        return text
    if sys.stdin is None or sys.stdin.isatty():
        raise ValidationError(f"{what} '-' reads standard input, but none is piped in")
    return sys.stdin.read().rstrip("\n")


def cmd_add(args: argparse.Namespace) -> int:
    meta = parse_meta(args.meta)
    event_time = parse_time(args.event_time, what="--event-time") if args.event_time is not None else None
    scope = make_scope(args)
    with open_store(args, create=True) as mem:
        item = mem.store(
            _text_arg(args.text, "TEXT"), scope, kind=args.kind, layer=args.layer, metadata=meta,
            event_time=event_time, importance=args.importance,
        )
    if args.json:
        _print_json(item_dict(item))
    else:
        print(f"stored {item.id} layer={item.layer.value} kind={item.kind.value}")
    return EXIT_OK


def cmd_recall(args: argparse.Namespace) -> int:
    scope = make_scope(args)
    layers = [x.strip() for x in args.layers.split(",") if x.strip()] if args.layers else None
    with open_store(args) as mem:
        hits = mem.recall(args.query, scope, k=args.k, layers=layers, touch=not args.no_touch)
    if args.json:
        _print_json({
            "query": args.query,
            "query_type": hits.query_type,
            "hits": [hit_dict(r, h) for r, h in enumerate(hits, start=1)],
        })
        return EXIT_OK
    if not hits:
        print("no memories matched")
        return EXIT_OK
    layer_w = max(5, *(len(h.item.layer.value) for h in hits))
    id_w = max(2, *(len(h.item.id) for h in hits))
    head = f"{'rank':>4}  {'score':>6}  {'layer':<{layer_w}}  {'id':<{id_w}}  content"
    width = max(30, shutil.get_terminal_size((120, 24)).columns - len(head) + len("content") - 1)
    print(f"query type: {hits.query_type}")
    print(head)
    for rank, h in enumerate(hits, start=1):
        print(f"{rank:>4}  {h.score:>6.3f}  {h.item.layer.value:<{layer_w}}  {h.item.id:<{id_w}}  "
              f"{_one_line(h.item.content, width)}")
        if args.why:
            print("        " + "  ".join(f"{k}={v:.3f}" for k, v in h.why.as_dict().items()))
    return EXIT_OK


def cmd_get(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        item = mem.get(args.id, make_scope(args))
    d = item_dict(item)
    if args.json:
        _print_json(d)
        return EXIT_OK
    for key, value in d.items():
        if key in ("created_at", "updated_at", "event_time", "last_access"):
            value = _iso(value)
        elif key == "metadata":
            value = json.dumps(value, ensure_ascii=False)
        elif isinstance(value, float):
            value = f"{value:.4g}"
        print(f"{key:>13}: {value}")
    return EXIT_OK


def _print_items(items: Sequence[Any], as_json: bool, empty: str) -> None:
    if as_json:
        _print_json([item_dict(i) for i in items])
        return
    if not items:
        print(empty)
    for i in items:
        when = _iso(i.event_time if i.event_time is not None else i.created_at)
        flag = " (archived)" if i.archived else ""
        print(f"{i.id}  {i.layer.value:<13} {when}  {_one_line(i.content, 70)}{flag}")


def cmd_list(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        items = mem.list_memories(make_scope(args), layer=args.layer, include_archived=args.archived,
                         limit=args.offset + args.limit + 1)
    page = items[args.offset:]
    _print_items(page[: args.limit], args.json, "no memories")
    if len(page) > args.limit and not args.json:
        print(f"(more: --offset {args.offset + args.limit})")
    return EXIT_OK


def cmd_episodes(args: argparse.Namespace) -> int:
    start = parse_time(args.start, what="--start") if args.start is not None else None
    end = parse_time(args.end, what="--end") if args.end is not None else None
    with open_store(args) as mem:
        items = mem.episodes(make_scope(args), start, end, limit=args.limit)
    _print_items(items, args.json, "no episodes in that time range")
    return EXIT_OK


def cmd_update(args: argparse.Namespace) -> int:
    if args.text is None and args.meta is None and args.importance is None and args.layer is None:
        raise ValidationError("nothing to update: give --text, --meta, --importance or --layer")
    text = _text_arg(args.text, "--text") if args.text is not None else None
    meta = parse_meta(args.meta)
    with open_store(args) as mem:
        item = mem.update(args.id, make_scope(args), content=text, metadata=meta, importance=args.importance,
                          layer=args.layer)
    if args.json:
        _print_json(item_dict(item))
    else:
        print(f"updated {item.id} (version {item.version}); 'zenbrain rollback {item.id}' undoes it")
    return EXIT_OK


def cmd_revise(args: argparse.Namespace) -> int:
    text = _text_arg(args.text, "TEXT")
    with open_store(args) as mem:
        out = mem.revise(args.id, make_scope(args), text, correction=args.correction)
    new = out.get("new_memory")
    if args.json:
        _print_json({"mode": out["mode"], "memory": item_dict(out["memory"]),
                     "new_memory": item_dict(new) if new is not None else None, "plan": out.get("plan")})
        return EXIT_OK
    reason = (out.get("plan") or {}).get("reason")
    print(f"{out['mode']}: {_one_line(out['memory'].content, 100)}")
    if new is not None:
        print(f"new memory {new.id}: {_one_line(new.content, 100)}")
    if reason:
        print(f"why: {reason}")
    return EXIT_OK


def cmd_rollback(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        item = mem.rollback(args.id, make_scope(args))
    if args.json:
        _print_json(item_dict(item))
    else:
        print(f"rolled back {item.id}: {_one_line(item.content, 100)}")
    return EXIT_OK


def cmd_forget(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        mem.forget(args.id, make_scope(args))
    print(f"forgot {args.id}")
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        events = mem.history(args.id, make_scope(args))
    if args.json:
        _print_json([{"at": e.at, "action": e.action, "detail": e.detail} for e in events])
        return EXIT_OK
    for e in events:
        print(f"{_iso(e.at)}  {e.action:<14} {json.dumps(e.detail, ensure_ascii=False, sort_keys=True)}")
    return EXIT_OK


def cmd_relate(args: argparse.Namespace) -> int:
    scope = make_scope(args)
    with open_store(args) as mem:
        if args.remove:
            gone = mem.unrelate(args.src, args.dst, args.relation, scope)
            print(f"removed {args.src} -{args.relation}-> {args.dst}" if gone else "no such relation")
            return EXIT_OK
        e = mem.relate(args.src, args.dst, args.relation, scope, weight=args.weight)
    print(f"related {e.src} -{e.relation}-> {e.dst} weight={e.weight:g}")
    return EXIT_OK


def cmd_relations(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        edges = mem.relations(args.id, make_scope(args), relation=args.relation)
    if args.json:
        _print_json([edge_dict(e) for e in edges])
        return EXIT_OK
    if not edges:
        print("no relations")
    for e in edges:
        arrow = f"-{e.relation}-> {e.dst}" if e.src == args.id else f"<-{e.relation}- {e.src}"
        print(f"{e.weight:7.3f}  {arrow}")
    return EXIT_OK


def cmd_evidence(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        item = mem.record_evidence(args.id, make_scope(args), supports=args.direction == "for", strength=args.strength)
    print(f"{item.id} confidence={item.confidence:.3f} (alpha={item.conf_alpha:g}, beta={item.conf_beta:g})")
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve one scope over MCP on stdin/stdout; stdout carries protocol messages only."""
    scope = make_scope(args)
    with _StdoutToStderr():
        try:
            from .server.mcp_server import create_server
        except ImportError as exc:
            if (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types", "pydantic"):
                raise
            raise ConfigError('the MCP server needs the MCP SDK: pip install "zenbrain[server]"') from None
        mem = open_store(args, create=True)
    with mem:
        with _StdoutToStderr():
            server = create_server(mem, scope)
        server.run("stdio")  # the SDK keeps stray output off the wire while it serves
    return EXIT_OK


class _StdoutToStderr:
    """Send what is written to stdout, by Python or by native code, to stderr instead."""

    def __enter__(self) -> None:
        sys.stdout.flush()
        self._stdout = sys.stdout
        try:
            self._fd: int | None = os.dup(1)
            os.dup2(2, 1)
        except (OSError, ValueError):
            self._fd = None
        sys.stdout = sys.stderr

    def __exit__(self, *exc: object) -> None:
        sys.stdout.flush()
        sys.stdout = self._stdout
        if self._fd is not None:
            os.dup2(self._fd, 1)
            os.close(self._fd)


def cmd_stats(args: argparse.Namespace) -> int:
    scoped = args.user is not None or args.agent is not None
    with open_store(args) as mem:
        s = mem.stats(make_scope(args) if scoped else None)
    s = {"path": store_path(args), **s}
    if args.json:
        _print_json(s)
        return EXIT_OK
    print(f"store:      {s['path']} ({s['file_bytes'] / 1e6:.2f} MB)")
    print(f"embedder:   {s['embedder']} ({s['cached_embeddings']} vectors)")
    print(f"memories:   {s['memories']} ({s['archived']} archived), edges: {s['edges']}")
    if s["by_layer"]:
        print("by layer:   " + ", ".join(f"{k}={v}" for k, v in sorted(s["by_layer"].items())))
    if s["by_context"]:
        print("by context: " + ", ".join(f"{k}={v}" for k, v in sorted(s["by_context"].items())))
    print("mechanisms off: " + (", ".join(s["mechanisms_off"]) or "none"))
    return EXIT_OK


def _print_report(report: Any, as_json: bool) -> None:
    """A lifecycle report as short sentences (what changed and why); --json prints it whole."""
    from .report_text import summarize

    d = report.as_dict()
    if as_json:
        _print_json(d)
        return
    print(f"{d['operation']} at {_iso(d['at'])}:")
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
    with open_store(args) as mem:
        items = mem.review_queue(make_scope(args), limit=args.limit)
    if args.json:
        _print_json([item_dict(i) for i in items])
        return EXIT_OK
    if not items:
        print("nothing is due for review")
        return EXIT_OK
    for i in items:
        print(f"{i.id}  {i.layer.value:<10} {_one_line(i.content, 80)}")
    return EXIT_OK


def cmd_mechanisms(args: argparse.Namespace) -> int:
    from .registry import ADDITIONAL, FOUNDATIONAL, PMA

    on = make_config(args).mechanisms.as_dict()
    group = {**{n: "foundational" for n in FOUNDATIONAL}, **{n: "pma" for n in PMA}, **{n: "additional" for n in ADDITIONAL}}
    if args.json:
        _print_json([{"name": n, "group": group[n], "on": v} for n, v in on.items()])
        return EXIT_OK
    w = max(len(n) for n in on)
    print(f"{'mechanism':<{w}}  {'group':<12}  state")
    for name, state in on.items():
        print(f"{name:<{w}}  {group[name]:<12}  {'on' if state else 'off'}")
    n_off = sum(1 for v in on.values() if not v)
    print(f"\n{len(on) - n_off} on, {n_off} off")
    return EXIT_OK


API_KEYS_ENV = "ZENBRAIN_API_KEYS"


def load_api_keys(file: str | None) -> dict[str, str] | None:
    """API key -> user id from a JSON file, else from ``$ZENBRAIN_API_KEYS`` (``key1:alice,key2:bob``),
    else None (no authentication)."""
    from .model import Scope

    if file is not None:
        try:
            with open(os.path.expanduser(file), encoding="utf-8") as fh:
                keys = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--api-keys {file} is not valid JSON: {exc.msg} at position {exc.pos}") from None
        if not isinstance(keys, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in keys.items()):
            raise ConfigError(f"--api-keys {file} must be a JSON object of API key -> user id (strings)")
    else:
        env = os.environ.get(API_KEYS_ENV, "").strip()
        if not env:
            return None
        keys = {}
        for pair in _split(env):
            key, sep, user = pair.partition(":")
            if not sep or not key.strip() or not user.strip():
                raise ConfigError(f"${API_KEYS_ENV} must be key:user pairs separated by commas, got {pair!r}")
            keys[key.strip()] = user.strip()
    if not keys:
        raise ConfigError("the API key list is empty")
    for user in keys.values():
        Scope(user)
    return keys


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cmd_serve(args: argparse.Namespace) -> int:
    keys = load_api_keys(args.api_keys)
    if keys is None and not _is_loopback(args.host) and not args.insecure:
        raise ConfigError(f"refusing to serve on {args.host} without API keys: give --api-keys FILE "
                          f"(or ${API_KEYS_ENV}), bind 127.0.0.1, or pass --insecure")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be in [0, 65535], got {args.port}")
    try:
        import uvicorn

        from .server.activity import ActivityLog, activity_path
        from .server.rest import create_app
    except ImportError as exc:
        raise ConfigError(f'the REST server needs FastAPI and uvicorn ({exc}): pip install "zenbrain[server]"') from None
    from .storage.locations import is_postgres

    path = store_path(args)
    # A PostgreSQL store's activity log stays in each server process (it has no file beside it).
    activity_file = None if is_postgres(path) else activity_path(path)
    auth = f"API keys for {len(set(keys.values()))} user(s)" if keys else "no API keys: open to anyone who can reach it"
    if args.workers > 1:
        from .server.workers import spec_env

        with open_store(args, create=True):  # created and migrated once, before the workers start
            spec = embedder_spec(args, path)
        os.environ.update(spec_env(path=path, embedder=spec, off=sorted(_off_names(args)), api_keys=keys,
                                   activity=activity_file))
        _status(f"zenbrain REST API on http://{args.host}:{args.port} with {args.workers} worker processes; "
                f"store {path}; {auth}")
        # A worker answers uvicorn's health check from a thread; importing the library and an
        # embedder holds the GIL for seconds on a busy machine, longer than the default 5 s
        # after which uvicorn kills and restarts it (dropping its connections).
        uvicorn.run("zenbrain.server.workers:app_from_env", factory=True, workers=args.workers, host=args.host,
                    port=args.port, log_level="info", timeout_worker_healthcheck=WORKER_HEALTHCHECK_S)
        return EXIT_OK
    activity = ActivityLog(activity_file)
    with open_store(args, create=True) as mem:
        app = create_app(mem, api_keys=keys, activity=activity)
        _status(f"zenbrain REST API on http://{args.host}:{args.port} (dashboard at /ui, docs at /docs); "
                f"store {path}; {auth}")
        try:
            uvicorn.run(app, host=args.host, port=args.port, log_level="info")
        finally:
            activity.close()
    return EXIT_OK


def cmd_migrate(args: argparse.Namespace) -> int:
    """Copy SRC into DST partition by partition (resuming a copy that stopped), then compare
    the two stores: counts per partition, and dense and lexical top-10 for sample queries."""
    from .storage.transfer import migrate, open_pair, source_key, verify

    def shown(location: str) -> str:
        return location.split("?", 1)[0] if location.startswith(("postgresql://", "postgres://")) else location

    with open_pair(args.src, args.dst) as (src, dst):
        parts = src.partitions()
        print(f"copying {shown(args.src)} -> {shown(args.dst)}: {len(parts)} partition(s), embedder {src.embedder_name}",
              flush=True)

        def progress(part: tuple[str, str], counts: Any) -> None:
            if counts is None:
                print(f"  {part[0]}/{part[1]}: copied before, skipped", flush=True)
            else:
                print(f"  {part[0]}/{part[1]}: {counts.memories} memories, {counts.vectors} vectors, {counts.edges} edges, "
                      f"{counts.events} history events, {counts.records} records", flush=True)

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


# --------------------------------------------------------------------------- benchmarks


class ProgressEmbedder:
    """Wraps an embedder and shows a progress bar for large batches (small ones stay quiet)."""

    def __init__(self, inner: Any, *, enabled: bool = True, chunk: int = 64, min_batch: int = 32) -> None:
        self.inner = inner
        self.enabled = enabled
        self.chunk = chunk
        self.min_batch = min_batch

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def __getattr__(self, attr: str) -> Any:  # e.g. ``_dim`` of HTTP embedders
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np
        from tqdm.auto import tqdm

        texts = list(texts)
        if not self.enabled or len(texts) < self.min_batch:
            return self.inner.embed(texts)
        parts = []
        with tqdm(total=len(texts), desc=f"embedding ({self.inner.name})", unit="text", leave=False) as bar:
            for i in range(0, len(texts), self.chunk):
                parts.append(np.asarray(self.inner.embed(texts[i : i + self.chunk]), dtype=np.float32))
                bar.update(len(texts[i : i + self.chunk]))
        return np.concatenate(parts, axis=0)


def bench_embedder(args: argparse.Namespace, *, progress: bool):  # -> Embedder
    """The benchmark's embedder, wrapped in a CachedEmbedder on disk unless ``--no-cache``."""
    from .providers.cache import CachedEmbedder
    from .providers.factory import make_embedder

    spec = embedder_spec(args)
    inner = ProgressEmbedder(make_embedder(spec), enabled=progress)
    if args.no_cache:
        return CachedEmbedder(inner, None, memory_items=1 << 16)
    return CachedEmbedder(inner, cache_dir() / CACHE_FILE, memory_items=1 << 16)


def _split(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def _ints(text: str | None, what: str) -> list[int]:
    try:
        return [int(x) for x in _split(text)]
    except ValueError:
        raise ConfigError(f"{what} must be comma-separated integers, got {text!r}") from None


def load_conversations(data: str | None, which: str | Sequence[str] = "all"):  # -> list[LocomoConversation]
    """LoCoMo conversations from a file or folder: ``"all"``, ``"N"`` (the first N) or sample ids."""
    from .bench.locomo import LOCOMO_FILES, load_locomo, resolve_data_file

    try:
        if data is not None and Path(data).expanduser().is_dir():
            file = resolve_data_file(None, LOCOMO_FILES, data_dir=data)
        else:
            file = resolve_data_file(data, LOCOMO_FILES)
        if not file.exists():
            raise FileNotFoundError(f"LoCoMo file {file} does not exist")
        convs = load_locomo(file)
    except FileNotFoundError as exc:
        raise ConfigError(f"LoCoMo data not found: {exc}") from None
    except (ValueError, OSError) as exc:  # bad JSON, unreadable file
        raise ConfigError(f"cannot read LoCoMo data: {exc}") from None
    if not convs:
        raise ConfigError("the LoCoMo file holds no conversations")
    if isinstance(which, str):
        if which == "all":
            return convs
        if which.isdigit():
            n = int(which)
            if n < 1:
                raise ConfigError("--conversations must be at least 1")
            return convs[:n]
        which = _split(which)
    by_id = {c.sample_id: c for c in convs}
    unknown = [w for w in which if w not in by_id]
    if unknown:
        raise ConfigError(f"unknown conversation(s) {', '.join(unknown)}; the data holds {', '.join(by_id)}")
    return [by_id[w] for w in which]


def check_bench_options(args: argparse.Namespace, names: Sequence[str], ablations: Sequence[str]) -> None:
    """Refuse bad benchmark options before any data is read or any model is loaded."""
    from .model import Layer
    from .registry import check_names

    ks = _ints(args.ks, "--ks")
    if not ks or min(ks) < 1:
        raise ConfigError("--ks must be positive integers")
    _ints(args.categories, "--categories")
    unknown = [n for n in names if n not in BENCH_SYSTEMS]
    if unknown:
        raise ConfigError(f"unknown system(s) {', '.join(unknown)}; systems are {', '.join(BENCH_SYSTEMS)}")
    if not names and not ablations:
        raise ConfigError("no systems to run")
    for a in ablations:
        if a.startswith("layer:"):
            Layer.parse(a.split(":", 1)[1])
        else:
            check_names([a])
    _off_names(args)


def make_systems(names: Sequence[str], ablations: Sequence[str], embedder: Any, config: Any, *,
                 store: str | None = None) -> list[Any]:
    """Benchmark systems by name; each ablation adds ``zenbrain-NAME``. ``store``: where the
    zenbrain systems keep their memories (None: temporary SQLite files; or a PostgreSQL URL)."""
    from .bench.baselines import (
        BM25System,
        DenseSystem,
        HybridRRFSystem,
        NoMemorySystem,
    )
    from .bench.zenbrain_system import ZenBrainSystem
    from .model import Layer
    from .registry import check_names

    unknown = [n for n in names if n not in BENCH_SYSTEMS]
    if unknown:
        raise ConfigError(f"unknown system(s) {', '.join(unknown)}; systems are {', '.join(BENCH_SYSTEMS)}")
    if not names and not ablations:
        raise ConfigError("no systems to run")
    # Validate every ablation before building anything.
    variants: list[tuple[str, Any]] = []
    for a in ablations:
        if a.startswith("layer:"):
            layer = Layer.parse(a.split(":", 1)[1])
            variants.append((f"zenbrain-layer:{layer.value}", replace(config, disabled_layers=config.disabled_layers | {layer})))
        else:
            check_names([a])
            variants.append((f"zenbrain-{a}", config.without(a)))
    seen = set(names)
    for name, _ in variants:
        if name in seen:
            raise ConfigError(f"system {name!r} is given twice")
        seen.add(name)
    systems: list[Any] = []
    for n in dict.fromkeys(names):
        if n == "zenbrain":
            systems.append(ZenBrainSystem(embedder, config=config, name="zenbrain", store=store))
        elif n == "bm25":
            systems.append(BM25System())
        elif n == "dense":
            systems.append(DenseSystem(embedder, name="dense"))
        elif n == "hybrid":
            systems.append(HybridRRFSystem(BM25System(), DenseSystem(embedder), name="hybrid-rrf"))
        else:
            systems.append(NoMemorySystem())
    for name, cfg in variants:
        systems.append(ZenBrainSystem(embedder, config=cfg, name=name, store=store))
    return systems


def run_locomo_bench(
    args: argparse.Namespace,
    conversations: Sequence[Any],
    system_names: Sequence[str],
    ablations: Sequence[str],
    *,
    mode: str = "per_conversation",
) -> tuple[dict[str, Any], Any]:
    """Run the LoCoMo retrieval benchmark; returns (results, embedder)."""
    from .bench.runner import run_locomo

    ks = _ints(args.ks, "--ks")
    if not ks or min(ks) < 1:
        raise ConfigError("--ks must be positive integers")
    categories = _ints(args.categories, "--categories") or None
    progress = not args.no_progress
    embedder = bench_embedder(args, progress=progress)
    systems = make_systems(system_names, ablations, embedder, make_config(args), store=getattr(args, "store", None))
    embedding = None
    if any(n in ("zenbrain", "dense", "hybrid") for n in system_names) or ablations:
        embedding = prewarm(embedder, conversations, categories)
    try:
        results = run_locomo(systems, conversations, ks=ks, mode=mode, progress=progress, categories=categories)
    finally:
        for s in systems:
            s.close()
        embedder.close()
    results["embedder"] = embedder.name
    if embedding is not None:
        results["embedding"] = embedding
    results["mechanisms_off"] = sorted(_off_names(args))
    return results, embedder


def prewarm(embedder: Any, conversations: Sequence[Any], categories: Sequence[int] | None = None) -> dict[str, Any]:
    """Embed every turn and question once, in one batch, so the run itself reads vectors from the cache.

    Single-text query embedding costs tens of milliseconds with MiniLM on a CPU; batched it
    costs a few. Returns what was done: seconds spent, texts embedded, texts found in the cache.
    """
    from .providers.base import embed_queries

    cats = set(categories) if categories else None
    texts = list(dict.fromkeys(t for t in (d.text for c in conversations for d in c.docs) if t.strip()))
    questions = [q.question for c in conversations for q in c.questions
                 if q.evidence and (cats is None or q.category in cats)]
    questions = list(dict.fromkeys(t for t in questions if t.strip()))
    before = embedder.stats.misses
    t0 = time.perf_counter()
    if hasattr(embedder.inner, "embed_query"):  # questions embedded as queries (e5)
        embedder.embed(texts)
        embed_queries(embedder, questions)
        texts += questions
    else:
        texts = list(dict.fromkeys([*texts, *questions]))
        embedder.embed(texts)
    seconds = time.perf_counter() - t0
    fresh = embedder.stats.misses - before
    _status(f"embeddings: {len(texts)} distinct texts, {fresh} embedded in {seconds:.1f} s"
            + (f" ({fresh / seconds:.0f}/s)" if fresh and seconds > 0 else "")
            + f", {len(texts) - fresh} from the cache")
    return {
        "seconds": seconds,
        "texts": len(texts),
        "texts_embedded": fresh,
        "texts_from_cache": len(texts) - fresh,
        "note": "turns and questions were embedded in one batch before the run; search latencies exclude it",
    }


def _write_outputs(results: dict[str, Any], out: str, *, plots: bool) -> None:
    from .bench.report import write_report

    title = f"LoCoMo turn-level retrieval ({results['mode']}), embedder {results['embedder']}"
    paths = write_report(results, Path(out), title=title, plots=plots)
    print(f"\nwrote {paths['json']} and {paths['markdown']}" + (f" (+{len(paths) - 2} plots)" if len(paths) > 2 else ""))


def _print_table(results: dict[str, Any], ci: bool) -> None:
    from .bench.report import locomo_table

    print(locomo_table(results, ci=ci))
    emb = results.get("embedding")
    if emb:
        print(f"(embedder {results['embedder']}: {emb['texts_embedded']} texts embedded in {emb['seconds']:.1f} s before "
              f"the run, {emb['texts_from_cache']} from the cache; ingest_s and search latencies exclude embedding)")


def _status(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cmd_bench_locomo(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    ablations = [a for item in args.ablate for a in _split(item)]
    names = _split(args.systems)
    check_bench_options(args, names, ablations)
    convs = load_conversations(args.data, args.conversations)
    _status(f"LoCoMo: {len(convs)} conversation(s), {sum(len(c.docs) for c in convs)} turns; "
            f"embedder {embedder_spec(args)}; cache {'off' if args.no_cache else cache_dir() / CACHE_FILE}")
    results, _ = run_locomo_bench(args, convs, names, ablations, mode=args.mode)
    _print_table(results, args.ci)
    _write_outputs(results, args.out, plots=not args.no_plots)
    _status(f"done in {time.perf_counter() - t0:.1f} s")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    keep = args.path is not None
    if keep and _store_exists(store_path(args)):
        raise ConfigError(f"demo writes a fresh store; {store_path(args)} already exists (choose another --path)")
    check_bench_options(args, DEMO_SYSTEMS, [])
    conv = load_conversations(args.data, [args.conversation])[0]
    scored = sum(1 for q in conv.questions if q.evidence)
    print(f"zenbrain demo: LoCoMo conversation {conv.sample_id} between {' and '.join(conv.speakers) or '?'}: "
          f"{len(conv.docs)} turns in {len(conv.session_times)} sessions, {scored} questions with evidence.")
    print(f"Each system stores every turn, then answers every question with its top {max(_ints(args.ks, '--ks') or [10])} turns; "
          "a question counts as answered when the evidence turns are among them.")
    _status(f"embedder {embedder_spec(args)}; cache {'off' if args.no_cache else cache_dir() / CACHE_FILE}")
    results, _ = run_locomo_bench(args, [conv], DEMO_SYSTEMS, [])
    print()
    _print_table(results, args.ci)
    _print_examples(results, conv, args.examples)
    if args.out:
        _write_outputs(results, args.out, plots=True)
    if keep:
        _persist_conversation(args, conv)
    print(f"\nfinished in {time.perf_counter() - t0:.0f} s")
    return EXIT_OK


def _print_examples(results: dict[str, Any], conv: Any, n: int) -> None:
    """A few questions with zenbrain's top turns; '*' marks an evidence turn."""
    if n <= 0 or "zenbrain" not in results["systems"]:
        return
    text = {d.id: d.text for d in conv.docs}
    answers = {q.qid: q.answer for q in conv.questions}
    records = [r for r in results["systems"]["zenbrain"]["questions"] if r["gold"]]
    chosen: list[dict[str, Any]] = []
    for group in ("single-hop", "temporal", "multi-hop", "open-domain", "adversarial"):
        for r in records:
            if r["group"] == group:
                chosen.append(r)
                break
    chosen = (chosen + [r for r in records if r not in chosen])[:n]
    if not chosen:
        return
    print("\nExamples (zenbrain's top 3 turns; * = evidence turn):")
    for r in chosen:
        print(f"\n  Q ({r['group']}): {r['question']}")
        if answers.get(r["qid"]):
            print(f"  reference answer: {answers[r['qid']]}")
        gold = set(r["gold"])
        for rank, doc_id in enumerate(r["ranked"][:3], start=1):
            mark = "*" if doc_id in gold else " "
            print(f"   {mark}{rank}. [{doc_id}] {_one_line(text.get(doc_id, ''), 100)}")
        found = [g for g in r["gold"] if g in r["ranked"]]
        print(f"    evidence {', '.join(r['gold'])}: {len(found)}/{len(gold)} in the top {len(r['ranked'])}")


def _persist_conversation(args: argparse.Namespace, conv: Any) -> None:
    """Store the conversation's turns as episodic memories in the store at ``--path``."""
    from .api import open_memory
    from .model import Kind, Layer, Scope
    from .providers.cache import CachedEmbedder
    from .providers.factory import make_embedder

    path = store_path(args)
    inner = make_embedder(embedder_spec(args))
    emb = CachedEmbedder(inner, None if args.no_cache else cache_dir() / CACHE_FILE)
    user = os.environ.get(USER_ENV) or "default"
    records = [
        {"content": d.text, "kind": Kind.EPISODE, "layer": Layer.EPISODIC, "event_time": d.time,
         "metadata": {"doc_id": d.id, "speaker": d.speaker, "session": d.session, "sample_id": conv.sample_id}}
        for d in conv.docs
    ]
    try:
        with open_memory(path, embedder=emb, config=make_config(args)) as mem:
            mem.store_many(records, Scope(user))
    finally:
        emb.close()
    q = next((q.question for q in conv.questions if q.evidence), "what happened?")
    print(f"\nstored the {len(records)} turns in {path}; try:\n  zenbrain --path {path} recall {json.dumps(q)} --why")


# --------------------------------------------------------------------------- entry point


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    args = _merge_globals(args)
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


if __name__ == "__main__":
    sys.exit(main())
