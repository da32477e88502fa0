"""What a recall writes into the memories it used: ``states_after_use`` over many memories
at once is ``state_after_use`` of each (one formula, vectorised over the hits)."""

from __future__ import annotations

import numpy as np

from zenbrain import Layer, Scope
from zenbrain.pipeline.recall_effects import state_after_use, states_after_use
from zenbrain.state import COPIES, DUE_AT, FSRS, LABILE_UNTIL, REVIEW_TOPIC

S = Scope("alice", "a1", session_id="s1")


def test_states_after_use_of_many_memories_is_state_after_use_of_each(mem, clock):
    layers = [Layer.EPISODIC, Layer.SEMANTIC, Layer.CORE, Layer.WORKING, Layer.EPISODIC, Layer.PROCEDURAL]
    items = [mem.store(f"memory number {i} about the orchard and its {i} bee hives", S, layer=layer)
             for i, layer in enumerate(layers)]
    clock.advance(days=2)
    mem.recall("orchard bee hives", S, k=3)  # some have been used before (FSRS cards, reinforced copies)
    clock.advance(minutes=20)  # a massed use of those: no spacing
    items = [mem.get(i.id, S) for i in items]
    topic = np.random.default_rng(1).standard_normal(mem.engine.embedder.dim).astype(np.float32)
    topic /= np.linalg.norm(topic)
    ranks, sims = list(range(1, len(items) + 1)), [0.9, 0.2, 0.7, 1.3, -0.1, 0.55]
    now = clock.now()
    many = states_after_use(mem.engine, items, now, ranks=ranks, similarities=sims, topic=topic,
                            interval_factor=1.5)
    one = [state_after_use(mem.engine, item, now, rank=r, similarity=s, topic=topic, interval_factor=1.5)
           for item, r, s in zip(items, ranks, sims)]
    assert many == one
    assert [st[LABILE_UNTIL] for st, _ in many] == [now + mem.engine.config.params.reconsolidation.lability_window_s] * 6
    spaced = [now - i.last_access >= 3600 for i in items]
    assert spaced.count(True) >= 2 and spaced.count(False) >= 1
    for item, (st, stability), was_spaced in zip(items, many, spaced):
        assert st[COPIES] != item.state[COPIES]  # every use reinforces the copies
        reviewed = was_spaced and item.layer not in (Layer.CORE, Layer.WORKING)
        assert (st.get(FSRS) != item.state.get(FSRS)) == reviewed
        assert (REVIEW_TOPIC in st and st[DUE_AT] > now) if reviewed else st.get(DUE_AT) == item.state.get(DUE_AT)
        assert (stability > item.stability) == (was_spaced and item.layer is not Layer.CORE)
    assert states_after_use(mem.engine, [], now, ranks=[], similarities=[], topic=None) == []
