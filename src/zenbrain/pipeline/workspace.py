"""The global workspace (a token-budgeted prompt assembled from memory), prospective
memory (intentions fired by a cue or a time) and the current goal."""

from __future__ import annotations

from typing import Any

from ..engine import Engine
from ..errors import ValidationError
from ..ids import new_id
from ..model import Layer, Scope
from ..pma import prospective, workspace
from ..providers.base import embed_queries
from ..state import KV_GOAL, KV_WORKSPACE, encode_vec, intentions_key
from ..validation import check_content, check_k, check_number
from .access import partition_of
from .recall import recall

MAX_BUDGET = 10_000_000  # tokens: far beyond any context window, and a float holds it exactly


def assemble_prompt(engine: Engine, scope: Scope, query: str, *, budget_tokens: int = 1200, k: int = 10) -> dict[str, Any]:
    """Specialist modules bid for a token budget; the winners fill the prompt.

    With ``global_workspace`` switched off, the prompt is simply the top recall hits
    in rank order, cut at the budget.
    """
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or not 1 <= budget_tokens <= MAX_BUDGET:
        raise ValidationError(f"budget_tokens must be an integer in [1, {MAX_BUDGET}], got {str(budget_tokens)[:40]}")
    part = partition_of(scope)
    now = engine.clock.now()
    hits = recall(engine, scope, query, k=check_k(k))
    by_layer: dict[str, list[str]] = {}
    best: dict[str, float] = {}
    for h in hits:
        by_layer.setdefault(h.item.layer.value, []).append(h.item.content)
        best[h.item.layer.value] = max(best.get(h.item.layer.value, 0.0), h.score)
    top = max(best.values(), default=1.0) or 1.0
    if not engine.on("global_workspace"):
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
    raw = engine.store.kv_get(part, KV_WORKSPACE)
    state = workspace.WorkspaceState.from_dict(raw) if raw else workspace.WorkspaceState()
    ws = workspace.assemble(bids, budget_tokens=budget_tokens, now=now, state=state,
                            params=engine.config.params.global_workspace)
    with engine.store.transaction() as tx:
        tx.kv_put(part, {KV_WORKSPACE: ws.state.to_dict()})
    return {"text": ws.text, "tokens": ws.tokens, "modules": [s.__dict__ for s in ws.selections]}


def intend(engine: Engine, scope: Scope, action: str, *, cue: str | None = None, due_at: float | None = None,
           repeat_every_s: float | None = None) -> dict[str, Any]:
    """Remember to do something when a cue comes up in a query, or at a time."""
    action = check_content(action, engine.config.max_content_chars)
    if cue is not None:
        cue = check_content(cue, engine.config.max_content_chars)
    if due_at is not None:
        due_at = check_number("due_at", due_at, 0.0, 1e11)
    if repeat_every_s is not None:
        repeat_every_s = check_number("repeat_every_s", repeat_every_s, 1.0, 1e9)
    if cue is None and due_at is None:
        raise ValidationError("an intention needs a cue or a due time")
    part = partition_of(scope)
    now = engine.clock.now()
    emb = None
    keywords: tuple[str, ...] = ()
    if cue:
        keywords = (cue,)
        emb = [float(x) for x in embed_queries(engine.embedder, [cue])[0]]
    it = prospective.make_intention(id=new_id(), action=action, now=now, cue_keywords=keywords,
                                    cue_embedding=emb, due_at=due_at, repeat_every_s=repeat_every_s)
    raw = engine.store.kv_get(part, intentions_key(scope.context)) or []
    with engine.store.transaction() as tx:
        tx.kv_put(part, {intentions_key(scope.context): raw + [it.to_dict()]})
    return it.to_dict()


def due_intentions(engine: Engine, scope: Scope) -> list[dict[str, Any]]:
    """Time-triggered intentions that are due now (each fires once unless recurring)."""
    if not engine.on("prospective_memory"):
        return []
    part = partition_of(scope)
    raw = engine.store.kv_get(part, intentions_key(scope.context))
    if not raw:
        return []
    new, firings = prospective.check([prospective.Intention.from_dict(d) for d in raw], now=engine.clock.now())
    with engine.store.transaction() as tx:
        tx.kv_put(part, {intentions_key(scope.context): [i.to_dict() for i in new]})
    return [f.to_dict() for f in firings]


def set_goal(engine: Engine, scope: Scope, goal: str) -> None:
    """The current goal: PriorityMap raises the priority of memories aligned with it."""
    goal = check_content(goal, engine.config.max_content_chars)
    vec = embed_queries(engine.embedder, [goal])[0]
    with engine.store.transaction() as tx:
        tx.kv_put(partition_of(scope), {KV_GOAL: encode_vec(vec)})
