"""The integration cascade of the paper's simulation protocol (REFERENCE.md 3.6).

Part of the replica of *the paper's simulation protocol, not zenbrain*.

Same multipliers as the ablation with small changes: base decay 0.30 for 60 days,
200 facts (the paper's caption says 300), a deterministic NeuromodulatorEngine encoding
``x (1 + (arousal > 0.6 ? 0.12 : 0.03) + 0.08 importance)``, the StabilityProtector's
``lock2`` formula in decay as well, and no retrieval during aging (access counts stay 0).

A run aged to day ``c`` is exactly the prefix of the run aged to day 60 (same draws in
the same order), so the retention timelines are read off a single 60-day run.

The Fiedler test builds a 20-node co-relevance graph (+0.1 per co-relevant pair over
60 queries), "sleeps" it (existing edges x1.3, new edges 0.05 sim where sim > 0.5) and
compares lambda_2 of the Laplacian before and after. lambda_2 is computed with
``numpy.linalg.eigvalsh``; the harness uses a tred2 + tqli routine, which agrees to
rounding error.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zenbrain.registry import PAPER_FIFTEEN

from .ablation import SEEDS
from .data import cascade_facts, cascade_queries
from .prng import Stream
from .simulation import CASCADE_RULES, PMA_SIX, MemoryState, age_days, enabled_set
from .stats import js_mean, js_std, protocol_wilcoxon

__all__ = [
    "BASE_DECAY",
    "DAYS",
    "EMOTION_CHECKPOINTS",
    "N_FACTS",
    "RETENTION_CHECKPOINTS",
    "fiedler_before_after",
    "fiedler_value",
    "run_cascade",
    "simulate",
]

N_FACTS = 200
BASE_DECAY = 0.30
DAYS = 60
RETENTION_CHECKPOINTS = (1, 3, 7, 14, 21, 30, 45, 60)
EMOTION_CHECKPOINTS = (1, 7, 14, 30, 60)
FIEDLER_NODES = 20
FIEDLER_QUERIES = 60


def _ingest(stream: Stream, facts, on: frozenset[str]) -> MemoryState:
    n = facts.arousal.shape[0]
    strength = 0.8 + stream.take(n) * 0.2
    if "triple_copy" in on:
        strength = strength * 1.15
    if "neuromodulator" in on:
        boost = np.where(facts.arousal > 0.6, 0.12, 0.03)
        strength = strength * (1.0 + boost + 0.08 * facts.importance)
    return MemoryState(
        strength=np.minimum(1.0, strength),
        arousal=facts.arousal,
        valence=facts.valence,
        importance=facts.importance,
    )


def simulate(seed: int, disabled: Sequence[str] = (), days: int = DAYS, checkpoints: Sequence[int] = ()) -> dict:
    """One seed of the cascade system: retention and emotional/neutral means at checkpoints."""
    on = enabled_set(disabled)
    stream = Stream(seed)
    facts = cascade_facts(stream, N_FACTS)
    state = _ingest(stream, facts, on)
    emotional = facts.arousal > 0.6
    neutral = facts.arousal <= 0.3
    marks: dict[int, dict[str, float]] = {}

    def record(day: int, st: MemoryState) -> None:
        marks[day] = {
            "retention": js_mean(st.strength),
            "emotional": js_mean(st.strength[emotional]),
            "neutral": js_mean(st.strength[neutral]),
        }

    age_days(state, stream, days, BASE_DECAY, on, CASCADE_RULES, checkpoints, record)
    record(days, state)
    return marks


def fiedler_value(adjacency: np.ndarray) -> float:
    """lambda_2 of ``L = D - A`` (diagonal of A ignored), floored at 0."""
    a = np.array(adjacency, dtype=np.float64)
    np.fill_diagonal(a, 0.0)
    lap = np.diag(a.sum(axis=1)) - a
    ev = np.sort(np.linalg.eigvalsh(lap))
    return max(0.0, float(ev[1])) if ev.size >= 2 else 0.0


def fiedler_before_after(seed: int) -> tuple[float, float]:
    stream = Stream(seed)
    facts = cascade_facts(stream, FIEDLER_NODES)
    queries = cascade_queries(stream, FIEDLER_QUERIES, facts)
    n = FIEDLER_NODES
    adj = [[0.0] * n for _ in range(n)]
    for _, rel in queries:
        for i in range(len(rel)):
            for j in range(i + 1, len(rel)):
                a, b = rel[i], rel[j]
                adj[a][b] += 0.1
                adj[b][a] += 0.1
    before = fiedler_value(np.asarray(adj))
    emb = facts.emb
    slept = [row[:] for row in adj]
    for i in range(n):
        for j in range(i + 1, n):
            if slept[i][j] > 0:
                slept[i][j] *= 1.3
                slept[j][i] *= 1.3
            if slept[i][j] == 0:
                dot = na = nb = 0.0
                for k in range(emb.shape[1]):
                    x, y = float(emb[i, k]), float(emb[j, k])
                    dot += x * y
                    na += x * x
                    nb += y * y
                denom = np.sqrt(na) * np.sqrt(nb)
                sim = 0.0 if denom == 0 else dot / denom
                if sim > 0.5:
                    slept[i][j] = 0.05 * sim
                    slept[j][i] = 0.05 * sim
    after = fiedler_value(np.asarray(slept))
    return before, after


def run_cascade(seeds: Sequence[int] = SEEDS) -> dict:
    seeds = tuple(seeds)
    pma_off = PMA_SIX
    configs = {
        "full": (),
        "foundational_only": pma_off,
        "bare": tuple(PAPER_FIFTEEN),
        "no_sleep": ("simulation_selection_sleep",),
    }
    marks_all = sorted(set(RETENTION_CHECKPOINTS) | set(EMOTION_CHECKPOINTS))
    runs = {name: [simulate(s, dis, DAYS, marks_all) for s in seeds] for name, dis in configs.items()}
    no_neuro_30 = [simulate(s, ("neuromodulator",), 30)[30]["retention"] for s in seeds]

    def at(name: str, day: int, key: str = "retention") -> list[float]:
        return [r[day][key] for r in runs[name]]

    full = at("full", DAYS)
    found = at("foundational_only", DAYS)
    bare = at("bare", DAYS)
    no_sleep = at("no_sleep", DAYS)
    full30 = at("full", 30)
    sleep_diff = [a - b for a, b in zip(full, no_sleep)]
    emo_gap = [e - n for e, n in zip(at("full", DAYS, "emotional"), at("full", DAYS, "neutral"))]
    synergy = [a - b for a, b in zip(full30, no_neuro_30)]

    fied = [fiedler_before_after(s) for s in seeds]
    f_before = [b for b, _ in fied]
    f_after = [a for _, a in fied]
    f_delta = [a - b for b, a in fied]

    emo_timeline = [js_mean(at("full", d, "emotional")) for d in EMOTION_CHECKPOINTS]
    neu_timeline = [js_mean(at("full", d, "neutral")) for d in EMOTION_CHECKPOINTS]

    full_m, bare_m = js_mean(full), js_mean(bare)
    return {
        "n_facts": N_FACTS,
        "base_decay": BASE_DECAY,
        "days": DAYS,
        "seeds": list(seeds),
        "full_retention": {"mean": full_m, "std": js_std(full), "per_seed": full},
        "foundational_only_retention": {"mean": js_mean(found), "std": js_std(found), "per_seed": found},
        "bare_retention": {"mean": bare_m, "std": js_std(bare), "per_seed": bare},
        "full_to_bare_ratio": full_m / bare_m,
        "full_vs_bare_wilcoxon": protocol_wilcoxon(full, bare),
        "no_sleep_retention": {"mean": js_mean(no_sleep), "std": js_std(no_sleep), "per_seed": no_sleep},
        "sleep_ratio": full_m / js_mean(no_sleep),
        "sleep_abs_difference": {"mean": js_mean(sleep_diff), "std": js_std(sleep_diff), "per_seed": sleep_diff},
        "sleep_wilcoxon": protocol_wilcoxon(full, no_sleep),
        "emotional_gap_day60": {"mean": js_mean(emo_gap), "std": js_std(emo_gap), "per_seed": emo_gap},
        "emotional_timeline": {
            "days": list(EMOTION_CHECKPOINTS),
            "emotional": emo_timeline,
            "neutral": neu_timeline,
            "gap": [e - n for e, n in zip(emo_timeline, neu_timeline)],
        },
        "retention_timeline": {
            "days": list(RETENTION_CHECKPOINTS),
            **{name: [js_mean(at(name, d)) for d in RETENTION_CHECKPOINTS] for name in ("full", "foundational_only", "bare")},
        },
        "neuromod_synergy_day30": {"mean": js_mean(synergy), "std": js_std(synergy), "per_seed": synergy},
        "fiedler": {
            "before": {"mean": js_mean(f_before), "std": js_std(f_before)},
            "after": {"mean": js_mean(f_after), "std": js_std(f_after)},
            "delta": {"mean": js_mean(f_delta), "std": js_std(f_delta), "per_seed": f_delta},
            "relative_rise": js_mean(f_delta) / js_mean(f_before),
            "wilcoxon": protocol_wilcoxon(f_before, f_after),
        },
    }
