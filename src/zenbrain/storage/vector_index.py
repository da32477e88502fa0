"""Exact in-memory vector index, one per partition, derived from the database.

Chosen by measurement: numpy brute force over 384-float vectors takes ~4 ms at 100k
rows and is exact, and filters (layer, context, session, archived) are boolean masks
over the same matrix. The index holds only committed rows: it is rebuilt from the
database on first use and kept current from the database's change log, so it can
never disagree with the database after a crash or with another process's writes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..model import Layer

LAYER_CODES: dict[Layer, int] = {layer: i for i, layer in enumerate(Layer)}


def _layer_table(layers: Iterable[Layer]) -> np.ndarray:
    """A boolean lookup table over layer codes: ``table[codes]`` is the membership mask
    (what ``np.isin`` computes, without its sort, for a handful of small codes)."""
    table = np.zeros(len(LAYER_CODES), dtype=bool)
    table[[LAYER_CODES[layer] for layer in layers]] = True
    return table


_EPHEMERAL_TABLE = _layer_table((Layer.WORKING, Layer.SHORT_TERM))

# Rows scored at once when a batch of queries is ranked again exactly (see _exact_scores):
# a window aligned on a multiple of 64 rows is split into row blocks by the BLAS
# matrix-vector kernels as the whole index is, so each row's score comes out the same.
_WINDOW = 64
# Scores held at once by search_many (queries x rows, float32): 64 MB; fewer queries at a
# time make the matrix product much slower per query.
_BLOCK = 1 << 24
# From this many queries, search_many checks once that windows score every row as a lone
# search does (two products over the index); then close scores need no lone search.
_PROBED_BATCH = 16
# search_many first bounds each query's k-th best score by that of every 16th row.
_SAMPLE_STRIDE = 16
# Up to this many allowed rows, search() ranks them by one full sort (a few us) instead of
# a selection per layer.
_SMALL = 2048
# Beyond this |q| * max |v|, a float32 dot product may overflow: such queries are searched alone.
_HUGE = 1e30
_UNIT_ROUNDOFF = float(np.finfo(np.float32).eps) / 2
# Scores apart by no more than this many float32 epsilons (times |q| * max |v|) may be
# ranked the other way round by a lone search on a multi-threaded BLAS (seen: 1/8).
_NEAR_TIE = 16 * float(np.finfo(np.float32).eps)


@dataclass
class Row:
    id: str
    vector: np.ndarray
    layer: Layer
    context: str
    session_id: str | None
    archived: bool
    kind: str
    event_time: float


@dataclass
class PartitionIndex:
    dim: int
    ids: list[str] = field(default_factory=list)
    pos: dict[str, int] = field(default_factory=dict)
    _vecs: np.ndarray | None = None
    _layer: np.ndarray | None = None
    _archived: np.ndarray | None = None
    _alive: np.ndarray | None = None
    _event: np.ndarray | None = None
    # Strings per row are stored as integer codes so filters are numpy comparisons.
    _ctx: np.ndarray | None = None
    _sess: np.ndarray | None = None
    _kind: np.ndarray | None = None
    codes: dict[str | None, int] = field(default_factory=dict)
    n: int = 0
    dead: int = 0
    # Bumped by every change of the rows; masks of filters are kept until it moves.
    version: int = 0
    _masks: dict = field(default_factory=dict)
    _masks_version: int = -1
    # The allowed rows of the last cached mask searched, with their layer codes and the
    # codes present: (mask, version, rows, codes, present codes).
    _rows_of: tuple | None = None

    def code(self, value: str | None) -> int:
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.codes)
        return c

    def _code_table(self, values) -> np.ndarray:
        """A boolean lookup table over string codes: ``table[codes]`` is the mask of rows
        whose string is one of ``values`` (what ``np.isin`` computes, without its sort)."""
        table = np.zeros(len(self.codes), dtype=bool)
        table[[self.codes[v] for v in values if v in self.codes]] = True
        return table

    def __post_init__(self) -> None:
        cap = 1024
        self._vecs = np.zeros((cap, self.dim), dtype=np.float32)
        self._layer = np.zeros(cap, dtype=np.int8)
        self._archived = np.zeros(cap, dtype=bool)
        self._alive = np.zeros(cap, dtype=bool)
        self._event = np.zeros(cap, dtype=np.float64)
        self._ctx = np.zeros(cap, dtype=np.int32)
        self._sess = np.zeros(cap, dtype=np.int32)
        self._kind = np.zeros(cap, dtype=np.int32)

    def _grow(self, need: int) -> None:
        cap = self._vecs.shape[0]
        if need <= cap:
            return
        new = max(need, cap * 2)
        # A plain copy into zeros: np.resize fills the new rows with copies of the old ones,
        # several times the work at 100k rows.
        vecs = np.zeros((new, self.dim), dtype=self._vecs.dtype)
        vecs[:cap] = self._vecs
        self._vecs = vecs
        for name in ("_layer", "_archived", "_alive", "_event", "_ctx", "_sess", "_kind"):
            arr = getattr(self, name)
            grown = np.zeros(new, dtype=arr.dtype)
            grown[:cap] = arr
            setattr(self, name, grown)

    def upsert(self, row: Row) -> None:
        self.version += 1
        i = self.pos.get(row.id)
        if i is None:
            self._grow(self.n + 1)
            i = self.n
            self.n += 1
            self.ids.append(row.id)
            self.pos[row.id] = i
        self._ctx[i] = self.code(row.context)
        self._sess[i] = self.code(row.session_id)
        self._kind[i] = self.code(row.kind)
        self._vecs[i] = row.vector
        self._layer[i] = LAYER_CODES[row.layer]
        self._archived[i] = row.archived
        self._alive[i] = True
        self._event[i] = row.event_time

    def remove(self, memory_id: str) -> None:
        i = self.pos.pop(memory_id, None)
        if i is None:
            return
        self.version += 1
        self._alive[i] = False
        self.ids[i] = ""
        self._vecs[i] = 0.0
        self.dead += 1
        if self.dead > 1024 and self.dead > self.n // 4:
            self._compact()

    def _compact(self) -> None:
        self.version += 1
        keep = np.flatnonzero(self._alive[: self.n])
        self._vecs[: len(keep)] = self._vecs[keep]
        for name in ("_layer", "_archived", "_alive", "_event", "_ctx", "_sess", "_kind"):
            arr = getattr(self, name)
            arr[: len(keep)] = arr[keep]
        self.ids = [self.ids[i] for i in keep]
        self.n = len(keep)
        self._alive[self.n :] = False
        self.pos = {mid: i for i, mid in enumerate(self.ids)}
        self.dead = 0

    def mask(
        self,
        *,
        layers: frozenset[Layer] | None,
        contexts: frozenset[str] | None,
        session_id: str | None,
        include_archived: bool,
        all_sessions: bool = False,
        kinds: frozenset[str] | None = None,
        event_after: float | None = None,
        event_before: float | None = None,
        ids: frozenset[str] | None = None,
    ) -> np.ndarray:
        n = self.n
        m = self._alive[:n].copy()
        if not include_archived:
            m &= ~self._archived[:n]
        if layers is not None:
            m &= _layer_table(layers)[self._layer[:n]]
        if contexts is not None:
            m &= self._code_table(contexts)[self._ctx[:n]]
        # Working and short-term memory belong to one session; other sessions never see them.
        ephemeral = _EPHEMERAL_TABLE[self._layer[:n]]
        if all_sessions:
            pass
        elif session_id is None:
            m &= ~ephemeral
        else:
            same = self._sess[:n] == self.codes.get(session_id, -1)
            m &= ~ephemeral | same
        if kinds is not None:
            m &= self._code_table(kinds)[self._kind[:n]]
        if event_after is not None:
            m &= self._event[:n] >= event_after
        if event_before is not None:
            m &= self._event[:n] <= event_before
        if ids is not None:
            sel = np.zeros(n, dtype=bool)
            for mid in ids:
                i = self.pos.get(mid)
                if i is not None:
                    sel[i] = True
            m &= sel
        return m

    def cached_mask(self, key: object, **filter_args) -> np.ndarray:
        """``mask(**filter_args)``, kept (read-only) under ``key`` until the rows change:
        searches with the same filter and no write in between build it once."""
        if self._masks_version != self.version:
            self._masks.clear()
            self._masks_version = self.version
        try:
            m = self._masks.get(key)
        except TypeError:  # an unhashable key (a filter holding a set): built each time
            return self.mask(**filter_args)
        if m is None:
            m = self.mask(**filter_args)
            m.flags.writeable = False
            if len(self._masks) >= 32:
                self._masks.clear()
            self._masks[key] = m
        return m

    def search(self, query: np.ndarray, k: int, mask: np.ndarray, *, per_layer: bool = False) -> list:
        """Top-k (id, score) of the rows ``mask`` allows. A matrix of queries (one per row)
        gives one such list per query, as if each were searched alone."""
        if np.ndim(query) == 2:
            if per_layer:
                raise ValueError("per_layer search takes one query")
            return self.search_many(query, k, mask)
        n = self.n
        if n == 0 or k <= 0:
            return []
        # The whole index is scored (not only the allowed rows) so each row's score is the
        # one every other search gives it (BLAS sums rows by blocks of the whole matrix).
        sims = self._vecs[:n] @ np.asarray(query, dtype=np.float32)
        rows, codes, present = self._allowed(mask)
        if len(rows) <= _SMALL:
            scores = sims[rows]
            if math.isfinite(float(scores.sum())):  # no NaN or infinity among them
                return self._top_small(scores, rows, k, codes, present if per_layer else None)
        if not per_layer:
            return self._top(sims, rows, k)
        if len(present) == 1:
            return self._top(sims, rows, k)
        out: list[tuple[str, float]] = []
        for code in present:
            out.extend(self._top(sims, rows[codes == code], k))
        return out

    def search_many(self, queries: np.ndarray, k: int, mask: np.ndarray) -> list[list[tuple[str, float]]]:
        """``search(q, k, mask)`` of every row ``q`` of ``queries``: the same ids, order and scores.

        A matrix-vector product per query reads the whole index each time; here one matrix
        product ranks a block of queries at once, then each query's leading rows (all rows
        within rounding of its k-th score) are scored again as search() scores them, and
        ranked as search() ranks them (equal scores by row). A multi-threaded BLAS may sum
        a few rows in another order than a lone search does: unless a check on two of the
        queries finds every row scored alike, a query whose leading scores are a few
        roundings apart, but not equal, is searched alone."""
        queries = np.asarray(queries, dtype=np.float32)
        m, n = len(queries), self.n
        if n == 0 or k <= 0:
            return [[] for _ in range(m)]
        rows = np.flatnonzero(mask[:n])
        k = min(k, len(rows))
        if k == 0:
            return [[] for _ in range(m)]
        vecs = self._vecs[:n]
        # Rows the mask allows, copied out only when that spares much of the product.
        allowed = vecs[rows] if 2 * len(rows) < n else vecs
        if allowed is vecs:
            rows = None
        # Two float32 dot products of length d differ from the true one by at most
        # gamma_d * |q| * |v| each, whatever their order of summation.
        scale = float(np.sqrt(np.einsum("ij,ij->i", allowed, allowed).max())) * np.sqrt(np.einsum("ij,ij->i", queries, queries))
        if not np.all(scale < _HUGE):  # not finite, or a product may overflow
            return [self.search(q, k, mask) for q in queries]
        d = vecs.shape[1]
        gamma = d * _UNIT_ROUNDOFF / (1 - d * _UNIT_ROUNDOFF)
        slack = 4 * gamma * scale
        near = _NEAR_TIE * scale
        if m >= _PROBED_BATCH and self._windows_agree(queries[:2]):
            near[:] = 0.0  # scores a rounding apart are ranked as a lone search ranks them
        blocked = None if rows is not None else np.flatnonzero(~mask[:n])
        out: list[list[tuple[str, float]]] = []
        step = max(1, _BLOCK // len(allowed))
        for start in range(0, m, step):
            stop = min(m, start + step)
            approx = queries[start:stop] @ allowed.T
            if blocked is not None and len(blocked):
                approx[:, blocked] = -np.inf
            for j, cols in enumerate(_leading(approx, k, slack[start:stop])):
                q = queries[start + j]
                cand = cols if rows is None else rows[cols]
                top = self._top_exact(q, cand, k, float(near[start + j]))
                out.append(self.search(q, k, mask) if top is None else top)
        return out

    def _top_exact(self, query: np.ndarray, cand: np.ndarray, k: int, near: float) -> list[tuple[str, float]] | None:
        """search()'s top k of ``query`` among rows ``cand`` (ascending), which hold them,
        or None when two of the k + 1 best differ, by no more than ``near``."""
        exact = self._exact_scores(query, cand)
        order = np.argsort(-exact, kind="stable")
        head = exact[order[: k + 1]]
        gaps = head[:-1] - head[1:]
        # Equal scores are ordered by row, as search() orders them; scores a rounding
        # apart might be the other way round in search()'s own sums.
        if not np.all((gaps == 0) | (gaps > near)):
            return None
        return [(self.ids[cand[i]], float(exact[i])) for i in order[:k]]

    def _exact_scores(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Scores of ``rows`` as search() computes them: from aligned windows of the index."""
        n = self.n
        out = np.empty(len(rows), dtype=np.float32)
        starts = rows - rows % _WINDOW
        # numpy multiplies a one-row matrix as a dot product, summed in another order: a
        # last window of one row is joined to the one before it.
        if n % _WINDOW == 1 and n > _WINDOW:
            starts[starts == n - 1] = n - 1 - _WINDOW
        firsts, at = np.unique(starts, return_index=True)  # rows ascending: one run per window
        bounds = [*at.tolist(), len(rows)]
        for i, start in enumerate(firsts.tolist()):
            end = min(n, start + 2 * _WINDOW) if n - start == _WINDOW + 1 else min(n, start + _WINDOW)
            a, b = bounds[i], bounds[i + 1]
            out[a:b] = (self._vecs[start:end] @ query)[rows[a:b] - start]
        return out

    def _windows_agree(self, probes: np.ndarray) -> bool:
        """Whether scoring by windows gives every row, for each probe query, the very
        score a lone search gives it: always with one BLAS thread; a multi-threaded BLAS
        may split the rows where a window does not."""
        every = np.arange(self.n)
        return all(np.array_equal(self._vecs[: self.n] @ q, self._exact_scores(q, every)) for q in probes)

    def _allowed(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """The rows ``mask`` allows (ascending), their layer codes, and the codes among
        them (ascending); kept for a cached (read-only) mask while the rows do not change."""
        last = self._rows_of
        if last is not None and last[0] is mask and last[1] == self.version:
            return last[2], last[3], last[4]
        rows = np.flatnonzero(mask)
        codes = self._layer[rows]
        present = np.flatnonzero(np.bincount(codes, minlength=len(LAYER_CODES))).tolist()
        if not mask.flags.writeable:
            self._rows_of = (mask, self.version, rows, codes, present)
        return rows, codes, present

    def _top_small(self, scores: np.ndarray, rows: np.ndarray, k: int, codes: np.ndarray,
                   present: list[int] | None) -> list[tuple[str, float]]:
        """What ``_top`` gives (of each layer's rows in turn, by layer code, given the
        ``present`` codes) for a few finite ``scores`` of ``rows``: one stable sort of them
        all instead of a selection per layer. A layer's rows keep their order within the
        whole order (descending score, equal scores by row), so its first k are its k best."""
        order = np.argsort(-scores, kind="stable")
        ids = self.ids
        if present is None or len(present) == 1:
            heads = [order[:k]]
        else:
            ordered = codes[order]
            heads = [order[ordered == code][:k] for code in present]
        out: list[tuple[str, float]] = []
        for head in heads:
            out.extend(zip([ids[r] for r in rows[head].tolist()], scores[head].tolist()))
        return out

    def _top(self, sims: np.ndarray, rows: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The k best (id, score) of ``rows`` (ascending) by ``sims``: best first, equal
        scores by row, only finite scores, and no more than there are finite scores."""
        if not len(rows):
            return []
        scores = sims[rows]
        k = min(k, int(np.isfinite(scores).sum()))
        if k <= 0:
            return []
        # The first k of the stable order by descending score (NaN last) are the k best,
        # rows tied at the k-th score taken first to last.
        if 8 * k < len(rows):
            head = _best_rows(scores, k)
            head = head[np.argsort(-scores[head], kind="stable")]
        else:
            head = np.argsort(-scores, kind="stable")[:k]
        ids = self.ids
        return [(ids[r], s) for r, s in zip(rows[head].tolist(), scores[head].tolist()) if math.isfinite(s)]

    def vector(self, memory_id: str) -> np.ndarray | None:
        i = self.pos.get(memory_id)
        return None if i is None else self._vecs[i]


def _leading(approx: np.ndarray, k: int, slack: np.ndarray) -> list[np.ndarray]:
    """Per row of ``approx`` (finite scores, -inf where masked, at least k finite), the
    columns (ascending) scoring within ``slack`` of the row's k-th best: with scores off by
    no more than slack / 2, they hold the k best rows by any such scores.

    The k-th best of every ``stride``-th column is a lower bound of the k-th best, so a
    first cut at it leaves a few hundred columns, among which the k-th best is found."""
    width = approx.shape[1]
    stride = max(1, min(_SAMPLE_STRIDE, width // (4 * k)))
    bound = _kth(approx[:, ::stride], k)  # the sample holds at least k columns
    short = ~np.isfinite(bound)  # fewer than k unmasked columns in the sample
    if short.any():
        bound[short] = _kth(approx[short], k)
    bound = bound - slack
    # Flat positions: np.nonzero of a 2-D mask is about ten times slower.
    rows, cols = np.divmod(np.flatnonzero(approx >= bound[:, None]), width)
    splits = np.searchsorted(rows, np.arange(1, len(approx)))
    out = []
    for j, first in enumerate(np.split(cols, splits)):
        kth = _kth(approx[j, first][None, :], k)[0]
        out.append(first[approx[j, first] >= kth - slack[j]])
    return out


def _kth(scores: np.ndarray, k: int) -> np.ndarray:
    """The k-th best score of every row (k <= the row's length)."""
    width = scores.shape[1]
    return np.partition(scores, width - k, axis=1)[:, width - k]


def _best_rows(sims: np.ndarray, k: int) -> np.ndarray:
    """The rows of the k best scores (at least k finite), ascending; of rows tied at the
    k-th score, the first ones. Ties are thus settled by row, whatever the partitioning."""
    neg = -sims  # NaN sorts last, as an unusable score should
    kth = np.partition(neg, k - 1)[k - 1]
    above = np.flatnonzero(neg < kth)
    at = np.flatnonzero(neg == kth)[: k - len(above)]
    return np.union1d(above, at)
