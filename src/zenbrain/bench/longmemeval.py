"""LongMemEval loader (S, M and oracle files share one layout).

Each item is a question with its own haystack::

    {"question_id", "question_type", "question", "answer", "question_date": "2023/05/30 (Tue) 23:40",
     "haystack_session_ids": [...], "haystack_dates": [...],
     "haystack_sessions": [[{"role", "content", "has_answer"?}, ...], ...],
     "answer_session_ids": [...]}

Questions are isolated: a system is reset, fed one item's haystack and asked that item's
question. Every turn becomes one ``Doc`` with id ``"{question_id}::s{index}::t{turn}"``
(``index``: the session's 0-based position in the haystack; ``turn``: the turn's position
inside the session). The public files name gold sessions ``answer_...`` and mark gold
turns ``has_answer``; neither reaches the system under test: doc ids, ``Doc.session`` and
metadata carry the positional session id only. The item keeps the mapping back
(``turn_to_session``: doc id -> original session id) for scoring. Gold for session-level
metrics is ``answer_session_ids``; gold for turn-level metrics is the turns marked
``has_answer``.
Abstention questions (``question_id`` ending in ``_abs``) have no evidence to retrieve and,
as in the official evaluation, are left out of retrieval metrics.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .base import Doc
from .locomo import DATA_ENV_VAR, resolve_data_dir, resolve_data_file

__all__ = [
    "DATA_ENV_VAR",
    "LongMemEvalItem",
    "is_abstention",
    "load_longmemeval",
    "opaque_session_id",
    "parse_longmemeval",
    "parse_longmemeval_date",
    "resolve_data_dir",
    "turn_doc_id",
]

LONGMEMEVAL_FILES = (
    "longmemeval_s_cleaned.json",
    "longmemeval_s.json",
    "longmemeval_s_one_question.json",
)

_LME_DATE = re.compile(
    r"^\s*(\d{4})[/-](\d{1,2})[/-](\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(?:(\d{1,2}):(\d{2}))?\s*$"
)


def parse_longmemeval_date(text: Any) -> float | None:
    """Parse ``"2023/05/30 (Tue) 23:40"`` to seconds since the epoch (read as UTC)."""
    if not isinstance(text, str):
        return None
    m = _LME_DATE.match(text)
    if not m:
        return None
    year, month, day, hour, minute = m.groups()
    try:
        dt = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), tzinfo=UTC)
    except ValueError:
        return None
    return dt.timestamp()


def is_abstention(question_id: str) -> bool:
    """Abstention questions are marked by the ``_abs`` suffix of their id."""
    return str(question_id).endswith("_abs")


def opaque_session_id(index: int) -> str:
    """The session id a system under test sees: its position in the haystack, no hint of gold."""
    return f"s{index}"


def turn_doc_id(question_id: str, session_id: str, turn: int) -> str:
    """``session_id`` is the opaque one (:func:`opaque_session_id`)."""
    return f"{question_id}::{session_id}::t{turn}"


@dataclass
class LongMemEvalItem:
    """One question with its haystack flattened into turn docs."""

    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: str | None
    query_time: float | None
    docs: list[Doc]
    session_ids: list[str]
    answer_session_ids: tuple[str, ...]
    gold_turn_ids: tuple[str, ...]
    turn_to_session: dict[str, str]
    is_abstention: bool
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def has_retrieval_gold(self) -> bool:
        return not self.is_abstention and bool(self.answer_session_ids)


def _parse_item(item: dict[str, Any], index: int, *, user_only: bool) -> LongMemEvalItem:
    qid = str(item.get("question_id", f"q{index}"))
    stats: Counter[str] = Counter()
    sessions = item.get("haystack_sessions") or []
    session_ids = list(item.get("haystack_session_ids") or [])
    dates = list(item.get("haystack_dates") or [])
    if len(session_ids) != len(sessions):
        stats["session_id_mismatch"] += 1
    docs: list[Doc] = []
    gold_turns: list[str] = []
    turn_to_session: dict[str, str] = {}
    used_ids: Counter[str] = Counter()
    haystack_ids: list[str] = []
    for si, session in enumerate(sessions):
        raw_sid = str(session_ids[si]) if si < len(session_ids) else f"session_{si}"
        used_ids[raw_sid] += 1
        haystack_ids.append(raw_sid)
        if used_ids[raw_sid] > 1:
            # A session id repeated inside one haystack keeps its id for session-level scoring.
            stats["duplicate_session_ids"] += 1
        sid = opaque_session_id(si)
        date_text = dates[si] if si < len(dates) else None
        when = parse_longmemeval_date(date_text)
        if not isinstance(session, list):
            stats["skipped_sessions"] += 1
            continue
        for ti, turn in enumerate(session):
            if not isinstance(turn, dict):
                stats["skipped_turns"] += 1
                continue
            role = str(turn.get("role", ""))
            if user_only and role != "user":
                continue
            content = turn.get("content")
            content = content if isinstance(content, str) else ("" if content is None else str(content))
            did = turn_doc_id(qid, sid, ti)
            has_answer = bool(turn.get("has_answer", False))
            if has_answer:
                gold_turns.append(did)
            turn_to_session[did] = raw_sid
            docs.append(
                Doc(
                    id=did,
                    text=content,
                    time=when,
                    speaker=role or None,
                    session=sid,
                    metadata={
                        "question_id": qid,
                        "session_index": si,
                        "session_date": date_text,
                        "turn_index": ti,
                        "role": role,
                    },
                )
            )
    present = set(haystack_ids)
    answer_sessions: list[str] = []
    for s in item.get("answer_session_ids") or []:
        s = str(s)
        if s in present:
            if s not in answer_sessions:
                answer_sessions.append(s)
        else:
            stats["dangling_answer_sessions"] += 1
    stats["turns"] = len(docs)
    stats["sessions"] = len(haystack_ids)
    answer = item.get("answer")
    return LongMemEvalItem(
        question_id=qid,
        question_type=str(item.get("question_type", "unknown")),
        question=str(item.get("question", "")),
        answer="" if answer is None else str(answer),
        question_date=item.get("question_date") if isinstance(item.get("question_date"), str) else None,
        query_time=parse_longmemeval_date(item.get("question_date")),
        docs=docs,
        session_ids=haystack_ids,
        answer_session_ids=tuple(answer_sessions),
        gold_turn_ids=tuple(gold_turns),
        turn_to_session=turn_to_session,
        is_abstention=is_abstention(qid),
        stats=dict(stats),
    )


def parse_longmemeval(
    data: Any,
    *,
    question_types: Iterable[str] | None = None,
    question_ids: Iterable[str] | None = None,
    limit: int | None = None,
    include_abstention: bool = True,
    user_only: bool = False,
) -> list[LongMemEvalItem]:
    """Parse already-loaded LongMemEval JSON (a list of items, or one item dict).

    ``user_only=True`` indexes only user turns (the official retrieval default keys on
    user turns); by default both roles are indexed.
    """
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError("LongMemEval data must be a list of items")  # noqa: TRY004 - the loaders raise ValueError for any malformed input
    types = set(question_types) if question_types is not None else None
    ids = set(question_ids) if question_ids is not None else None
    out: list[LongMemEvalItem] = []
    for i, raw in enumerate(data):
        if not isinstance(raw, dict):
            continue
        if types is not None and raw.get("question_type") not in types:
            continue
        if ids is not None and raw.get("question_id") not in ids:
            continue
        if not include_abstention and is_abstention(str(raw.get("question_id", ""))):
            continue
        out.append(_parse_item(raw, i, user_only=user_only))
        if limit is not None and len(out) >= limit:
            break
    return out


def load_longmemeval(
    path: str | os.PathLike[str] | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    question_types: Iterable[str] | None = None,
    question_ids: Iterable[str] | None = None,
    limit: int | None = None,
    include_abstention: bool = True,
    user_only: bool = False,
) -> list[LongMemEvalItem]:
    """Load a LongMemEval file (S, M or oracle).

    ``path`` defaults to the first LongMemEval-S file found in the data folder
    (``data_dir``, else ``$ZENBRAIN_DATA``, else ``../shared/data`` beside the repository).
    """
    file = resolve_data_file(path, LONGMEMEVAL_FILES, data_dir)
    with open(file, encoding="utf-8") as fh:
        data = json.load(fh)
    return parse_longmemeval(
        data,
        question_types=question_types,
        question_ids=question_ids,
        limit=limit,
        include_abstention=include_abstention,
        user_only=user_only,
    )
