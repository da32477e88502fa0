"""Recall: one query, a batch of queries, episodes in a time range, a prompt context."""

# No "from __future__ import annotations": FastAPI reads the routes' annotations.
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response

from ...model import Scope
from ...serialize import hit_dict, item_dict, json_safe
from ..api_context import ApiContext
from ..limits import MAX_LIST
from ..schemas import (
    MemoryList,
    PromptOut,
    PromptRequest,
    QueryTime,
    RecallBatchOut,
    RecallBatchRequest,
    RecallOut,
    RecallRequest,
)

TimeQuery = Annotated[QueryTime | None, Query(description="Seconds since the epoch or an RFC 3339 date-time "
                                                         "(without a zone: UTC).")]


def recall_dict(query: str, hits: Any) -> dict[str, Any]:
    """A recall result: hits with their score breakdown, the core memories, and the cue
    intentions this recall fired."""
    # hit_dict and item_dict are plain JSON values already: only the rest is made so (a
    # second walk over ten hits and their score breakdowns was 60 % of this function).
    return {
        "query": query,
        "query_type": json_safe(hits.query_type),
        "hits": [hit_dict(r, h) for r, h in enumerate(hits, start=1)],
        "core": [item_dict(i) for i in hits.core],
        "intentions": json_safe(hits.info.get("intentions") or []),
    }


def plain_json(value: dict[str, Any]) -> Response:
    """A response of plain JSON values (``recall_dict``'s), written by orjson. Returned as a
    Response, it skips FastAPI's validation against the route's model and its encoding
    with the standard library's json (0.2-0.3 ms of a recall's ~9 ms of CPU in the server);
    the model still documents the answer, and tests/server check answers against it."""
    return Response(orjson.dumps(value), media_type="application/json")


def router(api: ApiContext) -> APIRouter:
    r = APIRouter(tags=["recall"])
    S = Annotated[Scope, Depends(api.scope)]
    memory, call = api.memory, api.call

    @r.post("/v1/recall", response_model=RecallOut, responses=api.errors(body=True))
    def recall(body: RecallRequest, sc: S) -> Response:
        """The top-k memories for a query, each with its score breakdown (`why`), the query
        type recall understood, and the scope's core memories."""
        hits = call(memory.recall, body.query, sc, body.k, layers=body.layers, time_range=body.time_range,
                    include_archived=body.include_archived, touch=body.touch,
                    as_of=body.as_of, include_superseded=body.include_superseded)
        return plain_json(recall_dict(body.query, hits))

    @r.post("/v1/recall/batch", response_model=RecallBatchOut, responses=api.errors(body=True))
    def recall_batch(body: RecallBatchRequest, sc: S) -> dict[str, Any]:
        """Recall for many queries, in order; one result per query, as from /v1/recall. Each
        query runs as its own operation, so a batch never holds other requests back for
        long; the batch stops (503) if its deadline passes before every query ran."""
        memory.prepare_queries(body.queries)  # one embedding batch, before the store is used
        results = [call(memory.recall, q, sc, body.k, layers=body.layers, time_range=body.time_range,
                        include_archived=body.include_archived, touch=body.touch,
                        as_of=body.as_of, include_superseded=body.include_superseded) for q in body.queries]
        return {"results": [recall_dict(q, res) for q, res in zip(body.queries, results)]}

    @r.get("/v1/episodes", response_model=MemoryList, responses=api.errors())
    def episodes(
        sc: S,
        start: TimeQuery = None,
        end: TimeQuery = None,
        limit: Annotated[int | None, Query(ge=1, le=MAX_LIST, description=f"At most this many (1-{MAX_LIST}).")] = None,
    ) -> dict[str, Any]:
        """Episodic memories whose event time lies in [start, end], oldest first."""
        items = call(memory.episodes, sc, start, end, limit=limit)
        return {"memories": [item_dict(i) for i in items]}

    @r.post("/v1/prompt", response_model=PromptOut, responses=api.errors(body=True))
    def context(body: PromptRequest, sc: S) -> dict[str, Any]:
        """A token-budgeted context for an LLM prompt."""
        return json_safe(call(memory.assemble_prompt, body.query, sc, budget_tokens=body.budget_tokens, k=body.k))

    return r
