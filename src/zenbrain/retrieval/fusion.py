"""Fusing dense and lexical scores into one ranking, and named recipes of how to do it.

Every function takes numpy arrays aligned over one candidate set (the union of the dense
top-N and the BM25 top-N of a query) and returns an array in the same order; none of them
touches storage. A :class:`FusionRecipe` is frozen data naming one complete configuration
(how each signal is normalised, their weights, neighbour expansion, speaker preference,
and which index text the turns were stored with); :data:`RECIPES` holds the named ones and
:func:`get_recipe` looks one up.

Normalisations (each signal over the candidates it returned; lexical "no match" is BM25 0):

* ``max`` -- dense as is (clipped at 0), BM25 / best BM25. The best keyword match gets a
  full bonus of ``lexical_weight``, larger than the whole spread of dense cosine, so the
  keyword signal alone decides who ranks first.
* ``minmax`` -- relative score fusion: each list mapped to [0, 1] by its own min and max;
  no match = 0. Both signals then span the same range.
* ``dbsf`` -- distribution-based score fusion: each list mapped by mean +- 3 std to about
  [0, 1]; one outlying score does not squash the rest as it does under min-max.
* ``zscore`` -- (s - mean) / std of each list; no match = the z of a BM25 score of 0.
* ``rrf`` -- reciprocal rank fusion, sum of 1 / (rrf_k + rank); scores are ignored.

After fusion, two optional steps work on the fused scores shifted to start at 0 (so
they do not depend on the scale or sign of the fusion):

* neighbour expansion: a turn gains ``neighbour_weight`` x the best shifted score among its
  adjacent turns in the same session (``radius`` turns each side). A short reply whose
  question turn matches strongly rises next to it.
* speaker preference: turns by a speaker the query names gain ``speaker_bonus`` x the
  spread of the fused scores; the other speaker's turns stay in the ranking.
* time preference: turns whose time (when said, or a time they mention) meets the window
  the query names gain ``time_bonus`` x the spread.

:func:`spread_exchanges` re-ranks final scores for a question whose answer gathers several
turns: neighbour expansion lifts a strong turn's neighbours with it, so one exchange can
fill the top places; each turn next to one already placed counts ``1 - penalty`` as much.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from ..errors import ConfigError, ValidationError

__all__ = [
    "DEFAULT_RECIPE",
    "DENSE_VIEWS",
    "NORMALIZATIONS",
    "RECIPES",
    "FusionRecipe",
    "boost",
    "candidate_union",
    "expand_to_neighbours",
    "fuse",
    "get_recipe",
    "neighbour_index",
    "nonnegative",
    "normalize",
    "rank_pool",
    "rrf_scores",
    "spread_exchanges",
]

NORMALIZATIONS = ("max", "ratio", "minmax", "dbsf", "zscore", "rrf")
DENSE_VIEWS = ("own", "context", "max", "mean")
_EPS = 1e-12


def _f64(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).reshape(-1)


def normalize(scores: np.ndarray, method: str, *, present: np.ndarray | None = None) -> np.ndarray:
    """``scores`` mapped by ``method`` using the statistics of the entries in ``present``
    (all if None); entries not present get the method's "no match" value.

    ``max``: s / max (no match 0). ``ratio``: max(s, 0) / max, a signal relative to its
    best candidate without stretching small gaps to the whole range. ``minmax``: (s - min) / (max - min), no match 0.
    ``dbsf``: (s - (mean - 3 std)) / (6 std), no match 0. ``zscore``: (s - mean) / std,
    no match the z of 0. A list whose scores are all equal maps them to 1 (z: 0).
    """
    s = _f64(scores)
    mask = np.ones(s.shape, dtype=bool) if present is None else np.asarray(present, dtype=bool).reshape(-1)
    if mask.shape != s.shape:
        raise ValidationError("present must have the same length as scores")
    out = np.zeros_like(s)
    if not mask.any():
        return out
    vals = s[mask]
    if method in ("max", "ratio"):
        if method == "ratio":
            vals = np.maximum(vals, 0.0)
        top = vals.max()
        out[mask] = vals / top if top > _EPS else 0.0
        return out
    if method == "minmax":
        lo, hi = vals.min(), vals.max()
        out[mask] = (vals - lo) / (hi - lo) if hi - lo > _EPS else 1.0
        return out
    if method == "dbsf":
        mu, sd = vals.mean(), vals.std()
        out[mask] = (vals - (mu - 3 * sd)) / (6 * sd) if sd > _EPS else 1.0
        return out
    if method == "zscore":
        mu, sd = vals.mean(), vals.std()
        if sd <= _EPS:
            out[mask] = 0.0
            out[~mask] = -1.0
            return out
        return (np.where(mask, s, 0.0) - mu) / sd
    raise ConfigError(f"unknown normalisation {method!r}; use one of {', '.join(NORMALIZATIONS)}")


def rrf_scores(rankings: Sequence[np.ndarray], n: int, k: float = 60.0) -> np.ndarray:
    """Reciprocal rank fusion over ``n`` candidates: each ranking is an array of candidate
    indices, best first; a candidate gains 1 / (k + rank) (rank from 1) from each list."""
    out = np.zeros(n, dtype=np.float64)
    for ranking in rankings:
        idx = np.asarray(ranking, dtype=np.int64)
        out[idx] += 1.0 / (k + np.arange(1, idx.size + 1))
    return out


def _order(scores: np.ndarray) -> np.ndarray:
    # Stable: equal scores keep candidate order.
    return np.argsort(-scores, kind="stable")


@dataclass(frozen=True)
class FusionRecipe:
    """One complete way of ranking turns from a dense and a lexical signal.

    ``index_window``: predecessors joined to each turn in its *index* text at ingestion
    (:mod:`zenbrain.retrieval.turn_context`; 0 = the turn alone). ``dense_view``: which
    vector scores a turn: ``"own"`` (its text), ``"context"`` (its index text), ``"max"``
    (the better of the two) or ``"mean"`` (the normalised mean of both vectors). ``speaker_in_text``: whether index texts keep the "Name:" prefix.
    """

    name: str
    normalization: str = "minmax"
    lexical_normalization: str | None = None  # None: the same as ``normalization``
    dense_weight: float = 0.5
    lexical_weight: float = 0.5
    rrf_k: float = 60.0
    dense_candidates: int = 50
    lexical_candidates: int = 50
    index_window: int = 0
    dense_view: str = "own"
    speaker_in_text: bool = False
    neighbour_weight: float = 0.0
    neighbour_radius: int = 1
    speaker_bonus: float = 0.0
    time_bonus: float = 0.0
    description: str = ""

    def __post_init__(self) -> None:
        if self.normalization not in NORMALIZATIONS:
            raise ConfigError(f"unknown normalisation {self.normalization!r}; use one of {', '.join(NORMALIZATIONS)}")
        if self.lexical_normalization not in (None, *NORMALIZATIONS) or (
                self.lexical_normalization is not None and "rrf" in (self.normalization, self.lexical_normalization)
                and self.lexical_normalization != self.normalization):
            raise ConfigError(f"lexical_normalization must be one of {', '.join(NORMALIZATIONS)} (rrf only with rrf), "
                              f"got {self.lexical_normalization!r}")
        if self.dense_view not in DENSE_VIEWS:
            raise ConfigError(f"dense_view must be one of {', '.join(DENSE_VIEWS)}, got {self.dense_view!r}")
        for f in ("dense_weight", "lexical_weight", "neighbour_weight", "speaker_bonus", "time_bonus"):
            v = getattr(self, f)
            if not (0.0 <= v <= 10.0):
                raise ConfigError(f"{f} must lie in [0, 10], got {v}")
        for f in ("dense_candidates", "lexical_candidates"):
            if getattr(self, f) < 1:
                raise ConfigError(f"{f} must be at least 1")
        if self.index_window < 0 or self.neighbour_radius < 1 or self.rrf_k <= 0:
            raise ConfigError("index_window must be >= 0, neighbour_radius >= 1 and rrf_k > 0")

    def with_(self, **changes: Any) -> FusionRecipe:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def candidate_union(dense: np.ndarray, lexical: np.ndarray, recipe: FusionRecipe) -> np.ndarray:
    """Indices (into the full arrays) of the dense top-N and the BM25 top-N (matches only),
    dense candidates first: the candidate set a recall with this recipe scores."""
    d = _f64(dense)
    lx = _f64(lexical)
    nd = min(recipe.dense_candidates, d.size)
    top_d = _order(d)[:nd]
    top_l = [i for i in _order(lx)[: recipe.lexical_candidates] if lx[i] > 0]
    return np.asarray(list(dict.fromkeys([*top_d.tolist(), *top_l])), dtype=np.int64)


def fuse(dense: np.ndarray, lexical: np.ndarray, recipe: FusionRecipe,
         lexical_factor: np.ndarray | None = None) -> np.ndarray:
    """Fused score of every candidate (higher is better) from its dense similarity and its
    BM25 score (0 = no keyword match), both aligned over the same candidates.
    ``lexical_factor``: per candidate, the share of its normalised lexical evidence that
    counts (applied after normalisation, so discounting one match leaves the others' scale)."""
    d = _f64(dense)
    lx = _f64(lexical)
    if d.shape != lx.shape or (lexical_factor is not None and np.shape(lexical_factor) != lx.shape):
        raise ValidationError("dense and lexical scores must be aligned over the same candidates")
    factor = 1.0 if lexical_factor is None else _f64(lexical_factor)
    if d.size == 0:
        return d
    matched = lx > 0
    method = recipe.normalization
    if method == "rrf":
        lex_rank = [i for i in _order(lx) if matched[i]]
        return recipe.dense_weight * rrf_scores([_order(d)], d.size, recipe.rrf_k) + recipe.lexical_weight * factor * \
            rrf_scores([np.asarray(lex_rank, dtype=np.int64)], d.size, recipe.rrf_k)
    if method == "max":
        dn = np.maximum(d, 0.0)
    else:
        dn = normalize(d, method)
    ln = normalize(lx, recipe.lexical_normalization or method, present=matched) * factor
    return recipe.dense_weight * dn + recipe.lexical_weight * ln


def neighbour_index(sessions: Sequence[Any], positions: Sequence[int], radius: int = 1) -> np.ndarray:
    """For each candidate, the candidate indices of its turns within ``radius`` positions in
    the same session (-1 where that turn is not a candidate): shape (n, 2 * radius)."""
    n = len(positions)
    where = {(s, int(p)): i for i, (s, p) in enumerate(zip(sessions, positions))}
    offsets = [o for o in range(-radius, radius + 1) if o != 0]
    out = np.full((n, len(offsets)), -1, dtype=np.int64)
    for i, (s, p) in enumerate(zip(sessions, positions)):
        for j, o in enumerate(offsets):
            out[i, j] = where.get((s, int(p) + o), -1)
    return out


def nonnegative(s: np.ndarray) -> np.ndarray:
    """Scores shifted up to start at 0 when some are negative; non-negative scores as they
    are (a later factor multiplies them, so none should fall to 0 that was above it)."""
    return s - min(0.0, float(s.min())) if s.size else s


def expand_to_neighbours(scores: np.ndarray, neighbours: np.ndarray, weight: float) -> np.ndarray:
    """Scores (made non-negative), each raised by ``weight`` x the best score of its
    neighbours (``neighbours`` as from :func:`neighbour_index`; -1 = none)."""
    s = _f64(scores)
    if s.size == 0 or weight == 0:
        return nonnegative(s)
    t = nonnegative(s)
    nb = np.asarray(neighbours, dtype=np.int64)
    padded = np.append(t, 0.0)  # index -1 reads the appended 0
    best = padded[nb].max(axis=1) if nb.shape[1] else np.zeros_like(t)
    return t + weight * best


def boost(scores: np.ndarray, where: np.ndarray, bonus: float) -> np.ndarray:
    """Scores (made non-negative); candidates where ``where`` is true gain ``bonus`` x the
    spread of the scores (x 1 when they all tie: then the preference alone decides). A
    preference, not a filter: a clearly better candidate outside stays ahead. Used for the
    speakers a query names and for turns inside its time window."""
    s = _f64(scores)
    if s.size == 0:
        return s
    mask = np.asarray(where, dtype=np.float64).reshape(-1)
    if mask.shape != s.shape:
        raise ValidationError("the boost mask must have one entry per candidate")
    t = nonnegative(s)
    spread = float(t.max() - t.min())
    return t + bonus * (spread if spread > 0 else 1.0) * mask


def spread_exchanges(scores: np.ndarray, sessions: Sequence[Any], positions: Sequence[int], penalty: float,
                     radius: int = 1, places: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A greedy re-ranking that spreads the top places over exchanges: take the best
    candidate, multiply the score of every candidate within ``radius`` turns of it in its
    session by ``1 - penalty``, take the best again, for ``places`` places (all when None);
    the rest follow by their lowered scores. ``scores`` best first or not; ties go to the
    earlier candidate. A candidate without a session or position (-1) has no neighbours.
    Returns (candidate indices in the new order, the lowered scores in candidate order)."""
    s = _f64(scores).copy()
    n = s.size
    if n == 0 or penalty <= 0:
        return _order(s), s
    pos = np.asarray(positions, dtype=np.int64).reshape(-1)
    codes = {key: i for i, key in enumerate(dict.fromkeys(sessions))}
    sess = np.array([codes[x] if x is not None else -1 for x in sessions], dtype=np.int64)
    placed = np.zeros(n, dtype=bool)
    order: list[int] = []
    keep = 1.0 - penalty
    for _ in range(n if places is None else min(places, n)):
        i = int(np.argmax(np.where(placed, -np.inf, s)))
        placed[i] = True
        order.append(i)
        if sess[i] >= 0 and pos[i] >= 0:
            near = ~placed & (sess == sess[i]) & (pos >= 0) & (np.abs(pos - pos[i]) <= radius)
            s[near] *= keep
    rest = np.flatnonzero(~placed)
    order.extend(rest[np.argsort(-s[rest], kind="stable")].tolist())
    return np.asarray(order, dtype=np.int64), s


def rank_pool(
    recipe: FusionRecipe,
    dense: np.ndarray,
    lexical: np.ndarray,
    *,
    sessions: Sequence[Any] | None = None,
    positions: Sequence[int] | None = None,
    speaker_named: np.ndarray | None = None,
    in_window: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The whole ranking step of a recipe over one candidate pool: fusion, then neighbour
    expansion (needs ``sessions`` and ``positions``; the pool should hold the candidates'
    neighbours too), then the speaker and time preferences (masks: turns by a speaker the
    query names; turns whose times meet the query's window; None = no such preference).
    Returns (pool indices best first, final scores in pool order)."""
    scores = fuse(dense, lexical, recipe)
    if recipe.neighbour_weight > 0 and sessions is not None and positions is not None:
        nb = neighbour_index(sessions, positions, recipe.neighbour_radius)
        scores = expand_to_neighbours(scores, nb, recipe.neighbour_weight)
    if recipe.speaker_bonus > 0 and speaker_named is not None and np.any(speaker_named):
        scores = boost(scores, speaker_named, recipe.speaker_bonus)
    if recipe.time_bonus > 0 and in_window is not None and np.any(in_window):
        scores = boost(scores, in_window, recipe.time_bonus)
    return np.argsort(-scores, kind="stable"), scores


# --------------------------------------------------------------------------- recipes

TODAY = FusionRecipe(
    "today",
    normalization="max",
    dense_weight=0.5,
    lexical_weight=0.5,
    speaker_in_text=True,
    description="the hybrid similarity recall used so far: 0.5 cosine + 0.5 BM25 / best BM25, speaker in the text",
)

RECIPES: dict[str, FusionRecipe] = {
    r.name: r
    for r in (
        TODAY,
        FusionRecipe("rrf", normalization="rrf", description="reciprocal rank fusion (k = 60) of the two lists"),
        FusionRecipe("minmax", normalization="minmax", description="relative score fusion, equal weights"),
        FusionRecipe("dbsf", normalization="dbsf", description="distribution-based score fusion, equal weights"),
        FusionRecipe("zscore", normalization="zscore", description="z-scores of both lists, equal weights"),
        FusionRecipe(
            "conversation",
            # Each signal relative to its best candidate: the best meaning match and the best
            # keyword match both count fully, and a small gap stays small (min-max stretches
            # any gap, between two candidates too, to the whole range, so neither the
            # mechanisms' factors nor a preference could ever close it). BM25's zero stays
            # "no shared word". LoCoMo dev R@5: 0.717 (min-max 0.719, dense unscaled 0.710).
            normalization="ratio",
            lexical_normalization="max",
            index_window=1,
            dense_view="mean",
            neighbour_weight=0.5,
            # A question naming a person asks mostly about what that person said: on LoCoMo
            # dev 94-100% of the evidence turns of the questions naming one speaker are
            # theirs (adversarial questions, which ask one person about the other's words,
            # 25%), against 63% of the top five with 0.1. 0.2 gains static R@5 0.004
            # (multi-hop, open-domain) but costs adversarial 0.055 and the longitudinal
            # benchmark 0.007 (docs/retrieval.md), so 0.1 stays.
            speaker_bonus=0.1,
            # A question that names a time: a memory of that time gains the whole spread of
            # relevance, so it ranks with the best match outside the window (LoCoMo dev R@5
            # 0.719 with 1.0, 0.718 with 0.5, 0.710 with 0.25).
            time_bonus=1.0,
            description="turns indexed with the turn before them (BM25 text and a mean of the two vectors), "
            "dense and BM25 scores relative to their best candidate, neighbour expansion, "
            "speaker and time preference",
        ),
    )
}

DEFAULT_RECIPE = "conversation"


def get_recipe(name: str) -> FusionRecipe:
    """The recipe registered under ``name``."""
    try:
        return RECIPES[name]
    except KeyError:
        raise ConfigError(f"unknown fusion recipe {name!r}; known: {', '.join(sorted(RECIPES))}") from None
