"""scripts/bench_speed.py --parts backends at tiny sizes: SQLite, PostgreSQL (the tests'
server) and ChromaDB (when installed) filled with the same corpus texts and vectors, in one
partition and in users of --per-user memories."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
HAVE_CHROMA = importlib.util.find_spec("chromadb") is not None
sys.path.insert(0, str(ROOT / "tests"))


def tiny_corpus(root: Path, n: int, embedder_name: str) -> None:
    """A corpus in the layout of scripts/real_corpus.py: sentences, pairs, one vector chunk."""
    from zenbrain.providers.factory import make_embedder

    words = "river garden harbor lantern maple stone cloud market bridge violin orchard".split()
    rng = np.random.default_rng(3)
    sentences = [f"The {' '.join(rng.choice(words, 4))} number {i} stands here." for i in range(n)]
    root.mkdir(parents=True)
    (root / "sentences.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    np.save(root / "pairs.npy", np.zeros((0, 2), dtype=np.int32))
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    import real_corpus

    texts = real_corpus.Corpus(root).texts(0, n)
    vdir = real_corpus._vector_dir(root, embedder_name)
    vdir.mkdir()
    np.save(vdir / "chunk_00000.npy", make_embedder("hashing").embed(texts).astype(np.float32))


def test_backends_side_by_side_in_both_layouts(locomo_file, tmp_path, monkeypatch, capsys):
    from postgres_server import server_url

    url = server_url()
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    import bench_speed

    from zenbrain.providers.factory import make_embedder

    monkeypatch.setenv("ZENBRAIN_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus"
    tiny_corpus(corpus, 80, make_embedder("hashing").name)
    backends = "sqlite,postgres" + (",chroma" if HAVE_CHROMA else "")
    out = tmp_path / "backends.json"
    argv = ["--parts", "backends", "--data", str(locomo_file), "--embedder", "hashing", "--corpus", str(corpus),
            "--sizes", "60", "--layout", "many,one", "--per-user", "20", "--queries", "4", "--forgets", "1",
            "--backends", backends, "--pg-url", url, "--workdir", str(tmp_path / "work"), "--json", str(out)]
    assert bench_speed.main(argv) == 0
    res = json.loads(out.read_text())
    rows = {(r["layout"], r["backend"]): r for r in res["backends"]}
    assert set(rows) == {(lay, b) for lay in ("many", "one") for b in backends.split(",")}
    for (layout, backend), r in rows.items():
        assert r["size"] == 60 and r["users"] == (3 if layout == "many" else 1)
        assert r["ingest_items_s"] > 0 and 0 < r["recall_p50_ms"] <= r["recall_p95_ms"] and r["queries"] == 4
        assert r["bytes_per_memory"] > 0 and r["forget_p50_ms"] > 0
        assert (r["hnsw_ready_s"] is not None) == (backend == "postgres")
        if backend != "chroma":
            assert r["forgets_scrubbed"] == "1/1"
    printed = capsys.readouterr().out
    assert "po/sq" in printed and ("po/ch" in printed) == HAVE_CHROMA
    assert res["environment"]["load_average_end"]
