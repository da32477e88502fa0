"""Read-only views for the dashboard: who the caller is, a memory's forgetting curve, the
archive; and the dashboard's static files at /ui."""

# No "from __future__ import annotations": FastAPI reads the routes' annotations.
from importlib.resources import files
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Depends, FastAPI, Query
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from ...model import MemoryItem, Scope
from ...serialize import item_dict, json_safe
from ..api_context import ApiContext
from ..limits import MAX_CURVE_DAYS, MAX_CURVE_POINTS, MAX_LIST, MAX_OFFSET
from ..schemas import CurveOut, MemoryPage, ScopeOut
from .memories import MemoryId, page

DAY = 86400.0
FORGETTING = ("ebbinghaus_decay", "triple_copy")


def forgetting_curve(api: ApiContext, item: MemoryItem, scope: Scope, now: float, days: float,
                     points: int) -> list[dict[str, float]]:
    """Retrievability of ``item`` from now to ``days`` ahead, by the engine's own function
    (the one decay archives by), evaluated at each time without changing the memory."""
    offsets = [float(d) for d in np.linspace(0.0, days, points)]
    curve = api.memory.forgetting_curve(item.id, scope, [now + d * DAY for d in offsets])
    return [{"at": now + d * DAY, "days": d, "retrievability": r} for d, r in zip(offsets, curve)]


def router(api: ApiContext) -> APIRouter:
    r = APIRouter(tags=["dashboard"])
    S = Annotated[Scope, Depends(api.scope)]
    memory = api.memory

    @r.get("/v1/scope", response_model=ScopeOut, responses=api.errors())
    def whoami(sc: S) -> dict[str, Any]:
        """The scope this request acts in (with API keys: the key's user)."""
        return {"user_id": sc.user_id, "agent_id": sc.agent_id, "session_id": sc.session_id, "context": sc.context,
                "auth": api.auth}

    @r.get("/v1/memories/{memory_id}/retrievability", response_model=CurveOut, responses=api.errors(404))
    def curve(
        memory_id: MemoryId, sc: S,
        days: Annotated[float, Query(gt=0, le=MAX_CURVE_DAYS, description="Horizon in days.")] = 30.0,
        points: Annotated[int, Query(ge=2, le=MAX_CURVE_POINTS, description="Points on the curve.")] = 61,
    ) -> dict[str, Any]:
        """A memory's forgetting curve: the probability of recalling it from now on if it is
        not used, the thresholds at which decay queues it for review and archives it, and its
        next scheduled review. Its confidence is conf_alpha and conf_beta of the memory."""
        def read() -> tuple[MemoryItem, float, list[dict[str, float]]]:
            item = memory.get(memory_id, sc)
            now = memory.clock.now()
            return item, now, forgetting_curve(api, item, sc, now, days, points)

        item, now, pts = api.run(read, write=False, scope=sc)
        ebb = memory.config.params.ebbinghaus_decay
        due = item.state.get("due_at")
        return json_safe({
            "memory": item_dict(item), "now": now, "points": pts,
            "next_review": float(due) if isinstance(due, (int, float)) else None,
            "archive_threshold": ebb.archive_threshold, "review_threshold": ebb.review_threshold,
            "curves": [m for m in FORGETTING if memory.config.mechanisms.on(m)],
        })

    @r.get("/v1/archive", response_model=MemoryPage, responses=api.errors())
    def archive(
        sc: S,
        limit: Annotated[int, Query(ge=1, le=MAX_LIST, description=f"At most this many (1-{MAX_LIST}).")] = 50,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Skip this many first.")] = 0,
    ) -> dict[str, Any]:
        """Memories archived by decay (restore brings one back), a page at a time."""
        items = api.call(memory.list_memories, sc, include_archived=True)
        return page([i for i in items if i.archived], offset, limit)

    return r


def mount_static(app: FastAPI) -> None:
    """The dashboard's files at /ui (every asset ships in the package: it works offline)."""
    directory = files("zenbrain.server") / "dashboard"
    app.mount("/ui", StaticFiles(directory=str(directory), html=True), name="dashboard")

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/ui/")
