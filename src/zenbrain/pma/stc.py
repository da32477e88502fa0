"""Synaptic Tagging and Capture (STC) rescue: strong neighbours save fading memories.

After Frey & Morris (1997): a weak memory sets a tag; if a strongly consolidated,
related memory is activated close enough in time, the weak one captures
plasticity and is kept. Here, vectorised over all memories:

* tagged: ``strength < tag_threshold`` (0.4), not rescued since its tag was set;
* donor: ``donor_score >= donor_threshold`` (0.7; defaults to the strength);
* related: cosine of the embeddings >= ``similarity_threshold`` (0.75), or a
  knowledge-graph edge between the two;
* in time: ``|activation_time[donor] - tag_time[tagged]| <= window_s`` (30 min);
* rescue: ``strength = min(1, strength + 0.3)`` and the decay rate is multiplied by
  0.5 (the caller doubles the memory's stability). Among several donors the most
  related one (highest cosine or edge weight) is named.

The authors tag by confidence < 0.4 and relate by a shared topic cluster created
within +-30 min, and their sleep stage only counts tags; this module acts on the
strength that drives forgetting and returns the rescues for the caller to apply.
Use the retrievability or TripleCopy composite as ``strength``, the time of the
last encoding or recall as ``tag_time`` and ``activation_time`` (MemoryItem
``last_access``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..params import Params, bounded


@dataclass(frozen=True)
class STCParams(Params):
    tag_threshold: float = bounded(0.4, 0.0, 1.0, "strength below which a memory is tagged as fading")
    donor_threshold: float = bounded(0.7, 0.0, 1.0, "donor score at or above which a memory can donate")
    window_s: float = bounded(1800.0, 0.0, 30 * 86400.0, "max |donor activation - tag time| (s)")
    similarity_threshold: float = bounded(0.75, -1.0, 1.0, "cosine at or above which two memories are related")
    strength_boost: float = bounded(0.3, 0.0, 1.0, "added to a rescued memory's strength")
    decay_multiplier: float = bounded(0.5, 0.0, 1.0, "factor on a rescued memory's decay rate")


DEFAULT_PARAMS = STCParams()


@dataclass(frozen=True)
class Rescue:
    index: int
    donor: int
    old_strength: float
    new_strength: float
    decay_multiplier: float
    relatedness: float  # cosine or edge weight, whichever is larger
    via: str  # "vector", "edge" or "both"
    dt_s: float  # donor activation - tag time

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class STCResult:
    rescues: tuple[Rescue, ...]
    strength: np.ndarray  # strengths after the rescues, input order
    decay_multiplier: np.ndarray  # 1.0 where nothing happened


def _vec(name: str, x: Any, n: int | None = None) -> np.ndarray:
    a = np.asarray(x, dtype=float).reshape(-1)
    if n is not None and a.shape[0] != n:
        raise ValidationError(f"{name} has length {a.shape[0]}, expected {n}")
    return a


def find_rescues(
    *,
    strength: Any,
    tag_time: Any,
    activation_time: Any = None,
    embeddings: Any = None,
    edges: Any = None,
    donor_score: Any = None,
    last_rescued: Any = None,
    eligible: Any = None,
    params: STCParams = DEFAULT_PARAMS,
) -> STCResult:
    """Find and apply STC rescues over ``n`` memories.

    ``edges``: (E, 2) index pairs or (E, 3) rows (i, j, weight); undirected.
    ``last_rescued``: when each memory was last rescued (NaN for never).
    ``eligible``: boolean mask of memories taking part (e.g. not archived).
    """
    s = np.clip(_vec("strength", strength), 0.0, 1.0)
    n = s.shape[0]
    tag = _vec("tag_time", tag_time, n)
    act = tag if activation_time is None else _vec("activation_time", activation_time, n)
    donor = s if donor_score is None else _vec("donor_score", donor_score, n)
    ok = np.ones(n, bool) if eligible is None else np.asarray(eligible, dtype=bool).reshape(-1)
    if ok.shape[0] != n:
        raise ValidationError(f"eligible has length {ok.shape[0]}, expected {n}")
    fresh_tag = np.ones(n, bool)
    if last_rescued is not None:
        lr = _vec("last_rescued", last_rescued, n)
        fresh_tag = np.isnan(lr) | (lr < tag)

    tagged = np.flatnonzero(ok & (s < params.tag_threshold) & fresh_tag)
    donors = np.flatnonzero(ok & (donor >= params.donor_threshold))
    new_s = s.copy()
    mult = np.ones(n)
    if tagged.size == 0 or donors.size == 0 or (embeddings is None and edges is None):
        return STCResult((), new_s, mult)

    dt = act[donors][None, :] - tag[tagged][:, None]
    in_time = np.abs(dt) <= params.window_s
    in_time &= tagged[:, None] != donors[None, :]

    sim = np.full((tagged.size, donors.size), -np.inf)
    by_vec = np.zeros_like(in_time)
    if embeddings is not None:
        e = np.asarray(embeddings, dtype=float)
        if e.ndim != 2 or e.shape[0] != n:
            raise ValidationError(f"embeddings must have shape (n, d) with n={n}, got {e.shape}")
        norm = np.linalg.norm(e, axis=1, keepdims=True)
        u = np.divide(e, norm, out=np.zeros_like(e), where=norm > 0)
        sim = u[tagged] @ u[donors].T
        by_vec = sim >= params.similarity_threshold

    edge_w = np.full((tagged.size, donors.size), -np.inf)
    if edges is not None:
        ed = np.asarray(edges, dtype=float)
        if ed.size:
            ed = ed.reshape(-1, ed.shape[-1])
            if ed.shape[1] not in (2, 3):
                raise ValidationError("edges must be (E, 2) pairs or (E, 3) rows with a weight")
            w = ed[:, 2] if ed.shape[1] == 3 else np.ones(ed.shape[0])
            t_pos = np.full(n, -1)
            t_pos[tagged] = np.arange(tagged.size)
            d_pos = np.full(n, -1)
            d_pos[donors] = np.arange(donors.size)
            a, b = ed[:, 0].astype(int), ed[:, 1].astype(int)
            if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
                raise ValidationError("edge index out of range")
            for x, y in ((a, b), (b, a)):  # undirected
                m = (t_pos[x] >= 0) & (d_pos[y] >= 0)
                np.maximum.at(edge_w, (t_pos[x[m]], d_pos[y[m]]), np.clip(w[m], 0.0, 1.0))
    by_edge = np.isfinite(edge_w)

    candidate = in_time & (by_vec | by_edge)
    related = np.maximum(np.where(by_vec, sim, -np.inf), edge_w)
    score = np.where(candidate, related, -np.inf)
    rescues: list[Rescue] = []
    for row in np.flatnonzero(candidate.any(axis=1)):
        col = int(np.argmax(score[row]))
        i, j = int(tagged[row]), int(donors[col])
        new_s[i] = min(1.0, s[i] + params.strength_boost)
        mult[i] = params.decay_multiplier
        via = "both" if by_vec[row, col] and by_edge[row, col] else ("vector" if by_vec[row, col] else "edge")
        rescues.append(Rescue(index=i, donor=j, old_strength=float(s[i]), new_strength=float(new_s[i]),
                              decay_multiplier=params.decay_multiplier, relatedness=float(related[row, col]),
                              via=via, dt_s=float(dt[row, col])))
    return STCResult(tuple(rescues), new_s, mult)


__all__ = ["DEFAULT_PARAMS", "Rescue", "STCParams", "STCResult", "find_rescues"]
