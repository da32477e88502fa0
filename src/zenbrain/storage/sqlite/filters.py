"""A ``Filter`` as an SQL condition on the memories table."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..base import Filter, Partition

SESSION_LAYERS_SQL = "('working','short_term')"


def where(partition: Partition, flt: Filter, alias: str = "", *, use_indexes: bool = True) -> tuple[str, list[Any]]:
    """The WHERE clause of what ``flt`` lets through in ``partition``, and its arguments.
    ``use_indexes=False`` writes ``+column`` so that the planner looks rows up by another
    condition (the filter's ids or content hashes, which stay indexable, or the caller's
    own) instead of scanning an index of these columns."""
    p = key = f"{alias}." if alias else ""
    if not use_indexes:
        p = "+" + p
    clauses = [f"{p}user_id=?", f"{p}agent_id=?"]
    args: list[Any] = [*partition]
    if not flt.include_archived:
        clauses.append(f"{p}archived=0")
    if flt.layers is not None:
        clauses.append(f"{p}layer IN ({','.join('?' * len(flt.layers))})")
        args.extend(sorted(layer.value for layer in flt.layers))
    if flt.contexts is not None:
        clauses.append(f"{p}context IN ({','.join('?' * len(flt.contexts))})")
        args.extend(sorted(flt.contexts))
    if flt.kinds is not None:
        clauses.append(f"{p}kind IN ({','.join('?' * len(flt.kinds))})")
        args.extend(sorted(flt.kinds))
    session_bound = f"{p}layer IN {SESSION_LAYERS_SQL}"
    if flt.all_sessions:
        pass
    elif flt.session_id is None:
        clauses.append(f"NOT {session_bound}")
    else:
        clauses.append(f"(NOT {session_bound} OR {p}session_id=?)")
        args.append(flt.session_id)
    if flt.event_after is not None:
        clauses.append(f"COALESCE({p}event_time, {p}created_at) >= ?")
        args.append(flt.event_after)
    if flt.event_before is not None:
        clauses.append(f"COALESCE({p}event_time, {p}created_at) <= ?")
        args.append(flt.event_before)
    if flt.due_before is not None:
        clauses.append(f"{p}due_at IS NOT NULL AND {p}due_at <= ?")
        args.append(flt.due_before)
    if flt.sessions is not None:
        clauses.append(f"{p}session_id IN ({','.join('?' * len(flt.sessions))})")
        args.extend(sorted(flt.sessions))
    if flt.turns is not None:
        if flt.turns:
            pairs = sorted(flt.turns)
            clauses.append(f"({p}session_id, {p}position) IN (VALUES {','.join(['(?,?)'] * len(pairs))})")
            args.extend(x for pair in pairs for x in pair)
        else:
            clauses.append("0")
    if flt.current_at is not None:
        clauses.append(f"({p}valid_until IS NULL OR {p}valid_until > ?)")
        args.append(flt.current_at)
    if flt.content_hashes is not None:
        hashes = sorted(flt.content_hashes)
        prefixes = sorted({h[:16] for h in hashes})  # through the index of hash prefixes (codec.HASH_PREFIX)
        # "+": with statistics, SQLite 3.40's planner scans the table when the column itself
        # is also compared (measured: 3.8 ms a lookup at 10k memories instead of 0.05).
        clauses.append(f"substr({key}content_hash, 1, 16) IN ({','.join('?' * len(prefixes))}) "
                       f"AND +{key}content_hash IN ({','.join('?' * len(hashes))})")
        args.extend([*prefixes, *hashes])
    if flt.ids is not None:
        clauses.append(f"{key}id IN ({','.join('?' * len(flt.ids))})")
        args.extend(sorted(flt.ids))
    return " AND ".join(clauses), args


def turn_runs(partition: Partition, flt: Filter) -> tuple[str, list[tuple[Any, ...]]] | None:
    """When ``flt`` names turns: a query of the rowids of the memories ``flt`` lets through
    in one run of consecutive turns of a session, and its arguments for every such run;
    None otherwise. ``(session_id, position) IN (VALUES ...)`` makes SQLite walk the whole
    partition (10 ms at 10,000 turns, growing with it); a lookup per run costs what the
    turns found cost, and its text is always the same (prepared once)."""
    if not flt.turns:
        return None
    rest, rest_args = where(partition, replace(flt, turns=None))
    runs: list[tuple[Any, ...]] = []
    for session, position in sorted(flt.turns):
        last = runs[-1] if runs else None
        if last is not None and last[-3] == session and last[-1] == position - 1:
            runs[-1] = (*last[:-1], position)
        else:
            runs.append((*rest_args, session, position, position))
    return f"SELECT rowid FROM memories WHERE {rest} AND session_id=? AND position BETWEEN ? AND ?", runs
