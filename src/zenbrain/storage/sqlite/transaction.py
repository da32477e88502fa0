"""The writes of one operation on the SQLite store (see ``Transaction`` in storage.base)."""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from ...errors import StorageError, ValidationError, ZenBrainError
from ...index.source import erased_partition
from ...index.vector_keys import key_blob
from ...index.vectors import vector_blob
from ...model import Edge, HistoryEvent, MemoryItem
from ..base import Partition
from .codec import (
    COLUMNS,
    INDEXED,
    SELECT,
    UPDATABLE,
    USES_VECTOR,
    VECTOR_KEY,
    column_values,
    edge_row,
    encode,
    event_row,
    id_key,
    item_row,
    state_row,
    uses_vector_args,
)
from .lexical import entry_range, partition_number

_INSERT_MEMORY = f"INSERT INTO memories ({SELECT}) VALUES ({','.join('?' * len(COLUMNS))})"
# A stored memory is updated in place (it keeps its row, and so its place in the table).
_UPDATE_MEMORY = f"UPDATE memories SET {','.join(f'{c}=?' for c in COLUMNS[3:])} WHERE id=? AND user_id=? AND agent_id=?"
_INSERT_FTS = "INSERT INTO memories_fts (rowid, content, memory_id, user_id, agent_id) VALUES (?,?,?,?,?)"
# The partition's rowid range narrows the scan to its own entries (memory_id is not indexed).
_DELETE_FTS = "DELETE FROM memories_fts WHERE rowid BETWEEN ? AND ? AND memory_id=? AND user_id=? AND agent_id=?"

Failure = Callable[[BaseException, str], ZenBrainError]  # the store's translation of a failure
P = ParamSpec("P")
R = TypeVar("R")


def guarded(doing: str) -> Callable[[Callable[Concatenate[SQLiteTransaction, P], R]],
                                    Callable[Concatenate[SQLiteTransaction, P], R]]:
    """A write whose SQLite failure reaches the caller as zenbrain's error (see ``guard``)."""

    def wrap(fn: Callable[Concatenate[SQLiteTransaction, P], R]) -> Callable[Concatenate[SQLiteTransaction, P], R]:
        @functools.wraps(fn)
        def run(self: SQLiteTransaction, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(self, *args, **kwargs)
            except (sqlite3.Error, UnicodeEncodeError, OverflowError) as exc:
                raise self._fail(exc, doing) from exc
        return run
    return wrap



def _column_rows(ids: Sequence[str], columns: Mapping[str, Sequence[Any]]) -> list[tuple[Any, ...]]:
    """The values of bulk-updatable ``columns`` to write, one tuple per id (in the order of ``ids``)."""
    bad = set(columns) - UPDATABLE
    if bad:
        raise StorageError(f"columns not updatable in bulk: {sorted(bad)}")
    n = len(ids)
    cols = [column_values(columns[c], n, archived=c == "archived") for c in columns]
    return [tuple(vals) for vals in zip(*cols)] if cols else [()] * n

class SQLiteTransaction:
    def __init__(self, db: sqlite3.Connection, lexical_text: Callable[[MemoryItem], str], fail: Failure, *,
                 model: str, fts: bool = True) -> None:
        self._db = db
        self._model = model  # the store's embedder: the only one whose vectors it keeps
        self._lexical_text = lexical_text
        self._fts = fts  # False: the store's FTS5 table is retired (lexical.retire_fts), nothing goes there
        self._fail = fail
        self._part_numbers: dict[Partition, int] = {}  # numbers read or given in this transaction
        self.touched: set[tuple[str, str, str]] = set()  # (user, agent, memory) rows other indexes must re-read
        self.renamed: dict[Partition, Partition] = {}  # erased partitions -> their erased names
        self.inserted = 0  # memory rows put
        self.put_ids: list[str] = []  # ids of the memories put, in order (an idempotency record names them)
        self.erased = False  # something was erased: the file is scrubbed after commit
        self.deleted = False  # a memory was deleted: the search indexes' files are scrubbed too
        self.scrubbed: bool | None = None  # after commit: whether the scrub completed (None: none ran)

    def part_number(self, partition: Partition) -> int:
        """The partition's number (``lexical.entry_range``), given to it on its first write."""
        number = self.known_number(partition)
        if number is None:
            self._db.execute("INSERT OR IGNORE INTO partitions (user_id, agent_id) VALUES (?,?)", partition)
            number = self.known_number(partition)
            assert number is not None
        return number

    def known_number(self, partition: Partition) -> int | None:
        """The partition's number if it has one (none is given here: deleting writes none)."""
        number = self._part_numbers.get(partition)
        if number is None:
            number = partition_number(self._db, partition)
            if number is not None:
                self._part_numbers[partition] = number
        return number

    @guarded("erasing a partition's name")
    def forget_partition(self, partition: Partition) -> bool:
        """Once nothing of the partition is left (``forget_scope``): its number's row stops
        naming its user and agent. The number stays taken, so no other partition is ever
        given it; a later write of the same user and agent gets a new one. False when the
        partition had no number, or still holds memories (then nothing changes)."""
        number = self.known_number(partition)
        if number is None or self._db.execute(
                "SELECT 1 FROM memories WHERE user_id=? AND agent_id=? LIMIT 1", partition).fetchone():
            return False
        erased = erased_partition(number)
        self._db.execute("UPDATE partitions SET user_id=?, agent_id=? WHERE id=?", (*erased, number))
        # The change log other processes' indexes follow names it by its number from now on
        # (they know which partition had it); the rows this transaction adds too (``logged``).
        self._db.execute("UPDATE changes SET user_id=?, agent_id=? WHERE user_id=? AND agent_id=?",
                         (*erased, *partition))
        self.renamed[partition] = erased
        self._part_numbers.pop(partition, None)
        self.erased = True
        return True

    def logged(self) -> list[tuple[str, str, str]]:
        """The change-log rows of this transaction's changes: (user, agent, memory), an
        erased partition under its erased name."""
        return sorted((*self.renamed.get((u, a), (u, a)), mid) for u, a, mid in self.touched)

    def _entry_rowids(self, partition: Partition, n: int) -> list[int]:
        """``n`` fresh rowids in the partition's range of lexical entries."""
        number = self.part_number(partition)
        first = int(self._db.execute("SELECT next_entry FROM partitions WHERE id=?", (number,)).fetchone()[0])
        lo, hi = entry_range(number)
        if lo + first + n > hi:
            raise StorageError(f"partition {partition} has used up its {hi - lo} lexical entries")
        self._db.execute("UPDATE partitions SET next_entry = next_entry + ? WHERE id=?", (n, number))
        return [lo + first + i for i in range(n)]

    def _changed(self, partition: Partition, memory_ids: Sequence[str]) -> None:
        self.touched.update((partition[0], partition[1], mid) for mid in memory_ids)

    def lock(self, partitions: Sequence[Partition]) -> None:
        """Nothing to do: ``BEGIN IMMEDIATE`` took the file's write lock, so no other writer
        of any partition commits before this transaction ends."""

    @guarded("writing memories")
    def put_memories(self, items: Sequence[MemoryItem]) -> None:
        items = list(items)
        if not items:
            return
        by_part: dict[Partition, list[str]] = {}
        for item in items:
            by_part.setdefault((item.user_id, item.agent_id), []).append(item.id)
        old_hashes: dict[str, str] = {}
        for (user, agent), ids in by_part.items():
            for chunk in _chunks(ids):
                marks = ",".join("?" * len(chunk))
                # By primary key ("+column"): statistics sampled from a large file could
                # make the planner walk the partition for 500 ids (117 ms at 215k memories).
                old_hashes.update(self._db.execute(
                    f"SELECT id, {VECTOR_KEY} FROM memories WHERE +user_id=? AND +agent_id=? AND id IN ({marks})",
                    (user, agent, *chunk)).fetchall())
                number = self.part_number((user, agent))  # registers a new partition either way
                if self._fts:
                    lo, hi = entry_range(number)
                    self._db.executemany(_DELETE_FTS, [(lo, hi, mid, user, agent) for mid in chunk
                                                       if mid in old_hashes])
        rows = [item_row(i) for i in items]
        self._db.executemany(_INSERT_MEMORY, [r for r, i in zip(rows, items) if i.id not in old_hashes])
        self._db.executemany(_UPDATE_MEMORY, [(*r[3:], *r[:3]) for r, i in zip(rows, items) if i.id in old_hashes])
        if self._fts:
            rowids = {part: iter(self._entry_rowids(part, len(ids))) for part, ids in by_part.items()}
            self._db.executemany(_INSERT_FTS, [(next(rowids[(i.user_id, i.agent_id)]), self._lexical_text(i),
                                                i.id, i.user_id, i.agent_id) for i in items])
        for item in items:
            old = old_hashes.get(item.id)
            if old is not None and old != (item.vector_key or item.content_hash):
                self._drop_orphan_embedding(old)
        for part, ids in by_part.items():
            self._changed(part, ids)
        self.inserted += len(items) - len(old_hashes)
        self.put_ids.extend(i.id for i in items)

    @guarded("updating memories")
    def update_columns(self, partition: Partition, ids: Sequence[str], **columns: Sequence[Any]) -> None:
        if not ids:
            return
        names = list(columns)
        sets = ",".join(f"{c}=?" for c in names)
        self._db.executemany(f"UPDATE memories SET {sets} WHERE id=? AND user_id=? AND agent_id=?",
                             [(*vals, mid, *partition) for vals, mid in zip(_column_rows(ids, columns), ids)])
        if INDEXED.intersection(names):
            self._changed(partition, ids)

    @guarded("updating memory state")
    def update_states(self, partition: Partition, states: Mapping[str, Mapping[str, Any]]) -> None:
        if states:
            self._db.executemany(
                "UPDATE memories SET state=?, due_at=? WHERE id=? AND user_id=? AND agent_id=?",
                [(*state_row(st)[::-1], mid, *partition) for mid, st in states.items()])

    @guarded("recording accesses")
    def record_access(self, partition: Partition, ids: Sequence[str], now: float, *,
                      states: Mapping[str, Mapping[str, Any]] | None = None, **columns: Sequence[Any]) -> None:
        if not ids:
            return
        sets = "".join(f", {c}=?" for c in columns)
        extra = _column_rows(ids, columns)
        if states is not None:
            missing = [mid for mid in ids if mid not in states]
            if missing:
                raise StorageError(f"no state given for {missing[:3]}")
            sets += ", state=?, due_at=?"
            extra = [(*vals, *state_row(states[mid])[::-1]) for vals, mid in zip(extra, ids)]
        self._db.executemany(
            f"UPDATE memories SET access_count = access_count + 1, last_access = MAX(last_access, ?){sets} "
            "WHERE id=? AND user_id=? AND agent_id=?", [(now, *vals, mid, *partition) for vals, mid in zip(extra, ids)])
        if INDEXED.intersection(columns):
            self._changed(partition, ids)

    @guarded("erasing a memory")
    def delete_memory(self, partition: Partition, memory_id: str) -> dict[str, int]:
        user, agent = partition
        db = self._db
        row = db.execute(f"SELECT {VECTOR_KEY} FROM memories WHERE id=? AND user_id=? AND agent_id=?",
                         (memory_id, user, agent)).fetchone()
        out = {"memories": db.execute("DELETE FROM memories WHERE id=? AND user_id=? AND agent_id=?",
                                      (memory_id, user, agent)).rowcount}
        out["lexical_entries"] = 0
        if self._fts:
            lo, hi = entry_range(self.part_number(partition))
            out["lexical_entries"] = db.execute(_DELETE_FTS, (lo, hi, memory_id, user, agent)).rowcount
        key, number = id_key(memory_id), self.known_number(partition)
        out["edges"] = out["history_rows"] = 0  # a partition without a number never wrote either
        if number is not None:
            out["edges"] = db.execute("DELETE FROM edges WHERE part=? AND (src=? OR dst=?)",
                                      (number, key, key)).rowcount
            out["history_rows"] = db.execute("DELETE FROM history WHERE part=? AND memory_id=?", (number, key)).rowcount
            # Events of other memories that name this one (a debate it took part in) may quote it.
            out["history_rows"] += db.execute("DELETE FROM history WHERE part=? AND instr(detail, ?) > 0",
                                              (number, memory_id)).rowcount
        # Idempotency records of requests that wrote or returned it.
        out["requests"] = db.execute(
            "DELETE FROM requests WHERE user_id=? AND agent_id=? AND (instr(memory_ids, ?) > 0 OR "
            "instr(COALESCE(response, ''), ?) > 0)", (user, agent, memory_id, memory_id)).rowcount
        out["vectors"] = 0
        if row is not None:
            # Counted for the partition only: whether another partition holds the same text
            # (and so keeps the vector) must not show.
            if db.execute(f"SELECT 1 FROM memories WHERE {USES_VECTOR} AND user_id=? AND agent_id=? LIMIT 1",
                          (*uses_vector_args(row[0]), user, agent)).fetchone() is None:
                out["vectors"] = 1
            self._drop_orphan_embedding(row[0])
        self._changed(partition, [memory_id])
        self.erased = self.deleted = True
        return out

    def _drop_orphan_embedding(self, key: str) -> None:
        """A vector no memory refers to any more is erased with the last memory it served."""
        if self._db.execute(f"SELECT 1 FROM memories WHERE {USES_VECTOR} LIMIT 1", uses_vector_args(key)).fetchone() is None:
            self._db.execute("DELETE FROM embeddings WHERE key=?", (key_blob(key),))
            self.erased = True

    @guarded("writing vectors")
    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        if model != self._model:
            raise ValidationError(f"this store keeps vectors of its embedder {self._model!r}, not of {model!r}")
        vectors = np.asarray(vectors, dtype=np.float32)
        self._db.executemany("INSERT OR IGNORE INTO embeddings (key, vector) VALUES (?,?)",
                             [(key_blob(h), vector_blob(vectors[i])) for i, h in enumerate(hashes)])

    @guarded("writing edges")
    def put_edges(self, partition: Partition, edges: Sequence[Edge]) -> None:
        if not edges:
            return
        number = self.part_number(partition)
        self._db.executemany(
            "INSERT INTO edges (part, src, dst, relation, weight, variance, activations, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(part, src, dst, relation) DO UPDATE SET "
            "weight=excluded.weight, variance=excluded.variance, activations=excluded.activations, "
            "updated_at=excluded.updated_at",
            (edge_row(number, e) for e in edges))  # rows made as they are written

    @guarded("deleting edges")
    def delete_edges(self, partition: Partition, keys: Sequence[tuple[str, str, str]]) -> None:
        number = self.known_number(partition)
        if not keys or number is None:
            return
        self._db.executemany("DELETE FROM edges WHERE part=? AND src=? AND dst=? AND relation=?",
                             [(number, id_key(s), id_key(d), r) for s, d, r in keys])

    @guarded("writing history")
    def log(self, partition: Partition, events: Sequence[HistoryEvent]) -> None:
        if not events:
            return
        number = self.part_number(partition)
        self._db.executemany("INSERT INTO history (part, memory_id, at, action, detail) VALUES (?,?,?,?,?)",
                             [event_row(number, e) for e in events])

    @guarded("writing records")
    def kv_put(self, partition: Partition, values: Mapping[str, Any]) -> None:
        self._db.executemany(
            "INSERT INTO kv (user_id, agent_id, key, value) VALUES (?,?,?,?) "
            "ON CONFLICT(user_id, agent_id, key) DO UPDATE SET value=excluded.value",
            [(*partition, key, encode(value)) for key, value in values.items()])

    @guarded("erasing records")
    def kv_clear(self, partition: Partition) -> int:
        n = self._db.execute("DELETE FROM kv WHERE user_id=? AND agent_id=?", partition).rowcount
        n += self._db.execute("DELETE FROM requests WHERE user_id=? AND agent_id=?", partition).rowcount
        self.erased = True
        return int(n)

    # -- idempotency records (see storage.sqlite.store: SQLiteStore.request) -------------------
    @guarded("recording a request")
    def claim_request(self, partition: Partition, key: str, fingerprint: str, owner: str, now: float) -> str:
        """Record that this transaction carries out the request ``key``; returns the owner
        of the record, which is another request's when one with that key committed first."""
        row = self._db.execute("SELECT owner, memory_ids FROM requests WHERE user_id=? AND agent_id=? AND key=?",
                               (*partition, key)).fetchone()
        if row is None:
            self._db.execute(
                "INSERT INTO requests (user_id, agent_id, key, fingerprint, owner, created_at, memory_ids) "
                "VALUES (?,?,?,?,?,?,?)", (*partition, key, fingerprint, owner, now, json.dumps(self.put_ids)))
            return owner
        if row[0] == owner:  # a later transaction of the same request
            ids = json.loads(row[1])
            ids += [i for i in self.put_ids if i not in ids]
            self._db.execute("UPDATE requests SET memory_ids=? WHERE user_id=? AND agent_id=? AND key=?",
                             (json.dumps(ids), *partition, key))
        return str(row[0])

    @guarded("recording a response")
    def finish_request(self, partition: Partition, key: str, owner: str, status: int, response: str) -> None:
        self._db.execute("UPDATE requests SET status=?, response=? WHERE user_id=? AND agent_id=? AND key=? AND owner=?",
                         (int(status), response, *partition, key, owner))

    @guarded("expiring requests")
    def expire_requests(self, before: float) -> int:
        return int(self._db.execute("DELETE FROM requests WHERE created_at < ?", (before,)).rowcount)


def _chunks(ids: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    return [ids[i:i + size] for i in range(0, len(ids), size)]
