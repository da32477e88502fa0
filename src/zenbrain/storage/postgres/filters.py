"""A ``Filter`` as an SQL condition on the memories table (psycopg placeholders)."""

from __future__ import annotations

from typing import Any

from ..base import Filter, Partition

SESSION_LAYERS = ["working", "short_term"]


def where(partition: Partition, flt: Filter, alias: str = "m") -> tuple[str, list[Any]]:
    """The WHERE clause of what ``flt`` lets through in ``partition``, and its arguments."""
    p = f"{alias}." if alias else ""
    clauses = [f"{p}user_id = %s", f"{p}agent_id = %s"]
    args: list[Any] = [*partition]
    if not flt.include_archived:
        clauses.append(f"NOT {p}archived")
    if flt.layers is not None:
        clauses.append(f"{p}layer = ANY(%s)")
        args.append(sorted(layer.value for layer in flt.layers))
    if flt.contexts is not None:
        clauses.append(f"{p}context = ANY(%s)")
        args.append(sorted(flt.contexts))
    if flt.kinds is not None:
        clauses.append(f"{p}kind = ANY(%s)")
        args.append(sorted(flt.kinds))
    if flt.all_sessions:
        pass
    elif flt.session_id is None:
        clauses.append(f"{p}layer <> ALL(%s)")
        args.append(SESSION_LAYERS)
    else:
        clauses.append(f"({p}layer <> ALL(%s) OR {p}session_id = %s)")
        args.extend([SESSION_LAYERS, flt.session_id])
    if flt.event_after is not None:
        clauses.append(f"COALESCE({p}event_time, {p}created_at) >= %s")
        args.append(float(flt.event_after))
    if flt.event_before is not None:
        clauses.append(f"COALESCE({p}event_time, {p}created_at) <= %s")
        args.append(float(flt.event_before))
    if flt.due_before is not None:
        clauses.append(f"{p}due_at IS NOT NULL AND {p}due_at <= %s")
        args.append(float(flt.due_before))
    if flt.sessions is not None:
        clauses.append(f"{p}session_id = ANY(%s)")
        args.append(sorted(flt.sessions))
    if flt.turns is not None:
        pairs = sorted(flt.turns)
        clauses.append(f"({p}session_id, {p}position) IN (SELECT * FROM unnest(%s::text[], %s::int[]))")
        args.extend([[s for s, _ in pairs], [int(n) for _, n in pairs]])
    if flt.current_at is not None:
        clauses.append(f"({p}valid_until IS NULL OR {p}valid_until > %s)")
        args.append(float(flt.current_at))
    if flt.content_hashes is not None:
        clauses.append(f"{p}content_hash = ANY(%s)")
        args.append(sorted(flt.content_hashes))
    if flt.ids is not None:
        clauses.append(f"{p}id = ANY(%s)")
        args.append(sorted(flt.ids))
    return " AND ".join(clauses), args
