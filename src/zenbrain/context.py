"""Assembling an LLM context from memory (global workspace) and intentions (prospective memory)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import dynamics as dyn
from .ids import new_id
from .model import Layer, Scope
from .pma import prospective, workspace

if TYPE_CHECKING:
    from .coordinator import MemoryCoordinator


def assemble_context(coord: MemoryCoordinator, query: str, scope: Scope, *, budget_tokens: int = 1200, k: int = 10) -> dict[str, Any]:
    """Specialist modules bid for a token budget; the winners fill the context.

    With ``global_workspace`` switched off, the context is simply the top recall hits
    in rank order, cut at the budget.
    """
    part = coord._part(scope)
    now = coord.clock.now()
    hits = coord.recall(query, scope, k=k)
    by_layer: dict[str, list[str]] = {}
    best: dict[str, float] = {}
    for h in hits:
        by_layer.setdefault(h.item.layer.value, []).append(h.item.content)
        best[h.item.layer.value] = max(best.get(h.item.layer.value, 0.0), h.score)
    top = max(best.values(), default=1.0) or 1.0
    if not coord._on("global_workspace"):
        text, used = [], 0
        for h in hits:
            cost = workspace.estimate_tokens(h.item.content)
            if used + cost > budget_tokens:
                break
            text.append(h.item.content)
            used += cost
        return {"text": "\n".join(text), "tokens": used, "modules": []}
    bids = []
    core = [c.content for c in hits.core]
    if core:
        bids.append(workspace.Bid("core", 1.0, tuple(core), always=True, title="About the user"))
    titles = {Layer.WORKING.value: "Current focus", Layer.SHORT_TERM.value: "This conversation",
              Layer.EPISODIC.value: "Past events", Layer.SEMANTIC.value: "Known facts",
              Layer.PROCEDURAL.value: "How to", Layer.CROSS_CONTEXT.value: "From other contexts"}
    for layer, items in by_layer.items():
        if layer == Layer.CORE.value:
            continue
        bids.append(workspace.Bid(layer, best[layer] / top, tuple(items), title=titles.get(layer, layer)))
    fired = hits.info.get("intentions") or []
    if fired:
        bids.append(workspace.Bid("intentions", 0.9, tuple(f["action"] for f in fired), title="Reminders"))
    raw = coord.storage.kv_get(part, dyn.KV_WORKSPACE)
    state = workspace.WorkspaceState.from_dict(raw) if raw else workspace.WorkspaceState()
    ws = workspace.assemble(bids, budget_tokens=budget_tokens, now=now, state=state,
                            params=coord.config.param("global_workspace", workspace.DEFAULT_PARAMS))
    with coord.storage.transaction() as tx:
        tx.kv_put(part, dyn.KV_WORKSPACE, ws.state.to_dict())
    return {"text": ws.text, "tokens": ws.tokens, "modules": [s.__dict__ for s in ws.selections]}


def intend(coord: MemoryCoordinator, scope: Scope, action: str, *, cue: str | None = None, due_at: float | None = None,
           repeat_every_s: float | None = None) -> dict[str, Any]:
    """Remember to do something when a cue comes up in a query, or at a time."""
    part = coord._part(scope)
    now = coord.clock.now()
    emb = None
    keywords: tuple[str, ...] = ()
    if cue:
        keywords = (cue,)
        emb = [float(x) for x in coord.embedder.embed([cue])[0]]
    it = prospective.make_intention(id=new_id(), action=action, now=now, cue_keywords=keywords,
                                    cue_embedding=emb, due_at=due_at, repeat_every_s=repeat_every_s)
    raw = coord.storage.kv_get(part, dyn.intentions_key(scope.context)) or []
    with coord.storage.transaction() as tx:
        tx.kv_put(part, dyn.intentions_key(scope.context), raw + [it.to_dict()])
    return it.to_dict()


def due_intentions(coord: MemoryCoordinator, scope: Scope) -> list[dict[str, Any]]:
    """Time-triggered intentions that are due now (each fires once unless recurring)."""
    if not coord._on("prospective_memory"):
        return []
    part = coord._part(scope)
    raw = coord.storage.kv_get(part, dyn.intentions_key(scope.context))
    if not raw:
        return []
    new, firings = prospective.check([prospective.Intention.from_dict(d) for d in raw], now=coord.clock.now())
    with coord.storage.transaction() as tx:
        tx.kv_put(part, dyn.intentions_key(scope.context), [i.to_dict() for i in new])
    return [f.to_dict() for f in firings]
