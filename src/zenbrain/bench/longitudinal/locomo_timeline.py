"""Longitudinal LoCoMo: each session stored at its own date, the lifecycle every night between.

The workload of one conversation (:func:`locomo_workload`):

* **sessions**: session N at its ``session_N_date_time`` (a session without a readable date
  is placed one day after the previous one), its turns in order;
* **end probes**: every question with evidence, asked right after the last session;
* **fresh probes** (the documented intermediate subset): every question whose last
  evidence turn lies in an earlier session than the last one, asked again right after
  that session. The pair (fresh, end) of one question shows what living through the
  sessions in between did to its evidence; ``delay_days`` is the time between the two.

Questions without evidence are not asked (as in the static benchmark). Metrics are the
static benchmark's (``bench.metrics``); a ranked memory that is no turn (a consolidated
schema) holds its rank and counts as a miss.

:func:`run_locomo_timeline` runs any :class:`~.timeline.TimelineSystem` per conversation and
returns a results dict (JSON-safe) with per-question records and summaries.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tqdm.auto import tqdm

from ..locomo import LocomoConversation
from ..metrics import (
    aggregate,
    locomo_metric_names,
    locomo_question_metrics,
    percentile,
)
from ..runner import DEFAULT_BOOTSTRAP, locomo_headline_metrics
from .locomo_updates import LOCOMO_UPDATE_PAIRS, LocomoUpdatePair, locomo_update_probes
from .lowvalue import low_value_ids
from .timeline import (
    DAY,
    HIT_PREFIX,
    LifeStore,
    Probe,
    Protocol,
    TimedSession,
    TimelineSystem,
    run_unit,
)
from .update_score import score_update
from .updates import summarize_updates

__all__ = [
    "CHECKPOINTS",
    "locomo_workload",
    "run_locomo_timeline",
    "session_of",
    "summarize_timeline",
]

CHECKPOINTS = ("end", "fresh")


def session_of(dia_id: str) -> int | None:
    """The session number of a dialogue id (``"D3:12"`` -> 3)."""
    head = dia_id.rsplit("/", 1)[-1]
    if not head.startswith("D") or ":" not in head:
        return None
    try:
        return int(head[1:].split(":", 1)[0])
    except ValueError:
        return None


def locomo_workload(conv: LocomoConversation, *, fresh: bool = True,
                    categories: Sequence[int] | None = None) -> tuple[list[TimedSession], list[Probe]]:
    """Sessions and probes of one conversation (see the module docstring)."""
    by_session: dict[int, list[Any]] = {}
    for d in conv.docs:
        by_session.setdefault(int(d.session or 0), []).append(d)
    sessions: list[TimedSession] = []
    key_of: dict[int, str] = {}
    last_t: float | None = None
    for n in sorted(by_session):
        t = conv.session_times.get(str(n))
        if t is None:
            t = (last_t + DAY) if last_t is not None else 1_600_000_000.0
        if last_t is not None and t <= last_t:
            t = last_t + 3600.0  # sessions never overlap or go back in time
        key = f"{conv.sample_id}:S{n}"
        key_of[n] = key
        sessions.append(TimedSession(key, t, tuple(by_session[n])))
        last_t = t
    time_of = {s.key: s.time for s in sessions}
    last_key = sessions[-1].key
    end_t = sessions[-1].time
    cats = set(categories) if categories else None
    probes: list[Probe] = []
    for q in conv.questions:
        if not q.evidence or (cats is not None and q.category not in cats):
            continue
        nums = [session_of(e) for e in q.evidence]
        known = [n for n in nums if n is not None and n in key_of]
        last = key_of[max(known)] if known else last_key
        extra = {"sample_id": q.sample_id, "category": q.category, "last_evidence_session": last,
                 "delay_days": (end_t - time_of[last]) / DAY}
        probes.append(Probe(q.qid, q.question, q.evidence, "end", None, q.category_name, extra))
        if fresh and last != last_key:
            probes.append(Probe(q.qid, q.question, q.evidence, "fresh", last, q.category_name, extra))
    return sessions, probes


def _score(ks: Sequence[int]):
    updates = score_update(min(ks))

    def score(p: Probe, hits: list[tuple[str, str]]) -> dict[str, Any]:
        if "current_ids" in p.extra:
            return updates(p, hits)
        ranked = [d for d, _ in hits]
        return {"metrics": locomo_question_metrics(ranked, p.gold, ks),
                "non_turn_hits": sum(1 for d in ranked[: min(ks)] if d.startswith(HIT_PREFIX))}
    return score


def _doc_states(system: TimelineSystem) -> dict[str, Any]:
    if isinstance(system, LifeStore):
        return {"doc_states": system.doc_states()}
    return {}


def run_locomo_timeline(
    systems: Sequence[TimelineSystem],
    conversations: Sequence[LocomoConversation],
    *,
    ks: Sequence[int] = (5, 10),
    categories: Sequence[int] | None = None,
    fresh: bool = True,
    update_pairs: bool | Sequence[LocomoUpdatePair] = True,
    views: Sequence[str] = (),
    progress: bool = True,
    protocol: Protocol | None = None,
) -> dict[str, Any]:
    """Every system lives through every conversation (one store each); results as a dict.

    ``update_pairs`` adds the curated LoCoMo update questions (checkpoint ``update``,
    scored by ``update_score``) to the conversations that have them (``True``: the
    curated list; or a list of pairs)."""
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValueError("ks must be positive integers")
    names = [s.name for s in systems]
    if len(set(names)) != len(names) or not names:
        raise ValueError(f"system names must be unique and non-empty, got {names}")
    work = {c.sample_id: locomo_workload(c, fresh=fresh, categories=categories) for c in conversations}
    if update_pairs:
        pairs = LOCOMO_UPDATE_PAIRS if update_pairs is True else update_pairs
        for c in conversations:
            work[c.sample_id][1].extend(locomo_update_probes(c, pairs))
    low = {c.sample_id: low_value_ids(c) for c in conversations}
    evidence = {c.sample_id: {e for q in c.questions for e in q.evidence} for c in conversations}
    results: dict[str, Any] = {
        "benchmark": "locomo-timeline",
        "ks": ks,
        "search_k": max(ks),
        "protocol": (protocol or Protocol()).as_dict(),
        "dataset": {
            "conversations": len(conversations),
            "sample_ids": [c.sample_id for c in conversations],
            "turns": sum(len(c.docs) for c in conversations),
            "sessions": sum(len(w[0]) for w in work.values()),
            "days": {sid: (w[0][-1].time - w[0][0].time) / DAY for sid, w in work.items()},
            "questions_end": sum(1 for w in work.values() for p in w[1] if p.checkpoint == "end"),
            "questions_fresh": sum(1 for w in work.values() for p in w[1] if p.checkpoint == "fresh"),
            "update_questions": sum(1 for w in work.values() for p in w[1] if p.checkpoint == "update"),
            "low_value_turns": sum(len(v) for v in low.values()),
        },
        "bootstrap": dict(DEFAULT_BOOTSTRAP),
        "systems": {},
    }
    total = len(systems) * len(conversations)
    with tqdm(total=total, desc="locomo[timeline]", disable=not progress, unit="conv") as bar:
        for system in systems:
            recs: list[dict[str, Any]] = []
            life: dict[str, Any] = {}
            view_out: dict[str, Any] = {}
            shares: dict[str, dict[str, int]] = {}
            latencies: list[float] = []
            t0 = time.perf_counter()
            for conv in conversations:
                bar.set_postfix_str(f"{system.name} {conv.sample_id}", refresh=False)
                sessions, probes = work[conv.sample_id]
                out = run_unit(system, sessions, probes, k=max(ks), score=_score(ks),
                               views=views if isinstance(system, LifeStore) else (), after_end=_doc_states)
                recs += out["records"]
                latencies += out["search_ms"]
                life[conv.sample_id] = out["lifecycle"]
                for v, data in (out.get("views") or {}).items():
                    view_out.setdefault(v, []).extend(data["records"])
                states = out.get("doc_states")
                if states is not None:
                    _add_shares(shares, states, evidence[conv.sample_id], low[conv.sample_id])
                    arch = {d for d, s in states.items() if s["archived"]}
                    for r in out["records"]:
                        if r["checkpoint"] == "end":
                            r["evidence_archived"] = sum(1 for g in r["gold"] if g in arch)
                bar.update(1)
            sysres: dict[str, Any] = {
                "name": system.name,
                "kind": getattr(system, "kind", "baseline"),
                "questions": recs,
                "lifecycle": life,
                "seconds": time.perf_counter() - t0,
                "search_latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
            }
            if shares:
                sysres["archived_share"] = {k: {**v, "share": v["archived"] / v["n"] if v["n"] else None}
                                            for k, v in shares.items()}
            if view_out:
                sysres["views"] = {v: _view_summary(rows, recs, ks) for v, rows in view_out.items()}
            results["systems"][system.name] = sysres
    return summarize_timeline(results)


def _add_shares(acc: dict[str, dict[str, int]], states: dict[str, Any], evidence: set[str], low: set[str]) -> None:
    for doc, s in states.items():
        cls = "evidence" if doc in evidence else ("low_value" if doc in low else "other")
        for key in (cls, "all"):
            slot = acc.setdefault(key, {"n": 0, "archived": 0})
            slot["n"] += 1
            slot["archived"] += int(bool(s["archived"]))


def _view_summary(rows: list[dict[str, Any]], recs: list[dict[str, Any]], ks: Sequence[int]) -> dict[str, Any]:
    out = [{"qid": r["qid"], "ranked": r["ranked"], "metrics": r["metrics"]} for r in rows if r["checkpoint"] == "end"]
    upd = [r for r in rows if r["checkpoint"] == "update"]
    res: dict[str, Any] = {"questions": out, "summary": aggregate(out, locomo_metric_names(ks))["overall"]}
    if upd:
        res["update"] = summarize_updates(upd)["overall"]
    return res


def summarize_timeline(results: dict[str, Any]) -> dict[str, Any]:
    """(Re)compute the per-checkpoint summaries of every system (in place)."""
    ks = results["ks"]
    names = locomo_metric_names(ks)
    headline = locomo_headline_metrics(ks)
    bs = {**DEFAULT_BOOTSTRAP, **results.get("bootstrap", {})}
    kw = {"confidence": bs["confidence"], "n_resamples": bs["n_resamples"], "method": bs["method"], "seed": bs["seed"]}
    for sysres in results["systems"].values():
        recs = sysres["questions"]
        summary: dict[str, Any] = {}
        for cp in CHECKPOINTS:
            sub = [r for r in recs if r["checkpoint"] == cp]
            if sub:
                summary[cp] = aggregate(sub, names, group_by="group", ci_metrics=headline, **kw)
        fresh_ids = {r["qid"] for r in recs if r["checkpoint"] == "fresh"}
        if fresh_ids:
            sub = [r for r in recs if r["checkpoint"] == "end" and r["qid"] in fresh_ids]
            summary["end_on_fresh_subset"] = aggregate(sub, names, ci_metrics=headline, **kw)
        upd = [r for r in recs if r["checkpoint"] == "update"]
        if upd:
            summary["update"] = summarize_updates(upd, seed=bs["seed"])
        sysres["summary"] = summary
    return results
