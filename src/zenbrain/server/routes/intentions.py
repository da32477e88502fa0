"""Prospective memory and goals: intentions fired by a cue or a time, the current goal."""

# No "from __future__ import annotations": FastAPI reads the routes' annotations.
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from ...model import Scope
from ...serialize import json_safe
from ..api_context import ApiContext
from ..limits import MAX_TIME
from ..schemas import (
    GoalOut,
    GoalRequest,
    IntentionOut,
    IntentionRequest,
    IntentionsOut,
)


def router(api: ApiContext) -> APIRouter:
    r = APIRouter(tags=["intentions"])
    S = Annotated[Scope, Depends(api.scope)]
    memory, call = api.memory, api.call

    @r.post("/v1/intentions", status_code=201, response_model=IntentionOut, **api.write(body=True))
    def intend(body: IntentionRequest, sc: S) -> dict[str, Any]:
        """Prospective memory: fire `action` when `cue` comes up in a recall (listed in the
        recall's `intentions`), or at `due_at` (see /v1/intentions/due). Returns the intention."""
        # A due time before 1970 is already due, one past MAX_TIME never comes: the same as the bounds.
        due = None if body.due_at is None else min(max(body.due_at, 0.0), MAX_TIME)
        out = call(memory.intend, body.action, sc, cue=body.cue, due_at=due,
                   repeat_every_s=body.repeat_every_s)
        return json_safe({k: v for k, v in out.items() if k != "cue_embedding"})

    @r.get("/v1/intentions/due", response_model=IntentionsOut, responses=api.errors())
    def due_intentions(sc: S) -> dict[str, Any]:
        """Time-triggered intentions that fire now. Each fires once (a recurring one again at
        its next time), so asking again right away returns none."""
        return {"intentions": json_safe(call(memory.due_intentions, sc))}

    @r.put("/v1/goal", response_model=GoalOut, **api.write(body=True))
    def set_goal(body: GoalRequest, sc: S) -> dict[str, Any]:
        """Set the current goal: memories aligned with it get priority."""
        call(memory.set_goal, body.goal, sc)
        return {"goal": body.goal}

    return r
