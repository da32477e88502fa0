"""Dense top-k of one partition: exact below a size, HNSW with exact re-ranking above.

Rows are append-only: a memory whose vector changes gets a new row and its old row dies;
a change of its filter columns (layer, archived, ...) is made in place. Vectors are held
at float16 precision, as the store keeps them: the persisted matrix is float16 and
memory-mapped (768 bytes a MiniLM vector), new rows are float32 in memory holding
float16-rounded values. Scores are float32 dot products of the float32 query with those
values, so a search gives the same scores before and after a save. From
``ann_min_rows`` live rows on, a usearch HNSW graph (int8 by default) holds the rows
up to ``graph_rows``; rows after it are scored exactly, and are added to the graph once
there are ``tail_max`` of them. The graph only proposes candidates: they are re-ranked
by their stored vectors, so returned scores are exact dot products (in float32) of the
query with the stored vectors.

Filters: a filter's mask is applied to the graph's candidates, which are oversampled by
the inverse of the share of rows the filter keeps; when it keeps few rows (see
``AnnParams.exact_ratio``), those rows are scanned exactly instead (a selective filter
would need a huge candidate list). If too few candidates survive, the search is retried
with more and finally done exactly: a filtered search never returns fewer results than
exist.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..vecmath import row_cosines, to_float16, to_float32
from .columns import Columns, FilterLike
from .source import IndexRow

FORMAT = 3  # 2: turn positions and validity columns; 3: the matrix in float16
STORED_DTYPE = np.float16  # how vectors are persisted, in the store and in the index files
_SCORE_BLOCK = 65_536  # rows of a float16 matrix converted to float32 at a time when scoring them all
_COSINE_BLOCK = 4096  # rows gathered at a time by ``cosines`` (6 MB of float32 MiniLM vectors)


_READABLE_FORMATS = (2, FORMAT)  # format 2's float32 matrix is converted on loading


def _float16_matrix(path: Path) -> None:
    """Rewrite a float32 matrix file (index format 2) as float16, atomically and a block at
    a time: an upgraded store keeps its graph instead of rebuilding it. The graph's int8
    vectors hardly move, and candidates are re-ranked by the float16 values anyway."""
    old = np.load(path, mmap_mode="r")
    if old.dtype == STORED_DTYPE or old.ndim != 2 or not old.shape[0]:
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    new = np.lib.format.open_memmap(tmp, mode="w+", dtype=STORED_DTYPE, shape=old.shape)
    for i in range(0, old.shape[0], _SCORE_BLOCK):
        new[i: i + _SCORE_BLOCK] = old[i: i + _SCORE_BLOCK]
    new.flush()
    del new, old
    os.replace(tmp, path)


def stored(vector: np.ndarray) -> np.ndarray:
    """``vector`` at the precision vectors are stored with, as float32."""
    return to_float32(to_float16(np.asarray(vector, dtype=np.float32)))


def vector_blob(vector: np.ndarray) -> bytes:
    """The bytes a store keeps of a vector: little-endian float16 (half of float32's; the
    top 10 over float16-rounded MiniLM vectors equals float32's, docs/scale.md)."""
    return to_float16(np.asarray(vector, dtype=np.float32)).astype("<f2", copy=False).tobytes()


def blob_vector(blob: bytes) -> np.ndarray:
    """A vector from ``vector_blob``'s bytes, as float32."""
    return to_float32(np.frombuffer(blob, dtype="<f2"))


@dataclass(frozen=True)
class AnnParams:
    """When and how the graph is used. Defaults measured on real MiniLM vectors
    (``scripts/bench_index_choice.py ann``)."""

    # Below: exact scans only. Real MiniLM vectors, one thread, k=10: at 5k rows the scan and
    # the graph both take 0.2 ms; at 10k 1.2 against 0.24 ms (recall@10 0.997), at 20k 2.5
    # against 0.32 ms (0.995).
    ann_min_rows: int = 5_000
    exact_max_allowed: int = 2048  # a filter keeping at most this many rows: exact scan
    # Also exact when the graph would be asked for at least 1/exact_ratio of the kept rows:
    # gathering a few thousand rows costs less than a search that deep (n rows, a kept, k
    # results: exact when a <= sqrt(exact_ratio * oversample * k * n), ~18k of 1M for k=10).
    exact_ratio: float = 8.0
    oversample: float = 4.0  # candidates asked of the graph per result, over the kept share
    min_candidates: int = 64
    expansion_search: int = 128
    connectivity: int = 16
    expansion_add: int = 100
    # int8 graph vectors (usearch scales unit vectors by 127): at 100k MiniLM vectors the
    # same recall as float16 after the re-rank (0.988 at ef 128), searches ~1.6x and
    # builds ~3.5x faster, half the bytes. Vectors of other than unit length: use "f16".
    graph_dtype: str = "i8"
    tail_max: int = 4096  # rows scored exactly before they join the graph
    compact_dead_share: float = 0.25  # rebuild when this share of rows is dead


# Above this many memories a partition draws samples by rows: listing and permuting a
# million ids took 25-45 ms a store (the novelty sample); drawing 1,088 rows takes 0.2 ms.
SAMPLE_BY_ROWS = 65_536


def content_key(content_hash: str) -> int:
    """A 63-bit integer of a content hash (hex or any text), to tell changed vectors."""
    try:
        return int(content_hash[:15], 16)
    except ValueError:
        import hashlib

        return int.from_bytes(hashlib.blake2b(content_hash.encode(), digest_size=8).digest(), "big") >> 1


class VectorPartition:
    """The dense index of one partition (see module docs)."""

    def __init__(self, dim: int, params: AnnParams | None = None) -> None:
        self.dim = dim
        self.params = params or AnnParams()
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        self.cols = Columns()
        self._base = np.zeros((0, dim), dtype=np.float32)  # rows [0, len(_base)), maybe memory-mapped
        self._tail = np.zeros((1024, dim), dtype=np.float32)  # rows after the base
        self.graph: Any = None  # a usearch Index over rows [0, graph_rows)
        self.graph_rows = 0
        self._graph_path: Path | None = None  # a memory-mapped graph is read-only until loaded
        self.dead = 0
        self.file_rows = 0  # rows the saved files hold (the first ones)
        self._erased_on_disk: list[int] = []  # rows of the saved files killed since they were written

    # -- rows -------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.cols.n

    def __len__(self) -> int:
        return len(self.pos)

    def _append_vector(self, vector: np.ndarray) -> int:
        row = self.cols.append()
        t = row - len(self._base)
        if t >= len(self._tail):
            grown = np.zeros((max(1024, 2 * len(self._tail)), self.dim), dtype=np.float32)
            grown[: len(self._tail)] = self._tail
            self._tail = grown
        self._tail[t] = vector
        self.ids.append("")
        return row

    def upsert(self, row: IndexRow) -> None:
        """Apply the current state of a memory. A memory without a vector keeps a row (a
        zero vector, not ``dense``) so that filters can be checked for lexical results."""
        key = content_key(row.content_hash)
        r = self.pos.get(row.id)
        # A new row when the vector changes (its content did, or it has one at last).
        if r is None or self.cols.chash[r] != key or (row.vector is not None and not self.cols.dense[r]):
            if r is not None:
                self._kill(r)
            vec = np.zeros(self.dim, np.float32) if row.vector is None else stored(row.vector).ravel()
            if vec.shape[0] != self.dim:
                raise ValueError(f"vector of {row.id} has {vec.shape[0]} dimensions, expected {self.dim}")
            r = self._append_vector(vec)
            self.ids[r] = row.id
            self.pos[row.id] = r
        self.cols.set(r, layer=row.layer, context=row.context, session_id=row.session_id, kind=row.kind,
                      archived=row.archived, event_time=row.event_time, chash=key,
                      dense=row.vector is not None, position=row.position, valid_until=row.valid_until)

    def remove(self, memory_id: str) -> None:
        r = self.pos.pop(memory_id, None)
        if r is not None:
            self._kill(r)

    def _kill(self, r: int) -> None:
        self.cols.kill(r)
        self.dead += 1
        # A dead row's vector is erased at once: in memory, and in the saved file, which the
        # base maps writably (an erased memory's vector must not outlive it in our files).
        nb = len(self._base)
        if r < nb:
            if getattr(self._base, "flags", None) is not None and self._base.flags.writeable:
                self._base[r] = 0.0
        else:
            self._tail[r - nb] = 0.0
        # What else the row says of the memory goes too (its id, a key of its content's hash,
        # its times): no search reads a dead row, and the saved columns must not keep them.
        self.ids[r] = ""
        self.cols.forget(r)
        if r < self.file_rows:
            self._erased_on_disk.append(r)

    @property
    def _base_mapped(self) -> bool:
        """Whether the base rows are the matrix file itself, mapped writably."""
        return isinstance(self._base, np.memmap) and bool(self._base.flags.writeable)

    def _graph_dead_rows(self) -> np.ndarray:
        """Dead rows the graph may hold a copy of (a twin erased earlier counts)."""
        return np.flatnonzero(~self.cols.alive[: self.graph_rows])

    def flush(self) -> None:
        """Write erased rows of the mapped file to disk now."""
        if self._base_mapped:
            cast(np.memmap, self._base).flush()

    def scrub_files(self, stem: Path) -> None:
        """Take the rows killed since the files at ``stem`` were written out of them now
        (after an erasure): their vectors from the matrix and from the graph, their ids and
        columns. A partition whose matrix is memory-mapped from its file (it has a graph)
        is changed in place: its matrix rows are zeroed already, the graph's copies of them
        are zeroed in the graph's file, and the columns are rewritten for the rows the files
        hold. Any other is written anew (``save``)."""
        self.flush()
        if not self._erased_on_disk:
            return
        if not (self._base_mapped and self._graph_path is not None and len(self._base) == self.file_rows):
            self.save(stem)
            return
        if not erase_graph_vectors(self._graph_path, self.graph, self._graph_dead_rows()):
            self._rewrite_live(stem)  # not the graph file layout expected
            return
        self._write_columns(stem, self.file_rows, self.graph_rows)
        self._erased_on_disk.clear()

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        nb = len(self._base)
        if len(rows) and rows.max() < nb:
            return to_float32(self._base[rows])
        if not nb:  # every row in the tail (a partition below the graph's size): one gather, no masks
            return self._tail[rows]
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        low = rows < nb
        out[low] = to_float32(self._base[rows[low]])
        out[~low] = self._tail[rows[~low] - nb]
        return out

    def vector(self, memory_id: str) -> np.ndarray | None:
        r = self.pos.get(memory_id)
        if r is None or not self.cols.dense[r]:
            return None
        return self.vectors_of(np.array([r]))[0]

    def sample_ids(self, k: int, rng: np.random.Generator, exclude: AbstractSet[str] = frozenset()) -> list[str]:
        """Up to ``k`` ids drawn uniformly from the partition's memories outside ``exclude``
        (the first of a random order of them that are not excluded), in the order the
        memories joined the index; above ``SAMPLE_BY_ROWS`` memories, in row order."""
        if len(self.pos) > SAMPLE_BY_ROWS:
            drawn = self._sample_rows(k, rng, exclude)
            if drawn is not None:
                return drawn
        ids = list(self.pos)
        order = rng.permutation(len(ids))[:k + len(exclude)].tolist()
        return [ids[i] for i in sorted([i for i in order if ids[i] not in exclude][:k])]

    def _sample_rows(self, k: int, rng: np.random.Generator, exclude: AbstractSet[str]) -> list[str] | None:
        """``sample_ids`` drawn by rows: enough rows for ``k`` live ones outside ``exclude``
        (at most ``compact_dead_share`` of the rows are dead), in a random order, the first
        ``k`` that qualify. None when the draw fell short (then the caller draws from the ids)."""
        n = self.n
        want = k + len(exclude)
        size = min(n, math.ceil(want / (1.0 - self.params.compact_dead_share)) + 64)
        ids = self.ids
        picked = [r for r in rng.choice(n, size=size, replace=False).tolist() if ids[r] and ids[r] not in exclude][:k]
        if len(picked) < k:
            return None
        return [ids[r] for r in sorted(picked)]

    def _dense_rows(self, ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The row of each of ``ids`` (-1 when unknown) and the positions in ``ids`` of those
        whose row holds a vector."""
        pos = self.pos
        rows = np.fromiter((pos.get(mid, -1) for mid in ids), np.int64, len(ids))
        at = np.flatnonzero(rows >= 0)
        return rows, at[self.cols.dense[rows[at]]]

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The vectors of ``ids`` in one gather (rows of zeros for unknown ids and memories
        without a vector)."""
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        rows, at = self._dense_rows(ids)
        if len(at):
            out[at] = self.vectors_of(rows[at])
        return out

    def cosines(self, ids: Sequence[str], queries: np.ndarray) -> np.ndarray:
        """(m, len(ids)) cosines of unit float32 ``queries`` (m, d) with the stored vectors of
        ``ids`` (0 for unknown ids and memories without a vector), without a matrix of the
        vectors: a store's novelty sample of 1,024 rows used to be copied into a zeroed
        matrix from a gathered one, two 1.5 MB arrays alive at once; freeing both left more
        free memory at the heap's top than glibc keeps (twice the largest block it has
        seen), so it went back to the kernel and the next store faulted it in again (1,050
        page faults, 2.3 ms of system time a store on a 1,000-memory partition). Rows are
        gathered ``_COSINE_BLOCK`` at a time (a thousand-row sample in one)."""
        out = np.zeros((len(queries), len(ids)), dtype=np.float32)
        rows, at = self._dense_rows(ids)
        for i in range(0, len(at), _COSINE_BLOCK):
            block = at[i: i + _COSINE_BLOCK]
            out[:, block] = row_cosines(queries, self.vectors_of(rows[block]))
        return out

    def accept(self, flt: FilterLike | None) -> Callable[[list[str]], np.ndarray]:
        """A test of ids against ``flt`` (for lexical results): unknown ids fail. Its
        ``share`` attribute is the share of the partition's memories the filter keeps."""
        mask, count = self.cols.cached_mask(flt, self.ids, self.pos)
        pos = self.pos

        def test(ids: list[str]) -> np.ndarray:
            return np.fromiter((mask[r] if (r := pos.get(i)) is not None else False for i in ids), bool, len(ids))

        test.share = count / max(len(pos), 1)  # type: ignore[attr-defined]
        return test

    def _scores_all(self, q: np.ndarray) -> np.ndarray:
        nb = len(self._base)
        if not nb:
            return self._tail[: self.n] @ q
        if self._base.dtype == np.float32:
            head = self._base @ q
        else:  # float16 rows converted a block at a time (fixed blocks: a row's score never depends on the query's rows)
            head = np.concatenate([to_float32(self._base[i: i + _SCORE_BLOCK]) @ q
                                   for i in range(0, nb, _SCORE_BLOCK)])
        if self.n == nb:
            return head
        return np.concatenate([head, self._tail[: self.n - nb] @ q])

    # -- maintenance ------------------------------------------------------------------------
    def maintain(self) -> None:
        """Compact when many rows are dead; build or extend the graph when due."""
        p = self.params
        if self.dead > 1024 and self.dead > p.compact_dead_share * self.n:
            self._compact()
        live = len(self.pos)
        if self.graph is None:
            if live >= p.ann_min_rows:
                self._build_graph()
        elif self.n - self.graph_rows >= p.tail_max:
            self._extend_graph()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.cols.alive[: self.n])
        vecs = self.vectors_of(keep)
        state = {name: arr[keep] for name, arr in self.cols.state().items()}
        codes = sorted(self.cols.codes, key=self.cols.codes.__getitem__)
        self.cols = Columns.from_state(state, codes)
        self.ids = [self.ids[r] for r in keep.tolist()]
        self.pos = {mid: r for r, mid in enumerate(self.ids)}
        self._base, self._tail = np.zeros((0, self.dim), dtype=np.float32), vecs
        self.dead = 0
        self.graph, self.graph_rows, self._graph_path = None, 0, None
        if len(self.pos) >= self.params.ann_min_rows:  # a graph will cover these rows: they are the base
            self._base, self._tail = vecs, np.zeros((1024, self.dim), dtype=np.float32)

    def _new_graph(self) -> Any:
        from usearch.index import Index

        p = self.params
        return Index(ndim=self.dim, metric="ip", dtype=p.graph_dtype, connectivity=p.connectivity,
                     expansion_add=p.expansion_add, expansion_search=p.expansion_search)

    def _build_graph(self) -> None:
        self.graph = self._new_graph()
        self.graph_rows = 0
        self._graph_path = None
        self._extend_graph()

    def _extend_graph(self) -> None:
        if self._graph_path is not None:  # memory-mapped: load it to add to it
            from usearch.index import Index

            self.graph = Index.restore(str(self._graph_path), view=False)
            self._graph_path = None
        rows = np.arange(self.graph_rows, self.n)
        rows = rows[self.cols.alive[rows] & self.cols.dense[rows]]
        if len(rows):
            # A large build uses every core (a one-time cost); a tail of new rows one.
            threads = 0 if len(rows) >= 10_000 else 1
            self.graph.add(rows.astype(np.uint64), self.vectors_of(rows), threads=threads, log=False)
        self.graph_rows = self.n

    # -- search -----------------------------------------------------------------------------
    def _allowed(self, flt: FilterLike | None, layer: int | None = None) -> tuple[np.ndarray, int]:
        """The mask of rows with a vector that ``flt`` (and the layer code) allows, and its count."""
        return self.cols.cached_mask(flt, self.ids, self.pos, layer=layer, dense=True)

    def search(self, query: np.ndarray, k: int, flt: FilterLike | None = None, *,
               per_layer: bool = False) -> list[tuple[str, float]]:
        """Top-k (id, score) by dot product among the rows ``flt`` allows, best first; with
        ``per_layer``, the top k of each layer present, layer by layer (in layer order)."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if k <= 0 or not self.pos:
            return []
        if not per_layer:
            return self._search(q, k, *self._allowed(flt))
        out: list[tuple[str, float]] = []
        whole: list[np.ndarray] = []  # the whole matrix's scores, computed once for every layer
        for code in sorted(self.cols.layers_present):
            mask, count = self._allowed(flt, code)
            if count:
                out.extend(self._search(q, k, mask, count, whole))
        return out

    def _search(self, q: np.ndarray, k: int, mask: np.ndarray, count: int,
                whole: list[np.ndarray] | None = None) -> list[tuple[str, float]]:
        p = self.params
        if not count:
            return []
        want = max(p.min_candidates, math.ceil(p.oversample * k * self.n / count))
        if self.graph is None or count <= p.exact_max_allowed or want * p.exact_ratio >= count:
            return self._exact(q, k, np.flatnonzero(mask), whole)
        g = self.graph_rows
        tail = np.flatnonzero(mask[g:]) + g
        in_graph = count - len(tail)
        while True:
            want = min(want, g)
            self.graph.expansion_search = max(p.expansion_search, want)
            keys = np.asarray(self.graph.search(q, want, threads=1).keys, dtype=np.int64)
            cand = keys[mask[keys]]
            if len(cand) >= min(k, in_graph) or want >= g:
                break
            if want * 4 > in_graph * 8:  # the graph would be asked for most of itself
                return self._exact(q, k, np.flatnonzero(mask), whole)
            want *= 4
        if len(tail):
            cand = np.concatenate([cand, tail])
        return self._exact(q, k, cand, whole)

    def _exact(self, q: np.ndarray, k: int, rows: np.ndarray,
               whole: list[np.ndarray] | None = None) -> list[tuple[str, float]]:
        # Without a graph every search scores the whole matrix, so that a row's score does
        # not depend on which rows a filter kept (BLAS sums rows in blocks of the matrix).
        # ``whole``: where the searches of one query keep that matrix's scores.
        if self.graph is None or 2 * len(rows) > self.n:
            whole = [] if whole is None else whole
            if not whole:
                whole.append(self._scores_all(q))
            scores = whole[0][rows]
        else:
            scores = self.vectors_of(rows) @ q
        if len(rows) > k:
            top = np.argpartition(-scores, k - 1)[:k]
        else:
            top = np.arange(len(rows))
        # Best first; equal scores by row, so results do not depend on the candidate order.
        order = top[np.lexsort((rows[top], -scores[top]))]
        ids = self.ids
        return [(ids[r], float(s)) for r, s in zip(rows[order].tolist(), scores[order].tolist()) if math.isfinite(s)]

    # -- persistence ------------------------------------------------------------------------
    def save(self, stem: Path) -> None:
        """Write ``stem``.vec.npy (float16), .cols.npz and, with a graph, .usearch (each atomically)."""
        tmp = f".{os.getpid()}.tmp"
        if self.n:
            out = np.lib.format.open_memmap(f"{stem}.vec.npy{tmp}", mode="w+", dtype=STORED_DTYPE,
                                            shape=(self.n, self.dim))
            for i in range(0, self.n, _SCORE_BLOCK):  # in blocks: no float32 copy of the whole matrix
                out[i: i + _SCORE_BLOCK] = to_float16(self.vectors_of(np.arange(i, min(self.n, i + _SCORE_BLOCK))))
            out.flush()
            del out
        else:
            with open(f"{stem}.vec.npy{tmp}", "wb") as fh:
                np.save(fh, np.zeros((0, self.dim), dtype=STORED_DTYPE))
        self._write_columns(stem, self.n, self.graph_rows if self.graph is not None else 0, replace=False)
        graph_file = Path(f"{stem}.usearch")
        if self.graph is not None and self._graph_path != graph_file:
            self.graph.save(f"{graph_file}{tmp}")
            # The graph keeps a copy of every vector it was given, dead rows' too.
            dead = self._graph_dead_rows()
            if len(dead) and not erase_graph_vectors(Path(f"{graph_file}{tmp}"), self.graph, dead):
                for name in (f"{graph_file}{tmp}", f"{stem}.vec.npy{tmp}", f"{stem}.cols.npz{tmp}"):
                    os.unlink(name)
                self._rewrite_live(stem)  # not the graph file layout expected
                return
            os.replace(f"{graph_file}{tmp}", graph_file)
        elif self.graph is None:
            graph_file.unlink(missing_ok=True)
        os.replace(f"{stem}.vec.npy{tmp}", f"{stem}.vec.npy")
        os.replace(f"{stem}.cols.npz{tmp}", f"{stem}.cols.npz")
        self.file_rows = self.n
        self._erased_on_disk.clear()

    def _rewrite_live(self, stem: Path) -> None:
        """Write the partition anew from its live rows only, with a graph built from them:
        no file then holds a dead row's vector in any form."""
        self._compact()
        if self.graph is None and len(self.pos) >= self.params.ann_min_rows:
            self._build_graph()
        self.save(stem)

    def _write_columns(self, stem: Path, rows: int, graph_rows: int, *, replace: bool = True) -> None:
        """Write the ids and columns of the first ``rows`` rows to ``stem``.cols.npz (to its
        temporary name, for ``save``, when not ``replace``)."""
        tmp = f".{os.getpid()}.tmp"
        state = {name: arr[:rows] for name, arr in self.cols.state().items()}
        codes = sorted(self.cols.codes, key=self.cols.codes.__getitem__)
        dead = rows - int(np.count_nonzero(self.cols.alive[:rows]))
        meta = {"format": FORMAT, "dim": self.dim, "graph_rows": graph_rows, "codes": codes, "dead": dead}
        ids = "\n".join(self.ids[:rows]).encode()
        with open(f"{stem}.cols.npz{tmp}", "wb") as fh:
            arrays = {"ids": np.frombuffer(ids, dtype=np.uint8),
                      "meta": np.frombuffer(json.dumps(meta).encode(), np.uint8), **state}
            np.savez(fh, **arrays)  # type: ignore[arg-type]
        if replace:
            os.replace(f"{stem}.cols.npz{tmp}", f"{stem}.cols.npz")

    @classmethod
    def load(cls, stem: Path, dim: int, params: AnnParams | None = None) -> VectorPartition:
        """A partition from its files; ValueError (or OSError) when they are missing,
        corrupt or of another width."""
        part = cls(dim, params)
        with np.load(f"{stem}.cols.npz") as z:
            meta = json.loads(z["meta"].tobytes())
            if meta.get("format") not in _READABLE_FORMATS or meta.get("dim") != dim:
                raise ValueError("index file of another format or width")
            state = {name: z[name] for name, _ in Columns._ARRAYS}
            ids = z["ids"].tobytes().decode().split("\n")
        n = len(state["alive"])
        if n == 0:
            ids = []
        _float16_matrix(Path(f"{stem}.vec.npy"))
        try:
            vecs = np.load(f"{stem}.vec.npy", mmap_mode="r+")  # writable: dead rows are zeroed in place
        except PermissionError:
            vecs = np.load(f"{stem}.vec.npy", mmap_mode="r")
        if vecs.shape != (n, dim) or vecs.dtype != STORED_DTYPE or len(ids) != n:
            raise ValueError("index files disagree on the number of rows")
        part.cols = Columns.from_state(state, meta["codes"])
        part.ids = ids
        alive = state["alive"]
        rows = np.flatnonzero(alive).tolist()
        part.pos = dict(zip(map(ids.__getitem__, rows), rows))
        if len(part.pos) != int(alive.sum()):
            raise ValueError("index file lists a memory twice")
        if int(meta["graph_rows"]):
            part._base = vecs
        else:  # no graph: one float32 matrix in memory (see _exact), as a partition built here has
            part._tail = np.array(vecs, dtype=np.float32)
        part.dead = int(meta.get("dead", n - len(part.pos)))
        graph_rows = int(meta["graph_rows"])
        if graph_rows:
            from usearch.index import Index

            graph_file = Path(f"{stem}.usearch")
            graph = Index.restore(str(graph_file), view=True)
            if graph is None or graph.ndim != dim:
                raise ValueError("graph file missing or of another width")
            part.graph, part.graph_rows, part._graph_path = graph, graph_rows, graph_file
        part.file_rows = n
        return part


_GRAPH_HEADER = 8  # usearch's dense file: rows and bytes per row (two uint32), then the vectors
_HASH_BLOCK = 65_536  # graph rows hashed at a time


def _row_hashes(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of a uint8 matrix (its bytes as words, weighted by fixed
    odd multipliers; equal rows, equal hashes)."""
    width = rows.shape[1]
    padded = rows if width % 8 == 0 else np.pad(rows, ((0, 0), (0, 8 - width % 8)))
    words = np.ascontiguousarray(padded).view(np.uint64)
    mult = np.random.default_rng(width).integers(1, 2**63, size=words.shape[1], dtype=np.uint64) | np.uint64(1)
    with np.errstate(over="ignore"):
        return (words * mult).sum(axis=1, dtype=np.uint64)


def erase_graph_vectors(path: Path, graph: Any, keys: np.ndarray) -> bool:
    """Zero, in the usearch file at ``path``, its copies of the vectors of ``keys`` (every
    dead row of the partition the graph may hold), which ``graph`` holds; True when done,
    False when the file is not laid out as expected (the caller then rewrites it without
    them).

    usearch gives no way to overwrite a stored vector (``remove`` only unlinks the key), and
    its file begins with the vectors, one row each, in an order of its own. So each key's
    vector is looked up (``graph.get``) and the file rows holding exactly those bytes are
    zeroed, unless more rows hold them than the keys erased (a live memory with the same
    vector: an identical text the store still keeps). A key's row is then never read
    again: the partition only searches live rows.
    """
    if not len(keys):
        return True
    batch = graph.get(np.asarray(keys, dtype=np.uint64), dtype=graph.dtype)
    if isinstance(batch, np.ndarray) and batch.ndim == 2:
        wanted: list[Any] = list(batch)
    else:  # some keys are not in the graph (rows that had died before it was built)
        wanted = [graph.get(int(k), dtype=graph.dtype) for k in np.asarray(keys).tolist()]
    patterns = [np.ascontiguousarray(w).reshape(-1).view(np.uint8) for w in wanted if w is not None]
    patterns = [p for p in patterns if p.any()]  # zeroed already (an earlier erasure, in place)
    if not patterns:
        return True
    want = np.stack(patterns)
    header = np.fromfile(path, dtype=np.uint32, count=2)
    if header.size < 2:
        return False
    n_rows, width = int(header[0]), int(header[1])
    if width != want.shape[1] or _GRAPH_HEADER + n_rows * width > path.stat().st_size:
        return False
    matrix = np.memmap(path, dtype=np.uint8, mode="r+", offset=_GRAPH_HEADER, shape=(n_rows, width))
    want_h, want_n = np.unique(_row_hashes(want), return_counts=True)
    rows: list[int] = []
    hashes: list[int] = []
    for i in range(0, n_rows, _HASH_BLOCK):
        h = _row_hashes(matrix[i: i + _HASH_BLOCK])
        hit = np.flatnonzero(np.isin(h, want_h))
        rows.extend((i + hit).tolist())
        hashes.extend(h[hit].tolist())
    mine = {bytes(p) for p in patterns}
    held = [bytes(matrix[r]) for r in rows]
    if not mine <= set(held):
        return False  # a vector the graph holds is not a row of its file
    # A hash held by more rows than the erased keys is also a live row's (the same text).
    in_file = Counter(hashes)
    erased_n = dict(zip(want_h.tolist(), want_n.tolist()))
    erase = [r for r, h, b in zip(rows, hashes, held) if b in mine and in_file[h] <= erased_n.get(h, 0)]
    if erase:
        matrix[erase] = 0
        matrix.flush()
    del matrix
    return True
