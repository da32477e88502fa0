"""Lexical and vector index candidates measured on real text with real MiniLM vectors.

Reads the corpus of ``scripts/real_corpus.py`` (texts and vectors cached outside the
repository). Queries are 6-12 word windows of seeded random corpus sentences, embedded
by the same embedder. Prints one table per part; every figure of a table comes from the
same run.

    OMP_NUM_THREADS=1 python scripts/bench_index_choice.py lexical --size 100000
    OMP_NUM_THREADS=1 python scripts/bench_index_choice.py ann --size 100000
    OMP_NUM_THREADS=1 python scripts/bench_index_choice.py grid --size 100000 --threads 2
    OMP_NUM_THREADS=1 python scripts/bench_index_choice.py layout --size 100000

lexical: SQLite FTS5 as zenbrain uses it (an OR of the query's words, ranked by bm25)
against FTS5 with term pruning, bm25s and tantivy: latency, build, disk, agreement of
the top 10 / top 50 with FTS5's.
grid: usearch float16 against int8 graphs, both re-ranked, over search depths.
ann: exact numpy, hnswlib and usearch (float32 / float16 / int8, each with an exact
float32 re-rank of its candidates): recall@10 against exact, latency, build, size,
load time, and filters keeping 10 % and 1 % of rows.
layout: bytes per vector stored in SQLite as float32 in a WITHOUT ROWID table (today's
layout), in a rowid table, as float16 and as int8; the rank quality of the smaller ones.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from real_corpus import Corpus, default_dir, load_corpus

_WORD = re.compile(r"\w+")
_STOP = frozenset(
    "a an and are as at be by did do does for from had has have he her hers him his how i in is it its "
    "me my of on or our she so that the their them they this to was we were what when where which who "
    "whom why will with you your".split()
)


def queries(root: Path, n: int, seed: int = 7) -> list[str]:
    corpus = Corpus(root)
    rng = np.random.default_rng(seed)
    out = []
    for i in rng.integers(0, len(corpus.sentences), n * 2):
        words = corpus.sentences[int(i)].split()
        if len(words) < 8:
            continue
        width = int(rng.integers(6, 13))
        start = int(rng.integers(0, max(1, len(words) - width)))
        out.append(" ".join(words[start : start + width]))
        if len(out) == n:
            break
    return out


def embed_queries(texts: list[str]) -> np.ndarray:
    from zenbrain.providers.factory import make_embedder

    return make_embedder().embed(texts)


def pct(times: list[float]) -> tuple[float, float]:
    a = np.asarray(times) * 1000
    return float(np.percentile(a, 50)), float(np.percentile(a, 95))


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def overlap(a: list, b: list, k: int) -> float:
    if not b[:k]:
        return 1.0
    return len(set(a[:k]) & set(b[:k])) / len(b[:k])


# ---------------------------------------------------------------- lexical


def words(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        if w not in _STOP:
            seen.setdefault(w, None)
    return list(seen)


def bench_lexical(args: argparse.Namespace) -> None:
    texts, _ = load_corpus(args.size, args.dir) if args.vectors else (Corpus(args.dir).texts(0, args.size), None)
    qs = queries(args.dir, args.queries)
    k, head = args.k, max(4 * args.k, 100)
    work = Path(tempfile.mkdtemp(prefix="lexbench-", dir=args.work))
    rows: list[tuple] = []
    ranked: dict[str, list[list[int]]] = {}
    print(f"lexical: {len(texts)} texts, {len(qs)} queries, top {k} (FTS5 head {head}); load {os.getloadavg()[0]:.2f}")

    # SQLite FTS5, the table zenbrain keeps.
    db = sqlite3.connect(work / "fts.db")
    db.execute(
        "CREATE VIRTUAL TABLE f USING fts5(content, memory_id UNINDEXED, user_id UNINDEXED, agent_id UNINDEXED, "
        "tokenize='porter unicode61')"
    )

    def fill() -> None:
        with db:
            db.executemany("INSERT INTO f(rowid, content, memory_id, user_id, agent_id) VALUES (?,?,?,?,?)",
                           ((i, t, f"m{i}", "u", "a") for i, t in enumerate(texts)))

    _, build = timed(fill)
    db.execute("VACUUM")
    fts_bytes = (work / "fts.db").stat().st_size

    def fts(q: str, limit: int, terms: list[str] | None = None) -> list[int]:
        ws = words(q) if terms is None else terms
        if not ws:
            return []
        match = " OR ".join('"' + w + '"' for w in ws)
        sql = "SELECT rowid FROM f WHERE f MATCH ? AND user_id=? AND agent_id=? ORDER BY rank LIMIT ?"
        return [r[0] for r in db.execute(sql, (match, "u", "a", limit))]

    def run(name: str, search: Callable[[str], list[int]], build_s: float, disk: int, incremental: str) -> None:
        for q in qs[:20]:
            search(q)  # warm caches
        times, results = [], []
        for q in qs:
            t = time.perf_counter()
            results.append(search(q))
            times.append(time.perf_counter() - t)
        ranked[name] = results
        p50, p95 = pct(times)
        ref = ranked["fts5"]
        a10 = np.mean([overlap(r, f, 10) for r, f in zip(results, ref)])
        ak = np.mean([overlap(r, f, k) for r, f in zip(results, ref)])
        rows.append((name, p50, p95, build_s, disk / len(texts), incremental, a10, ak))
        print(f"  {name:<22} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  build {build_s:6.1f} s  {disk / len(texts):6.0f} B/doc"
              f"  top10 {a10:.3f}  top{k} {ak:.3f}  {incremental}", flush=True)

    run("fts5", lambda q: fts(q, head)[:k], build, fts_bytes, "yes (transactional)")

    # Document frequencies for pruning, from the FTS5 vocabulary (cached in memory).
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'row')")
    t = time.perf_counter()
    df = dict(db.execute("SELECT term, doc FROM v"))
    vocab_s = time.perf_counter() - t
    import Stemmer

    stem = Stemmer.Stemmer("porter")
    n_docs = len(texts)

    def pruned_terms(q: str, max_terms: int, max_frac: float) -> list[str]:
        ws = words(q)
        by_df = sorted(ws, key=lambda w: df.get(stem.stemWord(w), 0))
        keep = [w for w in by_df if df.get(stem.stemWord(w), 0) <= max_frac * n_docs][:max_terms]
        return keep or by_df[:1]

    run("fts5 pruned (6, 5%)", lambda q: fts(q, head, pruned_terms(q, 6, 0.05))[:k], build + vocab_s, fts_bytes,
        "yes (+ vocab cache)")
    run("fts5 pruned (4, 1%)", lambda q: fts(q, head, pruned_terms(q, 4, 0.01))[:k], build + vocab_s, fts_bytes,
        "yes (+ vocab cache)")
    db.close()

    # bm25s: a sparse matrix of precomputed term scores; rebuilt on any change.
    import bm25s

    def tok(ts: list[str]) -> list[list[str]]:
        return [stem.stemWords(words(t)) for t in ts]

    def build_bm25s() -> bm25s.BM25:
        r = bm25s.BM25(k1=1.2, b=0.75, method="robertson")
        r.index(tok(texts), show_progress=False)
        return r

    retriever, b_build = timed(build_bm25s)
    retriever.save(str(work / "bm25s"))
    b_disk = dir_bytes(work / "bm25s")

    def bm25s_search(q: str) -> list[int]:
        qt = tok([q])
        if not qt[0]:
            return []
        try:
            docs, scores = retriever.retrieve(qt, k=k, show_progress=False, n_threads=1)
        except (ValueError, KeyError):
            return []
        return [int(d) for d, s in zip(docs[0], scores[0]) if s > 0]

    run("bm25s", bm25s_search, b_build, b_disk, "no (rebuild)")

    # tantivy: on-disk segments, incremental adds and deletes, block-max WAND top-k.
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("content", tokenizer_name="en_stem", index_option="freq")
    sb.add_integer_field("row", stored=False, fast=True, indexed=True)
    schema = sb.build()
    tdir = work / "tantivy"
    tdir.mkdir()
    index = tantivy.Index(schema, path=str(tdir))

    def build_tantivy() -> None:
        w = index.writer(heap_size=200_000_000, num_threads=1)
        for i, text in enumerate(texts):
            w.add_document(tantivy.Document(content=text, row=i))
        w.commit()
        w.wait_merging_threads()

    _, t_build = timed(build_tantivy)
    index.reload()
    searcher = index.searcher()
    t_disk = dir_bytes(tdir)

    def tantivy_search(q: str) -> list[int]:
        # tantivy's tokenizer splits on every non-alphanumeric character (underscores too):
        # split the same way so that no word becomes a phrase.
        ws = [w for w in re.findall(r"[^\W_]+", " ".join(words(q))) if w not in _STOP]
        if not ws:
            return []
        query = index.parse_query(" ".join(ws), ["content"])
        hits = searcher.search(query, k, count=False).hits
        return searcher.fast_field_values("row", [a for _, a in hits]) if hits else []

    run("tantivy", tantivy_search, t_build, t_disk, "yes (add/delete, commit)")

    # Incremental change: 1000 deletes and 1000 adds, committed, searcher reloaded.
    def churn() -> None:
        w = index.writer(heap_size=50_000_000, num_threads=1)
        for i in range(1000):
            w.delete_documents_by_term("row", i)
            w.add_document(tantivy.Document(content=texts[i], row=i))
        w.commit()
        w.wait_merging_threads()
        index.reload()

    _, churn_s = timed(churn)
    print(f"  tantivy: 1000 deletes + 1000 adds committed and visible in {churn_s:.2f} s")
    shutil.rmtree(work)


# ---------------------------------------------------------------- ANN


def exact_topk(vecs: np.ndarray, qv: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[list[np.ndarray], list[float]]:
    out, times = [], []
    for q in qv:
        t = time.perf_counter()
        s = vecs @ q
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        top = np.argpartition(-s, k)[:k]
        out.append(top[np.argsort(-s[top])])
        times.append(time.perf_counter() - t)
    return out, times


def recall(found: list, truth: list[np.ndarray], k: int) -> float:
    return float(np.mean([len(set(np.asarray(f)[:k].tolist()) & set(t[:k].tolist())) / k for f, t in zip(found, truth)]))


def rerank(vecs: np.ndarray, q: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
    cand = cand[cand >= 0]
    s = vecs[cand] @ q
    return cand[np.argsort(-s)[:k]]


def bench_ann(args: argparse.Namespace) -> None:
    _, vecs = load_corpus(args.size, args.dir)
    qtexts = queries(args.dir, args.queries)
    qv = embed_queries(qtexts)
    n, d, k = len(vecs), vecs.shape[1], args.k
    work = Path(tempfile.mkdtemp(prefix="annbench-", dir=args.work))
    print(f"ann: {n} vectors, {len(qv)} queries, k={k}; load {os.getloadavg()[0]:.2f}")
    truth, times = exact_topk(vecs, qv, k)
    p50, p95 = pct(times)
    print(f"  {'exact numpy f32':<30} recall 1.000  p50 {p50:6.2f} ms  p95 {p95:6.2f} ms")
    v16 = vecs.astype(np.float16)
    t16, _ = exact_topk(v16.astype(np.float32), qv, k)
    print(f"  exact on float16-rounded vectors: recall@10 {recall(t16, truth, k):.4f} (quality cost of float16 storage)")
    scale = 127.0 / np.abs(vecs).max(axis=1, keepdims=True)
    v8 = (np.round(vecs * scale).astype(np.int8).astype(np.float32)) / scale
    t8, _ = exact_topk(v8, qv, k)
    print(f"  exact on int8-rounded vectors (per-row scale): recall@10 {recall(t8, truth, k):.4f}")

    rng = np.random.default_rng(1)
    masks = {frac: rng.random(n) < frac for frac in (0.10, 0.01)}
    filt_truth = {frac: exact_topk(vecs, qv, k, m)[0] for frac, m in masks.items()}

    def report(name: str, search: Callable[[np.ndarray], np.ndarray], build_s: float, disk: int, load_s: float) -> None:
        for q in qv[:20]:
            search(q)
        found, times = [], []
        for q in qv:
            t = time.perf_counter()
            found.append(search(q))
            times.append(time.perf_counter() - t)
        p50, p95 = pct(times)
        print(f"  {name:<30} recall {recall(found, truth, k):.3f}  p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  build {build_s:6.1f} s"
              f"  file {disk / n:5.0f} B/vec  load {load_s:5.2f} s", flush=True)

    def filtered(name: str, search_cand: Callable[[np.ndarray, int], np.ndarray]) -> None:
        """Oversampling: ask the ANN for k/frac * 2 candidates, keep the allowed ones."""
        for frac, m in masks.items():
            want = int(min(n, np.ceil(2 * k / frac)))
            found, times = [], []
            for q in qv:
                t = time.perf_counter()
                cand = search_cand(q, want)
                cand = cand[(cand >= 0)]
                cand = cand[m[cand]]
                found.append(rerank(vecs, q, cand, k))
                times.append(time.perf_counter() - t)
            p50, p95 = pct(times)
            print(f"    {name} filter {frac:.0%} oversample x{want}: recall {recall(found, filt_truth[frac], k):.3f}"
                  f"  p50 {p50:6.2f} ms  p95 {p95:6.2f} ms", flush=True)

    # Exact over the allowed rows only (gathered), the fallback for selective filters.
    for frac, m in masks.items():
        rows = np.flatnonzero(m)
        found, times = [], []
        for q in qv:
            t = time.perf_counter()
            s = vecs[rows] @ q
            top = np.argpartition(-s, k)[:k]
            found.append(rows[top[np.argsort(-s[top])]])
            times.append(time.perf_counter() - t)
        sub = vecs[rows]
        t2 = []
        for q in qv:
            t = time.perf_counter()
            s = sub @ q
            np.argpartition(-s, k)[:k]
            t2.append(time.perf_counter() - t)
        print(f"    exact filter {frac:.0%}: gather+scan p50 {pct(times)[0]:6.2f} ms; over a kept sub-matrix p50 {pct(t2)[0]:6.2f} ms")

    bench_ours(vecs, qv, truth, masks, filt_truth, k, work)
    try:
        import hnswlib
    except ImportError:  # the ann-peers extra
        hnswlib = None
        print("  hnswlib not installed (pip install 'zenbrain[ann-peers]'): skipped")

    threads = args.threads
    for m_conn, ef_c in ((16, 100),) if hnswlib is not None and "hnswlib" in args.graphs else ():
        idx = hnswlib.Index(space="ip", dim=d)

        def build_h(idx: hnswlib.Index = idx, m_conn: int = m_conn, ef_c: int = ef_c) -> None:
            idx.init_index(max_elements=n, M=m_conn, ef_construction=ef_c, allow_replace_deleted=True)
            idx.add_items(vecs, np.arange(n), num_threads=threads)

        _, b = timed(build_h)
        path = work / "h.bin"
        idx.save_index(str(path))
        size = path.stat().st_size
        loaded = hnswlib.Index(space="ip", dim=d)
        _, load_s = timed(lambda loaded=loaded, path=path: loaded.load_index(str(path), max_elements=n, allow_replace_deleted=True))
        for ef in (32, 64, 128):
            loaded.set_ef(ef)
            report(f"hnswlib M{m_conn} ef{ef}", lambda q, idx=loaded: idx.knn_query(q, k, num_threads=1)[0][0], b, size, load_s)
        for ef in (64,):
            loaded.set_ef(ef)

            def cand_h(q: np.ndarray, want: int, idx: hnswlib.Index = loaded, ef: int = ef) -> np.ndarray:
                idx.set_ef(max(ef, want))
                return idx.knn_query(q, want, num_threads=1)[0][0].astype(np.int64)

            report(f"hnswlib M{m_conn} ef64 +rerank 4k", lambda q, f=cand_h: rerank(vecs, q, f(q, 4 * k), k), b, size, load_s)
            filtered(f"hnswlib M{m_conn}", cand_h)
            for frac, msk in masks.items():
                loaded.set_ef(64)
                found, times = [], []
                for q in qv[:100]:
                    t = time.perf_counter()
                    lab = loaded.knn_query(q, k, num_threads=1, filter=lambda i, msk=msk: bool(msk[i]))[0][0]
                    found.append(lab)
                    times.append(time.perf_counter() - t)
                p50, p95 = pct(times)
                print(f"    hnswlib filter callback {frac:.0%}: recall {recall(found, filt_truth[frac][:100], k):.3f}"
                      f"  p50 {p50:6.2f} ms  p95 {p95:6.2f} ms")
        # Incremental: mark 1000 deleted, add 1000 replacing them.
        t = time.perf_counter()
        for i in range(1000):
            loaded.mark_deleted(i)
        loaded.add_items(vecs[:1000], np.arange(1000), replace_deleted=True, num_threads=1)
        print(f"    hnswlib 1000 deletes + 1000 re-adds: {time.perf_counter() - t:.2f} s")
        del idx, loaded

    from usearch.index import Index

    for dtype in [g for g in ("f32", "f16", "i8") if g in args.graphs]:
        u = Index(ndim=d, metric="ip", dtype=dtype, connectivity=16, expansion_add=100, expansion_search=64)
        _, b = timed(lambda u=u: u.add(np.arange(n), vecs, threads=threads, log=False))
        path = work / f"u_{dtype}.usearch"
        u.save(str(path))
        size = path.stat().st_size
        v = Index(ndim=d, metric="ip", dtype=dtype)
        _, load_s = timed(lambda v=v, path=path: v.load(str(path)))
        for ef in (64, 128):
            v.expansion_search = ef
            report(f"usearch {dtype} ef{ef}", lambda q, v=v: v.search(q, k, threads=1).keys, b, size, load_s)
        v.expansion_search = 64

        def cand_u(q: np.ndarray, want: int, v: Index = v) -> np.ndarray:
            v.expansion_search = max(64, want)
            return np.asarray(v.search(q, want, threads=1).keys, dtype=np.int64)

        report(f"usearch {dtype} ef64 +rerank 4k", lambda q, f=cand_u: rerank(vecs, q, f(q, 4 * k), k), b, size, load_s)
        filtered(f"usearch {dtype}", cand_u)
        view = Index(ndim=d, metric="ip", dtype=dtype)
        _, view_s = timed(lambda view=view, path=path: view.view(str(path)))
        print(f"    usearch {dtype} memory-mapped view opens in {view_s * 1000:.1f} ms")
        t = time.perf_counter()
        v.remove(np.arange(1000))
        v.add(np.arange(1000), vecs[:1000], threads=1)
        print(f"    usearch {dtype} 1000 removes + 1000 re-adds: {time.perf_counter() - t:.2f} s")
        del u, v, view
    shutil.rmtree(work)


def bench_ours(vecs: np.ndarray, qv: np.ndarray, truth: list[np.ndarray], masks: dict[float, np.ndarray],
               filt_truth: dict[float, list[np.ndarray]], k: int, work: Path) -> None:
    """zenbrain.index.VectorPartition as the store would use it: build, search with and
    without filters, save, reopen (memory-mapped) and search again."""
    from zenbrain.index.source import IndexRow
    from zenbrain.index.vectors import VectorPartition
    from zenbrain.storage.base import Filter

    n = len(vecs)
    contexts = {0.10: "ten", 0.01: "one"}
    ctx = np.full(n, "rest", dtype=object)
    for frac, m in masks.items():
        ctx[m & (ctx == "rest")] = contexts[frac]
    part = VectorPartition(vecs.shape[1])

    def build() -> None:
        for i in range(n):
            part.upsert(IndexRow(f"{i}", "", f"{i:040x}", vecs[i], "semantic", str(ctx[i]), None, False, "fact", 0.0))
        part.maintain()

    _, b = timed(build)

    def run(name: str, p: VectorPartition, flt: Filter | None, ref: list[np.ndarray]) -> None:
        for q in qv[:20]:
            p.search(q, k, flt)
        found, times = [], []
        for q in qv:
            t = time.perf_counter()
            found.append([int(m) for m, _ in p.search(q, k, flt)])
            times.append(time.perf_counter() - t)
        p50, p95 = pct(times)
        print(f"  {name:<30} recall {recall(found, ref, k):.3f}  p50 {p50:6.2f} ms  p95 {p95:6.2f} ms", flush=True)

    print(f"  zenbrain.index VectorPartition: built in {b:.1f} s (graph {part.graph is not None})")
    run("ours", part, None, truth)
    for frac, m in masks.items():
        # Rows of the 1 % context are also in the 10 % mask's sample: compare with exact on the context alone.
        keep = frozenset({contexts[frac]})
        exact_ctx = exact_topk(vecs, qv, k, ctx == contexts[frac])[0]
        run(f"ours filter ~{frac:.0%}", part, Filter(contexts=keep), exact_ctx)
    stem = work / "ours"
    _, save_s = timed(lambda: part.save(stem))
    size = sum(Path(f"{stem}{ext}").stat().st_size for ext in (".vec.npy", ".cols.npz", ".usearch")
               if Path(f"{stem}{ext}").exists())
    loaded, load_s = timed(lambda: VectorPartition.load(stem, vecs.shape[1]))
    t = time.perf_counter()
    loaded.search(qv[0], k)
    first = time.perf_counter() - t
    print(f"  ours: save {save_s:.1f} s, files {size / n:.0f} B/vector, reopen {load_s:.2f} s, first search {first * 1000:.1f} ms")
    run("ours after reopen", loaded, None, truth)


def bench_grid(args: argparse.Namespace) -> None:
    """usearch graphs of float16 and int8 vectors, each with an exact float32 re-rank of
    its candidates, over a grid of search depth (ef) and candidate count; the settings of
    both are measured query by query in turn, so load changes hit them alike."""
    from usearch.index import Index

    _, vecs = load_corpus(args.size, args.dir)
    qv = embed_queries(queries(args.dir, args.queries))
    n, d, k = len(vecs), vecs.shape[1], args.k
    truth, _ = exact_topk(vecs, qv, k)
    print(f"grid: {n} vectors, {len(qv)} queries, k={k}, connectivity 16, expansion_add 100; load {os.getloadavg()[0]:.2f}")
    graphs = {}
    for dtype in ("f16", "i8"):
        u = Index(ndim=d, metric="ip", dtype=dtype, connectivity=16, expansion_add=100)
        _, b = timed(lambda u=u: u.add(np.arange(n), vecs, threads=args.threads, log=False))
        graphs[dtype] = u
        print(f"  {dtype}: build {b:.1f} s with {args.threads} threads, {u.memory_usage / n:.0f} B/vector in memory")
    grid = [(ef, cand) for ef in (64, 96, 128) for cand in (40, 64, 100) if cand <= ef]
    times: dict[tuple, list[float]] = {}
    found: dict[tuple, list[np.ndarray]] = {}
    for q in qv:
        for dtype, u in graphs.items():
            for ef, cand in grid:
                key = (dtype, ef, cand)
                t = time.perf_counter()
                u.expansion_search = ef
                keys = np.asarray(u.search(q, cand, threads=1).keys, dtype=np.int64)
                top = rerank(vecs, q, keys, k)
                times.setdefault(key, []).append(time.perf_counter() - t)
                found.setdefault(key, []).append(top)
    for key in sorted(times):
        p50, p95 = pct(times[key])
        print(f"  usearch {key[0]:<3} ef {key[1]:>3} candidates {key[2]:>3} + re-rank: recall {recall(found[key], truth, k):.3f}"
              f"  p50 {p50:5.2f} ms  p95 {p95:5.2f} ms")


# ---------------------------------------------------------------- SQLite layouts


def bench_layout(args: argparse.Namespace) -> None:
    _, vecs = load_corpus(args.size, args.dir)
    n = len(vecs)
    work = Path(tempfile.mkdtemp(prefix="layout-", dir=args.work))
    hashes = [f"{i:040x}" for i in range(n)]  # content hashes are 40 hex digits
    layouts = {
        "f32 WITHOUT ROWID (today)": ("CREATE TABLE e (model TEXT, hash TEXT, vector BLOB, PRIMARY KEY (model, hash)) WITHOUT ROWID",
                                      lambda v: v.astype(np.float32).tobytes()),
        "f32 rowid table + unique index": ("CREATE TABLE e (model TEXT, hash TEXT, vector BLOB, UNIQUE (model, hash))",
                                           lambda v: v.astype(np.float32).tobytes()),
        "f16 WITHOUT ROWID": ("CREATE TABLE e (model TEXT, hash TEXT, vector BLOB, PRIMARY KEY (model, hash)) WITHOUT ROWID",
                              lambda v: v.astype(np.float16).tobytes()),
        "i8 WITHOUT ROWID (+f32 scale)": ("CREATE TABLE e (model TEXT, hash TEXT, vector BLOB, PRIMARY KEY (model, hash)) WITHOUT ROWID",
                                          lambda v: np.float32(np.abs(v).max() / 127).tobytes()
                                          + np.round(v / (np.abs(v).max() / 127)).astype(np.int8).tobytes()),
    }
    print(f"layout: {n} MiniLM vectors of 384 floats, model name 'minilm-onnx:int8', 40-hex hashes")
    for name, (ddl, enc) in layouts.items():
        path = work / "l.db"
        db = sqlite3.connect(path)
        db.execute(ddl)
        with db:
            db.executemany("INSERT INTO e VALUES (?,?,?)", (("minilm-onnx:int8", h, enc(v)) for h, v in zip(hashes, vecs)))
        db.close()
        size = path.stat().st_size
        t = time.perf_counter()
        db = sqlite3.connect(path)
        got = db.execute("SELECT vector FROM e").fetchall()
        read_s = time.perf_counter() - t
        db.close()
        path.unlink()
        print(f"  {name:<32} {size / n:7.0f} B/vector  blob {len(got[0][0])} B  read all {read_s:.2f} s")
    shutil.rmtree(work)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=("lexical", "ann", "grid", "layout"))
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="threads for index builds")
    ap.add_argument("--dir", type=Path, default=default_dir(), help="corpus directory")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: the system's)")
    ap.add_argument("--graphs", default="hnswlib,f32,f16,i8", help="ann: peers to build (hnswlib, usearch f32/f16/i8)")
    ap.add_argument("--vectors", action="store_true", help="lexical: read texts only where vectors exist")
    args = ap.parse_args()
    {"lexical": bench_lexical, "ann": bench_ann, "grid": bench_grid, "layout": bench_layout}[args.part](args)


if __name__ == "__main__":
    main()
