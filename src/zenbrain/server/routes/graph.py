"""The knowledge graph: declared relations, one memory's edges, and the scope's graph picture."""

# No "from __future__ import annotations": FastAPI reads the routes' annotations.
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from ...model import Scope
from ...serialize import edge_dict, json_safe
from ..api_context import ApiContext
from ..limits import MAX_GRAPH_NODES, MAX_ID_CHARS, RELATION_PATTERN
from ..schemas import EdgeOut, GraphOut, RelationRequest, RelationsOut, RemovedOut
from .memories import MemoryId


def scope_graph(api: ApiContext, sc: Scope, limit: int, include_archived: bool) -> dict[str, Any]:
    """Up to ``limit`` memories of the scope and the edges among them. Built from public
    calls (one ``list`` and one ``relations`` per memory) as one read."""
    memory = api.memory

    def read() -> tuple[list[Any], dict[tuple[str, str, str], Any], bool]:
        items = memory.list_memories(sc, include_archived=include_archived, limit=limit + 1)
        truncated = len(items) > limit
        items = items[:limit]
        ids = {i.id for i in items}
        edges: dict[tuple[str, str, str], Any] = {}
        for i in items:
            for e in memory.relations(i.id, sc):
                if e.src in ids and e.dst in ids:
                    edges.setdefault((e.src, e.dst, e.relation), e)
        return items, edges, truncated

    items, edges, truncated = api.run(read, write=False, scope=sc)
    nodes = [{"id": i.id, "content": i.content, "layer": i.layer.value, "kind": i.kind.value, "archived": i.archived,
              "importance": i.importance, "confidence": i.confidence} for i in items]
    return json_safe({"nodes": nodes, "edges": [edge_dict(e) for e in edges.values()], "truncated": truncated})


def router(api: ApiContext) -> APIRouter:
    r = APIRouter(tags=["relations"])
    S = Annotated[Scope, Depends(api.scope)]
    memory, call = api.memory, api.call

    @r.post("/v1/relations", status_code=201, response_model=EdgeOut, **api.write(404, body=True))
    def relate(body: RelationRequest, sc: S) -> dict[str, Any]:
        """Declare a typed relation src -> dst between two memories of the scope's context."""
        return edge_dict(call(memory.relate, body.src, body.dst, body.relation, sc, weight=body.weight))

    @r.delete("/v1/relations", response_model=RemovedOut, **api.write(404))
    def unrelate(
        sc: S,
        src: Annotated[str, Query(min_length=1, max_length=MAX_ID_CHARS, description="Id of the source memory.")],
        dst: Annotated[str, Query(min_length=1, max_length=MAX_ID_CHARS, description="Id of the target memory.")],
        relation: Annotated[str, Query(max_length=48, pattern=RELATION_PATTERN, description="The relation's name.")],
    ) -> dict[str, Any]:
        """Remove a relation; `removed` is false when there was none."""
        return {"removed": call(memory.unrelate, src, dst, relation, sc)}

    @r.get("/v1/memories/{memory_id}/relations", response_model=RelationsOut, responses=api.errors(404))
    def relations(
        memory_id: MemoryId, sc: S,
        relation: Annotated[str | None, Query(max_length=48, pattern=RELATION_PATTERN,
                                              description="Only this relation.")] = None,
    ) -> dict[str, Any]:
        """The edges from and to a memory, strongest first."""
        return {"relations": [edge_dict(e) for e in call(memory.relations, memory_id, sc, relation=relation)]}

    @r.get("/v1/graph", response_model=GraphOut, responses=api.errors(), tags=["dashboard"])
    def graph(
        sc: S,
        limit: Annotated[int, Query(ge=1, le=MAX_GRAPH_NODES,
                                    description=f"At most this many memories (1-{MAX_GRAPH_NODES}).")] = 200,
        include_archived: Annotated[bool, Query(description="Also draw archived memories.")] = False,
    ) -> dict[str, Any]:
        """The scope's knowledge graph: memories as nodes, relations among them as edges."""
        return scope_graph(api, sc, limit, include_archived)

    return r
