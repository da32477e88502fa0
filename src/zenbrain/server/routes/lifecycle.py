"""The lifecycle: sleep, decay, consolidate, session end and erasing a whole scope; the
reports they produced and the statistics over time (kept by the ``ActivityLog``)."""

# No "from __future__ import annotations": FastAPI reads the routes' annotations.
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from ...errors import ErasurePendingError
from ...model import Scope
from ...report_text import summarize
from ...serialize import json_safe
from ..api_context import ApiContext
from ..limits import MAX_SERIES
from ..schemas import ActivityOut, ForgottenOut, ReportOut, StatsOut, StatsSeriesOut

Count = Annotated[int, Query(ge=1, le=MAX_SERIES, description=f"At most this many (1-{MAX_SERIES}).")]


def router(api: ApiContext) -> APIRouter:
    r = APIRouter(tags=["lifecycle"])
    S = Annotated[Scope, Depends(api.scope)]
    memory = api.memory

    def run(sc: Scope, operation: Callable[[], Any]) -> dict[str, Any]:
        """Run a lifecycle operation, keep its report and a stats snapshot, return both."""
        def block() -> dict[str, Any]:
            report = json_safe(operation().as_dict())
            report["summary"] = summarize(report)
            api.activity.record_report(sc, report["operation"], report["at"], report["summary"], report["stages"])
            api.snapshot(sc, report["operation"])
            return report
        return api.run(block, write=True, scope=sc)

    @r.post("/v1/sleep", response_model=ReportOut, **api.write())
    def sleep(
        sc: S, detail: Annotated[bool, Query(description="List every changed memory and edge, not only counts.")] = False,
    ) -> dict[str, Any]:
        """Offline consolidation: every enabled sleep-time mechanism; returns its report."""
        return run(sc, lambda: memory.sleep(sc, detail=detail))

    @r.post("/v1/decay", response_model=ReportOut, **api.write())
    def decay(sc: S) -> dict[str, Any]:
        """Apply forgetting: archive memories whose retrievability fell below threshold."""
        return run(sc, lambda: memory.decay(sc))

    @r.post("/v1/consolidate", response_model=ReportOut, **api.write())
    def consolidate(sc: S) -> dict[str, Any]:
        """Migrate and abstract memories across layers (episodic -> semantic)."""
        return run(sc, lambda: memory.consolidate(sc))

    @r.post("/v1/sessions/end", response_model=ReportOut, **api.write())
    def end_session(sc: Annotated[Scope, Depends(api.session_scope)]) -> dict[str, Any]:
        """Consolidate the session's (query parameter session_id) working and short-term memory."""
        return run(sc, lambda: memory.end_session(sc))

    @r.delete("/v1/scope", response_model=ForgottenOut, **api.write(pending=ForgottenOut))
    def forget_scope(sc: S, response: Response) -> dict[str, Any]:
        """Erase every memory of the user and agent (all sessions and contexts), with their
        goals, intentions, lifecycle reports and statistics. Returns how many memories were
        erased and the erasure receipt (202 when the files still hold the erased text for
        now, see DELETE /v1/memories/{memory_id})."""
        def block() -> Any:
            try:
                receipt = memory.forget_scope(sc)
            except ErasurePendingError as exc:
                response.status_code = 202
                receipt = exc.receipt
            api.activity.forget_partition(sc.user_id, sc.agent_id)
            return receipt
        receipt = api.run(block, write=True, scope=sc)
        return {"forgotten": receipt.count, "receipt": receipt.as_dict()}

    @r.get("/v1/stats", response_model=StatsOut, responses=api.errors(), tags=["server"])
    def stats(sc: S) -> dict[str, Any]:
        """Counts by layer and context for the scope, store size, embedder, mechanisms off."""
        api.snapshot_if_due(sc)
        return json_safe(api.call(memory.stats, sc))

    @r.get("/v1/stats/history", response_model=StatsSeriesOut, responses=api.errors(), tags=["dashboard"])
    def stats_history(sc: S, limit: Count = 200) -> dict[str, Any]:
        """Snapshots of the scope's statistics, oldest first: one after every lifecycle
        operation and one when stats are read and the last is older than an hour."""
        api.snapshot_if_due(sc)
        return {"snapshots": api.activity.snapshots(sc, limit)}

    @r.get("/v1/activity", response_model=ActivityOut, responses=api.errors(), tags=["dashboard"])
    def activity(sc: S, limit: Count = 20) -> dict[str, Any]:
        """The lifecycle reports of this scope that ran through this server, newest first,
        each with a readable summary."""
        return {"reports": api.activity.reports(sc, limit)}

    return r
