"""The deterministic parts of the paper's PMA benchmark suite (REFERENCE.md 3.5).

Part of the replica of *the paper's simulation protocol, not zenbrain*. These are the
suite's inline toy models, not zenbrain's PMA components, re-implemented draw for
draw (Mulberry32, seeds 42 ... 6144). Spreads are population SDs, as in the suite.
What each number really measures:

* NeuromodulatorEngine "drift" - mean over 1,000 random events of the largest
  ``|channel - 0.5|``; the channels sit near their clamps, so this is *not* stability.
  "DA-5HT opposition" is a mean product of deviations, not a correlation.
* Reconsolidation "PE-mode accuracy" - 92 random cases whose expected mode is computed
  with the same thresholds as the prediction (correct by construction) plus 8 hand-
  written sentence pairs, of which only some classify as their authors intended.
* TripleCopy - the strength composite of one trace with S0 ~ U(0.8, 1), against
  Ebbinghaus with S = 1 day; the 30-day figure is just mean(S0) * tanh(30/7).
* PriorityMap NDCG@10 - ground truth nearly equals the scorer's own weights; the
  "chronological" baseline is an arbitrary order.
* StabilityProtector false-positive rate, MetacognitiveMonitor precision/recall,
  EWC penalties, vmPFC interval ratio, IB retention counts, TAG deltas, amygdala floor.

Not replicated: bootstrap CIs (the suite draws them from unseeded ``Math.random``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from .ablation import SEEDS
from .prng import Mulberry32
from .stats import js_mean, population_std

__all__ = [
    "amygdala_floor",
    "da_5ht_opposition",
    "ewc_penalties",
    "ib_retention_by_context",
    "metacognitive_bias_detection",
    "neuromodulator_drift",
    "priority_map_ndcg",
    "reconsolidation_accuracy",
    "run_pma_suite",
    "stability_protector_rates",
    "tag_scores",
    "triple_copy_table",
    "urgency_scores",
    "vmpfc_interval_ratio",
    "vmpfc_prediction_error",
]

BASELINE = 0.5

# ----------------------------------------------------------------- neuromodulator

# Per-event channel increments (dopamine, norepinephrine, serotonin, acetylcholine), in
# the suite's event order (the event is picked by index from this list).
_EVENT_PROFILES: tuple[tuple[str, tuple[float, float, float, float]], ...] = (
    ("novelty", (0.4, 0.2, 0.0, 0.2)),
    ("prediction_error", (0.3, 0.4, -0.1, 0.0)),
    ("stable_focus", (0.0, 0.0, 0.3, 0.3)),
    ("exploration", (0.3, 0.1, -0.2, 0.0)),
    ("routine", (-0.1, 0.0, 0.2, 0.0)),
    ("confirmation", (0.1, 0.0, 0.2, 0.0)),
    ("rejection", (-0.2, 0.3, 0.0, 0.0)),
    ("context_switch", (0.2, 0.3, 0.0, 0.3)),
)
_OPPOSITION = -0.3
_TONIC_DECAY = 0.95


def _clamp01(x: float) -> float:
    return max(0.0, min(1.0, x))


def _nm_event(state: list[float], profile: tuple[float, ...], magnitude: float) -> list[float]:
    da, ne, ser, ach = (_clamp01(v + p * magnitude) for v, p in zip(state, profile))
    da_delta = (da - BASELINE) * _OPPOSITION
    ser_delta = (ser - BASELINE) * _OPPOSITION
    ser = _clamp01(ser + da_delta * 0.1)
    da = _clamp01(da + ser_delta * 0.1)
    return [BASELINE + (v - BASELINE) * _TONIC_DECAY for v in (da, ne, ser, ach)]


def neuromodulator_drift(seeds: Sequence[int] = SEEDS, events: int = 1000) -> dict:
    per_seed = []
    for seed in seeds:
        rng = Mulberry32(seed)
        state = [BASELINE] * 4
        drifts = []
        for _ in range(events):
            profile = _EVENT_PROFILES[math.floor(rng() * len(_EVENT_PROFILES))][1]
            magnitude = 0.3 + rng() * 0.7
            state = _nm_event(state, profile, magnitude)
            drifts.append(max(abs(v - BASELINE) for v in state))
        per_seed.append(js_mean(drifts))
    return {"mean": js_mean(per_seed), "std": population_std(per_seed), "per_seed": per_seed}


def da_5ht_opposition(seeds: Sequence[int] = SEEDS, events: int = 500) -> dict:
    novelty = _EVENT_PROFILES[0][1]
    per_seed = []
    for seed in seeds:
        rng = Mulberry32(seed)
        state = [BASELINE] * 4
        products = []
        for _ in range(events):
            state = _nm_event(state, novelty, 0.5 + rng() * 0.5)
            products.append((state[0] - BASELINE) * (state[2] - BASELINE))
        per_seed.append(js_mean(products))
    return {"mean": js_mean(per_seed), "std": population_std(per_seed), "per_seed": per_seed}


# ---------------------------------------------------------------- reconsolidation

_CONTRADICTION_PAIRS = (
    ("always", "never"),
    ("true", "false"),
    ("yes", "no"),
    ("increase", "decrease"),
    ("positive", "negative"),
    ("likes", "dislikes"),
    ("loves", "hates"),
)

# The suite's eight hand-written (existing, incoming, intended mode) cases.
_HAND_CASES = (
    ("The meeting is at 3pm today", "The meeting is at 3pm today", "confirmed"),
    ("Alice works in engineering", "Alice works in engineering team", "confirmed"),
    ("The project deadline is Friday", "The project deadline is next Monday", "selective_edit"),
    ("Bob prefers coffee in the morning", "Bob prefers tea in the morning now", "selective_edit"),
    (
        "The quarterly report shows revenue growth",
        "The annual financial review reveals market expansion challenges and new partnership opportunities across three continents",
        "integration",
    ),
    (
        "We use React for the frontend",
        "The entire frontend stack was migrated to Svelte with server-side rendering and edge caching",
        "integration",
    ),
    (
        "The stock price always increases in Q4",
        "The stock price never increases during the holiday season",
        "new_episode",
    ),
    (
        "Alice loves working remotely and finds it very positive",
        "Alice hates the new remote work policy and finds it extremely negative",
        "new_episode",
    ),
)

_GREEK = (
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
    "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma",
)  # fmt: skip


def _jaccard_distance(a: str, b: str) -> float:
    set_a = set(re.split(r"\s+", a.lower()))
    set_b = set(re.split(r"\s+", b.lower()))
    union = set_a | set_b
    return 0.0 if not union else 1 - len(set_a & set_b) / len(union)


def _has_contradiction(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return any((p in a and q in b) or (q in a and p in b) for p, q in _CONTRADICTION_PAIRS)


def _prediction_error(a: str, b: str) -> float:
    return min(1.0, _jaccard_distance(a, b) + (0.2 if _has_contradiction(a, b) else 0.0))


def _update_mode(pe: float) -> str:
    if pe < 0.1:
        return "confirmed"
    if pe < 0.3:
        return "selective_edit"
    if pe < 0.7:
        return "integration"
    return "new_episode"


def reconsolidation_accuracy(seeds: Sequence[int] = SEEDS, random_cases: int = 92) -> dict:
    hand = [_update_mode(_prediction_error(a, b)) == mode for a, b, mode in _HAND_CASES]
    per_seed = []
    for seed in seeds:
        rng = Mulberry32(seed)
        correct = sum(hand)
        for _ in range(random_cases):
            len1 = 3 + math.floor(rng() * 8)
            len2 = 3 + math.floor(rng() * 8)
            a = " ".join(_GREEK[math.floor(rng() * len(_GREEK))] for _ in range(len1))
            b = " ".join(_GREEK[math.floor(rng() * len(_GREEK))] for _ in range(len2))
            pe = _prediction_error(a, b)
            # The suite's "expected" mode uses the very thresholds of the prediction.
            if _update_mode(pe) == _update_mode(pe):
                correct += 1
        per_seed.append(correct / (len(_HAND_CASES) + random_cases))
    return {
        "mean": js_mean(per_seed),
        "std": population_std(per_seed),
        "hand_written_correct": int(sum(hand)),
        "hand_written_total": len(_HAND_CASES),
        "hand_written_modes": [_update_mode(_prediction_error(a, b)) for a, b, _ in _HAND_CASES],
    }


# -------------------------------------------------------------------- triple copy

_HOUR_MS = 60 * 60 * 1000
_DAY_MS = 24 * _HOUR_MS
_TAU_FAST = 4 * _HOUR_MS
_TAU_MEDIUM = 14 * _DAY_MS
_TAU_DEEP = 7 * _DAY_MS
TRIPLE_COPY_INTERVALS = (
    ("1h", _HOUR_MS),
    ("6h", 6 * _HOUR_MS),
    ("1d", _DAY_MS),
    ("3d", 3 * _DAY_MS),
    ("7d", 7 * _DAY_MS),
    ("14d", 14 * _DAY_MS),
    ("30d", 30 * _DAY_MS),
)


def triple_copy_table(seeds: Sequence[int] = SEEDS) -> dict:
    s0 = [0.8 + Mulberry32(seed)() * 0.2 for seed in seeds]
    rows = {}
    for label, ms in TRIPLE_COPY_INTERVALS:
        fast = [s * math.exp(-ms / _TAU_FAST) for s in s0]
        medium = [s * 0.8 * math.exp(-ms / _TAU_MEDIUM) for s in s0]
        deep = [min(1.0, s * math.tanh(ms / _TAU_DEEP)) for s in s0]
        comp = [max(f, m, d) for f, m, d in zip(fast, medium, deep)]
        ebb = [s * math.exp(-ms / _DAY_MS) for s in s0]
        rows[label] = {
            "triple_copy": js_mean(comp),
            "triple_copy_std": population_std(comp),
            "ebbinghaus": js_mean(ebb),
            "fast": js_mean(fast),
            "medium": js_mean(medium),
            "deep": js_mean(deep),
        }
    return {"initial_strength_mean": js_mean(s0), "rows": rows}


# -------------------------------------------------------------------- priority map


def _priority(s: float, v: float, r: float, g: float) -> float:
    s, e, r, g = (_clamp01(x) for x in (s, abs(v), r, g))
    composite = 0.2 * s + 0.25 * e + 0.25 * r + 0.3 * g
    if e > 0.6:
        composite = max(composite, 0.5)
    return composite


def _ndcg(ranked: list[float], ideal: list[float], k: int) -> float:
    def dcg(scores: list[float]) -> float:
        acc = 0.0
        for i, x in enumerate(scores[:k]):
            acc += x / math.log2(i + 2)
        return acc

    idcg = dcg(sorted(ideal, reverse=True))
    return 0.0 if idcg == 0 else dcg(ranked) / idcg


def priority_map_ndcg(seeds: Sequence[int] = SEEDS, items: int = 50, k: int = 10) -> dict:
    pm, chrono = [], []
    for seed in seeds:
        rng = Mulberry32(seed)
        feats, truth = [], []
        for _ in range(items):
            s, v, r, g = rng(), rng() * 2 - 1, rng(), rng()
            feats.append((s, v, r, g))
            truth.append(0.15 * s + 0.3 * abs(v) + 0.25 * r + 0.3 * g)
        ideal = sorted(truth, reverse=True)
        scores = np.array([_priority(*f) for f in feats])
        order = np.argsort(-scores, kind="stable")
        pm.append(_ndcg([truth[i] for i in order], ideal, k))
        chrono.append(_ndcg(truth[::-1], ideal, k))
    pm_m, ch_m = js_mean(pm), js_mean(chrono)
    return {
        "ndcg_at_10": {"mean": pm_m, "std": population_std(pm)},
        "chrono_ndcg_at_10": {"mean": ch_m, "std": population_std(chrono)},
        "advantage_pct": (pm_m - ch_m) / ch_m * 100,
    }


# -------------------------------------------------------------- stability protector


def _sp_lock(access: int, confidence: float, age: int, core: bool) -> float:
    norm_access = math.log2(1 + min(access, 10)) / math.log2(11)
    return 0.3 * norm_access + 0.3 * confidence + 0.2 * min(age / 365, 1) + 0.2 * (1 if core else 0)


def _sp_allowed(pe: float, access: int, confidence: float, age: int, core: bool) -> bool:
    rigidity = 1 + 0.1 * math.log2(1 + age)
    return pe >= 0.5 + 0.3 * _sp_lock(access, confidence, age, core) * rigidity


def stability_protector_rates(seeds: Sequence[int] = SEEDS, cases: int = 200) -> dict:
    fp, block, grey = [], [], []
    for seed in seeds:
        rng = Mulberry32(seed)
        blocked = 0
        for _ in range(cases):
            acc = math.floor(rng() * 15)
            conf = rng()
            age = math.floor(rng() * 400)
            core = rng() > 0.8
            pe = 0.7 + rng() * 0.3
            blocked += not _sp_allowed(pe, acc, conf, age, core)
        fp.append(blocked / cases)

        rng = Mulberry32(seed)
        blocked = 0
        for _ in range(cases):
            acc = 10 + math.floor(rng() * 10)
            conf = 0.7 + rng() * 0.3
            age = 180 + math.floor(rng() * 200)
            core = rng() > 0.5
            pe = 0.1 + rng() * 0.2
            blocked += not _sp_allowed(pe, acc, conf, age, core)
        block.append(blocked / cases)

        rng = Mulberry32(seed)
        passed = 0
        for _ in range(cases):
            acc = 1 + math.floor(rng() * 5)
            conf = 0.2 + rng() * 0.4
            age = 1 + math.floor(rng() * 30)
            pe = 0.5 + rng() * 0.3
            passed += _sp_allowed(pe, acc, conf, age, False)
        grey.append(passed / cases)
    return {
        "false_positive_rate": {"mean": js_mean(fp), "std": population_std(fp)},
        "low_pe_block_rate": {"mean": js_mean(block), "std": population_std(block)},
        "grey_zone_pass_rate": {"mean": js_mean(grey), "std": population_std(grey)},
    }


# ---------------------------------------------------------- metacognitive monitor


def metacognitive_bias_detection(seeds: Sequence[int] = SEEDS, scenarios: int = 50, events: int = 30) -> dict:
    precisions, recalls = [], []
    for seed in seeds:
        rng = Mulberry32(seed)
        tp = fp = fn = 0
        for _ in range(scenarios):
            biased = rng() > 0.5
            pos_total = pos_acc = neg_total = neg_acc = 0
            for _ in range(events):
                positive = rng() > 0.5
                if biased:
                    accepted = rng() < 0.8 if positive else rng() < 0.3
                else:
                    accepted = rng() < 0.55
                if positive:
                    pos_total += 1
                    pos_acc += accepted
                else:
                    neg_total += 1
                    neg_acc += accepted
            pos_rate = pos_acc / pos_total if pos_total else 0.0
            neg_rate = neg_acc / neg_total if neg_total else 0.0
            score = pos_rate - neg_rate if pos_rate > neg_rate else 0.0
            detected = score > 0.15
            tp += biased and detected
            fp += (not biased) and detected
            fn += biased and not detected
        precisions.append(tp / (tp + fp) if tp + fp else 1.0)
        recalls.append(tp / (tp + fn) if tp + fn else 1.0)
    return {
        "precision": {"mean": js_mean(precisions), "std": population_std(precisions)},
        "recall": {"mean": js_mean(recalls), "std": population_std(recalls)},
    }


# ----------------------------------------------------- EWC, vmPFC, IB, TAG, amygdala

_LAMBDA_EWC = 0.5


def _ewc_penalty(weight: float, variance: float, proposed: float) -> float:
    delta = proposed - weight
    return (_LAMBDA_EWC / 2) * (1 / variance) * delta * delta


def ewc_penalties() -> dict:
    important = _ewc_penalty(5.0, 0.05, 3.0)
    unimportant = _ewc_penalty(5.0, 0.9, 3.0)
    weight, variance = 1.0, 1.0
    for count in range(1, 101):
        weight = max(0.05, min(10.0, weight + 0.1 * (1 - 0.5 * 0) * 0.5 * 0.8))
        variance = max(0.01, variance * (1 - 0.15 * (1 / (1 + count * 0.1))))
    drastic = _ewc_penalty(weight, variance, 0.1)
    small = _ewc_penalty(weight, variance, weight * 0.95)
    return {
        "penalty_ratio": important / unimportant,
        "important_penalty": important,
        "unimportant_penalty": unimportant,
        "mature_weight": weight,
        "mature_variance": variance,
        "mature_edge_penalty": drastic,
        "mature_small_change_penalty": small,
    }


def _vmpfc_interval(base: float, pe: float) -> float:
    rho = 1 / (1 + math.exp(-((pe - 0.5) * 6)))
    mult = max(0.3, min(2.0, 1 + (0.5 - rho) * 0.6))
    return max(0.1, base * mult)


def vmpfc_interval_ratio(base: float = 7.0) -> dict:
    high, low, mid = _vmpfc_interval(base, 0.9), _vmpfc_interval(base, 0.1), _vmpfc_interval(base, 0.5)
    return {"high_pe_interval": high, "low_pe_interval": low, "neutral_pe_interval": mid, "ratio": low / high}


def _pe_cos(a: list[float], b: list[float]) -> float:
    dot = na = nb = 0.0
    for x, y in zip(a, b):
        dot += x * y
        na += x**2
        nb += y**2
    denom = math.sqrt(na) * math.sqrt(nb)
    if denom == 0:
        return 0.0
    return max(0.0, min(1.0, 1 - dot / denom))


def vmpfc_prediction_error(seed: int = 42, dim: int = 32) -> dict:
    rng = Mulberry32(seed)
    a = [rng() for _ in range(dim)]
    b = [x + (rng() - 0.5) * 0.1 for x in a]
    c = [rng() for _ in range(dim)]
    similar, different = _pe_cos(a, b), _pe_cos(a, c)
    return {"pe_similar": similar, "pe_different": different, "discrimination": different - similar}


IB_BETA = {"finance": 0.8, "people": 0.6, "operations": 0.4, "strategy": 0.3}


def ib_retention_by_context(seed: int = 42, episodes: int = 200) -> dict:
    rng = Mulberry32(seed)
    eps = []
    for _ in range(episodes):
        cost = 0.05 + rng() * 0.55
        gain = 0.1 + rng() * 0.8
        eps.append((cost, gain))
    return {ctx: sum(1 for c, g in eps if g * beta > c) for ctx, beta in IB_BETA.items()}


def tag_scores() -> dict:
    novelty = min(1, 0.2 * 2)

    def four(td: float, reward: float, valence: float, arousal: float) -> float:
        return 0.34 * abs(td) + 0.30 * reward + 0.21 * novelty + 0.15 * abs(valence) * arousal

    neutral = four(0.5, 0.5, 0.1, 0.1)
    emotional = four(0.5, 0.5, 0.9, 0.8)
    three = 0.40 * abs(0.5) + 0.35 * 0.5 + 0.25 * novelty
    return {
        "neutral_tag": neutral,
        "emotional_tag": emotional,
        "emotional_minus_neutral": emotional - neutral,
        "three_term_tag": three,
        "four_minus_three": emotional - three,
    }


def amygdala_floor(seed: int = 42) -> dict:
    rng = Mulberry32(seed)
    items = []
    for i in range(20):
        sal = rng() * 0.3
        emo = 0.7 + rng() * 0.3 if i < 5 else rng() * 0.2
        acc = math.floor(rng() * 3)
        age = 10 + math.floor(rng() * 50)
        items.append((sal, emo, acc, age))
    scores, raw = [], []
    for sal, emo, acc, age in items:
        base = 0.3 * sal + 0.2 * min(1, acc / 5) + 0.3 * math.exp(-age / 30) + 0.2 * emo
        raw.append(base)
        scores.append(max(0.5, base) if emo > 0.6 else base)
    emo_t, neu_t = [], []
    for age in (1, 7, 14, 30, 60):
        emo_t.append(max(0.5, 0.3 * 0.15 + 0.2 * 0 + 0.3 * math.exp(-age / 30) + 0.2 * 0.8))
        neu_t.append(0.3 * 0.15 + 0.2 * 0 + 0.3 * math.exp(-age / 30) + 0.2 * 0.1)
    return {
        "emotional_mean": js_mean(scores[:5]),
        "neutral_mean": js_mean(scores[5:]),
        "would_drop_below_floor": sum(1 for s in raw[:5] if s < 0.5),
        "priority_gap_day1": emo_t[0] - neu_t[0],
        "priority_gap_day60": emo_t[-1] - neu_t[-1],
    }


_URGENT = ("dringend", "asap", "deadline", "bis morgen", "sofort", "urgent", "eilig")


def urgency_scores() -> dict:
    def detect(msg: str) -> float:
        lower = msg.lower()
        matches = sum(1 for kw in _URGENT if kw in lower)
        return min(1, matches * 0.3 + (0.2 if len(msg) < 50 else 0))

    return {
        "urgent": detect("Das ist dringend, bitte sofort erledigen!"),
        "normal": detect("Kannst du mir bitte bei diesem Projekt helfen wenn du Zeit hast?"),
        "short": detect("ASAP!"),
    }


def run_pma_suite(seeds: Sequence[int] = SEEDS) -> dict:
    seeds = tuple(seeds)
    return {
        "seeds": list(seeds),
        "neuromodulator_drift": neuromodulator_drift(seeds),
        "da_5ht_opposition": da_5ht_opposition(seeds),
        "reconsolidation_pe_mode_accuracy": reconsolidation_accuracy(seeds),
        "triple_copy": triple_copy_table(seeds),
        "priority_map": priority_map_ndcg(seeds),
        "stability_protector": stability_protector_rates(seeds),
        "metacognitive_monitor": metacognitive_bias_detection(seeds),
        "ewc": ewc_penalties(),
        "vmpfc_interval": vmpfc_interval_ratio(),
        "vmpfc_prediction_error": vmpfc_prediction_error(),
        "ib_retention_by_context": ib_retention_by_context(),
        "tag": tag_scores(),
        "amygdala": amygdala_floor(),
        "urgency": urgency_scores(),
    }
