"""What the dashboard shows over time: lifecycle reports and store-statistics snapshots.

The library returns a sleep or decay report to its caller and keeps no copy, and its
statistics are a picture of now. ``ActivityLog`` keeps both per scope (user, agent,
context) in a small SQLite file of its own beside the store (``<store>.activity.db``),
so the memory store's schema stays the library's alone. Each scope keeps its newest
``keep`` rows of each kind; ``forget_partition`` erases a user's rows with their memories.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from ..model import Scope

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reports (
    user_id TEXT NOT NULL, agent_id TEXT NOT NULL, context TEXT NOT NULL,
    at REAL NOT NULL, operation TEXT NOT NULL, summary TEXT NOT NULL, stages TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS reports_scope ON reports (user_id, agent_id, context, at);
CREATE TABLE IF NOT EXISTS snapshots (
    user_id TEXT NOT NULL, agent_id TEXT NOT NULL, context TEXT NOT NULL,
    at REAL NOT NULL, trigger TEXT NOT NULL, stats TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS snapshots_scope ON snapshots (user_id, agent_id, context, at);
"""


def activity_path(store_path: str) -> str | None:
    """Where the activity log of the store at ``store_path`` lives (None: in memory; so for
    a PostgreSQL store, which has no file beside it, each server process keeps its own)."""
    if store_path in ("", ":memory:") or store_path.startswith(("postgresql://", "postgres://")):
        return None
    return str(Path(store_path).with_suffix("")) + ".activity.db"


class ActivityLog:
    """Lifecycle reports and stats snapshots per scope, newest ``keep`` of each kept."""

    def __init__(self, path: str | None = None, *, keep: int = 500) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path or ":memory:", check_same_thread=False, isolation_level=None, timeout=30.0)
        if path:  # several server processes may share the file
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA secure_delete=ON")
        self._conn.executescript(_SCHEMA)

    @staticmethod
    def _key(scope: Scope) -> tuple[str, str, str]:
        return (scope.user_id, scope.agent_id, scope.context)

    def record_report(self, scope: Scope, operation: str, at: float, summary: list[str], stages: dict[str, Any]) -> None:
        key = self._key(scope)
        with self._lock:
            self._conn.execute("INSERT INTO reports VALUES (?, ?, ?, ?, ?, ?, ?)",
                               (*key, at, operation, json.dumps(summary), json.dumps(stages, default=str)))
            self._trim("reports", key)

    def record_snapshot(self, scope: Scope, trigger: str, at: float, stats: dict[str, Any]) -> None:
        key = self._key(scope)
        kept = {k: stats[k] for k in ("memories", "archived", "edges", "by_layer")}
        with self._lock:
            self._conn.execute("INSERT INTO snapshots VALUES (?, ?, ?, ?, ?, ?)", (*key, at, trigger, json.dumps(kept)))
            self._trim("snapshots", key)

    def _trim(self, table: str, key: tuple[str, str, str]) -> None:
        self._conn.execute(
            f"DELETE FROM {table} WHERE user_id=? AND agent_id=? AND context=? AND rowid NOT IN "
            f"(SELECT rowid FROM {table} WHERE user_id=? AND agent_id=? AND context=? ORDER BY at DESC, rowid DESC "
            "LIMIT ?)", (*key, *key, self.keep))

    def reports(self, scope: Scope, limit: int) -> list[dict[str, Any]]:
        """Newest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT operation, at, summary, stages FROM reports WHERE user_id=? AND agent_id=? AND context=? "
                "ORDER BY at DESC, rowid DESC LIMIT ?", (*self._key(scope), limit)).fetchall()
        return [{"operation": op, "at": at, "summary": json.loads(s), "stages": json.loads(st)} for op, at, s, st in rows]

    def snapshots(self, scope: Scope, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` snapshots, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT at, trigger, stats FROM snapshots WHERE user_id=? AND agent_id=? AND context=? "
                "ORDER BY at DESC, rowid DESC LIMIT ?", (*self._key(scope), limit)).fetchall()
        return [{"at": at, "trigger": trig, **json.loads(st)} for at, trig, st in reversed(rows)]

    def last_snapshot_at(self, scope: Scope) -> float | None:
        with self._lock:
            row = self._conn.execute("SELECT MAX(at) FROM snapshots WHERE user_id=? AND agent_id=? AND context=?",
                                     self._key(scope)).fetchone()
        return row[0] if row else None

    def forget_memories(self, user_id: str, agent_id: str, ids: list[str]) -> None:
        """Erase the lifecycle reports of a user and agent that name any of ``ids`` (a report
        with detail may quote an erased memory)."""
        with self._lock:
            for mid in ids:
                self._conn.execute("DELETE FROM reports WHERE user_id=? AND agent_id=? AND instr(stages, ?) > 0",
                                   (user_id, agent_id, mid))

    def forget_partition(self, user_id: str, agent_id: str) -> None:
        """Erase every row of a user and agent (all contexts)."""
        with self._lock:
            for table in ("reports", "snapshots"):
                self._conn.execute(f"DELETE FROM {table} WHERE user_id=? AND agent_id=?",
                                   (user_id, agent_id))

    def close(self) -> None:
        with self._lock:
            self._conn.close()


__all__ = ["ActivityLog", "activity_path"]
