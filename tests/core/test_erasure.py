"""Erasure: after forget / forget_scope nothing of the memory is readable through any API,
in any table, or in the database file and its WAL on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from core_helpers import (
    embedding_rows,
    files_containing,
    partition_rows,
    tables_containing,
)

from zenbrain import Layer, NotFoundError, Scope
from zenbrain.config import Config
from zenbrain.model import Edge
from zenbrain.state import KV_INFORMATION
from zenbrain.storage.base import Filter
from zenbrain.text import content_hash

# Lower-case and ending in digits: the FTS tokenizer and stemmer keep it verbatim, so a
# leftover index term would show up in the raw bytes as well.
MARKER = "zqvkmarker4417"
SECRET = f"my locker code is {MARKER} and nobody else knows it"


def _fill(mem, scope, n=12):
    return mem.store_many(
        [{"content": f"ordinary note number {i} about the weather and gardening"} for i in range(n)], scope
    )


def _assert_unreadable(mem, scope, item, db_path):
    with pytest.raises(NotFoundError):
        mem.get(item.id, scope)
    with pytest.raises(NotFoundError):
        mem.history(item.id, scope)
    for q in (SECRET, MARKER, "locker code", "nobody else knows"):
        assert item.id not in [h.id for h in mem.recall(q, scope, k=50, touch=False)]
    # Dense alone and lexical alone: neither index still knows the memory.
    part = (scope.user_id, scope.agent_id)
    qv = mem.embedder.embed([SECRET])[0]
    assert item.id not in [i for i, _ in mem.storage.vector_search(part, qv, 1000, per_layer=True)]
    assert mem.storage.lexical_search(part, MARKER, 100) == []
    assert item.id not in [i.id for i in mem.list_memories(scope, include_archived=True)]
    assert item.id not in [i.id for i in mem.episodes(scope)]
    assert item.id not in [i.id for i in mem.storage.query(part, Filter(include_archived=True, all_sessions=True))]
    assert mem.storage.edges(part, [item.id]) == []
    assert mem.storage.history(part, item.id) == []
    assert tables_containing(mem.storage, MARKER) == {}
    assert tables_containing(mem.storage, item.id) in ({}, {"changes": 1}, {"changes": 2}, {"changes": 3})
    assert embedding_rows(mem.storage, content_hash(item.content)) == 0
    assert files_containing(db_path, MARKER) == {}


def test_forget_leaves_nothing_readable(mem, make_mem, scope, db_path, clock):
    dense_only = make_mem(Config().without("bm25_hybrid"))
    others = _fill(mem, scope)
    secret = mem.store(SECRET, scope, kind="episode", metadata={"note": f"also {MARKER}"})
    part = (scope.user_id, scope.agent_id)
    with mem.storage.transaction() as tx:
        tx.put_edges(part, [Edge(secret.id, others[0].id, "related"), Edge(others[1].id, secret.id, "related")])
        tx.put_edges(part, [Edge(others[0].id, others[1].id, "related")])
    clock.advance(hours=1)
    mem.update(secret.id, scope, importance=0.9)
    # It is findable before: dense, lexical, list, episodes, history.
    assert mem.recall(MARKER, scope, k=1, touch=False)[0].id == secret.id
    assert len(mem.history(secret.id, scope)) == 2
    assert dense_only.recall(SECRET, scope, k=1, touch=False)[0].id == secret.id
    assert files_containing(mem.storage.path, MARKER)
    edges_before = {(e.src, e.dst, e.relation) for e in mem.storage.edges(part)}
    assert any(secret.id in e[:2] for e in edges_before)

    mem.forget(secret.id, scope)

    _assert_unreadable(mem, scope, secret, db_path)
    assert secret.id not in [h.id for h in dense_only.recall(SECRET, scope, k=50, touch=False)]
    # The other memories and the edges between them are untouched.
    assert len(mem.list_memories(scope)) == len(others)
    edges_after = {(e.src, e.dst, e.relation) for e in mem.storage.edges(part)}
    assert edges_after == {e for e in edges_before if secret.id not in e[:2]}
    assert (others[0].id, others[1].id, "related") in edges_after
    with pytest.raises(NotFoundError):
        mem.forget(secret.id, scope)


def test_forget_takes_the_words_out_of_the_frequencies_decay_saved(mem, scope, db_path, clock):
    """Decay saves the store's word frequencies (value-aware forgetting, rehearsal, the
    archive cue): an erased memory's words leave them too, and the others' counts stay."""
    others = _fill(mem, scope)
    secret = mem.store(SECRET, scope, kind="episode")
    clock.advance(hours=1)
    mem.decay(scope)
    part = (scope.user_id, scope.agent_id)
    before = mem.storage.kv_get(part, KV_INFORMATION)
    assert before["df"][MARKER] == 1 and before["n"] == len(others) + 1

    mem.forget(secret.id, scope)

    after = mem.storage.kv_get(part, KV_INFORMATION)
    assert MARKER not in after["df"] and after["n"] == len(others)
    assert after["df"]["weather"] == before["df"]["weather"] == len(others)
    _assert_unreadable(mem, scope, secret, db_path)


def test_forget_of_an_edited_memory_drops_the_saved_frequencies(mem, scope, clock):
    """The frequencies may hold words an edited memory no longer says: they go entirely."""
    _fill(mem, scope, n=4)
    secret = mem.store(SECRET, scope, kind="episode")
    clock.advance(hours=1)
    mem.decay(scope)
    mem.update(secret.id, scope, content="my locker code changed")
    mem.forget(secret.id, scope)
    assert not mem.storage.kv_get((scope.user_id, scope.agent_id), KV_INFORMATION)
    assert tables_containing(mem.storage, MARKER) == {}


def test_forget_keeps_a_vector_that_another_memory_shares(mem, scope):
    a = mem.store("the shared sentence about tea", scope)
    b = mem.store("the shared sentence about tea", Scope("bob", "assistant"))
    mem.forget(a.id, scope)
    assert embedding_rows(mem.storage, a.content_hash) == 1
    assert mem.recall("shared sentence tea", Scope("bob", "assistant"), k=1)[0].id == b.id
    mem.forget(b.id, Scope("bob", "assistant"))
    assert embedding_rows(mem.storage, a.content_hash) == 0


def test_metadata_a_user_writes_does_not_steer_erasure(mem, scope):
    """Provenance comes from the library's own records: ``evidence_ids`` written by a user
    (a list naming another memory, or not a list at all) neither widens nor breaks forget."""
    src = mem.store(SECRET, scope)
    claims = mem.store("a note that claims to be derived", scope, metadata={"evidence_ids": [src.id]})
    garbage = mem.store("a note with a number for evidence", scope, metadata={"evidence_ids": 7})
    receipt = mem.forget(src.id, scope)
    assert receipt.memory_ids == (src.id,) and receipt.derived_ids == ()
    assert mem.get(claims.id, scope).id == claims.id
    assert mem.forget(garbage.id, scope).memory_ids == (garbage.id,)
    assert tables_containing(mem.storage, MARKER) == {}


def test_the_receipt_lists_what_was_removed(mem, scope):
    others = _fill(mem, scope, 3)
    item = mem.store(SECRET, scope)
    part = (scope.user_id, scope.agent_id)
    with mem.storage.transaction() as tx:
        tx.put_edges(part, [Edge(item.id, others[0].id, "related"), Edge(others[1].id, item.id, "related")])
    mem.update(item.id, scope, importance=0.9)
    edges = len(mem.storage.edges(part, [item.id]))
    history = len(mem.history(item.id, scope))
    receipt = mem.forget(item.id, scope)
    assert receipt.memory_ids == (item.id,) and receipt.count == 1
    assert receipt.edges == edges >= 2
    assert receipt.history_rows >= history == 2
    assert receipt.lexical_entries == 1 and receipt.vectors == 1
    assert receipt.scrubbed is True
    assert receipt.as_dict()["memory_ids"] == [item.id]


def test_forget_after_update_erases_every_version(mem, scope, db_path):
    item = mem.store(f"first version {MARKER}", scope)
    mem.update(item.id, scope, content="second version of the sentence")
    mem.forget(item.id, scope)
    assert tables_containing(mem.storage, MARKER) == {}
    assert files_containing(db_path, MARKER) == {}


def test_forget_after_update_erases_the_old_versions_vector(mem, scope):
    old = f"first version {MARKER}"
    item = mem.store(old, scope)
    mem.update(item.id, scope, content="second version of the sentence")
    mem.forget(item.id, scope)
    assert embedding_rows(mem.storage, content_hash(old)) == 0


def test_forget_in_a_session_and_other_layers(make_mem, session, db_path):
    mem = make_mem()
    w = mem.store(f"working note {MARKER}", session, kind="note")
    assert w.layer is Layer.WORKING
    mem.forget(w.id, session)
    with pytest.raises(NotFoundError):
        mem.get(w.id, session)
    assert tables_containing(mem.storage, MARKER) == {}
    assert files_containing(db_path, MARKER) == {}


def test_forget_of_another_scopes_memory_is_refused(mem, scope):
    item = mem.store(SECRET, scope)
    for other in (Scope("bob", "assistant"), Scope("alice", "other"), scope.with_context("work")):
        with pytest.raises(NotFoundError):
            mem.forget(item.id, other)
    assert mem.get(item.id, scope).id == item.id


def test_forget_scope_erases_every_memory_of_the_partition(mem, db_path):
    alice = Scope("alice", "assistant")
    bob = Scope("bob", "assistant")
    mine = [
        mem.store(f"{MARKER} semantic fact", alice),
        mem.store(f"went skiing {MARKER} yesterday", alice.with_context("work")),
        mem.store(f"{MARKER} working note", alice.with_session("s1"), kind="note"),
        mem.store(f"{MARKER} short term", alice.with_session("s2"), layer="short_term"),
        mem.store(f"My name is Alice {MARKER}", alice),
    ]
    theirs = mem.store("bob keeps his own memory", bob)
    receipt = mem.forget_scope(alice)
    assert set(receipt.memory_ids) == {i.id for i in mine} and receipt.scrubbed
    for item in mine:
        with pytest.raises(NotFoundError):
            mem.get(item.id, item.scope)
    assert mem.storage.query(("alice", "assistant"), Filter(include_archived=True, all_sessions=True)) == []
    assert mem.recall(MARKER, alice, touch=False) == []
    assert mem.recall(MARKER, alice, touch=False).core == []
    assert mem.stats(alice)["memories"] == 0
    assert mem.get(theirs.id, bob).content == theirs.content
    assert tables_containing(mem.storage, MARKER) == {}
    assert files_containing(db_path, MARKER) == {}
    assert mem.forget_scope(alice).count == 0


def test_erasure_is_seen_by_a_second_open_handle(make_mem, scope):
    first = make_mem()
    second = make_mem()
    item = first.store(SECRET, scope)
    assert second.recall(SECRET, scope, k=1, touch=False)[0].id == item.id  # index loaded in the second
    first.forget(item.id, scope)
    assert item.id not in [h.id for h in second.recall(SECRET, scope, k=20, touch=False)]
    with pytest.raises(NotFoundError):
        second.get(item.id, scope)
    # The other open handle does not keep the text alive in the file or the WAL.
    assert files_containing(first.storage.path, MARKER) == {}


def test_forget_erases_a_schema_consolidated_from_the_memory(mem, scope, clock, db_path):
    tags = {}
    for who in ["Lee", "Ana", "Tom", "Max", "Kim"]:
        clock.advance(hours=1)
        tag = f"zqvk{who.lower()}4417"
        tags[tag] = mem.store(f"went climbing at the bouldering gym with {who} {tag}", scope, kind="episode")
    clock.advance(days=2)
    created = mem.consolidate(scope).stages["dual_process_cot"]["schemas_created"]
    assert len(created) == 1 and set(created[0]["evidence_ids"]) == {e.id for e in tags.values()}
    schema = mem.get(created[0]["id"], scope)
    quoted = [t for t in tags if t in schema.content]
    assert len(quoted) == 1  # the extractive gist quotes one episode
    tag = quoted[0]
    # A user who rewrites the schema's metadata does not change what erasure finds.
    mem.update(schema.id, scope, metadata={"evidence_ids": 7})
    receipt = mem.forget(tags[tag].id, scope)
    assert receipt.derived_ids == (schema.id,)
    with pytest.raises(NotFoundError):
        mem.get(schema.id, scope)
    assert {i.id for i in mem.list_memories(scope, include_archived=True)} == {e.id for t, e in tags.items() if t != tag}
    assert tables_containing(mem.storage, tag) == {}
    assert files_containing(db_path, tag) == {}


def test_forget_scope_leaves_no_partition_row_naming_the_user(make_mem):
    """The partition's number row stops naming the user (the number stays taken); the same
    user writing again gets a new number, and another open handle that read the old one
    reads the new one's edges."""
    first, second = make_mem(), make_mem()
    alice = Scope("zqxalice", "assistant")
    a, b = first.store("alice likes green tea", alice), first.store("alice walks to work", alice)
    first.relate(a.id, b.id, "causes", alice)
    con = first.storage.raw_connection()
    old = con.execute("SELECT id FROM partitions WHERE user_id='zqxalice'").fetchone()[0]
    assert [e.dst for e in second.storage.edges(("zqxalice", "assistant"), [a.id]) if e.relation == "causes"] == [b.id]
    rows = con.execute("SELECT COUNT(*) FROM partitions").fetchone()[0]
    first.forget_scope(alice)
    assert con.execute("SELECT COUNT(*) FROM partitions WHERE user_id='zqxalice'").fetchone()[0] == 0
    assert con.execute("SELECT user_id, agent_id FROM partitions WHERE id=?", (old,)).fetchone() == ("", f"erased {old}")
    assert con.execute("SELECT COUNT(*) FROM partitions").fetchone()[0] == rows  # the number stays taken
    for table in ("edges", "history"):
        assert con.execute(f"SELECT COUNT(*) FROM {table} WHERE part=?", (old,)).fetchone()[0] == 0
    c, d = first.store("alice moved to Lisbon", alice), first.store("alice learns Portuguese", alice)
    first.relate(c.id, d.id, "causes", alice)
    new = con.execute("SELECT id FROM partitions WHERE user_id='zqxalice'").fetchone()[0]
    assert new != old
    assert [e.dst for e in second.storage.edges(("zqxalice", "assistant"), [c.id]) if e.relation == "causes"] == [d.id]
    assert second.recall("Lisbon", alice, k=1, touch=False)[0].id == c.id


def test_forget_scope_erases_the_partitions_other_state(mem, db_path):
    alice = Scope("alice", "assistant")
    mem.store(f"the {MARKER} locker is blue", alice)
    mem.intend(f"call mom about {MARKER}", alice, cue="locker")
    mem.set_goal(f"find the {MARKER} locker", alice)
    mem.recall("locker", alice)
    mem.store("bob keeps his state", Scope("bob", "assistant"))
    mem.forget_scope(alice)
    assert tables_containing(mem.storage, MARKER) == {}
    assert files_containing(db_path, MARKER) == {}
    assert partition_rows(mem.storage, "alice") == {}
    assert partition_rows(mem.storage, "bob").get("kv", 0) > 0


def test_forget_scope_leaves_the_user_named_in_no_row(make_mem):
    """After forget_scope no table names the user (the database files: SQLite below;
    PostgreSQL's VACUUM leaves dead rows' bytes in the tables whose text it does not
    rewrite, docs/reliability.md)."""
    user = "zqxuser4417"
    mem = make_mem()
    alice = Scope(user, "assistant")
    mem.store_many([{"content": f"alice note {i} about tea and trains"} for i in range(30)], alice)
    mem.relate(*[i.id for i in mem.list_memories(alice)[:2]], "causes", alice)
    mem.recall("tea", alice)
    mem.store("bob keeps his own memory", Scope("bob", "assistant"))
    mem.forget_scope(alice)
    assert tables_containing(mem.storage, user) == {}


def test_forget_scope_reaches_another_handles_indexes_and_the_index_files(make_mem, db_path):
    """The change log that other handles' indexes follow names an erased partition by its
    number: they drop its memories, and no index file names the user."""
    user = "zqxuser4417"
    first, second = make_mem(), make_mem()
    alice, bob = Scope(user, "assistant"), Scope("bob", "assistant")
    first.store_many([{"content": f"alice note {i} about tea and trains"} for i in range(30)], alice)
    gone = first.store("alice keeps a red notebook", alice)
    first.store("bob keeps his own memory", bob)
    assert second.recall("red notebook", alice, k=1, touch=False)[0].id == gone.id  # loaded in the second
    first.close()  # its index files are saved
    third = make_mem()
    third.forget_scope(alice)
    assert tables_containing(third.storage, user) == {}
    assert files_containing(db_path, user) == {}
    assert second.recall("red notebook", alice, k=5, touch=False) == []
    part = (user, "assistant")
    held = second.storage._search  # its indexes hold nothing of the partition
    assert part not in held._parts or len(held._parts[part]) == 0
    assert part not in held.lexical or held.lexical.shard(part).keys.live_count == 0
    second.close()
    third.close()
    named = [p for p in Path(f"{db_path}.idx").rglob("*") if p.is_file() and user.encode() in p.read_bytes()]
    assert named == []


def test_another_handle_follows_an_erasure_and_the_users_next_memories(make_mem):
    """A handle that has not synced since the user was erased and wrote again drops the
    erased memories (their log rows name the old number) and takes the new ones."""
    first, second = make_mem(), make_mem()
    alice = Scope("zqxalice", "assistant")
    old = first.store("alice keeps a red notebook", alice)
    assert second.recall("red notebook", alice, k=1, touch=False)[0].id == old.id
    first.forget_scope(alice)
    new = first.store("alice bought a blue notebook", alice)
    hits = second.recall("notebook", alice, k=5, touch=False)
    assert [h.id for h in hits] == [new.id]
    assert set(second.storage._search._parts[("zqxalice", "assistant")].pos) == {new.id}
