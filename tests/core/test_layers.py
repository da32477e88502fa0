"""The seven layers as policies: routing, working-memory capacity, session-bound
short-term memory, episodic time, always-available core memory, disabled layers."""

from __future__ import annotations

import pytest
from core_helpers import ts

from zenbrain import Kind, Layer, NotFoundError, Scope
from zenbrain.config import Config

S = Scope("alice", "a1")
S1 = Scope("alice", "a1", "s1")
S2 = Scope("alice", "a1", "s2")


@pytest.mark.parametrize(
    "content, kind, layer",
    [
        ("My name is Zed Quorum", Kind.IDENTITY, Layer.CORE),
        ("I prefer green tea in the morning", Kind.PREFERENCE, Layer.CORE),
        ("How to deploy: first build the image, then push it", Kind.SKILL, Layer.PROCEDURAL),
        ("Went to the dentist yesterday", Kind.EPISODE, Layer.EPISODIC),
        ("Paris is the capital of France", Kind.FACT, Layer.SEMANTIC),
    ],
)
def test_routing_by_content(mem, content, kind, layer):
    item = mem.store(content, S)
    assert (item.kind, item.layer) == (kind, layer)
    assert mem.get(item.id, S).layer is layer


@pytest.mark.parametrize(
    "content, kwargs, kind, layer",
    [
        ("The gallery opens at nine", {"speaker": "Maya"}, Kind.EPISODE, Layer.EPISODIC),
        ("The gallery opens at nine", {"metadata": {"speaker": "Maya"}}, Kind.EPISODE, Layer.EPISODIC),
        ("Maya: The gallery opens at nine", {}, Kind.EPISODE, Layer.EPISODIC),
        ("The gallery opens at nine", {}, Kind.FACT, Layer.SEMANTIC),
        ("I prefer green tea in the morning", {"speaker": "Maya"}, Kind.PREFERENCE, Layer.CORE),
        ("The gallery opens at nine", {"speaker": "Maya", "kind": "fact"}, Kind.FACT, Layer.SEMANTIC),
    ],
)
def test_a_turn_someone_said_is_an_episode(mem, content, kwargs, kind, layer):
    # What a speaker said is the episode of its saying; the semantic layer gets facts stored
    # as such and what consolidation abstracts. A stated identity or preference stays core,
    # and an explicit kind wins.
    [item] = mem.store_many([{"content": content, **kwargs}], S)
    assert (item.kind, item.layer) == (kind, layer)


@pytest.mark.parametrize(
    "scope, kwargs, layer",
    [
        (S1, {"kind": "note"}, Layer.WORKING),
        (S, {"kind": "note"}, Layer.EPISODIC),
        (S, {"kind": Kind.SKILL}, Layer.PROCEDURAL),
        (S, {"kind": "schema"}, Layer.SEMANTIC),
        (S, {"kind": "identity"}, Layer.CORE),
        (S, {"metadata": {"kind": "skill"}}, Layer.PROCEDURAL),
        (S, {"metadata": {"kind": "episode"}}, Layer.EPISODIC),
        (S, {"kind": "fact", "metadata": {"kind": "skill"}}, Layer.SEMANTIC),  # the argument wins over metadata
        (S, {"layer": "semantic"}, Layer.SEMANTIC),
        (S, {"layer": Layer.CROSS_CONTEXT}, Layer.CROSS_CONTEXT),
        (S, {"layer": "Core"}, Layer.CORE),
        (S1, {"layer": "Short-Term"}, Layer.SHORT_TERM),
        (S1, {"kind": "skill", "layer": "working"}, Layer.WORKING),  # an explicit layer wins over the kind
    ],
)
def test_routing_by_kind_metadata_and_override(mem, scope, kwargs, layer):
    item = mem.store("went to the market yesterday", scope, **kwargs)
    assert item.layer is layer
    assert mem.get(item.id, scope).layer is layer


def _notes(mem, clock, scope, n, prefix="note"):
    out = []
    for i in range(n):
        clock.advance(minutes=1)
        out.append(mem.store(f"{prefix} {i}: item {chr(97 + i)}{chr(97 + i)} on the whiteboard", scope, kind="note"))
    return out


def test_working_memory_holds_seven_and_evicts_the_least_recently_used(mem, clock):
    notes = _notes(mem, clock, S1, 7)
    assert [mem.get(n.id, S1).layer for n in notes] == [Layer.WORKING] * 7
    # Using note 0 makes note 1 the least recently used.
    clock.advance(minutes=1)
    hits = mem.recall(notes[0].content, S1, k=1)
    assert hits[0].id == notes[0].id
    clock.advance(minutes=1)
    eighth = mem.store("note 7: the eighth item", S1, kind="note")
    layers = {n.id: mem.get(n.id, S1).layer for n in [*notes, eighth]}
    assert layers[notes[1].id] is Layer.SHORT_TERM
    assert [n for n, layer in layers.items() if layer is Layer.SHORT_TERM] == [notes[1].id]
    assert len(mem.list_memories(S1, layer="working")) == 7
    moved = [e for e in mem.history(notes[1].id, S1) if e.action == "moved"]
    assert moved and moved[-1].detail == {"from": "working", "to": "short_term", "why": "capacity"}
    # Another session has its own seven slots: nothing of s1 moves.
    _notes(mem, clock, S2, 7, prefix="other")
    assert len(mem.list_memories(S1, layer="working")) == 7
    assert len(mem.list_memories(S2, layer="working")) == 7


def test_a_batch_larger_than_capacity_keeps_seven(mem):
    items = mem.store_many([{"content": f"batch note {i}", "kind": "note"} for i in range(10)], S1)
    layers = [mem.get(i.id, S1).layer for i in items]
    assert layers.count(Layer.WORKING) == 7
    assert layers.count(Layer.SHORT_TERM) == 3


def test_capacity_comes_from_the_config(make_mem, clock):
    from zenbrain.config import LayerParams

    small = make_mem(Config(layers=LayerParams(working_capacity=2)))
    notes = _notes(small, clock, S1, 3)
    assert [small.get(n.id, S1).layer for n in notes] == [Layer.SHORT_TERM, Layer.WORKING, Layer.WORKING]


def test_end_session_moves_short_term_memory_into_long_term_layers(mem, clock):
    note = mem.store("scratch: call the plumber", S1, kind="note")
    fact = mem.store("the plumber is called Mario", S1, layer="short_term", kind="fact")
    skill = mem.store("to fix the tap, close the valve first", S1, layer="short_term", kind="skill")
    other = mem.store("s2 scratch note", S2, kind="note")
    for item in (note, fact, skill):
        with pytest.raises(NotFoundError):
            mem.get(item.id, S2)
    clock.advance(hours=2)
    report = mem.end_session(S1)
    assert report.stages["moved"] == {"episodic": 1, "semantic": 1, "procedural": 1}
    after = {i.id: mem.get(i.id, S2).layer for i in (note, fact, skill)}  # visible from any session now
    assert after == {note.id: Layer.EPISODIC, fact.id: Layer.SEMANTIC, skill.id: Layer.PROCEDURAL}
    assert {i.id for i in mem.list_memories(S)} >= {note.id, fact.id, skill.id}
    assert mem.history(note.id, S)[-1].detail["why"] == "session end"
    # The other session is untouched; ending s1 again moves nothing.
    assert mem.get(other.id, S2).layer is Layer.WORKING
    assert mem.end_session(S1).stages["moved"] == {}


def test_end_session_gives_new_episodes_an_event_time(mem, clock):
    note = mem.store("scratch: call the plumber", S1, kind="note")
    clock.advance(hours=1)
    mem.end_session(S1)
    t = mem.get(note.id, S).event_time
    assert t is not None and note.created_at <= t <= clock.now()


def test_episodes_carry_event_time_and_are_selected_by_range(mem, clock):
    trips = [
        ("went to Lisbon", ts(2023, 4, 30, 23, 59)),
        ("went to Madrid", ts(2023, 5, 1)),
        ("went to Rome", ts(2023, 5, 15)),
        ("went to Oslo", ts(2023, 5, 31, 23, 59, 59)),
        ("went to Cairo", ts(2023, 6, 1)),
    ]
    stored = [mem.store(c, S, event_time=t) for c, t in reversed(trips)]
    implicit = mem.store("went swimming yesterday", S)  # no event time given: now
    assert all(i.layer is Layer.EPISODIC for i in [*stored, implicit])
    assert implicit.event_time == clock.now()
    assert mem.store("went hiking", S, metadata={"event_time": ts(2020, 1, 1)}).event_time == ts(2020, 1, 1)
    may = mem.episodes(S, ts(2023, 5, 1), ts(2023, 5, 31, 23, 59, 59))
    assert [i.content for i in may] == ["went to Madrid", "went to Rome", "went to Oslo"]  # inclusive, oldest first
    assert [i.content for i in mem.episodes(S, None, ts(2023, 5, 1))] == ["went hiking", "went to Lisbon", "went to Madrid"]
    assert [i.content for i in mem.episodes(S, ts(2023, 6, 1), None)] == ["went to Cairo", "went swimming yesterday"]
    assert len(mem.episodes(S, limit=2)) == 2
    assert mem.episodes(S, ts(2030, 1, 1)) == []
    # recall's time_range selects by event time too.
    hits = mem.recall("went to", S, k=20, time_range=(ts(2023, 5, 1), ts(2023, 5, 31, 23, 59, 59)), touch=False)
    assert {h.content for h in hits} == {"went to Madrid", "went to Rome", "went to Oslo"}


def test_core_memories_are_always_in_recall_core(mem):
    name = mem.store("My name is Zed Quorum", S)
    pref = mem.store("I prefer green tea", S)
    mem.store("the train leaves at nine", S)
    for scope in (S, S1, S2):
        for query in ("train departure time", "something entirely unrelated", "how do I bake bread"):
            res = mem.recall(query, scope, k=1, touch=False)
            assert {c.id for c in res.core} == {name.id, pref.id}
    res = mem.recall("train", S, k=1, layers=["episodic"], touch=False)
    assert {c.id for c in res.core} == {name.id, pref.id}
    assert mem.recall("name", Scope("bob", "a1"), touch=False).core == []


def test_recall_layer_filter_applies_to_core_hits(mem):
    mem.store("My name is Zed Quorum and I like trains", S)
    ep = mem.store("went on a train trip yesterday", S)
    hits = mem.recall("trains trip", S, k=10, layers=["episodic"], touch=False)
    assert [h.id for h in hits] == [ep.id]


@pytest.mark.parametrize(
    "disabled, scope, kwargs, content, layer",
    [
        ({Layer.CORE}, S, {}, "My name is Zed", Layer.SEMANTIC),
        ({Layer.EPISODIC}, S, {}, "went to the fair yesterday", Layer.SEMANTIC),
        ({Layer.PROCEDURAL}, S, {}, "How to brew: first boil, then steep", Layer.SEMANTIC),
        ({Layer.WORKING}, S1, {"kind": "note"}, "scratch", Layer.SHORT_TERM),
        ({Layer.WORKING, Layer.SHORT_TERM}, S1, {"kind": "note"}, "scratch", Layer.EPISODIC),
        ({"semantic"}, S, {}, "Paris is the capital of France", Layer.EPISODIC),
    ],
)
def test_disabled_layers_reroute(make_mem, disabled, scope, kwargs, content, layer):
    mem = make_mem(Config(disabled_layers=frozenset(disabled)))
    item = mem.store(content, scope, **kwargs)
    assert item.layer is layer
    assert item.id in {h.id for h in mem.recall(content, scope, touch=False)}


def test_disabled_layers_reroute_at_session_end_and_hide_from_recall(make_mem, mem):
    name = mem.store("My name is Zed Quorum", S)  # stored in core before the layer is switched off
    no_ep = make_mem(Config(disabled_layers=frozenset({Layer.EPISODIC, Layer.CORE})))
    note = no_ep.store("scratch: buy milk", S1, kind="note")
    no_ep.end_session(S1)
    assert no_ep.get(note.id, S).layer is Layer.SEMANTIC
    res = no_ep.recall("Zed Quorum name", S, touch=False)
    assert name.id not in {h.id for h in res}
    assert res.core == []


def test_explicit_layer_that_is_disabled_is_rerouted_or_refused(make_mem):
    from zenbrain import ValidationError

    mem = make_mem(Config(disabled_layers=frozenset({Layer.CORE})))
    try:
        item = mem.store("My name is Zed Quorum", S, layer="core")
    except ValidationError:
        return
    assert item.layer is not Layer.CORE
    assert item.id in {h.id for h in mem.recall("Zed Quorum", S, touch=False)}


def test_short_term_memory_older_than_its_ttl_is_consolidated_by_sleep(make_mem, clock):
    from zenbrain.config import LayerParams

    mem = make_mem(Config(layers=LayerParams(short_term_ttl_hours=1.0)))
    item = mem.store("the waiter's name is Ronaldo", S1, layer="short_term")
    clock.advance(hours=3)
    mem.sleep(S)
    assert mem.get(item.id, S1).layer is not Layer.SHORT_TERM


def test_moving_a_memory_into_a_full_working_memory_evicts_one(mem, clock):
    _notes(mem, clock, S1, 7)
    fact = mem.store("Paris is the capital of France", S1)
    assert fact.layer is Layer.SEMANTIC
    mem.update(fact.id, S1, layer="working")
    assert len(mem.list_memories(S1, layer="working")) == 7
    assert mem.get(fact.id, S1).layer is Layer.WORKING


def test_update_into_a_disabled_layer_is_rerouted_or_refused(make_mem):
    from zenbrain import ValidationError

    mem = make_mem(Config(disabled_layers=frozenset({Layer.CORE})))
    item = mem.store("Rome is the capital of Italy", S)
    try:
        moved = mem.update(item.id, S, layer="core")
    except ValidationError:
        return
    assert moved.layer is not Layer.CORE
    assert item.id in {h.id for h in mem.recall("Rome capital Italy", S, touch=False)}
