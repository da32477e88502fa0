"""Metacognitive HyperAgent: a meta-policy that tunes mechanism parameters.

It reads the MetacognitiveMonitor's signals and moves a few declared parameters
one bounded step at a time. The paper names it ("meta-policy over
MetacognitiveMonitor") but neither the paper nor the authors' code defines it; this
is our definition. Rules, each needing ``min_samples`` observations:

===============================  ==========================================  =========================
signal                           change                                       parameter
===============================  ==========================================  =========================
keyword recalls miss (hit rate   +0.05                                        ``lexical_weight``
< target) and semantic ones not
semantic recalls miss, keyword   -0.05                                        ``lexical_weight``
ones not
ECE > threshold, overconfident   x 0.9 (review sooner)                        ``review_interval_factor``
ECE > threshold, underconfident  / 0.9 (review later)                         ``review_interval_factor``
recency bias > threshold         x 1.25 (look further back)                   ``recency_window_days``
recency bias < -threshold        x 0.8                                        ``recency_window_days``
confirmation bias > threshold    +0.1 (weigh contradicting evidence more)     ``contradiction_weight``
confirmation bias < -threshold   -0.1                                         ``contradiction_weight``
===============================  ==========================================  =========================

Every value is clamped to its tunable's bounds, a parameter changes at most once
per ``cooldown_s`` (so the monitor can see the effect of a change before the next
one), and every change is logged as a :class:`ParamChange`. Rules only fire on a
detected problem; there is no "relax back" rule, which would undo the fix as soon
as it worked and oscillate. The coordinator maps the names onto its own knobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import ConfigError
from ..params import Params, bounded
from .metacognition import KindEfficiency, MetacognitiveSignals


@dataclass(frozen=True)
class Tunable:
    """A parameter the HyperAgent may move: default, inclusive bounds, step."""

    name: str
    default: float
    lo: float
    hi: float
    step: float
    multiplicative: bool
    doc: str = ""

    def __post_init__(self) -> None:
        if not self.lo <= self.default <= self.hi:
            raise ConfigError(f"tunable {self.name}: default {self.default} outside [{self.lo}, {self.hi}]")
        if self.step <= 0 or (self.multiplicative and (self.step <= 1.0 or self.lo <= 0)):
            raise ConfigError(f"tunable {self.name}: invalid step {self.step} for its bounds")

    def moved(self, value: float, direction: int) -> float:
        if self.multiplicative:
            new = value * (self.step if direction > 0 else 1.0 / self.step)
        else:
            new = value + direction * self.step
        return min(self.hi, max(self.lo, new))


TUNABLES: Mapping[str, Tunable] = {
    t.name: t
    for t in (
        Tunable("lexical_weight", 0.3, 0.0, 0.8, 0.05, False, "weight of the lexical (BM25) score in recall fusion"),
        Tunable("review_interval_factor", 1.0, 0.3, 2.0, 1 / 0.9, True, "multiplier on scheduled review intervals"),
        Tunable("recency_window_days", 7.0, 1.0, 90.0, 1.25, True, "horizon of the recency boost in recall (days)"),
        Tunable("contradiction_weight", 1.0, 0.5, 3.0, 0.1, False,
                "weight of contradicting evidence in confidence updates"),
    )
}


@dataclass(frozen=True)
class HyperAgentParams(Params):
    efficiency_target: float = bounded(0.5, 0.0, 1.0, "hit rate below which a query kind counts as missing")
    calibration_threshold: float = bounded(0.1, 0.0, 1.0, "ECE above which review intervals move")
    bias_threshold: float = bounded(0.15, 0.0, 1.0, "|confirmation bias| above which the evidence weight moves")
    recency_threshold: float = bounded(0.15, 0.0, 1.0, "|recency bias| above which the recency window moves")
    min_samples: int = bounded(10, 1, 100000, "observations a signal needs before a rule may fire")
    cooldown_s: float = bounded(86400.0, 0.0, 365 * 86400.0, "minimum time between two changes of one parameter")
    max_log: int = bounded(1000, 1, 1_000_000, "number of most recent changes kept in the state")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("min_samples", "max_log"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ConfigError(f"HyperAgentParams.{name} must be a whole number")


DEFAULT_PARAMS = HyperAgentParams()

# query kinds (``RetrievalOutcome.query_kind``) the lexical-weight rule compares
LEXICAL_KIND = "keyword"
SEMANTIC_KIND = "semantic"


@dataclass(frozen=True)
class ParamChange:
    name: str
    old: float
    new: float
    reason: str
    at: float


@dataclass(frozen=True)
class HyperAgentState:
    values: Mapping[str, float]
    last_changed: Mapping[str, float] = field(default_factory=dict)
    log: tuple[ParamChange, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"values": dict(self.values), "last_changed": dict(self.last_changed),
                "log": [asdict(c) for c in self.log]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HyperAgentState:
        return cls(values={k: float(v) for k, v in data["values"].items()},
                   last_changed={k: float(v) for k, v in data.get("last_changed", {}).items()},
                   log=tuple(ParamChange(**c) for c in data.get("log", ())))


def initial_state(
    *, values: Mapping[str, float] | None = None, tunables: Mapping[str, Tunable] = TUNABLES
) -> HyperAgentState:
    """Start from the tunables' defaults, overridden by ``values`` (the coordinator's current settings)."""
    vals = {name: t.default for name, t in tunables.items()}
    for name, v in (values or {}).items():
        if name not in tunables:
            raise ConfigError(f"unknown tunable {name!r}; known: {', '.join(tunables)}")
        t = tunables[name]
        if not t.lo <= v <= t.hi:
            raise ConfigError(f"tunable {name}={v!r} is outside its legal range [{t.lo}, {t.hi}]")
        vals[name] = float(v)
    return HyperAgentState(values=vals)


def _below_target(eff: KindEfficiency | None, n: int, target: float) -> KindEfficiency | None:
    """``eff`` when it counts at least ``n`` recalls and hits below ``target``, else None."""
    return eff if eff is not None and eff.n >= n and eff.hit_rate < target else None


def _proposals(signals: MetacognitiveSignals, params: HyperAgentParams) -> list[tuple[str, int, str]]:
    """(parameter, direction, reason) for every rule that fires."""
    n = params.min_samples
    out: list[tuple[str, int, str]] = []
    kw = signals.efficiency_by_kind.get(LEXICAL_KIND)
    sem = signals.efficiency_by_kind.get(SEMANTIC_KIND)
    tgt = params.efficiency_target
    kw_bad = _below_target(kw, n, tgt)
    sem_bad = _below_target(sem, n, tgt)
    if kw_bad is not None and sem_bad is None:
        out.append(("lexical_weight", +1, f"{LEXICAL_KIND} recalls hit only {kw_bad.hit_rate:.0%} (n={kw_bad.n})"))
    elif sem_bad is not None and kw_bad is None and kw is not None and kw.n >= n:
        out.append(("lexical_weight", -1, f"{SEMANTIC_KIND} recalls hit only {sem_bad.hit_rate:.0%} (n={sem_bad.n})"))

    if signals.ece is not None and signals.n_calibrated >= n and signals.ece > params.calibration_threshold:
        over = (signals.overconfidence or 0.0) > 0
        out.append(("review_interval_factor", -1 if over else +1,
                    f"{'over' if over else 'under'}confident recalls: ECE {signals.ece:.3f}"))

    if signals.recency_bias is not None and signals.n_retrievals >= n:
        if signals.recency_bias > params.recency_threshold:
            out.append(("recency_window_days", +1, f"recency bias {signals.recency_bias:+.2f}"))
        elif signals.recency_bias < -params.recency_threshold:
            out.append(("recency_window_days", -1, f"recency bias {signals.recency_bias:+.2f}"))

    cb = signals.confirmation_bias
    if cb is not None and signals.n_evidence >= 2 * n:
        if cb > params.bias_threshold:
            out.append(("contradiction_weight", +1, f"confirmation bias {cb:+.2f}"))
        elif cb < -params.bias_threshold:
            out.append(("contradiction_weight", -1, f"contradiction bias {cb:+.2f}"))
    return out


def step(
    state: HyperAgentState,
    *,
    signals: MetacognitiveSignals,
    now: float,
    params: HyperAgentParams = DEFAULT_PARAMS,
    tunables: Mapping[str, Tunable] = TUNABLES,
) -> tuple[HyperAgentState, tuple[ParamChange, ...]]:
    """Apply every rule that fires (and is out of cooldown); return the new state and the changes."""
    values = dict(state.values)
    last = dict(state.last_changed)
    changes: list[ParamChange] = []
    for name, direction, reason in _proposals(signals, params):
        t = tunables.get(name)
        if t is None or name not in values:
            continue  # the coordinator does not expose this knob
        if name in last and now - last[name] < params.cooldown_s:
            continue
        old = values[name]
        new = t.moved(old, direction)
        if new == old:
            continue  # already at its bound
        values[name] = new
        last[name] = float(now)
        changes.append(ParamChange(name=name, old=old, new=new, reason=reason, at=float(now)))
    log = (*state.log, *changes)[-int(params.max_log) :]
    return HyperAgentState(values=values, last_changed=last, log=log), tuple(changes)


__all__ = [
    "DEFAULT_PARAMS",
    "LEXICAL_KIND",
    "SEMANTIC_KIND",
    "TUNABLES",
    "HyperAgentParams",
    "HyperAgentState",
    "ParamChange",
    "Tunable",
    "initial_state",
    "step",
]
