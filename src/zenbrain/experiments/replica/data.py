"""Synthetic datasets of the paper's simulation protocol, draw for draw.

Part of the replica of *the paper's simulation protocol, not zenbrain*.

Three generators, one per experiment family, each consuming a :class:`Stream` in the
exact order of the protocol (REFERENCE.md 3.2, 3.6, 3.7):

* :func:`ablation_dataset` - all fact vectors first, then all queries; queries pick
  1-3 *distinct* relevant facts (insertion order kept) and add U(-0.1, 0.1) noise.
* :func:`cascade_facts` / :func:`cascade_queries` - per fact: vector, arousal (two
  draws), valence, importance; queries pick relevant facts *with replacement*.
* :func:`competitive_dataset` - 100 facts in 5 categories (``i % 5``), per fact:
  vector, importance, arousal (two draws), valence; 50 queries with 1/2/3 relevant
  facts drawn with replacement from the query's category, noise U(-0.15, 0.15).

Float evaluation order follows the protocol: norms are left-to-right sums of squares,
query vectors are ``sum / n_rel + (u - 0.5) * width``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .prng import Stream

__all__ = [
    "COMPETITIVE_CATEGORIES",
    "COMPETITIVE_DIFFICULTIES",
    "EMB_DIM",
    "AblationDataset",
    "CascadeFacts",
    "CompetitiveDataset",
    "ablation_dataset",
    "cascade_facts",
    "cascade_queries",
    "competitive_dataset",
    "cosine_matrix",
    "row_norms",
]

EMB_DIM = 32

COMPETITIVE_CATEGORIES = ("temporal", "factual", "preference", "procedural", "cross-context")
COMPETITIVE_DIFFICULTIES = ("easy", "medium", "hard")


def row_norms(mat: np.ndarray) -> np.ndarray:
    """Euclidean norm of each row, summing squares left to right (column by column)."""
    acc = np.zeros(mat.shape[0], dtype=np.float64)
    for j in range(mat.shape[1]):
        col = mat[:, j]
        acc = acc + col * col
    return np.sqrt(acc)


def _normalise_rows(mat: np.ndarray, zero_means_one: bool = True) -> np.ndarray:
    norms = row_norms(mat)
    if zero_means_one:
        norms = np.where(norms == 0, 1.0, norms)
        return mat / norms[:, None]
    safe = np.where(norms == 0, 1.0, norms)
    return np.where((norms == 0)[:, None], mat, mat / safe[:, None])


def _normalise_vector(vec: list[float]) -> list[float]:
    acc = 0.0
    for x in vec:
        acc += x * x
    norm = math.sqrt(acc)
    if norm == 0:
        return vec
    return [x / norm for x in vec]


def cosine_matrix(queries: np.ndarray, facts: np.ndarray) -> np.ndarray:
    """``cos(q, e)`` for every query row and fact row, evaluated as the protocol does.

    The protocol accumulates ``dot``, ``|q|^2`` and ``|e|^2`` left to right over the
    dimensions and divides ``dot`` by ``sqrt(|q|^2) * sqrt(|e|^2)`` (0 if that is 0).
    """
    n_q, dim = queries.shape
    dot = np.zeros((n_q, facts.shape[0]), dtype=np.float64)
    for j in range(dim):
        dot = dot + queries[:, j][:, None] * facts[:, j][None, :]
    denom = row_norms(queries)[:, None] * row_norms(facts)[None, :]
    safe = np.where(denom == 0, 1.0, denom)
    return np.where(denom == 0, 0.0, dot / safe)


# --------------------------------------------------------------------------- ablation


@dataclass(frozen=True)
class AblationDataset:
    fact_emb: np.ndarray  # (F, 32), unit rows
    query_emb: np.ndarray  # (Q, 32), unit rows
    relevant: tuple[tuple[int, ...], ...]  # distinct fact indices, insertion order
    draws_used: int  # stream position after the dataset


def ablation_dataset(seed: int, n_facts: int, n_queries: int, dim: int = EMB_DIM) -> AblationDataset:
    stream = Stream(seed)
    raw = stream.take(n_facts * dim).reshape(n_facts, dim) * 2 - 1
    facts = _normalise_rows(raw)
    fact_rows = facts.tolist()
    q_vecs: list[list[float]] = []
    relevant: list[tuple[int, ...]] = []
    for _ in range(n_queries):
        n_rel = 1 + math.floor(stream.next() * 3)
        chosen: dict[int, None] = {}
        while len(chosen) < n_rel:
            chosen[math.floor(stream.next() * n_facts)] = None
        idx = tuple(chosen)
        vec = [0.0] * dim
        for i in idx:
            row = fact_rows[i]
            for j in range(dim):
                vec[j] += row[j]
        noise = stream.take(dim).tolist()
        vec = [vec[j] / n_rel + (noise[j] - 0.5) * 0.2 for j in range(dim)]
        acc = 0.0
        for x in vec:
            acc += x * x
        norm = math.sqrt(acc) or 1.0
        q_vecs.append([x / norm for x in vec])
        relevant.append(idx)
    return AblationDataset(
        fact_emb=facts,
        query_emb=np.asarray(q_vecs, dtype=np.float64),
        relevant=tuple(relevant),
        draws_used=stream.position,
    )


# ---------------------------------------------------------------------------- cascade


@dataclass(frozen=True)
class CascadeFacts:
    emb: np.ndarray  # (F, 32), unit rows
    arousal: np.ndarray
    valence: np.ndarray
    importance: np.ndarray


def cascade_facts(stream: Stream, n: int, dim: int = EMB_DIM) -> CascadeFacts:
    """``generateFacts`` of the integration cascade: 36 draws per fact, fact by fact."""
    per = dim + 4
    block = stream.take(n * per).reshape(n, per)
    emb = _normalise_rows(block[:, :dim] * 2 - 1, zero_means_one=False)
    gate, a_val = block[:, dim], block[:, dim + 1]
    arousal = np.where(gate < 0.2, 0.6 + a_val * 0.4, a_val * 0.3)
    valence = (block[:, dim + 2] - 0.5) * 2
    importance = 0.3 + block[:, dim + 3] * 0.7
    return CascadeFacts(emb=emb, arousal=arousal, valence=valence, importance=importance)


def cascade_queries(stream: Stream, n: int, facts: CascadeFacts) -> list[tuple[np.ndarray, tuple[int, ...]]]:
    """``generateQueries`` of the cascade: relevant indices drawn with replacement."""
    n_facts, dim = facts.emb.shape
    rows = facts.emb.tolist()
    out: list[tuple[np.ndarray, tuple[int, ...]]] = []
    for _ in range(n):
        n_rel = 1 + math.floor(stream.next() * 3)
        idx = tuple(math.floor(stream.next() * n_facts) for _ in range(n_rel))
        vec = [0.0] * dim
        for i in idx:
            for j in range(dim):
                vec[j] += rows[i][j]
        noise = stream.take(dim).tolist()
        denom = len(idx) or 1
        vec = [vec[j] / denom + (noise[j] - 0.5) * 0.2 for j in range(dim)]
        out.append((np.asarray(_normalise_vector(vec)), idx))
    return out


# ------------------------------------------------------------------------ competitive


@dataclass(frozen=True)
class CompetitiveDataset:
    emb: np.ndarray  # (100, 32)
    category: tuple[int, ...]
    importance: np.ndarray
    arousal: np.ndarray
    valence: np.ndarray
    query_emb: np.ndarray  # (50, 32)
    relevant: tuple[tuple[int, ...], ...]  # with possible repeats, draw order
    query_category: tuple[int, ...]
    query_difficulty: tuple[int, ...]


def competitive_dataset(stream: Stream, n_facts: int = 100, n_queries: int = 50, dim: int = EMB_DIM) -> CompetitiveDataset:
    per = dim + 4
    block = stream.take(n_facts * per).reshape(n_facts, per)
    emb = _normalise_rows(block[:, :dim] * 2 - 1, zero_means_one=False)
    importance = 0.3 + block[:, dim] * 0.7
    arousal = np.where(block[:, dim + 1] < 0.2, 0.6 + block[:, dim + 2] * 0.4, block[:, dim + 2] * 0.3)
    valence = (block[:, dim + 3] - 0.5) * 2
    n_cat = len(COMPETITIVE_CATEGORIES)
    category = tuple(i % n_cat for i in range(n_facts))
    rows = emb.tolist()
    q_vecs: list[list[float]] = []
    relevant: list[tuple[int, ...]] = []
    q_cat: list[int] = []
    q_diff: list[int] = []
    for i in range(n_queries):
        difficulty = i % len(COMPETITIVE_DIFFICULTIES)
        n_rel = difficulty + 1
        cat = i % n_cat
        same = [k for k in range(n_facts) if category[k] == cat]
        idx: list[int] = []
        for j in range(n_rel):
            if j >= len(same):
                break
            idx.append(same[math.floor(stream.next() * len(same))])
        vec = [0.0] * dim
        for k in idx:
            for j in range(dim):
                vec[j] += rows[k][j]
        noise = stream.take(dim).tolist()
        denom = len(idx) or 1
        vec = [vec[j] / denom + (noise[j] - 0.5) * 0.3 for j in range(dim)]
        q_vecs.append(_normalise_vector(vec))
        relevant.append(tuple(idx))
        q_cat.append(cat)
        q_diff.append(difficulty)
    return CompetitiveDataset(
        emb=emb,
        category=category,
        importance=importance,
        arousal=arousal,
        valence=valence,
        query_emb=np.asarray(q_vecs, dtype=np.float64),
        relevant=tuple(relevant),
        query_category=tuple(q_cat),
        query_difficulty=tuple(q_diff),
    )
