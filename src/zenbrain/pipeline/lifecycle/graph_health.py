"""Sleep stage: spectral health of each context's memory graph; fragments get bridge edges."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from ...engine import Engine
from ...model import Edge
from ...state import (
    KV_SPECTRAL,
    KV_SPECTRAL_CACHE,
    RELATION_BRIDGE,
)
from .common import Snapshot, edge_entry, num, skipped, vectors


def _b64(x: np.ndarray, dtype: Any) -> str:
    return base64.b64encode(np.ascontiguousarray(x, dtype=dtype).tobytes()).decode("ascii")


def _unb64(text: Any, dtype: Any) -> np.ndarray | None:
    try:
        return np.frombuffer(base64.b64decode(str(text), validate=True), dtype=dtype)
    except (binascii.Error, ValueError, TypeError):
        return None


class FiedlerMemo:
    """What the last computed lambda_2 of one graph leaves for the next sleep.

    ``entry`` is JSON-safe (kv ``spectral_cache``, per context): digests of the node ids and
    of the linked pairs, the pair weights, lambda_2 and, for a graph solved by LOBPCG, its
    final block. A later graph over the same nodes and pairs whose weights moved by factors
    in [lo, hi] with sqrt(hi / lo) - 1 at most ``SpectralParams.reuse_tolerance`` gets
    lambda_2 rescaled instead of recomputed (``spectral.rescaled_fiedler``: a night of
    uniform edge decay needs no eigensolve); ``reused`` then holds the bound on its relative
    error. A graph over the same nodes that needs LOBPCG starts from the stored block.
    """

    def __init__(self, entry: Any = None) -> None:
        self.entry: dict[str, Any] = dict(entry) if isinstance(entry, dict) else {}
        self.reused: float | None = None

    def solver(self, node_ids: list[str], params: Any) -> Callable[[Any], float]:
        """lambda_2 of the connected graph over ``node_ids`` (in adjacency order)."""
        import scipy.sparse as sp
        from scipy.sparse.csgraph import laplacian

        from ...mechanisms import spectral

        nodes_key = hashlib.sha1("".join(x + "\0" for x in node_ids).encode("utf-8")).hexdigest()

        def solve(sub: Any) -> float:
            self.reused = None
            pairs, weights = spectral.pair_weights(sub)
            old = self.entry
            same_nodes = old.get("nodes") == nodes_key
            if same_nodes and old.get("pairs") == pairs and isinstance(old.get("fiedler"), (int, float)):
                prev = _unb64(old.get("weights"), np.float64)
                if prev is not None and prev.shape == weights.shape:
                    est, bound = spectral.rescaled_fiedler(float(old["fiedler"]), prev, weights)
                    if bound <= params.reuse_tolerance:
                        self.reused = bound
                        return est
            m = sub.shape[0]
            block: np.ndarray | None = None
            lap: Any = None
            if m > params.dense_max_nodes:  # else a dense solve: no Laplacian needed here
                raw_lap: Any = laplacian(sp.csr_matrix(sub, dtype=np.float64))
                lap = sp.csr_matrix(raw_lap)
                del raw_lap  # not held through the eigensolve beside its CSR copy
            if lap is not None and not spectral.cheap_to_factor(lap):
                start = None
                raw = _unb64(old.get("start"), np.float32) if same_nodes else None
                k = min(spectral.ITER_BLOCK, m - 2)
                if raw is not None and raw.size == m * k:
                    start = raw.reshape(m, k).astype(np.float64)
                est_it = spectral.fiedler_iterative(lap, start, rtol=params.report_rtol,
                                                    decide=params.fragmentation_threshold)
                lam, block = est_it.value, est_it.block
            else:
                lam = spectral.fiedler_value(sub, params=params)
            self.entry = {"nodes": nodes_key, "pairs": pairs, "weights": _b64(weights, np.float64), "fiedler": lam}
            if block is not None and block.size:
                self.entry["start"] = _b64(block, np.float32)
            return lam

        return solve


def spectral_stage(engine: Engine, snap: Snapshot, now: float, context: str) -> dict[str, Any]:
    """Fiedler value of each context's memory graph; bridge fragments; store the last lambda_2.

    lambda_2 goes through a per-context ``FiedlerMemo`` kept in kv ``spectral_cache``; a
    context whose lambda_2 was rescaled instead of recomputed reports ``fiedler_error``, the
    bound on the relative error of each value (0.0 for a computed one)."""
    if not engine.on("spectral_kg_health"):
        return skipped()
    # scipy's sparse eigensolvers are imported when sleep first needs them, not with zenbrain.
    from ...mechanisms import spectral

    params = engine.config.params.spectral_kg_health
    part = snap.part
    per_ctx = _edges_by_context(snap)
    report: dict[str, Any] = {"contexts": {}, "bridges": []}
    new_edges: list[Edge] = []
    cache_raw = engine.store.kv_get(part, KV_SPECTRAL_CACHE)
    cache_in = cache_raw if isinstance(cache_raw, dict) else {}
    cache_out: dict[str, Any] = {}
    for ctx in sorted(per_ctx):
        # The context's edges leave the map: while the eigensolver runs (the stage's peak)
        # only the arrays below and the node ids are held, not the edge lists.
        nodes, s, d, w = _graph_arrays(per_ctx.pop(ctx))
        memo = FiedlerMemo(cache_in.get(ctx))
        before = _health(spectral, len(nodes), s, d, w, params, memo, nodes)
        errors: list[float | None] = [memo.reused, None]
        bridges: list[spectral.Bridge] = []
        if before.is_fragmented and before.n_components > 1:
            def rows(idx: np.ndarray, nodes: list[str] = nodes) -> np.ndarray:
                return vectors(engine, part, [nodes[int(i)] for i in idx])

            bridges = spectral.propose_bridges_by_rows(report=before, rows=rows, params=params)
        after = before
        if bridges:
            s2, d2, w2 = spectral.with_bridges(src=s, dst=d, weight=w, bridges=bridges)
            memo.reused = None
            after = _health(spectral, len(nodes), s2, d2, w2, params, memo, nodes)
            errors[1] = memo.reused
            for b in bridges:
                e = Edge(nodes[b.src], nodes[b.dst], RELATION_BRIDGE, float(b.similarity), 1.0, 0, now)
                new_edges.append(e)
                report["bridges"].append({**edge_entry(e), "context": ctx, "similarity": num(b.similarity),
                                          "components": list(b.components)})
        else:
            errors[1] = errors[0]
        if memo.entry:
            cache_out[ctx] = memo.entry
        change = spectral.compare(before, after)
        report["contexts"][ctx] = {
            "fiedler": [num(change.fiedler_before), num(change.fiedler_after)],
            "components": [change.components_before, change.components_after],
            "nodes": before.n_nodes, "edges": before.n_edges,
            "fragmented": [before.is_fragmented, after.is_fragmented],
        }
        if any(x is not None for x in errors):
            report["contexts"][ctx]["fiedler_error"] = [num(x or 0.0) for x in errors]
    scoped = report["contexts"].get(context)
    kv = {
        "at": now,
        "fiedler": scoped["fiedler"][1] if scoped else 0.0,
        "context": context,
        "by_context": {
            c: {"fiedler": v["fiedler"][1], "components": v["components"][1]} for c, v in report["contexts"].items()
        },
    }
    report["fiedler"] = kv["fiedler"]
    with engine.store.transaction() as tx:
        snap.put_edges(tx, new_edges)
        tx.kv_put(part, {KV_SPECTRAL: kv, **({KV_SPECTRAL_CACHE: cache_out} if cache_out or cache_in else {})})
    return report


def _edges_by_context(snap: Snapshot) -> dict[str, list[Edge]]:
    """The edges between two distinct active memories of the same context, by context."""
    active = {i.id: i.context for i in snap.select()}
    per_ctx: dict[str, list[Edge]] = defaultdict(list)
    for e in snap.edges.values():
        c1 = active.get(e.src)
        if c1 is not None and e.src != e.dst and active.get(e.dst) == c1:
            per_ctx[c1].append(e)
    return per_ctx


def _graph_arrays(edges: list[Edge]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The sorted node ids of ``edges`` and each edge's source and destination positions
    among them and weight."""
    nodes = sorted({e.src for e in edges} | {e.dst for e in edges})
    pos = {m: k for k, m in enumerate(nodes)}
    s = np.fromiter((pos[e.src] for e in edges), np.int64, len(edges))
    d = np.fromiter((pos[e.dst] for e in edges), np.int64, len(edges))
    w = np.fromiter((e.weight for e in edges), float, len(edges))
    return nodes, s, d, w


def _health(spectral: Any, n: int, s: np.ndarray, d: np.ndarray, w: np.ndarray, params: Any, memo: FiedlerMemo,
            nodes: list[str]) -> Any:
    """``spectral.health`` of the graph, its lambda_2 through ``memo``."""
    a = spectral.adjacency(n=n, src=s, dst=d, weight=w, params=params)
    analysed = np.flatnonzero(np.asarray(a.getnnz(axis=1)).reshape(-1) > 0)
    return spectral.health_of(a, params=params, fiedler=memo.solver([nodes[int(i)] for i in analysed], params))
