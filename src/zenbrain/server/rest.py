"""The REST API: ``create_app(memory)`` returns a FastAPI application over one coordinator.

Every route is one ``MemoryCoordinator`` call. The server parses JSON and query
parameters, authenticates, and maps the library's exceptions to HTTP statuses; every
check of content, numbers, layers and scopes is the library's own.

Scope: every route under ``/v1`` takes the scope as query parameters ``user_id``,
``agent_id``, ``session_id`` and ``context`` (POST, PATCH and DELETE routes too; bodies
carry the operation's data only).

Authentication: with ``api_keys`` (key -> user id) every ``/v1`` route needs
``Authorization: Bearer <key>``; the key decides the user. A request without ``user_id``
acts as the key's user, one naming another user gets 403, a missing or unknown key 401.
Without ``api_keys`` the server is open to anyone who can reach it: bind it to 127.0.0.1
only (``zenbrain serve`` refuses other hosts without keys unless told ``--insecure``).

Errors are JSON ``{"error": "<exception class>", "message": "..."}``: 400 for
ValidationError and ConfigError, 404 for NotFoundError, 503 for StorageError and
ProviderError, 401/403 for authentication; malformed requests get FastAPI's 422 detail.

Concurrency: FastAPI runs these (synchronous) routes in a thread pool. The store is
thread-safe call by call, but a coordinator operation is a sequence of reads and writes
(recall's access bookkeeping, an update's read-modify-write), so the app runs one
coordinator call at a time. SQLite has a single writer anyway.
"""

# No "from __future__ import annotations": FastAPI reads the routes' annotations, which
# name the local dependency S.
import hmac
import threading
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from .. import __version__
from ..coordinator import MemoryCoordinator
from ..errors import (
    ConfigError,
    NotFoundError,
    ProviderError,
    StorageError,
    ValidationError,
    ZenBrainError,
)
from ..model import Scope
from ..serialize import (
    edge_dict,
    event_dict,
    hit_dict,
    item_dict,
    json_safe,
    optional_time,
)

T = TypeVar("T")

_STATUS: tuple[tuple[type[ZenBrainError], int], ...] = (
    (ValidationError, 400),
    (ConfigError, 400),
    (NotFoundError, 404),
    (StorageError, 503),
    (ProviderError, 503),
)


class AuthError(Exception):
    """A request without a valid key (401) or acting for another user (403)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


# --------------------------------------------------------------------------- request bodies


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryRecord(_Body):
    content: str = Field(description="The memory's text (non-empty).")
    kind: str | None = Field(None, description="fact, episode, skill, identity, preference, note or schema; "
                                               "classified from the text when omitted.")
    layer: str | None = Field(None, description="Force a layer: working, short_term, episodic, semantic, procedural, "
                                                "core or cross_context; routed from the kind when omitted.")
    metadata: dict[str, Any] | None = Field(None, description="Any JSON object kept with the memory.")
    event_time: float | None = Field(None, description="When it happened, in seconds since the Unix epoch.")
    importance: float | None = Field(None, description="Importance in [0, 1] (default 0.5).")


class BatchRequest(_Body):
    memories: list[MemoryRecord] = Field(description="The memories to store, in one transaction: all or none.")


class UpdateRequest(_Body):
    content: str | None = Field(None, description="New text; the previous version stays in the history.")
    metadata: dict[str, Any] | None = Field(None, description="New metadata (replaces the old object).")
    importance: float | None = Field(None, description="New importance in [0, 1].")
    layer: str | None = Field(None, description="Move the memory to this layer.")


class _RecallOptions(_Body):
    k: int = Field(10, description="Number of hits per query (a positive integer).")
    layers: list[str] | None = Field(None, description="Only these layers (default: all).")
    time_range: tuple[float | None, float | None] | None = Field(
        None, description="[start, end] in seconds since the epoch on the event time; either may be null.")
    include_archived: bool = Field(False, description="Also search memories archived by decay.")
    touch: bool = Field(True, description="false makes recall read-only: no access counts, no learning.")


class RecallRequest(_RecallOptions):
    query: str = Field(description="What to recall: a question or a cue.")


class RecallBatchRequest(_RecallOptions):
    queries: list[str] = Field(description="The queries, answered in order with their side effects in one transaction.")


class ReviseRequest(_Body):
    content: str = Field(description="The new information about the memory.")
    correction: bool = Field(False, description="true: an explicit correction of the memory, not just new detail.")


class IntentionRequest(_Body):
    action: str = Field(description="What to do (or remind of) when the intention fires.")
    cue: str | None = Field(None, description="Fire when a recall's query brings this up.")
    due_at: float | str | None = Field(None, description="Fire at this time: seconds since the epoch or ISO 8601 "
                                                         "(a time without zone is UTC). A cue or a due time is needed.")
    repeat_every_s: float | None = Field(None, description="Fire again every this many seconds after the due time.")


class GoalRequest(_Body):
    goal: str = Field(description="The current goal; memories aligned with it get priority.")


class RelationRequest(_Body):
    src: str = Field(description="Id of the source memory.")
    dst: str = Field(description="Id of the target memory.")
    relation: str = Field(description="supports, contradicts, causes, requires, part_of, similar_to, "
                                      "or a name of your own (a plain link).")
    weight: float = Field(1.0, description="Edge weight; relating the same triple again sets it.")


class EvidenceRequest(_Body):
    supports: bool = Field(description="true: evidence that the memory is true; false: against it.")
    strength: float = Field(1.0, description="Worth of the evidence in pseudo-observations (e.g. a source's reliability).")


class OutcomeRequest(_Body):
    success: bool = Field(description="Whether using the memory (a procedure, say) succeeded.")


class Review(_Body):
    id: str = Field(description="Id of the reviewed memory.")
    grade: int | str = Field(description="1-4 or again, hard, good, easy.")


class ReviewsRequest(_Body):
    reviews: list[Review] = Field(description="One review per memory; all are checked before any is written.")


class ContextRequest(_Body):
    query: str = Field(description="The prompt's topic: what the context should answer.")
    budget_tokens: int = Field(1200, description="Token budget of the assembled context.")
    k: int = Field(10, description="Memories recalled to choose from.")


# --------------------------------------------------------------------------- JSON out


def _recall_dict(query: str, hits: Any) -> dict[str, Any]:
    """A recall result: hits with their score breakdown, the core memories, and the cue
    intentions this recall fired."""
    return json_safe({
        "query": query,
        "query_type": hits.query_type,
        "hits": [hit_dict(r, h) for r, h in enumerate(hits, start=1)],
        "core": [item_dict(i) for i in hits.core],
        "intentions": hits.info.get("intentions") or [],
    })


# --------------------------------------------------------------------------- the app


def _check_keys(api_keys: Mapping[str, str]) -> dict[str, str]:
    keys: dict[str, str] = {}
    for key, user in api_keys.items():
        if not isinstance(key, str) or not key:
            raise ConfigError("API keys must be non-empty strings")
        Scope(user)  # a malformed user id is refused here, not at the first request
        keys[key] = user
    return keys


def create_app(memory: MemoryCoordinator, *, api_keys: Mapping[str, str] | None = None) -> FastAPI:
    """A FastAPI app serving ``memory``. ``api_keys`` maps each bearer key to the user it
    acts for; None leaves the API open (bind it to 127.0.0.1 only). The caller keeps
    ownership of ``memory`` and closes it after the server stops."""
    keys = _check_keys(api_keys) if api_keys is not None else None
    lock = threading.Lock()
    bearer = HTTPBearer(auto_error=False, description="An API key given to the server (key -> user).")

    app = FastAPI(
        title="zenbrain",
        version=__version__,
        description="Long-term memory for LLM agents. Every /v1 route takes the scope as query parameters "
                    "(user_id, agent_id, session_id, context)"
                    + (" and needs `Authorization: Bearer <key>`; the key decides the user." if keys is not None
                       else "; this server has no API keys: anyone who reaches it acts as any user."),
    )

    def call(fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        with lock:
            return fn(*args, **kw)

    # -- errors ----------------------------------------------------------------------------
    @app.exception_handler(ZenBrainError)
    async def _library_error(request: Request, exc: ZenBrainError) -> JSONResponse:
        status = next((code for cls, code in _STATUS if isinstance(exc, cls)), 500)
        return JSONResponse({"error": type(exc).__name__, "message": str(exc)}, status_code=status)

    @app.exception_handler(AuthError)
    async def _auth_error(request: Request, exc: AuthError) -> JSONResponse:
        name = "Unauthorized" if exc.status == 401 else "Forbidden"
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse({"error": name, "message": exc.message}, status_code=exc.status, headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": "InternalServerError", "message": f"unexpected {type(exc).__name__}"},
                            status_code=500)

    # -- scope and authentication ----------------------------------------------------------
    def scope(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        user_id: Annotated[str | None, Query(description="The user (default: the API key's user, else 'default').")] = None,
        agent_id: Annotated[str, Query(description="The agent; users and agents are isolated tenants.")] = "default",
        session_id: Annotated[str | None, Query(description="The session (binds working and short-term memory).")] = None,
        context: Annotated[str, Query(description="The context (personal, work, ...).")] = "default",
    ) -> Scope:
        if keys is not None:
            if credentials is None:
                raise AuthError(401, "missing API key: send 'Authorization: Bearer <key>'")
            owner = next((u for k, u in keys.items()
                          if hmac.compare_digest(k.encode(), credentials.credentials.encode())), None)
            if owner is None:
                raise AuthError(401, "unknown API key")
            if user_id is not None and user_id != owner:
                raise AuthError(403, f"this API key acts for user {owner!r}, not {user_id!r}")
            user_id = owner
        return Scope(user_id or "default", agent_id, session_id, context)

    S = Annotated[Scope, Depends(scope)]

    # -- routes ----------------------------------------------------------------------------
    @app.get("/health", tags=["server"])
    def health() -> dict[str, Any]:
        """Liveness: the store answers. The memory count is shown only on an open server."""
        out: dict[str, Any] = {"status": "ok", "version": __version__}
        s = memory.stats()  # the store's own lock suffices: no read-modify-write here
        if keys is None:
            out["memories"] = s["memories"]
        return out

    @app.post("/v1/memories", status_code=201, tags=["memories"])
    def store(body: MemoryRecord, sc: S) -> dict[str, Any]:
        """Store one memory; returns it as stored (id, layer, kind, ...)."""
        return item_dict(call(memory.store, body.content, sc, kind=body.kind, layer=body.layer, metadata=body.metadata,
                          event_time=body.event_time, importance=body.importance))

    @app.post("/v1/memories/batch", status_code=201, tags=["memories"])
    def store_many(body: BatchRequest, sc: S) -> dict[str, Any]:
        """Store many memories in one transaction with one embedding batch."""
        items = call(memory.store_many, [r.model_dump() for r in body.memories], sc)
        return {"memories": [item_dict(i) for i in items]}

    @app.get("/v1/memories", tags=["memories"])
    def list_memories(
        sc: S,
        layer: Annotated[str | None, Query(description="Only this layer.")] = None,
        include_archived: Annotated[bool, Query(description="Also list archived memories.")] = False,
        limit: Annotated[int | None, Query(description="At most this many (a positive integer).")] = None,
    ) -> dict[str, Any]:
        """The scope's memories."""
        items = call(memory.list_memories, sc, layer=layer, include_archived=include_archived, limit=limit)
        return {"memories": [item_dict(i) for i in items]}

    @app.get("/v1/memories/{memory_id}", tags=["memories"])
    def get(memory_id: str, sc: S) -> dict[str, Any]:
        """One memory."""
        return item_dict(call(memory.get, memory_id, sc))

    @app.patch("/v1/memories/{memory_id}", tags=["memories"])
    def update(memory_id: str, body: UpdateRequest, sc: S) -> dict[str, Any]:
        """Edit a memory; the previous version is kept in its history."""
        return item_dict(call(memory.update, memory_id, sc, content=body.content, metadata=body.metadata,
                          importance=body.importance, layer=body.layer))

    @app.delete("/v1/memories/{memory_id}", status_code=204, tags=["memories"])
    def forget(memory_id: str, sc: S) -> Response:
        """Erase a memory and what was derived from it: nothing stays readable."""
        call(memory.forget, memory_id, sc)
        return Response(status_code=204)

    @app.post("/v1/memories/{memory_id}/revise", tags=["memories"])
    def revise(memory_id: str, body: ReviseRequest, sc: S) -> dict[str, Any]:
        """New information about a memory, gated by reconsolidation. Returns the mode (confirmed,
        selective_edit, integration, new_episode, blocked, protected, or overwrite with
        reconsolidation off), the memory, the new memory if one was created, and the plan."""
        out = call(memory.revise, memory_id, sc, body.content, correction=body.correction)
        new = out.get("new_memory")
        return json_safe({"mode": out["mode"], "memory": item_dict(out["memory"]),
                          "new_memory": item_dict(new) if new is not None else None, "plan": out.get("plan")})

    @app.post("/v1/memories/{memory_id}/rollback", tags=["memories"])
    def rollback(memory_id: str, sc: S) -> dict[str, Any]:
        """Restore the content the memory had before its last update or revision (404 when none)."""
        return item_dict(call(memory.rollback, memory_id, sc))

    @app.post("/v1/memories/{memory_id}/restore", tags=["memories"])
    def restore(memory_id: str, sc: S) -> dict[str, Any]:
        """Bring a memory archived by decay back into recall."""
        return item_dict(call(memory.restore, memory_id, sc))

    @app.get("/v1/memories/{memory_id}/history", tags=["memories"])
    def history(memory_id: str, sc: S) -> dict[str, Any]:
        """The change history of a memory, oldest first."""
        return {"history": [event_dict(e) for e in call(memory.history, memory_id, sc)]}

    @app.post("/v1/recall", tags=["recall"])
    def recall(body: RecallRequest, sc: S) -> dict[str, Any]:
        """The top-k memories for a query, each with its score breakdown (`why`), the query
        type recall understood, and the scope's core memories."""
        hits = call(memory.recall, body.query, sc, body.k, layers=body.layers, time_range=body.time_range,
                    include_archived=body.include_archived, touch=body.touch)
        return _recall_dict(body.query, hits)

    @app.post("/v1/recall/batch", tags=["recall"])
    def recall_batch(body: RecallBatchRequest, sc: S) -> dict[str, Any]:
        """Recall for many queries, in order; one result per query, as from /v1/recall."""
        results = call(memory.recall_many, body.queries, sc, body.k, layers=body.layers, time_range=body.time_range,
                       include_archived=body.include_archived, touch=body.touch)
        return {"results": [_recall_dict(q, r) for q, r in zip(body.queries, results)]}

    @app.get("/v1/episodes", tags=["recall"])
    def episodes(
        sc: S,
        start: Annotated[str | None, Query(description="From this event time: seconds since the epoch or ISO 8601.")] = None,
        end: Annotated[str | None, Query(description="Up to this event time: seconds since the epoch or ISO 8601.")] = None,
        limit: Annotated[int | None, Query(description="At most this many (a positive integer).")] = None,
    ) -> dict[str, Any]:
        """Episodic memories whose event time lies in [start, end], oldest first."""
        items = call(memory.episodes, sc, optional_time(start, "start"), optional_time(end, "end"), limit=limit)
        return {"memories": [item_dict(i) for i in items]}

    @app.post("/v1/context", tags=["recall"])
    def context(body: ContextRequest, sc: S) -> dict[str, Any]:
        """A token-budgeted context for an LLM prompt."""
        return json_safe(call(memory.assemble_prompt, body.query, sc, budget_tokens=body.budget_tokens, k=body.k))

    @app.post("/v1/relations", status_code=201, tags=["relations"])
    def relate(body: RelationRequest, sc: S) -> dict[str, Any]:
        """Declare a typed relation src -> dst between two memories of the scope's context."""
        return edge_dict(call(memory.relate, body.src, body.dst, body.relation, sc, weight=body.weight))

    @app.delete("/v1/relations", tags=["relations"])
    def unrelate(
        sc: S,
        src: Annotated[str, Query(description="Id of the source memory.")],
        dst: Annotated[str, Query(description="Id of the target memory.")],
        relation: Annotated[str, Query(description="The relation's name.")],
    ) -> dict[str, Any]:
        """Remove a relation; `removed` is false when there was none."""
        return {"removed": call(memory.unrelate, src, dst, relation, sc)}

    @app.get("/v1/memories/{memory_id}/relations", tags=["relations"])
    def relations(
        memory_id: str, sc: S, relation: Annotated[str | None, Query(description="Only this relation.")] = None,
    ) -> dict[str, Any]:
        """The edges from and to a memory, strongest first."""
        return {"relations": [edge_dict(e) for e in call(memory.relations, memory_id, sc, relation=relation)]}

    @app.post("/v1/memories/{memory_id}/evidence", tags=["feedback"])
    def evidence(memory_id: str, body: EvidenceRequest, sc: S) -> dict[str, Any]:
        """Evidence for or against a memory being true (updates its confidence)."""
        return item_dict(call(memory.record_evidence, memory_id, sc, supports=body.supports, strength=body.strength))

    @app.post("/v1/memories/{memory_id}/outcome", tags=["feedback"])
    def outcome(memory_id: str, body: OutcomeRequest, sc: S) -> dict[str, Any]:
        """Report that a memory (a procedure, say) was used, successfully or not."""
        return item_dict(call(memory.record_outcome, memory_id, sc, body.success))

    @app.post("/v1/reviews", tags=["feedback"])
    def reviews(body: ReviewsRequest, sc: S) -> dict[str, Any]:
        """Spaced-repetition reviews of many memories at once."""
        items = call(memory.review_many, [(r.id, r.grade) for r in body.reviews], sc)
        return {"memories": [item_dict(i) for i in items]}

    @app.get("/v1/review-queue", tags=["feedback"])
    def review_queue(
        sc: S, limit: Annotated[int, Query(description="At most this many (a positive integer).")] = 20,
    ) -> dict[str, Any]:
        """Memories due for review, most overdue first, then knowledge gaps."""
        return {"memories": [item_dict(i) for i in call(memory.review_queue, sc, limit=limit)]}

    @app.post("/v1/sleep", tags=["lifecycle"])
    def sleep(
        sc: S, detail: Annotated[bool, Query(description="List every changed memory and edge, not only counts.")] = False,
    ) -> dict[str, Any]:
        """Offline consolidation: every enabled sleep-time mechanism; returns its report."""
        return json_safe(call(memory.sleep, sc, detail=detail).as_dict())

    @app.post("/v1/decay", tags=["lifecycle"])
    def decay(sc: S) -> dict[str, Any]:
        """Apply forgetting: archive memories whose retrievability fell below threshold."""
        return json_safe(call(memory.decay, sc).as_dict())

    @app.post("/v1/consolidate", tags=["lifecycle"])
    def consolidate(sc: S) -> dict[str, Any]:
        """Migrate and abstract memories across layers (episodic -> semantic)."""
        return json_safe(call(memory.consolidate, sc).as_dict())

    @app.post("/v1/sessions/end", tags=["lifecycle"])
    def end_session(sc: S) -> dict[str, Any]:
        """Consolidate the session's (query parameter session_id) working and short-term memory."""
        return json_safe(call(memory.end_session, sc).as_dict())

    @app.post("/v1/intentions", status_code=201, tags=["intentions"])
    def intend(body: IntentionRequest, sc: S) -> dict[str, Any]:
        """Prospective memory: fire `action` when `cue` comes up in a recall (listed in the
        recall's `intentions`), or at `due_at` (see /v1/intentions/due). Returns the intention."""
        out = call(memory.intend, body.action, sc, cue=body.cue, due_at=optional_time(body.due_at, "due_at"),
                   repeat_every_s=body.repeat_every_s)
        return json_safe({k: v for k, v in out.items() if k != "cue_embedding"})

    @app.get("/v1/intentions/due", tags=["intentions"])
    def due_intentions(sc: S) -> dict[str, Any]:
        """Time-triggered intentions that fire now. Each fires once (a recurring one again at
        its next time), so asking again right away returns none."""
        return {"intentions": json_safe(call(memory.due_intentions, sc))}

    @app.put("/v1/goal", tags=["intentions"])
    def set_goal(body: GoalRequest, sc: S) -> dict[str, Any]:
        """Set the current goal: memories aligned with it get priority."""
        call(memory.set_goal, body.goal, sc)
        return {"goal": body.goal}

    @app.delete("/v1/scope", tags=["lifecycle"])
    def forget_scope(sc: S) -> dict[str, Any]:
        """Erase every memory of the user and agent (all sessions and contexts), with their
        goals and intentions. Returns how many memories were erased."""
        return {"forgotten": call(memory.forget_scope, sc)}

    @app.get("/v1/stats", tags=["server"])
    def stats(sc: S) -> dict[str, Any]:
        """Counts by layer and context for the scope, store size, embedder, mechanisms off."""
        return json_safe(call(memory.stats, sc))

    return app


__all__ = ["AuthError", "create_app"]
