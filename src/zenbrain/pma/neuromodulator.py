"""NeuromodulatorEngine: four slow global signals that tune other mechanisms.

Channels: dopamine (DA, exploration), norepinephrine (NE, learning rate),
serotonin (5HT, consolidation patience) and acetylcholine (ACh, attention to new
information). Each channel has

* a tonic level that events nudge and that homeostasis pulls back to the
  baseline ``b`` with a time-based law::

      tonic(t) = b + (tonic(t0) - b) * homeostasis_decay ** ((t - t0) / homeostasis_period_s)

  (0.95 per hour by default: a deviation halves in about 13.5 hours);
* a phasic burst per event, fading with a 5-minute half-life. Faded bursts add up
  (``sum(a_i * 2 ** (-(t - t_i) / half_life)) = 2 ** (-(t - t_k) / half_life) *
  sum(a_i * 2 ** (-(t_k - t_i) / half_life))``), so a channel keeps one burst: a new one
  takes in the channel's earlier burst faded to its time. A channel's burst is pruned 10
  half-lives after its last event. (One burst per event would make the state grow with
  the event rate: a server answering 100 recalls a second would hold 300,000 bursts.)

``level = clamp(tonic + sum(phasic * 2 ** (-age / half_life)), 0, 1)``.

An event moves every tonic level a fraction ``tonic_rate`` (0.05) of the way
towards the event's target ``clamp(b + delta * magnitude)``; a channel the event
does not touch has target ``b``. Written out, each event is one homeostasis step
plus a small injection::

    tonic <- b + 0.95 * (tonic - b) + 0.05 * (clamp(b + delta * m) - b)

so the paper's "tau = 0.95" holds both per event and per hour of quiet. The
target is anchored at the baseline, not at the current level: the authors' rule
``tonic * 0.95 + clamp(tonic + delta) * 0.05`` is a random walk, and their drift
benchmark adds whole deltas before contracting by 0.95, so both end pinned near
the clamps. This rule is mean-reverting: a mixed stream of events keeps every
channel near its baseline, while a sustained one-sided stream still moves it.

DA/5HT opposition: every event's DA delta also moves 5HT by ``coupling * delta_DA``
and its 5HT delta moves DA by ``coupling * delta_5HT`` (coupling = -0.3). The
authors' table bakes this into two rows (novelty, stable_focus); applying it as a
rule gives the same values for those two rows and keeps the coupling for every
other event.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ValidationError
from ..params import Params, bounded

DA, NE, SEROTONIN, ACH = "DA", "NE", "5HT", "ACh"
CHANNELS: tuple[str, ...] = (DA, NE, SEROTONIN, ACH)

# Primary deltas per unit magnitude (before DA/5HT coupling). novelty and
# stable_focus list only their primary channel: the coupling rule adds the -0.3
# cross term that the authors wrote into the table by hand.
EVENTS: Mapping[str, Mapping[str, float]] = {
    "novelty": {DA: 1.0},
    "prediction_error": {NE: 1.0},
    "stable_focus": {SEROTONIN: 1.0},
    "exploration": {ACH: 1.0},
    "routine": {DA: -0.2, SEROTONIN: 0.2},
    "confirmation": {NE: -0.1},
    "rejection": {NE: 0.5, DA: -0.2},
    "context_switch": {SEROTONIN: -0.3, ACH: 0.3},
}


@dataclass(frozen=True)
class NeuromodulatorParams(Params):
    baseline: float = bounded(0.5, 0.0, 1.0, "tonic baseline b of every channel")
    homeostasis_decay: float = bounded(
        0.95, 0.0, 1.0, "share of the tonic deviation from baseline kept per homeostasis period"
    )
    homeostasis_period_s: float = bounded(3600.0, 1.0, 30 * 86400.0, "period of the homeostasis decay (s)")
    tonic_rate: float = bounded(
        0.05, 0.0, 1.0, "fraction of the way an event moves the tonic level towards its target"
    )
    phasic_gain: float = bounded(0.5, 0.0, 1.0, "phasic burst amplitude per unit of delta x magnitude")
    phasic_half_life_s: float = bounded(300.0, 1.0, 86400.0, "half-life of a phasic burst (s)")
    prune_half_lives: float = bounded(10.0, 1.0, 100.0, "bursts older than this many half-lives are dropped")
    coupling: float = bounded(-0.3, -1.0, 0.0, "DA/5HT opposition: cross delta per unit of own delta")
    max_magnitude: float = bounded(1.0, 0.0, 10.0, "event magnitudes are clipped to [0, max_magnitude]")


DEFAULT_PARAMS = NeuromodulatorParams()


@dataclass(frozen=True)
class Burst:
    channel: str
    amplitude: float
    at: float


@dataclass(frozen=True)
class NeuromodulatorState:
    """Tonic levels (as of ``updated_at``) and the live phasic bursts."""

    tonic: Mapping[str, float] = field(default_factory=lambda: {c: 0.5 for c in CHANNELS})
    bursts: tuple[Burst, ...] = ()
    updated_at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "tonic": {c: float(self.tonic[c]) for c in CHANNELS},
            "bursts": [[b.channel, b.amplitude, b.at] for b in self.bursts],
            "updated_at": self.updated_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NeuromodulatorState:
        tonic = {c: float(data["tonic"][c]) for c in CHANNELS}
        bursts = tuple(Burst(str(c), float(a), float(t)) for c, a, t in data.get("bursts", ()))
        return cls(tonic=tonic, bursts=bursts, updated_at=float(data["updated_at"]))


@dataclass(frozen=True)
class NeuromodulatorOutputs:
    """What the other mechanisms read. All in [0, 1]; 0.5 is neutral."""

    learning_rate: float  # NE
    exploration_bias: float  # DA
    consolidation_patience: float  # 5HT
    attention_ratio: float  # ACh


NEUTRAL_OUTPUTS = NeuromodulatorOutputs(0.5, 0.5, 0.5, 0.5)  # what an ablated engine reports


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))


def initial_state(*, now: float, params: NeuromodulatorParams = DEFAULT_PARAMS) -> NeuromodulatorState:
    """Every channel at baseline, no bursts."""
    return NeuromodulatorState(tonic={c: params.baseline for c in CHANNELS}, bursts=(), updated_at=float(now))


def homeostasis(
    state: NeuromodulatorState, *, now: float, params: NeuromodulatorParams = DEFAULT_PARAMS
) -> NeuromodulatorState:
    """Relax the tonic levels towards baseline up to ``now`` and drop spent bursts.

    Time that runs backwards (now < updated_at) is treated as no time passing.
    """
    dt = max(0.0, now - state.updated_at)
    keep = params.homeostasis_decay ** (dt / params.homeostasis_period_s)
    b = params.baseline
    if dt > 0.0:
        tonic = {c: b + (state.tonic[c] - b) * keep for c in CHANNELS}
    else:
        tonic = {c: float(state.tonic[c]) for c in CHANNELS}
    horizon = params.prune_half_lives * params.phasic_half_life_s
    bursts = tuple(x for x in state.bursts if now - x.at <= horizon)
    return NeuromodulatorState(tonic=tonic, bursts=bursts, updated_at=max(now, state.updated_at))


def event_deltas(event: str, *, params: NeuromodulatorParams = DEFAULT_PARAMS) -> dict[str, float]:
    """Per-channel deltas of one unit of ``event``, DA/5HT coupling included."""
    try:
        primary = EVENTS[event]
    except KeyError:
        raise ValidationError(f"unknown neuromodulator event {event!r}; known: {', '.join(EVENTS)}") from None
    deltas = {c: float(primary.get(c, 0.0)) for c in CHANNELS}
    d_da, d_5ht = deltas[DA], deltas[SEROTONIN]
    deltas[SEROTONIN] += params.coupling * d_da
    deltas[DA] += params.coupling * d_5ht
    return deltas


def emit(
    state: NeuromodulatorState,
    *,
    event: str,
    magnitude: float = 1.0,
    now: float,
    params: NeuromodulatorParams = DEFAULT_PARAMS,
) -> NeuromodulatorState:
    """Apply one event at ``now``: homeostasis first, then tonic nudges and phasic bursts."""
    if not math.isfinite(magnitude):
        raise ValidationError(f"event magnitude must be finite, got {magnitude!r}")
    m = min(params.max_magnitude, max(0.0, float(magnitude)))
    relaxed = homeostasis(state, now=now, params=params)
    deltas = event_deltas(event, params=params)
    b = params.baseline
    tonic = dict(relaxed.tonic)
    bursts = list(relaxed.bursts)
    for c in CHANNELS:
        # every channel steps towards its target; an untouched channel's target is
        # the baseline, so each event is also one homeostasis step of 1 - tonic_rate
        d = deltas[c] * m
        target = _clamp(b + d)
        tonic[c] += params.tonic_rate * (target - tonic[c])
        if d != 0.0 and params.phasic_gain > 0.0:
            bursts = _joined(bursts, Burst(c, params.phasic_gain * d, float(now)), params)
    return NeuromodulatorState(tonic=tonic, bursts=tuple(bursts), updated_at=relaxed.updated_at)


def _faded(burst: Burst, now: float, params: NeuromodulatorParams) -> float:
    """A burst's phasic contribution at ``now`` (no fading for time running backwards)."""
    return burst.amplitude * math.exp(-math.log(2.0) * max(0.0, now - burst.at) / params.phasic_half_life_s)


def _joined(bursts: list[Burst], new: Burst, params: NeuromodulatorParams) -> list[Burst]:
    """``bursts`` with ``new`` in place of its channel's earlier bursts, which it takes in
    faded to its time (their sum at any later time is unchanged)."""
    amplitude = new.amplitude + sum(_faded(x, new.at, params) for x in bursts if x.channel == new.channel)
    return [*(x for x in bursts if x.channel != new.channel), Burst(new.channel, amplitude, new.at)]


def emit_stored(
    data: Mapping[str, Any],
    *,
    event: str,
    magnitude: float = 1.0,
    now: float,
    params: NeuromodulatorParams = DEFAULT_PARAMS,
) -> dict[str, Any]:
    """``emit`` on a stored state (``to_dict``'s form), returned in that form."""
    return emit(NeuromodulatorState.from_dict(data), event=event, magnitude=magnitude, now=now,
                params=params).to_dict()


def levels(
    state: NeuromodulatorState, *, now: float, params: NeuromodulatorParams = DEFAULT_PARAMS
) -> dict[str, float]:
    """Effective level of each channel at ``now`` (tonic relaxed to now, plus fading bursts)."""
    relaxed = homeostasis(state, now=now, params=params)
    out = dict(relaxed.tonic)
    for x in relaxed.bursts:
        out[x.channel] += _faded(x, now, params)
    return {c: _clamp(out[c]) for c in CHANNELS}


def outputs(
    state: NeuromodulatorState, *, now: float, params: NeuromodulatorParams = DEFAULT_PARAMS
) -> NeuromodulatorOutputs:
    """The four modulation outputs consumed by reconsolidation, priority and sleep."""
    lv = levels(state, now=now, params=params)
    return NeuromodulatorOutputs(
        learning_rate=lv[NE],
        exploration_bias=lv[DA],
        consolidation_patience=lv[SEROTONIN],
        attention_ratio=lv[ACH],
    )


__all__ = [
    "ACH",
    "CHANNELS",
    "DA",
    "DEFAULT_PARAMS",
    "EVENTS",
    "NE",
    "NEUTRAL_OUTPUTS",
    "SEROTONIN",
    "Burst",
    "NeuromodulatorOutputs",
    "NeuromodulatorParams",
    "NeuromodulatorState",
    "emit",
    "emit_stored",
    "event_deltas",
    "homeostasis",
    "initial_state",
    "levels",
    "outputs",
]
