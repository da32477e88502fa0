"""Server commands: serve (REST over HTTP, from one or several processes) and mcp (MCP over stdio)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..cli_support import (
    EXIT_OK,
    bounded_float,
    bounded_int,
    command,
    embedder_spec,
    make_scope,
    off_names,
    open_store,
    split_list,
    status,
    store_path,
)
from ..errors import ConfigError
from ..server import admission

API_KEYS_ENV = "ZENBRAIN_API_KEYS"
MAX_WORKERS = 64
# The largest load-shedding settings accepted (the defaults: server.admission).
MAX_ACTIVE = 1024
MAX_QUEUED = 100_000
MAX_QUEUE_WAIT_S = 3600.0


def register(subs: Any) -> None:
    p = command(subs, "serve", cmd_serve, "serve the memory store over HTTP: a REST API, OpenAPI docs at /docs",
                scope=False)
    p.add_argument("--host", default="127.0.0.1", metavar="H", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, metavar="N", help="port (default 8765)")
    p.add_argument("--api-keys", metavar="FILE",
                   help=f'JSON object of API key -> user id, e.g. {{"k1": "alice"}} (default: ${API_KEYS_ENV} '
                        "as key1:alice,key2:bob; none: the API is open)")
    p.add_argument("--insecure", action="store_true",
                   help="allow a non-loopback host without API keys")
    p.add_argument("--workers", type=bounded_int(1, MAX_WORKERS), default=1, metavar="N",
                   help="worker processes sharing the port and the store (default 1: this process); "
                        "each uses a core for its Python work; SQLite runs their reads in parallel and "
                        "their writes one at a time, PostgreSQL (--path postgresql://...) the writes of "
                        "different users in parallel too")
    p.add_argument("--durability", choices=("full", "process"), default="full",
                   help="full (default): every commit is flushed to disk and survives a power cut; "
                        "process: flushed at checkpoints only, a commit survives a crash of the server "
                        "but not of the machine (faster writes)")
    shed = p.add_argument_group("load shedding (each server process; see docs/reliability.md)")
    shed.add_argument("--max-active", type=bounded_int(1, MAX_ACTIVE), default=admission.MAX_ACTIVE, metavar="N",
                      help=f"requests under /v1 running at once (default {admission.MAX_ACTIVE})")
    shed.add_argument("--max-queued", type=bounded_int(0, MAX_QUEUED), default=admission.MAX_QUEUED, metavar="N",
                      help="requests under /v1 waiting to run; any more are answered 503 with Retry-After at once "
                           f"(default {admission.MAX_QUEUED})")
    shed.add_argument("--max-queue-wait", type=bounded_float(0.0, MAX_QUEUE_WAIT_S), default=admission.MAX_QUEUE_WAIT_S,
                      metavar="S", help="seconds a request may wait to run before it is answered 503 "
                                        f"(default {admission.MAX_QUEUE_WAIT_S:g})")

    command(subs, "mcp", cmd_mcp,
            "serve this scope's memory to MCP clients over stdio (needs: pip install \"zenbrain[server]\")")


def load_api_keys(file: str | None) -> dict[str, str] | None:
    """API key -> user id from a JSON file, else from ``$ZENBRAIN_API_KEYS`` (``key1:alice,key2:bob``),
    else None (no authentication)."""
    from ..model import Scope

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
        for pair in split_list(env):
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

        from ..server.activity import ActivityLog, activity_path
        from ..server.guard import Limits
        from ..server.rest import create_app
        from ..server.workers import serve, settle_heap
    except ImportError as exc:
        raise ConfigError(f'the REST server needs FastAPI and uvicorn ({exc}): pip install "zenbrain[server]"') from None
    path = store_path(args)
    auth = f"API keys for {len(set(keys.values()))} user(s)" if keys else "no API keys: open to anyone who can reach it"
    where = (f"zenbrain REST API on http://{args.host}:{args.port} (dashboard at /ui, docs at /docs); "
             f"store {path}; durability {args.durability}; {auth}")
    if args.read_only:
        where += "; read-only"
    limits = Limits(max_active=args.max_active, max_queued=args.max_queued, max_queue_wait_s=args.max_queue_wait)
    where += (f"; requests under /v1: {limits.max_active} at once, {limits.max_queued} queued for at most "
              f"{limits.max_queue_wait_s:g} s")
    if args.workers > 1:
        spec = embedder_spec(args, path)
        # Opened once here: a new store is created (and an old one checked) before any worker starts.
        with open_store(args, create=True, durability=args.durability):
            pass
        status(f"{where}; {args.workers} worker processes")
        serve(path, embedder=spec, host=args.host, port=args.port, workers=args.workers, api_keys=keys,
              limits=limits, log_level="info", durability=args.durability, off=sorted(off_names(args)),
              read_only=args.read_only, insecure=args.insecure)
        return EXIT_OK
    activity = ActivityLog(None if args.read_only else activity_path(path))  # read-only: kept in memory
    with open_store(args, create=True, durability=args.durability) as mem:
        app = create_app(mem, api_keys=keys, activity=activity, limits=limits)
        settle_heap()
        status(where)
        try:
            uvicorn.run(app, host=args.host, port=args.port, log_level="info")
        finally:
            activity.close()
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve one scope over MCP on stdin/stdout; stdout carries protocol messages only."""
    scope = make_scope(args)
    with _StdoutToStderr():
        try:
            from ..server.mcp_server import create_server
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
