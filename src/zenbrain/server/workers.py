"""Serve one store from several processes.

A REST server process runs Python, so it uses one core at a time for its own work however
many threads it has. ``serve(..., workers=N)`` starts N uvicorn worker processes on one
listening socket; each opens the store file itself (SQLite in WAL mode: their reads run in
parallel, their writes one at a time, and each process's vector index follows the others'
writes through the store's change log) and admits requests on its own (``guard``).
``workers=1`` serves in this process.

The workers learn their configuration from the environment variable ``ZENBRAIN_SERVE``
(JSON), which ``serve`` sets before uvicorn starts them::

    python -m zenbrain.server.workers --path memory.db --embedder minilm-onnx --workers 2 --port 8765
"""

from __future__ import annotations

import argparse
import gc
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any

from fastapi import FastAPI

from ..api import open_memory
from ..config import Config
from ..errors import ConfigError
from ..registry import Mechanisms
from .activity import ActivityLog, activity_path
from .guard import Limits
from .rest import create_app

ENV = "ZENBRAIN_SERVE"
WORKER_HEALTHCHECK_S = 60  # seconds a worker may take to answer uvicorn's health check
GC_YOUNG_THRESHOLD = 20_000  # allocations between young-generation collections in a worker (Python: 700)


def settle_heap() -> None:
    """Once a worker has started: the objects that live as long as it does (modules, the
    store and its indexes) leave the cyclic collector's view, and a request's own
    short-lived objects no longer set off a collection every 700 allocations. At Python's
    defaults a recall on the REST load test's store ran about one young collection of its
    own working set (0.3-0.6 ms of its 8 ms of CPU) and now and then a full one over every
    object (0.1-0.7 ms); its objects die by reference counting anyway (a run of 200 recalls
    left too few to reach this threshold once)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)


def app_from_environment() -> FastAPI:
    """The app of one worker process (a uvicorn factory): opens the store named in ``ZENBRAIN_SERVE``
    and closes it when the worker stops."""
    cfg = json.loads(os.environ[ENV])
    config = Config(mechanisms=Mechanisms(disabled=frozenset(cfg.get("off", ()))))
    read_only = bool(cfg.get("read_only", False))
    memory = open_memory(cfg["path"], embedder=cfg["embedder"], config=config, durability=cfg.get("durability", "full"),
                         create=False if read_only else None, read_only=read_only)
    activity = ActivityLog(None if read_only else activity_path(cfg["path"]))  # read-only: kept in memory
    app = create_app(memory, api_keys=cfg.get("api_keys"), activity=activity, limits=Limits(**cfg.get("limits", {})))
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        try:
            async with inner(a) as state:
                yield state
        finally:
            activity.close()
            memory.close()

    app.router.lifespan_context = lifespan
    settle_heap()
    return app


def serve(path: str, *, embedder: str, host: str = "127.0.0.1", port: int = 8765, workers: int = 1,
          api_keys: Mapping[str, str] | None = None, limits: Limits | None = None, log_level: str = "warning",
          durability: str = "full", off: Sequence[str] = (), read_only: bool = False, insecure: bool = False) -> None:
    """Serve the store at ``path`` over REST from ``workers`` processes until stopped.
    Without ``api_keys`` only a loopback ``host`` is allowed (anyone reaching the server
    could act as any user), unless ``insecure``. ``off``: mechanisms switched off by name.
    ``read_only``: every worker opens the store read-only (writes are answered 403,
    nothing is written)."""
    import ipaddress

    import uvicorn

    if not api_keys and not insecure:
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ConfigError(f"refusing to serve on {host} without API keys: bind 127.0.0.1, give api_keys "
                              "or pass insecure=True")

    os.environ[ENV] = json.dumps({"path": str(path), "embedder": embedder, "api_keys": dict(api_keys or {}) or None,
                                  "limits": asdict(limits or Limits()), "durability": durability,
                                  "off": sorted(off), "read_only": bool(read_only)})
    # A worker answers uvicorn's health check from a thread; importing the library and an
    # embedder holds the GIL for seconds on a busy machine, longer than uvicorn's default
    # 5 s after which it kills and restarts the worker (dropping its connections).
    uvicorn.run("zenbrain.server.workers:app_from_environment", factory=True, host=host, port=port, workers=max(1, int(workers)),
                log_level=log_level, timeout_graceful_shutdown=10, timeout_keep_alive=30,
                timeout_worker_healthcheck=WORKER_HEALTHCHECK_S)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Serve a zenbrain store over REST from several processes.")
    ap.add_argument("--path", required=True)
    ap.add_argument("--embedder", default="minilm-onnx")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--max-active", type=int, default=Limits.max_active)
    ap.add_argument("--max-queued", type=int, default=Limits.max_queued)
    ap.add_argument("--max-queue-wait", type=float, default=Limits.max_queue_wait_s)
    ap.add_argument("--durability", choices=["full", "process"], default="full")
    ap.add_argument("--read-only", action="store_true")
    args = ap.parse_args(argv)
    serve(args.path, embedder=args.embedder, host=args.host, port=args.port, workers=args.workers,
          limits=Limits(max_active=args.max_active, max_queued=args.max_queued, max_queue_wait_s=args.max_queue_wait),
          durability=args.durability, read_only=args.read_only)


if __name__ == "__main__":
    main()
