"""Feedback on memories: evidence, outcomes, spaced-repetition reviews and the review queue."""

# No "from __future__ import annotations": FastAPI reads the routes' annotations.
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from ...model import Scope
from ...serialize import item_dict
from ..api_context import ApiContext
from ..limits import MAX_LIST
from ..schemas import (
    EvidenceRequest,
    MemoryList,
    MemoryOut,
    OutcomeRequest,
    ReviewsRequest,
)
from .memories import MemoryId


def router(api: ApiContext) -> APIRouter:
    r = APIRouter(tags=["feedback"])
    S = Annotated[Scope, Depends(api.scope)]
    memory, call = api.memory, api.call

    @r.post("/v1/memories/{memory_id}/evidence", response_model=MemoryOut, **api.write(404, body=True))
    def evidence(memory_id: MemoryId, body: EvidenceRequest, sc: S) -> dict[str, Any]:
        """Evidence for or against a memory being true (updates its confidence)."""
        return item_dict(call(memory.record_evidence, memory_id, sc, supports=body.supports, strength=body.strength))

    @r.post("/v1/memories/{memory_id}/outcome", response_model=MemoryOut, **api.write(404, body=True))
    def outcome(memory_id: MemoryId, body: OutcomeRequest, sc: S) -> dict[str, Any]:
        """Report that a memory (a procedure, say) was used, successfully or not."""
        return item_dict(call(memory.record_outcome, memory_id, sc, body.success))

    @r.post("/v1/reviews", response_model=MemoryList, **api.write(404, body=True))
    def reviews(body: ReviewsRequest, sc: S) -> dict[str, Any]:
        """Spaced-repetition reviews of many memories at once (each memory once per call)."""
        items = call(memory.review_many, [(rv.id, rv.grade) for rv in body.reviews], sc)
        return {"memories": [item_dict(i) for i in items]}

    @r.get("/v1/review-queue", response_model=MemoryList, responses=api.errors())
    def review_queue(
        sc: S,
        limit: Annotated[int, Query(ge=1, le=MAX_LIST, description=f"At most this many (1-{MAX_LIST}).")] = 20,
    ) -> dict[str, Any]:
        """Memories due for review, most overdue first, then knowledge gaps."""
        return {"memories": [item_dict(i) for i in call(memory.review_queue, sc, limit=limit)]}

    return r
