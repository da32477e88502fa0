"""LoCoMo loader: conversations as ``Doc`` turns plus QA items with cleaned evidence.

The official release (``locomo10.json``) is a list of samples::

    {"sample_id": "conv-26",
     "conversation": {"speaker_a": ..., "speaker_b": ...,
                      "session_1_date_time": "1:56 pm on 8 May, 2023",
                      "session_1": [{"speaker", "dia_id": "D1:1", "text",
                                     "blip_caption"?, "img_url"?, "query"?}, ...], ...},
     "qa": [{"question", "answer" | "adversarial_answer", "evidence": ["D1:3"], "category": 1..5}],
     ...}

Each dialogue turn becomes one ``Doc`` whose id is the dialogue id (``"D3:12"``) or,
in pooled mode, the sample id and the dialogue id (``"conv-26/D3:12"``). Image turns
carry their BLIP caption in the text, as the official LoCoMo RAG baselines do.

Evidence lists in the release contain a few defects (``"D8:6; D9:17"`` in one entry,
``"D:11:26"``, a bare ``"D"``, ids of turns that do not exist). They are split,
repaired when the intended id is unambiguous, and otherwise dropped and counted, so
loading never fails on them.
"""

from __future__ import annotations

import calendar
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .base import Doc

__all__ = [
    "CATEGORY_NAMES",
    "DATA_ENV_VAR",
    "EvidenceCleaning",
    "LocomoConversation",
    "LocomoQA",
    "clean_evidence",
    "default_data_dir",
    "load_locomo",
    "parse_locomo",
    "parse_locomo_datetime",
    "pool_conversations",
    "prefix_conversation",
    "resolve_data_dir",
    "resolve_data_file",
]

DATA_ENV_VAR = "ZENBRAIN_DATA"

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

LOCOMO_FILES = ("locomo_dev.json", "locomo10.json")

# --------------------------------------------------------------------------- data paths


def default_data_dir() -> Path:
    """``../shared/data`` relative to the repository root (the parent of ``src``)."""
    repo_root = Path(__file__).resolve().parents[3]
    return (repo_root / ".." / "shared" / "data").resolve()


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data folder: the explicit argument, else ``$ZENBRAIN_DATA``, else the default."""
    if data_dir:
        return Path(data_dir).expanduser()
    env = os.environ.get(DATA_ENV_VAR)
    if env:
        return Path(env).expanduser()
    return default_data_dir()


def resolve_data_file(
    path: str | os.PathLike[str] | None,
    candidates: Sequence[str],
    data_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """An explicit file path, or the first of ``candidates`` found in the data folder."""
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_absolute() and not p.exists():
            alt = resolve_data_dir(data_dir) / p
            if alt.exists():
                return alt
        return p
    folder = resolve_data_dir(data_dir)
    for name in candidates:
        p = folder / name
        if p.exists():
            return p
    raise FileNotFoundError(
        f"none of {list(candidates)} found in {folder}; pass a path or set ${DATA_ENV_VAR}"
    )


# --------------------------------------------------------------------------- dates

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_LOCOMO_DT = re.compile(
    r"^\s*(\d{1,2})[:.](\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$",
    re.IGNORECASE,
)


def parse_locomo_datetime(text: Any) -> float | None:
    """Parse ``"1:56 pm on 8 May, 2023"`` to seconds since the epoch (read as UTC).

    Returns ``None`` for anything that does not have this shape.
    """
    if not isinstance(text, str):
        return None
    m = _LOCOMO_DT.match(text)
    if not m:
        return None
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower())
    h = int(hour)
    if month is None or not 1 <= h <= 12:
        return None
    h = h % 12 + (12 if ampm.lower() == "p" else 0)
    try:
        dt = datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)
    except ValueError:
        return None
    return dt.timestamp()


# --------------------------------------------------------------------------- evidence

_DIA_ID = re.compile(r"^D\s*:?\s*(\d+)\s*:\s*(\d+)$", re.IGNORECASE)
_SPLIT = re.compile(r"[;,\s]+")


@dataclass(frozen=True)
class EvidenceCleaning:
    """Result of cleaning one QA item's evidence list.

    ``ids``: valid dialogue ids, in the order given, without duplicates.
    ``dangling``: well-formed ids whose turn does not exist in the conversation.
    ``malformed``: entries that cannot be read as a dialogue id at all.
    ``repaired``: ``(raw, fixed)`` pairs where a defective id was read as an existing one.
    """

    ids: tuple[str, ...]
    dangling: tuple[str, ...] = ()
    malformed: tuple[str, ...] = ()
    repaired: tuple[tuple[str, str], ...] = ()


def clean_evidence(raw: Any, valid_ids: Iterable[str]) -> EvidenceCleaning:
    """Split, repair and validate a LoCoMo ``evidence`` value against the turns present.

    Accepts a list of strings, a single string or ``None``. Entries holding several ids
    (``"D8:6; D9:17"``) are split. An id that is not present verbatim is rewritten to the
    canonical ``D<session>:<turn>`` form (``"D:11:26"`` -> ``"D11:26"``); if that exists it
    is kept and recorded as repaired, otherwise counted as dangling. Never raises.
    """
    valid = valid_ids if isinstance(valid_ids, (set, frozenset, dict)) else set(valid_ids)
    if raw is None:
        entries: list[Any] = []
    elif isinstance(raw, (str, int, float)):
        entries = [raw]
    elif isinstance(raw, Iterable):
        entries = list(raw)
    else:
        entries = [raw]
    ids: list[str] = []
    dangling: list[str] = []
    malformed: list[str] = []
    repaired: list[tuple[str, str]] = []
    for entry in entries:
        if not isinstance(entry, str):
            malformed.append(repr(entry))
            continue
        for piece in _SPLIT.split(entry.strip()):
            if not piece:
                continue
            if piece in valid:
                if piece not in ids:
                    ids.append(piece)
                continue
            m = _DIA_ID.match(piece)
            if not m:
                malformed.append(piece)
                continue
            canonical = f"D{int(m.group(1))}:{int(m.group(2))}"
            if canonical in valid:
                repaired.append((piece, canonical))
                if canonical not in ids:
                    ids.append(canonical)
            else:
                dangling.append(piece)
    return EvidenceCleaning(tuple(ids), tuple(dangling), tuple(malformed), tuple(repaired))


# --------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class LocomoQA:
    """One LoCoMo question. ``evidence`` holds doc ids of this conversation's docs."""

    qid: str
    sample_id: str
    question: str
    answer: str | None
    category: int | None
    evidence: tuple[str, ...]
    raw_evidence: tuple[str, ...] = ()
    dangling: tuple[str, ...] = ()
    malformed: tuple[str, ...] = ()
    adversarial_answer: str | None = None
    query_time: float | None = None

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES.get(self.category, f"category-{self.category}") if self.category is not None else "unknown"


@dataclass
class LocomoConversation:
    """One LoCoMo sample: its turns as docs and its questions.

    ``id_prefix`` is ``""`` in per-conversation mode and ``"<sample_id>/"`` in pooled mode;
    doc ids and QA evidence ids always carry the same prefix.
    """

    sample_id: str
    speakers: tuple[str, ...]
    docs: list[Doc]
    questions: list[LocomoQA]
    session_times: dict[str, float | None] = field(default_factory=dict)
    id_prefix: str = ""
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def doc_ids(self) -> set[str]:
        return {d.id for d in self.docs}

    @property
    def last_time(self) -> float | None:
        times = [t for t in self.session_times.values() if t is not None]
        return max(times) if times else None


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return str(value)


def _turn_text(turn: dict[str, Any], *, include_speaker: bool, include_caption: bool) -> str:
    text = _as_text(turn.get("text")) or ""
    text = text.strip()
    caption = turn.get("blip_caption")
    if include_caption and isinstance(caption, str) and caption.strip():
        text = f"{text} [shares {caption.strip()}]".strip()
    speaker = turn.get("speaker")
    if include_speaker and isinstance(speaker, str) and speaker:
        text = f"{speaker}: {text}"
    return text


_SESSION_KEY = re.compile(r"^session_(\d+)$")


def _parse_sample(
    sample: dict[str, Any],
    index: int,
    *,
    pooled: bool,
    include_speaker: bool,
    include_caption: bool,
) -> LocomoConversation:
    sample_id = _as_text(sample.get("sample_id")) or f"sample-{index}"
    conv = sample.get("conversation") or {}
    if not isinstance(conv, dict):
        conv = {}
    prefix = f"{sample_id}/" if pooled else ""
    speakers = tuple(s for s in (conv.get("speaker_a"), conv.get("speaker_b")) if isinstance(s, str))

    sessions: list[tuple[int, str]] = []
    for key in conv:
        m = _SESSION_KEY.match(key)
        if m:
            sessions.append((int(m.group(1)), key))
    sessions.sort()

    docs: list[Doc] = []
    seen: set[str] = set()
    session_times: dict[str, float | None] = {}
    stats: Counter[str] = Counter()
    for number, key in sessions:
        turns = conv.get(key)
        if not isinstance(turns, list) or not turns:
            continue
        date_text = conv.get(f"{key}_date_time")
        when = parse_locomo_datetime(date_text)
        if when is None:
            stats["sessions_without_time"] += 1
        session_times[str(number)] = when
        for turn_index, turn in enumerate(turns):
            if not isinstance(turn, dict):
                stats["skipped_turns"] += 1
                continue
            dia_id = _as_text(turn.get("dia_id")) or f"D{number}:{turn_index + 1}"
            if dia_id in seen:
                stats["duplicate_turn_ids"] += 1
                continue
            seen.add(dia_id)
            metadata: dict[str, Any] = {
                "sample_id": sample_id,
                "dia_id": dia_id,
                "session_number": number,
                "turn_index": turn_index,
                "date_time": date_text if isinstance(date_text, str) else None,
            }
            for extra in ("blip_caption", "img_url", "query"):
                if extra in turn:
                    metadata[extra] = turn[extra]
            docs.append(
                Doc(
                    id=prefix + dia_id,
                    text=_turn_text(turn, include_speaker=include_speaker, include_caption=include_caption),
                    time=when,
                    speaker=_as_text(turn.get("speaker")),
                    session=str(number),
                    metadata=metadata,
                )
            )

    query_time = max((t for t in session_times.values() if t is not None), default=None)
    questions: list[LocomoQA] = []
    qa_list = sample.get("qa") or []
    for qi, qa in enumerate(qa_list if isinstance(qa_list, list) else []):
        if not isinstance(qa, dict):
            stats["skipped_questions"] += 1
            continue
        raw = qa.get("evidence")
        cleaned = clean_evidence(raw, seen)
        stats["evidence_ids"] += len(cleaned.ids)
        stats["dangling"] += len(cleaned.dangling)
        stats["malformed"] += len(cleaned.malformed)
        stats["repaired"] += len(cleaned.repaired)
        if not cleaned.ids:
            stats["questions_without_evidence"] += 1
        category = qa.get("category")
        try:
            category = int(category) if category is not None else None
        except (TypeError, ValueError):
            category = None
        if isinstance(raw, list):
            raw_t = tuple(str(r) for r in raw)
        elif raw is None:
            raw_t = ()
        else:
            raw_t = (str(raw),)
        questions.append(
            LocomoQA(
                qid=f"{sample_id}/q{qi}",
                sample_id=sample_id,
                question=_as_text(qa.get("question")) or "",
                answer=_as_text(qa.get("answer")),
                category=category,
                evidence=tuple(prefix + e for e in cleaned.ids),
                raw_evidence=raw_t,
                dangling=cleaned.dangling,
                malformed=cleaned.malformed,
                adversarial_answer=_as_text(qa.get("adversarial_answer")),
                query_time=query_time,
            )
        )
    stats["turns"] = len(docs)
    stats["questions"] = len(questions)
    return LocomoConversation(
        sample_id=sample_id,
        speakers=speakers,
        docs=docs,
        questions=questions,
        session_times=session_times,
        id_prefix=prefix,
        stats=dict(stats),
    )


def parse_locomo(
    data: Any,
    *,
    pooled: bool = False,
    sample_ids: Iterable[str] | None = None,
    limit: int | None = None,
    include_speaker: bool = True,
    include_caption: bool = True,
) -> list[LocomoConversation]:
    """Parse already-loaded LoCoMo JSON (a list of samples, or one sample dict)."""
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError("LoCoMo data must be a list of samples")  # noqa: TRY004 - the loaders raise ValueError for any malformed input
    wanted = set(sample_ids) if sample_ids is not None else None
    out: list[LocomoConversation] = []
    for i, sample in enumerate(data):
        if not isinstance(sample, dict):
            continue
        if wanted is not None and sample.get("sample_id") not in wanted:
            continue
        out.append(
            _parse_sample(sample, i, pooled=pooled, include_speaker=include_speaker, include_caption=include_caption)
        )
        if limit is not None and len(out) >= limit:
            break
    return out


def load_locomo(
    path: str | os.PathLike[str] | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    pooled: bool = False,
    sample_ids: Iterable[str] | None = None,
    limit: int | None = None,
    include_speaker: bool = True,
    include_caption: bool = True,
) -> list[LocomoConversation]:
    """Load a LoCoMo JSON file.

    ``path`` defaults to ``locomo_dev.json`` (or ``locomo10.json``) in the data folder
    (``data_dir``, else ``$ZENBRAIN_DATA``, else ``../shared/data`` beside the repository).
    With ``pooled=True`` doc and evidence ids are prefixed by the sample id.
    """
    file = resolve_data_file(path, LOCOMO_FILES, data_dir)
    with open(file, encoding="utf-8") as fh:
        data = json.load(fh)
    return parse_locomo(
        data,
        pooled=pooled,
        sample_ids=sample_ids,
        limit=limit,
        include_speaker=include_speaker,
        include_caption=include_caption,
    )


def prefix_conversation(conv: LocomoConversation) -> LocomoConversation:
    """The same conversation with ids in pooled form (``"conv-26/D3:12"``); idempotent."""
    prefix = f"{conv.sample_id}/"
    if conv.id_prefix == prefix:
        return conv
    strip = len(conv.id_prefix)
    docs = [replace(d, id=prefix + d.id[strip:]) for d in conv.docs]
    questions = [replace(q, evidence=tuple(prefix + e[strip:] for e in q.evidence)) for q in conv.questions]
    return replace(conv, docs=docs, questions=questions, id_prefix=prefix)


def pool_conversations(conversations: Sequence[LocomoConversation]) -> tuple[list[Doc], list[LocomoQA]]:
    """All docs and questions of several conversations with pooled (prefixed) ids."""
    docs: list[Doc] = []
    questions: list[LocomoQA] = []
    seen: set[str] = set()
    for conv in conversations:
        pc = prefix_conversation(conv)
        if pc.sample_id in seen:
            raise ValueError(f"duplicate sample id {pc.sample_id!r} in pooled mode")
        seen.add(pc.sample_id)
        docs.extend(pc.docs)
        questions.extend(pc.questions)
    return docs, questions
