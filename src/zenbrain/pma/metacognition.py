"""MetacognitiveMonitor: watch how memory is used and flag systematic errors.

The monitor is an event log (plain data) plus pure functions that read it:

* retrieval outcomes: how many results a recall returned, which (the ids of the
  first ``logged_ids``), how many were used (None while that is not known yet), the
  stated confidence of the answer and whether it proved correct, and the share of
  recent memories (younger than ``recency_horizon_s``) among the results vs among the
  candidates;
* feedback on a memory: whether it was used (reviewed Good or Easy, a successful
  outcome, supporting evidence), whether it proved correct, and the confidence the
  library had in it at that moment (its predicted retrievability);
* evidence decisions: a piece of evidence that confirms or contradicts a memory,
  and whether it was accepted;
* prediction errors above 0.7, which open novelty windows.

A recall whose ``used`` is None is resolved by feedback: feedback on one of its
results within ``feedback_window_s`` after it (credited to the latest such recall)
rates it, and the results that feedback marked used are its used ones. A recall
nobody rated is left out of the efficiency signals; an empty recall is a miss.

Signals over a sliding window (30 days):

* confirmation bias = accept rate of confirming evidence - accept rate of
  contradicting evidence; flagged above 0.15 (the paper's threshold; the
  benchmark's definition). The authors' monitor uses a different ratio,
  confirming / (confirming + contradicting), which measures what evidence arrives,
  not how it is treated;
* recency bias = mean over recalls of (share of recent memories in the results -
  share among the candidates); flagged above 0.15. Positive: recall favours the
  recent beyond what the store offers. (The authors compare accept rates of the
  last 7 days with older ones, which is drift, not recency bias);
* retrieval efficiency = hit rate (share of rated recalls with at least one used
  result) and usage rate (used / returned), overall and per query kind; flagged
  when the hit rate falls below 0.5;
* calibration = Brier score and expected calibration error (10 equal-width bins)
  of stated confidence against observed correctness (retrieval outcomes that carry
  both, and feedback with a confidence and a correctness); flagged when ECE > 0.1;
* novelty window: for 10 minutes after a PE > 0.7 the encoding boost is
  ``0.2 * (1 - elapsed / 10 min)``.

Every signal needs ``min_samples`` observations before it can raise an alert.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded

DAY = 86400.0


@dataclass(frozen=True)
class MetacognitionParams(Params):
    window_s: float = bounded(30 * DAY, 60.0, 3650 * DAY, "sliding window of the signals (s)")
    bias_threshold: float = bounded(0.15, 0.0, 1.0, "confirmation bias above which an alert fires")
    recency_threshold: float = bounded(0.15, 0.0, 1.0, "recency bias above which an alert fires")
    efficiency_floor: float = bounded(0.5, 0.0, 1.0, "hit rate below which an alert fires")
    ece_threshold: float = bounded(0.1, 0.0, 1.0, "expected calibration error above which an alert fires")
    calibration_bins: int = bounded(10, 1, 100, "equal-width confidence bins of the ECE")
    min_samples: int = bounded(10, 1, 100000, "observations a signal needs before it may alert")
    novelty_pe: float = bounded(0.7, 0.0, 1.0, "prediction error above which a novelty window opens")
    novelty_window_s: float = bounded(600.0, 0.0, 86400.0, "length of a novelty window (s)")
    novelty_boost: float = bounded(0.2, 0.0, 1.0, "encoding boost at the start of a novelty window")
    max_events: int = bounded(10000, 10, 10_000_000, "per kind of event, older entries beyond this are dropped")
    recency_horizon_s: float = bounded(7 * DAY, 60.0, 3650 * DAY, "memories younger than this count as recent")
    feedback_window_s: float = bounded(DAY, 1.0, 365 * DAY, "feedback this soon after a recall rates it")
    logged_ids: int = bounded(20, 0, 1000, "a recall's first results whose feedback rates it")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("calibration_bins", "min_samples", "max_events", "logged_ids"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ConfigError(f"MetacognitionParams.{name} must be a whole number")


DEFAULT_PARAMS = MetacognitionParams()


@dataclass(frozen=True)
class RetrievalOutcome:
    at: float
    query_kind: str = "general"
    returned: int = 0
    used: int | None = 0  # None: the recall's results were not rated (yet)
    confidence: float | None = None  # stated confidence of the answer built on the recall
    correct: bool | None = None  # observed correctness of that answer
    recent_share: float | None = None  # share of returned memories younger than the recency horizon
    recent_base: float | None = None  # share of candidate memories younger than that horizon
    ids: tuple[str, ...] = ()  # the first results, whose feedback rates the recall


@dataclass(frozen=True)
class FeedbackEvent:
    at: float
    memory_id: str
    used: bool  # the memory served: reviewed Good or Easy, a successful outcome, supporting evidence
    correct: bool | None = None  # it was remembered correctly (an FSRS success: Hard or better; an outcome)
    confidence: float | None = None  # the library's confidence in it then (predicted retrievability)


@dataclass(frozen=True)
class EvidenceDecision:
    at: float
    confirming: bool
    accepted: bool


@dataclass(frozen=True)
class SurpriseEvent:
    at: float
    pe: float


@dataclass(frozen=True)
class MonitorState:
    retrievals: tuple[RetrievalOutcome, ...] = ()
    evidence: tuple[EvidenceDecision, ...] = ()
    surprises: tuple[SurpriseEvent, ...] = ()
    feedback: tuple[FeedbackEvent, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        # vars() instead of asdict(): the log is flat and serialised after every recall.
        return {
            "retrievals": [event_row(r) for r in self.retrievals],
            "evidence": [dict(vars(e)) for e in self.evidence],
            "surprises": [dict(vars(s)) for s in self.surprises],
            "feedback": [dict(vars(f)) for f in self.feedback],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MonitorState:
        return cls(
            retrievals=tuple(retrieval_from_row(r) for r in data.get("retrievals", ())),
            evidence=tuple(EvidenceDecision(**e) for e in data.get("evidence", ())),
            surprises=tuple(SurpriseEvent(**s) for s in data.get("surprises", ())),
            feedback=tuple(FeedbackEvent(**f) for f in data.get("feedback", ())),
        )

    def with_events(self, *, retrievals: Iterable[RetrievalOutcome] = (), evidence: Iterable[EvidenceDecision] = (),
                    surprises: Iterable[SurpriseEvent] = (), feedback: Iterable[FeedbackEvent] = ()) -> MonitorState:
        """This log with events appended."""
        return MonitorState((*self.retrievals, *retrievals), (*self.evidence, *evidence),
                            (*self.surprises, *surprises), (*self.feedback, *feedback))

    def trimmed(self, max_events: int) -> MonitorState:
        """The newest ``max_events`` events of each kind."""
        n = int(max_events)
        return MonitorState(self.retrievals[-n:], self.evidence[-n:], self.surprises[-n:], self.feedback[-n:])


def event_row(ev: Any) -> dict[str, Any]:
    """An event as plain data (the ids of a retrieval as a list)."""
    row = dict(vars(ev))
    if "ids" in row:
        row["ids"] = list(row["ids"])
    return row


def retrieval_from_row(row: Mapping[str, Any]) -> RetrievalOutcome:
    """A retrieval outcome from its stored row (rows written before ``ids`` existed have none)."""
    return RetrievalOutcome(**{**row, "ids": tuple(row.get("ids", ()))})


@dataclass(frozen=True)
class Alert:
    kind: str  # confirmation_bias, recency_bias, retrieval_efficiency, calibration
    value: float
    threshold: float
    message: str


@dataclass(frozen=True)
class KindEfficiency:
    n: int
    hit_rate: float
    usage_rate: float | None


@dataclass(frozen=True)
class MetacognitiveSignals:
    at: float
    confirmation_bias: float | None
    confirm_accept_rate: float | None
    contradict_accept_rate: float | None
    recency_bias: float | None
    hit_rate: float | None
    usage_rate: float | None
    efficiency_by_kind: Mapping[str, KindEfficiency]
    brier: float | None
    ece: float | None
    overconfidence: float | None  # mean stated confidence - observed accuracy
    n_retrievals: int
    n_evidence: int
    n_calibrated: int
    novelty_boost: float
    alerts: tuple[Alert, ...] = field(default=())
    n_rated: int = 0  # recalls whose use is known (feedback arrived, or it returned nothing)

    def alert_kinds(self) -> frozenset[str]:
        return frozenset(a.kind for a in self.alerts)


def _finite(name: str, v: float) -> float:
    if not math.isfinite(v):
        raise ValidationError(f"{name} must be finite, got {v!r}")
    return float(v)


def _unit(name: str, v: float | None) -> float | None:
    if v is None:
        return None
    v = _finite(name, v)
    if not 0.0 <= v <= 1.0:
        raise ValidationError(f"{name} must be in [0, 1], got {v!r}")
    return v


def log_retrieval(
    state: MonitorState,
    *,
    at: float,
    returned: int,
    used: int | None,
    query_kind: str = "general",
    confidence: float | None = None,
    correct: bool | None = None,
    recent_share: float | None = None,
    recent_base: float | None = None,
    ids: Iterable[str] = (),
    params: MetacognitionParams = DEFAULT_PARAMS,
) -> MonitorState:
    """Record the outcome of one recall (``used=None`` until feedback on ``ids`` rates it)."""
    ev = retrieval_event(at=at, returned=returned, used=used, query_kind=query_kind, confidence=confidence,
                         correct=correct, recent_share=recent_share, recent_base=recent_base, ids=ids, params=params)
    return state.with_events(retrievals=[ev]).trimmed(params.max_events)


def retrieval_event(
    *,
    at: float,
    returned: int,
    used: int | None,
    query_kind: str = "general",
    confidence: float | None = None,
    correct: bool | None = None,
    recent_share: float | None = None,
    recent_base: float | None = None,
    ids: Iterable[str] = (),
    params: MetacognitionParams = DEFAULT_PARAMS,
) -> RetrievalOutcome:
    """One validated retrieval outcome (what ``log_retrieval`` appends); ``used=None``: not
    known yet. Only the first ``logged_ids`` of ``ids`` are kept."""
    if returned < 0 or (used is not None and (used < 0 or used > returned)):
        raise ValidationError(f"need 0 <= used <= returned, got used={used}, returned={returned}")
    return RetrievalOutcome(
        at=_finite("at", at), query_kind=str(query_kind), returned=int(returned),
        used=None if used is None else int(used),
        confidence=_unit("confidence", confidence), correct=None if correct is None else bool(correct),
        recent_share=_unit("recent_share", recent_share), recent_base=_unit("recent_base", recent_base),
        ids=tuple(str(i) for i in ids)[: int(params.logged_ids)],
    )


def feedback_event(*, at: float, memory_id: str, used: bool, correct: bool | None = None,
                   confidence: float | None = None) -> FeedbackEvent:
    """One validated piece of feedback on a memory (what ``log_feedback`` appends)."""
    return FeedbackEvent(at=_finite("at", at), memory_id=str(memory_id), used=bool(used),
                         correct=None if correct is None else bool(correct), confidence=_unit("confidence", confidence))


def log_feedback(state: MonitorState, *, at: float, memory_id: str, used: bool, correct: bool | None = None,
                 confidence: float | None = None, params: MetacognitionParams = DEFAULT_PARAMS) -> MonitorState:
    """Record feedback on a memory: it rates the latest recall that returned it (if recent)."""
    ev = feedback_event(at=at, memory_id=memory_id, used=used, correct=correct, confidence=confidence)
    return state.with_events(feedback=[ev]).trimmed(params.max_events)


def log_evidence(
    state: MonitorState, *, at: float, confirming: bool, accepted: bool, params: MetacognitionParams = DEFAULT_PARAMS
) -> MonitorState:
    """Record whether a confirming or contradicting piece of evidence was accepted."""
    ev = evidence_event(at=at, confirming=confirming, accepted=accepted)
    return state.with_events(evidence=[ev]).trimmed(params.max_events)


def evidence_event(*, at: float, confirming: bool, accepted: bool) -> EvidenceDecision:
    """One validated evidence decision (what ``log_evidence`` appends)."""
    return EvidenceDecision(at=_finite("at", at), confirming=bool(confirming), accepted=bool(accepted))


def recent_share(created_at: Any, *, now: float, params: MetacognitionParams = DEFAULT_PARAMS) -> float | None:
    """Share of memories created within ``recency_horizon_s`` before ``now`` (None for none)."""
    t = np.asarray(created_at, dtype=float).reshape(-1)
    if t.size == 0:
        return None
    return float(np.mean(t >= now - params.recency_horizon_s))


def log_prediction_error(
    state: MonitorState, *, at: float, pe: float, params: MetacognitionParams = DEFAULT_PARAMS
) -> MonitorState:
    """Record a prediction error; only those above ``novelty_pe`` are kept (they open windows)."""
    ev = surprise_event(at=at, pe=pe, params=params)
    if ev is None:
        return state
    return state.with_events(surprises=[ev]).trimmed(params.max_events)


def surprise_event(*, at: float, pe: float, params: MetacognitionParams = DEFAULT_PARAMS) -> SurpriseEvent | None:
    """The event a prediction error leaves in the log, or None below ``novelty_pe``."""
    pe = _finite("pe", pe)
    if pe <= params.novelty_pe:
        return None
    return SurpriseEvent(at=_finite("at", at), pe=pe)


def prune(state: MonitorState, *, now: float, params: MetacognitionParams = DEFAULT_PARAMS) -> MonitorState:
    """Drop events older than the window (novelty events older than their window)."""
    lo = now - params.window_s
    return MonitorState(
        tuple(r for r in state.retrievals if r.at >= lo),
        tuple(e for e in state.evidence if e.at >= lo),
        tuple(s for s in state.surprises if s.at >= now - params.novelty_window_s),
        tuple(f for f in state.feedback if f.at >= lo),
    )


def novelty_boost(state: MonitorState, *, now: float, params: MetacognitionParams = DEFAULT_PARAMS) -> float:
    """Encoding boost at ``now``: linear from ``novelty_boost`` to 0 over each open window."""
    best = 0.0
    w = params.novelty_window_s
    for s in state.surprises:
        dt = now - s.at
        if 0.0 <= dt <= w and w > 0.0:
            best = max(best, params.novelty_boost * (1.0 - dt / w))
    return best


def calibration(confidence: Any, correct: Any, *, bins: int = 10) -> tuple[float, float]:
    """(Brier score, expected calibration error) of stated confidences vs 0/1 outcomes."""
    c = np.clip(np.asarray(confidence, dtype=float), 0.0, 1.0)
    y = np.asarray(correct, dtype=float)
    if c.size == 0:
        return math.nan, math.nan
    brier = float(np.mean((c - y) ** 2))
    bins = int(bins)
    idx = np.minimum((c * bins).astype(int), bins - 1)
    ece = 0.0
    for b in np.unique(idx):
        m = idx == b
        ece += m.sum() / c.size * abs(c[m].mean() - y[m].mean())
    return brier, float(ece)


def resolve_use(retrievals: list[RetrievalOutcome], feedback: Iterable[FeedbackEvent], *,
                window_s: float) -> list[int | None]:
    """How many results of each recall (in time order) were used: its own ``used`` when
    logged, else the number of its results that feedback within ``window_s`` after it
    marked used (feedback goes to the latest recall before it that returned the memory),
    None when no feedback reached it."""
    times: dict[str, list[float]] = {}
    rows: dict[str, list[int]] = {}
    for j, r in enumerate(retrievals):
        for m in r.ids:
            times.setdefault(m, []).append(r.at)
            rows.setdefault(m, []).append(j)
    rated = [False] * len(retrievals)
    used: list[set[str]] = [set() for _ in retrievals]
    for fb in feedback:
        ts = times.get(fb.memory_id)
        if ts is None:
            continue
        k = bisect_right(ts, fb.at) - 1
        if k < 0 or fb.at - ts[k] > window_s:
            continue
        j = rows[fb.memory_id][k]
        rated[j] = True
        if fb.used:
            used[j].add(fb.memory_id)
    return [r.used if r.used is not None else (len(used[j]) if rated[j] else None)
            for j, r in enumerate(retrievals)]


def signals(state: MonitorState, *, now: float, params: MetacognitionParams = DEFAULT_PARAMS) -> MetacognitiveSignals:
    """All signals over the window ending at ``now``, with the alerts they raise."""
    lo = now - params.window_s
    rets = sorted((r for r in state.retrievals if lo <= r.at <= now), key=lambda r: r.at)
    evid = [e for e in state.evidence if lo <= e.at <= now]
    fbs = [f for f in state.feedback if lo <= f.at <= now]
    alerts: list[Alert] = []
    n_min = params.min_samples

    conf = [e.accepted for e in evid if e.confirming]
    contra = [e.accepted for e in evid if not e.confirming]
    car = sum(conf) / len(conf) if conf else None
    xar = sum(contra) / len(contra) if contra else None
    cbias = car - xar if car is not None and xar is not None else None
    if cbias is not None and len(conf) >= n_min and len(contra) >= n_min and cbias > params.bias_threshold:
        alerts.append(Alert("confirmation_bias", cbias, params.bias_threshold,
                            f"confirming evidence accepted {car:.0%} vs contradicting {xar:.0%}"))

    rec = [r.recent_share - r.recent_base for r in rets if r.recent_share is not None and r.recent_base is not None]
    rbias = float(np.mean(rec)) if rec else None
    if rbias is not None and len(rec) >= n_min and rbias > params.recency_threshold:
        alerts.append(Alert("recency_bias", rbias, params.recency_threshold,
                            f"recent memories over-represented in results by {rbias:.0%}"))

    # Efficiency counts the recalls whose use is known (feedback rated them, or they were empty).
    use = resolve_use(rets, fbs, window_s=params.feedback_window_s)
    known = [(r, u) for r, u in zip(rets, use) if u is not None]

    def hit_rate(rs: list[tuple[RetrievalOutcome, int]]) -> float:  # rs is not empty
        return sum(1 for _, u in rs if u > 0) / len(rs)

    def usage_rate(rs: list[tuple[RetrievalOutcome, int]]) -> float | None:
        tot = sum(r.returned for r, _ in rs)
        return sum(u for _, u in rs) / tot if tot else None

    hit = hit_rate(known) if known else None
    usage = usage_rate(known)
    kinds: dict[str, list[tuple[RetrievalOutcome, int]]] = {}
    for r, u in known:
        kinds.setdefault(r.query_kind, []).append((r, u))
    by_kind = {}
    for k in sorted(kinds):
        by_kind[k] = KindEfficiency(n=len(kinds[k]), hit_rate=hit_rate(kinds[k]), usage_rate=usage_rate(kinds[k]))
    if hit is not None and len(known) >= n_min and hit < params.efficiency_floor:
        alerts.append(Alert("retrieval_efficiency", hit, params.efficiency_floor,
                            f"only {hit:.0%} of rated recalls produced a used result"))

    cal = [(r.confidence, r.correct) for r in rets if r.confidence is not None and r.correct is not None]
    cal += [(f.confidence, f.correct) for f in fbs if f.confidence is not None and f.correct is not None]
    brier = ece = over = None
    if cal:
        cs = np.array([c for c, _ in cal], dtype=float)
        ys = np.array([y for _, y in cal], dtype=float)
        brier, ece = calibration(cs, ys, bins=params.calibration_bins)
        over = float(cs.mean() - ys.mean())
        if len(cal) >= n_min and ece > params.ece_threshold:
            side = "over" if over > 0 else "under"
            alerts.append(Alert("calibration", ece, params.ece_threshold,
                                f"{side}confident: ECE {ece:.3f}, Brier {brier:.3f}"))

    return MetacognitiveSignals(
        at=float(now), confirmation_bias=cbias, confirm_accept_rate=car, contradict_accept_rate=xar,
        recency_bias=rbias, hit_rate=hit, usage_rate=usage, efficiency_by_kind=by_kind,
        brier=brier, ece=ece, overconfidence=over, n_retrievals=len(rets), n_evidence=len(evid),
        n_calibrated=len(cal), n_rated=len(known), novelty_boost=novelty_boost(state, now=now, params=params), alerts=tuple(alerts),
    )


__all__ = [
    "DEFAULT_PARAMS",
    "Alert",
    "EvidenceDecision",
    "FeedbackEvent",
    "KindEfficiency",
    "MetacognitionParams",
    "MetacognitiveSignals",
    "MonitorState",
    "RetrievalOutcome",
    "SurpriseEvent",
    "calibration",
    "event_row",
    "evidence_event",
    "feedback_event",
    "log_evidence",
    "log_feedback",
    "log_prediction_error",
    "log_retrieval",
    "novelty_boost",
    "prune",
    "recent_share",
    "resolve_use",
    "retrieval_event",
    "retrieval_from_row",
    "signals",
    "surprise_event",
]
