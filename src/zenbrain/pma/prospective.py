"""Prospective memory: intentions that fire when their cue appears or their time comes.

An :class:`Intention` ("remind the user to renew the passport", "when Bob is
mentioned, ask about his lab") has any of

* keyword cues: phrases matched as contiguous runs of normalised tokens in the
  incoming text (case and edge punctuation ignored);
* an embedding cue: fires when the cosine between the incoming text's embedding
  and the cue embedding reaches ``similarity_threshold`` (0.8);
* a time trigger ``due_at``: fires at the first :func:`check` with ``now >= due_at``.

Triggers are alternatives: whichever matches first fires. A one-off intention
fires once and is then ``done``. A recurring one (``repeat_every_s``) re-arms: its
time trigger moves to the next occurrence after ``now`` (missed occurrences fire
once, not in a burst), and its event cues are silent for ``repeat_every_s`` after
each firing. ``expires_at`` retires an intention that never fired.

The paper says time-based prospective memory is "handled by FSRS"; the authors'
code has time triggers in SQL. Here both kinds live in one pure function, and the
coordinator calls :func:`check` on every store/recall (with the text and its
embedding) and on a timer (with ``now`` only).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..params import Params, bounded

_TOKEN_RE = re.compile(r"\S+")
_EDGE_RE = re.compile(r"^[^\w]+|[^\w]+$")


@dataclass(frozen=True)
class ProspectiveParams(Params):
    similarity_threshold: float = bounded(0.8, -1.0, 1.0, "cosine at which an embedding cue fires")


DEFAULT_PARAMS = ProspectiveParams()


@dataclass(frozen=True)
class Intention:
    id: str
    action: str
    created_at: float
    cue_keywords: tuple[str, ...] = ()
    cue_embedding: tuple[float, ...] | None = None
    due_at: float | None = None
    repeat_every_s: float | None = None
    expires_at: float | None = None
    fired_count: int = 0
    last_fired_at: float | None = None
    done: bool = False

    @property
    def recurring(self) -> bool:
        return self.repeat_every_s is not None

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["cue_keywords"] = list(self.cue_keywords)
        d["cue_embedding"] = None if self.cue_embedding is None else list(self.cue_embedding)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Intention:
        d = dict(data)
        d["cue_keywords"] = tuple(d.get("cue_keywords", ()))
        if d.get("cue_embedding") is not None:
            d["cue_embedding"] = tuple(float(x) for x in d["cue_embedding"])
        return cls(**d)


@dataclass(frozen=True)
class Firing:
    intention_id: str
    at: float
    trigger: str  # time, keyword, embedding
    score: float  # 1.0 for time and keyword, the cosine for an embedding cue
    action: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _norm_tokens(text: str) -> list[str]:
    return [t for t in (_EDGE_RE.sub("", m.group(0).lower()) for m in _TOKEN_RE.finditer(text)) if t]


def make_intention(
    *,
    id: str,
    action: str,
    now: float,
    cue_keywords: Sequence[str] = (),
    cue_embedding: Sequence[float] | None = None,
    due_at: float | None = None,
    repeat_every_s: float | None = None,
    expires_at: float | None = None,
) -> Intention:
    """A validated intention; it needs at least one trigger."""
    if not id or not isinstance(action, str) or not action.strip():
        raise ValidationError("an intention needs an id and a non-empty action")
    kws = tuple(k for k in cue_keywords if _norm_tokens(k))
    if len(kws) != len(tuple(cue_keywords)):
        raise ValidationError("keyword cues must contain at least one word")
    emb = None
    if cue_embedding is not None:
        arr = np.asarray(cue_embedding, dtype=float).reshape(-1)
        if arr.size == 0 or not np.all(np.isfinite(arr)) or not np.any(arr):
            raise ValidationError("cue_embedding must be a finite, non-zero vector")
        emb = tuple(float(x) for x in arr)
    for name, v in (("now", now), ("due_at", due_at), ("expires_at", expires_at)):
        if v is not None and not math.isfinite(v):
            raise ValidationError(f"{name} must be finite")
    if repeat_every_s is not None and not (math.isfinite(repeat_every_s) and repeat_every_s > 0):
        raise ValidationError("repeat_every_s must be a positive number of seconds")
    if not kws and emb is None and due_at is None:
        raise ValidationError("an intention needs a keyword cue, an embedding cue or a due time")
    return Intention(id=str(id), action=action, created_at=float(now), cue_keywords=kws, cue_embedding=emb,
                     due_at=None if due_at is None else float(due_at),
                     repeat_every_s=None if repeat_every_s is None else float(repeat_every_s),
                     expires_at=None if expires_at is None else float(expires_at))


def _phrase_in(tokens: list[str], phrase: list[str]) -> bool:
    n = len(phrase)
    return any(tokens[i : i + n] == phrase for i in range(len(tokens) - n + 1))


def check(
    intentions: Sequence[Intention],
    *,
    now: float,
    text: str | None = None,
    embedding: Sequence[float] | None = None,
    params: ProspectiveParams = DEFAULT_PARAMS,
) -> tuple[tuple[Intention, ...], tuple[Firing, ...]]:
    """Return the updated intentions (same order) and the firings at ``now``.

    Each intention fires at most once per call; a one-off intention at most once ever.
    """
    tokens = _norm_tokens(text) if text else []
    q = None
    if embedding is not None:
        q = np.asarray(embedding, dtype=float).reshape(-1)
        nq = np.linalg.norm(q)
        q = q / nq if nq > 0 and np.isfinite(nq) else None
    out: list[Intention] = []
    firings: list[Firing] = []
    for it in intentions:
        if it.done:
            out.append(it)
            continue
        if it.expires_at is not None and now > it.expires_at:
            out.append(replace(it, done=True))
            continue
        hit: tuple[str, float, str] | None = None
        if it.due_at is not None and now >= it.due_at:
            hit = ("time", 1.0, f"due at {it.due_at:.0f}")
        else:
            refractory = (it.repeat_every_s is not None and it.last_fired_at is not None
                          and now - it.last_fired_at < float(it.repeat_every_s))
            if not refractory:
                for kw in it.cue_keywords:
                    if tokens and _phrase_in(tokens, _norm_tokens(kw)):
                        hit = ("keyword", 1.0, kw)
                        break
                if hit is None and q is not None and it.cue_embedding is not None:
                    c = np.asarray(it.cue_embedding, dtype=float)
                    if c.shape == q.shape:
                        cos = float(q @ (c / np.linalg.norm(c)))
                        if cos >= params.similarity_threshold:
                            hit = ("embedding", cos, f"cosine {cos:.3f}")
        if hit is None:
            out.append(it)
            continue
        trig, score, detail = hit
        firings.append(Firing(it.id, float(now), trig, score, it.action, detail))
        fired = replace(it, fired_count=it.fired_count + 1, last_fired_at=float(now))
        if it.repeat_every_s is None:  # not recurring
            fired = replace(fired, done=True)
        elif trig == "time" and it.due_at is not None:  # a time trigger always has a due time
            period = float(it.repeat_every_s)
            k = math.floor((now - it.due_at) / period) + 1
            fired = replace(fired, due_at=it.due_at + k * period)
        out.append(fired)
    return tuple(out), tuple(firings)


def pending(intentions: Sequence[Intention]) -> tuple[Intention, ...]:
    """Intentions that can still fire (for the workspace's intentions module)."""
    return tuple(it for it in intentions if not it.done)


__all__ = ["DEFAULT_PARAMS", "Firing", "Intention", "ProspectiveParams", "check", "make_intention", "pending"]
