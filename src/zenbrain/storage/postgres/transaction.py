"""The writes of one operation on the PostgreSQL store (see ``Transaction`` in storage.base).

Every write names a partition; the first write to a partition takes that partition's
transaction-scoped advisory lock. Writers of one partition thus run one after another
(as SQLite's writers do, but per user and agent instead of per file), so two operations
can never lock the same rows in opposite orders; writers of different partitions run in
parallel. BM25 statistics change by deltas gathered during the transaction and written
once at its end, in a fixed order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from ...errors import StorageError, ValidationError
from ...model import Edge, HistoryEvent, MemoryItem
from ..base import Partition
from ..lexical_terms import term_counts
from ..records import MEMORY_FIELDS, UPDATABLE, dumps, lexical_text, plain
from .lexical import TermHasher

TEXT_FIELDS = ("content", "metadata", "speaker", "index_text")  # in memory_texts
TEXT_TABLES = frozenset({"memory_texts", "history", "kv", "requests"})  # the tables that hold text
# meta keys SCRUB_PENDING + user: the newest transaction that erased or overwrote the
# user's text, while the text tables' partitions of that user are not yet rewritten.
SCRUB_PENDING = "scrub_pending:"
ROW_FIELDS = tuple(f for f in MEMORY_FIELDS if f not in TEXT_FIELDS)  # in memories
_ROW_COLUMNS = (*ROW_FIELDS, "due_at", "lex_len", "lex_terms", "lex_tf")
_MARKS = ",".join(["%s"] * len(_ROW_COLUMNS))
_VECTOR = "(SELECT e.vector FROM embeddings e WHERE e.model = %s AND e.hash = %s)"
_INSERT = (f"INSERT INTO memories ({','.join(_ROW_COLUMNS)}, embedding) VALUES ({_MARKS}, {_VECTOR})")
_UPDATE = (f"UPDATE memories SET {','.join(f'{c} = %s' for c in _ROW_COLUMNS[3:])}, "
           f"embedding = {_VECTOR} WHERE id = %s AND user_id = %s AND agent_id = %s")
_INSERT_TEXT = (f"INSERT INTO memory_texts (id, user_id, agent_id, {', '.join(TEXT_FIELDS)}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)")
_UPDATE_TEXT = (f"UPDATE memory_texts SET {', '.join(f'{c} = %s' for c in TEXT_FIELDS)} "
                "WHERE id = %s AND user_id = %s AND agent_id = %s")


def _json(value: Any) -> Jsonb:
    return Jsonb(value, dumps=dumps)


def _due(state: Mapping[str, Any]) -> float | None:
    """A state's review due time, the column ``due_at`` mirrors."""
    due = state.get("due_at")
    return None if due is None else float(due)


def _column_rows(ids: Sequence[str], columns: Mapping[str, Sequence[Any]]) -> list[tuple[Any, ...]]:
    """The values of plain columns to write, one tuple per id (in the order of ``ids``)."""
    n = len(ids)
    for name, values in columns.items():
        if len(values) < n:
            raise StorageError(f"column {name} has fewer values than there are ids")
    names = list(columns)
    rows = []
    for j in range(n):
        vals = [plain(columns[c][j]) for c in names]
        rows.append(tuple(bool(v) if c == "archived" else (v.value if hasattr(v, "value") else v)
                          for c, v in zip(names, vals)))
    return rows


def item_row(item: MemoryItem, terms: list[int], tf: list[int], n_tokens: int) -> list[Any]:
    """A memory as the values of ``_ROW_COLUMNS``."""
    row: list[Any] = []
    for name in ROW_FIELDS:
        value = getattr(item, name)
        if name in ("layer", "kind"):
            value = value.value
        elif name in ("metadata", "state"):
            value = _json(value)
        elif name == "vector_key":
            value = value or item.content_hash
        row.append(plain(value))
    due = item.state.get("due_at")
    row.extend([None if due is None else float(due), n_tokens, terms, tf])
    return row


class LexicalDeltas:
    """How a transaction changes its partitions' BM25 statistics."""

    def __init__(self) -> None:
        self.terms: dict[Partition, Counter[int]] = {}
        self.docs: dict[Partition, list[int]] = {}  # partition -> [documents, tokens]

    def add(self, partition: Partition, terms: Sequence[int], n_tokens: int, sign: int) -> None:
        c = self.terms.setdefault(partition, Counter())
        for t in terms:
            c[t] += sign
        d = self.docs.setdefault(partition, [0, 0])
        d[0] += sign
        d[1] += sign * n_tokens

    def write(self, cur: Any) -> None:
        for part in sorted(self.terms):
            changed = sorted((t, n) for t, n in self.terms[part].items() if n)
            if changed:
                cur.execute(
                    "INSERT INTO lexical_terms (user_id, agent_id, term, docs) "
                    "SELECT %s, %s, t, n FROM unnest(%s::bigint[], %s::int[]) AS d(t, n) "
                    "ON CONFLICT (user_id, agent_id, term) DO UPDATE SET docs = lexical_terms.docs + excluded.docs",
                    (*part, [t for t, _ in changed], [n for _, n in changed]))
                # A term no memory holds any more is erased with the last memory that held it.
                cur.execute("DELETE FROM lexical_terms WHERE user_id = %s AND agent_id = %s AND term = ANY(%s) "
                            "AND docs <= 0", (*part, [t for t, n in changed if n < 0]))
        for part in sorted(self.docs):
            docs, tokens = self.docs[part]
            if docs or tokens:
                cur.execute(
                    "INSERT INTO lexical_docs (user_id, agent_id, docs, tokens) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (user_id, agent_id) DO UPDATE SET docs = lexical_docs.docs + excluded.docs, "
                    "tokens = lexical_docs.tokens + excluded.tokens", (*part, docs, tokens))
                cur.execute("DELETE FROM lexical_docs WHERE user_id = %s AND agent_id = %s AND docs <= 0", part)


class PostgresTransaction:
    def __init__(self, conn: Any, embedder_name: str, hasher: TermHasher, pipeline: Any = None) -> None:
        self._conn = conn
        self._pipeline = pipeline  # psycopg's pipeline the connection is in (None: not in one)
        self._lock_checks: list[Any] = []  # cursors of the lock statements, read after they ran
        self._pending_seen = False
        self._hash = hasher
        self._model = embedder_name
        self._locked: set[Partition] = set()
        self.lexical = LexicalDeltas()
        self.put_ids: dict[Partition, set[str]] = {}  # memories whose vector is copied in at the end
        self.grown: set[Partition] = set()  # partitions that gained memories
        self.inserted = 0  # memory rows inserted
        self.put_order: list[str] = []  # ids of the memories put, in order (an idempotency record names them)
        self.erased: set[str] = set()  # tables something was erased from
        self.text_users: set[str] = set()  # users whose text (in the text tables) was erased or overwritten
        self.xid = 0  # this transaction's id, once it erased something (what a scrub waits for)
        self.scrubbed: bool | None = None  # after commit: whether the scrub completed (None: none ran)
        self.dropped_indexes: dict[Partition, str] = {}  # erased partitions' HNSW indexes, dropped after commit

    @property
    def _cur(self) -> Any:
        """A new cursor for each statement: in pipeline mode a cursor whose earlier
        statements' results have not arrived yet must not run a statement that is read."""
        return self._conn.cursor()

    @property
    def pending_seen(self) -> bool:
        """Whether a scrub was pending when this transaction took a lock (read once the
        lock statements have run: after the commit, or any read of the transaction)."""
        while self._lock_checks:
            row = self._lock_checks.pop().fetchone()
            self._pending_seen = self._pending_seen or bool(row and row[1])
        return self._pending_seen

    def _count(self, cur: Any) -> int:
        """The rows the statement just executed on ``cur`` touched (in pipeline mode its
        result has to be waited for first)."""
        if self._pipeline is not None:
            self._pipeline.sync()
        return int(cur.rowcount)

    # -- locking -------------------------------------------------------------------------
    def lock(self, partitions: Sequence[Partition]) -> None:
        """Take the write locks of these partitions (in a fixed order), once per transaction;
        each lock also reads whether a scrub is pending. In pipeline mode the statement is
        only queued: the lock is taken, in order, before the writes queued after it, and the
        transaction waits for neither."""
        for part in sorted(set(partitions) - self._locked):
            self._lock_checks.append(self._cur.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s || chr(31) || %s, 0)), "
                "EXISTS (SELECT 1 FROM meta WHERE key LIKE %s)", (*part, SCRUB_PENDING + "%")))
            self._locked.add(part)

    # -- memories ------------------------------------------------------------------------
    def put_memories(self, items: Sequence[MemoryItem]) -> None:
        items = list(items)
        if not items:
            return
        by_part: dict[Partition, list[MemoryItem]] = {}
        for item in items:
            by_part.setdefault((item.user_id, item.agent_id), []).append(item)
        self.lock(list(by_part))
        for part, group in sorted(by_part.items()):
            group.sort(key=lambda i: i.id)  # rows locked in one order
            old = {r[0]: r[1:] for r in self._cur.execute(
                f"SELECT m.id, m.vector_key, m.lex_len, m.lex_terms, {', '.join(f't.{c}' for c in TEXT_FIELDS)} "
                "FROM memories m JOIN memory_texts t ON t.user_id = m.user_id AND t.id = m.id "
                "WHERE m.user_id = %s AND m.agent_id = %s AND m.id = ANY(%s) FOR UPDATE OF m",
                (*part, [i.id for i in group])).fetchall()}
            inserts, updates, text_inserts, text_updates = [], [], [], []
            for item in group:
                counts, n_tokens = term_counts(lexical_text(item))
                terms, tf = self._hash.counts(counts)
                row = item_row(item, terms, tf, n_tokens)
                key = row[ROW_FIELDS.index("vector_key")]
                text = (item.content, item.metadata, item.speaker, item.index_text)
                text_row = (text[0], _json(text[1]), text[2], text[3])
                if item.id in old:
                    _, old_len, old_terms, *old_text = old[item.id]
                    self.lexical.add(part, old_terms, old_len, -1)
                    updates.append((*row[3:], self._model, key, item.id, *part))
                    if tuple(old_text) != text:  # the text is rewritten only when it changed
                        text_updates.append((*text_row, item.id, *part))
                else:
                    inserts.append((*row, self._model, key))
                    text_inserts.append((item.id, *part, *text_row))
                self.lexical.add(part, terms, n_tokens, +1)
            if inserts:
                self._cur.executemany(_INSERT, inserts)
                self._cur.executemany(_INSERT_TEXT, text_inserts)
                self.grown.add(part)
                self.inserted += len(inserts)
            if updates:
                self._cur.executemany(_UPDATE, updates)
            if text_updates:
                self._cur.executemany(_UPDATE_TEXT, text_updates)
                self._erased(part, "memory_texts")  # the earlier text lingers in its page until rewritten
            for item in group:
                if item.id in old and old[item.id][0] != (item.vector_key or item.content_hash):
                    self._drop_orphan_embedding(old[item.id][0])
            self.put_ids.setdefault(part, set()).update(i.id for i in group)
        self.put_order.extend(i.id for i in items)

    def update_columns(self, partition: Partition, ids: Sequence[str], **columns: Sequence[Any]) -> None:
        if not ids:
            return
        bad = set(columns) - UPDATABLE
        if bad:
            raise StorageError(f"columns not updatable in bulk: {sorted(bad)}")
        self.lock([partition])
        names = list(columns)
        rows = [(*vals, mid, *partition) for vals, mid in zip(_column_rows(ids, columns), ids)]
        rows.sort(key=lambda r: r[-3])
        sets = ", ".join(f"{c} = %s" for c in names)
        self._cur.executemany(f"UPDATE memories SET {sets} WHERE id = %s AND user_id = %s AND agent_id = %s", rows)

    def update_states(self, partition: Partition, states: Mapping[str, Mapping[str, Any]]) -> None:
        if not states:
            return
        self.lock([partition])
        rows = []
        for mid in sorted(states):
            st = states[mid]
            rows.append((_json(dict(st)), _due(st), mid, *partition))
        self._cur.executemany("UPDATE memories SET state = %s, due_at = %s WHERE id = %s AND user_id = %s "
                              "AND agent_id = %s", rows)

    def record_access(self, partition: Partition, ids: Sequence[str], now: float, *,
                      states: Mapping[str, Mapping[str, Any]] | None = None, **columns: Sequence[Any]) -> None:
        if not ids:
            return
        bad = set(columns) - UPDATABLE
        if bad:
            raise StorageError(f"columns not updatable in bulk: {sorted(bad)}")
        extra = _column_rows(ids, columns)
        sets = "".join(f", {c} = %s" for c in columns)
        if states is not None:
            missing = [mid for mid in ids if mid not in states]
            if missing:
                raise StorageError(f"no state given for {missing[:3]}")
            sets += ", state = %s, due_at = %s"
            extra = [(*vals, _json(dict(states[mid])), _due(states[mid])) for vals, mid in zip(extra, ids)]
        self.lock([partition])
        rows = sorted(((float(now), *vals, mid, *partition) for vals, mid in zip(extra, ids)), key=lambda r: r[-3])
        self._cur.executemany(
            f"UPDATE memories SET access_count = access_count + 1, last_access = GREATEST(last_access, %s){sets} "
            "WHERE id = %s AND user_id = %s AND agent_id = %s", rows)

    def delete_memory(self, partition: Partition, memory_id: str) -> dict[str, int]:
        self.lock([partition])
        user, agent = partition
        row = self._cur.execute(
            "DELETE FROM memories WHERE id = %s AND user_id = %s AND agent_id = %s "
            "RETURNING vector_key, lex_len, lex_terms", (memory_id, user, agent)).fetchone()
        out = {"memories": int(row is not None), "lexical_entries": int(row is not None), "vectors": 0}
        self._cur.execute("DELETE FROM memory_texts WHERE id = %s AND user_id = %s AND agent_id = %s",
                          (memory_id, user, agent))
        out["edges"] = self._count(self._cur.execute(
            "DELETE FROM edges WHERE user_id = %s AND agent_id = %s AND (src = %s OR dst = %s)",
            (user, agent, memory_id, memory_id)))
        # Events of other memories that name this one (a debate it took part in) may quote it.
        out["history_rows"] = self._count(self._cur.execute(
            "DELETE FROM history WHERE user_id = %s AND agent_id = %s "
            "AND (memory_id = %s OR strpos(detail::text, %s) > 0)", (user, agent, memory_id, memory_id)))
        # Idempotency records of requests that wrote or returned it.
        out["requests"] = self._count(self._cur.execute(
            "DELETE FROM requests WHERE user_id = %s AND agent_id = %s "
            "AND (%s = ANY(memory_ids) OR strpos(COALESCE(response, ''), %s) > 0)",
            (user, agent, memory_id, memory_id)))
        self._erased(partition, "memories", "memory_texts", "edges", "history", "requests")
        if row is not None:
            key, n_tokens, terms = row
            self.lexical.add(partition, terms, n_tokens, -1)
            self._erased(partition, "lexical_terms")
            # Counted for the partition only: whether another partition holds the same text
            # (and so keeps the vector) must not show.
            if self._cur.execute("SELECT 1 FROM memories WHERE vector_key = %s AND user_id = %s "
                                 "AND agent_id = %s LIMIT 1", (key, user, agent)).fetchone() is None:
                out["vectors"] = 1
            self._drop_orphan_embedding(key)
        return out

    def _drop_orphan_embedding(self, key: str) -> None:
        """A vector no memory refers to any more is erased with the last memory it served."""
        if self._cur.execute("SELECT 1 FROM memories WHERE vector_key = %s LIMIT 1", (key,)).fetchone() is None:
            self._cur.execute("DELETE FROM embeddings WHERE hash = %s", (key,))
            self._erased(None, "embeddings")

    def _erased(self, partition: Partition | None, *tables: str) -> None:
        """Note tables this transaction erased from, and whose text (their files are
        scrubbed after commit)."""
        if not self.xid:
            self.xid = int(self._cur.execute("SELECT txid_current()").fetchone()[0])
        self.erased.update(tables)
        if partition is not None and TEXT_TABLES.intersection(tables):
            self.text_users.add(partition[0])

    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        if model != self._model:
            raise ValidationError(f"this store keeps vectors of its embedder {self._model!r}, not of {model!r}")
        vectors = np.asarray(vectors, dtype=np.float32)
        rows = sorted(((model, h, vectors[i]) for i, h in enumerate(hashes)), key=lambda r: r[1])
        self._cur.executemany("INSERT INTO embeddings (model, hash, vector) VALUES (%s, %s, %s) "
                              "ON CONFLICT (model, hash) DO NOTHING", rows)

    # -- graph, history, records ---------------------------------------------------------
    def put_edges(self, partition: Partition, edges: Sequence[Edge]) -> None:
        if not edges:
            return
        self.lock([partition])
        rows = sorted(((*partition, e.src, e.dst, e.relation, float(e.weight), float(e.variance), int(e.activations),
                        float(e.updated_at)) for e in edges), key=lambda r: r[2:5])
        self._cur.executemany(
            "INSERT INTO edges (user_id, agent_id, src, dst, relation, weight, variance, activations, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (user_id, agent_id, src, dst, relation) DO UPDATE "
            "SET weight = excluded.weight, variance = excluded.variance, activations = excluded.activations, "
            "updated_at = excluded.updated_at", rows)

    def delete_edges(self, partition: Partition, keys: Sequence[tuple[str, str, str]]) -> None:
        if not keys:
            return
        self.lock([partition])
        self._cur.executemany("DELETE FROM edges WHERE user_id = %s AND agent_id = %s AND src = %s AND dst = %s "
                              "AND relation = %s", [(*partition, s, d, r) for s, d, r in sorted(keys)])
        self._erased(partition, "edges")

    def log(self, partition: Partition, events: Sequence[HistoryEvent]) -> None:
        if not events:
            return
        self.lock([partition])
        self._cur.executemany(
            "INSERT INTO history (user_id, agent_id, memory_id, at, action, detail) VALUES (%s, %s, %s, %s, %s, %s)",
            [(*partition, e.memory_id, float(e.at), e.action, _json(e.detail)) for e in events])

    def kv_put(self, partition: Partition, values: Mapping[str, Any]) -> None:
        if not values:
            return
        self.lock([partition])
        self._cur.executemany(
            "INSERT INTO kv (user_id, agent_id, key, value) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (user_id, agent_id, key) DO UPDATE SET value = excluded.value",
            [(*partition, key, _json(values[key])) for key in sorted(values)])

    def kv_clear(self, partition: Partition) -> int:
        self.lock([partition])
        n = self._count(self._cur.execute("DELETE FROM kv WHERE user_id = %s AND agent_id = %s", partition))
        n += self._count(self._cur.execute("DELETE FROM requests WHERE user_id = %s AND agent_id = %s", partition))
        self._erased(partition, "kv", "requests")
        return int(n)

    def forget_partition(self, partition: Partition) -> bool:
        """Once nothing of the partition is left (``forget_scope``): its HNSW index, whose
        predicate names the user, is dropped after the commit (``dropped_indexes``), with
        its row in ``vector_indexes``. The lexical statistics rows went with its last
        memory. False when it had no index of its own, or still holds memories."""
        self.lock([partition])
        if self._cur.execute("SELECT 1 FROM memories WHERE user_id = %s AND agent_id = %s LIMIT 1",
                             partition).fetchone():
            return False
        row = self._cur.execute("DELETE FROM vector_indexes WHERE user_id = %s AND agent_id = %s RETURNING name",
                                partition).fetchone()
        if row is None:
            return False
        self.dropped_indexes[partition] = str(row[0])
        return True

    # -- idempotency records (see PostgresStore.request) ---------------------------------
    def claim_request(self, partition: Partition, key: str, fingerprint: str, owner: str, now: float) -> str:
        """Record that this transaction carries out the request ``key``; returns the owner
        of the record, which is another request's when one with that key committed first
        (an insert of the same key by a transaction still open waits for it to end)."""
        self.lock([partition])
        row = self._cur.execute(
            "INSERT INTO requests (user_id, agent_id, key, fingerprint, owner, created_at, memory_ids) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (user_id, agent_id, key) DO NOTHING RETURNING owner",
            (*partition, key, fingerprint, owner, float(now), self.put_order)).fetchone()
        if row is not None:
            return owner
        row = self._cur.execute("SELECT owner, memory_ids FROM requests WHERE user_id = %s AND agent_id = %s "
                                "AND key = %s", (*partition, key)).fetchone()
        if row is None:  # expired between the two statements: claim it afresh
            return self.claim_request(partition, key, fingerprint, owner, now)
        if row[0] == owner:  # a later transaction of the same request
            ids = list(row[1]) + [i for i in self.put_order if i not in row[1]]
            self._cur.execute("UPDATE requests SET memory_ids = %s WHERE user_id = %s AND agent_id = %s AND key = %s",
                              (ids, *partition, key))
        return str(row[0])

    def finish_request(self, partition: Partition, key: str, owner: str, status: int, response: str) -> None:
        self._cur.execute("UPDATE requests SET status = %s, response = %s WHERE user_id = %s AND agent_id = %s "
                          "AND key = %s AND owner = %s", (int(status), response, *partition, key, owner))

    def expire_requests(self, before: float) -> int:
        return self._count(self._cur.execute("DELETE FROM requests WHERE created_at < %s", (float(before),)))

    # -- the end -------------------------------------------------------------------------
    def finish(self) -> None:
        """Before commit: copy the vectors of memories stored before their embeddings, and
        write the BM25 statistics."""
        for part, ids in sorted(self.put_ids.items()):
            self._cur.execute(
                "UPDATE memories m SET embedding = e.vector FROM embeddings e "
                "WHERE m.user_id = %s AND m.agent_id = %s AND m.id = ANY(%s) AND m.embedding IS NULL "
                "AND e.model = %s AND e.hash = m.vector_key", (*part, sorted(ids), self._model))
        self.lexical.write(self._cur)
        if self.text_users:
            # Pending until a scrub clears it (right after the commit, unless an older
            # transaction keeps it from rewriting the tables): any handle finishes it, at
            # its next write to a partition (``lock`` reads whether a mark exists).
            self._cur.executemany(
                "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                "SET value = GREATEST(meta.value::bigint, excluded.value::bigint)::text",
                [(SCRUB_PENDING + user, str(self.xid)) for user in sorted(self.text_users)])
