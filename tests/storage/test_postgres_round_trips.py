"""Round trips to PostgreSQL, counted from libpq's trace of the store's pooled connections
(a round trip: a turn from the client's messages to the server's answer). A write
transaction sends what it does not read in one go (pipeline mode); a lexical search is one
statement."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from postgres_server import new_schema_url
from storage_helpers import DIM, MODEL, P1, make_item, put, unit_rows

from zenbrain.model import Edge

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
def traced(monkeypatch, tmp_path):
    """A store whose pooled connections write libpq's trace to a file; ``turns()`` counts
    the round trips and statements since the last call."""
    from psycopg.pq import Trace

    from zenbrain.storage.postgres import PostgresStore
    from zenbrain.storage.postgres import store as pg_store

    path = tmp_path / "libpq.trace"
    fh = open(path, "w")  # noqa: SIM115 - open while the store's connections write to it
    configure = pg_store.PostgresStore._configure

    def tracing(self, conn):
        configure(self, conn)
        conn.pgconn.trace(fh.fileno())
        conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)

    monkeypatch.setattr(pg_store.PostgresStore, "_configure", tracing)
    store = PostgresStore(new_schema_url("trips"), embedder_name=MODEL, dim=DIM, pool_size=1)
    seen = [0]

    def turns() -> tuple[int, int]:
        with store._pool.connection() as conn:  # the only one: libpq's buffered trace written out
            conn.pgconn.untrace()
            tracing_again = conn.pgconn
        tracing_again.trace(fh.fileno())
        tracing_again.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
        with open(path) as f:
            f.seek(seen[0])
            text = f.read()
        seen[0] = os.path.getsize(path)
        lines = [ln.split("\t") for ln in text.splitlines() if ln[:2] in ("F\t", "B\t")]
        sides = [ln[0] for ln in lines]
        trips = sum(a == "F" and b == "B" for a, b in itertools.pairwise(sides))
        statements = sum(ln[0] == "F" and ln[2] in ("Execute", "Query") for ln in lines)
        return trips, statements

    yield store, turns
    store.close()
    fh.close()


def test_a_write_transaction_sends_its_writes_together(traced):
    store, turns = traced
    items = [make_item(P1, f"memory {i}") for i in range(12)]
    put(store, items, unit_rows(np.random.default_rng(1), len(items)))
    ids = [i.id for i in items]
    turns()
    # What a recall's bookkeeping writes: accesses, columns, states, edges, records.
    with store.transaction(durable=False) as tx:
        tx.record_access(P1, ids, 2.0)
        tx.update_columns(P1, ids, stability=[3.0] * len(ids))
        tx.update_states(P1, {i: {"due_at": 5.0} for i in ids})
        tx.put_edges(P1, [Edge(a, b, "co_recalled", 0.5, 0.1, 1, 2.0) for a, b in itertools.pairwise(ids)])
        tx.kv_put(P1, {"topic": [1, 2], "neuro": {"da": 0.5}})
    trips, statements = turns()
    assert statements >= 4 * len(ids)  # every row its own statement
    print("round trips", trips, "statements", statements)
    assert trips <= 3, trips  # BEGIN; locks and writes; COMMIT (one statement, one wait each: 8)
    got = {m.id: m for m in store.get(P1, ids)}
    assert all(m.access_count == 1 and m.stability == 3.0 and m.state["due_at"] == 5.0 for m in got.values())
    assert len(store.edges(P1, ids, both_ends=True)) == len(ids) - 1


def test_a_write_that_reads_its_counts_still_sees_them(traced):
    store, _ = traced
    items = [make_item(P1, f"memory {i}") for i in range(3)]
    put(store, items, unit_rows(np.random.default_rng(2), len(items)))
    with store.transaction() as tx:
        tx.put_edges(P1, [Edge(items[0].id, items[1].id, "rel", 1.0, 0.0, 1, 1.0)])
        receipt = tx.delete_memory(P1, items[0].id)  # counts: the pipeline waits for them
    assert receipt["memories"] == 1 and receipt["edges"] == 1
    assert [m.id for m in store.get(P1, [i.id for i in items])] == [items[1].id, items[2].id]


def test_a_lexical_search_is_one_statement(traced):
    store, turns = traced
    items = [make_item(P1, text) for text in ("the river runs by the old mill", "a garden of roses by the river",
                                              "tea at noon in the garden")]
    put(store, items, unit_rows(np.random.default_rng(3), len(items)))
    store.lexical_search(P1, "river garden", 5)  # prepared, connection warm
    turns()
    hits = store.lexical_search(P1, "river garden", 5)
    trips, statements = turns()
    assert statements == 1 and trips == 1
    assert {h for h, _ in hits} == {i.id for i in items}
