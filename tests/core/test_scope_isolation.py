"""Scope isolation: users, agents, contexts and sessions never see each other's memories
through any read API, except where the configuration links one context to another."""

from __future__ import annotations

import itertools

import pytest

from zenbrain import Layer, NotFoundError, Scope
from zenbrain.config import Config

USERS = ("alice", "bob")
AGENTS = ("a1", "a2")
CONTEXTS = ("work", "personal")
SESSIONS = ("s1", "s2", None)
EPHEMERAL = (Layer.WORKING, Layer.SHORT_TERM)

READERS = [Scope(u, a, s, c) for u, a, c, s in itertools.product(USERS, AGENTS, CONTEXTS, SESSIONS)]


def _tag(s: Scope) -> str:
    return f"{s.user_id}-{s.agent_id}-{s.context}-{s.session_id or 'nosession'}"


def visible(reader: Scope, item, links=frozenset()) -> bool:
    """The isolation rule, written out independently of the library."""
    if (item.user_id, item.agent_id) != (reader.user_id, reader.agent_id):
        return False
    if item.context != reader.context and not any(
        r in (reader.context, "*") and s in (item.context, "*") for r, s in links
    ):
        return False
    return not (item.layer in EPHEMERAL and item.session_id != reader.session_id)


@pytest.fixture
def world(mem):
    """Memories in every combination of user, agent, context and session, in every layer
    a session or its absence allows. All share the word 'pineapple'."""
    items = []
    for w in READERS:
        tag = _tag(w)
        recs = [
            {"content": f"pineapple fact number {tag} is stored in the pantry"},
            {"content": f"went pineapple picking with {tag} yesterday", "kind": "episode"},
            {"content": f"My favourite pineapple dish is from {tag}"},  # core (preference)
        ]
        if w.session_id is not None:
            recs += [
                {"content": f"pineapple working note for {tag}", "kind": "note"},
                {"content": f"pineapple short term detail for {tag}", "layer": "short_term"},
            ]
        items += mem.store_many(recs, w)
    layers = {i.layer for i in items}
    assert {Layer.SEMANTIC, Layer.EPISODIC, Layer.CORE, Layer.WORKING, Layer.SHORT_TERM} <= layers
    return items


def _check_reader(mem, reader, items, links=frozenset()):
    expect = {i.id for i in items if visible(reader, i, links)}
    assert expect, reader
    hits = mem.recall("pineapple", reader, k=200, touch=False)
    assert {h.id for h in hits} <= expect
    assert len(hits) > 0
    assert {c.id for c in hits.core} <= expect
    assert {c.id for c in hits.core} == {i.id for i in items if i.layer is Layer.CORE and visible(reader, i, links)}
    assert {i.id for i in mem.list_memories(reader, include_archived=True)} == expect
    assert {i.id for i in mem.episodes(reader)} == {i.id for i in items if i.layer is Layer.EPISODIC and i.id in expect}
    for layer in Layer:
        assert {i.id for i in mem.list_memories(reader, layer=layer)} == {i.id for i in items if i.layer is layer and i.id in expect}
    for item in items:
        if item.id in expect:
            assert mem.get(item.id, reader).id == item.id
            assert mem.history(item.id, reader)[0].action == "created"
        else:
            with pytest.raises(NotFoundError):
                mem.get(item.id, reader)
            with pytest.raises(NotFoundError):
                mem.history(item.id, reader)
            with pytest.raises(NotFoundError):
                mem.update(item.id, reader, importance=0.1)
            with pytest.raises(NotFoundError):
                mem.review(item.id, reader, "good")
    assert {i.id for i in mem.review_queue(reader, limit=1000)} <= expect


def test_no_read_api_crosses_user_agent_context_or_session(mem, world, clock):
    clock.advance(days=3)  # make scheduled reviews due, so review_queue has something to show
    assert any(mem.review_queue(r, limit=1000) for r in READERS)
    for reader in READERS:
        _check_reader(mem, reader, world)


@pytest.mark.parametrize(
    "links",
    [frozenset({("work", "personal")}), frozenset({("personal", "*")})],
    ids=["work-reads-personal", "personal-reads-all"],
)
def test_context_links_open_only_the_configured_direction(make_mem, world, links):
    linked = make_mem(Config(context_links=links))
    for reader in READERS:
        _check_reader(linked, reader, world, links)
    # Spot check the direction: the reader context sees the source, never the reverse.
    reader_ctx, source_ctx = next(iter(links))
    if source_ctx == "*":
        source_ctx = next(c for c in CONTEXTS if c != reader_ctx)

    def semantic_of(ctx):
        return next(
            i for i in world if i.context == ctx and i.layer is Layer.SEMANTIC and (i.user_id, i.agent_id) == ("alice", "a1")
        )

    assert linked.get(semantic_of(source_ctx).id, Scope("alice", "a1", None, reader_ctx)).context == source_ctx
    with pytest.raises(NotFoundError):
        linked.get(semantic_of(reader_ctx).id, Scope("alice", "a1", None, source_ctx))


def test_cross_context_hits_are_weighted_down(make_mem, mem, clock):
    mem.store("the espresso machine needs descaling", Scope("alice", "a1", context="personal"))
    mem.store("the espresso machine needs descaling soon", Scope("alice", "a1", context="work"))
    linked = make_mem(Config(context_links=frozenset({("work", "personal")})))
    hits = linked.recall("espresso machine descaling", Scope("alice", "a1", context="work"), touch=False)
    by_ctx = {h.item.context: h for h in hits}
    assert set(by_ctx) == {"work", "personal"}
    assert by_ctx["personal"].why.layer_weight == pytest.approx(
        by_ctx["work"].why.layer_weight * linked.config.recall.cross_context_weight
    )
    # Without the link the other context is invisible.
    assert {h.item.context for h in mem.recall("espresso", Scope("alice", "a1", context="work"), touch=False)} == {"work"}


def test_session_memory_is_private_to_its_session(mem):
    a = Scope("alice", "a1", "session-a")
    b = Scope("alice", "a1", "session-b")
    w = mem.store("the temporary parking spot is level three", a, kind="note")
    st = mem.store("the waiter's name is Ronaldo", a, layer="short_term")
    assert (w.layer, st.layer) == (Layer.WORKING, Layer.SHORT_TERM)
    for reader in (b, a.with_session(None)):
        assert mem.recall("parking spot level three waiter", reader, touch=False) == []
        assert mem.list_memories(reader) == []
        for item in (w, st):
            with pytest.raises(NotFoundError):
                mem.get(item.id, reader)
    assert {h.id for h in mem.recall("parking spot level three waiter Ronaldo", a, touch=False)} == {w.id, st.id}
    # end_session of another session moves nothing of this one.
    assert mem.end_session(b).stages["moved"] == {}
    assert mem.get(w.id, a).layer is Layer.WORKING


def test_stats_count_what_each_reader_can_see(mem, world):
    for reader in READERS:
        assert mem.stats(reader)["memories"] == len([i for i in world if visible(reader, i)])
    assert mem.stats()["memories"] == len(world)


def test_stats_for_a_scope_count_only_that_scope(mem, world):
    reader = Scope("alice", "a1", "s1", "work")
    st = mem.stats(reader)
    expect = [i for i in world if visible(reader, i)]
    assert set(st["by_context"]) == {"work"}
    assert st["memories"] == len(expect)


def test_restore_does_not_reach_into_another_session(mem):
    a = Scope("alice", "a1", "session-a")
    w = mem.store("session a scratch note", a, kind="note")
    with pytest.raises(NotFoundError):
        mem.restore(w.id, a.with_session("session-b"))


def test_review_queue_does_not_leak_queued_memories_of_another_session(mem):
    a = Scope("alice", "a1", "session-a")
    w = mem.store("session a scratch note", a, kind="note")
    with mem.storage.transaction() as tx:  # as the curiosity engine would queue it
        tx.kv_put(("alice", "a1"), {"curiosity": [{"id": w.id, "score": 1.0}]})
    assert [i.id for i in mem.review_queue(a)] == [w.id]
    assert mem.review_queue(a.with_session("session-b")) == []


def test_intentions_stay_in_their_context(mem, clock):
    work = Scope("alice", "a1", context="work")
    personal = Scope("alice", "a1", context="personal")
    mem.store("the dentist appointment is on friday", personal)
    mem.intend("ask HR about the reorg", work, cue="dentist")
    mem.intend("pay the supplier invoice", work, due_at=clock.now() + 10)
    clock.advance(60)
    assert not mem.recall("dentist", personal).info.get("intentions")
    assert mem.due_intentions(personal) == []
    assert [f["action"] for f in mem.due_intentions(work)] == ["pay the supplier invoice"]
