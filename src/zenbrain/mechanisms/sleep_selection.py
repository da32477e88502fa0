"""Simulation-Selection sleep: replay real and counterfactual episodes, keep what is worth it.

Stage 1, simulation (CA3): the candidate pool is every real episode plus counterfactual
episodes *generated* from surprising failures. A failed episode f (reward < failed_reward
and |delta_TD| > failed_td) is recombined with its most similar successful episode s
(reward >= success_reward, cosine >= min_similarity; without embeddings: its strongest
successful graph neighbour, similarity w / (w + 1)). With a mixing share mu ~ U(mix_low,
mix_high) = U(0.3, 0.7) drawn from ``rng`` (a genuine blend, never a copy of either parent)
the counterfactual "f, handled the way s was" gets

    vector   = normalise((1 - mu) e_f + mu e_s)                     (when embeddings are given)
    reward   = R_f + mu * sim * (R_s - R_f)                          (transfer discounted by similarity)
    |delta|  = reward - R_f                                          (surprise of the imagined outcome)
    novelty  = min(1, novelty_per_related * (related_f + related_s))
    edge set = the bridge f--s (existing edges between them, or one new edge)

Stage 2, selection (CA1): every candidate gets

    TAG = (1 - w_e) * (w_td |delta| + w_r R + w_n N) / (w_td + w_r + w_n) + w_e * E,   in [0, 1]

with novelty N = min(1, 0.2 * related count) and E = |valence| * arousal. Defaults are
the paper's (0.40, 0.35, 0.25, no emotion term); w_e = 0.15 gives the authors' code
default (0.34, 0.30, 0.21, 0.15) up to rounding. TAG >= theta_v (0.5): LTP; TAG <
ltd_threshold (default = theta_v, so nothing is skipped, as in the paper's pseudo-code):
LTD; in between: skipped. At most ``max_ltp`` candidates (highest TAG first) get LTP
when that cap is positive.

LTP / LTD act on a real episode's strength (+0.10 / -0.05, within [strength_floor,
strength_cap]) and on all its edges (+-, summed over both endpoints). A selected
counterfactual strengthens its bridge edge (or proposes a new one of weight Delta_LTP); an
unselected one is skipped, not depressed, since LTD would weaken a real edge on the
evidence of something that never happened. When edge variances are given, each edge's summed change
passes through the Two-Factor EWC constraint, so mature edges move less. Finally every
edge whose weight is below tau (0.05) is pruned.

``plan_sleep`` is pure: it returns every change as data (``SleepPlan``) for the caller to
apply in one transaction and to report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded
from . import two_factor


@dataclass(frozen=True)
class SleepParams(Params):
    w_td: float = bounded(0.40, 0.0, 1.0, "TAG weight alpha of |delta_TD|")
    w_reward: float = bounded(0.35, 0.0, 1.0, "TAG weight beta of the reward")
    w_novelty: float = bounded(0.25, 0.0, 1.0, "TAG weight gamma of novelty")
    w_emotion: float = bounded(0.0, 0.0, 0.99, "share of TAG given to emotion |valence|*arousal (code: 0.15)")
    novelty_per_related: float = bounded(0.2, 0.0, 1.0, "novelty per related id, capped at 1")
    select_threshold: float = bounded(0.5, 0.0, 1.0, "theta_v: TAG at or above which a candidate gets LTP")
    ltd_threshold: float = bounded(0.5, 0.0, 1.0, "TAG below which a candidate gets LTD (<= theta_v)")
    ltp_step: float = bounded(0.10, 0.0, 1.0, "Delta_LTP added to strengths and edge weights")
    ltd_step: float = bounded(0.05, 0.0, 1.0, "Delta_LTD subtracted from strengths and edge weights")
    prune_threshold: float = bounded(0.05, 0.0, 100.0, "tau: edges below this weight are pruned")
    strength_floor: float = bounded(0.01, 0.0, 1.0, "LTD never pushes a strength below this")
    strength_cap: float = bounded(1.0, 0.0, 1.0, "LTP never pushes a strength above this")
    max_weight: float = bounded(10.0, 0.01, 1000.0, "LTP never pushes an edge weight above this")
    max_ltp: int = bounded(0, 0, 10_000_000, "most candidates strengthened per sleep (0 = no cap)")
    failed_reward: float = bounded(0.3, 0.0, 1.0, "episodes with reward below this count as failed")
    failed_td: float = bounded(0.6, 0.0, 1.0, "failed episodes need |delta_TD| above this to be replayed")
    success_reward: float = bounded(0.7, 0.0, 1.0, "neighbours need reward at or above this")
    min_similarity: float = bounded(0.3, -1.0, 1.0, "neighbours need cosine at or above this")
    mix_low: float = bounded(0.3, 0.0, 1.0, "lower bound of the mixing share mu")
    mix_high: float = bounded(0.7, 0.0, 1.0, "upper bound of the mixing share mu")
    max_counterfactuals: int = bounded(50, 0, 100_000, "most counterfactuals generated per sleep")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.w_td + self.w_reward + self.w_novelty <= 0.0:
            raise ConfigError("SleepParams: w_td + w_reward + w_novelty must be positive")
        if self.ltd_threshold > self.select_threshold:
            raise ConfigError("SleepParams.ltd_threshold must not exceed select_threshold")
        if self.strength_floor > self.strength_cap:
            raise ConfigError("SleepParams.strength_floor must not exceed strength_cap")
        if self.mix_low > self.mix_high:
            raise ConfigError("SleepParams.mix_low must not exceed mix_high")
        for name in ("max_ltp", "max_counterfactuals"):
            v = getattr(self, name)
            if isinstance(v, float) and not v.is_integer():
                raise ConfigError(f"SleepParams.{name} must be a whole number")


DEFAULTS = SleepParams()

LTP = "ltp"  # a counterfactual's action when selected
SKIP = "skip"  # ... and when not (counterfactuals are never depressed)


# An edge's key: a tuple whose first two items are its endpoint ids.
K = TypeVar("K", bound=tuple[Any, ...])


@dataclass(frozen=True)
class Counterfactual(Generic[K]):
    """One generated candidate: failed episode ``source_id`` replayed with ``neighbour_id``'s outcome."""

    source_id: str
    neighbour_id: str
    mix: float
    similarity: float
    td_error: float
    reward: float
    novelty: float
    tag: float
    action: str  # "ltp" or "skip"
    bridge_edges: tuple[K, ...]  # existing edges between the two; () if a new one is proposed
    vector: np.ndarray | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class SleepPlan(Generic[K]):
    """Every change one sleep cycle proposes. Nothing has been applied."""

    strengths: dict[str, float]  # memory id -> new strength (changed memories only)
    edge_weights: dict[K, float]  # existing edge key -> new weight (changed, not pruned)
    new_edges: dict[tuple[str, str], float]  # (failed id, neighbour id) -> weight of a new bridge edge
    pruned_edges: list[K]  # existing edge keys to delete
    counterfactuals: list[Counterfactual[K]]
    tags: dict[str, float]  # real memory id -> TAG
    ltp_ids: list[str]
    ltd_ids: list[str]
    skipped_ids: list[str]

    def summary(self) -> dict[str, int]:
        return {
            "candidates": len(self.tags) + len(self.counterfactuals),
            "counterfactuals": len(self.counterfactuals),
            "ltp": len(self.ltp_ids) + sum(c.action == LTP for c in self.counterfactuals),
            "ltd": len(self.ltd_ids),
            "skipped": len(self.skipped_ids) + sum(c.action == SKIP for c in self.counterfactuals),
            "strengths_changed": len(self.strengths),
            "edges_changed": len(self.edge_weights),
            "edges_created": len(self.new_edges),
            "edges_pruned": len(self.pruned_edges),
        }


def novelty(related_counts: Any, *, params: SleepParams = DEFAULTS) -> np.ndarray:
    """N = min(1, novelty_per_related * count)."""
    return np.minimum(1.0, params.novelty_per_related * np.maximum(0.0, np.asarray(related_counts, dtype=float)))


def tag_score(
    *, td_error: Any, reward: Any, novelty: Any, emotion: Any = 0.0, params: SleepParams = DEFAULTS
) -> np.ndarray:
    """TAG in [0, 1] (inputs clipped to [0, 1]; |td_error| is used)."""
    td = np.clip(np.abs(np.asarray(td_error, dtype=float)), 0.0, 1.0)
    r = np.clip(np.asarray(reward, dtype=float), 0.0, 1.0)
    n = np.clip(np.asarray(novelty, dtype=float), 0.0, 1.0)
    e = np.clip(np.asarray(emotion, dtype=float), 0.0, 1.0)
    wsum = params.w_td + params.w_reward + params.w_novelty
    base = (params.w_td * td + params.w_reward * r + params.w_novelty * n) / wsum
    return np.clip((1.0 - params.w_emotion) * base + params.w_emotion * e, 0.0, 1.0)


def _vec(name: str, value: Any, n: int) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValidationError(f"{name} must have one value per memory ({n}), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{name} must be finite")
    return arr


def _actions(tags: np.ndarray, params: SleepParams) -> np.ndarray:
    """0 skip, 1 LTP, -1 LTD for the whole pool, honouring the LTP cap (highest TAG first)."""
    act = np.where(tags >= params.select_threshold, 1, np.where(tags < params.ltd_threshold, -1, 0))
    cap = int(params.max_ltp)
    if cap > 0:
        order = np.argsort(-tags, kind="stable")
        ltp_order = order[act[order] == 1]
        act[ltp_order[cap:]] = 0
    return act


def edge_end_positions(index: Mapping[Any, int], edges: Sequence[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Positions (``index``: id -> position) of each edge's first and second item; -1 for
    an id not in ``index``."""
    get, m = index.get, len(edges)
    src = np.fromiter((get(e[0], -1) for e in edges), np.int64, m)
    dst = np.fromiter((get(e[1], -1) for e in edges), np.int64, m)
    return src, dst


def end_counts(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Edge ends at each of ``n`` positions (a self-loop counts twice; -1 is skipped), as floats."""
    return (np.bincount(src[src >= 0], minlength=n) + np.bincount(dst[dst >= 0], minlength=n)).astype(np.float64)


def plan_sleep(
    *,
    memory_ids: Sequence[str],
    strengths: Any,
    td_errors: Any,
    rewards: Any,
    related_counts: Any,
    rng: np.random.Generator,
    emotion: Any = None,
    embeddings: Any = None,
    edges: Sequence[K] = (),
    edge_weights: Any = None,
    edge_variances: Any = None,
    params: SleepParams = DEFAULTS,
    two_factor_params: two_factor.TwoFactorParams = two_factor.DEFAULTS,
    edge_ends: tuple[Any, Any] | None = None,
) -> SleepPlan[K]:
    """Plan one Simulation-Selection sleep cycle over the given episodes and edges.

    Per memory (aligned with ``memory_ids``): ``strengths`` in [0, 1], ``td_errors``
    (|delta_TD| proxy, e.g. the prediction error seen at its last recall), ``rewards`` in
    [0, 1] (task outcome / usefulness), ``related_counts`` (ids it relates to), optional
    ``emotion`` (|valence| * arousal) and ``embeddings`` (n x d). ``edges`` are tuples whose
    first two items are the endpoint ids (the whole tuple is the edge's key in the plan),
    with ``edge_weights`` and optional ``edge_variances`` aligned to them. ``edge_ends``
    may give what ``edge_end_positions`` returns for them, when the caller has it already.
    """
    ids = list(memory_ids)
    n = len(ids)
    index = {mid: i for i, mid in enumerate(ids)}
    if len(index) != n:
        raise ValidationError("memory_ids must be unique")
    if not isinstance(rng, np.random.Generator):
        raise ValidationError("rng must be a numpy.random.Generator")
    s = _vec("strengths", strengths, n)
    td = np.clip(np.abs(_vec("td_errors", td_errors, n)), 0.0, 1.0)
    rw = np.clip(_vec("rewards", rewards, n), 0.0, 1.0)
    rel = np.maximum(0.0, _vec("related_counts", related_counts, n))
    emo = np.zeros(n) if emotion is None else np.clip(_vec("emotion", emotion, n), 0.0, 1.0)
    emb = None
    if embeddings is not None:
        emb = np.asarray(embeddings, dtype=float)
        if emb.ndim != 2 or emb.shape[0] != n or not np.all(np.isfinite(emb)):
            raise ValidationError(f"embeddings must be a finite ({n}, d) array")

    edge_keys = list(edges)
    m = len(edge_keys)
    if m and edge_weights is None:
        raise ValidationError("edge_weights are required when edges are given")
    w = np.zeros(0) if m == 0 else np.asarray(edge_weights, dtype=float).reshape(-1)
    if w.shape != (m,) or not np.all(np.isfinite(w)):
        raise ValidationError(f"edge_weights must be {m} finite numbers")
    var = None
    if edge_variances is not None:
        var = np.asarray(edge_variances, dtype=float).reshape(-1)
        if var.shape != (m,) or not np.all(np.isfinite(var)) or np.any(var <= 0):
            raise ValidationError(f"edge_variances must be {m} positive numbers")
    if len(set(edge_keys)) != m:
        raise ValidationError("edge keys must be unique")
    if edge_ends is None:
        src, dst = edge_end_positions(index, edge_keys)
    else:
        src, dst = (np.asarray(x, dtype=np.int64).reshape(-1) for x in edge_ends)
        if src.shape != (m,) or dst.shape != (m,):
            raise ValidationError(f"edge_ends must be two arrays of {m} positions")

    # ---- Stage 1: simulation. Real candidates, then generated counterfactuals.
    nov = novelty(rel, params=params)
    tags = tag_score(td_error=td, reward=rw, novelty=nov, emotion=emo, params=params)
    cf_rows = _generate_counterfactuals(
        ids=ids, td=td, rw=rw, rel=rel, emo=emo, emb=emb, keys=edge_keys, w=w, src=src, dst=dst,
        rng=rng, params=params,
    )
    cf_tags = np.array([row["tag"] for row in cf_rows], dtype=float)

    # ---- Stage 2: selection over the whole pool.
    act = _actions(np.concatenate([tags, cf_tags]), params)
    act_real, act_cf = act[:n], act[n:]

    # Strengths: LTP up to the cap, LTD down to the floor; never moves a value across a bound.
    node_delta = np.where(act_real == 1, params.ltp_step, np.where(act_real == -1, -params.ltd_step, 0.0))
    new_s = np.where(
        node_delta > 0,
        np.minimum(np.maximum(s, params.strength_cap), s + node_delta),
        np.where(node_delta < 0, np.maximum(np.minimum(s, params.strength_floor), s + node_delta), s),
    )

    # Edges: sum the deltas of both endpoints, then the counterfactual bridges.
    edge_delta = np.zeros(m)
    if m and n:
        padded = np.append(node_delta, 0.0)  # index -1 (endpoint not among the episodes) reads 0
        edge_delta += padded[src] + padded[dst]
    new_edges: dict[tuple[str, str], float] = {}
    counterfactuals: list[Counterfactual[K]] = []
    for row, a in zip(cf_rows, act_cf):
        # An unselected counterfactual is skipped, never depressed: LTD would weaken a real edge
        # on the evidence of something that did not happen.
        action = LTP if a == 1 else SKIP
        bridge = row["bridge"]
        if action == LTP and bridge:
            edge_delta[list(bridge)] += params.ltp_step
        elif action == LTP and params.ltp_step >= params.prune_threshold and params.ltp_step > 0:
            new_edges[(row["source_id"], row["neighbour_id"])] = min(params.ltp_step, params.max_weight)
        counterfactuals.append(
            Counterfactual(
                source_id=row["source_id"], neighbour_id=row["neighbour_id"], mix=row["mix"],
                similarity=row["similarity"], td_error=row["td"], reward=row["reward"], novelty=row["novelty"],
                tag=row["tag"], action=action, bridge_edges=tuple(edge_keys[j] for j in bridge),
                vector=row["vector"],
            )
        )
    if var is not None and m:
        edge_delta = np.asarray(two_factor.constrain_change(var, edge_delta, params=two_factor_params))
    new_w = np.where(
        edge_delta > 0, np.minimum(np.maximum(w, params.max_weight), w + edge_delta), np.maximum(0.0, w + edge_delta)
    )
    new_w = np.where(edge_delta == 0, w, new_w)
    pruned = new_w < params.prune_threshold

    # Python floats and indices through tolist(): the same values as float() per element, in bulk.
    new_s_l, new_w_l = new_s.tolist(), new_w.tolist()
    return SleepPlan(
        strengths={ids[i]: new_s_l[i] for i in np.flatnonzero(new_s != s).tolist()},
        edge_weights={edge_keys[j]: new_w_l[j] for j in np.flatnonzero((new_w != w) & ~pruned).tolist()},
        new_edges=new_edges,
        pruned_edges=[edge_keys[j] for j in np.flatnonzero(pruned).tolist()],
        counterfactuals=counterfactuals,
        tags=dict(zip(ids, tags.tolist())),
        ltp_ids=[ids[i] for i in np.flatnonzero(act_real == 1).tolist()],
        ltd_ids=[ids[i] for i in np.flatnonzero(act_real == -1).tolist()],
        skipped_ids=[ids[i] for i in np.flatnonzero(act_real == 0).tolist()],
    )


def _generate_counterfactuals(
    *,
    ids: list[str],
    td: np.ndarray,
    rw: np.ndarray,
    rel: np.ndarray,
    emo: np.ndarray,
    emb: np.ndarray | None,
    keys: Sequence[tuple[Any, ...]],
    w: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    rng: np.random.Generator,
    params: SleepParams,
) -> list[dict[str, Any]]:
    n = len(ids)
    failed = np.flatnonzero((rw < params.failed_reward) & (td > params.failed_td))
    if failed.size == 0 or params.max_counterfactuals == 0:
        return []
    # The most surprising failures first (stable on index), so the cap keeps the most informative.
    failed = failed[np.argsort(-td[failed], kind="stable")]
    success = rw >= params.success_reward

    # Similarity of each failed episode to every episode.
    if emb is not None:
        norms = np.linalg.norm(emb, axis=1)
        unit = np.divide(emb, norms[:, None], out=np.zeros_like(emb), where=norms[:, None] > 1e-12)
        sim = unit[failed] @ unit.T
        admissible = success[None, :] & (sim >= params.min_similarity)
    else:
        sim = np.zeros((failed.size, n))
        row_of = {int(f): r for r, f in enumerate(failed)}
        for j in range(len(keys)):
            a, b = int(src[j]), int(dst[j])
            if a < 0 or b < 0 or a == b:
                continue
            graph_sim = max(0.0, float(w[j])) / (max(0.0, float(w[j])) + 1.0)
            for x, y in ((a, b), (b, a)):
                if x in row_of:
                    sim[row_of[x], y] = max(sim[row_of[x], y], graph_sim)
        admissible = success[None, :] & (sim > 0.0) & (sim >= params.min_similarity)
    admissible[np.arange(failed.size), failed] = False

    pair_edges: dict[frozenset[int], list[int]] = {}
    for j in range(len(keys)):
        if src[j] >= 0 and dst[j] >= 0 and src[j] != dst[j]:
            pair_edges.setdefault(frozenset((int(src[j]), int(dst[j]))), []).append(j)

    rows: list[dict[str, Any]] = []
    for r, f in enumerate(failed):
        if len(rows) >= params.max_counterfactuals:
            break
        if not admissible[r].any():
            continue
        score = np.where(admissible[r], sim[r], -np.inf)
        nb = int(np.argmax(score))  # first index wins ties: deterministic
        similarity = float(max(0.0, sim[r, nb]))
        mix = float(rng.uniform(params.mix_low, params.mix_high))
        reward = float(rw[f] + mix * similarity * (rw[nb] - rw[f]))
        td_cf = abs(reward - float(rw[f]))
        nov = float(min(1.0, params.novelty_per_related * (rel[f] + rel[nb])))
        tag = float(tag_score(td_error=td_cf, reward=reward, novelty=nov, emotion=emo[f], params=params))
        vector = None
        if emb is not None:
            v = (1.0 - mix) * emb[f] + mix * emb[nb]
            nv = np.linalg.norm(v)
            vector = v / nv if nv > 1e-12 else v
        rows.append(
            {
                "source_id": ids[f], "neighbour_id": ids[nb], "mix": mix, "similarity": similarity,
                "td": td_cf, "reward": reward, "novelty": nov, "tag": tag, "vector": vector,
                "bridge": pair_edges.get(frozenset((int(f), nb)), []),
            }
        )
    return rows


__all__ = [
    "LTP",
    "SKIP",
    "Counterfactual",
    "SleepParams",
    "SleepPlan",
    "edge_end_positions",
    "end_counts",
    "novelty",
    "plan_sleep",
    "tag_score",
]
