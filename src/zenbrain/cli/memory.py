"""Memory commands: init, add, recall, get, forget, history, list, episodes, update, revise, rollback."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from typing import Any

from ..cli_support import (
    EXIT_OK,
    bounded_int,
    command,
    embedder_spec,
    iso,
    make_config,
    make_scope,
    one_line,
    open_store,
    print_json,
    spec_for_name,
    store_embedder_name,
    store_exists,
    store_path,
)
from ..errors import ConfigError, ValidationError

MAX_LIST = 10_000  # the most memories one list, episodes or review-queue call prints


def register(subs: Any) -> None:
    command(subs, "init", cmd_init, "create a memory store (or show an existing one)", scope=False)

    p = command(subs, "add", cmd_add, "store one memory and print its id and layer")
    p.add_argument("text", metavar="TEXT", help="the memory's content ('-' reads it from standard input)")
    p.add_argument("--kind", metavar="K", help="fact, episode, skill, identity, preference, note or schema (default: classified)")
    p.add_argument("--layer", metavar="L", help="force a layer: working, short_term, episodic, semantic, procedural, core, cross_context")
    p.add_argument("--meta", metavar="JSON", help='metadata as a JSON object, e.g. \'{"source": "chat"}\'')
    p.add_argument("--event-time", metavar="TIME", help="when it happened: ISO 8601 (2023-05-08T13:56Z; no zone = UTC) or seconds since the epoch")
    p.add_argument("--importance", metavar="X", type=float, help="importance in [0, 1] (default 0.5)")
    p.add_argument("--supersedes", metavar="ID[,ID]", help="ids of earlier memories this one replaces")
    p.add_argument("--json", action="store_true", help="print the stored memory as JSON")

    p = command(subs, "recall", cmd_recall, "the memories that best answer a query")
    p.add_argument("query", metavar="QUERY")
    p.add_argument("-k", "--k", type=bounded_int(1, 1000), default=5, metavar="N", help="number of hits, 1-1000 (default 5)")
    p.add_argument("--layers", metavar="L[,L]", help="only these layers")
    p.add_argument("--why", action="store_true", help="show each hit's score breakdown")
    p.add_argument("--json", action="store_true", help="print the hits as JSON")
    p.add_argument("--no-touch", action="store_true", help="read-only recall: no access counts, no learning")
    p.add_argument("--as-of", metavar="TIME", help="recall what held at this time (ISO 8601 or epoch seconds)")
    p.add_argument("--include-superseded", action="store_true", help="let memories a later one replaced compete")

    for name, func, text in (
        ("get", cmd_get, "show one memory"),
        ("forget", cmd_forget, "erase one memory (and what was derived from it)"),
        ("history", cmd_history, "the change history of one memory"),
    ):
        p = command(subs, name, func, text)
        p.add_argument("id", metavar="ID")
        if name != "forget":
            p.add_argument("--json", action="store_true", help="print JSON")

    p = command(subs, "list", cmd_list, "the scope's memories, oldest first, a page at a time")
    p.add_argument("--layer", metavar="L", help="only this layer")
    p.add_argument("--archived", action="store_true", help="also list archived memories")
    p.add_argument("--limit", type=bounded_int(1, MAX_LIST), default=50, metavar="N", help=f"at most N (1-{MAX_LIST}; default 50)")
    p.add_argument("--offset", type=bounded_int(0, 1_000_000), default=0, metavar="N", help="skip the first N")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = command(subs, "episodes", cmd_episodes, "episodic memories whose event time lies in [START, END], oldest first")
    p.add_argument("--start", metavar="TIME", help="from this time: ISO 8601 or seconds since the epoch")
    p.add_argument("--end", metavar="TIME", help="up to this time")
    p.add_argument("--limit", type=bounded_int(1, MAX_LIST), default=None, metavar="N", help=f"at most N (1-{MAX_LIST})")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = command(subs, "update", cmd_update, "edit a memory directly (the old version stays in its history)")
    p.add_argument("id", metavar="ID")
    p.add_argument("--text", metavar="TEXT", help="new content ('-' reads it from standard input)")
    p.add_argument("--meta", metavar="JSON", help="new metadata as a JSON object (replaces the old)")
    p.add_argument("--importance", metavar="X", type=float, help="new importance in [0, 1]")
    p.add_argument("--layer", metavar="L", help="move it to this layer")
    p.add_argument("--json", action="store_true", help="print the memory as JSON")

    p = command(subs, "revise", cmd_revise, "new information about a memory, gated by reconsolidation")
    p.add_argument("id", metavar="ID")
    p.add_argument("text", metavar="TEXT", help="the new information ('-' reads it from standard input)")
    p.add_argument("--correction", action="store_true", help="this corrects the memory rather than adding detail")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")

    p = command(subs, "rollback", cmd_rollback, "restore the content a memory had before its last update or revision")
    p.add_argument("id", metavar="ID")
    p.add_argument("--json", action="store_true", help="print the memory as JSON")


# --------------------------------------------------------------------------- helpers


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


def _text_arg(text: str, what: str) -> str:
    """A text argument; '-' reads it from standard input."""
    if text != "-":
        return text
    if sys.stdin is None or sys.stdin.isatty():
        raise ValidationError(f"{what} '-' reads standard input, but none is piped in")
    return sys.stdin.read().rstrip("\n")


# zenbrain.serialize (and numpy with it) is imported when a command runs, not when the
# parser is built, so that `zenbrain --help` stays fast.
def _item_dict(item: Any) -> dict[str, Any]:
    from ..serialize import item_dict

    return item_dict(item)


def _parse_time(text: str | None, what: str) -> float | None:
    from ..serialize import parse_time

    return parse_time(text, what=what) if text is not None else None


def print_items(items: Sequence[Any], as_json: bool, empty: str) -> None:
    if as_json:
        print_json([_item_dict(i) for i in items])
        return
    if not items:
        print(empty)
    for i in items:
        when = iso(i.event_time if i.event_time is not None else i.created_at)
        flag = " (archived)" if i.archived else ""
        print(f"{i.id}  {i.layer.value:<13} {when}  {one_line(i.content, 70)}{flag}")


# --------------------------------------------------------------------------- commands


def cmd_init(args: argparse.Namespace) -> int:
    """Create a store at a free path or in an empty file; show an existing store; refuse
    any other file (another application's database)."""
    from ..api import open_memory
    from ..storage.locations import is_postgres
    from ..storage.sqlite.opening import FileKind, check

    path = store_path(args)
    if args.read_only:
        raise ConfigError("init creates a store: it cannot run with --read-only")
    if is_postgres(path) and store_exists(path):
        return _show_existing_store(args, path)
    if not is_postgres(path) and check(path, create=True).kind is FileKind.STORE:
        return _show_existing_store(args, path)
    with open_memory(path, embedder=embedder_spec(args, path), config=make_config(args), create=True) as mem:
        s = mem.stats()
        print(f"created store at {path}")
        print(f"embedder: {mem.embedder.name} (dim {mem.embedder.dim}); memories: {s['memories']}")
    return EXIT_OK


def _show_existing_store(args: argparse.Namespace, path: str) -> int:
    """``init`` on a store that exists changes nothing: it says what is there."""
    name = store_embedder_name(path)
    spec = spec_for_name(name) if name else None
    print(f"store exists at {path}; nothing to do")
    if name is None or spec is None:
        print(f"embedder: {name or 'unknown'}")
        return EXIT_OK
    from ..api import open_memory

    with open_memory(path, embedder=spec, config=make_config(args)) as mem:
        print(f"embedder: {mem.embedder.name} (dim {mem.embedder.dim}); memories: {mem.stats()['memories']}")
    if args.embedder and spec_for_name(args.embedder) != spec and args.embedder != spec:
        print(f"(--embedder {args.embedder} not applied: the store keeps the embedder it was created with)")
    return EXIT_OK


def cmd_add(args: argparse.Namespace) -> int:
    meta = parse_meta(args.meta)
    event_time = _parse_time(args.event_time, "--event-time")
    scope = make_scope(args)
    with open_store(args, create=True) as mem:
        item = mem.store(
            _text_arg(args.text, "TEXT"), scope, kind=args.kind, layer=args.layer, metadata=meta,
            event_time=event_time, importance=args.importance,
            supersedes=[x.strip() for x in args.supersedes.split(",") if x.strip()] if args.supersedes else None,
        )
    if args.json:
        print_json(_item_dict(item))
    else:
        print(f"stored {item.id} layer={item.layer.value} kind={item.kind.value}")
    return EXIT_OK


def cmd_recall(args: argparse.Namespace) -> int:
    from ..serialize import hit_dict

    scope = make_scope(args)
    layers = [x.strip() for x in args.layers.split(",") if x.strip()] if args.layers else None
    with open_store(args) as mem:
        hits = mem.recall(args.query, scope, k=args.k, layers=layers, touch=not args.no_touch,
                          as_of=_parse_time(args.as_of, "--as-of"), include_superseded=args.include_superseded)
    if args.json:
        print_json({
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
    print(f"query type: {getattr(hits.query_type, 'value', hits.query_type)}")  # "general", not "QueryType.GENERAL"
    print(head)
    for rank, h in enumerate(hits, start=1):
        print(f"{rank:>4}  {h.score:>6.3f}  {h.item.layer.value:<{layer_w}}  {h.item.id:<{id_w}}  "
              f"{one_line(h.item.content, width)}")
        if args.why:
            print("        " + "  ".join(f"{k}={v:.3f}" for k, v in h.why.as_dict().items()))
    return EXIT_OK


def cmd_get(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        item = mem.get(args.id, make_scope(args))
    d = _item_dict(item)
    if args.json:
        print_json(d)
        return EXIT_OK
    for key, value in d.items():
        if key in ("created_at", "updated_at", "event_time", "last_access"):
            value = iso(value)
        elif key == "metadata":
            value = json.dumps(value, ensure_ascii=False)
        elif isinstance(value, float):
            value = f"{value:.4g}"
        print(f"{key:>13}: {value}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        items = mem.list_memories(make_scope(args), layer=args.layer, include_archived=args.archived,
                                  limit=args.offset + args.limit + 1)
    page = items[args.offset:]
    print_items(page[: args.limit], args.json, "no memories")
    if len(page) > args.limit and not args.json:
        print(f"(more: --offset {args.offset + args.limit})")
    return EXIT_OK


def cmd_episodes(args: argparse.Namespace) -> int:
    start = _parse_time(args.start, "--start")
    end = _parse_time(args.end, "--end")
    with open_store(args) as mem:
        items = mem.episodes(make_scope(args), start, end, limit=args.limit)
    print_items(items, args.json, "no episodes in that time range")
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
        print_json(_item_dict(item))
    else:
        print(f"updated {item.id} (version {item.version}); 'zenbrain rollback {item.id}' undoes it")
    return EXIT_OK


def cmd_revise(args: argparse.Namespace) -> int:
    text = _text_arg(args.text, "TEXT")
    with open_store(args) as mem:
        out = mem.revise(args.id, make_scope(args), text, correction=args.correction)
    new = out.get("new_memory")
    if args.json:
        print_json({"mode": out["mode"], "memory": _item_dict(out["memory"]),
                    "new_memory": _item_dict(new) if new is not None else None, "plan": out.get("plan")})
        return EXIT_OK
    reason = (out.get("plan") or {}).get("reason")
    print(f"{out['mode']}: {one_line(out['memory'].content, 100)}")
    if new is not None:
        print(f"new memory {new.id}: {one_line(new.content, 100)}")
    if reason:
        print(f"why: {reason}")
    return EXIT_OK


def cmd_rollback(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        item = mem.rollback(args.id, make_scope(args))
    if args.json:
        print_json(_item_dict(item))
    else:
        print(f"rolled back {item.id}: {one_line(item.content, 100)}")
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
        print_json([{"at": e.at, "action": e.action, "detail": e.detail} for e in events])
        return EXIT_OK
    for e in events:
        print(f"{iso(e.at)}  {e.action:<14} {json.dumps(e.detail, ensure_ascii=False, sort_keys=True)}")
    return EXIT_OK
