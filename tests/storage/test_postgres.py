"""What the PostgreSQL store promises beyond the shared contract: its migrations, HNSW
search in large partitions, BM25 that ranks as the SQLite store does, statistics kept
per partition, the engine on top of it, and erasure down to the data files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from postgres_server import files_containing, new_schema_url
from storage_helpers import DIM, MODEL, P1, P2, brute_top, make_item, put, unit_rows

from zenbrain.errors import StorageError
from zenbrain.model import Layer
from zenbrain.storage.base import Filter

pytest.importorskip("psycopg")


def open_pg(url: str | None = None, **options):
    from zenbrain.storage.postgres import PostgresStore

    return PostgresStore(url or new_schema_url(), embedder_name=MODEL, dim=DIM, **options)


@pytest.fixture
def pg():
    s = open_pg()
    yield s
    s.close()


def test_migrations_are_recorded_idempotent_and_refuse_a_newer_schema():
    from zenbrain.storage.postgres.migrations import MIGRATIONS

    url = new_schema_url()
    s = open_pg(url)
    put(s, [make_item(P1, "survives reopening")])
    s.close()
    expect = [(v, name) for v, (name, _) in enumerate(MIGRATIONS, start=1)]
    import psycopg

    for _ in range(2):
        s = open_pg(url)
        with psycopg.connect(url) as conn:
            assert [tuple(r) for r in conn.execute("SELECT version, name FROM schema_migrations ORDER BY 1")] == expect
        assert [i.content for i in s.query(P1)] == ["survives reopening"]
        s.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (9999, '9999_from_the_future')")
    with pytest.raises(StorageError, match="newer zenbrain"):
        open_pg(url)


def test_several_handles_opening_a_new_schema_at_once_migrate_it_once():
    from concurrent.futures import ThreadPoolExecutor

    url = new_schema_url()
    with ThreadPoolExecutor(4) as ex:
        stores = list(ex.map(lambda _: open_pg(url), range(4)))
    put(stores[0], [make_item(P1, "one")])
    assert [len(s.query(P1)) for s in stores] == [1, 1, 1, 1]
    for s in stores:
        s.close()


def test_a_large_partition_is_searched_through_its_own_hnsw_index():
    s = open_pg(hnsw_min_rows=300)
    try:
        rng = np.random.default_rng(5)
        n = 400
        items = [make_item(P1, f"item {i}", id=f"i{i:04d}", layer=Layer.CORE if i % 40 == 0 else Layer.SEMANTIC,
                           created_at=1.7e9 + i) for i in range(n)]
        v = unit_rows(rng, n)
        put(s, items, v)
        put(s, [make_item(P2, "small partition", id="p2")], unit_rows(rng, 1))
        s.wait_for_indexes(60)
        assert s.indexes.has_index(s._pool.getconn() if False else _conn(s), P1)  # built for the large partition
        assert not s.indexes.has_index(_conn(s), P2)
        vecs = {it.id: v[i] for i, it in enumerate(items)}
        hits = 0
        for _ in range(20):
            q = unit_rows(rng, 1)[0]
            got = [i for i, _ in s.vector_search(P1, q, 10)]
            expect = [i for i, _ in brute_top(items, vecs, q, 10, Filter())]
            assert len(got) == 10
            hits += len(set(got) & set(expect))
            # A filter that keeps 10 of 400 rows: fewer than k come through the index, so
            # the search is answered exactly.
            flt = Filter(layers=frozenset({Layer.CORE}))
            assert [i for i, _ in s.vector_search(P1, q, 5, flt)] == [i for i, _ in brute_top(items, vecs, q, 5, flt)]
        assert hits / 200 >= 0.9
        # Per layer: the small layer exactly, the large one through the index.
        q = unit_rows(rng, 1)[0]
        got = s.vector_search(P1, q, 5, per_layer=True)
        layer_of = {it.id: it.layer for it in items}
        core = [i for i, _ in got if layer_of[i] is Layer.CORE]
        semantic = [i for i, _ in got if layer_of[i] is Layer.SEMANTIC]
        assert [layer_of[i] for i, _ in got] == [Layer.SEMANTIC] * 5 + [Layer.CORE] * 5  # in layer order
        assert core == [i for i, _ in brute_top([it for it in items if it.layer is Layer.CORE], vecs, q, 5, Filter())]
        assert len(set(semantic) & {i for i, _ in brute_top([it for it in items if it.layer is Layer.SEMANTIC], vecs,
                                                            q, 5, Filter())}) >= 4
        plan = "\n".join(r[0] for r in _conn(s).execute(
            "EXPLAIN SELECT id FROM memories m WHERE m.user_id = 'alice' AND m.agent_id = 'agent' "
            f"ORDER BY (m.embedding::vector({DIM})) <#> %s LIMIT 10", (unit_rows(rng, 1)[0],)).fetchall())
        assert "memories_hnsw_" in plan
    finally:
        s.close()


def _conn(store):
    """A pooled connection for inspection (returned to the pool at garbage collection is
    not needed: the pool is closed with the store)."""
    return store._pool.connection().__enter__()


def test_a_growing_table_gets_planner_statistics_so_a_memory_is_read_by_its_key(pg):
    """Without statistics the planner reads a memory by scanning its whole partition (each
    store then costs time in proportion to the partition): the first few hundred inserts
    are analysed, and a read by id goes through the primary keys of both tables."""
    from zenbrain.storage.postgres.store import _FROM, _SELECT

    with pg.transaction() as tx:
        tx.put_memories([make_item(P1, f"memory number {i}") for i in range(600)])
    ids = [i.id for i in pg.query(P1, limit=3)]
    with pg._pool.connection() as conn:
        plan = "\n".join(r[0] for r in conn.execute(
            f"EXPLAIN SELECT {_SELECT} FROM {_FROM} WHERE m.user_id = %s AND m.agent_id = %s AND m.id = ANY(%s)",
            (*P1, ids)))
        counted = dict(conn.execute(
            "SELECT relname, reltuples FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
            "AND relkind = 'r' AND (relname = 'memories' OR relname LIKE 'memory\\_texts\\_p%%') AND reltuples > 0").fetchall())
    assert counted.pop("memories") == 600 and sum(counted.values()) == 600  # both tables analysed
    assert "Index Scan using memories_pkey" in plan, plan  # not the partition's index, not a scan of it
    assert [i.id for i in pg.get(P1, ids)] == ids


def test_bm25_ranks_as_the_sqlite_store_does(tmp_path: Path):
    """Same texts, same query: the same ids in the same order with the same scores."""
    from zenbrain.storage.sqlite import SQLiteStore

    rng = np.random.default_rng(1)
    words = ("river stone maple harbor lantern running runs ran quickly Café naïve don't e-mail "
             "x y z 42 4.2 caroline's support group LGBTQ").split()
    items = [make_item(P1, " ".join(rng.choice(words, size=int(rng.integers(1, 14)))), id=f"d{i:03d}")
             for i in range(300)]
    lite = SQLiteStore(str(tmp_path / "l.db"), embedder_name=MODEL, dim=DIM)
    pg = open_pg()
    try:
        put(lite, items)
        put(pg, items)
        for q in ("river harbor", "running", "cafe", "naive dont", "Caroline support group", "e-mail 42",
                  "quickly lantern stone maple", "LGBTQ"):
            a, b = lite.lexical_search(P1, q, 20), pg.lexical_search(P1, q, 20)
            assert [s for _, s in b] == pytest.approx([s for _, s in a], rel=1e-6), q
            assert {i for i, _ in a} == {i for i, _ in b} or len({round(s, 9) for _, s in a}) < len(a), q
    finally:
        lite.close()
        pg.close()


def test_bm25_statistics_are_the_partitions_own(pg):
    put(pg, [make_item(P1, "apple pie", id="a"), make_item(P1, "banana bread", id="b")])
    before = pg.lexical_search(P1, "apple", 5)
    put(pg, [make_item(P2, f"apple number {i}", id=f"o{i}") for i in range(50)])
    assert pg.lexical_search(P1, "apple", 5) == before  # another user's words change nothing
    with pg.transaction() as tx:
        tx.delete_memory(P1, "a")
    conn = _conn(pg)
    # The erased memory's terms are gone (the other's two remain), and with them its token count.
    assert conn.execute("SELECT COUNT(*) FROM lexical_terms WHERE user_id = 'alice'").fetchone() == (2,)
    assert conn.execute("SELECT docs, tokens FROM lexical_docs WHERE user_id = 'alice'").fetchone() == (1, 2)


MARKER = "zqvkmarker4417"


def _marked_tables(url: str) -> list[str]:
    """The tables of the store's schema where any row holds MARKER."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
        return [t for t in tables if conn.execute(
            f'SELECT COUNT(*) FROM "{t}" x WHERE strpos(lower(x::text), %s) > 0', (MARKER,)).fetchone()[0]]


@pytest.mark.parametrize("erase", ["full", "vacuum"])
def test_the_engine_runs_on_postgres_and_erasure_leaves_no_trace(erase):
    """A recall and lifecycle smoke test through ``open_memory``; then forget() removes
    the text from every table, and (with ``erase="full"``, after a WAL switch) from the
    files. With ``erase="vacuum"`` the receipt says the scrub is pending, and rightly: a
    plain vacuum leaves the text's bytes in the pages that held it, until ``scrub()``."""
    from zenbrain import ErasurePendingError, Scope, SimulatedClock, open_memory
    from zenbrain.providers.hashing import HashingEmbedder

    url = new_schema_url()
    clock = SimulatedClock(1.7e9)
    alice, bob = Scope("alice", "assistant"), Scope("bob", "assistant")
    with open_memory(url, embedder=HashingEmbedder(64), clock=clock, erase=erase) as mem:
        assert type(mem.storage).__name__ == "PostgresStore"
        mem.store_many([{"content": f"ordinary note {i} about the weather and gardening"} for i in range(12)], alice)
        secret = mem.store(f"my locker code is {MARKER} and nobody else knows it", alice, kind="episode")
        mem.store("bob likes sailing on the harbor", bob)
        assert mem.recall(MARKER, alice, k=1)[0].id == secret.id
        assert mem.recall("sailing harbor", alice, k=5) == [] or all(
            h.item.user_id == "alice" for h in mem.recall("sailing harbor", alice, k=5))
        clock.advance(hours=30)
        assert mem.recall("locker code", alice, k=3)[0].id == secret.id
        mem.sleep(alice)
        mem.decay(alice)
        # Rewritten texts: each earlier version leaves a stale copy in its page.
        mem.update(secret.id, alice, content=f"my locker code {MARKER} is still a secret")
        mem.update(secret.id, alice, metadata={"edited": True})
        lines = list(mem.export_memories(alice))
        assert lines[0]["counts"]["memories"] == 13
        if erase == "full":
            receipt = mem.forget(secret.id, alice)
        else:
            with pytest.raises(ErasurePendingError) as pending:
                mem.forget(secret.id, alice)
            receipt = pending.value.receipt
        assert receipt.memory_ids == (secret.id,) and receipt.scrubbed is (erase == "full")
        assert receipt.lexical_entries == 1 and receipt.vectors == 1 and receipt.history_rows >= 3
        assert all(h.id != secret.id for h in mem.recall(MARKER, alice, k=20, touch=False))
        assert mem.storage.lexical_search(("alice", "assistant"), MARKER, 5) == []
        assert len(mem.list_memories(alice)) == 12 and len(mem.list_memories(bob)) == 1
    assert _marked_tables(url) == []
    left = files_containing(url, MARKER)
    if erase == "full":
        assert left == {}
        return
    assert left  # why "full" is the default
    with open_memory(url, embedder=HashingEmbedder(64), erase=erase) as mem:
        assert mem.storage.scrub() is True
    assert files_containing(url, MARKER) == {}


def test_an_erasure_is_pending_while_an_older_transaction_can_see_it_then_any_write_finishes_it():
    """A table rewrite keeps the rows an older snapshot may still read: while another
    connection holds one, forget() reports the scrub pending (and the text is still in the
    files); the next write after that reader ends rewrites the tables."""
    import psycopg

    from zenbrain import ErasurePendingError, Scope, open_memory
    from zenbrain.providers.hashing import HashingEmbedder

    url = new_schema_url()
    alice = Scope("alice", "assistant")
    with open_memory(url, embedder=HashingEmbedder(64), scrub_wait_s=0.2) as mem:
        secret = mem.store(f"the vault opens with {MARKER}", alice)
        mem.store("an ordinary note", alice)
        reader = psycopg.connect(url)  # another program in a repeatable-read transaction
        try:
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            assert reader.execute("SELECT COUNT(*) FROM memory_texts").fetchone()[0] == 2
            with pytest.raises(ErasurePendingError) as pending:
                mem.forget(secret.id, alice)
            assert pending.value.receipt.scrubbed is False and pending.value.receipt.memory_ids == (secret.id,)
            assert reader.execute("SELECT COUNT(*) FROM memory_texts").fetchone()[0] == 2  # its snapshot
            assert mem.storage.scrub(wait_s=0.1) is False
            assert files_containing(url, MARKER)  # still in the table's file
        finally:
            reader.close()
        mem.store("a later note", alice)  # the next write finishes the scrub
        assert files_containing(url, MARKER) == {}
        # Nothing is left pending; the wait lets any other transaction that is running at
        # that moment (the server's own autovacuum, say) end first.
        assert mem.storage.scrub(wait_s=10) is True


def _relfilenodes(url: str, pattern: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        return dict(conn.execute("SELECT relname, relfilenode FROM pg_class WHERE relnamespace = "
                                 "current_schema()::regnamespace AND relname LIKE %s", (pattern,)).fetchall())


def test_an_erasure_rewrites_only_the_text_partitions_of_its_user():
    """The text tables are hash-partitioned by user: forget() rewrites the partitions that
    hold the erased user's rows, however many other users the store holds."""
    import psycopg

    from zenbrain.storage.postgres.migrations import TEXT_PARTITIONS

    url = new_schema_url()
    s = open_pg(url)
    try:
        users = [f"user{i}" for i in range(40)]
        put(s, [make_item((u, "a"), f"{u} keeps the note {MARKER}") for u in users])
        with psycopg.connect(url) as conn:
            home = dict(conn.execute("SELECT user_id, tableoid::regclass::text FROM memory_texts").fetchall())
        assert len(set(home.values())) > 1 and all(p.startswith("memory_texts_p") for p in home.values())
        before = _relfilenodes(url, "%\\_p__")
        assert len(before) == 4 * TEXT_PARTITIONS
        victim = users[0]
        with s.transaction() as tx:
            counts = tx.delete_memory((victim, "a"), s.query((victim, "a"))[0].id)
        assert counts["memories"] == 1 and tx.scrubbed is True
        after = _relfilenodes(url, "%\\_p__")
        suffix = home[victim][len("memory_texts"):]
        rewritten = {name for name in before if before[name] != after[name]}
        assert rewritten == {f"{t}{suffix}" for t in ("history", "kv", "memory_texts", "requests")}
        assert files_containing(url, f"{victim} keeps") == {}
        assert files_containing(url, f"{users[1]} keeps")  # the others' text is where it was
    finally:
        s.close()


def test_the_text_tables_of_an_older_schema_are_partitioned_with_their_rows():
    """Migration 0004 turns the text tables of a store written before it into partitioned
    tables and keeps every row: texts, history, records."""
    from zenbrain.model import HistoryEvent
    from zenbrain.storage.postgres import store as pg_store

    url = new_schema_url()
    full = pg_store.MIGRATIONS
    pg_store.MIGRATIONS = full[:3]
    try:
        s = open_pg(url)
        item = make_item(P1, "written before the partitions", metadata={"note": "kept"})
        put(s, [item])
        with s.transaction() as tx:
            tx.log(P1, [HistoryEvent(item.id, 1.0, "touched", {"x": 1})])
            tx.kv_put(P1, {"goal": {"text": "kept too"}})
        s.close()
    finally:
        pg_store.MIGRATIONS = full
    s = open_pg(url)
    try:
        assert s.get(P1, [item.id]) == [item]
        assert [e.action for e in s.history(P1, item.id)] == ["touched"]
        assert s.kv_get(P1, "goal") == {"text": "kept too"}
        with s.transaction() as tx:
            tx.log(P1, [HistoryEvent(item.id, 2.0, "again", {})])
        assert [e.action for e in s.history(P1, item.id)] == ["touched", "again"]
        import psycopg

        with psycopg.connect(url) as conn:
            kinds = dict(conn.execute("SELECT relname, relkind FROM pg_class WHERE relnamespace = "
                                      "current_schema()::regnamespace AND relname = ANY(%s)",
                                      (["memory_texts", "history", "kv", "requests"],)).fetchall())
        assert kinds == dict.fromkeys(("memory_texts", "history", "kv", "requests"), "p")
    finally:
        s.close()


def test_the_command_line_works_on_a_postgres_url(capsys):
    from zenbrain.cli import main

    url = new_schema_url("cli")
    base = ["--path", url, "--embedder", "hashing:64"]
    assert main(["init", *base]) == 0
    assert "created store at postgresql://" in capsys.readouterr().out
    assert main(["init", *base]) == 0
    assert "store exists" in capsys.readouterr().out
    assert main(["add", "Caroline went to the support group on Sunday", *base, "--user", "caroline"]) == 0
    capsys.readouterr()
    assert main(["recall", "support group", "--path", url, "--user", "caroline"]) == 0  # the store's embedder
    assert "Caroline went to the support group" in capsys.readouterr().out
    assert main(["recall", "support group", "--path", url, "--user", "someone-else"]) == 0
    assert "Caroline" not in capsys.readouterr().out
    assert main(["stats", "--path", url, "--json"]) == 0
    assert '"memories": 1' in capsys.readouterr().out
    assert main(["check", "--path", url]) == 0  # the database answers, the migrations are this zenbrain's
    assert "amcheck" in capsys.readouterr().out


def test_the_benchmark_system_keeps_each_run_in_a_schema_of_its_own():
    import psycopg
    from postgres_server import server_url

    from zenbrain.bench.base import Doc
    from zenbrain.bench.zenbrain_system import ZenBrainSystem
    from zenbrain.providers.hashing import HashingEmbedder

    url = server_url()

    def schemas() -> set[str]:
        with psycopg.connect(url) as conn:
            return {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'zb_bench_%'")}

    before = schemas()
    system = ZenBrainSystem(HashingEmbedder(64), store=url)
    assert type(system.memory.storage).__name__ == "PostgresStore"
    system.add([Doc("d1", "Melanie painted a lake at sunrise", 1.68e9, "Melanie", "s1"),
                Doc("d2", "Caroline went to a support group", 1.68e9 + 60, "Caroline", "s1")])
    assert system.search("who painted the lake?", 1) == ["d1"]
    first = schemas() - before
    system.reset()  # a fresh schema; the last one is dropped
    assert len(schemas() - before) == 1 and not (schemas() & first)
    assert system.search("who painted the lake?", 1) == []
    system.close()
    assert schemas() == before


def test_durability_sets_how_commits_wait_for_the_wal():
    """``durability="process"`` (as on SQLite: a commit survives a crash of the application,
    not of the machine) commits without waiting for the WAL flush; "full" waits."""
    from zenbrain.errors import ConfigError

    for durability, setting in (("full", "on"), ("process", "off")):
        s = open_pg(durability=durability)
        try:
            with s._reading() as conn:
                assert conn.execute("SHOW synchronous_commit").fetchone()[0] == setting
        finally:
            s.close()
    with pytest.raises(ConfigError, match="durability"):
        open_pg(durability="fast")


def test_an_erased_partition_loses_its_hnsw_index():
    """Its predicate names the user: forget_partition drops it after the commit."""
    from zenbrain.storage.postgres.vectors import index_name

    s = open_pg(hnsw_min_rows=50)
    try:
        rng = np.random.default_rng(3)
        items = [make_item(P1, f"item {i}", id=f"e{i:03d}") for i in range(60)]
        put(s, items, unit_rows(rng, len(items)))
        put(s, [make_item(P2, "another user's", id="keep")], unit_rows(rng, 1))
        s.wait_for_indexes(60)
        assert s.indexes.has_index(_conn(s), P1)
        with s.transaction() as tx:
            assert not tx.forget_partition(P1)  # it still holds memories
            for it in items:
                tx.delete_memory(P1, it.id)
            assert tx.forget_partition(P1)
        conn = _conn(s)
        assert conn.execute("SELECT COUNT(*) FROM pg_class WHERE relname = %s "
                            "AND relnamespace = current_schema()::regnamespace", (index_name(P1),)).fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM vector_indexes WHERE user_id = %s", (P1[0],)).fetchone()[0] == 0
        assert not s.indexes.has_index(conn, P1)
        assert [i for i, _ in s.vector_search(P2, unit_rows(rng, 1)[0], 5)] == ["keep"]
    finally:
        s.close()
