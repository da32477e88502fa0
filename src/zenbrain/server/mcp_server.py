"""The MCP server: zenbrain's memory as Model Context Protocol tools (official ``mcp`` SDK).

One server serves one scope, fixed when it is created: every tool call reads and writes
that scope's memories only, so a client cannot reach another user's (or agent's, or
context's) memories. Each tool is one ``MemoryCoordinator`` call; the library validates
the input. A ``ZenBrainError`` becomes a tool error carrying its message; any other
failure reaches the client as a generic tool error (the traceback stays in the server's
log on stderr).

Arguments are checked strictly before a tool runs: an unknown argument, a wrong type or
a number out of range is a tool error with a short message naming the argument (and
for ``remember_many`` the record, as ``memories[3].content``), never a validation dump.

``forget_scope`` (erase every memory of the user and agent) is deliberately not a tool:
one mistaken call of an agent would wipe its whole memory. Use the REST API
(``DELETE /v1/scope``) or the library for it. ``end_session`` needs a server started with a session
(``--session``); otherwise the library's error says so.

Run it over stdio with ``zenbrain mcp --path memory.db --user alice``, or in Python::

    from zenbrain import Scope, open_memory
    from zenbrain.server.mcp_server import create_server

    create_server(open_memory("memory.db"), Scope("alice")).run("stdio")
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as ArgumentError

from ..coordinator import MemoryCoordinator
from ..errors import ErasurePendingError, ValidationError, ZenBrainError
from ..model import Scope
from ..pipeline.store import draft
from ..serialize import edge_dict, item_dict, json_safe, optional_time
from .limits import (
    MAX_BATCH_MEMORIES,
    MAX_BUDGET_TOKENS,
    MAX_K,
    MAX_LIST,
    MAX_TIME,
    MAX_WEIGHT,
)

SERVER_NAME = "zenbrain"

_T = TypeVar("_T")

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
_DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                               open_world_hint=False)
_REMOVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)

# Parameter types with the descriptions an agent reads in the tool schema.
MemoryId = Annotated[str, Field(description="A memory id, as returned by remember or recall.")]
Content = Annotated[str, Field(description="The memory's text: one self-contained fact, event, preference or note.")]
Metadata = Annotated[dict[str, Any] | None, Field(description="Optional JSON object stored with the memory, "
                                                              'e.g. {"source": "chat"}.')]
Importance = Annotated[float | None, Field(ge=0.0, le=1.0, description="Importance in [0, 1] (default 0.5).")]
Limit = Annotated[int | None, Field(ge=1, le=MAX_LIST, description=f"At most this many memories (1-{MAX_LIST}).")]
Kind = Annotated[str | None, Field(description="fact, episode, skill, identity, preference, note or schema "
                                               "(default: classified from the text).")]
LayerName = Annotated[str | None, Field(description="Force a layer: episodic, semantic, procedural, core or "
                                                    "cross_context (default: routed by kind).")]
EventTime = Annotated[float | str | None, Field(description="When it happened: ISO 8601 (2023-05-08T13:56:00Z) or "
                                                           "seconds since the epoch.")]


class StrictServer(MCPServer):
    """An MCPServer whose tools refuse unknown arguments and explain bad ones in one line."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            check_arguments(name, tool.fn_metadata.arg_model, tool.fn_metadata.pre_parse_json(arguments))
        return await super().call_tool(name, arguments, context)


def check_arguments(name: str, model: type[BaseModel], arguments: dict[str, Any]) -> None:
    """A ToolError naming every unknown argument, or the first few bad ones."""
    known = {f.alias or n for n, f in model.model_fields.items()}
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise ToolError(f"{name}: unknown argument(s) {', '.join(map(repr, unknown))}; "
                        f"its arguments are {', '.join(sorted(known)) or 'none'}")
    try:
        model.model_validate(arguments)
    except ArgumentError as exc:
        raise ToolError(f"{name}: " + "; ".join(_complaint(e) for e in exc.errors()[:3])) from None


def _complaint(err: Any) -> str:
    where = ""
    for part in err.get("loc", ()):
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    if err.get("type") == "extra_forbidden":
        return f"unknown field {where}"
    return f"{where or 'arguments'}: {err.get('msg', 'invalid')}"


def _strict_schemas(server: MCPServer) -> None:
    """Tool schemas that say what ``check_arguments`` enforces: no other properties."""
    for tool in server._tool_manager.list_tools():
        tool.parameters["additionalProperties"] = False


class NewMemory(BaseModel):
    """One memory of remember_many."""

    model_config = ConfigDict(extra="forbid")

    content: Content
    kind: Kind = None
    layer: LayerName = None
    metadata: Metadata = None
    importance: Importance = None
    event_time: EventTime = None


def create_server(memory: MemoryCoordinator, scope: Scope, *, name: str = SERVER_NAME) -> MCPServer:
    """An MCP server whose tools act on ``memory`` within ``scope`` only."""
    if not isinstance(scope, Scope):
        raise ValidationError(f"scope must be a zenbrain.Scope, got {type(scope).__name__}")
    lock = threading.Lock()  # tools run on worker threads; the coordinator sees one call at a time
    where = f"user {scope.user_id!r}, agent {scope.agent_id!r}, context {scope.context!r}"
    if scope.session_id is not None:
        where += f", session {scope.session_id!r}"
    from .. import __version__

    server = StrictServer(
        name,
        version=__version__,
        instructions=(
            f"Long-term memory ({where}). Call recall before answering questions that may depend on "
            "what you were told earlier; call remember for facts, events and preferences worth keeping "
            "(one self-contained statement per memory). assemble_prompt gives a token-budgeted context "
            "for a prompt. intend sets a reminder; recall reports it when its cue comes up."
        ),
    )

    def call(fn: Callable[..., _T], *args: Any, **kw: Any) -> _T:
        with lock:
            try:
                return fn(*args, **kw)
            except ZenBrainError as exc:
                raise ToolError(str(exc)) from None

    @server.tool(annotations=_WRITE)
    def remember(
        content: Content,
        kind: Kind = None,
        layer: LayerName = None,
        metadata: Metadata = None,
        importance: Importance = None,
        event_time: EventTime = None,
        supersedes: Annotated[list[str] | None, Field(description="Ids of earlier memories this one replaces (a "
                                                                  "changed fact): they leave current recall.")] = None,
    ) -> dict[str, Any]:
        """Store one memory. Returns its id, the layer it was stored in and its kind."""
        item = call(lambda: memory.store(content, scope, kind=kind, layer=layer, metadata=metadata,
                                         event_time=optional_time(event_time, "event_time"), importance=importance,
                                         supersedes=supersedes or None))
        return {"id": item.id, "layer": item.layer.value, "kind": item.kind.value}

    @server.tool(annotations=_WRITE)
    def remember_many(
        memories: Annotated[list[NewMemory], Field(min_length=1, max_length=MAX_BATCH_MEMORIES,
                                                   description="The memories to store, each with its content and "
                                                               "optionally kind, layer, metadata, importance and "
                                                               "event_time. All are checked before any is written.")],
    ) -> dict[str, Any]:
        """Store many memories at once (one transaction: all or none). Returns each one's id, layer and kind."""
        records = []
        for i, m in enumerate(memories):
            try:
                records.append({**m.model_dump(), "event_time": optional_time(m.event_time, "event_time")})
            except ZenBrainError as exc:
                raise ToolError(f"memories[{i}]: {exc}") from None
        try:
            items = call(lambda: memory.store_many(records, scope))
        except ToolError:
            raise ToolError(_failing_record(records)) from None
        return {"memories": [{"id": i.id, "layer": i.layer.value, "kind": i.kind.value} for i in items]}

    def _failing_record(records: list[dict[str, Any]]) -> str:
        """The first record the library refuses, by its place in the batch (it checks every
        record before writing any; ``draft`` is that check, and writes nothing)."""
        now = memory.clock.now()
        for i, rec in enumerate(records):
            try:
                draft(memory.engine, scope, rec, now)
            except ZenBrainError as exc:
                return f"memories[{i}]: {exc}"
        return "the batch was refused; no record alone is at fault"

    @server.tool(annotations=_WRITE)
    def recall(
        query: Annotated[str, Field(description="What to look for, in natural language.")],
        k: Annotated[int, Field(ge=1, le=MAX_K, description=f"Number of hits (1-{MAX_K}).")] = 5,
        layers: Annotated[list[str] | None, Field(description="Only these layers, e.g. [\"semantic\", \"core\"] "
                                                              "(default: all).")] = None,
        touch: Annotated[bool, Field(description="Count this recall as a use of the hits (reinforces them); "
                                                 "false makes it read-only.")] = True,
        as_of: Annotated[float | str | None, Field(description="Recall what held at this time (ISO 8601 or seconds "
                                                               "since the epoch) instead of what holds now.")] = None,
    ) -> dict[str, Any]:
        """The memories that best answer a query, best first: id, score, layer, kind, content,
        metadata and event_time (seconds since the epoch, or null); and the intentions whose cue
        this query brought up (act on them)."""
        hits = call(lambda: memory.recall(query, scope, k, layers=layers, touch=touch,
                                          as_of=optional_time(as_of, "as_of")))
        return json_safe({
            "query_type": hits.query_type,
            "hits": [{"id": h.item.id, "score": float(h.score), "layer": h.item.layer.value, "kind": h.item.kind.value,
                      "content": h.item.content, "metadata": h.item.metadata, "event_time": h.item.event_time}
                     for h in hits],
            "intentions": hits.info.get("intentions") or [],
        })

    @server.tool(annotations=_READ_ONLY)
    def episodes(
        start: Annotated[float | str | None, Field(description="From this event time: ISO 8601 or seconds since "
                                                               "the epoch (default: no lower bound).")] = None,
        end: Annotated[float | str | None, Field(description="Up to this event time (default: no upper "
                                                             "bound).")] = None,
        limit: Limit = None,
    ) -> dict[str, Any]:
        """Episodic memories (events) whose event time lies in [start, end], oldest first."""
        items = call(lambda: memory.episodes(scope, optional_time(start, "start"), optional_time(end, "end"), limit=limit))
        return {"memories": [item_dict(i) for i in items]}

    @server.tool(annotations=_READ_ONLY)
    def get_memory(id: MemoryId) -> dict[str, Any]:
        """One memory with all its fields (layer, kind, content, times, strength, confidence, ...)."""
        return item_dict(call(memory.get, id, scope))

    @server.tool(annotations=_WRITE)
    def update_memory(
        id: MemoryId,
        content: Annotated[str | None, Field(description="New text (default: unchanged).")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="New metadata, replacing the old "
                                                                     "(default: unchanged).")] = None,
        importance: Importance = None,
    ) -> dict[str, Any]:
        """Edit a memory directly. The previous version is kept in its history. Returns the memory."""
        return item_dict(call(memory.update, id, scope, content=content, metadata=metadata, importance=importance))

    @server.tool(annotations=_WRITE)
    def revise(
        id: MemoryId,
        content: Annotated[str, Field(description="The new information about the memory.")],
        correction: Annotated[bool, Field(description="True if this corrects the memory rather than adding "
                                                      "detail.")] = False,
    ) -> dict[str, Any]:
        """Revise a memory with new information, gated by reconsolidation: returns the mode
        (confirmed, selective_edit, integration, new_episode, blocked, protected; overwrite when
        reconsolidation is off), the memory, and the new memory if one was created."""
        out = call(memory.revise, id, scope, content, correction=correction)
        new = out.get("new_memory")
        return json_safe({"mode": out["mode"], "memory": item_dict(out["memory"]),
                          "new_memory": item_dict(new) if new is not None else None, "plan": out.get("plan")})

    @server.tool(annotations=_WRITE)
    def rollback(id: MemoryId) -> dict[str, Any]:
        """Restore the content a memory had before its last update or revision. Returns the memory."""
        return item_dict(call(memory.rollback, id, scope))

    @server.tool(annotations=_WRITE)
    def restore(id: MemoryId) -> dict[str, Any]:
        """Bring a memory archived by decay back into recall. Returns the memory."""
        return item_dict(call(memory.restore, id, scope))

    @server.tool(annotations=_DESTRUCTIVE)
    def forget(id: MemoryId) -> dict[str, Any]:
        """Erase a memory for good: its text, vector, relations and history, and memories derived from it.
        Returns the receipt: what was removed, and whether the text is gone from the files already
        (scrubbed false: another reader of the store keeps it there until it ends)."""
        with lock:
            try:
                receipt = memory.forget(id, scope)
            except ErasurePendingError as exc:
                receipt = exc.receipt
            except ZenBrainError as exc:
                raise ToolError(str(exc)) from None
        return {"forgotten": id, "receipt": receipt.as_dict()}

    @server.tool(annotations=_READ_ONLY)
    def history(id: MemoryId) -> dict[str, Any]:
        """The change history of a memory, oldest first: when (seconds since the epoch), what, details."""
        events = call(memory.history, id, scope)
        return json_safe({"id": id, "events": [{"at": e.at, "action": e.action, "detail": e.detail} for e in events]})

    @server.tool(annotations=_WRITE)
    def relate(
        src_id: Annotated[str, Field(description="Id of the source memory.")],
        relation: Annotated[str, Field(description="supports, contradicts, causes, requires, part_of, similar_to "
                                                   "or a name of your own.")],
        dst_id: Annotated[str, Field(description="Id of the target memory.")],
        weight: Annotated[float, Field(gt=0.0, le=MAX_WEIGHT, description="Edge weight.")] = 1.0,
    ) -> dict[str, Any]:
        """Declare a typed relation src -> dst between two memories. supports, contradicts, causes,
        requires, part_of and similar_to couple the memories' confidences at the next sleep."""
        return edge_dict(call(memory.relate, src_id, dst_id, relation, scope, weight=weight))

    @server.tool(annotations=_REMOVE)
    def unrelate(
        src_id: Annotated[str, Field(description="Id of the source memory.")],
        relation: Annotated[str, Field(description="The relation's name.")],
        dst_id: Annotated[str, Field(description="Id of the target memory.")],
    ) -> dict[str, Any]:
        """Remove the relation src -> dst; removed is false when there was none."""
        return {"removed": call(memory.unrelate, src_id, dst_id, relation, scope)}

    @server.tool(annotations=_READ_ONLY)
    def relations(
        id: MemoryId,
        relation: Annotated[str | None, Field(description="Only this relation (default: all).")] = None,
    ) -> dict[str, Any]:
        """The relations from and to a memory, strongest first."""
        edges = call(memory.relations, id, scope, relation=relation)
        return {"id": id, "relations": [edge_dict(e) for e in edges]}

    @server.tool(annotations=_WRITE)
    def record_evidence(
        id: MemoryId,
        supports: Annotated[bool, Field(description="True if the evidence supports the memory being true, "
                                                    "false if it speaks against it.")],
        strength: Annotated[float, Field(ge=0.0, le=MAX_WEIGHT,
                                         description="What the evidence is worth, in observations.")] = 1.0,
    ) -> dict[str, Any]:
        """Record evidence for or against a memory being true; returns its updated confidence in [0, 1]."""
        item = call(memory.record_evidence, id, scope, supports=supports, strength=strength)
        return json_safe({"id": item.id, "confidence": item.confidence, "conf_alpha": item.conf_alpha,
                       "conf_beta": item.conf_beta})

    @server.tool(annotations=_READ_ONLY)
    def review_queue(
        limit: Annotated[int, Field(ge=1, le=MAX_LIST, description=f"At most this many memories (1-{MAX_LIST}).")] = 20,
    ) -> dict[str, Any]:
        """Memories due for review (spaced repetition), most overdue first, then uncertain ones."""
        items = call(memory.review_queue, scope, limit=limit)
        return {"memories": [item_dict(i) for i in items]}

    @server.tool(annotations=_WRITE)
    def review(
        id: MemoryId,
        grade: Annotated[int | str, Field(description="How well it was remembered: 1-4 or again, hard, good, "
                                                      "easy.")],
    ) -> dict[str, Any]:
        """Record a review of a memory (spaced repetition); returns the memory as updated."""
        return item_dict(call(memory.review, id, scope, grade))

    @server.tool(annotations=_WRITE)
    def sleep() -> dict[str, Any]:
        """Offline consolidation: run every enabled sleep-time mechanism; returns what changed per stage."""
        return json_safe(call(memory.sleep, scope).as_dict())

    @server.tool(annotations=_WRITE)
    def decay() -> dict[str, Any]:
        """Apply forgetting: archive memories whose retrievability fell below threshold (restore
        brings one back). Returns what changed."""
        return json_safe(call(memory.decay, scope).as_dict())

    @server.tool(annotations=_WRITE)
    def end_session() -> dict[str, Any]:
        """Consolidate this server's session (working and short-term memory) into long-term
        memory. Needs a server started with a session."""
        return json_safe(call(memory.end_session, scope).as_dict())

    @server.tool(annotations=_WRITE)
    def intend(
        action: Annotated[str, Field(description="What to do (or remind of) when the intention fires.")],
        cue: Annotated[str | None, Field(description="Fire when a recall's query brings this up "
                                                     "(reported in recall's intentions).")] = None,
        due_at: Annotated[float | str | None, Field(description="Fire at this time (see due_intentions): ISO 8601 "
                                                                "or seconds since the epoch.")] = None,
        repeat_every_s: Annotated[float | None, Field(ge=1.0, le=MAX_TIME,
                                                      description="Fire again every this many seconds.")] = None,
    ) -> dict[str, Any]:
        """Remember to do something later: when a cue comes up, or at a time (a cue or a due
        time is needed). Returns the intention's id, action, cue and due time."""
        out = call(lambda: memory.intend(action, scope, cue=cue, due_at=optional_time(due_at, "due_at"),
                                         repeat_every_s=repeat_every_s))
        return json_safe({k: v for k, v in out.items() if k != "cue_embedding"})

    @server.tool(annotations=_WRITE)
    def due_intentions() -> dict[str, Any]:
        """Time-triggered intentions that fire now; each fires once (a recurring one again at its next time)."""
        return {"intentions": json_safe(call(memory.due_intentions, scope))}

    @server.tool(annotations=_WRITE)
    def set_goal(
        goal: Annotated[str, Field(description="The current goal or task.")],
    ) -> dict[str, Any]:
        """Set the current goal: memories aligned with it get priority."""
        call(memory.set_goal, goal, scope)
        return {"goal": goal}

    @server.tool(annotations=_READ_ONLY)
    def stats() -> dict[str, Any]:
        """Counts of this scope's memories by layer and context, relations, and the store's embedder."""
        return _scoped_stats()

    @server.tool(annotations=_WRITE)
    def assemble_prompt(
        query: Annotated[str, Field(description="The question or task the context is for.")],
        budget_tokens: Annotated[int, Field(ge=1, le=MAX_BUDGET_TOKENS, description="Token budget of the context.")]
        = 1200,
    ) -> dict[str, Any]:
        """A token-budgeted context for a prompt, assembled from the memories relevant to a query:
        text (ready to paste into a prompt), tokens and the modules it drew on."""
        return json_safe(call(memory.assemble_prompt, query, scope, budget_tokens=budget_tokens))

    def _scoped_stats() -> dict[str, Any]:
        s = call(memory.stats, scope)
        return json_safe({"scope": {"user_id": scope.user_id, "agent_id": scope.agent_id,
                                 "session_id": scope.session_id, "context": scope.context}, **s})

    @server.resource("zenbrain://stats", name="stats", mime_type="application/json",
                     description="Counts of this scope's memories by layer and context.")
    def stats_resource() -> str:
        try:
            return json.dumps(_scoped_stats())
        except ToolError as exc:
            raise ResourceError(str(exc)) from None

    _strict_schemas(server)
    return server


__all__ = ["SERVER_NAME", "StrictServer", "check_arguments", "create_server"]
