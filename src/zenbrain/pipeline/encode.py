"""Store-time mechanisms: what a new memory starts with.

Emotional tagging, PriorityMap (novelty, goal alignment, reward), the neuromodulators'
levels and novelty event, the MetacognitiveMonitor's novelty window, and the initial
Ebbinghaus stability, TripleCopy copies and FSRS card of every new memory. Each
mechanism acts only when switched on, so an ablation changes exactly its effect.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..clock import DAY
from ..engine import Engine
from ..mechanisms import emotional, fsrs_schedule
from ..model import Kind, Layer, MemoryItem
from ..pma import metacognition, neuromodulator, priority_map, triple_copy
from ..state import (
    COPIES,
    DUE_AT,
    FSRS,
    KV_GOAL,
    KV_NEURO,
    META_ENTITIES,
    META_REWARD,
    PRIORITY,
    SIGNIFICANCE,
    decode_vec,
)
from ..storage.base import Partition
from ..text import entities
from . import monitor_log


def load_neuro(engine: Engine, part: Partition, now: float) -> neuromodulator.NeuromodulatorState:
    raw = engine.store.kv_get(part, KV_NEURO)
    return neuromodulator.NeuromodulatorState.from_dict(raw) if raw else neuromodulator.initial_state(now=now)


def neuro_params(engine: Engine) -> neuromodulator.NeuromodulatorParams:
    return engine.config.params.neuromodulator


def _novelty(engine: Engine, part: Partition, exclude: set[str], vecs: np.ndarray) -> np.ndarray:
    """The novelty of each new vector: 1 - its largest cosine with a uniform sample of the
    partition's stored memories (``EncodingConfig.novelty_sample`` of them)."""
    ids = engine.store.sample_ids(part, engine.config.encoding.novelty_sample, engine.rng, exclude)
    q = priority_map.unit_queries(vecs)
    return priority_map.novelty_from_cosines(
        engine.store.cosines(part, ids, q) if ids else np.zeros((len(q), 0), dtype=np.float32))


def prepare(engine: Engine, part: Partition, items: list[MemoryItem], vecs: np.ndarray, now: float) -> dict[str, Any]:
    """Set encoding strength, emotion, priority, stability and scheduling state of new items.

    Returns partition state to persist in the same transaction (kv key -> value)."""
    n = len(items)
    kv: dict[str, Any] = {}
    strength = np.full(n, engine.config.encoding.base_strength)
    valence = np.zeros(n)
    arousal = np.zeros(n)
    significance = np.zeros(n)

    if engine.on("emotional_tagging"):
        tags = emotional.tag_many([i.content for i in items], params=engine.config.params.emotional_tagging)
        valence, arousal, significance = tags["valence"], tags["arousal"], tags["significance"]
        strength = strength * tags["encoding_multiplier"]

    neuro_state = None
    levels = None
    if engine.on("neuromodulator"):
        neuro_state = load_neuro(engine, part, now)
        levels = neuromodulator.levels(neuro_state, now=now, params=neuro_params(engine))

    saliency = None
    if engine.on("priority_map") or engine.on("neuromodulator"):
        saliency = np.asarray(_novelty(engine, part, {i.id for i in items}, vecs), dtype=float).reshape(n)

    if engine.on("priority_map"):
        pp = engine.config.params.priority_map
        reward = np.array([float(i.metadata.get(META_REWARD, i.importance)) for i in items])
        goal_raw = engine.store.kv_get(part, KV_GOAL)
        goal = decode_vec(goal_raw) if goal_raw else None
        goal_score = np.asarray(priority_map.goal_alignment(embeddings=vecs, goal=goal, params=pp), dtype=float).reshape(n)
        p = np.asarray(
            priority_map.priority(saliency=saliency, valence=valence, reward=reward, goal=goal_score, levels=levels, params=pp),
            dtype=float,
        ).reshape(n)
        # Priority feeds encoding: a high-priority memory starts stronger.
        strength = strength * (0.8 + 0.4 * p)
        for i, item in enumerate(items):
            item.state[PRIORITY] = float(p[i])

    if neuro_state is not None:
        # The batch's novelty drives dopamine; familiar input is routine.
        novelty = float(np.mean(saliency)) if saliency is not None and n else 0.0
        event = "novelty" if novelty >= 0.5 else "routine"
        neuro_state = neuromodulator.emit(neuro_state, event=event, magnitude=min(1.0, max(0.05, novelty)), now=now, params=neuro_params(engine))
        kv[KV_NEURO] = neuro_state.to_dict()

    if engine.on("metacognitive_monitor"):
        mp = engine.config.params.metacognitive_monitor
        monitor = monitor_log.load(engine.store, part, mp, kinds=("surprises",), since=now - mp.novelty_window_s)
        if monitor.surprises:
            boost = metacognition.novelty_boost(monitor, now=now, params=mp)
            strength = strength * (1.0 + boost)  # a novelty window after a surprise boosts encoding

    strength = np.clip(strength, 0.05, 1.0)
    s0 = engine.config.params.ebbinghaus_decay.default_stability
    fsrs_on = engine.on("fsrs")
    copies_on = engine.on("triple_copy")
    for i, item in enumerate(items):
        item.strength = float(strength[i])
        item.valence = float(valence[i])
        item.arousal = float(arousal[i])
        item.stability = s0  # days: the paper's initial stability S0 = 1.0 by default
        if significance[i] > 0:
            item.state[SIGNIFICANCE] = float(significance[i])
        if item.kind in (Kind.FACT, Kind.SCHEMA, Kind.PREFERENCE, Kind.IDENTITY) or item.layer is Layer.SEMANTIC:
            names = entities(item.content)
            if names:
                item.metadata.setdefault(META_ENTITIES, names[:16])
        if copies_on:
            item.state[COPIES] = triple_copy.encode(s0=item.strength, now=now).to_dict()
        if fsrs_on and item.layer not in (Layer.CORE, Layer.WORKING):
            card = fsrs_schedule.new_card(now=now)
            item.state[FSRS] = fsrs_schedule.with_due(card, now + DAY)
            item.state[DUE_AT] = now + DAY  # first review a day after encoding
    return kv
