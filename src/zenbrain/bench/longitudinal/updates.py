"""Knowledge that changes: is the current fact found first, and does the stale one outrank it?

Three sources of update questions, all lived through on the timeline protocol:

* **generated** (:mod:`.update_gen`): seeded chains of values over many entities and
  attributes; hits are classified by their text (entity and value named);
* **LoCoMo** (:mod:`.locomo_updates`): the curated pairs, the whole conversation lived
  through; hits are classified by turn id;
* **LongMemEval knowledge-update** items: the haystack's sessions at their dates, the
  question at its date; current = the ``has_answer`` turns of the latest answer session,
  stale = those of earlier answer sessions (classified by turn id).

Metrics and hit classification: :mod:`.update_score`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..longmemeval import LongMemEvalItem
from ..metrics import bootstrap_ci
from .locomo_updates import locomo_update_probes
from .timeline import DAY, LifeStore, Probe, TimedSession, TimelineSystem, run_unit
from .update_gen import UpdateWorkload
from .update_score import UPDATE_METRICS, classify, score_update

__all__ = [
    "UPDATE_METRICS",
    "classify",
    "locomo_update_probes",
    "longmemeval_update_workload",
    "run_generated_updates",
    "run_updates_unit",
    "score_update",
    "summarize_updates",
    "update_records",
]


def update_records(system: TimelineSystem, workload: UpdateWorkload, *, k: int, depth: int,
                   views: Sequence[str] = ()) -> dict[str, Any]:
    """Live through a generated workload with one system; records and lifecycle (and the
    diagnostic re-rankings of the final store, ``views``, for zenbrain)."""
    return run_unit(system, workload.sessions, workload.probes, k=depth, uses=workload.uses,
                    score=score_update(k), end_time=workload.end_time, views=views)


def longmemeval_update_workload(item: LongMemEvalItem) -> tuple[list[TimedSession], list[Probe], float | None]:
    """Sessions (at their dates, in date order), the item's question as an end probe, its time."""
    by_session: dict[str, list[Any]] = {}
    times: dict[str, float | None] = {}
    order: list[str] = []
    for d in item.docs:
        key = f"{item.question_id}:s{int(d.metadata.get('session_index', 0))}"
        if key not in by_session:
            order.append(key)
            by_session[key] = []
            times[key] = d.time
        by_session[key].append(d)
    last: float | None = None
    sessions: list[TimedSession] = []
    for key in sorted(order, key=lambda k: (times[k] is None, times[k] or 0.0, order.index(k))):
        t = times[key]
        if t is None:
            t = (last + DAY) if last is not None else (item.query_time or 1_600_000_000.0) - 30 * DAY
        if last is not None and t <= last:
            t = last + 60.0
        sessions.append(TimedSession(key, t, tuple(by_session[key])))
        last = t
    time_of_session: dict[str, float] = {}
    for s in sessions:
        sid = item.turn_to_session.get(s.docs[0].id, s.docs[0].session or s.key)  # the file's own session id
        time_of_session[sid] = max(time_of_session.get(sid, -math.inf), s.time)
    answer = [s for s in item.answer_session_ids if s in time_of_session]
    latest = max(answer, key=lambda s: time_of_session[s]) if answer else None
    current = [t for t in item.gold_turn_ids if item.turn_to_session.get(t) == latest]
    stale = [t for t in item.gold_turn_ids if item.turn_to_session.get(t) != latest]
    probe = Probe(item.question_id, item.question, tuple(current), "end", None, item.question_type,
                  {"current_ids": current, "stale_ids": stale, "answer": item.answer})
    end = item.query_time
    if end is not None and sessions and end < sessions[-1].time:
        end = None
    return sessions, ([probe] if current else []), end


def summarize_updates(records: Sequence[dict[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """Means with bootstrap intervals of the update metrics, overall and per group."""
    def block(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(rows)}
        for m in UPDATE_METRICS:
            vals = [float(r["update_metrics"][m]) for r in rows]
            out[m] = bootstrap_ci(vals, seed=seed).as_dict() if vals else None
        return out
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(str(r.get("group")), []).append(r)
        if r.get("attribute"):
            groups.setdefault(f"attribute:{r['attribute']}", []).append(r)
    return {"overall": block(records), "groups": {g: block(rows) for g, rows in sorted(groups.items())}}


def run_updates_unit(system: TimelineSystem, sessions: Sequence[TimedSession], probes: Sequence[Probe], *,
                     k: int, depth: int, end_time: float | None = None) -> dict[str, Any]:
    """``run_unit`` with the update score (LoCoMo pairs, LongMemEval items)."""
    return run_unit(system, sessions, probes, k=depth, score=score_update(k), end_time=end_time)


def run_generated_updates(
    systems: Sequence[TimelineSystem],
    workloads: Sequence[UpdateWorkload],
    *,
    k: int = 5,
    depth: int = 10,
    progress: bool = True,
    views: Sequence[str] = (),
) -> dict[str, Any]:
    """Every system through every generated workload (one per seed); results by system.
    ``views``: the diagnostic re-rankings of each zenbrain system's final store."""
    from tqdm.auto import tqdm

    out: dict[str, Any] = {"systems": {}}
    with tqdm(total=len(systems) * len(workloads), desc="updates[generated]", disable=not progress, unit="run") as bar:
        for system in systems:
            recs: list[dict[str, Any]] = []
            life = {}
            view_recs: dict[str, list[dict[str, Any]]] = {}
            for w in workloads:
                res = update_records(system, w, k=k, depth=depth, views=views if isinstance(system, LifeStore) else ())
                for r in res["records"]:
                    r["qid"] = f"seed{w.spec.seed}/{r['qid']}"
                recs += res["records"]
                life[f"seed{w.spec.seed}"] = res["lifecycle"]
                for v, data in (res.get("views") or {}).items():
                    view_recs.setdefault(v, []).extend(data["records"])
                bar.update(1)
            entry: dict[str, Any] = {"questions": recs, "lifecycle": life, "summary": summarize_updates(recs)}
            if view_recs:
                entry["views"] = {v: {"summary": summarize_updates(rows)} for v, rows in view_recs.items()}
            out["systems"][system.name] = entry
    return out
