"""The simulated memory system of the paper's simulation protocol (REFERENCE.md 3.3).

Part of the replica of *the paper's simulation protocol, not zenbrain*: none of
zenbrain's mechanisms runs here. Each of the paper's fifteen "mechanisms" is one
hand-set multiplier on a scalar strength per fact, exactly as in the authors' harness.

Mechanisms are named by zenbrain's registry names (``zenbrain.registry.PAPER_FIFTEEN``);
:data:`PROTOCOL_IDS` maps them to the harness's feature ids.

The harness loops over facts in insertion order; every per-fact step is independent
of the other facts, and random numbers are consumed only by the NeuromodulatorEngine
at store time (one per fact) and by Reconsolidation during aging (one per fact per
day). So the replica draws each block in the same order and runs the arithmetic
vectorised over facts, with the same float64 evaluation order as the JavaScript.
All facts share one age and one access count (retrieval happens after aging), which
the replica keeps as Python scalars.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from zenbrain.registry import PAPER_FIFTEEN

from .prng import Stream

__all__ = [
    "ABLATION_RULES",
    "CASCADE_RULES",
    "COMPETITIVE_RULES",
    "FOUNDATIONAL_NINE",
    "PAPER_LABELS",
    "PMA_SIX",
    "PROTOCOL_IDS",
    "DecayRules",
    "MemoryState",
    "ablation_score_matrix",
    "advance_day",
    "enabled_set",
    "store_ablation",
    "top_k",
]

# zenbrain registry name -> feature id in the authors' ablation registry.
PROTOCOL_IDS: dict[str, str] = {
    "two_factor_hebbian": "two_factor_hebbian",
    "simulation_selection_sleep": "simulation_selection_sleep",
    "vmpfc_fsrs": "vmPFC_fsrs_coupling",
    "imad_debate": "imad_debate",
    "spectral_kg_health": "spectral_kg_health",
    "compositional_context": "compositional_context",
    "ib_budget": "ib_budget",
    "dual_process_cot": "dual_process_cot",
    "metacognitive_hyperagent": "metacognitive_hyperagent",
    "neuromodulator": "pma_neuromodulator_engine",
    "reconsolidation": "pma_reconsolidation",
    "triple_copy": "pma_triple_copy",
    "priority_map": "pma_priority_map",
    "stability_protector": "pma_stability_protector",
    "metacognitive_monitor": "pma_metacognitive_monitor",
}

# The row labels of the paper's tables.
PAPER_LABELS: dict[str, str] = {
    "two_factor_hebbian": "Two-Factor Hebbian",
    "simulation_selection_sleep": "Sim-Selection Sleep",
    "vmpfc_fsrs": "vmPFC-FSRS",
    "imad_debate": "iMAD Debate",
    "spectral_kg_health": "Spectral KG",
    "compositional_context": "Compositional Context",
    "ib_budget": "IB Budget",
    "dual_process_cot": "Dual-Process CoT",
    "metacognitive_hyperagent": "HyperAgent",
    "neuromodulator": "NeuromodulatorEngine",
    "reconsolidation": "Reconsolidation",
    "triple_copy": "TripleCopy",
    "priority_map": "PriorityMap",
    "stability_protector": "StabilityProtector",
    "metacognitive_monitor": "MetacogMonitor",
}

FOUNDATIONAL_NINE: tuple[str, ...] = PAPER_FIFTEEN[:9]
PMA_SIX: tuple[str, ...] = PAPER_FIFTEEN[9:]

assert set(PROTOCOL_IDS) == set(PAPER_FIFTEEN)

# Harness constants (all from REFERENCE.md 3.3 / 3.6 / 3.7).
STRENGTH_FLOOR = 0.01
TRIPLE_COPY_ENCODING = 1.15
SLEEP_THRESHOLD, SLEEP_BOOST = 0.3, 1.05
SPECTRAL_MIN_ACCESS, SPECTRAL_BOOST = 2, 1.02
DUAL_MIN_AGE, DUAL_THRESHOLD, DUAL_BOOST = 7, 0.4, 1.03
IB_THRESHOLD, IB_FACTOR = 0.6, 0.8
VMPFC_FACTOR = 0.7
RECON_BOOST = 1.08
TRIPLE_COPY_DEEP, TRIPLE_COPY_TAU = 0.02, 7
EMOTIONAL_AROUSAL = 0.6


@dataclass(frozen=True)
class DecayRules:
    """The small differences between the three harnesses' aging loops."""

    emotional_decay_factor: float = 0.75  # neuromod: arousal > 0.6 -> r *= this
    neuromod_gates_two_factor: bool = True  # LR = 1.3 (acc < 3) * 1.1 (arousal > 0.5)
    stability_decay_lock: str = "log"  # "log": 0.3 log2(1+acc)/log2(11) + 0.2 min(age/365,1); "linear": lock2
    recon_draws_every_day: bool = True  # ablation/cascade: pe = rng() always; competitive: age<1 && rng()
    recon_stability_gate: bool = True  # gate by lock2 when StabilityProtector is on


ABLATION_RULES = DecayRules()
CASCADE_RULES = DecayRules(stability_decay_lock="linear")
COMPETITIVE_RULES = DecayRules(
    emotional_decay_factor=0.65,
    neuromod_gates_two_factor=False,
    recon_draws_every_day=False,
    recon_stability_gate=False,
)


def enabled_set(disabled: Iterable[str] = ()) -> frozenset[str]:
    """The enabled mechanisms among the fifteen, given the registry names switched off."""
    disabled = frozenset(disabled)
    unknown = disabled.difference(PAPER_FIFTEEN)
    if unknown:
        raise ValueError(f"not one of the paper's fifteen mechanisms: {sorted(unknown)}")
    return frozenset(PAPER_FIFTEEN) - disabled


def lock2(access: float, age: float) -> float:
    """The harness's ``computeLockScore(accessCount, ageDays)``."""
    return 0.6 * min(1, access / 20) + 0.4 * min(1, age / 60)


def lock_log(access: float, age: float) -> float:
    """The harness's inline StabilityProtector lock used inside decay."""
    return min(1, 0.3 * math.log2(1 + access) / math.log2(11) + 0.2 * min(age / 365, 1))


@dataclass
class MemoryState:
    strength: np.ndarray
    arousal: np.ndarray
    valence: np.ndarray
    importance: np.ndarray | None = None
    age: int = 0
    access: int = 0
    extra: dict = field(default_factory=dict)


def store_ablation(stream: Stream, n_facts: int, on: frozenset[str]) -> MemoryState:
    """``store()`` of the ablation harness for every fact, in order (4 or 5 draws each)."""
    neuromod = "neuromodulator" in on
    per = 5 if neuromod else 4
    u = stream.take(n_facts * per).reshape(n_facts, per)
    strength = 0.8 + u[:, 0] * 0.2
    arousal = np.where(u[:, 1] < 0.2, 0.6 + u[:, 2] * 0.4, u[:, 2] * 0.3)
    valence = (u[:, 3] - 0.5) * 2
    if "triple_copy" in on:
        strength = strength * TRIPLE_COPY_ENCODING
    if neuromod:
        boost = np.where(arousal > EMOTIONAL_AROUSAL, 0.15, 0.05)
        strength = strength * (1.0 + boost * u[:, 4])
    strength = np.minimum(1.0, strength)
    return MemoryState(strength=strength, arousal=arousal, valence=valence)


def advance_day(
    state: MemoryState,
    base_decay: float,
    on: frozenset[str],
    rules: DecayRules,
    pe: np.ndarray | None,
) -> None:
    """One ``advanceTime(1)`` / ``advanceOneDay``: decay, then the consolidation boosts.

    ``pe`` is the day's block of reconsolidation draws (one per fact) when the harness
    consumes them, else None.
    """
    state.age += 1
    age, acc = state.age, state.access
    s = state.strength
    n = s.shape[0]
    neuromod = "neuromodulator" in on
    stability = "stability_protector" in on

    # Steps 1-4 of the decay rate depend only on arousal and the access count, which do
    # not change while aging, so they are evaluated once (same operations, same order).
    key = ("r_pre", base_decay, on, rules, acc)
    r = state.extra.get(key)
    if r is None:
        r = np.full(n, base_decay)
        if neuromod:
            r = np.where(state.arousal > EMOTIONAL_AROUSAL, r * rules.emotional_decay_factor, r)
        if "vmpfc_fsrs" in on:
            r = r * VMPFC_FACTOR
        if "two_factor_hebbian" in on:
            importance = 1.0 / (1.0 + 0.01 * acc)
            if rules.neuromod_gates_two_factor:
                if neuromod:
                    novelty = 1.3 if acc < 3 else 1.0
                    factor: np.ndarray | float = importance / (novelty * np.where(state.arousal > 0.5, 1.1, 1.0))
                else:
                    factor = importance / 1.0
                r = r * factor
            else:
                r = r * importance
        state.extra = {key: r}
    if "ib_budget" in on:
        r = np.where(s > IB_THRESHOLD, r * IB_FACTOR, r)
    if stability:
        lock = lock_log(acc, age) if rules.stability_decay_lock == "log" else lock2(acc, age)
        r = r * (1 - 0.3 * lock)

    s = np.maximum(STRENGTH_FLOOR, s * np.exp(-r * 1))

    if "simulation_selection_sleep" in on:
        s = np.where(s > SLEEP_THRESHOLD, np.minimum(1.0, s * SLEEP_BOOST), s)
    if "spectral_kg_health" in on and acc > SPECTRAL_MIN_ACCESS:
        s = np.minimum(1.0, s * SPECTRAL_BOOST)
    if "dual_process_cot" in on and age > DUAL_MIN_AGE:
        s = np.where(s > DUAL_THRESHOLD, np.minimum(1.0, s * DUAL_BOOST), s)
    if "reconsolidation" in on:  # noqa: SIM102 - the inner if has an else case, spelled out below
        if rules.recon_draws_every_day:
            assert pe is not None and pe.shape[0] == n
            if stability and rules.recon_stability_gate:
                rigidity = lock2(acc, age) ** 1.5
                if age < 5:
                    s = np.where(pe > 0.5 * (1 + rigidity), np.minimum(1.0, s * RECON_BOOST), s)
            elif age < 1:
                s = np.where(pe > 0.7, np.minimum(1.0, s * RECON_BOOST), s)
        # else: ``age < 1 && rng() > 0.7`` short-circuits: age >= 1, nothing is drawn.
    if "triple_copy" in on:
        s = np.minimum(1.0, s + TRIPLE_COPY_DEEP * math.tanh(age / TRIPLE_COPY_TAU))
    state.strength = s


def recon_draws(on: frozenset[str], rules: DecayRules) -> bool:
    return "reconsolidation" in on and rules.recon_draws_every_day


def age_days(
    state: MemoryState,
    stream: Stream,
    days: int,
    base_decay: float,
    on: frozenset[str],
    rules: DecayRules,
    checkpoints: Iterable[int] = (),
    on_checkpoint=None,
) -> None:
    """Age ``days`` days, drawing the reconsolidation PEs day by day in order."""
    n = state.strength.shape[0]
    draws = recon_draws(on, rules)
    block = stream.take(days * n).reshape(days, n) if draws else None
    marks = set(checkpoints)
    for d in range(days):
        advance_day(state, base_decay, on, rules, block[d] if block is not None else None)
        if on_checkpoint is not None and (d + 1) in marks:
            on_checkpoint(d + 1, state)


def ablation_score_matrix(cos: np.ndarray, state: MemoryState, on: frozenset[str]) -> np.ndarray:
    """Retrieval scores of every query (row) for every fact (column), query by query.

    During query ``i`` every fact has been accessed ``state.access + i`` times (the
    harness increments every fact's count after scoring it).
    """
    n_q = cos.shape[0]
    score = cos * state.strength[None, :]
    if "compositional_context" in on:
        score = score * 1.05
    if "priority_map" in on:
        acc = state.access + np.arange(n_q, dtype=np.float64)
        base = 1.0 + 0.1 * np.minimum(1.0, acc / 5)
        pb = np.broadcast_to(base[:, None], score.shape)
        if "neuromodulator" in on:
            pb = pb + np.where(state.arousal > EMOTIONAL_AROUSAL, 0.08, 0.0)[None, :]
        if "stability_protector" in on:
            lock = 0.6 * np.minimum(1.0, acc / 20) + 0.4 * min(1, state.age / 60)
            pb = pb * (1.0 + 0.05 * lock)[:, None]
        score = score * pb
    if "imad_debate" in on:
        score = score * 1.02
    if "metacognitive_hyperagent" in on:
        score = score * 1.01
    if "metacognitive_monitor" in on:
        score = score * 1.02
    return score


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best per row, descending, ties in fact order.

    Equal to ``np.argsort(-scores, axis=1, kind="stable")[:, :k]`` - what JavaScript's
    stable ``Array.sort`` with ``(a, b) => b.score - a.score`` yields - but selects the
    candidates with a partition first. Rows with a tie at the k-th value fall back to
    the full stable sort.
    """
    n_rows, n_cols = scores.shape
    if n_cols <= k:
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]
    kth = np.partition(scores, n_cols - k, axis=1)[:, n_cols - k]
    mask = scores >= kth[:, None]
    counts = mask.sum(axis=1)
    out = np.empty((n_rows, k), dtype=np.intp)
    exact = counts == k
    if exact.any():
        rows = np.flatnonzero(exact)
        cand = np.nonzero(mask[rows])[1].reshape(len(rows), k)  # ascending fact index
        vals = np.take_along_axis(scores[rows], cand, axis=1)
        order = np.argsort(-vals, axis=1, kind="stable")
        out[rows] = np.take_along_axis(cand, order, axis=1)
    for r in np.flatnonzero(~exact):
        out[r] = np.argsort(-scores[r], kind="stable")[:k]
    return out
