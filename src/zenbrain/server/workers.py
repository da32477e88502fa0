"""Serving the REST API from several worker processes (``zenbrain serve --workers N``).

uvicorn starts each worker in a fresh interpreter and builds its app by calling
``app_from_env``; the serving command hands the store location, embedder, switched-off
mechanisms and API keys over in ``$ZENBRAIN_SERVE_SPEC`` (JSON). Every worker opens its
own handle on the store: with PostgreSQL they share one database (writers of one user and
agent take turns, others run in parallel); with SQLite they share one file (one writer at
a time).
"""

from __future__ import annotations

import atexit
import json
import os
from typing import Any

from fastapi import FastAPI

SPEC_ENV = "ZENBRAIN_SERVE_SPEC"


def spec_env(*, path: str, embedder: str, off: list[str], api_keys: dict[str, str] | None,
             activity: str | None) -> dict[str, str]:
    """The environment entry that tells workers what to serve."""
    return {SPEC_ENV: json.dumps({"path": path, "embedder": embedder, "off": sorted(off), "api_keys": api_keys,
                                  "activity": activity})}


def app_from_env() -> FastAPI:
    """The app of one worker process (a uvicorn factory)."""
    from ..api import open_memory
    from ..config import Config
    from ..registry import Mechanisms
    from .activity import ActivityLog
    from .rest import create_app

    spec: dict[str, Any] = json.loads(os.environ[SPEC_ENV])
    memory = open_memory(spec["path"], embedder=spec["embedder"],
                         config=Config(mechanisms=Mechanisms(disabled=frozenset(spec["off"]))))
    activity = ActivityLog(spec.get("activity"))

    def close() -> None:
        memory.close()
        activity.close()

    app = create_app(memory, api_keys=spec.get("api_keys"), activity=activity)
    app.router.on_shutdown.append(close)
    atexit.register(close)
    return app
