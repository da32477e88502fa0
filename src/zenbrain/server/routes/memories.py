"""Memories: store, list (paged), get, update, revise, rollback, restore, forget, history."""

# No "from __future__ import annotations": FastAPI reads the routes' annotations.
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Response

from ...errors import ErasurePendingError
from ...model import Layer, Scope
from ...serialize import event_dict, item_dict, json_safe
from ..api_context import ApiContext
from ..limits import MAX_ID_CHARS, MAX_LIST, MAX_OFFSET
from ..schemas import (
    BatchRequest,
    HistoryOut,
    MemoryList,
    MemoryOut,
    MemoryPage,
    MemoryRecord,
    ReceiptOut,
    ReviseOut,
    ReviseRequest,
    UpdateRequest,
)

MemoryId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS, description="A memory id.")]
Limit = Annotated[int | None, Query(ge=1, le=MAX_LIST, description=f"At most this many (1-{MAX_LIST}; default: all).")]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Skip this many first (paging).")]


def page(items: list[Any], offset: int, limit: int | None) -> dict[str, Any]:
    """A page of ``items`` (fetched with ``offset + limit + 1`` rows): the slice and whether more exist."""
    rows = items[offset:]
    more = limit is not None and len(rows) > limit
    return {"memories": [item_dict(i) for i in rows[:limit]], "offset": offset, "has_more": more}


def fetch_limit(offset: int, limit: int | None) -> int | None:
    return None if limit is None else offset + limit + 1


def router(api: ApiContext) -> APIRouter:
    r = APIRouter(tags=["memories"])
    S = Annotated[Scope, Depends(api.scope)]
    memory, call = api.memory, api.call

    @r.post("/v1/memories", status_code=201, response_model=MemoryOut, **api.write(body=True))
    def store(body: MemoryRecord, sc: S) -> dict[str, Any]:
        """Store one memory; returns it as stored (id, layer, kind, ...)."""
        return item_dict(call(memory.store, body.content, sc, kind=body.kind, layer=body.layer, metadata=body.metadata,
                              event_time=body.event_time, importance=body.importance, supersedes=body.supersedes))

    @r.post("/v1/memories/batch", status_code=201, response_model=MemoryList, **api.write(body=True))
    def store_many(body: BatchRequest, sc: S) -> dict[str, Any]:
        """Store many memories in one transaction with one embedding batch: all or none."""
        items = call(memory.store_many, [rec.model_dump() for rec in body.memories], sc)
        return {"memories": [item_dict(i) for i in items]}

    @r.get("/v1/memories", response_model=MemoryPage, responses=api.errors())
    def list_memories(
        sc: S,
        layer: Annotated[Layer | None, Query(description="Only this layer.")] = None,
        include_archived: Annotated[bool, Query(description="Also list archived memories.")] = False,
        limit: Limit = None,
        offset: Offset = 0,
    ) -> dict[str, Any]:
        """The scope's memories, a page at a time (``has_more`` says whether another follows)."""
        items = call(memory.list_memories, sc, layer=layer, include_archived=include_archived,
                     limit=fetch_limit(offset, limit))
        return page(items, offset, limit)

    @r.get("/v1/memories/{memory_id}", response_model=MemoryOut, responses=api.errors(404))
    def get(memory_id: MemoryId, sc: S) -> dict[str, Any]:
        """One memory."""
        return item_dict(call(memory.get, memory_id, sc))

    @r.patch("/v1/memories/{memory_id}", response_model=MemoryOut, **api.write(404, body=True))
    def update(memory_id: MemoryId, body: UpdateRequest, sc: S) -> dict[str, Any]:
        """Edit a memory; the previous version is kept in its history."""
        return item_dict(call(memory.update, memory_id, sc, content=body.content, metadata=body.metadata,
                              importance=body.importance, layer=body.layer))

    @r.delete("/v1/memories/{memory_id}", response_model=ReceiptOut, **api.write(404, pending=ReceiptOut))
    def forget(memory_id: MemoryId, sc: S, response: Response) -> dict[str, Any]:
        """Erase a memory and what was derived from it: nothing stays readable. Returns the
        erasure receipt (what was removed). 202 when the erasure committed but another
        reader of the file keeps the erased text on disk for now (``scrubbed`` false): the
        store scrubs it at its next write."""
        try:
            receipt = call(memory.forget, memory_id, sc)
        except ErasurePendingError as exc:
            response.status_code = 202
            receipt = exc.receipt
        api.activity.forget_memories(sc.user_id, sc.agent_id, [*receipt.memory_ids, *receipt.derived_ids])
        return receipt.as_dict()

    @r.post("/v1/memories/{memory_id}/revise", response_model=ReviseOut, **api.write(404, body=True))
    def revise(memory_id: MemoryId, body: ReviseRequest, sc: S) -> dict[str, Any]:
        """New information about a memory, gated by reconsolidation. Returns the mode (confirmed,
        selective_edit, integration, new_episode, blocked, protected, or overwrite with
        reconsolidation off), the memory, the new memory if one was created, and the plan."""
        out = call(memory.revise, memory_id, sc, body.content, correction=body.correction)
        new = out.get("new_memory")
        return json_safe({"mode": out["mode"], "memory": item_dict(out["memory"]),
                          "new_memory": item_dict(new) if new is not None else None, "plan": out.get("plan")})

    @r.post("/v1/memories/{memory_id}/rollback", response_model=MemoryOut, **api.write(404))
    def rollback(memory_id: MemoryId, sc: S) -> dict[str, Any]:
        """Restore the content the memory had before its last update or revision (404 when none)."""
        return item_dict(call(memory.rollback, memory_id, sc))

    @r.post("/v1/memories/{memory_id}/restore", response_model=MemoryOut, **api.write(404))
    def restore(memory_id: MemoryId, sc: S) -> dict[str, Any]:
        """Bring a memory archived by decay back into recall."""
        return item_dict(call(memory.restore, memory_id, sc))

    @r.get("/v1/memories/{memory_id}/history", response_model=HistoryOut, responses=api.errors(404))
    def history(memory_id: MemoryId, sc: S) -> dict[str, Any]:
        """The change history of a memory, oldest first."""
        return {"history": [event_dict(e) for e in call(memory.history, memory_id, sc)]}

    return r
