"""Where the MetacognitiveMonitor's event log lives: append-only segments in the kv store.

The log grows by one event per recall. Kept as one value it would be decoded and
re-encoded whole on every recall (up to ``max_events`` entries, about a megabyte at the
default 10,000), so each kind of event is split into segments of ``SEGMENT`` events
under their own keys, used as a ring: an append reads and rewrites only the newest
segment and a small head record; readers that need the whole window (sleep's
HyperAgent step) read the ring in order. Values written by older versions under the
single key ``metacognition`` are read as the oldest part of the log.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..pma import metacognition as mc
from ..state import KV_METACOG
from ..storage.base import Partition, Store

SEGMENT = 64
KINDS = ("retrievals", "evidence", "surprises", "feedback")
_EVENT: dict[str, Callable[..., MonitorEvent]] = {
    "evidence": mc.EvidenceDecision, "surprises": mc.SurpriseEvent, "feedback": mc.FeedbackEvent}
HEAD_KEY = f"{KV_METACOG}:head"


MonitorEvent = mc.RetrievalOutcome | mc.EvidenceDecision | mc.SurpriseEvent | mc.FeedbackEvent


def _event(kind: str, row: Mapping[str, Any]) -> MonitorEvent:
    if kind == "retrievals":
        return mc.retrieval_from_row(row)
    return _EVENT[kind](**row)


def ring_size(params: mc.MetacognitionParams) -> int:
    """Segments kept per kind: enough for ``max_events`` whatever the fill of the newest."""
    return math.ceil(int(params.max_events) / SEGMENT) + 1


def _segment_key(kind: str, seg: int, ring: int) -> str:
    return f"{KV_METACOG}:{kind}:{seg % ring}"


def load(storage: Store, part: Partition, params: mc.MetacognitionParams = mc.DEFAULT_PARAMS,
         kinds: Iterable[str] = KINDS, since: float | None = None) -> mc.MonitorState:
    """The monitor's log (the newest ``max_events`` of each kind, oldest first).

    ``since``: only events at or after this time are needed; older segments are not read
    (the result may still hold some older events of the segments it reads)."""
    kinds = tuple(kinds)
    head = storage.kv_get(part, HEAD_KEY) or {}
    legacy = storage.kv_get(part, KV_METACOG)
    ring = ring_size(params)
    out: dict[str, tuple[Any, ...]] = {}
    for kind in KINDS:
        if kind not in kinds:
            out[kind] = ()
            continue
        segments: list[list[Mapping[str, Any]]] = []  # newest first
        h = head.get(kind)
        if h:
            last = int(h["seg"])
            for seg in range(last, max(0, last - ring + 1) - 1, -1):
                rows = storage.kv_get(part, _segment_key(kind, seg, ring)) or []
                segments.append(rows)
                if since is not None and rows and float(rows[0]["at"]) < since:
                    break
        older = legacy.get(kind, ()) if isinstance(legacy, Mapping) else ()
        rows_all = [*older, *(r for rows in reversed(segments) for r in rows)]
        out[kind] = tuple(_event(kind, r) for r in rows_all[-int(params.max_events):])
    return mc.MonitorState(out["retrievals"], out["evidence"], out["surprises"], out["feedback"])


def _end(head: Mapping[str, Any], kind: str) -> tuple[int, int]:
    """The newest segment of a kind and how many events it holds."""
    h = head.get(kind) or {"seg": 0, "n": 0}
    return int(h["seg"]), int(h["n"])


def appended(storage: Store, part: Partition, params: mc.MetacognitionParams = mc.DEFAULT_PARAMS, *,
             retrievals: Iterable[mc.RetrievalOutcome] = (), evidence: Iterable[mc.EvidenceDecision] = (),
             surprises: Iterable[mc.SurpriseEvent] = (), feedback: Iterable[mc.FeedbackEvent] = (),
             head: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The kv writes that append these events: ``{key: value}``, for the caller to put in
    its own transaction (so the log changes together with what it describes).

    ``head``: the stored value of ``HEAD_KEY`` when the caller has read it already
    (None: read here)."""
    new: dict[str, list[MonitorEvent]] = {"retrievals": list(retrievals), "evidence": list(evidence),
                                          "surprises": list(surprises), "feedback": list(feedback)}
    if not any(new.values()):
        return {}
    if head is None:
        head = storage.kv_get(part, HEAD_KEY)
    head = dict(head or {})
    ring = ring_size(params)
    writes: dict[str, Any] = {}
    ends = {kind: _end(head, kind) for kind, events in new.items() if events}
    # The newest segment of each kind is read (all of them in one call) only when events
    # are added to it; a full one stays as it is and the events start the next.
    stored = storage.kv_get_many(part, [_segment_key(kind, seg, ring) for kind, (seg, n) in ends.items()
                                        if 0 < n < SEGMENT])
    for kind, (seg, n) in ends.items():
        if n >= SEGMENT:
            seg, n = seg + 1, 0
        current = list(stored.get(_segment_key(kind, seg, ring)) or ()) if n else []
        for ev in new[kind]:
            if n >= SEGMENT:
                writes[_segment_key(kind, seg, ring)] = current
                seg, n, current = seg + 1, 0, []
            current.append(mc.event_row(ev))
            n += 1
        writes[_segment_key(kind, seg, ring)] = current
        head[kind] = {"seg": seg, "n": n}
    writes[HEAD_KEY] = head
    return writes
