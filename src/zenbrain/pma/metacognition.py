"""MetacognitiveMonitor: watch how memory is used and flag systematic errors.

The monitor is an event log (plain data) plus pure functions that read it:

* retrieval outcomes: how many results a recall returned and how many were used,
  the stated confidence of the answer and whether it proved correct, and the share
  of recent memories among the results vs among the candidates;
* evidence decisions: a piece of evidence that confirms or contradicts a memory,
  and whether it was accepted;
* prediction errors above 0.7, which open novelty windows.

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
* retrieval efficiency = hit rate (share of recalls with at least one used
  result) and usage rate (used / returned), overall and per query kind; flagged
  when the hit rate falls below 0.5;
* calibration = Brier score and expected calibration error (10 equal-width bins)
  of stated confidence against observed correctness; flagged when ECE > 0.1;
* novelty window: for 10 minutes after a PE > 0.7 the encoding boost is
  ``0.2 * (1 - elapsed / 10 min)``.

Every signal needs ``min_samples`` observations before it can raise an alert.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("calibration_bins", "min_samples", "max_events"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ConfigError(f"MetacognitionParams.{name} must be a whole number")


DEFAULT_PARAMS = MetacognitionParams()


@dataclass(frozen=True)
class RetrievalOutcome:
    at: float
    query_kind: str = "general"
    returned: int = 0
    used: int = 0
    confidence: float | None = None  # stated confidence of the answer built on the recall
    correct: bool | None = None  # observed correctness of that answer
    recent_share: float | None = None  # share of returned memories younger than the recency horizon
    recent_base: float | None = None  # share of candidate memories younger than that horizon


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

    def to_dict(self) -> dict[str, Any]:
        # vars() instead of asdict(): the log is flat and serialised after every recall.
        return {
            "retrievals": [dict(vars(r)) for r in self.retrievals],
            "evidence": [dict(vars(e)) for e in self.evidence],
            "surprises": [dict(vars(s)) for s in self.surprises],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MonitorState:
        return cls(
            retrievals=tuple(RetrievalOutcome(**r) for r in data.get("retrievals", ())),
            evidence=tuple(EvidenceDecision(**e) for e in data.get("evidence", ())),
            surprises=tuple(SurpriseEvent(**s) for s in data.get("surprises", ())),
        )


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
    used: int,
    query_kind: str = "general",
    confidence: float | None = None,
    correct: bool | None = None,
    recent_share: float | None = None,
    recent_base: float | None = None,
    params: MetacognitionParams = DEFAULT_PARAMS,
) -> MonitorState:
    """Record the outcome of one recall (call when the caller knows which results it used)."""
    ev = retrieval_event(at=at, returned=returned, used=used, query_kind=query_kind, confidence=confidence,
                         correct=correct, recent_share=recent_share, recent_base=recent_base)
    return MonitorState((*state.retrievals, ev)[-params.max_events :], state.evidence, state.surprises)


def retrieval_event(
    *,
    at: float,
    returned: int,
    used: int,
    query_kind: str = "general",
    confidence: float | None = None,
    correct: bool | None = None,
    recent_share: float | None = None,
    recent_base: float | None = None,
) -> RetrievalOutcome:
    """One validated retrieval outcome (what ``log_retrieval`` appends)."""
    if returned < 0 or used < 0 or used > returned:
        raise ValidationError(f"need 0 <= used <= returned, got used={used}, returned={returned}")
    return RetrievalOutcome(
        at=_finite("at", at), query_kind=str(query_kind), returned=int(returned), used=int(used),
        confidence=_unit("confidence", confidence), correct=None if correct is None else bool(correct),
        recent_share=_unit("recent_share", recent_share), recent_base=_unit("recent_base", recent_base),
    )


def log_evidence(
    state: MonitorState, *, at: float, confirming: bool, accepted: bool, params: MetacognitionParams = DEFAULT_PARAMS
) -> MonitorState:
    """Record whether a confirming or contradicting piece of evidence was accepted."""
    ev = EvidenceDecision(at=_finite("at", at), confirming=bool(confirming), accepted=bool(accepted))
    return MonitorState(state.retrievals, (*state.evidence, ev)[-params.max_events :], state.surprises)


def log_prediction_error(
    state: MonitorState, *, at: float, pe: float, params: MetacognitionParams = DEFAULT_PARAMS
) -> MonitorState:
    """Record a prediction error; only those above ``novelty_pe`` are kept (they open windows)."""
    ev = surprise_event(at=at, pe=pe, params=params)
    if ev is None:
        return state
    return MonitorState(state.retrievals, state.evidence, (*state.surprises, ev)[-params.max_events :])


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


def signals(state: MonitorState, *, now: float, params: MetacognitionParams = DEFAULT_PARAMS) -> MetacognitiveSignals:
    """All signals over the window ending at ``now``, with the alerts they raise."""
    lo = now - params.window_s
    rets = [r for r in state.retrievals if lo <= r.at <= now]
    evid = [e for e in state.evidence if lo <= e.at <= now]
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

    def hit_rate(rs: list[RetrievalOutcome]) -> float:  # rs is not empty
        return sum(1 for r in rs if r.used > 0) / len(rs)

    def usage_rate(rs: list[RetrievalOutcome]) -> float | None:
        tot = sum(r.returned for r in rs)
        return sum(r.used for r in rs) / tot if tot else None

    hit = hit_rate(rets) if rets else None
    usage = usage_rate(rets)
    kinds: dict[str, list[RetrievalOutcome]] = {}
    for r in rets:
        kinds.setdefault(r.query_kind, []).append(r)
    by_kind = {}
    for k in sorted(kinds):
        by_kind[k] = KindEfficiency(n=len(kinds[k]), hit_rate=hit_rate(kinds[k]), usage_rate=usage_rate(kinds[k]))
    if hit is not None and len(rets) >= n_min and hit < params.efficiency_floor:
        alerts.append(Alert("retrieval_efficiency", hit, params.efficiency_floor,
                            f"only {hit:.0%} of recalls produced a used result"))

    cal = [(r.confidence, r.correct) for r in rets if r.confidence is not None and r.correct is not None]
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
        n_calibrated=len(cal), novelty_boost=novelty_boost(state, now=now, params=params), alerts=tuple(alerts),
    )


__all__ = [
    "DEFAULT_PARAMS",
    "Alert",
    "EvidenceDecision",
    "KindEfficiency",
    "MetacognitionParams",
    "MetacognitiveSignals",
    "MonitorState",
    "RetrievalOutcome",
    "SurpriseEvent",
    "calibration",
    "log_evidence",
    "log_prediction_error",
    "log_retrieval",
    "novelty_boost",
    "prune",
    "signals",
]
