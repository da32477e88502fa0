"""Recall: hybrid candidates, query types, score breakdowns, de-duplication, time-aware
ranking and read-only recall."""

from __future__ import annotations

import numpy as np
import pytest
from core_helpers import DIM, T0, TableEmbedder, table_rows, ts

from zenbrain import Layer, Scope
from zenbrain.config import Config
from zenbrain.retrieval.query import (
    FACTUAL,
    GENERAL,
    IDENTITY,
    PROCEDURAL,
    TEMPORAL,
    classify,
)

S = Scope("alice", "a1")


class AxisEmbedder:
    """Query 'zanzibarite' points along e0; the one memory that contains the word is
    orthogonal to it (unrelated in meaning); half the fillers lean weakly towards e0, half
    away. Dense search cannot find the rare memory among the fillers that lean its way."""

    name = "axis:64"
    dim = DIM

    def embed(self, texts):
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            if "crystal" in t:
                out[i, 1] = 1.0
            elif t.startswith("filler"):
                n = int(t.split()[1])
                out[i, 0] = 0.3 if n % 2 == 0 else -0.3
                out[i, 2 + n % (DIM - 2)] = 0.95
            else:
                out[i, 0] = 1.0
            out[i] /= np.linalg.norm(out[i])
        return out


def test_a_memory_found_only_lexically_is_returned(make_mem, tmp_path):
    path = str(tmp_path / "axis.db")
    mem = make_mem(path=path, emb=AxisEmbedder())
    mem.store_many([{"content": f"filler {i} sentence about ordinary things"} for i in range(40)], S)
    rare = mem.store("the zanzibarite crystal sits on the shelf", S)
    k = 5
    per_layer = max(mem.config.recall.per_layer_k, mem.config.recall.candidate_factor * k)
    qv = mem.embedder.embed(["zanzibarite"])[0]
    dense_ids = [i for i, _ in mem.storage.vector_search(("alice", "a1"), qv, per_layer, per_layer=True)]
    assert rare.id not in dense_ids  # not a dense candidate
    hits = mem.recall("zanzibarite", S, k=k, touch=False)
    hit = next(h for h in hits if h.id == rare.id)
    assert hit.why.dense == 0.0 and hit.why.lexical == 1.0
    assert hits.info["lexical"] >= 1
    # Without the BM25 half of the hybrid it is not found.
    dense_only = make_mem(Config().without("bm25_hybrid"), path=path, emb=AxisEmbedder())
    assert rare.id not in {h.id for h in dense_only.recall("zanzibarite", S, k=k, touch=False)}


@pytest.mark.parametrize(
    "query, qtype",
    [
        ("When did I go to Paris?", TEMPORAL),
        ("What did I do last weekend?", TEMPORAL),
        ("How do I deploy the app?", PROCEDURAL),
        ("steps to install numpy", PROCEDURAL),
        ("What is the capital of France?", FACTUAL),
        ("Which city does Anna live in?", FACTUAL),
        ("What is my name?", IDENTITY),
        ("Tell me about me", IDENTITY),
        ("hello there", GENERAL),
        ("bananas", GENERAL),
    ],
)
def test_query_types(mem, query, qtype):
    assert classify(query).type == qtype
    mem.store("something to find", S)
    assert mem.recall(query, S, touch=False).query_type == qtype


@pytest.mark.parametrize("query", ["What happened in May 2023?", "What did we do on 8 May, 2023?"])
def test_a_query_naming_a_date_is_temporal(query):
    info = classify(query)
    assert info.window is not None
    assert info.type == TEMPORAL


def test_time_windows_and_directions_are_parsed():
    may = classify("what happened in May 2023")
    assert (may.window.start, may.window.end) == (ts(2023, 5, 1), ts(2023, 5, 31, 23, 59, 59))
    day = classify("what did we do on 8 May, 2023")
    assert (day.window.start, day.window.end) == (ts(2023, 5, 8), ts(2023, 5, 8, 23, 59, 59))
    assert classify("what happened before June 2023").window.end == ts(2023, 6, 1)
    assert classify("what happened after May 2023").window.start == ts(2023, 5, 31, 23, 59, 59)
    assert classify("anything during 2022?").window.start == ts(2022, 1, 1)
    assert classify("the last concert").direction == "recent"
    assert classify("my first car").direction == "early"


@pytest.mark.parametrize("query", [
    "How many times has Melanie gone to the beach?", "What do Jon and Gina both have in common?",
    "What has Melanie painted?", "Where have they camped?", "Which books did Tim read?",
    "Would Caroline pursue writing as a career?", "What job might Maria pursue?", "Is he likely to move?",
])
def test_a_query_whose_answer_gathers_several_memories_is_broad(query):
    assert classify(query).broad


@pytest.mark.parametrize("query", [
    "What did Melanie paint with her kids?", "When did Caroline go to the support group?",
    "Where did Joanna go for a road trip?", "What is Caroline's identity?", "Who is Caroline a fan of?",
])
def test_a_query_one_memory_answers_is_not_broad(query):
    assert not classify(query).broad
    assert classify("a car").window is None and classify("a car").direction is None


def _mixed(mem):
    mem.store_many(
        [
            {"content": "My name is Zed Quorum"},
            {"content": "Paris is the capital of France"},
            {"content": "went to Paris for a conference last spring", "event_time": ts(2023, 4, 3)},
            {"content": "How to renew a passport: fill the form, then book an appointment"},
            {"content": "the Paris office moved to a new building"},
        ],
        S,
    )


@pytest.mark.parametrize("query", ["Paris", "When did I go to Paris?", "How do I renew a passport?", "What is my name?"])
def test_score_breakdown_is_consistent(mem, query):
    _mixed(mem)
    hits = mem.recall(query, S, k=10, touch=False)
    assert hits
    qtype = hits.query_type
    for h in hits:
        b = h.why
        # A note about a subject the query names is re-weighted by its meaning beyond the name.
        focus = b.other.get("subject_focus", 1.0)
        product = b.fused * b.temporal * b.hebbian_boost * b.retrievability * b.priority * focus
        assert b.final == pytest.approx(product, rel=1e-12, abs=1e-15)
        assert h.score == b.final
        # The recipe's fusion, then what the neighbours, a named speaker or a named time added.
        added = sum(b.other.get(part, 0.0) for part in ("neighbours", "speaker", "time"))
        assert b.fused == pytest.approx(b.layer_weight * (b.other["fusion"] + added))
        strength = mem.config.recall.layer_weight_strength
        weights = mem.config.layer_weights[qtype]
        w = weights.get(h.item.layer, 1.0)
        if h.item.speaker is not None:  # a said memory is also the episode of its saying
            w = max(w, weights.get(Layer.EPISODIC, 1.0))
        assert b.layer_weight == pytest.approx(w ** strength)
        assert 0.0 <= b.dense <= 1.0 + 1e-6 and 0.0 <= b.lexical <= 1.0
        for v in b.as_dict().values():
            assert np.isfinite(v) and v >= 0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_said_statement_takes_the_episodic_weight_of_a_temporal_query(mem):
    # A preference someone said is routed to core, and is also the episode of its saying:
    # a temporal query weighs it as the episode it is, a factual query as the core memory.
    said = mem.store("I love painting sunsets, I painted one at the lake", S, metadata={"speaker": "Mara"})
    note = mem.store("I love painting sunsets at the lake", S)  # no speaker: only a core memory
    turn = mem.store("We walked to the lake and painted the sunset", S, metadata={"speaker": "Mara"})
    assert said.layer is note.layer is Layer.CORE and turn.layer is Layer.EPISODIC
    strength = mem.config.recall.layer_weight_strength
    temporal = {h.id: h.why.layer_weight for h in mem.recall("When did Mara paint a sunset at the lake?", S,
                                                               k=10, touch=False)}
    episodic = mem.config.layer_weights[TEMPORAL][Layer.EPISODIC] ** strength
    assert temporal[said.id] == pytest.approx(episodic) and temporal[turn.id] == pytest.approx(episodic)
    assert temporal[note.id] == pytest.approx(mem.config.layer_weights[TEMPORAL][Layer.CORE] ** strength)
    factual = {h.id: h.why.layer_weight for h in mem.recall("What does Mara love to paint at the lake?", S,
                                                              k=10, touch=False)}
    core = mem.config.layer_weights[FACTUAL][Layer.CORE] ** strength
    assert factual[said.id] == pytest.approx(core) and factual[note.id] == pytest.approx(core)
    assert factual[turn.id] == pytest.approx(mem.config.layer_weights[FACTUAL][Layer.EPISODIC] ** strength)


def test_near_identical_memories_are_returned_once(mem):
    words = "the quarterly budget review meeting moved to thursday afternoon in room twelve with finance and legal teams present"
    a = mem.store(words, S)
    b = mem.store(words, S, dedupe=False)  # identical, kept as a second copy
    c = mem.store(words + " again", S)  # one more word: Jaccard 18/19
    d = mem.store("the quarterly budget review meeting was cancelled", S)  # different enough
    hits = mem.recall("quarterly budget review meeting", S, k=10, touch=False)
    ids = [h.id for h in hits]
    assert len({a.id, b.id, c.id} & set(ids)) == 1
    assert d.id in ids
    assert len(mem.list_memories(S)) == 4  # de-duplication is a recall policy, nothing is deleted


@pytest.fixture
def outings(make_mem, clock, tmp_path):
    """Four equally relevant outings (same vector, same BM25 score), stored out of
    chronological order: only time can order them."""
    clock.set(ts(2024, 1, 1))
    axis = np.zeros(DIM)
    axis[0] = 1.0
    mem = make_mem(path=str(tmp_path / "outings.db"), emb=TableEmbedder([("downtown", axis)]))
    events = {
        "june": ("went downtown with Lee", ts(2023, 6, 20)),
        "april": ("went downtown with Max", ts(2023, 4, 12)),
        "march": ("went downtown with Ana", ts(2023, 3, 2)),
        "may": ("went downtown with Tom", ts(2023, 5, 14)),
    }
    ids = {key: mem.store(c, S, event_time=t).id for key, (c, t) in events.items()}
    return mem, ids


@pytest.mark.parametrize("month", ["march", "april", "may", "june"])
def test_a_named_month_prefers_events_inside_it(outings, month):
    mem, ids = outings
    hits = mem.recall(f"What happened downtown in {month.capitalize()} 2023?", S, k=4, touch=False)
    assert hits[0].id == ids[month]
    assert {h.id for h in hits if h.why.other.get("time", 0.0) > 0} == {ids[month]}


def test_a_named_month_lifts_an_outing_over_plain_similarity(mem, clock):
    """With the hashing embedder the May outing is the least similar one; the window the
    question names lifts it to the top of relevance (it ties the best match outside it)."""
    clock.set(ts(2024, 1, 1))
    events = {
        "march": ("went to a birthday party with Ana downtown", ts(2023, 3, 2)),
        "april": ("went to a concert with Maria downtown", ts(2023, 4, 12)),
        "may": ("went to a pottery class with Tom downtown", ts(2023, 5, 14)),
        "june": ("went to a football match with Lee downtown", ts(2023, 6, 20)),
    }
    ids = {key: mem.store(c, S, event_time=t).id for key, (c, t) in events.items()}
    hits = mem.recall("What happened downtown in May 2023?", S, k=4, touch=False)
    may = next(h for h in hits if h.id == ids["may"])
    assert may.why.other["fusion"] < max(h.why.other["fusion"] for h in hits)  # before the time preference
    assert may.why.fused == pytest.approx(max(h.why.fused for h in hits))
    assert [h.id for h in hits].index(ids["may"]) <= 1


@pytest.mark.parametrize(
    "query, expect",
    [
        ("When was the last time I went downtown?", ["june", "may", "april", "march"]),
        ("What was the most recent time I went downtown?", ["june", "may", "april", "march"]),
        ("When was the first time I went downtown?", ["march", "april", "may", "june"]),
    ],
)
def test_last_and_first_order_by_time(outings, query, expect):
    mem, ids = outings
    hits = mem.recall(query, S, k=4, touch=False)
    assert [h.id for h in hits] == [ids[m] for m in expect]
    factors = [h.why.temporal for h in hits]
    assert factors == sorted(factors, reverse=True)
    assert factors[0] == pytest.approx(1.0 + mem.config.recall.recency_boost)
    assert factors[-1] == 1.0


def test_touch_false_is_read_only_and_default_recall_counts_access(mem, clock):
    _mixed(mem)
    before = table_rows(mem.storage)
    for _ in range(3):
        hits = mem.recall("Paris", S, k=3, touch=False)
    assert table_rows(mem.storage) == before
    assert all(mem.get(h.id, S).access_count == 0 for h in hits)

    clock.advance(days=2)
    hits = mem.recall("Paris", S, k=3)
    returned = {h.id for h in hits}
    for item in mem.list_memories(S):
        if item.id in returned:
            assert (item.access_count, item.last_access) == (1, clock.now())
        else:
            assert (item.access_count, item.last_access) == (0, T0)
    for h in hits:  # the returned items reflect the access too
        assert h.item.access_count == 1
    clock.advance(days=1)
    mem.recall("Paris", S, k=3)
    assert sorted(mem.get(i, S).access_count for i in returned) == [2, 2, 2]


def test_recall_on_an_empty_store(mem):
    res = mem.recall("anything", S)
    assert list(res) == [] and res.core == []


def test_recall_by_layer(mem):
    _mixed(mem)
    hits = mem.recall("Paris", S, layers=["episodic", Layer.PROCEDURAL], touch=False)
    assert hits and {h.item.layer for h in hits} <= {Layer.EPISODIC, Layer.PROCEDURAL, Layer.CORE}


def test_recall_follows_an_update_of_the_content(make_mem, mem):
    dense_only = make_mem(Config().without("bm25_hybrid"))
    item = mem.store("the spare key is under the flowerpot", S)
    other = mem.store("the car is parked on level two", S)
    assert dense_only.recall("spare key flowerpot", S, k=1, touch=False)[0].id == item.id  # index loaded
    mem.update(item.id, S, content="the spare key is in the mailbox")
    for m in (mem, dense_only):
        assert m.recall("spare key mailbox", S, k=1, touch=False)[0].id == item.id
    assert mem.storage.lexical_search(("alice", "a1"), "flowerpot", 5) == []
    hits = dense_only.recall("flowerpot", S, k=2, touch=False)
    assert {h.id for h in hits} <= {item.id, other.id}
    assert next(h for h in hits if h.id == item.id).why.dense < 0.5
